/* SPDX-License-Identifier: MIT */
/*
 * The emulator's TEST-ONLY PM4 channel.  Not a kernel ABI and not a way to
 * program counters: spmtap submits its programs through real GPU queues
 * (spm/submit_rocr.c, spm/submit_hsakmt.c), as AMD's tools do.  This ioctl
 * exists so that the emulator's own unit tests (tests/test_emu_cp.c,
 * tests/test_emu_rlc.c) can run hundreds of PM4 streams on chosen XCCs
 * without a queue in between; a real kernel answers its number with EINVAL
 * or ENOTTY (it lies beyond AMDKFD_COMMAND_END in every generation).
 *
 * The dwords are parsed exactly as the CP parses an indirect buffer, on
 * the XCCs of xcc_mask, one after another.
 */
#ifndef SPMTAP_EMU_TEST_PM4_H
#define SPMTAP_EMU_TEST_PM4_H

#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>

#define EMU_TEST_PM4_ERRLEN 200

struct emu_test_pm4_args {
	uint64_t pm4;       /* in: user VA of the dwords */
	uint32_t ndw;       /* in: number of dwords */
	uint32_t gpu_id;    /* in: topology gpu_id */
	uint32_t xcc_mask;  /* in: XCCs that execute it; 0 = all (an unpredicated IB runs on every XCC) */
	uint32_t done_dw;   /* out: dwords executed before an error (== ndw on success) */
	uint32_t err_dw;    /* out: index of the offending dword on error */
	uint32_t reserved;  /* 0 */
	char err[EMU_TEST_PM4_ERRLEN]; /* out: what the CP could not execute, NUL-terminated */
};

/* nr 0xE0: far above every amdkfd command range (ROCm's ends at 0x86). */
#define EMU_IOC_TEST_PM4 _IOWR('K', 0xE0, struct emu_test_pm4_args)

_Static_assert(sizeof(struct emu_test_pm4_args) == 232, "emu pm4 args");
_Static_assert(offsetof(struct emu_test_pm4_args, err) == 32, "emu pm4 err");

#endif
