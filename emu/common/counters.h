/* SPDX-License-Identifier: MIT */
/*
 * The emulator's own table of SPM-capable blocks (PROGRAMMING.md 2.5, 3.2,
 * 4.1) and its model of what each counter counts (4.2).  Duplicated from
 * the reference on purpose: spmtap's planner has its own tables, and the
 * end-to-end tests mean something only if the two were written separately.
 */
#ifndef SPMTAP_EMU_COUNTERS_H
#define SPMTAP_EMU_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>

enum emu_gfx { EMU_GFX90A = 0, EMU_GFX942 = 1 };

enum emu_blk { EMU_BLK_CPC, EMU_BLK_CPF, EMU_BLK_TCC, EMU_BLK_TCA, EMU_BLK_TA, EMU_BLK_TD, EMU_BLK_TCP,
	       EMU_BLK_SPI, EMU_BLK_SQ, EMU_NBLK };

#define EMU_BLK_MAX_REGS 16 /* SQ: one select per counter */

struct emu_blk_info {
	const char *name;
	bool se_block;          /* lives in every SE (SE muxsel RAM) */
	uint8_t spm_id;         /* SPM block id in its RAM (3.2) */
	uint8_t slots;          /* muxsel counter fields allowed (SQ: 16 = 8 32-bit counters) */
	uint8_t inst[2];        /* instances per XCC (global) or per SE, by emu_gfx */
	uint8_t sel_bits;       /* width of PERF_SEL fields: 10, TA/TD 8, SQ 9 */
	uint8_t nregs;
	uint16_t addr[EMU_BLK_MAX_REGS]; /* absolute dword addresses */
	uint8_t perf[EMU_BLK_MAX_REGS];  /* perfcounter p of each register */
	uint8_t sel1[EMU_BLK_MAX_REGS];  /* 1 = SELECT1 */
};

const struct emu_blk_info *emu_blk(enum emu_blk b);
/* Block of an SPM block id in the global (se_ram false) or SE RAM; -1 when not modelled. */
int emu_blk_by_spm_id(bool se_ram, unsigned id);
/* Name of any SPM block id (3.2), modelled or not, for messages. */
const char *emu_spm_block_name(bool se_ram, unsigned id);

enum emu_cnt_class {
	EMU_CNT_CYCLES,  /* = interval, every sample */
	EMU_CNT_BUSY,    /* ~ a(t) * interval * rate */
	EMU_CNT_IDLE,    /* ~ (1 - a(t)) * interval */
	EMU_CNT_RATE,    /* rate * a(t) * interval: waves, instructions, requests */
	EMU_CNT_HIT,     /* rate * a(t) * interval * ratio */
	EMU_CNT_MISS,    /* rate * a(t) * interval * (1 - ratio) */
	EMU_CNT_STALL,   /* rate * a(t)^2 * interval: grows faster than load */
	EMU_CNT_UNKNOWN, /* an event id not in the table: a low deterministic rate */
};

struct emu_cnt_model {
	enum emu_cnt_class cls;
	double rate, ratio;
	const char *name; /* NULL for unknown ids */
	double peak;      /* most per cycle the unit can count (L2 tag lookups: 2); 0 = no cap */
};

/* The behaviour of (gfx, block, event id). */
struct emu_cnt_model emu_cnt_lookup(enum emu_gfx gfx, enum emu_blk blk, unsigned event);

/*
 * The true (unclamped) increment of one counter over one sample.  `key`
 * identifies the counter instance (XCC, SE, instance, event...) and gives
 * it a fixed +-10 % variation; `noise` (a hash of XCC, sample, counter)
 * adds +-3 % per sample.  Cycle counters are exact.
 */
uint64_t emu_cnt_value(const struct emu_cnt_model *m, uint32_t interval, double activity, uint64_t key,
		       uint64_t noise);

/* A 64-bit mix (splitmix64 finaliser) for deterministic keys and noise. */
uint64_t emu_mix64(uint64_t x);

#endif
