/* SPDX-License-Identifier: MIT */
/* Page-cache write-behind for outputs written once (writebehind.h says why). */
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "collector/lib/writebehind.h"

/* One turn: the steps from the last mark (one back again) up to end - WB_LAG. */
static void drop(struct wbehind *wb, uint64_t end)
{
	if (atomic_load(&wb->off) || end < WB_LAG + WB_STEP)
		return;
	uint64_t hi = (end - WB_LAG) / WB_STEP * WB_STEP;
	if (hi < wb->dropped + WB_STEP)
		return;
	/* Pages that were dirty at the last turn have had a step to reach the disk. */
	uint64_t lo = wb->dropped >= WB_STEP ? wb->dropped - WB_STEP : 0;
	/*
	 * A slice per call: one call over the whole range ran for over 300 us
	 * in the kernel, and a kernel built without preemption (PREEMPT_NONE,
	 * common on servers) lets a woken sensor sampler (SCHED_FIFO) in only
	 * when the call returns (docs/power.md, "Timing").
	 */
	for (uint64_t a = lo; a < hi; a += WB_SLICE) {
		uint64_t n = hi - a < WB_SLICE ? hi - a : WB_SLICE;
		wb->calls++;
		if (posix_fadvise(wb->fd, (off_t)a, (off_t)n, POSIX_FADV_DONTNEED) != 0) {
			atomic_store(&wb->off, true); /* ESPIPE on a pipe: advice only, never an error of the output */
			break;
		}
	}
	wb->dropped = hi;
}

static void *run(void *arg)
{
	struct wbehind *wb = arg;
	pthread_setname_np(pthread_self(), "spmtap-wbehind"); /* top -H, perf --sort comm */
	pthread_mutex_lock(&wb->mu);
	for (;;) {
		while (!wb->stop && wb->want < wb->dropped + WB_LAG + WB_STEP)
			pthread_cond_wait(&wb->cv, &wb->mu);
		bool last = wb->stop;
		uint64_t end = wb->want;
		pthread_mutex_unlock(&wb->mu);
		drop(wb, end); /* on a stop too: the last end the writer gave */
		pthread_mutex_lock(&wb->mu);
		if (last || atomic_load(&wb->off))
			break;
	}
	pthread_mutex_unlock(&wb->mu);
	return NULL;
}

static bool start(struct wbehind *wb, int fd)
{
	if (wb->failed)
		return false;
	wb->fd = fd;
	wb->stop = false;
	if (pthread_mutex_init(&wb->mu, NULL) != 0) {
		wb->failed = true;
		return false;
	}
	if (pthread_cond_init(&wb->cv, NULL) != 0 || pthread_create(&wb->th, NULL, run, wb) != 0) {
		pthread_mutex_destroy(&wb->mu);
		wb->failed = true;
		return false;
	}
	wb->started = true;
	return true;
}

void wb_wrote(struct wbehind *wb, int fd, uint64_t n)
{
	uint64_t end = wb->end += n;
	/* A wake-up per step at most: the common call is a few compares, no lock. */
	if (end < wb->signalled + WB_STEP || end < WB_LAG + WB_STEP || atomic_load(&wb->off))
		return;
	if (!wb->started && !start(wb, fd))
		return;
	wb->signalled = end;
	pthread_mutex_lock(&wb->mu);
	wb->want = end;
	pthread_cond_signal(&wb->cv);
	pthread_mutex_unlock(&wb->mu);
}

ssize_t wb_write(struct wbehind *wb, int fd, const void *p, size_t n)
{
	ssize_t k = write(fd, p, n < WB_WRITE_MAX ? n : WB_WRITE_MAX);
	if (k > 0)
		wb_wrote(wb, fd, (uint64_t)k);
	return k;
}

void wb_stop(struct wbehind *wb)
{
	if (!wb->started)
		return;
	pthread_mutex_lock(&wb->mu);
	wb->want = wb->end;
	wb->stop = true;
	pthread_cond_signal(&wb->cv);
	pthread_mutex_unlock(&wb->mu);
	pthread_join(wb->th, NULL);
	pthread_cond_destroy(&wb->cv);
	pthread_mutex_destroy(&wb->mu);
	wb->started = false;
}
