/* SPDX-License-Identifier: MIT */
/*
 * Figures of a recording (docs/plots.md), like Fig. 2 and Fig. 5 of the
 * power/energy attribution paper: one GPU's power and SPM counters on one
 * time axis, stacked in panels, with the active phases shaded, the
 * confidence window of each power signal marked, and delay/response/
 * recovery as dashed lines.  One figure per GPU; drawn with cairo into SVG,
 * PNG or PDF, to a file or to memory (the HTML report embeds them).
 *
 * Building a figure:
 *
 *	struct plot_figure *f;
 *	plot_figure_new(&f, "GPU 0: MI300A", err, sizeof(err));
 *	int pc = plot_figure_add_panel(f, "counters [1/ms]", err, sizeof(err));
 *	int pp = plot_figure_add_panel(f, "power [W]", err, sizeof(err));
 *	struct plot_series s = { .name = "power (dE/dt)", .unit = "W", .panel = pp,
 *				 .t_ns = t, .v = w, .n = n, .style = PLOT_STEP_PRE };
 *	int dedt = plot_figure_add_series(f, &s, err, sizeof(err));
 *	plot_figure_add_phase(f, t_s, t_e, "gemm", err, sizeof(err));
 *	plot_figure_add_window(f, dedt, w_s, w_e, err, sizeof(err));
 *	plot_render_file(f, "gpu0.svg", err, sizeof(err));
 *	plot_figure_free(f);
 *
 * Times are ns on the recording's timebase (CLOCK_BOOTTIME); the axis shows
 * them relative to an origin.  The figure copies every string but BORROWS
 * the series' arrays: they must stay valid until the last render call.
 * Series of any length are reduced to a min/max envelope per pixel column
 * before drawing, so a file's size depends on its width, not on n.
 *
 * Functions that can fail return 0 (or an index >= 0) or a negative errno
 * and write a sentence into err.  A figure is not thread-safe; rendering
 * one figure from several threads at once is (render calls only read it).
 */
#ifndef SPMTAP_ANALYSIS_PLOT_H
#define SPMTAP_ANALYSIS_PLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Panels per figure: more would be too thin to read at any usual size. */
#define PLOT_MAX_PANELS 8

/*
 * Colours, fixed so that figures compare across runs and the tests can
 * find them in pixels (docs/plots.md).  Series colours are the Okabe-Ito
 * palette (distinguishable with the common colour-vision deficiencies).
 * The phase band is a lavender that no series colour fades into on white
 * (each channel at least 28 away from every palette colour's blend with
 * white), and the axes are a dark indigo unlike the text (#222222).
 */
enum plot_color {
	PLOT_COLOR_AUTO = 0,  /* the next colour in this order not yet used in the figure */
	PLOT_BLUE,            /* #0072B2 */
	PLOT_VERMILLION,      /* #D55E00 */
	PLOT_GREEN,           /* #009E73 */
	PLOT_ORANGE,          /* #E69F00 */
	PLOT_PURPLE,          /* #CC79A7 */
	PLOT_SKY,             /* #56B4E9 */
	PLOT_GREY,            /* #666666: references such as TDP */
	PLOT_YELLOW,          /* #F0E442: weak on white, last */
	PLOT_NCOLORS
};
/* 0xRRGGBB of a palette colour (PLOT_BLUE..PLOT_YELLOW); 0 for others. */
uint32_t plot_color_rgb(enum plot_color c);

#define PLOT_RGB_AXIS 0x1E1E5Au       /* axis lines, 2 px wide */
#define PLOT_RGB_PHASE 0x5C12F5u      /* phase band of the first phase name, drawn at PLOT_PHASE_ALPHA */
#define PLOT_PHASE_ALPHA 0.30
#define PLOT_RGB_PHASE_ON_WHITE 0xCEB8FCu /* what a band looks like where nothing else is */
#define PLOT_RGB_BACKGROUND 0xFFFFFFu
#define PLOT_RGB_TEXT 0x222222u
#define PLOT_RGB_BOUNDARY 0x6A4FB0u   /* a phase edge: 1 px, across every panel */
#define PLOT_RGB_LOST 0x7F7F7Fu       /* hatching of a lost stretch */
#define PLOT_RGB_SATURATED 0xB0003Au  /* hatching of a saturated stretch, and a panel's note */
/*
 * Band colours of phase names 2, 3, ... (the first is PLOT_RGB_PHASE), at
 * PLOT_PHASE_ALPHA; they repeat after PLOT_PHASE_COLORS names.
 */
#define PLOT_PHASE_COLORS 8
uint32_t plot_phase_rgb(size_t name_index);

enum plot_style {
	PLOT_LINE = 0,     /* straight segments between samples */
	PLOT_STEP_POST,    /* v[i] holds from t[i] until t[i+1]: a level read at t[i] */
	PLOT_STEP_PRE,     /* v[i] holds over (t[i-1], t[i]]: an interval that ends at its
			    * timestamp, like dE/dt power and SPM counter samples */
};

/*
 * A series with more samples in view than its panel has pixel columns is
 * drawn as an envelope: per column the band from its minimum to its
 * maximum, translucent, and a line through the column means.  Fewer are
 * drawn sample by sample in their style.
 */
struct plot_series {
	const char *name;      /* legend text: "power_avg", "SQ_WAVES" */
	const char *unit;      /* shown after the name in the legend; NULL: none */
	int panel;             /* from plot_figure_add_panel() */
	const int64_t *t_ns;   /* [n] timebase ns, non-decreasing */
	const double *t_ns_f;  /* [n] the same as doubles, used when t_ns is NULL */
	const double *v;       /* [n]; NaN = no value: the line breaks there */
	size_t n;
	enum plot_style style;
	enum plot_color color;
	double width;          /* line width in px; 0: 1.5 */
	bool dashed;
};

struct plot_figure;

/* An empty figure, 1200 px wide; `title` is drawn above the panels. */
int plot_figure_new(struct plot_figure **out, const char *title, char *err, size_t errlen);
void plot_figure_free(struct plot_figure *f);

/*
 * Canvas size in px (SVG user units and PNG pixels; PDF points).  The
 * default height is 130 px + 240 px per panel; every panel needs 60 px.
 */
int plot_figure_set_size(struct plot_figure *f, int width, int height, char *err, size_t errlen);
/*
 * What 0 on the time axis is, and its name for the axis title ("time [s]
 * from recording start").  Default: the start of the time range, "start".
 */
int plot_figure_set_origin(struct plot_figure *f, int64_t origin_ns, const char *name, char *err,
			   size_t errlen);
/* The time range shown (t0 < t1).  Default: everything added, series and phases. */
int plot_figure_set_range(struct plot_figure *f, int64_t t0_ns, int64_t t1_ns, char *err, size_t errlen);

/*
 * A panel, stacked below those added before, with its y-axis title
 * ("power [W]").  Returns the panel's index.
 */
int plot_figure_add_panel(struct plot_figure *f, const char *ylabel, char *err, size_t errlen);
/*
 * Fix a panel's y range; a NaN end stays automatic.  Automatic ranges
 * cover the panel's data, its levels and 0 (the baseline: a range zoomed
 * into the noise of a steady signal would read as large swings) in the
 * time range, with headroom: 8 % above (so bands show clear of the data
 * at the top), and below, room for the confidence-window strips.
 */
int plot_figure_panel_range(struct plot_figure *f, int panel, double ymin, double ymax, char *err,
			    size_t errlen);

/*
 * Add a series (copied, but not its arrays: see above).  Its times must
 * not go backwards, and t_ns or t_ns_f must be set unless n is 0.
 * Returns the series' index, for plot_figure_add_window().
 */
int plot_figure_add_series(struct plot_figure *f, const struct plot_series *s, char *err, size_t errlen);

/*
 * A phase [start, end]: a shaded band across all panels in its name's
 * colour (one colour per distinct name, PLOT_RGB_PHASE for the first,
 * plot_phase_rgb() after it), each name once in the legend, a 1 px
 * boundary line (PLOT_RGB_BOUNDARY) at each distinct edge, so adjacent
 * phases still show where one ends, and its label above the top panel
 * (left out where it would overlap a neighbour's).  Bands are
 * translucent, so overlapping phases show darker.
 */
int plot_figure_add_phase(struct plot_figure *f, int64_t start_ns, int64_t end_ns, const char *label,
			  char *err, size_t errlen);
/*
 * A confidence window [start, end] of one series (the paper's W_conf: where
 * that signal approximates steady state within a phase): a hatched strip
 * with end brackets along the bottom of the series' panel, in the series'
 * colour, one lane per series.  An empty window (end < start) is refused:
 * a phase too short for its signal has none, so add none.
 */
int plot_figure_add_window(struct plot_figure *f, int series, int64_t start_ns, int64_t end_ns,
			   char *err, size_t errlen);
/*
 * Where a panel's data is not what a line would suggest: PLOT_SPAN_LOST,
 * a stretch with no samples (a hatched grey band labelled "lost"; the
 * caller breaks its series there with a NaN), or PLOT_SPAN_SATURATED, a
 * counter over its range (a hatched red band labelled "saturated").
 * panel -1: every panel.  Spans of one kind closer than a pixel draw as one.
 */
enum plot_span_kind { PLOT_SPAN_LOST = 1, PLOT_SPAN_SATURATED };
int plot_figure_add_span(struct plot_figure *f, int panel, enum plot_span_kind kind, int64_t start_ns,
			 int64_t end_ns, char *err, size_t errlen);
/*
 * A sentence across the middle of a panel, in PLOT_RGB_SATURATED on white,
 * for what its data cannot show ("TCC_HIT saturated at this interval").
 */
int plot_figure_panel_note(struct plot_figure *f, int panel, const char *text, char *err, size_t errlen);

/* A vertical dashed line across all panels at t, labelled above them ("delay"). */
int plot_figure_add_marker(struct plot_figure *f, int64_t t_ns, const char *label, char *err,
			   size_t errlen);
/* A horizontal dashed line in a panel at y, labelled at its right end ("idle", "TDP"). */
int plot_figure_add_level(struct plot_figure *f, int panel, double y, const char *label, char *err,
			  size_t errlen);

/*
 * Tracks: lanes under the panels on the same time axis, one per queue (or
 * GPU), for what ran there: kernel dispatches as slices, filled in a
 * colour per distinct slice label (PLOT_SLICE_COLORS, repeating), the label
 * written inside a slice where it fits, the lane's label in the legend
 * column, and a key row of the labels' colours under the lanes.
 * At most PLOT_MAX_TRACKS lanes; slices of a lane may not overlap (they
 * are drawn in order; a later one covers an earlier one).
 */
#define PLOT_MAX_TRACKS 8
#define PLOT_TRACK_H 16
#define PLOT_SLICE_COLORS 8
uint32_t plot_slice_rgb(size_t label_index);
/* A lane labelled `label` ("queue 1"); returns its index. */
int plot_figure_add_track(struct plot_figure *f, const char *label, char *err, size_t errlen);
/* A slice [start, end] in lane `track`, labelled (its colour follows the label). */
int plot_figure_add_slice(struct plot_figure *f, int track, int64_t start_ns, int64_t end_ns, const char *label,
			  char *err, size_t errlen);

/* ---- layout: where things land, for callers and tests ------------------ */

struct plot_rect {
	double x, y, w, h;    /* px from the top left corner */
};

struct plot_layout {
	int width, height;
	struct plot_rect title;
	struct plot_rect labels;                   /* phase and marker labels */
	int npanels;
	struct plot_rect panel[PLOT_MAX_PANELS];   /* inside the axes; integer edges */
	struct plot_rect legend[PLOT_MAX_PANELS];
	int ntracks;
	struct plot_rect track[PLOT_MAX_TRACKS];   /* the lanes under the last panel, x as the panels' */
	struct plot_rect key;                      /* the slice labels' colour key under the lanes; h 0: none */
	int64_t t0_ns, t1_ns;                      /* time range across panel[].w */
};

int plot_figure_layout(const struct plot_figure *f, struct plot_layout *out, char *err, size_t errlen);

/* ---- output ------------------------------------------------------------ */

/*
 * In SVG every text drawn is also in a text layer before </svg>,
 * <g class="spmtap-text" fill-opacity="0">, one <text class="KIND" x y
 * font-size> per string at its place (transparent: the glyphs show it),
 * so a browser can find and select it and a test can read it.  KIND is
 * title, phase, marker, level, ytick, xtick, ylabel, xlabel, legend,
 * span (the "lost"/"saturated" labels), note, track (a lane's label),
 * slice (a label inside a slice) or key (the colour key's labels).
 */

enum plot_format { PLOT_FMT_SVG = 1, PLOT_FMT_PNG, PLOT_FMT_PDF };

/* The format named by a path's extension (.svg, .png, .pdf, any case). */
int plot_format_from_path(const char *path, enum plot_format *fmt, char *err, size_t errlen);
/*
 * Render to `path` in the format its extension names.  A file that could
 * not be written completely is removed, so a path is either a whole figure
 * or absent.
 */
int plot_render_file(const struct plot_figure *f, const char *path, char *err, size_t errlen);
/*
 * Render into a malloc'd buffer the caller frees: SVG text (NUL-terminated,
 * the NUL not counted in *len), PNG or PDF bytes.
 */
int plot_render_mem(const struct plot_figure *f, enum plot_format fmt, char **buf, size_t *len,
		    char *err, size_t errlen);

#endif
