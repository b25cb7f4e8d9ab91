/* SPDX-License-Identifier: MIT */
/*
 * The emulated kernel SPM state of one GPU held by this process: one ring
 * per XCC, the armed user buffer (gen B: one region per XCC) and the copy
 * policy of generation A or B (SPM.md sections 3 and 4).
 *
 * The emulated RLC produces lines in periods (spm_source.h): the pattern at
 * SPMTAP_EMU_RATE from the streaming start, or whole samples at the
 * programmed interval from a START_COUNTING.
 * The simulation is advanced to "now" (by the device process's tick and
 * each ioctl, or inline by the ioctls only) in generation-time order,
 * applying exactly what the kernel's worker (gen A) or polling kthread
 * (gen B) would have done as each line arrived: line by line where
 * something happens at a line, in one step over runs where nothing does.  Bytes are synthesised by the source only when they
 * are written to user memory.
 */
#ifndef SPMTAP_EMU_SPM_ENGINE_H
#define SPMTAP_EMU_SPM_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "emu/common/emu.h"
#include "emu/shim/spm_source.h"

#define EMU_SPM_MAX_INJ 16
#define EMU_SPM_DEFAULT_RING 4193248u /* gfx9 data area: 4 MiB - 0x400 reserve - 0x20 header */
#define EMU_SPM_DEFAULT_RATE 8192u    /* bytes per ms per XCC */

/* Ground truth, in bytes, for the truth file; produced = copied + all the rest. */
struct emu_spm_counts {
	uint64_t produced, copied;
	uint64_t lost_overflow, lost_no_buffer, lost_injected, lost_efault;
	uint64_t discarded_stop, discarded_release;
	uint64_t lost_late; /* of lost_overflow: skipped by a device behind real time (emu_spm_advance_late) */
};

struct emu_spm_xcc {
	uint64_t wptr, rptr;     /* ring stream bytes written / consumed, monotonic */
	uint64_t *slot_seq;      /* seq of the line in each ring slot; NULL in a dry run */
	uint64_t next_seq;       /* seq of the next line: index since ACQUIRE */
	uint64_t next_sample;    /* RLC samples of this XCC since ACQUIRE, once the period ends */
	struct emu_spm_period *per; /* every production period since ACQUIRE, in order */
	uint32_t nper, per_cap;
	bool producing;          /* per[nper-1] is generating lines */
	uint64_t period_lines;   /* lines generated in per[nper-1] */
	uint32_t stall_left;     /* lines of a sample the stalled RLC drops (gen B) */
	bool armed, full, loss;  /* the armed buffer (region) */
	uint64_t hdr;            /* gen B: header address of the region */
	uint64_t dest;           /* where the region's data byte 0 goes */
	uint32_t cap, copied;
	uint64_t fill_ns;        /* generation time at which the region filled */
	uint64_t pend_from;      /* copied by the simulation, not yet written: ring bytes */
	uint32_t pend_off, pend_len;
	uint64_t inj_left[EMU_SPM_MAX_INJ]; /* lines still to drop per injection */
	uint64_t log_cursor;     /* entries of the GPU's transition log replayed (gpu_state.h) */
	struct emu_spm_counts c;
};

struct emu_spm_inj {
	uint64_t at_ns;  /* after the first streaming start */
	uint64_t lines;
};

struct emu_spm {
	enum emu_gen gen;
	uint32_t num_xcc;
	uint32_t gpu_id;
	uint64_t epoch;        /* distinguishes acquisitions across a wait */
	int lock_fd;
	uint64_t rate;         /* bytes per ms per XCC */
	uint64_t ring_bytes, ring_lines;
	bool streaming, ever_started;
	/* The GPU's shared state: its RLC transitions are replayed from there, and once any process
	 * has run PM4 on the GPU the RLC behaves like hardware (silent until a PM4 START) instead of
	 * streaming the transport test pattern.  NULL: pattern only. */
	struct emu_gpu_state *gs;
	uint64_t first_start_ns; /* CLOCK_MONOTONIC_RAW */
	struct emu_spm_inj inj[EMU_SPM_MAX_INJ];
	int ninj;
	struct emu_spm_source_ctx src_ctx;
	/*
	 * Process mode (spm_device.h).  Caller side: dev is set, every public
	 * call below is a request to the device, and x[k].armed/full/fill_ns and
	 * streaming mirror the device's after each one.  Device side: user_pid is
	 * the process whose buffers the worker writes (0: this one).
	 */
	struct emu_dev *dev;
	int user_pid;
	bool in_device;
	uint64_t cpu_ns;           /* inline: CPU the caller's threads spent in this engine */
	uint32_t layout_id_base;   /* device: added to its layout ids, unique per owner (sample truth) */
	int dev_rc;                /* the last request's results */
	uint32_t dev_bytes, dev_loss;
	uint64_t dev_val;
	struct emu_spm_xcc x[];
};

struct emu_spm *emu_spm_new(enum emu_gen gen, uint32_t num_xcc, uint32_t gpu_id, uint64_t rate,
			    uint64_t ring_bytes, const struct emu_spm_inj *inj, int ninj);
void emu_spm_free(struct emu_spm *s);

/* From now on, replay the RLC transitions of gs that happen after this call. */
void emu_spm_attach(struct emu_spm *s, struct emu_gpu_state *gs);
/*
 * Produce (and apply the kernel's copies to) every line that exists at
 * `now`, replaying on the way the RLC transitions any process's CP made.
 * Takes the GPU's shared lock: never call it with that lock held.
 */
void emu_spm_advance(struct emu_spm *s, uint64_t now);
/*
 * The device process's advance when it is behind real time (device_main.c):
 * the whole samples made before `skip_to` are lost without being made
 * (lost_overflow and lost_late, the loss flag, per-sample truth records
 * flagged EMU_UNIT_LATE with zero values, none at all when `untold`), as a
 * stalled RLC would lose them; the rest up to `now` as emu_spm_advance.  A
 * sample already begun is finished first, so samples stay whole.
 */
void emu_spm_advance_late(struct emu_spm *s, uint64_t now, uint64_t skip_to, bool untold);
bool emu_spm_armed(const struct emu_spm *s);
/* Gen A: the buffer is full; gen B: any region is full. */
bool emu_spm_prev_full(const struct emu_spm *s);
/* When the armed buffer filled (gen B: the first region), or UINT64_MAX if none is full. */
uint64_t emu_spm_fill_time(const struct emu_spm *s);
/* When the armed buffer would fill if nothing intervenes, or UINT64_MAX if not by deadline. */
uint64_t emu_spm_predict_fill(const struct emu_spm *s, uint64_t deadline);
/*
 * The kernel's SPM mutex, held for one SET_DEST_BUF except while it waits:
 * the device process's worker does not run meanwhile (no effect inline).
 * Takes effect with the next call.
 */
void emu_spm_hold(struct emu_spm *s, bool on);
/* A synchronous run of the copy worker on every XCC (timeout 0). */
void emu_spm_flush(struct emu_spm *s, uint64_t now);
/* Report and forget the armed buffer; gen B writes headers.  0 or EFAULT. */
int emu_spm_retire(struct emu_spm *s, uint32_t *bytes, uint32_t *loss);
void emu_spm_arm(struct emu_spm *s, uint64_t dest, uint32_t size, uint64_t now);
/*
 * The end of a SET_DEST_BUF in one step: retire, then arm dest (or stop
 * when dest is 0), then write what the worker copied.  Returns retire's.
 */
int emu_spm_rotate(struct emu_spm *s, uint64_t dest, uint32_t size, uint64_t now, uint32_t *bytes, uint32_t *loss);
void emu_spm_stop(struct emu_spm *s);
/* RELEASE: ring and unreported buffer bytes are gone. */
void emu_spm_discard_all(struct emu_spm *s);
/* Write what the simulation copied into user memory. */
void emu_spm_commit(struct emu_spm *s);

/*
 * The device process's side of a flush the caller performs (spm_device.h):
 * the bytes the worker's last copy of XCC k moved, synthesised into their
 * slots of `ring` (ring_bytes per XCC), handed over instead of written.
 * Returns their count; *from is their ring stream offset, *dest where they
 * go.  What the caller could not write comes back through short_copy.
 */
uint32_t emu_spm_take_pending(struct emu_spm *s, uint32_t k, uint8_t *ring, uint64_t *from, uint64_t *dest);
void emu_spm_short_copy(struct emu_spm *s, uint32_t k, uint32_t short_bytes);
/* copy_to_user into this process: bytes written before a fault. */
size_t emu_spm_user_write(uint64_t dst, const void *src, size_t len);

/* The layout of XCC k's last RLC period, or NULL. */
const struct emu_rlc_layout *emu_spm_last_layout(const struct emu_spm *s, uint32_t k);

/* truth.c */
void emu_truth_release(const struct emu_spm *s);

#endif
