/* SPDX-License-Identifier: MIT */
/* Counters, metrics, time and energy per kernel (kernel_counters.h; the rule is written there). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/kernel_counters.h"
#include "collector/analysis/phase_counters.h"
#include "log.h"

/* A step of more than this many periods is a gap (phase_coverage.c, the decoder's rule). */
#define GAP_PERIODS 1.5

uint32_t kc_dispatch_gpu(const struct recording *r, const struct rec_dispatch *d)
{
	if (d->gpu >= 0)
		return (uint32_t)d->gpu;
	return r->ngpu ? r->gpu[0].index : 0;
}

/*
 * The time line of one GPU's dispatches cut where any starts or ends: in
 * [b[j], b[j+1]) cnt[j] dispatches run.  F and G are running integrals of
 * 1/cnt (the share of one running dispatch) and of [cnt >= 2] (concurrency).
 */
struct seg {
	size_t n;
	double *b, *F, *G;
	int *cnt;
};

struct ev {
	double t;
	int d;
};

static int cmp_ev(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t;
}

static bool on_gpu(const struct recording *r, const struct rec_dispatch *d, int64_t gpu)
{
	return d->mapped && (gpu < 0 || kc_dispatch_gpu(r, d) == (uint32_t)gpu);
}

/* The segments of the mapped dispatches of GPU gpu (-1: of every GPU). */
static int seg_build(const struct recording *r, int64_t gpu, struct seg *s)
{
	memset(s, 0, sizeof(*s));
	const struct rec_kernels *k = &r->kernels;
	struct ev *e = malloc((2 * k->n + 1) * sizeof(*e));
	size_t ne = 0;
	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < k->n; i++)
		if (on_gpu(r, &k->v[i], gpu) && k->v[i].end_ns > k->v[i].start_ns) {
			e[ne++] = (struct ev){ (double)k->v[i].start_ns, 1 };
			e[ne++] = (struct ev){ (double)k->v[i].end_ns, -1 };
		}
	qsort(e, ne, sizeof(*e), cmp_ev);
	s->b = malloc((ne + 1) * sizeof(*s->b));
	s->F = malloc((ne + 1) * sizeof(*s->F));
	s->G = malloc((ne + 1) * sizeof(*s->G));
	s->cnt = malloc((ne + 1) * sizeof(*s->cnt));
	if (!s->b || !s->F || !s->G || !s->cnt) {
		free(e);
		return -ENOMEM;
	}
	int c = 0;
	for (size_t i = 0; i < ne;) {
		double t = e[i].t;
		for (; i < ne && e[i].t == t; i++)
			c += e[i].d;
		size_t j = s->n++;
		s->b[j] = t;
		s->cnt[j] = c;
		if (j == 0) {
			s->F[j] = s->G[j] = 0;
		} else {
			double len = t - s->b[j - 1];
			int pc = s->cnt[j - 1];
			s->F[j] = s->F[j - 1] + (pc > 0 ? len / pc : 0);
			s->G[j] = s->G[j - 1] + (pc >= 2 ? len : 0);
		}
	}
	free(e);
	return 0;
}

static void seg_free(struct seg *s)
{
	free(s->b);
	free(s->F);
	free(s->G);
	free(s->cnt);
}

/* The segment holding t: the last j with b[j] <= t; -1 before the first. */
static long seg_at(const struct seg *s, double t)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->b[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

/* The integrals F (share) or G (concurrency) at t. */
static double seg_F(const struct seg *s, double t, bool concurrency)
{
	long j = seg_at(s, t);
	if (j < 0)
		return 0;
	const double *I = concurrency ? s->G : s->F;
	int c = s->cnt[j];
	double rate = concurrency ? (c >= 2) : (c > 0 ? 1.0 / c : 0);
	return I[j] + (t - s->b[j]) * ((size_t)j + 1 < s->n ? rate : 0);
}

/* The busy time of a segment set: where anything runs. */
static int64_t seg_busy(const struct seg *s)
{
	double b = 0;
	for (size_t j = 0; j + 1 < s->n; j++)
		b += s->cnt[j] > 0 ? s->b[j + 1] - s->b[j] : 0;
	return (int64_t)llround(b);
}

/* ---- entries ------------------------------------------------------------------------------------ */

static const char *name_of(const struct rec_dispatch *d)
{
	return d->kernel && *d->kernel ? d->kernel : "(unnamed)";
}

static int cmp_name(const void *a, const void *b)
{
	const struct rec_dispatch *const *x = a, *const *y = b;
	return strcmp(name_of(*x), name_of(*y));
}

/* Entries and each dispatch's entry (eidx[i] for r->kernels.v[i]). */
static int make_entries(const struct recording *r, bool per_dispatch, struct kc_result *k, size_t *eidx)
{
	const struct rec_kernels *K = &r->kernels;
	k->e = calloc(K->n ? K->n : 1, sizeof(*k->e));
	if (!k->e)
		return -ENOMEM;
	if (per_dispatch) {
		for (size_t i = 0; i < K->n; i++) {
			k->e[i] = (struct kc_entry){ .name = name_of(&K->v[i]), .d = &K->v[i],
						     .gpu = kc_dispatch_gpu(r, &K->v[i]) };
			eidx[i] = i;
		}
		k->n = K->n;
		return 0;
	}
	const struct rec_dispatch **p = malloc((K->n ? K->n : 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	for (size_t i = 0; i < K->n; i++)
		p[i] = &K->v[i];
	qsort(p, K->n, sizeof(*p), cmp_name);
	for (size_t i = 0; i < K->n; i++) {
		if (!i || strcmp(name_of(p[i]), name_of(p[i - 1])))
			k->e[k->n++] = (struct kc_entry){ .name = name_of(p[i]), .gpu = kc_dispatch_gpu(r, p[i]) };
		eidx[p[i] - K->v] = k->n - 1;
	}
	free(p);
	return 0;
}

/* Time, concurrency and energy of every entry. */
static void entry_times(const struct recording *r, struct kc_result *k, const size_t *eidx, const struct seg *gs,
			const uint32_t *gpus, uint32_t ng, kc_energy_fn energy, void *user)
{
	const struct rec_kernels *K = &r->kernels;
	for (size_t i = 0; i < k->n; i++) {
		k->e[i].energy_j = k->e[i].energy_wall_j = energy ? 0 : NAN;
		if (!energy)
			snprintf(k->e[i].energy_reason, sizeof(k->e[i].energy_reason), "no energy counter");
	}
	for (size_t i = 0; i < K->n; i++) {
		const struct rec_dispatch *d = &K->v[i];
		struct kc_entry *e = &k->e[eidx[i]];
		e->count++;
		if (!d->mapped) {
			e->unmapped++;
			continue;
		}
		uint32_t gpu = kc_dispatch_gpu(r, d);
		const struct seg *s = NULL;
		for (uint32_t g = 0; g < ng; g++)
			if (gpus[g] == gpu)
				s = &gs[g];
		double a = (double)d->start_ns, b = (double)d->end_ns;
		e->time_ns += d->end_ns - d->start_ns;
		e->concurrent_ns += s ? (int64_t)llround(seg_F(s, b, true) - seg_F(s, a, true)) : 0;
		if (!energy || isnan(e->energy_j) || d->end_ns <= d->start_ns)
			continue;
		char why[96] = "";
		double w = energy(user, gpu, d->start_ns, d->end_ns, why, sizeof(why)), sh = 0;
		/* shared: each piece of [start, end) where cnt dispatches run gives it 1/cnt of its energy */
		for (long j = s ? seg_at(s, a) : -1; s && j >= 0 && (size_t)j + 1 < s->n && s->b[j] < b && !isnan(sh);
		     j++) {
			double x = fmax(s->b[j], a), y = fmin(s->b[j + 1], b);
			if (y <= x || s->cnt[j] <= 0)
				continue;
			double p = energy(user, gpu, (int64_t)llround(x), (int64_t)llround(y), why, sizeof(why));
			sh += p / s->cnt[j];
		}
		if (!s)
			sh = w;
		if (isnan(w) || isnan(sh)) {
			e->energy_j = e->energy_wall_j = NAN;
			snprintf(e->energy_reason, sizeof(e->energy_reason), "%s", why[0] ? why : "no energy there");
			continue;
		}
		e->energy_wall_j += w;
		e->energy_j += sh;
	}
	for (size_t i = 0; i < k->n; i++) {
		struct kc_entry *e = &k->e[i];
		if (e->time_ns <= 0 && !isnan(e->energy_j) && energy) {
			e->energy_j = e->energy_wall_j = NAN;
			snprintf(e->energy_reason, sizeof(e->energy_reason), "%s",
				 e->unmapped ? "not on the timebase" : "no time");
		}
		e->power_w = e->time_ns > 0 ? e->energy_wall_j / ((double)e->time_ns * 1e-9) : NAN;
	}
}

/* ---- counters ------------------------------------------------------------------------------------ */

static int counts_alloc(struct kc_counts *c, uint32_t nxcc, uint32_t ncols, size_t nm)
{
	c->total = calloc(ncols ? ncols : 1, sizeof(double));
	c->rate = calloc(ncols ? ncols : 1, sizeof(double));
	c->saturated = calloc(ncols ? ncols : 1, sizeof(*c->saturated));
	c->metric = calloc(nm ? nm : 1, sizeof(*c->metric));
	c->metric_reason = calloc(nm ? nm : 1, sizeof(*c->metric_reason));
	c->xcc_total = calloc(nxcc ? nxcc : 1, sizeof(*c->xcc_total));
	if (!c->total || !c->rate || !c->saturated || !c->metric || !c->metric_reason || !c->xcc_total)
		return -ENOMEM;
	for (uint32_t x = 0; x < nxcc; x++)
		if (!(c->xcc_total[x] = calloc(ncols ? ncols : 1, sizeof(double))))
			return -ENOMEM;
	c->coverage = 1;
	return 0;
}

static void counts_free(struct kc_counts *c, uint32_t nxcc)
{
	free(c->total);
	free(c->rate);
	free(c->saturated);
	free(c->metric);
	free(c->metric_reason);
	for (uint32_t x = 0; c->xcc_total && x < nxcc; x++)
		free(c->xcc_total[x]);
	free(c->xcc_total);
}

/* Where sample k's interval begins: the previous sample, or one period back after a gap or at the start. */
static double interval_start(const struct rec_table *t, size_t k, double P)
{
	double tk = (double)t->t_ns[k];
	if (k == 0)
		return tk - P;
	double prev = (double)t->t_ns[k - 1];
	return tk - prev > GAP_PERIODS * P ? tk - P : prev;
}

/* First sample with t_ns > x. */
static size_t first_after(const struct rec_table *t, double x)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if ((double)t->t_ns[mid] <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct kc_frame {
	const struct kc_counts *c;
	long saturated_col;
};

static bool kc_value(void *user, size_t col, const char *name, unsigned int xcc, double *v)
{
	(void)name;
	struct kc_frame *f = user;
	double x = f->c->xcc_total[xcc][col];
	if (isnan(x)) {
		if (f->saturated_col < 0)
			f->saturated_col = (long)col;
		return false;
	}
	*v = x;
	return true;
}

/* Totals, rates, coverage reason and metrics of one entry's counts once its shares are summed. */
static void counts_finish(const struct rec_gpu *g, const struct mx_set *m, struct kc_gpu *kg, struct kc_counts *c,
			  int64_t time_ns, double covered_worst, double min_coverage, bool outside)
{
	c->coverage = time_ns > 0 && !outside ? covered_worst / (double)time_ns : 1;
	if (c->coverage > 1)
		c->coverage = 1;
	c->lost_ns = time_ns > 0 && !outside ? (int64_t)llround((double)time_ns - covered_worst) : 0;
	if (c->lost_ns < 0)
		c->lost_ns = 0;
	c->blanked = !(c->coverage >= min_coverage);
	c->reason[0] = 0;
	if (c->blanked)
		snprintf(c->reason, sizeof(c->reason), "coverage %d %%: %.3f ms of its dispatch time has no sample "
			 "(lost samples, or before the first or after the last)", pc_pct(c->coverage),
			 (double)c->lost_ns / 1e6);
	else if (c->coverage < 1)
		snprintf(c->reason, sizeof(c->reason), "partial: %d %% coverage", pc_pct(c->coverage));
	double secs = (double)time_ns * 1e-9;
	for (uint32_t col = 0; col < kg->ncols; col++) {
		double tot = 0;
		for (uint32_t x = 0; x < kg->nxcc; x++)
			tot += c->xcc_total[x][col];
		c->total[col] = c->blanked ? NAN : tot;
		c->rate[col] = secs > 0 ? c->total[col] / secs : NAN;
	}
	struct kc_frame fd = { c, -1 };
	struct mx_frame f = { .nxcc = g->nspm, .interval = c->samples * g->interval, .dt = secs,
			      .se_per_xcc = g->num_se, .cus_per_se = g->cus_per_se, .cu_count = g->cu_count,
			      .value = kc_value, .user = &fd };
	for (size_t i = 0; m && i < kg->nmetrics; i++) {
		fd.saturated_col = -1;
		if (mx_eval(m, i, &f, &c->metric[i]) < 0)
			c->metric[i] = (struct mx_value){ 0, true };
		if (c->blanked) {
			c->metric[i] = (struct mx_value){ 0, true };
			snprintf(c->metric_reason[i], sizeof(c->metric_reason[i]), "%s", c->reason);
		} else if (c->metric[i].missing && fd.saturated_col >= 0) {
			snprintf(c->metric_reason[i], sizeof(c->metric_reason[i]), "%s saturated in a sample it shares",
				 kg->cols[fd.saturated_col]);
		}
	}
}

/* One GPU: every dispatch's share of every sample, per XCC. */
static int gpu_counts(const struct recording *r, const struct rec_gpu *g, const struct mx_set *m,
		      const struct seg *s, struct kc_result *k, const size_t *eidx, struct kc_gpu *kg)
{
	const struct rec_kernels *K = &r->kernels;
	kg->gpu = g->index;
	kg->nxcc = g->nspm;
	kg->ncols = g->spm[0].ncols;
	kg->cols = (const char *const *)g->spm[0].cols;
	kg->nmetrics = m ? mx_set_count(m) : 0;
	kg->c = calloc(k->n ? k->n : 1, sizeof(*kg->c));
	double *covered = calloc((k->n ? k->n : 1) * (size_t)kg->nxcc, sizeof(double));
	if (!kg->c || !covered) {
		free(covered);
		return -ENOMEM;
	}
	int rc = counts_alloc(&kg->outside, kg->nxcc, kg->ncols, kg->nmetrics);
	for (size_t i = 0; !rc && i < k->n; i++)
		rc = counts_alloc(&kg->c[i], kg->nxcc, kg->ncols, kg->nmetrics);
	for (uint32_t x = 0; !rc && x < g->nspm; x++) {
		const struct rec_table *t = &g->spm[x];
		struct pc_period per;
		pc_period_of(t, &per);
		double P = per.ns > 0 ? per.ns : 0;
		/* every sample whole: the outside part is this minus the dispatches' shares */
		for (size_t j = 0; j < t->n; j++)
			for (uint32_t col = 0; col < t->ncols && col < kg->ncols; col++) {
				double v = t->v[col][j];
				kg->outside.xcc_total[x][col] += v; /* NAN stays NAN: unknown */
				kg->outside.saturated[col] += isnan(v);
			}
		if (x == 0)
			kg->outside.samples = (double)t->n;
		for (size_t i = 0; P > 0 && i < K->n; i++) {
			const struct rec_dispatch *d = &K->v[i];
			if (!d->mapped || kc_dispatch_gpu(r, d) != g->index || d->end_ns <= d->start_ns)
				continue;
			struct kc_counts *c = &kg->c[eidx[i]];
			double a = (double)d->start_ns, b = (double)d->end_ns;
			for (size_t j = first_after(t, a); j < t->n; j++) {
				double lo = interval_start(t, j, P), hi = (double)t->t_ns[j];
				if (lo >= b)
					break;
				double x0 = fmax(lo, a), x1 = fmin(hi, b);
				if (x1 <= x0 || hi <= lo)
					continue;
				covered[eidx[i] * kg->nxcc + x] += x1 - x0;
				double w = (seg_F(s, x1, false) - seg_F(s, x0, false)) / (hi - lo);
				if (x == 0)
					c->samples += w;
				for (uint32_t col = 0; col < t->ncols && col < kg->ncols; col++) {
					double v = t->v[col][j];
					c->xcc_total[x][col] += w * v;
					c->saturated[col] += isnan(v);
					if (!isnan(v))
						kg->outside.xcc_total[x][col] -= w * v;
				}
				if (x == 0)
					kg->outside.samples -= w;
			}
		}
	}
	bool *mine = calloc(k->n ? k->n : 1, sizeof(*mine));
	if (!rc && !mine)
		rc = -ENOMEM;
	for (size_t j = 0; !rc && j < K->n; j++)
		mine[eidx[j]] |= K->v[j].mapped && kc_dispatch_gpu(r, &K->v[j]) == g->index;
	for (size_t i = 0; !rc && i < k->n; i++) {
		double worst = INFINITY;
		for (uint32_t x = 0; x < kg->nxcc; x++)
			worst = fmin(worst, covered[i * kg->nxcc + x]);
		if (!mine[i]) {
			/* another GPU's kernel, or one without time: no counters here */
			for (uint32_t col = 0; col < kg->ncols; col++)
				kg->c[i].total[col] = kg->c[i].rate[col] = NAN;
			for (size_t q = 0; q < kg->nmetrics; q++)
				kg->c[i].metric[q] = (struct mx_value){ 0, true };
			kg->c[i].blanked = true;
			snprintf(kg->c[i].reason, sizeof(kg->c[i].reason), "%s",
				 k->e[i].unmapped ? "not on the timebase (start_ns/end_ns empty)" : "not on this GPU");
			continue;
		}
		counts_finish(g, m, kg, &kg->c[i], k->e[i].time_ns, isfinite(worst) ? worst : 0, k->min_coverage,
			      false);
	}
	if (!rc) {
		/* what no dispatch ran in: no rate (its time is the gaps), never blanked */
		counts_finish(g, m, kg, &kg->outside, 0, 0, 0, true);
		for (uint32_t col = 0; col < kg->ncols; col++)
			kg->outside.rate[col] = NAN;
	}
	free(mine);
	free(covered);
	return rc;
}

/* ---- the whole --------------------------------------------------------------------------------- */

static void span_of(const struct rec_table *t, int64_t *lo, int64_t *hi)
{
	if (!t->n)
		return;
	*lo = t->t_ns[0] < *lo ? t->t_ns[0] : *lo;
	*hi = t->t_ns[t->n - 1] > *hi ? t->t_ns[t->n - 1] : *hi;
}

/* Entries by total time, longest first (names); the counts move with them. */
static int sort_entries(struct kc_result *k)
{
	size_t *perm = malloc((k->n ? k->n : 1) * sizeof(*perm));
	struct kc_entry *e = malloc((k->n ? k->n : 1) * sizeof(*e));
	struct kc_counts *c = malloc((k->n ? k->n : 1) * sizeof(*c));
	int rc = perm && e && c ? 0 : -ENOMEM;
	for (size_t i = 0; !rc && i < k->n; i++)
		perm[i] = i;
	/* insertion sort: a few names */
	for (size_t i = 1; !rc && i < k->n; i++)
		for (size_t j = i; j > 0 && k->e[perm[j]].time_ns > k->e[perm[j - 1]].time_ns; j--) {
			size_t tmp = perm[j];
			perm[j] = perm[j - 1];
			perm[j - 1] = tmp;
		}
	for (size_t i = 0; !rc && i < k->n; i++)
		e[i] = k->e[perm[i]];
	if (!rc)
		memcpy(k->e, e, k->n * sizeof(*e));
	for (uint32_t g = 0; !rc && g < k->ngpu; g++) {
		for (size_t i = 0; i < k->n; i++)
			c[i] = k->g[g].c[perm[i]];
		memcpy(k->g[g].c, c, k->n * sizeof(*c));
	}
	free(perm);
	free(e);
	free(c);
	return rc;
}

int kc_compute(const struct recording *r, struct mx_set *const *metrics, kc_energy_fn energy, void *user,
	       double min_coverage, bool per_dispatch, struct kc_result **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!r->kernels.n)
		return spmtap_seterr(err, errlen, ENODATA, "%s has no kernel dispatches (record with an app: spmtap "
				     "record ... -- APP)", r->base);
	struct kc_result *k = calloc(1, sizeof(*k));
	size_t *eidx = malloc(r->kernels.n * sizeof(*eidx));
	struct seg all, gs[REC_MAX_GPUS];
	uint32_t gpus[REC_MAX_GPUS], ng = 0;
	memset(&all, 0, sizeof(all));
	memset(gs, 0, sizeof(gs));
	int rc = k && eidx ? 0 : -ENOMEM;
	if (!rc) {
		k->per_dispatch = per_dispatch;
		k->min_coverage = min_coverage;
		k->dispatches = r->kernels.n;
		k->unmapped = r->kernels.unmapped;
		rc = make_entries(r, per_dispatch, k, eidx);
	}
	/* the data's span, for the time share; without data, the dispatches' own */
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	for (uint32_t i = 0; i < r->ngpu; i++) {
		span_of(&r->gpu[i].smi, &lo, &hi);
		for (uint32_t x = 0; x < r->gpu[i].nspm; x++)
			span_of(&r->gpu[i].spm[x], &lo, &hi);
	}
	for (size_t i = 0; i < r->kernels.n; i++)
		if (r->kernels.v[i].mapped) {
			lo = r->kernels.v[i].start_ns < lo ? r->kernels.v[i].start_ns : lo;
			hi = r->kernels.v[i].end_ns > hi ? r->kernels.v[i].end_ns : hi;
		}
	if (!rc)
		k->span_ns = hi > lo ? hi - lo : 0;
	if (!rc)
		rc = seg_build(r, -1, &all);
	if (!rc) {
		k->busy_ns = seg_busy(&all);
		/* per GPU: only a GPU's own dispatches share its counters */
		for (size_t i = 0; i < r->kernels.n; i++) {
			uint32_t g = kc_dispatch_gpu(r, &r->kernels.v[i]), j;
			for (j = 0; j < ng && gpus[j] != g; j++)
				;
			if (j == ng && ng < REC_MAX_GPUS)
				gpus[ng++] = g;
		}
		for (uint32_t j = 0; !rc && j < ng; j++) {
			rc = seg_build(r, gpus[j], &gs[j]);
			if (!rc && gs[j].n)
				k->concurrent_ns += (int64_t)llround(gs[j].G[gs[j].n - 1]);
		}
	}
	if (!rc)
		entry_times(r, k, eidx, gs, gpus, ng, energy, user);
	for (uint32_t i = 0; !rc && i < r->ngpu; i++) {
		const struct rec_gpu *g = &r->gpu[i];
		if (!g->nspm || !g->spm[0].ncols)
			continue;
		const struct seg *s = &all;
		for (uint32_t j = 0; j < ng; j++)
			if (gpus[j] == g->index)
				s = &gs[j];
		rc = gpu_counts(r, g, metrics ? metrics[i] : NULL, s, k, eidx, &k->g[k->ngpu++]);
	}
	if (!rc && !per_dispatch)
		rc = sort_entries(k);
	seg_free(&all);
	for (uint32_t j = 0; j < ng; j++)
		seg_free(&gs[j]);
	free(eidx);
	if (rc) {
		kc_free(k);
		return spmtap_seterr(err, errlen, -rc, "kernels: out of memory");
	}
	*out = k;
	return 0;
}

void kc_free(struct kc_result *k)
{
	if (!k)
		return;
	for (uint32_t g = 0; g < k->ngpu; g++) {
		for (size_t i = 0; k->g[g].c && i < k->n; i++)
			counts_free(&k->g[g].c[i], k->g[g].nxcc);
		counts_free(&k->g[g].outside, k->g[g].nxcc);
		free(k->g[g].c);
	}
	free(k->e);
	free(k);
}
