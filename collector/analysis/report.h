/* SPDX-License-Identifier: MIT */
/*
 * `spmtap report`: per phase, the energy from the first energy counter and
 * each signal's mean power over the phase's confidence window
 * (../shared/specs/sensor-analysis-v1.md section 4, the paper's Eq. 1;
 * docs/cli/spmtap-report.md).
 *
 *   - energy_j = Ec(end) - Ec(start) of the first J signal, Ec linear
 *     between kept readings; null without a J signal or when [start, end]
 *     is not inside its kept readings.  mean_power_w = energy_j / duration.
 *   - Confidence window of a signal with timings: settle = delay +
 *     max(rise, fall), [start + settle, end - settle]; the mean of the
 *     signal's staircase over it.  Null (all three) without timings, for an
 *     empty window, or when no reading precedes the window.
 *
 * Null is NAN in the C results.
 */
#ifndef SPMTAP_ANALYSIS_REPORT_H
#define SPMTAP_ANALYSIS_REPORT_H

#include <jansson.h>
#include <stddef.h>

#include "collector/analysis/characterize.h"
#include "collector/analysis/phases.h"
#include "collector/analysis/sensor_trace.h"

struct sa_phase_signal {
	double window_start_ns, window_end_ns; /* NAN: null */
	double mean_power_w_confident;         /* NAN: null */
	char reason[96]; /* why mean_power_w_confident is null ("no readings after T ns"); "" when it is not */
};

struct sa_phase_result {
	const struct sa_phase *phase; /* borrowed: the phases must outlive the report */
	double duration_ms;
	double energy_j, mean_power_w; /* NAN: null */
	char reason[96];               /* why energy_j is null; "" when it is not */
	struct sa_phase_signal *sig;   /* [nsignals], in the trace's signal order */
};

struct sa_report {
	struct sa_characterization *ch; /* what the windows were built from */
	int energy_signal;              /* the first J signal, -1: none */
	size_t nphases, nsignals;
	struct sa_phase_result *ph;     /* in the phases' order */
};

/* Characterise, then report every phase; free with sa_report_free(). */
int sa_report_compute(const struct sa_trace *tr, const struct sa_phases *ph, struct sa_report **out, char *err,
		      size_t errlen);
void sa_report_free(struct sa_report *r);

/*
 * The spec's JSON object: {"phases": [{"name", "start_ns", "end_ns",
 * "duration_ms", "energy_j", "mean_power_w", "signals": {NAME:
 * {"window_start_ns", "window_end_ns", "mean_power_w_confident"}}}]}.
 * Window ns are JSON integers when whole numbers.  Added keys (the spec
 * allows them): "reason" in each phase and each signal, a string where the
 * value is null for want of data, else null.
 */
int sa_report_json(const struct sa_report *r, json_t **out, char *err, size_t errlen);

#endif
