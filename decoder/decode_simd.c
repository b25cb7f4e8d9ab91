/* SPDX-License-Identifier: MIT */
/*
 * SIMD path for SE-sum columns (decode_priv.h).  A scalar SE sum costs a
 * load, an add and a saturation test per (counter, SE); here one 32-byte
 * line of every SE is loaded once, its 16 slots summed into u32 lanes and
 * compared with 0xFFFF together, so the cost follows the segment size, not
 * the counter count.  Built for AVX2 and chosen at run time; elsewhere the
 * scalar kernels serve every column.
 */
#include <string.h>

#include "decoder/decode_priv.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define TARGET __attribute__((target("avx2")))

bool dec_simd_available(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2");
}

static inline TARGET __attribute__((always_inline)) void
simd_k(const struct dec_simd *s, const uint8_t *p, size_t sb, uint32_t k, uint64_t *vals,
       uint64_t *satw, uint32_t cap, uint32_t pos, uint64_t *nsat, const uint32_t LINES,
       const uint32_t NSE)
{
	const __m256i ones = _mm256_set1_epi16(-1);
	unsigned shift = pos & 63;
	uint64_t acc[DEC_SIMD_MAX_COLS] = {0};
	for (uint32_t i = 0; i < k; i++) {
		const uint8_t *seg = p + i * sb + s->gbytes;
		__m256i sum[2 * DEC_SIMD_MAX_LINES], any[DEC_SIMD_MAX_LINES],
			pair[DEC_SIMD_MAX_LINES / 2];
		for (uint32_t l = 0; l < LINES; l++) {
			sum[2 * l] = sum[2 * l + 1] = any[l] = _mm256_setzero_si256();
			if (l % 2)
				pair[l / 2] = _mm256_setzero_si256();
		}
		for (uint32_t j = 0; j < NSE; j++) {
			const uint8_t *q = seg + j * s->stride;
			__m256i prev = _mm256_setzero_si256();
			for (uint32_t l = 0; l < LINES; l++) {
				__m256i v = _mm256_loadu_si256((const __m256i *)(q + 32 * l));
				__m256i e = _mm256_cmpeq_epi16(v, ones);
				any[l] = _mm256_or_si256(any[l], e);
				/* a 32-bit counter is saturated in one SE when both halves are */
				if (l % 2)
					pair[l / 2] = _mm256_or_si256(pair[l / 2],
								      _mm256_and_si256(e, prev));
				prev = e;
				__m128i a = _mm_loadu_si128((const __m128i *)(q + 32 * l));
				__m128i b = _mm_loadu_si128((const __m128i *)(q + 32 * l + 16));
				sum[2 * l] = _mm256_add_epi32(sum[2 * l], _mm256_cvtepu16_epi32(a));
				sum[2 * l + 1] =
					_mm256_add_epi32(sum[2 * l + 1], _mm256_cvtepu16_epi32(b));
			}
		}
		uint32_t s32[16 * DEC_SIMD_MAX_LINES];
		uint16_t a16[16 * DEC_SIMD_MAX_LINES], p16[16 * DEC_SIMD_MAX_LINES];
		/* an unpaired last line holds no 32-bit low half */
		if (LINES % 2)
			memset(p16 + 16 * (LINES - 1), 0, 32);
		for (uint32_t l = 0; l < LINES; l++) {
			_mm256_storeu_si256((__m256i *)(s32 + 16 * l), sum[2 * l]);
			_mm256_storeu_si256((__m256i *)(s32 + 16 * l + 8), sum[2 * l + 1]);
			_mm256_storeu_si256((__m256i *)(a16 + 16 * l), any[l]);
			if (l % 2)
				_mm256_storeu_si256((__m256i *)(p16 + 16 * (l - 1)), pair[l / 2]);
		}
		for (uint32_t c = 0; c < s->ncols; c++) {
			uint32_t lo = s->lo[c];
			bool w = s->wide[c];
			/* sum(lo + hi << 16) over SEs = sum(lo) + sum(hi) << 16 */
			uint64_t v = s32[lo] + ((uint64_t)s32[s->hi[c]] << 16) * w;
			uint64_t sat = (w ? p16[lo] : a16[lo]) & 1;
			vals[(size_t)s->col[c] * cap + pos + i] = v | -sat;
			acc[c] |= sat << (shift + i);
		}
	}
	uint64_t n = 0;
	for (uint32_t c = 0; c < s->ncols; c++) {
		satw[c] |= acc[c];
		n += (uint64_t)__builtin_popcountll(acc[c]);
	}
	*nsat += n;
}

#define CASE(L, N) simd_k(s, p, sb, k, vals, satw, cap, pos, nsat, L, N)

TARGET void dec_simd_block(const struct dec_simd *s, const uint8_t *p, size_t sb, uint32_t k,
			   uint64_t *vals, uint64_t *sat, uint32_t cap, uint32_t words,
			   uint32_t pos, uint64_t *nsat)
{
	uint64_t satw[DEC_SIMD_MAX_COLS] = {0};
	/* The common shapes get constant trip counts, so the SE loop unrolls. */
	if (s->lines == 2 && s->nse == 4)
		CASE(2, 4);
	else if (s->lines == 2 && s->nse == 8)
		CASE(2, 8);
	else if (s->lines == 2)
		CASE(2, s->nse);
	else if (s->lines == 1)
		CASE(1, s->nse);
	else if (s->lines == 3)
		CASE(3, s->nse);
	else
		CASE(4, s->nse);
	for (uint32_t c = 0; c < s->ncols; c++)
		sat[(size_t)s->col[c] * words + pos / 64] |= satw[c];
}

#else

bool dec_simd_available(void)
{
	return false;
}

void dec_simd_block(const struct dec_simd *s, const uint8_t *p, size_t sb, uint32_t k,
		    uint64_t *vals, uint64_t *sat, uint32_t cap, uint32_t words, uint32_t pos,
		    uint64_t *nsat)
{
	(void)s, (void)p, (void)sb, (void)k, (void)vals, (void)sat, (void)cap, (void)words,
		(void)pos, (void)nsat;
}

#endif
