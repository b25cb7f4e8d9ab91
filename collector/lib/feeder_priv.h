/* SPDX-License-Identifier: MIT */
/* The feeder's state, shared by feeder.c and its spill queue (spill.c); nobody else includes it. */
#ifndef SPMTAP_COLLECTOR_FEEDER_PRIV_H
#define SPMTAP_COLLECTOR_FEEDER_PRIV_H

#include <pthread.h>
#include <stdatomic.h>

#include "collector/lib/feeder.h"
#include "collector/lib/spsc.h"

struct feeder {
	struct spm_stream *s;
	struct spm_stream_shape shape; /* copied: the stream goes away before the consumer does */
	uint32_t size;
	/*
	 * The pool: base buffers from the start; the journal thread adds more,
	 * up to maxbuf, while retired buffers wait in memory (spill.c).
	 */
	uint32_t base, maxbuf;
	_Atomic uint32_t nbuf;
	struct feeder_buf **bufs; /* maxbuf slots */
	struct spsc retired, free;
	struct spill *sp;         /* NULL: no spill queue */
	pthread_t thread;
	bool started;

	pthread_mutex_t ctl_lock;
	pthread_cond_t ctl_cond;
	atomic_bool stop;

	int64_t stall_at_ms, stall_ms; /* < 0: no stall */
	/* Of the last buffer handed over, kept here because the consumer owns it now. */
	uint32_t last_max_part, last_bytes;
	bool last_loss;
	struct feeder_stats st;        /* written by the thread; read after join */
	struct feeder_buf *first;      /* armed by feeder_start, before the thread runs */
};

/*
 * Fault in the pages of n bytes at p: one store per page, not a memset (the
 * kernel zeroes a new page anyway; a sanitizer instruments a memset byte for
 * byte, which made a 24 MiB pool cost a TSan run seconds at the start).
 */
void feeder_touch(void *p, size_t n);
/* One more buffer in the pool, on the free list; 0, or -ENOSPC at maxbuf, -ENOMEM. */
int feeder_grow(struct feeder *f);

/* ---- the spill queue (spill.c) ---- */
struct spill;
int spill_start(struct feeder *f, const struct feeder_spill *o, char *err, size_t errlen);
int spill_next(struct feeder *f, struct feeder_buf **b, int timeout_ms);
void spill_put(struct feeder *f, struct feeder_buf *b);
/* A cold buffer of the pool (its pages given back), or NULL; touch: fault its pages in first. */
struct feeder_buf *spill_take_cold(struct feeder *f, bool touch);
void spill_backlog(struct feeder *f, struct feeder_backlog *b);
void spill_abandon(struct feeder *f);
/* After the feeder thread ended: wait for the journal thread, fill st's spill fields, free. */
void spill_finish(struct feeder *f, struct feeder_stats *st);

#endif
