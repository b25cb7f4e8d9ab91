/* SPDX-License-Identifier: MIT */
/*
 * A sample layout built by hand, as the emulated RLC derives it from
 * spmtap's program for `--spm SQ_WAVES,SQ_CYCLES,TCC_HIT,TA_TA_BUSY` on an
 * MI300A XCC (its sample truth header: G 4, S 2 per SE, 4 SEs, 12 lines,
 * 384 bytes, 72 values): the timestamp at global entries 0..3, TCC_HIT of
 * 16 channels (16-bit), and per SE SQ_WAVES and SQ_CYCLES 32-bit (low
 * halves at 0 and 1, high halves 16 on) and TA_TA_BUSY of 10 instances.
 * For test_sample_gen and bench_emu_gen, which link emu/common only.
 */
#ifndef SPMTAP_TESTS_EMU_FAKE_LAYOUT_H
#define SPMTAP_TESTS_EMU_FAKE_LAYOUT_H

#include <stdlib.h>
#include <string.h>

#include "emu/common/sample_gen.h"

static inline struct emu_rlc_entry *fake_ent(struct emu_rlc_layout *L, uint16_t off, int se, enum emu_rlc_part part,
					     enum emu_blk blk, unsigned inst, unsigned event)
{
	struct emu_rlc_entry *e = &L->ent[L->nent++];
	memset(e, 0, sizeof(*e));
	e->off = off;
	e->se = (int8_t)se;
	e->slot = (uint16_t)(se < 0 ? off : (off - L->G * 16) % 32);
	e->part = (uint8_t)part;
	if (part == EMU_PART_TS) {
		e->ts_word = (uint8_t)off;
		return e;
	}
	e->blk = (uint8_t)blk;
	e->inst = (uint8_t)inst;
	e->event = (uint16_t)event;
	e->width = part == EMU_PART_16 ? 16 : 32;
	e->m = emu_cnt_lookup(L->gfx, blk, event);
	e->key = emu_mix64((uint64_t)L->gpu_id << 48 ^ (uint64_t)L->xcc << 40 ^ (uint64_t)(se + 1) << 32 ^
			   (uint64_t)blk << 24 ^ (uint64_t)inst << 16 ^ event);
	L->ncnt++;
	return e;
}

/* workload: SPMTAP_EMU_WORKLOAD's grammar (NULL: constant:1). */
static inline struct emu_rlc_layout *fake_layout_mi300a4(uint32_t xcc, uint32_t interval, const char *workload)
{
	struct emu_rlc_layout *L = calloc(1, sizeof(*L) + 128 * sizeof(L->ent[0]));
	if (!L)
		return NULL;
	L->refs = 1;
	L->id = 1;
	L->gpu_id = 0x1001;
	L->xcc = xcc;
	L->gfx = EMU_GFX942;
	L->G = 4;
	L->num_se = 4;
	for (unsigned se = 0; se < 4; se++)
		L->S[se] = 2;
	L->lines = 12;
	L->sample_bytes = 12 * EMU_RLC_LINE;
	L->interval = interval;
	L->sclk_mhz = 2100;
	emu_workload_parse(workload, &L->wl, NULL, 0);
	for (uint16_t w = 0; w < 4; w++)
		fake_ent(L, w, -1, EMU_PART_TS, EMU_BLK_SQ, 0, 0);
	for (unsigned i = 0; i < 16; i++)
		fake_ent(L, (uint16_t)(4 + i), -1, EMU_PART_16, EMU_BLK_TCC, i, 17); /* TCC_HIT */
	for (int se = 0; se < 4; se++) {
		uint16_t b = (uint16_t)(64 + 32 * se);
		static const unsigned sq[2] = { 4, 2 }; /* SQ_WAVES, SQ_CYCLES */
		for (unsigned k = 0; k < 2; k++) {
			fake_ent(L, (uint16_t)(b + k), se, EMU_PART_LO, EMU_BLK_SQ, 0, sq[k]);
			fake_ent(L, (uint16_t)(b + k + 16), se, EMU_PART_HI, EMU_BLK_SQ, 0, sq[k]);
		}
		for (unsigned i = 0; i < 10; i++)
			fake_ent(L, (uint16_t)(b + 2 + i), se, EMU_PART_16, EMU_BLK_TA, i, 13); /* TA_TA_BUSY */
	}
	return L;
}

static inline void fake_layout_free(struct emu_rlc_layout *L)
{
	if (L) {
		emu_rlc_tpl_drop(L);
		free(L);
	}
}

#endif
