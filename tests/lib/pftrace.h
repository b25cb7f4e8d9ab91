/* SPDX-License-Identifier: MIT */
/*
 * Reading spmtap's Perfetto traces back as trace_processor does
 * (docs/formats/perfetto.md): each packet's time and track from its own
 * fields or its sequence's incremental state (TracePacketDefaults, the
 * incremental clock of a ClockSnapshot), and per counter track the
 * samples, their values and times.  Shared by test_write_perfetto and the
 * end-to-end suites.
 */
#ifndef SPMTAP_TESTS_PFTRACE_H
#define SPMTAP_TESTS_PFTRACE_H

#include <stddef.h>
#include <stdint.h>

#include "collector/proto/perfetto_trace.pb-c.h"

#define PFT_MAX_SEQS 4096

struct pft_seq {
	uint32_t seq;
	int cleared;
	uint32_t def_clock; /* 0: none */
	uint64_t def_track; /* 0: none */
	uint64_t inc_ns;    /* the incremental clock 64, in BOOTTIME ns */
	int has_inc;
};

/* Every sequence seen so far; zero it (= {0}) to start a file. */
struct pft_state {
	struct pft_seq seqs[PFT_MAX_SEQS];
	size_t nseqs;
};

/*
 * The BOOTTIME ns and the track of packet p (0 where it has none), updating
 * its sequence's state.  Returns 0, or -1 where the packet breaks a rule: no
 * sequence id, incremental state needed before it was cleared, a clock it
 * does not define, a clock 64 that is not incremental or does not start
 * equal to BOOTTIME (spmtap's convention).
 */
int pft_resolve(struct pft_state *st, const Perfetto__Protos__TracePacket *p, uint64_t *ts,
		uint64_t *track);

struct pft_counter {
	uint64_t uuid;
	char name[160];
	uint64_t n;          /* samples */
	double sum;          /* of their values */
	uint64_t sum_ts;     /* of their times (mod 2^64) */
	uint64_t first_ts, last_ts;
};

/*
 * Every counter track of the trace at path with its samples.  Returns the
 * number of tracks (at most max), or -1 if the file does not parse or a
 * packet breaks a rule of pft_resolve.
 */
int pft_counters(const char *path, struct pft_counter *out, size_t max);

#endif
