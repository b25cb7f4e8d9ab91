/* SPDX-License-Identifier: MIT */
/* Counters and metrics per phase and per sample (phase_counters.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/phase_counters.h"
#include "log.h"

/*
 * Prefix sums of every column of one XCC stream, with a prefix count of
 * missing cells, so a phase's sum is two lookups whatever its length.
 */
struct pc_prefix {
	const struct rec_table *t;
	double *sum;     /* [ncols][n + 1] */
	uint32_t *miss;  /* [ncols][n + 1] */
};

static int prefix_build(struct pc_prefix *p, const struct rec_table *t)
{
	size_t n = t->n + 1;
	p->t = t;
	p->sum = malloc((size_t)t->ncols * n * sizeof(*p->sum));
	p->miss = malloc((size_t)t->ncols * n * sizeof(*p->miss));
	if (!p->sum || !p->miss)
		return -ENOMEM;
	for (uint32_t c = 0; c < t->ncols; c++) {
		double *s = p->sum + (size_t)c * n;
		uint32_t *m = p->miss + (size_t)c * n;
		s[0] = 0;
		m[0] = 0;
		for (size_t k = 0; k < t->n; k++) {
			double v = t->v[c][k];
			s[k + 1] = s[k] + (isnan(v) ? 0 : v);
			m[k + 1] = m[k] + (isnan(v) != 0);
		}
	}
	return 0;
}

static void prefix_free(struct pc_prefix *p)
{
	free(p->sum);
	free(p->miss);
}

/* First sample with t >= x. */
static size_t lower(const struct rec_table *t, int64_t x)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->t_ns[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A phase's per-XCC sums, served to the metric evaluator. */
struct pc_frame_data {
	const struct pc_prefix *px;
	const size_t *lo, *hi;
	long saturated_col; /* the first column a metric asked for that was saturated; -1 none */
};

static bool phase_value(void *user, size_t col, const char *name, unsigned int xcc, double *v)
{
	(void)name;
	struct pc_frame_data *d = user;
	const struct pc_prefix *p = &d->px[xcc];
	size_t n = p->t->n + 1;
	if (col >= p->t->ncols || d->hi[xcc] <= d->lo[xcc])
		return false;
	const uint32_t *m = p->miss + col * n;
	if (m[d->hi[xcc]] != m[d->lo[xcc]]) {
		if (d->saturated_col < 0)
			d->saturated_col = (long)col;
		return false; /* a saturated sample: the sum is unknown */
	}
	const double *s = p->sum + col * n;
	*v = s[d->hi[xcc]] - s[d->lo[xcc]];
	return true;
}

static void frame_geometry(const struct rec_gpu *g, struct mx_frame *f)
{
	f->nxcc = g->nspm;
	f->se_per_xcc = g->num_se;
	f->cus_per_se = g->cus_per_se;
	/* The frame's XCCs are all of the GPU's; cu_count is theirs together. */
	f->cu_count = g->cu_count;
}

/*
 * The phase's coverage (the worst XCC's), its saturated cells per column,
 * and whether it keeps its values (docs/analysis.md "Coverage").
 */
static void phase_truth(const struct rec_gpu *g, const struct pc_prefix *px, const struct pc_period *per,
			const struct sa_phase *ph, const size_t *lo, const size_t *hi, double min_coverage,
			uint32_t nexp, struct pc_phase *r)
{
	uint32_t worst = 0;
	r->coverage = 1;
	r->cells = 0;
	for (uint32_t x = 0; x < g->nspm; x++) {
		pc_cover_of(&g->spm[x], &per[x], ph->start_ns, ph->end_ns, lo[x], hi[x], &r->xcc[x]);
		if (r->xcc[x].coverage < r->coverage) {
			r->coverage = r->xcc[x].coverage;
			worst = x;
		}
		r->cells += hi[x] - lo[x];
	}
	const struct rec_table *t0 = &g->spm[0];
	for (uint32_t c = 0; c < t0->ncols; c++) {
		uint64_t sat = 0;
		for (uint32_t x = 0; x < g->nspm; x++) {
			size_t n = px[x].t->n + 1;
			if (c < px[x].t->ncols)
				sat += px[x].miss[c * n + hi[x]] - px[x].miss[c * n + lo[x]];
		}
		r->saturated[c] = sat;
	}
	r->reason[0] = 0;
	if (g->nspm < nexp) /* a stream the meta lists has no row at all (a file cut short) */
		r->coverage = 0;
	r->blanked = !(r->coverage >= min_coverage);
	if (r->blanked && g->nspm < nexp) {
		snprintf(r->reason, sizeof(r->reason), "coverage 0 %%: XCC %u to %u have no sample in the file (the meta "
			 "lists %u stream(s))", g->nspm, nexp - 1, nexp);
	} else if (r->blanked) {
		char why[160];
		pc_cover_reason(&r->xcc[worst], why, sizeof(why));
		if (g->nspm > 1)
			snprintf(r->reason, sizeof(r->reason), "%s (XCC %u, the worst of %u)", why, worst, g->nspm);
		else
			snprintf(r->reason, sizeof(r->reason), "%s", why);
	} else if (r->coverage < 1) {
		snprintf(r->reason, sizeof(r->reason), "partial: %d %% coverage", pc_pct(r->coverage));
	}
}

static int gpu_phases(const struct rec_gpu *g, const struct sa_phases *ph, const struct mx_set *m,
		      double min_coverage, uint32_t nexp, struct pc_gpu *out, char *err, size_t errlen)
{
	const struct rec_table *t0 = &g->spm[0];
	out->gpu = g->index;
	out->ncols = t0->ncols;
	out->cols = (const char *const *)t0->cols;
	out->nmetrics = m ? mx_set_count(m) : 0;
	out->ph = calloc(ph->n ? ph->n : 1, sizeof(*out->ph));
	struct pc_prefix px[REC_MAX_XCC];
	memset(px, 0, sizeof(px));
	int rc = out->ph ? 0 : -ENOMEM;
	struct pc_period per[REC_MAX_XCC];
	for (uint32_t x = 0; !rc && x < g->nspm; x++) {
		rc = prefix_build(&px[x], &g->spm[x]);
		pc_period_of(&g->spm[x], &per[x]);
	}
	for (size_t p = 0; !rc && p < ph->n; p++) {
		struct pc_phase *r = &out->ph[p];
		r->total = calloc(t0->ncols ? t0->ncols : 1, sizeof(double));
		r->rate = calloc(t0->ncols ? t0->ncols : 1, sizeof(double));
		r->saturated = calloc(t0->ncols ? t0->ncols : 1, sizeof(*r->saturated));
		r->metric = calloc(out->nmetrics ? out->nmetrics : 1, sizeof(*r->metric));
		r->metric_reason = calloc(out->nmetrics ? out->nmetrics : 1, sizeof(*r->metric_reason));
		r->xcc = calloc(g->nspm ? g->nspm : 1, sizeof(*r->xcc));
		if (!r->total || !r->rate || !r->saturated || !r->metric || !r->metric_reason || !r->xcc) {
			rc = -ENOMEM;
			break;
		}
		size_t lo[REC_MAX_XCC], hi[REC_MAX_XCC];
		for (uint32_t x = 0; x < g->nspm; x++) {
			lo[x] = lower(&g->spm[x], ph->v[p].start_ns);
			hi[x] = lower(&g->spm[x], ph->v[p].end_ns);
		}
		r->samples = hi[0] - lo[0];
		phase_truth(g, px, per, &ph->v[p], lo, hi, min_coverage, nexp, r);
		double secs = (double)(ph->v[p].end_ns - ph->v[p].start_ns) * 1e-9;
		struct pc_frame_data fd = { px, lo, hi, -1 };
		for (uint32_t c = 0; c < t0->ncols; c++) {
			double tot = 0;
			for (uint32_t x = 0; x < g->nspm; x++) {
				double v;
				tot += phase_value(&fd, c, NULL, x, &v) ? v : (hi[x] > lo[x] ? NAN : 0);
			}
			/* no number for a phase whose samples are missing: 0 would read as "idle" */
			r->total[c] = r->blanked ? NAN : tot;
			r->rate[c] = secs > 0 ? r->total[c] / secs : NAN;
		}
		struct mx_frame f = { .interval = (double)r->samples * g->interval, .dt = secs, .value = phase_value,
				      .user = &fd };
		frame_geometry(g, &f);
		for (size_t i = 0; m && i < out->nmetrics; i++) {
			fd.saturated_col = -1;
			if (mx_eval(m, i, &f, &r->metric[i]) < 0)
				r->metric[i] = (struct mx_value){ 0, true };
			if (r->blanked) {
				r->metric[i] = (struct mx_value){ 0, true };
				snprintf(r->metric_reason[i], sizeof(r->metric_reason[i]), "%s", r->reason);
			} else if (r->metric[i].missing && fd.saturated_col >= 0) {
				size_t c = (size_t)fd.saturated_col;
				snprintf(r->metric_reason[i], sizeof(r->metric_reason[i]),
					 "%s saturated in %d %% of samples", t0->cols[c],
					 r->cells ? pc_pct((double)r->saturated[c] / (double)r->cells) : 0);
			}
		}
	}
	for (uint32_t x = 0; x < g->nspm; x++)
		prefix_free(&px[x]);
	return rc ? spmtap_seterr(err, errlen, -rc, "out of memory") : 0;
}

int pc_compute(const struct recording *r, const struct sa_phases *phases, struct mx_set *const *metrics,
	       double min_coverage, struct pc_result **out, char *err, size_t errlen)
{
	*out = NULL;
	struct pc_result *res = calloc(1, sizeof(*res));
	if (!res)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	res->nphases = phases->n;
	int rc = 0;
	for (uint32_t i = 0; !rc && i < r->ngpu; i++) {
		const struct rec_gpu *g = &r->gpu[i];
		if (!g->nspm || !g->spm[0].ncols)
			continue;
		rc = gpu_phases(g, phases, metrics ? metrics[i] : NULL, min_coverage, pc_streams_expected(r, g->index),
				&res->g[res->ngpu++], err, errlen);
	}
	if (rc) {
		pc_free(res);
		return rc;
	}
	*out = res;
	return 0;
}

void pc_free(struct pc_result *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->ngpu; i++) {
		for (size_t k = 0; p->g[i].ph && k < p->nphases; k++) {
			free(p->g[i].ph[k].total);
			free(p->g[i].ph[k].rate);
			free(p->g[i].ph[k].metric);
			free(p->g[i].ph[k].saturated);
			free(p->g[i].ph[k].metric_reason);
			free(p->g[i].ph[k].xcc);
		}
		free(p->g[i].ph);
	}
	free(p);
}

int pc_metrics_for(const struct recording *r, const struct rec_gpu *g, bool no_builtins, const char *const *defs,
		   size_t ndefs, const char *const *files, size_t nfiles, struct mx_set **out, char *err,
		   size_t errlen)
{
	(void)r;
	*out = NULL;
	if (!g->nspm)
		return spmtap_seterr(err, errlen, ENOENT, "GPU %u has no SPM counters to derive metrics from",
				     g->index);
	enum spm_gfx gfx;
	const struct spm_catalog *cat = NULL;
	if (spm_gfx_parse(g->gfx, &gfx, NULL, 0) == 0)
		spm_catalog_get(gfx, &cat, NULL, 0);
	const struct rec_table *t = &g->spm[0];
	struct mx_set *m;
	int rc = mx_set_new(cat, (const char *const *)t->cols, t->ncols, &m, err, errlen);
	if (rc < 0)
		return rc;
	if (!no_builtins && cat)
		rc = mx_set_add_builtins(m, err, errlen);
	for (size_t i = 0; rc >= 0 && i < ndefs; i++)
		rc = mx_set_add(m, defs[i], err, errlen);
	for (size_t i = 0; rc >= 0 && i < nfiles; i++)
		rc = mx_set_add_file(m, files[i], err, errlen);
	if (rc < 0) {
		mx_set_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

size_t pc_samples(const struct rec_gpu *g)
{
	size_t m = g->nspm ? SIZE_MAX : 0;
	for (uint32_t x = 0; x < g->nspm; x++)
		if (g->spm[x].n < m)
			m = g->spm[x].n;
	return m;
}

/* The k-th sample of every XCC, as a one-sample range of the prefix-free tables. */
struct pc_sample_data {
	const struct rec_gpu *g;
	size_t k;
};

static bool sample_value(void *user, size_t col, const char *name, unsigned int xcc, double *v)
{
	(void)name;
	const struct pc_sample_data *d = user;
	const struct rec_table *t = &d->g->spm[xcc];
	if (col >= t->ncols || d->k >= t->n || isnan(t->v[col][d->k]))
		return false;
	*v = t->v[col][d->k];
	return true;
}

int pc_eval_sample(const struct rec_gpu *g, const struct mx_set *m, size_t i, size_t k, int64_t *t_ns,
		   struct mx_value *out)
{
	const struct rec_table *t0 = &g->spm[0];
	if (k >= pc_samples(g))
		return -EINVAL;
	size_t a = k ? k - 1 : 0, b = k ? k : (t0->n > 1 ? 1 : 0);
	double dt = (double)(t0->t_ns[b] - t0->t_ns[a]) * 1e-9;
	struct pc_sample_data d = { g, k };
	struct mx_frame f = { .interval = g->interval, .dt = dt, .value = sample_value, .user = &d };
	frame_geometry(g, &f);
	*t_ns = t0->t_ns[k];
	return mx_eval(m, i, &f, out);
}
