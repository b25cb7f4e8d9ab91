/* SPDX-License-Identifier: MIT */
/*
 * The HTML report (docs/plots.md): one self-contained file, with no script,
 * no network and no file beside it.  Figures are inline SVG from the plot
 * renderer or PNG as data: URIs, the CSS is inline, and a
 * Content-Security-Policy says so to the browser (anything external would
 * be blocked, not fetched).
 *
 *	struct html_doc *d;
 *	html_doc_new(&d, "spmtap report: run1.spmtap", err, sizeof(err));
 *	html_heading(d, 2, "phases", "Phases", err, sizeof(err));
 *	html_paragraph(d, NULL, "Energy per phase, from dE/dt.", err, sizeof(err));
 *	const char *hdr[] = { "phase", "start [s]", "energy [J]" };
 *	const char *cells[] = { "gemm", "1.000", "301.5", "fft", "3.000", "280.1" };
 *	struct html_table t = { .cls = "phases", .ncols = 3, .header = hdr,
 *				.nrows = 2, .cells = cells };
 *	html_table(d, &t, err, sizeof(err));
 *	html_figure_plot(d, "gpu0", "gpu", fig, PLOT_FMT_SVG, "GPU 0", err, sizeof(err));
 *	html_doc_write(d, "report.html", err, sizeof(err));
 *	html_doc_free(d);
 *
 * Structure, for readers and tests: <h1 id="title">, then the blocks in
 * the order added, then <footer id="generator">.  All text is escaped;
 * ids and classes are plain tokens ([A-Za-z0-9_-], classes space-separated)
 * and every id is unique in the document (a repeat is refused).  Inline
 * SVGs have their internal ids prefixed with the figure's id, so two
 * figures' glyphs and clips never collide.
 *
 * Functions return 0 or a negative errno with a sentence in err; the first
 * failure sticks, and later calls return it again.
 */
#ifndef SPMTAP_ANALYSIS_HTML_H
#define SPMTAP_ANALYSIS_HTML_H

#include <stddef.h>

#include "collector/analysis/plot.h"

struct html_doc;

int html_doc_new(struct html_doc **out, const char *title, char *err, size_t errlen);
void html_doc_free(struct html_doc *d);

/* <hN id="id"> with N 2..4 (the title is the only h1); id may be NULL. */
int html_heading(struct html_doc *d, int level, const char *id, const char *text, char *err, size_t errlen);
/* <p class="cls"> of plain text; cls may be NULL.  A '\n' in text is a line break. */
int html_paragraph(struct html_doc *d, const char *cls, const char *text, char *err, size_t errlen);

struct html_table {
	const char *id, *cls;      /* either may be NULL */
	const char *caption;       /* NULL: none */
	size_t ncols, nrows;
	const char *const *header; /* [ncols] */
	const char *const *cells;  /* [nrows * ncols], row by row; NULL cells are empty */
	/*
	 * One letter per column, 'l', 'r' or 'c'; NULL, a short string or any
	 * other letter: automatic, which right-aligns a column whose non-empty
	 * cells are all numbers (an optional unit after a space is allowed:
	 * "12.5 W"; "-" and "n/a" count as empty).  Right-aligned cells and
	 * their header get class "num".
	 */
	const char *align;
};

/* <table> with a <thead> row and one <tbody> row per row. */
int html_table(struct html_doc *d, const struct html_table *t, char *err, size_t errlen);

/*
 * <figure id="id" class="cls"> around an SVG document (cairo's, or any
 * with an <svg> root; an XML prolog is dropped), then <figcaption> if
 * caption is not NULL.  The figure's id is required: it prefixes the
 * SVG's internal ids.
 */
int html_figure_svg(struct html_doc *d, const char *id, const char *cls, const char *svg, size_t len,
		    const char *caption, char *err, size_t errlen);
/* The same around <img src="data:image/png;base64,..."> with the PNG's own size. */
int html_figure_png(struct html_doc *d, const char *id, const char *cls, const void *png, size_t len,
		    const char *alt, const char *caption, char *err, size_t errlen);
/* Render a figure (SVG or PNG; PDF does not go into HTML) and add it as above. */
int html_figure_plot(struct html_doc *d, const char *id, const char *cls, const struct plot_figure *f,
		     enum plot_format fmt, const char *caption, char *err, size_t errlen);

/*
 * Close the document (footer, </html>) and give its text, valid until
 * html_doc_free(); nothing can be added after.
 */
int html_doc_text(struct html_doc *d, const char **text, size_t *len, char *err, size_t errlen);
/* Close the document if still open and write it to path (removed again on a failed write). */
int html_doc_write(struct html_doc *d, const char *path, char *err, size_t errlen);

#endif
