/* SPDX-License-Identifier: MIT */
/*
 * TEST-ONLY register read-back on the emulated /dev/kfd.  Not part of any
 * kernel ABI and not meant for spmtap: the emulator's own tests use it to
 * see what the emulated CP did with their PM4 (docs/emulator.md).
 */
#ifndef SPMTAP_EMU_READBACK_H
#define SPMTAP_EMU_READBACK_H

#include <stdint.h>
#include <sys/ioctl.h>

enum {
	EMU_RB_REG = 0,     /* addr = absolute dword address; se/instance pick a per-SE/per-instance copy */
	EMU_RB_GLOBAL_RAM = 1, /* addr = global muxsel RAM entry index */
	EMU_RB_SE_RAM = 2,  /* addr = SE muxsel RAM entry index of SE `se` */
	EMU_RB_RLC = 3,     /* addr: 0 SPM state, 1 sample bytes of the derived layout (0: none), 2 interval,
			       3 lines per sample, 4 SEs per XCC */
	EMU_RB_QUEUE = 4,   /* queues and the CP of gpu_id (xcc ignored); addr: EMU_RBQ_* */
};

/* EMU_RB_QUEUE addresses.  Per GPU unless marked "per queue" (then `instance` = queue_id). */
enum {
	EMU_RBQ_LIVE = 0,        /* queues of this GPU */
	EMU_RBQ_EXECUTED = 1,    /* AQL packets executed and completed */
	EMU_RBQ_ERRORS = 2,      /* packets the CP could not execute (not completed) */
	EMU_RBQ_CP_RUNNING = 3,  /* the GPU's CP thread is running (0/1) */
	EMU_RBQ_CP_WAKEUPS = 4,  /* CP thread wake-ups (polls) so far */
	EMU_RBQ_WAIT_SLEEPS = 5, /* process-wide: WAIT_EVENTS calls that went to sleep */
	EMU_RBQ_IRQS = 6,        /* process-wide: CP interrupts that set an event */
	EMU_RBQ_Q_EXECUTED = 7,  /* per queue */
	EMU_RBQ_Q_ERRORS = 8,    /* per queue */
	EMU_RBQ_Q_HALTED = 9,    /* per queue: 1 after an error (the CP takes no more packets from it) */
	EMU_RBQ_LOCK_RECOVERED = 10, /* GPU-wide: times its shared lock was taken over from a dead process */
	EMU_RBQ_GPU_PACKETS = 11,    /* GPU-wide: AQL packets executed by every process's CP */
};

struct emu_readback_args {
	uint32_t gpu_id;
	uint32_t xcc;
	uint32_t what;
	uint32_t addr;
	uint32_t se;
	uint32_t instance;
	uint32_t value; /* out */
	uint32_t reserved;
};

/* Answers EINVAL for an unknown gpu_id, XCC, address or index. */
#define EMU_IOC_READBACK _IOWR('K', 0xE1, struct emu_readback_args)

/* The CP's error report for one queue of this process: EINVAL for an unknown queue_id. */
struct emu_queue_err_args {
	uint32_t queue_id;     /* in */
	uint32_t gpu_id;       /* out */
	uint64_t packet_index; /* out: index of the packet that failed (valid when errors != 0) */
	uint32_t errors;       /* out: packets not executed */
	uint32_t halted;       /* out */
	char err[200];         /* out: the first error, NUL-terminated ("" if none) */
};
#define EMU_IOC_QUEUE_ERR _IOWR('K', 0xE2, struct emu_queue_err_args)

#endif
