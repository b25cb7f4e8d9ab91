/* SPDX-License-Identifier: MIT */
/*
 * spmtap characterize and spmtap report: a sensor trace against the
 * application's phases (../shared/specs/sensor-analysis-v1.md,
 * docs/cli/spmtap-characterize.md, docs/cli/spmtap-report.md).
 *
 * Three stages, so that inputs other than files can be fed in: the command
 * line (parse_args), the inputs (load_inputs: a trace and phases, parsed
 * from files or read from a recording), and the analysis of already-parsed
 * inputs (run_characterize, run_report), which writes the JSON, the text
 * tables and the HTML.  A recording adds its SPM counters and metrics per
 * phase (analyze-counters.c) to the spec's report.
 */
#include <errno.h>
#include <stdint.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/analysis/characterize.h"
#include "collector/analysis/phases.h"
#include "collector/analysis/report.h"
#include "collector/analysis/sensor_trace.h"
#include "collector/analysis/pm_crosscheck.h"
#include "collector/cli/analyze.h"
#include "collector/cli/analyze-truth.h"
#include "collector/cli/cli.h"
#include "collector/lib/smi_cray_pm.h"

const char cmd_characterize_usage[] =
	"usage: spmtap characterize --trace T.csv --phases P.csv [--json OUT.json]\n"
	"       spmtap characterize RECORDING [--phases P.csv] [--json OUT.json]\n"
	"\n"
	"Characterise each power/energy signal of a sensor trace against a square\n"
	"wave of `load` and `idle` phases: update interval, levels, delay, 10-90 %\n"
	"rise, 90-10 % fall and aliasing (docs/cli/spmtap-characterize.md).\n"
	"\n"
	"  RECORDING         a recording (record -d DIR -f csv or -f sqlite): its power\n"
	"                    and energy series and its phases (DIR, DIR/NAME,\n"
	"                    NAME_meta.json or NAME.db)\n"
	"  --trace T.csv     spmtap-sensor-trace v1: time_ns,NAME[J],NAME[W],NAME[ts_ns]\n"
	"                    (docs/formats/sensor-trace.md)\n"
	"  --phases P.csv    start_ns,end_ns,name; with RECORDING, instead of its own\n"
	"  --json OUT.json   write the results as JSON; - for standard output (then\n"
	"                    no table is printed)\n"
	ANA_ACCEPT_USAGE
	"\n"
	"What RECORDING's files hold against its metadata is noted on standard\n"
	"error first (docs/analysis.md).\n"
	"A table of the results goes to standard output.\n"
	"Exit status: 0 done; 1 bad input (the message names file and line) or an\n"
	"output error; 64 bad command line; 65 the recording is truncated or\n"
	"disagrees with its metadata (results of what is there are still written).\n";

const char cmd_report_usage[] =
	"usage: spmtap report --trace T.csv --phases P.csv [--json OUT.json] [--html OUT.html]\n"
	"       spmtap report RECORDING [--phases P.csv] [--json OUT.json] [--html OUT.html]\n"
	"                     [--metric NAME=EXPR]... [--metrics FILE]... [--no-builtin-metrics]\n"
	"                     [--sensor-delay SIGNAL=MS]... [--min-coverage F]\n"
	"                     [--cray-accel-map accel0=gpuN,...]\n"
	"                     [--per-dispatch] [--kernels-only | --no-kernels]\n"
	"\n"
	"Per phase: the energy from the trace's first energy counter, the mean\n"
	"power, and each signal's mean power over the phase's confidence window\n"
	"(start + settle, end - settle), settle = delay + max(rise, fall) from\n"
	"`spmtap characterize` on the same inputs (docs/cli/spmtap-report.md).\n"
	"With a RECORDING, also each GPU's energy, SPM counter totals and mean\n"
	"rates, and derived metrics per phase (docs/metrics.md); when it has the\n"
	"application's kernel dispatches (record ... -- APP), the same per kernel\n"
	"name: count, time and its share, concurrency, energy, counters, rates and\n"
	"metrics, a sample straddling a dispatch boundary split by time overlap and\n"
	"concurrent dispatches sharing equally (docs/analysis.md \"Kernels\").\n"
	"\n"
	"  RECORDING         a recording (record -d DIR -f csv or -f sqlite): its sensor\n"
	"                    series, counters and phases (DIR, DIR/NAME, NAME_meta.json\n"
	"                    or NAME.db)\n"
	"  --trace T.csv     spmtap-sensor-trace v1: time_ns,NAME[J],NAME[W],NAME[ts_ns]\n"
	"                    (docs/formats/sensor-trace.md)\n"
	"  --phases P.csv    start_ns,end_ns,name; with RECORDING, instead of its own\n"
	"  --json OUT.json   write the results as JSON; - for standard output (then\n"
	"                    no table is printed)\n"
	"  --html OUT.html   one self-contained HTML file: the tables and each GPU's\n"
	"                    figure (docs/plots.md); opens with no network\n"
	"  --metric NAME=EXPR  a derived metric over the counters (repeatable)\n"
	"  --metrics FILE    metric definitions, one NAME = EXPR per line (repeatable)\n"
	"  --no-builtin-metrics  only the metrics given, not the built-in set\n"
	ANA_ACCEPT_USAGE
	"  --sensor-delay SIGNAL=MS  the sensor's delay, instead of the one\n"
	"                    characterised: energy_j* (delay-corrected) is the energy\n"
	"                    over [start + MS, end + MS] (docs/analysis.md)\n"
	"  --min-coverage F  a phase whose SPM samples cover less than F (0..1,\n"
	"                    default 0.9) of it gets no value, only the reason; the\n"
	"                    same for a kernel's dispatch time\n"
	"  --per-dispatch    a kernel row per dispatch (name#corr_id), not per name\n"
	"  --kernels-only    print the coverage and kernel tables only (JSON unchanged)\n"
	"  --no-kernels      leave the recording's dispatches out\n"
	"  --cray-accel-map accel0=gpu1,...  which GPU each Cray PM accelN measures,\n"
	"                    instead of the recording's (record --cray-accel-map): the\n"
	"                    PM against on-chip cross-check (docs/power.md)\n"
	"  --node N          a merged job recording (spmtap merge's .db): this report\n"
	"                    for node N, on the job's timeline.  Without --node a\n"
	"                    merged .db gets the job report: per phase, each node's\n"
	"                    energy, mean power and counter totals, and their sums\n"
	"                    over the job (docs/cli/spmtap-merge.md)\n"
	"\n"
	"What RECORDING's files hold against its metadata is noted on standard\n"
	"error first (docs/analysis.md).  A coverage section (lost stretches,\n"
	"saturated counters, sensor windows without readings) opens the tables.\n"
	"energy_j* leads: the energy with the energy counter's delay taken out, and\n"
	"its residual error (+-); energy_j is the counter as read (the spec's).\n"	"Tables of the characterisation, the phases and (RECORDING) the counters\n"
	"and metrics go to standard output.\n"
	"Exit status: 0 done; 1 bad input (the message names file and line, or the\n"
	"metric and column) or an output error; 64 bad command line; 65 the\n"
	"recording is truncated or disagrees with its metadata (results of what is\n"
	"there are still written).\n";

/* --sensor-delay SIGNAL=MS: a name and a delay in ms (an "ms" suffix allowed), at most 10 s either way. */
static int parse_delay(const char *cmd, const char *arg, struct ana_args *a)
{
	const char *eq = strchr(arg, '=');
	if (a->ndelay == ANA_MAX_DEFS) {
		fprintf(stderr, "spmtap %s: --sensor-delay: at most %d\n", cmd, ANA_MAX_DEFS);
		return -1;
	}
	if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof(a->delay_name[0])) {
		fprintf(stderr, "spmtap %s: --sensor-delay '%s': expected SIGNAL=MS, e.g. energy=3.2\n", cmd, arg);
		return -1;
	}
	/* Any time unit, as every time on the command line (units.c); bare: ms.  It may be negative. */
	const char *v = eq + 1;
	bool neg = *v == '-';
	double ns = NAN;
	if (cli_parse_time(v + neg, 1e6, &ns) < 0)
		ns = NAN;
	double ms = neg ? -ns / 1e6 : ns / 1e6;
	if (!isfinite(ms) || fabs(ms) > 1e4) {
		fprintf(stderr, "spmtap %s: --sensor-delay '%s': '%s' is not a delay (ms, or with a unit: 3.2ms, 3200us; up to 10 s either way)\n", cmd, arg,
			eq + 1);
		return -1;
	}
	size_t k = a->ndelay++;
	memcpy(a->delay_name[k], arg, (size_t)(eq - arg));
	a->delay_name[k][eq - arg] = 0;
	a->delay[k] = (struct sa_user_delay){ .signal = a->delay_name[k], .delay_ms = ms };
	return 0;
}

/* -1: go on; otherwise the exit status (help printed, or a usage error). */
static int parse_args(int argc, char **argv, const char *usage, bool report, struct ana_args *a)
{
	enum { O_TRACE = 256, O_PHASES, O_JSON, O_HTML, O_METRIC, O_METRICS, O_NOBUILTIN, O_ACCEPT, O_DELAY, O_MINCOV,
	       O_PERDISP, O_KONLY, O_NOK, O_CRAYMAP };
	static const struct option opts[] = {
		{ "trace", required_argument, NULL, O_TRACE },
		{ "phases", required_argument, NULL, O_PHASES },
		{ "json", required_argument, NULL, O_JSON },
		{ "html", required_argument, NULL, O_HTML },
		{ "metric", required_argument, NULL, O_METRIC },
		{ "metrics", required_argument, NULL, O_METRICS },
		{ "no-builtin-metrics", no_argument, NULL, O_NOBUILTIN },
		{ ANA_ACCEPT_OPTION, no_argument, NULL, O_ACCEPT },
		{ "sensor-delay", required_argument, NULL, O_DELAY },
		{ "min-coverage", required_argument, NULL, O_MINCOV },
		{ "per-dispatch", no_argument, NULL, O_PERDISP },
		{ "kernels-only", no_argument, NULL, O_KONLY },
		{ "no-kernels", no_argument, NULL, O_NOK },
		{ "cray-accel-map", required_argument, NULL, O_CRAYMAP },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd = argv[0];
	memset(a, 0, sizeof(*a));
	a->min_coverage = PC_MIN_COVERAGE;
	optind = 1;
	opterr = 0;
	int c;
	bool report_only = false;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case O_TRACE: a->trace = optarg; break;
		case O_PHASES: a->phases = optarg; break;
		case O_JSON: a->json = optarg; break;
		case O_HTML: a->html = optarg; report_only = true; break;
		case O_METRIC:
		case O_METRICS: {
			const char **v = c == O_METRIC ? a->metric : a->metrics;
			size_t *n = c == O_METRIC ? &a->nmetric : &a->nmetrics;
			if (*n == ANA_MAX_DEFS) {
				fprintf(stderr, "spmtap %s: %s: at most %d\n", cmd, argv[optind - 2], ANA_MAX_DEFS);
				return EXIT_USAGE;
			}
			v[(*n)++] = optarg;
			report_only = true;
			break;
		}
		case O_NOBUILTIN: a->no_builtins = true; report_only = true; break;
		case O_ACCEPT: a->accept_truncated = true; break;
		case O_CRAYMAP: {
			int32_t m[CRAY_PM_MAX_ACCEL];
			char e[200];
			if (cray_pm_parse_map(optarg, m, e, sizeof(e)) < 0) {
				fprintf(stderr, "spmtap %s: --cray-accel-map: %s\n", cmd, e);
				return EXIT_USAGE;
			}
			a->cray_map = optarg;
			report_only = true;
			break;
		}
		case O_DELAY:
			if (parse_delay(cmd, optarg, a))
				return EXIT_USAGE;
			report_only = true;
			break;
		case O_MINCOV: {
			char *end;
			errno = 0;
			a->min_coverage = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(a->min_coverage >= 0 && a->min_coverage <= 1)) {
				fprintf(stderr, "spmtap %s: --min-coverage '%s': expected a fraction from 0 to 1 (0.9 = 90 %%)\n",
					cmd, optarg);
				return EXIT_USAGE;
			}
			report_only = true;
			break;
		}
		case O_PERDISP: a->per_dispatch = true; report_only = true; break;
		case O_KONLY: a->kernels_only = true; report_only = true; break;
		case O_NOK: a->no_kernels = true; report_only = true; break;
		case 'h':
			fputs(usage, stdout);
			return EXIT_OK;
		case ':':
			fprintf(stderr, "spmtap %s: %s needs an argument\n%s", cmd, argv[optind - 1], usage);
			return EXIT_USAGE;
		default:
			fprintf(stderr, "spmtap %s: unknown option '%s'\n%s", cmd, argv[optind - 1], usage);
			return EXIT_USAGE;
		}
	}
	if (optind < argc)
		a->recording = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "spmtap %s: unexpected argument '%s'\n%s", cmd, argv[optind], usage);
		return EXIT_USAGE;
	}
	if (report_only && !report) {
		fprintf(stderr, "spmtap %s: --html, --sensor-delay, --min-coverage, the kernel and the metric options "
			"belong to `spmtap report`\n%s", cmd, usage);
		return EXIT_USAGE;
	}
	if (a->kernels_only && a->no_kernels) {
		fprintf(stderr, "spmtap %s: --kernels-only and --no-kernels exclude each other\n%s", cmd, usage);
		return EXIT_USAGE;
	}
	if (a->trace && (a->per_dispatch || a->kernels_only)) {
		fprintf(stderr, "spmtap %s: kernels come with a RECORDING (record ... -- APP), not with --trace\n", cmd);
		return EXIT_USAGE;
	}
	if (a->recording && a->trace) {
		fprintf(stderr, "spmtap %s: give a RECORDING or --trace, not both\n%s", cmd, usage);
		return EXIT_USAGE;
	}
	if (!a->recording && (!a->trace || !a->phases)) {
		fprintf(stderr, "spmtap %s: a RECORDING, or --trace and --phases, are required\n%s", cmd, usage);
		return EXIT_USAGE;
	}
	if (a->trace && (a->nmetric || a->nmetrics || a->no_builtins)) {
		fprintf(stderr, "spmtap %s: metrics need SPM counters: give a RECORDING instead of --trace\n", cmd);
		return EXIT_USAGE;
	}
	if ((a->recording && !*a->recording) || (a->trace && !*a->trace) || (a->phases && !*a->phases) ||
	    (a->json && !*a->json) || (a->html && !*a->html)) {
		fprintf(stderr, "spmtap %s: an empty file name\n%s", cmd, usage);
		return EXIT_USAGE;
	}
	return -1;
}

static void inputs_free(struct ana_in *in)
{
	for (size_t i = 0; i < REC_MAX_GPUS; i++)
		mx_set_free(in->mx[i]);
	pc_free(in->pc);
	kc_free(in->kc);
	sa_phases_free(&in->own);
	sa_trace_free(in->tr);
	rec_free(in->rec);
	memset(in, 0, sizeof(*in));
}

/* A recording's sensor trace, or an empty one when it has no power or energy. */
static int recording_trace(const char *cmd, struct ana_in *in)
{
	char err[512];
	int rc = rec_trace(in->rec, &in->tr, err, sizeof(err));
	if (rc == -ENOENT) {
		/* not the user's doing when the recording asked for sensors (a killed run, a cut file) */
		if (rec_smi_requested(in->rec))
			fprintf(stderr, "spmtap %s: note: %s holds no power or energy readings although the recording "
				"asked for them%s\n", cmd, in->rec->base,
				in->rec->truth.nnotes ? " (see the notes above)" : "");
		else
			fprintf(stderr, "spmtap %s: note: %s has no power or energy series (record with --smi "
				"power,energy)\n", cmd, in->rec->base);
		rc = sa_trace_new(&in->tr, err, sizeof(err));
	}
	if (rc) {
		fprintf(stderr, "spmtap %s: %s\n", cmd, err);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

static void span(const struct rec_table *t, int64_t *lo, int64_t *hi)
{
	if (!t->n)
		return;
	*lo = t->t_ns[0] < *lo ? t->t_ns[0] : *lo;
	*hi = t->t_ns[t->n - 1] > *hi ? t->t_ns[t->n - 1] : *hi;
}

/*
 * A recording without phases still has totals worth reporting: one phase
 * over all of it, so counters and energy come out as a whole.  With an
 * energy counter the phase is its span, where the energy is defined (the
 * spec's energy_j is null past the first and last kept readings); without
 * one, the span of all the data.
 */
static int whole_recording(const struct recording *r, const struct sa_trace *tr, struct sa_phases *out)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	int j = sa_trace_first_j(tr);
	const struct sa_signal *e = j >= 0 ? sa_trace_signal(tr, (size_t)j) : NULL;
	if (e && e->nkept >= 2) {
		lo = e->kept_t[0];
		hi = e->kept_t[e->nkept - 1] - 1;
	} else {
		for (uint32_t i = 0; i < r->ngpu; i++) {
			span(&r->gpu[i].smi, &lo, &hi);
			for (uint32_t x = 0; x < r->gpu[i].nspm; x++)
				span(&r->gpu[i].spm[x], &lo, &hi);
		}
	}
	if (lo >= hi)
		return -ENODATA;
	out->v = calloc(1, sizeof(*out->v));
	if (!out->v || !(out->v[0].name = strdup("recording"))) {
		free(out->v);
		out->v = NULL;
		return -ENOMEM;
	}
	/* [lo, hi + 1): the last sample's timestamp belongs to it */
	out->v[0].start_ns = lo;
	out->v[0].end_ns = hi + 1;
	out->n = 1;
	return 0;
}

/* Parse the inputs; warnings are printed, errors too.  An exit status. */
static int load_inputs(const char *cmd, const struct ana_args *a, struct ana_in *in)
{
	char err[512];
	memset(in, 0, sizeof(*in));
	int rc = 0;
	if (a->recording) {
		rc = rec_load(a->recording, &in->rec, err, sizeof(err));
		if (rc)
			return ana_load_failed(cmd, rc, err);
		if (!rc) {
			in->truth_status = ana_truth(cmd, in->rec, a->accept_truncated);
			in->what = in->rec->base;
			if (recording_trace(cmd, in) != EXIT_OK) {
				inputs_free(in);
				return EXIT_FAIL;
			}
		}
	} else {
		in->what = a->trace;
		rc = sa_trace_load(a->trace, &in->tr, err, sizeof(err));
	}
	if (rc) {
		fprintf(stderr, "spmtap %s: %s\n", cmd, err);
		inputs_free(in);
		return EXIT_FAIL;
	}
	for (size_t i = 0; i < sa_trace_nwarnings(in->tr); i++)
		fprintf(stderr, "spmtap %s: warning: %s\n", cmd, sa_trace_warning(in->tr, i));
	if (a->phases && sa_phases_load(a->phases, &in->own, err, sizeof(err))) {
		fprintf(stderr, "spmtap %s: %s\n", cmd, err);
		inputs_free(in);
		return EXIT_FAIL;
	}
	in->ph = a->phases ? &in->own : &in->rec->phases;
	if (!in->ph->n && in->rec && whole_recording(in->rec, in->tr, &in->own) == 0) {
		in->ph = &in->own;
		fprintf(stderr, "spmtap %s: note: %s has no phases (record with --phases or markers, or give "
			"--phases): the whole recording is one phase, \"%s\"\n", cmd, in->what, in->own.v[0].name);
	} else if (!in->ph->n) {
		fprintf(stderr, "spmtap %s: note: %s has no phases (record with --phases or markers, or give "
			"--phases)\n", cmd, in->what);
	}
	return EXIT_OK;
}

/* The JSON to a file, or to standard output for "-"; a failed file is removed. */
static int write_json(const char *cmd, json_t *j, const char *path)
{
	/* 16 digits: every ns below 10^16 exactly, and 0.99 as 0.99, not 0.98999999999999999 */
	size_t flags = JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(16);
	bool out = !strcmp(path, "-");
	errno = 0;
	FILE *f = out ? stdout : fopen(path, "w");
	if (!f) {
		fprintf(stderr, "spmtap %s: %s: %s\n", cmd, path, strerror(errno));
		return EXIT_FAIL;
	}
	int rc = json_dumpf(j, f, flags);
	if (fputc('\n', f) == EOF)
		rc = -1;
	if (out ? fflush(f) : fclose(f))
		rc = -1;
	if (rc || (out && ferror(f))) {
		fprintf(stderr, "spmtap %s: %s: write failed: %s\n", cmd, out ? "standard output" : path,
			strerror(errno ? errno : EIO));
		if (!out)
			unlink(path);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

static void print_characterization(const struct sa_characterization *c)
{
	char b[9][48];
	printf("T_ph (median load/idle phase): %s ms; steps: %zu rising, %zu falling\n",
	       ana_cell(b[0], sizeof(b[0]), c->phase_ms, 3), c->rising_steps, c->falling_steps);
	printf("%-20s %-4s %10s %8s %10s %10s %9s %9s %9s %9s  %s\n", "signal", "unit", "update_ms", "changes",
	       "high_w", "low_w", "delay_ms", "rise_ms", "fall_ms", "step_ms", "aliasing");
	for (size_t i = 0; i < c->n; i++) {
		const struct sa_sig_char *s = &c->sig[i];
		char why[32] = "";
		if (s->aliasing == SA_TRUE)
			snprintf(why, sizeof(why), "yes (%s%s%s)", s->alias_why & SA_ALIAS_A ? "a" : "",
				 s->alias_why & SA_ALIAS_B ? "b" : "", s->alias_why & SA_ALIAS_C ? "c" : "");
		/* step_ms: the equivalent-step delay report shifts by (null while aliasing, as in the JSON) */
		double step = s->aliasing == SA_FALSE && s->step_edges ? s->step_delay_ns / 1e6 : NAN;
		printf("%-20s %-4s %10s %8llu %10s %10s %9s %9s %9s %9s  %s\n", s->name, sa_unit_name(s->unit),
		       ana_cell(b[1], sizeof(b[1]), s->update_interval_ms, 3), (unsigned long long)s->changes,
		       ana_cell(b[2], sizeof(b[2]), s->high_w, 3), ana_cell(b[3], sizeof(b[3]), s->low_w, 3),
		       ana_cell(b[4], sizeof(b[4]), s->delay_ns / 1e6, 3), ana_cell(b[5], sizeof(b[5]), s->rise_ns / 1e6, 3),
		       ana_cell(b[6], sizeof(b[6]), s->fall_ns / 1e6, 3), ana_cell(b[7], sizeof(b[7]), step, 4),
		       s->aliasing == SA_NULL ? "-" : s->aliasing == SA_TRUE ? why : "no");
	}
}

/* What energy_j* is: the delay it was shifted by and where that came from, or why there is none. */
static void print_delay(const struct sa_report *r)
{
	if (r->energy_signal < 0)
		return;
	const char *sig = r->ch->sig[r->energy_signal].name;
	if (r->delay_source == SA_DELAY_NONE) {
		printf("\nenergy_j*: no delay known for '%s' (not characterised: no load/idle square wave in the "
		       "phases, or it aliases; give --sensor-delay %s=MS): energy_j is as read, its phase boundaries "
		       "late by the sensor's delay\n", sig, sig);
		return;
	}
	printf("\nenergy_j*: '%s' shifted by its delay %.4f ms (%s%s), boundaries split at the neighbouring "
	       "powers; +-j: residual error; energy_j: as read, no delay correction\n", sig, r->delay_ns / 1e6,
	       sa_delay_source_name(r->delay_source), r->delay_source == SA_DELAY_STEP ? ", equivalent step" : "");
}

static void print_report(const struct sa_report *r)
{
	char b[6][48];
	print_delay(r);
	printf("\n%-16s %20s %12s %10s %8s %10s %10s", "phase", "start_ns", "duration_ms", "energy_j*", "+-j",
	       "energy_j", "mean_w");
	for (size_t k = 0; k < r->nsignals; k++)
		printf("  %12s %-6s", r->ch->sig[k].name, "conf_w");
	putchar('\n');
	for (size_t i = 0; i < r->nphases; i++) {
		const struct sa_phase_result *p = &r->ph[i];
		printf("%-16s %20lld %12s %10s %8s %10s %10s", p->phase->name, (long long)p->phase->start_ns,
		       ana_cell(b[0], sizeof(b[0]), p->duration_ms, 3),
		       ana_cell(b[4], sizeof(b[4]), p->energy_j_corrected, 4), ana_cell_g(b[5], sizeof(b[5]), p->residual_j),
		       ana_cell(b[1], sizeof(b[1]), p->energy_j, 4), ana_cell(b[2], sizeof(b[2]), p->mean_power_w, 3));
		for (size_t k = 0; k < r->nsignals; k++)
			printf("  %19s", ana_cell(b[3], sizeof(b[3]), p->sig[k].mean_power_w_confident, 3));
		putchar('\n');
	}
}

/* Standard output's write errors would otherwise go unnoticed (a full disk, a closed pipe). */
static int flush_stdout(const char *cmd)
{
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "spmtap %s: standard output: %s\n", cmd, strerror(errno ? errno : EIO));
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

static int run_characterize(const char *cmd, const struct ana_args *a, struct ana_in *in)
{
	char err[256];
	struct sa_characterization *c;
	json_t *j = NULL;
	if (sa_characterize(in->tr, in->ph, &c, err, sizeof(err))) {
		fprintf(stderr, "spmtap %s: %s\n", cmd, err);
		return EXIT_FAIL;
	}
	int rc = EXIT_OK;
	if (a->json) {
		if (sa_characterization_json(c, &j, err, sizeof(err)) ||
		    (in->rec && json_object_set_new(j, "truth", ana_truth_json(in->rec)))) {
			fprintf(stderr, "spmtap %s: %s\n", cmd, err);
			rc = EXIT_FAIL;
		} else {
			rc = write_json(cmd, j, a->json);
		}
	}
	if (!rc && (!a->json || strcmp(a->json, "-"))) {
		print_characterization(c);
		rc = flush_stdout(cmd);
	}
	json_decref(j);
	sa_characterization_free(c);
	return rc;
}

static int run_report(const char *cmd, const struct ana_args *a, struct ana_in *in)
{
	char err[512];
	struct sa_report *r;
	json_t *j = NULL;
	struct sa_report_opts o = { .delay = a->delay, .ndelay = a->ndelay };
	if (sa_report_compute_opts(in->tr, in->ph, &o, &r, err, sizeof(err))) {
		fprintf(stderr, "spmtap %s: %s\n", cmd, err);
		return EXIT_FAIL;
	}
	int rc = in->rec ? ana_counters_compute(cmd, a, in) : EXIT_OK;
	/* Cray EX node power against the GPUs' own energy (--cray recordings): analyze-pm.c */
	struct pm_xc pmx;
	int pm = rc ? 0 : ana_pm_compute(in, r, a->cray_map, &pmx, err, sizeof(err));
	if (pm < 0) {
		fprintf(stderr, "spmtap %s: %s\n", cmd, err);
		rc = EXIT_FAIL;
	}
	if (!rc && in->rec)
		rc = ana_kernels_compute(cmd, a, in);
	if (!rc && a->json) {
		if (sa_report_json(r, &j, err, sizeof(err)) || (in->rec && ana_counters_json(in, r, j, err, sizeof(err))) ||
		    (in->kc && ana_kernels_json(in, j, err, sizeof(err))) ||
		    (in->rec && json_object_set_new(j, "truth", ana_truth_json(in->rec))) ||
		    (pm > 0 && json_object_set_new(j, "cray_pm_crosscheck", pm_xc_json(&pmx)))) {
			fprintf(stderr, "spmtap %s: %s\n", cmd, err);
			rc = EXIT_FAIL;
		} else {
			rc = write_json(cmd, j, a->json);
		}
	}
	if (!rc && a->html) {
		if (ana_html_write(in, r, a->html, err, sizeof(err))) {
			fprintf(stderr, "spmtap %s: %s\n", cmd, err);
			rc = EXIT_FAIL;
		} else {
			fprintf(stderr, "spmtap %s: wrote %s\n", cmd, a->html);
		}
	}
	if (!rc && (!a->json || strcmp(a->json, "-"))) {
		/* the recording's truth notes went to standard error at load (analyze-truth.c); coverage opens stdout */
		ana_coverage_print(stdout, in, r, a->min_coverage);
		ana_kernels_coverage_print(stdout, in);
		if (!a->kernels_only || !in->kc) {
			print_characterization(r->ch);
			print_report(r);
			if (in->rec)
				ana_counters_print(in, r);
		}
		ana_kernels_print(in);
		if (pm > 0 && !a->kernels_only)
			pm_xc_print(stdout, &pmx);
		rc = flush_stdout(cmd);
	}
	if (pm > 0)
		pm_xc_free(&pmx);
	json_decref(j);
	sa_report_free(r);
	return rc;
}

static int analyze(int argc, char **argv, const char *usage, bool report)
{
	struct ana_args a;
	int rc = parse_args(argc, argv, usage, report, &a);
	if (rc >= 0)
		return rc;
	struct ana_in in;
	rc = load_inputs(argv[0], &a, &in);
	if (rc)
		return rc;
	rc = report ? run_report(argv[0], &a, &in) : run_characterize(argv[0], &a, &in);
	if (!rc)
		rc = in.truth_status;
	inputs_free(&in);
	return rc;
}

int cmd_characterize(int argc, char **argv)
{
	return analyze(argc, argv, cmd_characterize_usage, false);
}

int cmd_report(int argc, char **argv)
{
	/* a merged job recording (spmtap merge): the job, or one node (--node N) */
	int jrc = cli_job_report(argc, argv);
	if (jrc >= 0)
		return jrc;
	char *keep = NULL;
	char **nv = argv;
	jrc = cli_job_node("report", &argc, &nv, &keep);
	if (jrc > 0)
		return jrc;
	int rc = analyze(argc, nv, cmd_report_usage, true);
	if (nv != argv)
		free(nv);
	free(keep);
	return rc;
}
