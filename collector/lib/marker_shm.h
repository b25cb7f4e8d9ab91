/* SPDX-License-Identifier: MIT */
/*
 * The shared memory between an application's marker calls
 * (spmtap_region_begin/end, collector/lib/markers.c) and the recording that
 * reads them (collector/lib/marker_reader.c).  docs/formats/markers.md.
 *
 * `spmtap record -- app` makes a memfd of this layout and hands the app its
 * descriptor in SPMTAP_MARKERS_FD.  Each thread of the app (and of its
 * children, which inherit both) claims one slot on its first call, with one
 * atomic add, and owns it from then on: a single-producer ring of fixed-size
 * events whose head only that thread advances and whose tail only the
 * reader advances.  So the hot path is a time stamp, a 64-byte store and a
 * release store of the head: no lock, no system call.
 *
 * The time stamp is the clock the recorder chose in the header: CLOCK_BOOTTIME
 * ns from clock_gettime, or, where the TSC is constant and non-stop (x86-64),
 * the raw TSC, which costs a few ns instead of a vDSO call; the recorder then
 * maps TSC to BOOTTIME from (tsc, boottime) pairs it samples itself
 * (marker_tsc.h) and states the error bound.
 * A full ring drops the event and counts it in the slot; a thread beyond
 * the last slot counts itself in the header.  Nothing is dropped silently.
 */
#ifndef SPMTAP_COLLECTOR_MARKER_SHM_H
#define SPMTAP_COLLECTOR_MARKER_SHM_H

#include <stdint.h>

#define MK_MAGIC 0x314B524D54504Dull /* "MPTMRK1" */
#define MK_VERSION 2u /* 2: the header's clock; events may carry TSC */
#define MK_SLOTS 256u
#define MK_EVENTS 4096u  /* per slot, a power of two */
#define MK_NAME 44u      /* bytes of a name kept, NUL included */
#define MK_ENV_FD "SPMTAP_MARKERS_FD"

enum mk_kind { MK_BEGIN = 1, MK_END = 2 };
/* What an event's t holds, for the whole channel: set by the recorder before the magic. */
enum mk_clock { MK_CLOCK_BOOTTIME = 0, MK_CLOCK_TSC = 1 };

struct mk_event {
	int64_t t;          /* CLOCK_BOOTTIME ns, or TSC ticks (the header's clock) */
	uint32_t kind;      /* enum mk_kind */
	uint32_t depth;     /* nesting depth of the region this event opens or closes, from 0 */
	uint32_t seq;       /* per-slot event number: a gap shows drops to the reader */
	char name[MK_NAME]; /* begin: the region's name, cut to MK_NAME - 1 bytes */
};
_Static_assert(sizeof(struct mk_event) == 64, "one cache line per event");

struct mk_slot {
	uint32_t claimed;   /* 0 free, 1 taken (set once by its thread) */
	uint32_t pid, tid;  /* the owner */
	uint32_t pad0;
	uint64_t head;      /* events written, advanced by the owner (release) */
	uint64_t dropped;   /* events the owner could not write: the ring was full */
	uint8_t pad1[32];
	uint64_t tail;      /* events consumed, advanced by the reader (release) */
	uint8_t pad2[56];
	struct mk_event ev[MK_EVENTS];
};

struct mk_header {
	uint64_t magic;
	uint32_t version, nslots, nevents, event_bytes;
	uint32_t next_slot;       /* slots handed out so far (may exceed nslots) */
	uint32_t clock;           /* enum mk_clock: what the writers stamp events with */
	uint64_t threads_refused; /* threads that found no free slot: their markers are lost, counted */
	uint8_t pad1[24];
	struct mk_slot slot[MK_SLOTS];
};

#endif
