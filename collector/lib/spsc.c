/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "collector/lib/spsc.h"

int spsc_init(struct spsc *q, uint32_t cap)
{
	*q = (struct spsc){ .cap = cap };
	if (cap == 0)
		return -EINVAL;
	q->slot = calloc(cap, sizeof(*q->slot));
	if (!q->slot)
		return -ENOMEM;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	/* Timed waits must not jump when someone sets the wall clock. */
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cond, &ca);
	pthread_cond_init(&q->room, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&q->lock, NULL);
	return 0;
}

void spsc_destroy(struct spsc *q)
{
	if (!q->slot)
		return;
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->cond);
	pthread_cond_destroy(&q->room);
	free(q->slot);
	q->slot = NULL;
}

/* With the lock held and room: the item goes in. */
static void put(struct spsc *q, void *item)
{
	q->slot[(q->head + q->count) % q->cap] = item;
	q->count++;
	q->pushed++;
	pthread_cond_signal(&q->cond);
}

int spsc_push_wait(struct spsc *q, void *item)
{
	pthread_mutex_lock(&q->lock);
	if (q->count == q->cap && !q->closed)
		q->blocked++;
	while (q->count == q->cap && !q->closed)
		pthread_cond_wait(&q->room, &q->lock);
	int rc = q->closed ? -EPIPE : 0;
	if (!rc)
		put(q, item);
	pthread_mutex_unlock(&q->lock);
	return rc;
}

int spsc_push(struct spsc *q, void *item)
{
	int rc = 0;
	pthread_mutex_lock(&q->lock);
	if (q->closed) {
		rc = -EPIPE;
	} else if (q->count == q->cap) {
		q->full++;
		rc = -ENOSPC;
	} else {
		put(q, item);
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

int spsc_pop(struct spsc *q, void **item, int timeout_ms)
{
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	if (timeout_ms > 0) {
		dl.tv_sec += timeout_ms / 1000;
		dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
	}
	int rc = 0;
	pthread_mutex_lock(&q->lock);
	while (q->count == 0 && !q->closed && timeout_ms != 0) {
		int w = timeout_ms < 0 ? pthread_cond_wait(&q->cond, &q->lock)
				       : pthread_cond_timedwait(&q->cond, &q->lock, &dl);
		if (w == ETIMEDOUT)
			break;
	}
	if (q->count) {
		*item = q->slot[q->head];
		q->head = (q->head + 1) % q->cap;
		q->count--;
		pthread_cond_signal(&q->room);
	} else {
		rc = q->closed ? -ENODATA : -EAGAIN;
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

void spsc_close(struct spsc *q)
{
	pthread_mutex_lock(&q->lock);
	q->closed = true;
	pthread_cond_broadcast(&q->cond);
	pthread_cond_broadcast(&q->room);
	pthread_mutex_unlock(&q->lock);
}

uint32_t spsc_count(struct spsc *q)
{
	pthread_mutex_lock(&q->lock);
	uint32_t n = q->count;
	pthread_mutex_unlock(&q->lock);
	return n;
}
