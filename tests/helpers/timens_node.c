/* SPDX-License-Identifier: MIT */
/*
 * timens_node [--boot-ns NS] [--host NAME] -- CMD [ARGS]: run CMD as an
 * emulated node of the job test bed (tests/job/node.sh, docs/howto-job.md
 * "Test bed"): in a time namespace of its own whose CLOCK_BOOTTIME and
 * CLOCK_MONOTONIC (and with it MONOTONIC_RAW) are NS nanoseconds off the
 * machine's, fractional and negative offsets included, and in a UTS
 * namespace with host name NAME.  `unshare --boottime` takes whole seconds
 * only; the nanoseconds go into /proc/self/timens_offsets, which the kernel
 * takes only before the namespace's first process starts: so this program
 * unshares, writes the offsets, and forks CMD as that first process.  It
 * stays as CMD's parent and passes on SIGINT, SIGTERM, SIGHUP, SIGUSR1 and
 * SIGUSR2 (mpirun signals the process it started, this one), and exits with
 * CMD's status.  Needs root (CAP_SYS_ADMIN).  CLOCK_REALTIME cannot be
 * offset by a namespace: it stays the machine's, the test bed's common truth.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

int main(int argc, char **argv)
{
	long long ns = 0;
	const char *host = NULL;
	int i = 1;
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--boot-ns") && i + 1 < argc)
			ns = strtoll(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--host") && i + 1 < argc)
			host = argv[++i];
		else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else
			break;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: timens_node [--boot-ns NS] [--host NAME] -- CMD [ARGS]\n");
		return 64;
	}
	if (unshare(CLONE_NEWTIME | (host ? CLONE_NEWUTS : 0))) {
		fprintf(stderr, "timens_node: unshare(CLONE_NEWTIME%s): %s (needs root and Linux >= 5.6)\n",
			host ? "|CLONE_NEWUTS" : "", strerror(errno));
		return 77;
	}
	if (host && sethostname(host, strlen(host))) {
		fprintf(stderr, "timens_node: sethostname %s: %s\n", host, strerror(errno));
		return 1;
	}
	/* seconds floor'd, nanoseconds in [0, 1e9): the kernel's format */
	long long s = ns / 1000000000ll, n = ns % 1000000000ll;
	if (n < 0) {
		s--;
		n += 1000000000ll;
	}
	FILE *f = fopen("/proc/self/timens_offsets", "w");
	if (!f || fprintf(f, "monotonic %lld %lld\nboottime %lld %lld\n", s, n, s, n) < 0 || fclose(f)) {
		fprintf(stderr, "timens_node: /proc/self/timens_offsets (%lld ns): %s (a negative offset must "
				"not put the clock below zero)\n", ns, strerror(errno));
		return 1;
	}
	sigset_t set, old;
	sigemptyset(&set);
	int fwd[] = { SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 };
	for (size_t k = 0; k < sizeof(fwd) / sizeof(fwd[0]); k++)
		sigaddset(&set, fwd[k]);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	fflush(NULL);
	pid_t c = fork();
	if (c < 0) {
		fprintf(stderr, "timens_node: fork: %s\n", strerror(errno));
		return 1;
	}
	if (c == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		execvp(argv[i], argv + i);
		fprintf(stderr, "timens_node: %s: %s\n", argv[i], strerror(errno));
		_exit(127);
	}
	for (;;) {
		int sig = sigwaitinfo(&set, NULL), st;
		if (sig > 0 && sig != SIGCHLD)
			kill(c, sig);
		if (waitpid(c, &st, WNOHANG) == c)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
}
