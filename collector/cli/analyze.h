/* SPDX-License-Identifier: MIT */
/*
 * What `spmtap characterize` and `spmtap report` share between their
 * files: the parsed command line, the loaded inputs (a sensor trace and
 * phases, from files or from a recording), and, for a recording, the SPM
 * counters and derived metrics per phase (analyze-counters.c) and the HTML
 * report (analyze-html.c).
 */
#ifndef SPMTAP_CLI_ANALYZE_H
#define SPMTAP_CLI_ANALYZE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "collector/analysis/kernel_counters.h"
#include "collector/analysis/phase_counters.h"
#include "collector/analysis/phases.h"
#include "collector/analysis/recording.h"
#include "collector/analysis/report.h"
#include "collector/analysis/sensor_trace.h"

#define ANA_MAX_DEFS 64

struct ana_args {
	const char *recording; /* RECORDING operand; NULL with --trace */
	const char *trace;     /* --trace */
	const char *phases;    /* --phases: required with --trace, replaces a recording's phases */
	const char *json;      /* --json; NULL: none, "-": standard output */
	const char *html;      /* --html (report) */
	const char *metric[ANA_MAX_DEFS];  /* --metric NAME=EXPR */
	size_t nmetric;
	const char *metrics[ANA_MAX_DEFS]; /* --metrics FILE */
	size_t nmetrics;
	bool no_builtins;      /* --no-builtin-metrics */
	bool accept_truncated; /* --accept-truncated (analyze-truth.h) */
	struct sa_user_delay delay[ANA_MAX_DEFS]; /* --sensor-delay SIGNAL=MS (report) */
	char delay_name[ANA_MAX_DEFS][64];        /* their signal names */
	size_t ndelay;
	double min_coverage;   /* --min-coverage: below it a phase gets no value (PC_MIN_COVERAGE) */
	bool per_dispatch;     /* --per-dispatch: a kernel row per dispatch, not per name */
	bool kernels_only;     /* --kernels-only: the text shows the kernel tables only */
	bool no_kernels;       /* --no-kernels: leave the recording's dispatches out */
	const char *cray_map;  /* --cray-accel-map (report): replaces the recording's */
};

struct ana_in {
	const char *what;          /* the input named in titles: the recording's base or the trace file */
	struct recording *rec;     /* NULL with --trace */
	struct sa_trace *tr;       /* never NULL: empty when a recording has no power or energy */
	struct sa_phases own;      /* --phases, or the trace's phases */
	const struct sa_phases *ph; /* the phases in use */
	/* Recording only: metric sets per r->gpu[] entry (NULL: no SPM) and the counters per phase. */
	struct mx_set *mx[REC_MAX_GPUS];
	struct pc_result *pc;
	struct kc_result *kc;      /* per kernel (analyze-kernels.c); NULL without dispatches or with --no-kernels */
	int truth_status;          /* ana_truth's: the exit status when all else went well */
	double min_coverage;       /* what pc was computed with */
};

/* Counters and metrics per phase of a recording's GPUs; 0 or an exit status (the message printed). */
int ana_counters_compute(const char *cmd, const struct ana_args *a, struct ana_in *in);
/* The terminal tables: per GPU, counter totals and rates, then metrics, one row per phase. */
void ana_counters_print(const struct ana_in *in, const struct sa_report *rep);
/*
 * The truth section that comes before any table: per GPU the phases that
 * have no value or only a partial one and why, saturated counters, and the
 * sensor windows without readings (docs/analysis.md "Coverage").  Returns
 * how many things it had to say (0: everything whole).
 */
size_t ana_coverage_print(FILE *f, const struct ana_in *in, const struct sa_report *rep, double min_coverage);
/*
 * Adds to report JSON j (sa_report_json's) what the spec leaves open:
 * "recording" and, per GPU, "gpus": {N: {"energy_j", "samples",
 * "coverage", "reason", "lost_ns", "lost_stretches", "saturated_cells",
 * "xcc": [...], "counters": {NAME: {"total", "rate_per_s",
 * "saturated_cells"}}, "metrics": {NAME: v}, "metric_reasons"}} in each
 * phase, and "metrics" (the definitions) and "coverage" at the top
 * (docs/analysis.md "Coverage").
 */
int ana_counters_json(const struct ana_in *in, const struct sa_report *rep, json_t *j, char *err, size_t errlen);
/* Energy of GPU g's own energy counter over phase p (NAN: null), for multi-GPU recordings. */
double ana_gpu_energy(const struct ana_in *in, const struct sa_report *rep, uint32_t gpu, size_t p);

/* The first energy signal of GPU gpu in in->tr (names carry "gpuN." with several GPUs); -1: none. */
int ana_gpu_energy_signal(const struct ana_in *in, uint32_t gpu);

/*
 * Per kernel name (or dispatch) of a recording with dispatches
 * (analyze-kernels.c, docs/analysis.md "Kernels"): after
 * ana_counters_compute (it uses in->mx).  0 or an exit status.
 */
int ana_kernels_compute(const char *cmd, const struct ana_args *a, struct ana_in *in);
/* The kernels' lines of the coverage section: entries without a value, or a partial one; how many. */
size_t ana_kernels_coverage_print(FILE *f, const struct ana_in *in);
/* The kernel tables: time, energy, then per GPU counters, rates and metrics. */
void ana_kernels_print(const struct ana_in *in);
/* "kernels" in the report's JSON (docs/cli/spmtap-report.md). */
int ana_kernels_json(const struct ana_in *in, json_t *j, char *err, size_t errlen);

/* The self-contained HTML report; 0 or -errno with err. */
int ana_html_write(const struct ana_in *in, const struct sa_report *rep, const char *path, char *err,
		   size_t errlen);

/* A table cell: the number with prec decimals, or "-" for NAN. */
const char *ana_cell(char *buf, size_t len, double v, int prec);
/* A count or rate of any size in 4 significant digits ("1.235e+09", "812.5"), or "-". */
const char *ana_cell_g(char *buf, size_t len, double v);

/*
 * The Cray PM cross-check of a recording made with --cray (analyze-pm.c),
 * with map (--cray-accel-map; NULL: the recording's): 1 with it in x
 * (pm_xc_free it), 0 without Cray PM data, -errno.
 */
struct pm_xc;
int ana_pm_compute(const struct ana_in *in, const struct sa_report *r, const char *map, struct pm_xc *x, char *err,
		   size_t errlen);

#endif
