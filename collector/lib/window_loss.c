/* SPDX-License-Identifier: MIT */
#include "collector/lib/window_loss.h"

uint64_t wloss_gap_after_end(int64_t last_host, int64_t next_host, int64_t end, uint64_t gap)
{
	/* Unknown times, or a gap wholly after the end: none of it was in the window. */
	if (!last_host || !next_host || next_host <= last_host || last_host >= end)
		return gap;
	if (next_host <= end)
		return 0;
	/* Missing sample k (1..gap) is due at last + k * period; those at or before the end are the window's. */
	long double period = (long double)(next_host - last_host) / (long double)(gap + 1);
	uint64_t in = (uint64_t)((long double)(end - last_host) / period);
	return in >= gap ? 0 : gap - in;
}

uint64_t wloss_tail(int64_t last_host, int64_t period_ps, int64_t end)
{
	if (!last_host || period_ps <= 0 || last_host >= end)
		return 0;
	return (uint64_t)((long double)(end - last_host) * 1000.0L / (long double)period_ps);
}
