/* SPDX-License-Identifier: MIT */
/*
 * Inside the figure renderer: the figure's storage (plot.c), axis ticks
 * (plot_axis.c), the min/max reduction (plot_reduce.c), the frame of one
 * render (plot_layout.c), drawing (plot_draw.c) and output (plot_out.c).
 * Only plot.h is for callers; tests may use this header.
 */
#ifndef SPMTAP_ANALYSIS_PLOT_INTERNAL_H
#define SPMTAP_ANALYSIS_PLOT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/analysis/plot.h"

/* ---- the figure -------------------------------------------------------- */

struct plot_panel {
	char *ylabel;
	double ymin, ymax;   /* NaN: automatic */
	char *note;          /* plot_figure_panel_note(); NULL: none */
};

struct plot_span {
	int panel;           /* -1: all */
	enum plot_span_kind kind;
	int64_t t0, t1;
};

struct plot_sseries {
	struct plot_series s; /* name and unit point at the copies below; colour resolved */
	char *name, *unit;
};

struct plot_phase {
	int64_t t0, t1;
	char *label;
	size_t name;         /* index of its name among the figure's distinct names, in order of appearance */
};

struct plot_window {
	int series;
	int64_t t0, t1;
};

struct plot_marker {
	int64_t t;
	char *label;
};

struct plot_level {
	int panel;
	double y;
	char *label;
};

struct plot_slice {
	int track;
	int64_t t0, t1;
	size_t label;        /* index into the figure's slice labels */
};

struct plot_figure {
	char *title;
	int width, height;           /* height 0: from the panel count */
	bool have_origin, have_range;
	int64_t origin;
	char *origin_name;
	int64_t t0, t1;              /* when have_range */
	int npanels;
	struct plot_panel panel[PLOT_MAX_PANELS];
	struct plot_sseries *series;
	size_t nseries, cap_series;
	struct plot_phase *phases;
	size_t nphases, cap_phases;
	struct plot_window *windows;
	size_t nwindows, cap_windows;
	struct plot_marker *markers;
	size_t nmarkers, cap_markers;
	struct plot_level *levels;
	size_t nlevels, cap_levels;
	struct plot_span *spans;
	size_t nspans, cap_spans;
	size_t nnames;               /* distinct phase names */
	int ntracks;
	char *track[PLOT_MAX_TRACKS];
	struct plot_slice *slices;
	size_t nslices, cap_slices;
	char **slabels;              /* distinct slice labels, in order of appearance */
	size_t nslabels, cap_slabels;
};

int plot_default_height(int npanels);
/*
 * Length of the valid UTF-8 sequence at s (1..4), or 0 where it is not one
 * (also used by html.c, which escapes the same kind of strings).
 */
size_t plot_utf8_len(const unsigned char *s);

/* ns of sample i relative to `origin`, from t_ns or t_ns_f */
double plot_series_t(const struct plot_series *s, size_t i, int64_t origin);

/* ---- axis ticks -------------------------------------------------------- */

#define PLOT_MAX_TICKS 32

/*
 * Ticks at multiples of a 1-2-5 step inside [lo, hi], labelled with an SI
 * prefix once values reach 10^4 (12k, 1.5M) and with as many decimals as
 * the step needs, so that neighbouring labels always differ.
 */
struct plot_ticks {
	double step;
	int n;
	double v[PLOT_MAX_TICKS];
	double scale;          /* labels show v / scale ... */
	const char *prefix;    /* ... followed by this ("", "k", "M", "G", "T") */
	int decimals;
};

/* A 1-2-5 step giving about `target` intervals over `range` (> 0). */
double plot_nice_step(double range, int target);
void plot_ticks_make(double lo, double hi, int target, struct plot_ticks *t);
/* Labels without an SI prefix: the time axis already has its unit (1000.5 s, not 1.0005k). */
void plot_ticks_plain(struct plot_ticks *t);
void plot_tick_label(const struct plot_ticks *t, double v, char *buf, size_t len);

/* ---- min/max reduction ------------------------------------------------- */

enum plot_op { PLOT_MOVE = 0, PLOT_LINETO = 1 };

struct plot_pt {
	double x;   /* px */
	double v;   /* data units */
	int op;     /* enum plot_op */
};

struct plot_path {
	struct plot_pt *pt;
	size_t n, cap;
};

/* Maps time (ns relative to `origin`) to px: x = x0 + (t - t0) * px_per_ns. */
struct plot_xmap {
	int64_t origin;
	double t0, t1;         /* the range, relative to origin */
	double x0, px_per_ns;
	double xmin, xmax;     /* a vertex never lies further out than these */
};

/*
 * The series' samples in the map's range (plus one neighbour on each side,
 * so lines run to the edges) as a path of at most ~6 vertices per pixel
 * column: where a column holds several samples, its first, minimum,
 * maximum and last value, so every spike stays visible while the path
 * stays as short as the figure is wide.  Non-finite values break the path.
 * `out` is reset first (keep it between calls to reuse its memory).
 */
int plot_reduce(const struct plot_series *s, const struct plot_xmap *m, struct plot_path *out);
void plot_path_free(struct plot_path *p);

/* One pixel column of an envelope: the range and mean of its samples. */
struct plot_col {
	double x;        /* the column's left edge, px */
	double lo, hi, mean;
	bool brk;        /* a break (NaN, or an empty column) before it: no joining */
};
struct plot_env {
	struct plot_col *c;
	size_t n, cap;
};
/* Samples of the series inside the map's range. */
size_t plot_series_count(const struct plot_series *s, const struct plot_xmap *m);
/*
 * The series inside the map's range as columns (each pixel column with
 * samples), for drawing a dense series as min/max envelope and mean line.
 * A non-finite value breaks it; so does a column without samples between
 * two with samples.  `out` is reset first.
 */
int plot_envelope(const struct plot_series *s, const struct plot_xmap *m, struct plot_env *out);
void plot_env_free(struct plot_env *e);
/* Smallest and largest finite value inside the map's range; false if none. */
bool plot_series_vrange(const struct plot_series *s, const struct plot_xmap *m, double *lo, double *hi);
/* First and last sample time (ns, absolute); false if the series has none. */
bool plot_series_extent(const struct plot_series *s, int64_t *t0, int64_t *t1);

/* ---- one render: layout, scales, time unit ----------------------------- */

typedef struct _cairo cairo_t;

struct plot_frame {
	struct plot_layout L;
	struct plot_xmap xm;
	double unit_ns;             /* 1e9, 1e6 or 1e3 */
	const char *unit;           /* "s", "ms", "us" */
	double origin_off;          /* range start minus origin, in axis units */
	struct plot_ticks xt;       /* in axis units from the origin */
	struct {
		double lo, hi;      /* y range */
		struct plot_ticks yt;
		int lanes;          /* confidence-window lanes at the bottom */
	} p[PLOT_MAX_PANELS];
	int *lane;                  /* [nseries]: the series' window lane, -1 for none */
	int below;                  /* px of tracks under the last panel (the time axis title goes under them) */
	struct plot_textlog *log;   /* where text drawn is logged; NULL: nowhere */
};

/* Every string drawn, for the SVG's text layer (plot.h). */
struct plot_text {
	const char *cls;
	double x, y, size;   /* left end of the baseline, px */
	bool up;             /* turned to run upwards (y-axis titles) */
	char *s;
};
struct plot_textlog {
	struct plot_text *v;
	size_t n, cap;
	int err;
};
void plot_textlog_free(struct plot_textlog *l);

#define PLOT_FONT "DejaVu Sans"
#define PLOT_MARKER_ROW_H 12

/* Rows of marker labels: two where there are several, so neighbours can stagger. */
int plot_marker_rows(const struct plot_figure *f);

/* Compute the frame; cr measures text (any surface).  Free with plot_frame_free(). */
int plot_frame_make(const struct plot_figure *f, cairo_t *cr, struct plot_frame *fr, char *err,
		    size_t errlen);
void plot_frame_free(struct plot_frame *fr);
double plot_frame_y(const struct plot_frame *fr, int panel, double v);

/* Draw the whole figure on cr (a surface of fr->L.width x fr->L.height). */
int plot_draw(const struct plot_figure *f, const struct plot_frame *fr, cairo_t *cr, char *err,
	      size_t errlen);

#endif
