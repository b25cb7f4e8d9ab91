/* SPDX-License-Identifier: MIT */
/*
 * SPM counters, derived metrics, time and energy per kernel name (or per
 * dispatch) of a recording with the application's dispatches
 * (recording.h, struct rec_kernels; docs/analysis.md "Kernels").
 *
 * The apportioning rule.  SPM sample k counts the interval (a_k, t_k]: t_k
 * its timestamp, a_k the previous sample's (or t_k minus one period after
 * a gap, and for the first sample).  Where d(t) dispatches of a GPU run at
 * time t, each of them is owed 1/d(t) of the sample's counts per unit of
 * time, so a dispatch gets
 *
 *	value_k x (integral over (a_k, t_k] n [start, end) of 1/d(t) dt) / (t_k - a_k)
 *
 * of sample k: a sample straddling a boundary is split by time overlap,
 * and concurrent dispatches (two queues) share it equally while they run
 * together.  What no dispatch ran in stays "outside kernels", so the
 * shares and the outside part add up to every sample's value.  Energy is
 * shared by the same rule (energy_j); energy_wall_j is each dispatch's
 * whole [start, end) unshared.
 *
 * Coverage: the part of an entry's dispatch time that some sample's
 * interval covers (per XCC, the worst XCC counts).  Below min_coverage an
 * entry gets no counter value and no metric, only the reason, as phases do.
 */
#ifndef SPMTAP_ANALYSIS_KERNEL_COUNTERS_H
#define SPMTAP_ANALYSIS_KERNEL_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/analysis/metrics.h"
#include "collector/analysis/recording.h"

/* One kernel name, or one dispatch with per_dispatch. */
struct kc_entry {
	const char *name;               /* the kernel's name; "(unnamed)" for a dispatch the tool could not name */
	const struct rec_dispatch *d;   /* per_dispatch: its dispatch; NULL per name */
	uint32_t gpu;                   /* the GPU its dispatches ran on (per name: of the first) */
	size_t count;                   /* dispatches */
	size_t unmapped;                /* of them, without start/end on the timebase (no time, no counters) */
	int64_t time_ns;                /* sum of the mapped dispatches' durations */
	int64_t concurrent_ns;          /* of time_ns: while another dispatch of the same GPU ran too */
	double energy_j;                /* shared as the counters are; NAN: no energy (energy_reason) */
	double energy_wall_j;           /* over each dispatch's [start, end) whole, summed; NAN: none */
	double power_w;                 /* energy_wall_j / time: the GPU's mean power while it ran */
	char energy_reason[96];
};

/* An entry's counters on its GPU. */
struct kc_counts {
	double samples;                 /* sample shares it got (XCC 0): the counters' weight in samples */
	double *total;                  /* [ncols]: over the XCCs; NAN when blanked or saturated */
	double *rate;                   /* [ncols]: total per second of time_ns */
	double **xcc_total;             /* [nxcc][ncols]: the shares before blanking (NAN: saturated) */
	uint64_t *saturated;            /* [ncols]: saturated cells among the samples it got a share of */
	struct mx_value *metric;        /* [nmetrics] */
	char (*metric_reason)[128];     /* [nmetrics] */
	double coverage;                /* covered / dispatch time, the worst XCC's; 1 without time */
	int64_t lost_ns;                /* dispatch time no sample covers (the worst XCC) */
	bool blanked;                   /* coverage < min_coverage: no total, rate or metric */
	char reason[192];               /* why blanked, "partial: N % coverage", or "" */
};

struct kc_gpu {
	uint32_t gpu;
	uint32_t ncols, nxcc;
	const char *const *cols;
	size_t nmetrics;
	struct kc_counts *c;            /* [nentries]: entries of other GPUs stay empty (samples 0, total NAN) */
	struct kc_counts outside;       /* what no dispatch ran in (blanked never; coverage 1) */
};

struct kc_result {
	bool per_dispatch;
	size_t n;                       /* entries */
	struct kc_entry *e;             /* per name: by total time, longest first; per dispatch: by start */
	size_t dispatches, unmapped;
	int64_t span_ns;                /* the recording's data span (samples and readings) */
	int64_t busy_ns;                /* the union of all mapped dispatches */
	int64_t concurrent_ns;          /* of busy_ns: two or more dispatches of a GPU at once */
	double min_coverage;
	uint32_t ngpu;
	struct kc_gpu g[REC_MAX_GPUS];  /* GPUs with SPM counters */
};

/*
 * Energy of GPU gpu over [a, b) ns: J, or NAN with why (no energy counter,
 * outside its readings).  NULL: no energy anywhere.
 */
typedef double (*kc_energy_fn)(void *user, uint32_t gpu, int64_t a, int64_t b, char *why, size_t len);

/*
 * Everything above for the dispatches of r.  metrics[i] for r->gpu[i] may
 * be NULL.  -ENODATA when r has no dispatches.  Free with kc_free().
 */
int kc_compute(const struct recording *r, struct mx_set *const *metrics, kc_energy_fn energy, void *user,
	       double min_coverage, bool per_dispatch, struct kc_result **out, char *err, size_t errlen);
void kc_free(struct kc_result *k);

/* The GPU a dispatch's counters come from: its `gpu` column, else the recording's first GPU. */
uint32_t kc_dispatch_gpu(const struct recording *r, const struct rec_dispatch *d);

#endif
