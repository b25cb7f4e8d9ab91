/* SPDX-License-Identifier: MIT */
/*
 * Kernel names for dispatch truth: the CP learns them from the code objects
 * ROCr uploads.  ROCr 5.2.3's loader copies a code object's loaded image
 * (its PT_LOAD segments at their p_vaddr, the ELF header at offset 0) from
 * a host staging copy into VRAM with its blit kernel (DISPATCH.md 2), so a
 * blit copy whose source starts with an AMDGPU ELF header is a code-object
 * upload: its dynamic symbols "<name>.kd" are kernel descriptors at
 * destination + st_value.  Nothing else is recorded; a kernel loaded
 * another way stays nameless (truth then has kernel_object only).
 */
#ifndef SPMTAP_EMU_CODE_OBJECTS_H
#define SPMTAP_EMU_CODE_OBJECTS_H

#include <stdint.h>

/* A blit copied `len` bytes from `src` (readable) to GPU VA `dst`: record its kernels if it is an image.  Under emu_p.lock. */
void emu_co_note_copy(uint64_t dst, const void *src, uint64_t len);
/* The kernel name ("add1", without ".kd") of the descriptor at `kd`, or NULL.  Under emu_p.lock. */
const char *emu_co_kernel_name(uint64_t kd);
/* Forget every upload whose image overlaps [va, va+len) (the memory was reused).  Under emu_p.lock. */
void emu_co_forget(uint64_t va, uint64_t len);

#endif
