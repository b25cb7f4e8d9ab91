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

/*
 * Below this coverage a phase gets no value, only the reason
 * (`--min-coverage`, docs/analysis.md "Coverage"): a tenth of a phase's
 * samples missing moves a total by a tenth, more than any counter's own
 * error, and still lets a phase of ten samples lose one at its edge.
 */
#define PC_MIN_COVERAGE 0.9
/* Lost stretches kept per phase and XCC (all are counted and summed). */
#define PC_MAX_STRETCHES 8

/* A stretch of host time where samples were due and none is in the file. */
struct pc_stretch {
	int64_t start_ns, end_ns; /* clipped to the phase */
	size_t samples;           /* the samples it should have held */
};

/*
 * Coverage of one phase by one XCC stream: samples present / expected,
 * where expected = present + the samples due in the stretches without any
 * (gaps in gpu_ticks longer than 1.5 sample periods, and the parts of the
 * phase before the stream's first or after its last sample).  The period is
 * the spacing of the steps around (the larger median of the 8 before and the
 * 8 after): the SPM interval counts SCLK cycles, so a GPU that lowers its
 * clock samples more slowly, and that is no loss.
 */
struct pc_cover {
	size_t present, expected;
	double coverage;          /* present / expected; 1 when nothing was due (a phase shorter than a sample) */
	int64_t lost_ns;          /* time the missing samples would have covered */
	size_t nlost;             /* lost stretches, all of them */
	struct pc_stretch lost[PC_MAX_STRETCHES]; /* the first ones */
	bool before_first, after_last; /* a stretch is the stream's start or end (no sample yet / any more) */
	int64_t first_ns, last_ns;     /* the stream's first and last sample (host ns); 0 without any */
};

/* One GPU's columns summed over the samples of [start, end), per XCC and in all. */
struct pc_phase {
	size_t samples;        /* of XCC 0 */
	double *total;         /* [ncols]: over the XCCs; NAN when a sample of it was saturated, or no value */
	double *rate;          /* [ncols]: total per second of the phase; NAN with total */
	struct mx_value *metric; /* [nmetrics] */
	/* What the numbers stand on (docs/analysis.md "Coverage"). */
	struct pc_cover *xcc;  /* [the GPU's XCC streams] */
	double coverage;       /* the worst XCC's: a total over XCCs is only as whole as its thinnest part */
	size_t cells;          /* samples over all XCCs: what saturated[] counts against */
	uint64_t *saturated;   /* [ncols]: saturated cells (NAN in a declared column) over the XCCs */
	bool blanked;          /* coverage < min_coverage: total, rate and every metric are NAN / missing */
	char reason[192];      /* blanked: why ("coverage 12 %: 3 lost stretches"); partial: "partial: 95 %
				* coverage"; "" when every due sample is there */
	char (*metric_reason)[128]; /* [nmetrics]: why a metric is missing ("" when present or plain arithmetic) */
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
 * metrics[gpu index in r->gpu] may be NULL (no metrics for that GPU).  A
 * phase whose coverage is below min_coverage (0..1; PC_MIN_COVERAGE by
 * default) is blanked.  Free with pc_free().
 */
int pc_compute(const struct recording *r, const struct sa_phases *phases, struct mx_set *const *metrics,
	       double min_coverage, struct pc_result **out, char *err, size_t errlen);

/* The sample spacing of one stream, for pc_cover_of(): medians over the whole stream. */
struct pc_period {
	double ticks;   /* median gpu_ticks step; 0: no ticks (host time used) */
	double ns;      /* median host-time step; 0: fewer than two samples */
};
void pc_period_of(const struct rec_table *t, struct pc_period *p);
/* Coverage of [start_ns, end_ns) by stream t; samples [lo, hi) lie in it. */
void pc_cover_of(const struct rec_table *t, const struct pc_period *p, int64_t start_ns, int64_t end_ns, size_t lo,
		 size_t hi, struct pc_cover *c);
/* SPM streams the recording's meta lists for spmtap GPU `gpu` (extra.streams): what the files should hold. */
uint32_t pc_streams_expected(const struct recording *r, uint32_t gpu);
/* A sentence on c: "coverage 12 %: 3 lost stretches (340.2 ms), no samples after T". */
void pc_cover_reason(const struct pc_cover *c, char *buf, size_t len);
/* Whole percent, rounded down: 99.6 % is "99 %", never "100 %" while anything is missing. */
int pc_pct(double f);
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
