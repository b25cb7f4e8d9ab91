/* SPDX-License-Identifier: MIT */
/*
 * The recording's side of the marker channel (marker_shm.h): it makes the
 * shared memory an application under `spmtap record -- app` writes its
 * spmtap_region_begin/end events into, drains every thread's ring, pairs
 * begins with ends per thread and hands each finished region on.
 * Everything that could not be paired is counted by reason.
 */
#ifndef SPMTAP_COLLECTOR_MARKER_READER_H
#define SPMTAP_COLLECTOR_MARKER_READER_H

#include <stdint.h>
#include <stddef.h>
#include <jansson.h>

struct mk_reader;

struct mk_region {
	int64_t start_ns, end_ns; /* CLOCK_BOOTTIME */
	const char *name;
	uint32_t pid, tid;
	uint32_t depth;           /* 0 = outermost */
	int unterminated;         /* still open when the recording ended: end_ns is that time */
};

struct mk_stats {
	uint32_t threads;         /* slots claimed */
	uint64_t threads_refused; /* threads beyond the last slot: their markers are lost */
	uint64_t events, regions;
	uint64_t dropped;         /* events a full ring could not take */
	uint64_t unmatched;       /* ends whose begin was lost, begins whose end was lost */
	uint64_t unterminated;    /* regions still open at the end */
	int clock_tsc;            /* events were stamped with the TSC and mapped to BOOTTIME (marker_tsc.h) */
	char clock_why[160];      /* what chose the clock */
	int64_t clock_error_ns;   /* the largest error bound of a mapped time; 0 with clock_gettime stamps */
	uint64_t clock_pairs;     /* (tsc, boottime) pairs sampled */
	double tsc_hz;
};

typedef int (*mk_emit_fn)(const struct mk_region *r, void *user);

/* The shared memory; *fd is the descriptor to hand the application (not close-on-exec). */
int mk_reader_create(struct mk_reader **out, int *fd, char *err, size_t errlen);
/*
 * Drain every ring; emit each region that ended.  Returns the most events
 * one ring held (so a caller can poll again at once when rings run full),
 * or a negative emit return, which stops the drain.
 */
int mk_reader_poll(struct mk_reader *r, mk_emit_fn emit, void *user);
/* A last drain, then every region still open is emitted as ending at end_ns. */
int mk_reader_finish(struct mk_reader *r, int64_t end_ns, mk_emit_fn emit, void *user);
void mk_reader_stats(const struct mk_reader *r, struct mk_stats *st);
/* The metadata's `markers` note (docs/markers.md): the counters above and the clock. */
json_t *mk_reader_json(const struct mk_reader *r);
void mk_reader_free(struct mk_reader *r);

#endif
