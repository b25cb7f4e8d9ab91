/* SPDX-License-Identifier: MIT */
/*
 * Delay-aware attribution (docs/analysis.md, "Delay-aware attribution"): a
 * sensor that reports late moves phase boundaries, so a phase's energy is
 * taken over [start + d, end + d] of the series, d the sensor's delay.
 * Not part of ../shared/specs/sensor-analysis-v1.md, whose energy_j has no
 * delay correction; these are its extra keys.
 *
 * Two pieces, both on a signal's integral (a J signal: its continuous
 * energy Ec at the kept readings; a W signal: its staircase summed):
 *
 *   - The equivalent-step delay of one edge of a square wave, at
 *     sub-sample resolution: the integral over a window that holds the
 *     whole transition, between a settled stretch before the edge and one
 *     after it, equals P0 (c - a) + P1 (b - c) for one time c, where P0 and
 *     P1 are the settled levels.  c - edge is the delay of an ideal step
 *     with the same energy, which is what shifting a boundary before
 *     integrating needs; it does not depend on where the sensor's update
 *     grid falls, unlike the spec's 10 % crossing (up to one update late).
 *   - The energy at a shifted boundary t that falls between two kept
 *     readings g0 < t < g1: a phase boundary is where the load changes, so
 *     the power is P_L (the interval before g0's) up to t and P_R (the one
 *     after g1's) from t; the interval's energy is split in that ratio.
 *     Linear interpolation would put a step's energy on both sides and err
 *     by up to |P_R - P_L| (g1 - g0) / 4 at each boundary.
 */
#ifndef SPMTAP_ANALYSIS_DELAY_SHIFT_H
#define SPMTAP_ANALYSIS_DELAY_SHIFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/analysis/sensor_trace.h"

/*
 * The equivalent-step time c (host ns) of the edge at `edge`: settled
 * before it over [pre_lo, edge], the transition over (edge, post_lo),
 * settled again over [post_lo, post_hi].  The levels must differ by at
 * least min_jump_w.  0, or -ENODATA when a stretch holds fewer than two
 * points or the levels are too close, -ERANGE when c falls outside the
 * window by more than the window's width (a noisy edge).
 */
int sa_edge_time(const struct sa_signal *s, int64_t pre_lo, int64_t edge, int64_t post_lo, int64_t post_hi,
		 double min_jump_w, double *c_ns);

/* What sa_energy_at() did at a boundary, for the residual error. */
struct sa_boundary {
	double jump_w;  /* |P_R - P_L| around it, W; NAN when a neighbour interval is missing */
	double interval_j; /* energy of the kept interval holding it, J (0 on a kept reading) */
	double width_ns;   /* that interval's width (0 on a kept reading) */
	bool split;     /* split in the P_L : P_R ratio (else linear, or exactly on a reading) */
	bool linear;    /* linear interpolation inside an interval (a neighbour missing or power <= 0) */
	/*
	 * Another phase boundary lies within the interval or its neighbours
	 * (the reader missed updates there, or the phases are short): the
	 * split's assumption fails and where in the interval the energy went
	 * is unknown, so the error is bounded only by the interval's energy
	 * on either side of the estimate (power >= 0: Ec is monotone), hard_j.
	 */
	bool gap;
	double hard_j;
	/*
	 * How far the power was from flat on either side: |P_L - P_LL| x +
	 * |P_R - P_RR| (u - x), P_LL and P_RR the next intervals out, J
	 * (NAN: one of them missing).  A square wave gives 0; a workload whose
	 * power moves within its phases gives what the split may miss.
	 */
	double flat_j;
	/*
	 * |dE - (P_L x + P_R (u - x))|, J: how far the interval's energy is from
	 * a step at t between the neighbours' levels.  A power change at
	 * another time inside the interval (one the phases do not list: a
	 * phase cut at the recording's end while the load went on) shows
	 * here, and bounds the split's error under two levels.
	 */
	double mismatch_j;
};

/*
 * Ec at host time t of J signal s with the boundary split above, in J.
 * bnd[0..nbnd): every phase boundary on the same (shifted) timeline,
 * sorted; those within 1 ms of t are t's own (adjacent phases).  -ERANGE
 * when t lies outside [first, last] kept reading, -EINVAL for a W signal.
 */
int sa_energy_at(const struct sa_signal *s, double t_ns, const double *bnd, size_t nbnd, double *ec_j,
		 struct sa_boundary *b);

/*
 * The residual error (J) of one boundary's energy: a delay uncertain by
 * sigma_ns moves the boundary's energy by |P_R - P_L| sigma; a split adds
 * mismatch_j and flat_j (or |P_R - P_L| width / 4 without it); linear interpolation
 * |P_R - P_L| width / 4, or half the interval's energy without both
 * neighbours; with another boundary near, hard_j instead.
 */
double sa_boundary_error_j(const struct sa_boundary *b, double sigma_ns);

#endif
