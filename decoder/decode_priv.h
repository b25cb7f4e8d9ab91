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
 * values go to vals[c * cstride + pos ...], its saturation bits are OR'd into
 * sat[c * words + pos / 64].  Adds the number of saturated cells to *nsat.
 * simd_cols false: the columns without plan[c].simd; true: only those (the
 * samples dec_simd_block leaves over).  Timestamps are not written here.
 */
void dec_decode_block(const struct dec_colplan *plan, uint32_t ncols, const uint8_t *p,
		      size_t sb, uint32_t k, uint64_t *vals, uint64_t *sat, uint32_t cstride,
		      uint32_t words, uint32_t pos, uint64_t *nsat, bool simd_cols);

/*
 * SIMD path (decode_simd.c), for global columns, SE sums and per-SE columns
 * alike.  A "group" is one segment as the kernel sees it: the global
 * segment, the SE segments summed (nse = num_se), or one SE segment
 * (per_se).  For 8 samples at a time and each used pair of lines of the
 * group, every 16-bit slot is summed over the group's SEs into a u32 lane
 * with its saturation folded in (bits 16..31 all-ones: no sum of <= 32 SEs
 * reaches bit 21), the 8 rows are transposed to one vector per slot, and
 * each column widens its vector into 8 u64 values and takes its 8
 * saturation bits from the sign bits.  A 32-bit counter must have
 * hi_slot == slot + 16 with slot in an even line (the hardware's rule,
 * SPM.md 5.6); other columns stay with the scalar kernels.
 */
#define DEC_SIMD_MAX_PAIRS 4u /* line pairs holding counters, per group */

struct dec_simd_pair {
	uint32_t off;         /* byte offset of the pair's first (even) line in the segment */
	bool two;             /* the odd line exists */
	uint32_t blocks;      /* bit b: row block b (0: even slots of line 0, 1: odd slots of
			       * line 0, 2, 3: the same for line 1) feeds a column */
	uint16_t keep[16];    /* line 0 lanes whose saturation folds into the sum: all but
			       * the low halves of 32-bit counters */
	uint16_t pairsel[16]; /* line 1 lanes that are high halves of 32-bit counters: they
			       * take "both halves all-ones in one SE" as saturation */
	/*
	 * Packed (sums only): every used slot of each line is in one 16-byte half
	 * (aqlprofile's layouts with up to 8 counters per parity and segment), so
	 * one vector carries line 0's half and line 1's half, and 2 row blocks
	 * (even, odd slots) instead of 4 are summed and transposed.  keep and
	 * pairsel are then in packed lane order (lanes 0..7: line 0, 8..15: line
	 * 1); with 32-bit counters both halves are at the same offset, so a lane
	 * meets its partner in the other 128-bit half.
	 */
	bool packed;
	bool wide;            /* a 32-bit counter lives here: track the pairs' saturation */
	uint32_t hoff[2];     /* packed: byte offset (0 or 16) of the used half of each line */
};

struct dec_simd_group {
	uint32_t base;   /* offset of the (first) segment in a sample */
	uint32_t nse;    /* segments summed */
	uint32_t stride; /* bytes between them */
	uint32_t npairs;
	struct dec_simd_pair pair[DEC_SIMD_MAX_PAIRS];
	uint32_t col0, ncols; /* its columns in dec_simd.col */
	uint32_t nnarrow;     /* the first nnarrow of them are 16-bit counters */
	/* nse == 1 (the global segment, or one SE for per-SE columns): nothing to
	 * sum, so each used line of 8 samples is transposed as 16-bit slots
	 * (24 shuffles per line) instead of split into even/odd u32 rows */
	bool u16;
	/* its share of the next block's prefetches: [pf0, pf1) / 256 of the
	 * bytes, in proportion to its work, so that they spread over the whole
	 * block's arithmetic instead of crowding into the cheapest pass */
	uint32_t pf0, pf1;
};

struct dec_simd_col {
	size_t voff;     /* output column * cstride: where its values start */
	uint32_t soff;   /* output column * words: where its bitmap starts */
	uint16_t lo, hi; /* transposed vector of the low (only) / high half: pair * 32 +
			  * block * 8 + slot / 2; in a u16 group, (pair * 2 + line % 2) * 8
			  * + slot % 8 */
	uint8_t half;    /* u16 group: bit 0: lo is in the upper 128 bits (slot % 16 >= 8),
			  * bit 1: the same for hi */
};

struct dec_simd {
	uint32_t ngroups; /* 0: not in use */
	uint32_t ncols;
	struct dec_simd_group *group;
	struct dec_simd_col *col;
	/* DEC_SIMD_SCRATCH bytes, 32-aligned: the transposed vectors of up to 64
	 * samples of one group (decode_simd.c); the decoder is used by one thread
	 * at a time. */
	void *scratch;
};
#define DEC_SIMD_SCRATCH (8u * DEC_SIMD_MAX_PAIRS * 32u * 32u)

/* True if this CPU runs the SIMD path (x86-64 with AVX2). */
bool dec_simd_available(void);
/*
 * The columns in `s` for the first k & ~7 of k samples (same contract as
 * dec_decode_block otherwise; the column offsets are in `s`); returns the
 * number of samples done.  The pflen bytes at pf (the next block) are
 * prefetched on the way.
 */
uint32_t dec_simd_block(const struct dec_simd *s, const uint8_t *p, size_t sb, uint32_t k,
			uint64_t *vals, uint64_t *sat, uint32_t pos, uint64_t *nsat,
			const uint8_t *pf, size_t pflen);

/*
 * steady_ts's test for the SIMD path: the timestamps (u64 at offset 0) of j
 * samples at p copied to ts; true if any is <= the one before it (last
 * before the first) or exceeds it by more than lim.  Little-endian x86
 * only, like the rest of the SIMD path.
 */
bool dec_simd_ts(const uint8_t *p, size_t sb, uint32_t j, uint64_t last, uint64_t lim,
		 uint64_t *ts);

#endif
