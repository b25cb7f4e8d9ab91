/* SPDX-License-Identifier: MIT */
/*
 * `spmtap report RECORDING` per kernel (analyze.h): when the recording has
 * the application's dispatches, a table per kernel name (or per dispatch,
 * --per-dispatch) of count, time, time share, concurrency and energy, then
 * per GPU the SPM counter totals, rates and derived metrics each kernel
 * gets by the apportioning rule (collector/analysis/kernel_counters.h,
 * docs/analysis.md "Kernels"), and the same in the JSON's "kernels".
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

#define RULE "a sample's counts are split over its interval (previous sample, this sample] by time overlap; " \
	"dispatches running together share equally (1/n each while n run); what no dispatch ran in is " \
	"outside_kernels; energy is shared the same way (energy_j), energy_wall_j is unshared"

static double energy_cb(void *user, uint32_t gpu, int64_t a, int64_t b, char *why, size_t len)
{
	const struct ana_in *in = user;
	int s = ana_gpu_energy_signal(in, gpu);
	double j;
	if (s < 0) {
		snprintf(why, len, "no energy counter");
		return NAN;
	}
	if (sa_trace_energy(in->tr, (size_t)s, (double)a, (double)b, &j, why, len) < 0)
		return NAN;
	return j;
}

int ana_kernels_compute(const char *cmd, const struct ana_args *a, struct ana_in *in)
{
	char err[512];
	if (a->no_kernels || !in->rec || !in->rec->kernels.n) {
		if (a->kernels_only || a->per_dispatch)
			fprintf(stderr, "spmtap %s: note: %s has no kernel dispatches%s (record with an app: spmtap record "
				"... -- APP)\n", cmd, in->what, a->no_kernels ? " in use (--no-kernels)" : "");
		return EXIT_OK;
	}
	bool any_energy = false;
	for (uint32_t i = 0; i < in->rec->ngpu; i++)
		any_energy |= ana_gpu_energy_signal(in, in->rec->gpu[i].index) >= 0;
	if (kc_compute(in->rec, in->mx, any_energy ? energy_cb : NULL, in, a->min_coverage, a->per_dispatch, &in->kc,
		       err, sizeof(err))) {
		fprintf(stderr, "spmtap %s: %s\n", cmd, err);
		return EXIT_FAIL;
	}
	if (in->rec->kernels.unmapped)
		fprintf(stderr, "spmtap %s: note: %zu of %zu dispatches have no start_ns/end_ns (not timed, or no clock "
			"pairs): counted, no time or counters\n", cmd, in->rec->kernels.unmapped, in->rec->kernels.n);
	return EXIT_OK;
}

static const char *label(const struct kc_entry *e, char *b, size_t len)
{
	if (e->d)
		snprintf(b, len, "%s#%llu", e->name, (unsigned long long)e->d->corr_id);
	else
		snprintf(b, len, "%s", e->name);
	return b;
}

size_t ana_kernels_coverage_print(FILE *f, const struct ana_in *in)
{
	const struct kc_result *k = in->kc;
	size_t said = 0;
	if (!k)
		return 0;
	for (uint32_t g = 0; g < k->ngpu; g++) {
		size_t blank = 0, partial = 0, shown = 0;
		for (size_t i = 0; i < k->n; i++) {
			const struct kc_counts *c = &k->g[g].c[i];
			if (k->e[i].gpu != k->g[g].gpu)
				continue;
			blank += c->blanked;
			partial += !c->blanked && c->coverage < 1;
		}
		fprintf(f, "GPU %u: kernels (%s): %zu %s, %zu without values, %zu partial\n", k->g[g].gpu,
			in->rec->kernels.source, k->n, k->per_dispatch ? "dispatch(es)" : "name(s)", blank, partial);
		for (size_t i = 0; i < k->n; i++) {
			const struct kc_counts *c = &k->g[g].c[i];
			char b[96];
			if (k->e[i].gpu != k->g[g].gpu || !c->reason[0])
				continue;
			if (shown++ == 20) {
				fprintf(f, "  ... (all in --json)\n");
				break;
			}
			fprintf(f, "  %-24s %s%s\n", label(&k->e[i], b, sizeof(b)), c->blanked ? "no value: " : "",
				c->reason);
			said++;
		}
	}
	return said;
}

/* Short enough for a column: long (mangled) names keep their start and end. */
static const char *shorten(const char *s, char *b, size_t w)
{
	size_t n = strlen(s);
	if (n <= w)
		return s;
	size_t head = (w - 2) / 2, tail = w - 2 - head;
	snprintf(b, w + 1, "%.*s..%s", (int)head, s, s + n - tail);
	return b;
}

static int colw(const char *name)
{
	int l = (int)strlen(name);
	return l < 11 ? 11 : l;
}

static void print_time(const struct ana_in *in)
{
	const struct kc_result *k = in->kc;
	char b[8][48], nb[96], sb[40];
	printf("\nKernels (%s: %zu dispatch(es)%s; docs/analysis.md \"Kernels\"): busy %.3f ms of %.3f ms (%.1f %%), "
	       "%.1f %% of the busy time concurrent\n",
	       in->rec->kernels.source, k->dispatches, k->unmapped ? ", some without time" : "",
	       (double)k->busy_ns / 1e6, (double)k->span_ns / 1e6,
	       k->span_ns ? 100.0 * (double)k->busy_ns / (double)k->span_ns : 0.0,
	       k->busy_ns ? 100.0 * (double)k->concurrent_ns / (double)k->busy_ns : 0.0);
	printf("%-24s %6s %12s %7s %11s %10s %11s %9s  note\n", k->per_dispatch ? "dispatch" : "kernel", "count",
	       "time_ms", "share", "concurrent", "energy_j", "e_wall_j", "power_w");
	for (size_t i = 0; i < k->n; i++) {
		const struct kc_entry *e = &k->e[i];
		double share = k->span_ns ? (double)e->time_ns / (double)k->span_ns : NAN;
		double conc = e->time_ns ? (double)e->concurrent_ns / (double)e->time_ns : NAN;
		printf("%-24s %6zu %12s %6s%% %10s%% %10s %11s %9s", shorten(label(e, nb, sizeof(nb)), sb, 24), e->count,
		       ana_cell(b[0], sizeof(b[0]), (double)e->time_ns / 1e6, 3), ana_cell(b[1], sizeof(b[1]), 100 * share, 1),
		       ana_cell(b[2], sizeof(b[2]), 100 * conc, 1), ana_cell(b[3], sizeof(b[3]), e->energy_j, 4),
		       ana_cell(b[4], sizeof(b[4]), e->energy_wall_j, 4), ana_cell(b[5], sizeof(b[5]), e->power_w, 2));
		if (isnan(e->energy_j) && e->energy_reason[0])
			printf("  energy: %s", e->energy_reason);
		if (e->unmapped)
			printf("  %zu without time", e->unmapped);
		putchar('\n');
	}
}

/* A row's cells: totals (what 0), rates (1) or metrics (2) of counts c. */
static const char *cell(const struct kc_gpu *kg, const struct kc_counts *c, int what, size_t i, char *b, size_t len)
{
	if (what == 2)
		return ana_cell_g(b, len, c->metric[i].missing ? NAN : c->metric[i].v);
	if (!c->blanked && c->saturated[i]) {
		snprintf(b, len, "sat %llu", (unsigned long long)c->saturated[i]);
		return b;
	}
	(void)kg;
	return ana_cell_g(b, len, what ? c->rate[i] : c->total[i]);
}

static void print_gpu_table(const struct ana_in *in, const struct kc_gpu *kg, int what, const struct mx_set *m)
{
	const struct kc_result *k = in->kc;
	size_t ncol = what == 2 ? kg->nmetrics : kg->ncols;
	if (what == 2 && ncol > 64)
		ncol = 64;
	char names[64][80];
	const char *nm[1024];
	if (ncol > 1024)
		ncol = 1024;
	for (size_t i = 0; i < ncol; i++) {
		if (what == 2) {
			struct mx_info info;
			mx_set_info(m, i, &info);
			if (info.unit[0])
				snprintf(names[i], sizeof(names[i]), "%s[%s]", info.name, info.unit);
			else
				snprintf(names[i], sizeof(names[i]), "%s", info.name);
			nm[i] = names[i];
		} else {
			nm[i] = kg->cols[i];
		}
	}
	static const char *const title[3] = { "SPM counter totals per kernel (sat N: N saturated cells, no total)",
					       "mean rates per second of the kernel's time",
					       "derived metrics per kernel (docs/metrics.md; - : missing)" };
	printf("\nGPU %u: %s; shared by the rule above\n%-24s %8s %8s", kg->gpu, title[what],
	       k->per_dispatch ? "dispatch" : "kernel", "samples", "coverage");
	for (size_t i = 0; i < ncol; i++)
		printf(" %*s", colw(nm[i]), nm[i]);
	printf("  note\n");
	char b[48], lb[96], sb[40];
	for (size_t e = 0; e <= k->n; e++) {
		bool out = e == k->n;
		if (out && what != 0)
			break; /* outside kernels: totals only (its time is the gaps) */
		const struct kc_counts *c = out ? &kg->outside : &kg->c[e];
		if (!out && k->e[e].gpu != kg->gpu)
			continue;
		printf("%-24s %8.1f %6d %%", out ? "(outside kernels)" : shorten(label(&k->e[e], lb, sizeof(lb)), sb, 24),
		       c->samples, pc_pct(c->coverage));
		for (size_t i = 0; i < ncol; i++)
			printf(" %*s", colw(nm[i]), cell(kg, c, what, i, b, sizeof(b)));
		if (c->reason[0])
			printf("  %s%s", c->blanked ? "no value: " : "", c->reason);
		putchar('\n');
	}
}

void ana_kernels_print(const struct ana_in *in)
{
	const struct kc_result *k = in->kc;
	if (!k)
		return;
	print_time(in);
	printf("Rule: %s.\n", RULE);
	for (uint32_t g = 0; g < k->ngpu; g++) {
		const struct kc_gpu *kg = &k->g[g];
		const struct mx_set *m = NULL;
		for (uint32_t i = 0; i < in->rec->ngpu; i++)
			if (in->rec->gpu[i].index == kg->gpu)
				m = in->mx[i];
		print_gpu_table(in, kg, 0, m);
		print_gpu_table(in, kg, 1, m);
		if (m && kg->nmetrics)
			print_gpu_table(in, kg, 2, m);
	}
}

/* ---- JSON --------------------------------------------------------------------------------------- */

static int put(json_t *o, const char *k, json_t *v)
{
	return v && !json_object_set_new(o, k, v) ? 0 : -ENOMEM;
}

/* One entry's counters on one GPU: as a phase's "gpus" entry (analyze-counters.c). */
static int counts_json(const struct kc_gpu *kg, const struct mx_set *m, const struct kc_counts *c, json_t *o)
{
	json_t *cs = json_object(), *ms = json_object(), *mr = json_object();
	int rc = put(o, "samples", json_real(c->samples));
	rc = rc ? rc : put(o, "coverage", json_real(c->coverage));
	rc = rc ? rc : put(o, "has_value", json_boolean(!c->blanked));
	rc = rc ? rc : put(o, "reason", c->reason[0] ? json_string(c->reason) : json_null());
	rc = rc ? rc : put(o, "lost_ns", json_integer(c->lost_ns));
	rc = rc ? rc : put(o, "counters", cs);
	rc = rc ? rc : put(o, "metrics", ms);
	rc = rc ? rc : put(o, "metric_reasons", mr);
	if (rc) {
		json_decref(cs);
		json_decref(ms);
		json_decref(mr);
		return rc;
	}
	for (uint32_t col = 0; !rc && col < kg->ncols; col++)
		rc = put(cs, kg->cols[col], json_pack("{s:o, s:o, s:I}", "total", sa_json_num(c->total[col]), "rate_per_s",
						      sa_json_num(c->rate[col]), "saturated_cells",
						      (json_int_t)c->saturated[col]));
	for (size_t i = 0; !rc && m && i < kg->nmetrics; i++) {
		struct mx_info info;
		mx_set_info(m, i, &info);
		rc = put(ms, info.name, c->metric[i].missing ? json_null() : sa_json_num(c->metric[i].v));
		if (!rc && c->metric[i].missing && c->metric_reason[i][0])
			rc = put(mr, info.name, json_string(c->metric_reason[i]));
	}
	return rc;
}

static const struct mx_set *metrics_of(const struct ana_in *in, uint32_t gpu)
{
	for (uint32_t i = 0; i < in->rec->ngpu; i++)
		if (in->rec->gpu[i].index == gpu)
			return in->mx[i];
	return NULL;
}

static int entry_json(const struct ana_in *in, size_t i, json_t *arr)
{
	const struct kc_result *k = in->kc;
	const struct kc_entry *e = &k->e[i];
	json_t *o = json_object(), *gpus = json_object();
	int rc = o && !json_array_append_new(arr, o) ? 0 : -ENOMEM;
	if (rc) {
		json_decref(gpus);
		return rc;
	}
	rc = put(o, "name", json_string(e->name));
	if (!rc && e->d) {
		const struct rec_dispatch *d = e->d;
		rc = put(o, "corr_id", json_integer((json_int_t)d->corr_id));
		rc = rc ? rc : put(o, "pid", json_integer(d->pid));
		rc = rc ? rc : put(o, "tid", json_integer(d->tid));
		rc = rc ? rc : put(o, "queue_id", json_integer((json_int_t)d->queue_id));
		rc = rc ? rc : put(o, "packet_index", json_integer((json_int_t)d->packet_index));
		rc = rc ? rc : put(o, "start_ns", d->mapped ? json_integer(d->start_ns) : json_null());
		rc = rc ? rc : put(o, "end_ns", d->mapped ? json_integer(d->end_ns) : json_null());
		rc = rc ? rc : put(o, "start_ticks", json_integer(d->start_ticks));
		rc = rc ? rc : put(o, "end_ticks", json_integer(d->end_ticks));
	}
	rc = rc ? rc : put(o, "gpu", json_integer(e->gpu));
	rc = rc ? rc : put(o, "count", json_integer((json_int_t)e->count));
	rc = rc ? rc : put(o, "unmapped", json_integer((json_int_t)e->unmapped));
	rc = rc ? rc : put(o, "time_ns", json_integer(e->time_ns));
	rc = rc ? rc : put(o, "time_share", sa_json_num(k->span_ns ? (double)e->time_ns / (double)k->span_ns : NAN));
	rc = rc ? rc : put(o, "concurrent_ns", json_integer(e->concurrent_ns));
	rc = rc ? rc : put(o, "concurrent_share",
			   sa_json_num(e->time_ns ? (double)e->concurrent_ns / (double)e->time_ns : NAN));
	rc = rc ? rc : put(o, "energy_j", sa_json_num(e->energy_j));
	rc = rc ? rc : put(o, "energy_wall_j", sa_json_num(e->energy_wall_j));
	rc = rc ? rc : put(o, "mean_power_w", sa_json_num(e->power_w));
	rc = rc ? rc : put(o, "energy_reason",
			   isnan(e->energy_j) && e->energy_reason[0] ? json_string(e->energy_reason) : json_null());
	rc = rc ? rc : put(o, "gpus", gpus);
	for (uint32_t g = 0; !rc && g < k->ngpu; g++) {
		if (k->g[g].gpu != e->gpu)
			continue;
		json_t *go = json_object();
		char key[16];
		snprintf(key, sizeof(key), "%u", k->g[g].gpu);
		rc = put(gpus, key, go);
		rc = rc ? rc : counts_json(&k->g[g], metrics_of(in, k->g[g].gpu), &k->g[g].c[i], go);
	}
	return rc;
}

int ana_kernels_json(const struct ana_in *in, json_t *j, char *err, size_t errlen)
{
	const struct kc_result *k = in->kc;
	if (!k)
		return 0;
	json_t *o = json_object(), *arr = json_array(), *outside = json_object();
	int rc = put(j, "kernels", o);
	if (rc) {
		json_decref(arr);
		json_decref(outside);
		return spmtap_seterr(err, errlen, ENOMEM, "building the JSON: out of memory");
	}
	rc = put(o, "source", json_string(in->rec->kernels.source));
	rc = rc ? rc : put(o, "rule", json_string(RULE));
	rc = rc ? rc : put(o, "per_dispatch", json_boolean(k->per_dispatch));
	rc = rc ? rc : put(o, "dispatches", json_integer((json_int_t)k->dispatches));
	rc = rc ? rc : put(o, "unmapped", json_integer((json_int_t)k->unmapped));
	rc = rc ? rc : put(o, "span_ns", json_integer(k->span_ns));
	rc = rc ? rc : put(o, "busy_ns", json_integer(k->busy_ns));
	rc = rc ? rc : put(o, "busy_share", sa_json_num(k->span_ns ? (double)k->busy_ns / (double)k->span_ns : NAN));
	rc = rc ? rc : put(o, "concurrent_ns", json_integer(k->concurrent_ns));
	rc = rc ? rc : put(o, "min_coverage", json_real(k->min_coverage));
	rc = rc ? rc : put(o, k->per_dispatch ? "by_dispatch" : "by_name", arr);
	rc = rc ? rc : put(o, "outside_kernels", outside);
	if (rc) {
		json_decref(arr);
		json_decref(outside);
	}
	for (size_t i = 0; !rc && i < k->n; i++)
		rc = entry_json(in, i, arr);
	for (uint32_t g = 0; !rc && g < k->ngpu; g++) {
		json_t *go = json_object();
		char key[16];
		snprintf(key, sizeof(key), "%u", k->g[g].gpu);
		rc = put(outside, key, go);
		rc = rc ? rc : counts_json(&k->g[g], metrics_of(in, k->g[g].gpu), &k->g[g].outside, go);
	}
	return rc ? spmtap_seterr(err, errlen, -rc, "building the JSON: out of memory (or a name that is not UTF-8)")
		  : 0;
}
