/* SPDX-License-Identifier: MIT */
/*
 * The emulated SPM device in a process of its own (docs/emulator.md "The
 * device process").  On real hardware the RLC writes the ring and the
 * kernel's worker copies it into the armed buffer while the collector does
 * something else; inline, the emulator did both inside the collector's
 * ioctl, so every cost of the device was billed to the collector.
 *
 * By default (SPMTAP_EMU_DEVICE unset or "process") ACQUIRE starts one device
 * process per GPU's SPM session (posix_spawn of spmtap-emu-device, which
 * runs spmtap_emu_device_main of this same shim).  It owns the whole engine
 * of spm_engine.c: it advances production to real time on its own clock
 * tick, does the worker's copies into the caller's armed buffer with
 * process_vm_writev, and writes the truth.  The caller keeps the SPM lock
 * and a thin struct emu_spm whose public calls (spm_engine.h) become
 * requests in a shared page: plain data under a process-shared robust
 * mutex.  The device dies with its parent (PR_SET_PDEATHSIG plus getppid).
 *
 * SPMTAP_EMU_DEVICE=inline keeps the lazy engine inside the caller.
 *
 * spm_device.c is the owner's side, device_main.c the device's, and
 * device_shm.h the page they share.
 */
#ifndef SPMTAP_EMU_SPM_DEVICE_H
#define SPMTAP_EMU_SPM_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "emu/shim/spm_engine.h"

struct emu_gpu_state;

enum emu_dev_op {
	EMU_DEV_NONE,
	EMU_DEV_ADVANCE, /* a0: now */
	EMU_DEV_PREDICT, /* a0: deadline -> val */
	EMU_DEV_FLUSH,   /* a0: now */
	EMU_DEV_RETIRE,  /* -> rc, bytes, loss */
	EMU_DEV_ARM,     /* a0: dest, a1: size, a2: now */
	EMU_DEV_STOP,
	EMU_DEV_DISCARD,
	EMU_DEV_COMMIT,
	EMU_DEV_TRUTH,
	EMU_DEV_ROTATE, /* fl_short, then retire, arm a0/a1 at a2 (stop if a0 is 0), commit -> rc, bytes, loss */
	EMU_DEV_QUIT,
};

/* SPMTAP_EMU_DEVICE: the device process unless it says "inline". */
bool emu_dev_wanted(void);

/*
 * Start the device process for a new SPM session of gpu_id and wait until
 * it is ready.  The returned engine is a thin one (s->dev set) whose calls
 * go to the device.  NULL with the reason in err: the caller falls back to
 * the inline engine.
 */
struct emu_spm *emu_dev_spawn(enum emu_gen gen, uint32_t num_xcc, uint32_t gpu_id, uint64_t rate,
			      uint64_t ring_bytes, const struct emu_spm_inj *inj, int ninj,
			      struct emu_gpu_state *gs, char *err, size_t errlen);

/* One request; results land in the thin engine.  0, or EIO when the device is gone. */
int emu_dev_call(struct emu_spm *s, enum emu_dev_op op, uint64_t a0, uint64_t a1, uint64_t a2);

/* The flush of a timeout-0 SET_DEST_BUF: the device runs the worker, this thread copies from the shared ring. */
void emu_dev_flush(struct emu_spm *s, uint64_t now);
/* See emu_spm_hold. */
void emu_dev_hold(struct emu_spm *s, bool on);

/* Ends the device (QUIT), reaps it and unmaps the shared page; s itself is the caller's to free. */
void emu_dev_close(struct emu_spm *s);

/* The device's entry point (spmtap-emu-device looks it up in the preloaded shim). */
int spmtap_emu_device_main(int argc, char **argv);

/* sample_truth.c: the pid the per-sample truth names (the device writes it for its parent). */
void emu_struth_set_pid(pid_t pid);

#endif
