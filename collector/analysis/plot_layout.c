/* SPDX-License-Identifier: MIT */
/*
 * One render's frame: the time range and unit, where title, labels, panels
 * and legends go (text measured with the real font), and each panel's y
 * range and ticks.  Panel edges are whole pixels, so the 2 px axis lines
 * land on pixel boundaries and stay crisp in PNG and in a browser.
 */
#include <cairo.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/plot_internal.h"
#include "log.h"

#define MARGIN 10
#define TITLE_H 24
#define PHASE_ROW_H 15
#define PANEL_GAP 14
#define MIN_PANEL_H 60
#define MIN_PLOT_W 120
#define LANE_H 10
#define TRACK_GAP 22 /* under the last panel: its x tick labels, then the lanes */

static double text_w(cairo_t *cr, const char *s, double size)
{
	cairo_text_extents_t e;
	cairo_select_font_face(cr, PLOT_FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cr, size);
	cairo_text_extents(cr, s, &e);
	return e.x_advance;
}

/* Everything added, or the caller's range; never empty. */
static void time_range(const struct plot_figure *f, int64_t *t0, int64_t *t1)
{
	if (f->have_range) {
		*t0 = f->t0;
		*t1 = f->t1;
		return;
	}
	int64_t lo = INT64_MAX, hi = INT64_MIN, a, b;
	for (size_t i = 0; i < f->nseries; i++)
		if (plot_series_extent(&f->series[i].s, &a, &b)) {
			lo = a < lo ? a : lo;
			hi = b > hi ? b : hi;
		}
	for (size_t i = 0; i < f->nphases; i++) {
		lo = f->phases[i].t0 < lo ? f->phases[i].t0 : lo;
		hi = f->phases[i].t1 > hi ? f->phases[i].t1 : hi;
	}
	for (size_t i = 0; i < f->nwindows; i++) {
		lo = f->windows[i].t0 < lo ? f->windows[i].t0 : lo;
		hi = f->windows[i].t1 > hi ? f->windows[i].t1 : hi;
	}
	for (size_t i = 0; i < f->nslices; i++) {
		lo = f->slices[i].t0 < lo ? f->slices[i].t0 : lo;
		hi = f->slices[i].t1 > hi ? f->slices[i].t1 : hi;
	}
	for (size_t i = 0; i < f->nmarkers; i++) {
		lo = f->markers[i].t < lo ? f->markers[i].t : lo;
		hi = f->markers[i].t > hi ? f->markers[i].t : hi;
	}
	if (lo > hi) { /* nothing at all: one second from the origin */
		lo = f->have_origin ? f->origin : 0;
		hi = lo + 1000000000;
	}
	if (hi == lo) { /* a single instant: a millisecond around it */
		lo -= 500000;
		hi += 500000;
	}
	*t0 = lo;
	*t1 = hi;
}

/* The panel's data range (before headroom), honouring fixed ends. */
static void data_range(const struct plot_figure *f, const struct plot_xmap *xm, int p, double *plo,
		       double *phi)
{
	double lo = INFINITY, hi = -INFINITY, a, b;
	for (size_t i = 0; i < f->nseries; i++)
		if (f->series[i].s.panel == p && plot_series_vrange(&f->series[i].s, xm, &a, &b)) {
			lo = fmin(lo, a);
			hi = fmax(hi, b);
		}
	for (size_t i = 0; i < f->nlevels; i++)
		if (f->levels[i].panel == p) {
			lo = fmin(lo, f->levels[i].y);
			hi = fmax(hi, f->levels[i].y);
		}
	if (lo > hi) {
		lo = 0;
		hi = 1;
	}
	/* the baseline: a steady 500 W must not read as swings between 499 and 501 */
	lo = fmin(lo, 0);
	hi = fmax(hi, 0);
	if (hi <= lo && lo == 0 && isnan(f->panel[p].ymin))
		hi = 1; /* all zero: 0 at the bottom, not in the middle of [-1, 1] */
	if (!isnan(f->panel[p].ymin))
		lo = f->panel[p].ymin;
	if (!isnan(f->panel[p].ymax))
		hi = f->panel[p].ymax;
	if (hi <= lo) { /* flat data: a range around it that still reads as flat */
		double d = fabs(lo) > 0 ? fabs(lo) * 0.1 : 1;
		if (isnan(f->panel[p].ymin))
			lo -= d;
		if (isnan(f->panel[p].ymax) || hi <= lo)
			hi = lo + 2 * d;
	}
	*plo = lo;
	*phi = hi;
}

static double legend_width(const struct plot_figure *f, cairo_t *cr)
{
	double w = text_w(cr, "confidence window", 12);
	char buf[512];
	for (size_t i = 0; i < f->nseries; i++) {
		const struct plot_series *s = &f->series[i].s;
		snprintf(buf, sizeof(buf), s->unit && *s->unit ? "%s [%s]" : "%s", s->name, s->unit);
		w = fmax(w, text_w(cr, buf, 12));
	}
	for (size_t i = 0; i < f->nphases; i++)
		w = fmax(w, text_w(cr, f->phases[i].label, 12));
	return w + 34; /* swatch 24 + gap 6 + padding */
}

int plot_frame_make(const struct plot_figure *f, cairo_t *cr, struct plot_frame *fr, char *err,
		    size_t errlen)
{
	memset(fr, 0, sizeof(*fr));
	/*
	 * Unhinted text metrics on every surface: image surfaces hint them by
	 * default and vector ones do not, so the same figure measured 1 px
	 * wider labels in PNG than in SVG, and plot_figure_layout() (measured
	 * on an image surface) missed the SVG's panels by a pixel.
	 */
	cairo_font_options_t *fo = cairo_font_options_create();
	cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
	cairo_set_font_options(cr, fo);
	cairo_font_options_destroy(fo);
	struct plot_layout *L = &fr->L;
	int n = f->npanels;
	if (n < 1)
		return spmtap_seterr(err, errlen, EINVAL, "plot: '%s' has no panel to draw in", f->title);
	L->width = f->width;
	/* tracks: a gap clear of the x ticks, the lanes, the key row */
	int tracks_h = f->ntracks ? TRACK_GAP + f->ntracks * PLOT_TRACK_H + PLOT_TRACK_H : 0;
	L->height = f->height ? f->height : plot_default_height(n) + tracks_h;
	L->npanels = n;
	int64_t t0, t1;
	time_range(f, &t0, &t1);
	L->t0_ns = t0;
	L->t1_ns = t1;
	int64_t origin = f->have_origin ? f->origin : t0;
	double span = (double)(t1 - t0);
	fr->unit_ns = span >= 2e9 ? 1e9 : span >= 2e6 ? 1e6 : 1e3;
	fr->unit = span >= 2e9 ? "s" : span >= 2e6 ? "ms" : "us";
	fr->origin_off = (double)(t0 - origin) / fr->unit_ns;
	/* The time map without pixels yet: y ranges only need the time range. */
	fr->xm = (struct plot_xmap){ .origin = t0, .t0 = 0, .t1 = span };

	/* y-tick label width, measured on a range a bit wider than the data's */
	double tickw = 0;
	char buf[64];
	for (int p = 0; p < n; p++) {
		double lo, hi;
		struct plot_ticks t;
		data_range(f, &fr->xm, p, &lo, &hi);
		plot_ticks_make(lo - (hi - lo) * 0.15, hi + (hi - lo) * 0.15, 6, &t);
		for (int k = 0; k < t.n; k++) {
			plot_tick_label(&t, t.v[k], buf, sizeof(buf));
			tickw = fmax(tickw, text_w(cr, buf, 11));
		}
	}
	double lw = fmin(fmax(legend_width(f, cr), 80), L->width * 0.28);

	int y = MARGIN;
	L->title = (struct plot_rect){ MARGIN, y, L->width - 2 * MARGIN, TITLE_H };
	y += TITLE_H + 6;
	int strip = (f->nphases ? PHASE_ROW_H : 0) + PLOT_MARKER_ROW_H * plot_marker_rows(f);
	int px = (int)ceil(MARGIN + 16 + 6 + tickw + 4 + 6);
	int lx = (int)floor(L->width - MARGIN - lw);
	int pw = lx - 14 - px;
	L->labels = (struct plot_rect){ px, y, pw, strip };
	y += strip + (strip ? 4 : 0);
	int bottom = L->height - MARGIN - 16 - 4 - 14 - 6 - tracks_h;
	int ph = (bottom - y - PANEL_GAP * (n - 1)) / n;
	if (ph < MIN_PANEL_H || pw < MIN_PLOT_W)
		return spmtap_seterr(err, errlen, EINVAL,
				     "plot: %d x %d px is too small for '%s': %d panel(s) of %d x %d px, "
				     "each needs at least %d x %d",
				     L->width, L->height, f->title, n, pw, ph, MIN_PLOT_W, MIN_PANEL_H);
	for (int p = 0; p < n; p++) {
		L->panel[p] = (struct plot_rect){ px, y + p * (ph + PANEL_GAP), pw, ph };
		L->legend[p] = (struct plot_rect){ lx, L->panel[p].y, lw, ph };
	}
	L->ntracks = f->ntracks;
	int ty = (int)(L->panel[n - 1].y + L->panel[n - 1].h) + TRACK_GAP;
	for (int k = 0; k < f->ntracks; k++)
		L->track[k] = (struct plot_rect){ px, ty + k * PLOT_TRACK_H, pw, PLOT_TRACK_H - 2 };
	L->key = (struct plot_rect){ px, ty + f->ntracks * PLOT_TRACK_H, pw, f->ntracks ? PLOT_TRACK_H : 0 };
	fr->below = tracks_h;
	fr->xm.x0 = px;
	fr->xm.px_per_ns = pw / span;
	fr->xm.xmin = px - 2;
	fr->xm.xmax = px + pw + 2;
	plot_ticks_make(fr->origin_off, fr->origin_off + span / fr->unit_ns, pw / 110, &fr->xt);
	plot_ticks_plain(&fr->xt);

	/* window lanes: one per series with windows, in the order they came */
	fr->lane = malloc((f->nseries ? f->nseries : 1) * sizeof(*fr->lane));
	if (!fr->lane)
		return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory");
	for (size_t i = 0; i < f->nseries; i++)
		fr->lane[i] = -1;
	for (size_t w = 0; w < f->nwindows; w++) {
		int s = f->windows[w].series;
		if (fr->lane[s] < 0)
			fr->lane[s] = fr->p[f->series[s].s.panel].lanes++;
	}

	for (int p = 0; p < n; p++) {
		double lo, hi;
		data_range(f, &fr->xm, p, &lo, &hi);
		/* headroom in px: clear of the top (bands show above the data), lanes below */
		double top = fmax(10, ph * 0.08);
		double bot = fr->p[p].lanes ? 6 + fr->p[p].lanes * LANE_H : fmax(4, ph * 0.03);
		double per_px = (hi - lo) / (ph - top - bot);
		if (isnan(f->panel[p].ymin))
			lo -= bot * per_px;
		if (isnan(f->panel[p].ymax))
			hi += top * per_px;
		fr->p[p].lo = lo;
		fr->p[p].hi = hi;
		int target = ph / 45;
		plot_ticks_make(lo, hi, target < 2 ? 2 : target > 8 ? 8 : target, &fr->p[p].yt);
	}
	return 0;
}

void plot_frame_free(struct plot_frame *fr)
{
	free(fr->lane);
	fr->lane = NULL;
}

int plot_marker_rows(const struct plot_figure *f)
{
	return f->nmarkers > 1 ? 2 : (int)f->nmarkers;
}

double plot_frame_y(const struct plot_frame *fr, int panel, double v)
{
	const struct plot_rect *r = &fr->L.panel[panel];
	double lo = fr->p[panel].lo, hi = fr->p[panel].hi;
	return r->y + r->h - (v - lo) / (hi - lo) * r->h;
}

int plot_figure_layout(const struct plot_figure *f, struct plot_layout *out, char *err, size_t errlen)
{
	cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
	cairo_t *cr = cairo_create(s);
	struct plot_frame fr = { 0 };
	int rc = cairo_status(cr) ? spmtap_seterr(err, errlen, ENOMEM, "plot: cairo: %s",
						  cairo_status_to_string(cairo_status(cr)))
				  : plot_frame_make(f, cr, &fr, err, errlen);
	if (!rc)
		*out = fr.L;
	plot_frame_free(&fr);
	cairo_destroy(cr);
	cairo_surface_destroy(s);
	return rc;
}
