/* SPDX-License-Identifier: MIT */
/*
 * AQL KERNEL_DISPATCH packets on the emulated CP (docs/emulator.md "Kernel
 * dispatches"; DISPATCH.md 3).  No ISA runs: a kernel takes a modelled time
 * and changes no memory, except ROCr 5.2's blit kernels, whose copies and
 * fills are applied (blit.h).
 *
 * One dispatch is in flight per queue: the CP's first look at a packet
 * starts it (start = that moment, end = start + the modelled duration), and
 * later looks complete it once CLOCK_MONOTONIC_RAW has passed the end, so a
 * queue runs its packets in order (the barrier bit holds trivially) while
 * other queues go on: nothing sleeps.
 */
#ifndef SPMTAP_EMU_DISPATCH_H
#define SPMTAP_EMU_DISPATCH_H

#include "emu/shim/shim.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A queue's dispatch in flight. */
struct emu_kslot {
	bool busy;
	uint64_t idx;               /* its packet index */
	uint64_t start_raw, end_raw; /* CLOCK_MONOTONIC_RAW ns */
};

/*
 * Look at the KERNEL_DISPATCH packet `pkt` at index `idx` of queue `qid`:
 * 1 when it has completed (start_ts and end_ts: its GPU ticks, for the
 * completion signal; the slot is free again), 0 while it runs, -1 when it
 * cannot run (msg names the packet's kernel and why).  Under emu_p.lock.
 */
int emu_dispatch_step(struct emu_gpu *g, uint32_t qid, struct emu_kslot *k, const uint8_t *pkt, uint64_t idx,
		      uint64_t *start_ts, uint64_t *end_ts, char *msg, size_t len);

/*
 * The value of kernel `name` in the knob list $env ("name=value,..."; a
 * ".kd" suffix on either side is ignored), or NULL when it has none: the
 * per-kernel knobs SPMTAP_EMU_KERNEL_NS and SPMTAP_EMU_KERNEL_PROFILE.
 */
const char *emu_kernel_knob(const char *env, const char *name);

#endif
