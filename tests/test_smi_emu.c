/* SPDX-License-Identifier: MIT */
/*
 * spmtap's power side against the emulated sensors (docs/power.md "Tests"):
 *
 *  - dedt_square: power_dedt from the sampler's series on a square-wave
 *    workload equals the emulator's true power (emu_sensor_truth) within
 *    2 % in steady state (intervals away from an edge by more than the
 *    update interval); the measured worst error is printed;
 *  - same_series: on the MI210 the direct gpu_metrics reader, both AMD SMI
 *    double variants (6.x, 7.x) and the real Debian librocm_smi64 5.2.3 read
 *    back to back inside one firmware update window give the same energy
 *    ticks, the same firmware time (rocm_smi's is x10), power_avg, temps and
 *    activity; amd_smi's timestamp is the driver's BOOTTIME at the read,
 *    which must lie inside its own read (see "same" below);
 *  - duplicates (reads faster than the update: skipped), glitches (backstep,
 *    stuck, reset: flagged, never negative or absurd power; and, without
 *    timing luck, a stuck counter whose last update before the stall the
 *    reader missed: the catch-up is flagged, not 303 W), the MI250X
 *    second GCD (no energy, no power_dedt, reason shown), MI300 (rocm_smi
 *    skipped with the reason, the process survives);
 *  - papi: Debian PAPI 7.0.0's rocm_smi component as an independent reader of
 *    power_average, compared with spmtap's power_avg.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "collector/lib/power_dedt.h"
#include "collector/lib/smi_sampler.h"
#include "collector/lib/smi_source.h"
#include "emu/common/sensors.h"
#include "testenv.h"

/* card0 MI210 (03:00.0), card1/2 MI250X GCDs (13:00.0, 23:00.0), card3 MI300A (33:00.0) */
#define SPEC "mi210,mi250x,mi300a"
#define ROCM_LIB "/usr/lib/librocm_smi64.so.1"

static const struct smi_dev devs[] = {
	{ .index = 0, .domain = 0, .location_id = 0x0300, .name = "MI210" },
	{ .index = 1, .domain = 0, .location_id = 0x1300, .name = "MI250X" },
	{ .index = 2, .domain = 0, .location_id = 0x2300, .name = "MI250X" },
	{ .index = 3, .domain = 0, .location_id = 0x3300, .name = "MI300A" },
};

static char dbl_v6[600], dbl_v7[600];

static const char *need_doubles(void)
{
	const char *b = testenv_build_dir();
	snprintf(dbl_v6, sizeof(dbl_v6), "%s/doubles/libamd_smi_v6.so", b);
	snprintf(dbl_v7, sizeof(dbl_v7), "%s/doubles/libamd_smi_v7.so", b);
	if (access(dbl_v6, R_OK) || access(dbl_v7, R_OK))
		return "no $B/doubles/libamd_smi_v{6,7}.so (make tests-build)";
	return access(ROCM_LIB, R_OK) ? "no " ROCM_LIB : NULL;
}

static const char *need_rocm(void)
{
	return access(ROCM_LIB, R_OK) ? "no " ROCM_LIB : NULL;
}

static const char *need_papi(void)
{
	if (need_rocm())
		return need_rocm();
	return access("/usr/bin/papi_command_line", X_OK) ? "papi_command_line absent (apt-get install papi-tools)"
							      : NULL;
}

static uint64_t raw_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t epoch_ns(void)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/kfd", testenv_tmpdir());
	return emu_sensor_epoch_ns(p);
}

/* Knobs back to the defaults between cases. */
static void knobs_reset(void)
{
	unsetenv("SPMTAP_EMU_SENSOR_UPDATE_US");
	unsetenv("SPMTAP_EMU_SENSOR_GLITCH");
	unsetenv("SPMTAP_EMU_SENSOR_CACHE_US");
	setenv("SPMTAP_EMU_WORKLOAD", "constant:1", 1);
}

static void env_default(struct smi_env *e)
{
	memset(e, 0, sizeof(*e));
	e->amdsmi_lib = "/nonexistent/libamd_smi.so";
	e->rocm_lib = "/nonexistent/librocm_smi64.so.1";
}

/* ---- series collected from a sampler ---------------------------------- */

#define MAXROWS 20000

struct rows {
	uint32_t n, ncols;
	/* copied: the sampler's column table is freed with the sampler */
	char names[SMI_M_COUNT + 1][32];
	int64_t host[MAXROWS];
	uint64_t ticks[MAXROWS];
	double v[SMI_M_COUNT + 1][MAXROWS];
	uint8_t miss[SMI_M_COUNT + 1][MAXROWS];
};

static struct rows R;

static void on_chunk(const struct series_chunk *c, void *arg)
{
	struct rows *r = arg;
	r->ncols = c->stream->ncols < SMI_M_COUNT + 1 ? c->stream->ncols : SMI_M_COUNT + 1;
	for (uint32_t k = 0; k < r->ncols; k++)
		snprintf(r->names[k], sizeof(r->names[k]), "%s", c->stream->cols[k].name);
	for (uint32_t i = 0; i < c->n && r->n < MAXROWS; i++, r->n++) {
		r->host[r->n] = c->host_ns[i];
		r->ticks[r->n] = c->ticks ? c->ticks[i] : 0;
		for (uint32_t k = 0; k < c->stream->ncols && k <= SMI_M_COUNT; k++) {
			r->v[k][r->n] = series_f64(c, k, i);
			r->miss[k][r->n] = series_missing(c, k, i);
		}
	}
}

static int col(const struct rows *r, const char *name)
{
	for (uint32_t k = 0; k < r->ncols; k++)
		if (!strcmp(r->names[k], name))
			return (int)k;
	return -1;
}

/* Probe dev with gpu_metrics first and sample it for n reads at interval_us. */
static int sample_dev(const struct smi_dev *d, uint32_t interval_us, uint64_t n, struct smi_sampler_stats *st,
		      struct smi_probe *pout)
{
	struct smi_env env;
	env_default(&env);
	struct smi_probe p;
	if (smi_probe_device(d, &env, &p))
		return -1;
	memset(&R, 0, sizeof(R));
	struct smi_sampler_opts o = {
		.ops = p.ops, .src = p.inst, .metrics = p.metrics,
		.ts_domain = p.src[p.selected].ts_domain, .interval_ns = interval_us * 1000ull,
		.max_samples = n, .on_chunk = on_chunk, .arg = &R, .gpu = d->index, .device_name = d->name,
	};
	struct smi_sampler *s;
	int rc = smi_sampler_create(&s, &o);
	if (!rc)
		rc = smi_sampler_start(s);
	if (!rc)
		rc = smi_sampler_wait(s);
	if (!rc) {
		smi_sampler_stop(s);
		smi_sampler_get_stats(s, st);
		smi_sampler_free(s);
	}
	if (pout)
		*pout = p;
	smi_probe_release(&p);
	return rc;
}

/* ---- derived power on a square wave ------------------------------------ */

static void test_dedt_square(void)
{
	knobs_reset();
	setenv("SPMTAP_EMU_WORKLOAD", "square:period_ms=200,duty=0.5", 1);
	struct smi_sampler_stats st;
	CU_ASSERT_EQUAL_FATAL(sample_dev(&devs[0], 1000, 2000, &st, NULL), 0);
	struct emu_sensor_model m;
	struct emu_workload w;
	CU_ASSERT_EQUAL_FATAL(emu_sensor_model_init(SPEC, 0, epoch_ns(), &m, NULL, 0), 0);
	emu_workload_parse(getenv("SPMTAP_EMU_WORKLOAD"), &w, NULL, 0);
	int cd = col(&R, "power_dedt");
	CU_ASSERT_FATAL(cd >= 0);
	uint64_t upd = m.update_ns, prev_t = 0;
	uint32_t steady = 0, edge = 0, lo = 0, hi = 0;
	double worst = 0, worst_exact = 0;
	for (uint32_t i = 0; i < R.n; i++) {
		uint64_t t1 = R.ticks[i] * 10; /* smu_10ns -> MONOTONIC_RAW ns (the model's firmware clock) */
		if (R.miss[cd][i]) {
			if (i == 0 || R.ticks[i] != R.ticks[i - 1])
				prev_t = t1; /* a baseline row also starts an interval */
			continue;
		}
		uint64_t t0 = prev_t;
		prev_t = t1;
		if (!t0 || t1 <= t0)
			continue;
		double P = R.v[cd][i];
		struct emu_sensor_truth a, b;
		emu_sensor_truth(&m, &w, t0, &a);
		emu_sensor_truth(&m, &w, t1, &b);
		/* exact boxcar mean over (t0, t1]: what dE/dt promises, any time */
		double mean = (b.sensor_energy_j - a.sensor_energy_j) / ((double)(t1 - t0) * 1e-9);
		double ex = fabs(P - mean) / mean;
		if (ex > worst_exact)
			worst_exact = ex;
		/* steady: the true power is the same from one update before t0 to one after t1 */
		bool flat = true;
		for (uint64_t t = t0 > upd ? t0 - upd : 0; t <= t1 + upd; t += upd / 4) {
			struct emu_sensor_truth x;
			emu_sensor_truth(&m, &w, t, &x);
			if (x.sensor_power_w != b.sensor_power_w)
				flat = false;
		}
		if (!flat) {
			edge++;
			continue;
		}
		steady++;
		double e = fabs(P - b.sensor_power_w) / b.sensor_power_w;
		if (e > worst)
			worst = e;
		if (b.sensor_power_w < 100)
			lo++;
		else
			hi++;
		if (e > 0.02)
			fprintf(stderr, "  row %u: dedt %.3f W, true %.3f W over (%" PRIu64 ", %" PRIu64 "]\n", i, P,
				b.sensor_power_w, t0, t1);
	}
	printf("\n    dedt_square: %u rows, %u steady intervals (%u at 40 W, %u at 300 W), %u across an edge; "
	       "worst steady error %.4f %%, worst vs exact boxcar mean %.4f %%, missed deadlines %" PRIu64 " ",
	       R.n, steady, lo, hi, edge, worst * 100, worst_exact * 100, st.missed_deadlines);
	CU_ASSERT(steady > 1000);
	CU_ASSERT(lo > 300 && hi > 300);
	CU_ASSERT(worst < 0.02);
	CU_ASSERT(worst_exact < 0.02);
	CU_ASSERT_EQUAL(st.dedt.n.reset, 0);
	CU_ASSERT_EQUAL(st.dedt.n.implausible, 0);
}

/* ---- four readers, one series --------------------------------------- */

struct src {
	const char *what;
	const struct smi_source_ops *ops;
	struct smi_source *s;
};

static void test_same_series(void)
{
	knobs_reset();
	/* a 20 ms update: five back-to-back reads fit in one window; the square wave makes values move */
	setenv("SPMTAP_EMU_SENSOR_UPDATE_US", "20000", 1);
	setenv("SPMTAP_EMU_WORKLOAD", "square:period_ms=300,duty=0.5", 1);
	struct smi_env e6, e7, er, eg;
	env_default(&eg);
	env_default(&e6);
	e6.amdsmi_lib = dbl_v6;
	env_default(&e7);
	e7.amdsmi_lib = dbl_v7;
	env_default(&er);
	er.rocm_lib = ROCM_LIB;
	struct src S[4] = {
		{ "gpu_metrics", &smi_gpu_metrics_ops, NULL },
		{ "amd_smi v6", &smi_amdsmi_ops, NULL },
		{ "amd_smi v7", &smi_amdsmi_ops, NULL },
		{ "rocm_smi", &smi_rocm_ops, NULL },
	};
	const struct smi_env *envs[4] = { &eg, &e6, &e7, &er };
	for (int k = 0; k < 4; k++) {
		char why[200] = "";
		int rc = S[k].ops->open(&devs[0], envs[k], &S[k].s, why, sizeof(why));
		if (rc)
			fprintf(stderr, "  %s: %s\n", S[k].what, why);
		CU_ASSERT_EQUAL_FATAL(rc, 0);
	}
	static const enum smi_metric cmp[] = { SMI_M_ENERGY, SMI_M_POWER_AVG, SMI_M_TEMP_EDGE, SMI_M_TEMP_HOTSPOT,
					       SMI_M_TEMP_MEM, SMI_M_GFX_ACTIVITY };
	uint32_t windows = 0, straddled = 0, distinct = 0, mism = 0;
	uint64_t last_e = 0;
	double pmin = 1e9, pmax = 0;
	for (int it = 0; it < 150; it++) {
		struct smi_batch b[4], after;
		for (int k = 0; k < 4; k++)
			CU_ASSERT_EQUAL(S[k].ops->read_all(S[k].s, &b[k]), 0);
		CU_ASSERT_EQUAL(S[0].ops->read_all(S[0].s, &after), 0);
		if (after.fw_ts_10ns != b[0].fw_ts_10ns) {
			straddled++; /* an update fell between the reads: not one window */
		} else {
			windows++;
			if (b[0].energy_ticks != last_e)
				distinct++;
			last_e = b[0].energy_ticks;
			for (int k = 1; k < 4; k++) {
				bool ok = b[k].energy_ticks == b[0].energy_ticks;
				for (size_t j = 0; j < sizeof(cmp) / sizeof(cmp[0]); j++) {
					enum smi_metric mm = cmp[j];
					if (!(b[k].present & SMI_M_BIT(mm)))
						continue; /* amd_smi doubles have no power_avg on some paths */
					ok = ok && (b[0].present & SMI_M_BIT(mm)) && fabs(b[k].v[mm] - b[0].v[mm]) < 1e-9;
				}
				if (k == 3) /* rocm_smi 5.2.3: firmware_timestamp x 10 */
					ok = ok && b[3].ts_domain == SMI_TS_FW_NS && b[3].sensor_ts == b[0].fw_ts_10ns * 10;
				else /* amd_smi: system_clock_counter, the driver's BOOTTIME at this read */
					ok = ok && b[k].ts_domain == SMI_TS_BOOTTIME_NS &&
					     (int64_t)b[k].sensor_ts >= b[k].host_before_ns &&
					     (int64_t)b[k].sensor_ts <= b[k].host_after_ns;
				if (!ok) {
					mism++;
					fprintf(stderr, "  %s differs: energy %" PRIu64 " vs %" PRIu64 ", power %.1f vs %.1f\n",
						S[k].what, b[k].energy_ticks, b[0].energy_ticks, b[k].v[SMI_M_POWER_AVG],
						b[0].v[SMI_M_POWER_AVG]);
				}
			}
			/* every source had energy and power_avg */
			for (int k = 0; k < 4; k++)
				CU_ASSERT((b[k].present & SMI_M_BIT(SMI_M_ENERGY)) && (b[k].present & SMI_M_BIT(SMI_M_POWER_AVG)));
			pmin = fmin(pmin, b[0].v[SMI_M_POWER_AVG]);
			pmax = fmax(pmax, b[0].v[SMI_M_POWER_AVG]);
		}
		struct timespec ts = { 0, 7000000 }; /* 7 ms: walk through the windows */
		nanosleep(&ts, NULL);
	}
	printf("\n    same_series: %u one-window comparisons (%u straddled an update), %u distinct energy samples, "
	       "power_avg %.0f..%.0f W, %u mismatches ", windows, straddled, distinct, pmin, pmax, mism);
	CU_ASSERT(windows >= 100);
	CU_ASSERT(distinct >= 40);
	CU_ASSERT(pmax - pmin > 50); /* the comparison saw moving values */
	CU_ASSERT_EQUAL(mism, 0);
	for (int k = 0; k < 4; k++)
		S[k].ops->close(S[k].s);
	for (int c = 0; c < 4; c++) {
		char name[32];
		snprintf(name, sizeof(name), "/rocm_smi_card%d", c);
		shm_unlink(name);
	}
}

/* ---- duplicates, glitches ------------------------------------------- */

static void dump_row(uint32_t j, int cd, int ce)
{
	fprintf(stderr, "    row %u: fw %" PRIu64 " (+%" PRId64 " us) energy %.6f J power_dedt %s%.3f\n", j, R.ticks[j] * 10,
		j ? (int64_t)(R.ticks[j] - R.ticks[j - 1]) / 100 : 0, ce >= 0 ? R.v[ce][j] : -1.0,
		R.miss[cd][j] ? "(none) " : "", R.v[cd][j]);
}

static void check_plausible(const char *what, double max_w, uint32_t *nvalid)
{
	int cd = col(&R, "power_dedt");
	CU_ASSERT_FATAL(cd >= 0);
	*nvalid = 0;
	for (uint32_t i = 0; i < R.n; i++) {
		if (R.miss[cd][i])
			continue;
		(*nvalid)++;
		if (!(R.v[cd][i] >= 0 && R.v[cd][i] <= max_w)) {
			fprintf(stderr, "  %s row %u: power_dedt %.3f W\n", what, i, R.v[cd][i]);
			/*
			 * Which firmware samples were read, and what the counter said:
			 * where the interval's starting value first showed, and around it.
			 */
			int ce = col(&R, "energy");
			uint32_t first = i;
			while (ce >= 0 && first > 1 && R.v[ce][first - 2] == R.v[ce][i - 1])
				first--;
			for (uint32_t j = first > 3 ? first - 3 : 0; j <= first; j++)
				dump_row(j, cd, ce);
			for (uint32_t j = i > 2 ? i - 2 : 0; j < R.n && j <= i + 1; j++)
				dump_row(j, cd, ce);
			CU_FAIL("negative or absurd power_dedt");
		}
	}
}

static void test_duplicates(void)
{
	knobs_reset();
	setenv("SPMTAP_EMU_SENSOR_UPDATE_US", "10000", 1); /* 10 ms update, 1 ms reads */
	struct smi_sampler_stats st;
	CU_ASSERT_EQUAL_FATAL(sample_dev(&devs[0], 1000, 400, &st, NULL), 0);
	uint32_t nv;
	check_plausible("duplicates", 300.5, &nv);
	printf("\n    duplicates: %u rows, %" PRIu64 " distinct sensor ts, %" PRIu64 " duplicates skipped, %" PRIu64
	       " emitted ", R.n, st.distinct_sensor_ts, st.dedt.n.duplicate, st.dedt.n.emitted);
	CU_ASSERT(st.dedt.n.duplicate >= 300);
	CU_ASSERT(st.dedt.n.emitted >= 30 && st.dedt.n.emitted <= 45);
	CU_ASSERT_EQUAL(nv, st.dedt.n.emitted);
	CU_ASSERT_EQUAL(st.dedt.n.reset + st.dedt.n.stuck + st.dedt.n.implausible, 0);
	/* constant:1 on the MI210: 300 W exactly, in every emitted interval */
	int cd = col(&R, "power_dedt");
	for (uint32_t i = 0; i < R.n; i++)
		if (!R.miss[cd][i])
			CU_ASSERT(fabs(R.v[cd][i] - 300.0) < 0.01);
}

static void test_glitches(void)
{
	knobs_reset();
	uint64_t ep = epoch_ns(), now_ms = (raw_ns() - ep) / 1000000;
	char g[160];
	snprintf(g, sizeof(g), "backstep@%" PRIu64 ",stuck@%" PRIu64 ":100,reset@%" PRIu64, now_ms + 200,
		 now_ms + 400, now_ms + 700);
	setenv("SPMTAP_EMU_SENSOR_GLITCH", g, 1);
	struct smi_sampler_stats st;
	CU_ASSERT_EQUAL_FATAL(sample_dev(&devs[0], 1000, 1000, &st, NULL), 0);
	uint32_t nv;
	check_plausible("glitches", 300.5, &nv);
	/*
	 * Firmware samples read inside the stuck window show the held value
	 * and give no interval.  A loaded machine makes the sampler read some
	 * samples twice (skipped duplicates), so the count to expect is that
	 * of distinct samples, not of rows.
	 */
	uint64_t stuck0 = ep + (now_ms + 400) * 1000000, stuck1 = stuck0 + 100000000;
	uint32_t inside = 0;
	for (uint32_t i = 0; i < R.n; i++) {
		uint64_t s = R.ticks[i] * 10;
		if ((i == 0 || R.ticks[i] != R.ticks[i - 1]) && s >= stuck0 && s < stuck1)
			inside++;
	}
	printf("\n    glitches (%s): %u rows, %" PRIu64 " distinct samples (%u in the stuck window), reset %" PRIu64
	       ", stuck %" PRIu64 ", ts_backwards %" PRIu64 ", implausible %" PRIu64 ", emitted %" PRIu64 " ",
	       g, R.n, st.distinct_sensor_ts, inside, st.dedt.n.reset, st.dedt.n.stuck, st.dedt.n.ts_backwards,
	       st.dedt.n.implausible, st.dedt.n.emitted);
	CU_ASSERT(st.dedt.n.reset >= 2); /* the backstep and the reset */
	CU_ASSERT(st.dedt.n.stuck >= 1); /* 100 ms without energy while time runs */
	CU_ASSERT(inside >= 50);
	/* every other distinct sample is a valid interval but the first, the backstep, the reset and the catch-up */
	CU_ASSERT(nv + inside + 4 >= st.distinct_sensor_ts);
	CU_ASSERT(st.distinct_sensor_ts >= 500);
	unsetenv("SPMTAP_EMU_SENSOR_GLITCH");
}

/*
 * What made "glitches" flaky, without the timing luck: the emulator's stuck
 * counter, read every update except the one just before the stall (a late
 * sampler thread skips one now and then).  The held value then first shows
 * one update after it was taken, and the catch-up after the stall spans
 * 101 ms of energy over 100 ms of sensor time.  dE/dt must not emit that.
 */
static void test_stuck_missed_update(void)
{
	knobs_reset();
	struct emu_sensor_model m;
	struct emu_workload w;
	CU_ASSERT_EQUAL_FATAL(emu_sensor_model_init(SPEC, 0, 0, &m, NULL, 0), 0);
	emu_workload_parse("constant:1", &w, NULL, 0);
	const uint64_t u = m.update_ns, base = raw_ns() / u * u;
	/* stuck for 100 updates from 0.4 update after sample 100 */
	m.glitches.n = 1;
	m.glitches.g[0].kind = EMU_GLITCH_STUCK;
	m.glitches.g[0].at_ns = base + 100 * u + 2 * u / 5;
	m.glitches.g[0].dur_ns = 100 * u;
	struct dedt d;
	dedt_init(&d, NULL);
	uint32_t valid = 0, stuck_flagged = 0;
	double hi = 0, lo = 1e9;
	for (uint64_t k = 0; k <= 300; k++) {
		if (k == 100)
			continue;
		struct emu_sensor_reading r;
		struct dedt_out o;
		emu_sensor_read(&m, &w, base + k * u, 0, &r);
		if (!dedt_push(&d, r.energy_ticks, r.sample_ns, &o))
			continue;
		if ((o.flags & DEDT_STUCK) && !o.valid && k == 201)
			stuck_flagged++;
		if (!o.valid)
			continue;
		valid++;
		hi = fmax(hi, o.watts);
		lo = fmin(lo, o.watts);
		if (o.watts > 300.5)
			fprintf(stderr, "  interval (%" PRIu64 ", %" PRIu64 "]: %.3f W\n", o.t0_ns - base, o.t1_ns - base, o.watts);
	}
	printf("\n    stuck 100 ms, the update before it missed: %u valid intervals %.3f..%.3f W, catch-up flagged %u ",
	       valid, lo, hi, stuck_flagged);
	CU_ASSERT(hi <= 300.5);
	CU_ASSERT_EQUAL(stuck_flagged, 1);
	CU_ASSERT(valid >= 190);
}

/* ---- MI250X second GCD, MI300 ---------------------------------------- */

static void test_mi250x_second(void)
{
	knobs_reset();
	struct smi_env env;
	env_default(&env);
	struct smi_probe p1, p2;
	CU_ASSERT_EQUAL_FATAL(smi_probe_device(&devs[1], &env, &p1), 0);
	CU_ASSERT(p1.metrics & SMI_M_BIT(SMI_M_ENERGY));
	CU_ASSERT(!p1.energy_second_die);
	smi_probe_release(&p1);
	CU_ASSERT_EQUAL_FATAL(smi_probe_device(&devs[2], &env, &p2), 0);
	CU_ASSERT(p2.energy_second_die);
	CU_ASSERT(!(p2.metrics & SMI_M_BIT(SMI_M_ENERGY)));
	CU_ASSERT(!(p2.metrics & SMI_M_BIT(SMI_M_POWER_AVG)));
	CU_ASSERT(p2.metrics & SMI_M_BIT(SMI_M_TEMP_HOTSPOT));
	const char *note = p2.selected >= 0 ? p2.src[p2.selected].note : "";
	printf("\n    mi250x second GCD: source %s, note \"%s\" ", p2.selected >= 0 ? p2.src[p2.selected].source : "-",
	       note);
	CU_ASSERT_PTR_NOT_NULL(strstr(note, "second GCD"));
	smi_probe_release(&p2);
	struct smi_sampler_stats st;
	CU_ASSERT_EQUAL_FATAL(sample_dev(&devs[2], 1000, 50, &st, NULL), 0);
	CU_ASSERT_EQUAL(col(&R, "power_dedt"), -1);
	CU_ASSERT_EQUAL(col(&R, "energy"), -1);
	CU_ASSERT(col(&R, "temp_hotspot") >= 0);
	CU_ASSERT_EQUAL(R.n, 50);
}

static void test_mi300_rocm_skipped(void)
{
	knobs_reset();
	struct smi_env env;
	env_default(&env);
	env.rocm_lib = ROCM_LIB;
	struct smi_probe p;
	CU_ASSERT_EQUAL_FATAL(smi_probe_device(&devs[3], &env, &p), 0);
	const struct smi_source_report *r = NULL;
	for (int k = 0; k < SMI_NSOURCES; k++)
		if (!strcmp(p.src[k].source, "rocm_smi"))
			r = &p.src[k];
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	printf("\n    mi300a rocm_smi: %s (%s); selected %s ", smi_avail_name(r->avail), r->reason,
	       p.selected >= 0 ? p.src[p.selected].source : "-");
	CU_ASSERT_EQUAL(r->avail, SMI_DISABLED);
	CU_ASSERT_PTR_NOT_NULL(strstr(r->reason, "aborts"));
	CU_ASSERT(p.selected >= 0 && !strcmp(p.src[p.selected].source, "gpu_metrics"));
	CU_ASSERT(p.metrics & SMI_M_BIT(SMI_M_POWER_CUR));
	smi_probe_release(&p);
	/* the source itself refuses too, before any library call that would abort */
	struct smi_source *s = NULL;
	char why[200] = "";
	CU_ASSERT_NOT_EQUAL(smi_rocm_ops.open(&devs[3], &env, &s, why, sizeof(why)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "aborts"));
	CU_PASS("process survived");
}

/* ---- PAPI as an independent reader -------------------------------------- */

static void test_papi(void)
{
	knobs_reset();
	/* constant load: the averaged power is flat, so reads at different times agree exactly */
	setenv("SPMTAP_EMU_WORKLOAD", "constant:0.37", 1);
	char tag[64], cmd[512], line[512];
	snprintf(tag, sizeof(tag), "papi-smi-%d", (int)getpid());
	struct smi_env env;
	env_default(&env);
	struct smi_source *s;
	char why[200];
	CU_ASSERT_EQUAL_FATAL(smi_gpu_metrics_ops.open(&devs[0], &env, &s, why, sizeof(why)), 0);
	struct smi_batch before, after;
	/* wait out the average filter (tau 100 ms, 10 tau of history) after the workload change */
	struct timespec ts = { 1, 100000000 };
	nanosleep(&ts, NULL);
	CU_ASSERT_EQUAL(smi_gpu_metrics_ops.read_all(s, &before), 0);
	snprintf(cmd, sizeof(cmd), "SPMTAP_EMU_SHM_TAG=%s papi_command_line rocm_smi:::power_average:device=0:sensor=0 2>&1",
		 tag);
	FILE *f = popen(cmd, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	long long uw = -1;
	while (fgets(line, sizeof(line), f)) {
		char *c = strstr(line, " : ");
		if (c && strstr(line, "power_average:device=0"))
			uw = atoll(c + 3);
	}
	CU_ASSERT_EQUAL(pclose(f), 0);
	CU_ASSERT_EQUAL(smi_gpu_metrics_ops.read_all(s, &after), 0);
	smi_gpu_metrics_ops.close(s);
	setenv("SPMTAP_EMU_SHM_TAG", tag, 1);
	for (int c = 0; c < 4; c++) {
		snprintf(line, sizeof(line), "/rocm_smi_card%d", c);
		shm_unlink(line);
	}
	unsetenv("SPMTAP_EMU_SHM_TAG");
	/* truth: 40 + 0.37 x 260 = 136.2 W; the SMU metric is whole watts */
	printf("\n    papi power_average %lld uW; spmtap power_avg %.0f W before, %.0f W after ", uw,
	       before.v[SMI_M_POWER_AVG], after.v[SMI_M_POWER_AVG]);
	CU_ASSERT_EQUAL(before.v[SMI_M_POWER_AVG], 136.0);
	CU_ASSERT_EQUAL(after.v[SMI_M_POWER_AVG], 136.0);
	CU_ASSERT_EQUAL(uw, 136000000LL);
}

static const struct testenv_case cases[] = {
	{ "dedt_square", test_dedt_square, NULL },
	{ "same_series", test_same_series, need_doubles },
	{ "duplicates", test_duplicates, NULL },
	{ "glitches", test_glitches, NULL },
	{ "stuck_missed_update", test_stuck_missed_update, NULL },
	{ "mi250x_second_gcd", test_mi250x_second, NULL },
	{ "mi300_rocm_skipped", test_mi300_rocm_skipped, need_rocm },
	{ "papi", test_papi, need_papi },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return testenv_run_suite("smi_emu", cases, argc, argv);
	static const char *const extra[] = { "SPMTAP_EMU_WORKLOAD=constant:1", NULL };
	testenv_under_emu(argc, argv, SPEC, extra);
	return testenv_run_suite("smi_emu", cases, argc, argv);
}
