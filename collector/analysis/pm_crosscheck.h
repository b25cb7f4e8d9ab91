/* SPDX-License-Identifier: MIT */
/*
 * `spmtap report`'s Cray PM cross-check (docs/power.md "Cray EX node
 * power", docs/cli/spmtap-report.md): per mapped accelerator, the PM
 * counter's mean power (pm.accelN_energy) against the GPU's on-chip energy
 * counter, phase by phase, and the least-squares line (weighted by window length)
 *
 *     P_pm = gain x P_onchip + offset
 *
 * over the steady phases: what sits between the two meters (VRM losses
 * scale with the load: the gain; the NIC and other parts on the PM's side
 * that do not: the offset; the power-attribution paper finds PM within 5 %
 * on Frontier, 1 % on Portage).
 *
 * Steady window of a phase, per energy signal: from its first to its last
 * kept reading inside [start + d, end + d], d the signal's equivalent-step
 * delay from the characterisation (0 when it has none or a negative one;
 * narrowed by its spread): a counter integrates the power d late, so the
 * difference between those two readings is the phase's level alone, exact
 * but for the counter's resolution, however many readings were missed
 * around the edges.  A phase is used when both windows hold two readings.
 */
#ifndef SPMTAP_ANALYSIS_PM_CROSSCHECK_H
#define SPMTAP_ANALYSIS_PM_CROSSCHECK_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "collector/analysis/report.h"

#define PM_XC_MAX_ACCEL 16

struct pm_xc_phase {
	const char *name;                 /* the phase's (borrowed) */
	double onchip_w, pm_w;            /* mean power over each signal's window */
	double pm_t0_ns, pm_t1_ns;        /* the PM signal's window */
	size_t pm_readings;               /* PM energy readings inside its window */
};

struct pm_xc_accel {
	unsigned accel;
	int gpu;                          /* -1: unmapped */
	char pm_signal[48], onchip_signal[48];
	struct pm_xc_phase *ph;           /* the phases used */
	size_t nph;
	double gain, offset_w, residual_rms_w, residual_max_w, energy_ratio; /* NAN: null */
	char reason[200];                 /* why there is no fit, "" when there is */
};

struct pm_xc {
	struct pm_xc_accel a[PM_XC_MAX_ACCEL];
	unsigned n;
};

/*
 * map[a] is the GPU index of accelN (-1: unmapped), naccel accels;
 * multi_gpu: the trace names its GPUs' signals "gpuN.energy" (else
 * "energy").  0, or -ENOMEM.  Free with pm_xc_free().
 */
int pm_xc_compute(const struct sa_report *r, const struct sa_trace *tr, const int32_t *map, unsigned naccel,
		  bool multi_gpu, struct pm_xc *out, char *err, size_t errlen);
void pm_xc_free(struct pm_xc *x);
/* {"accels": [{"accel", "gpu", "pm_signal", "onchip_signal", "phases_used", "gain", "offset_w", ...}]} */
json_t *pm_xc_json(const struct pm_xc *x);
void pm_xc_print(FILE *out, const struct pm_xc *x);

#endif
