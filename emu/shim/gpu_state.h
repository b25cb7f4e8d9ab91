/* SPDX-License-Identifier: MIT */
/*
 * What every process sees of one emulated GPU: its register file, the
 * history of its RLCs' state changes, and the command processor's
 * execution lock.  On hardware this state lives in the GPU, so a process
 * that programs counters through a queue and another that streams them
 * through the SPM ioctl meet there.  Here it is a file mapped MAP_SHARED,
 * <tree>/emu-state/gpu-<gpu_id hex>.state, so the key is (emulated
 * machine, gpu_id): processes of one `spmtap --emulate` run (or one test)
 * share it, two runs never do.
 *
 * Lock order: emu_p.lock (per process) first, then the state's lock.  The
 * lock is a robust process-shared mutex: a process killed while its CP
 * executes leaves the GPU usable (the next owner marks it consistent).
 *
 * The transition log.  A PM4 write of CP_PERFMON_CNTL.SPM_PERFMON_STATE
 * appends {time, new state} per XCC; a START_COUNTING also stores the
 * layout its registers described at that instant.  The process that holds
 * SPM (spm_engine.c) replays the log in time order each time it advances
 * its simulation, so production starts and stops at the instant the CP
 * executed the write, whichever process's CP that was.
 *
 * The kernel activity log (kernel_activity.h).  Each dispatch a CP starts
 * appends {start, end, who, activity level}; the SPM owner reads the
 * entries that overlap a sample's time, so counters follow kernels run by
 * any process on this GPU.
 */
#ifndef SPMTAP_EMU_GPU_STATE_H
#define SPMTAP_EMU_GPU_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "emu/shim/regs.h"

#define EMU_GS_MAX_XCC 16
#define EMU_GS_LOG 32  /* transitions kept per XCC */
#define EMU_GS_SLOTS 4 /* START layouts kept per XCC */

struct emu_rlc_layout;

struct emu_gs_entry {
	uint64_t seq;    /* 1-based position in this XCC's log */
	uint64_t t_ns;   /* CLOCK_MONOTONIC_RAW of the write */
	uint32_t state;  /* enum emu_spm_state written */
	uint32_t slot;   /* START: the layout slot */
};

struct emu_gs_xcc {
	uint64_t head;                       /* entries ever appended */
	struct emu_gs_entry e[EMU_GS_LOG];   /* entry seq s at e[(s - 1) % EMU_GS_LOG] */
	uint64_t slot_seq[EMU_GS_SLOTS];     /* the START entry that owns each slot */
	uint64_t starts;
};

/*
 * One dispatch in the kernel activity log.  Entries are appended with
 * start_ns read under the lock, so starts never decrease along the log.
 */
struct emu_gs_kernel {
	uint64_t seq;        /* 1-based: the GPU's dispatch number in this log */
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC_RAW, end = start + modelled duration */
	uint64_t max_end_ns; /* the latest end_ns of this and every earlier entry: where a backward scan stops */
	uint64_t index;      /* its AQL packet index */
	uint32_t pid, queue; /* the process whose CP ran it, its KFD queue id */
	double level;        /* its activity, a fraction of the block's peak */
};

#define EMU_GS_KLOG 2048 /* dispatches kept: the oldest is overwritten */

struct emu_gs_klog {
	uint64_t head;          /* entries ever appended */
	uint64_t first_start_ns; /* of entry 1 */
	uint64_t dropped;       /* entries overwritten while their kernel still ran (their activity lost) */
	struct emu_gs_kernel e[EMU_GS_KLOG]; /* entry seq s at e[(s - 1) % EMU_GS_KLOG] */
};

struct emu_gpu_state {
	uint64_t magic;
	uint32_t version, gpu_id;
	uint32_t num_xcc, num_se, gfx, sclk_mhz;
	uint64_t bytes, regs_off, slots_off, slot_bytes, klog_off;
	pthread_mutex_t lock;
	uint32_t pm4_seen;          /* some process has run PM4 on this GPU */
	uint32_t owner_died;        /* times the lock was recovered from a dead holder */
	uint64_t cp_packets;        /* AQL packets executed by any process's CP */
	struct emu_gs_xcc log[EMU_GS_MAX_XCC];
	/* then: struct emu_xcc_regs x[num_xcc] at regs_off; layout slots at slots_off; struct emu_gs_klog at klog_off */
};

/*
 * The GPU's state, mapped on first use (under emu_p.lock).  Falls back to
 * process-private memory, with a log line, when the tree is not writable.
 * NULL only when out of memory.
 */
struct emu_gpu_state *emu_gs_open(uint32_t gpu_id, enum emu_gfx gfx, uint32_t num_xcc, uint32_t num_se,
				  uint32_t sclk_mhz);
void emu_gs_lock(struct emu_gpu_state *gs);
void emu_gs_unlock(struct emu_gpu_state *gs);
struct emu_xcc_regs *emu_gs_regs(struct emu_gpu_state *gs);
struct emu_gs_klog *emu_gs_klog(struct emu_gpu_state *gs);

/* Under the lock: record a state change of XCC xcc at t_ns (L: the START's layout, else NULL). */
void emu_gs_append(struct emu_gpu_state *gs, uint32_t xcc, uint64_t t_ns, uint32_t state,
		   const struct emu_rlc_layout *L);
/* The log position a new reader starts from (under the lock). */
uint64_t emu_gs_head(const struct emu_gpu_state *gs, uint32_t xcc);
/*
 * Under the lock: the entry after *cursor if it happened at or before
 * `until`; *cursor advances.  For a START, *L is a new layout (the caller
 * puts it).  false when there is none yet.  Entries overwritten before the
 * reader saw them are skipped with a log line.
 */
bool emu_gs_next(struct emu_gpu_state *gs, uint32_t xcc, uint64_t *cursor, uint64_t until,
		 struct emu_gs_entry *out, struct emu_rlc_layout **L);

#endif
