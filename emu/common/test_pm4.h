/* SPDX-License-Identifier: MIT */
/*
 * The emulator-only PM4 channel.  NOT a kernel ABI: no amdkfd has it, and a
 * real kernel answers this number with EINVAL or ENOTTY (it lies beyond
 * AMDKFD_COMMAND_END in every generation).
 *
 * On a real GPU the counter program (shared/ref/PROGRAMMING.md) runs on a
 * GPU queue.  Until spmtap submits it through a real ROCr/libhsakmt queue,
 * it hands the same PM4 dwords to the emulated command processor through
 * this ioctl on the emulated /dev/kfd.  The emulated CP parses them exactly
 * as it would from an indirect buffer, so a planner or encoder bug shows up
 * as a wrong decode.
 */
#ifndef SPMTAP_UAPI_SPMTAP_EMU_H
#define SPMTAP_UAPI_SPMTAP_EMU_H

#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>

#define SPMTAP_EMU_PM4_ERRLEN 200

struct spmtap_emu_pm4_args {
	uint64_t pm4;       /* in: user VA of the dwords */
	uint32_t ndw;       /* in: number of dwords */
	uint32_t gpu_id;    /* in: topology gpu_id */
	uint32_t xcc_mask;  /* in: XCCs that execute it; 0 = all (an unpredicated IB runs on every XCC) */
	uint32_t done_dw;   /* out: dwords executed before an error (== ndw on success) */
	uint32_t err_dw;    /* out: index of the offending dword on error */
	uint32_t reserved;  /* 0 */
	char err[SPMTAP_EMU_PM4_ERRLEN]; /* out: what the CP could not execute, NUL-terminated */
};

/* nr 0xE0: far above every amdkfd command range (ROCm's ends at 0x86). */
#define SPMTAP_EMU_IOC_SUBMIT_PM4 _IOWR('K', 0xE0, struct spmtap_emu_pm4_args)

_Static_assert(sizeof(struct spmtap_emu_pm4_args) == 232, "emu pm4 args");
_Static_assert(offsetof(struct spmtap_emu_pm4_args, err) == 32, "emu pm4 err");

#endif
