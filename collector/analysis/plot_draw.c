/* SPDX-License-Identifier: MIT */
/*
 * Drawing a figure on any cairo surface, back to front: grid, phase bands,
 * levels, series, confidence windows, markers, then axes, text and legends
 * on top so nothing hides them.  Colours and their meaning: plot.h and
 * docs/plots.md.
 */
#include <cairo.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/plot_internal.h"
#include "log.h"

#define RGB_GRID 0xE6E6E6u
#define RGB_FRAME 0xBBBBBBu
#define RGB_MARK 0x444444u
#define RGB_LEVEL 0x666666u
#define LANE_H 10
#define LEGEND_ROW 17
#define SPAN_CLEAR 10 /* px at the top of a panel that lost/saturated hatching leaves clear */

static void rgb(cairo_t *cr, uint32_t c, double a)
{
	cairo_set_source_rgba(cr, ((c >> 16) & 255) / 255.0, ((c >> 8) & 255) / 255.0, (c & 255) / 255.0, a);
}

static void font(cairo_t *cr, double size, bool bold)
{
	cairo_select_font_face(cr, PLOT_FONT, CAIRO_FONT_SLANT_NORMAL,
			       bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cr, size);
}

static double text_w(cairo_t *cr, const char *s)
{
	cairo_text_extents_t e;
	cairo_text_extents(cr, s, &e);
	return e.x_advance;
}

/*
 * s, cut to fit maxw px with an ellipsis; cuts fall between UTF-8
 * characters (the figure's strings are valid UTF-8: plot.c made them so).
 */
static const char *fit(cairo_t *cr, const char *s, double maxw, char *buf, size_t len)
{
	if (text_w(cr, s) <= maxw)
		return s;
	size_t n = strlen(s);
	if (n + 4 > len)
		n = len - 4;
	for (;;) {
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
		memcpy(buf, s, n);
		memcpy(buf + n, "\xe2\x80\xa6", 4); /* U+2026 and the NUL */
		if (n == 0 || text_w(cr, buf) <= maxw)
			return buf;
		n--;
	}
}

/* Note a string drawn at (x, y) in the frame's text log (the SVG's text layer). */
static void log_text(const struct plot_frame *fr, cairo_t *cr, const char *cls, double x, double y, bool up,
		     const char *s)
{
	struct plot_textlog *l = fr->log;
	if (!l || l->err || !*s)
		return;
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 64;
		struct plot_text *v = realloc(l->v, ncap * sizeof(*v));
		if (!v) {
			l->err = -ENOMEM;
			return;
		}
		l->v = v;
		l->cap = ncap;
	}
	cairo_matrix_t m;
	cairo_get_font_matrix(cr, &m);
	char *d = strdup(s);
	if (!d) {
		l->err = -ENOMEM;
		return;
	}
	l->v[l->n++] = (struct plot_text){ cls, x, y, fabs(m.xx) > 0 ? fabs(m.xx) : fabs(m.xy), up, d };
}

void plot_textlog_free(struct plot_textlog *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].s);
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

/* Text with its left edge at x + ax * -width (ax 0 left, 0.5 centre, 1 right), baseline y. */
static void text_at(const struct plot_frame *fr, cairo_t *cr, const char *cls, double x, double y, double ax,
		    const char *s)
{
	double lx = x - ax * text_w(cr, s);
	cairo_move_to(cr, lx, y);
	cairo_show_text(cr, s);
	log_text(fr, cr, cls, lx, y, false, s);
}

static double x_of(const struct plot_frame *fr, int64_t t)
{
	return fr->xm.x0 + (double)(t - fr->xm.origin) * fr->xm.px_per_ns;
}

/* Far-off vertices are cut: cairo's 24.8 fixed point overflows near 8e6 px. */
static double y_of(const struct plot_frame *fr, int p, double v)
{
	const struct plot_rect *r = &fr->L.panel[p];
	return fmin(fmax(plot_frame_y(fr, p, v), r->y - 1e5), r->y + r->h + 1e5);
}

static void clip_panel(cairo_t *cr, const struct plot_rect *r)
{
	cairo_rectangle(cr, r->x, r->y, r->w, r->h);
	cairo_clip(cr);
}

static void draw_grid(const struct plot_frame *fr, cairo_t *cr)
{
	rgb(cr, RGB_GRID, 1);
	cairo_set_line_width(cr, 1);
	for (int p = 0; p < fr->L.npanels; p++) {
		const struct plot_rect *r = &fr->L.panel[p];
		for (int k = 0; k < fr->p[p].yt.n; k++) {
			double y = floor(plot_frame_y(fr, p, fr->p[p].yt.v[k])) + 0.5;
			if (y <= r->y + 1 || y >= r->y + r->h - 1)
				continue;
			cairo_move_to(cr, r->x, y);
			cairo_line_to(cr, r->x + r->w, y);
		}
		for (int k = 0; k < fr->xt.n; k++) {
			double x = floor(r->x + (fr->xt.v[k] - fr->origin_off) * fr->unit_ns * fr->xm.px_per_ns) + 0.5;
			if (x <= r->x + 1 || x >= r->x + r->w - 1)
				continue;
			cairo_move_to(cr, x, r->y);
			cairo_line_to(cr, x, r->y + r->h);
		}
	}
	cairo_stroke(cr);
}

static void draw_phases(const struct plot_figure *f, const struct plot_frame *fr, cairo_t *cr)
{
	for (int p = 0; p < fr->L.npanels; p++) {
		const struct plot_rect *r = &fr->L.panel[p];
		cairo_save(cr);
		clip_panel(cr, r);
		for (size_t i = 0; i < f->nphases; i++) {
			double a = fmax(x_of(fr, f->phases[i].t0), r->x - 1);
			double b = fmin(x_of(fr, f->phases[i].t1), r->x + r->w + 1);
			if (b <= a)
				continue;
			/* one fill per band, so overlapping phases add up */
			rgb(cr, plot_phase_rgb(f->phases[i].name), PLOT_PHASE_ALPHA);
			cairo_rectangle(cr, a, r->y, b - a, r->h);
			cairo_fill(cr);
		}
		cairo_restore(cr);
	}
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/*
 * One line per distinct phase edge, across every panel: adjacent phases
 * share theirs, and without it two bands of one colour would merge.
 * Edges in the same pixel column draw once.
 */
static int draw_boundaries(const struct plot_figure *f, const struct plot_frame *fr, cairo_t *cr)
{
	if (!f->nphases)
		return 0;
	int64_t *e = malloc(2 * f->nphases * sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < f->nphases; i++) {
		e[2 * i] = f->phases[i].t0;
		e[2 * i + 1] = f->phases[i].t1;
	}
	qsort(e, 2 * f->nphases, sizeof(*e), cmp_i64);
	rgb(cr, PLOT_RGB_BOUNDARY, 1);
	cairo_set_line_width(cr, 1);
	double last = -INFINITY;
	for (size_t i = 0; i < 2 * f->nphases; i++) {
		double x = floor(x_of(fr, e[i])) + 0.5;
		if (x == last)
			continue;
		last = x;
		for (int p = 0; p < fr->L.npanels; p++) {
			const struct plot_rect *r = &fr->L.panel[p];
			if (x <= r->x + 1 || x >= r->x + r->w)
				continue;
			cairo_move_to(cr, x, r->y + 1);
			cairo_line_to(cr, x, r->y + r->h - 1);
		}
	}
	cairo_stroke(cr);
	free(e);
	return 0;
}

static uint32_t span_rgb(enum plot_span_kind k)
{
	return k == PLOT_SPAN_LOST ? PLOT_RGB_LOST : PLOT_RGB_SATURATED;
}

static const char *span_name(enum plot_span_kind k)
{
	return k == PLOT_SPAN_LOST ? "lost" : "saturated";
}

/*
 * Hatching across [x, x + w] of a panel: diagonals only, no fill, so a
 * phase band under it keeps its colour between the lines (a reader, and
 * the pixel tests, still see which phase the stretch belongs to).
 */
static void span_hatch(cairo_t *cr, double x, double y, double w, double h, uint32_t c)
{
	cairo_save(cr);
	cairo_rectangle(cr, x, y, w, h);
	cairo_clip(cr);
	rgb(cr, c, 0.85);
	cairo_set_line_width(cr, 1.2);
	for (double k = x - h - fmod(x, 7); k < x + w; k += 7) {
		cairo_move_to(cr, k, y + h);
		cairo_line_to(cr, k + h, y);
	}
	cairo_stroke(cr);
	cairo_restore(cr);
}

/* Whether any span of kind k touches panel p (for its legend). */
static bool panel_has_span(const struct plot_figure *f, int p, enum plot_span_kind k)
{
	for (size_t i = 0; i < f->nspans; i++)
		if (f->spans[i].kind == k && (f->spans[i].panel == p || f->spans[i].panel < 0))
			return true;
	return false;
}

/* One merged stretch [a, b] px of a panel: pass 0 its hatching, pass 1 its label. */
static void span_mark(const struct plot_frame *fr, cairo_t *cr, const struct plot_rect *r, enum plot_span_kind k,
		      double a, double b, int pass)
{
	if (b - a < 2) {
		a = fmax((a + b) / 2 - 1, r->x);
		b = a + 2;
	}
	if (pass == 0) {
		/*
		 * The top 10 px (inside the headroom no data reaches) stay
		 * clear: there the phase bands read through untouched, so one
		 * can tell which phase lost what.
		 */
		span_hatch(cr, a, r->y + SPAN_CLEAR, b - a, r->h - SPAN_CLEAR, span_rgb(k));
		return;
	}
	const char *nm = span_name(k);
	double tw = text_w(cr, nm);
	if (tw + 6 > b - a)
		return;
	/*
	 * Below the row 5 px under the top that band checks read, on white;
	 * saturated labels a row lower than lost ones, so the two never
	 * cover each other.
	 */
	double y = r->y + 22 + (k == PLOT_SPAN_SATURATED ? 14 : 0);
	rgb(cr, PLOT_RGB_BACKGROUND, 0.9);
	cairo_rectangle(cr, (a + b) / 2 - tw / 2 - 2, y - 10, tw + 4, 13);
	cairo_fill(cr);
	rgb(cr, span_rgb(k), 1);
	text_at(fr, cr, "span", (a + b) / 2, y, 0.5, nm);
}

/*
 * Lost and saturated stretches: hatched, at least 2 px wide so a short one
 * still shows, spans less than a pixel apart merged (spans come in time
 * order per panel), each labelled at its top where the label fits.
 */
static void draw_spans(const struct plot_figure *f, const struct plot_frame *fr, cairo_t *cr)
{
	font(cr, 10, false);
	/* all hatching first, then the labels, so no hatching covers a label */
	for (int pass = 0; pass < 2; pass++)
		for (int p = 0; p < fr->L.npanels; p++) {
			const struct plot_rect *r = &fr->L.panel[p];
			for (int k = PLOT_SPAN_LOST; k <= PLOT_SPAN_SATURATED; k++) {
				double a = NAN, b = NAN;
				for (size_t i = 0; i <= f->nspans; i++) {
					const struct plot_span *sp = i < f->nspans ? &f->spans[i] : NULL;
					if (sp && (sp->kind != (enum plot_span_kind)k || (sp->panel != p && sp->panel >= 0)))
						continue;
					double sa = sp ? fmax(x_of(fr, sp->t0), r->x) : NAN;
					double sb = sp ? fmin(x_of(fr, sp->t1), r->x + r->w) : NAN;
					if (sp && sb < sa)
						continue; /* outside the range */
					if (sp && !isnan(a) && sa <= b + 1) {
						b = fmax(b, sb);
						continue;
					}
					if (!isnan(a))
						span_mark(fr, cr, r, (enum plot_span_kind)k, a, b, pass);
					a = sa;
					b = sb;
				}
			}
		}
}

/* A panel's note: centred, on a white box so it reads over bands and hatching. */
static void draw_notes(const struct plot_figure *f, const struct plot_frame *fr, cairo_t *cr)
{
	char buf[512];
	font(cr, 14, true);
	for (int p = 0; p < fr->L.npanels; p++) {
		if (!f->panel[p].note || !*f->panel[p].note)
			continue;
		const struct plot_rect *r = &fr->L.panel[p];
		const char *s = fit(cr, f->panel[p].note, r->w - 20, buf, sizeof(buf));
		double w = text_w(cr, s), cx = r->x + r->w / 2, cy = r->y + r->h / 2;
		rgb(cr, PLOT_RGB_BACKGROUND, 0.92);
		cairo_rectangle(cr, cx - w / 2 - 8, cy - 14, w + 16, 24);
		cairo_fill(cr);
		rgb(cr, PLOT_RGB_SATURATED, 1);
		text_at(fr, cr, "note", cx, cy + 3, 0.5, s);
	}
}

static void draw_levels(const struct plot_figure *f, const struct plot_frame *fr, cairo_t *cr)
{
	static const double dash[] = { 6, 4 };
	font(cr, 10, false);
	for (size_t i = 0; i < f->nlevels; i++) {
		const struct plot_level *l = &f->levels[i];
		const struct plot_rect *r = &fr->L.panel[l->panel];
		double y = floor(plot_frame_y(fr, l->panel, l->y)) + 0.5;
		if (y < r->y || y > r->y + r->h)
			continue;
		rgb(cr, RGB_LEVEL, 1);
		cairo_set_line_width(cr, 1);
		cairo_set_dash(cr, dash, 2, 0);
		cairo_move_to(cr, r->x, y);
		cairo_line_to(cr, r->x + r->w, y);
		cairo_stroke(cr);
		cairo_set_dash(cr, NULL, 0, 0);
		char buf[256];
		text_at(fr, cr, "level", r->x + r->w - 4, y - 3, 1, fit(cr, l->label, r->w / 3, buf, sizeof(buf)));
	}
}

/*
 * A dense series: per pixel column its min..max as a translucent band and
 * its mean as the line, joined column to column, broken where the data is.
 */
static void draw_envelope(const struct plot_frame *fr, const struct plot_series *s, const struct plot_env *e,
			  cairo_t *cr)
{
	uint32_t c = plot_color_rgb(s->color);
	for (int pass = 0; pass < 2; pass++) {
		size_t k = 0;
		while (k < e->n) {
			size_t j = k + 1;
			while (j < e->n && !e->c[j].brk)
				j++;
			/*
			 * Columns k..j-1 are one run: the band covers each column's
			 * whole pixel from its min to its max (a one-sample spike is
			 * a full pixel wide, not the tip of a triangle), the mean
			 * line runs through the columns' middles, from the run's
			 * first pixel to its last.
			 */
			if (pass == 0) {
				for (size_t i = k; i < j; i++) {
					cairo_line_to(cr, e->c[i].x, y_of(fr, s->panel, e->c[i].hi));
					cairo_line_to(cr, e->c[i].x + 1, y_of(fr, s->panel, e->c[i].hi));
				}
				for (size_t i = j; i-- > k;) {
					cairo_line_to(cr, e->c[i].x + 1, y_of(fr, s->panel, e->c[i].lo));
					cairo_line_to(cr, e->c[i].x, y_of(fr, s->panel, e->c[i].lo));
				}
				cairo_close_path(cr);
				cairo_new_sub_path(cr);
			} else {
				cairo_move_to(cr, e->c[k].x, y_of(fr, s->panel, e->c[k].mean));
				for (size_t i = k; i < j; i++)
					cairo_line_to(cr, e->c[i].x + 0.5, y_of(fr, s->panel, e->c[i].mean));
				cairo_line_to(cr, e->c[j - 1].x + 1, y_of(fr, s->panel, e->c[j - 1].mean));
			}
			k = j;
		}
		if (pass == 0) {
			rgb(cr, c, 0.35);
			cairo_fill(cr);
		} else {
			rgb(cr, c, 1);
			cairo_set_line_width(cr, s->width);
			cairo_stroke(cr);
		}
	}
}

/* More samples in view than pixel columns, by this factor: draw an envelope. */
#define ENVELOPE_DENSITY 2

static int draw_series(const struct plot_figure *f, const struct plot_frame *fr, cairo_t *cr)
{
	static const double dash[] = { 6, 3 };
	struct plot_path path = { 0 };
	struct plot_env env = { 0 };
	int rc = 0;
	cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
	cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
	for (size_t i = 0; i < f->nseries && !rc; i++) {
		const struct plot_series *s = &f->series[i].s;
		if (plot_series_count(s, &fr->xm) > ENVELOPE_DENSITY * fr->L.panel[s->panel].w) {
			rc = plot_envelope(s, &fr->xm, &env);
			if (rc || !env.n)
				continue;
			cairo_save(cr);
			clip_panel(cr, &fr->L.panel[s->panel]);
			cairo_set_dash(cr, s->dashed ? dash : NULL, s->dashed ? 2 : 0, 0);
			draw_envelope(fr, s, &env, cr);
			cairo_restore(cr);
			continue;
		}
		rc = plot_reduce(s, &fr->xm, &path);
		if (rc || !path.n)
			continue;
		cairo_save(cr);
		clip_panel(cr, &fr->L.panel[s->panel]);
		double px = NAN, py = NAN;
		for (size_t k = 0; k < path.n; k++) {
			/*
			 * On a 1/8 px grid, which no eye sees, but which makes
			 * the SVG's numbers short and lets repeats go.
			 */
			double x = round(path.pt[k].x * 8) / 8, y = round(y_of(fr, s->panel, path.pt[k].v) * 8) / 8;
			if (path.pt[k].op == PLOT_MOVE)
				cairo_move_to(cr, x, y);
			else if (x != px || y != py)
				cairo_line_to(cr, x, y);
			px = x;
			py = y;
		}
		rgb(cr, plot_color_rgb(s->color), 1);
		cairo_set_line_width(cr, s->width);
		cairo_set_dash(cr, s->dashed ? dash : NULL, s->dashed ? 2 : 0, 0);
		cairo_stroke(cr);
		cairo_restore(cr);
	}
	plot_path_free(&path);
	plot_env_free(&env);
	return rc;
}

/* A hatched strip: the window's colour, translucent, with diagonal lines. */
static void hatch(cairo_t *cr, double x, double y, double w, double h, uint32_t c)
{
	cairo_save(cr);
	cairo_rectangle(cr, x, y, w, h);
	cairo_clip(cr);
	rgb(cr, c, 0.28);
	cairo_paint(cr);
	rgb(cr, c, 1);
	cairo_set_line_width(cr, 1);
	for (double k = x - h; k < x + w; k += 4) {
		cairo_move_to(cr, k, y + h);
		cairo_line_to(cr, k + h, y);
	}
	cairo_stroke(cr);
	cairo_restore(cr);
}

/* Lane k of a panel: the strip's top edge. */
static double lane_y(const struct plot_rect *r, int k)
{
	return r->y + r->h - 4 - (k + 1) * LANE_H;
}

static void draw_windows(const struct plot_figure *f, const struct plot_frame *fr, cairo_t *cr)
{
	for (size_t i = 0; i < f->nwindows; i++) {
		const struct plot_window *w = &f->windows[i];
		const struct plot_series *s = &f->series[w->series].s;
		const struct plot_rect *r = &fr->L.panel[s->panel];
		uint32_t c = plot_color_rgb(s->color);
		double y = lane_y(r, fr->lane[w->series]);
		double a = x_of(fr, w->t0), b = x_of(fr, w->t1);
		/* cut to the panel first: the hatching's cost grows with the width */
		double ca = fmax(a, r->x - 4), cb = fmin(b, r->x + r->w + 4);
		if (cb < ca)
			continue;
		cairo_save(cr);
		clip_panel(cr, r);
		hatch(cr, ca, y + 1, fmax(cb - ca, 1), LANE_H - 3, c);
		/* brackets at the ends in view, taller than the strip, so a window reads as a span */
		rgb(cr, c, 1);
		cairo_set_line_width(cr, 1.5);
		for (int e = 0; e < 2; e++) {
			double x = e ? b : a, d = e ? -3 : 3;
			if (x != (e ? cb : ca))
				continue;
			cairo_move_to(cr, x + d, y - 1);
			cairo_line_to(cr, x, y - 1);
			cairo_line_to(cr, x, y + LANE_H);
			cairo_line_to(cr, x + d, y + LANE_H);
		}
		cairo_stroke(cr);
		cairo_restore(cr);
	}
}

/*
 * Labels in the strip above the panels, left to right, each in the first
 * of `rows` rows (12 px apart) where it does not overlap the label before
 * it, or left out: a crowded figure stays readable, and the report's
 * tables name every phase anyway.  Phases are centred over their band,
 * markers start at their line.  `key` holds (time, index) pairs, sorted here.
 */
static void strip_labels(cairo_t *cr, const struct plot_frame *fr, int64_t (*key)[2], size_t n,
			 const char *const *label, const int64_t (*span)[2], double base, int rows, bool centred,
			 const char *cls)
{
	const struct plot_rect *lr = &fr->L.labels;
	double right_of_last[2] = { -INFINITY, -INFINITY };
	char buf[256];
	qsort(key, n, sizeof(*key), cmp_i64);
	for (size_t j = 0; j < n; j++) {
		size_t i = (size_t)key[j][1];
		double a = x_of(fr, span[i][0]), b = x_of(fr, span[i][1]);
		if (b < lr->x || a > lr->x + lr->w || !*label[i])
			continue;
		const char *s = fit(cr, label[i], fmax(centred ? b - a + 40 : 160, 40), buf, sizeof(buf));
		double w = text_w(cr, s);
		double x = centred ? (fmax(a, lr->x) + fmin(b, lr->x + lr->w)) / 2 - w / 2 : a + 3;
		x = fmin(fmax(x, lr->x), lr->x + lr->w - w);
		for (int r = 0; r < rows && r < 2; r++) {
			if (x < right_of_last[r] + 6)
				continue;
			cairo_move_to(cr, x, base + 12 * r);
			cairo_show_text(cr, s);
			log_text(fr, cr, cls, x, base + 12 * r, false, s);
			right_of_last[r] = x + w;
			break;
		}
	}
}

static int draw_labels(const struct plot_figure *f, const struct plot_frame *fr, cairo_t *cr)
{
	size_t n = f->nphases > f->nmarkers ? f->nphases : f->nmarkers;
	if (!n)
		return 0;
	int64_t(*key)[2] = malloc(n * sizeof(*key));
	int64_t(*span)[2] = malloc(n * sizeof(*span));
	const char **label = malloc(n * sizeof(*label));
	if (!key || !span || !label) {
		free(key);
		free(span);
		free(label);
		return -ENOMEM;
	}
	double y = fr->L.labels.y;
	if (f->nmarkers) { /* markers' rows on top, so phase labels sit right above their bands */
		for (size_t i = 0; i < f->nmarkers; i++) {
			key[i][0] = f->markers[i].t;
			key[i][1] = (int64_t)i;
			span[i][0] = span[i][1] = f->markers[i].t;
			label[i] = f->markers[i].label;
		}
		int rows = plot_marker_rows(f);
		font(cr, 10, false);
		rgb(cr, RGB_MARK, 1);
		strip_labels(cr, fr, key, f->nmarkers, label, (const int64_t(*)[2])span, y + 10, rows, false, "marker");
		y += PLOT_MARKER_ROW_H * rows;
	}
	if (f->nphases) {
		for (size_t i = 0; i < f->nphases; i++) {
			key[i][0] = f->phases[i].t0;
			key[i][1] = (int64_t)i;
			span[i][0] = f->phases[i].t0;
			span[i][1] = f->phases[i].t1;
			label[i] = f->phases[i].label;
		}
		font(cr, 11, false);
		rgb(cr, PLOT_RGB_TEXT, 1);
		strip_labels(cr, fr, key, f->nphases, label, (const int64_t(*)[2])span, y + 11, 1, true, "phase");
	}
	free(key);
	free(span);
	free(label);
	return 0;
}

static void draw_markers(const struct plot_figure *f, const struct plot_frame *fr, cairo_t *cr)
{
	static const double dash[] = { 5, 3 };
	rgb(cr, RGB_MARK, 1);
	cairo_set_line_width(cr, 1);
	cairo_set_dash(cr, dash, 2, 0);
	for (size_t i = 0; i < f->nmarkers; i++) {
		double x = floor(x_of(fr, f->markers[i].t)) + 0.5;
		for (int p = 0; p < fr->L.npanels; p++) {
			const struct plot_rect *r = &fr->L.panel[p];
			if (x < r->x || x > r->x + r->w)
				continue;
			cairo_move_to(cr, x, r->y);
			cairo_line_to(cr, x, r->y + r->h);
		}
	}
	cairo_stroke(cr);
	cairo_set_dash(cr, NULL, 0, 0);
}

static void draw_axes(const struct plot_figure *f, const struct plot_frame *fr, cairo_t *cr)
{
	char buf[64], lab[512];
	int last = fr->L.npanels - 1;
	for (int p = 0; p <= last; p++) {
		const struct plot_rect *r = &fr->L.panel[p];
		double x = r->x, y = r->y, w = r->w, h = r->h;
		rgb(cr, RGB_FRAME, 1);
		cairo_set_line_width(cr, 1);
		cairo_move_to(cr, x, y + 0.5);
		cairo_line_to(cr, x + w - 0.5, y + 0.5);
		cairo_line_to(cr, x + w - 0.5, y + h);
		cairo_stroke(cr);
		/* the axes: 2 px centred on the panel's integer edges, so they stay crisp */
		rgb(cr, PLOT_RGB_AXIS, 1);
		cairo_set_line_width(cr, 2);
		cairo_move_to(cr, x, y);
		cairo_line_to(cr, x, y + h + 1);
		cairo_move_to(cr, x - 1, y + h);
		cairo_line_to(cr, x + w, y + h);
		cairo_stroke(cr);
		cairo_set_line_width(cr, 1);
		font(cr, 11, false);
		for (int k = 0; k < fr->p[p].yt.n; k++) {
			double ty = floor(plot_frame_y(fr, p, fr->p[p].yt.v[k])) + 0.5;
			if (ty < y - 0.5 || ty > y + h + 0.5)
				continue;
			/* no tick mark on the x axis itself: it would stick out of its line */
			if (ty < y + h - 2) {
				rgb(cr, PLOT_RGB_AXIS, 1);
				cairo_move_to(cr, x - 6, ty);
				cairo_line_to(cr, x - 1, ty);
				cairo_stroke(cr);
			}
			plot_tick_label(&fr->p[p].yt, fr->p[p].yt.v[k], buf, sizeof(buf));
			rgb(cr, PLOT_RGB_TEXT, 1);
			text_at(fr, cr, "ytick", x - 9, ty + 4, 1, buf);
		}
		for (int k = 0; k < fr->xt.n; k++) {
			double tx = floor(x + (fr->xt.v[k] - fr->origin_off) * fr->unit_ns * fr->xm.px_per_ns) + 0.5;
			if (tx < x - 0.5 || tx > x + w + 0.5)
				continue;
			if (tx > x + 2) { /* likewise on the y axis */
				rgb(cr, PLOT_RGB_AXIS, 1);
				cairo_move_to(cr, tx, y + h + 1);
				cairo_line_to(cr, tx, y + h + 6);
				cairo_stroke(cr);
			}
			if (p == last) {
				plot_tick_label(&fr->xt, fr->xt.v[k], buf, sizeof(buf));
				rgb(cr, PLOT_RGB_TEXT, 1);
				text_at(fr, cr, "xtick", tx, y + h + 18, 0.5, buf);
			}
		}
		/* the y-axis title, turned to run up the panel's left side */
		font(cr, 12, false);
		rgb(cr, PLOT_RGB_TEXT, 1);
		const char *yl = fit(cr, f->panel[p].ylabel, h, lab, sizeof(lab));
		cairo_save(cr);
		cairo_translate(cr, 10 + 12, y + h / 2);
		cairo_rotate(cr, -M_PI / 2);
		double yw = text_w(cr, yl);
		cairo_move_to(cr, -yw / 2, 0);
		cairo_show_text(cr, yl);
		cairo_restore(cr);
		log_text(fr, cr, "ylabel", 22, y + h / 2 + yw / 2, true, yl);
	}
	const struct plot_rect *r = &fr->L.panel[last];
	snprintf(lab, sizeof(lab), "time [%s] from %s", fr->unit, f->origin_name ? f->origin_name : "start");
	font(cr, 12, false);
	text_at(fr, cr, "xlabel", r->x + r->w / 2, r->y + r->h + (fr->below ? fr->below + 18 : 36), 0.5, lab);
}

/*
 * The tracks (plot.h): per lane a faint baseline, its slices filled in
 * their label's colour with a 1 px darker edge where they are wide enough
 * to have one, the label inside where it fits; the lane's name in the
 * legend column; then the key row, as many labels as fit.
 */
static void draw_tracks(const struct plot_figure *f, const struct plot_frame *fr, cairo_t *cr)
{
	char buf[256];
	if (!fr->L.ntracks)
		return;
	const struct plot_rect *p0 = &fr->L.panel[0];
	double xr = p0->x + p0->w;
	for (int k = 0; k < fr->L.ntracks; k++) {
		const struct plot_rect *r = &fr->L.track[k];
		rgb(cr, 0xF2F2F2u, 1);
		cairo_rectangle(cr, r->x, r->y, r->w, r->h);
		cairo_fill(cr);
		font(cr, 11, false);
		rgb(cr, PLOT_RGB_TEXT, 1);
		text_at(fr, cr, "track", xr + 14, r->y + r->h - 3, 0,
			fit(cr, f->track[k], fr->L.legend[0].w, buf, sizeof(buf)));
	}
	for (size_t i = 0; i < f->nslices; i++) {
		const struct plot_slice *sl = &f->slices[i];
		const struct plot_rect *r = &fr->L.track[sl->track];
		double a = fmax(x_of(fr, sl->t0), r->x), b = fmin(x_of(fr, sl->t1), r->x + r->w);
		if (b < r->x || a > r->x + r->w)
			continue;
		if (b - a < 1) /* a dispatch shorter than a pixel still shows */
			b = a + 1;
		uint32_t c = plot_slice_rgb(sl->label);
		rgb(cr, c, 1);
		cairo_rectangle(cr, a, r->y, b - a, r->h);
		cairo_fill(cr);
		if (b - a >= 4) {
			rgb(cr, 0x222222u, 0.45);
			cairo_set_line_width(cr, 1);
			cairo_rectangle(cr, a + 0.5, r->y + 0.5, b - a - 1, r->h - 1);
			cairo_stroke(cr);
		}
		font(cr, 10, false);
		const char *l = f->slabels[sl->label];
		if (*l && text_w(cr, l) + 6 <= b - a) {
			rgb(cr, PLOT_RGB_TEXT, 1);
			text_at(fr, cr, "slice", (a + b) / 2, r->y + r->h - 4, 0.5, l);
		}
	}
	/* the key: a swatch and the label, left to right, while they fit */
	const struct plot_rect *kr = &fr->L.key;
	double x = kr->x;
	font(cr, 11, false);
	for (size_t i = 0; i < f->nslabels; i++) {
		const char *l = *f->slabels[i] ? f->slabels[i] : "(unnamed)";
		double w = 14 + text_w(cr, l) + 14;
		if (x + w > kr->x + kr->w) {
			rgb(cr, PLOT_RGB_TEXT, 1);
			snprintf(buf, sizeof(buf), "and %zu more", f->nslabels - i);
			if (x + text_w(cr, buf) <= xr + fr->L.legend[0].w)
				text_at(fr, cr, "key", x, kr->y + kr->h - 3, 0, buf);
			break;
		}
		rgb(cr, plot_slice_rgb(i), 1);
		cairo_rectangle(cr, x, kr->y + 3, 10, 10);
		cairo_fill(cr);
		rgb(cr, PLOT_RGB_TEXT, 1);
		text_at(fr, cr, "key", x + 14, kr->y + kr->h - 3, 0, l);
		x += w;
	}
}

static void draw_legends(const struct plot_figure *f, const struct plot_frame *fr, cairo_t *cr)
{
	static const double dash[] = { 6, 3 };
	char name[512], buf[512], name_buf[64];
	double ys[PLOT_MAX_PANELS];
	font(cr, 12, false);
	for (int p = 0; p < fr->L.npanels; p++) {
		const struct plot_rect *r = &fr->L.legend[p];
		double y = r->y + 4 + LEGEND_ROW / 2.0, tw = r->w - 30;
		for (size_t i = 0; i < f->nseries && y < r->y + r->h; i++) {
			const struct plot_series *s = &f->series[i].s;
			if (s->panel != p)
				continue;
			rgb(cr, plot_color_rgb(s->color), 1);
			cairo_set_line_width(cr, fmin(fmax(s->width, 2), 4));
			cairo_set_dash(cr, s->dashed ? dash : NULL, s->dashed ? 2 : 0, 0);
			cairo_move_to(cr, r->x, y);
			cairo_line_to(cr, r->x + 24, y);
			cairo_stroke(cr);
			cairo_set_dash(cr, NULL, 0, 0);
			snprintf(name, sizeof(name), s->unit && *s->unit ? "%s [%s]" : "%s", s->name, s->unit);
			rgb(cr, PLOT_RGB_TEXT, 1);
			text_at(fr, cr, "legend", r->x + 30, y + 4, 0, fit(cr, name, tw, buf, sizeof(buf)));
			y += LEGEND_ROW;
		}
		for (int k = PLOT_SPAN_LOST; k <= PLOT_SPAN_SATURATED; k++) {
			if (!panel_has_span(f, p, (enum plot_span_kind)k) || y >= r->y + r->h)
				continue;
			span_hatch(cr, r->x, y - 6, 24, 12, span_rgb((enum plot_span_kind)k));
			rgb(cr, PLOT_RGB_TEXT, 1);
			text_at(fr, cr, "legend", r->x + 30, y + 4, 0, span_name((enum plot_span_kind)k));
			y += LEGEND_ROW;
		}
		if (fr->p[p].lanes && y < r->y + r->h) {
			hatch(cr, r->x, y - 4, 24, 8, RGB_LEVEL);
			rgb(cr, PLOT_RGB_TEXT, 1);
			text_at(fr, cr, "legend", r->x + 30, y + 4, 0, "confidence window");
			y += LEGEND_ROW;
		}
		ys[p] = y;
	}
	/*
	 * Phase names, each once with its band colour, where the legends of the
	 * panels leave room from the top down: names are how bands of several
	 * kinds tell apart once their labels no longer fit above them.
	 */
	size_t nm = 0;
	for (int p = 0; p < fr->L.npanels && nm < f->nnames; p++) {
		const struct plot_rect *r = &fr->L.legend[p];
		double y = ys[p], tw = r->w - 30;
		for (; nm < f->nnames && y + LEGEND_ROW < r->y + r->h; nm++) {
			size_t i = 0;
			while (f->phases[i].name != nm)
				i++;
			bool last_row = y + 2 * LEGEND_ROW >= r->y + r->h && p == fr->L.npanels - 1;
			if (last_row && nm + 1 < f->nnames) {
				snprintf(name_buf, sizeof(name_buf), "and %zu more phase names", f->nnames - nm);
				rgb(cr, PLOT_RGB_TEXT, 1);
				text_at(fr, cr, "legend", r->x + 30, y + 4, 0, fit(cr, name_buf, tw, buf, sizeof(buf)));
				nm = f->nnames;
				break;
			}
			rgb(cr, PLOT_RGB_BACKGROUND, 1);
			cairo_rectangle(cr, r->x, y - 6, 24, 12);
			cairo_fill(cr);
			rgb(cr, plot_phase_rgb(nm), PLOT_PHASE_ALPHA);
			cairo_rectangle(cr, r->x, y - 6, 24, 12);
			cairo_fill(cr);
			rgb(cr, PLOT_RGB_BOUNDARY, 1);
			cairo_set_line_width(cr, 1);
			cairo_move_to(cr, r->x + 0.5, y - 6);
			cairo_line_to(cr, r->x + 0.5, y + 6);
			cairo_stroke(cr);
			rgb(cr, PLOT_RGB_TEXT, 1);
			text_at(fr, cr, "legend", r->x + 30, y + 4, 0, fit(cr, f->phases[i].label, tw, buf, sizeof(buf)));
			y += LEGEND_ROW;
		}
	}
}

static void draw_title(const struct plot_figure *f, const struct plot_frame *fr, cairo_t *cr)
{
	char buf[1024];
	font(cr, 17, true);
	rgb(cr, PLOT_RGB_TEXT, 1);
	const struct plot_rect *t = &fr->L.title, *p = &fr->L.panel[0];
	const char *s = fit(cr, f->title, t->w, buf, sizeof(buf));
	double w = text_w(cr, s);
	/* centred over the panels where it fits there, else over the canvas */
	double cx = w <= p->w ? p->x + p->w / 2 : t->x + t->w / 2;
	text_at(fr, cr, "title", cx, t->y + 18, 0.5, s);
}

int plot_draw(const struct plot_figure *f, const struct plot_frame *fr, cairo_t *cr, char *err,
	      size_t errlen)
{
	rgb(cr, PLOT_RGB_BACKGROUND, 1);
	cairo_paint(cr);
	draw_grid(fr, cr);
	draw_phases(f, fr, cr);
	draw_spans(f, fr, cr);
	if (draw_boundaries(f, fr, cr))
		return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory drawing '%s'", f->title);
	draw_levels(f, fr, cr);
	int rc = draw_series(f, fr, cr);
	if (rc)
		return spmtap_seterr(err, errlen, rc, "plot: out of memory drawing '%s'", f->title);
	draw_notes(f, fr, cr);
	draw_windows(f, fr, cr);
	draw_markers(f, fr, cr);
	draw_axes(f, fr, cr);
	draw_tracks(f, fr, cr);
	draw_legends(f, fr, cr);
	draw_title(f, fr, cr);
	if (draw_labels(f, fr, cr))
		return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory drawing '%s'", f->title);
	cairo_status_t st = cairo_status(cr);
	if (st)
		return spmtap_seterr(err, errlen, st == CAIRO_STATUS_NO_MEMORY ? ENOMEM : EIO,
				     "plot: cairo: %s", cairo_status_to_string(st));
	return 0;
}
