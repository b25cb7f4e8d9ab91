/* SPDX-License-Identifier: MIT */
/* One GPU's figure of a recording (figure.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/figure.h"
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

/*
 * A counter's rate per ms summed over the XCC streams, sample by sample
 * (the k-th sample of every XCC, which the RLCs take together), at XCC 0's
 * times; a sample missing on any XCC is a gap.
 */
static int counter_rate(const struct rec_gpu *g, const char *col, struct fig_data *d, int64_t **t, double **v,
			size_t *n)
{
	size_t m = SIZE_MAX;
	for (uint32_t x = 0; x < g->nspm; x++)
		if (g->spm[x].n < m)
			m = g->spm[x].n;
	if (!g->nspm || m == SIZE_MAX || m < 2)
		return -ENOENT;
	*t = keep(d, m * sizeof(**t));
	*v = keep(d, m * sizeof(**v));
	if (!*t || !*v)
		return -ENOMEM;
	for (size_t k = 0; k < m; k++) {
		double sum = 0;
		for (uint32_t x = 0; x < g->nspm; x++) {
			const struct rec_table *tb = &g->spm[x];
			int c = rec_col(tb, col);
			size_t a = k ? k - 1 : 0, b = k ? k : 1;
			double dt_ms = (double)(tb->t_ns[b] - tb->t_ns[a]) / 1e6;
			double val = c >= 0 ? tb->v[c][k] : NAN;
			sum += dt_ms > 0 ? val / dt_ms : NAN;
		}
		(*t)[k] = g->spm[0].t_ns[k];
		(*v)[k] = sum;
	}
	*n = m;
	return 0;
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
	for (uint32_t c = 0; !rc && t0 && c < t0->ncols && drawn < FIG_MAX_COUNTER_PANELS; c++) {
		int64_t *t;
		double *v;
		size_t n;
		if (counter_rate(g, t0->cols[c], d, &t, &v, &n))
			continue;
		char label[96];
		snprintf(label, sizeof(label), "%s [1/ms]", t0->cols[c]);
		int p = plot_figure_add_panel(f, label, err, errlen);
		struct plot_series s = { .name = t0->cols[c], .unit = "per ms", .panel = p, .t_ns = t, .v = v, .n = n,
					 .style = PLOT_STEP_PRE };
		rc = p < 0 ? p : plot_figure_add_series(f, &s, err, errlen);
		rc = rc < 0 ? rc : 0;
		drawn++;
	}
	if (!rc && note && counters > drawn)
		snprintf(note, notelen, "%u counter columns: the first %u drawn", counters, drawn);
	/* Power: every power signal of this GPU, derived from energy or read, in one panel. */
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
		int64_t *t = keep(d, sg->n * sizeof(*t));
		double *v = keep(d, sg->n * sizeof(*v));
		if (!t || !v) {
			rc = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
			break;
		}
		for (size_t k = 0; k < sg->n; k++) {
			t[k] = sg->r[k].t_ns;
			v[k] = sg->r[k].v;
		}
		char name[96];
		snprintf(name, sizeof(name), "%s%s", own, sg->unit == SA_UNIT_J ? " (dE/dt)" : "");
		struct plot_series s = { .name = name, .unit = "W", .panel = pp, .t_ns = t, .v = v, .n = sg->n,
					 .style = sg->unit == SA_UNIT_J ? PLOT_STEP_PRE : PLOT_STEP_POST };
		sidx[i] = plot_figure_add_series(f, &s, err, errlen);
		rc = sidx[i] < 0 ? sidx[i] : 0;
	}
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
