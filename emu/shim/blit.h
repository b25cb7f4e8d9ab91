/* SPDX-License-Identifier: MIT */
/*
 * ROCr 5.2.x's own blit kernels (DISPATCH.md 4), applied as the memory
 * effect they have: the CP copies or fills instead of running their ISA.
 *
 * TIED TO ROCr 5.2.x.  ROCr 5.2 assembles CopyAligned, CopyMisaligned and
 * Fill at init into host memory behind a legacy 256-byte amd_kernel_code_t
 * (version words 0, code entry offset 256); the granulated SGPR/VGPR counts
 * in COMPUTE_PGM_RSRC1 tell them apart, and their kernarg layouts are that
 * release's.  Newer ROCr builds its blits from a code object; those would be
 * ordinary code-object-v3 descriptors here, which take modelled time and
 * change no memory.  A legacy descriptor that matches none of the three is
 * refused by name, never run as if it had done its work.
 */
#ifndef SPMTAP_EMU_BLIT_H
#define SPMTAP_EMU_BLIT_H

#include <stddef.h>
#include <stdint.h>

enum emu_kkind {
	EMU_KK_USER,             /* a code-object-v3+ kernel descriptor: modelled time only */
	EMU_KK_COPY_ALIGNED,     /* ROCr 5.2 CopyAligned */
	EMU_KK_COPY_MISALIGNED,  /* ROCr 5.2 CopyMisaligned */
	EMU_KK_FILL,             /* ROCr 5.2 Fill */
	EMU_KK_LEGACY_UNKNOWN,   /* a legacy amd_kernel_code_t that is none of them: refused */
};

/* The kind of the 64 readable descriptor bytes `kd` (the first 64 of an amd_kernel_code_t for a blit). */
enum emu_kkind emu_blit_kind(const uint8_t *kd);
/* "user", "blit_copy" or "blit_fill": the truth file's kind. */
const char *emu_blit_kind_name(enum emu_kkind k);
/*
 * Apply a blit's effect from its kernarg at GPU VA `kernarg`: 0 with *bytes
 * moved or filled, -1 with msg (an address the GPU could not reach).  A copy
 * of a code-object image also records its kernel names (code_objects.h).
 * Under emu_p.lock.
 */
int emu_blit_apply(enum emu_kkind k, uint64_t kernarg, uint64_t *bytes, char *msg, size_t len);

#endif
