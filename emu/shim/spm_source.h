/* SPDX-License-Identifier: MIT */
/*
 * What the emulated RLC writes into the ring, behind an ops table: the engine
 * (spm_engine.c) moves bytes and never looks at them.  Two sources exist:
 * the self-checking pattern (no counter program running) and the RLC
 * (rlc.c), which synthesises samples from the programmed registers.
 *
 * An XCC's stream is a sequence of production periods; each has one source
 * and produces "units" (a pattern line, or an RLC sample of unit_lines
 * lines) at a fixed rate from its start.
 */
#ifndef SPMTAP_EMU_SPM_SOURCE_H
#define SPMTAP_EMU_SPM_SOURCE_H

#include <stdbool.h>
#include <stdint.h>

#define EMU_SPM_LINE 32u

struct emu_rlc_layout;
struct emu_spm_source;
struct emu_gpu_state;

struct emu_spm_period {
	uint64_t first_seq;    /* seq of the period's first line */
	uint64_t start_ns;     /* CLOCK_MONOTONIC_RAW */
	uint64_t t_num, t_den; /* unit u exists at start + ceil((u+1)·t_num/t_den) ns; t_den 0 = none */
	uint32_t unit_lines;
	uint64_t first_sample; /* RLC: sample_seq of unit 0 (samples of this XCC since ACQUIRE) */
	const struct emu_spm_source *src;
	struct emu_rlc_layout *layout; /* RLC only; a reference held by the period */
};

/* Generation time of unit u: the first ns at which all of it exists. */
static inline uint64_t emu_period_unit_ns(const struct emu_spm_period *p, uint64_t u)
{
	uint64_t n;
	/* 64 bits whenever they suffice: __udivti3 per line was 4 % of an emulated recording. */
	if (!__builtin_mul_overflow(u + 1, p->t_num, &n) && n <= UINT64_MAX - p->t_den)
		return p->start_ns + (n + p->t_den - 1) / p->t_den;
	unsigned __int128 num = (unsigned __int128)(u + 1) * p->t_num;
	return p->start_ns + (uint64_t)((num + p->t_den - 1) / p->t_den);
}

struct emu_spm_source_ctx {
	uint32_t gpu_id;
	uint32_t num_xcc;
	/* GPU clock ticks (gpu_clock.c) at which line `seq` of `xcc` was generated. */
	uint64_t (*line_ticks)(const struct emu_spm_source_ctx *ctx, uint32_t xcc, uint64_t seq);
	const void *engine; /* for line_ticks only */
	struct emu_gpu_state *gs; /* the GPU's shared state (its kernel activity log); NULL when detached */
};

struct emu_spm_source {
	const char *name;
	/* Write lines first_line .. first_line+nlines-1 of `xcc`'s stream, all in period p, to dst. */
	void (*fill)(const struct emu_spm_source_ctx *ctx, const struct emu_spm_period *p, uint32_t xcc,
		     uint64_t first_line, uint32_t nlines, uint8_t *dst);
	/* Optional: unit u of p came into existence at t_ns; `fate`: EMU_UNIT_* below. */
	void (*produced)(const struct emu_spm_source_ctx *ctx, const struct emu_spm_period *p, uint32_t xcc,
			 uint64_t u, uint64_t t_ns, uint32_t fate);
};

/*
 * What the kernel does with a whole unit, known when it is produced (the
 * sample truth's flags, docs/emulator.md).  Neither leaves a timestamp in
 * the stream, so a unit dropped after the last delivered one is reported
 * only by the kernel's loss flag (SPM.md 4.4, 5.8).
 */
#define EMU_UNIT_STALLED 1u   /* gen B: the ring had no room, the RLC stalled over it (4.2) */
#define EMU_UNIT_DISCARDED 2u /* gen A: the armed buffer was full, the worker discards the ring (4.2) */
/* With one of the above: lost unmade by the emulated device behind real time (values not made: zeros). */
#define EMU_UNIT_LATE 4u
/*
 * Sample truth only: dispatches ran at the sample's time (kernel_activity.h);
 * bits 8..15 their count (saturating), bits 16..31 the low 16 bits of the
 * newest one's seq (the dispatch truth's "kseq").
 */
#define EMU_UNIT_KERNEL 8u

/* The self-checking pattern documented in docs/emulator.md. */
extern const struct emu_spm_source emu_spm_source_pattern;
/* Samples from the programmed registers (rlc.c). */
extern const struct emu_spm_source emu_spm_source_rlc;

#define EMU_PATTERN_MAGIC 0x544D5053u /* "SPMT" little-endian */
#define EMU_PATTERN_MUL 0x9E3779B97F4A7C15ull

#endif
