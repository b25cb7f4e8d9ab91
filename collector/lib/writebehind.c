/* SPDX-License-Identifier: MIT */
/* Page-cache write-behind for outputs written once (writebehind.h says why). */
#include <fcntl.h>

#include "collector/lib/writebehind.h"

void wb_wrote(struct wbehind *wb, int fd, uint64_t n)
{
	wb_to(wb, fd, wb->end + n);
}

void wb_to(struct wbehind *wb, int fd, uint64_t end)
{
	wb->end = end;
	if (wb->off || wb->end < WB_LAG + WB_STEP)
		return;
	uint64_t hi = (wb->end - WB_LAG) / WB_STEP * WB_STEP;
	if (hi < wb->dropped + WB_STEP)
		return;
	/* One step back again: pages that were dirty at the last turn have had a step to reach the disk. */
	uint64_t lo = wb->dropped >= WB_STEP ? wb->dropped - WB_STEP : 0;
	if (posix_fadvise(fd, (off_t)lo, (off_t)(hi - lo), POSIX_FADV_DONTNEED) != 0)
		wb->off = true; /* ESPIPE on a pipe: advice only, never an error of the output */
	wb->calls++;
	wb->dropped = hi;
}
