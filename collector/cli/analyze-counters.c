/* SPDX-License-Identifier: MIT */
/*
 * `spmtap report RECORDING`: each GPU's SPM counters and derived metrics
 * per phase, beside the spec's energy report (analyze.h).  Counters are
 * summed over XCCs (and over instances and SEs as the recording's columns
 * already are); a metric over a phase is a ratio of the phase's sums
 * (docs/metrics.md), not a mean of per-sample ratios, so a phase with a
 * few long samples weighs as much as its cycles say.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/characterize.h"
#include "collector/cli/analyze.h"
#include "collector/cli/cli.h"
#include "log.h"

const char *ana_cell(char *buf, size_t len, double v, int prec)
{
	if (isfinite(v))
		snprintf(buf, len, "%.*f", prec, v);
	else
		snprintf(buf, len, "-");
	return buf;
}

const char *ana_cell_g(char *buf, size_t len, double v)
{
	if (!isfinite(v))
		snprintf(buf, len, "-");
	else if (v == floor(v) && fabs(v) < 1e9)
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%.4g", v);
	return buf;
}

int ana_counters_compute(const char *cmd, const struct ana_args *a, struct ana_in *in)
{
	char err[1024];
	const struct recording *r = in->rec;
	bool any = false;
	for (uint32_t i = 0; i < r->ngpu; i++) {
		const struct rec_gpu *g = &r->gpu[i];
		if (!g->nspm || !g->spm[0].ncols)
			continue;
		any = true;
		if (pc_metrics_for(r, g, a->no_builtins, a->metric, a->nmetric, a->metrics, a->nmetrics, &in->mx[i], err,
				   sizeof(err)) < 0) {
			fprintf(stderr, "spmtap %s: GPU %u: %s\n", cmd, g->index, err);
			return EXIT_FAIL;
		}
	}
	if (!any && (a->nmetric || a->nmetrics)) {
		fprintf(stderr, "spmtap %s: %s has no SPM counters for --metric/--metrics to use\n", cmd, r->base);
		return EXIT_FAIL;
	}
	in->min_coverage = a->min_coverage;
	if (pc_compute(r, in->ph, in->mx, a->min_coverage, &in->pc, err, sizeof(err)) < 0) {
		fprintf(stderr, "spmtap %s: %s\n", cmd, err);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* The recording's GPU entry (index into r->gpu[]) of a counters result. */
static int gpu_slot(const struct recording *r, uint32_t gpu)
{
	for (uint32_t i = 0; i < r->ngpu; i++)
		if (r->gpu[i].index == gpu)
			return (int)i;
	return -1;
}

int ana_gpu_energy_signal(const struct ana_in *in, uint32_t gpu)
{
	if (in->rec->ngpu <= 1)
		return sa_trace_first_j(in->tr);
	char p[24];
	snprintf(p, sizeof(p), "gpu%u.", gpu);
	for (size_t i = 0; i < sa_trace_nsignals(in->tr); i++) {
		const struct sa_signal *s = sa_trace_signal(in->tr, i);
		if (s->unit == SA_UNIT_J && !strncmp(s->name, p, strlen(p)))
			return (int)i;
	}
	return -1;
}

double ana_gpu_energy(const struct ana_in *in, const struct sa_report *rep, uint32_t gpu, size_t p)
{
	int s = ana_gpu_energy_signal(in, gpu);
	double j;
	if (s < 0 || p >= rep->nphases)
		return NAN;
	const struct sa_phase *ph = rep->ph[p].phase;
	if (sa_trace_energy(in->tr, (size_t)s, (double)ph->start_ns, (double)ph->end_ns, &j, NULL, 0) < 0)
		return NAN;
	return j;
}

static int colw(const char *name)
{
	int l = (int)strlen(name);
	return l < 11 ? 11 : l;
}

/* The same, but a share that is there at all is at least "1 %". */
static int pct_min1(double f)
{
	return f > 0 && pc_pct(f) < 1 ? 1 : pc_pct(f);
}

/* A counter's cell: the number, or what stands in its place ("sat 38436": saturated cells, "-": no value). */
static const char *count_cell(char *b, size_t len, const struct pc_phase *pp, size_t c, double v)
{
	if (!pp->blanked && pp->saturated[c])
		snprintf(b, len, "sat %llu", (unsigned long long)pp->saturated[c]);
	else
		ana_cell_g(b, len, v);
	return b;
}

/*
 * One table: a row per phase, a column per name, cells from cell(); a
 * phase whose coverage is not whole says so at the end of its row.
 */
static void print_table(const struct sa_report *rep, const char *title, size_t ncols, const char *(*name)(const void *, size_t),
			const char *(*cell)(const void *, size_t phase, size_t col, char *b, size_t len), const void *ctx,
			bool samples, const struct pc_gpu *pg)
{
	char b[48];
	printf("\n%s\n%-16s", title, "phase");
	if (samples)
		printf(" %8s %8s", "samples", "coverage");
	for (size_t c = 0; c < ncols; c++)
		printf(" %*s", colw(name(ctx, c)), name(ctx, c));
	printf("  note\n");
	for (size_t p = 0; p < rep->nphases; p++) {
		const struct pc_phase *pp = &pg->ph[p];
		printf("%-16s", rep->ph[p].phase->name);
		if (samples)
			printf(" %8zu %6d %%", pp->samples, pc_pct(pp->coverage));
		for (size_t c = 0; c < ncols; c++)
			printf(" %*s", colw(name(ctx, c)), cell(ctx, p, c, b, sizeof(b)));
		if (pp->reason[0])
			printf("  %s%s", pp->blanked ? "no value: " : "", pp->reason);
		putchar('\n');
	}
}

static const char *col_name(const void *ctx, size_t c)
{
	return ((const struct pc_gpu *)ctx)->cols[c];
}

static const char *col_total(const void *ctx, size_t p, size_t c, char *b, size_t len)
{
	const struct pc_phase *pp = &((const struct pc_gpu *)ctx)->ph[p];
	return count_cell(b, len, pp, c, pp->total[c]);
}

static const char *col_rate(const void *ctx, size_t p, size_t c, char *b, size_t len)
{
	const struct pc_phase *pp = &((const struct pc_gpu *)ctx)->ph[p];
	return count_cell(b, len, pp, c, pp->rate[c]);
}

struct metric_ctx {
	const struct pc_gpu *pg;
	const struct mx_set *m;
	char names[64][80];
};

static const char *metric_name(const void *ctx, size_t i)
{
	return ((const struct metric_ctx *)ctx)->names[i];
}

static const char *metric_value(const void *ctx, size_t p, size_t i, char *b, size_t len)
{
	const struct mx_value *v = &((const struct metric_ctx *)ctx)->pg->ph[p].metric[i];
	return ana_cell_g(b, len, v->missing ? NAN : v->v);
}

/*
 * The sensor values of the spec's report that have no value for want of
 * readings, one line per phase and reason ("load  energy_j, power_cur:
 * no readings after T ns").
 */
static size_t sensor_gaps_print(FILE *f, const struct sa_report *rep)
{
	size_t n = 0;
	for (size_t p = 0; p < rep->nphases; p++) {
		const struct sa_phase_result *pr = &rep->ph[p];
		const char *why[64];
		size_t nwhy = 0;
		/* the distinct reasons of this phase, each with the values it blanks */
		for (size_t k = 0; k <= rep->nsignals && nwhy < 64; k++) {
			const char *r = k ? rep->ph[p].sig[k - 1].reason : pr->reason;
			bool null = k ? isnan(pr->sig[k - 1].mean_power_w_confident) : isnan(pr->energy_j);
			if (!null || strncmp(r, "no readings", 11))
				continue;
			bool seen = false;
			for (size_t i = 0; i < nwhy && !seen; i++)
				seen = !strcmp(why[i], r);
			if (!seen)
				why[nwhy++] = r;
		}
		for (size_t i = 0; i < nwhy; i++, n++) {
			fprintf(f, "  %-16s", pr->phase->name);
			const char *sep = " ";
			if (isnan(pr->energy_j) && !strcmp(pr->reason, why[i])) {
				fprintf(f, "%senergy_j", sep);
				sep = ", ";
			}
			for (size_t k = 0; k < rep->nsignals; k++)
				if (isnan(pr->sig[k].mean_power_w_confident) && !strcmp(pr->sig[k].reason, why[i])) {
					fprintf(f, "%s%s conf_w", sep, rep->ch->sig[k].name);
					sep = ", ";
				}
			fprintf(f, ": no value: %s\n", why[i]);
		}
	}
	return n;
}

size_t ana_coverage_print(FILE *f, const struct ana_in *in, const struct sa_report *rep, double min_coverage)
{
	if (in->rec)
		fprintf(f, "Coverage (docs/analysis.md \"Coverage\"): a phase whose SPM samples cover less than %d %% of "
			"it has no value (--min-coverage)\n", pc_pct(min_coverage));
	else
		fprintf(f, "Coverage (docs/analysis.md \"Coverage\"): sensor values need readings\n");
	size_t said = 0;
	for (uint32_t k = 0; in->pc && k < in->pc->ngpu; k++) {
		const struct pc_gpu *pg = &in->pc->g[k];
		int slot = gpu_slot(in->rec, pg->gpu);
		const struct rec_gpu *g = slot >= 0 ? &in->rec->gpu[slot] : NULL;
		size_t whole = 0, partial = 0, blank = 0;
		for (size_t p = 0; p < in->pc->nphases; p++) {
			const struct pc_phase *pp = &pg->ph[p];
			blank += pp->blanked;
			partial += !pp->blanked && pp->coverage < 1;
			whole += !pp->blanked && pp->coverage >= 1;
		}
		fprintf(f, "GPU %u: %zu phase(s): %zu fully covered, %zu partial (labelled), %zu without values\n", pg->gpu,
		       in->pc->nphases, whole, partial, blank);
		uint64_t lost = 0;
		for (uint32_t x = 0; g && x < g->nspm; x++)
			lost += g->spm[x].lost_samples;
		if (lost)
			fprintf(f, "  the recorder counted %llu lost sample(s) over %u XCC stream(s)\n", (unsigned long long)lost,
			       g->nspm);
		for (size_t p = 0; p < in->pc->nphases; p++) {
			const struct pc_phase *pp = &pg->ph[p];
			if (pp->reason[0] && ++said)
				fprintf(f, "  %-16s %s%s\n", rep->ph[p].phase->name, pp->blanked ? "no value: " : "", pp->reason);
		}
		for (uint32_t c = 0; c < pg->ncols; c++) {
			uint64_t sat = 0, cells = 0;
			size_t phases = 0;
			for (size_t p = 0; p < in->pc->nphases; p++) {
				sat += pg->ph[p].saturated[c];
				cells += pg->ph[p].cells;
				phases += pg->ph[p].saturated[c] != 0;
			}
			if (sat && ++said)
				fprintf(f, "  %s: saturated in %llu of %llu cells (%d %%) over %zu phase(s): no total there, nor any "
				       "metric that uses it\n", pg->cols[c], (unsigned long long)sat,
				       (unsigned long long)cells, pct_min1((double)sat / (double)cells), phases);
		}
	}
	for (uint32_t i = 0; in->rec && i < in->rec->ngpu; i++) {
		const struct rec_gpu *g = &in->rec->gpu[i];
		uint32_t nexp = pc_streams_expected(in->rec, g->index);
		if ((!g->nspm || !g->spm[0].ncols) && nexp && ++said)
			fprintf(f, "GPU %u: no value for any counter: the meta lists %u SPM stream(s), the file holds no "
				"sample of them\n", g->index, nexp);
	}
	said += sensor_gaps_print(f, rep);
	if (!said)
		fprintf(f, "  %s\n", in->rec ? "every phase fully covered, no saturated cell, no sensor window without "
			"readings" : "no sensor window without readings");
	return said;
}

void ana_counters_print(const struct ana_in *in, const struct sa_report *rep)
{
	const struct recording *r = in->rec;
	char title[256];
	if (r->ngpu > 1) {
		/* The spec's energy is the first GPU's; each GPU's own goes here. */
		printf("\n%-16s", "phase");
		for (uint32_t i = 0; i < r->ngpu; i++)
			printf("  gpu%-2u energy_j", r->gpu[i].index);
		putchar('\n');
		for (size_t p = 0; p < rep->nphases; p++) {
			char b[48];
			printf("%-16s", rep->ph[p].phase->name);
			for (uint32_t i = 0; i < r->ngpu; i++)
				printf("  %15s", ana_cell(b, sizeof(b), ana_gpu_energy(in, rep, r->gpu[i].index, p), 4));
			putchar('\n');
		}
	}
	for (uint32_t k = 0; in->pc && k < in->pc->ngpu; k++) {
		const struct pc_gpu *pg = &in->pc->g[k];
		int slot = gpu_slot(r, pg->gpu);
		const struct rec_gpu *g = &r->gpu[slot];
		snprintf(title, sizeof(title), "GPU %u (%s): SPM counter totals per phase, over %u XCC stream(s) "
			 "(sat N: N saturated cells, no total)", pg->gpu, g->gfx, g->nspm);
		print_table(rep, title, pg->ncols, col_name, col_total, pg, true, pg);
		snprintf(title, sizeof(title), "GPU %u: mean rates per second", pg->gpu);
		print_table(rep, title, pg->ncols, col_name, col_rate, pg, false, pg);
		const struct mx_set *m = slot >= 0 ? in->mx[slot] : NULL;
		size_t nm = m ? mx_set_count(m) : 0;
		if (!nm)
			continue;
		struct metric_ctx *mc = calloc(1, sizeof(*mc));
		if (!mc)
			return;
		mc->pg = pg;
		mc->m = m;
		if (nm > 64)
			nm = 64;
		for (size_t i = 0; i < nm; i++) {
			struct mx_info info;
			mx_set_info(m, i, &info);
			if (info.unit[0])
				snprintf(mc->names[i], sizeof(mc->names[i]), "%s[%s]", info.name, info.unit);
			else
				snprintf(mc->names[i], sizeof(mc->names[i]), "%s", info.name);
		}
		snprintf(title, sizeof(title), "GPU %u: derived metrics per phase (docs/metrics.md; - : missing)%s",
			 pg->gpu, mx_set_count(m) > nm ? " (the first 64; all in --json)" : "");
		print_table(rep, title, nm, metric_name, metric_value, mc, false, pg);
		free(mc);
	}
}

static int put(json_t *o, const char *k, json_t *v)
{
	return v && !json_object_set_new(o, k, v) ? 0 : -ENOMEM;
}

static int metric_defs_json(const struct ana_in *in, json_t *root)
{
	json_t *all = json_object();
	int rc = all ? 0 : -ENOMEM;
	for (uint32_t i = 0; !rc && i < in->rec->ngpu; i++) {
		const struct mx_set *m = in->mx[i];
		if (!m)
			continue;
		json_t *defs = json_object();
		char key[16];
		snprintf(key, sizeof(key), "%u", in->rec->gpu[i].index);
		rc = put(all, key, defs);
		for (size_t k = 0; !rc && k < mx_set_count(m); k++) {
			struct mx_info info;
			mx_set_info(m, k, &info);
			json_t *d = json_pack("{s:s, s:s, s:s, s:s}", "expr", info.expr, "unit", info.unit,
					      "description", info.desc, "origin", info.origin);
			rc = put(defs, info.name, d);
		}
	}
	return rc ? rc : put(root, "metrics", all);
}

/* One XCC's coverage of a phase. */
static json_t *cover_json(uint32_t x, const struct pc_cover *c)
{
	json_t *st = json_array();
	for (size_t i = 0; st && i < c->nlost && i < PC_MAX_STRETCHES; i++)
		if (json_array_append_new(st, json_pack("{s:I, s:I, s:I}", "start_ns", (json_int_t)c->lost[i].start_ns,
							"end_ns", (json_int_t)c->lost[i].end_ns, "samples",
							(json_int_t)c->lost[i].samples))) {
			json_decref(st);
			return NULL;
		}
	return st ? json_pack("{s:I, s:I, s:I, s:o, s:I, s:I, s:o}", "xcc", (json_int_t)x, "samples",
			      (json_int_t)c->present, "expected_samples", (json_int_t)c->expected, "coverage",
			      json_real(c->coverage), "lost_ns", (json_int_t)c->lost_ns, "lost_stretch_count",
			      (json_int_t)c->nlost, "lost_stretches", st)
		  : NULL;
}

/*
 * A phase's truth on one GPU: "coverage" (the worst XCC's, 0..1), "reason"
 * (why it has no value, "partial: N % coverage", or null), "lost_ns" and
 * "lost_stretches" (the worst XCC's), "saturated_cells" {COUNTER: cells}
 * and "xcc" (each XCC's own).
 */
static int phase_truth_json(const struct recording *r, const struct pc_gpu *pg, const struct pc_phase *pp,
			    json_t *o)
{
	int slot = gpu_slot(r, pg->gpu);
	uint32_t nx = slot >= 0 ? r->gpu[slot].nspm : 0, worst = 0;
	for (uint32_t x = 1; x < nx; x++)
		if (pp->xcc[x].coverage < pp->xcc[worst].coverage)
			worst = x;
	json_t *sat = json_object(), *xs = json_array();
	int rc = put(o, "coverage", json_real(pp->coverage));
	rc = rc ? rc : put(o, "has_value", json_boolean(!pp->blanked));
	rc = rc ? rc : put(o, "reason", pp->reason[0] ? json_string(pp->reason) : json_null());
	rc = rc ? rc : put(o, "lost_ns", json_integer(nx ? (json_int_t)pp->xcc[worst].lost_ns : 0));
	json_t *wc = nx ? cover_json(worst, &pp->xcc[worst]) : NULL;
	json_t *st = wc ? json_incref(json_object_get(wc, "lost_stretches")) : json_array();
	json_decref(wc);
	rc = rc ? rc : put(o, "lost_stretches", st);
	rc = rc ? rc : put(o, "saturated_cells", sat);
	rc = rc ? rc : put(o, "xcc", xs);
	for (uint32_t c = 0; !rc && c < pg->ncols; c++)
		if (pp->saturated[c])
			rc = put(sat, pg->cols[c], json_integer((json_int_t)pp->saturated[c]));
	for (uint32_t x = 0; !rc && x < nx; x++) {
		json_t *e = cover_json(x, &pp->xcc[x]);
		rc = e && !json_array_append_new(xs, e) ? 0 : -ENOMEM;
	}
	return rc;
}

/* phase p's "gpus" object. */
static int phase_gpus_json(const struct ana_in *in, const struct sa_report *rep, size_t p, json_t *phase)
{
	const struct recording *r = in->rec;
	json_t *gpus = json_object();
	int rc = put(phase, "gpus", gpus);
	for (uint32_t i = 0; !rc && i < r->ngpu; i++) {
		json_t *o = json_object();
		char key[16];
		snprintf(key, sizeof(key), "%u", r->gpu[i].index);
		rc = put(gpus, key, o);
		if (!rc)
			rc = put(o, "energy_j", sa_json_num(ana_gpu_energy(in, rep, r->gpu[i].index, p)));
		const struct pc_gpu *pg = NULL;
		for (uint32_t k = 0; in->pc && k < in->pc->ngpu; k++)
			if (in->pc->g[k].gpu == r->gpu[i].index)
				pg = &in->pc->g[k];
		if (!rc && !pg && pc_streams_expected(r, r->gpu[i].index)) {
			/* the meta lists SPM streams the file lost entirely: say so, no counters */
			rc = put(o, "coverage", json_real(0));
			rc = rc ? rc : put(o, "has_value", json_false());
			rc = rc ? rc : put(o, "reason", json_string("coverage 0 %: no sample in the file (its meta lists SPM "
								   "streams)"));
		}
		if (rc || !pg)
			continue;
		const struct pc_phase *pp = &pg->ph[p];
		json_t *cs = json_object(), *ms = json_object(), *mr = json_object();
		rc = put(o, "samples", json_integer((json_int_t)pp->samples));
		rc = rc ? rc : phase_truth_json(r, pg, pp, o);
		rc = rc ? rc : put(o, "counters", cs);
		rc = rc ? rc : put(o, "metrics", ms);
		rc = rc ? rc : put(o, "metric_reasons", mr);
		for (uint32_t c = 0; !rc && c < pg->ncols; c++) {
			char why[96] = "";
			if (pp->blanked)
				snprintf(why, sizeof(why), "no value: coverage %d %%", pc_pct(pp->coverage));
			else if (pp->saturated[c])
				snprintf(why, sizeof(why), "saturated in %d %% of samples",
					 pct_min1((double)pp->saturated[c] / (double)(pp->cells ? pp->cells : 1)));
			rc = put(cs, pg->cols[c], json_pack("{s:o, s:o, s:I, s:o}", "total", sa_json_num(pp->total[c]),
							    "rate_per_s", sa_json_num(pp->rate[c]), "saturated_cells",
							    (json_int_t)pp->saturated[c], "reason",
							    why[0] ? json_string(why) : json_null()));
		}
		for (size_t k = 0; !rc && in->mx[i] && k < pg->nmetrics; k++) {
			struct mx_info info;
			mx_set_info(in->mx[i], k, &info);
			rc = put(ms, info.name, pp->metric[k].missing ? json_null() : sa_json_num(pp->metric[k].v));
			if (!rc && pp->metric[k].missing && pp->metric_reason[k][0])
				rc = put(mr, info.name, json_string(pp->metric_reason[k]));
		}
	}
	return rc;
}

int ana_counters_json(const struct ana_in *in, const struct sa_report *rep, json_t *j, char *err, size_t errlen)
{
	json_t *phases = json_object_get(j, "phases");
	int rc = put(j, "recording", json_string(in->rec->base));
	rc = rc ? rc : metric_defs_json(in, j);
	rc = rc ? rc : put(j, "coverage", json_pack("{s:f, s:s}", "min_coverage", in->min_coverage, "rule",
						    "a phase whose SPM samples cover less than min_coverage of it has no "
						    "value (docs/analysis.md \"Coverage\")"));
	for (size_t p = 0; !rc && p < rep->nphases; p++)
		rc = phase_gpus_json(in, rep, p, json_array_get(phases, p));
	return rc ? spmtap_seterr(err, errlen, -rc, "building the JSON: out of memory") : 0;
}
