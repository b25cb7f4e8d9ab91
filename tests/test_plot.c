/* SPDX-License-Identifier: MIT */
/*
 * Figures and the HTML report (collector/analysis/plot.h, html.h), checked
 * first as files (formats, sizes, error messages), then as pixels and DOM:
 * a synthetic recording like the paper's Fig. 5 (a 1 s idle / 1 s active
 * square wave, five phases, a filtered and a dE/dt power signal with their
 * confidence windows, two SPM counters) is drawn, and the bands, axes and
 * title are found again in the PNG, and in headless Chromium's screenshots
 * of the report and of the PNG.  Screenshots and files go to
 * $SPMTAP_ARTEFACTS (default: a temporary directory, kept only when a case
 * fails); docs/img/ keeps two of them.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "browser.h"
#include "collector/analysis/html.h"
#include "collector/analysis/plot.h"
#include "collector/analysis/figure.h"
#include "collector/analysis/plot_internal.h"
#include "collector/analysis/recording.h"
#include "proc.h"
#include "testenv.h"

#define NPHASES 5
#define BASE_NS 1000000000000LL /* a BOOTTIME-like start: 1000 s after boot */
#define MS 1000000LL
#define SEC 1000000000LL
#define FIG_W 1200
#define FIG_H 640
/* a band's colour in a screenshot: within this of PLOT_RGB_PHASE_ON_WHITE per channel */
#define BAND_TOL 12
#define AXIS_TOL 40

static const char *const phase_names[NPHASES] = { "gemm", "fft", "stencil", "gemm <2>", "reduce & sum" };

/* ---- artefacts ---------------------------------------------------------- */

struct artefacts {
	char dir[PATH_MAX];
	int made; /* 1: a temporary directory of ours, removed if every case passes */
};

static struct artefacts *artefacts(void)
{
	static struct artefacts a;
	if (a.dir[0])
		return &a;
	const char *env = getenv("SPMTAP_ARTEFACTS");
	if (env && *env) {
		snprintf(a.dir, sizeof(a.dir), "%s", env);
		mkdir(a.dir, 0755);
	} else {
		const char *tmp = getenv("TMPDIR");
		snprintf(a.dir, sizeof(a.dir), "%s/spmtap-plot-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(a.dir))
			snprintf(a.dir, sizeof(a.dir), ".");
		else
			a.made = 1;
	}
	return &a;
}

static const char *art(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", artefacts()->dir, name);
	return buf;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

/* ---- the synthetic recording ---------------------------------------------- */

struct synth {
	size_t n, nc;
	int64_t *t, *tc;            /* 1 ms power samples, 10 ms counter samples */
	double *dedt, *avg, *waves, *valu;
	struct plot_figure *fig;
	int s_dedt, s_avg;
};

static int64_t phase_t0(int k)
{
	return BASE_NS + (1 + 2 * k) * SEC;
}

static int64_t phase_t1(int k)
{
	return phase_t0(k) + SEC;
}

static bool active(int64_t t, int64_t delay)
{
	for (int k = 0; k < NPHASES; k++)
		if (t >= phase_t0(k) + delay && t < phase_t1(k) + delay)
			return true;
	return false;
}

static double noise(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(*s >> 11) / (double)(1ull << 53) - 0.5;
}

static void synth_free(struct synth *s)
{
	plot_figure_free(s->fig);
	free(s->t);
	free(s->tc);
	free(s->dedt);
	free(s->avg);
	free(s->waves);
	free(s->valu);
	memset(s, 0, sizeof(*s));
}

#define OK(call)                                                              \
	do {                                                                  \
		int rc_ = (call);                                             \
		if (rc_ < 0) {                                                \
			fprintf(stderr, "\n    %s: %s\n", #call, err);        \
			CU_FAIL(#call);                                       \
			return rc_;                                           \
		}                                                             \
	} while (0)

/*
 * GPU `gpu` of the recording: 11 s, phases active 1-2, 3-4, ... 9-10 s.
 * dE/dt follows the load after 5 ms; the firmware's average power is a
 * 150 ms low-pass after 20 ms, so its confidence window is narrower.
 */
static int synth_build(struct synth *s, int gpu)
{
	char err[256];
	memset(s, 0, sizeof(*s));
	s->n = 11000;
	s->nc = 1100;
	s->t = malloc(s->n * sizeof(*s->t));
	s->dedt = malloc(s->n * sizeof(double));
	s->avg = malloc(s->n * sizeof(double));
	s->tc = malloc(s->nc * sizeof(*s->tc));
	s->waves = malloc(s->nc * sizeof(double));
	s->valu = malloc(s->nc * sizeof(double));
	CU_ASSERT_FATAL(s->t && s->dedt && s->avg && s->tc && s->waves && s->valu);
	double idle = 95 + 10 * gpu, busy = 300 - 40 * gpu, f = 0;
	uint64_t seed = 42 + (uint64_t)gpu;
	for (size_t i = 0; i < s->n; i++) {
		s->t[i] = BASE_NS + (int64_t)i * MS;
		s->dedt[i] = (active(s->t[i], 5 * MS) ? busy : idle) + 4 * noise(&seed);
		double target = active(s->t[i], 20 * MS) ? busy : idle;
		f = i ? f + (target - f) * (1.0 / 150) : idle;
		s->avg[i] = f;
	}
	for (size_t i = 0; i < s->nc; i++) {
		s->tc[i] = BASE_NS + (int64_t)(i + 1) * 10 * MS;
		bool on = active(s->tc[i], 0);
		s->waves[i] = on ? 820 + 60 * noise(&seed) : 3;
		s->valu[i] = on ? 560 + 80 * noise(&seed) : 0;
	}
	char title[64];
	snprintf(title, sizeof(title), "GPU %d: MI300A (emulated), square wave 1 s / 1 s", gpu);
	OK(plot_figure_new(&s->fig, title, err, sizeof(err)));
	OK(plot_figure_set_size(s->fig, FIG_W, FIG_H, err, sizeof(err)));
	OK(plot_figure_set_origin(s->fig, BASE_NS, "recording start", err, sizeof(err)));
	int pc, pp;
	OK(pc = plot_figure_add_panel(s->fig, "SPM counters [per 10 ms]", err, sizeof(err)));
	OK(pp = plot_figure_add_panel(s->fig, "power [W]", err, sizeof(err)));
	struct plot_series c1 = { .name = "SQ_WAVES", .panel = pc, .t_ns = s->tc, .v = s->waves, .n = s->nc,
				  .style = PLOT_STEP_PRE, .color = PLOT_GREEN };
	struct plot_series c2 = { .name = "SQ_INSTS_VALU", .unit = "x100", .panel = pc, .t_ns = s->tc,
				  .v = s->valu, .n = s->nc, .style = PLOT_STEP_PRE, .color = PLOT_ORANGE };
	struct plot_series p1 = { .name = "power (dE/dt)", .unit = "W", .panel = pp, .t_ns = s->t, .v = s->dedt,
				  .n = s->n, .style = PLOT_STEP_PRE, .color = PLOT_BLUE, .width = 1 };
	struct plot_series p2 = { .name = "power_avg (firmware)", .unit = "W", .panel = pp, .t_ns = s->t,
				  .v = s->avg, .n = s->n, .color = PLOT_VERMILLION, .width = 2 };
	OK(plot_figure_add_series(s->fig, &c1, err, sizeof(err)));
	OK(plot_figure_add_series(s->fig, &c2, err, sizeof(err)));
	OK(s->s_dedt = plot_figure_add_series(s->fig, &p1, err, sizeof(err)));
	OK(s->s_avg = plot_figure_add_series(s->fig, &p2, err, sizeof(err)));
	for (int k = 0; k < NPHASES; k++) {
		OK(plot_figure_add_phase(s->fig, phase_t0(k), phase_t1(k), phase_names[k], err, sizeof(err)));
		/* W_conf = [ts + td + tr, te - td - tf] */
		OK(plot_figure_add_window(s->fig, s->s_dedt, phase_t0(k) + 10 * MS, phase_t1(k) - 10 * MS, err,
					  sizeof(err)));
		OK(plot_figure_add_window(s->fig, s->s_avg, phase_t0(k) + 350 * MS, phase_t1(k) - 350 * MS, err,
					  sizeof(err)));
	}
	OK(plot_figure_add_marker(s->fig, phase_t0(0) + 20 * MS, "delay", err, sizeof(err)));
	OK(plot_figure_add_marker(s->fig, phase_t0(0) + 350 * MS, "response", err, sizeof(err)));
	OK(plot_figure_add_marker(s->fig, phase_t1(0) + 350 * MS, "recovery", err, sizeof(err)));
	OK(plot_figure_add_level(s->fig, pp, idle, "idle", err, sizeof(err)));
	OK(plot_figure_add_level(s->fig, pp, busy, "active", err, sizeof(err)));
	OK(plot_figure_set_range(s->fig, BASE_NS, BASE_NS + 11 * SEC, err, sizeof(err)));
	return 0;
}

/* ---- reading figures back ----------------------------------------------------- */

static bool file_starts(const char *path, const char *magic)
{
	char buf[16] = { 0 };
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	return n >= strlen(magic) && !memcmp(buf, magic, strlen(magic));
}

static int find_panels(const struct browser_image *img, struct browser_panel *out, int max)
{
	return browser_find_panels(img, PLOT_RGB_AXIS, AXIS_TOL, out, max);
}

/* A colour drawn at alpha a over white, as a screenshot shows it. */
static uint32_t on_white(uint32_t c, double a)
{
	uint32_t o = 0;
	for (int sh = 16; sh >= 0; sh -= 8)
		o |= (uint32_t)lround(((c >> sh) & 255) * a + 255 * (1 - a)) << sh;
	return o;
}

/* Bands of phase name k (the synthetic figure's names are all distinct: name k is phase k). */
static int bands_in(const struct browser_image *img, const struct browser_panel *p, int k, struct browser_run *runs,
		    int max)
{
	return browser_panel_bands(img, p, on_white(plot_phase_rgb((size_t)k), PLOT_PHASE_ALPHA), BAND_TOL, runs, max);
}

/*
 * The checks a figure must pass wherever it is shown: `expect` panels,
 * each with NPHASES bands at the phases' places (the first panel's width
 * is the time axis), and ink where the title is (dy_title: the title's
 * middle relative to the top panel's top, from the layout).
 */
static void check_figure_pixels(const struct browser_image *img, int expect, const struct plot_layout *L,
				const char *what)
{
	struct browser_panel fp[8];
	int n = find_panels(img, fp, 8);
	if (n != expect)
		fprintf(stderr, "\n    %s: %d panels found, %d expected ", what, n, expect);
	CU_ASSERT_EQUAL(n, expect);
	for (int i = 0; i < n && i < 8; i++) {
		/* each phase one band in its name's colour, where it is: 1..2 s, 3..4 s, ... of 11 s */
		double w = fp[i].right - fp[i].left + 1;
		for (int k = 0; k < NPHASES; k++) {
			struct browser_run runs[16];
			int nb = bands_in(img, &fp[i], k, runs, 16);
			if (nb != 1)
				fprintf(stderr, "\n    %s: panel at (%d,%d): %d bands of phase '%s' ", what, fp[i].left,
					fp[i].top, nb, phase_names[k]);
			CU_ASSERT_EQUAL(nb, 1);
			if (nb < 1)
				continue;
			double mid = fp[i].left + w * (phase_t0(k) + SEC / 2 - L->t0_ns) / (double)(L->t1_ns - L->t0_ns);
			CU_ASSERT(fabs((runs[0].from + runs[0].to) / 2.0 - mid) < 4);
			CU_ASSERT(fabs((runs[0].to - runs[0].from + 1) - w / 11) < 5);
		}
		/* the panel's size matches the layout's (no scaling on the way) */
		CU_ASSERT(abs((fp[i].right - fp[i].left + 1) - (int)L->panel[0].w) <= 3);
	}
	/* the title: ink where the layout puts it, above the top panel */
	if (n > 0) {
		int top = fp[0].top;
		for (int i = 1; i < n; i++)
			top = fp[i].top < top ? fp[i].top : top;
		int ty = top + (int)(L->title.y - L->panel[0].y);
		double ink = browser_ink(img, fp[0].left, ty, fp[0].right, ty + (int)L->title.h, PLOT_RGB_BACKGROUND, 60);
		if (ink < 0.01)
			fprintf(stderr, "\n    %s: title area blank (ink %.4f) ", what, ink);
		CU_ASSERT(ink >= 0.01);
	}
}

/* ---- cases -------------------------------------------------------------------- */

static void ticks(void)
{
	struct plot_ticks t;
	char b[32];
	CU_ASSERT_DOUBLE_EQUAL(plot_nice_step(324, 6), 50, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(plot_nice_step(11, 10), 1, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(plot_nice_step(0.0031, 4), 0.001, 1e-15);
	plot_ticks_make(0, 324, 6, &t);
	CU_ASSERT_EQUAL(t.n, 7);
	CU_ASSERT_DOUBLE_EQUAL(t.v[6], 300, 1e-9);
	plot_tick_label(&t, t.v[1], b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "50");
	plot_ticks_make(0, 2.6e6, 5, &t);
	CU_ASSERT_DOUBLE_EQUAL(t.step, 5e5, 1e-6);
	plot_tick_label(&t, 1.5e6, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "1.5M");
	plot_tick_label(&t, 0, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "0");
	plot_ticks_make(0.0012, 0.0042, 3, &t);
	CU_ASSERT_DOUBLE_EQUAL(t.v[0], 0.002, 1e-15);
	plot_tick_label(&t, t.v[0], b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "0.002");
	plot_ticks_make(-3, 3, 6, &t);
	plot_tick_label(&t, t.v[0], b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "-3");
	plot_ticks_make(1000000.5, 1000004.5, 4, &t); /* a time axis far from its origin */
	plot_ticks_plain(&t);
	plot_tick_label(&t, t.v[0], b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "1000001");
	plot_ticks_make(5, 5, 6, &t); /* empty range: no ticks, no crash */
	CU_ASSERT_EQUAL(t.n, 0);
}

static void files(void)
{
	struct synth s;
	char err[256], svg[PATH_MAX], png[PATH_MAX], pdf[PATH_MAX];
	if (synth_build(&s, 0))
		return;
	art("plot-example.svg", svg, sizeof(svg));
	art("plot-example.png", png, sizeof(png));
	art("plot-example.pdf", pdf, sizeof(pdf));
	CU_ASSERT_EQUAL(plot_render_file(s.fig, svg, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(plot_render_file(s.fig, png, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(plot_render_file(s.fig, pdf, err, sizeof(err)), 0);
	CU_ASSERT(file_starts(svg, "<?xml"));
	CU_ASSERT(file_starts(png, "\x89PNG\r\n\x1a\n"));
	CU_ASSERT(file_starts(pdf, "%PDF-"));
	struct browser_image img;
	CU_ASSERT_EQUAL_FATAL(browser_image_load(png, &img, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(img.w, FIG_W);
	CU_ASSERT_EQUAL(img.h, FIG_H);
	browser_image_free(&img);
	/* the SVG says its size in px, so a browser shows it 1:1 like the PNG */
	char *mem;
	size_t len;
	CU_ASSERT_EQUAL_FATAL(plot_render_mem(s.fig, PLOT_FMT_SVG, &mem, &len, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(strlen(mem), len);
	CU_ASSERT_PTR_NOT_NULL(strstr(mem, "width=\"1200px\" height=\"640px\""));
	free(mem);
	CU_ASSERT_EQUAL(plot_format_from_path("X/Y.PdF", &(enum plot_format){ 0 }, err, sizeof(err)), 0);
	synth_free(&s);
}

static void errors(void)
{
	struct synth s;
	char err[256], path[PATH_MAX], file[PATH_MAX];
	if (synth_build(&s, 0))
		return;
	struct plot_figure *f = s.fig;
	art("plot.jpg", path, sizeof(path));
	CU_ASSERT_EQUAL(plot_render_file(f, path, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown extension '.jpg': use .svg, .png or .pdf"));
	CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0);
	CU_ASSERT_EQUAL(plot_render_file(f, "figure", err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "no extension"));
	/* a directory that is a file: ENOTDIR even for root */
	art("plain-file", file, sizeof(file));
	FILE *fp = fopen(file, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
	fclose(fp);
	snprintf(path, sizeof(path), "%s/out.svg", file);
	CU_ASSERT_EQUAL(plot_render_file(f, path, err, sizeof(err)), -ENOTDIR);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot create"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
	CU_ASSERT_EQUAL(plot_render_file(f, "/nonexistent-spmtap-dir/a.png", err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "No such file or directory"));
	unlink(file);
	/* a full disk (a link to /dev/full): the errno, and nothing left behind */
	art("full.png", path, sizeof(path));
	unlink(path);
	if (access("/dev/full", W_OK) == 0 && symlink("/dev/full", path) == 0) {
		CU_ASSERT_EQUAL(plot_render_file(f, path, err, sizeof(err)), -ENOSPC);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "No space left on device"));
		CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0);
	}
	/* figure model errors */
	double v[3] = { 1, 2, 3 };
	int64_t back[3] = { 10, 30, 20 };
	struct plot_series bad = { .name = "x", .panel = 5, .t_ns = back, .v = v, .n = 3 };
	CU_ASSERT_EQUAL(plot_figure_add_series(f, &bad, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "no panel 5"));
	bad.panel = 0;
	CU_ASSERT_EQUAL(plot_figure_add_series(f, &bad, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "time goes backwards"));
	bad.t_ns = NULL;
	CU_ASSERT_EQUAL(plot_figure_add_series(f, &bad, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "no times"));
	CU_ASSERT_EQUAL(plot_figure_add_phase(f, 20, 10, "p", err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "ends before it starts"));
	CU_ASSERT_EQUAL(plot_figure_add_window(f, 99, 10, 20, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(plot_figure_add_level(f, 0, NAN, "nan", err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(plot_figure_set_range(f, 10, 10, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(plot_figure_set_size(f, 100, 100, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(plot_figure_set_size(f, 320, 160, err, sizeof(err)), 0);
	char *mem;
	size_t len;
	CU_ASSERT_EQUAL(plot_render_mem(f, PLOT_FMT_PNG, &mem, &len, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "too small"));
	CU_ASSERT_PTR_NULL(mem);
	for (int i = 2; i < PLOT_MAX_PANELS; i++)
		CU_ASSERT_EQUAL(plot_figure_add_panel(f, "more", err, sizeof(err)), i);
	CU_ASSERT_EQUAL(plot_figure_add_panel(f, "one too many", err, sizeof(err)), -ENOSPC);
	synth_free(&s);
	/* an empty figure has nothing to draw in */
	CU_ASSERT_EQUAL_FATAL(plot_figure_new(&f, "empty", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(plot_render_mem(f, PLOT_FMT_SVG, &mem, &len, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "no panel"));
	plot_figure_free(f);
}

/* The PNG itself: bands, axes and title where a reader looks for them. */
static void png_pixels(void)
{
	struct synth s;
	char err[256];
	if (synth_build(&s, 0))
		return;
	struct plot_layout L;
	CU_ASSERT_EQUAL_FATAL(plot_figure_layout(s.fig, &L, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(L.npanels, 2);
	char *png;
	size_t len;
	CU_ASSERT_EQUAL_FATAL(plot_render_mem(s.fig, PLOT_FMT_PNG, &png, &len, err, sizeof(err)), 0);
	struct browser_image img;
	CU_ASSERT_EQUAL_FATAL(browser_image_load_mem(png, len, &img, err, sizeof(err)), 0);
	check_figure_pixels(&img, 2, &L, "PNG");
	/* the axes are exactly where the layout says */
	struct browser_panel fp[4];
	CU_ASSERT_EQUAL_FATAL(find_panels(&img, fp, 4), 2);
	for (int p = 0; p < 2; p++) {
		CU_ASSERT_EQUAL(fp[p].left, (int)L.panel[p].x + 1);
		CU_ASSERT_EQUAL(fp[p].top, (int)L.panel[p].y);
		CU_ASSERT_EQUAL(fp[p].bottom, (int)(L.panel[p].y + L.panel[p].h) - 1);
	}
	/* each series is drawn in its colour, in its panel */
	int seen[4] = { 0 };
	static const enum plot_color col[4] = { PLOT_GREEN, PLOT_ORANGE, PLOT_BLUE, PLOT_VERMILLION };
	for (int k = 0; k < 4; k++) {
		const struct plot_rect *r = &L.panel[k < 2 ? 0 : 1];
		for (int y = (int)r->y + 2; y < r->y + r->h - 2; y++)
			for (int x = (int)r->x + 2; x < r->x + r->w - 2; x++)
				seen[k] += browser_rgb_near(browser_px(&img, x, y), plot_color_rgb(col[k]), 24);
		CU_ASSERT(seen[k] > 100);
	}
	/* a confidence window's hatching, in the power panel's bottom lanes, inside phase 1 */
	double x = L.panel[1].x + L.panel[1].w * 1.5 / 11;
	int hatch = 0;
	for (int y = (int)(L.panel[1].y + L.panel[1].h - 30); y < L.panel[1].y + L.panel[1].h - 2; y++)
		hatch += browser_rgb_near(browser_px(&img, (int)x, y), plot_color_rgb(PLOT_VERMILLION), 24);
	CU_ASSERT(hatch >= 1);
	browser_image_free(&img);
	free(png);
	synth_free(&s);
}

/* NaN is a gap: no line across it, and the line on both sides, in every style. */
static void gaps(void)
{
	char err[256];
	enum { N = 1000 };
	int64_t t[N];
	double v[N];
	for (int i = 0; i < N; i++) {
		t[i] = i * MS;
		v[i] = i >= 400 && i < 600 ? NAN : 1.0 + 0.001 * (i % 2);
	}
	for (int style = PLOT_LINE; style <= PLOT_STEP_PRE; style++) {
		struct plot_figure *f;
		CU_ASSERT_EQUAL_FATAL(plot_figure_new(&f, "gap", err, sizeof(err)), 0);
		int p = plot_figure_add_panel(f, "value", err, sizeof(err));
		CU_ASSERT_EQUAL(plot_figure_panel_range(f, p, 0, 2, err, sizeof(err)), 0);
		struct plot_series s = { .name = "x", .panel = p, .t_ns = t, .v = v, .n = N,
					 .style = (enum plot_style)style, .color = PLOT_VERMILLION, .width = 2 };
		CU_ASSERT_EQUAL(plot_figure_add_series(f, &s, err, sizeof(err)), 0);
		struct plot_layout L;
		char *png;
		size_t len;
		struct browser_image img;
		CU_ASSERT_EQUAL_FATAL(plot_figure_layout(f, &L, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL_FATAL(plot_render_mem(f, PLOT_FMT_PNG, &png, &len, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL_FATAL(browser_image_load_mem(png, len, &img, err, sizeof(err)), 0);
		const struct plot_rect *r = &L.panel[0];
		int at[3] = { (int)(r->x + r->w * 0.2), (int)(r->x + r->w * 0.5), (int)(r->x + r->w * 0.8) };
		for (int k = 0; k < 3; k++) {
			int hits = 0;
			for (int y = (int)r->y + 1; y < r->y + r->h - 1; y++)
				hits += browser_rgb_near(browser_px(&img, at[k], y), plot_color_rgb(PLOT_VERMILLION), 40);
			CU_ASSERT(k == 1 ? hits == 0 : hits > 0);
		}
		browser_image_free(&img);
		free(png);
		plot_figure_free(f);
	}
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* 10^6 samples: files as small as for 10^3, and a one-sample spike still shows. */
static void million(void)
{
	char err[256];
	enum { N = 1000000 };
	int64_t *t = malloc(N * sizeof(*t));
	double *v = malloc(N * sizeof(*v));
	CU_ASSERT_FATAL(t && v);
	uint64_t seed = 1;
	for (int i = 0; i < N; i++) {
		t[i] = BASE_NS + (int64_t)i * 10000; /* 10 us */
		v[i] = 100 + 20 * sin(i * 1e-4) + 2 * noise(&seed);
	}
	struct plot_figure *f;
	CU_ASSERT_EQUAL_FATAL(plot_figure_new(&f, "a million samples", err, sizeof(err)), 0);
	int p = plot_figure_add_panel(f, "power [W]", err, sizeof(err));
	struct plot_series s = { .name = "p", .panel = p, .t_ns = t, .v = v, .n = N, .color = PLOT_BLUE };
	CU_ASSERT_EQUAL(plot_figure_add_series(f, &s, err, sizeof(err)), 0);
	/*
	 * The spike goes in the middle of a pixel column (the arrays are
	 * borrowed, so it can go in now), where only the column's min/max
	 * keeps it: its first or last sample would show even when subsampled.
	 */
	struct plot_layout L;
	CU_ASSERT_EQUAL_FATAL(plot_figure_layout(f, &L, err, sizeof(err)), 0);
	const struct plot_rect *r = &L.panel[0];
	int x = (int)(r->x + r->w * 0.7);
	int spike = (int)lround((x + 0.5 - r->x) / r->w * (N - 1));
	v[spike] = 400;
	double t0 = now_s();
	char *svg, *png;
	size_t nsvg, npng;
	CU_ASSERT_EQUAL_FATAL(plot_render_mem(f, PLOT_FMT_SVG, &svg, &nsvg, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(plot_render_mem(f, PLOT_FMT_PNG, &png, &npng, err, sizeof(err)), 0);
	double dt = now_s() - t0;
	printf("\n    10^6 samples: SVG %zu kB, PNG %zu kB, both in %.0f ms ", nsvg / 1024, npng / 1024, dt * 1e3);
	CU_ASSERT(nsvg < 400 * 1024); /* about 20 MB without the reduction */
	struct browser_image img;
	CU_ASSERT_EQUAL_FATAL(browser_image_load_mem(png, npng, &img, err, sizeof(err)), 0);
	int top = 0;
	for (int dx = -1; dx <= 1; dx++)
		for (int y = (int)r->y + 1; y < r->y + r->h * 0.2; y++)
			top += browser_rgb_near(browser_px(&img, x + dx, y), on_white(plot_color_rgb(PLOT_BLUE), 0.35), 30);
	CU_ASSERT(top > 5); /* in the envelope: drawn at alpha 0.35 */
	browser_image_free(&img);
	free(svg);
	free(png);
	plot_figure_free(f);
	free(t);
	free(v);
}

/*
 * A zoomed-in range with everything reaching far outside it: lines run to
 * the edges, a huge phase is one band across the panel, and nothing costs
 * time in proportion to how far outside it reaches.
 */
static void outside_range(void)
{
	struct synth s;
	char err[256];
	if (synth_build(&s, 0))
		return;
	const int64_t far = 1000000 * SEC;
	int64_t mid = phase_t0(1);
	CU_ASSERT_EQUAL(plot_figure_set_range(s.fig, mid - 200 * MS, mid + 200 * MS, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(plot_figure_add_phase(s.fig, BASE_NS - far, BASE_NS + far, "all", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(plot_figure_add_window(s.fig, s.s_dedt, BASE_NS - far, BASE_NS + far, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(plot_figure_add_marker(s.fig, BASE_NS + far, "far away", err, sizeof(err)), 0);
	struct plot_layout L;
	CU_ASSERT_EQUAL_FATAL(plot_figure_layout(s.fig, &L, err, sizeof(err)), 0);
	double t0 = now_s();
	char *png;
	size_t len;
	CU_ASSERT_EQUAL_FATAL(plot_render_mem(s.fig, PLOT_FMT_PNG, &png, &len, err, sizeof(err)), 0);
	CU_ASSERT(now_s() - t0 < 2);
	struct browser_image img;
	CU_ASSERT_EQUAL_FATAL(browser_image_load_mem(png, len, &img, err, sizeof(err)), 0);
	/* the phase at 3..4 s starts mid-figure; the huge one shades all of it (darker where both are) */
	const struct plot_rect *r = &L.panel[0];
	struct browser_run run[4];
	/* "all" is the sixth name: the sixth band colour, alone left of the fft band */
	int n = browser_count_runs(&img, (int)r->y + 5, (int)r->x + 2, (int)(r->x + r->w) - 3,
				   on_white(plot_phase_rgb(NPHASES), PLOT_PHASE_ALPHA), BAND_TOL, 4, 4, run, 4);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT(n == 1 && fabs(run[0].to - (r->x + r->w / 2)) < 4);
	/* the 1 ms power line is drawn across the whole width */
	int cols = 0;
	const struct plot_rect *q = &L.panel[1];
	for (int x = (int)q->x + 2; x < q->x + q->w - 2; x++) {
		bool hit = false;
		for (int y = (int)q->y + 1; y < q->y + q->h - 1 && !hit; y++)
			hit = browser_rgb_near(browser_px(&img, x, y), plot_color_rgb(PLOT_BLUE), 30);
		cols += hit;
	}
	CU_ASSERT(cols > q->w - 8);
	browser_image_free(&img);
	free(png);
	synth_free(&s);
}

/* ---- HTML ----------------------------------------------------------------------- */

static const char *const phase_hdr[] = { "phase", "start [s]", "end [s]", "energy [J]", "mean power" };

/* The report of the synthetic recording: both GPUs, the phases, a summary. */
static int build_report(struct html_doc **out, struct synth g[2], char *err, size_t errlen)
{
	static const char *const title = "spmtap report: square-wave.spmtap <emulated> & more";
	struct html_doc *d;
	int rc = html_doc_new(&d, title, err, errlen);
	if (rc)
		return rc;
	char cells[NPHASES][5][32];
	const char *cp[NPHASES * 5];
	for (int k = 0; k < NPHASES; k++) {
		snprintf(cells[k][0], 32, "%s", phase_names[k]);
		snprintf(cells[k][1], 32, "%.3f", (phase_t0(k) - BASE_NS) / 1e9);
		snprintf(cells[k][2], 32, "%.3f", (phase_t1(k) - BASE_NS) / 1e9);
		snprintf(cells[k][3], 32, "%.1f", 300.0 - k);
		snprintf(cells[k][4], 32, "%.1f W", 300.0 - k);
		for (int c = 0; c < 5; c++)
			cp[k * 5 + c] = cells[k][c];
	}
	const char *sum_hdr[] = { "GPU", "samples", "energy [J]" };
	const char *sum[] = { "0", "11000", "2540.1", "1", "11000", "n/a" };
	struct html_table ph = { .id = "phase-table", .cls = "phases", .caption = "Phases (GPU 0)", .ncols = 5,
				 .nrows = NPHASES, .header = phase_hdr, .cells = cp };
	struct html_table su = { .cls = "summary", .ncols = 3, .nrows = 2, .header = sum_hdr, .cells = sum };
	if ((rc = html_paragraph(d, "intro",
				 "Power and SPM counters of each GPU on one time axis. Shaded: phases; hatched: "
				 "where each power signal is steady (confidence window).",
				 err, errlen)) ||
	    (rc = html_figure_plot(d, "gpu0", "gpu", g[0].fig, PLOT_FMT_SVG, "GPU 0", err, errlen)) ||
	    (rc = html_figure_plot(d, "gpu1", "gpu", g[1].fig, PLOT_FMT_SVG, "GPU 1", err, errlen)) ||
	    (rc = html_heading(d, 2, "phases", "Phases", err, errlen)) || (rc = html_table(d, &ph, err, errlen)) ||
	    (rc = html_heading(d, 2, "summary", "Summary", err, errlen)) || (rc = html_table(d, &su, err, errlen))) {
		html_doc_free(d);
		return rc;
	}
	*out = d;
	return 0;
}

static void html_text(void)
{
	char err[256];
	struct html_doc *d;
	CU_ASSERT_EQUAL_FATAL(html_doc_new(&d, "a <b> & \"c\"", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(html_heading(d, 2, "h", "<script>alert(1)</script>", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(html_paragraph(d, NULL, "line 1\nline 2 \xff end", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(html_heading(d, 2, "h", "again", err, sizeof(err)), -EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "already in the document"));
	CU_ASSERT_EQUAL(html_heading(d, 2, "title", "the h1's id", err, sizeof(err)), -EEXIST);
	CU_ASSERT_EQUAL(html_heading(d, 2, "a b", "space", err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(html_heading(d, 1, NULL, "h1", err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(html_paragraph(d, "x\" onload=\"y", "attr", err, sizeof(err)), -EINVAL);
	const char *hdr[] = { "name", "value", "share", "mixed" };
	const char *cells[] = { "a", "1.5", "12 %", "1", "b", "-2e3", "n/a", "x", "c", "", "3.25 %", "2" };
	struct html_table t = { .id = "t", .cls = "phases wide", .ncols = 4, .nrows = 3, .header = hdr,
				.cells = cells };
	CU_ASSERT_EQUAL(html_table(d, &t, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(html_figure_png(d, "p", NULL, "not a png at all, no", 20, NULL, NULL, err, sizeof(err)),
			-EINVAL);
	CU_ASSERT_EQUAL(html_figure_svg(d, "s", NULL, "<html></html>", 13, NULL, err, sizeof(err)), -EINVAL);
	const char *text;
	size_t len;
	CU_ASSERT_EQUAL_FATAL(html_doc_text(d, &text, &len, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(strlen(text), len);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "<h1 id=\"title\">a &lt;b&gt; &amp; &quot;c&quot;</h1>"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "&lt;script&gt;alert(1)&lt;/script&gt;"));
	CU_ASSERT_PTR_NULL(strstr(text, "<script"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "line 1<br>line 2 \xef\xbf\xbd end"));
	/* numbers right-aligned, with units and blanks; text and mixed columns left */
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "<th>name</th><th class=\"num\">value</th>"
					    "<th class=\"num\">share</th><th>mixed</th>"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "<td>a</td><td class=\"num\">1.5</td>"
					    "<td class=\"num\">12 %</td><td>1</td>"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "<table id=\"t\" class=\"phases wide\">"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "<footer id=\"generator\">"));
	/* self-contained: nothing to fetch, no script */
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "Content-Security-Policy"));
	CU_ASSERT_PTR_NULL(strstr(text, "<link"));
	CU_ASSERT_PTR_NULL(strstr(text, " src=\"http"));
	/* closed: nothing more goes in */
	CU_ASSERT_EQUAL(html_paragraph(d, NULL, "late", err, sizeof(err)), -EINVAL);
	html_doc_free(d);
}

/* Two inline SVGs: cairo's ids (glyph0-1, clip1) made unique per figure. */
static void html_figures(void)
{
	struct synth g[2];
	char err[256], dup[128];
	if (synth_build(&g[0], 0) || synth_build(&g[1], 1))
		return;
	struct html_doc *d;
	CU_ASSERT_EQUAL_FATAL(build_report(&d, g, err, sizeof(err)), 0);
	char *png;
	size_t len;
	CU_ASSERT_EQUAL_FATAL(plot_render_mem(g[0].fig, PLOT_FMT_PNG, &png, &len, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(html_figure_png(d, "gpu0-png", "png", png, len, "GPU 0 as PNG", NULL, err, sizeof(err)), 0);
	free(png);
	const char *text;
	CU_ASSERT_EQUAL_FATAL(html_doc_text(d, &text, &len, err, sizeof(err)), 0);
	CU_ASSERT_FALSE(browser_dom_dup_id(text, dup, sizeof(dup)));
	CU_ASSERT_PTR_NULL(strstr(text, "<?xml"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "id=\"gpu1-glyph0-1\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "href=\"#gpu1-glyph0-1\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "<img width=\"1200\" height=\"640\" alt=\"GPU 0 as PNG\" "
					    "src=\"data:image/png;base64,iVBORw0KGgo"));
	const char *end, *e = text + len;
	CU_ASSERT_EQUAL(browser_dom_count(text, e, "figure"), 3);
	CU_ASSERT_PTR_NOT_NULL(browser_dom_find(text, "table", "class", "phases", &end));
	html_doc_free(d);
	synth_free(&g[0]);
	synth_free(&g[1]);
}

/* ---- in Chromium -------------------------------------------------------------- */

/* The report, opened in Chromium: its DOM, then a screenshot's pixels. */
static void report_in_chromium(void)
{
	struct synth g[2];
	char err[512], html[PATH_MAX], shot[PATH_MAX], buf[256];
	if (synth_build(&g[0], 0) || synth_build(&g[1], 1))
		return;
	struct plot_layout L;
	CU_ASSERT_EQUAL_FATAL(plot_figure_layout(g[0].fig, &L, err, sizeof(err)), 0);
	struct html_doc *d;
	CU_ASSERT_EQUAL_FATAL(build_report(&d, g, err, sizeof(err)), 0);
	art("report.html", html, sizeof(html));
	CU_ASSERT_EQUAL_FATAL(html_doc_write(d, html, err, sizeof(err)), 0);
	html_doc_free(d);

	/* one Chromium run for both: it is the slow part of the suite */
	char *dom = NULL;
	art("report-example-screenshot.png", shot, sizeof(shot));
	int rc = browser_load(html, 1280, 1500, shot, &dom, err, sizeof(err));
	if (rc)
		fprintf(stderr, "\n    %s ", err);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	const char *end, *e = dom + strlen(dom);
	const char *h1 = browser_dom_find(dom, "h1", "id", "title", &end);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h1);
	browser_dom_text(h1, end, buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "spmtap report: square-wave.spmtap <emulated> & more");
	const char *tab = browser_dom_find(dom, "table", "class", "phases", &end);
	CU_ASSERT_PTR_NOT_NULL_FATAL(tab);
	const char *tb = browser_dom_find(tab, "tbody", NULL, NULL, &end);
	CU_ASSERT_PTR_NOT_NULL_FATAL(tb);
	CU_ASSERT_EQUAL(browser_dom_count(tb, end, "tr"), NPHASES);
	CU_ASSERT_EQUAL(browser_dom_count(tb, end, "td"), NPHASES * 5);
	tab = browser_dom_find(dom, "table", "class", "summary", &end);
	CU_ASSERT_PTR_NOT_NULL_FATAL(tab);
	CU_ASSERT_EQUAL(browser_dom_count(tab, end, "tr"), 3); /* header + 2 GPUs */
	int figs = 0;
	for (const char *p = dom; (p = browser_dom_find(p, "figure", "class", "gpu", &end)); p = end) {
		figs++;
		CU_ASSERT_EQUAL(browser_dom_count(p, end, "svg"), 1);
	}
	CU_ASSERT_EQUAL(figs, 2); /* one per GPU */
	CU_ASSERT_FALSE(browser_dom_dup_id(dom, buf, sizeof(buf)));
	CU_ASSERT_EQUAL(browser_dom_count(dom, e, "script"), 0);
	free(dom);

	struct browser_image img;
	CU_ASSERT_EQUAL_FATAL(browser_image_load(shot, &img, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(img.w, 1280);
	CU_ASSERT_EQUAL(img.h, 1500);
	/* both GPUs' figures are in the window: four panels */
	check_figure_pixels(&img, 4, &L, "report screenshot");
	/* the page's title, top left */
	CU_ASSERT(browser_ink(&img, 0, 0, 700, 50, PLOT_RGB_BACKGROUND, 60) > 0.01);
	browser_image_free(&img);
	synth_free(&g[0]);
	synth_free(&g[1]);
}

/* The PNG figure opened directly in Chromium, shown on its image-viewer background. */
static void png_in_chromium(void)
{
	struct synth s;
	char err[512], png[PATH_MAX], shot[PATH_MAX];
	if (synth_build(&s, 0))
		return;
	struct plot_layout L;
	CU_ASSERT_EQUAL_FATAL(plot_figure_layout(s.fig, &L, err, sizeof(err)), 0);
	art("plot-example.png", png, sizeof(png));
	CU_ASSERT_EQUAL_FATAL(plot_render_file(s.fig, png, err, sizeof(err)), 0);
	art("plot-png-in-chromium.png", shot, sizeof(shot));
	int rc = browser_load(png, FIG_W + 80, FIG_H + 80, shot, NULL, err, sizeof(err));
	if (rc)
		fprintf(stderr, "\n    %s ", err);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	struct browser_image img;
	CU_ASSERT_EQUAL_FATAL(browser_image_load(shot, &img, err, sizeof(err)), 0);
	check_figure_pixels(&img, 2, &L, "PNG in Chromium");
	browser_image_free(&img);
	synth_free(&s);
}

/* ---- an app-marker recording on the emulated MI300A ------------------------------------------ */

/*
 * tests/helpers/marker_app, 1 thread, 6 iterations of 80 ms: phases
 * "t0/iter" back to back (adjacent: one ends where the next begins) with
 * "t0/inner0".."t0/inner5" inside them, 7 names.  The emulated MI300A at
 * the default interval with a constant load: TCC_HIT saturates in every
 * sample (plan14 contract 1: a NAN cell), SQ_WAVES is dense (~15.6 us per
 * sample, some 30,000 samples for ~900 px) and, with
 * SPMTAP_EMU_INJECT_DROP, has a lost stretch of ~85 ms (2 MB per XCC).  The drop
 * comes 600 ms after the stream starts, inside the app's 900 ms on every build: a
 * sanitizer build spends ~300 ms programming the counters, and what comes before
 * the program is no sample (prime.h), so an earlier drop left no gap there.
 * Recorded once; the cases below look at what spmtap plot draws of it.
 */
#define APP_ITERS 6
static char app_dir[PATH_MAX];
static int app_rc = -1;

static int app_recording(void)
{
	if (app_rc >= 0)
		return app_rc;
	char state[PATH_MAX], errf[PATH_MAX], app[PATH_MAX], iters[16];
	art("app", app_dir, sizeof(app_dir));
	art("app-emu-state", state, sizeof(state));
	art("app-record.err", errf, sizeof(errf));
	mkdir(state, 0700);
	snprintf(app, sizeof(app), "%s/tests/helpers/marker_app", testenv_build_dir());
	snprintf(iters, sizeof(iters), "%d", APP_ITERS);
	const char *pre[] = { "--emulate", "mi300a", NULL };
	const char *args[] = { "record", "--spm", "SQ_WAVES,TCC_HIT", "--smi", "power", "-d", app_dir, "-o", "run",
			       "-f", "csv,sqlite", "--", app, "1", iters, "150000", NULL };
	const char *env[] = { "SPMTAP_EMU_INJECT_DROP=600:2000000", "SPMTAP_EMU_WORKLOAD=constant:1", NULL };
	pid_t pid = tp_spawn_spmtap(pre, args, state, &(struct tp_opts){ .env = env, .out = "/dev/null", .err = errf });
	app_rc = pid > 0 ? tp_wait(pid) : 127;
	if (app_rc) {
		fprintf(stderr, "\n    spmtap record exited %d; its stderr: %s ", app_rc, errf);
		if (app_rc < 0)
			app_rc = 1;
	}
	return app_rc;
}

/* The figure spmtap draws of the app recording, its layout, and the recording itself. */
struct app_fig {
	struct recording *r;
	struct plot_figure *f;
	struct fig_data *d;
	struct sa_trace *tr;
	struct sa_report *rep;
	struct plot_layout L;
};

static int app_fig(struct app_fig *a)
{
	char err[512];
	memset(a, 0, sizeof(*a));
	if (app_recording())
		return -1;
	int rc = rec_load(app_dir, &a->r, err, sizeof(err));
	if (!rc)
		rc = rec_trace(a->r, &a->tr, err, sizeof(err));
	if (!rc)
		rc = sa_report_compute(a->tr, &a->r->phases, &a->rep, err, sizeof(err));
	if (!rc)
		rc = fig_build(a->r, 0, a->tr, a->rep, NULL, &a->f, &a->d, NULL, 0, err, sizeof(err));
	if (!rc)
		rc = plot_figure_layout(a->f, &a->L, err, sizeof(err));
	if (rc)
		fprintf(stderr, "\n    %s ", err);
	return rc;
}

static void app_fig_free(struct app_fig *a)
{
	plot_figure_free(a->f);
	fig_data_free(a->d);
	sa_report_free(a->rep);
	sa_trace_free(a->tr);
	rec_free(a->r);
}

static double app_x(const struct app_fig *a, int64_t t)
{
	const struct plot_rect *r = &a->L.panel[0];
	return r->x + (double)(t - a->L.t0_ns) / (double)(a->L.t1_ns - a->L.t0_ns) * r->w;
}

/* cairo's SVG colour of 0xRRGGBB: "rgb(R%,G%,B%)" with six decimals. */
static void svg_pct(double v, char *buf, size_t len)
{
	snprintf(buf, len, "%f", v);
	char *e = buf + strlen(buf);
	while (e > buf && e[-1] == '0')
		*--e = 0;
	if (e > buf && e[-1] == '.')
		e[-1] = 0;
}

static void svg_rgb(uint32_t c, char *buf, size_t len)
{
	char r[32], g[32], b[32];
	svg_pct(((c >> 16) & 255) / 2.55, r, sizeof(r));
	svg_pct(((c >> 8) & 255) / 2.55, g, sizeof(g));
	svg_pct((c & 255) / 2.55, b, sizeof(b));
	snprintf(buf, len, "rgb(%s%%,%s%%,%s%%)", r, g, b);
}

/*
 * Every straight segment (x0, x1) of the SVG's <path>s whose style strokes
 * or fills with colour c, into seg[] (at most max); returns how many.
 * cairo writes paths as "M x y L x y ... Z" (and C for curves, which the
 * figure does not use for data).
 */
static size_t svg_segments(const char *svg, uint32_t c, double (*seg)[4], size_t max)
{
	char col[64], stroke[80], fill[80];
	svg_rgb(c, col, sizeof(col));
	snprintf(stroke, sizeof(stroke), "stroke:%s", col);
	snprintf(fill, sizeof(fill), "fill:%s", col);
	size_t n = 0;
	for (const char *p = svg; (p = strstr(p, "<path "));) {
		const char *end = strchr(p, '>');
		if (!end)
			break;
		const char *st = strstr(p, "style=\""), *d = strstr(p, " d=\"");
		if (!st || !d || st > end || d > end) {
			p = end;
			continue;
		}
		const char *st_end = strchr(st + 7, '"');
		size_t sl = (size_t)(st_end - st);
		char style[512];
		snprintf(style, sizeof(style), "%.*s", (int)(sl < sizeof(style) - 1 ? sl : sizeof(style) - 1), st);
		if (!strstr(style, stroke) && !strstr(style, fill)) {
			p = end;
			continue;
		}
		double cx = NAN, cy = NAN, sx = NAN, sy = NAN;
		const char *q = d + 4;
		while (*q && *q != '"') {
			char op = *q;
			if (op == 'M' || op == 'L') {
				char *e1, *e2;
				double x = strtod(q + 1, &e1), y = strtod(e1, &e2);
				if (op == 'L' && n < max) {
					seg[n][0] = cx;
					seg[n][1] = cy;
					seg[n][2] = x;
					seg[n][3] = y;
					n++;
				}
				if (op == 'M') {
					sx = x;
					sy = y;
				}
				cx = x;
				cy = y;
				q = e2;
			} else if (op == 'Z') {
				if (n < max && !isnan(sx)) {
					seg[n][0] = cx;
					seg[n][1] = cy;
					seg[n][2] = sx;
					seg[n][3] = sy;
					n++;
				}
				cx = sx;
				cy = sy;
				q++;
			} else {
				q++;
			}
		}
		p = end;
	}
	return n;
}

/* The text layer's strings of class cls (plot.h), one per line into buf. */
static size_t svg_texts(const char *svg, const char *cls, char *buf, size_t len)
{
	char key[64];
	snprintf(key, sizeof(key), "<text class=\"%s\"", cls);
	size_t o = 0, n = 0;
	buf[0] = 0;
	for (const char *p = svg; (p = strstr(p, key)); p++) {
		const char *a = strchr(p, '>'), *b = a ? strstr(a, "</text>") : NULL;
		if (!b)
			break;
		char one[512];
		browser_dom_text(a + 1, b, one, sizeof(one));
		o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s\n", one);
		if (o >= len)
			o = len - 1;
		n++;
	}
	return n;
}

static bool has_line(const char *buf, const char *line)
{
	size_t l = strlen(line);
	for (const char *p = buf; (p = strstr(p, line)); p++)
		if ((p == buf || p[-1] == '\n') && p[l] == '\n')
			return true;
	return false;
}

/* Stretches of XCC 0 with no samples: steps over 1.5 median periods, from the CSV's own rows. */
static size_t lost_stretches(const struct rec_table *t, int64_t (*out)[2], size_t max)
{
	if (t->n < 3)
		return 0;
	int64_t *d = malloc((t->n - 1) * sizeof(*d));
	for (size_t i = 1; i < t->n; i++)
		d[i - 1] = t->t_ns[i] - t->t_ns[i - 1];
	/* the median by counting: period steps are all alike */
	int64_t med = d[(t->n - 1) / 2];
	for (int it = 0; it < 3; it++) {
		size_t below = 0;
		for (size_t i = 0; i < t->n - 1; i++)
			below += d[i] < med;
		if (below > (t->n - 1) / 2)
			med = med * 9 / 10;
	}
	size_t n = 0;
	for (size_t i = 1; i < t->n; i++)
		if (d[i - 1] > med * 3 / 2 && n < max) {
			out[n][0] = t->t_ns[i - 1];
			out[n][1] = t->t_ns[i];
			n++;
		}
	free(d);
	return n;
}

/*
 * The SVG spmtap plot writes of the app recording, checked as a reader
 * would: every phase name present (text layer), one boundary line per
 * distinct phase edge, the y range of every panel reaching 0, no path
 * segment of SQ_WAVES over a lost stretch (which is labelled "lost"),
 * and TCC_HIT, saturated in every sample, says so.
 */
static void app_svg(void)
{
	struct app_fig a;
	if (app_fig(&a)) {
		CU_FAIL("no app recording to draw");
		app_fig_free(&a);
		return;
	}
	char svgp[PATH_MAX], errf[PATH_MAX];
	art("app-markers.svg", svgp, sizeof(svgp));
	art("app-plot.err", errf, sizeof(errf));
	const char *args[] = { "plot", app_dir, "-o", svgp, NULL };
	CU_ASSERT_EQUAL_FATAL(tp_wait(tp_spawn_spmtap(NULL, args, NULL, &(struct tp_opts){ .err = errf })), 0);
	size_t len;
	char *svg = NULL;
	FILE *fp = fopen(svgp, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
	svg = calloc(1, 8 << 20);
	len = fread(svg, 1, (8 << 20) - 1, fp);
	fclose(fp);
	CU_ASSERT(len > 1000);

	/* every phase name, and the two kinds the app made */
	char *txt = malloc(1 << 16), *leg = malloc(1 << 16);
	svg_texts(svg, "legend", leg, 1 << 16);
	size_t names = 0, missing = 0;
	for (size_t i = 0; i < a.r->phases.n; i++) {
		const char *nm = a.r->phases.v[i].name;
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = !strcmp(a.r->phases.v[j].name, nm);
		if (seen)
			continue;
		names++;
		if (!has_line(leg, nm)) {
			fprintf(stderr, "\n    phase name '%s' not in the figure ", nm);
			missing++;
		}
	}
	printf("\n    %zu phases, %zu names, ", a.r->phases.n, names);
	CU_ASSERT_EQUAL(names, APP_ITERS + 1);
	CU_ASSERT_EQUAL(missing, 0);

	/* one boundary line per distinct edge (edges in one pixel column are one edge) */
	double (*seg)[4] = malloc(sizeof(*seg) * 200000);
	size_t nb = svg_segments(svg, PLOT_RGB_BOUNDARY, seg, 200000);
	double bx[64];
	size_t nbx = 0, slanted = 0;
	for (size_t i = 0; i < nb; i++) {
		slanted += seg[i][0] != seg[i][2];
		/* the first panel's lines, not the legend's swatches */
		if (seg[i][1] > a.L.panel[0].y + a.L.panel[0].h || seg[i][0] > a.L.panel[0].x + a.L.panel[0].w)
			continue;
		bool dup = false;
		for (size_t j = 0; j < nbx && !dup; j++)
			dup = bx[j] == seg[i][0];
		if (!dup && nbx < 64)
			bx[nbx++] = seg[i][0];
	}
	double ex[128];
	size_t nex = 0;
	for (size_t i = 0; i < a.r->phases.n; i++)
		for (int e = 0; e < 2; e++) {
			double x = floor(app_x(&a, e ? a.r->phases.v[i].end_ns : a.r->phases.v[i].start_ns)) + 0.5;
			bool dup = x <= a.L.panel[0].x + 1 || x >= a.L.panel[0].x + a.L.panel[0].w;
			for (size_t j = 0; j < nex && !dup; j++)
				dup = ex[j] == x;
			if (!dup && nex < 128)
				ex[nex++] = x;
		}
	size_t unmatched = 0;
	for (size_t j = 0; j < nex; j++) {
		bool hit = false;
		for (size_t i = 0; i < nbx && !hit; i++)
			hit = fabs(bx[i] - ex[j]) < 0.01;
		if (!hit)
			fprintf(stderr, "\n    no boundary line at x = %.1f (an edge) ", ex[j]);
		unmatched += !hit;
	}
	for (size_t i = 0; unmatched && i < nbx; i++)
		fprintf(stderr, "\n    boundary line at x = %.2f ", bx[i]);
	printf("%zu edges at distinct pixels, %zu boundary lines, ", nex, nbx);
	CU_ASSERT(nex >= APP_ITERS + 1);
	CU_ASSERT_EQUAL(nbx, nex);
	CU_ASSERT_EQUAL(unmatched, 0);
	CU_ASSERT_EQUAL(slanted, 0);

	/* the baseline: a "0" tick in every panel */
	size_t nz = 0;
	for (const char *p = svg; (p = strstr(p, "<text class=\"ytick\"")); p++) {
		const char *gt = strchr(p, '>');
		if (gt && !strncmp(gt, ">0</text>", 9))
			nz++;
	}
	printf("%zu panels with a 0 tick of %d, ", nz, a.L.npanels);
	CU_ASSERT_EQUAL(nz, (size_t)a.L.npanels);

	/* gaps: nothing of SQ_WAVES (the first series: blue) across a lost stretch */
	int64_t lost[32][2];
	size_t nl = lost_stretches(&a.r->gpu[0].spm[0], lost, 32);
	size_t ns = svg_segments(svg, plot_color_rgb(PLOT_BLUE), seg, 200000), crossing = 0, wide = 0, labelled = 0;
	for (size_t k = 0; k < nl; k++) {
		double x0 = app_x(&a, lost[k][0]), x1 = app_x(&a, lost[k][1]);
		if (x1 - x0 < 4)
			continue; /* inside a pixel or two: nothing to see either way */
		wide++;
		labelled += x1 - x0 > 40; /* room for the "lost" label (a narrower one has only the legend's) */
		for (size_t i = 0; i < ns; i++) {
			double lo = fmin(seg[i][0], seg[i][2]), hi = fmax(seg[i][0], seg[i][2]);
			if (lo < x0 + 1.5 && hi > x1 - 1.5) {
				if (!crossing)
					fprintf(stderr, "\n    segment %.1f..%.1f crosses the lost %.1f..%.1f px ", lo, hi, x0, x1);
				crossing++;
			}
		}
	}
	/* and no saturated span over a lost stretch (TCC_HIT is saturated on both sides of it) */
	size_t sat_over_lost = 0;
	for (size_t k = 0; k < nl; k++)
		for (size_t i = 0; i < a.f->nspans; i++) {
			const struct plot_span *sp = &a.f->spans[i];
			int64_t mid = lost[k][0] + (lost[k][1] - lost[k][0]) / 2;
			sat_over_lost += sp->kind == PLOT_SPAN_SATURATED && sp->t0 < mid && sp->t1 > mid;
		}
	CU_ASSERT_EQUAL(sat_over_lost, 0);
	printf("%zu lost stretches (%zu over 4 px), %zu SQ_WAVES segments across them ", nl, wide, crossing);
	CU_ASSERT(wide >= 1);
	CU_ASSERT_EQUAL(crossing, 0);
	svg_texts(svg, "span", txt, 1 << 16);
	/* How wide the injected drop draws depends on the machine's speed: label it where it fits. */
	if (labelled)
		CU_ASSERT(has_line(txt, "lost"));
	CU_ASSERT(has_line(leg, "lost"));

	/* saturation: TCC_HIT's panel says it, instead of drawing zero */
	svg_texts(svg, "note", txt, 1 << 16);
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "TCC_HIT saturated at this interval"));
	CU_ASSERT(has_line(leg, "saturated"));
	free(seg);
	free(txt);
	free(leg);
	free(svg);
	app_fig_free(&a);
}

/*
 * The same figure as PNG opened in Chromium: three panels where the layout
 * puts them, the saturated hatching in TCC_HIT's panel, the boundary lines
 * in the first panel at the edges' columns.  Screenshot: docs/img/.
 */
static void app_png_in_chromium(void)
{
	struct app_fig a;
	if (app_fig(&a)) {
		CU_FAIL("no app recording to draw");
		app_fig_free(&a);
		return;
	}
	char png[PATH_MAX], shot[PATH_MAX], errf[PATH_MAX], err[512];
	art("app-markers.png", png, sizeof(png));
	art("app-plot-png.err", errf, sizeof(errf));
	const char *args[] = { "plot", app_dir, "-o", png, NULL };
	CU_ASSERT_EQUAL_FATAL(tp_wait(tp_spawn_spmtap(NULL, args, NULL, &(struct tp_opts){ .err = errf })), 0);
	art("app-markers-in-chromium.png", shot, sizeof(shot));
	int rc = browser_load(png, a.L.width + 80, a.L.height + 80, shot, NULL, err, sizeof(err));
	if (rc)
		fprintf(stderr, "\n    %s ", err);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	struct browser_image img;
	CU_ASSERT_EQUAL_FATAL(browser_image_load(shot, &img, err, sizeof(err)), 0);
	struct browser_panel p[8];
	int n = find_panels(&img, p, 8);
	CU_ASSERT_EQUAL(n, a.L.npanels);
	if (n == a.L.npanels && n >= 2) {
		/* the saturated hatching: PLOT_RGB_SATURATED lines over most of TCC_HIT's panel (the second) */
		double sat = 0;
		int cnt = 0;
		for (int y = p[1].top + 20; y < p[1].bottom - 4; y += 7) {
			int hits = 0;
			for (int x = p[1].left + 2; x < p[1].right - 2; x++)
				hits += browser_rgb_near(browser_px(&img, x, y), PLOT_RGB_SATURATED, 60);
			sat += hits > 0;
			cnt++;
		}
		printf("\n    saturated hatching in %.0f of %d rows of TCC_HIT's panel ", sat, cnt);
		CU_ASSERT(sat >= cnt * 0.9);
		/* boundary lines: a column of the boundary colour at each edge's x in the first panel */
		int dx = p[0].left - (int)a.L.panel[0].x, found = 0, want = 0;
		for (size_t i = 0; i < a.r->phases.n; i++) {
			int x = (int)floor(app_x(&a, a.r->phases.v[i].start_ns)) + dx;
			if (x <= p[0].left + 1 || x >= p[0].right - 1)
				continue;
			want++;
			int y = p[0].top + (p[0].bottom - p[0].top) / 2, hit = 0;
			for (int k = -1; k <= 1; k++)
				hit |= browser_rgb_near(browser_px(&img, x + k, y), PLOT_RGB_BOUNDARY, 40) ||
				       browser_rgb_near(browser_px(&img, x + k, y + 10), PLOT_RGB_BOUNDARY, 40);
			found += hit;
		}
		printf("%d of %d phase starts with a boundary line ", found, want);
		CU_ASSERT(want >= APP_ITERS);
		CU_ASSERT_EQUAL(found, want);
	}
	browser_image_free(&img);
	app_fig_free(&a);
}

/*
 * `spmtap report --html` of the app recording in Chromium: the figure is
 * inline SVG, so its text layer is in the DOM as Chromium serialises it:
 * every phase name, the saturation note, "lost"; and the screenshot shows
 * the figure's panels.  Screenshot: docs/img/.
 */
static void app_html_in_chromium(void)
{
	struct app_fig a;
	if (app_fig(&a)) {
		CU_FAIL("no app recording to draw");
		app_fig_free(&a);
		return;
	}
	char html[PATH_MAX], shot[PATH_MAX], errf[PATH_MAX], err[512];
	art("app-report.html", html, sizeof(html));
	art("app-report.err", errf, sizeof(errf));
	const char *args[] = { "report", app_dir, "--html", html, NULL };
	int st = tp_wait(tp_spawn_spmtap(NULL, args, NULL, &(struct tp_opts){ .out = "/dev/null", .err = errf }));
	if (st)
		fprintf(stderr, "\n    spmtap report exited %d (%s) ", st, errf);
	CU_ASSERT_EQUAL_FATAL(st, 0);
	char *dom = NULL;
	art("app-report-in-chromium.png", shot, sizeof(shot));
	int rc = browser_load(html, 1280, 1400, shot, &dom, err, sizeof(err));
	if (rc)
		fprintf(stderr, "\n    %s ", err);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	const char *end;
	const char *fig = browser_dom_find(dom, "figure", "class", "gpu", &end);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fig);
	const char *layer = browser_dom_find(fig, "g", "class", "spmtap-text", &end);
	CU_ASSERT_PTR_NOT_NULL_FATAL(layer);
	size_t len = (size_t)(end - layer);
	char *txt = malloc(len + 1);
	browser_dom_text(layer, end, txt, len + 1);
	size_t missing = 0;
	for (size_t i = 0; i < a.r->phases.n; i++)
		missing += !strstr(txt, a.r->phases.v[i].name);
	CU_ASSERT_EQUAL(missing, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "TCC_HIT saturated at this interval"));
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "lost"));
	char buf[256];
	CU_ASSERT_FALSE(browser_dom_dup_id(dom, buf, sizeof(buf)));
	free(txt);
	free(dom);
	struct browser_image img;
	CU_ASSERT_EQUAL_FATAL(browser_image_load(shot, &img, err, sizeof(err)), 0);
	struct browser_panel p[8];
	int n = find_panels(&img, p, 8);
	printf("\n    report in Chromium: %d of %d panels in view ", n, a.L.npanels);
	CU_ASSERT(n >= 2);
	browser_image_free(&img);
	app_fig_free(&a);
}

/*
 * The app recording's SQLite file alone draws the same figure as its CSV
 * files alone, byte for byte: gaps, saturation and phases come from the
 * data, whichever file holds it.
 */
static void app_sqlite_same(void)
{
	if (app_recording()) {
		CU_FAIL("no app recording");
		return;
	}
	char csvdir[PATH_MAX], db[PATH_MAX], a[PATH_MAX], b[PATH_MAX], cmd[3 * PATH_MAX], errf[PATH_MAX];
	art("app-csv-only", csvdir, sizeof(csvdir));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir '%s' && cp '%s'/run_*.csv '%s'/run_meta.json '%s'/", csvdir,
		 csvdir, app_dir, app_dir, csvdir);
	CU_ASSERT_EQUAL_FATAL(tp_sh(cmd, NULL, 0), 0);
	snprintf(db, sizeof(db), "%s/run.db", app_dir);
	art("app-from-sqlite.svg", a, sizeof(a));
	art("app-from-csv.svg", b, sizeof(b));
	art("app-sqlite.err", errf, sizeof(errf));
	const char *pa[] = { "plot", db, "-o", a, NULL }, *pb[] = { "plot", csvdir, "-o", b, NULL };
	CU_ASSERT_EQUAL_FATAL(tp_wait(tp_spawn_spmtap(NULL, pa, NULL, &(struct tp_opts){ .err = errf })), 0);
	CU_ASSERT_EQUAL_FATAL(tp_wait(tp_spawn_spmtap(NULL, pb, NULL, &(struct tp_opts){ .err = errf })), 0);
	snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", a, b);
	int same = tp_sh(cmd, NULL, 0);
	if (same)
		fprintf(stderr, "\n    %s and %s differ ", a, b);
	CU_ASSERT_EQUAL(same, 0);
	snprintf(cmd, sizeof(cmd), "grep -c 'saturated at this interval' '%s'", a);
	CU_ASSERT_STRING_EQUAL(tp_sh1(cmd), "1");
}

/* ---- the figure API's truth marks, on synthetic data --------------------------------------- */

static char *render_svg(struct plot_figure *f)
{
	char err[256], *svg = NULL;
	size_t len;
	int rc = plot_render_mem(f, PLOT_FMT_SVG, &svg, &len, err, sizeof(err));
	if (rc)
		fprintf(stderr, "\n    %s ", err);
	return svg;
}

/*
 * A steady 500 W +- 1 W: the y axis starts at 0 (a "0" tick), not at
 * 499 (which would draw the noise as swings); a fixed range still wins.
 */
static void baseline(void)
{
	char err[256], txt[4096];
	enum { N = 200 };
	int64_t t[N];
	double v[N];
	for (int i = 0; i < N; i++) {
		t[i] = BASE_NS + i * MS;
		v[i] = 500 + (i % 3) - 1;
	}
	struct plot_figure *f;
	CU_ASSERT_EQUAL_FATAL(plot_figure_new(&f, "steady", err, sizeof(err)), 0);
	int p = plot_figure_add_panel(f, "power [W]", err, sizeof(err));
	int q = plot_figure_add_panel(f, "fixed [W]", err, sizeof(err));
	struct plot_series s = { .name = "p", .panel = p, .t_ns = t, .v = v, .n = N };
	CU_ASSERT(plot_figure_add_series(f, &s, err, sizeof(err)) >= 0);
	s.panel = q;
	CU_ASSERT(plot_figure_add_series(f, &s, err, sizeof(err)) >= 0);
	CU_ASSERT_EQUAL(plot_figure_panel_range(f, q, 490, 510, err, sizeof(err)), 0);
	char *svg = render_svg(f);
	CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
	svg_texts(svg, "ytick", txt, sizeof(txt));
	CU_ASSERT(has_line(txt, "0"));   /* the automatic panel */
	CU_ASSERT(has_line(txt, "500"));
	CU_ASSERT(has_line(txt, "490")); /* the fixed one keeps its range */
	/* all zero: 0 at the bottom, not in the middle of -1..1 */
	for (int i = 0; i < N; i++)
		v[i] = 0;
	free(svg);
	svg = render_svg(f);
	CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
	svg_texts(svg, "ytick", txt, sizeof(txt));
	CU_ASSERT(has_line(txt, "0"));
	CU_ASSERT(!has_line(txt, "-1") && !has_line(txt, "-0.5"));
	free(svg);
	plot_figure_free(f);
}

/*
 * Lost and saturated stretches and a panel's note: the SVG names them
 * (span labels, legend, note), and the PNG hatches exactly their columns
 * in their panels.
 */
static void spans(void)
{
	char err[256], txt[4096], leg[4096];
	enum { N = 1000 };
	int64_t t[N];
	double v[N];
	for (int i = 0; i < N; i++) {
		t[i] = BASE_NS + i * MS;
		v[i] = i >= 300 && i < 500 ? NAN : 10;
	}
	struct plot_figure *f;
	CU_ASSERT_EQUAL_FATAL(plot_figure_new(&f, "truth marks", err, sizeof(err)), 0);
	int p = plot_figure_add_panel(f, "A", err, sizeof(err));
	int q = plot_figure_add_panel(f, "B", err, sizeof(err));
	struct plot_series s = { .name = "a", .panel = p, .t_ns = t, .v = v, .n = N, .color = PLOT_BLUE };
	CU_ASSERT(plot_figure_add_series(f, &s, err, sizeof(err)) >= 0);
	CU_ASSERT_EQUAL(plot_figure_add_span(f, p, PLOT_SPAN_LOST, t[299], t[500], err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(plot_figure_add_span(f, q, PLOT_SPAN_SATURATED, t[0], t[N - 1], err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(plot_figure_panel_note(f, q, "B saturated at this interval", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(plot_figure_add_span(f, 5, PLOT_SPAN_LOST, t[0], t[1], err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(plot_figure_add_span(f, p, PLOT_SPAN_LOST, t[1], t[0], err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(plot_figure_add_span(f, p, (enum plot_span_kind)9, t[0], t[1], err, sizeof(err)), -EINVAL);
	char *svg = render_svg(f);
	CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
	svg_texts(svg, "span", txt, sizeof(txt));
	CU_ASSERT(has_line(txt, "lost"));
	CU_ASSERT(has_line(txt, "saturated"));
	svg_texts(svg, "legend", leg, sizeof(leg));
	CU_ASSERT(has_line(leg, "lost") && has_line(leg, "saturated"));
	svg_texts(svg, "note", txt, sizeof(txt));
	CU_ASSERT(has_line(txt, "B saturated at this interval"));
	free(svg);

	struct plot_layout L;
	char *png;
	size_t len;
	struct browser_image img;
	CU_ASSERT_EQUAL_FATAL(plot_figure_layout(f, &L, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(plot_render_mem(f, PLOT_FMT_PNG, &png, &len, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(browser_image_load_mem(png, len, &img, err, sizeof(err)), 0);
	/* hatching: lost grey inside 0.3..0.5 of panel A only; saturated red across B */
	const struct plot_rect *a = &L.panel[0], *b = &L.panel[1];
	int in = 0, out = 0, sat = 0;
	for (int x = (int)a->x + 2; x < a->x + a->w - 2; x++) {
		double fx = (x - a->x) / a->w;
		int hit = 0;
		for (int y = (int)a->y + 30; y < a->y + a->h - 30; y++)
			hit |= browser_rgb_near(browser_px(&img, x, y), PLOT_RGB_LOST, 40);
		if (fx > 0.31 && fx < 0.49)
			in += hit;
		else if (fx < 0.28 || fx > 0.52)
			out += hit;
		int hs = 0;
		for (int y = (int)b->y + 30; y < b->y + b->h - 30; y++)
			hs |= browser_rgb_near(browser_px(&img, x, y), PLOT_RGB_SATURATED, 60);
		sat += hs;
	}
	CU_ASSERT(in > a->w * 0.18 * 0.8);
	CU_ASSERT_EQUAL(out, 0);
	CU_ASSERT(sat > b->w * 0.9);
	browser_image_free(&img);
	free(png);
	plot_figure_free(f);
}

/*
 * Adjacent phases of three names, one repeated: a colour and a legend
 * entry per name, one boundary line per distinct edge (adjacent phases
 * share one), text escaped in the SVG's text layer.
 */
static void phase_names_svg(void)
{
	char err[256], leg[4096];
	static const char *const names[] = { "load", "copy & sync", "load", "<reduce>" };
	int64_t t[2] = { BASE_NS, BASE_NS + 10 * SEC };
	double v[2] = { 1, 1 };
	struct plot_figure *f;
	CU_ASSERT_EQUAL_FATAL(plot_figure_new(&f, "phases", err, sizeof(err)), 0);
	int p = plot_figure_add_panel(f, "A", err, sizeof(err));
	struct plot_series s = { .name = "a", .panel = p, .t_ns = t, .v = v, .n = 2 };
	CU_ASSERT(plot_figure_add_series(f, &s, err, sizeof(err)) >= 0);
	for (int k = 0; k < 4; k++) /* 1..3, 3..5, 5..7, 7..9 s: back to back */
		CU_ASSERT_EQUAL(plot_figure_add_phase(f, BASE_NS + (1 + 2 * k) * SEC, BASE_NS + (3 + 2 * k) * SEC, names[k],
						      err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(plot_phase_rgb(0), PLOT_RGB_PHASE);
	CU_ASSERT_NOT_EQUAL(plot_phase_rgb(1), plot_phase_rgb(0));
	CU_ASSERT_EQUAL(plot_phase_rgb(PLOT_PHASE_COLORS), plot_phase_rgb(0));
	char *svg = render_svg(f);
	CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
	CU_ASSERT_PTR_NOT_NULL(strstr(svg, ">copy &amp; sync</text>"));
	CU_ASSERT_PTR_NOT_NULL(strstr(svg, ">&lt;reduce&gt;</text>"));
	svg_texts(svg, "legend", leg, sizeof(leg));
	CU_ASSERT(has_line(leg, "load") && has_line(leg, "copy & sync") && has_line(leg, "<reduce>"));
	CU_ASSERT_PTR_NULL(strstr(strstr(leg, "load\n") + 5, "load\n")); /* each name once */
	double (*seg)[4] = malloc(sizeof(*seg) * 4096);
	size_t n = svg_segments(svg, PLOT_RGB_BOUNDARY, seg, 4096), lines = 0;
	struct plot_layout L;
	CU_ASSERT_EQUAL_FATAL(plot_figure_layout(f, &L, err, sizeof(err)), 0);
	for (size_t i = 0; i < n; i++)
		lines += seg[i][0] == seg[i][2] && seg[i][0] < L.panel[0].x + L.panel[0].w;
	CU_ASSERT_EQUAL(lines, 5); /* 1, 3, 5, 7, 9 s */
	/* the bands, each in its name's colour: 1..3 s and 5..7 s both "load" */
	char *png;
	size_t len;
	struct browser_image img;
	CU_ASSERT_EQUAL_FATAL(plot_render_mem(f, PLOT_FMT_PNG, &png, &len, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(browser_image_load_mem(png, len, &img, err, sizeof(err)), 0);
	const struct plot_rect *r = &L.panel[0];
	struct browser_run run[8];
	int y = (int)r->y + 5;
	CU_ASSERT_EQUAL(browser_count_runs(&img, y, (int)r->x + 2, (int)(r->x + r->w) - 3,
					   on_white(plot_phase_rgb(0), PLOT_PHASE_ALPHA), BAND_TOL, 8, 3, run, 8), 2);
	CU_ASSERT_EQUAL(browser_count_runs(&img, y, (int)r->x + 2, (int)(r->x + r->w) - 3,
					   on_white(plot_phase_rgb(1), PLOT_PHASE_ALPHA), BAND_TOL, 8, 3, run, 8), 1);
	CU_ASSERT_EQUAL(browser_count_runs(&img, y, (int)r->x + 2, (int)(r->x + r->w) - 3,
					   on_white(plot_phase_rgb(2), PLOT_PHASE_ALPHA), BAND_TOL, 8, 3, run, 8), 1);
	browser_image_free(&img);
	free(png);
	free(seg);
	free(svg);
	plot_figure_free(f);
}

/*
 * 40 phase names in a two-panel figure: the legend lists names while the
 * panels' legend areas have room, then "and N more phase names", and
 * nothing below the last panel; the shown names plus N are all 40.
 */
static void many_names(void)
{
	char err[256], leg[8192], nm[32];
	int64_t t[2] = { BASE_NS, BASE_NS + 40 * SEC };
	double v[2] = { 1, 1 };
	struct plot_figure *f;
	CU_ASSERT_EQUAL_FATAL(plot_figure_new(&f, "names", err, sizeof(err)), 0);
	int p = plot_figure_add_panel(f, "A", err, sizeof(err));
	int q = plot_figure_add_panel(f, "B", err, sizeof(err));
	struct plot_series s = { .name = "a", .panel = p, .t_ns = t, .v = v, .n = 2 };
	CU_ASSERT(plot_figure_add_series(f, &s, err, sizeof(err)) >= 0);
	s.panel = q;
	CU_ASSERT(plot_figure_add_series(f, &s, err, sizeof(err)) >= 0);
	for (int k = 0; k < 40; k++) {
		snprintf(nm, sizeof(nm), "kernel_%02d", k);
		CU_ASSERT_EQUAL(plot_figure_add_phase(f, BASE_NS + k * SEC, BASE_NS + k * SEC + SEC / 2, nm, err, sizeof(err)),
				0);
	}
	struct plot_layout L;
	CU_ASSERT_EQUAL_FATAL(plot_figure_layout(f, &L, err, sizeof(err)), 0);
	char *svg = render_svg(f);
	CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
	svg_texts(svg, "legend", leg, sizeof(leg));
	int shown = 0, more = -1;
	for (const char *l = leg; *l;) {
		const char *e = strchr(l, '\n');
		if (!strncmp(l, "kernel_", 7))
			shown++;
		else if (!strncmp(l, "and ", 4))
			more = atoi(l + 4);
		l = e ? e + 1 : l + strlen(l);
	}
	printf("\n    40 names: %d in the legend, \"and %d more\" ", shown, more);
	CU_ASSERT(shown >= 10);
	CU_ASSERT_EQUAL(shown + more, 40);
	/* every legend line inside the panels' height */
	double bottom = L.panel[1].y + L.panel[1].h;
	for (const char *x = svg; (x = strstr(x, "<text class=\"legend\"")); x++) {
		const char *y = strstr(x, " y=\"");
		CU_ASSERT(y && strtod(y + 4, NULL) <= bottom);
	}
	free(svg);
	plot_figure_free(f);
}

/*
 * More samples than pixels: per column a min..max band (a fill in the
 * series' colour) and the mean line (a stroke), both broken at a NaN gap.
 */
static void envelope(void)
{
	char err[256];
	enum { N = 100000 };
	int64_t *t = malloc(N * sizeof(*t));
	double *v = malloc(N * sizeof(*v));
	uint64_t seed = 7;
	for (int i = 0; i < N; i++) {
		t[i] = BASE_NS + (int64_t)i * 10000;
		v[i] = i >= N / 2 && i < N / 2 + N / 10 ? NAN : 100 + 10 * noise(&seed);
	}
	struct plot_figure *f;
	CU_ASSERT_EQUAL_FATAL(plot_figure_new(&f, "dense", err, sizeof(err)), 0);
	int p = plot_figure_add_panel(f, "A", err, sizeof(err));
	struct plot_series s = { .name = "a", .panel = p, .t_ns = t, .v = v, .n = N, .color = PLOT_GREEN };
	CU_ASSERT(plot_figure_add_series(f, &s, err, sizeof(err)) >= 0);
	char *svg = render_svg(f);
	CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
	char col[64], fill[96], stroke[96];
	svg_rgb(plot_color_rgb(PLOT_GREEN), col, sizeof(col));
	snprintf(fill, sizeof(fill), "fill:%s;fill-opacity:0.35", col);
	snprintf(stroke, sizeof(stroke), "stroke:%s", col);
	CU_ASSERT_PTR_NOT_NULL(strstr(svg, fill));
	CU_ASSERT_PTR_NOT_NULL(strstr(svg, stroke));
	struct plot_layout L;
	CU_ASSERT_EQUAL_FATAL(plot_figure_layout(f, &L, err, sizeof(err)), 0);
	double (*seg)[4] = malloc(sizeof(*seg) * 100000);
	size_t n = svg_segments(svg, plot_color_rgb(PLOT_GREEN), seg, 100000), across = 0;
	double x0 = L.panel[0].x + L.panel[0].w * 0.5, x1 = L.panel[0].x + L.panel[0].w * 0.6;
	for (size_t i = 0; i < n; i++)
		across += fmin(seg[i][0], seg[i][2]) < x0 + 2 && fmax(seg[i][0], seg[i][2]) > x1 - 2;
	CU_ASSERT(n > 100);
	CU_ASSERT_EQUAL(across, 0);
	free(seg);
	free(svg);
	plot_figure_free(f);
	free(t);
	free(v);
}

/*
 * A sensor file cut short (the last two thirds of run_smi.csv gone, at a
 * line end): the power readings end at the last row, nothing drawn after
 * it, and the rest of the recording is marked lost in the power panel.
 */
static void sensor_cut(void)
{
	if (app_recording()) {
		CU_FAIL("no app recording");
		return;
	}
	char dir[PATH_MAX], cmd[3 * PATH_MAX], svgp[PATH_MAX], errf[PATH_MAX];
	art("app-cut", dir, sizeof(dir));
	snprintf(cmd, sizeof(cmd),
		 "rm -rf '%s' && cp -r '%s' '%s' && f='%s/run_smi.csv' && n=$(wc -l < \"$f\") && "
		 "head -n $((n / 3)) \"$f\" > \"$f.tmp\" && mv \"$f.tmp\" \"$f\"",
		 dir, app_dir, dir, dir);
	CU_ASSERT_EQUAL_FATAL(tp_sh(cmd, NULL, 0), 0);
	struct recording *r;
	char err[512];
	CU_ASSERT_EQUAL_FATAL(rec_load(dir, &r, err, sizeof(err)), 0);
	const struct rec_table *smi = &r->gpu[0].smi;
	CU_ASSERT_FATAL(smi->n > 10);
	int64_t last = smi->t_ns[smi->n - 1];
	struct sa_trace *tr = NULL;
	struct sa_report *rep = NULL;
	struct plot_figure *f;
	struct fig_data *d;
	struct plot_layout L;
	CU_ASSERT_EQUAL_FATAL(rec_trace(r, &tr, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(sa_report_compute(tr, &r->phases, &rep, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(fig_build(r, 0, tr, rep, NULL, &f, &d, NULL, 0, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(plot_figure_layout(f, &L, err, sizeof(err)), 0);
	art("app-cut.svg", svgp, sizeof(svgp));
	art("app-cut.err", errf, sizeof(errf));
	CU_ASSERT_EQUAL_FATAL(plot_render_file(f, svgp, err, sizeof(err)), 0);
	char *svg = render_svg(f);
	CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
	/* power_cur: the figure's third series, PLOT_GREEN; its last vertex at the last row */
	double (*seg)[4] = malloc(sizeof(*seg) * 200000);
	size_t n = svg_segments(svg, plot_color_rgb(PLOT_GREEN), seg, 200000);
	double xmax = 0, xlast = L.panel[0].x + (double)(last - L.t0_ns) / (double)(L.t1_ns - L.t0_ns) * L.panel[0].w;
	for (size_t i = 0; i < n; i++)
		if (seg[i][1] > L.panel[L.npanels - 1].y) /* in the power panel (the legend swatch is right of it) */
			xmax = fmax(xmax, seg[i][0] < L.panel[0].x + L.panel[0].w ? fmax(seg[i][0], seg[i][2]) : 0);
	printf("\n    power_cur ends at x %.1f, its last reading at x %.1f, the figure at %.1f ", xmax, xlast,
	       L.panel[0].x + L.panel[0].w);
	CU_ASSERT(n > 0);
	CU_ASSERT(xmax <= xlast + 1.5);
	CU_ASSERT(xmax > xlast - 12); /* a last row that repeats the reading before it is no new reading */
	char leg[4096];
	svg_texts(svg, "legend", leg, sizeof(leg));
	/* "lost" in the power panel's legend: the last legend block is power's */
	const char *pw = strstr(leg, "power_cur");
	CU_ASSERT(pw && strstr(pw, "\nlost\n"));
	free(seg);
	free(svg);
	plot_figure_free(f);
	fig_data_free(d);
	sa_report_free(rep);
	sa_trace_free(tr);
	rec_free(r);
}

static bool write_script(const char *path, const char *body)
{
	FILE *fp = fopen(path, "w");
	if (!fp)
		return false;
	fprintf(fp, "#!/bin/sh\n%s\n", body);
	return fclose(fp) == 0 && chmod(path, 0755) == 0;
}

/* Gone, or a zombie nobody reaps (a container's init may not): either way not running. */
static bool dead(pid_t pid)
{
	char p[64], st[256] = { 0 };
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	FILE *fp = fopen(p, "r");
	if (!fp)
		return true;
	size_t n = fread(st, 1, sizeof(st) - 1, fp);
	fclose(fp);
	const char *rp = n ? strrchr(st, ')') : NULL;
	return !rp || rp[2] == 'Z' || rp[2] == 'X';
}

/*
 * A browser that hangs, with a child of its own, stands in for Chromium:
 * after the time limit both are killed and the error says so.  A browser
 * that fails gives its exit status.  No Chromium needed.
 */
static void browser_hangs(void)
{
	char err[512], fake[PATH_MAX], pids[PATH_MAX], html[PATH_MAX], body[PATH_MAX * 2 + 64];
	art("fake-chromium.sh", fake, sizeof(fake));
	art("fake-chromium.pids", pids, sizeof(pids));
	art("blank.html", html, sizeof(html));
	FILE *fp = fopen(html, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
	fputs("<!DOCTYPE html><title>x</title>", fp);
	fclose(fp);
	snprintf(body, sizeof(body), "sleep 600 & echo $$ $! > '%s'; wait", pids);
	CU_ASSERT_FATAL(write_script(fake, body));
	const char *old = getenv("SPMTAP_CHROMIUM");
	char saved[PATH_MAX] = "";
	if (old)
		snprintf(saved, sizeof(saved), "%s", old);
	setenv("SPMTAP_CHROMIUM", fake, 1);
	setenv("SPMTAP_CHROMIUM_TIMEOUT", "1", 1);
	double t0 = now_s();
	int rc = browser_load(html, 100, 100, NULL, NULL, err, sizeof(err));
	double dt = now_s() - t0;
	CU_ASSERT_EQUAL(rc, -ETIMEDOUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "longer than 1 s and was killed"));
	CU_ASSERT(dt < 5);
	int sh = 0, child = 0;
	fp = fopen(pids, "r");
	CU_ASSERT_PTR_NOT_NULL(fp);
	if (fp) {
		CU_ASSERT_EQUAL(fscanf(fp, "%d %d", &sh, &child), 2);
		fclose(fp);
	}
	for (int i = 0; i < 50 && sh > 0 && child > 0 && !(dead(sh) && dead(child)); i++)
		usleep(20000);
	CU_ASSERT(sh > 0 && dead(sh));
	CU_ASSERT(child > 0 && dead(child)); /* the whole group, not just the browser */

	CU_ASSERT_FATAL(write_script(fake, "exit 3"));
	CU_ASSERT_EQUAL(browser_load(html, 100, 100, NULL, NULL, err, sizeof(err)), -EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "exited with status 3"));
	unsetenv("SPMTAP_CHROMIUM_TIMEOUT");
	if (saved[0])
		setenv("SPMTAP_CHROMIUM", saved, 1);
	else
		unsetenv("SPMTAP_CHROMIUM");
}

/*
 * Dispatch tracks (plot.h): lanes under the last panel, clear of its x tick
 * labels, on the panels' time axis; a slice filled in its label's colour,
 * the label inside only where it fits, every label in the key, each lane's
 * name in the legend column, and the time axis title under it all.
 */
static void tracks(void)
{
	char err[256];
	struct plot_figure *f;
	CU_ASSERT_EQUAL_FATAL(plot_figure_new(&f, "tracks", err, sizeof(err)), 0);
	static int64_t t[2] = { 0, 100000000 };
	static double v[2] = { 1, 2 };
	int p = plot_figure_add_panel(f, "x", err, sizeof(err));
	struct plot_series s = { .name = "x", .panel = p, .t_ns = t, .v = v, .n = 2 };
	CU_ASSERT(plot_figure_add_series(f, &s, err, sizeof(err)) >= 0);
	CU_ASSERT_EQUAL(plot_figure_add_track(f, "queue 1", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(plot_figure_add_track(f, "queue 2", err, sizeof(err)), 1);
	CU_ASSERT_EQUAL(plot_figure_add_slice(f, 0, 0, 40000000, "a_long_kernel_name", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(plot_figure_add_slice(f, 0, 50000000, 50100000, "tiny", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(plot_figure_add_slice(f, 1, 20000000, 60000000, "other", err, sizeof(err)), 0);
	CU_ASSERT(plot_figure_add_slice(f, 2, 0, 1, "x", err, sizeof(err)) < 0);
	CU_ASSERT(plot_figure_add_slice(f, 0, 2, 1, "x", err, sizeof(err)) < 0);
	struct plot_layout L;
	CU_ASSERT_EQUAL_FATAL(plot_figure_layout(f, &L, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(L.ntracks, 2);
	const struct plot_rect *P = &L.panel[0];
	CU_ASSERT(L.track[0].y >= P->y + P->h + 20); /* under the tick labels */
	CU_ASSERT(L.track[1].y >= L.track[0].y + L.track[0].h);
	CU_ASSERT(L.key.y >= L.track[1].y + L.track[1].h);
	CU_ASSERT(L.key.y + L.key.h <= L.height);
	CU_ASSERT_EQUAL(L.track[0].x, P->x);
	CU_ASSERT_EQUAL(L.track[0].w, P->w);
	char *png;
	size_t len;
	CU_ASSERT_EQUAL_FATAL(plot_render_mem(f, PLOT_FMT_PNG, &png, &len, err, sizeof(err)), 0);
	struct browser_image img;
	CU_ASSERT_EQUAL_FATAL(browser_image_load_mem(png, len, &img, err, sizeof(err)), 0);
	/* on the panels' time axis: 0..40 ms of 100 is the lane's first 40 %, in label 0's colour */
	int y = (int)L.track[0].y + 2;
	CU_ASSERT(browser_rgb_near(browser_px(&img, (int)(P->x + P->w * 0.05), y), plot_slice_rgb(0), 8));
	CU_ASSERT(browser_rgb_near(browser_px(&img, (int)(P->x + P->w * 0.38), y), plot_slice_rgb(0), 8));
	CU_ASSERT(!browser_rgb_near(browser_px(&img, (int)(P->x + P->w * 0.45), y), plot_slice_rgb(0), 8));
	/* the 100 us slice: at least a pixel wide, in label 1's colour */
	CU_ASSERT(browser_rgb_near(browser_px(&img, (int)(P->x + P->w * 0.50) + 0, y), plot_slice_rgb(1), 8) ||
		  browser_rgb_near(browser_px(&img, (int)(P->x + P->w * 0.50) + 1, y), plot_slice_rgb(1), 8));
	int y1 = (int)L.track[1].y + 2;
	CU_ASSERT(browser_rgb_near(browser_px(&img, (int)(P->x + P->w * 0.25), y1), plot_slice_rgb(2), 8));
	CU_ASSERT(!browser_rgb_near(browser_px(&img, (int)(P->x + P->w * 0.15), y1), plot_slice_rgb(2), 8));
	browser_image_free(&img);
	free(png);
	char *svg = render_svg(f);
	CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
	char buf[1024];
	CU_ASSERT_EQUAL(svg_texts(svg, "slice", buf, sizeof(buf)), 2);
	CU_ASSERT(has_line(buf, "a_long_kernel_name") && has_line(buf, "other") && !has_line(buf, "tiny"));
	CU_ASSERT_EQUAL(svg_texts(svg, "key", buf, sizeof(buf)), 3);
	CU_ASSERT(has_line(buf, "tiny"));
	CU_ASSERT_EQUAL(svg_texts(svg, "track", buf, sizeof(buf)), 2);
	CU_ASSERT(has_line(buf, "queue 1") && has_line(buf, "queue 2"));
	free(svg);
	plot_figure_free(f);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "plot/ticks", ticks, NULL },
		{ "plot/tracks", tracks, NULL },
		{ "plot/files", files, NULL },
		{ "plot/errors", errors, NULL },
		{ "plot/png_pixels", png_pixels, NULL },
		{ "plot/gaps", gaps, NULL },
		{ "plot/million", million, NULL },
		{ "plot/outside_range", outside_range, NULL },
		{ "html/text", html_text, NULL },
		{ "html/figures", html_figures, NULL },
		{ "browser/report", report_in_chromium, browser_requires },
		{ "browser/png", png_in_chromium, browser_requires },
		{ "browser/hangs", browser_hangs, NULL },
		{ "plot/baseline", baseline, NULL },
		{ "plot/spans", spans, NULL },
		{ "plot/phase_names", phase_names_svg, NULL },
		{ "plot/envelope", envelope, NULL },
		{ "plot/many_names", many_names, NULL },
		{ "figure/app_svg", app_svg, NULL },
		{ "figure/sensor_cut", sensor_cut, NULL },
		{ "figure/sqlite_same", app_sqlite_same, NULL },
		{ "browser/app_png", app_png_in_chromium, browser_requires },
		{ "browser/app_html", app_html_in_chromium, browser_requires },
		{ NULL, NULL, NULL },
	};
	int rc = testenv_run_suite("plot", cases, argc, argv);
	struct artefacts *a = artefacts();
	if (a->made && rc == 0)
		nftw(a->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	else if (argc < 2 || strcmp(argv[1], "--list"))
		printf("plot: files and screenshots in %s\n", a->dir);
	return rc;
}
