/* SPDX-License-Identifier: MIT */
/* The figure model: what a caller adds, checked and copied (see plot.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/plot_internal.h"
#include "log.h"

static const uint32_t palette_rgb[PLOT_NCOLORS] = {
	[PLOT_BLUE] = 0x0072B2,   [PLOT_VERMILLION] = 0xD55E00, [PLOT_GREEN] = 0x009E73,
	[PLOT_ORANGE] = 0xE69F00, [PLOT_PURPLE] = 0xCC79A7,     [PLOT_SKY] = 0x56B4E9,
	[PLOT_GREY] = 0x666666,   [PLOT_YELLOW] = 0xF0E442,
};

/*
 * Phase bands at alpha 0.30 over white: hues far apart, none of them the
 * grey of a lost stretch or the red of a saturated one.
 */
static const uint32_t phase_rgb[PLOT_PHASE_COLORS] = {
	PLOT_RGB_PHASE, 0xF5A912, 0x12B5F5, 0xF5125C, 0x5CC412, 0x8A5A2B, 0x12C49B, 0xB512F5,
};

uint32_t plot_phase_rgb(size_t name_index)
{
	return phase_rgb[name_index % PLOT_PHASE_COLORS];
}

uint32_t plot_color_rgb(enum plot_color c)
{
	return c > PLOT_COLOR_AUTO && c < PLOT_NCOLORS ? palette_rgb[c] : 0;
}

int plot_default_height(int npanels)
{
	return 130 + 240 * (npanels > 0 ? npanels : 1);
}

double plot_series_t(const struct plot_series *s, size_t i, int64_t origin)
{
	if (s->t_ns)
		return (double)(s->t_ns[i] - origin);
	return s->t_ns_f[i] - (double)origin;
}

size_t plot_utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	size_t n = s[0] > 0xF4 ? 0 : s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xC0) != 0x80)
			return 0;
	/* overlong forms, surrogates and code points past U+10FFFF */
	if ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0) ||
	    (s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))
		return 0;
	return n;
}

/*
 * A copy fit to draw: cairo's text API puts its context in an error state
 * on invalid UTF-8 and draws nothing more, and labels come from recordings
 * (kernel names), so bad bytes become '?' and control characters spaces.
 * NULL stays NULL.
 */
static int dup_opt(const char *in, char **out)
{
	*out = NULL;
	if (!in)
		return 0;
	size_t len = strlen(in);
	char *d = malloc(len + 1);
	if (!d)
		return -ENOMEM;
	const unsigned char *s = (const unsigned char *)in;
	size_t o = 0;
	while (*s) {
		size_t n = plot_utf8_len(s);
		if (!n) {
			d[o++] = '?';
			s++;
		} else if (n == 1) {
			d[o++] = *s < 0x20 || *s == 0x7F ? ' ' : (char)*s;
			s++;
		} else {
			memcpy(d + o, s, n);
			o += n;
			s += n;
		}
	}
	d[o] = 0;
	*out = d;
	return 0;
}

/* Make room for one more element of `size` bytes in *arr (n used, *cap allocated). */
static int grow(void **arr, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 8;
	void *p = realloc(*arr, ncap * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

int plot_figure_new(struct plot_figure **out, const char *title, char *err, size_t errlen)
{
	*out = NULL;
	struct plot_figure *f = calloc(1, sizeof(*f));
	if (!f || dup_opt(title ? title : "", &f->title)) {
		free(f);
		return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory for a new figure");
	}
	f->width = 1200;
	*out = f;
	return 0;
}

void plot_figure_free(struct plot_figure *f)
{
	if (!f)
		return;
	free(f->title);
	free(f->origin_name);
	for (int i = 0; i < f->npanels; i++) {
		free(f->panel[i].ylabel);
		free(f->panel[i].note);
	}
	for (size_t i = 0; i < f->nseries; i++) {
		free(f->series[i].name);
		free(f->series[i].unit);
	}
	for (size_t i = 0; i < f->nphases; i++)
		free(f->phases[i].label);
	for (size_t i = 0; i < f->nmarkers; i++)
		free(f->markers[i].label);
	for (size_t i = 0; i < f->nlevels; i++)
		free(f->levels[i].label);
	free(f->series);
	free(f->phases);
	free(f->windows);
	free(f->markers);
	free(f->levels);
	free(f->spans);
	for (int i = 0; i < f->ntracks; i++)
		free(f->track[i]);
	for (size_t i = 0; i < f->nslabels; i++)
		free(f->slabels[i]);
	free(f->slabels);
	free(f->slices);
	free(f);
}

int plot_figure_set_size(struct plot_figure *f, int width, int height, char *err, size_t errlen)
{
	/* cairo's image surfaces stop at 32767 px a side; far beyond any screen */
	if (width < 320 || height < 160 || width > 16384 || height > 16384)
		return spmtap_seterr(err, errlen, EINVAL,
				     "plot: size %d x %d px is outside 320..16384 x 160..16384", width, height);
	f->width = width;
	f->height = height;
	return 0;
}

int plot_figure_set_origin(struct plot_figure *f, int64_t origin_ns, const char *name, char *err,
			   size_t errlen)
{
	char *n;
	if (dup_opt(name ? name : "start", &n))
		return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory");
	free(f->origin_name);
	f->origin_name = n;
	f->origin = origin_ns;
	f->have_origin = true;
	return 0;
}

int plot_figure_set_range(struct plot_figure *f, int64_t t0_ns, int64_t t1_ns, char *err, size_t errlen)
{
	if (t1_ns <= t0_ns)
		return spmtap_seterr(err, errlen, EINVAL, "plot: empty time range [%lld, %lld] ns",
				     (long long)t0_ns, (long long)t1_ns);
	f->t0 = t0_ns;
	f->t1 = t1_ns;
	f->have_range = true;
	return 0;
}

int plot_figure_add_panel(struct plot_figure *f, const char *ylabel, char *err, size_t errlen)
{
	if (f->npanels >= PLOT_MAX_PANELS)
		return spmtap_seterr(err, errlen, ENOSPC, "plot: a figure has at most %d panels",
				     PLOT_MAX_PANELS);
	struct plot_panel *p = &f->panel[f->npanels];
	if (dup_opt(ylabel ? ylabel : "", &p->ylabel))
		return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory");
	p->ymin = p->ymax = NAN;
	return f->npanels++;
}

static int check_panel(const struct plot_figure *f, int panel, char *err, size_t errlen)
{
	if (panel < 0 || panel >= f->npanels)
		return spmtap_seterr(err, errlen, EINVAL, "plot: no panel %d (the figure has %d)", panel,
				     f->npanels);
	return 0;
}

int plot_figure_panel_range(struct plot_figure *f, int panel, double ymin, double ymax, char *err,
			    size_t errlen)
{
	int rc = check_panel(f, panel, err, errlen);
	if (rc)
		return rc;
	if (isinf(ymin) || isinf(ymax) || (!isnan(ymin) && !isnan(ymax) && ymax <= ymin))
		return spmtap_seterr(err, errlen, EINVAL, "plot: panel %d: bad y range [%g, %g]", panel,
				     ymin, ymax);
	f->panel[panel].ymin = ymin;
	f->panel[panel].ymax = ymax;
	return 0;
}

/* The first palette colour no series uses yet; cycle when all are taken. */
static enum plot_color next_color(const struct plot_figure *f)
{
	for (int c = PLOT_BLUE; c < PLOT_NCOLORS; c++) {
		bool used = false;
		for (size_t i = 0; i < f->nseries && !used; i++)
			used = f->series[i].s.color == (enum plot_color)c;
		if (!used)
			return (enum plot_color)c;
	}
	return (enum plot_color)(PLOT_BLUE + f->nseries % (PLOT_NCOLORS - 1));
}

int plot_figure_add_series(struct plot_figure *f, const struct plot_series *s, char *err, size_t errlen)
{
	const char *name = s->name ? s->name : "";
	int rc = check_panel(f, s->panel, err, errlen);
	if (rc)
		return rc;
	if (s->n && (!s->v || (!s->t_ns && !s->t_ns_f)))
		return spmtap_seterr(err, errlen, EINVAL, "plot: series '%s': %zu samples but no %s", name,
				     s->n, s->v ? "times" : "values");
	if ((unsigned)s->style > PLOT_STEP_PRE || (unsigned)s->color >= PLOT_NCOLORS)
		return spmtap_seterr(err, errlen, EINVAL, "plot: series '%s': unknown style %d or colour %d",
				     name, (int)s->style, (int)s->color);
	if (s->width < 0 || s->width > 20 || isnan(s->width))
		return spmtap_seterr(err, errlen, EINVAL, "plot: series '%s': line width %g px", name, s->width);
	if (s->n && !s->t_ns && !(isfinite(s->t_ns_f[0]) && isfinite(s->t_ns_f[s->n - 1])))
		return spmtap_seterr(err, errlen, EINVAL, "plot: series '%s': its times are not finite", name);
	/* The reduction searches by time: an unsorted series would draw wrongly, not fail. */
	for (size_t i = 1; i < s->n; i++) {
		bool back = s->t_ns ? s->t_ns[i] < s->t_ns[i - 1]
				    : !(s->t_ns_f[i] >= s->t_ns_f[i - 1]);
		if (back)
			return spmtap_seterr(err, errlen, EINVAL,
					     "plot: series '%s': time goes backwards (or is NaN) at sample %zu",
					     name, i);
	}
	if (grow((void **)&f->series, &f->cap_series, f->nseries, sizeof(*f->series)))
		return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory");
	struct plot_sseries *d = &f->series[f->nseries];
	memset(d, 0, sizeof(*d));
	if (dup_opt(name, &d->name) || dup_opt(s->unit, &d->unit)) {
		free(d->name);
		return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory");
	}
	d->s = *s;
	d->s.name = d->name;
	d->s.unit = d->unit;
	if (d->s.color == PLOT_COLOR_AUTO)
		d->s.color = next_color(f);
	if (d->s.width == 0)
		d->s.width = 1.5;
	return (int)f->nseries++;
}

int plot_figure_add_phase(struct plot_figure *f, int64_t start_ns, int64_t end_ns, const char *label,
			  char *err, size_t errlen)
{
	if (end_ns < start_ns)
		return spmtap_seterr(err, errlen, EINVAL, "plot: phase '%s' ends before it starts",
				     label ? label : "");
	if (grow((void **)&f->phases, &f->cap_phases, f->nphases, sizeof(*f->phases)))
		return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory");
	struct plot_phase *p = &f->phases[f->nphases];
	if (dup_opt(label ? label : "", &p->label))
		return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory");
	p->t0 = start_ns;
	p->t1 = end_ns;
	p->name = f->nnames;
	for (size_t i = 0; i < f->nphases; i++)
		if (!strcmp(f->phases[i].label, p->label)) {
			p->name = f->phases[i].name;
			break;
		}
	f->nnames += p->name == f->nnames;
	f->nphases++;
	return 0;
}

int plot_figure_add_window(struct plot_figure *f, int series, int64_t start_ns, int64_t end_ns,
			   char *err, size_t errlen)
{
	if (series < 0 || (size_t)series >= f->nseries)
		return spmtap_seterr(err, errlen, EINVAL, "plot: confidence window for series %d, which does not exist",
				     series);
	if (end_ns < start_ns)
		return spmtap_seterr(err, errlen, EINVAL,
				     "plot: confidence window of '%s' ends before it starts",
				     f->series[series].name);
	if (grow((void **)&f->windows, &f->cap_windows, f->nwindows, sizeof(*f->windows)))
		return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory");
	f->windows[f->nwindows++] = (struct plot_window){ series, start_ns, end_ns };
	return 0;
}

int plot_figure_add_marker(struct plot_figure *f, int64_t t_ns, const char *label, char *err,
			   size_t errlen)
{
	if (grow((void **)&f->markers, &f->cap_markers, f->nmarkers, sizeof(*f->markers)))
		return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory");
	struct plot_marker *m = &f->markers[f->nmarkers];
	if (dup_opt(label ? label : "", &m->label))
		return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory");
	m->t = t_ns;
	f->nmarkers++;
	return 0;
}

int plot_figure_add_level(struct plot_figure *f, int panel, double y, const char *label, char *err,
			  size_t errlen)
{
	int rc = check_panel(f, panel, err, errlen);
	if (rc)
		return rc;
	if (!isfinite(y))
		return spmtap_seterr(err, errlen, EINVAL, "plot: level '%s' at y = %g", label ? label : "", y);
	if (grow((void **)&f->levels, &f->cap_levels, f->nlevels, sizeof(*f->levels)))
		return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory");
	struct plot_level *l = &f->levels[f->nlevels];
	if (dup_opt(label ? label : "", &l->label))
		return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory");
	l->panel = panel;
	l->y = y;
	f->nlevels++;
	return 0;
}

int plot_figure_add_span(struct plot_figure *f, int panel, enum plot_span_kind kind, int64_t start_ns,
			 int64_t end_ns, char *err, size_t errlen)
{
	int rc = panel == -1 ? 0 : check_panel(f, panel, err, errlen);
	if (rc)
		return rc;
	if (kind != PLOT_SPAN_LOST && kind != PLOT_SPAN_SATURATED)
		return spmtap_seterr(err, errlen, EINVAL, "plot: unknown span kind %d", (int)kind);
	if (end_ns < start_ns)
		return spmtap_seterr(err, errlen, EINVAL, "plot: a %s stretch ends before it starts",
				     kind == PLOT_SPAN_LOST ? "lost" : "saturated");
	if (grow((void **)&f->spans, &f->cap_spans, f->nspans, sizeof(*f->spans)))
		return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory");
	f->spans[f->nspans++] = (struct plot_span){ panel, kind, start_ns, end_ns };
	return 0;
}

int plot_figure_panel_note(struct plot_figure *f, int panel, const char *text, char *err, size_t errlen)
{
	int rc = check_panel(f, panel, err, errlen);
	if (rc)
		return rc;
	char *n;
	if (dup_opt(text ? text : "", &n))
		return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory");
	free(f->panel[panel].note);
	f->panel[panel].note = n;
	return 0;
}

/* Slice fills: darker than the phase bands (they are small and must read on white), Okabe-Ito-like. */
static const uint32_t slice_rgb[PLOT_SLICE_COLORS] = {
	0x56B4E9u, 0xE69F00u, 0x009E73u, 0xCC79A7u, 0xF0E442u, 0x0072B2u, 0xD55E00u, 0x999999u,
};

uint32_t plot_slice_rgb(size_t label_index)
{
	return slice_rgb[label_index % PLOT_SLICE_COLORS];
}

int plot_figure_add_track(struct plot_figure *f, const char *label, char *err, size_t errlen)
{
	if (f->ntracks == PLOT_MAX_TRACKS)
		return spmtap_seterr(err, errlen, E2BIG, "plot: at most %d tracks", PLOT_MAX_TRACKS);
	if (dup_opt(label ? label : "", &f->track[f->ntracks]))
		return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory");
	return f->ntracks++;
}

int plot_figure_add_slice(struct plot_figure *f, int track, int64_t start_ns, int64_t end_ns, const char *label,
			  char *err, size_t errlen)
{
	if (track < 0 || track >= f->ntracks)
		return spmtap_seterr(err, errlen, EINVAL, "plot: no track %d", track);
	if (end_ns < start_ns)
		return spmtap_seterr(err, errlen, EINVAL, "plot: slice '%s' ends before it starts", label ? label : "");
	size_t k = 0;
	const char *l = label ? label : "";
	while (k < f->nslabels && strcmp(f->slabels[k], l))
		k++;
	if (k == f->nslabels) {
		if (grow((void **)&f->slabels, &f->cap_slabels, f->nslabels, sizeof(*f->slabels)) ||
		    dup_opt(l, &f->slabels[f->nslabels]))
			return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory");
		f->nslabels++;
	}
	if (grow((void **)&f->slices, &f->cap_slices, f->nslices, sizeof(*f->slices)))
		return spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory");
	f->slices[f->nslices++] = (struct plot_slice){ track, start_ns, end_ns, k };
	return 0;
}
