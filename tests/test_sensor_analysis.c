/* SPDX-License-Identifier: MIT */
/*
 * Sensor-trace analysis (../shared/specs/sensor-analysis-v1.md) against
 * traces written here as text, with the expected values worked out by hand
 * in the comments: section 2 (lower-envelope time, cached copies, the keep
 * rule, resets, Ec), section 3 (levels, steps, crossings, aliasing a/b/c,
 * nulls), section 4 (energy, confidence windows), the JSON, every input
 * error with its file:line, and the spmtap binary itself.  One case builds
 * a realistic trace and prints what was recovered beside the truth.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/analysis/characterize.h"
#include "collector/analysis/phases.h"
#include "collector/analysis/report.h"
#include "collector/analysis/sensor_trace.h"
#include "files.h"
#include "testenv.h"

#define MS INT64_C(1000000)
#define EPS 1e-9

/* ---- helpers ------------------------------------------------------------ */

struct sb {
	char *p;
	size_t n, cap;
};

__attribute__((format(printf, 2, 3))) static void sb_printf(struct sb *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int need = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (b->n + (size_t)need + 1 > b->cap) {
		b->cap = (b->n + (size_t)need + 1) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	va_start(ap, fmt);
	vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
	va_end(ap);
	b->n += (size_t)need;
}

static struct sa_trace *trace_of(const char *text)
{
	struct sa_trace *t = NULL;
	char err[256];
	if (sa_trace_parse(text, strlen(text), "t.csv", &t, err, sizeof(err)))
		printf("\n    unexpected error: %s ", err);
	return t;
}

static void phases_of(const char *text, struct sa_phases *p)
{
	char err[256];
	if (sa_phases_parse(text, strlen(text), "p.csv", p, err, sizeof(err)))
		printf("\n    unexpected error: %s ", err);
}

/* start_ns,end_ns,name for phases of `len` alternating idle, load, idle, ... from 0 */
static char *square_phases(int64_t len, int n)
{
	struct sb b = { 0 };
	sb_printf(&b, "start_ns,end_ns,name\n");
	for (int k = 0; k < n; k++)
		sb_printf(&b, "%lld,%lld,%s\n", (long long)(k * len), (long long)((k + 1) * len), k % 2 ? "load" : "idle");
	return b.p;
}

static const struct sa_sig_char *sig_char(const struct sa_characterization *c, const char *name)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->sig[i].name, name))
			return &c->sig[i];
	CU_FAIL("no such signal");
	return NULL;
}

#define ASSERT_NEAR(a, b, tol)                                                                             \
	do {                                                                                               \
		double a_ = (a), b_ = (b);                                                                 \
		if (!(fabs(a_ - b_) <= (tol)))                                                             \
			printf("\n    %s = %.12g, expected %.12g ", #a, a_, b_);                           \
		CU_ASSERT(fabs(a_ - b_) <= (tol));                                                         \
	} while (0)

/*
 * A trace of W signals sampled and held: signal i updates every upd[i] ns
 * to f(i, t) at the update and is read every row_ns.  Each update adds a
 * +-noise alternating with the update's parity, so that every update is a
 * change (a clean square wave would change only at its edges, and its
 * observed update interval would be the phase).
 */
typedef double (*wave_fn)(int sig, int64_t t_ns);

static char *w_trace(const char *const *names, const int64_t *upd, const double *noise, int nsig, wave_fn f,
		     int64_t row_ns, int64_t end_ns)
{
	struct sb b = { 0 };
	sb_printf(&b, "time_ns");
	for (int i = 0; i < nsig; i++)
		sb_printf(&b, ",%s[W]", names[i]);
	sb_printf(&b, "\n");
	for (int64_t t = 0; t <= end_ns; t += row_ns) {
		sb_printf(&b, "%lld", (long long)t);
		for (int i = 0; i < nsig; i++) {
			int64_t k = t / upd[i];
			sb_printf(&b, ",%.9f", f(i, k * upd[i]) + (k % 2 ? noise[i] : -noise[i]));
		}
		sb_printf(&b, "\n");
	}
	return b.p;
}

/* ---- section 2 ---------------------------------------------------------- */

/*
 * An energy counter read every 1 ms, exactly at its updates, under a
 * square wave: idle 100 W, load 300 W, edges at x.5 ms (phases below).
 * Derived power is the mean over (t - 1 ms, t]: 100 or 300, and 200 in the
 * millisecond an edge falls in (11, 21, 31, 41 ms).
 */
static double sq_power(double t_ms)
{
	bool load = (t_ms >= 10.5 && t_ms < 20.5) || (t_ms >= 30.5 && t_ms < 40.5);
	return load ? 300.0 : 100.0;
}

static char *energy_square_trace(void)
{
	struct sb b = { 0 };
	double e = 1000.0;
	sb_printf(&b, "time_ns,energy[J]\n");
	for (int k = 0; k <= 50; k++) {
		if (k) /* two half-millisecond halves: exact for edges at x.5 */
			e += 0.5e-3 * (sq_power(k - 0.75) + sq_power(k - 0.25));
		sb_printf(&b, "%lld,%.9f\n", (long long)(k * MS), e);
	}
	return b.p;
}

static const char sq_phases[] = "start_ns,end_ns,name\n"
				"0,10500000,idle\n"
				"10500000,20500000,load\n"
				"20500000,30500000,idle\n"
				"30500000,40500000,load\n"
				"40500000,50500000,idle\n"
				"0,50500000,run\n";

static void energy_square_wave(void)
{
	char *text = energy_square_trace();
	struct sa_trace *t = trace_of(text);
	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_EQUAL(sa_trace_nsignals(t), 1);
	const struct sa_signal *s = sa_trace_signal(t, 0);
	CU_ASSERT_STRING_EQUAL(s->name, "energy");
	CU_ASSERT_EQUAL(s->unit, SA_UNIT_J);
	CU_ASSERT_EQUAL(s->nkept, 51);
	CU_ASSERT_EQUAL(s->n, 50);  /* readings at 1..50 ms */
	CU_ASSERT_EQUAL(s->changes, 50);
	ASSERT_NEAR(s->update_interval_ms, 1.0, EPS);
	CU_ASSERT_EQUAL(s->r[0].t_ns, 1 * MS);
	ASSERT_NEAR(s->r[0].v, 100, 1e-6);
	ASSERT_NEAR(s->r[9].v, 100, 1e-6);  /* (9, 10] */
	ASSERT_NEAR(s->r[10].v, 200, 1e-6); /* (10, 11]: half idle, half load */
	ASSERT_NEAR(s->r[11].v, 300, 1e-6);
	ASSERT_NEAR(s->r[20].v, 200, 1e-6); /* (20, 21] */
	ASSERT_NEAR(s->r[21].v, 100, 1e-6);
	/* 50 ms: 18 whole load ms (0.3 J), 4 edge ms (0.2 J), 28 idle ms (0.1 J) */
	ASSERT_NEAR(s->ec_j[50], 18 * 0.3 + 4 * 0.2 + 28 * 0.1, 1e-9);
	sa_trace_free(t);
	free(text);
}

/*
 * A firmware-timestamped counter: samples at T_k = 1 s + k ms, ts_ns =
 * T_k - 777 ms (the sensor's own clock), 250 W.  Reads complete 20..300 us
 * after the sample; the smallest, 20 us, at k = 3, so the lower envelope
 * is offset = 777 ms + 20 us and t_k = T_k + 20 us.  Even k are read twice
 * (a cached copy, same ts and energy, dropped), and k = 7 once more 30 us
 * after sample 8 exists (a stale table: still a copy of 7, dropped).
 */
static void ts_lower_envelope(void)
{
	static const int64_t lat_us[] = { 50, 90, 300, 20, 120, 75, 210, 33, 60, 150, 45 };
	struct sb b = { 0 };
	sb_printf(&b, "time_ns,e[J],e[ts_ns],p[W],p[ts_ns]\n");
	for (int k = 0; k <= 10; k++) {
		int64_t T = 1000 * MS + k * MS, ts = T - 777 * MS, rd = T + lat_us[k] * 1000;
		double e = 500 + 0.25 * k;
		sb_printf(&b, "%lld,%.6f,%lld,%d,%lld\n", (long long)rd, e, (long long)ts, 100 + k, (long long)ts);
		if (k % 2 == 0)
			sb_printf(&b, "%lld,%.6f,%lld,%d,%lld\n", (long long)(rd + 400000), e, (long long)ts, 100 + k,
				  (long long)ts);
		if (k == 7)
			sb_printf(&b, "%lld,%.6f,%lld,%d,%lld\n", (long long)(T + 1030000), e, (long long)ts, 100 + k,
				  (long long)ts);
	}
	struct sa_trace *t = trace_of(b.p);
	CU_ASSERT_FATAL(t != NULL);
	const struct sa_signal *e = sa_trace_signal(t, 0), *p = sa_trace_signal(t, 1);
	CU_ASSERT_TRUE(e->has_ts);
	CU_ASSERT_EQUAL(e->ts_offset_ns, 777 * MS + 20000);
	CU_ASSERT_EQUAL(e->nkept, 11);
	CU_ASSERT_EQUAL(e->n, 10);
	CU_ASSERT_EQUAL(e->changes, 10);
	for (size_t i = 0; i < e->n; i++) {
		CU_ASSERT_EQUAL(e->r[i].t_ns, 1000 * MS + (int64_t)(i + 1) * MS + 20000);
		ASSERT_NEAR(e->r[i].v, 250.0, 1e-6);
	}
	ASSERT_NEAR(e->update_interval_ms, 1.0, EPS);
	/* W with ts: the copies are dropped too: 11 readings, 100..110 W */
	CU_ASSERT_EQUAL(p->n, 11);
	CU_ASSERT_EQUAL(p->changes, 10);
	CU_ASSERT_EQUAL(p->r[3].t_ns, 1003 * MS + 20000);
	ASSERT_NEAR(p->r[3].v, 103, 0);
	sa_trace_free(t);
	free(b.p);
}

/*
 * Reads every 0.25 ms of a counter updated every 1 ms (200 W) and of a W
 * sensor updated every 1 ms: repeats.  J keeps the first appearance of
 * each value (rows at 1, 2, 3 ms) and never makes a 0 W interval; W keeps
 * every reading, but only 3 of them are changes.
 */
static void cached_repeats(void)
{
	struct sb b = { 0 };
	sb_printf(&b, "time_ns,e[J],w[W]\n");
	for (int q = 0; q <= 12; q++) /* 0, 0.25, ..., 3 ms */
		sb_printf(&b, "%d,%.3f,%d\n", q * 250000, 10 + 0.2 * (q / 4), 50 + q / 4);
	struct sa_trace *t = trace_of(b.p);
	CU_ASSERT_FATAL(t != NULL);
	const struct sa_signal *e = sa_trace_signal(t, 0), *w = sa_trace_signal(t, 1);
	CU_ASSERT_EQUAL(e->nkept, 4);
	CU_ASSERT_EQUAL(e->n, 3);
	for (size_t i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(e->r[i].t_ns, (int64_t)(i + 1) * MS);
		ASSERT_NEAR(e->r[i].v, 200, 1e-6);
	}
	CU_ASSERT_EQUAL(e->changes, 3);
	ASSERT_NEAR(e->update_interval_ms, 1.0, EPS);
	CU_ASSERT_EQUAL(w->n, 13);
	CU_ASSERT_EQUAL(w->changes, 3);
	ASSERT_NEAR(w->update_interval_ms, 1.0, EPS);
	sa_trace_free(t);
	free(b.p);

	/*
	 * A new value at the same time_ns is not kept (no time to divide by):
	 * 4.9 J at 0, 5.0 at 1 ms (100 W), 5.1 at 1 ms again, 5.3 at 2 ms:
	 * 300 W over (1, 2] ms, from the kept 5.0.
	 */
	t = trace_of("time_ns,e[J]\n0,4.9\n1000000,5.0\n1000000,5.1\n2000000,5.3\n");
	CU_ASSERT_FATAL(t != NULL);
	e = sa_trace_signal(t, 0);
	CU_ASSERT_EQUAL(e->n, 2);
	ASSERT_NEAR(e->r[0].v, 100, 1e-6);
	CU_ASSERT_EQUAL(e->r[1].t_ns, 2 * MS);
	ASSERT_NEAR(e->r[1].v, 300, 1e-6);
	sa_trace_free(t);
}

/*
 * A counter stuck from 3 to 8 ms: 200 W (0.2 J/ms) until 3 ms, the same
 * value at 4..8 ms, then +1.2 J at 9 ms (6 ms x 200 W).  Kept: 0, 1, 2, 3,
 * 9 ms; power 200 W everywhere, the last over (3, 9].  Changes at 1, 2,
 * 3, 9 ms: gaps 1, 1, 6, median 1 ms.
 */
static void stuck_counter(void)
{
	static const char text[] = "time_ns,e[J]\n"
				   "0,7.0\n1000000,7.2\n2000000,7.4\n3000000,7.6\n4000000,7.6\n5000000,7.6\n"
				   "6000000,7.6\n7000000,7.6\n8000000,7.6\n9000000,8.8\n";
	struct sa_trace *t = trace_of(text);
	CU_ASSERT_FATAL(t != NULL);
	const struct sa_signal *e = sa_trace_signal(t, 0);
	CU_ASSERT_EQUAL(e->n, 4);
	CU_ASSERT_EQUAL(e->r[3].t_ns, 9 * MS);
	for (size_t i = 0; i < e->n; i++)
		ASSERT_NEAR(e->r[i].v, 200, 1e-6);
	CU_ASSERT_EQUAL(e->changes, 4);
	ASSERT_NEAR(e->update_interval_ms, 1.0, EPS);
	sa_trace_free(t);
}

/*
 * Resets.  (1) 100, 100.2, 100.4 J at 0..2 ms (200 W), 5.0 at 3 ms (reset:
 * P_3 := P_2 = 200 W), 5.3 and 5.6 at 4, 5 ms (300 W).  Ec = 0, .2, .4,
 * .6, .9, 1.2 J; Ec(4.5 ms) - Ec(0.5 ms) = (0.9 + 0.15) - 0.1 = 0.95 J.
 * (2) a reset in the first interval takes the next valid power: 50 J,
 * then 10, 10.3, 10.6 J at 1 ms steps: P = 300 W throughout.
 */
static void counter_reset(void)
{
	struct sa_trace *t = trace_of("time_ns,a[J],b[J]\n"
				      "0,100,50\n1000000,100.2,10\n2000000,100.4,10.3\n3000000,5.0,10.6\n"
				      "4000000,5.3,\n5000000,5.6,\n");
	CU_ASSERT_FATAL(t != NULL);
	const struct sa_signal *a = sa_trace_signal(t, 0), *b = sa_trace_signal(t, 1);
	CU_ASSERT_EQUAL(a->resets, 1);
	CU_ASSERT_EQUAL(a->n, 5);
	ASSERT_NEAR(a->r[2].v, 200, 1e-6);
	ASSERT_NEAR(a->r[3].v, 300, 1e-6);
	ASSERT_NEAR(a->ec_j[3], 0.6, 1e-9);
	ASSERT_NEAR(a->ec_j[5], 1.2, 1e-9);
	double j = NAN;
	CU_ASSERT_EQUAL(sa_trace_energy(t, 0, 0.5e6, 4.5e6, &j, NULL, 0), 0);
	ASSERT_NEAR(j, 0.95, 1e-9);
	/* outside [first, last kept] = [0, 5 ms]: null */
	CU_ASSERT_EQUAL(sa_trace_energy(t, 0, -1, 4.5e6, &j, NULL, 0), -ERANGE);
	CU_ASSERT_EQUAL(sa_trace_energy(t, 0, 0, 5e6 + 1, &j, NULL, 0), -ERANGE);
	CU_ASSERT_EQUAL(sa_trace_energy(t, 0, 0, 5e6, &j, NULL, 0), 0);
	ASSERT_NEAR(j, 1.2, 1e-9);
	CU_ASSERT_EQUAL(b->resets, 1);
	CU_ASSERT_EQUAL(b->n, 3);
	for (size_t i = 0; i < b->n; i++)
		ASSERT_NEAR(b->r[i].v, 300, 1e-6);
	ASSERT_NEAR(b->ec_j[3], 0.9, 1e-9);
	sa_trace_free(t);
}

/*
 * Empty cells: w has readings where its cell is filled (rows 1, 3, 4); e
 * has a ts column, so a reading needs both cells (rows 1, 4, 5).
 */
static void missing_cells(void)
{
	struct sa_trace *t = trace_of("time_ns,w[W],e[J],e[ts_ns]\r\n"
				      "10,1.5,1.0,5\r\n"
				      "20,,2.0,\r\n"
				      "30,2.5,,15\r\n"
				      "40,3.5,3.0,25\r\n"
				      "50,,4.0,35\r\n");
	CU_ASSERT_FATAL(t != NULL);
	const struct sa_signal *w = sa_trace_signal(t, 0), *e = sa_trace_signal(t, 1);
	CU_ASSERT_EQUAL(w->n, 3);
	CU_ASSERT_EQUAL(w->r[1].t_ns, 30);
	ASSERT_NEAR(w->r[2].v, 3.5, 0);
	/* offset = min(10-5, 40-25, 50-35) = 5: kept at 10, 30, 40 ns */
	CU_ASSERT_EQUAL(e->ts_offset_ns, 5);
	CU_ASSERT_EQUAL(e->nkept, 3);
	CU_ASSERT_EQUAL(e->kept_t[1], 30);
	ASSERT_NEAR(e->r[0].v, 2.0 / 20e-9, 1e-3); /* 2 J over 20 ns */
	sa_trace_free(t);
}

/*
 * Built in memory (as a recording would be): the same section 2.  A
 * firmware clock that steps back (5, 15, 25, then 7) loses the readings
 * behind the last one, with a warning; a name can be used once; time_ns
 * must not go backwards.
 */
static void in_memory(void)
{
	struct sa_trace *t;
	char err[256];
	CU_ASSERT_FATAL(sa_trace_new(&t, err, sizeof(err)) == 0);
	const struct sa_raw e[] = { { 10, 5, 1.0 }, { 20, 15, 1.5 }, { 30, 25, 2.5 }, { 40, 7, 3.0 }, { 50, 35, 3.5 } };
	CU_ASSERT_EQUAL(sa_trace_add(t, "e", SA_UNIT_J, true, e, 5, err, sizeof(err)), 0);
	const struct sa_signal *s = sa_trace_signal(t, 0);
	/* offset min(5, 5, 5, 33, 15) = 5: t = 10, 20, 30, (12: dropped), 40 */
	CU_ASSERT_EQUAL(s->nkept, 4);
	CU_ASSERT_EQUAL(s->kept_t[3], 40);
	ASSERT_NEAR(s->r[2].v, 1.0 / 10e-9, 1e-3); /* 1 J over (30, 40] ns */
	CU_ASSERT_EQUAL(sa_trace_nwarnings(t), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(sa_trace_warning(t, 0), "1 readings whose e[ts_ns] went backwards"));
	CU_ASSERT_EQUAL(sa_trace_add(t, "e", SA_UNIT_W, false, e, 5, err, sizeof(err)), -EEXIST);
	const struct sa_raw w[] = { { 10, 0, 1 }, { 5, 0, 2 } };
	CU_ASSERT_EQUAL(sa_trace_add(t, "w", SA_UNIT_W, false, w, 2, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(sa_trace_add(t, "w w", SA_UNIT_W, false, w, 1, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(sa_trace_add(t, "w", SA_UNIT_W, false, w, 1, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(sa_trace_nsignals(t), 2);
	CU_ASSERT_EQUAL(sa_trace_first_j(t), 0);
	double j;
	CU_ASSERT_EQUAL(sa_trace_energy(t, 1, 10, 20, &j, err, sizeof(err)), -EINVAL); /* not J */
	sa_trace_free(t);
}

/* ---- section 3 ---------------------------------------------------------- */

static void characterize_square_wave(void)
{
	char *text = energy_square_trace();
	struct sa_trace *t = trace_of(text);
	struct sa_phases ph = { 0 };
	phases_of(sq_phases, &ph);
	CU_ASSERT_FATAL(t != NULL && ph.n == 6);
	struct sa_characterization *c;
	CU_ASSERT_FATAL(sa_characterize(t, &ph, &c, NULL, 0) == 0);
	/* load/idle durations 10.5, 10, 10, 10, 10 ms ("run" is neither) */
	ASSERT_NEAR(c->phase_ms, 10.0, EPS);
	CU_ASSERT_EQUAL(c->rising_steps, 2);
	CU_ASSERT_EQUAL(c->falling_steps, 2);
	const struct sa_sig_char *s = &c->sig[0];
	ASSERT_NEAR(s->high_w, 300, 1e-6);
	ASSERT_NEAR(s->low_w, 100, 1e-6);
	/* rising at 10.5: 200 W at 11 ms (y = 0.5) is t10, 300 W at 12 ms t90 */
	ASSERT_NEAR(s->delay_ns, 0.5e6, 0);
	ASSERT_NEAR(s->rise_ns, 1e6, 0);
	ASSERT_NEAR(s->fall_ns, 1e6, 0);
	CU_ASSERT_EQUAL(s->rising, 2);
	CU_ASSERT_EQUAL(s->falling, 2);
	CU_ASSERT_EQUAL(s->aliasing, SA_FALSE);
	CU_ASSERT_EQUAL(s->alias_why, 0);
	sa_characterization_free(c);
	sa_phases_free(&ph);
	sa_trace_free(t);
	free(text);
}

/*
 * A W sensor with a pure delay of 3 ms before a linear rise over 4 ms and
 * of 5 ms before a linear fall over 8 ms, read every 1 ms; phases of 30 ms.
 * After a rising edge at s: y = 0 at s+3, 0.25 at s+4 (t10), 0.5, 0.75, 1
 * at s+7 (t90): delay 4, rise 3 ms.  After a falling edge: y = 0.875 at s+6
 * (t90, the first <= 0.9), 0.75 ... 0.125 at s+12, 0 at s+13 (t10): delay
 * 6, fall 7 ms.  delay_ms is the median over both kinds: (4 + 6)/2 = 5.
 * Noise +-0.001 W makes every update a change.
 */
static double ramp_wave(int sig, int64_t t)
{
	(void)sig;
	int64_t ph = t % (60 * MS); /* idle [0, 30), load [30, 60) */
	double y;
	if (ph >= 30 * MS)
		y = fmin(fmax((double)(ph - 33 * MS) / 4e6, 0), 1);
	else if (t < 60 * MS)
		y = 0; /* the first idle phase follows no load */
	else
		y = 1 - fmin(fmax((double)(ph - 5 * MS) / 8e6, 0), 1);
	return 100 + 200 * y;
}

static void delay_rise_fall(void)
{
	const char *names[] = { "w" };
	int64_t upd[] = { MS };
	double noise[] = { 0.001 };
	char *text = w_trace(names, upd, noise, 1, ramp_wave, MS, 150 * MS);
	char *phs = square_phases(30 * MS, 5);
	struct sa_trace *t = trace_of(text);
	struct sa_phases ph = { 0 };
	phases_of(phs, &ph);
	CU_ASSERT_FATAL(t != NULL);
	struct sa_characterization *c;
	CU_ASSERT_FATAL(sa_characterize(t, &ph, &c, NULL, 0) == 0);
	const struct sa_sig_char *s = &c->sig[0];
	ASSERT_NEAR(c->phase_ms, 30, EPS);
	ASSERT_NEAR(s->update_interval_ms, 1, EPS);
	ASSERT_NEAR(s->high_w, 300, 0.0011);
	ASSERT_NEAR(s->low_w, 100, 0.0011);
	CU_ASSERT_EQUAL(s->rising, 2);
	CU_ASSERT_EQUAL(s->falling, 2);
	ASSERT_NEAR(s->delay_ns, 5e6, 0);
	ASSERT_NEAR(s->rise_ns, 3e6, 0);
	ASSERT_NEAR(s->fall_ns, 7e6, 0);
	CU_ASSERT_EQUAL(s->aliasing, SA_FALSE);
	sa_characterization_free(c);
	sa_phases_free(&ph);
	sa_trace_free(t);
	free(text);
	free(phs);
}

/*
 * Overlapping and nested phases, on a signal whose value is its time in
 * ms (read every 1 ms):
 *   idle [0, 10), load A [10, 40), load B [34, 40) inside A,
 *   idle [40.5, 44), run [0, 60) around them all.
 * Rising step at 10 (idle ends at 10); B has no idle ending near 34, so
 * no step; falling step at 40.5 (A and B end 0.5 ms before).
 * high: second halves [25, 40) and [37, 40) merge into [25, 40): 25..39,
 * median 32 (counting 37..39 twice would give (33 + 34)/2 = 33.5).  low:
 * [5, 10) and [42.25, 44): 5..9 and 43, median (7 + 8)/2 = 7.5.
 * T_ph: 10, 30, 6, 3.5 -> (6 + 10)/2 = 8 ms (with "run", 60, it would be 10).
 * Rising: y = (v - 7.5)/24.5; t10 = 10 (y 0.1), t90 = 30 (y 0.92): delay
 * 0, rise 20 ms.  Falling: the value only grows, no 0.9 crossing: (c).
 */
static double ramp_ms(int sig, int64_t t)
{
	(void)sig;
	return (double)t / 1e6;
}

static void overlapping_phases(void)
{
	const char *names[] = { "v" };
	int64_t upd[] = { MS };
	double noise[] = { 0 };
	char *text = w_trace(names, upd, noise, 1, ramp_ms, MS, 60 * MS);
	struct sa_trace *t = trace_of(text);
	struct sa_phases ph = { 0 };
	phases_of("start_ns,end_ns,name\n"
		  "0,60000000,run\n"
		  "0,10000000,idle\n"
		  "10000000,40000000,load\n"
		  "34000000,40000000,load\n"
		  "40500000,44000000,idle\n",
		  &ph);
	CU_ASSERT_FATAL(t != NULL && ph.n == 5);
	struct sa_characterization *c;
	CU_ASSERT_FATAL(sa_characterize(t, &ph, &c, NULL, 0) == 0);
	const struct sa_sig_char *s = &c->sig[0];
	ASSERT_NEAR(c->phase_ms, 8, EPS);
	CU_ASSERT_EQUAL(c->rising_steps, 1);
	CU_ASSERT_EQUAL(c->falling_steps, 1);
	ASSERT_NEAR(s->high_w, 32, EPS);
	ASSERT_NEAR(s->low_w, 7.5, EPS);
	CU_ASSERT_EQUAL(s->rising, 1);
	CU_ASSERT_EQUAL(s->falling, 0);
	ASSERT_NEAR(s->delay_meas_ns, 0, 0);
	ASSERT_NEAR(s->rise_meas_ns, 20e6, 0);
	CU_ASSERT_EQUAL(s->aliasing, SA_TRUE);
	CU_ASSERT_EQUAL(s->alias_why, SA_ALIAS_C);
	CU_ASSERT(isnan(s->delay_ns) && isnan(s->rise_ns) && isnan(s->fall_ns));
	sa_characterization_free(c);
	sa_phases_free(&ph);
	sa_trace_free(t);
	free(text);
}

/*
 * No step: load phases that follow no idle (gap > 1 ms), and phases with
 * neither name.  Levels, timings and aliasing are null; phase_ms is the
 * median load/idle duration (2 and 4 ms -> 3), or null without any.
 */
static void no_steps(void)
{
	char *text = energy_square_trace();
	struct sa_trace *t = trace_of(text);
	struct sa_phases ph = { 0 };
	phases_of("start_ns,end_ns,name\n0,2000000,idle\n3000001,7000001,load\n8000000,9000000,gemm\n", &ph);
	struct sa_characterization *c;
	CU_ASSERT_FATAL(t && sa_characterize(t, &ph, &c, NULL, 0) == 0);
	ASSERT_NEAR(c->phase_ms, 3, EPS);
	CU_ASSERT_EQUAL(c->rising_steps + c->falling_steps, 0);
	const struct sa_sig_char *s = &c->sig[0];
	CU_ASSERT(isnan(s->high_w) && isnan(s->low_w) && isnan(s->delay_ns));
	CU_ASSERT_EQUAL(s->aliasing, SA_NULL);
	CU_ASSERT_EQUAL(s->changes, 50); /* still reported */
	json_t *j;
	CU_ASSERT_FATAL(sa_characterization_json(c, &j, NULL, 0) == 0);
	json_t *o = json_object_get(json_object_get(j, "signals"), "energy");
	CU_ASSERT(json_is_null(json_object_get(o, "high_w")));
	CU_ASSERT(json_is_null(json_object_get(o, "low_w")));
	CU_ASSERT(json_is_null(json_object_get(o, "delay_ms")));
	CU_ASSERT(json_is_null(json_object_get(o, "aliasing")));
	CU_ASSERT(json_is_real(json_object_get(o, "update_interval_ms")));
	CU_ASSERT(json_is_integer(json_object_get(o, "changes")));
	json_decref(j);
	sa_characterization_free(c);
	sa_phases_free(&ph);

	phases_of("start_ns,end_ns,name\n0,2000000,gemm\n", &ph);
	CU_ASSERT_FATAL(sa_characterize(t, &ph, &c, NULL, 0) == 0);
	CU_ASSERT(isnan(c->phase_ms));
	CU_ASSERT_FATAL(sa_characterization_json(c, &j, NULL, 0) == 0);
	CU_ASSERT(json_is_null(json_object_get(j, "phase_ms")));
	json_decref(j);
	sa_characterization_free(c);
	sa_phases_free(&ph);
	sa_trace_free(t);
	free(text);
}

/*
 * The edges of the rules: a crossing after e, a second half's first ns,
 * the 1 ms adjacency.
 *
 * A step counts only with both crossings in [s, e).  Phases: idle [0, 20),
 * load [20, 40), idle [40, 60), load [60, 65), idle [65, 100) ms.  The
 * sensor follows the first load at once, but in the short one it ramps
 * from 100 W by 16 W/ms and drops back at 65: y = 0.16 at 62 ms (t10), and
 * 0.9 would come at 71.25 ms, after e = 65: that rising step does not
 * count, though 300 W comes back at 80..84 ms.  high: 30..39 ms (300)
 * and 63, 64 ms (148, 164): median 300; low: mostly 100 W (80..84 ms are
 * only 2 of the 30 readings of [82.5, 100)).
 * Steps: rising at 20 and 60, falling at 40 and 65, all with delay 0.
 */
static double partial_wave(int sig, int64_t t)
{
	(void)sig;
	double ms = (double)t / 1e6;
	if (ms >= 20 && ms < 40)
		return 300;
	if (ms >= 60 && ms < 65)
		return 100 + 16 * (ms - 60);
	if (ms >= 80 && ms < 85)
		return 300; /* a 90 % reading after e: must not complete the step at 60 */
	return 100;
}

static void step_boundaries(void)
{
	const char *names[] = { "w" };
	int64_t upd[] = { MS };
	double noise[] = { 0.001 };
	char *text = w_trace(names, upd, noise, 1, partial_wave, MS, 100 * MS);
	struct sa_trace *t = trace_of(text);
	struct sa_phases ph = { 0 };
	phases_of("start_ns,end_ns,name\n0,20000000,idle\n20000000,40000000,load\n40000000,60000000,idle\n"
		  "60000000,65000000,load\n65000000,100000000,idle\n",
		  &ph);
	struct sa_characterization *c;
	CU_ASSERT_FATAL(t && sa_characterize(t, &ph, &c, NULL, 0) == 0);
	const struct sa_sig_char *w = &c->sig[0];
	CU_ASSERT_EQUAL(c->rising_steps, 2);
	CU_ASSERT_EQUAL(c->falling_steps, 2);
	ASSERT_NEAR(w->high_w, 300, 0.0011);
	CU_ASSERT_EQUAL(w->rising, 1);
	CU_ASSERT_EQUAL(w->falling, 2);
	CU_ASSERT_EQUAL(w->aliasing, SA_FALSE);
	ASSERT_NEAR(w->delay_ns, 0, 0);
	ASSERT_NEAR(w->rise_ns, 0, 0);
	sa_characterization_free(c);
	sa_phases_free(&ph);

	/*
	 * Second halves to the ns: idle [0, 2000) has its midpoint 1000 (in),
	 * load [2000, 4001) 3000.5 (3000 out).  low: 2, 3 -> 2.5 (999 is out);
	 * high: 30, 40 -> 35.
	 */
	struct sa_trace *t2 = trace_of("time_ns,v[W]\n999,1\n1000,2\n1999,3\n2999,10\n3000,20\n3999,30\n4000,40\n");
	phases_of("start_ns,end_ns,name\n0,2000,idle\n2000,4001,load\n", &ph);
	CU_ASSERT_FATAL(t2 && sa_characterize(t2, &ph, &c, NULL, 0) == 0);
	ASSERT_NEAR(c->sig[0].low_w, 2.5, 0);
	ASSERT_NEAR(c->sig[0].high_w, 35, 0);
	sa_characterization_free(c);
	sa_phases_free(&ph);
	sa_trace_free(t2);

	/* adjacency: a load starting exactly 1 ms after an idle's end is a step, 1 ns later is not */
	phases_of("start_ns,end_ns,name\n0,2000000,idle\n3000000,7000000,load\n", &ph);
	CU_ASSERT_FATAL(sa_characterize(t, &ph, &c, NULL, 0) == 0);
	CU_ASSERT_EQUAL(c->rising_steps, 1);
	sa_characterization_free(c);
	sa_phases_free(&ph);
	sa_trace_free(t);
	free(text);
}

/*
 * (a) and C_ref.  Phases of 3 ms.  "fast" follows the phases 0.25 ms late
 * (100/200 W), updated and read every 0.25 ms.  "slow" updates every 2 ms
 * with 0/1000 W (and, like fast, a noise that makes every update a change):
 * update interval 2 ms, so T_ph = 3 < 2 x 2: aliased by (a).  C_ref is therefore fast's 100 W, and fast
 * (contrast 100) is not (b)-aliased, as it would be against slow's 1000.
 * fast: t10 = t90 = s + 0.25 ms: delay 0.25, rise 0, fall 0.
 */
static double a_wave(int sig, int64_t t)
{
	if (sig == 0)
		t -= 250000;
	bool load = t >= 0 && (t / (3 * MS)) % 2 == 1;
	return sig == 0 ? (load ? 200 : 100) : (load ? 1000 : 0);
}

static void aliasing_a(void)
{
	const char *names[] = { "fast", "slow" };
	int64_t upd[] = { 250000, 2 * MS };
	double noise[] = { 0.01, 0.01 };
	char *text = w_trace(names, upd, noise, 2, a_wave, 250000, 60 * MS);
	char *phs = square_phases(3 * MS, 20);
	struct sa_trace *t = trace_of(text);
	struct sa_phases ph = { 0 };
	phases_of(phs, &ph);
	struct sa_characterization *c;
	CU_ASSERT_FATAL(t && sa_characterize(t, &ph, &c, NULL, 0) == 0);
	const struct sa_sig_char *f = sig_char(c, "fast"), *s = sig_char(c, "slow");
	ASSERT_NEAR(s->update_interval_ms, 2, EPS);
	CU_ASSERT(s->alias_why & SA_ALIAS_A);
	CU_ASSERT_EQUAL(s->aliasing, SA_TRUE);
	CU_ASSERT(isnan(s->delay_ns));
	ASSERT_NEAR(s->high_w - s->low_w, 1000, 0.03);
	ASSERT_NEAR(c->c_ref_w, 100, 0.03);
	ASSERT_NEAR(f->update_interval_ms, 0.25, EPS);
	CU_ASSERT_EQUAL(f->aliasing, SA_FALSE);
	CU_ASSERT_EQUAL(f->alias_why, 0);
	ASSERT_NEAR(f->delay_ns, 250000, 0);
	ASSERT_NEAR(f->rise_ns, 0, 0);
	ASSERT_NEAR(f->fall_ns, 0, 0);
	sa_characterization_free(c);
	sa_phases_free(&ph);
	sa_trace_free(t);
	free(text);
	free(phs);
}

/*
 * (b): "dedt" resolves 100/300 W; "avg" is a first-order low-pass with
 * tau = 50 ms of the same wave (10 ms phases), updated every 1 ms.  Its
 * ripple is about 200 x tanh(10/(4 x 50)) = 10 W peak to peak, so its
 * contrast (a few W) is far under half of C_ref = 200 W: (b) only: it
 * updates often enough for (a), and its steps still cross 10 % and 90 %
 * of its own small contrast, so not (c).
 */
static double b_wave(int sig, int64_t t)
{
	static double y = 200;
	static int64_t last = -1;
	bool load = (t / (10 * MS)) % 2 == 1;
	double x = load ? 300 : 100;
	if (sig == 0)
		return x;
	if (t == 0) {
		y = 200 - 5; /* the ripple's steady state at the end of an idle phase, roughly */
		last = 0;
	}
	for (; last < t; last += MS)
		y += (x - y) * (1 - exp(-1.0 / 50));
	return y;
}

static void aliasing_b(void)
{
	const char *names[] = { "dedt", "avg" };
	int64_t upd[] = { MS, MS };
	double noise[] = { 0.001, 0.001 };
	char *text = w_trace(names, upd, noise, 2, b_wave, MS, 400 * MS);
	char *phs = square_phases(10 * MS, 40);
	struct sa_trace *t = trace_of(text);
	struct sa_phases ph = { 0 };
	phases_of(phs, &ph);
	struct sa_characterization *c;
	CU_ASSERT_FATAL(t && sa_characterize(t, &ph, &c, NULL, 0) == 0);
	const struct sa_sig_char *d = sig_char(c, "dedt"), *a = sig_char(c, "avg");
	printf("\n    avg: high %.2f low %.2f (contrast %.2f W, C_ref %.1f W) ", a->high_w, a->low_w,
	       a->high_w - a->low_w, c->c_ref_w);
	ASSERT_NEAR(c->c_ref_w, 200, 0.01);
	CU_ASSERT_EQUAL(d->aliasing, SA_FALSE);
	CU_ASSERT(a->high_w - a->low_w > 0 && a->high_w - a->low_w < 20);
	CU_ASSERT_EQUAL(a->alias_why, SA_ALIAS_B);
	CU_ASSERT_EQUAL(a->aliasing, SA_TRUE);
	CU_ASSERT(isnan(a->delay_ns) && isnan(a->rise_ns) && isnan(a->fall_ns));
	CU_ASSERT(isfinite(a->delay_meas_ns));
	sa_characterization_free(c);
	sa_phases_free(&ph);
	sa_trace_free(t);
	free(text);
	free(phs);
}

/*
 * (c): idle [0, 100), load [100, 120), idle [120, 140) ms; the sensor
 * rises at 100 ms but stays high until 150 ms, after the falling step's
 * search interval [120, 140) ends.  low: [50, 100) (100 W x 50) and
 * [130, 140) (300 W x 10): median 100.  One signal, so C_ref is its own
 * contrast: (c) only.
 */
static double c_wave(int sig, int64_t t)
{
	(void)sig;
	return t >= 100 * MS && t < 150 * MS ? 300 : 100;
}

static void aliasing_c(void)
{
	const char *names[] = { "w" };
	int64_t upd[] = { MS };
	double noise[] = { 0.001 };
	char *text = w_trace(names, upd, noise, 1, c_wave, MS, 200 * MS);
	struct sa_trace *t = trace_of(text);
	struct sa_phases ph = { 0 };
	phases_of("start_ns,end_ns,name\n0,100000000,idle\n100000000,120000000,load\n120000000,140000000,idle\n",
		  &ph);
	struct sa_characterization *c;
	CU_ASSERT_FATAL(t && sa_characterize(t, &ph, &c, NULL, 0) == 0);
	const struct sa_sig_char *s = &c->sig[0];
	ASSERT_NEAR(s->low_w, 100, 0.0011);
	ASSERT_NEAR(s->high_w, 300, 0.0011);
	CU_ASSERT_EQUAL(s->rising, 1);
	CU_ASSERT_EQUAL(s->falling, 0);
	CU_ASSERT_EQUAL(s->alias_why, SA_ALIAS_C);
	CU_ASSERT_EQUAL(s->aliasing, SA_TRUE);
	sa_characterization_free(c);
	sa_phases_free(&ph);
	sa_trace_free(t);
	free(text);
}

/* ---- section 4 and the JSON --------------------------------------------- */

static bool keys_are(json_t *o, const char *const *keys)
{
	size_t n = 0;
	for (; keys[n]; n++)
		if (!json_object_get(o, keys[n]))
			return false;
	return json_object_size(o) == n;
}

/* The spec's keys all there, and every other key one of `extra` (the spec allows added keys). */
static bool keys_are_plus(json_t *o, const char *const *keys, const char *const *extra)
{
	size_t n = 0, x = 0;
	for (; keys[n]; n++)
		if (!json_object_get(o, keys[n]))
			return false;
	for (size_t i = 0; extra[i]; i++)
		x += json_object_get(o, extra[i]) != NULL;
	return json_object_size(o) == n + x;
}

/*
 * The square wave of energy_square_wave (delay 0.5, rise = fall = 1 ms,
 * settle 1.5 ms).  Energy with Ec linear in each millisecond:
 *   idle [0, 10.5]:     10 x 0.1 + 0.5 x 0.2     = 1.1 J (104.7619 W)
 *   load [10.5, 20.5]:  0.1 + 9 x 0.3 + 0.1      = 2.9 J (290 W; truth 3.0)
 *   idle [20.5, 30.5]:  0.1 + 9 x 0.1 + 0.1      = 1.1 J
 *   idle [40.5, 50.5]:  ends after the last kept reading (50 ms): null
 * Windows: load [12, 19] ms, all 300 W readings; idle [1.5, 9] ms, 100 W.
 */
static void report_square_wave(void)
{
	char *text = energy_square_trace();
	struct sa_trace *t = trace_of(text);
	struct sa_phases ph = { 0 };
	phases_of(sq_phases, &ph);
	struct sa_report *r;
	CU_ASSERT_FATAL(t && sa_report_compute(t, &ph, &r, NULL, 0) == 0);
	CU_ASSERT_EQUAL(r->nphases, 6);
	CU_ASSERT_EQUAL(r->energy_signal, 0);
	ASSERT_NEAR(r->ph[0].energy_j, 1.1, 1e-9);
	ASSERT_NEAR(r->ph[0].mean_power_w, 1.1 / 10.5e-3, 1e-6);
	ASSERT_NEAR(r->ph[1].energy_j, 2.9, 1e-9);
	ASSERT_NEAR(r->ph[1].mean_power_w, 290, 1e-6);
	ASSERT_NEAR(r->ph[1].duration_ms, 10, 0);
	ASSERT_NEAR(r->ph[2].energy_j, 1.1, 1e-9);
	CU_ASSERT(isnan(r->ph[4].energy_j) && isnan(r->ph[4].mean_power_w));
	CU_ASSERT(isnan(r->ph[5].energy_j)); /* run [0, 50.5] */
	ASSERT_NEAR(r->ph[1].sig[0].window_start_ns, 12e6, 0);
	ASSERT_NEAR(r->ph[1].sig[0].window_end_ns, 19e6, 0);
	ASSERT_NEAR(r->ph[1].sig[0].mean_power_w_confident, 300, 1e-6);
	ASSERT_NEAR(r->ph[0].sig[0].window_start_ns, 1.5e6, 0);
	ASSERT_NEAR(r->ph[0].sig[0].mean_power_w_confident, 100, 1e-6);
	ASSERT_NEAR(r->ph[4].sig[0].mean_power_w_confident, 100, 1e-6);

	json_t *j;
	CU_ASSERT_FATAL(sa_report_json(r, &j, NULL, 0) == 0);
	static const char *const root_keys[] = { "phases", NULL };
	/* the spec's keys, plus "reason" (issue 14: why a value is null; the spec allows added keys) */
	static const char *const ph_keys[] = { "name", "start_ns", "end_ns", "duration_ms", "energy_j",
					       "mean_power_w", "reason", "signals", NULL };
	static const char *const sig_keys[] = { "window_start_ns", "window_end_ns", "mean_power_w_confident",
						"reason", NULL };
	/* extra keys: delay-aware attribution (docs/analysis.md) */
	static const char *const root_extra[] = { "delay_correction", NULL };
	static const char *const ph_extra[] = { "energy_j_delay_corrected", "residual_error_j", NULL };
	CU_ASSERT(keys_are_plus(j, root_keys, root_extra));
	json_t *arr = json_object_get(j, "phases");
	CU_ASSERT_EQUAL(json_array_size(arr), 6);
	for (size_t i = 0; i < json_array_size(arr); i++) {
		json_t *p = json_array_get(arr, i);
		CU_ASSERT(keys_are_plus(p, ph_keys, ph_extra));
		CU_ASSERT(keys_are(json_object_get(json_object_get(p, "signals"), "energy"), sig_keys));
	}
	json_t *load = json_array_get(arr, 1);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(load, "name")), "load");
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(load, "start_ns")), 10500000);
	json_t *w = json_object_get(json_object_get(load, "signals"), "energy");
	CU_ASSERT(json_is_integer(json_object_get(w, "window_start_ns")));
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(w, "window_start_ns")), 12000000);
	json_t *last = json_array_get(arr, 4);
	CU_ASSERT(json_is_null(json_object_get(last, "energy_j")));
	CU_ASSERT(json_is_null(json_object_get(last, "mean_power_w")));
	char *s = json_dumps(j, JSON_COMPACT);
	CU_ASSERT(s && !strstr(s, "NaN") && !strstr(s, "nan") && !strstr(s, "Infinity"));
	free(s);
	json_decref(j);
	sa_report_free(r);
	sa_phases_free(&ph);
	sa_trace_free(t);
	free(text);
}

/*
 * Delay-aware attribution by hand: the square wave of energy_square_trace
 * (idle 100 W, load 300 W, edges at x.5 ms, phases of 10 updates), its
 * counter 2.3 ms late and read every 1 ms on the ms: the shifted edges at
 * x.8 ms fall inside intervals.  The counter at k ms holds the energy up to
 * k - 2.3 ms (idle before 0).
 *   - step delay: every edge gives exactly 2.3 ms, spread 0 (the spec's
 *     delay_ms is 2.5 ms: at 13 ms the interval (12, 13] is 20 % load);
 *   - energy_j_delay_corrected: 1.05, 3.0, 1.0, 3.0 J exactly: the
 *     interval holding x.8 is split 0.8 : 0.2 at its neighbours' powers,
 *     where linear interpolation errs by 200 W x 0.8 x 0.2 x 1 ms at each
 *     boundary (idle 1.064 J); the spec's energy_j, unshifted, 2.54 J for a
 *     load;
 *   - --sensor-delay replaces it, and names an unknown signal.
 */
static double sq_energy_j(double t_ms)
{
	if (t_ms < 0)
		return 100 * t_ms * 1e-3;
	double e = 0;
	for (int k = 0; k < 2000 && k < t_ms * 20; k++) { /* 0.05 ms slices, exact: edges on x.5 */
		double a = k * 0.05, b = fmin(a + 0.05, t_ms);
		e += sq_power((a + b) / 2) * (b - a) * 1e-3;
	}
	return e;
}

static void report_delay_shift(void)
{
	struct sb b = { 0 };
	sb_printf(&b, "time_ns,energy[J]\n");
	for (int k = 0; k <= 50; k++)
		sb_printf(&b, "%lld,%.12f\n", (long long)(k * MS), 1000 + sq_energy_j(k - 2.3));
	struct sa_trace *t = trace_of(b.p);
	struct sa_phases ph = { 0 };
	phases_of(sq_phases, &ph);
	struct sa_report *r;
	CU_ASSERT_FATAL(t && sa_report_compute(t, &ph, &r, NULL, 0) == 0);
	const struct sa_sig_char *c = sig_char(r->ch, "energy");
	CU_ASSERT_EQUAL(c->aliasing, SA_FALSE);
	ASSERT_NEAR(c->delay_ns, 2.5e6, 0); /* the spec's: the first reading past 10 % */
	CU_ASSERT_EQUAL(c->step_edges, 4);
	ASSERT_NEAR(c->step_delay_ns, 2.3e6, 1);
	ASSERT_NEAR(c->step_delay_spread_ns, 0, 1);
	CU_ASSERT_EQUAL(r->delay_source, SA_DELAY_STEP);
	ASSERT_NEAR(r->delay_ns, 2.3e6, 1);
	/* phases 0..3 shifted lie inside [0, 50] ms; idle [40.5, 50.5) + 2.3 does not, nor run */
	static const double want[] = { 1.05, 3.0, 1.0, 3.0 }; /* idle [0, 10.5): 10.5 ms x 100 W */
	double e;
	for (int i = 0; i < 4; i++) {
		ASSERT_NEAR(r->ph[i].energy_j_corrected, want[i], 1e-9);
		CU_ASSERT(r->ph[i].residual_j >= 0 && r->ph[i].residual_j < 1e-6);
		if (i) /* the spec's, uncorrected (phase 0 is idle all through, shifted or not) */
			CU_ASSERT(fabs(r->ph[i].energy_j - want[i]) > 0.3);
	}
	/* what linear interpolation at the shifted boundaries would make of phase 2 */
	CU_ASSERT_FATAL(sa_trace_energy(t, 0, 22.8e6, 32.8e6, &e, NULL, 0) == 0);
	ASSERT_NEAR(e, 1.0 + 2 * 200 * 0.8 * 0.2e-3, 1e-9);
	CU_ASSERT(isnan(r->ph[4].energy_j_corrected) && isnan(r->ph[4].residual_j));
	CU_ASSERT(isnan(r->ph[5].energy_j_corrected));
	json_t *j;
	CU_ASSERT_FATAL(sa_report_json(r, &j, NULL, 0) == 0);
	json_t *dc = json_object_get(j, "delay_correction");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(dc, "source")), "characterised");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(dc, "signal")), "energy");
	ASSERT_NEAR(json_number_value(json_object_get(dc, "delay_ms")), 2.3, 1e-6);
	ASSERT_NEAR(json_number_value(json_object_get(json_array_get(json_object_get(j, "phases"), 1),
						      "energy_j_delay_corrected")), 3.0, 1e-9);
	json_decref(j);
	sa_report_free(r);

	/*
	 * --sensor-delay energy=1.3: the load phase taken 1 ms early holds 1 ms
	 * of idle, 2.8 J (the split at 11.8 ms sees the mixed (12, 13] on its
	 * right: 2.8125 J)
	 */
	const struct sa_user_delay ud[] = { { "energy", 1.3 } };
	struct sa_report_opts o = { ud, 1 };
	CU_ASSERT_FATAL(sa_report_compute_opts(t, &ph, &o, &r, NULL, 0) == 0);
	CU_ASSERT_EQUAL(r->delay_source, SA_DELAY_USER);
	ASSERT_NEAR(r->delay_ns, 1.3e6, 0);
	ASSERT_NEAR(r->ph[1].energy_j_corrected, 2.8, 0.02);
	sa_report_free(r);
	/*
	 * A reader that missed 18..33 ms: the shifted boundaries at 20.8 and
	 * 30.8 ms share one kept interval, so no split can be trusted there:
	 * the residual is that interval's energy either side, and covers the
	 * error; phase 0, far from the gap, stays exact.
	 */
	struct sb g = { 0 };
	sb_printf(&g, "time_ns,energy[J]\n");
	for (int k = 0; k <= 50; k++)
		if (k < 18 || k > 33)
			sb_printf(&g, "%lld,%.12f\n", (long long)(k * MS), 1000 + sq_energy_j(k - 2.3));
	struct sa_trace *tg = trace_of(g.p);
	CU_ASSERT_FATAL(tg && sa_report_compute(tg, &ph, &r, NULL, 0) == 0);
	ASSERT_NEAR(r->delay_ns, 2.3e6, 1); /* the edges at 10.5 and 40.5 still give it */
	ASSERT_NEAR(r->ph[0].energy_j_corrected, 1.05, 1e-9);
	for (int i = 1; i < 4; i++) {
		double err_j = fabs(r->ph[i].energy_j_corrected - want[i]);
		CU_ASSERT(err_j <= r->ph[i].residual_j);
		CU_ASSERT(r->ph[i].residual_j > 0.1); /* and says so */
	}
	sa_report_free(r);
	sa_trace_free(tg);
	free(g.p);
	const struct sa_user_delay bad[] = { { "power", 1 } };
	char err[256];
	o.delay = bad;
	CU_ASSERT_EQUAL(sa_report_compute_opts(t, &ph, &o, &r, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "no signal 'power' (the trace has: energy)"));
	sa_phases_free(&ph);
	sa_trace_free(t);
	free(b.p);
}

/*
 * Windows that are null, on the ramp sensor of delay_rise_fall (delay 5,
 * rise 3, fall 7: settle 12 ms) with readings from 0 ms on:
 *   load [30, 60):   window [42, 48], 300 W; no J column: energy null
 *   pre [-30, -5):   window [-18, -17]: no reading before it
 *   blip [50, 60):   window [62, 48]: empty
 * and a signal that aliases has no window at all.
 */
static void report_nulls(void)
{
	const char *names[] = { "w" };
	int64_t upd[] = { MS };
	double noise[] = { 0.001 };
	char *text = w_trace(names, upd, noise, 1, ramp_wave, MS, 150 * MS);
	struct sb phs = { 0 };
	char *sq = square_phases(30 * MS, 5);
	sb_printf(&phs, "%s-30000000,-5000000,pre\n50000000,60000000,blip\n", sq);
	struct sa_trace *t = trace_of(text);
	struct sa_phases ph = { 0 };
	phases_of(phs.p, &ph);
	struct sa_report *r;
	CU_ASSERT_FATAL(t && ph.n == 7 && sa_report_compute(t, &ph, &r, NULL, 0) == 0);
	CU_ASSERT_EQUAL(r->energy_signal, -1);
	const struct sa_phase_result *load = &r->ph[1], *pre = &r->ph[5], *blip = &r->ph[6];
	CU_ASSERT(isnan(load->energy_j) && isnan(load->mean_power_w));
	ASSERT_NEAR(load->sig[0].window_start_ns, 42e6, 0);
	ASSERT_NEAR(load->sig[0].window_end_ns, 48e6, 0);
	ASSERT_NEAR(load->sig[0].mean_power_w_confident, 300, 0.0011);
	CU_ASSERT(isnan(pre->sig[0].window_start_ns) && isnan(pre->sig[0].window_end_ns) &&
		  isnan(pre->sig[0].mean_power_w_confident));
	CU_ASSERT(isnan(blip->sig[0].window_start_ns) && isnan(blip->sig[0].mean_power_w_confident));
	json_t *j;
	CU_ASSERT_FATAL(sa_report_json(r, &j, NULL, 0) == 0);
	json_t *pw = json_object_get(json_object_get(json_array_get(json_object_get(j, "phases"), 5), "signals"), "w");
	CU_ASSERT(json_is_null(json_object_get(pw, "window_start_ns")));
	CU_ASSERT(json_is_null(json_object_get(pw, "window_end_ns")));
	CU_ASSERT(json_is_null(json_object_get(pw, "mean_power_w_confident")));
	json_decref(j);
	sa_report_free(r);
	sa_phases_free(&ph);

	/* a trace too slow for 1.5 ms phases (1 ms updates): (a), so no window anywhere */
	char *fast = square_phases(1500000, 10);
	phases_of(fast, &ph);
	free(fast);
	CU_ASSERT_FATAL(sa_report_compute(t, &ph, &r, NULL, 0) == 0);
	CU_ASSERT_EQUAL(r->ch->sig[0].alias_why & SA_ALIAS_A, SA_ALIAS_A);
	for (size_t i = 0; i < r->nphases; i++)
		CU_ASSERT(isnan(r->ph[i].sig[0].window_start_ns));
	sa_report_free(r);
	sa_phases_free(&ph);
	sa_trace_free(t);
	free(text);
	free(sq);
	free(phs.p);
}

/*
 * Issue 14 item 2: no value carried past the data.  A W signal read every
 * 1 ms from 0 to 60 ms (300 W) and a J signal (300 W) over the same span:
 *   [55, 59.5]  ends before the last reading: a mean, and an energy
 *   [55, 63]    3 ms past the last reading, within the 4 ms hold: a mean
 *   [70, 90]    10 ms after the last reading: no energy, no mean, each with
 *               "no readings after 60000000 ns" (before: 300 W for ever)
 *   [50, 66]    6 ms past it, over the hold: no mean
 * And a 20 ms hole (readings 20..40 ms removed) inside a [15, 45) window: no
 * mean, "no readings from 19000000 to 41000000 ns"; a 3 ms hole is held.
 */
static void report_after_last_reading(void)
{
	struct sb b = { 0 };
	sb_printf(&b, "time_ns,e[J],w[W]\n");
	for (int64_t t = 0; t <= 60; t++)
		sb_printf(&b, "%lld,%.6f,300\n", (long long)(t * MS), 0.3 * (double)t);
	struct sa_trace *t = trace_of(b.p);
	CU_ASSERT_FATAL(t != NULL);
	ASSERT_NEAR(sa_trace_signal(t, 1)->read_interval_ns, 1e6, 0);
	double w;
	char err[128];
	CU_ASSERT_EQUAL(sa_signal_mean(sa_trace_signal(t, 1), 55e6, 59.5e6, &w, err, sizeof(err)), 0);
	ASSERT_NEAR(w, 300, 1e-9);
	CU_ASSERT_EQUAL(sa_signal_mean(sa_trace_signal(t, 1), 55e6, 63e6, &w, err, sizeof(err)), 0); /* 3 ms held */
	CU_ASSERT_EQUAL(sa_signal_mean(sa_trace_signal(t, 1), 70e6, 90e6, &w, err, sizeof(err)), -ENODATA);
	CU_ASSERT_STRING_EQUAL(err, "no readings after 60000000 ns");
	CU_ASSERT_EQUAL(sa_signal_mean(sa_trace_signal(t, 1), 50e6, 66e6, &w, err, sizeof(err)), -ENODATA);
	CU_ASSERT_STRING_EQUAL(err, "no readings after 60000000 ns");
	double j;
	CU_ASSERT_EQUAL(sa_trace_energy(t, 0, 70e6, 90e6, &j, err, sizeof(err)), -ERANGE);
	CU_ASSERT_STRING_EQUAL(err, "no readings after 60000000 ns");
	CU_ASSERT_EQUAL(sa_trace_energy(t, 0, 10e6, 20e6, &j, err, sizeof(err)), 0);
	ASSERT_NEAR(j, 3.0, 1e-9);

	/* the report: reasons in the C results and the JSON */
	struct sa_phases ph = { 0 };
	phases_of("start_ns,end_ns,name\n55000000,59500000,tail\n70000000,90000000,late\n", &ph);
	struct sa_report *r;
	CU_ASSERT_FATAL(sa_report_compute(t, &ph, &r, NULL, 0) == 0);
	CU_ASSERT(isfinite(r->ph[0].energy_j) && !r->ph[0].reason[0]);
	CU_ASSERT(isnan(r->ph[1].energy_j));
	CU_ASSERT_STRING_EQUAL(r->ph[1].reason, "no readings after 60000000 ns");
	json_t *js;
	CU_ASSERT_FATAL(sa_report_json(r, &js, NULL, 0) == 0);
	json_t *late = json_array_get(json_object_get(js, "phases"), 1), *tail = json_array_get(json_object_get(js, "phases"), 0);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(late, "reason")), "no readings after 60000000 ns");
	CU_ASSERT(json_is_null(json_object_get(tail, "reason")));
	json_decref(js);
	sa_report_free(r);
	sa_phases_free(&ph);
	sa_trace_free(t);

	/* holes: 20 ms (readings 20..40 ms missing) against the window [15, 45); 3 ms (readings 21, 22) held */
	struct sb h = { 0 };
	sb_printf(&h, "time_ns,w[W]\n");
	for (int64_t k = 0; k <= 60; k++)
		if (k < 20 || k > 40)
			sb_printf(&h, "%lld,300\n", (long long)(k * MS));
	t = trace_of(h.p);
	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_EQUAL(sa_signal_mean(sa_trace_signal(t, 0), 15e6, 45e6, &w, err, sizeof(err)), -ENODATA);
	CU_ASSERT_STRING_EQUAL(err, "no readings from 19000000 to 41000000 ns");
	sa_trace_free(t);
	struct sb h3 = { 0 };
	sb_printf(&h3, "time_ns,w[W]\n");
	for (int64_t k = 0; k <= 60; k++)
		if (k != 21 && k != 22)
			sb_printf(&h3, "%lld,300\n", (long long)(k * MS));
	t = trace_of(h3.p);
	CU_ASSERT_EQUAL(sa_signal_mean(sa_trace_signal(t, 0), 15e6, 45e6, &w, err, sizeof(err)), 0);
	ASSERT_NEAR(w, 300, 1e-9);
	sa_trace_free(t);
	free(b.p);
	free(h.p);
	free(h3.p);
}

static void characterize_json_keys(void)
{
	char *text = energy_square_trace();
	struct sb b = { 0 };
	/* a W column after the J one, to check the order and the unit */
	sb_printf(&b, "%s", text);
	struct sa_trace *t = trace_of("time_ns,zz[W],aa[J],x[kJ],one[W]\n0,1,1,9,5\n1000000,2,1.1,9,5\n"
				      "2000000,1,1.3,9,6\n");
	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_EQUAL(sa_trace_nwarnings(t), 1);
	CU_ASSERT_STRING_EQUAL(sa_trace_warning(t, 0), "t.csv:1: column 'x[kJ]': unit kJ is not J, W or ts_ns; ignored");
	struct sa_phases ph = { 0 };
	phases_of("start_ns,end_ns,name\n0,1000000,idle\n1000000,2000000,load\n", &ph);
	struct sa_characterization *c;
	json_t *j;
	CU_ASSERT_FATAL(sa_characterize(t, &ph, &c, NULL, 0) == 0 && sa_characterization_json(c, &j, NULL, 0) == 0);
	static const char *const root_keys[] = { "phase_ms", "signals", NULL };
	static const char *const sig_keys[] = { "unit", "update_interval_ms", "changes", "high_w", "low_w",
						"delay_ms", "rise_ms", "fall_ms", "aliasing", NULL };
	CU_ASSERT(keys_are(j, root_keys));
	json_t *sigs = json_object_get(j, "signals");
	CU_ASSERT_EQUAL(json_object_size(sigs), 3);
	static const char *const sig_extra[] = { "step_delay_ms", "step_delay_spread_ms", "step_edges", NULL };
	CU_ASSERT(keys_are_plus(json_object_get(sigs, "zz"), sig_keys, sig_extra));
	CU_ASSERT(keys_are_plus(json_object_get(sigs, "aa"), sig_keys, sig_extra));
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_object_get(sigs, "zz"), "unit")), "W");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_object_get(sigs, "aa"), "unit")), "J");
	/* trace order, not alphabetical */
	char *s = json_dumps(j, JSON_PRESERVE_ORDER | JSON_COMPACT);
	CU_ASSERT(s && strstr(s, "\"zz\"") < strstr(s, "\"aa\""));
	/* aliasing is a boolean when there are steps: zz has 2 changes 1 ms apart, aa 2: (a) */
	CU_ASSERT(json_is_true(json_object_get(json_object_get(sigs, "aa"), "aliasing")));
	CU_ASSERT(json_is_null(json_object_get(json_object_get(sigs, "aa"), "delay_ms")));
	/* "one" changes once: no update interval, which is fewer than two updates per phase: (a) */
	CU_ASSERT(json_is_null(json_object_get(json_object_get(sigs, "one"), "update_interval_ms")));
	CU_ASSERT(sig_char(c, "one")->alias_why & SA_ALIAS_A);
	free(s);
	json_decref(j);
	sa_characterization_free(c);
	sa_phases_free(&ph);
	sa_trace_free(t);
	free(text);
	free(b.p);
}

/* ---- errors ------------------------------------------------------------- */

static void expect_trace_error(const char *text, size_t len, const char *want)
{
	char err[256] = "";
	struct sa_trace *t = (struct sa_trace *)1;
	int rc = sa_trace_parse(text, len, "t.csv", &t, err, sizeof(err));
	CU_ASSERT(rc < 0);
	CU_ASSERT_PTR_NULL(t);
	if (!strstr(err, want))
		printf("\n    got \"%s\"\n    want \"%s\" ", err, want);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
}

static void trace_errors(void)
{
#define E(text, want) expect_trace_error(text, sizeof(text) - 1, want)
	E("", "t.csv:1: empty file");
	E("\n", "t.csv:1: empty file");
	E("1000,5.0\n", "t.csv:1: the header must begin with time_ns");
	E("time,a[W]\n1,2\n", "t.csv:1: the header must begin with time_ns");
	E("time_ns\n1\n", "t.csv:1: no NAME[J] or NAME[W] column");
	E("time_ns,x[kJ]\n1,2\n", "t.csv:1: no NAME[J] or NAME[W] column");
	E("time_ns,a[ts_ns],b[W]\n", "t.csv:1: column 2 'a[ts_ns]' has no 'a[J]' or 'a[W]' column");
	E("time_ns,a[W],a[J]\n", "t.csv:1: duplicate NAME 'a' (columns 2 and 3)");
	E("time_ns,a[J],a[ts_ns],b[W],a[ts_ns]\n", "t.csv:1: duplicate NAME 'a' (columns 3 and 5)");
	E("time_ns,a b[W]\n", "t.csv:1: column 2 'a b[W]': NAME must be [A-Za-z0-9_.:-]+");
	E("time_ns,a[W],time_ns\n", "t.csv:1: a second time_ns column (column 3)");
	E("time_ns,a[W]\n1,2\n2,abc\n", "t.csv:3: column 2 'a[W]': 'abc' is not a decimal number");
	E("time_ns,a[W]\n1,nan\n", "t.csv:2: column 2 'a[W]': 'nan' is not a decimal number");
	E("time_ns,a[W]\n1,0x10\n", "is not a decimal number");
	E("time_ns,a[W]\n1, 2\n", "t.csv:2: column 2 'a[W]': ' 2' is not a decimal number");
	E("time_ns,a[W]\n1,1e19\n", "t.csv:2: column 2 'a[W]': '1e19' is beyond +-1e18");
	E("time_ns,a[J],a[ts_ns]\n1,2,3.5\n", "t.csv:2: column 3 'a[ts_ns]': '3.5' is not an integer");
	E("time_ns,a[W]\n1.5,2\n", "t.csv:2: time_ns '1.5' is not an integer");
	E("time_ns,a[W]\n2000000000000000000,2\n", "t.csv:2: time_ns '2000000000000000000' is beyond +-2^60");
	E("time_ns,a[W]\n,2\n", "t.csv:2: time_ns is empty");
	E("time_ns,a[W]\n5,1\n7,1\n3,2\n", "t.csv:4: time_ns 3 is earlier than 7 on line 3");
	E("time_ns,a[W]\n1,2,3\n", "t.csv:2: 3 cells, but the header has 2");
	E("time_ns,a[W],b[W]\n1,2\n", "t.csv:2: 2 cells, but the header has 3");
	E("time_ns,a[W]\n1,2\n\0", "t.csv:3: a NUL byte");
#undef E
}

static void expect_phases_error(const char *text, size_t len, const char *want)
{
	char err[256] = "";
	struct sa_phases ph = { (struct sa_phase *)1, 1 };
	int rc = sa_phases_parse(text, len, "p.csv", &ph, err, sizeof(err));
	CU_ASSERT(rc < 0);
	CU_ASSERT(ph.v == NULL && ph.n == 0);
	if (!strstr(err, want))
		printf("\n    got \"%s\"\n    want \"%s\" ", err, want);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
}

static void phases_errors(void)
{
#define E(text, want) expect_phases_error(text, sizeof(text) - 1, want)
	E("", "p.csv:1: empty file");
	E("start,end,name\n", "p.csv:1: the header must be start_ns,end_ns,name");
	E("0,10,load\n", "p.csv:1: the header must be start_ns,end_ns,name");
	E("start_ns,end_ns,name\n0,10,a\n200,100,load\n", "p.csv:3: end_ns 100 is not after start_ns 200");
	E("start_ns,end_ns,name\n100,100,load\n", "p.csv:2: end_ns 100 is not after start_ns 100");
	E("start_ns,end_ns,name\n0,10,a,b\n",
	  "p.csv:2: 4 cells, expected 3 (start_ns,end_ns,name); a name cannot contain a comma");
	E("start_ns,end_ns,name\n0,10\n", "p.csv:2: 2 cells, expected 3");
	E("start_ns,end_ns,name\n1.5,10,x\n", "p.csv:2: start_ns '1.5' is not an integer");
	E("start_ns,end_ns,name\n0,,x\n", "p.csv:2: end_ns '' is empty");
	E("start_ns,end_ns,name\n0,10,\xff\n", "p.csv:2: the name is not valid UTF-8");
	E("start_ns,end_ns,name\n0,10,a\0\n", "p.csv:2: a NUL byte");
#undef E
	/* what parses: CRLF, blank lines, empty and UTF-8 names, negative times */
	struct sa_phases ph;
	static const char ok[] = "start_ns,end_ns,name\r\n-5,10,\r\n\r\n10,20,gemm \xc3\xa9t\xc3\xa9\r\n";
	char err[256];
	CU_ASSERT_EQUAL_FATAL(sa_phases_parse(ok, sizeof(ok) - 1, "p.csv", &ph, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ph.n, 2);
	CU_ASSERT_EQUAL(ph.v[0].start_ns, -5);
	CU_ASSERT_STRING_EQUAL(ph.v[0].name, "");
	CU_ASSERT_STRING_EQUAL(ph.v[1].name, "gemm \xc3\xa9t\xc3\xa9");
	sa_phases_free(&ph);
	CU_ASSERT_EQUAL(sa_phases_parse("start_ns,end_ns,name\n", 21, "p.csv", &ph, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ph.n, 0);
}

/* ---- the binary --------------------------------------------------------- */

static char tmpdir[] = "/tmp/spmtap-sensor-analysis-XXXXXX";
static char cli_out[1 << 16], cli_err[1 << 16];

static const char *tpath(const char *name)
{
	static char p[8][512];
	static int k;
	k = (k + 1) % 8;
	snprintf(p[k], sizeof(p[k]), "%s/%s", tmpdir, name);
	return p[k];
}

static void put_file(const char *name, const char *text)
{
	FILE *f = fopen(tpath(name), "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs(text, f);
	fclose(f);
}

static const char *spmtap_bin(void)
{
	static char p[4096];
	snprintf(p, sizeof(p), "%s/spmtap", testenv_build_dir());
	return p;
}

static const char *need_cli(void)
{
	if (access(spmtap_bin(), X_OK))
		return "no spmtap binary in the build directory";
	if (!mkdtemp(tmpdir))
		return "cannot make a temporary directory";
	return NULL;
}

/* Run spmtap with args (NULL-terminated); stdout and stderr into cli_out / cli_err. */
static int run_cli(const char *arg0, ...)
{
	char *argv[16];
	int n = 0;
	argv[n++] = (char *)"spmtap";
	va_list ap;
	va_start(ap, arg0);
	for (const char *a = arg0; a && n < 15; a = va_arg(ap, const char *))
		argv[n++] = (char *)a;
	va_end(ap);
	argv[n] = NULL;
	char so[512], se[512];
	snprintf(so, sizeof(so), "%s/stdout", tmpdir);
	snprintf(se, sizeof(se), "%s/stderr", tmpdir);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, so, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 2, se, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	pid_t pid;
	extern char **environ;
	int rc = posix_spawn(&pid, spmtap_bin(), &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		return -1;
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	tf_slurp_into(so, cli_out, sizeof(cli_out));
	tf_slurp_into(se, cli_err, sizeof(cli_err));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#define EXPECT_CLI(status, where, want, ...)                                                               \
	do {                                                                                               \
		int st_ = run_cli(__VA_ARGS__, NULL);                                                      \
		if (st_ != (status) || !strstr(where, want))                                               \
			printf("\n    status %d (want %d)\n    stderr: %s    want: %s ", st_, (status),        \
			       cli_err, want);                                                             \
		CU_ASSERT_EQUAL(st_, status);                                                              \
		CU_ASSERT_PTR_NOT_NULL(strstr(where, want));                                               \
	} while (0)

static void cli(void)
{
	char *text = energy_square_trace();
	struct sb kj = { 0 };
	sb_printf(&kj, "time_ns,energy[J],x[kJ]\n");
	for (int k = 0; k <= 50; k++)
		sb_printf(&kj, "%lld,%.9f,1\n", (long long)(k * MS), 1000 + 0.1 * k);
	put_file("t.csv", text);
	put_file("tk.csv", kj.p);
	put_file("p.csv", sq_phases);
	put_file("bad.csv", "time_ns,a[W]\n1,2\n2,3\n1,4\n");
	put_file("badp.csv", "start_ns,end_ns,name\n0,10,idle\n20,10,load\n");
	char t[512], p[512], o[512], tk[512], bad[512], badp[512], missing[512], nodir[512];
	snprintf(t, sizeof(t), "%s", tpath("t.csv"));
	snprintf(p, sizeof(p), "%s", tpath("p.csv"));
	snprintf(o, sizeof(o), "%s", tpath("o.json"));
	snprintf(tk, sizeof(tk), "%s", tpath("tk.csv"));
	snprintf(bad, sizeof(bad), "%s", tpath("bad.csv"));
	snprintf(badp, sizeof(badp), "%s", tpath("badp.csv"));
	snprintf(missing, sizeof(missing), "%s", tpath("missing.csv"));
	snprintf(nodir, sizeof(nodir), "%s", tpath("nodir/o.json"));

	EXPECT_CLI(0, cli_out, "signal", "characterize", "--trace", t, "--phases", p, "--json", o);
	json_error_t je;
	json_t *j = json_load_file(o, 0, &je);
	CU_ASSERT_PTR_NOT_NULL(j);
	double d = json_real_value(json_object_get(json_object_get(json_object_get(j, "signals"), "energy"), "delay_ms"));
	ASSERT_NEAR(d, 0.5, 1e-12);
	json_decref(j);
	/* --json -: JSON alone on stdout */
	EXPECT_CLI(0, cli_out, "\"phase_ms\": 10.0", "characterize", "--trace", t, "--phases", p, "--json", "-");
	j = json_loads(cli_out, 0, &je);
	CU_ASSERT_PTR_NOT_NULL(j);
	json_decref(j);
	EXPECT_CLI(0, cli_out, "energy_j", "report", "--trace", t, "--phases", p);
	/* what has no value and why comes first: the last idle phase ends after the last reading (50 ms) */
	char *cov = strstr(cli_out, "Coverage ("), *table = strstr(cli_out, "T_ph");
	CU_ASSERT(cov && table && cov < table);
	CU_ASSERT_PTR_NOT_NULL(strstr(cli_out, "energy_j: no value: no readings after 50000000 ns"));
	EXPECT_CLI(0, cli_out, "\"energy_j\": ", "report", "--trace", t, "--phases", p, "--json", "-");
	j = json_loads(cli_out, 0, &je);
	ASSERT_NEAR(json_real_value(json_object_get(json_array_get(json_object_get(j, "phases"), 1), "energy_j")), 2.9,
		    1e-9);
	json_decref(j);
	EXPECT_CLI(0, cli_err, "tk.csv:1: column 'x[kJ]': unit kJ is not J, W or ts_ns; ignored", "report", "--trace",
		   tk, "--phases", p);
	/* the delay-corrected energy leads the table, labelled with its delay and source */
	EXPECT_CLI(0, cli_out, "energy_j*: 'energy' shifted by its delay 0.0000 ms (characterised", "report", "--trace",
		   t, "--phases", p);
	EXPECT_CLI(0, cli_out, "\"source\": \"--sensor-delay\"", "report", "--trace", t, "--phases", p,
		   "--sensor-delay", "energy=1.5ms", "--json", "-");
	j = json_loads(cli_out, 0, &je);
	ASSERT_NEAR(json_number_value(json_object_get(json_object_get(j, "delay_correction"), "delay_ms")), 1.5, 0);
	json_decref(j);
	EXPECT_CLI(1, cli_err, "--sensor-delay: no signal 'power' (the trace has: energy)", "report", "--trace", t,
		   "--phases", p, "--sensor-delay", "power=1");
	EXPECT_CLI(64, cli_err, "expected SIGNAL=MS", "report", "--trace", t, "--phases", p, "--sensor-delay", "3");
	/* any time unit, as every time on the command line; a bare number is ms */
	EXPECT_CLI(0, cli_out, "\"source\": \"--sensor-delay\"", "report", "--trace", t, "--phases", p,
		   "--sensor-delay", "energy=1500us", "--json", "-");
	j = json_loads(cli_out, 0, &je);
	ASSERT_NEAR(json_number_value(json_object_get(json_object_get(j, "delay_correction"), "delay_ms")), 1.5, 0);
	json_decref(j);
	EXPECT_CLI(64, cli_err, "'3parsecs' is not a delay", "report", "--trace", t, "--phases", p, "--sensor-delay",
		   "energy=3parsecs");
	EXPECT_CLI(64, cli_err, "'11s' is not a delay", "report", "--trace", t, "--phases", p, "--sensor-delay",
		   "energy=11s");
	EXPECT_CLI(64, cli_err, "belong to `spmtap report`", "characterize", "--trace", t, "--phases", p,
		   "--sensor-delay", "energy=1");

	/* bad input: status 1, file and line named */
	EXPECT_CLI(1, cli_err, "bad.csv:4: time_ns 1 is earlier than 2 on line 3", "characterize", "--trace",
		   bad, "--phases", p);
	EXPECT_CLI(1, cli_err, "badp.csv:3: end_ns 10 is not after start_ns 20", "report", "--trace", t, "--phases",
		   badp);
	EXPECT_CLI(1, cli_err, "No such file", "report", "--trace", missing, "--phases", p);
	EXPECT_CLI(1, cli_err, "nodir/o.json", "report", "--trace", t, "--phases", p, "--json", nodir);
	/* usage: 64 */
	EXPECT_CLI(64, cli_err, "--trace and --phases", "characterize", "--trace", t);
	EXPECT_CLI(64, cli_err, "unknown option", "report", "--trace", t, "--phases", p, "--bogus");
	EXPECT_CLI(64, cli_err, "a RECORDING or --trace, not both", "report", "--trace", t, "--phases", p, "extra");
	EXPECT_CLI(64, cli_err, "unexpected argument 'more'", "report", "rec", "more");
	EXPECT_CLI(64, cli_err, "metrics need SPM counters", "report", "--trace", t, "--phases", p, "--metric", "x=1");
	EXPECT_CLI(64, cli_err, "belong to `spmtap report`", "characterize", "--trace", t, "--phases", p, "--html", "x.html");
	EXPECT_CLI(64, cli_err, "needs an argument", "report", "--phases", p, "--trace");
	EXPECT_CLI(0, cli_out, "usage: spmtap report", "report", "--help");
	free(text);
	free(kj.p);
	const char *names[] = { "stdout", "stderr", "t.csv", "tk.csv", "p.csv", "bad.csv", "badp.csv", "o.json" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlink(tpath(names[i]));
	rmdir(tmpdir);
}

/* ---- a realistic trace -------------------------------------------------- */

static uint64_t rng = 0x5eed;
static double uni(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng >> 11) / (double)(1ull << 53);
}

/*
 * 40 phases of 100 ms (idle 100 W, load 300 W) from BOOTTIME 4812.6 s.
 *   energy: the firmware integrates the true power into a 2^-16 J counter
 *     and publishes it every 1 ms (at 0.37 ms past each ms) with its
 *     timestamp on a clock 4.7e12 ns behind the host's.
 *   power_avg: the firmware's first-order low-pass (tau 3 ms) of the true
 *     power, 5 ms late, published every 1 ms (0.81 ms past), +-0.05 W noise.
 * The collector reads both every 0.3..1 ms; a read sees what was published
 * 10..200 us before it completes; 5 % of reads return the previous read's
 * (cached) table.  Truth: levels 300/100 W; energy 30/10 J per phase; for
 * dE/dt no delay and no rise (the truth is a step: what the method adds
 * is the sampling); for power_avg delay 5 + 3 ln(10/9) = 5.316 ms, rise
 * and fall 3 ln 9 = 6.592 ms.
 */
#define R_T0 INT64_C(4812600000000)
#define R_PHASE (100 * MS)
#define R_N 40
#define R_TAU 3e6
#define R_DELAY (5 * MS)

static double r_true(double t)
{
	if (t < R_T0)
		return 100;
	return ((int64_t)((t - R_T0) / R_PHASE)) % 2 ? 300 : 100;
}

static void realistic(void)
{
	struct sb b = { 0 };
	sb_printf(&b, "time_ns,energy[J],energy[ts_ns],power_avg[W]\n");
	int64_t end = R_T0 + R_N * R_PHASE + 10 * MS;
	/* the energy counter: exact integral of the square wave, in ticks */
	double e_j = 123456.0, lp = 100, lp_t = R_T0 - 20 * MS;
	int64_t fw_t = R_T0 - 20 * MS + 370000, avg_t = R_T0 - 20 * MS + 810000;
	double fw_e = e_j, fw_ts = 0, avg_v = 100;
	int64_t fw_last = fw_t;
	uint64_t fw_ticks = (uint64_t)(e_j * 65536);
	double prev_e = -1, prev_ts = 0, prev_avg = 0;
	for (int64_t rd = R_T0 - 10 * MS; rd < end; rd += (int64_t)(300000 + uni() * 700000)) {
		int64_t seen = rd - (int64_t)(10000 + uni() * 190000);
		while (fw_t + MS <= seen) { /* publish energy samples up to `seen` */
			fw_t += MS;
			double j = 0; /* integrate the truth over (fw_last, fw_t] in 10 us steps */
			for (int64_t q = fw_last; q < fw_t; q += 10000)
				j += r_true((double)q + 5000) * 10e-6;
			fw_last = fw_t;
			e_j += j;
			fw_ticks = (uint64_t)floor(e_j * 65536);
			fw_e = (double)fw_ticks / 65536;
			fw_ts = (double)(fw_t - INT64_C(4700000000000));
		}
		while (avg_t + MS <= seen) {
			avg_t += MS;
			for (; lp_t < (double)avg_t; lp_t += 10000) /* 10 us steps of the low-pass */
				lp += (r_true(lp_t + 5000 - (double)R_DELAY) - lp) * (1 - exp(-10000 / R_TAU));
			avg_v = lp + (((avg_t / MS) % 2) ? 0.05 : -0.05);
		}
		double e = fw_e, ts = fw_ts, avg = avg_v;
		if (prev_e >= 0 && uni() < 0.05) { /* a cached table */
			e = prev_e;
			ts = prev_ts;
			avg = prev_avg;
		}
		sb_printf(&b, "%lld,%.10f,%.0f,%.4f\n", (long long)rd, e, ts, avg);
		prev_e = e;
		prev_ts = ts;
		prev_avg = avg;
	}
	struct sb p = { 0 };
	sb_printf(&p, "start_ns,end_ns,name\n");
	for (int k = 0; k < R_N; k++)
		sb_printf(&p, "%lld,%lld,%s\n", (long long)(R_T0 + k * R_PHASE), (long long)(R_T0 + (k + 1) * R_PHASE),
			  k % 2 ? "load" : "idle");
	if (getenv("SPMTAP_KEEP_TRACE")) { /* for checking by other means */
		FILE *f = fopen("realistic_trace.csv", "w");
		if (f) {
			fputs(b.p, f);
			fclose(f);
		}
		f = fopen("realistic_phases.csv", "w");
		if (f) {
			fputs(p.p, f);
			fclose(f);
		}
	}
	struct sa_trace *t = trace_of(b.p);
	struct sa_phases ph = { 0 };
	phases_of(p.p, &ph);
	struct sa_report *r;
	CU_ASSERT_FATAL(t && sa_report_compute(t, &ph, &r, NULL, 0) == 0);
	const struct sa_sig_char *e = sig_char(r->ch, "energy"), *a = sig_char(r->ch, "power_avg");
	double td = (5 + 3 * log(10.0 / 9)), tr_ = 3 * log(9.0);
	printf("\n    %-22s %10s %10s   %10s %10s", "", "energy", "(truth)", "power_avg", "(truth)");
	printf("\n    %-22s %10.3f %10s   %10.3f %10s", "update_interval_ms", e->update_interval_ms, "1", a->update_interval_ms,
	       "1");
	printf("\n    %-22s %10.3f %10.3f   %10.3f %10.3f", "high_w", e->high_w, 300.0, a->high_w, 300.0);
	printf("\n    %-22s %10.3f %10.3f   %10.3f %10.3f", "low_w", e->low_w, 100.0, a->low_w, 100.0);
	printf("\n    %-22s %10.3f %10.3f   %10.3f %10.3f", "delay_ms", e->delay_ns / 1e6, 0.0, a->delay_ns / 1e6, td);
	printf("\n    %-22s %10.3f %10.3f   %10.3f %10.3f", "rise_ms", e->rise_ns / 1e6, 0.0, a->rise_ns / 1e6, tr_);
	printf("\n    %-22s %10.3f %10.3f   %10.3f %10.3f", "fall_ms", e->fall_ns / 1e6, 0.0, a->fall_ns / 1e6, tr_);
	printf("\n    %-22s %10s %10s   %10s %10s", "aliasing", e->aliasing == SA_FALSE ? "no" : "yes", "no",
	       a->aliasing == SA_FALSE ? "no" : "yes", "no");
	CU_ASSERT_EQUAL(e->aliasing, SA_FALSE);
	CU_ASSERT_EQUAL(a->aliasing, SA_FALSE);
	ASSERT_NEAR(e->update_interval_ms, 1, 0.1);
	ASSERT_NEAR(a->update_interval_ms, 1, 0.1);
	ASSERT_NEAR(e->high_w, 300, 3);
	ASSERT_NEAR(e->low_w, 100, 1);
	ASSERT_NEAR(a->high_w, 300, 3);
	ASSERT_NEAR(a->low_w, 100, 1);
	/* within one observed update interval of the truth */
	CU_ASSERT(e->delay_ns / 1e6 <= e->update_interval_ms * 1.1);
	CU_ASSERT(e->rise_ns / 1e6 <= e->update_interval_ms * 1.1);
	CU_ASSERT(e->fall_ns / 1e6 <= e->update_interval_ms * 1.1);
	ASSERT_NEAR(a->delay_ns / 1e6, td, a->update_interval_ms * 1.1);
	ASSERT_NEAR(a->rise_ns / 1e6, tr_, a->update_interval_ms * 1.1);
	ASSERT_NEAR(a->fall_ns / 1e6, tr_, a->update_interval_ms * 1.1);
	double worst_e = 0, worst_ce = 0, worst_ca = 0, worst_dc = 0;
	size_t ne = 0, ndc = 0;
	for (size_t i = 0; i < r->nphases; i++) {
		const struct sa_phase_result *q = &r->ph[i];
		double truth = strcmp(q->phase->name, "load") ? 100 : 300;
		if (isfinite(q->energy_j)) {
			worst_e = fmax(worst_e, fabs(q->energy_j - truth * 0.1) / (truth * 0.1));
			ne++;
		}
		if (isfinite(q->energy_j_corrected)) {
			worst_dc = fmax(worst_dc, fabs(q->energy_j_corrected - truth * 0.1) / (truth * 0.1));
			ndc++;
		}
		CU_ASSERT(isfinite(q->sig[0].mean_power_w_confident) && isfinite(q->sig[1].mean_power_w_confident));
		worst_ce = fmax(worst_ce, fabs(q->sig[0].mean_power_w_confident - truth) / truth);
		worst_ca = fmax(worst_ca, fabs(q->sig[1].mean_power_w_confident - truth) / truth);
	}
	printf("\n    %zu phase energies: worst error %.3f %%; confident mean power: worst %.3f %% (energy), "
	       "%.3f %% (power_avg) ",
	       ne, worst_e * 100, worst_ce * 100, worst_ca * 100);
	printf("\n    phase 1 (load): %.4f J (truth 30 J), %.3f W; window [%+.3f, %+.3f] ms: %.3f W ",
	       r->ph[1].energy_j, r->ph[1].mean_power_w, (r->ph[1].sig[0].window_start_ns - (double)r->ph[1].phase->start_ns) / 1e6,
	       (r->ph[1].sig[0].window_end_ns - (double)r->ph[1].phase->end_ns) / 1e6, r->ph[1].sig[0].mean_power_w_confident);
	printf("\n    delay-corrected (delay %.4f ms): %zu phase energies, worst error %.4f %% ", r->delay_ns / 1e6, ndc,
	       worst_dc * 100);
	CU_ASSERT_EQUAL(ndc, R_N);
	CU_ASSERT(worst_dc < 0.01);
	CU_ASSERT_EQUAL(ne, R_N);
	CU_ASSERT(worst_e < 0.02);
	CU_ASSERT(worst_ce < 0.01);
	CU_ASSERT(worst_ca < 0.01);
	sa_report_free(r);
	sa_phases_free(&ph);
	sa_trace_free(t);
	free(b.p);
	free(p.p);
}

/* Integers at and past SA_INT_LIMIT (2^60): refused as out of range, without an overflow on the way. */
static void parse_int_limit(void)
{
	int64_t v = 0;
	CU_ASSERT_EQUAL(sa_parse_int("1152921504606846976", 19, &v), 0);
	CU_ASSERT_EQUAL(v, SA_INT_LIMIT);
	CU_ASSERT_EQUAL(sa_parse_int("-1152921504606846976", 20, &v), 0);
	CU_ASSERT_EQUAL(v, -SA_INT_LIMIT);
	CU_ASSERT_EQUAL(sa_parse_int("1152921504606846977", 19, &v), -ERANGE);
	/* 922337203685477580 * 10 + 8 would pass INT64_MAX (found by fuzzing the SQLite reader) */
	CU_ASSERT_EQUAL(sa_parse_int("9223372036854775808", 19, &v), -ERANGE);
	CU_ASSERT_EQUAL(sa_parse_int("99999999999999999999999x", 24, &v), -EINVAL);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "trace/energy_square_wave", energy_square_wave, NULL },
		{ "trace/ts_lower_envelope", ts_lower_envelope, NULL },
		{ "trace/cached_repeats", cached_repeats, NULL },
		{ "trace/stuck_counter", stuck_counter, NULL },
		{ "trace/counter_reset", counter_reset, NULL },
		{ "trace/missing_cells", missing_cells, NULL },
		{ "trace/in_memory", in_memory, NULL },
		{ "trace/errors", trace_errors, NULL },
		{ "trace/parse_int_limit", parse_int_limit, NULL },
		{ "phases/errors", phases_errors, NULL },
		{ "characterize/square_wave", characterize_square_wave, NULL },
		{ "characterize/delay_rise_fall", delay_rise_fall, NULL },
		{ "characterize/overlapping_phases", overlapping_phases, NULL },
		{ "characterize/no_steps", no_steps, NULL },
		{ "characterize/step_boundaries", step_boundaries, NULL },
		{ "characterize/aliasing_a", aliasing_a, NULL },
		{ "characterize/aliasing_b", aliasing_b, NULL },
		{ "characterize/aliasing_c", aliasing_c, NULL },
		{ "characterize/json_keys", characterize_json_keys, NULL },
		{ "report/square_wave", report_square_wave, NULL },
		{ "report/nulls", report_nulls, NULL },
		{ "report/delay_shift", report_delay_shift, NULL },
		{ "report/after_last_reading", report_after_last_reading, NULL },
		{ "report/realistic", realistic, NULL },
		{ "cli/characterize_report", cli, need_cli },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("sensor_analysis", cases, argc, argv);
}
