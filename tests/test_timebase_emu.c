/* SPDX-License-Identifier: MIT */
/*
 * The timebase (collector/lib/timebase.c) against the emulator's truth: a
 * real session on the emulated MI300A whose GPU clock runs 100 ppm fast from
 * a large offset (SPMTAP_EMU_CLOCK_PPM, SPMTAP_EMU_CLOCK_OFFSET).  The
 * emulator's clock model (docs/emulator.md, emu/shim/gpu_clock.c) is
 *     gpu = OFFSET + raw/10 + round(raw * PPM / 1e7),  raw = CLOCK_MONOTONIC_RAW ns
 * so the true CLOCK_MONOTONIC_RAW of a tick is (gpu - OFFSET) / (0.1 + PPM*1e-7)
 * (within 10 ns), and its true CLOCK_BOOTTIME adds BOOTTIME - MONOTONIC_RAW,
 * which this test measures itself (both clocks read back to back every 10 ms
 * on its own thread, the tightest of a few reads kept, interpolated linearly).
 * GET_CLOCK_COUNTERS is disturbed on purpose (SPMTAP_EMU_CLOCK_PAIR_DELAY_*:
 * calls 11-15, 22-26, ... read BOOTTIME 15 us after RAW, as a thread
 * preempted inside the call would; issue 14 item 11), so the collector's
 * bursts and the timebase's rejection are on the path.
 * Checked against that truth, within 1 us and within the bound the
 * timebase states for each segment (also in the SQLite meta), with the
 * error reached printed:
 *   - every clock pair the session took (~2.5 s of them), mapped through the
 *     session's timebase (session_timebase());
 *   - every SQ_WAVES sample in the SQLite output: sample.host_ns against the
 *     true BOOTTIME of sample.ticks, whose ticks must also be in the
 *     emulator's per-sample truth (SPMTAP_EMU_SAMPLE_TRUTH).
 * Ten minutes of drift are covered synthetically by tests/test_timebase.c
 * (docs/timebase.md "Tests").
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/lib/session.h"
#include "collector/lib/timebase.h"
#include "testenv.h"

#define EMU_OFFSET 0x0004000000000000ull /* 2^50 ticks: ~130 days of a 100 MHz clock */
#define EMU_PPM 100.0
/* SPMTAP_TEST_TB_RUN_MS overrides, for longer runs by hand (at most 600000), with
 * SPMTAP_TEST_TB_INTERVAL (SCLK cycles per sample) to keep the SQLite file small */
#define RUN_MS 2500
#define NOFFS 65536 /* 10-ms truth readings: 10 minutes */

static char truth_path[4096];

static int64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- BOOTTIME - MONOTONIC_RAW, measured ----------------------------------- */

struct offs {
	int64_t raw[NOFFS], d[NOFFS];
	size_t n;
	int64_t widest; /* our own readings' widest BOOTTIME window: the truth's uncertainty is half */
	pthread_mutex_t lock;
	int stop;
};

static void offs_sample(struct offs *o)
{
	int64_t best_w = INT64_MAX, best_raw = 0, best_d = 0;
	for (int k = 0; k < 5; k++) {
		int64_t b1 = now_ns(CLOCK_BOOTTIME), r = now_ns(CLOCK_MONOTONIC_RAW),
			b2 = now_ns(CLOCK_BOOTTIME);
		if (b2 - b1 < best_w) {
			best_w = b2 - b1;
			best_raw = r;
			best_d = (b1 + b2) / 2 - r;
		}
	}
	pthread_mutex_lock(&o->lock);
	if (best_w > o->widest)
		o->widest = best_w;
	if (o->n < NOFFS) {
		o->raw[o->n] = best_raw;
		o->d[o->n++] = best_d;
	}
	pthread_mutex_unlock(&o->lock);
}

static void *offs_main(void *arg)
{
	struct offs *o = arg;
	while (!__atomic_load_n(&o->stop, __ATOMIC_ACQUIRE)) {
		offs_sample(o);
		struct timespec ts = { 0, 10 * 1000000 };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* BOOTTIME - RAW at raw time r: linear between the measurements around it. */
static double offs_at(const struct offs *o, double r)
{
	if (r <= (double)o->raw[0])
		return (double)o->d[0];
	if (r >= (double)o->raw[o->n - 1])
		return (double)o->d[o->n - 1];
	size_t lo = 1, hi = o->n - 1; /* the first reading at or after r */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if ((double)o->raw[mid] < r)
			lo = mid + 1;
		else
			hi = mid;
	}
	double a = (r - (double)o->raw[lo - 1]) / (double)(o->raw[lo] - o->raw[lo - 1]);
	return (double)o->d[lo - 1] + a * (double)(o->d[lo] - o->d[lo - 1]);
}

/* The true BOOTTIME of a GPU tick under the emulator's clock model. */
static double true_boot(const struct offs *o, uint64_t gpu)
{
	double raw = (double)(int64_t)(gpu - EMU_OFFSET) / (0.1 + EMU_PPM * 1e-7);
	return raw + offs_at(o, raw);
}

/*
 * The timebase's stated bounds, kept past session_close: segment k covers
 * the ticks in [pair k, pair k+1].
 */
struct bounds {
	uint64_t *gpu;
	double *bound;
	size_t npairs, nseg;
};

static double bound_at(const struct bounds *b, uint64_t g)
{
	size_t lo = 0, hi = b->npairs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (b->gpu[mid] <= g)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t k = lo ? lo - 1 : 0;
	return b->bound[k < b->nseg ? k : b->nseg - 1];
}

/* ---- the emulator's per-sample truth: timestamps per XCC ------------------ */

struct truth_ts {
	uint64_t *ts[16];
	size_t n[16], cap[16];
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Header lines (JSON) and binary records, interleaved (docs/emulator.md). */
static bool truth_ts_load(const char *file, struct truth_ts *t)
{
	memset(t, 0, sizeof(*t));
	FILE *f = fopen(file, "rb");
	if (!f)
		return false;
	int c;
	bool ok = true;
	while ((c = fgetc(f)) != EOF) {
		if (c == '{') {
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			continue;
		}
		ungetc(c, f);
		uint32_t h[6];
		uint64_t h2[2];
		if (fread(h, sizeof(h), 1, f) != 1 || fread(h2, sizeof(h2), 1, f) != 1 ||
		    h[0] != 0x52545053u || h[3] >= 16 || fseek(f, (long)h[5] * 8, SEEK_CUR)) {
			ok = false;
			break;
		}
		uint32_t x = h[3];
		if (t->n[x] == t->cap[x]) {
			t->cap[x] = t->cap[x] ? t->cap[x] * 2 : 4096;
			t->ts[x] = realloc(t->ts[x], t->cap[x] * 8);
		}
		t->ts[x][t->n[x]++] = h2[1];
	}
	fclose(f);
	for (int x = 0; x < 16; x++)
		if (t->n[x])
			qsort(t->ts[x], t->n[x], 8, cmp_u64);
	return ok;
}

static bool truth_has(const struct truth_ts *t, uint32_t x, uint64_t ts)
{
	return x < 16 && t->n[x] && bsearch(&ts, t->ts[x], t->n[x], 8, cmp_u64);
}

/* ---- the test ------------------------------------------------------------- */

static const char *need_emulator(void)
{
	static char shim[4096];
	snprintf(shim, sizeof(shim), "%s/libspmtap-emu.so", testenv_build_dir());
	return access(shim, R_OK) ? "libspmtap-emu.so not built" : NULL;
}

struct err_stats {
	double max, sum, sum2;
	size_t n;
};

static void err_add(struct err_stats *e, double v)
{
	if (fabs(v) > e->max)
		e->max = fabs(v);
	e->sum += v;
	e->sum2 += v * v;
	e->n++;
}

static double err_rms(const struct err_stats *e) { return e->n ? sqrt(e->sum2 / (double)e->n) : 0; }
static double err_mean(const struct err_stats *e) { return e->n ? e->sum / (double)e->n : 0; }

static void test_truth(void)
{
	struct spm_device *devs = NULL;
	size_t ndev = 0;
	char err[2048] = "";
	CU_ASSERT_EQUAL_FATAL(spm_discover(NULL, &devs, &ndev, err, sizeof(err)), 0);
	CU_ASSERT_FATAL(ndev >= 1);
	static struct offs o;
	memset(&o, 0, sizeof(o));
	pthread_mutex_init(&o.lock, NULL);
	offs_sample(&o);
	pthread_t thr;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&thr, NULL, offs_main, &o), 0);

	const char *counters[] = { "SQ_WAVES" };
	const struct writer_ops *fmts[] = { &writer_sqlite };
	uint32_t gpus[] = { 0 };
	struct session_opts so = {
		.devs = devs, .ndev = ndev, .gpus = gpus, .ngpus = 1, .counters = counters,
		.ncounters = 1, .dir = testenv_tmpdir(), .name = "tb", .formats = fmts, .nformats = 1,
		.command_line = "test_timebase_emu",
	};
	/* long runs by hand: fewer samples per second (SCLK cycles per sample) */
	const char *iv = getenv("SPMTAP_TEST_TB_INTERVAL");
	if (iv && atol(iv) > 0)
		so.interval = (uint32_t)atol(iv);
	struct session *S = NULL;
	int rc = session_open(&S, &so, err, sizeof(err));
	if (rc)
		fprintf(stderr, "\n%s\n", err);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_EQUAL_FATAL(session_start(S, err, sizeof(err)), 0);
	const char *rm = getenv("SPMTAP_TEST_TB_RUN_MS");
	long run_ms = rm && atol(rm) > 0 && atol(rm) <= 600000 ? atol(rm) : RUN_MS;
	struct timespec run = { run_ms / 1000, (run_ms % 1000) * 1000000L };
	nanosleep(&run, NULL);
	rc = session_stop(S, err, sizeof(err));
	if (rc)
		fprintf(stderr, "\n%s\n", err);
	CU_ASSERT_EQUAL(rc, 0);
	__atomic_store_n(&o.stop, 1, __ATOMIC_RELEASE);
	pthread_join(thr, NULL);
	offs_sample(&o);

	/* 1. the clock pairs themselves, mapped through the fitted timebase */
	const struct timebase *tb = session_timebase(S, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(tb);
	size_t np = tb_npairs(tb);
	const struct tb_pair *pp = tb_pairs(tb);
	struct err_stats pe = { 0 };
	for (size_t i = 0; i < np; i++) {
		spmtap_host_ns h;
		CU_ASSERT_EQUAL(tb_map_gpu(tb, pp[i].gpu, &h), 0);
		err_add(&pe, (double)h - true_boot(&o, pp[i].gpu));
	}
	/* what the pairs themselves say: their BOOTTIME-RAW against ours, their RAW against the model */
	struct err_stats po = { 0 }, pr = { 0 };
	for (size_t i = 0; i < np; i++) {
		err_add(&po, (double)(pp[i].host - pp[i].raw) - offs_at(&o, (double)pp[i].raw));
		err_add(&pr, (double)(int64_t)(pp[i].gpu - EMU_OFFSET) / (0.1 + EMU_PPM * 1e-7) -
				     (double)pp[i].raw);
	}
	fprintf(stderr, "\n    pairs: BOOTTIME-RAW vs measured mean %.1f ns max %.1f ns; RAW vs the "
		"clock model mean %.1f ns max %.1f ns ", err_mean(&po), po.max, err_mean(&pr), pr.max);
	double hz = 0, ppm = 0;
	tb_rate(tb, &hz, &ppm);
	fprintf(stderr, "\n    clock pairs: %zu over %.2f s, fitted %.3f ppm (emulated %.0f), "
		"mapped vs truth: max %.1f ns, rms %.1f ns, mean %.1f ns ", np,
		np ? (double)(pp[np - 1].host - pp[0].host) / 1e9 : 0.0, ppm, EMU_PPM, pe.max, err_rms(&pe),
		err_mean(&pe));
	CU_ASSERT(np >= 20);
	CU_ASSERT(fabs(ppm - EMU_PPM) < 1.0);
	/*
	 * Within the stated bound: every pair mapped, and (below) every sample
	 * written, against the truth, which is itself uncertain by half our
	 * own widest BOOTTIME-RAW reading and the model's 10 ns rounding.
	 */
	struct bounds bd = { calloc(np + 1, 8), calloc(np + 1, sizeof(double)), np, tb_nsegments(tb) };
	CU_ASSERT_FATAL(bd.gpu && bd.bound && bd.nseg);
	for (size_t i = 0; i < np; i++)
		bd.gpu[i] = pp[i].gpu;
	for (size_t k = 0; k < bd.nseg; k++)
		bd.bound[k] = tb_segments(tb)[k].bound_ns;
	double truth_unc = (double)o.widest / 2 + 10.0, worst_ratio = 0;
	size_t out_of_bound = 0;
	for (size_t i = 0; i < np; i++) {
		spmtap_host_ns h;
		tb_map_gpu(tb, pp[i].gpu, &h);
		double e = fabs((double)h - true_boot(&o, pp[i].gpu)), bb = bound_at(&bd, pp[i].gpu);
		out_of_bound += e > bb + truth_unc;
	}
	size_t rejected = tb_nrejected(tb);
	double bound = tb_bound(tb);
	fprintf(stderr, "\n    stated bound: worst segment %.0f ns (%zu segments), %zu pair(s) rejected as "
		"disturbed; truth uncertain by %.0f ns; pairs beyond their bound: %zu ", bound, bd.nseg,
		rejected, truth_unc, out_of_bound);
	CU_ASSERT_EQUAL(out_of_bound, 0);
	/* SPMTAP_EMU_CLOCK_PAIR_DELAY_RUN=5 >= the burst of 4 disturbs whole bursts now and then */
	const char *dl = getenv("SPMTAP_EMU_CLOCK_PAIR_DELAY_NS");
	if (dl && !strcmp(dl, "15000"))
		CU_ASSERT(rejected >= 1);
	/*
	 * The emulator reads BOOTTIME a little after RAW in GET_CLOCK_COUNTERS
	 * (emu/shim/kfd_ioctl.c), and the timebase trusts that difference within
	 * the pair's read window; so the truth is taken two ways:
	 * "total" uses our own tight BOOTTIME-RAW readings, "net" the pairs'
	 * (what the timebase can know).  Net isolates the timebase's own error.
	 */
	static struct offs po2;
	memset(&po2, 0, sizeof(po2));
	for (size_t i = 0; i < np && i < NOFFS; i++) {
		po2.raw[po2.n] = pp[i].raw;
		po2.d[po2.n++] = pp[i].host - pp[i].raw;
	}
	struct err_stats pn = { 0 };
	for (size_t i = 0; i < np; i++) {
		spmtap_host_ns hh;
		tb_map_gpu(tb, pp[i].gpu, &hh);
		err_add(&pn, (double)hh - true_boot(&po2, pp[i].gpu));
	}
	fprintf(stderr, "\n    clock pairs net of the pairs' own skew: max %.1f ns, rms %.1f ns ", pn.max,
		err_rms(&pn));
	CU_ASSERT(pn.max < 1000.0);
	/* total: on top, what the pairs' own BOOTTIME-RAW skew adds (microseconds under TSan) */
	CU_ASSERT(pe.max < 1000.0 + po.max);
	session_close(S); /* releases SPM: the emulator flushes its sample truth */

	/* 2. every SPM sample written: host_ns vs the truth of its ticks */
	struct truth_ts t;
	CU_ASSERT_FATAL(truth_ts_load(truth_path, &t));
	char db[4096];
	snprintf(db, sizeof(db), "%s/tb.db", testenv_tmpdir());
	sqlite3 *h = NULL;
	CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_stmt *q = NULL;
	/* the bound the outputs carry (meta "timebase", docs/timebase.md "Error bound") is the one checked */
	CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h, "select json_extract(value, '$[0].bound_ns'), "
		"json_array_length(value, '$[0].segments_bound'), json_extract(value, '$[0].pairs_rejected') "
		"from meta where key = 'timebase'", -1, &q, NULL), SQLITE_OK);
	CU_ASSERT_EQUAL_FATAL(sqlite3_step(q), SQLITE_ROW);
	CU_ASSERT_DOUBLE_EQUAL(sqlite3_column_double(q, 0), round(bound), 0.5);
	CU_ASSERT_EQUAL(sqlite3_column_int64(q, 1), (sqlite3_int64)bd.nseg);
	CU_ASSERT_EQUAL(sqlite3_column_int64(q, 2), (sqlite3_int64)rejected);
	sqlite3_finalize(q);
	q = NULL;
	CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h, "select t.xcc, s.host_ns, s.ticks from sample s "
		"join metric m on m.id = s.metric_id join stream t on t.id = m.stream_id "
		"where t.source = 'spm' and m.name = 'SQ_WAVES'", -1, &q, NULL), SQLITE_OK);
	struct err_stats se = { 0 }, sn = { 0 };
	size_t not_in_truth = 0;
	while (sqlite3_step(q) == SQLITE_ROW) {
		uint32_t x = (uint32_t)sqlite3_column_int(q, 0);
		int64_t host = sqlite3_column_int64(q, 1);
		uint64_t ticks = (uint64_t)sqlite3_column_int64(q, 2);
		if (!truth_has(&t, x, ticks))
			not_in_truth++;
		double e = (double)host - true_boot(&o, ticks), bb = bound_at(&bd, ticks);
		err_add(&se, e);
		err_add(&sn, (double)host - true_boot(&po2, ticks));
		if (fabs(e) > bb + truth_unc) {
			out_of_bound++;
			worst_ratio = fabs(e) / bb > worst_ratio ? fabs(e) / bb : worst_ratio;
		}
	}
	sqlite3_finalize(q);
	sqlite3_close(h);
	fprintf(stderr, "\n    SPM samples: %zu (%zu not in the emulator's truth), host_ns vs truth: "
		"max %.1f ns, rms %.1f ns, mean %.1f ns ", se.n, not_in_truth, se.max, err_rms(&se),
		err_mean(&se));
	fprintf(stderr, "\n    SPM samples net of the pairs' own skew: max %.1f ns, rms %.1f ns; total "
		"%s 1 us; samples beyond their segment's bound: %zu (worst error/bound %.2f) ", sn.max,
		err_rms(&sn), se.max < 1000.0 ? "within" : "NOT within", out_of_bound, worst_ratio);
	CU_ASSERT_EQUAL(out_of_bound, 0);
	CU_ASSERT(se.n > 1000);
	CU_ASSERT_EQUAL(not_in_truth, 0);
	CU_ASSERT(sn.max < 1000.0);
	/*
	 * Within 1 us of the truth (issue 14 item 11) in the product build; a
	 * sanitized one (interceptors widen every read window) is held to its
	 * stated bound above and the net error.
	 */
	if (!TESTENV_SANITIZED)
		CU_ASSERT(se.max < 1000.0);
	free(bd.gpu);
	free(bd.bound);
	for (int x = 0; x < 16; x++)
		free(t.ts[x]);
	free(devs);
}

int main(int argc, char **argv)
{
	char offset[64], ppm[64];
	snprintf(offset, sizeof(offset), "SPMTAP_EMU_CLOCK_OFFSET=%llu", (unsigned long long)EMU_OFFSET);
	snprintf(ppm, sizeof(ppm), "SPMTAP_EMU_CLOCK_PPM=%g", EMU_PPM);
	/*
	 * Every 11th GET_CLOCK_COUNTERS call and the 4 after it read BOOTTIME
	 * 15 us late; a SPMTAP_EMU_CLOCK_PAIR_DELAY_NS of the caller's wins (0:
	 * only the machine's own disturbances, for runs by hand).
	 */
	const char *env[] = { offset, ppm, "SPMTAP_EMU_CLOCK_PAIR_DELAY_NS=15000",
			      "SPMTAP_EMU_CLOCK_PAIR_DELAY_EVERY=11", "SPMTAP_EMU_CLOCK_PAIR_DELAY_RUN=5", NULL };
	if (getenv("SPMTAP_EMU_CLOCK_PAIR_DELAY_NS"))
		env[2] = NULL;
	testenv_under_emu(argc, argv, "mi300a", env);
	snprintf(truth_path, sizeof(truth_path), "%s/sample_truth.bin", testenv_tmpdir());
	/* The shim reads SPMTAP_EMU_SAMPLE_TRUTH when it is used, so setting it here is enough. */
	setenv("SPMTAP_EMU_SAMPLE_TRUTH", truth_path, 1);
	static const struct testenv_case cases[] = {
		{ "truth", test_truth, need_emulator },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("timebase_emu", cases, argc, argv);
}
