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

#include <stddef.h>
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

/*
 * One period of the steps: a(t) is periodic from t = 0 with `period`; the
 * stretch from 0 is named *first, the one from `on` *second.  Returns 2,
 * or 0 (outputs unset but period) for a workload without steps.
 */
int emu_workload_steps(const struct emu_workload *w, uint64_t *period, uint64_t *on, const char **first,
		       const char **second);

/*
 * The schedule as a process reads it from <tree>/emu-schedule (the shim
 * serves it from that process's own SPMTAP_EMU_WORKLOAD, so that programs
 * which link no emulator code can have the ground truth; docs/emulator.md):
 *
 *   spmtap-emu-schedule 1
 *   workload SPEC
 *   period_ns P            (0: no steps)   | error REASON  (a bad SPEC)
 *   step 0 NAME
 *   step ON NAME
 *
 * Written into buf (NUL-terminated); returns its length.
 */
size_t emu_schedule_render(const char *spec, char *buf, size_t len);

#endif
