/* SPDX-License-Identifier: MIT */
/*
 * The emulated command processor: a PM4 type-3 walker over one XCC's
 * register file (PROGRAMMING.md 1, 8).  It knows nothing of how the dwords
 * arrived (today the emulator-only ioctl, later a real queue), so it can be
 * driven from either.
 */
#ifndef SPMTAP_EMU_CP_H
#define SPMTAP_EMU_CP_H

#include <stddef.h>
#include <stdint.h>

#include "emu/shim/regs.h"

#define EMU_CP_MAX_IB_DEPTH 4
#define EMU_CP_MAX_IB_DW ((1u << 20) - 1) /* the 20-bit IB_SIZE field */

/*
 * Execute n dwords on XCC `xcc` (its virtual XCC id for PRED_EXEC).  0 on
 * success; -1 with a message naming the offending packet, opcode or
 * register in err and, in *err_dw, the index in `dw` of the packet that
 * failed (for a failure inside an indirect buffer: the INDIRECT_BUFFER
 * packet; the message locates the nested dword).
 */
int emu_cp_execute(struct emu_gpu_regs *r, uint32_t xcc, const uint32_t *dw, size_t n, char *err, size_t errlen,
		   uint32_t *err_dw);

#endif
