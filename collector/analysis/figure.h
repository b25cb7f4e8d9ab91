/* SPDX-License-Identifier: MIT */
/*
 * A recording's figure for one GPU (docs/plots.md), as `spmtap plot` and
 * `spmtap report --html` draw it: its SPM counters as rates (per ms,
 * summed over the XCCs), each in a panel of its own, and its power below,
 * energy-derived and as the sensors report it, on one time axis; the
 * phases shaded and, where the sensor characterisation gives one, each
 * power signal's confidence window per phase; and when the recording has
 * the application's dispatches, a track per queue under the panels with
 * each dispatch as a slice named by its kernel.
 */
#ifndef SPMTAP_ANALYSIS_FIGURE_H
#define SPMTAP_ANALYSIS_FIGURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/analysis/plot.h"
#include "collector/analysis/recording.h"
#include "collector/analysis/report.h"
#include "collector/analysis/sensor_trace.h"

#define FIG_MAX_COUNTER_PANELS 5
#define FIG_MAX_PHASES 200 /* more bands than this are unreadable: select some (fig_opts.phase) */

struct fig_opts {
	const char *const *phase; /* names of the phases to shade ("name" or "prefix*"); NULL: all but "idle" */
	size_t nphase;
	int width, height;        /* 0: the plot defaults */
	const char *title;        /* NULL: "GPU N: name (gfx)" */
	bool no_kernels;          /* leave the recording's dispatches out (else a track per queue under the panels) */
};

/* Arrays the figure borrows (plot.h): free after the last render. */
struct fig_data;

/*
 * The figure of GPU `gpu` of r.  tr/rep: the recording's sensor trace and
 * report (rec_trace, sa_report_compute), or NULL without sensors.
 * *note says what was left out ("14 counters: the first 5 drawn"), or "".
 */
int fig_build(const struct recording *r, uint32_t gpu, const struct sa_trace *tr, const struct sa_report *rep,
	      const struct fig_opts *o, struct plot_figure **fig, struct fig_data **data, char *note, size_t notelen,
	      char *err, size_t errlen);
void fig_data_free(struct fig_data *d);

/* Whether phase name matches one of the selections (exact, or a prefix ending in '*'); without any, all but "idle". */
int fig_phase_selected(const struct fig_opts *o, const char *name);

#endif
