/* SPDX-License-Identifier: MIT */
/* One GPU's figure of a recording (figure.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/figure.h"
#include "collector/analysis/kernel_counters.h"
#include "log.h"

struct fig_data {
	size_t n;
	void *ptr[64]; /* arrays the figure borrows */
};

static void *keep(struct fig_data *d, size_t bytes)
{
	if (d->n == sizeof(d->ptr) / sizeof(d->ptr[0]))
		return NULL;
	void *p = calloc(1, bytes ? bytes : 1);
	if (p)
		d->ptr[d->n++] = p;
	return p;
}

void fig_data_free(struct fig_data *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		free(d->ptr[i]);
	free(d);
}

int fig_phase_selected(const struct fig_opts *o, const char *name)
{
	/* By default an "idle" phase is the background the paper's figures leave white. */
	if (!o || !o->nphase)
		return strcmp(name, "idle") != 0;
	for (size_t i = 0; i < o->nphase; i++) {
		size_t l = strlen(o->phase[i]);
		if (l && o->phase[i][l - 1] == '*' ? !strncmp(name, o->phase[i], l - 1) : !strcmp(name, o->phase[i]))
			return 1;
	}
	return 0;
}

/* The trace signals of GPU g: all of them for a one-GPU recording, else those named "gpuN.". */
static const char *own_signal(const struct recording *r, uint32_t g, const char *name)
{
	if (r->ngpu <= 1)
		return name;
	char p[24];
	snprintf(p, sizeof(p), "gpu%u.", g);
	return strncmp(name, p, strlen(p)) ? NULL : name + strlen(p);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* The median step of a time series (n >= 2), 0 when it has none: its sampling period. */
static int64_t median_step(const int64_t *t, size_t n)
{
	if (n < 2)
		return 0;
	/* at most 4096 steps, spread over the series: the period, not every jitter */
	size_t m = n - 1 < 4096 ? n - 1 : 4096;
	int64_t *d = malloc(m * sizeof(*d));
	if (!d)
		return 0;
	for (size_t i = 0; i < m; i++) {
		size_t k = 1 + i * (n - 1) / m;
		d[i] = t[k] - t[k - 1];
	}
	qsort(d, m, sizeof(*d), cmp_i64);
	int64_t r = d[m / 2] > 0 ? d[m / 2] : 0;
	free(d);
	return r;
}

/* Stretches to mark in a panel, in time order. */
struct spans {
	int64_t (*v)[2];
	size_t n, cap;
};

/* [a, b] onto the list, merged with the one before when they touch (within `join` ns). */
static int span_add(struct spans *s, int64_t a, int64_t b, int64_t join)
{
	if (s->n && a <= s->v[s->n - 1][1] + join) {
		if (b > s->v[s->n - 1][1])
			s->v[s->n - 1][1] = b;
		return 0;
	}
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 16;
		void *p = realloc(s->v, ncap * sizeof(*s->v));
		if (!p)
			return -ENOMEM;
		s->v = p;
		s->cap = ncap;
	}
	s->v[s->n][0] = a;
	s->v[s->n][1] = b;
	s->n++;
	return 0;
}

static int spans_to_panel(struct plot_figure *f, int panel, enum plot_span_kind k, const struct spans *s, char *err,
			  size_t errlen)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < s->n; i++)
		rc = plot_figure_add_span(f, panel, k, s->v[i][0], s->v[i][1], err, errlen);
	return rc;
}

/* What one counter's panel shows beside its line. */
struct counter_marks {
	struct spans lost, sat;
	size_t samples, saturated; /* XCC-0 samples with a value from every XCC, and those saturated */
};

/*
 * A counter's rate per ms summed over the XCC streams, sample by sample:
 * the RLCs of a GPU sample together, so XCC x's sample at XCC 0's time
 * plus x's offset at the start (whatever the samples lost before it).
 * Each sample's value counts over one sampling period P (the median
 * step), which ends at its timestamp: after a stretch without samples
 * (a step over 1.5 P: lost), the line breaks (a NaN at t - P) and the
 * stretch is marked lost; dividing by the whole step would draw a low
 * level across it.  A cell with no value (NAN: saturated, contract of
 * recording.h) on any XCC makes the sum unknown: a break, marked saturated.
 * A sample missing on another XCC only is lost too.
 */
static int counter_rate(const struct rec_gpu *g, const char *col, struct fig_data *d, int64_t **t, double **v,
			size_t *n, struct counter_marks *mk)
{
	const struct rec_table *t0 = &g->spm[0];
	size_t m = t0->n;
	if (!g->nspm || m < 2)
		return -ENOENT;
	int64_t P = median_step(t0->t_ns, m);
	if (P <= 0)
		return -ENOENT;
	*t = keep(d, 2 * m * sizeof(**t));
	*v = keep(d, 2 * m * sizeof(**v));
	if (!*t || !*v)
		return -ENOMEM;
	int cidx[REC_MAX_XCC];
	size_t j[REC_MAX_XCC] = { 0 };
	int64_t off[REC_MAX_XCC];
	for (uint32_t x = 0; x < g->nspm; x++) {
		cidx[x] = rec_col(&g->spm[x], col);
		off[x] = g->spm[x].n ? g->spm[x].t_ns[0] - t0->t_ns[0] : 0;
	}
	size_t o = 0;
	int64_t sat_from = -1;
	double per_ms = (double)P / 1e6;
	for (size_t k = 0; k < m; k++) {
		int64_t tk = t0->t_ns[k];
		if (k && tk - t0->t_ns[k - 1] > P + P / 2) {
			/* a saturated run ends where the data does: the gap is lost, not saturated */
			if (sat_from >= 0 && span_add(&mk->sat, sat_from, t0->t_ns[k - 1], 2 * P))
				return -ENOMEM;
			sat_from = -1;
			if (span_add(&mk->lost, t0->t_ns[k - 1], tk - P, P))
				return -ENOMEM;
			(*t)[o] = tk - P;
			(*v)[o++] = NAN;
		}
		double sum = 0;
		bool missing = false, sat = false;
		for (uint32_t x = 0; x < g->nspm; x++) {
			const struct rec_table *tb = &g->spm[x];
			int64_t want = tk + off[x];
			while (j[x] < tb->n && tb->t_ns[j[x]] < want - P / 2)
				j[x]++;
			if (j[x] >= tb->n || tb->t_ns[j[x]] > want + P / 2) {
				missing = true;
				continue;
			}
			double val = cidx[x] >= 0 ? tb->v[cidx[x]][j[x]] : NAN;
			if (cidx[x] < 0)
				missing = true;
			else if (isnan(val))
				sat = true;
			else
				sum += val;
		}
		if (missing && !sat) {
			if (sat_from >= 0 && span_add(&mk->sat, sat_from, tk - P, 2 * P))
				return -ENOMEM;
			sat_from = -1;
			if (span_add(&mk->lost, tk - P, tk, P))
				return -ENOMEM;
			(*t)[o] = tk;
			(*v)[o++] = NAN;
			continue;
		}
		mk->samples++;
		if (sat) {
			mk->saturated++;
			if (sat_from < 0)
				sat_from = tk - P;
			(*t)[o] = tk;
			(*v)[o++] = NAN;
			continue;
		}
		if (sat_from >= 0 && span_add(&mk->sat, sat_from, tk - P, 2 * P))
			return -ENOMEM;
		sat_from = -1;
		/* the first sample after a break covers (tk - P, tk]: start its step there */
		if (o && isnan((*v)[o - 1]) && (*t)[o - 1] < tk - P) {
			(*t)[o] = tk - P;
			(*v)[o++] = NAN;
		}
		(*t)[o] = tk;
		(*v)[o++] = sum / per_ms;
	}
	if (sat_from >= 0 && span_add(&mk->sat, sat_from, t0->t_ns[m - 1], 2 * P))
		return -ENOMEM;
	*n = o;
	return 0;
}

/*
 * Stretches in which the recorder read no sensor at all: steps of the
 * GPU's sensor rows (host time) over 3 periods, i.e. two readings or more
 * missed in a row (the sensor thread's deadline misses, a cut file).  A
 * trace signal's own steps are no guide: it keeps only readings whose
 * sensor timestamp changed, so its steps are the sensor's update cadence.
 */
static int sensor_lost(const struct rec_table *smi, struct spans *lost)
{
	int64_t P = median_step(smi->t_ns, smi->n);
	for (size_t k = 1; P > 0 && k < smi->n; k++)
		if (smi->t_ns[k] - smi->t_ns[k - 1] > 3 * P && span_add(lost, smi->t_ns[k - 1], smi->t_ns[k], 0))
			return -ENOMEM;
	return 0;
}

/*
 * A sensor signal as drawn: where a step between readings holds a stretch
 * in which nothing was read (`lost`), the line breaks, a reading holding
 * one period P (the signal's median step) past its time and no further.
 * After the last reading nothing is drawn.  Energy-derived power (pre:
 * over (t[k-1], t[k]]) does not break: the energy counter went on counting
 * while nobody read it, so the step's value is the exact mean over it.
 */
static int sensor_series(const struct sa_signal *sg, bool pre, const struct spans *lost, struct fig_data *d,
			 int64_t **t, double **v, size_t *n)
{
	*t = keep(d, 2 * sg->n * sizeof(**t));
	*v = keep(d, 2 * sg->n * sizeof(**v));
	int64_t *raw = malloc(sg->n * sizeof(*raw));
	if (!*t || !*v || !raw) {
		free(raw);
		return -ENOMEM;
	}
	for (size_t k = 0; k < sg->n; k++)
		raw[k] = sg->r[k].t_ns;
	int64_t P = median_step(raw, sg->n);
	free(raw);
	size_t o = 0, j = 0;
	for (size_t k = 0; k < sg->n; k++) {
		int64_t tk = sg->r[k].t_ns, tp = k ? sg->r[k - 1].t_ns : tk;
		while (j < lost->n && lost->v[j][1] <= tp)
			j++;
		if (!pre && k && j < lost->n && lost->v[j][0] < tk) {
			int64_t cut = tp + P;
			(*t)[o] = cut < tp ? tp : cut > tk ? tk : cut;
			(*v)[o++] = NAN;
		}
		(*t)[o] = tk;
		(*v)[o++] = sg->r[k].v;
	}
	*n = o;
	return 0;
}

/*
 * The GPU's dispatches as slices, a track per application queue (pid and
 * queue id) in order of first use; queues beyond PLOT_MAX_TRACKS share the
 * last track (the note says so).
 */
static int add_kernels(const struct recording *r, uint32_t gpu, struct plot_figure *f, char *note, size_t notelen,
		       char *err, size_t errlen)
{
	struct { int64_t pid; uint64_t q; } key[PLOT_MAX_TRACKS];
	int nk = 0, rc = 0;
	bool pids = false, merged = false;
	const struct rec_kernels *K = &r->kernels;
	for (size_t i = 0; i < K->n; i++)
		pids |= K->v[i].mapped && K->v[i].pid != K->v[0].pid;
	/* the lanes in (pid, queue) order, so that queue 1 is above queue 2 whichever ran first */
	for (size_t i = 0; i < K->n; i++) {
		const struct rec_dispatch *d = &K->v[i];
		if (!d->mapped || kc_dispatch_gpu(r, d) != gpu)
			continue;
		int k = 0;
		while (k < nk && (key[k].pid != d->pid || key[k].q != d->queue_id))
			k++;
		if (k < nk)
			continue;
		if (nk == PLOT_MAX_TRACKS) {
			merged = true;
			continue;
		}
		for (k = nk++; k > 0 && (key[k - 1].pid > d->pid || (key[k - 1].pid == d->pid && key[k - 1].q > d->queue_id));
		     k--)
			key[k] = key[k - 1];
		key[k].pid = d->pid;
		key[k].q = d->queue_id;
	}
	for (int k = 0; !rc && k < nk; k++) {
		char label[64];
		if (pids)
			snprintf(label, sizeof(label), "pid %lld queue %llu", (long long)key[k].pid,
				 (unsigned long long)key[k].q);
		else
			snprintf(label, sizeof(label), "queue %llu", (unsigned long long)key[k].q);
		rc = plot_figure_add_track(f, label, err, errlen);
		rc = rc < 0 ? rc : 0;
	}
	for (size_t i = 0; !rc && i < K->n; i++) {
		const struct rec_dispatch *d = &K->v[i];
		if (!d->mapped || kc_dispatch_gpu(r, d) != gpu)
			continue;
		int k = 0;
		while (k < nk && (key[k].pid != d->pid || key[k].q != d->queue_id))
			k++;
		rc = plot_figure_add_slice(f, k < nk ? k : nk - 1, d->start_ns, d->end_ns, d->kernel, err, errlen);
	}
	if (!rc && merged && note)
		snprintf(note + strlen(note), notelen - strlen(note), "%smore than %d queues: the last track holds the rest",
			 note[0] ? "; " : "", PLOT_MAX_TRACKS);
	return rc;
}

int fig_build(const struct recording *r, uint32_t gpu, const struct sa_trace *tr, const struct sa_report *rep,
	      const struct fig_opts *o, struct plot_figure **fig, struct fig_data **data, char *note, size_t notelen,
	      char *err, size_t errlen)
{
	*fig = NULL;
	*data = NULL;
	if (note && notelen)
		note[0] = 0;
	const struct rec_gpu *g = rec_gpu(r, gpu);
	if (!g)
		return spmtap_seterr(err, errlen, ENOENT, "%s has no GPU %u", r->base, gpu);
	struct fig_data *d = calloc(1, sizeof(*d));
	char title[200];
	if (o && o->title)
		snprintf(title, sizeof(title), "%s", o->title);
	else
		snprintf(title, sizeof(title), "GPU %u: %s%s%s%s", gpu, g->name[0] ? g->name : "GPU",
			 g->gfx[0] ? " (" : "", g->gfx, g->gfx[0] ? ")" : "");
	struct plot_figure *f = NULL;
	int rc = d ? plot_figure_new(&f, title, err, errlen) : spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	if (!rc && o && (o->width || o->height))
		rc = plot_figure_set_size(f, o->width ? o->width : 1200, o->height ? o->height : 1200, err, errlen);
	json_t *start = json_object_get(r->meta, "start_boottime_ns");
	if (!rc && json_is_integer(start))
		rc = plot_figure_set_origin(f, json_integer_value(start), "recording start", err, errlen);
	/* Counters: one panel each, in the CSV's column order. */
	const struct rec_table *t0 = g->nspm ? &g->spm[0] : NULL;
	uint32_t drawn = 0, counters = t0 ? t0->ncols : 0;
	int64_t rec_end = INT64_MIN;
	for (uint32_t c = 0; !rc && t0 && c < t0->ncols && drawn < FIG_MAX_COUNTER_PANELS; c++) {
		int64_t *t;
		double *v;
		size_t n;
		struct counter_marks mk = { 0 };
		int cr = counter_rate(g, t0->cols[c], d, &t, &v, &n, &mk);
		if (cr == -ENOMEM)
			rc = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
		if (cr) {
			free(mk.lost.v);
			free(mk.sat.v);
			continue;
		}
		char label[96];
		snprintf(label, sizeof(label), "%s [1/ms]", t0->cols[c]);
		int p = plot_figure_add_panel(f, label, err, errlen);
		struct plot_series s = { .name = t0->cols[c], .unit = "per ms", .panel = p, .t_ns = t, .v = v, .n = n,
					 .style = PLOT_STEP_PRE };
		rc = p < 0 ? p : plot_figure_add_series(f, &s, err, errlen);
		rc = rc < 0 ? rc : 0;
		if (!rc)
			rc = spans_to_panel(f, p, PLOT_SPAN_LOST, &mk.lost, err, errlen);
		if (!rc)
			rc = spans_to_panel(f, p, PLOT_SPAN_SATURATED, &mk.sat, err, errlen);
		/* nothing to draw but saturation: say so, rather than an empty panel or a zero */
		if (!rc && mk.saturated && mk.saturated == mk.samples) {
			char msg[160];
			snprintf(msg, sizeof(msg), "%s saturated at this interval: every one of %zu samples", t0->cols[c],
				 mk.samples);
			rc = plot_figure_panel_note(f, p, msg, err, errlen);
		}
		free(mk.lost.v);
		free(mk.sat.v);
		if (n && t[n - 1] > rec_end)
			rec_end = t[n - 1];
		drawn++;
	}
	for (size_t p = 0; p < r->phases.n; p++)
		if (r->phases.v[p].end_ns > rec_end)
			rec_end = r->phases.v[p].end_ns;
	if (!rc && note && counters > drawn)
		snprintf(note, notelen, "%u counter columns: the first %u drawn", counters, drawn);
	/*
	 * Power: every power signal of this GPU, derived from energy or read,
	 * in one panel; what the recorder did not read marked lost, including
	 * the stretches before its first and after its last sensor row where
	 * the rest of the recording (counters, phases) goes on for more than
	 * 10 periods.
	 */
	struct spans smi_lost = { 0 };
	int64_t sp = median_step(g->smi.t_ns, g->smi.n);
	/* likewise before the first sensor row, where the counters already run */
	if (!rc && sp > 0 && g->nspm && g->spm[0].n && g->smi.t_ns[0] - g->spm[0].t_ns[0] > 10 * sp &&
	    span_add(&smi_lost, g->spm[0].t_ns[0], g->smi.t_ns[0] - sp, 0))
		rc = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	if (!rc && sensor_lost(&g->smi, &smi_lost))
		rc = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	if (!rc && sp > 0 && rec_end != INT64_MIN && rec_end - g->smi.t_ns[g->smi.n - 1] > 10 * sp &&
	    span_add(&smi_lost, g->smi.t_ns[g->smi.n - 1] + sp, rec_end, 0))
		rc = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	int sidx[64];
	size_t ns = tr ? sa_trace_nsignals(tr) : 0;
	int pp = -1;
	for (size_t i = 0; !rc && i < ns && i < 64; i++) {
		const struct sa_signal *sg = sa_trace_signal(tr, i);
		sidx[i] = -1;
		const char *own = own_signal(r, gpu, sg->name);
		if (!own || !sg->n)
			continue;
		if (pp < 0 && (pp = plot_figure_add_panel(f, "power [W]", err, errlen)) < 0) {
			rc = pp;
			break;
		}
		int64_t *t;
		double *v;
		size_t n;
		bool pre = sg->unit == SA_UNIT_J;
		if (sensor_series(sg, pre, &smi_lost, d, &t, &v, &n)) {
			rc = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
			break;
		}
		char name[96];
		snprintf(name, sizeof(name), "%s%s", own, pre ? " (dE/dt)" : "");
		struct plot_series s = { .name = name, .unit = "W", .panel = pp, .t_ns = t, .v = v, .n = n,
					 .style = pre ? PLOT_STEP_PRE : PLOT_STEP_POST };
		sidx[i] = plot_figure_add_series(f, &s, err, errlen);
		rc = sidx[i] < 0 ? sidx[i] : 0;
	}
	/*
	 * Hatched: stretches of at least 1 % of the recording.  Shorter ones
	 * (a loaded machine's missed deadlines, a few ms each) break the
	 * readings' lines, but hatching each would bury the power panel.
	 */
	if (!rc && pp >= 0) {
		int64_t lo = g->smi.n ? g->smi.t_ns[0] : INT64_MAX, hi = rec_end;
		if (g->nspm && g->spm[0].n && g->spm[0].t_ns[0] < lo)
			lo = g->spm[0].t_ns[0];
		if (g->smi.n && g->smi.t_ns[g->smi.n - 1] > hi)
			hi = g->smi.t_ns[g->smi.n - 1];
		size_t keep_n = 0;
		for (size_t k = 0; k < smi_lost.n; k++)
			if (hi > lo && (smi_lost.v[k][1] - smi_lost.v[k][0]) * 100 >= hi - lo) {
				smi_lost.v[keep_n][0] = smi_lost.v[k][0];
				smi_lost.v[keep_n++][1] = smi_lost.v[k][1];
			}
		smi_lost.n = keep_n;
		rc = spans_to_panel(f, pp, PLOT_SPAN_LOST, &smi_lost, err, errlen);
	}
	free(smi_lost.v);
	/* Phases (a selection when there are too many to read) and each signal's confidence windows. */
	size_t shown = 0, selected = 0;
	for (size_t p = 0; p < r->phases.n; p++)
		selected += fig_phase_selected(o, r->phases.v[p].name) != 0;
	for (size_t p = 0; !rc && p < r->phases.n && selected <= FIG_MAX_PHASES; p++) {
		const struct sa_phase *ph = &r->phases.v[p];
		if (!fig_phase_selected(o, ph->name))
			continue;
		rc = plot_figure_add_phase(f, ph->start_ns, ph->end_ns, ph->name, err, errlen);
		shown++;
		for (size_t i = 0; !rc && rep && p < rep->nphases && i < ns && i < 64; i++) {
			const struct sa_phase_signal *w = &rep->ph[p].sig[i];
			if (sidx[i] < 0 || isnan(w->window_start_ns) || !(w->window_end_ns > w->window_start_ns))
				continue;
			rc = plot_figure_add_window(f, sidx[i], (int64_t)w->window_start_ns, (int64_t)w->window_end_ns,
						    err, errlen);
		}
	}
	if (!rc && !(o && o->no_kernels))
		rc = add_kernels(r, gpu, f, note, notelen, err, errlen);
	if (!rc && note && selected > FIG_MAX_PHASES)
		snprintf(note + strlen(note), notelen - strlen(note), "%s%zu phases: too many to shade; select some "
			 "with --phase NAME", note[0] ? "; " : "", selected);
	if (!rc && !drawn && pp < 0)
		rc = spmtap_seterr(err, errlen, ENOENT, "GPU %u of %s has neither counters nor power to draw", gpu,
				   r->base);
	(void)shown;
	if (rc) {
		plot_figure_free(f);
		fig_data_free(d);
		return rc;
	}
	*fig = f;
	*data = d;
	return 0;
}
