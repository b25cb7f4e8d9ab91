/* SPDX-License-Identifier: MIT */
/*
 * TSC to CLOCK_BOOTTIME for marker events (marker_shm.h, docs/markers.md).
 *
 * An application under a recording stamps its markers with rdtsc (a few ns)
 * instead of clock_gettime (tens of ns) where the TSC is constant and
 * non-stop.  The recorder maps those ticks to BOOTTIME here, as the GPU
 * timebase maps GPU ticks (timebase.c): it samples (tsc, boottime) pairs
 * itself, each the narrowest of a burst of reads bracketed by two clock
 * reads (a preempted read shows as a wide bracket), and maps a tick value
 * by the straight line through the two pairs around it.  The error bound
 * of a mapped value is the larger half-bracket of those two pairs (a line
 * between two points each known within e stays within the larger e),
 * widened by the slope's uncertainty where a value lies outside every pair.
 */
#ifndef SPMTAP_COLLECTOR_MARKER_TSC_H
#define SPMTAP_COLLECTOR_MARKER_TSC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mk_tsc;

/*
 * Whether markers may be stamped with the TSC on this machine: x86-64,
 * /proc/cpuinfo's constant_tsc and nonstop_tsc (or CPUID 0x80000007 EDX bit 8,
 * the invariant TSC), and the kernel still offering the tsc clocksource (it
 * withdraws it when it finds the TSC unsynchronised between CPUs).
 * SPMTAP_MARKER_CLOCK=boottime forces the clock call, =tsc the TSC (x86-64).
 * why: one line saying what decided, for the metadata.
 */
bool mk_tsc_usable(char *why, size_t whylen);

int mk_tsc_create(struct mk_tsc **out);
void mk_tsc_free(struct mk_tsc *m);
/* One pair now (the narrowest of a burst); the first one at create. */
void mk_tsc_sample(struct mk_tsc *m);
/* BOOTTIME ns of a TSC value; *err_ns its bound.  The largest bound handed out is kept. */
int64_t mk_tsc_to_ns(struct mk_tsc *m, uint64_t tsc, int64_t *err_ns);

struct mk_tsc_stats {
	uint64_t pairs;         /* pairs sampled */
	uint64_t mapped;        /* values mapped */
	int64_t max_err_ns;     /* the largest bound of a mapped value */
	int64_t max_pair_err_ns; /* the widest half-bracket among the pairs kept */
	double hz;              /* TSC rate over all the pairs */
};
void mk_tsc_stats(const struct mk_tsc *m, struct mk_tsc_stats *st);

/* The TSC now (x86-64; 0 elsewhere), ordered after the loads before it. */
uint64_t mk_tsc_read(void);

#endif
