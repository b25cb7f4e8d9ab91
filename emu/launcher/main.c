/* SPDX-License-Identifier: MIT */
/*
 * spmtap-emu: run a command on the emulated node, installed with the
 * emulator (build/spmtap-emu, $(LIBDIR)/spmtap/spmtap-emu).  `spmtap
 * --emulate` and `spmtap emulate` exec it, so that spmtap itself links no
 * emulator code (docs/emulator.md, "Running something under the emulator").
 *
 *   spmtap-emu [--gen A|B] PROFILE [--] CMD [ARGS...]
 *
 * This process (the front) keeps the pid of the process the user started
 * and its exit status; the session lives in its child, the supervisor
 * (supervise.c), which ends it when the front dies.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emu/launcher/supervise.h"

#define EMU_USAGE 64

static void usage(FILE *f, const char *who)
{
	fprintf(f,
		"usage: %s [--gen A|B] PROFILE [--] CMD [ARGS...]\n\n"
		"Run CMD on the emulated node PROFILE (e.g. mi300a, mi210, mi250x:2, mi300a,mi210):\n"
		"a temporary KFD/DRM tree, the emulator preloaded.  Every process of the session ends\n"
		"when CMD ends or when this process dies; the tree is removed, and trees of sessions\n"
		"that died are removed at the next start.  Exit status: CMD's (128+N if killed by N).\n"
		"SPMTAP_EMU_KILL_GRACE_MS (default 5000): SIGTERM to SIGKILL when ending a session.\n",
		who);
}

static int exit_code(int st)
{
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int main(int argc, char **argv)
{
	const char *who = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	struct emu_sup_opts o = { .who = who, .front = getpid(), .grace_ms = 5000 };
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--gen") && i + 1 < argc) {
			o.gen = argv[++i];
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout, who);
			return 0;
		} else {
			fprintf(stderr, "%s: unknown option '%s'\n", who, argv[i]);
			usage(stderr, who);
			return EMU_USAGE;
		}
	}
	if (o.gen && strcmp(o.gen, "A") && strcmp(o.gen, "B")) {
		fprintf(stderr, "%s: --gen %s: the kernel generation is A or B\n", who, o.gen);
		return EMU_USAGE;
	}
	if (i < argc)
		o.profile = argv[i++];
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (!o.profile || i >= argc) {
		usage(stderr, who);
		return EMU_USAGE;
	}
	o.cmd = argv + i;
	const char *active = getenv("SPMTAP_EMU_ACTIVE");
	if (active && *active) {
		fprintf(stderr, "%s: already on an emulated node (SPMTAP_EMU_ACTIVE is set)\n", who);
		return EMU_USAGE;
	}
	const char *grace = getenv("SPMTAP_EMU_KILL_GRACE_MS");
	if (grace && *grace)
		o.grace_ms = (unsigned)strtoul(grace, NULL, 10);

	/* Blocked before the fork, so that nothing falls between it and the waits below. */
	sigset_t set, orig;
	emu_sup_signals(&set);
	sigprocmask(SIG_BLOCK, &set, &orig);
	fflush(NULL);
	pid_t sup = fork();
	if (sup < 0) {
		fprintf(stderr, "%s: fork: %s\n", who, strerror(errno));
		return 1;
	}
	if (sup == 0)
		_exit(emu_supervise(&o, &orig));
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(&set, &si);
		if ((sig == SIGINT || sig == SIGTERM || sig == SIGHUP) && si.si_code != SI_KERNEL)
			kill(sup, sig); /* the supervisor passes it to the command */
		else if (sig == SIGUSR1 || sig == SIGUSR2)
			kill(sup, sig); /* passed on as they come (mpirun's forwarded stop: spmtap record --job) */
		int st;
		if (waitpid(sup, &st, WNOHANG) == sup)
			return exit_code(st);
	}
}
