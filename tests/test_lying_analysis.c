/* SPDX-License-Identifier: MIT */
/*
 * The "lying analysis" suite (issue 14): recordings whose data is partly
 * missing — samples dropped by the emulated kernel (SPMTAP_EMU_INJECT_DROP),
 * a stalled writer, a CSV cut short at its first row, in its middle and in
 * the middle of a row, a sensor CSV cut short or with a hole, saturated
 * counters — and for each, `spmtap report`:
 *
 *   - states the coverage of every phase, before any table;
 *   - prints no number for a phase whose samples are missing (the emulator's
 *     per-sample truth says which: SPMTAP_EMU_SAMPLE_TRUTH), only the reason;
 *   - and gives every fully covered phase of the same lossy run exactly the
 *     emulator's truth (the sum of the true samples between the phase's first
 *     and last row), so a report that blanks everything fails too;
 *   - with the coverage threshold (--min-coverage) checked from both sides.
 *
 * Nothing here depends on timing: where a run happens to lose nothing, the
 * checks still hold (and say how many phases they saw).  Recordings are short
 * (about a second of the emulated MI300A).
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/analysis/phase_counters.h"
#include "collector/analysis/recording.h"
#include "collector/analysis/sensor_trace.h"
#include "lib/files.h"
#include "lib/proc.h"
#include "lib/spm_truth.h"
#include "lib/testenv.h"
#include "spm/catalog.h"

#define PROFILE "mi300a"
#define SQUARE "square:period_ms=200,duty=0.5"

static char dir[] = "/tmp/spmtap-test-lying-XXXXXX";

static const char *path(const char *name)
{
	return testenv_path(dir, name);
}

static const char *spmtap_bin(void)
{
	static char bin[PATH_MAX];
	snprintf(bin, sizeof(bin), "%s/spmtap", testenv_build_dir());
	return bin;
}

/* argv (NULL-terminated after argv[0] = spmtap) with stdout to out; the exit status. */
static int run_spmtap(const char *out, const char *const *args, const char *const *env)
{
	const char *argv[32] = { spmtap_bin() };
	size_t n = 1;
	for (; args[n - 1] && n < 31; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	int rc = tp_run(argv, &(struct tp_opts){ .env = env, .out = out ? out : "/dev/null", .err = path("cli.err") });
	if (rc && rc != 65) {
		char *e = tf_text(path("cli.err"));
		fprintf(stderr, "\n    spmtap %s exited %d: %s", args[0], rc, e ? e : "");
		free(e);
	}
	return rc;
}

/*
 * `spmtap report DIR --json OUT [extra]`, accepting the reader's exit status
 * for truncated input (65, then again with --accept-truncated) once that
 * lands: the numbers are what this suite checks, the exit status is the
 * reader's (tests of its own).
 */
static json_t *report_json(const char *rec, const char *out, const char *x1, const char *x2)
{
	const char *args[] = { "report", rec, "--json", out, x1, x2, NULL, NULL };
	int rc = run_spmtap(NULL, args, NULL);
	if (rc == 65) {
		size_t k = x1 ? (x2 ? 6 : 5) : 4;
		args[k] = "--accept-truncated";
		rc = run_spmtap(NULL, args, NULL);
	}
	CU_ASSERT_EQUAL(rc, 0);
	json_error_t e;
	json_t *j = rc ? NULL : json_load_file(out, 0, &e);
	if (!rc && !j)
		fprintf(stderr, "\n    %s: %s ", out, e.text);
	return j;
}

/* A truth file (tests/lib/spm_truth.h), sorted by XCC, then ticks: what truth_lower() searches. */
static bool load_truth(const char *file, struct truth *t)
{
	if (!truth_load(file, t))
		return false;
	truth_sort(t);
	return true;
}

/* What a CSV column sums: every value slot of its block and event (instances and SEs summed). */
struct colspec {
	char block[8];
	unsigned event;
};

static bool colspec_of(const char *counter, struct colspec *cs)
{
	enum spm_gfx g;
	const struct spm_catalog *cat = NULL;
	const struct spm_counter *c;
	if (spm_gfx_parse("gfx942", &g, NULL, 0) || spm_catalog_get(g, &cat, NULL, 0) ||
	    spm_catalog_lookup(cat, counter, &c, NULL, 0) < 0)
		return false;
	snprintf(cs->block, sizeof(cs->block), "%s", spm_block_info(c->block)->name);
	cs->event = c->event;
	return true;
}

/* A true sample's value of a column; *sat when a slot of it is clamped (saturated). */
static uint64_t true_value(const struct truth *t, const struct st_sample *s, const struct colspec *cs, bool *sat)
{
	const struct st_layout *L = &t->lay[s->layout];
	const uint64_t *v = s->vals;
	uint64_t sum = 0;
	*sat = false;
	for (uint32_t i = 0; i < L->nvals; i++) {
		const struct st_slot *e = &L->slots[i];
		if (!e->value || e->event != cs->event || strcmp(e->block, cs->block))
			continue;
		if (e->clamp && v[i] >= (e->width == 32 ? 0xFFFFFFFFull : 0xFFFFull))
			*sat = true;
		sum += v[i];
	}
	return sum;
}

/* First true sample of XCC x with ticks >= k. */
static size_t truth_lower(const struct truth *t, uint32_t x, uint64_t k)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->s[mid].xcc < x || (t->s[mid].xcc == x && t->s[mid].ticks < k))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The truth of one phase on one counter, over the XCC streams of the file.
 * `truth`: the true samples of [start, end), on the GPU clock through the
 * file's own rows (host ns and gpu_ticks of the stream's first and last row:
 * the clock is linear, so the phase's edges land within a sample); `rows`:
 * the rows of [start, end); `missing` = truth - rows.  `sum` and
 * `saturated`: over the true samples between each XCC's first and last row
 * of the phase (exactly the samples a whole phase must hold).
 */
struct phase_truth {
	size_t rows, truth, missing, saturated, tol;
	double sum;
	bool any_sat;
};

static void phase_truth(const struct recording *r, const struct truth *t, const struct colspec *cs, int64_t start,
			int64_t end, struct phase_truth *pt)
{
	memset(pt, 0, sizeof(*pt));
	const struct rec_gpu *g = &r->gpu[0];
	for (uint32_t x = 0; x < g->nspm; x++) {
		const struct rec_table *tb = &g->spm[x];
		if (tb->n < 2)
			continue;
		double rate = (double)(tb->ticks[tb->n - 1] - tb->ticks[0]) / (double)(tb->t_ns[tb->n - 1] - tb->t_ns[0]);
		double ks = (double)tb->ticks[0] + (double)(start - tb->t_ns[0]) * rate;
		double ke = (double)tb->ticks[0] + (double)(end - tb->t_ns[0]) * rate;
		size_t ta = truth_lower(t, x, ks > 0 ? (uint64_t)ceil(ks) : 0);
		size_t tz = truth_lower(t, x, ke > 0 ? (uint64_t)ceil(ke) : 0);
		pt->truth += tz - ta;
		pt->tol += 2; /* an edge sample each side may fall either way */
		size_t lo = 0, hi;
		while (lo < tb->n && tb->t_ns[lo] < start)
			lo++;
		for (hi = lo; hi < tb->n && tb->t_ns[hi] < end; hi++)
			;
		if (hi == lo)
			continue;
		pt->rows += hi - lo;
		size_t a = truth_lower(t, x, (uint64_t)tb->ticks[lo]), b = truth_lower(t, x, (uint64_t)tb->ticks[hi - 1] + 1);
		for (size_t i = a; i < b; i++) {
			bool sat;
			pt->sum += (double)true_value(t, &t->s[i], cs, &sat);
			pt->saturated += sat;
		}
	}
	pt->missing = pt->truth > pt->rows ? pt->truth - pt->rows : 0;
	pt->any_sat = pt->saturated > 0;
}

/* ---- recordings ------------------------------------------------------------ */

/* `spmtap record` of the square wave with its schedule as phases and the sample truth; 0 when it worked. */
static int record(const char *name, const char *counters, const char *secs, const char *interval,
		  const char *const *env)
{
	const char *e[8] = { 0 };
	char truthenv[PATH_MAX + 32], wl[64];
	snprintf(truthenv, sizeof(truthenv), "SPMTAP_EMU_SAMPLE_TRUTH=%s.truth", path(name));
	snprintf(wl, sizeof(wl), "SPMTAP_EMU_WORKLOAD=%s", SQUARE);
	size_t n = 0;
	e[n++] = truthenv;
	e[n++] = wl;
	for (size_t i = 0; env && env[i] && n < 7; i++)
		e[n++] = env[i];
	const char *args[] = { "record", "--spm", counters, "--smi", "power,energy", "--phases", "emulator", "-d",
			       path(name), "--duration", secs, interval ? "--interval" : NULL, interval, NULL };
	return run_spmtap(NULL, args, e);
}

static json_t *gpu0(json_t *phase)
{
	return json_object_get(json_object_get(phase, "gpus"), "0");
}

static json_t *counter(json_t *phase, const char *name)
{
	return json_object_get(json_object_get(gpu0(phase), "counters"), name);
}

struct verdict {
	size_t phases, equal, blanked, partial, lossy; /* lossy: phases the truth says miss samples */
	size_t sat;   /* phases with a value whose true samples include a saturated one */
};

/*
 * The report of recording `rec` against the truth, on counter `name`:
 *   - a phase the truth says lacks more than 10 % of its samples has no value
 *     and a reason (the default threshold is 90 %);
 *   - a phase reported whole (coverage 1) lacks no true sample;
 *   - a phase with a value and no missing sample equals the truth exactly
 *     (unless saturated: then no total, and the saturated cells are the
 *     truth's);
 *   - a phase without a value has null total, rate and metrics, and a reason.
 */
static void check_truthful(const char *rec, json_t *j, const struct truth *t, const char *name, struct verdict *v)
{
	memset(v, 0, sizeof(*v));
	struct recording *r;
	char err[512];
	CU_ASSERT_EQUAL_FATAL(rec_load(path(rec), &r, err, sizeof(err)), 0);
	struct colspec cs;
	CU_ASSERT_FATAL(colspec_of(name, &cs));
	json_t *phases = json_object_get(j, "phases");
	v->phases = json_array_size(phases);
	for (size_t i = 0; i < v->phases; i++) {
		json_t *p = json_array_get(phases, i), *g = gpu0(p), *c = counter(p, name);
		int64_t s = json_integer_value(json_object_get(p, "start_ns"));
		int64_t e = json_integer_value(json_object_get(p, "end_ns"));
		struct phase_truth pt;
		phase_truth(r, t, &cs, s, e, &pt);
		double cov = json_number_value(json_object_get(g, "coverage"));
		bool has = json_is_true(json_object_get(g, "has_value"));
		const char *reason = json_string_value(json_object_get(g, "reason"));
		char what[128];
		snprintf(what, sizeof(what), "phase %zu (%s): %zu rows, %zu true samples", i,
			 json_string_value(json_object_get(p, "name")), pt.rows, pt.truth);
		CU_ASSERT(json_is_number(json_object_get(g, "coverage")));
		bool lacking = pt.missing > pt.tol;
		v->lossy += lacking;
		if (pt.missing > pt.tol && (double)(pt.missing - pt.tol) > 0.1 * (double)pt.truth) {
			/* more than a tenth missing: no number (default threshold 90 %) */
			bool number = json_is_number(json_object_get(c, "total"));
			if (has || number)
				fprintf(stderr, "\n    %s, %zu missing: reported with a value (%s %s) ", what, pt.missing,
					name, number ? "a number" : "has_value");
			CU_ASSERT(!has && !number);
		}
		if (cov >= 1 && lacking) {
			fprintf(stderr, "\n    %s: reported whole, %zu true samples missing ", what, pt.missing);
			CU_FAIL("a phase reported whole lacks samples");
		}
		if (!lacking && pt.truth > 20 * pt.tol && !has) {
			fprintf(stderr, "\n    %s: nothing missing, yet no value (%s) ", what, reason ? reason : "");
			CU_FAIL("a whole phase was blanked");
		}
		v->sat += has && pt.any_sat;
		if (!has) {
			v->blanked++;
			CU_ASSERT(!c || (json_is_null(json_object_get(c, "total")) && json_is_null(json_object_get(c, "rate_per_s"))));
			CU_ASSERT(reason && strstr(reason, "coverage"));
			json_t *ms = json_object_get(g, "metrics"), *m;
			const char *k;
			json_object_foreach(ms, k, m)
				CU_ASSERT(json_is_null(m));
			continue;
		}
		if (cov < 1) {
			v->partial++;
			CU_ASSERT(reason && !strncmp(reason, "partial: ", 9));
		}
		if (cov < 1)
			continue; /* a partial value: labelled (above), not the whole phase's truth */
		json_int_t sat = json_integer_value(json_object_get(c, "saturated_cells"));
		CU_ASSERT_EQUAL(sat, (json_int_t)pt.saturated);
		if (pt.any_sat) {
			CU_ASSERT(json_is_null(json_object_get(c, "total")));
			const char *why = json_string_value(json_object_get(c, "reason"));
			CU_ASSERT(why && strstr(why, "saturated"));
			continue;
		}
		double got = json_number_value(json_object_get(c, "total"));
		if (!json_is_number(json_object_get(c, "total")) || got != pt.sum)
			fprintf(stderr, "\n    %s: %s total %.17g, truth %.17g ", what, name, got, pt.sum);
		CU_ASSERT(json_is_number(json_object_get(c, "total")) && got == pt.sum);
		v->equal += got == pt.sum;
	}
	fprintf(stderr, "\n    %s: %zu phases: %zu equal to the truth, %zu partial, %zu without values; %zu lack true "
		"samples ", rec, v->phases, v->equal, v->partial, v->blanked, v->lossy);
	rec_free(r);
}

/* The text report: the coverage section comes before any table, and a phase without value shows no number. */
static void check_text(const char *rec, const char *counter_name)
{
	const char *args[] = { "report", path(rec), NULL };
	CU_ASSERT_EQUAL_FATAL(run_spmtap(path("report.txt"), args, NULL) % 65, 0);
	char *txt = tf_text(path("report.txt"));
	CU_ASSERT_PTR_NOT_NULL_FATAL(txt);
	char *cov = strstr(txt, "Coverage ("), *first = strstr(txt, "T_ph"), *tot = strstr(txt, "SPM counter totals");
	CU_ASSERT(cov && first && cov < first);
	CU_ASSERT(cov && tot && cov < tot);
	/* rows of the totals table: phase samples N % COUNTER... [note] */
	for (char *l = tot ? strchr(tot, '\n') : NULL; l && l[1] && l[1] != '\n'; l = strchr(l + 1, '\n')) {
		char name[64], cell[64];
		size_t samples;
		int pct;
		if (sscanf(l + 1, "%63s %zu %d %% %63s", name, &samples, &pct, cell) != 4)
			continue;
		char *end = strchr(l + 1, '\n');
		char *note = strstr(l + 1, "no value:");
		if (note && (!end || note < end))
			CU_ASSERT_STRING_EQUAL(cell, "-");
	}
	(void)counter_name;
	free(txt);
}

/* ---- cases -------------------------------------------------------------------- */

static struct truth loss_truth;
static int loss_made; /* 0 not yet, 1 made, -1 failed */

/*
 * Two drops on every XCC, about 50 ms and 200 ms of samples (320-byte
 * MI300A samples every 65504 cycles, 31 us); the longest interval keeps the
 * data rate low, so a loaded machine adds little loss of its own.
 */
#define LOSS_DROPS "SPMTAP_EMU_INJECT_DROP=300:524288,650:2097152"
static bool loss_recording(void)
{
	static const char *const env[] = { LOSS_DROPS, NULL };
	if (!loss_made)
		loss_made = record("loss", "SQ_WAVES,SQ_BUSY_CYCLES", "1.2", "65504", env) == 0 &&
					    load_truth(path("loss.truth"), &loss_truth)
				    ? 1
				    : -1;
	return loss_made > 0;
}

static void injected_loss(void)
{
	CU_ASSERT_FATAL(loss_recording());
	json_t *j = report_json(path("loss"), path("loss.json"), NULL, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	struct verdict v;
	check_truthful("loss", j, &loss_truth, "SQ_WAVES", &v);
	/* the drops took whole phases: the report must say so, and still give the others */
	CU_ASSERT(v.blanked >= 1);
	CU_ASSERT(v.lossy >= 1);
	/*
	 * and the rest keep their numbers (a loaded machine may lose more on its
	 * own: at least one, unless the late device left no phase whole)
	 */
	CU_ASSERT(v.equal >= 1 || v.lossy == v.phases);
	json_decref(j);
	check_text("loss", "SQ_WAVES");
	/* the HTML report: a banner before any table, naming what has no value */
	const char *args[] = { "report", path("loss"), "--html", path("loss.html"), NULL };
	CU_ASSERT_EQUAL(run_spmtap(NULL, args, NULL) % 65, 0);
	char *html = tf_text(path("loss.html"));
	CU_ASSERT_PTR_NOT_NULL_FATAL(html);
	char *banner = strstr(html, "class=\"banner\""), *table = strstr(html, "<table");
	CU_ASSERT(banner && table && banner < table);
	CU_ASSERT(banner && strstr(banner, "no value: coverage"));
	free(html);
}

/* A writer that stalls 1.5 s: the queues fill; whatever the run lost, the report says it and nothing else. */
static void writer_stall(void)
{
	static const char *const env[] = { "SPMTAP_WRITER_STALL=300:1500", NULL };
	CU_ASSERT_EQUAL_FATAL(record("stall", "SQ_WAVES", "2.2", NULL, env), 0);
	struct truth t;
	CU_ASSERT_FATAL(load_truth(path("stall.truth"), &t));
	json_t *j = report_json(path("stall"), path("stall.json"), NULL, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	struct verdict v;
	check_truthful("stall", j, &t, "SQ_WAVES", &v);
	CU_ASSERT(v.equal >= 1 || v.lossy == v.phases); /* one whole phase at least keeps its number */
	/*
	 * The sensor readings the stall cost: a phase with a boundary in a
	 * hole of the sensor series has no energy, and says why.
	 */
	struct recording *r;
	char err[256];
	CU_ASSERT_EQUAL_FATAL(rec_load(path("stall"), &r, err, sizeof(err)), 0);
	const struct rec_table *smi = &r->gpu[0].smi;
	json_t *phases = json_object_get(j, "phases");
	size_t holes = 0;
	for (size_t k = 1; k < smi->n; k++) {
		if (smi->t_ns[k] - smi->t_ns[k - 1] < 50000000)
			continue;
		holes++;
		for (size_t i = 0; i < json_array_size(phases); i++) {
			json_t *p = json_array_get(phases, i);
			int64_t s = json_integer_value(json_object_get(p, "start_ns"));
			int64_t e = json_integer_value(json_object_get(p, "end_ns"));
			/* a phase wholly inside the hole (10 ms of slack for sensor timestamps vs. host reads) */
			if (s > smi->t_ns[k - 1] + 10000000 && e < smi->t_ns[k] - 10000000) {
				CU_ASSERT(json_is_null(json_object_get(p, "energy_j")));
				CU_ASSERT(json_is_string(json_object_get(p, "reason")));
			}
		}
	}
	fprintf(stderr, "\n    %zu sensor hole(s) of 50 ms or more ", holes);
	rec_free(r);
	json_decref(j);
	truth_free(&t);
}

/* A copy of recording `from` as `to`, its file SUFFIX cut to `keep` bytes. */
static void cut_copy(const char *from, const char *to, const char *suffix, long keep)
{
	char cmd[4 * PATH_MAX];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s' && cp '%s'/spmtap_* '%s'/ && truncate -s %ld '%s/spmtap_%s'",
		 path(to), path(to), path(from), path(to), keep, path(to), suffix);
	CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
}

static long file_size(const char *p)
{
	struct stat st;
	return stat(p, &st) ? -1 : (long)st.st_size;
}

/* Offset just after the n-th newline of a file (0: the header's), or -1. */
static long after_line(const char *file, long n)
{
	FILE *f = fopen(file, "r");
	long off = -1, seen = -1;
	for (int c; f && (c = fgetc(f)) != EOF;)
		if (c == '\n' && ++seen == n) {
			off = ftell(f);
			break;
		}
	if (f)
		fclose(f);
	return off;
}

/*
 * The SPM CSV of the lossy run cut at its first row (half of it kept), at a
 * row boundary half way, and in the middle of a row at two thirds: phases
 * after the cut have no value ("no samples after"), phases before it still
 * equal the truth.
 */
static void truncated_csv(void)
{
	CU_ASSERT_FATAL(loss_recording());
	char spm[PATH_MAX];
	snprintf(spm, sizeof(spm), "%s/spmtap_spm.csv", path("loss"));
	long size = file_size(spm), h = after_line(spm, 0), r1 = after_line(spm, 1);
	CU_ASSERT_FATAL(size > 0 && h > 0 && r1 > h);
	long half = after_line(spm, 0);
	{ /* a row boundary near the middle */
		FILE *f = fopen(spm, "r");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		fseek(f, size / 2, SEEK_SET);
		for (int c; (c = fgetc(f)) != EOF && c != '\n';)
			;
		half = ftell(f);
		fclose(f);
	}
	struct {
		const char *name;
		long keep;
	} cuts[] = { { "cut-first", h + (r1 - h) / 2 }, { "cut-middle", half }, { "cut-midrow", size * 2 / 3 } };
	for (size_t c = 0; c < 3; c++) {
		cut_copy("loss", cuts[c].name, "spm.csv", cuts[c].keep);
		char out[64];
		snprintf(out, sizeof(out), "%s.json", cuts[c].name);
		json_t *j = report_json(path(cuts[c].name), path(out), NULL, NULL);
		CU_ASSERT_PTR_NOT_NULL_FATAL(j);
		struct recording *r;
		char err[256];
		CU_ASSERT_EQUAL_FATAL(rec_load(path(cuts[c].name), &r, err, sizeof(err)), 0);
		int64_t last = INT64_MIN; /* the earliest last sample over the XCC streams: later, one is missing */
		const struct rec_gpu *g = &r->gpu[0];
		for (uint32_t x = 0; x < g->nspm; x++)
			if (g->spm[x].n && (last == INT64_MIN || g->spm[x].t_ns[g->spm[x].n - 1] < last))
				last = g->spm[x].t_ns[g->spm[x].n - 1];
		if (g->nspm < 6)
			last = INT64_MIN; /* a stream without a row: nothing has a value */
		json_t *phases = json_object_get(j, "phases");
		size_t after = 0;
		for (size_t i = 0; i < json_array_size(phases); i++) {
			json_t *p = json_array_get(phases, i);
			if (json_integer_value(json_object_get(p, "start_ns")) <= last)
				continue;
			after++;
			json_t *gj = gpu0(p);
			CU_ASSERT(!json_is_true(json_object_get(gj, "has_value")));
			json_t *sq = counter(p, "SQ_WAVES"); /* absent when the file kept no row at all */
			CU_ASSERT(!sq || json_is_null(json_object_get(sq, "total")));
			/* the reason is the worst XCC's, which may be another than the one the cut ended first */
			const char *why = json_string_value(json_object_get(gj, "reason"));
			CU_ASSERT(why && strstr(why, "coverage"));
		}
		fprintf(stderr, "\n    %s: %zu phase(s) after the cut ", cuts[c].name, after);
		CU_ASSERT(after >= 1);
		if (g->nspm) {
			struct verdict v;
			check_truthful(cuts[c].name, j, &loss_truth, "SQ_WAVES", &v);
			/*
			 * The phases before the cut still have their numbers: where more
			 * phases have all their true samples than lie after the cut, one of
			 * them is before it and must equal the truth.  (A device that ran
			 * late everywhere, as under TSan in CI, leaves no such phase.)
			 */
			if (c == 1 && v.phases - v.lossy > after)
				CU_ASSERT(v.equal >= 1);
		}
		rec_free(r);
		json_decref(j);
	}
}

/* The host-time offset the analysis gave recording rec's energy counter (spec 2.1: the lower envelope). */
static int64_t energy_offset(const char *rec)
{
	struct recording *r;
	struct sa_trace *tr;
	char err[256];
	int64_t off = 0;
	if (rec_load(path(rec), &r, err, sizeof(err)))
		return 0;
	if (!rec_trace(r, &tr, err, sizeof(err))) {
		int k = sa_trace_first_j(tr);
		if (k >= 0)
			off = sa_trace_signal(tr, (size_t)k)->ts_offset_ns;
		sa_trace_free(tr);
	}
	rec_free(r);
	return off;
}

/*
 * The same energy with fewer readings.  Removing rows may move the sensor's
 * lower-envelope offset (spec 2.1: the minimum of time_ns - ts_ns over the
 * readings kept) by `shift` ns, which moves a phase's energy by the power
 * step at its edges times the shift: at most 600 W x shift (the emulated
 * MI300A steps by 440 W), plus rounding.
 */
static bool same_energy(double got, double want, int64_t shift)
{
	double tol = 600.0 * fabs((double)shift) * 1e-9 + 1e-9 * fabs(want);
	bool ok = isfinite(got) && fabs(got - want) <= tol;
	if (!ok)
		fprintf(stderr, "\n    energy %.9g, with every reading %.9g (offset moved %lld ns) ", got, want,
			(long long)shift);
	return ok;
}

/* Energy of phase i (NAN: null). */
static double energy_of(json_t *j, size_t i)
{
	json_t *v = json_object_get(json_array_get(json_object_get(j, "phases"), i), "energy_j");
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/*
 * The sensor CSV cut short (at a row boundary and in the middle of a row),
 * and with a hole of 40 ms inside one phase: past the cut no energy and no
 * confident mean, each with "no readings after"; the hole's phase has no
 * confident mean ("no readings from"), and every other phase keeps exactly
 * the values of the whole file.
 */
static void sensor_gaps(void)
{
	CU_ASSERT_FATAL(loss_recording());
	json_t *full = report_json(path("loss"), path("full.json"), NULL, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(full);
	char smi[PATH_MAX];
	snprintf(smi, sizeof(smi), "%s/spmtap_smi.csv", path("loss"));
	long size = file_size(smi);
	CU_ASSERT_FATAL(size > 0);
	json_t *phases = json_object_get(full, "phases");
	size_t np = json_array_size(phases);
	for (int mid = 0; mid < 2; mid++) {
		const char *name = mid ? "smi-midrow" : "smi-half";
		long keep = mid ? size / 2 + 7 : after_line(smi, 500);
		cut_copy("loss", name, "smi.csv", keep);
		struct recording *r;
		char err[256];
		CU_ASSERT_EQUAL_FATAL(rec_load(path(name), &r, err, sizeof(err)), 0);
		int64_t last = r->gpu[0].smi.n ? r->gpu[0].smi.t_ns[r->gpu[0].smi.n - 1] : 0;
		rec_free(r);
		char out[64];
		snprintf(out, sizeof(out), "%s.json", name);
		json_t *j = report_json(path(name), path(out), NULL, NULL);
		CU_ASSERT_PTR_NOT_NULL_FATAL(j);
		int64_t shift = energy_offset(name) - energy_offset("loss");
		size_t after = 0, same = 0;
		for (size_t i = 0; i < np; i++) {
			json_t *p = json_array_get(json_object_get(j, "phases"), i);
			if (json_integer_value(json_object_get(p, "start_ns")) > last + 10000000) {
				after++;
				CU_ASSERT(json_is_null(json_object_get(p, "energy_j")));
				const char *why = json_string_value(json_object_get(p, "reason"));
				CU_ASSERT(why && strstr(why, "no readings after"));
				json_t *sigs = json_object_get(p, "signals"), *s;
				const char *k;
				json_object_foreach(sigs, k, s) {
					CU_ASSERT(json_is_null(json_object_get(s, "mean_power_w_confident")));
					/* "no readings after", or an earlier reason (a signal the shorter trace cannot time) */
					why = json_string_value(json_object_get(s, "reason"));
					if (!why || !strstr(why, "no readings after"))
						fprintf(stderr, "\n    %s: phase %zu: signal %s: reason %s ", name, i, k,
							why ? why : "null");
					CU_ASSERT(why != NULL);
				}
			} else if (json_integer_value(json_object_get(p, "end_ns")) < last - 10000000 &&
				   isfinite(energy_of(full, i))) {
				bool ok = same_energy(energy_of(j, i), energy_of(full, i), shift);
				CU_ASSERT(ok);
				same += ok;
			}
		}
		fprintf(stderr, "\n    %s: %zu phase(s) after the last reading, %zu before it unchanged ", name, after, same);
		CU_ASSERT(after >= 1 && same >= 1);
		json_decref(j);
	}
	/* a 40 ms hole in the middle of phase 4 (a whole phase of readings, 100 ms, inside the run) */
	json_t *p4 = json_array_get(phases, 4);
	int64_t s4 = json_integer_value(json_object_get(p4, "start_ns")), e4 = json_integer_value(json_object_get(p4, "end_ns"));
	int64_t a = s4 + (e4 - s4) / 2 - 20000000, b = a + 40000000;
	char cmd[4 * PATH_MAX];
	snprintf(cmd, sizeof(cmd),
		 "rm -rf '%s' && mkdir -p '%s' && cp '%s'/spmtap_* '%s'/ && awk -F, 'NR==1 || $2 < %lld || $2 > %lld' "
		 "'%s/spmtap_smi.csv' > '%s/spmtap_smi.csv'",
		 path("smi-hole"), path("smi-hole"), path("loss"), path("smi-hole"), (long long)a, (long long)b,
		 path("loss"), path("smi-hole"));
	CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
	json_t *j = report_json(path("smi-hole"), path("smi-hole.json"), NULL, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	int64_t hole_shift = energy_offset("smi-hole") - energy_offset("loss");
	json_t *h4 = json_array_get(json_object_get(j, "phases"), 4), *sigs = json_object_get(h4, "signals"), *s;
	const char *k;
	json_object_foreach(sigs, k, s) {
		CU_ASSERT(json_is_null(json_object_get(s, "mean_power_w_confident")));
		const char *why = json_string_value(json_object_get(s, "reason"));
		CU_ASSERT(why && strstr(why, "no readings from"));
	}
	/* a cumulative counter's energy over the phase does not need the readings inside it */
	for (size_t i = 0; i < np; i++)
		if (isfinite(energy_of(full, i)))
			CU_ASSERT(same_energy(energy_of(j, i), energy_of(full, i), hole_shift));
	json_decref(j);
	json_decref(full);
}

/*
 * TCC_HIT saturates at the default interval on the emulated MI300A: per
 * phase the saturated cells equal the truth's, the total is null with a
 * reason, a metric on it is null and names it, and SQ_WAVES of the same
 * phases equals the truth.
 */
static void saturation(void)
{
	CU_ASSERT_EQUAL_FATAL(record("sat", "TCC_HIT,SQ_WAVES", "0.8", "65504", NULL), 0);
	struct truth t;
	CU_ASSERT_FATAL(load_truth(path("sat.truth"), &t));
	json_t *j = report_json(path("sat"), path("sat.json"), "--metric", "hits=TCC_HIT/SQ_WAVES");
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	struct verdict v;
	check_truthful("sat", j, &t, "TCC_HIT", &v);
	size_t sat_phases = 0;
	json_t *phases = json_object_get(j, "phases");
	for (size_t i = 0; i < json_array_size(phases); i++) {
		json_t *p = json_array_get(phases, i), *g = gpu0(p);
		json_t *c = counter(p, "TCC_HIT");
		if (!json_is_true(json_object_get(g, "has_value")) ||
		    !json_integer_value(json_object_get(c, "saturated_cells")))
			continue;
		sat_phases++;
		CU_ASSERT(json_is_null(json_object_get(c, "total")));
		CU_ASSERT(json_integer_value(json_object_get(json_object_get(g, "saturated_cells"), "TCC_HIT")) ==
			  json_integer_value(json_object_get(c, "saturated_cells")));
		CU_ASSERT(json_is_null(json_object_get(json_object_get(g, "metrics"), "hits")));
		const char *why = json_string_value(json_object_get(json_object_get(g, "metric_reasons"), "hits"));
		CU_ASSERT(why && strstr(why, "TCC_HIT") && strstr(why, "saturated"));
	}
	fprintf(stderr, "\n    %zu phase(s) with saturated TCC_HIT ", sat_phases);
	/*
	 * The run must show saturation where the truth has it, in some phase that
	 * kept a value.  Under TSan in CI the device has run late for the whole
	 * recording, or for all but an idle phase where TCC_HIT never saturates
	 * (1 of 7 phases kept): then there is nothing to show, and it is said.
	 */
	if (!v.sat)
		fprintf(stderr, "\n    no phase with a value has a saturated true sample (%zu of %zu lack samples) ",
			v.lossy, v.phases);
	CU_ASSERT(sat_phases >= 1 || v.sat == 0);
	struct verdict w;
	check_truthful("sat", j, &t, "SQ_WAVES", &w);
	/* a phase the device kept whole has its exact number (under TSan in CI it ran late in all 5) */
	CU_ASSERT(w.equal >= 1 || w.lossy == w.phases);
	/* the text says it per counter and phase */
	const char *args[] = { "report", path("sat"), NULL };
	CU_ASSERT_EQUAL(run_spmtap(path("sat.txt"), args, NULL) % 65, 0);
	char *txt = tf_text(path("sat.txt"));
	CU_ASSERT(txt && strstr(txt, "TCC_HIT: saturated in") && strstr(txt, "sat "));
	free(txt);
	json_decref(j);
	truth_free(&t);
}

/*
 * --min-coverage from both sides: a phase of coverage c gets a value, labelled
 * partial, at c - 0.01 and none at c + 0.01; out-of-range thresholds are
 * usage errors.
 */
static void threshold(void)
{
	CU_ASSERT_FATAL(loss_recording());
	json_t *j = report_json(path("loss"), path("thr.json"), "--min-coverage", "0");
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	json_t *phases = json_object_get(j, "phases");
	long pick = -1;
	double c = 0;
	for (size_t i = 0; pick < 0 && i < json_array_size(phases); i++) {
		c = json_number_value(json_object_get(gpu0(json_array_get(phases, i)), "coverage"));
		if (c > 0.05 && c < 0.95)
			pick = (long)i;
	}
	json_decref(j);
	if (pick < 0) {
		fprintf(stderr, "\n    no phase partly covered in this run: threshold not exercised ");
		CU_FAIL("the injected drops left no partly covered phase");
		return;
	}
	char lo[32], hi[32];
	snprintf(lo, sizeof(lo), "%.4f", c - 0.01);
	snprintf(hi, sizeof(hi), "%.4f", c + 0.01);
	json_t *below = report_json(path("loss"), path("thr-lo.json"), "--min-coverage", lo);
	json_t *above = report_json(path("loss"), path("thr-hi.json"), "--min-coverage", hi);
	CU_ASSERT_PTR_NOT_NULL_FATAL(below);
	CU_ASSERT_PTR_NOT_NULL_FATAL(above);
	json_t *pb = json_array_get(json_object_get(below, "phases"), (size_t)pick);
	json_t *pa = json_array_get(json_object_get(above, "phases"), (size_t)pick);
	fprintf(stderr, "\n    phase %ld, coverage %.3f: --min-coverage %s and %s ", pick, c, lo, hi);
	CU_ASSERT(json_is_true(json_object_get(gpu0(pb), "has_value")));
	CU_ASSERT(json_is_number(json_object_get(counter(pb, "SQ_WAVES"), "total")));
	const char *why = json_string_value(json_object_get(gpu0(pb), "reason"));
	CU_ASSERT(why && !strncmp(why, "partial: ", 9));
	CU_ASSERT(!json_is_true(json_object_get(gpu0(pa), "has_value")));
	CU_ASSERT(json_is_null(json_object_get(counter(pa, "SQ_WAVES"), "total")));
	why = json_string_value(json_object_get(gpu0(pa), "reason"));
	CU_ASSERT(why && !strncmp(why, "coverage ", 9));
	json_decref(below);
	json_decref(above);
	static const char *const bad[] = { "1.5", "-0.1", "abc", "" };
	for (size_t i = 0; i < 4; i++) {
		const char *args[] = { "report", path("loss"), "--min-coverage", bad[i], NULL };
		CU_ASSERT_EQUAL(run_spmtap(NULL, args, NULL), 64);
	}
}

/*
 * pc_cover_of on a stream whose clock drops (SPM counts SCLK cycles: a GPU
 * at a lower clock samples more slowly) and that loses samples: 100 samples
 * 10 ticks apart, then 100 samples 40 apart with 5 missing after the 150th
 * (a step of 240), then 50 at 10 again with 3 missing (a step of 40 among
 * steps of 10).  1 tick = 1 ns here.  The slow stretch is no loss; the two
 * gaps are, with the samples they held.
 */
static void cover_clock_change(void)
{
	struct rec_table t = { 0 };
	int64_t ts[260], tk[260];
	size_t n = 0;
	int64_t x = 1000;
	for (int i = 0; i < 100; i++, x += 10)
		ts[n++] = x;
	for (int i = 0; i < 100; i++) {
		x += 30; /* 40 from the previous sample, with the +10 of the loop above on the first */
		ts[n++] = x;
		x += 10;
		if (i == 49)
			x += 5 * 40; /* 5 samples lost */
	}
	x += 30; /* back at 10: the first fast step is 40 from the last slow sample, no loss */
	for (int i = 0; i < 50; i++, x += 10) {
		if (i == 25)
			x += 3 * 10; /* 3 samples lost */
		ts[n++] = x;
	}
	for (size_t i = 0; i < n; i++)
		tk[i] = ts[i];
	t.n = n;
	t.t_ns = ts;
	t.ticks = tk;
	struct pc_period per;
	pc_period_of(&t, &per);
	struct pc_cover c;
	/* [first, 100th sample]: fast, whole */
	pc_cover_of(&t, &per, ts[0], ts[99] + 1, 0, 100, &c);
	CU_ASSERT_EQUAL(c.nlost, 0);
	CU_ASSERT_EQUAL(c.coverage, 1);
	/* the slow stretch before its gap: whole, not "lost three in four" */
	pc_cover_of(&t, &per, ts[100], ts[149] + 1, 100, 150, &c);
	CU_ASSERT_EQUAL(c.nlost, 0);
	CU_ASSERT_EQUAL(c.coverage, 1);
	/* across the slow gap: 5 lost */
	pc_cover_of(&t, &per, ts[140], ts[160] + 1, 140, 161, &c);
	CU_ASSERT_EQUAL(c.nlost, 1);
	CU_ASSERT_EQUAL(c.expected - c.present, 5);
	CU_ASSERT_EQUAL(c.lost_ns, 200);
	/* back to fast: the change itself is no loss; the fast gap is 3 */
	pc_cover_of(&t, &per, ts[190], ts[n - 1] + 1, 190, n, &c);
	CU_ASSERT_EQUAL(c.nlost, 1);
	CU_ASSERT_EQUAL(c.expected - c.present, 3);
	if (c.nlost != 1 || c.expected - c.present != 3)
		fprintf(stderr, "\n    fast end: %zu stretches, %zu of %zu ", c.nlost, c.present, c.expected);
	/* a phase past the end: none of its slots is there, and the reason says where the stream ended */
	pc_cover_of(&t, &per, ts[n - 1] + 100, ts[n - 1] + 200, n, n, &c);
	CU_ASSERT_EQUAL(c.present, 0);
	CU_ASSERT_EQUAL(c.expected, 10);
	CU_ASSERT(c.after_last);
	char why[192];
	pc_cover_reason(&c, why, sizeof(why));
	char want[96];
	snprintf(want, sizeof(want), "no samples after %lld ns (the stream ends there)", (long long)ts[n - 1]);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, want));
	CU_ASSERT(!strncmp(why, "coverage 0 %", 12));
}

/*
 * The same checks on an SQLite recording, once the analysis reads them (the
 * `reader` part of issue 14): skipped while rec_load of a .db fails.
 */
static const char *sqlite_requires(void)
{
	static char why[256];
	static int state; /* 0 unknown, 1 can, -1 cannot */
	if (state)
		return state > 0 ? NULL : why;
	char d[PATH_MAX];
	snprintf(d, sizeof(d), "%s", path("probe-db"));
	const char *args[] = { "record", "--spm", "SQ_WAVES", "-f", "sqlite", "-d", d, "--duration", "0.2", NULL };
	struct recording *r = NULL;
	char err[256] = "";
	if (run_spmtap(NULL, args, NULL) || rec_load(d, &r, err, sizeof(err))) {
		snprintf(why, sizeof(why), "the analysis does not read SQLite recordings yet: %s", err);
		state = -1;
		return why;
	}
	rec_free(r);
	state = 1;
	return NULL;
}

static void sqlite_loss(void)
{
	static const char *const env[] = { LOSS_DROPS, NULL };
	const char *e[4] = { 0 };
	char truthenv[PATH_MAX + 32], wl[64];
	snprintf(truthenv, sizeof(truthenv), "SPMTAP_EMU_SAMPLE_TRUTH=%s.truth", path("dbloss"));
	snprintf(wl, sizeof(wl), "SPMTAP_EMU_WORKLOAD=%s", SQUARE);
	e[0] = truthenv;
	e[1] = wl;
	e[2] = env[0];
	const char *args[] = { "record", "--spm", "SQ_WAVES,SQ_BUSY_CYCLES", "--smi", "power,energy", "--phases",
			       "emulator", "-f", "csv,sqlite", "-d", path("dbloss"), "--duration", "1.2", "--interval", "65504",
			       NULL };
	CU_ASSERT_EQUAL_FATAL(run_spmtap(NULL, args, e), 0);
	struct truth t;
	CU_ASSERT_FATAL(load_truth(path("dbloss.truth"), &t));
	/* the .db alone */
	char cmd[4 * PATH_MAX];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && cp '%s'/*.db '%s'/", path("dbonly"), path("dbloss"), path("dbonly"));
	CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
	json_t *jc = report_json(path("dbloss"), path("dbloss.json"), NULL, NULL);
	json_t *jd = report_json(path("dbonly"), path("dbonly.json"), NULL, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(jc);
	CU_ASSERT_PTR_NOT_NULL_FATAL(jd);
	struct verdict v;
	check_truthful("dbonly", jd, &t, "SQ_WAVES", &v);
	CU_ASSERT(v.blanked >= 1 && (v.equal >= 1 || v.lossy == v.phases));
	/* CSV and SQLite: the same phases, the same coverage and values */
	json_t *pc = json_object_get(jc, "phases"), *pd = json_object_get(jd, "phases");
	CU_ASSERT_EQUAL(json_array_size(pc), json_array_size(pd));
	for (size_t i = 0; i < json_array_size(pc) && i < json_array_size(pd); i++)
		CU_ASSERT(json_equal(gpu0(json_array_get(pc, i)), gpu0(json_array_get(pd, i))));
	json_decref(jc);
	json_decref(jd);
	truth_free(&t);
}

int main(int argc, char **argv)
{
	testenv_under_emu(argc, argv, PROFILE, NULL);
	if (!mkdtemp(dir))
		return 1;
	static const struct testenv_case cases[] = {
		{ "injected_loss", injected_loss, NULL },
		{ "writer_stall", writer_stall, NULL },
		{ "truncated_csv", truncated_csv, NULL },
		{ "sensor_gaps", sensor_gaps, NULL },
		{ "saturation", saturation, NULL },
		{ "threshold", threshold, NULL },
		{ "cover_clock_change", cover_clock_change, NULL },
		{ "sqlite_loss", sqlite_loss, sqlite_requires },
		{ NULL, NULL, NULL },
	};
	int rc = testenv_run_suite("lying_analysis", cases, argc, argv);
	truth_free(&loss_truth);
	return testenv_remove_tmp(dir, rc);
}
