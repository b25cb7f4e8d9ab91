/* SPDX-License-Identifier: MIT */
/*
 * make bench: what recording kernel dispatches costs the application, per
 * dispatch (issue 17: aim at most 2 us on the app's thread).
 * examples/hsa `many` (4 threads, 2 queues, 10,000 dispatches) on the
 * emulated MI210 under `spmtap record --spm SQ_WAVES -f csv`, with the tool
 * (libspmtap-tool.so through HSA_TOOLS_LIB) and with --no-kernels, RUNS
 * times each, alternating.  The example prints, from inside the app:
 *   cpu_submit_ns_per_dispatch  the submitting threads' CPU
 *                               (CLOCK_THREAD_CPUTIME_ID) in submit():
 *                               filling the packet and ringing the
 *                               doorbell, where the tool's intercept runs;
 *   cpu_process_ns_per_dispatch the whole process's CPU while the threads
 *                               dispatch: the app's threads, ROCr's async
 *                               signal thread (the tool's completion work),
 *                               and the emulator's CP thread, which is the
 *                               same with and without the tool.
 * The tool's share is the difference (median of the runs).  Prints
 * `key=value` lines (tests/bench/run.sh); nothing here is a pass/fail check.
 * Needs clang with the amdgcn target and ROCr's development files, like
 * test_kernels; says so and exits 0 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUNS 5
#define PER "2500"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* One recording; the example's two numbers, or -1 when it did not run. */
static int one(const char *b, const char *dir, int tool, double *submit, double *proc)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd),
		 "SPMTAP_EMU_KERNEL_NS=add1=100000,saxpy=100000 %s/spmtap-emu mi210 -- %s/spmtap record --spm "
		 "SQ_WAVES -d %s -o run -f csv %s -- %s/hsa_dispatch %s/k.hsaco 4 " PER " many 2>&1 >/dev/null",
		 b, b, dir, tool ? "" : "--no-kernels", dir, dir);
	FILE *p = popen(cmd, "r");
	char line[1024];
	int got = 0;
	while (p && fgets(line, sizeof(line), p)) {
		const char *s = strstr(line, "cpu_submit_ns_per_dispatch=");
		if (s && sscanf(s, "cpu_submit_ns_per_dispatch=%lf cpu_process_ns_per_dispatch=%lf", submit, proc) == 2)
			got = 1;
	}
	int rc = p ? pclose(p) : -1;
	return got && rc == 0 ? 0 : -1;
}

int main(void)
{
	const char *b = getenv("B") ? getenv("B") : "build";
	char dir[1024], cmd[4096];
	snprintf(dir, sizeof(dir), "%s/bench/kernels", b);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s && clang -target amdgcn-amd-amdhsa -mcpu=gfx90a -nogpulib -O2 -c examples/hsa/kernels.cl "
		 "-o %s/k.o && ld.lld -shared %s/k.o -o %s/k.hsaco && cc -std=c11 -D_GNU_SOURCE -O2 -o %s/hsa_dispatch "
		 "examples/hsa/hsa_dispatch.c -lhsa-runtime64 -lpthread",
		 dir, dir, dir, dir, dir);
	if (system(cmd)) {
		printf("bench_kernels: skipped: examples/hsa does not build here (clang amdgcn, libhsa-runtime-dev)\n");
		return 0;
	}
	double s[2][RUNS], pr[2][RUNS];
	int n[2] = { 0, 0 };
	for (int r = 0; r < RUNS; r++)
		for (int tool = 1; tool >= 0; tool--) {
			double a, c;
			if (one(b, dir, tool, &a, &c) == 0) {
				s[tool][n[tool]] = a;
				pr[tool][n[tool]++] = c;
				printf("run %d %s: app thread %.0f ns, process %.0f ns per dispatch\n", r,
				       tool ? "with the tool" : "without", a, c);
			}
		}
	if (!n[0] || !n[1]) {
		printf("bench_kernels: a recording failed (%d with the tool, %d without)\n", n[1], n[0]);
		return 0;
	}
	double med[2][2];
	for (int t = 0; t < 2; t++) {
		qsort(s[t], (size_t)n[t], sizeof(double), cmp);
		qsort(pr[t], (size_t)n[t], sizeof(double), cmp);
		med[t][0] = s[t][n[t] / 2];
		med[t][1] = pr[t][n[t] / 2];
	}
	printf("dispatches=%d\n", 4 * atoi(PER));
	printf("app_thread_ns_per_dispatch_with_tool=%.0f\n", med[1][0]);
	printf("app_thread_ns_per_dispatch_without=%.0f\n", med[0][0]);
	printf("tool_app_thread_ns_per_dispatch=%.0f\n", med[1][0] - med[0][0]);
	printf("process_ns_per_dispatch_with_tool=%.0f\n", med[1][1]);
	printf("process_ns_per_dispatch_without=%.0f\n", med[0][1]);
	printf("tool_total_ns_per_dispatch=%.0f\n", med[1][1] - med[0][1]);
	return 0;
}
