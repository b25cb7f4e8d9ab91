/* SPDX-License-Identifier: MIT */
/*
 * Write-behind for an output file written once, front to back (the CSV
 * series, the Perfetto trace, the raw container; not SQLite, whose database
 * is rewritten in place and where it measured no better): every WB_STEP
 * bytes, the pages more than WB_LAG behind the end are dropped from the page cache
 * (POSIX_FADV_DONTNEED, which first sends dirty pages to the disk without
 * waiting for them; pages still dirty are dropped at the next turn, which
 * covers the previous step again, or left to the kernel).
 *
 * Why: a recording writes gigabytes it does not read back.  Left in the page
 * cache they push the application's own files out, and each new page is
 * one the kernel must first find: on a VM whose free memory goes back to
 * the host that cost the Perfetto writer as much CPU as its own encoding
 * (docs/bench.md "The writers' own page-cache writes").  Dropping behind the
 * writer recycles the same few tens of MiB of pages instead.
 *
 * The advice runs on a thread of its own (spmtap-wbehind), started at the
 * first step: sending dirty pages to the disk happens in the caller, and
 * where the disk is busy (another process's writeback, a network file
 * system) that call can wait.  The writer only stores its new end and, once
 * a step, signals; it never waits on the disk for this.
 */
#ifndef SPMTAP_COLLECTOR_WRITEBEHIND_H
#define SPMTAP_COLLECTOR_WRITEBEHIND_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define WB_STEP (8u << 20)
#define WB_LAG (64u << 20)
#define WB_SLICE (1u << 20) /* bytes per fadvise call (writebehind.c says why) */
#define WB_WRITE_MAX (256u << 10) /* bytes per write call (wb_write) */

/* Zero-initialised (calloc, = { 0 }) is ready; wb_stop before the descriptor is closed. */
struct wbehind {
	uint64_t end;           /* the writer's: bytes written so far (the file's end) */
	uint64_t signalled;     /* the writer's: the end it last woke the thread for */
	int fd;
	bool started, failed;   /* the thread runs; it could not be started (no advice then) */
	pthread_t th;
	pthread_mutex_t mu;     /* initialised when started */
	pthread_cond_t cv;
	uint64_t want;          /* under mu: the end the thread should drop behind */
	bool stop;              /* under mu */
	/* the thread's, read after wb_stop */
	uint64_t dropped;       /* pages before this were asked to go; a multiple of WB_STEP */
	uint64_t calls;         /* fadvise calls made */
	atomic_bool off;        /* the descriptor refused (a pipe, a terminal): no more tries */
};

/* n more bytes were appended to fd; what is far enough behind is dropped on the helper's thread. */
void wb_wrote(struct wbehind *wb, int fd, uint64_t n);
/*
 * write(2) of at most WB_WRITE_MAX of the n bytes, counted with wb_wrote when
 * it wrote any; the caller loops as for any short write.  A 1 MiB write into
 * the page cache held the CPU for over 100 us in the kernel, and on a kernel
 * without preemption (PREEMPT_NONE) a woken SCHED_FIFO sensor sampler waits
 * for the call to return (docs/power.md, "Timing").
 */
ssize_t wb_write(struct wbehind *wb, int fd, const void *p, size_t n);
/* Ends the thread, if one was started, after a last turn for the writer's latest end; a later write starts another. */
void wb_stop(struct wbehind *wb);

#endif
