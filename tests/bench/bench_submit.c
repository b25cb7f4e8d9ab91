/* SPDX-License-Identifier: MIT */
/*
 * make bench: what programming counters through a real GPU queue costs on
 * the emulated device.  For each submitter and GPU: the latency of a
 * counter program from submit to completion (p50/p99 over many round
 * trips, the planner's real start program and a one-dword NOP), and the
 * CPU an idle emulated command processor burns per GPU.  Absolute times
 * are the emulator's (a real CP takes microseconds); the point is the
 * shape and the relative cost of the two queue paths.  Nothing here is a
 * pass/fail check.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>

#include "bench_util.h"
#include "emu/common/readback.h"
#include "spm/plan.h"
#include "spm/pm4.h"
#include "spm/spm.h"
#include "spm/submit.h"

#define PROFILE "mi210,mi300a"
#define ROUNDS 400

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double cpu_s(void)
{
	struct rusage r;
	getrusage(RUSAGE_SELF, &r);
	return (double)r.ru_utime.tv_sec + (double)r.ru_stime.tv_sec + (double)r.ru_utime.tv_usec * 1e-6 +
	       (double)r.ru_stime.tv_usec * 1e-6;
}

/* Emulated GPUs of this process whose CP thread runs (the test-only read-back). */
static unsigned running_cps(void)
{
	static int kfd = -1;
	if (kfd < 0)
		kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	unsigned n = 0;
	struct spm_device *devs = NULL;
	size_t nd = 0;
	if (spm_discover(NULL, &devs, &nd, NULL, 0) < 0)
		return 0;
	for (size_t i = 0; i < nd; i++) {
		struct emu_readback_args a = { devs[i].gpu_id, 0, EMU_RB_QUEUE, EMU_RBQ_CP_RUNNING, 0, 0, 0, 0 };
		n += ioctl(kfd, EMU_IOC_READBACK, &a) == 0 && a.value;
	}
	free(devs);
	return n;
}

/* Latencies of n submissions of dw, in microseconds, sorted; the stop program between starts. */
static int rounds(const struct spm_submitter_ops *ops, struct spm_submitter *s, const struct spm_pm4 *p,
		  const struct spm_pm4 *between, double *lat, int n)
{
	char err[SPM_ERRLEN];
	for (int i = 0; i < n; i++) {
		double t0 = now_s();
		if (ops->submit(s, p->dw, p->n, SPM_SUBMIT_TIMEOUT_MS, err, sizeof(err)) < 0) {
			fprintf(stderr, "bench_submit: %s\n", err);
			return -1;
		}
		lat[i] = (now_s() - t0) * 1e6;
		if (between && ops->submit(s, between->dw, between->n, SPM_SUBMIT_TIMEOUT_MS, err, sizeof(err)) < 0)
			return -1;
	}
	qsort(lat, (size_t)n, sizeof(*lat), cmp_d);
	return 0;
}

static void one(const struct spm_device *d, const struct spm_submitter_ops *ops)
{
	static const char *const names[] = { "SQ_WAVES", "SQ_INSTS_SALU", "TCC_HIT", "TA_TA_BUSY", "TD_TD_BUSY",
					     "CPC_CPC_STAT_BUSY", "SPI_CSN_BUSY", "TCP_TOTAL_CACHE_ACCESSES" };
	struct spm_geometry geo;
	enum spm_gfx gfx;
	char err[SPM_ERRLEN];
	struct spm_plan *p = NULL;
	struct spm_pm4 start, stop, nop;
	spm_pm4_init(&start);
	spm_pm4_init(&stop);
	spm_pm4_init(&nop);
	spm_pm4_nop1(&nop);
	struct spm_plan_request req = { .gfx = d->gfx, .counters = names, .ncounters = 8, .interval = 32768 };
	if (spm_geometry_from_device(d, &geo, &gfx, err, sizeof(err)) < 0)
		return;
	req.geo = geo;
	if (spm_plan_create(&req, &p, err, sizeof(err)) < 0 || spm_pm4_build_start(p, &start) ||
	    spm_pm4_build_stop(p, &stop)) {
		fprintf(stderr, "bench_submit: %s\n", err);
		return;
	}
	struct spm_submitter *s = NULL;
	if (ops->create(&s, d, err, sizeof(err)) < 0) {
		printf("  %-6s %-7s unavailable: %.120s\n", d->gfx, ops->name, err);
		return;
	}
	static double lat[ROUNDS], nlat[ROUNDS];
	if (rounds(ops, s, &start, &stop, lat, ROUNDS) == 0 && rounds(ops, s, &nop, NULL, nlat, ROUNDS) == 0)
		printf("  %-6s %-7s start program %4zu dw x %u XCC: p50 %7.1f us  p99 %7.1f us | 1-dw NOP: p50 %6.1f "
		       "us  p99 %7.1f us\n", d->gfx, ops->name, start.n, d->num_xcc, lat[ROUNDS / 2],
		       lat[ROUNDS * 99 / 100], nlat[ROUNDS / 2], nlat[ROUNDS * 99 / 100]);
	/* Idle: the queue exists, nothing is submitted; the CP thread backs off to its idle poll. */
	struct timespec settle = { 0, 300 * 1000000L }, span = { 2, 0 };
	nanosleep(&settle, NULL);
	double c0 = cpu_s(), w0 = now_s();
	nanosleep(&span, NULL);
	double idle = (cpu_s() - c0) / (now_s() - w0) * 100.0;
	unsigned cps = running_cps();
	printf("  %-6s %-7s idle: %.2f %% of a core for the process, %u emulated CP(s) polling: %.2f %% per GPU\n",
	       d->gfx, ops->name, idle, cps, cps ? idle / cps : idle);
	ops->destroy(s);
	spm_pm4_fini(&start);
	spm_pm4_fini(&stop);
	spm_pm4_fini(&nop);
	spm_plan_free(p);
}

int main(int argc, char **argv)
{
	(void)argc;
	bench_under_emu(argv, "bench_submit", PROFILE);
	struct utsname u;
	uname(&u);
	printf("bench_submit: %s, %ld CPUs, %s %s; %d round trips each (submit -> completion signal)\n", PROFILE,
	       sysconf(_SC_NPROCESSORS_ONLN), u.sysname, u.release, ROUNDS);
	struct spm_device *devs = NULL;
	size_t n = 0;
	char err[SPM_ERRLEN];
	if (spm_discover(NULL, &devs, &n, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_submit: %s\n", err);
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		for (const struct spm_submitter_ops *const *o = spm_submitters(); *o; o++)
			one(&devs[i], *o);
	free(devs);
	return 0;
}
