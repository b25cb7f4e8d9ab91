/* SPDX-License-Identifier: MIT */
/*
 * `spmtap characterize`: how each sensor signal of a trace answers a
 * square-wave stimulus (../shared/specs/sensor-analysis-v1.md section 3;
 * the paper's update interval, delay, 10-90 % rise, 90-10 % fall and
 * aliasing, docs/cli/spmtap-characterize.md).
 *
 *   - Steps come from the phases: a `load` phase starting within 1 ms of
 *     an `idle` phase's end is a rising step, an `idle` phase starting
 *     within 1 ms of a `load` phase's end a falling one; the phase itself
 *     is the step's search interval [s, e).  T_ph is the median duration
 *     of all load and idle phases.
 *   - high_w / low_w: median of the readings in the second halves of the
 *     load / idle phases.
 *   - A step counts only when both of its 10 % and 90 % crossings lie in
 *     [s, e); timings are medians over the counted steps.
 *   - aliasing: (a) T_ph < 2 x update interval, (b) contrast under half of
 *     C_ref (the largest contrast among the signals not aliased by (a)),
 *     (c) no counted rising or no counted falling step.  An aliasing
 *     signal's timings are null.  With no step at all, levels, timings and
 *     aliasing are null.
 *
 * Null is NAN in the C results (aliasing: SA_NULL).
 */
#ifndef SPMTAP_ANALYSIS_CHARACTERIZE_H
#define SPMTAP_ANALYSIS_CHARACTERIZE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/analysis/phases.h"
#include "collector/analysis/sensor_trace.h"

enum sa_tristate { SA_NULL = -1, SA_FALSE = 0, SA_TRUE = 1 };

/* Which aliasing rules hold (sa_sig_char.alias_why). */
enum {
	SA_ALIAS_A = 1u << 0, /* T_ph < 2 x update_interval_ms (or fewer than two changes) */
	SA_ALIAS_B = 1u << 1, /* high_w - low_w < 0.5 x C_ref */
	SA_ALIAS_C = 1u << 2, /* no counted rising or no counted falling step */
};

struct sa_sig_char {
	const char *name;          /* the trace's; valid while the trace lives */
	enum sa_unit unit;         /* of the source column */
	uint64_t changes;
	double update_interval_ms; /* NAN: null (fewer than two changes) */
	double high_w, low_w;      /* NAN: null (no step, or no reading in the halves) */
	/*
	 * The spec's delay_ms, rise_ms, fall_ms, in ns (x 1e-6 for ms): medians
	 * of integer ns, so exact, and confidence windows are built from them
	 * without rounding.  NAN: null (no step, aliasing).
	 */
	double delay_ns, rise_ns, fall_ns;
	int aliasing;              /* enum sa_tristate */
	unsigned alias_why;        /* SA_ALIAS_* */
	size_t rising, falling;    /* counted steps of this signal */
	/* The medians before aliasing nulls them (NAN when nothing counted): for plots and text. */
	double delay_meas_ns, rise_meas_ns, fall_meas_ns;
	/*
	 * Not in the spec: the equivalent-step delay (delay_shift.h), median
	 * over the steps that gave one, at sub-sample resolution, and its
	 * spread (the largest distance of a step's value from it, 0 with one:
	 * a misplaced phase marker shows there).  What report
	 * shifts the series by; the spec's delay_ns is the first reading past
	 * 10 %, up to one update later.  NAN: no step gave one.  JSON:
	 * step_delay_ms, step_delay_spread_ms (null when aliasing), step_edges.
	 */
	double step_delay_ns, step_delay_spread_ns;
	size_t step_edges;
};

struct sa_characterization {
	double phase_ms;           /* T_ph; NAN: no load or idle phase */
	size_t rising_steps, falling_steps; /* steps the phases define */
	double c_ref_w;            /* NAN: no signal escapes rule (a) */
	size_t n;                  /* = the trace's signals, in its order */
	struct sa_sig_char *sig;
};

/* Characterise every signal of `tr` against `ph`; free with sa_characterization_free(). */
int sa_characterize(const struct sa_trace *tr, const struct sa_phases *ph, struct sa_characterization **out,
		    char *err, size_t errlen);
void sa_characterization_free(struct sa_characterization *c);

/*
 * The spec's JSON object: {"phase_ms", "signals": {NAME: {"unit",
 * "update_interval_ms", "changes", "high_w", "low_w", "delay_ms",
 * "rise_ms", "fall_ms", "aliasing"}}}, nulls where the spec says.
 * Dump it with JSON_PRESERVE_ORDER to keep the signals in trace order.
 */
int sa_characterization_json(const struct sa_characterization *c, json_t **out, char *err, size_t errlen);

/* A JSON number, or null for NAN and infinities (JSON has neither). */
json_t *sa_json_num(double v);
/* A JSON integer when v is a whole number below 2^53 in size, else as sa_json_num(): for ns. */
json_t *sa_json_ns(double v);

#endif
