/* SPDX-License-Identifier: MIT */
/*
 * HPE Cray EX node power (collector/lib/smi_cray_pm.c, session_cray.c,
 * collector/analysis/pm_crosscheck.c) against the emulated node's
 * /sys/cray/pm_counters and its truth file (SPMTAP_EMU_CRAY_TRUTH, one
 * JSON line per snapshot; docs/emulator.md "Cray PM counters"):
 *
 *  - no_mixed_snapshot: snapshots every 5 ms (the knob), read back to back
 *    by cray_pm_read 1500 times (each pass a few hundred us); every snapshot returned carries one
 *    timestamp in every file and equals the truth's snapshot of its
 *    freshness in every value.  The race must have happened (torn passes
 *    counted > 0), and the same loop without the freshness check must have
 *    returned snapshots that mix two (checked against the truth too), or
 *    the test proves nothing;
 *  - parse: the line format and the accel map syntax;
 *  - crosscheck: `spmtap --emulate mi300x record --smi energy --cray
 *    --cray-accel-map accel0=gpu0 --phases emulator` on a square wave with
 *    1.5 s phases, then `report --json`: the recovered gain and offset equal
 *    the emulator's (from the truth file) within the bound derived below;
 *  - report_map: report's --cray-accel-map replaces the recorded map; an
 *    accel or GPU the recording lacks is refused (exit 1), bad syntax 64;
 *  - characterize: on the same recording, the PM energy signals' update
 *    interval is the emulator's snapshot interval (from the truth's
 *    t_raw_ns) to 1 us; the PM power files (the mean over the last
 *    interval) move only with the load: never faster, on the same grid.
 *
 * The bound (crosscheck): a PM energy file holds floor(E) in whole J, so
 * the energy between two interpolated window ends is off by less than 1 J
 * at each end: the mean over a window of n PM readings (n - 1 intervals of
 * I at least) is off by at most 2 J / ((n - 1) I); the on-chip counter's
 * 2^-16 J ticks add 2 x 15.3 uJ, kept in.  The fit weighs each phase by its
 * window's length T_i, so a level's mean PM power is off by at most
 * sum(T_i x 2 J / T_i) / sum(T_i) <= 2 J x N / sum((n_i - 1) I) over its N
 * phases: d_lo and d_hi, from the reading counts, not from wall time.  With
 * load and idle phases at two on-chip levels x_lo < x_hi the slope is the
 * difference of the two levels' means over x_hi - x_lo, so |gain error| <=
 * (d_lo + d_hi) / (x_hi - x_lo); the offset is the idle level's mean minus
 * gain x x_lo, so |offset error| <= d_lo + x_lo |gain error|.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/lib/smi_cray_pm.h"
#include "proc.h"
#include "testenv.h"

#define SPEC "mi300x,mi210"
#define MAXK 200000

/* ---- the truth file ------------------------------------------------------ */

struct truth {
	int64_t t_raw_ns, ts_us, power, energy, cpu_power, cpu_energy, mem_power, mem_energy, accel_power,
		accel_energy;
	int64_t an_power[4], an_energy[4];
	double gain[4], offset_w[4];
	unsigned naccel;
	bool have;
};

/* Lines "{"k":...}" into t[k] (the first line of each k: every process writes the same). */
static size_t load_truth(const char *path, struct truth *t, size_t maxk)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char *line = NULL;
	size_t cap = 0, n = 0;
	while (getline(&line, &cap, f) > 0) {
		json_error_t e;
		json_t *j = json_loads(line, 0, &e);
		json_int_t k = json_integer_value(json_object_get(j, "k"));
		if (j && k >= 0 && (size_t)k < maxk && !t[k].have) {
			struct truth *x = &t[k];
#define TI(field, key) x->field = json_integer_value(json_object_get(j, key))
			TI(t_raw_ns, "t_raw_ns"); TI(ts_us, "timestamp_us"); TI(power, "power"); TI(energy, "energy");
			TI(cpu_power, "cpu_power"); TI(cpu_energy, "cpu_energy"); TI(mem_power, "memory_power");
			TI(mem_energy, "memory_energy"); TI(accel_power, "accel_power"); TI(accel_energy, "accel_energy");
#undef TI
			size_t i;
			json_t *a;
			json_array_foreach(json_object_get(j, "accel"), i, a) {
				if (i >= 4)
					break;
				x->an_power[i] = json_integer_value(json_object_get(a, "power"));
				x->an_energy[i] = json_integer_value(json_object_get(a, "energy"));
				x->gain[i] = json_number_value(json_object_get(a, "gain"));
				x->offset_w[i] = json_number_value(json_object_get(a, "offset_w"));
				x->naccel = (unsigned)i + 1;
			}
			x->have = true;
			n++;
		}
		json_decref(j);
	}
	free(line);
	fclose(f);
	return n;
}

/* The truth's value of series `name` ("power", "accel1_energy", ...) in snapshot t; false if unknown. */
static bool truth_value(const struct truth *t, const char *name, int64_t *v)
{
	static const struct {
		const char *n;
		size_t off;
	} f[] = {
		{ "power", offsetof(struct truth, power) },           { "energy", offsetof(struct truth, energy) },
		{ "cpu_power", offsetof(struct truth, cpu_power) },   { "cpu_energy", offsetof(struct truth, cpu_energy) },
		{ "memory_power", offsetof(struct truth, mem_power) }, { "memory_energy", offsetof(struct truth, mem_energy) },
		{ "accel_power", offsetof(struct truth, accel_power) }, { "accel_energy", offsetof(struct truth, accel_energy) },
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (!strcmp(name, f[i].n)) {
			*v = *(const int64_t *)((const char *)t + f[i].off);
			return true;
		}
	unsigned a;
	char kind[16];
	if (sscanf(name, "accel%u_%15s", &a, kind) == 2 && a < t->naccel) {
		*v = !strcmp(kind, "power") ? t->an_power[a] : t->an_energy[a];
		return true;
	}
	return false;
}

/* ---- no_mixed_snapshot ---------------------------------------------------- */

/* How many values of snap s differ from the truth of its freshness (the timestamps included). */
static unsigned mismatches(const struct cray_pm *pm, const struct cray_pm_snap *s, const struct truth *t)
{
	unsigned bad = 0;
	for (unsigned i = 0; i < cray_pm_nseries(pm); i++) {
		int64_t v;
		if (!s->val[i].present || !truth_value(t, cray_pm_series_name(pm, i), &v)) {
			bad++;
			continue;
		}
		bad += s->val[i].v != v || (int64_t)s->val[i].ts_us != t->ts_us;
	}
	return bad;
}

/* One pass without the freshness bracket: every file once, stamped with freshness read first. */
static void unguarded_read(struct cray_pm *pm, struct cray_pm_snap *s)
{
	/* cray_pm_read with the bracket disabled is not an API: read the files as a naive reader would. */
	static int fds[CRAY_PM_MAX_SERIES + 1];
	static bool open_done;
	if (!open_done) {
		char p[256];
		fds[0] = open("/sys/cray/pm_counters/freshness", O_RDONLY | O_CLOEXEC);
		for (unsigned i = 0; i < cray_pm_nseries(pm); i++) {
			snprintf(p, sizeof(p), "/sys/cray/pm_counters/%s", cray_pm_series_name(pm, i));
			fds[i + 1] = open(p, O_RDONLY | O_CLOEXEC);
		}
		open_done = true;
	}
	memset(s, 0, sizeof(*s));
	char b[96];
	ssize_t n = pread(fds[0], b, sizeof(b) - 1, 0);
	b[n > 0 ? n : 0] = 0;
	s->freshness = strtoull(b, NULL, 10);
	for (unsigned i = 0; i < cray_pm_nseries(pm); i++) {
		n = pread(fds[i + 1], b, sizeof(b) - 1, 0);
		b[n > 0 ? n : 0] = 0;
		b[strcspn(b, "\n")] = 0;
		char unit;
		bool has_ts;
		s->val[i].present = n > 0 && !cray_pm_parse_line(b, &s->val[i].v, &unit, &s->val[i].ts_us, &has_ts);
	}
}

static void no_mixed_snapshot(void)
{
	const char *truth = testenv_path(testenv_tmpdir(), "cray_truth_race.jsonl");
	unlink(truth);
	setenv("SPMTAP_EMU_CRAY_TRUTH", truth, 1);
	setenv("SPMTAP_EMU_CRAY_INTERVAL_US", "5000", 1);
	struct cray_pm *pm;
	char why[256];
	CU_ASSERT_FATAL(cray_pm_open(NULL, &pm, why, sizeof(why)) == 0);
	CU_ASSERT_EQUAL(cray_pm_naccel(pm), 2); /* one per card: the mi300x and the mi210 */
	CU_ASSERT_EQUAL(cray_pm_raw_scan_hz(pm), 200);
	enum { N = 1500 };
	struct cray_pm_snap *g = calloc(N, sizeof(*g)), *u = calloc(N, sizeof(*u));
	CU_ASSERT_FATAL(g && u);
	uint64_t torn = 0, failed = 0;
	/*
	 * One pass per 487 us at most, so the 1500 span at least 0.73 s (146
	 * snapshots at 5 ms): on a fast host they once took 0.4 s, and the race
	 * met under 100 snapshots.  Not 500 us: a grid that divides the 5 ms
	 * period locks the passes to one phase of it, and the race went unmet.
	 */
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < N; i++) {
		uint64_t at = (uint64_t)t0.tv_nsec + (uint64_t)i * 487000u;
		struct timespec due = { t0.tv_sec + (time_t)(at / 1000000000u), (long)(at % 1000000000u) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL) == EINTR)
			;
		if (cray_pm_read(pm, &g[i], &torn))
			failed++, g[i].freshness = UINT64_MAX;
		unguarded_read(pm, &u[i]);
	}
	unsetenv("SPMTAP_EMU_CRAY_INTERVAL_US");
	unsetenv("SPMTAP_EMU_CRAY_TRUTH");
	struct truth *t = calloc(MAXK, sizeof(*t));
	CU_ASSERT_FATAL(t != NULL);
	size_t nt = load_truth(truth, t, MAXK);
	uint64_t checked = 0, wrong = 0, ts_split = 0, unguarded_mixed = 0;
	for (int i = 0; i < N; i++) {
		if (g[i].freshness < MAXK && t[g[i].freshness].have) {
			checked++;
			wrong += mismatches(pm, &g[i], &t[g[i].freshness]) != 0;
			for (unsigned k = 0; k < cray_pm_nseries(pm); k++)
				ts_split += g[i].val[k].present && g[i].val[k].ts_us != g[i].ts_us;
		}
		/* A naive read mixes when its files match no single snapshot: not the one its freshness names. */
		if (u[i].freshness < MAXK && t[u[i].freshness].have)
			unguarded_mixed += mismatches(pm, &u[i], &t[u[i].freshness]) != 0;
	}
	printf("\n    %d guarded reads: %" PRIu64 " checked against %zu truth snapshots, %" PRIu64
	       " wrong, %" PRIu64 " torn passes retried, %" PRIu64 " given up; unguarded: %" PRIu64 " mixed\n",
	       N, checked, nt, wrong, torn, failed, unguarded_mixed);
	CU_ASSERT(nt > 100);
	CU_ASSERT(checked >= (uint64_t)N - failed);
	CU_ASSERT(checked > N / 2);
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT_EQUAL(ts_split, 0);
	/* The race happened: the check had something to catch, and a reader without it is caught out. */
	CU_ASSERT(torn > 0);
	CU_ASSERT(unguarded_mixed > 0);
	free(t);
	free(g);
	free(u);
	cray_pm_close(pm);
}

/* ---- parse ------------------------------------------------------------------ */

static void parse(void)
{
	int64_t v;
	char unit;
	uint64_t ts;
	bool has;
	CU_ASSERT(cray_pm_parse_line("71 W 1700061089722572 us", &v, &unit, &ts, &has) == 0);
	CU_ASSERT(v == 71 && unit == 'W' && ts == 1700061089722572ull && has);
	CU_ASSERT(cray_pm_parse_line("123456 J", &v, &unit, &ts, &has) == 0);
	CU_ASSERT(v == 123456 && unit == 'J' && !has);
	CU_ASSERT(cray_pm_parse_line("71 kW 1 us", &v, &unit, &ts, &has) == -EINVAL);
	CU_ASSERT(cray_pm_parse_line("71 W 1 ms", &v, &unit, &ts, &has) == -EINVAL);
	CU_ASSERT(cray_pm_parse_line("W 1 us", &v, &unit, &ts, &has) == -EINVAL);
	int32_t m[CRAY_PM_MAX_ACCEL];
	char err[200];
	CU_ASSERT(cray_pm_parse_map("accel0=gpu1,accel2=3", m, err, sizeof(err)) == 0);
	CU_ASSERT(m[0] == 1 && m[1] == -1 && m[2] == 3);
	CU_ASSERT(cray_pm_parse_map(NULL, m, err, sizeof(err)) == 0 && m[0] == -1);
	CU_ASSERT(cray_pm_parse_map("accel0=gpu1,accel1=gpu1", m, err, sizeof(err)) == -EINVAL);
	CU_ASSERT(cray_pm_parse_map("accel0=gpu1,accel0=gpu2", m, err, sizeof(err)) == -EINVAL);
	CU_ASSERT(cray_pm_parse_map("gpu0=accel1", m, err, sizeof(err)) == -EINVAL);
}

/* ---- one recording for crosscheck and characterize --------------------------- */

#define GAIN "1.07"
#define OFFSET "23"

static char rec_dir[512], rec_truth[512];
static int rec_status = -1;

static int record_once(void)
{
	if (rec_status >= 0)
		return rec_status;
	snprintf(rec_dir, sizeof(rec_dir), "%s", testenv_path(testenv_tmpdir(), "cray_rec"));
	snprintf(rec_truth, sizeof(rec_truth), "%s", testenv_path(testenv_tmpdir(), "cray_truth_rec.jsonl"));
	char truthenv[600];
	snprintf(truthenv, sizeof(truthenv), "SPMTAP_EMU_CRAY_TRUTH=%s", rec_truth);
	const char *env[] = { "SPMTAP_EMU_WORKLOAD=square:period_ms=3000,duty=0.5",
			      "SPMTAP_EMU_CRAY_ACCEL_GAIN=" GAIN, "SPMTAP_EMU_CRAY_ACCEL_OFFSET_W=" OFFSET, truthenv,
			      NULL };
	const char *pre[] = { "--emulate", "mi300x", NULL };
	const char *args[] = { "record", "--smi", "energy", "--cray", "--cray-accel-map", "accel0=gpu0",
			       "--phases", "emulator", "-d", rec_dir, "-o", "r", "--duration", "7.6", NULL };
	struct tp_opts o = { .env = env };
	rec_status = tp_wait(tp_spawn_spmtap(pre, args, testenv_path(testenv_tmpdir(), "cray_state"), &o));
	return rec_status;
}

static json_t *analyze_json(const char *cmd)
{
	char bin[600], out[600], *p = out;
	snprintf(bin, sizeof(bin), "%s/spmtap", testenv_build_dir());
	snprintf(out, sizeof(out), "%s", testenv_path(testenv_tmpdir(), cmd));
	const char *argv[] = { bin, cmd, rec_dir, "--json", p, NULL };
	static const char *const unset[] = { "LD_PRELOAD", "SPMTAP_EMU_ACTIVE", NULL };
	struct tp_opts o = { .unset = unset };
	int st = tp_run(argv, &o);
	CU_ASSERT_EQUAL(st, 0);
	json_error_t e;
	return json_load_file(out, 0, &e);
}

static void crosscheck(void)
{
	CU_ASSERT_FATAL(record_once() == 0);
	struct truth *t = calloc(MAXK, sizeof(*t));
	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_FATAL(load_truth(rec_truth, t, MAXK) > 10);
	double gain = NAN, offset = NAN, iv_s = NAN;
	for (size_t k = 1; k < MAXK; k++)
		if (t[k].have && t[k - 1].have) {
			gain = t[k].gain[0], offset = t[k].offset_w[0];
			iv_s = (double)(t[k].t_raw_ns - t[k - 1].t_raw_ns) * 1e-9;
			break;
		}
	CU_ASSERT_FATAL(isfinite(gain) && isfinite(iv_s));
	CU_ASSERT_DOUBLE_EQUAL(gain, atof(GAIN), 1e-12); /* the knob reached the emulator */
	json_t *j = analyze_json("report");
	CU_ASSERT_FATAL(j != NULL);
	json_t *a = json_array_get(json_object_get(json_object_get(j, "cray_pm_crosscheck"), "accels"), 0);
	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(a, "gpu")), 0);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(a, "pm_signal")), "pm.accel0_energy");
	double g = json_number_value(json_object_get(a, "gain")), o = json_number_value(json_object_get(a, "offset_w"));
	size_t nph = (size_t)json_integer_value(json_object_get(a, "phases_used"));
	/* The bound of the header, from each phase's PM reading count, per level. */
	double xlo = INFINITY, xhi = -INFINITY;
	size_t i;
	json_t *p;
	json_t *phs = json_object_get(a, "phases");
	json_array_foreach(phs, i, p) {
		double x = json_number_value(json_object_get(p, "onchip_mean_w"));
		xlo = fmin(xlo, x), xhi = fmax(xhi, x);
	}
	double dsum[2] = { 0, 0 }, nlev[2] = { 0, 0 };
	json_array_foreach(phs, i, p) {
		json_int_t n = json_integer_value(json_object_get(p, "pm_readings"));
		CU_ASSERT(n >= 2);
		double x = json_number_value(json_object_get(p, "onchip_mean_w"));
		int lev = x - xlo > xhi - x; /* 0: idle, 1: load */
		CU_ASSERT(fmin(x - xlo, xhi - x) < 0.01); /* two levels, as the bound assumes */
		dsum[lev] += (double)(n - 1) * iv_s; /* the window lasts at least this */
		nlev[lev]++;
	}
	CU_ASSERT_FATAL(nlev[0] > 0 && nlev[1] > 0);
	/* weighted by window length, a level's mean is off by at most (2 J x its phases) / (its total time) */
	double dlo = (2.0 + 2 * 15.3e-6) * nlev[0] / dsum[0], dhi = (2.0 + 2 * 15.3e-6) * nlev[1] / dsum[1];
	double tol_g = (dlo + dhi) / (xhi - xlo), tol_o = dlo + xlo * tol_g;
	printf("\n    %zu phases, on-chip %.1f..%.1f W: gain %.5f (truth %.5f, bound %.5f), offset %.3f W (truth %.3f, "
	       "bound %.3f W)\n", nph, xlo, xhi, g, gain, tol_g, o, offset, tol_o);
	CU_ASSERT(nph >= 2); /* both levels: asserted below */
	CU_ASSERT(xhi - xlo > 100);
	CU_ASSERT(fabs(g - gain) <= tol_g);
	CU_ASSERT(fabs(o - offset) <= tol_o);
	/* The metadata says the map came from the user and that it is not documented. */
	json_decref(j);
	free(t);
}

static void characterize(void)
{
	CU_ASSERT_FATAL(record_once() == 0);
	struct truth *t = calloc(MAXK, sizeof(*t));
	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_FATAL(load_truth(rec_truth, t, MAXK) > 10);
	double iv_ms = NAN;
	for (size_t k = 1; k < MAXK && !isfinite(iv_ms); k++)
		if (t[k].have && t[k - 1].have)
			iv_ms = (double)(t[k].t_raw_ns - t[k - 1].t_raw_ns) * 1e-6;
	free(t);
	CU_ASSERT_DOUBLE_EQUAL(iv_ms, 100.0, 1e-9);
	json_t *j = analyze_json("characterize");
	CU_ASSERT_FATAL(j != NULL);
	json_t *sig = json_object_get(j, "signals");
	static const char *const names[] = { "pm.accel0_energy", "pm.energy", "pm.accel0_power", "pm.power" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		json_t *s = json_object_get(sig, names[i]);
		double u = json_number_value(json_object_get(s, "update_interval_ms"));
		printf("\n    %s: update %.6f ms (truth %.6f), delay %s", names[i], u, iv_ms,
		       json_dumps(json_object_get(s, "delay_ms"), JSON_ENCODE_ANY));
		/*
		 * Timestamps are whole us of the snapshot instant: spacings exact to
		 * 1 us.  An energy file moves every snapshot, so its update interval
		 * (the spec's median spacing of value changes) is the snapshot
		 * interval; a power file is the mean over the last interval and
		 * moves only when the load does: never faster than the snapshots,
		 * and on their grid.
		 */
		CU_ASSERT_FATAL(s != NULL);
		if (strstr(names[i], "energy")) {
			CU_ASSERT(fabs(u - iv_ms) <= 1e-3);
		} else {
			CU_ASSERT(u >= iv_ms - 1e-3 && fabs(u / iv_ms * 2 - round(u / iv_ms * 2)) < 1e-4);
		}
	}
	/* the on-chip energy still updates every 1 ms: the PM's 100 ms did not leak into it */
	CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(json_object_get(sig, "energy"), "update_interval_ms")),
			       1.0, 1e-3);
	json_decref(j);
}

/* report --cray-accel-map: replaces the recorded map; one the recording cannot have is refused. */
static void report_map(void)
{
	CU_ASSERT_FATAL(record_once() == 0);
	char bin[600];
	snprintf(bin, sizeof(bin), "%s/spmtap", testenv_build_dir());
	static const char *const unset[] = { "LD_PRELOAD", "SPMTAP_EMU_ACTIVE", NULL };
	struct tp_opts o = { .unset = unset, .out = "/dev/null", .err = "/dev/null" };
	const char *bad_accel[] = { bin, "report", rec_dir, "--cray-accel-map", "accel1=gpu0", NULL };
	const char *bad_gpu[] = { bin, "report", rec_dir, "--cray-accel-map", "accel0=gpu3", NULL };
	const char *bad_syntax[] = { bin, "report", rec_dir, "--cray-accel-map", "accel0", NULL };
	CU_ASSERT_EQUAL(tp_run(bad_accel, &o), 1);  /* mi300x: one accel */
	CU_ASSERT_EQUAL(tp_run(bad_gpu, &o), 1);    /* no GPU 3 recorded */
	CU_ASSERT_EQUAL(tp_run(bad_syntax, &o), 64);
	const char *out = testenv_path(testenv_tmpdir(), "report_map.json");
	const char *good[] = { bin, "report", rec_dir, "--cray-accel-map", "accel0=gpu0", "--json", out, NULL };
	struct tp_opts o2 = { .unset = unset };
	CU_ASSERT_EQUAL_FATAL(tp_run(good, &o2), 0);
	json_error_t e;
	json_t *j = json_load_file(out, 0, &e);
	json_t *a = json_array_get(json_object_get(json_object_get(j, "cray_pm_crosscheck"), "accels"), 0);
	CU_ASSERT(json_is_real(json_object_get(a, "gain")));
	json_decref(j);
}

static const struct testenv_case cases[] = {
	{ "parse", parse, NULL },
	{ "no_mixed_snapshot", no_mixed_snapshot, testenv_need_emu_shim },
	{ "crosscheck", crosscheck, testenv_need_emu_shim },
	{ "characterize", characterize, testenv_need_emu_shim },
	{ "report_map", report_map, testenv_need_emu_shim },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return testenv_run_suite("smi_cray", cases, argc, argv);
	static const char *const extra[] = { "SPMTAP_EMU_WORKLOAD=constant:1", NULL };
	testenv_under_emu(argc, argv, SPEC, extra);
	return testenv_run_suite("smi_cray", cases, argc, argv);
}
