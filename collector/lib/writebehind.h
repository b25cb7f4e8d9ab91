/* SPDX-License-Identifier: MIT */
/*
 * Write-behind for an output file written once, front to back (the CSV
 * series, the Perfetto trace, the raw container; the SQLite database, which
 * grows at its end and seldom rereads old pages): every WB_STEP bytes, the
 * pages more than WB_LAG behind the end are dropped from the page cache
 * (POSIX_FADV_DONTNEED, which first sends dirty pages to the disk without
 * waiting; pages still dirty are dropped at the next turn, which covers the
 * previous step again, or left to the kernel).
 *
 * Why: a recording writes gigabytes it does not read back.  Left in the page
 * cache they push the application's own files out, and each new page is
 * one the kernel must first find: on a VM whose free memory goes back to
 * the host that cost the Perfetto writer as much CPU as its own encoding
 * (docs/bench.md "The writers' own page-cache writes").  Dropping behind the
 * writer recycles the same few tens of MiB of pages instead.  Nothing waits:
 * a disk slower than the output leaves its dirty pages where they are, as
 * before, and bursts are still absorbed by the page cache.
 */
#ifndef SPMTAP_COLLECTOR_WRITEBEHIND_H
#define SPMTAP_COLLECTOR_WRITEBEHIND_H

#include <stdbool.h>
#include <stdint.h>

#define WB_STEP (8u << 20)
#define WB_LAG (64u << 20)

struct wbehind {
	uint64_t end;     /* bytes written so far: the file's end (written front to back from 0) */
	uint64_t dropped; /* pages before this were asked to go; a multiple of WB_STEP */
	uint64_t calls;   /* fadvise calls made (tests) */
	bool off;         /* the descriptor refused (a pipe, a terminal): no more tries */
};

/* n more bytes were appended to fd; drops what is far enough behind. */
void wb_wrote(struct wbehind *wb, int fd, uint64_t n);
/* The same where the writer knows the file's size rather than what it appended (SQLite). */
void wb_to(struct wbehind *wb, int fd, uint64_t end);

#endif
