/* SPDX-License-Identifier: MIT */
/*
 * Samples lost at the recording's end (session.h, "the recording's window").
 * The decoder counts lost samples from timestamp gaps; the window ends at a
 * host time.  Two cases need both:
 *
 *  - a gap whose first sample after it is past the end: the missing samples
 *    up to the end were lost inside the window, the rest are after it;
 *  - a stream whose last sample came before the end (a stalled RLC, a ring
 *    dropped at the stop): no later sample shows the gap, yet the counters
 *    ran until the stop program, after the end, so every sample period
 *    between the last sample and the end is a sample lost.
 *
 * Times are CLOCK_BOOTTIME ns (0: unknown); both return 0 when they cannot
 * tell.  Pure functions: test_window_loss checks them.
 */
#ifndef SPMTAP_COLLECTOR_WINDOW_LOSS_H
#define SPMTAP_COLLECTOR_WINDOW_LOSS_H

#include <stdint.h>

/*
 * Of `gap` samples missing between samples at last_host and next_host
 * (next_host > end), how many would have come after end.  The period is the
 * gap's own: (next_host - last_host) / (gap + 1).
 */
uint64_t wloss_gap_after_end(int64_t last_host, int64_t next_host, int64_t end, uint64_t gap);
/* Sample periods (period_ps, picoseconds) that fit whole between last_host and end. */
uint64_t wloss_tail(int64_t last_host, int64_t period_ps, int64_t end);

#endif
