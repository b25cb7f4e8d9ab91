/* SPDX-License-Identifier: MIT */
/*
 * make bench: what spmtap_region_begin + spmtap_region_end cost an
 * application, per pair, measured in one run beside a bare
 * clock_gettime(CLOCK_BOOTTIME) (the floor every timestamped marker pays):
 *   - outside a recording (no channel: the calls must be nearly free);
 *   - under a recording, with the reader draining the ring on another
 *     thread as the session does (every 5 ms).
 * Nothing here is a pass/fail check.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "collector/lib/marker_reader.h"
#include "collector/lib/marker_shm.h"
#include "spmtap.h"

#define PAIRS 2000000

static double pairs_ns(int n)
{
	double t0 = now_s();
	for (int i = 0; i < n; i++) {
		spmtap_region_begin("kernel");
		spmtap_region_end();
	}
	return (now_s() - t0) * 1e9 / n;
}

static double clock_ns(int n)
{
	struct timespec ts;
	volatile long sink = 0;
	double t0 = now_s();
	for (int i = 0; i < n; i++) {
		clock_gettime(CLOCK_BOOTTIME, &ts);
		sink += ts.tv_nsec;
	}
	(void)sink;
	return (now_s() - t0) * 1e9 / n;
}

static atomic_bool stop;
static uint64_t regions;

static int count(const struct mk_region *r, void *user)
{
	(void)r;
	(void)user;
	regions++;
	return 0;
}

static void *drain(void *arg)
{
	struct mk_reader *r = arg;
	while (!atomic_load(&stop)) {
		/* As the session's marker thread: every 5 ms, at once when a ring was a quarter full. */
		if (mk_reader_poll(r, count, NULL) < (int)(MK_EVENTS / 4)) {
			struct timespec ts = { 0, 5 * 1000000L };
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	(void)argc;
	struct utsname u;
	uname(&u);
	/* Child: the channel is found once per process, so each mode runs in a process of its own. */
	if (argv[1] && !strcmp(argv[1], "--channel")) {
		struct mk_reader *r;
		int fd;
		char err[256];
		if (mk_reader_create(&r, &fd, err, sizeof(err)) < 0) {
			fprintf(stderr, "bench_markers: %s\n", err);
			return 1;
		}
		char v[16];
		snprintf(v, sizeof(v), "%d", fd);
		setenv(MK_ENV_FD, v, 1);
		pthread_t th;
		pthread_create(&th, NULL, drain, r);
		pairs_ns(PAIRS / 10); /* warm: the slot is claimed, pages touched */
		double ns = pairs_ns(PAIRS);
		struct mk_stats st;
		mk_reader_stats(r, &st);
		printf("  under a recording:   %6.1f ns per begin/end pair, back to back (%" PRIu64
		       " events dropped: a ring of %u filled faster than it was read)\n", ns, st.dropped, MK_EVENTS);
		/* Paced: 100 k pairs/s for 1 s, a kernel launch every 10 us: nothing may be lost. */
		struct timespec settle = { 0, 50 * 1000000L };
		nanosleep(&settle, NULL); /* the reader empties what the loop above left */
		mk_reader_stats(r, &st);
		uint64_t d0 = st.dropped, r0 = regions;
		double t0 = now_s();
		for (int i = 0; i < 100000; i++) {
			while (now_s() - t0 < i * 1e-5)
				;
			spmtap_region_begin("kernel");
			spmtap_region_end();
		}
		struct timespec ts = { 0, 20 * 1000000L };
		nanosleep(&ts, NULL);
		atomic_store(&stop, true);
		pthread_join(th, NULL);
		mk_reader_finish(r, 0, count, NULL);
		mk_reader_stats(r, &st);
		printf("  under a recording, 100 k pairs/s for 1 s: %" PRIu64 " regions read, %" PRIu64 " dropped\n",
		       regions - r0, st.dropped - d0);
		mk_reader_free(r);
		return 0;
	}
	printf("bench_markers: %ld CPUs, %s %s; %d begin/end pairs per mode\n", sysconf(_SC_NPROCESSORS_ONLN),
	       u.sysname, u.release, PAIRS);
	unsetenv(MK_ENV_FD);
	printf("  clock_gettime(CLOCK_BOOTTIME): %6.1f ns per call (the floor: 2 per pair)\n", clock_ns(PAIRS));
	pairs_ns(PAIRS / 10);
	printf("  outside a recording: %6.1f ns per begin/end pair (no channel)\n", pairs_ns(PAIRS));
	fflush(stdout);
	char *args[] = { argv[0], (char *)"--channel", NULL };
	pid_t pid = fork();
	if (pid == 0) {
		execv("/proc/self/exe", args);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
