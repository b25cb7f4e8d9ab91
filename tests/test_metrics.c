/* SPDX-License-Identifier: MIT */
/*
 * Derived metrics (collector/analysis/metrics.h, docs/metrics.md): the
 * language on literal inputs, reductions over XCCs and SEs, the variables,
 * missing values, every error message with its column and suggestion,
 * metrics files, each built-in on hand-computed inputs, and why a phase's
 * metric is a ratio of sums.  Expected values are worked out in the
 * comments, never taken from the code under test.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/analysis/metrics.h"
#include "testenv.h"

#define TX 4    /* XCCs a test frame can hold */
#define TC 256  /* columns a test frame can hold */

struct tframe {
	double v[TX][TC];
	bool miss[TX][TC];
};

static bool tf_value(void *user, size_t col, const char *name, unsigned int xcc, double *v)
{
	struct tframe *t = user;
	(void)name;
	if (xcc >= TX || col >= TC || t->miss[xcc][col])
		return false;
	*v = t->v[xcc][col];
	return true;
}

static struct mx_frame frame(struct tframe *t, unsigned int nxcc)
{
	return (struct mx_frame){ .nxcc = nxcc, .interval = 1000, .dt = 0.5, .se_per_xcc = 4,
				  .cus_per_se = 10, .cu_count = 40 * nxcc, .value = tf_value, .user = t };
}

static int col_of(const struct mx_set *s, const char *name)
{
	for (size_t i = 0; i < mx_set_column_count(s); i++)
		if (!strcmp(mx_set_column(s, i), name))
			return (int)i;
	CU_FAIL_FATAL("test column missing");
	return -1;
}

static void put(const struct mx_set *s, struct tframe *t, const char *col, unsigned int xcc, double v)
{
	t->v[xcc][col_of(s, col)] = v;
}

static const struct spm_catalog *cat(enum spm_gfx g)
{
	const struct spm_catalog *c = NULL;
	CU_ASSERT_EQUAL_FATAL(spm_catalog_get(g, &c, NULL, 0), 0);
	return c;
}

static struct mx_set *mkset(const struct spm_catalog *c, const char *const *cols, size_t n)
{
	struct mx_set *s = NULL;
	char err[256];
	int rc = mx_set_new(c, cols, n, &s, err, sizeof(err));
	if (rc)
		printf("\n    mx_set_new: %s ", err);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	return s;
}

/* Define and evaluate; returns the value, *missing as evaluated. */
static double def_eval(struct mx_set *s, const char *def, const struct mx_frame *f, bool *missing)
{
	char err[512];
	int i = mx_set_add(s, def, err, sizeof(err));
	if (i < 0)
		printf("\n    %s: %s ", def, err);
	CU_ASSERT_FATAL(i >= 0);
	struct mx_value v;
	CU_ASSERT_EQUAL_FATAL(mx_eval(s, (size_t)i, f, &v), 0);
	CU_ASSERT(isfinite(v.v));
	if (missing)
		*missing = v.missing;
	else
		CU_ASSERT_FALSE(v.missing);
	return v.v;
}

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-12 * fmax(1.0, fabs(b));
}

/* ---- the language ---- */

static void arithmetic(void)
{
	static const char *const cols[] = { "A", "B" };
	static const struct {
		const char *expr;
		double want;
	} cases[] = {
		{ "1 + 2 * 3", 7 },          /* * before + */
		{ "(1 + 2) * 3", 9 },
		{ "10 - 4 - 3", 3 },         /* left to right */
		{ "100 / 10 / 5", 2 },
		{ "2 * 3 / 4", 1.5 },
		{ "-2 * -3", 6 },
		{ "--5", 5 },
		{ "-(1 - 4)", 3 },
		{ "1 - -1", 2 },
		{ "2 - 3 * -1", 5 },
		{ "-A + B", -2 },            /* A = 6, B = 4 */
		{ "A * B - A / B", 22.5 },   /* 24 - 1.5 */
		{ "1.5e3 + .5", 1500.5 },
		{ "2E-2 * 100", 2 },
		{ "1. + 0", 1 },
		{ "\tA\t+\tB  ", 10 },
		{ "(((A)))", 6 },
	};
	struct tframe t = { 0 };
	struct mx_set *s = mkset(NULL, cols, 2);
	put(s, &t, "A", 0, 6);
	put(s, &t, "B", 0, 4);
	struct mx_frame f = frame(&t, 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char def[128];
		snprintf(def, sizeof(def), "M%zu = %s", i, cases[i].expr);
		double v = def_eval(s, def, &f, NULL);
		if (!near(v, cases[i].want))
			printf("\n    %s: %g, expected %g ", def, v, cases[i].want);
		CU_ASSERT(near(v, cases[i].want));
	}
	/* a metric uses the ones before it */
	CU_ASSERT(near(def_eval(s, "SUMAB = A + B", &f, NULL), 10));
	CU_ASSERT(near(def_eval(s, "HALF = SUMAB / 2", &f, NULL), 5));
	mx_set_free(s);
}

/* 3 XCCs: SQ_WAVES 10, 20, 60; TCC_HIT[0] 1, 2, 3; TCC_HIT[1] 4, 5, 6 */
static void reduce_xcc(void)
{
	static const char *const cols[] = { "SQ_WAVES", "TCC_HIT[0]", "TCC_HIT[1]" };
	static const struct {
		const char *expr;
		double want;
	} cases[] = {
		{ "SQ_WAVES", 90 },                  /* a bare counter is the total over XCCs */
		{ "sum(SQ_WAVES, xcc)", 90 },
		{ "avg(SQ_WAVES, xcc)", 30 },
		{ "min(SQ_WAVES, xcc)", 10 },
		{ "max(SQ_WAVES, xcc)", 60 },
		{ "TCC_HIT", 21 },                   /* every instance of every XCC */
		{ "TCC_HIT[1]", 15 },
		{ "max(TCC_HIT, xcc)", 9 },          /* 3 + 6 */
		{ "min(TCC_HIT, xcc)", 5 },          /* 1 + 4 */
		{ "max(SQ_WAVES / TCC_HIT, xcc)", 60.0 / 9 }, /* 10/5, 20/7, 60/9 */
		{ "avg(SQ_WAVES / TCC_HIT, xcc)", (10.0 / 5 + 20.0 / 7 + 60.0 / 9) / 3 },
		{ "nxcc", 3 },
		{ "avg(nxcc, xcc)", 1 },             /* geometry follows the scope */
		{ "sum(1, xcc)", 3 },
		{ "max(min(SQ_WAVES, xcc), xcc)", 60 }, /* the inner min sees only the outer's XCC */
	};
	struct tframe t = { 0 };
	const struct spm_catalog *c942 = cat(SPM_GFX_942);
	struct mx_set *s = mkset(c942, cols, 3);
	static const double w[3] = { 10, 20, 60 };
	for (unsigned int x = 0; x < 3; x++) {
		put(s, &t, "SQ_WAVES", x, w[x]);
		put(s, &t, "TCC_HIT[0]", x, 1 + x);
		put(s, &t, "TCC_HIT[1]", x, 4 + x);
	}
	struct mx_frame f = frame(&t, 3);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char def[128];
		snprintf(def, sizeof(def), "M%zu = %s", i, cases[i].expr);
		double v = def_eval(s, def, &f, NULL);
		if (!near(v, cases[i].want))
			printf("\n    %s: %g, expected %g ", def, v, cases[i].want);
		CU_ASSERT(near(v, cases[i].want));
	}
	/* a metric evaluated inside a reduction is evaluated per XCC */
	def_eval(s, "RATIO = SQ_WAVES / TCC_HIT", &f, NULL);
	CU_ASSERT(near(def_eval(s, "MAXRATIO = max(RATIO, xcc)", &f, NULL), 60.0 / 9));
	mx_set_free(s);
}

/*
 * Per-SE columns on 2 XCCs x 4 SEs: SQ_WAVES[seK] = 1 + K + 10 x (XCC 0:
 * 1 2 3 4, XCC 1: 11 12 13 14; total 60); SQ_BUSY_CYCLES is summed only.
 */
static void reduce_se(void)
{
	static const char *const cols[] = { "SQ_WAVES[se0]", "SQ_WAVES[se1]", "SQ_WAVES[se2]",
					    "SQ_WAVES[se3]", "SQ_BUSY_CYCLES" };
	static const struct {
		const char *expr;
		double want;
	} cases[] = {
		{ "SQ_WAVES", 60 },
		{ "sum(SQ_WAVES, se)", 60 },
		{ "max(SQ_WAVES, se)", 14 },          /* over every SE of the GPU */
		{ "min(SQ_WAVES, se)", 1 },
		{ "avg(SQ_WAVES, se)", 7.5 },         /* 60 / 8 */
		{ "max(avg(SQ_WAVES, se), xcc)", 12.5 }, /* XCC 1: 50 / 4 */
		{ "min(max(SQ_WAVES, se), xcc)", 4 },
		{ "sum(SQ_WAVES[se2], xcc)", 16 },    /* 3 + 13 */
		{ "nse", 8 },
		{ "max(nse + 0 * SQ_WAVES, se)", 1 },
		{ "max(ncu + 0 * SQ_WAVES, se)", 10 }, /* 80 CUs / 8 SEs */
		{ "max(SQ_WAVES / inst(SQ_WAVES), se)", 14 },
	};
	struct tframe t = { 0 };
	struct mx_set *s = mkset(cat(SPM_GFX_942), cols, 5);
	for (unsigned int x = 0; x < 2; x++) {
		for (unsigned int k = 0; k < 4; k++) {
			char c[32];
			snprintf(c, sizeof(c), "SQ_WAVES[se%u]", k);
			put(s, &t, c, x, 1 + k + 10 * x);
		}
		put(s, &t, "SQ_BUSY_CYCLES", x, 100);
	}
	struct mx_frame f = frame(&t, 2);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char def[128];
		snprintf(def, sizeof(def), "M%zu = %s", i, cases[i].expr);
		double v = def_eval(s, def, &f, NULL);
		if (!near(v, cases[i].want))
			printf("\n    %s: %g, expected %g ", def, v, cases[i].want);
		CU_ASSERT(near(v, cases[i].want));
	}
	/* what cannot be reduced over SEs, and why */
	char err[512];
	CU_ASSERT_EQUAL(mx_set_add(s, "E1 = avg(SQ_BUSY_CYCLES, se)", err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "metric 'E1 = avg(SQ_BUSY_CYCLES, se)': column 10: avg(..., se) evaluates "
			       "its argument per SE, but SQ_BUSY_CYCLES has no per-SE columns: record with "
			       "--per-se to get SQ_BUSY_CYCLES[seK]");
	CU_ASSERT_EQUAL(mx_set_add(s, "E2 = max(SQ_WAVES[se1], se)", err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "metric 'E2 = max(SQ_WAVES[se1], se)': column 10: SQ_WAVES[se1] names one "
			       "SE, so max(..., se) cannot reduce it over SEs");
	CU_ASSERT_EQUAL(mx_set_add(s, "E3 = sum(3, se)", err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "metric 'E3 = sum(3, se)': column 6: sum(..., se) needs a counter in its "
			       "first argument: nothing in it varies by SE");
	CU_ASSERT(mx_set_add(s, "W = SQ_WAVES + SQ_BUSY_CYCLES", err, sizeof(err)) >= 0);
	CU_ASSERT_EQUAL(mx_set_add(s, "E4 = 1 + max(W, se)", err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "metric 'E4 = 1 + max(W, se)': column 14: max(..., se) evaluates its "
			       "argument per SE, but SQ_BUSY_CYCLES has no per-SE columns (through metric W): "
			       "record with --per-se to get SQ_BUSY_CYCLES[seK]");
	mx_set_free(s);
}

/* A recording with both NAME and NAME[seK] must not count anything twice. */
static void summed_column_preferred(void)
{
	static const char *const cols[] = { "SQ_WAVES", "SQ_WAVES[se0]", "SQ_WAVES[se1]", "TCC_HIT",
					    "TCC_HIT[0]", "TCC_HIT[1]" };
	struct tframe t = { 0 };
	struct mx_set *s = mkset(cat(SPM_GFX_942), cols, 6);
	put(s, &t, "SQ_WAVES", 0, 10);
	put(s, &t, "SQ_WAVES[se0]", 0, 3);
	put(s, &t, "SQ_WAVES[se1]", 0, 7);
	put(s, &t, "TCC_HIT", 0, 5);
	put(s, &t, "TCC_HIT[0]", 0, 2);
	put(s, &t, "TCC_HIT[1]", 0, 3);
	struct mx_frame f = frame(&t, 1);
	CU_ASSERT(near(def_eval(s, "A = SQ_WAVES", &f, NULL), 10));
	CU_ASSERT(near(def_eval(s, "B = max(SQ_WAVES, se)", &f, NULL), 7));
	CU_ASSERT(near(def_eval(s, "C = TCC_HIT", &f, NULL), 5));
	CU_ASSERT(near(def_eval(s, "D = TCC_HIT[1]", &f, NULL), 3));
	mx_set_free(s);
}

static void variables(void)
{
	static const char *const cols[] = { "SQ_WAVES" };
	struct tframe t = { 0 };
	struct mx_set *s = mkset(cat(SPM_GFX_942), cols, 1);
	struct mx_frame f = frame(&t, 2);
	f.interval = 1024;
	f.dt = 1.0 / 1048576; /* 2^-20 s */
	f.cu_count = 76;
	CU_ASSERT(near(def_eval(s, "I = interval", &f, NULL), 1024));
	CU_ASSERT(near(def_eval(s, "D = dt", &f, NULL), 1.0 / 1048576));
	CU_ASSERT(near(def_eval(s, "S = sclk", &f, NULL), 1073741824.0)); /* 2^10 / 2^-20 */
	CU_ASSERT(near(def_eval(s, "X = nxcc", &f, NULL), 2));
	CU_ASSERT(near(def_eval(s, "E = nse", &f, NULL), 8));
	CU_ASSERT(near(def_eval(s, "C = ncu", &f, NULL), 76));
	CU_ASSERT(near(def_eval(s, "CX = max(ncu, xcc)", &f, NULL), 38));
	/* unknown frame facts make what needs them missing, not 0 or NaN */
	bool miss;
	struct mx_value v;
	f.interval = 0;
	CU_ASSERT_EQUAL(mx_eval(s, (size_t)mx_set_find(s, "I"), &f, &v), 0);
	CU_ASSERT(v.missing && v.v == 0);
	CU_ASSERT_EQUAL(mx_eval(s, (size_t)mx_set_find(s, "S"), &f, &v), 0);
	CU_ASSERT(v.missing && v.v == 0);
	f.interval = 1024;
	f.dt = 0;
	CU_ASSERT_EQUAL(mx_eval(s, (size_t)mx_set_find(s, "S"), &f, &v), 0);
	CU_ASSERT(v.missing);
	f.dt = NAN;
	CU_ASSERT_EQUAL(mx_eval(s, (size_t)mx_set_find(s, "D"), &f, &v), 0);
	CU_ASSERT(v.missing && v.v == 0);
	f.dt = 1;
	f.se_per_xcc = 0;
	CU_ASSERT_EQUAL(mx_eval(s, (size_t)mx_set_find(s, "E"), &f, &v), 0);
	CU_ASSERT(v.missing);
	f.cu_count = 0;
	def_eval(s, "C2 = ncu + 1", &f, &miss);
	CU_ASSERT(miss);
	mx_set_free(s);
}

/*
 * inst(): the hardware counters behind the columns a reference sums, on
 * gfx942 (16 TCC channels per XCC), 2 XCCs, 4 SEs per XCC, 10 CUs per SE.
 */
static void instances(void)
{
	static const char *const cols[] = {
		"TCC_HIT",        /* every channel: 16 per XCC */
		"TCC_MISS[0]", "TCC_MISS[1]",
		"SQ_WAVES",       /* summed over 4 SEs */
		"TA_TA_BUSY",     /* 10 CUs x 4 SEs */
		"TD_TD_BUSY[0]", "TD_TD_BUSY[1]", /* one CU slot each, summed over SEs */
		"TCP_GATE_EN1[0][se0]", "TCP_GATE_EN1[0][se1]",
		"SQ_CYCLES[se0]", "SQ_CYCLES[se1]", "SQ_CYCLES[se2]", "SQ_CYCLES[se3]",
		"CPC_CPC_STAT_BUSY",
	};
	static const struct {
		const char *expr;
		double want;
	} cases[] = {
		{ "inst(TCC_HIT)", 32 },          /* 16 x 2 XCCs */
		{ "inst(TCC_MISS)", 4 },          /* 2 columns x 2 XCCs */
		{ "inst(TCC_MISS[1])", 2 },
		{ "inst(SQ_WAVES)", 8 },          /* 4 SEs x 2 */
		{ "inst(TA_TA_BUSY)", 80 },       /* 10 x 4 x 2 */
		{ "inst(TD_TD_BUSY)", 16 },       /* 2 x 4 x 2 */
		{ "inst(TCP_GATE_EN1)", 4 },      /* 2 per-SE columns x 2 */
		{ "inst(SQ_CYCLES)", 8 },
		{ "max(inst(SQ_CYCLES), se)", 1 },
		{ "max(inst(TCC_HIT), xcc)", 16 },
		{ "inst(CPC_CPC_STAT_BUSY)", 2 },
	};
	struct tframe t = { 0 };
	struct mx_set *s = mkset(cat(SPM_GFX_942), cols, sizeof(cols) / sizeof(cols[0]));
	struct mx_frame f = frame(&t, 2);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char def[128];
		snprintf(def, sizeof(def), "M%zu = %s", i, cases[i].expr);
		double v = def_eval(s, def, &f, NULL);
		if (!near(v, cases[i].want))
			printf("\n    %s: %g, expected %g ", def, v, cases[i].want);
		CU_ASSERT(near(v, cases[i].want));
	}
	/* per-CU blocks need the CUs per SE; SE blocks the SEs per XCC */
	struct mx_value v;
	f.cus_per_se = 0;
	CU_ASSERT_EQUAL(mx_eval(s, (size_t)mx_set_find(s, "M4"), &f, &v), 0);
	CU_ASSERT(v.missing);
	f.cus_per_se = 10;
	f.se_per_xcc = 0;
	CU_ASSERT_EQUAL(mx_eval(s, (size_t)mx_set_find(s, "M3"), &f, &v), 0);
	CU_ASSERT(v.missing);
	mx_set_free(s);

	/* gfx90a has 32 channels per XCC */
	static const char *const c90[] = { "TCC_HIT" };
	s = mkset(cat(SPM_GFX_90A), c90, 1);
	f = frame(&t, 1);
	CU_ASSERT(near(def_eval(s, "N = inst(TCC_HIT)", &f, NULL), 32));
	mx_set_free(s);

	/* without a catalog the instances are unknown: refused when defined */
	char err[512];
	s = mkset(NULL, c90, 1);
	CU_ASSERT_EQUAL(mx_set_add(s, "N = inst(TCC_HIT)", err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "metric 'N = inst(TCC_HIT)': column 10: inst(TCC_HIT): the number of "
			       "instances of TCC_HIT is unknown: no counter catalog was given");
	CU_ASSERT_EQUAL(mx_set_add(s, "N = inst(3)", err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "metric 'N = inst(3)': column 10: inst() takes a counter name, found the "
			       "number 3");
	CU_ASSERT_EQUAL(mx_set_add(s, "N = inst(dt)", err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "metric 'N = inst(dt)': column 10: inst() takes a counter name; dt is a "
			       "variable");
	mx_set_free(s);
}

/* ---- missing values ---- */

static void missing_propagates(void)
{
	static const char *const cols[] = { "TCC_HIT[0]", "TCC_HIT[1]", "TCC_MISS", "A", "B" };
	struct tframe t = { 0 };
	struct mx_set *s = mkset(cat(SPM_GFX_942), cols, 5);
	for (unsigned int x = 0; x < 2; x++) {
		put(s, &t, "TCC_HIT[0]", x, 10);
		put(s, &t, "TCC_HIT[1]", x, 20);
		put(s, &t, "TCC_MISS", x, 5);
	}
	t.miss[1][col_of(s, "TCC_HIT[1]")] = true; /* saturated in XCC 1 */
	struct mx_frame f = frame(&t, 2);
	bool miss;
	double v;
	v = def_eval(s, "H = TCC_HIT", &f, &miss);
	CU_ASSERT(miss && v == 0);
	def_eval(s, "R = 100 * TCC_HIT / (TCC_HIT + TCC_MISS)", &f, &miss);
	CU_ASSERT(miss);
	def_eval(s, "Z = 0 * TCC_HIT", &f, &miss);   /* no short cut: 0 x missing is missing */
	CU_ASSERT(miss);
	def_eval(s, "MX = max(TCC_HIT, xcc)", &f, &miss);
	CU_ASSERT(miss);
	def_eval(s, "N = -TCC_HIT", &f, &miss);
	CU_ASSERT(miss);
	def_eval(s, "USE = H + 1", &f, &miss);      /* through a metric */
	CU_ASSERT(miss);
	CU_ASSERT(near(def_eval(s, "H0 = TCC_HIT[0]", &f, &miss), 20));
	CU_ASSERT_FALSE(miss);
	CU_ASSERT(near(def_eval(s, "M = TCC_MISS", &f, &miss), 10));
	CU_ASSERT_FALSE(miss);
	/* a value the frame hands over as NaN or infinite is missing too */
	put(s, &t, "A", 0, NAN);
	put(s, &t, "A", 1, 1);
	put(s, &t, "B", 0, INFINITY);
	put(s, &t, "B", 1, 1);
	def_eval(s, "NA = A", &f, &miss);
	CU_ASSERT(miss);
	def_eval(s, "NB = B - B", &f, &miss);
	CU_ASSERT(miss);
	mx_set_free(s);
}

static void division_by_zero(void)
{
	static const char *const cols[] = { "A", "B" };
	struct tframe t = { 0 };
	struct mx_set *s = mkset(NULL, cols, 2);
	put(s, &t, "A", 0, 3);
	put(s, &t, "B", 0, 0);
	struct mx_frame f = frame(&t, 1);
	bool miss;
	double v = def_eval(s, "D1 = A / B", &f, &miss);
	CU_ASSERT(miss && v == 0);
	def_eval(s, "D2 = B / B", &f, &miss); /* 0 / 0 */
	CU_ASSERT(miss);
	def_eval(s, "D3 = 1 / 0", &f, &miss); /* compiles; missing when evaluated */
	CU_ASSERT(miss);
	def_eval(s, "D4 = A / -B", &f, &miss); /* -0 is zero too */
	CU_ASSERT(miss);
	def_eval(s, "D5 = 1e300 * 1e300", &f, &miss); /* overflow: not finite */
	CU_ASSERT(miss);
	def_eval(s, "D6 = 1e300 * 1e300 - 1e300 * 1e300", &f, &miss);
	CU_ASSERT(miss);
	def_eval(s, "D7 = avg(A / B, xcc)", &f, &miss);
	CU_ASSERT(miss);
	CU_ASSERT(near(def_eval(s, "D8 = B / A", &f, &miss), 0));
	CU_ASSERT_FALSE(miss);
	mx_set_free(s);
}

/* ---- errors at definition time ---- */

static void error_messages(void)
{
	static const char *const cols[] = {
		"TCC_HIT[0]", "TCC_HIT[1]", "TCC_HIT[2]", "TCC_HIT[3]", "TCC_HIT[4]", "TCC_HIT[5]",
		"TCC_HIT[6]", "TCC_HIT[7]", "TCC_HIT[8]", "TCC_HIT[9]", "TCC_HIT[10]", "TCC_HIT[11]",
		"TCC_HIT[12]", "TCC_HIT[13]", "TCC_HIT[14]", "TCC_HIT[15]", "TCC_MISS", "SQ_WAVES",
	};
	static const struct {
		const char *def;
		int rc;
		const char *msg;
	} cases[] = {
		{ "X=1+", -EINVAL, "metric 'X=1+': column 5: expected a number, a name, '(' or '-', found the end "
		  "of the definition" },
		{ "X =", -EINVAL, "metric 'X =': column 4: expected a number, a name, '(' or '-', found the end of "
		  "the definition" },
		{ "X = (1 + 2", -EINVAL, "metric 'X = (1 + 2': column 11: expected ')' to close the '(' at column "
		  "5, found the end of the definition" },
		{ "X = 1 + 2)", -EINVAL, "metric 'X = 1 + 2)': column 10: unmatched ')'" },
		{ "X = 1 2", -EINVAL, "metric 'X = 1 2': column 7: expected an operator (+ - * /) or the end of the "
		  "definition, found the number 2" },
		{ "X = 1 * * 2", -EINVAL, "metric 'X = 1 * * 2': column 9: expected a number, a name, '(' or '-', "
		  "found '*'" },
		{ "X = 1 + # half", -EINVAL, "metric 'X = 1 + # half': column 9: expected a number, a name, '(' or "
		  "'-', found '#' (a comment)" },
		{ "3X = 1", -EINVAL, "metric '3X = 1': column 1: expected a metric name (a letter or '_', then "
		  "letters, digits or '_') at the start of the definition, found '3X'" },
		{ "= 1", -EINVAL, "metric '= 1': column 1: expected a metric name (a letter or '_', then letters, "
		  "digits or '_') at the start of the definition, found '='" },
		{ "X[1] = 2", -EINVAL, "metric 'X[1] = 2': column 1: expected a metric name (a letter or '_', then "
		  "letters, digits or '_') at the start of the definition, found the name X[1]" },
		{ "X 1", -EINVAL, "metric 'X 1': column 3: expected '=' after the metric name X, found the number 1" },
		{ "X = TCC_HTI", -ENOENT, "metric 'X = TCC_HTI': column 5: unknown name TCC_HTI; did you mean "
		  "TCC_HIT?" },
		{ "X = 2 * tcc_miss", -ENOENT, "metric 'X = 2 * tcc_miss': column 9: unknown name tcc_miss; did you "
		  "mean TCC_MISS?" },
		{ "X = TCC_HIT[33]", -ENOENT, "metric 'X = TCC_HIT[33]': column 5: unknown column TCC_HIT[33]; did "
		  "you mean TCC_HIT, TCC_HIT[3] or TCC_HIT[13]?" },
		{ "X = SQ_WAVES[se0]", -ENOENT, "metric 'X = SQ_WAVES[se0]': column 5: unknown column "
		  "SQ_WAVES[se0]; did you mean SQ_WAVES?" },
		{ "X = intervl", -ENOENT, "metric 'X = intervl': column 5: unknown name intervl; did you mean "
		  "interval?" },
		{ "X = FOO_BAR_BAZ", -ENOENT, "metric 'X = FOO_BAR_BAZ': column 5: unknown name FOO_BAR_BAZ: no "
		  "column of the recording, metric defined before it or variable has that name" },
		{ "X = mx(SQ_WAVES, xcc)", -ENOENT, "metric 'X = mx(SQ_WAVES, xcc)': column 5: unknown function mx; "
		  "did you mean max?" },
		{ "X = frob(SQ_WAVES, xcc)", -ENOENT, "metric 'X = frob(SQ_WAVES, xcc)': column 5: unknown function "
		  "frob (the functions are sum, avg, min, max and inst)" },
		{ "X = sum(SQ_WAVES)", -EINVAL, "metric 'X = sum(SQ_WAVES)': column 17: expected ',' and a dimension "
		  "(xcc or se) after the first argument of sum(, found ')'" },
		{ "X = sum(SQ_WAVES, cu)", -EINVAL, "metric 'X = sum(SQ_WAVES, cu)': column 19: unknown dimension cu: "
		  "expected xcc or se" },
		{ "X = sum(SQ_WAVES, 1)", -EINVAL, "metric 'X = sum(SQ_WAVES, 1)': column 19: expected a dimension "
		  "(xcc or se), found the number 1" },
		{ "X = avg(SQ_WAVES, xcc", -EINVAL, "metric 'X = avg(SQ_WAVES, xcc': column 22: expected ')' to "
		  "close avg( at column 5, found the end of the definition" },
		{ "X = xcc", -EINVAL, "metric 'X = xcc': column 5: xcc is a dimension: it can only be the second "
		  "argument of sum, avg, min or max" },
		{ "X = sum + 1", -EINVAL, "metric 'X = sum + 1': column 5: sum is a function: expected '(' after it" },
		{ "X = 2 \xC3\x97 3", -EINVAL, "metric 'X = 2 \xC3\x97 3': column 7: use the ASCII operator * for "
		  "\xC3\x97" },
		{ "X = \xC3\x97 @", -EINVAL, "metric 'X = \xC3\x97 @': column 5: use the ASCII operator * for \xC3\x97" },
		{ "X = 1 @ 2", -EINVAL, "metric 'X = 1 @ 2': column 7: unexpected character '@'" },
		{ "X = 1e", -EINVAL, "metric 'X = 1e': column 5: malformed number: expected digits after the "
		  "exponent" },
		{ "X = 0x10", -EINVAL, "metric 'X = 0x10': column 5: malformed number (decimal digits, an optional "
		  "fraction and exponent)" },
		{ "X = 1e999", -EINVAL, "metric 'X = 1e999': column 5: number out of range" },
		{ "X = TCC_HIT[", -EINVAL, "metric 'X = TCC_HIT[': column 12: expected ']' to close this '[' (a "
		  "bracket holds an instance N or seN)" },
		{ "X = TCC_HIT[]", -EINVAL, "metric 'X = TCC_HIT[]': column 12: empty brackets: expected an instance "
		  "N or seN inside" },
		{ "interval = 3", -EINVAL, "metric 'interval = 3': column 1: interval is a variable; a metric needs a "
		  "name of its own" },
		{ "max = 3", -EINVAL, "metric 'max = 3': column 1: max is a function; a metric needs a name of its "
		  "own" },
		{ "se = 3", -EINVAL, "metric 'se = 3': column 1: se is a dimension; a metric needs a name of its own" },
		{ "TCC_HIT = 3", -EINVAL, "metric 'TCC_HIT = 3': column 1: TCC_HIT is a counter column; a metric "
		  "needs a name of its own" },
		{ "X = X + 1", -ELOOP, "metric 'X = X + 1': column 5: X uses itself: a metric cannot refer to its own "
		  "value" },
		{ "  X = 1\n", -EINVAL, "metric '  X = 1\n': column 8: unexpected control byte 0x0a" },
		{ "LONG_NAME_TO_SHOW_THE_CUT = 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10 + 11 + )", -EINVAL,
		  "metric 'LONG_NAME_TO_SHOW_THE_CUT = 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + ...': column 75: expected a "
		  "number, a name, '(' or '-', found ')'" },
	};
	struct mx_set *s = mkset(cat(SPM_GFX_942), cols, sizeof(cols) / sizeof(cols[0]));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[512] = "";
		int rc = mx_set_add(s, cases[i].def, err, sizeof(err));
		if (rc != cases[i].rc || strcmp(err, cases[i].msg))
			printf("\n    %s\n      got %d \"%s\"\n      want %d \"%s\" ", cases[i].def, rc, err,
			       cases[i].rc, cases[i].msg);
		CU_ASSERT_EQUAL(rc, cases[i].rc);
		CU_ASSERT_STRING_EQUAL(err, cases[i].msg);
	}
	CU_ASSERT_EQUAL(mx_set_count(s), 0); /* nothing half-defined stays */

	/* redefinition */
	char err[512];
	CU_ASSERT_EQUAL(mx_set_add(s, "L2 = 1", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(mx_set_add(s, "L2 = 2", err, sizeof(err)), -EEXIST);
	CU_ASSERT_STRING_EQUAL(err, "metric 'L2 = 2': column 1: L2 is already defined");
	/* a metric defined later: from the command line it is simply unknown, with its close names */
	CU_ASSERT_EQUAL(mx_set_add(s, "Y = L3 + 1", err, sizeof(err)), -ENOENT);
	CU_ASSERT_STRING_EQUAL(err, "metric 'Y = L3 + 1': column 5: unknown name L3; did you mean L2?");
	CU_ASSERT_EQUAL(mx_set_count(s), 1);

	/* nesting and cost bounds */
	char deep[256];
	int n = snprintf(deep, sizeof(deep), "DEEP = ");
	for (int i = 0; i < 70; i++)
		deep[n++] = '(';
	deep[n++] = '1';
	for (int i = 0; i < 70; i++)
		deep[n++] = ')';
	deep[n] = 0;
	CU_ASSERT_EQUAL(mx_set_add(s, deep, err, sizeof(err)), -E2BIG);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "column 72: nested too deeply (more than 64 parentheses, calls or "
					  "unary minus)"));
	/* each level doubles the work: M0 = SQ_WAVES, Mk = M(k-1) + M(k-1) */
	CU_ASSERT(mx_set_add(s, "C0 = SQ_WAVES", err, sizeof(err)) >= 0);
	int k, rc = 0;
	for (k = 1; k < 40; k++) {
		char d[64];
		snprintf(d, sizeof(d), "C%d = C%d + C%d", k, k - 1, k - 1);
		if ((rc = mx_set_add(s, d, err, sizeof(err))) < 0)
			break;
	}
	/* cost(C0) = 2, cost(Ck) = 2 cost(C(k-1)) + 1 = 3 * 2^k - 1 > 1e6 from k = 19 */
	CU_ASSERT_EQUAL(rc, -E2BIG);
	CU_ASSERT_EQUAL(k, 19);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "column 11: too costly: about 1.57e+06 operations per evaluation"));
	mx_set_free(s);
}

/* ---- metrics files ---- */

static const char *const file_cols[] = { "TCC_HIT", "TCC_MISS" };

static void file_text(void)
{
	static const char text[] = "# L2 metrics\n"
				   "   \n"
				   "HIT = 100 * TCC_HIT / (TCC_HIT + TCC_MISS)   # L2 hit rate\r\n"
				   "\tMISS=100-HIT\n"
				   "#   the end";
	struct tframe t = { 0 };
	struct mx_set *s = mkset(cat(SPM_GFX_942), file_cols, 2);
	char err[512];
	CU_ASSERT_EQUAL(mx_set_add_text(s, text, strlen(text), "l2.txt", err, sizeof(err)), 2);
	struct mx_info in;
	CU_ASSERT_EQUAL(mx_set_info(s, 0, &in), 0);
	CU_ASSERT_STRING_EQUAL(in.name, "HIT");
	CU_ASSERT_STRING_EQUAL(in.expr, "100 * TCC_HIT / (TCC_HIT + TCC_MISS)");
	CU_ASSERT_STRING_EQUAL(in.desc, "L2 hit rate");
	CU_ASSERT_STRING_EQUAL(in.unit, "");
	CU_ASSERT_STRING_EQUAL(in.origin, "l2.txt:3");
	CU_ASSERT_EQUAL(mx_set_info(s, 1, &in), 0);
	CU_ASSERT_STRING_EQUAL(in.expr, "100-HIT");
	CU_ASSERT_STRING_EQUAL(in.desc, "");
	CU_ASSERT_STRING_EQUAL(in.origin, "l2.txt:4");
	CU_ASSERT_EQUAL(mx_set_info(s, 2, &in), -EINVAL);
	CU_ASSERT_EQUAL(mx_set_find(s, "MISS"), 1);
	CU_ASSERT_EQUAL(mx_set_find(s, "NOPE"), -ENOENT);
	put(s, &t, "TCC_HIT", 0, 30);
	put(s, &t, "TCC_MISS", 0, 10);
	struct mx_frame f = frame(&t, 1);
	struct mx_value v;
	CU_ASSERT_EQUAL(mx_eval(s, 1, &f, &v), 0);
	CU_ASSERT(!v.missing && near(v.v, 25)); /* 100 - 75 */

	/* errors: file:line:column, and nothing of the failed text stays */
	static const struct {
		const char *text;
		int rc;
		const char *msg;
	} bad[] = {
		{ "A = 1\n\n# x\nB = 2 * HTT\n", -ENOENT, "f.txt:4:9: unknown name HTT; did you mean HIT?" },
		{ "A = B + 1\nB = 2\n", -ENOENT, "f.txt:1:5: B is used before its definition on line 2; define it "
		  "first" },
		{ "A = B + 1\nB = C * 2\nC = A\n", -ELOOP, "f.txt:1:5: cycle A -> B (line 2) -> C (line 3) -> A: "
		  "metrics cannot depend on each other" },
		{ "A = 1 + B\nB = A\n", -ELOOP, "f.txt:1:9: cycle A -> B (line 2) -> A: metrics cannot depend on each "
		  "other" },
		{ "A = 1\nA = 2\n", -EEXIST, "f.txt:2:1: A is already defined at f.txt:1" },
		{ "HIT = 3\n", -EEXIST, "f.txt:1:1: HIT is already defined at l2.txt:3" },
		{ "A = 1\n  B = (2\n", -EINVAL, "f.txt:2:9: expected ')' to close the '(' at column 7, found the end "
		  "of the definition" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = mx_set_add_text(s, bad[i].text, strlen(bad[i].text), "f.txt", err, sizeof(err));
		if (rc != bad[i].rc || strcmp(err, bad[i].msg))
			printf("\n    got %d \"%s\"\n    want %d \"%s\" ", rc, err, bad[i].rc, bad[i].msg);
		CU_ASSERT_EQUAL(rc, bad[i].rc);
		CU_ASSERT_STRING_EQUAL(err, bad[i].msg);
		CU_ASSERT_EQUAL(mx_set_count(s), 2);
		CU_ASSERT_EQUAL(mx_set_find(s, "A"), -ENOENT);
	}
	/* empty and comment-only texts add nothing */
	CU_ASSERT_EQUAL(mx_set_add_text(s, "", 0, "e.txt", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(mx_set_add_text(s, "# only\n\n", strlen("# only\n\n"), "e.txt", err, sizeof(err)), 0);
	mx_set_free(s);
}

static void file_read(void)
{
	char path[] = "/tmp/test_metrics_XXXXXX";
	int fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	static const char text[] = "HIT = 100 * TCC_HIT / (TCC_HIT + TCC_MISS)\nBAD = HIT +\n";
	CU_ASSERT_EQUAL(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	struct mx_set *s = mkset(cat(SPM_GFX_942), file_cols, 2);
	char err[512], want[600];
	CU_ASSERT_EQUAL(mx_set_add_file(s, path, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:2:12: expected a number, a name, '(' or '-', found the end of the "
		 "definition", path);
	CU_ASSERT_STRING_EQUAL(err, want);
	CU_ASSERT_EQUAL(mx_set_count(s), 0);
	/* the good half alone */
	FILE *f = fopen(path, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs("HIT = 100 * TCC_HIT / (TCC_HIT + TCC_MISS)\n", f);
	fclose(f);
	CU_ASSERT_EQUAL(mx_set_add_file(s, path, err, sizeof(err)), 1);
	struct mx_info in;
	CU_ASSERT_EQUAL(mx_set_info(s, 0, &in), 0);
	snprintf(want, sizeof(want), "%s:1", path);
	CU_ASSERT_STRING_EQUAL(in.origin, want);
	unlink(path);
	CU_ASSERT_EQUAL(mx_set_add_file(s, path, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "%s: No such file or directory", path);
	CU_ASSERT_STRING_EQUAL(err, want);
	mx_set_free(s);
}

/* ---- built-ins ---- */

struct bin {
	const char *name;
	double want;
	struct {
		const char *ctr;
		double x0, x1;
	} in[4];
};

/*
 * gfx942, bare columns (each the XCC's sum over SEs and instances), 2 XCCs,
 * 4 SEs per XCC, 10 CUs per SE, ncu = 80, interval = 1000, dt = 0.5 s.
 * Instances over the frame: TA/TD/TCP 10 x 4 x 2 = 80, TCC 16 x 2 = 32,
 * TCA 32 x 2 = 64, SPI/SQ 4 x 2 = 8, CPC/CPF 1 x 2 = 2.
 */
static const struct bin b942[] = {
	{ "TABusy", 50, { { "TA_TA_BUSY", 10000, 30000 } } },          /* 100 * 40000 / (1000 * 80) */
	{ "TDBusy", 30, { { "TD_TD_BUSY", 20000, 4000 } } },           /* 24000 / 80000 */
	{ "TCCBusy", 50, { { "TCC_BUSY", 8000, 8000 } } },             /* 16000 / 32000 */
	{ "TCABusy", 25, { { "TCA_BUSY", 16000, 0 } } },               /* 16000 / 64000 */
	{ "SPIBusy", 25, { { "SPI_CSN_BUSY", 1000, 1000 } } },         /* 2000 / 8000 */
	{ "SQBusy", 75, { { "SQ_BUSY_CYCLES", 3000, 3000 }, { "SQ_CYCLES", 4000, 4000 } } },
	{ "CPCBusy", 20, { { "CPC_CPC_STAT_BUSY", 300, 100 }, { "CPC_CPC_STAT_IDLE", 700, 900 } } }, /* 400/2000 */
	{ "CPFBusy", 100, { { "CPF_CPF_STAT_BUSY", 1000, 1000 }, { "CPF_CPF_STAT_IDLE", 0, 0 } } },
	{ "VALUBusy", 25, { { "SQ_ACTIVE_INST_VALU", 8000, 12000 } } }, /* 20000 / (1000 * 80) */
	{ "L2CacheHit", 80, { { "TCC_HIT", 300, 500 }, { "TCC_MISS", 100, 100 } } },  /* 800 / 1000 */
	{ "WavesPerCycle", 0.25, { { "SQ_WAVES", 100, 150 } } },       /* 250 / 1000 */
	{ "MeanOccupancy", 3, { { "SQ_WAVE_CYCLES", 20000, 40000 } } }, /* 4 * 60000 / 80000 */
	{ "IPC_VALU", 0.5, { { "SQ_INSTS_VALU", 16000, 24000 } } },    /* 40000 / 80000 */
	{ "IPC_SALU", 0.1, { { "SQ_INSTS_SALU", 4000, 4000 } } },
	{ "IPC_SMEM", 0.02, { { "SQ_INSTS_SMEM", 800, 800 } } },
	{ "IPC_VMEM_RD", 0.1, { { "SQ_INSTS_VMEM_RD", 2000, 6000 } } },
	{ "IPC_VMEM_WR", 0.005, { { "SQ_INSTS_VMEM_WR", 400, 0 } } },
	{ "IPC_LDS", 0.1, { { "SQ_INSTS_LDS", 8000, 0 } } },
	{ "IPC_FLAT", 0.04, { { "SQ_INSTS_FLAT", 1600, 1600 } } },
	{ "IPC_MFMA", 0.5, { { "SQ_INSTS_MFMA", 20000, 20000 } } },
	{ "VALUInsts", 100, { { "SQ_INSTS_VALU", 1000, 3000 }, { "SQ_WAVES", 10, 30 } } },
	{ "SALUInsts", 25, { { "SQ_INSTS_SALU", 500, 500 }, { "SQ_WAVES", 20, 20 } } },
	{ "SFetchInsts", 3, { { "SQ_INSTS_SMEM", 60, 60 }, { "SQ_WAVES", 10, 30 } } },
	{ "VFetchInsts", 20, { { "SQ_INSTS_VMEM_RD", 500, 700 }, { "TA_FLAT_READ_WAVEFRONTS", 100, 300 },
			       { "SQ_WAVES", 20, 20 } } },                /* (1200 - 400) / 40 */
	{ "VWriteInsts", 2, { { "SQ_INSTS_VMEM_WR", 90, 110 }, { "TA_FLAT_WRITE_WAVEFRONTS", 40, 60 },
			      { "SQ_WAVES", 25, 25 } } },                 /* (200 - 100) / 50 */
	{ "LDSBankConflict", 10, { { "SQ_LDS_BANK_CONFLICT", 4000, 4000 } } }, /* 8000 / 80000 */
	{ "TDTCStall", 10, { { "TD_TC_STALL", 8000, 0 } } },           /* 8000 / 80000 */
	{ "TDSPIStall", 2, { { "TD_SPI_STALL", 800, 800 } } },
	{ "TCPPendingStall", 50, { { "TCP_PENDING_STALL_CYCLES", 40000, 0 } } },
	{ "TCPTADataStall", 10, { { "TCP_TCP_TA_DATA_STALL_CYCLES", 4000, 4000 } } },
	{ "TCCTagStall", 5, { { "TCC_TAG_STALL", 1600, 0 } } },         /* 1600 / 32000 */
	{ "CPCUTCL1Stall", 25, { { "CPC_UTCL1_STALL_ON_TRANSLATION", 500, 0 } } }, /* 500 / 2000 */
	{ "CPFUTCL1Stall", 10, { { "CPF_CMP_UTCL1_STALL_ON_TRANSLATION", 100, 100 } } },
	{ "SPIAllocStall", 10, { { "SPI_RA_REQ_NO_ALLOC_CSN", 400, 400 } } }, /* 800 / 8000 */
	{ "SPISIMDFull", 100, { { "SPI_RA_WAVE_SIMD_FULL_CSN", 4000, 4000 } } },
	{ "EARdReqPerSec", 8000, { { "TCC_EA0_RDREQ", 1000, 3000 } } }, /* 4000 / 0.5 s */
	{ "EAWrReqPerSec", 1000, { { "TCC_EA0_WRREQ", 250, 250 } } },
	{ NULL, 0, { { NULL, 0, 0 } } },
};

/*
 * gfx90a, one XCC (GCD), 8 SEs, 13 CUs per SE, ncu = 104, interval = 1000,
 * dt = 0.25 s: the rows whose instances or counters differ from gfx942.
 */
static const struct bin b90a[] = {
	{ "TABusy", 25, { { "TA_TA_BUSY", 26000, 0 } } },              /* 26000 / (1000 * 104) */
	{ "TCCBusy", 25, { { "TCC_BUSY", 8000, 0 } } },                /* 32 channels: 8000 / 32000 */
	{ "TCABusy", 50, { { "TCA_BUSY", 16000, 0 } } },               /* 16000 / 32000 */
	{ "EARdReqPerSec", 2000, { { "TCC_EA_RDREQ", 500, 0 } } },     /* 500 / 0.25 s */
	{ "EAWrReqPerSec", 400, { { "TCC_EA_WRREQ", 100, 0 } } },
	/* 32 requests of 32 B and 32 of 64 B: 1024 + 2048 B = 3 KiB */
	{ "FETCH_SIZE", 3, { { "TCC_EA_RDREQ_32B", 32, 0 }, { "TCC_EA_RDREQ", 64, 0 } } },
	{ "FetchBW", 12288, { { "TCC_EA_RDREQ_32B", 32, 0 }, { "TCC_EA_RDREQ", 64, 0 } } }, /* 3072 B / 0.25 s */
	{ "L2CacheHit", 50, { { "TCC_HIT", 7, 0 }, { "TCC_MISS", 7, 0 } } },
	{ NULL, 0, { { NULL, 0, 0 } } },
};

static void check_builtins(enum spm_gfx g, const struct bin *tab, struct mx_frame f, size_t want_count)
{
	struct tframe t;
	char err[512];
	struct mx_set *s = mkset(cat(g), NULL, 0); /* one bare column per catalog counter */
	int n = mx_set_add_builtins(s, err, sizeof(err));
	if (n < 0)
		printf("\n    %s ", err);
	CU_ASSERT_EQUAL(n, (int)want_count);
	f.user = &t;
	for (const struct bin *b = tab; b->name; b++) {
		int i = mx_set_find(s, b->name);
		CU_ASSERT_FATAL(i >= 0);
		memset(&t, 0, sizeof(t));
		for (int k = 0; k < 4 && b->in[k].ctr; k++) {
			put(s, &t, b->in[k].ctr, 0, b->in[k].x0);
			put(s, &t, b->in[k].ctr, 1, b->in[k].x1);
		}
		struct mx_value v;
		CU_ASSERT_EQUAL(mx_eval(s, (size_t)i, &f, &v), 0);
		if (v.missing || !near(v.v, b->want))
			printf("\n    %s: %g%s, expected %g ", b->name, v.v, v.missing ? " (missing)" : "", b->want);
		CU_ASSERT_FALSE(v.missing);
		CU_ASSERT(near(v.v, b->want));
		struct mx_info in;
		CU_ASSERT_EQUAL(mx_set_info(s, (size_t)i, &in), 0);
		CU_ASSERT_STRING_EQUAL(in.origin, "built-in");
		CU_ASSERT(in.unit[0] && in.desc[0]);
	}
	mx_set_free(s);
}

static void builtins_gfx942(void)
{
	struct mx_frame f = { .nxcc = 2, .interval = 1000, .dt = 0.5, .se_per_xcc = 4, .cus_per_se = 10,
			      .cu_count = 80, .value = tf_value };
	size_t rows = 0;
	for (const struct bin *b = b942; b->name; b++)
		rows++;
	/* every built-in of gfx942 has a row above: 35 shared, 2 with TCC_EA0_* */
	CU_ASSERT_EQUAL(rows, 37);
	check_builtins(SPM_GFX_942, b942, f, 37);
	/* and none is missing from the rows: each name is tested */
	struct mx_set *s = mkset(cat(SPM_GFX_942), NULL, 0);
	char err[256];
	CU_ASSERT_EQUAL(mx_set_add_builtins(s, err, sizeof(err)), 37);
	for (size_t i = 0; i < mx_set_count(s); i++) {
		struct mx_info in;
		bool found = false;
		mx_set_info(s, i, &in);
		for (const struct bin *b = b942; b->name; b++)
			found |= !strcmp(b->name, in.name);
		if (!found)
			printf("\n    built-in %s has no test row ", in.name);
		CU_ASSERT(found);
	}
	/* gfx90a-only rows are not offered on gfx942 */
	CU_ASSERT_EQUAL(mx_set_find(s, "FETCH_SIZE"), -ENOENT);
	CU_ASSERT_EQUAL(mx_set_info(s, (size_t)mx_set_find(s, "EARdReqPerSec"), &(struct mx_info){ 0 }), 0);
	mx_set_free(s);
}

static void builtins_gfx90a(void)
{
	struct mx_frame f = { .nxcc = 1, .interval = 1000, .dt = 0.25, .se_per_xcc = 8, .cus_per_se = 13,
			      .cu_count = 104, .value = tf_value };
	/* 35 shared + TCC_EA_* rates + FETCH_SIZE + FetchBW */
	check_builtins(SPM_GFX_90A, b90a, f, 39);
	struct mx_set *s = mkset(cat(SPM_GFX_90A), NULL, 0);
	char err[256];
	CU_ASSERT_EQUAL(mx_set_add_builtins(s, err, sizeof(err)), 39);
	struct mx_info in;
	CU_ASSERT_EQUAL(mx_set_info(s, (size_t)mx_set_find(s, "EARdReqPerSec"), &in), 0);
	CU_ASSERT_STRING_EQUAL(in.expr, "TCC_EA_RDREQ / dt");
	mx_set_free(s);
}

/* Only what the recording streamed; the user's definition wins; per-SE columns agree with sums. */
static void builtins_recorded(void)
{
	const char *cols[32 + 4 * 10 * 4];
	char names[32 + 4 * 10 * 4][32];
	size_t n = 0;
	for (int i = 0; i < 16; i++) {
		snprintf(names[n], sizeof(names[n]), "TCC_HIT[%d]", i);
		cols[n] = names[n], n++;
		snprintf(names[n], sizeof(names[n]), "TCC_MISS[%d]", i);
		cols[n] = names[n], n++;
	}
	for (int i = 0; i < 10; i++) {
		for (int k = 0; k < 4; k++) {
			snprintf(names[n], sizeof(names[n]), "TA_TA_BUSY[%d][se%d]", i, k);
			cols[n] = names[n], n++;
		}
	}
	struct tframe t = { 0 };
	char err[256];
	struct mx_set *s = mkset(cat(SPM_GFX_942), cols, n);
	CU_ASSERT_EQUAL(mx_set_add(s, "L2CacheHit = 42", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(mx_set_add_builtins(s, err, sizeof(err)), 1); /* TABusy only */
	CU_ASSERT_EQUAL(mx_set_count(s), 2);
	CU_ASSERT_EQUAL(mx_set_find(s, "TCCBusy"), -ENOENT);
	for (size_t c = 0; c < n; c++) {
		if (!strncmp(cols[c], "TA_TA_BUSY", 10)) {
			t.v[0][c] = 250; /* 40 per-SE columns: 10000 per XCC */
			t.v[1][c] = 750; /* 30000 */
		}
	}
	struct mx_frame f = frame(&t, 2);
	struct mx_value v;
	CU_ASSERT_EQUAL(mx_eval(s, (size_t)mx_set_find(s, "TABusy"), &f, &v), 0);
	CU_ASSERT(!v.missing && near(v.v, 50)); /* as with the bare column: 40000 / (1000 * 80) */
	CU_ASSERT_EQUAL(mx_eval(s, (size_t)mx_set_find(s, "L2CacheHit"), &f, &v), 0);
	CU_ASSERT(!v.missing && near(v.v, 42));
	mx_set_free(s);

	s = mkset(NULL, cols, n);
	CU_ASSERT_EQUAL(mx_set_add_builtins(s, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "metrics: the built-ins need the GPU's counter catalog");
	mx_set_free(s);
}

/* docs/metrics.md lists every built-in with its definition, verbatim. */
static void builtins_documented(void)
{
	char path[512];
	snprintf(path, sizeof(path), "%s", __FILE__);
	char *slash = strrchr(path, '/');
	snprintf(slash ? slash + 1 : path, sizeof(path) - (size_t)(slash ? slash + 1 - path : 0),
		 "../docs/metrics.md");
	FILE *f = fopen(path, "r");
	CU_ASSERT_FATAL(f != NULL);
	static char doc[1 << 17];
	size_t len = fread(doc, 1, sizeof(doc) - 1, f);
	fclose(f);
	doc[len] = 0;
	size_t n;
	const struct mx_builtin *b = mx_builtins(&n);
	for (size_t i = 0; i < n; i++) {
		char row[600];
		snprintf(row, sizeof(row), "| `%s` | `%s` | %s |", b[i].name, b[i].expr, b[i].unit);
		if (!strstr(doc, row))
			printf("\n    docs/metrics.md lacks the row: %s ", row);
		CU_ASSERT_PTR_NOT_NULL(strstr(doc, row));
	}
}

/* ---- per sample and per phase ---- */

/*
 * Two samples of one XCC.  Sample 1: 9 hits, 1 miss (90 %); sample 2: 100
 * hits, 900 misses (10 %).  The mean of the per-sample rates is 50 %, but
 * the phase's hit rate is 109 / 1010 = 10.79 %: its frame holds the sums.
 * TCC busy likewise: 16000 busy cycles over 16 channels x 1000 cycles
 * (100 %), then 0: the phase (interval = 2000) is 50 %.
 */
static void phase_is_ratio_of_sums(void)
{
	static const char *const cols[] = { "TCC_HIT", "TCC_MISS", "TCC_BUSY" };
	static const double hit[2] = { 9, 100 }, miss[2] = { 1, 900 }, busy[2] = { 16000, 0 };
	struct tframe t = { 0 }, phase = { 0 };
	char err[256];
	struct mx_set *s = mkset(cat(SPM_GFX_942), cols, 3);
	CU_ASSERT_EQUAL(mx_set_add_builtins(s, err, sizeof(err)), 2); /* L2CacheHit, TCCBusy */
	int ih = mx_set_find(s, "L2CacheHit"), ib = mx_set_find(s, "TCCBusy");
	CU_ASSERT_FATAL(ih >= 0 && ib >= 0);
	double mean_h = 0, mean_b = 0;
	for (int k = 0; k < 2; k++) {
		struct mx_frame f = frame(&t, 1);
		f.interval = 1000;
		f.dt = 1e-6;
		put(s, &t, "TCC_HIT", 0, hit[k]);
		put(s, &t, "TCC_MISS", 0, miss[k]);
		put(s, &t, "TCC_BUSY", 0, busy[k]);
		struct mx_value v;
		mx_eval(s, (size_t)ih, &f, &v);
		mean_h += v.v / 2;
		mx_eval(s, (size_t)ib, &f, &v);
		mean_b += v.v / 2;
		/* the caller's job for a phase: sum each column of each XCC */
		put(s, &phase, "TCC_HIT", 0, phase.v[0][col_of(s, "TCC_HIT")] + hit[k]);
		put(s, &phase, "TCC_MISS", 0, phase.v[0][col_of(s, "TCC_MISS")] + miss[k]);
		put(s, &phase, "TCC_BUSY", 0, phase.v[0][col_of(s, "TCC_BUSY")] + busy[k]);
	}
	CU_ASSERT(near(mean_h, 50));
	CU_ASSERT(near(mean_b, 50));
	struct mx_frame pf = frame(&phase, 1);
	pf.interval = 2000; /* the phase's cycles: both samples' */
	pf.dt = 2e-6;
	struct mx_value v;
	CU_ASSERT_EQUAL(mx_eval(s, (size_t)ih, &pf, &v), 0);
	CU_ASSERT(!v.missing && near(v.v, 100.0 * 109 / 1010));
	CU_ASSERT_EQUAL(mx_eval(s, (size_t)ib, &pf, &v), 0);
	CU_ASSERT(!v.missing && near(v.v, 50));
	mx_set_free(s);
}

/* ---- the API's edges ---- */

static void api_edges(void)
{
	static const char *const dup[] = { "A", "B", "A" };
	static const char *const odd[] = { "gpu0.xcc1.SQ_WAVES", "SQ_WAVES", "X[1][2]", "Y[se1][se2]" };
	struct mx_set *s = NULL;
	char err[256];
	CU_ASSERT_EQUAL(mx_set_new(NULL, dup, 3, &s, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "metrics: column A appears twice (0 and 2)");
	CU_ASSERT_PTR_NULL(s);
	CU_ASSERT_EQUAL(mx_set_new(NULL, NULL, 0, &s, err, sizeof(err)), -EINVAL);
	/* names that are not NAME[..] are kept (indices stay aligned) but cannot be referenced */
	s = mkset(NULL, odd, 4);
	CU_ASSERT_EQUAL(mx_set_column_count(s), 4);
	CU_ASSERT_STRING_EQUAL(mx_set_column(s, 1), "SQ_WAVES");
	CU_ASSERT_PTR_NULL(mx_set_column(s, 4));
	CU_ASSERT_EQUAL(mx_set_add(s, "A = SQ_WAVES", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(mx_set_add(s, "B = X[1]", err, sizeof(err)), -ENOENT);
	struct tframe t = { 0 };
	struct mx_frame f = frame(&t, 1);
	struct mx_value v = { 5, false };
	CU_ASSERT_EQUAL(mx_eval(s, 1, &f, &v), -EINVAL);
	CU_ASSERT(v.missing && v.v == 0);
	f.nxcc = 0;
	CU_ASSERT_EQUAL(mx_eval(s, 0, &f, &v), -EINVAL);
	f.nxcc = MX_MAX_XCC + 1;
	CU_ASSERT_EQUAL(mx_eval(s, 0, &f, &v), -EINVAL);
	f.nxcc = 1;
	f.value = NULL;
	CU_ASSERT_EQUAL(mx_eval(s, 0, &f, &v), -EINVAL);
	mx_set_free(s);
	mx_set_free(NULL);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "metrics/arithmetic", arithmetic, NULL },
		{ "metrics/reduce_xcc", reduce_xcc, NULL },
		{ "metrics/reduce_se", reduce_se, NULL },
		{ "metrics/summed_column_preferred", summed_column_preferred, NULL },
		{ "metrics/variables", variables, NULL },
		{ "metrics/instances", instances, NULL },
		{ "metrics/missing_propagates", missing_propagates, NULL },
		{ "metrics/division_by_zero", division_by_zero, NULL },
		{ "metrics/error_messages", error_messages, NULL },
		{ "metrics/file_text", file_text, NULL },
		{ "metrics/file_read", file_read, NULL },
		{ "metrics/builtins_gfx942", builtins_gfx942, NULL },
		{ "metrics/builtins_gfx90a", builtins_gfx90a, NULL },
		{ "metrics/builtins_recorded", builtins_recorded, NULL },
		{ "metrics/builtins_documented", builtins_documented, NULL },
		{ "metrics/phase_is_ratio_of_sums", phase_is_ratio_of_sums, NULL },
		{ "metrics/api_edges", api_edges, NULL },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("metrics", cases, argc, argv);
}
