/* SPDX-License-Identifier: MIT */
/*
 * The self-checking pattern source: each 32-byte line carries its own
 * timestamp, sequence number and a check word, so a consumer can tell lost,
 * duplicated, reordered or corrupted lines apart (docs/emulator.md).
 */
#include "emu/shim/spm_source.h"

#include <stddef.h>

static void emu_put_le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void emu_pattern_fill(const struct emu_spm_source_ctx *ctx, const struct emu_spm_period *p, uint32_t xcc,
			     uint64_t first_line, uint32_t nlines, uint8_t *dst)
{
	(void)p;
	for (uint32_t i = 0; i < nlines; i++, dst += EMU_SPM_LINE) {
		uint64_t seq = first_line + i;
		uint64_t ts = ctx->line_ticks(ctx, xcc, seq);
		emu_put_le(dst + 0, ts, 8);
		emu_put_le(dst + 8, seq, 8);
		emu_put_le(dst + 16, EMU_PATTERN_MAGIC, 4);
		emu_put_le(dst + 20, xcc, 2);
		emu_put_le(dst + 22, ctx->gpu_id & 0xFFFF, 2);
		emu_put_le(dst + 24, seq * EMU_PATTERN_MUL ^ ts ^ ((uint64_t)xcc << 48), 8);
	}
}

const struct emu_spm_source emu_spm_source_pattern = { "pattern", emu_pattern_fill, NULL };
