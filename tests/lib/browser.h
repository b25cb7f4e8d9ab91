/* SPDX-License-Identifier: MIT */
/*
 * Checking output as a person would see it: run Debian's headless Chromium
 * on a local file (a screenshot and the DOM after load), then look at the
 * screenshot's pixels (loaded with cairo, which every test links) and at
 * the DOM's text.  Chromium runs in a process group of its own with a
 * fresh profile and HOME, and is killed with its children when it takes
 * longer than BROWSER_TIMEOUT_S, or $SPMTAP_CHROMIUM_TIMEOUT seconds where
 * that is set (1..600).  A suite that needs it makes its cases
 * depend on browser_requires(), which names why they are skipped.
 */
#ifndef SPMTAP_TESTS_BROWSER_H
#define SPMTAP_TESTS_BROWSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BROWSER_TIMEOUT_S 30

/* $SPMTAP_CHROMIUM, else /usr/bin/chromium or /usr/bin/chromium-browser; NULL if not executable. */
const char *browser_path(void);
/* For testenv_case.requires: NULL when there is a Chromium, else the reason there is none. */
const char *browser_requires(void);

/*
 * Open the local file `path` in a w x h px window (device scale 1, no
 * scrollbars) and, in the same run, save a screenshot to png (unless NULL)
 * and give the DOM after load, serialised, in *dom (unless NULL; malloc'd,
 * NUL-terminated; also kept in path + ".dom").  Chromium's own output goes
 * to png (or path) + ".chromium.log", which error messages name.
 */
int browser_load(const char *path, int w, int h, const char *png, char **dom, char *err, size_t errlen);

/* ---- pixels ------------------------------------------------------------- */

struct browser_image {
	int w, h;
	uint32_t *px;    /* 0xRRGGBB row by row; transparency composed over white */
};

int browser_image_load(const char *png, struct browser_image *img, char *err, size_t errlen);
int browser_image_load_mem(const void *png, size_t len, struct browser_image *img, char *err,
			   size_t errlen);
void browser_image_free(struct browser_image *img);

static inline uint32_t browser_px(const struct browser_image *img, int x, int y)
{
	return img->px[(size_t)y * (size_t)img->w + (size_t)x];
}

/* Every channel of a within tol of b's. */
bool browser_rgb_near(uint32_t a, uint32_t b, int tol);

/* A line found in an image: straight runs of one colour in adjacent rows (columns). */
struct browser_line {
	int pos;         /* first row (horizontal) or column (vertical) */
	int thickness;   /* rows (columns) it spans */
	int from, to;    /* extent along the line, inclusive */
};

/*
 * Horizontal (vertical) lines of colour c: runs of at least min_len px,
 * where runs in adjacent rows (columns) with the same extent, give or take
 * 2 px, make one thick line.  Returns how many were found (all of them,
 * though at most max are stored), top to bottom (left to right).
 */
int browser_find_hlines(const struct browser_image *img, uint32_t c, int tol, int min_len,
			struct browser_line *out, int max);
int browser_find_vlines(const struct browser_image *img, uint32_t c, int tol, int min_len,
			struct browser_line *out, int max);

struct browser_run {
	int from, to;    /* inclusive */
};

/*
 * Runs of colour c along row y, from x0 to x1 inclusive.  Gaps of fewer
 * than max_gap px are bridged (a grid line or a trace crossing a band
 * does not split it), then runs shorter than min_len are dropped.
 * Returns the count; at most max runs are stored in out (which may be NULL).
 */
int browser_count_runs(const struct browser_image *img, int y, int x0, int x1, uint32_t c, int tol,
		       int min_len, int max_gap, struct browser_run *out, int max);
/* Fraction of the pixels in [x0, x1] x [y0, y1] further than tol from bg: is anything drawn there? */
double browser_ink(const struct browser_image *img, int x0, int y0, int x1, int y1, uint32_t bg, int tol);

/* A figure's panel found in pixels: its left axis and its bottom axis. */
struct browser_panel {
	int left, top, bottom, right; /* inside the left axis; top of the axis; the bottom axis's row; its end */
};

/*
 * Panels as a person finds them: a left axis (a vertical line of colour
 * axis, at least 50 px) with a bottom axis (a horizontal one, at least 200
 * px) starting at its foot.  Returns how many (at most max stored).
 */
int browser_find_panels(const struct browser_image *img, uint32_t axis, int tol, struct browser_panel *out, int max);
/*
 * Shaded bands of colour band across a panel, along the row 5 px under its
 * top, where the plot's 8 % headroom keeps data away.  Returns the count.
 */
int browser_panel_bands(const struct browser_image *img, const struct browser_panel *p, uint32_t band, int tol,
			struct browser_run *runs, int max);

/* ---- DOM text ----------------------------------------------------------- */

/*
 * The first element <tag ...> at or after s whose attribute attr holds
 * `value` as one of its space-separated tokens (any such element when attr
 * is NULL).  Returns its '<' and sets *end just past its closing tag (or
 * the end of the text); NULL when there is none.
 */
const char *browser_dom_find(const char *s, const char *tag, const char *attr, const char *value,
			     const char **end);
/* Elements <tag> that start in [s, end). */
int browser_dom_count(const char *s, const char *end, const char *tag);
/* The text of [s, end) without its tags, with the five XML entities decoded. */
void browser_dom_text(const char *s, const char *end, char *buf, size_t len);
/* True when an id="..." value appears twice in the DOM; the first repeat goes to buf. */
bool browser_dom_dup_id(const char *dom, char *buf, size_t len);

#endif
