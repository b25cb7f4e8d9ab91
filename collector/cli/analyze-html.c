/* SPDX-License-Identifier: MIT */
/*
 * `spmtap report --html`: the report as one self-contained page (html.h):
 * the sensor characterisation, the phases with their energy and confident
 * means, and per GPU its figure (figure.h) with its counter and metric
 * tables.  Element ids and classes are stable, for readers and for the
 * browser test: table.characterization, table.phases, figure.gpu#gpuN,
 * table.counters#counters-gpuN, table.metrics#metrics-gpuN.
 */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/figure.h"
#include "collector/analysis/html.h"
#include "collector/cli/analyze.h"
#include "log.h"

/* More rows than this make a page nobody scrolls; the JSON has them all. */
#define HTML_MAX_ROWS 500
/* The coverage banner's lines before "... N more": it must not push the figures off the first screen. */
#define HTML_BANNER_LINES 6

/* A table's cells, malloc'd strings freed together. */
struct cells {
	size_t n, cap;
	char **v;
};

static int add(struct cells *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int add(struct cells *c, const char *fmt, ...)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		char **v = realloc(c->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	va_list ap;
	va_start(ap, fmt);
	int rc = vasprintf(&c->v[c->n], fmt, ap);
	va_end(ap);
	if (rc < 0)
		return -ENOMEM;
	c->n++;
	return 0;
}

static void cells_free(struct cells *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i]);
	free(c->v);
	memset(c, 0, sizeof(*c));
}

/* html_* calls fill err themselves; the cells here only run out of memory. */
static int oom(char *err, size_t errlen)
{
	return spmtap_seterr(err, errlen, ENOMEM, "out of memory building the HTML report");
}

static int add_num(struct cells *c, double v, int prec)
{
	char b[48];
	return add(c, "%s", ana_cell(b, sizeof(b), v, prec));
}

static int add_g(struct cells *c, double v)
{
	char b[48];
	return add(c, "%s", ana_cell_g(b, sizeof(b), v));
}

static int table(struct html_doc *d, const char *id, const char *cls, const char *caption, size_t ncols,
		 const char *const *hdr, struct cells *c, char *err, size_t errlen)
{
	if (c->n % ncols)
		return spmtap_seterr(err, errlen, EINVAL, "internal: table %s has a ragged row", id ? id : cls);
	struct html_table t = { .id = id, .cls = cls, .caption = caption, .ncols = ncols, .nrows = c->n / ncols,
				.header = hdr, .cells = (const char *const *)c->v };
	int rc = html_table(d, &t, err, errlen);
	cells_free(c);
	return rc;
}

static int characterization(struct html_doc *d, const struct sa_characterization *ch, char *err, size_t errlen)
{
	static const char *const hdr[] = { "signal", "unit", "update [ms]", "changes", "high [W]", "low [W]",
					   "delay [ms]", "rise [ms]", "fall [ms]", "aliasing" };
	struct cells c = { 0 };
	int rc = html_heading(d, 2, "characterization", "Sensor characterisation", err, errlen);
	char line[256], b[48];
	snprintf(line, sizeof(line), "T_ph (median load/idle phase): %s ms; steps: %zu rising, %zu falling. "
		 "Delay, rise and fall are null where a signal aliases (docs/analysis.md).",
		 ana_cell(b, sizeof(b), ch->phase_ms, 3), ch->rising_steps, ch->falling_steps);
	rc = rc ? rc : html_paragraph(d, NULL, line, err, errlen);
	for (size_t i = 0; !rc && i < ch->n; i++) {
		const struct sa_sig_char *s = &ch->sig[i];
		rc = add(&c, "%s", s->name) || add(&c, "%s", sa_unit_name(s->unit)) ||
		     add_num(&c, s->update_interval_ms, 3) || add(&c, "%llu", (unsigned long long)s->changes) ||
		     add_num(&c, s->high_w, 3) || add_num(&c, s->low_w, 3) || add_num(&c, s->delay_ns / 1e6, 3) ||
		     add_num(&c, s->rise_ns / 1e6, 3) || add_num(&c, s->fall_ns / 1e6, 3) ||
		     add(&c, "%s%s%s%s%s", s->aliasing == SA_NULL ? "-" : s->aliasing == SA_TRUE ? "yes (" : "no",
			 s->aliasing == SA_TRUE && (s->alias_why & SA_ALIAS_A) ? "a" : "",
			 s->aliasing == SA_TRUE && (s->alias_why & SA_ALIAS_B) ? "b" : "",
			 s->aliasing == SA_TRUE && (s->alias_why & SA_ALIAS_C) ? "c" : "",
			 s->aliasing == SA_TRUE ? ")" : "")
			     ? -ENOMEM : 0;
	}
	if (rc) {
		cells_free(&c);
		return rc == -ENOMEM ? oom(err, errlen) : rc;
	}
	if (!ch->n)
		return html_paragraph(d, NULL, "The input has no power or energy signal.", err, errlen);
	return table(d, "characterization-table", "characterization", NULL, 10, hdr, &c, err, errlen);
}

static int phases(struct html_doc *d, const struct sa_report *rep, int64_t t0, char *err, size_t errlen)
{
	size_t ncols = 7 + rep->nsignals, rows = rep->nphases < HTML_MAX_ROWS ? rep->nphases : HTML_MAX_ROWS;
	const char **hdr = calloc(ncols, sizeof(*hdr));
	char **names = calloc(rep->nsignals + 1, sizeof(*names));
	struct cells c = { 0 };
	int rc = hdr && names ? 0 : -ENOMEM;
	if (!rc) {
		hdr[0] = "phase";
		hdr[1] = "start [s]";
		hdr[2] = "duration [ms]";
		/* the delay-corrected energy leads (docs/analysis.md, "Delay-aware attribution") */
		hdr[3] = "energy, delay-corrected [J]";
		hdr[4] = "± [J]";
		hdr[5] = "energy as read [J]";
		hdr[6] = "mean as read [W]";
	}
	for (size_t k = 0; !rc && k < rep->nsignals; k++)
		if (asprintf(&names[k], "%s confident [W]", rep->ch->sig[k].name) < 0)
			rc = -ENOMEM;
		else
			hdr[7 + k] = names[k];
	for (size_t p = 0; !rc && p < rows; p++) {
		const struct sa_phase_result *r = &rep->ph[p];
		rc = add(&c, "%s", r->phase->name) || add_num(&c, (double)(r->phase->start_ns - t0) / 1e9, 6) ||
		     add_num(&c, r->duration_ms, 3) || add_num(&c, r->energy_j_corrected, 4) ||
		     add_num(&c, r->residual_j, 6) || add_num(&c, r->energy_j, 4) || add_num(&c, r->mean_power_w, 3)
			     ? -ENOMEM : 0;
		for (size_t k = 0; !rc && k < rep->nsignals; k++)
			rc = add_num(&c, r->sig[k].mean_power_w_confident, 3);
	}
	char cap[400], dl[200] = "";
	if (rep->energy_signal >= 0 && rep->delay_source != SA_DELAY_NONE)
		snprintf(dl, sizeof(dl), "; delay-corrected: shifted by its delay %.4f ms (%s), ± its residual error; "
			 "as read: no delay correction", rep->delay_ns / 1e6, sa_delay_source_name(rep->delay_source));
	else if (rep->energy_signal >= 0)
		snprintf(dl, sizeof(dl), "; no delay known (not characterised: no load/idle square wave, or it aliases; give "
			 "--sensor-delay): as read "
			 "only, its phase boundaries late by the sensor's delay");
	snprintf(cap, sizeof(cap), "%zu phases%s; energy from the %s%s", rep->nphases,
		 rows < rep->nphases ? " (the first 500 shown; all are in --json)" : "",
		 rep->energy_signal >= 0 ? "first energy counter (dE/dt)" : "(no energy counter)", dl);
	if (!rc)
		rc = html_heading(d, 2, "phases", "Phases", err, errlen);
	if (!rc && rows)
		rc = table(d, "phases-table", "phases", cap, ncols, hdr, &c, err, errlen);
	else if (!rc)
		rc = html_paragraph(d, NULL, "No phases: record with --phases or markers, or give --phases.", err, errlen);
	cells_free(&c);
	for (size_t k = 0; names && k < rep->nsignals; k++)
		free(names[k]);
	free(names);
	free(hdr);
	return rc == -ENOMEM ? oom(err, errlen) : rc;
}

/* Counter totals and rates, then metrics, of one GPU: a row per phase. */
static int gpu_tables(struct html_doc *d, const struct ana_in *in, const struct sa_report *rep,
		      const struct pc_gpu *pg, int slot, char *err, size_t errlen)
{
	size_t rows = rep->nphases < HTML_MAX_ROWS ? rep->nphases : HTML_MAX_ROWS;
	size_t ncols = 4 + 2 * (size_t)pg->ncols;
	const char **hdr = calloc(ncols + 1, sizeof(*hdr));
	char **own = calloc(ncols + 1, sizeof(*own));
	struct cells c = { 0 };
	int rc = hdr && own ? 0 : -ENOMEM;
	if (!rc) {
		hdr[0] = "phase";
		hdr[1] = "samples";
		hdr[2] = "coverage";
		hdr[ncols - 1] = "note";
	}
	for (uint32_t k = 0; !rc && k < pg->ncols; k++) {
		if (asprintf(&own[2 * k], "%s", pg->cols[k]) < 0 || asprintf(&own[2 * k + 1], "%s [1/s]", pg->cols[k]) < 0)
			rc = -ENOMEM;
		hdr[3 + 2 * k] = own[2 * k];
		hdr[4 + 2 * k] = own[2 * k + 1];
	}
	for (size_t p = 0; !rc && p < rows; p++) {
		const struct pc_phase *pp = &pg->ph[p];
		rc = add(&c, "%s", rep->ph[p].phase->name) || add(&c, "%zu", pp->samples) ||
		     add(&c, "%d %%", (int)floor(pp->coverage * 100 + 1e-9)) ? -ENOMEM : 0;
		for (uint32_t k = 0; !rc && k < pg->ncols; k++) {
			if (!pp->blanked && pp->saturated[k])
				/* saturated cells: their count, never a sum that skipped them */
				rc = add(&c, "saturated: %llu cells", (unsigned long long)pp->saturated[k]) ||
				     add(&c, "-") ? -ENOMEM : 0;
			else
				rc = add_g(&c, pp->total[k]) || add_g(&c, pp->rate[k]) ? -ENOMEM : 0;
		}
		rc = rc ? rc : add(&c, "%s%s", pp->blanked ? "no value: " : "", pp->reason) ? -ENOMEM : 0;
	}
	char id[32], cap[96];
	snprintf(id, sizeof(id), "counters-gpu%u", pg->gpu);
	snprintf(cap, sizeof(cap), "GPU %u: SPM counter totals per phase (over the XCCs) and their rates", pg->gpu);
	if (!rc && rows)
		rc = table(d, id, "counters", cap, ncols, hdr, &c, err, errlen);
	cells_free(&c);
	for (size_t k = 0; k < ncols && own; k++)
		free(own[k]);
	free(own);
	free(hdr);
	const struct mx_set *m = slot >= 0 ? in->mx[slot] : NULL;
	size_t nm = m ? mx_set_count(m) : 0;
	if (rc || !nm || !rows)
		return rc == -ENOMEM ? oom(err, errlen) : rc;
	hdr = calloc(nm + 1, sizeof(*hdr));
	own = calloc(nm + 1, sizeof(*own));
	rc = hdr && own ? 0 : -ENOMEM;
	if (!rc)
		hdr[0] = "phase";
	for (size_t i = 0; !rc && i < nm; i++) {
		struct mx_info info;
		mx_set_info(m, i, &info);
		if ((info.unit[0] ? asprintf(&own[i], "%s [%s]", info.name, info.unit)
				  : asprintf(&own[i], "%s", info.name)) < 0)
			rc = -ENOMEM;
		hdr[1 + i] = own[i];
	}
	for (size_t p = 0; !rc && p < rows; p++) {
		rc = add(&c, "%s", rep->ph[p].phase->name);
		for (size_t i = 0; !rc && i < nm; i++) {
			const struct mx_value *v = &pg->ph[p].metric[i];
			rc = add_g(&c, v->missing ? NAN : v->v);
		}
	}
	snprintf(id, sizeof(id), "metrics-gpu%u", pg->gpu);
	snprintf(cap, sizeof(cap), "GPU %u: derived metrics per phase, ratios of the phase's sums (- : missing)",
		 pg->gpu);
	if (!rc)
		rc = table(d, id, "metrics", cap, nm + 1, hdr, &c, err, errlen);
	cells_free(&c);
	for (size_t i = 0; i < nm && own; i++)
		free(own[i]);
	free(own);
	free(hdr);
	return rc == -ENOMEM ? oom(err, errlen) : rc;
}

/*
 * The coverage section of the text report as a banner (class "banner",
 * id "coverage") before any table or figure; a plain note when every
 * phase is whole.
 */
static int coverage_banner(struct html_doc *d, const struct ana_in *in, const struct sa_report *rep, char *err,
			   size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return oom(err, errlen);
	size_t said = ana_coverage_print(f, in, rep, in->pc ? in->min_coverage : PC_MIN_COVERAGE);
	if (fclose(f) || !text) {
		free(text);
		return oom(err, errlen);
	}
	while (len && text[len - 1] == '\n')
		text[--len] = 0;
	/* a banner, not a page: the first lines, and where the rest is (each table row says its own) */
	size_t lines = 0, cut = 0;
	for (size_t i = 0; i < len && !cut; i++)
		if (text[i] == '\n' && ++lines == HTML_BANNER_LINES)
			cut = i;
	char *shown = NULL;
	if (cut) {
		size_t more = 1;
		for (size_t i = cut + 1; i < len; i++)
			more += text[i] == '\n';
		if (asprintf(&shown, "%.*s\n  ... %zu more: the tables below say it per phase, --json in full", (int)cut,
			     text, more) < 0) {
			free(text);
			return oom(err, errlen);
		}
	}
	int rc = html_paragraph(d, said ? "banner" : "coverage-ok", shown ? shown : text, err, errlen);
	free(shown);
	free(text);
	return rc;
}

static int figure(struct html_doc *d, const struct recording *r, uint32_t gpu, const struct ana_in *in,
		  const struct sa_report *rep, const struct fig_opts *o, const char *caption, char *err, size_t errlen)
{
	struct plot_figure *f;
	struct fig_data *fd;
	char note[256], id[32], cap[512];
	int rc = fig_build(r, gpu, in->tr, rep, o, &f, &fd, note, sizeof(note), err, errlen);
	if (rc == -ENOENT) { /* nothing to draw for this GPU: say so instead of failing the report */
		char why[512];
		snprintf(why, sizeof(why), "%s", err);
		return html_paragraph(d, NULL, why, err, errlen);
	}
	if (rc)
		return rc;
	snprintf(id, sizeof(id), "gpu%u", gpu);
	snprintf(cap, sizeof(cap), "%s%s%s", caption, note[0] ? " " : "", note);
	rc = html_figure_plot(d, id, "gpu", f, PLOT_FMT_SVG, cap, err, errlen);
	plot_figure_free(f);
	fig_data_free(fd);
	return rc;
}

int ana_html_write(const struct ana_in *in, const struct sa_report *rep, const char *path, char *err, size_t errlen)
{
	struct html_doc *d;
	char title[512];
	snprintf(title, sizeof(title), "spmtap report: %s", in->what);
	int rc = html_doc_new(&d, title, err, errlen);
	if (rc)
		return rc;
	const char *caption = "Counters as rates (per ms, summed over the XCCs); power derived from the energy "
			      "counter and as read; phases shaded, a colour per name (idle left white); hatched "
			      "strips at the bottom: each signal's confidence window; hatched grey \"lost\": no "
			      "data recorded; hatched red \"saturated\": the counter exceeded its range.";
	int64_t t0 = rep->nphases ? rep->ph[0].phase->start_ns : 0;
	json_t *start = in->rec ? json_object_get(in->rec->meta, "start_boottime_ns") : NULL;
	if (json_is_integer(start))
		t0 = json_integer_value(start);
	/* What the numbers stand on, before anything: a banner when some phase lacks data. */
	rc = coverage_banner(d, in, rep, err, errlen);
	/* The pictures first, under the sensor figures that say how far they can be trusted; then the numbers. */
	rc = rc ? rc : characterization(d, rep->ch, err, errlen);
	for (uint32_t i = 0; !rc && in->rec && i < in->rec->ngpu; i++) {
		const struct rec_gpu *g = &in->rec->gpu[i];
		char h[160], id[32];
		snprintf(h, sizeof(h), "GPU %u: %s (%s)", g->index, g->name[0] ? g->name : "GPU", g->gfx);
		snprintf(id, sizeof(id), "gpu%u-section", g->index);
		rc = html_heading(d, 2, id, h, err, errlen);
		struct fig_opts o = { 0 };
		rc = rc ? rc : figure(d, in->rec, g->index, in, rep, &o, caption, err, errlen);
	}
	if (!rc && !in->rec && sa_trace_nsignals(in->tr)) {
		/* A trace alone: its power signals on the phases, as one figure. */
		struct recording fake;
		memset(&fake, 0, sizeof(fake));
		fake.base = (char *)in->what;
		fake.ngpu = 1;
		fake.phases = *in->ph;
		struct fig_opts o = { .title = in->what };
		rc = html_heading(d, 2, "signals", "Signals", err, errlen);
		rc = rc ? rc : figure(d, &fake, 0, in, rep, &o, "Power as read and derived from the energy counter; "
				      "phases shaded (idle left white); hatched: each signal's confidence window.",
				      err, errlen);
	}
	rc = rc ? rc : phases(d, rep, t0, err, errlen);
	for (uint32_t i = 0; !rc && in->rec && i < in->rec->ngpu; i++) {
		uint32_t gi = in->rec->gpu[i].index;
		for (uint32_t k = 0; !rc && in->pc && k < in->pc->ngpu; k++) {
			if (in->pc->g[k].gpu != gi)
				continue;
			char h[64], id[32];
			snprintf(h, sizeof(h), "GPU %u: counters and metrics per phase", gi);
			snprintf(id, sizeof(id), "gpu%u-counters", gi);
			rc = html_heading(d, 2, id, h, err, errlen);
			rc = rc ? rc : gpu_tables(d, in, rep, &in->pc->g[k], (int)i, err, errlen);
		}
	}
	rc = rc ? rc : html_doc_write(d, path, err, errlen);
	html_doc_free(d);
	return rc;
}
