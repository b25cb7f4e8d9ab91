/* SPDX-License-Identifier: MIT */
/*
 * What a recording cost the host, per stage: CPU time from each thread's
 * own clock (CLOCK_THREAD_CPUTIME_ID), the process's CPU over all its
 * threads, both per GB of SPM bytes and as a multiple of one memcpy of the
 * same bytes timed in this process at the end (so it does not disturb the
 * recording).  The metadata's "cost" object (docs/formats/meta-cost.md) and the
 * summary's cost line come from here.
 */
#ifndef SPMTAP_COLLECTOR_COST_H
#define SPMTAP_COLLECTOR_COST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define COST_MAX_STAGES 24
/*
 * Below this many SPM bytes, cost_line says that fixed costs (thread starts,
 * the journal's spare buffers, first page faults: tens of ms) weigh on the
 * per-GB figures: 30 ms is 0.12 s/GB at 256 MB, against bounds of 0.5-0.7.
 */
#define COST_FIXED_BYTES (256ull << 20)
/* memcpy reference: blocks of this size, at most COST_MEMCPY_BLOCKS copies timed. */
#define COST_MEMCPY_BLOCK (64u << 20)
#define COST_MEMCPY_BLOCKS 4u

struct cost_stage {
	char name[40];   /* "feeder", "decode", "writer:csv", "journal", "sensors", "markers", "clock" */
	uint64_t cpu_ns; /* summed over GPUs where a stage has one thread per GPU */
};

struct cost {
	uint64_t bytes;          /* SPM bytes retired, all GPUs */
	uint64_t process_cpu_ns; /* CLOCK_PROCESS_CPUTIME_ID: every thread of the recorder */
	double memcpy_s;         /* one memcpy of `bytes` (0: not measured) */
	struct cost_stage st[COST_MAX_STAGES];
	size_t n;
	int done;                /* cost_finish ran */
};

/* CPU time of the calling thread / of the whole process, ns (0 if the clock fails). */
uint64_t cost_thread_cpu_ns(void);
uint64_t cost_process_cpu_ns(void);

/* Add ns to the stage `name` (a new entry the first time; at most COST_MAX_STAGES). */
void cost_add(struct cost *c, const char *name, uint64_t ns);

/*
 * Seconds one memcpy of `bytes` takes here: blocks of COST_MEMCPY_BLOCK
 * (touched first, so page faults are not timed) copied
 * min(ceil(bytes / block), COST_MEMCPY_BLOCKS) times, the rate scaled to
 * `bytes`.  0 when bytes is 0 or the buffers cannot be had.
 */
double cost_memcpy_s(uint64_t bytes);

/* The process CPU now and the memcpy reference; the stages are already added. */
void cost_finish(struct cost *c);

/* The metadata's "cost" object (docs/formats/meta-cost.md); NULL on no memory. */
json_t *cost_json(const struct cost *c);

/* CPU seconds per GB of c->bytes; -1 when no bytes. */
double cost_per_gb(const struct cost *c, uint64_t ns);

/*
 * The summary's line: "0.41 s CPU per GB (feeder 0.12, decode 0.09,
 * csv 0.18; memcpy 0.10)"; "" when no SPM byte was recorded.
 */
void cost_line(const struct cost *c, char *buf, size_t len);

/*
 * A stopped session's cost (session_meta.c; NULL before session_stop): the
 * same numbers as its metadata's "cost".
 */
struct session;
const struct cost *session_cost(struct session *S);

#endif
