/* SPDX-License-Identifier: MIT */
/*
 * SPM counters per phase, and derived metrics per phase and per sample
 * (docs/analysis.md): for each phase of a recording, each GPU's counter
 * totals (summed over XCCs, instances and SEs as the columns are) and mean
 * rates, and every metric of a set evaluated on the phase's per-XCC sums
 * (a ratio of sums, docs/metrics.md).  A sample belongs to a phase when its
 * timestamp (the end of the interval it counts) lies in [start, end).
 */
#ifndef SPMTAP_ANALYSIS_PHASE_COUNTERS_H
#define SPMTAP_ANALYSIS_PHASE_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/analysis/metrics.h"
#include "collector/analysis/recording.h"

/* One GPU's columns summed over the samples of [start, end), per XCC and in all. */
struct pc_phase {
	size_t samples;        /* of XCC 0 */
	double *total;         /* [ncols]: over the XCCs; NAN when a sample of it was saturated */
	double *rate;          /* [ncols]: total per second of the phase; NAN with total */
	struct mx_value *metric; /* [nmetrics] */
};

struct pc_gpu {
	uint32_t gpu;
	uint32_t ncols;
	const char *const *cols;   /* the recording's column names */
	size_t nmetrics;
	struct pc_phase *ph;       /* [nphases], in the phases' order */
};

struct pc_result {
	size_t nphases;
	uint32_t ngpu;
	struct pc_gpu g[REC_MAX_GPUS];
};

/*
 * Counters and metrics of every phase on every GPU of r with SPM data.
 * metrics[gpu index in r->gpu] may be NULL (no metrics for that GPU).
 * Free with pc_free().
 */
int pc_compute(const struct recording *r, const struct sa_phases *phases, struct mx_set *const *metrics,
	       struct pc_result **out, char *err, size_t errlen);
void pc_free(struct pc_result *p);

/*
 * A metric set for GPU g of r: its columns, the catalog of its gfx target,
 * the built-ins (unless no_builtins), then the user's definitions (each
 * "NAME=expr") and files.  Messages name the definition or FILE:LINE.
 */
int pc_metrics_for(const struct recording *r, const struct rec_gpu *g, bool no_builtins, const char *const *defs,
		   size_t ndefs, const char *const *files, size_t nfiles, struct mx_set **out, char *err,
		   size_t errlen);

/*
 * Per sample: metric i of GPU g on the k-th sample of every XCC, at XCC 0's
 * time; k from 0 to pc_samples(g) - 1.
 */
size_t pc_samples(const struct rec_gpu *g);
int pc_eval_sample(const struct rec_gpu *g, const struct mx_set *m, size_t i, size_t k, int64_t *t_ns,
		   struct mx_value *out);

#endif
