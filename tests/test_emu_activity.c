/* SPDX-License-Identifier: MIT */
/*
 * Counters follow kernels (docs/emulator.md "Counters follow kernels"):
 * examples/hsa runs under `spmtap record --spm SQ_CYCLES,SQ_BUSY_CYCLES,
 * SQ_WAVES` on the emulated MI210 with 20 ms kernels (about 500 samples
 * each at --interval 65504) and a level per kernel (add1 0.3, scale 0.6,
 * nop the default 0.5), on an idle background (SPMTAP_EMU_WORKLOAD=idle).
 * Checked against the dispatch truth (start/end ticks, kseq, level of every
 * dispatch, the recorder's and ROCr's blits included) and the per-sample
 * truth:
 *  - the recorded CSV rows equal the per-sample truth;
 *  - each sample's truth names the dispatches that ran at its time (flag,
 *    count, the newest one's kseq);
 *  - its values are at the level those dispatches sum to, capped at 1:
 *    SQ_BUSY_CYCLES / SQ_CYCLES = 0.98 x level and SQ_WAVES = 0.002 x level
 *    x interval, within the counter model's spread (+-10 % per counter,
 *    +-3 % per sample); 0 outside kernels.
 * one_queue: one thread, kernels one after another (each level alone, idle
 * between).  two_queues: two threads on two queues overlap: add1+scale sums
 * to 0.9, scale+nop (1.1) is capped at 1.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "csv_truth.h"
#include "emu/common/emu.h"
#include "emu/common/sensors.h"
#include "files.h"
#include "spm/catalog.h"
#include "spm_truth.h"
#include "hsa_example.h"
#include "jline.h"
#include "proc.h"
#include "testenv.h"

#define SPEC "mi210"
#define KERNEL_NS 20000000ull /* 20 ms */
#define INTERVAL 65504u

static struct emu_gpu_desc G[1];
/* The earliest dispatch start on the GPU in this run (its kernel log lives as long as the suite's state). */
static unsigned long long first_start = ~0ull;
static bool wl_given; /* the case sets SPMTAP_EMU_WORKLOAD=idle; else the default background */
static const char *dtruth;
static char struth[PATH_MAX];

/* ---- the dispatch truth ---------------------------------------------------------------------- */


struct disp {
	unsigned long long start, end, kseq;
	double level;
	char name[32];
};

static int read_dispatches(struct disp *d, int max)
{
	FILE *f = fopen(dtruth, "r");
	char line[2048];
	int n = 0;
	while (f && n < max && fgets(line, sizeof(line), f)) {
		unsigned long long gpu;
		if (!strstr(line, "\"engine\":\"cp\"") || !jget_u64(line, "gpu_id", &gpu) || gpu != G[0].gpu_id)
			continue;
		struct disp *x = &d[n];
		memset(x, 0, sizeof(*x));
		if (!jget_u64(line, "start_ts", &x->start) || !jget_u64(line, "end_ts", &x->end) ||
		    !jget_u64(line, "kseq", &x->kseq) || !jget_dbl(line, "level", &x->level)) {
			fprintf(stderr, "  bad dispatch truth line: %s", line);
			CU_FAIL("dispatch truth line without start_ts/end_ts/kseq/level");
			continue;
		}
		if (x->start < first_start)
			first_start = x->start;
		const char *nm = strstr(line, "\"name\":\"");
		if (nm)
			sscanf(nm + 8, "%31[^\"]", x->name);
		n++;
	}
	if (f)
		fclose(f);
	return n;
}

/* ---- examples/hsa ------------------------------------------------------------------------------ */

static const char *need_hsa_example(void) { return hsa_example_need(); }

/* Runs argv with extra environment entries, stdout and stderr to `log`; exit status. */
static int run(char *const argv[], const char *const *env, const char *log)
{
	return tp_run((const char *const *)argv, &(struct tp_opts){ .env = env, .out = log, .err = log });
}

/* ---- the check ----------------------------------------------------------------------------------- */

struct tally {
	size_t checked, idle, edge;
	size_t before; /* default background: samples before the GPU's first dispatch (level 1) */
	size_t alone[3]; /* samples under exactly one add1, scale, nop */
	size_t summed;   /* two dispatches, levels summing below 1 */
	size_t capped;   /* two dispatches, levels summing above 1 */
	size_t seen[4]; /* samples whose values of models[i] were checked */
	double rmin[64], rmax[64]; /* per SQ_WAVES slot: value / (0.002 x level x interval) under kernels */
};

static int kidx(const char *name)
{
	return !strcmp(name, "add1") ? 0 : !strcmp(name, "scale") ? 1 : !strcmp(name, "nop") ? 2 : -1;
}

/*
 * What the counters count (emu/common/counters.c: rate, class) and the fraction of a kernel's level each
 * block runs at (docs/emulator.md: SQ 1, TA 0.5 by default; TCC set to 0.4 by the test's
 * SPMTAP_EMU_KERNEL_BLOCKS, its default being 0.3).
 */
struct model {
	const char *name;
	double rate, frac;
	bool busy;
};
static const struct model models[] = {
	{ "SQ_BUSY_CYCLES", 0.98, 1.0, true },
	{ "SQ_WAVES", 0.002, 1.0, false },
	{ "TA_TA_BUSY", 0.9, 0.5, true },
	{ "TCC_BUSY", 0.95, 0.4, true },
};

static const struct model *model_of(const char *name)
{
	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++)
		if (!strcmp(models[i].name, name))
			return &models[i];
	return NULL;
}

/* One sample against the dispatches: its flags and its values. */
static void check_sample(const struct truth *t, const struct st_sample *s, const struct disp *d, int nd,
			 struct tally *y)
{
	const struct st_layout *L = &t->lay[s->layout];
	if (s->flags & ST_LATE)
		return;
	unsigned count = 0;
	double sum = 0;
	const struct disp *newest = NULL, *one = NULL;
	for (int i = 0; i < nd; i++) {
		/* Ticks are ns / 10 rounded down on both sides: a sample within a tick of an edge is either. */
		if ((s->ticks + 1 >= d[i].start && s->ticks <= d[i].start + 1) ||
		    (s->ticks + 1 >= d[i].end && s->ticks <= d[i].end + 1)) {
			y->edge++;
			return;
		}
		if (d[i].start <= s->ticks && s->ticks < d[i].end) {
			count++;
			sum += d[i].level;
			one = &d[i];
			if (!newest || d[i].kseq > newest->kseq)
				newest = &d[i];
		}
	}
	/* The default background: constant:1 until the GPU's first dispatch, idle from then on. */
	if (!wl_given && s->ticks + 1 >= first_start && s->ticks <= first_start + 1) {
		y->edge++;
		return;
	}
	bool full_bg = !wl_given && s->ticks < first_start;
	double bg = full_bg ? 1 : 0;
	y->before += full_bg;
	y->checked++;
	CU_ASSERT_EQUAL(!!(s->flags & ST_KERNEL), count > 0);
	CU_ASSERT_EQUAL(ST_KCOUNT(s->flags), count);
	if (newest)
		CU_ASSERT_EQUAL(ST_KSEQ(s->flags), newest->kseq & 0xFFFF);
	uint64_t cycles = 0;
	for (uint32_t i = 0; i < L->nvals; i++)
		if (L->slots[i].value && !strcmp(L->slots[i].name, "SQ_CYCLES"))
			cycles = s->vals[i];
	CU_ASSERT_EQUAL(cycles, INTERVAL);
	bool ok = true;
	for (uint32_t i = 0; i < L->nvals; i++) {
		if (!L->slots[i].value)
			continue;
		const struct model *md = model_of(L->slots[i].name);
		if (!md)
			continue;
		/* The block's activity: the kernels' levels times its fraction, on the background, capped. */
		double a = bg + sum * md->frac;
		if (a > 1)
			a = 1;
		double want = md->rate * a * INTERVAL;
		y->seen[md - models]++;
		double v = (double)s->vals[i];
		/*
		 * The counter model's spread (counters.c emu_spread): a fixed factor per counter in
		 * [0.9, 1.3) and one per sample in [0.97, 1.09) (documented as +-10 % and +-3 %, but
		 * emu_spread maps its hash onto [-1, 3)); a busy count capped at the interval.
		 */
		double lo = want * 0.9 * 0.97 - 1, hi = want * 1.3 * 1.09 + 1;
		if (hi > INTERVAL && md->busy)
			hi = INTERVAL;
		if (a == 0 ? v != 0 : (v < lo || v > hi)) {
			if (ok)
				fprintf(stderr, "  %s = %.0f, model %.0f..%.0f\n", L->slots[i].name, v, lo, hi);
			ok = false;
		}
		if (a > 0 && i < 64 && !strcmp(L->slots[i].name, "SQ_WAVES")) {
			double r = v / want;
			if (!y->rmax[i] || r < y->rmin[i])
				y->rmin[i] = r;
			if (r > y->rmax[i])
				y->rmax[i] = r;
		}
	}
	CU_ASSERT(ok);
	if (!ok)
		fprintf(stderr, "  sample ticks %llu: %u dispatches, levels %.2f: values off the model\n",
			(unsigned long long)s->ticks, count, sum);
	if (full_bg)
		;
	else if (!count)
		y->idle++;
	else if (count == 1 && kidx(one->name) >= 0)
		y->alone[kidx(one->name)]++;
	else if (count == 2 && sum > 1)
		y->capped++;
	else if (count == 2)
		y->summed++;
}

static const struct spm_catalog *gfx90a_catalog(void)
{
	enum spm_gfx g;
	const struct spm_catalog *cat = NULL;
	if (spm_gfx_parse("gfx90a", &g, NULL, 0) == 0)
		spm_catalog_get(g, &cat, NULL, 0);
	return cat;
}

/*
 * Power follows kernels (docs/emulator.md "Power follows kernels"), at the
 * emulator: this process runs under the shim, so gpu_metrics read here is
 * the emulated card's table.  The energy counter's increase from a table
 * before the run to one after it (every dispatch of the run in between)
 * against the integral of the true power: on the idle background the
 * card draws dies x (idle + offset + min(1, levels running) x (max - idle)),
 * the levels those of the dispatch truth (every dispatch, blits included).
 * Exact but for the counter's floor at each end: within 2 ticks (30.5 uJ).
 */
struct energy_read {
	uint64_t ticks, fw_ns;
};

static bool read_energy(struct energy_read *r)
{
	unsigned char b[4096];
	ssize_t n = tf_slurp_into("/sys/class/drm/card0/device/gpu_metrics", (char *)b, sizeof(b));
	if (n < 120)
		return false;
	memcpy(&r->ticks, b + 24, 8); /* v1_3: energy_accumulator */
	memcpy(&r->fw_ns, b + 96, 8); /* firmware_timestamp, 10 ns */
	r->fw_ns *= 10;
	return true;
}

static double level_at(const struct disp *d, int nd, unsigned long long tk)
{
	double L = 0;
	for (int i = 0; i < nd; i++)
		L += d[i].start <= tk && tk < d[i].end ? d[i].level : 0;
	return L < 1 ? L : 1;
}

/* The integral of min(1, levels running) over all of d, in s (GPU ticks of 10 ns). */
static double kernel_integral_s(const struct disp *d, int nd)
{
	double sum = 0;
	for (int i = 0; i < 2 * nd; i++) {
		unsigned long long x = i < nd ? d[i].start : d[i - nd].end, y = ULLONG_MAX;
		bool dup = false;
		for (int j = 0; j < 2 * nd; j++) {
			unsigned long long b = j < nd ? d[j].start : d[j - nd].end;
			dup |= j < i && b == x;
			if (b > x && b < y)
				y = b;
		}
		if (!dup && y != ULLONG_MAX)
			sum += level_at(d, nd, x) * (double)(y - x) * 10e-9;
	}
	return sum;
}

static void check_energy(const struct energy_read *a, const struct energy_read *b, const struct disp *d, int nd)
{
	struct emu_sensor_model m;
	CU_ASSERT_EQUAL_FATAL(emu_sensor_model_init(SPEC, 0, 0, &m, NULL, 0), 0);
	double K = kernel_integral_s(d, nd), dt = (double)(b->fw_ns - a->fw_ns) * 1e-9;
	double want = m.dies * ((m.idle_w + m.offset_w) * dt + (m.max_w - m.idle_w) * K);
	double got = (double)(b->ticks - a->ticks) / EMU_ENERGY_TICKS_PER_J;
	double flat = m.dies * (m.idle_w + m.offset_w) * dt;
	fprintf(stderr, "  energy counter over the run: %.6f J, true power's integral %.6f J (diff %.3g J; "
			"kernels' own %.6f J over %.3f s)\n", got, want, got - want, want - flat, dt);
	CU_ASSERT(fabs(got - want) <= 2.0 / EMU_ENERGY_TICKS_PER_J + 1e-9 * want);
	CU_ASSERT(want - flat > 1.0); /* the kernels' energy is there to see */
}

static void record_kernels(int threads, int per_thread, struct tally *y)
{
	char exe[PATH_MAX + 32], hsaco[PATH_MAX + 32], th[8], per[8], spmtap[PATH_MAX + 32], dir[PATH_MAX],
		iv[16], log[PATH_MAX + 16];
	snprintf(exe, sizeof(exe), "%s/hsa_dispatch", hsa_example_dir());
	snprintf(hsaco, sizeof(hsaco), "%s/k.hsaco", hsa_example_dir());
	snprintf(th, sizeof(th), "%d", threads);
	snprintf(per, sizeof(per), "%d", per_thread);
	snprintf(spmtap, sizeof(spmtap), "%s/spmtap", testenv_build_dir());
	snprintf(dir, sizeof(dir), "%s", testenv_path(testenv_tmpdir(), "rec"));
	snprintf(iv, sizeof(iv), "%u", INTERVAL);
	snprintf(log, sizeof(log), "%s/log", testenv_tmpdir());
	char kns[160], st[PATH_MAX + 32];
	snprintf(kns, sizeof(kns), "SPMTAP_EMU_KERNEL_NS=add1=%llu,scale=%llu,nop=%llu", KERNEL_NS, KERNEL_NS,
		 KERNEL_NS);
	snprintf(st, sizeof(st), "SPMTAP_EMU_SAMPLE_TRUTH=%s", struth);
	char *argv[] = { spmtap, "record", "--spm", "SQ_CYCLES,SQ_BUSY_CYCLES,SQ_WAVES,TA_TA_BUSY,TCC_BUSY",
			 "--interval", iv, "-d", dir, "-o", "r", "--", exe, hsaco, th, per, NULL };
	/* nop keeps the default level (0.5): the profile names only add1 and scale. */
	const char *env[] = { kns, st, "SPMTAP_EMU_KERNEL_PROFILE=add1=0.3,scale.kd=0.6",
			      "SPMTAP_EMU_KERNEL_BLOCKS=TCC=0.4", wl_given ? "SPMTAP_EMU_WORKLOAD=idle" : NULL, NULL };
	unlink(dtruth);
	unlink(struth);
	/* this process's reads see the app's background (sensor knobs are read at each read) */
	if (wl_given)
		setenv("SPMTAP_EMU_WORKLOAD", "idle", 1);
	struct energy_read ea = { 0, 0 }, eb = { 0, 0 };
	bool e_ok = wl_given && read_energy(&ea);
	int rc = run(argv, env, log);
	if (e_ok) {
		struct timespec ts = { 0, 5000000 }; /* the last dispatch's end before the next firmware update */
		nanosleep(&ts, NULL);
		e_ok = read_energy(&eb);
	}
	unsetenv("SPMTAP_EMU_WORKLOAD");
	if (rc) {
		char cmd[PATH_MAX + 32];
		snprintf(cmd, sizeof(cmd), "tail -20 %s >&2", log);
		CU_ASSERT(system(cmd) >= 0);
	}
	CU_ASSERT_EQUAL_FATAL(rc, 0);

	static struct disp d[512];
	int nd = read_dispatches(d, 512);
	int users = 0;
	for (int i = 0; i < nd; i++)
		users += kidx(d[i].name) >= 0;
	CU_ASSERT_EQUAL(users, threads * per_thread);
	CU_ASSERT_EQUAL(e_ok, wl_given);
	if (e_ok)
		check_energy(&ea, &eb, d, nd);
	for (int i = 0; i < nd; i++) {
		int k = kidx(d[i].name);
		if (k >= 0)
			CU_ASSERT_DOUBLE_EQUAL(d[i].level, k == 0 ? 0.3 : k == 1 ? 0.6 : 0.5, 1e-9);
	}

	/* The release truth: the GPU's kernel log holds every dispatch and dropped none (2048 kept). */
	unsigned long long maxseq = 0, logged = 0, dropped = 1;
	for (int i = 0; i < nd; i++)
		if (d[i].kseq > maxseq)
			maxseq = d[i].kseq;
	FILE *rf = fopen(getenv("SPMTAP_EMU_TRUTH") ? getenv("SPMTAP_EMU_TRUTH") : "", "r");
	char line[4096];
	while (rf && fgets(line, sizeof(line), rf)) {
		unsigned long long gpu;
		if (strstr(line, "\"event\":\"release\"") && jget_u64(line, "gpu_id", &gpu) && gpu == G[0].gpu_id &&
		    jget_u64(line, "kernels_logged", &logged))
			jget_u64(line, "kernels_dropped", &dropped);
	}
	if (rf)
		fclose(rf);
	CU_ASSERT(maxseq > 0);
	CU_ASSERT(logged >= maxseq);
	CU_ASSERT_EQUAL(dropped, 0);

	struct truth t;
	CU_ASSERT_TRUE_FATAL(truth_load(struth, &t));
	struct csv c = { 0 };
	CU_ASSERT_TRUE(csv_load(testenv_path(dir, "r_spm.csv"), &c));
	struct match m;
	match_csv(&c, &t, G[0].gpu_id, gfx90a_catalog(), &m);
	CU_ASSERT(m.matched > 100);
	CU_ASSERT_EQUAL(m.mismatched_cells, 0);
	CU_ASSERT_EQUAL(m.unmatched_rows, 0);
	if (m.mismatched_cells || m.unmatched_rows)
		fprintf(stderr, "  CSV vs truth: %s\n", m.first);
	csv_free(&c);

	memset(y, 0, sizeof(*y));
	for (size_t i = 0; i < t.n; i++)
		if (t.lay[t.s[i].layout].gpu_id == G[0].gpu_id)
			check_sample(&t, &t.s[i], d, nd, y);
	truth_free(&t);
	fprintf(stderr,
		"  [%d dispatches; samples: %zu checked, %zu before any kernel, %zu idle, alone add1/scale/nop "
		"%zu/%zu/%zu, two summed %zu, two capped %zu, %zu at an edge]\n",
		nd, y->checked, y->before, y->idle, y->alone[0], y->alone[1], y->alone[2], y->summed, y->capped,
		y->edge);
	/*
	 * Proportional to the level: one SQ_WAVES counter's value / level varies only by the per-sample
	 * noise (x [0.97, 1.09)) and integer rounding (<= 0.5 of >= 39 counts at level 0.3), across all
	 * levels seen; a wrong level (0.5 for 0.3) would be 1.67x off.
	 */
	for (int i = 0; i < 64; i++)
		if (y->rmax[i]) {
			CU_ASSERT(y->rmax[i] / y->rmin[i] <= 1.09 / 0.97 * 1.03);
			if (y->rmax[i] / y->rmin[i] > 1.09 / 0.97 * 1.03)
				fprintf(stderr, "  SQ_WAVES slot %d: value / level from %.3f to %.3f\n", i, y->rmin[i],
					y->rmax[i]);
		}
	CU_ASSERT(y->idle > 10); /* between kernels or after the last: the idle background */
	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++)
		CU_ASSERT(y->seen[i] > 0); /* every recorded counter is in the truth under its name */
}

/*
 * SPMTAP_EMU_WORKLOAD unset: samples before the GPU's first dispatch (ROCr's code upload) are at the
 * default constant:1, as without kernels; from then on idle but for the kernels.  First in the suite,
 * so that the GPU has run no dispatch before it.
 */
static void test_default_background(void)
{
	struct tally y;
	wl_given = false;
	record_kernels(1, 1, &y); /* add1 */
	wl_given = true;
	CU_ASSERT(y.before > 10);
	CU_ASSERT(y.alone[0] > 100);
}

static void test_one_queue(void)
{
	struct tally y;
	record_kernels(1, 3, &y); /* add1, scale, nop in turn on queue 0 */
	CU_ASSERT_EQUAL(y.summed + y.capped, 0);
	/* A 20 ms kernel spans ~520 samples of 38.5 us: each level was seen alone. */
	for (int k = 0; k < 3; k++)
		CU_ASSERT(y.alone[k] > 100);
}

static void test_two_queues(void)
{
	struct tally y;
	/* Thread 0 on queue 0: add1, scale, nop; thread 1 on queue 1: scale, nop, add1 (hsa_dispatch.c). */
	record_kernels(2, 3, &y);
	CU_ASSERT(y.summed > 10); /* add1 + scale = 0.9, nop + add1 = 0.8 */
	CU_ASSERT(y.capped > 10); /* scale + nop = 1.1, capped at 1 */
}

static const struct testenv_case cases[] = {
	{ "default_background", test_default_background, need_hsa_example },
	{ "one_queue", test_one_queue, need_hsa_example },
	{ "two_queues", test_two_queues, need_hsa_example },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	char err[256];
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return testenv_run_suite("emu_activity", cases, argc, argv);
	testenv_under_emu(argc, argv, SPEC, NULL);
	if (emu_spec_parse(SPEC, G, 1, err, sizeof(err)) != 1)
		return 2;
	dtruth = testenv_dispatch_truth();
	snprintf(struth, sizeof(struth), "%s", testenv_path(testenv_tmpdir(), "sample_truth"));
	wl_given = true;
	return testenv_run_suite("emu_activity", cases, argc, argv);
}
