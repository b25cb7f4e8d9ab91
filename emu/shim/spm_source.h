/* SPDX-License-Identifier: MIT */
/*
 * What the emulated RLC writes into the ring, behind an ops table: the engine
 * (spm_engine.c) moves bytes and never looks at them, so a source that
 * synthesises real sample layouts from programmed registers can replace the
 * self-checking pattern without touching the ring or copy logic.
 */
#ifndef SPMTAP_EMU_SPM_SOURCE_H
#define SPMTAP_EMU_SPM_SOURCE_H

#include <stdint.h>

#define EMU_SPM_LINE 32u

struct emu_spm_source_ctx {
	uint32_t gpu_id;
	uint32_t num_xcc;
	/* GPU clock ticks (gpu_clock.c) at which line `seq` of `xcc` was generated. */
	uint64_t (*line_ticks)(const struct emu_spm_source_ctx *ctx, uint32_t xcc, uint64_t seq);
	const void *engine; /* for line_ticks only */
};

struct emu_spm_source {
	const char *name;
	/* Write lines first_line .. first_line+nlines-1 of `xcc`'s stream (32 bytes each) to dst. */
	void (*fill)(const struct emu_spm_source_ctx *ctx, uint32_t xcc, uint64_t first_line,
		     uint32_t nlines, uint8_t *dst);
};

/* The self-checking pattern documented in docs/emulator.md. */
extern const struct emu_spm_source emu_spm_source_pattern;

#define EMU_PATTERN_MAGIC 0x544D5053u /* "SPMT" little-endian */
#define EMU_PATTERN_MUL 0x9E3779B97F4A7C15ull

#endif
