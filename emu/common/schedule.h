/* SPDX-License-Identifier: MIT */
/*
 * The emulated workload's schedule as phases: the ground truth of when the
 * emulated GPU was loaded and when idle, for tests and worked examples
 * (`spmtap record --phases emulator`).  Derived from a(t) itself
 * (workload.h), so it cannot disagree with what the counters and sensors
 * saw.
 */
#ifndef SPMTAP_EMU_SCHEDULE_H
#define SPMTAP_EMU_SCHEDULE_H

#include <stdint.h>

#include "emu/common/workload.h"

/*
 * For a square or bursts workload, call fn for every constant stretch that
 * overlaps [t0_ns, t1_ns) (CLOCK_MONOTONIC_RAW, clipped to it), in time
 * order, with "load" for the higher level and "idle" for the lower.  Other
 * workloads have no steps: returns 0 without a call.  Returns the number of
 * stretches, or the first nonzero fn return.
 */
typedef int (*emu_stretch_fn)(uint64_t start_ns, uint64_t end_ns, const char *name, void *user);
int emu_workload_schedule(const struct emu_workload *w, uint64_t t0_ns, uint64_t t1_ns, emu_stretch_fn fn,
			  void *user);

#endif
