/* SPDX-License-Identifier: MIT */
/* Shared by the benchmarks: a monotonic clock, a thread's CPU clock and this machine's memcpy rate for scale. */
#ifndef SPMTAP_BENCH_UTIL_H
#define SPMTAP_BENCH_UTIL_H

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "emu/common/emu.h"

static inline double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* This thread's CPU time (CLOCK_THREAD_CPUTIME_ID), in seconds. */
static inline double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Best of several passes over a buffer larger than the caches, in bytes/s. */
static inline double memcpy_rate(void)
{
	size_t n = 64u << 20;
	char *a = malloc(n), *b = malloc(n);
	if (!a || !b)
		exit(1);
	memset(a, 1, n);
	memset(b, 2, n);
	double best = 0;
	for (int i = 0; i < 8; i++) {
		double t0 = now_s();
		memcpy(i & 1 ? a : b, i & 1 ? b : a, n);
		double r = (double)n / (now_s() - t0);
		if (r > best)
			best = r;
	}
	volatile char sink = a[n / 2] + b[n / 3];
	(void)sink;
	free(a);
	free(b);
	return best;
}

/*
 * Unless this process already runs emulated: set up the emulated node
 * `profile` in a temporary directory, run this program again under it,
 * remove the directory and exit with the child's status.  Returns only in
 * the emulated child.
 */
static inline void bench_under_emu(char **argv, const char *name, const char *profile)
{
	if (getenv("SPMTAP_EMU_ACTIVE"))
		return;
	char tmp[PATH_MAX], err[512];
	if (emu_env_setup(profile, tmp, sizeof(tmp), err, sizeof(err))) {
		fprintf(stderr, "%s: emulator: %s\n", name, err);
		exit(2);
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	int st = 1;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	emu_tree_remove(tmp);
	exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
}

#endif
