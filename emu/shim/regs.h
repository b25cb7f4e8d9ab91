/* SPDX-License-Identifier: MIT */
/*
 * The emulated register file of one GPU: one block of state per XCC, the
 * registers spmtap's counter program writes (PROGRAMMING.md 2.2-2.6, 3.4).
 * The per-XCC blocks are plain data with no pointers, because they live in
 * the GPU's shared state (gpu_state.h) that every process maps; the handle
 * (struct emu_gpu_regs) is per process.  Writes follow GRBM_GFX_INDEX
 * fan-out; an unmodelled or KFD-owned register is an error that names it.
 */
#ifndef SPMTAP_EMU_REGS_H
#define SPMTAP_EMU_REGS_H

#include <stddef.h>
#include <stdint.h>

#include "emu/common/counters.h"

#define EMU_MAX_SE 8
#define EMU_MAX_INST 32
#define EMU_MUXSEL_ENTRIES 512 /* per RAM; 31 lines * 16 + 2 terminators fit */

/* Absolute dword addresses used outside regs.c. */
#define EMU_REG_GRBM_GFX_INDEX 0xC200u
#define EMU_REG_CP_PERFMON_CNTL 0xD808u
#define EMU_REG_RLC_SPM_PERFMON_CNTL 0xDC80u
#define EMU_REG_SEGMENT_SIZE 0xDC84u
#define EMU_REG_SE_MUXSEL_ADDR 0xDC85u
#define EMU_REG_SE_MUXSEL_DATA 0xDC86u
#define EMU_REG_GLOBAL_MUXSEL_ADDR 0xDC9Bu
#define EMU_REG_GLOBAL_MUXSEL_DATA 0xDC9Cu
#define EMU_REG_SAMPLE_DELAY_MAX 0xDCA4u
#define EMU_REG_SEGMENT_SIZE_CORE1 0xDCAFu
#define EMU_REG_RLC_PERFMON_CLK_CNTL 0xDCBFu
#define EMU_REG_COMPUTE_PERFCOUNT_ENABLE 0x2E0Bu

/* CP_PERFMON_CNTL.SPM_PERFMON_STATE (PROGRAMMING.md 2.7). */
enum emu_spm_state { EMU_SPM_RESET = 0, EMU_SPM_COUNTING = 1, EMU_SPM_STOPPED = 2 };

struct emu_rlc_layout;

struct emu_xcc_regs {
	uint32_t grbm_gfx_index;
	uint32_t cp_perfmon_cntl;
	uint32_t spm_perfmon_cntl;
	uint32_t seg_size, seg_size_core1;
	uint32_t sample_delay_max, perfmon_clk_cntl, compute_perfcount_enable;
	uint32_t glb_ptr, se_ptr[EMU_MAX_SE]; /* RAM write pointers, in entries */
	uint16_t glb_ram[EMU_MUXSEL_ENTRIES];
	uint16_t se_ram[EMU_MAX_SE][EMU_MUXSEL_ENTRIES];
	/* [block][SE (0 for global blocks)][instance][register of emu_blk_info] */
	uint32_t sel[EMU_NBLK][EMU_MAX_SE][EMU_MAX_INST][EMU_BLK_MAX_REGS];
	uint32_t sq_ctrl[EMU_MAX_SE], sq_mask[EMU_MAX_SE];
	unsigned spm_state;
	/* What the RLC took at the last START_COUNTING (0 after a reset), for the read-back. */
	uint32_t rlc_sample_bytes, rlc_interval, rlc_lines;
};

struct emu_gpu_regs;
/*
 * Called on every CP_PERFMON_CNTL write from PM4, after the new state is
 * stored; L is the layout a START_COUNTING derived (NULL otherwise), valid
 * during the call.
 */
typedef void (*emu_spm_state_hook)(struct emu_gpu_regs *r, uint32_t xcc, unsigned old_state, unsigned new_state,
				   const struct emu_rlc_layout *L);

struct emu_gpu_regs {
	uint32_t gpu_id;
	enum emu_gfx gfx;
	uint32_t num_xcc, num_se; /* SEs per XCC */
	uint32_t sclk_mhz;        /* profile SCLK; SPMTAP_EMU_SCLK_MHZ overrides at START */
	emu_spm_state_hook hook;
	void *owner;              /* the shim's struct emu_gpu, for the hook */
	struct emu_xcc_regs *x;   /* num_xcc blocks, in the GPU's shared state */
};

/* Power-on state of one XCC's registers. */
void emu_regs_power_on(struct emu_xcc_regs *x);

/*
 * A PM4 write of `val` to absolute dword address `addr` on XCC `xcc`.
 * 0, or -1 with a message meant to follow "<PACKET> to ", e.g.
 * "unmodelled register 0xC123".
 */
int emu_regs_write(struct emu_gpu_regs *r, uint32_t xcc, uint32_t addr, uint32_t val, char *err, size_t errlen);
/* A CP read (WAIT_REG_MEM, COPY_DATA) through the current GRBM_GFX_INDEX (first selected SE/instance). */
int emu_regs_read(const struct emu_gpu_regs *r, uint32_t xcc, uint32_t addr, uint32_t *val, char *err,
		  size_t errlen);

/* Test read-back (emu/common/readback.h) ignoring GRBM_GFX_INDEX; 0 or an errno. */
int emu_regs_peek(const struct emu_gpu_regs *r, uint32_t xcc, uint32_t what, uint32_t addr, uint32_t se,
		  uint32_t inst, uint32_t *val);

/*
 * KFD's own writes at spm start (RING_MODE = 3, SPM_PERFMON_STATE =
 * DISABLE_AND_RESET) and stop (DISABLE_AND_RESET), on every XCC.  They do
 * not call the hook: the caller is the engine's owner.
 */
void emu_regs_kfd_start(struct emu_gpu_regs *r);
void emu_regs_kfd_stop(struct emu_gpu_regs *r);

const char *emu_gfx_name(enum emu_gfx gfx);

#endif
