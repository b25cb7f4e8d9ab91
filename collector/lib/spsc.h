/* SPDX-License-Identifier: MIT */
/*
 * Bounded single-producer / single-consumer queue of pointers.  Between the
 * feeder and its consumer traffic is one item per retired buffer (a few per
 * 10 ms), so a mutex and a condition variable cost nothing and keep waiting
 * with a timeout simple.  Nothing is ever dropped silently: push on a full
 * queue fails and the caller counts why.
 */
#ifndef SPMTAP_COLLECTOR_SPSC_H
#define SPMTAP_COLLECTOR_SPSC_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct spsc {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	void **slot;
	uint32_t cap, head, count;
	bool closed;          /* producer is done: pop returns -ENODATA once empty */
	uint64_t pushed, full; /* full = pushes refused because the queue was full */
};

int spsc_init(struct spsc *q, uint32_t cap);
void spsc_destroy(struct spsc *q);
/* 0, or -ENOSPC when full, -EPIPE after close. */
int spsc_push(struct spsc *q, void *item);
/*
 * timeout_ms < 0 waits forever, 0 does not wait.  0 with *item set, -EAGAIN
 * on timeout, -ENODATA when closed and empty.
 */
int spsc_pop(struct spsc *q, void **item, int timeout_ms);
void spsc_close(struct spsc *q);
uint32_t spsc_count(struct spsc *q);

#endif
