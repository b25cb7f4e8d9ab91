/* SPDX-License-Identifier: MIT */
/*
 * make bench: what spmtap_region_begin + spmtap_region_end cost an
 * application, per pair, measured in one run beside a bare
 * clock_gettime(CLOCK_BOOTTIME) and a bare rdtsc (the floors a timestamped
 * marker pays, two per pair):
 *   - outside a recording (no channel: the calls must be nearly free);
 *   - under a recording whose events are TSC-stamped (where the TSC is
 *     constant and non-stop) and under one forced to the clock call
 *     (SPMTAP_MARKER_CLOCK=boottime): timed in blocks of 1000 pairs, the
 *     ring drained between blocks outside the timing, so every event is
 *     written (a full ring's drop is cheaper than a write and would flatter
 *     the number);
 *   - 100 k pairs/s for 1 s with the reader draining on another thread as
 *     the session does (every 5 ms): nothing may be dropped.
 * Prints `key=value` lines (tests/bench/run.sh); nothing here is a pass/fail check.
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
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "bench_util.h"
#include "collector/lib/marker_reader.h"
#include "collector/lib/marker_shm.h"
#include "spmtap.h"

#define PAIRS 2000000
#define BLOCK 1000 /* pairs per timed block: 2000 events, within a 4096-event ring */

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

static double rdtsc_ns(int n)
{
#if defined(__x86_64__)
	volatile uint64_t sink = 0;
	double t0 = now_s();
	for (int i = 0; i < n; i++)
		sink += __rdtsc();
	(void)sink;
	return (now_s() - t0) * 1e9 / n;
#else
	(void)n;
	return 0;
#endif
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

/* Under a recording: blocks of BLOCK pairs timed, drained in between (untimed); the best of 3 passes. */
static double recorded_ns(struct mk_reader *r, int pairs)
{
	double best = 0;
	for (int pass = 0; pass < 3; pass++) {
		double t = 0;
		for (int done = 0; done < pairs; done += BLOCK) {
			double t0 = now_s();
			for (int i = 0; i < BLOCK; i++) {
				spmtap_region_begin("kernel");
				spmtap_region_end();
			}
			t += now_s() - t0;
			mk_reader_poll(r, count, NULL);
		}
		double ns = t * 1e9 / pairs;
		if (!pass || ns < best)
			best = ns;
	}
	return best;
}

/* Child: the channel is found once per process, so each clock runs in a process of its own. */
static int under_recording(const char *key)
{
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
	struct mk_stats st;
	recorded_ns(r, PAIRS / 20); /* warm: the slot is claimed, pages touched */
	mk_reader_stats(r, &st);
	uint64_t d0 = st.dropped;
	double ns = recorded_ns(r, PAIRS / 4);
	mk_reader_stats(r, &st);
	printf("# under a recording, events stamped with %s (%s)\n", st.clock_tsc ? "the TSC" : "clock_gettime",
	       st.clock_why);
	printf("markers_%s_ns_per_pair=%.1f\n", key, ns);
	printf("markers_%s_dropped=%" PRIu64 "\n", key, st.dropped - d0);
	/* Paced: 100 k pairs/s for 1 s, a kernel launch every 10 us, drained by a thread: nothing may be lost. */
	pthread_t th;
	pthread_create(&th, NULL, drain, r);
	uint64_t r0 = regions;
	d0 = st.dropped;
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
	printf("markers_%s_paced_100k_per_s_regions=%" PRIu64 "\n", key, regions - r0);
	printf("markers_%s_paced_100k_per_s_dropped=%" PRIu64 "\n", key, st.dropped - d0);
	printf("markers_%s_clock=%s\n", key, st.clock_tsc ? "tsc" : "CLOCK_BOOTTIME");
	printf("markers_%s_clock_error_ns=%" PRId64 "\n", key, st.clock_error_ns);
	mk_reader_free(r);
	return 0;
}

static int child(char **argv, const char *key, const char *clock)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (clock)
			setenv("SPMTAP_MARKER_CLOCK", clock, 1);
		char *args[] = { argv[0], (char *)"--channel", (char *)key, NULL };
		execv("/proc/self/exe", args);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--channel"))
		return under_recording(argv[2]);
	struct utsname u;
	uname(&u);
	printf("# bench_markers: %ld CPUs, %s %s; begin/end pairs, ns per pair (two time stamps each)\n",
	       sysconf(_SC_NPROCESSORS_ONLN), u.sysname, u.release);
	unsetenv(MK_ENV_FD);
	printf("clock_gettime_boottime_ns=%.1f\n", clock_ns(PAIRS));
	printf("rdtsc_ns=%.1f\n", rdtsc_ns(PAIRS));
	pairs_ns(PAIRS / 10);
	printf("markers_outside_ns_per_pair=%.1f\n", pairs_ns(PAIRS));
	int rc = child(argv, "tsc", NULL);
	/* The same under a recording forced to the clock call (what a machine without a usable TSC pays). */
	int rc2 = child(argv, "clock", "boottime");
	return rc ? rc : rc2;
}
