/* SPDX-License-Identifier: MIT */
/*
 * The emulated SDMA engine (docs/emulator.md "SDMA engine"): the packets of
 * an SDMA v4.4 user queue (gfx90a), as ROCr 5.2.x's BlitSdmaV4 writes them.
 * queues.c owns the queue (its ring, read/write pointers and doorbell) and
 * calls emu_sdma_service from its CP thread, under emu_p.lock.
 */
#ifndef SPMTAP_EMU_SDMA_H
#define SPMTAP_EMU_SDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One SDMA user queue as the engine sees it. */
struct emu_sdma_q {
	uint32_t gpu_id, queue_id;
	uint64_t ring, ring_size; /* ring base (GPU VA) and size in bytes (a power of two) */
	uint64_t rptr_addr;       /* where the engine writes its read pointer back (bytes, monotonic) */
	uint64_t wptr;            /* the last doorbell value: the producer's write pointer (bytes, monotonic) */
	uint64_t busy_until_ns;   /* CLOCK_MONOTONIC_RAW end of the last copy/fill's modelled time */
	uint64_t poll_at;         /* ring byte index of the POLL_REGMEM being retried (polls counts its tries) */
	uint32_t polls;           /* failed tries of that packet so far (its retry_count bounds them) */
};

struct emu_sdma_result {
	uint64_t executed; /* packets completed in this call */
	bool waiting;      /* stopped at a POLL_REGMEM whose condition is not met yet */
	bool busy;         /* stopped because the last copy's modelled time has not passed yet */
	bool error;        /* stopped at a packet it cannot run: err names it, err_at is its ring byte index */
	uint64_t err_at;
	char err[200];
};

/* Runs the queue's packets from its read pointer up to wptr.  Under emu_p.lock. */
void emu_sdma_service(struct emu_sdma_q *q, struct emu_sdma_result *r);

#endif
