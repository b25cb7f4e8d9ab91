/* SPDX-License-Identifier: MIT */
/*
 * Column kernels: complete samples -> per-column u64 arrays and saturation
 * bitmaps.  Loops go column by column over a block of <= 64 samples: each
 * kernel has no branch per value, keeps its 64 saturation bits in a
 * register, and writes its column contiguously; the block stays in cache
 * between columns.  The SE sum is specialised for the usual SE counts so
 * its inner loop unrolls.
 */
#include <endian.h>
#include <string.h>

#include "decoder/decode_priv.h"

#define INLINE static inline __attribute__((always_inline))

INLINE uint64_t ld16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return le16toh(v);
}

/*
 * A saturated counter reads all-ones (SPM.md 5.6); so does a saturated
 * 32-bit counter in both halves.  Saturation is sticky over a sum: the cell
 * becomes DEC_SATURATED (all-ones) through `| -s`.
 */
INLINE uint64_t k16(const uint8_t *p, size_t sb, const struct dec_colplan *cp, uint32_t nse,
		    uint64_t *out, uint32_t k, unsigned shift)
{
	uint64_t acc = 0;
	for (uint32_t i = 0; i < k; i++) {
		const uint8_t *q = p + i * sb + cp->lo;
		uint64_t sum = 0, s = 0;
		for (uint32_t j = 0; j < nse; j++) {
			uint64_t v = ld16(q + j * cp->stride);
			sum += v;
			s |= v == 0xFFFF;
		}
		out[i] = sum | -s;
		acc |= s << (shift + i);
	}
	return acc;
}

INLINE uint64_t k32(const uint8_t *p, size_t sb, const struct dec_colplan *cp, uint32_t nse,
		    uint64_t *out, uint32_t k, unsigned shift)
{
	uint64_t acc = 0;
	for (uint32_t i = 0; i < k; i++) {
		const uint8_t *q = p + i * sb;
		uint64_t sum = 0, s = 0;
		for (uint32_t j = 0; j < nse; j++) {
			uint64_t v = ld16(q + cp->lo + j * cp->stride) |
				     ld16(q + cp->hi + j * cp->stride) << 16;
			sum += v;
			s |= v == 0xFFFFFFFF;
		}
		out[i] = sum | -s;
		acc |= s << (shift + i);
	}
	return acc;
}

static uint64_t col(const uint8_t *p, size_t sb, const struct dec_colplan *cp, uint64_t *out,
		    uint32_t k, unsigned shift)
{
	if (cp->wide) {
		switch (cp->nse) {
		case 1: return k32(p, sb, cp, 1, out, k, shift);
		case 2: return k32(p, sb, cp, 2, out, k, shift);
		case 4: return k32(p, sb, cp, 4, out, k, shift);
		case 8: return k32(p, sb, cp, 8, out, k, shift);
		default: return k32(p, sb, cp, cp->nse, out, k, shift);
		}
	}
	switch (cp->nse) {
	case 1: return k16(p, sb, cp, 1, out, k, shift);
	case 2: return k16(p, sb, cp, 2, out, k, shift);
	case 4: return k16(p, sb, cp, 4, out, k, shift);
	case 8: return k16(p, sb, cp, 8, out, k, shift);
	default: return k16(p, sb, cp, cp->nse, out, k, shift);
	}
}

/* Without -mpopcnt __builtin_popcountll is a libgcc call; saturation is rare. */
INLINE uint64_t popcount64(uint64_t v)
{
	v = v - ((v >> 1) & 0x5555555555555555ull);
	v = (v & 0x3333333333333333ull) + ((v >> 2) & 0x3333333333333333ull);
	v = (v + (v >> 4)) & 0x0F0F0F0F0F0F0F0Full;
	return (v * 0x0101010101010101ull) >> 56;
}

void dec_decode_block(const struct dec_colplan *plan, uint32_t ncols, const uint8_t *p,
		      size_t sb, uint32_t k, uint64_t *vals, uint64_t *sat, uint32_t cstride,
		      uint32_t words, uint32_t pos, uint64_t *nsat, bool simd_cols)
{
	unsigned shift = pos & 63;
	uint64_t n = 0;
	for (uint32_t c = 0; c < ncols; c++) {
		if (plan[c].simd != simd_cols)
			continue;
		uint64_t acc = col(p, sb, &plan[c], vals + (size_t)c * cstride + pos, k, shift);
		if (__builtin_expect(acc != 0, 0)) {
			sat[(size_t)c * words + pos / 64] |= acc;
			n += popcount64(acc);
		}
	}
	*nsat += n;
}
