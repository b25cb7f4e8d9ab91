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
	/*
	 * Not in the spec (extra keys energy_j_delay_corrected,
	 * residual_error_j): the energy over [start + d, end + d] of the
	 * energy signal, d = sa_report.delay_ns, with the boundaries split
	 * as delay_shift.h says, and its residual error.  NAN: null (no
	 * delay known, or the shifted phase is not inside the kept readings).
	 */
	double energy_j_corrected, residual_j;
	char reason[96];               /* why energy_j is null; "" when it is not */
	struct sa_phase_signal *sig;   /* [nsignals], in the trace's signal order */
};

/* Where the delay the energy was shifted by came from. */
enum sa_delay_source {
	SA_DELAY_NONE,     /* none known: no corrected energy */
	SA_DELAY_STEP,     /* the characterisation's equivalent-step delay */
	SA_DELAY_USER,     /* --sensor-delay */
};

/* "characterised", "--sensor-delay", or NULL for none. */
const char *sa_delay_source_name(enum sa_delay_source s);

/* A delay given by the user for one signal (--sensor-delay SIGNAL=MS). */
struct sa_user_delay {
	const char *signal;
	double delay_ms;
};

struct sa_report_opts {
	const struct sa_user_delay *delay; /* they replace the characterised delays of their signals */
	size_t ndelay;
};

struct sa_report {
	struct sa_characterization *ch; /* what the windows were built from */
	int energy_signal;              /* the first J signal, -1: none */
	/* the energy signal's delay used for energy_j_corrected, and its 1-sigma uncertainty (NAN: none) */
	double delay_ns, delay_sigma_ns;
	enum sa_delay_source delay_source;
	size_t nphases, nsignals;
	struct sa_phase_result *ph;     /* in the phases' order */
};

/* Characterise, then report every phase; free with sa_report_free(). */
int sa_report_compute(const struct sa_trace *tr, const struct sa_phases *ph, struct sa_report **out, char *err,
		      size_t errlen);
/*
 * The same with options: user delays.  A delay for a signal the trace does
 * not have is an error (-EINVAL, naming the signals it has).
 */
int sa_report_compute_opts(const struct sa_trace *tr, const struct sa_phases *ph, const struct sa_report_opts *o,
			   struct sa_report **out, char *err, size_t errlen);
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
