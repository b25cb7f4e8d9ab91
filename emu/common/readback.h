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

#endif
