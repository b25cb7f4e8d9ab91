/* SPDX-License-Identifier: MIT */
/*
 * Kernel dispatch packets on the emulated CP (docs/emulator.md "Kernel
 * dispatches"), checked against the per-dispatch truth file:
 *  - kmt_*: hand-written KERNEL_DISPATCH packets through the real libhsakmt
 *    (helper emu_queue_kmt mode kernel) on the MI210 and the MI250X: each
 *    takes the modelled time (the default formula with the GPU's CU count),
 *    a queue runs its packets in order, two queues overlap;
 *  - hsa_*: examples/hsa built with Debian's clang/lld (kernels) and cc
 *    (-lhsa-runtime64), run on the real ROCr 5.2.3: ROCr's code upload goes
 *    through its blit kernel (applied as a copy, truth kind blit_copy), every
 *    user dispatch completes with the truth's ticks, per-name duration
 *    overrides hold, the two queues overlap, and ROCr's profiling times are
 *    the ticks mapped to CLOCK_BOOTTIME.
 * Refusals (an unknown kernel, a reserved packet type) are test_emu_queue's
 * not_executed.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "emu/common/emu.h"
#include "hsa_example.h"
#include "jline.h"
#include "proc.h"
#include "testenv.h"

#define SPEC "mi210,mi250x" /* three GPU nodes: the MI250X card has two GCDs; its first is ROCr's GPU 1 */
#define NGPU 3
#define TICK_NS 10 /* the emulated GPU clock is 100 MHz (emu/shim/gpu_clock.c) */
#define CLOCK_OFFSET 0x1000000000ull /* SPMTAP_EMU_CLOCK_OFFSET's default (emu/shim/config.c) */

static struct emu_gpu_desc G[4];
static const char *truth;

struct tline {
	unsigned long long gpu_id, queue, index, start, end, grid, kobj;
	char kind[16], name[64];
	bool used;
};

/* The truth file's CP lines (at most max). */
static int read_truth(struct tline *t, int max)
{
	FILE *f = fopen(truth, "r");
	char line[2048];
	int n = 0;
	while (f && n < max && fgets(line, sizeof(line), f)) {
		if (!strstr(line, "\"engine\":\"cp\""))
			continue;
		struct tline *l = &t[n];
		memset(l, 0, sizeof(*l));
		const char *g = strstr(line, "\"grid\":[");
		if (!jget_u64(line, "gpu_id", &l->gpu_id) || !jget_u64(line, "queue", &l->queue) ||
		    !jget_u64(line, "index", &l->index) || !jget_u64(line, "start_ts", &l->start) ||
		    !jget_u64(line, "end_ts", &l->end) || !jget_u64(line, "kernel_object", &l->kobj) ||
		    !jget_str(line, "kind", l->kind, sizeof(l->kind)) || !g || sscanf(g + 8, "%llu", &l->grid) != 1) {
			fprintf(stderr, "  bad truth line: %s", line);
			continue;
		}
		jget_str(line, "name", l->name, sizeof(l->name));
		n++;
	}
	if (f)
		fclose(f);
	return n;
}

/* Runs argv with extra environment "K=V" entries; stdout into out; exit status. */
static int run(char *const argv[], const char *const *env, char *out, size_t outlen)
{
	return tp_capture_buf((const char *const *)argv, &(struct tp_opts){ .env = env }, out, outlen);
}

/* The default model's duration in ticks is floor or ceil of ns / 10 (start and end are rounded apart). */
static bool ticks_match(unsigned long long ticks, unsigned long long ns)
{
	return ticks == ns / TICK_NS || ticks == (ns + TICK_NS - 1) / TICK_NS;
}

/* ---- libhsakmt: hand-written packets ------------------------------------------------------------ */

#define KMT_BASE_NS 40000000ull /* 40 ms: long enough that the CP sees the other queue's doorbell meanwhile */

static void kmt(int gi)
{
	char exe[PATH_MAX + 64], id[16], out[8192];
	snprintf(exe, sizeof(exe), "%s/tests/helpers/emu_queue_kmt", testenv_build_dir());
	snprintf(id, sizeof(id), "0x%x", G[gi].gpu_id);
	char *argv[] = { exe, id, "kernel", NULL };
	char base[64];
	snprintf(base, sizeof(base), "SPMTAP_EMU_KERNEL_BASE_NS=%llu", KMT_BASE_NS);
	const char *env[] = { base, NULL };
	unlink(truth);
	CU_ASSERT_EQUAL_FATAL(run(argv, env, out, sizeof(out)), 0);
	unsigned long long t[6];
	const char *p = strstr(out, "ticks a0 ");
	CU_ASSERT_FATAL(p && sscanf(p, "ticks a0 %llu %llu a1 %llu %llu b0 %llu %llu", &t[0], &t[1], &t[2], &t[3], &t[4],
				    &t[5]) == 6);
	/* The default model: base + 64 work-items x 10400 ps / CUs. */
	unsigned long long ns = KMT_BASE_NS + 64ull * 10400 / G[gi].profile->cu_count / 1000;
	for (int i = 0; i < 3; i++)
		CU_ASSERT(ticks_match(t[2 * i + 1] - t[2 * i], ns));
	CU_ASSERT(t[2] >= t[1]);               /* queue A in order: a1 starts after a0 ends */
	CU_ASSERT(t[4] < t[1] && t[0] < t[5]); /* queue B's b0 overlaps a0 */
	/* The truth has exactly these three, nameless (no code object was uploaded), on this GPU. */
	struct tline tl[16];
	int n = read_truth(tl, 16);
	CU_ASSERT_EQUAL(n, 3);
	for (int i = 0; i < 3; i++) {
		int hits = 0;
		for (int j = 0; j < n; j++)
			if (tl[j].start == t[2 * i] && tl[j].end == t[2 * i + 1] && tl[j].gpu_id == G[gi].gpu_id &&
			    !strcmp(tl[j].kind, "user") && !tl[j].name[0] && tl[j].grid == 64)
				hits++;
		CU_ASSERT_EQUAL(hits, 1);
	}
}

static void test_kmt_mi210(void)
{
	kmt(0);
}

static void test_kmt_mi250x(void)
{
	kmt(1);
}

/* ROCr 5.2's blit kernels laid out by hand: memory filled and copied, unknown ones refused (the helper checks). */
static void test_blit(void)
{
	char exe[PATH_MAX + 64], id[16], out[8192];
	snprintf(exe, sizeof(exe), "%s/tests/helpers/emu_queue_kmt", testenv_build_dir());
	snprintf(id, sizeof(id), "0x%x", G[0].gpu_id);
	char *argv[] = { exe, id, "blit", NULL };
	unlink(truth);
	CU_ASSERT_EQUAL(run(argv, NULL, out, sizeof(out)), 0);
	/* The three that ran are in the truth as blits; the refused ones are not. */
	struct tline tl[16];
	int n = read_truth(tl, 16), fill = 0, copy = 0;
	for (int i = 0; i < n; i++) {
		fill += !strcmp(tl[i].kind, "blit_fill");
		copy += !strcmp(tl[i].kind, "blit_copy");
	}
	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT_EQUAL(fill, 1);
	CU_ASSERT_EQUAL(copy, 2);
}

/* ---- examples/hsa on ROCr 5.2.3 ------------------------------------------------------------------ */

static const char *need_hsa_example(void) { return hsa_example_need(); }

struct aline {
	unsigned long long queue, packet, grid, start_ns, end_ns, start, end;
	char kernel[32];
};

#define THREADS 4
#define PER_THREAD 6
#define ADD1_NS 3000000ull  /* 3 ms */
#define SCALE_NS 2000000ull /* 2 ms */

/*
 * Runs examples/hsa on GPU gi (ROCr's GPU index = the spec's node order), directly or, with `record`,
 * under `spmtap record --spm SQ_WAVES` on the same GPU (the recorder's counter program and the app's
 * dispatches share the emulated CP), and checks it against the dispatch truth.
 */
static void hsa_example(int gi, bool record)
{
	char exe[PATH_MAX + 32], hsaco[PATH_MAX + 32], th[8], per[8], spmtap[PATH_MAX + 32], dev[16], dir[PATH_MAX];
	static char out[65536];
	snprintf(exe, sizeof(exe), "%s/hsa_dispatch", hsa_example_dir());
	snprintf(hsaco, sizeof(hsaco), "%s/k.hsaco", hsa_example_dir());
	snprintf(th, sizeof(th), "%d", THREADS);
	snprintf(per, sizeof(per), "%d", PER_THREAD);
	snprintf(spmtap, sizeof(spmtap), "%s/spmtap", testenv_build_dir());
	snprintf(dev, sizeof(dev), "gpu_id:0x%x", G[gi].gpu_id);
	snprintf(dir, sizeof(dir), "%s", testenv_path(testenv_tmpdir(), "rec"));
	char vis[32], kns[128];
	snprintf(vis, sizeof(vis), "ROCR_VISIBLE_DEVICES=%d", gi);
	snprintf(kns, sizeof(kns), "SPMTAP_EMU_KERNEL_NS=add1=%llu,scale.kd=%llu", ADD1_NS, SCALE_NS);
	char *direct[] = { exe, hsaco, th, per, NULL };
	/* ROCR_VISIBLE_DEVICES for the app only: the recorder's own ROCr must see every GPU. */
	char *rec[] = { spmtap, "record", "--spm", "SQ_WAVES", "--device", dev, "-d", dir, "-o", "r", "--",
			"/usr/bin/env", vis, exe, hsaco, th, per, NULL };
	char **argv = record ? rec : direct;
	const char *env[] = { kns, record ? NULL : vis, NULL };
	unlink(truth);
	/* Boottime minus the raw clock the GPU ticks count (no suspend here: constant up to NTP slew). */
	struct timespec b, r;
	clock_gettime(CLOCK_BOOTTIME, &b);
	clock_gettime(CLOCK_MONOTONIC_RAW, &r);
	long long boot_minus_raw = ((long long)b.tv_sec - r.tv_sec) * 1000000000ll + (b.tv_nsec - r.tv_nsec);
	CU_ASSERT_EQUAL_FATAL(run(argv, env, out, sizeof(out)), 0);

	static struct tline tl[256];
	int nt = read_truth(tl, 256);
	/* ROCr's code upload: one blit copy on its utility queue (KFD queue 0) before any user dispatch. */
	int blits = 0;
	for (int j = 0; j < nt; j++)
		if (!strcmp(tl[j].kind, "blit_copy") && tl[j].queue == 0)
			blits++;
	CU_ASSERT(blits >= 1);
	CU_ASSERT_STRING_EQUAL(tl[0].kind, "blit_copy");

	int na = 0;
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		struct aline a;
		if (!jget_u64(line, "queue", &a.queue) || !jget_u64(line, "packet", &a.packet) ||
		    !jget_u64(line, "grid", &a.grid) || !jget_u64(line, "start_ns", &a.start_ns) ||
		    !jget_u64(line, "end_ns", &a.end_ns) || !jget_u64(line, "start_ts", &a.start) ||
		    !jget_u64(line, "end_ts", &a.end) || !jget_str(line, "kernel", a.kernel, sizeof(a.kernel)))
			continue;
		na++;
		/*
		 * hsa_amd_profiling_get_dispatch_time reads start_ts/end_ts of the completion signal's
		 * amd_signal_t and maps them; the example prints those raw fields too, so they are compared
		 * exactly with the truth, and ROCr's mapping is checked against the clock model below.
		 */
		struct tline *m = NULL;
		for (int j = 0; j < nt && !m; j++)
			if (!tl[j].used && tl[j].start == a.start && tl[j].end == a.end && !strcmp(tl[j].kind, "user") &&
			    !strcmp(tl[j].name, a.kernel) && tl[j].grid == a.grid && tl[j].index == a.packet &&
			    tl[j].gpu_id == G[gi].gpu_id)
				m = &tl[j];
		CU_ASSERT_PTR_NOT_NULL(m);
		if (!m) {
			fprintf(stderr, "  no truth line for %s\n", line);
			continue;
		}
		m->used = true;
		unsigned long long dt = a.end - a.start;
		if (!strcmp(a.kernel, "add1"))
			CU_ASSERT_EQUAL(dt * TICK_NS, ADD1_NS); /* whole ticks: start and end round alike */
		if (!strcmp(a.kernel, "scale"))
			CU_ASSERT_EQUAL(dt * TICK_NS, SCALE_NS);
		if (!strcmp(a.kernel, "nop"))
			CU_ASSERT(ticks_match(dt, 5000 + 64ull * 10400 / G[gi].profile->cu_count / 1000));
		/*
		 * ROCr interpolates between GET_CLOCK_COUNTERS pairs (gpu ticks, boottime): a duration keeps
		 * its length up to the pair's rate error (reads microseconds apart over an interval of at
		 * least ms: within 1%), an instant maps to boottime up to the reads' spacing and BOOTTIME's
		 * NTP slew against RAW (<= 500 ppm over the run's seconds): 1 ms is far above both.
		 */
		long long dns = (long long)(a.end_ns - a.start_ns), want = (long long)(dt * TICK_NS);
		CU_ASSERT(llabs(dns - want) <= want / 100 + 1000);
		long long at = (long long)((a.start - CLOCK_OFFSET) * TICK_NS) + boot_minus_raw;
		CU_ASSERT(llabs((long long)a.start_ns - at) < 1000000);
	}
	CU_ASSERT_EQUAL(na, THREADS * PER_THREAD);
	/* Every user line in the truth belongs to one of the app's dispatches. */
	int users = 0;
	for (int j = 0; j < nt; j++)
		users += !strcmp(tl[j].kind, "user");
	CU_ASSERT_EQUAL(users, THREADS * PER_THREAD);
	/* Per KFD queue: in order, one at a time.  Across the two user queues: overlap. */
	int overlaps = 0;
	for (int i = 0; i < nt; i++)
		for (int j = 0; j < nt; j++) {
			if (i == j || strcmp(tl[i].kind, "user") || strcmp(tl[j].kind, "user"))
				continue;
			if (tl[i].queue == tl[j].queue && tl[j].index == tl[i].index + 1)
				CU_ASSERT(tl[j].start >= tl[i].end);
			if (tl[i].queue < tl[j].queue && tl[i].start < tl[j].end && tl[j].start < tl[i].end)
				overlaps++;
		}
	CU_ASSERT(overlaps > 0);
	fprintf(stderr, "  [%s: %d dispatches, %d blit copies, %d overlapping pairs]\n", G[gi].profile->name, na, blits,
		overlaps);
	if (record) {
		/* The recording of the same run is there and has samples. */
		FILE *f = fopen(testenv_path(dir, "r_spm.csv"), "r");
		int lines = 0;
		char l[4096];
		while (f && fgets(l, sizeof(l), f))
			lines++;
		if (f)
			fclose(f);
		CU_ASSERT(lines > 10);
	}
}

static void test_hsa_mi210(void)
{
	hsa_example(0, false);
}

static void test_hsa_mi250x(void)
{
	hsa_example(1, false);
}

static void test_record_mi210(void)
{
	hsa_example(0, true);
}

static void test_record_mi250x(void)
{
	hsa_example(1, true);
}

static const struct testenv_case cases[] = {
	{ "kmt_mi210", test_kmt_mi210, NULL },
	{ "kmt_mi250x", test_kmt_mi250x, NULL },
	{ "blit", test_blit, NULL },
	{ "hsa_mi210", test_hsa_mi210, need_hsa_example },
	{ "hsa_mi250x", test_hsa_mi250x, need_hsa_example },
	{ "record_mi210", test_record_mi210, need_hsa_example },
	{ "record_mi250x", test_record_mi250x, need_hsa_example },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	char err[256];
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return testenv_run_suite("emu_dispatch", cases, argc, argv);
	testenv_under_emu(argc, argv, SPEC, NULL);
	if (emu_spec_parse(SPEC, G, 4, err, sizeof(err)) != NGPU)
		return 2;
	truth = testenv_dispatch_truth();
	return testenv_run_suite("emu_dispatch", cases, argc, argv);
}
