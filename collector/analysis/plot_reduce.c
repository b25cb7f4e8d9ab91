/* SPDX-License-Identifier: MIT */
/*
 * A series as the path that is drawn: at most a handful of vertices per
 * pixel column (first, min, max, last), whatever the sample count, so a
 * million-sample trace makes an SVG of tens of kB and every spike still
 * shows.  Lines, both staircases and gaps (non-finite values) keep their
 * meaning at the column level; samples just outside the range are cut at
 * its edges so no vertex lies far outside (cairo's fixed-point coordinates
 * would overflow at about +-8e6 px).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "collector/analysis/plot_internal.h"

struct red {
	const struct plot_series *s;
	const struct plot_xmap *m;
	struct plot_path *out;
	int err;
	bool pen;                 /* a subpath is open */
	double cx, cv;            /* its last vertex */
	bool on;                  /* a column is being collected */
	long col;
	double x0, x1, first, lo, hi, last;
	double prev_x1, prev_last; /* end of the column before, while pen */
	bool have_out;            /* a finite sample left of xmin since the last break */
	double out_x, out_v;
	double gap_x;             /* x of the sample that broke the path; NaN if none */
};

static void emit(struct red *r, int op, double x, double v)
{
	if (r->err)
		return;
	if (op == PLOT_LINETO && x == r->cx && v == r->cv)
		return;
	struct plot_path *p = r->out;
	if (p->n == p->cap) {
		size_t ncap = p->cap ? p->cap * 2 : 1024;
		struct plot_pt *n = realloc(p->pt, ncap * sizeof(*n));
		if (!n) {
			r->err = -ENOMEM;
			return;
		}
		p->pt = n;
		p->cap = ncap;
	}
	p->pt[p->n++] = (struct plot_pt){ x, v, op };
	r->cx = x;
	r->cv = v;
}

static double lerp_at(double xa, double va, double xb, double vb, double x)
{
	return xb == xa ? vb : va + (vb - va) * (x - xa) / (xb - xa);
}

/* Close the column: its extremes as a vertical stroke, then its last value. */
static void flush(struct red *r)
{
	if (!r->on)
		return;
	emit(r, PLOT_LINETO, r->x0, r->lo);
	emit(r, PLOT_LINETO, r->x0, r->hi);
	emit(r, PLOT_LINETO, r->x1, r->last);
	r->prev_x1 = r->x1;
	r->prev_last = r->last;
	r->on = false;
}

/* The first sample of a new column, joined to what came before as its style says. */
static void begin(struct red *r, double x, double v)
{
	enum plot_style st = r->s->style;
	double xmin = r->m->xmin;
	if (!r->pen) {
		if (r->have_out) { /* entering from the left edge */
			if (st == PLOT_LINE) {
				emit(r, PLOT_MOVE, xmin, lerp_at(r->out_x, r->out_v, x, v, xmin));
			} else if (st == PLOT_STEP_POST) {
				emit(r, PLOT_MOVE, xmin, r->out_v);
				emit(r, PLOT_LINETO, x, r->out_v);
			} else {
				emit(r, PLOT_MOVE, xmin, v);
			}
			emit(r, PLOT_LINETO, x, v);
		} else if (st == PLOT_STEP_PRE && !isnan(r->gap_x)) {
			/* v covers (t of the missing sample, t]: that much is known */
			emit(r, PLOT_MOVE, fmax(r->gap_x, xmin), v);
			emit(r, PLOT_LINETO, x, v);
		} else {
			emit(r, PLOT_MOVE, x, v);
		}
		r->pen = true;
		r->have_out = false;
		r->gap_x = NAN;
	} else if (st == PLOT_LINE) {
		emit(r, PLOT_LINETO, x, v);
	} else if (st == PLOT_STEP_POST) {
		emit(r, PLOT_LINETO, x, r->prev_last);
		emit(r, PLOT_LINETO, x, v);
	} else {
		emit(r, PLOT_LINETO, r->prev_x1, v);
		emit(r, PLOT_LINETO, x, v);
	}
	r->on = true;
	r->col = (long)floor(x);
	r->x0 = r->x1 = x;
	r->first = r->lo = r->hi = r->last = v;
}

/* A sample right of xmax: run what is open to the edge, then stop. */
static void tail(struct red *r, double x, double v)
{
	enum plot_style st = r->s->style;
	double xmin = r->m->xmin, xmax = r->m->xmax;
	flush(r);
	if (r->pen) {
		if (st == PLOT_LINE)
			emit(r, PLOT_LINETO, xmax, lerp_at(r->prev_x1, r->prev_last, x, v, xmax));
		else if (st == PLOT_STEP_POST)
			emit(r, PLOT_LINETO, xmax, r->prev_last);
		else {
			emit(r, PLOT_LINETO, r->prev_x1, v);
			emit(r, PLOT_LINETO, xmax, v);
		}
	} else if (r->have_out) { /* one segment spans the whole range */
		if (st == PLOT_LINE) {
			emit(r, PLOT_MOVE, xmin, lerp_at(r->out_x, r->out_v, x, v, xmin));
			emit(r, PLOT_LINETO, xmax, lerp_at(r->out_x, r->out_v, x, v, xmax));
		} else {
			double hv = st == PLOT_STEP_POST ? r->out_v : v;
			emit(r, PLOT_MOVE, xmin, hv);
			emit(r, PLOT_LINETO, xmax, hv);
		}
	} else if (st == PLOT_STEP_PRE && !isnan(r->gap_x)) {
		emit(r, PLOT_MOVE, fmax(r->gap_x, xmin), v);
		emit(r, PLOT_LINETO, xmax, v);
	}
}

/* First index whose time is >= t (n if none): the series is sorted by time. */
static size_t lower_bound(const struct plot_series *s, int64_t origin, double t)
{
	size_t a = 0, b = s->n;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (plot_series_t(s, mid, origin) < t)
			a = mid + 1;
		else
			b = mid;
	}
	return a;
}

/* First index whose time is > t (n if none). */
static size_t upper_bound(const struct plot_series *s, int64_t origin, double t)
{
	size_t a = 0, b = s->n;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (plot_series_t(s, mid, origin) <= t)
			a = mid + 1;
		else
			b = mid;
	}
	return a;
}

int plot_reduce(const struct plot_series *s, const struct plot_xmap *m, struct plot_path *out)
{
	out->n = 0;
	if (!s->n)
		return 0;
	struct red r = { .s = s, .m = m, .out = out, .gap_x = NAN, .cx = NAN, .cv = NAN };
	size_t a = lower_bound(s, m->origin, m->t0);
	size_t b = upper_bound(s, m->origin, m->t1);
	/* one neighbour each side, so lines run to the edges */
	a = a > 0 ? a - 1 : 0;
	b = b < s->n ? b + 1 : s->n;
	for (size_t i = a; i < b && !r.err; i++) {
		double x = m->x0 + (plot_series_t(s, i, m->origin) - m->t0) * m->px_per_ns;
		double v = s->v[i];
		if (!isfinite(v)) {
			flush(&r);
			if (r.pen && s->style == PLOT_STEP_POST) /* the last value held until this sample */
				emit(&r, PLOT_LINETO, fmin(x, m->xmax), r.prev_last);
			r.pen = false;
			r.have_out = false;
			r.gap_x = x;
			if (x > m->xmax)
				break;
			continue;
		}
		if (x < m->xmin) {
			r.have_out = true;
			r.out_x = x;
			r.out_v = v;
			r.gap_x = NAN;
			continue;
		}
		if (x > m->xmax) {
			tail(&r, x, v);
			r.on = false;
			break;
		}
		if (r.on && (long)floor(x) == r.col) {
			r.lo = fmin(r.lo, v);
			r.hi = fmax(r.hi, v);
			r.last = v;
			r.x1 = x;
			continue;
		}
		flush(&r);
		begin(&r, x, v);
	}
	flush(&r);
	return r.err;
}

void plot_path_free(struct plot_path *p)
{
	free(p->pt);
	p->pt = NULL;
	p->n = p->cap = 0;
}

bool plot_series_vrange(const struct plot_series *s, const struct plot_xmap *m, double *lo, double *hi)
{
	size_t a = lower_bound(s, m->origin, m->t0);
	size_t b = upper_bound(s, m->origin, m->t1);
	bool any = false;
	double l = INFINITY, h = -INFINITY;
	for (size_t i = a; i < b; i++) {
		double v = s->v[i];
		if (!isfinite(v))
			continue;
		l = fmin(l, v);
		h = fmax(h, v);
		any = true;
	}
	if (any) {
		*lo = l;
		*hi = h;
	}
	return any;
}

bool plot_series_extent(const struct plot_series *s, int64_t *t0, int64_t *t1)
{
	if (!s->n)
		return false;
	if (s->t_ns) {
		*t0 = s->t_ns[0];
		*t1 = s->t_ns[s->n - 1];
	} else {
		*t0 = llround(s->t_ns_f[0]);
		*t1 = llround(s->t_ns_f[s->n - 1]);
	}
	return true;
}

size_t plot_series_count(const struct plot_series *s, const struct plot_xmap *m)
{
	if (!s->n)
		return 0;
	return upper_bound(s, m->origin, m->t1) - lower_bound(s, m->origin, m->t0);
}

int plot_envelope(const struct plot_series *s, const struct plot_xmap *m, struct plot_env *out)
{
	out->n = 0;
	if (!s->n)
		return 0;
	size_t a = lower_bound(s, m->origin, m->t0), b = upper_bound(s, m->origin, m->t1);
	bool brk = true;
	long col = LONG_MIN;
	double sum = 0;
	size_t cnt = 0;
	for (size_t i = a; i <= b; i++) {
		double v = i < b ? s->v[i] : NAN;
		double x = i < b ? m->x0 + (plot_series_t(s, i, m->origin) - m->t0) * m->px_per_ns : NAN;
		long c = isfinite(v) ? (long)floor(x) : LONG_MIN;
		if (cnt && (c != col || !isfinite(v))) { /* close the column */
			out->c[out->n - 1].mean = sum / (double)cnt;
			cnt = 0;
			sum = 0;
		}
		if (!isfinite(v)) {
			brk = true;
			col = LONG_MIN;
			continue;
		}
		if (c != col) {
			if (out->n == out->cap) {
				size_t ncap = out->cap ? out->cap * 2 : 1024;
				struct plot_col *n = realloc(out->c, ncap * sizeof(*n));
				if (!n)
					return -ENOMEM;
				out->c = n;
				out->cap = ncap;
			}
			out->c[out->n++] = (struct plot_col){ (double)c, v, v, v, brk || c > col + 1 };
			brk = false;
			col = c;
		}
		struct plot_col *k = &out->c[out->n - 1];
		k->lo = fmin(k->lo, v);
		k->hi = fmax(k->hi, v);
		sum += v;
		cnt++;
	}
	return 0;
}

void plot_env_free(struct plot_env *e)
{
	free(e->c);
	e->c = NULL;
	e->n = e->cap = 0;
}
