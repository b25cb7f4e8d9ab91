/* SPDX-License-Identifier: MIT */
/*
 * gfx9 (gfx90a, gfx940/941/942) registers that an SPM start/stop program
 * touches, as ABSOLUTE dword addresses (GC segment base 1 = 0xA000 plus the
 * gc_9_4_2 / gc_9_4_3 offset).  Source: shared/ref/PROGRAMMING.md §2.1-§2.2,
 * §2.5 and SPM.md §6.1; the offsets are identical on gfx90a and gfx942 [V]
 * except where noted.  The per-block perfcounter select addresses live in the
 * catalog's block table (catalog.c), next to the block they belong to.
 */
#ifndef SPMTAP_SPM_REGS_GFX9_H
#define SPMTAP_SPM_REGS_GFX9_H

/* PM4 register-space bases (PROGRAMMING.md §1.3) [V]. */
enum {
	GFX9_UCONFIG_BASE = 0xC000, /* SET_UCONFIG_REG offset = addr - this; space 0xC000..0xFFFF */
	GFX9_UCONFIG_END = 0xFFFF,
	GFX9_SH_BASE = 0x2C00,      /* SET_SH_REG offset = addr - this; space 0x2C00..0x2FFF */
	GFX9_SH_END = 0x2FFF,
};

/* Absolute dword addresses [V] (PROGRAMMING.md §2.2). */
enum gfx9_reg {
	GFX9_GRBM_GFX_INDEX = 0xC200,
	GFX9_COMPUTE_PERFCOUNT_ENABLE = 0x2E0B, /* SH space: SET_SH_REG */
	GFX9_CP_PERFMON_CNTL = 0xD808,
	GFX9_SQ_PERFCOUNTER0_SELECT = 0xD9C0,   /* ..15 at +n */
	GFX9_SQ_PERFCOUNTER_CTRL = 0xD9E0,
	GFX9_SQ_PERFCOUNTER_MASK = 0xD9E1,
	GFX9_RLC_SPM_PERFMON_CNTL = 0xDC80,
	GFX9_RLC_SPM_PERFMON_RING_BASE_LO = 0xDC81, /* KFD only: never from user PM4 */
	GFX9_RLC_SPM_PERFMON_RING_BASE_HI = 0xDC82, /* KFD only */
	GFX9_RLC_SPM_PERFMON_RING_SIZE = 0xDC83,    /* KFD only */
	GFX9_RLC_SPM_PERFMON_SEGMENT_SIZE = 0xDC84,
	GFX9_RLC_SPM_SE_MUXSEL_ADDR = 0xDC85,
	GFX9_RLC_SPM_SE_MUXSEL_DATA = 0xDC86,
	GFX9_RLC_SPM_GLOBAL_MUXSEL_ADDR = 0xDC9B,
	GFX9_RLC_SPM_GLOBAL_MUXSEL_DATA = 0xDC9C,
	GFX9_RLC_SPM_RING_RDPTR = 0xDC9D,           /* KFD only */
	GFX9_RLC_SPM_SEGMENT_THRESHOLD = 0xDC9E,    /* KFD only */
	GFX9_RLC_SPM_PERFMON_SAMPLE_DELAY_MAX = 0xDCA4,
	/* 8-SE parts (gfx908, gfx90a) only; absent from the GC943 RLC-SPM block [V]. */
	GFX9_RLC_SPM_PERFMON_SEGMENT_SIZE_CORE1 = 0xDCAF,
	/* Written by aqlprofile on every GFXIP 9 incl. gfx942, although GC943 does
	 * not list it; whether it does anything on 9.4.3 is [U]. */
	GFX9_RLC_PERFMON_CLK_CNTL = 0xDCBF,
	GFX9_RLC_SPM_MC_CNTL = 0xEC71,              /* KFD only */
	GFX9_RLC_SPM_INT_CNTL = 0xEC72,             /* KFD only */
};

/* GRBM_GFX_INDEX values aqlprofile uses (PROGRAMMING.md §2.3) [V].  No XCC
 * field exists: on gfx942 every XCC runs the same IB on its own registers. */
enum {
	GFX9_GRBM_BROADCAST = 0xE0000000u,      /* SE | SH | INSTANCE broadcast */
	GFX9_GRBM_INSTANCE_ALL_SE = 0xA0000000u, /* | instance: one instance, every SE and SH */
};

/* CP_PERFMON_CNTL values: SPM_PERFMON_STATE is bits 7:4 (PROGRAMMING.md §2.7) [V]. */
enum {
	GFX9_CP_PERFMON_SPM_START = 0x10, /* SPM START_COUNTING; PERFMON_STATE forced to 0 */
	GFX9_CP_PERFMON_SPM_STOP = 0x20,  /* SPM STOP_COUNTING */
};

/* RLC_SPM_PERFMON_CNTL fields (SPM.md §6.1) [V]. */
enum {
	GFX9_SPM_RING_MODE_SHIFT = 12, /* 13:12; 3 = stall and interrupt when full, as KFD sets it */
	GFX9_SPM_RING_MODE_KFD = 3,
	GFX9_SPM_INTERVAL_SHIFT = 16,  /* 31:16, SCLK cycles */
};

/* RLC_SPM_PERFMON_SEGMENT_SIZE / _CORE1 field positions, in lines (SPM.md §6.1) [V]. */
enum {
	GFX9_SEGSZ_TOTAL_MASK = 0xFF,       /* 7:0 */
	GFX9_SEGSZ_GLOBAL_SHIFT = 11,       /* 15:11 */
	GFX9_SEGSZ_SE0_SHIFT = 16,          /* 20:16, SE1 25:21, SE2 30:26; SE3 implied */
	GFX9_SEGSZ_SE_BITS = 5,
	GFX9_SEGSZ_CORE1_TOTAL_MASK = 0x7F, /* 6:0 */
	GFX9_SEGSZ_CORE1_SE4_SHIFT = 12,    /* 16:12, SE5 21:17, SE6 26:22, SE7 31:27 */
};

/* Perfcounter select fields (PROGRAMMING.md §2.5) [V]. */
enum {
	GFX9_PERF_SEL1_SHIFT = 10,  /* second 16-bit sub-counter of a SELECT / SELECT1 word */
	GFX9_CNTR_MODE_SHIFT = 20,  /* 23:20, only in SELECT */
	GFX9_SPM_MODE_16BIT_CLAMP = 1,
	GFX9_SPM_MODE_32BIT_CLAMP = 3,
	/* SQ: SIMD, bank and client masks 0xF, SPM_MODE 3 (32-bit clamp); | event. */
	GFX9_SQ_SPM_SELECT = 0x0F3FF000u,
	GFX9_SQ_PERFCOUNTER_MASK_ALL = 0xFFFFFFFFu,
	/* PS, VS, GS, HS, CS enables and VMID_MASK 0xFFFF, as aqlprofile writes it. */
	GFX9_SQ_PERFCOUNTER_CTRL_SPM = 0xFFFF0057u,
	/* Factory value for gfx94x (and gfx908); gfx90a's factory returns 0 = no write [V]. */
	GFX9_SAMPLE_DELAY_MAX_GFX94X = 0x34,
	GFX9_COMPUTE_PERFCOUNT_ENABLE_ON = 1,
};

/* Muxsel entry, 16 bits: counter 5:0 | block 10:6 | instance 15:11 (PROGRAMMING.md §3.1) [V]. */
enum {
	GFX9_MUXSEL_BLOCK_SHIFT = 6,
	GFX9_MUXSEL_INSTANCE_SHIFT = 11,
	GFX9_MUXSEL_TIMESTAMP = 0xF0F0, /* x4 in global slots 0..3 */
	GFX9_MUXSEL_UNUSED = 0xFFFF,    /* unused slots and the 2 terminators */
};

#endif
