/* SPDX-License-Identifier: MIT */
/* Between the decoder's stream state (decode.c) and its column kernels (decode_cols.c). */
#ifndef SPMTAP_DECODER_DECODE_PRIV_H
#define SPMTAP_DECODER_DECODE_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where one output column's value lives in a sample. */
struct dec_colplan {
	uint32_t lo;     /* byte offset of the low (or only) u16, in SE 0 for a sum */
	uint32_t hi;     /* byte offset of the high u16 of a 32-bit counter */
	uint32_t nse;    /* 1: one slot; n: sum over n SE segments */
	uint32_t stride; /* bytes between SE segments */
	bool wide;
	bool simd;       /* done by dec_simd_block: the scalar kernels skip it */
};

/*
 * Decode k (1..64) complete samples at p into chunk position `pos`; the k
 * samples must not cross a bitmap word (pos % 64 + k <= 64).  Column c's
 * values go to vals[c * cap + pos ...], its saturation bits are OR'd into
 * sat[c * words + pos / 64].  Adds the number of saturated cells to *nsat.
 */
void dec_decode_block(const struct dec_colplan *plan, uint32_t ncols, const uint8_t *p,
		      size_t sb, uint32_t k, uint64_t *ts, uint64_t *vals, uint64_t *sat,
		      uint32_t cap, uint32_t words, uint32_t pos, uint64_t *nsat);


/*
 * SE-sum columns done for all SEs at once with SIMD (decode_simd.c): per
 * sample, every slot of the SE segments is summed over the SEs and checked
 * for 0xFFFF in one pass, then each column picks its slot.  Only for layouts
 * it can serve: se_lines <= DEC_SIMD_MAX_LINES and, for a 32-bit counter,
 * hi_slot == slot + 16 with slot in an even line (the hardware's rule,
 * SPM.md 5.6).
 */
#define DEC_SIMD_MAX_LINES 4u
#define DEC_SIMD_MAX_COLS 64u

struct dec_simd {
	uint32_t ncols;               /* 0: not in use */
	uint32_t lines;               /* se_lines */
	uint32_t nse;
	uint32_t gbytes;              /* offset of SE 0 in a sample */
	uint32_t stride;              /* bytes per SE segment */
	uint32_t col[DEC_SIMD_MAX_COLS];  /* output column index */
	uint16_t lo[DEC_SIMD_MAX_COLS];   /* slot in the segment */
	uint16_t hi[DEC_SIMD_MAX_COLS];   /* slot of the high half */
	bool wide[DEC_SIMD_MAX_COLS];
};

/* True if this CPU runs the SIMD path (x86-64 with AVX2). */
bool dec_simd_available(void);
/* Same contract as dec_decode_block, for the columns in `s` only. */
void dec_simd_block(const struct dec_simd *s, const uint8_t *p, size_t sb, uint32_t k,
		    uint64_t *vals, uint64_t *sat, uint32_t cap, uint32_t words, uint32_t pos,
		    uint64_t *nsat);

#endif
