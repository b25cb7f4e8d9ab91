/* SPDX-License-Identifier: MIT */
/*
 * Bounded queue of pointers, the one queue of the recorder.  Between the
 * feeder and its consumer traffic is one item per retired buffer (a few per
 * 10 ms); between a session's producers and its writer thread one item per
 * decoded chunk.  A mutex and two condition variables cost nothing at these
 * rates, keep waiting with a timeout simple, and make several producers safe
 * (the session's decode threads and samplers share one).  Nothing is ever
 * dropped silently: spsc_push on a full queue fails and the caller counts
 * why (the feeder); spsc_push_wait blocks until there is room, which is the
 * session's back-pressure on its producers (docs/architecture.md).
 */
#ifndef SPMTAP_COLLECTOR_SPSC_H
#define SPMTAP_COLLECTOR_SPSC_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct spsc {
	pthread_mutex_t lock;
	pthread_cond_t cond;  /* an item or close: for the consumer */
	pthread_cond_t room;  /* a free slot or close: for spsc_push_wait */
	void **slot;
	uint32_t cap, head, count;
	bool closed;          /* producer is done: pop returns -ENODATA once empty */
	uint64_t pushed, full; /* full = pushes refused because the queue was full */
	uint64_t blocked;      /* spsc_push_wait calls that had to wait for room */
};

int spsc_init(struct spsc *q, uint32_t cap);
void spsc_destroy(struct spsc *q);
/* 0, or -ENOSPC when full, -EPIPE after close. */
int spsc_push(struct spsc *q, void *item);
/* Wait while full; 0, or -EPIPE after close (the item was not taken). */
int spsc_push_wait(struct spsc *q, void *item);
/*
 * timeout_ms < 0 waits forever, 0 does not wait.  0 with *item set, -EAGAIN
 * on timeout, -ENODATA when closed and empty.
 */
int spsc_pop(struct spsc *q, void **item, int timeout_ms);
void spsc_close(struct spsc *q);
uint32_t spsc_count(struct spsc *q);

#endif
