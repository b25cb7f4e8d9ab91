/* SPDX-License-Identifier: MIT */
/*
 * SIMD path for the columns the plan hands it (decode_priv.h).  Per sample,
 * one 32-byte line of every SE is loaded once, its 16 slots summed into u32
 * lanes (even and odd slots apart: an AND and a shift, no shuffles) and
 * compared with 0xFFFF together, so the cost of that step follows the
 * segment size, not the counter count.  The per-sample rows are then
 * transposed 8 x 8 in registers so that each column gets its 8 values in one
 * vector, widened to u64 and stored contiguously: about one vector op per
 * value instead of a dozen scalar ops.  Built for AVX2 and chosen at run
 * time; elsewhere the scalar kernels serve every column.
 */
#include <string.h>

#include "decoder/decode_priv.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define TARGET __attribute__((target("avx2,popcnt")))
#define INLINE static inline TARGET __attribute__((always_inline))

bool dec_simd_available(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
}

INLINE __m256i ld(const void *p)
{
	return _mm256_loadu_si256((const __m256i *)p);
}

/*
 * A cursor over the bytes to prefetch: [p, end).  Each turn asks for two
 * lines (a compare and two prefetches, all in registers: no loop, no
 * per-turn size), the turns sit between the arithmetic (two per sample and
 * pair where SEs are summed, one per 2 samples and pair otherwise: as many
 * as a 320-byte sample's share needs), and pf_rest catches up on the rest.
 */
struct pfcur {
	const uint8_t *p, *end;
};

/*
 * Into L2, not L1 (prefetcht1).  A prefetch into L1 holds one of the core's
 * few L1 miss buffers until its line arrives from DRAM, and the SE sums'
 * loads queue behind them; into L2 the requests wait in L2's larger miss
 * queue and the loads find the lines in L2.  Measured on an AMD
 * EPYC VM (bench_decode -r 7, three runs each): SE sums 0.92-1.01x ->
 * 1.29-1.39x memcpy, per-SE columns 0.66-0.70x -> 1.15-1.22x.  The scalar
 * kernels (decode.c) are slower with it and keep prefetching into L1.
 */
#define PREFETCH_L2(p) __builtin_prefetch((p), 0, 2)

INLINE void prefetch_slice(struct pfcur *c)
{
	if (c->p < c->end) {
		PREFETCH_L2(c->p);
		PREFETCH_L2(c->p + 64);
		c->p += 128;
	}
}

INLINE void pf_rest(struct pfcur *c)
{
	for (; c->p < c->end; c->p += 64)
		PREFETCH_L2(c->p);
}

/*
 * Rows of 8 samples for one line pair: R[b][i] is row block b of sample i,
 * lane j = slot 2j (b even) or 2j + 1 (b odd) of line b / 2, summed over the
 * NSE segments, with bits 16..31 set where saturated.
 *
 * Per segment and line: x += v as u32 lanes (= even + odd << 16, mod 2^32)
 * and o += v >> 16 (the odd slots); the even sums are x - (o << 16) at the
 * end, exact since they stay below 2^21.  Saturation: the max over the
 * segments is 0xFFFF where any segment is; for a 32-bit counter the max of
 * min(low, high) is 0xFFFF where both halves are in one segment.
 */
INLINE void rows8(const struct dec_simd_pair *pp, const uint8_t *seg, size_t sb,
		  uint32_t stride, __m256i R[4][8], struct pfcur *pc, const uint32_t NSE,
		  const bool TWO)
{
	const __m256i ones = _mm256_set1_epi16(-1), hi16 = _mm256_set1_epi32((int)0xFFFF0000u);
	const __m256i keep = ld(pp->keep), sel = ld(pp->pairsel);
#pragma GCC unroll 8
	for (uint32_t i = 0; i < 8; i++) {
		const uint8_t *q = seg + i * sb + pp->off;
		prefetch_slice(pc);
		__m256i v0 = ld(q), v1 = _mm256_setzero_si256();
		__m256i x0 = v0, o0 = _mm256_srli_epi32(v0, 16), m0 = v0;
		__m256i x1 = v1, o1 = v1, m1 = v1, mp = v1;
		if (TWO) {
			v1 = ld(q + 32);
			x1 = v1;
			o1 = _mm256_srli_epi32(v1, 16);
			m1 = v1;
			mp = _mm256_min_epu16(v0, v1);
		}
#pragma GCC unroll 8
		for (uint32_t j = 1; j < NSE; j++) {
			v0 = ld(q + (size_t)j * stride);
			x0 = _mm256_add_epi32(x0, v0);
			o0 = _mm256_add_epi32(o0, _mm256_srli_epi32(v0, 16));
			m0 = _mm256_max_epu16(m0, v0);
			if (TWO) {
				v1 = ld(q + (size_t)j * stride + 32);
				x1 = _mm256_add_epi32(x1, v1);
				o1 = _mm256_add_epi32(o1, _mm256_srli_epi32(v1, 16));
				m1 = _mm256_max_epu16(m1, v1);
				mp = _mm256_max_epu16(mp, _mm256_min_epu16(v0, v1));
			}
		}
		prefetch_slice(pc);
		__m256i s0 = _mm256_and_si256(_mm256_cmpeq_epi16(m0, ones), keep);
		__m256i e0 = _mm256_sub_epi32(x0, _mm256_slli_epi32(o0, 16));
		R[0][i] = _mm256_or_si256(e0, _mm256_slli_epi32(s0, 16));
		R[1][i] = _mm256_or_si256(o0, _mm256_and_si256(s0, hi16));
		if (TWO) {
			__m256i s1 = _mm256_blendv_epi8(_mm256_cmpeq_epi16(m1, ones),
							_mm256_cmpeq_epi16(mp, ones), sel);
			__m256i e1 = _mm256_sub_epi32(x1, _mm256_slli_epi32(o1, 16));
			R[2][i] = _mm256_or_si256(e1, _mm256_slli_epi32(s1, 16));
			R[3][i] = _mm256_or_si256(o1, _mm256_and_si256(s1, hi16));
		}
	}
}

/* out[j][i] = r[i][j] for 8 x 8 u32. */
INLINE void transpose8(const __m256i r[8], __m256i out[8])
{
	__m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
	__m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
	__m256i t4 = _mm256_unpacklo_epi32(r[4], r[5]), t5 = _mm256_unpackhi_epi32(r[4], r[5]);
	__m256i t6 = _mm256_unpacklo_epi32(r[6], r[7]), t7 = _mm256_unpackhi_epi32(r[6], r[7]);
	__m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
	__m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
	__m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
	__m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
	out[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
	out[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
	out[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
	out[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
	out[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
	out[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
	out[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
	out[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

INLINE __m128i ld128(const uint8_t *p)
{
	return _mm_loadu_si128((const __m128i *)p);
}

INLINE __m256i ld2(const uint8_t *lo, const uint8_t *hi)
{
	return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)lo)),
				       _mm_loadu_si128((const __m128i *)hi), 1);
}

/*
 * rows8 for a packed pair: one vector per SE holds line 0's used half (lanes
 * 0..7) and line 1's (8..15); R[0] gets the even slots, R[1] the odd ones.
 * W: 32-bit counters here; the partner of a lane is the same lane of the
 * other 128-bit half.
 */
INLINE void rows8p(const struct dec_simd_pair *pp, const uint8_t *seg, size_t sb,
		   uint32_t stride, __m256i R[4][8], struct pfcur *pc, const uint32_t NSE,
		   const bool W)
{
	const __m256i ones = _mm256_set1_epi16(-1), hi16 = _mm256_set1_epi32((int)0xFFFF0000u);
	const __m256i keep = ld(pp->keep), sel = ld(pp->pairsel);
	const uint32_t o0 = pp->off + pp->hoff[0], o1 = pp->off + 32 + pp->hoff[1];
#pragma GCC unroll 8
	for (uint32_t i = 0; i < 8; i++) {
		const uint8_t *q = seg + i * sb;
		prefetch_slice(pc);
		__m256i v = ld2(q + o0, q + o1);
		__m256i x = v, o = _mm256_srli_epi32(v, 16), m = v;
		/* the pairs' min in 128 bits: line 0's half against line 1's read
		 * again from memory (a load, no cross-lane permute per SE) */
		__m128i mp = _mm_setzero_si128();
		if (W)
			mp = _mm_min_epu16(_mm256_castsi256_si128(v), ld128(q + o1));
#pragma GCC unroll 8
		for (uint32_t j = 1; j < NSE; j++) {
			const uint8_t *r = q + (size_t)j * stride;
			v = ld2(r + o0, r + o1);
			x = _mm256_add_epi32(x, v);
			o = _mm256_add_epi32(o, _mm256_srli_epi32(v, 16));
			m = _mm256_max_epu16(m, v);
			if (W)
				mp = _mm_max_epu16(mp, _mm_min_epu16(_mm256_castsi256_si128(v),
								     ld128(r + o1)));
		}
		prefetch_slice(pc);
		__m256i sm = _mm256_and_si256(_mm256_cmpeq_epi16(m, ones), keep);
		if (W) {
			/* sel picks line 1's lanes (the upper half) of high halves */
			__m128i e = _mm_cmpeq_epi16(mp, _mm256_castsi256_si128(ones));
			sm = _mm256_blendv_epi8(
				sm, _mm256_inserti128_si256(_mm256_castsi128_si256(e), e, 1), sel);
		}
		__m256i e = _mm256_sub_epi32(x, _mm256_slli_epi32(o, 16));
		R[0][i] = _mm256_or_si256(e, _mm256_slli_epi32(sm, 16));
		R[1][i] = _mm256_or_si256(o, _mm256_and_si256(sm, hi16));
	}
}

INLINE void group_rows(const struct dec_simd_group *g, const uint8_t *p, size_t sb,
		       __m256i U[][8], struct pfcur *pc, const uint32_t NSE)
{
	__m256i R[4][8];
	for (uint32_t q = 0; q < g->npairs; q++) {
		const struct dec_simd_pair *pp = &g->pair[q];
		if (pp->packed) {
			if (pp->wide)
				rows8p(pp, p + g->base, sb, g->stride, R, pc, NSE, true);
			else
				rows8p(pp, p + g->base, sb, g->stride, R, pc, NSE, false);
			transpose8(R[0], U[q * 4]);
			transpose8(R[1], U[q * 4 + 1]);
			continue;
		}
		if (pp->two)
			rows8(pp, p + g->base, sb, g->stride, R, pc, NSE, true);
		else
			rows8(pp, p + g->base, sb, g->stride, R, pc, NSE, false);
		for (uint32_t b = 0; b < 4; b++)
			if (pp->blocks >> b & 1)
				transpose8(R[b], U[q * 4 + b]);
	}
}

/*
 * One group over the first nsteps * 8 samples at p (nsteps <= 8, inside one
 * bitmap word).  Phase 1, per 8 samples: rows summed over the SEs and
 * transposed into T (one vector of 8 samples per slot).  Phase 2, per column:
 * its values for all the steps widened and stored as one contiguous run of
 * up to 64 u64, its saturation bits gathered in a register and OR'd into the
 * bitmap once, counted once.  Column parameters are read once per call, not
 * once per 8 samples, and no bitmap word is read and written per 8 samples.
 */
INLINE void group_steps(const struct dec_simd *s, const struct dec_simd_group *g,
			const uint8_t *p, size_t sb, uint32_t nsteps, uint64_t *vals,
			uint64_t *sat, uint32_t pos, uint64_t *nsat, const uint8_t *pf,
			size_t pflen, const uint32_t NSE)
{
	const uint32_t per = g->npairs * 32; /* vectors per step in T */
	__m256i *T = s->scratch;
	/* The prefetches for the next block go out a turn per sample and pair,
	 * between the SE sums, so that memory and compute overlap; in bursts
	 * (40 per 8-sample step, or the whole block in the cheap global pass)
	 * they fill the miss buffers and the core waits for them (perf: 28 % of
	 * the kernel's samples on one prefetch; 0.8x -> 1.0-1.2x memcpy). */
	struct pfcur pc = {pf, pf + pflen};
	for (uint32_t st = 0; st < nsteps; st++)
		group_rows(g, p + (size_t)st * 8 * sb, sb, (__m256i(*)[8])(T + st * per), &pc,
			   NSE);
	pf_rest(&pc);
	const struct dec_simd_col *sc = &s->col[g->col0], *wide = sc + g->nnarrow,
				  *end = sc + g->ncols;
	const unsigned shift = pos & 63;
	uint64_t n = 0, *sw = sat + pos / 64;
	/* Branch-free, saturation included: a test per 8 values would be
	 * mispredicted whenever saturation is not rare. */
	for (; sc < wide; sc++) {
		const __m256i *t = T + sc->lo;
		uint64_t *v = vals + sc->voff + pos, acc = 0;
#pragma GCC unroll 8
		for (uint32_t st = 0; st < nsteps; st++, t += per, v += 8) {
			__m256i lo = *t;
			/* saturated lanes become all-ones; sums stay below 2^31 */
			__m256i x = _mm256_or_si256(lo, _mm256_srai_epi32(lo, 31));
			_mm256_storeu_si256((__m256i *)v,
					    _mm256_cvtepi32_epi64(_mm256_castsi256_si128(x)));
			_mm256_storeu_si256((__m256i *)(v + 4),
					    _mm256_cvtepi32_epi64(_mm256_extracti128_si256(x, 1)));
			acc |= (uint64_t)(unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(lo))
			       << (8 * st);
		}
		sw[sc->soff] |= acc << shift;
		n += (uint64_t)__builtin_popcountll(acc);
	}
	for (; sc < end; sc++) {
		const __m256i *tl = T + sc->lo, *th = T + sc->hi;
		uint64_t *v = vals + sc->voff + pos, acc = 0;
#pragma GCC unroll 8
		for (uint32_t st = 0; st < nsteps; st++, tl += per, th += per, v += 8) {
			/* sum(lo + hi << 16) over SEs = sum(lo) + sum(hi) << 16; the
			 * low halves carry no saturation, the high ones the pair's
			 * (bits 16..31, so the sum is garbage there, and all-ones
			 * after the OR) */
			__m256i lo = *tl, hi = *th;
			__m256i m = _mm256_srai_epi32(hi, 31);
			__m256i a = _mm256_add_epi64(
				_mm256_cvtepu32_epi64(_mm256_castsi256_si128(lo)),
				_mm256_slli_epi64(_mm256_cvtepu32_epi64(_mm256_castsi256_si128(hi)),
						  16));
			__m256i b = _mm256_add_epi64(
				_mm256_cvtepu32_epi64(_mm256_extracti128_si256(lo, 1)),
				_mm256_slli_epi64(
					_mm256_cvtepu32_epi64(_mm256_extracti128_si256(hi, 1)), 16));
			a = _mm256_or_si256(a, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(m)));
			b = _mm256_or_si256(b,
					    _mm256_cvtepi32_epi64(_mm256_extracti128_si256(m, 1)));
			_mm256_storeu_si256((__m256i *)v, a);
			_mm256_storeu_si256((__m256i *)(v + 4), b);
			acc |= (uint64_t)(unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m))
			       << (8 * st);
		}
		sw[sc->soff] |= acc << shift;
		n += (uint64_t)__builtin_popcountll(acc);
	}
	*nsat += n;
}

/*
 * 8 x 8 u16 transpose in each 128-bit half: out[j] = slot j of rows 0..7 in
 * the low half, slot j + 8 in the high half.
 */
INLINE void transpose16(const __m256i r[8], __m256i out[8])
{
	__m256i a0 = _mm256_unpacklo_epi16(r[0], r[1]), a1 = _mm256_unpackhi_epi16(r[0], r[1]);
	__m256i a2 = _mm256_unpacklo_epi16(r[2], r[3]), a3 = _mm256_unpackhi_epi16(r[2], r[3]);
	__m256i a4 = _mm256_unpacklo_epi16(r[4], r[5]), a5 = _mm256_unpackhi_epi16(r[4], r[5]);
	__m256i a6 = _mm256_unpacklo_epi16(r[6], r[7]), a7 = _mm256_unpackhi_epi16(r[6], r[7]);
	__m256i b0 = _mm256_unpacklo_epi32(a0, a2), b1 = _mm256_unpackhi_epi32(a0, a2);
	__m256i b2 = _mm256_unpacklo_epi32(a1, a3), b3 = _mm256_unpackhi_epi32(a1, a3);
	__m256i b4 = _mm256_unpacklo_epi32(a4, a6), b5 = _mm256_unpackhi_epi32(a4, a6);
	__m256i b6 = _mm256_unpacklo_epi32(a5, a7), b7 = _mm256_unpackhi_epi32(a5, a7);
	out[0] = _mm256_unpacklo_epi64(b0, b4);
	out[1] = _mm256_unpackhi_epi64(b0, b4);
	out[2] = _mm256_unpacklo_epi64(b1, b5);
	out[3] = _mm256_unpackhi_epi64(b1, b5);
	out[4] = _mm256_unpacklo_epi64(b2, b6);
	out[5] = _mm256_unpackhi_epi64(b2, b6);
	out[6] = _mm256_unpacklo_epi64(b3, b7);
	out[7] = _mm256_unpackhi_epi64(b3, b7);
}

/*
 * group_steps for a group with nothing to sum (nse == 1): the used lines of
 * 8 samples are transposed as u16 slots, and each column widens its 8 slots.
 * A 16-bit value 0xFFFF, or a 32-bit one with both halves 0xFFFF, is
 * saturated: DEC_SATURATED, as in decode_cols.c.
 */
INLINE void group_steps16(const struct dec_simd *s, const struct dec_simd_group *g,
			  const uint8_t *p, size_t sb, uint32_t nsteps, uint64_t *vals,
			  uint64_t *sat, uint32_t pos, uint64_t *nsat, const uint8_t *pf,
			  size_t pflen)
{
	const uint32_t per = g->npairs * 16; /* vectors per step in T */
	__m256i *T = s->scratch;
	/* a turn per 2 samples of every pair, as in group_steps */
	struct pfcur pc = {pf, pf + pflen};
	for (uint32_t st = 0; st < nsteps; st++) {
		const uint8_t *q0 = p + (size_t)st * 8 * sb + g->base;
		for (uint32_t q = 0; q < g->npairs; q++) {
			const struct dec_simd_pair *pp = &g->pair[q];
			if (pp->packed) {
				__m256i r[8];
				const uint8_t *a = q0 + pp->off;
#pragma GCC unroll 8
				for (uint32_t i = 0; i < 8; i++) {
					if (i % 2 == 0)
						prefetch_slice(&pc);
					r[i] = ld2(a + i * sb + pp->hoff[0], a + i * sb + 32 + pp->hoff[1]);
				}
				transpose16(r, T + st * per + q * 16);
				continue;
			}
			for (uint32_t l = 0; l < 2; l++) {
				if (!(pp->blocks & (3u << (2 * l))))
					continue;
				__m256i r[8];
				const uint8_t *a = q0 + pp->off + l * 32;
				for (uint32_t i = 0; i < 8; i++) {
					if (i % 2 == 0 && l == 0)
						prefetch_slice(&pc);
					r[i] = ld(a + i * sb);
				}
				transpose16(r, T + st * per + (q * 2 + l) * 8);
			}
		}
	}
	pf_rest(&pc);
	const struct dec_simd_col *sc = &s->col[g->col0], *wide = sc + g->nnarrow,
				  *end = sc + g->ncols;
	const unsigned shift = pos & 63;
	const __m256i ffff = _mm256_set1_epi32(0xFFFF);
	uint64_t n = 0, *sw = sat + pos / 64;
	for (; sc < wide; sc++) {
		uint64_t *v = vals + sc->voff + pos, acc = 0;
		/* the 128-bit half as a byte offset: one load, no per-step choice */
		const uint8_t *tb = (const uint8_t *)(T + sc->lo) + (sc->half & 1) * 16;
#pragma GCC unroll 8
		for (uint32_t st = 0; st < nsteps; st++, tb += per * 32, v += 8) {
			__m256i x = _mm256_cvtepu16_epi32(_mm_load_si128((const __m128i *)tb));
			/* saturated lanes all-ones in u32, sign-extended to u64 */
			__m256i m = _mm256_cmpeq_epi32(x, ffff);
			x = _mm256_or_si256(x, m);
			_mm256_storeu_si256((__m256i *)v,
					    _mm256_cvtepi32_epi64(_mm256_castsi256_si128(x)));
			_mm256_storeu_si256((__m256i *)(v + 4),
					    _mm256_cvtepi32_epi64(_mm256_extracti128_si256(x, 1)));
			acc |= (uint64_t)(unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m))
			       << (8 * st);
		}
		sw[sc->soff] |= acc << shift;
		n += (uint64_t)__builtin_popcountll(acc);
	}
	for (; sc < end; sc++) {
		const uint8_t *tl = (const uint8_t *)(T + sc->lo) + (sc->half & 1) * 16;
		const uint8_t *th = (const uint8_t *)(T + sc->hi) + (sc->half >> 1 & 1) * 16;
		uint64_t *v = vals + sc->voff + pos, acc = 0;
#pragma GCC unroll 8
		for (uint32_t st = 0; st < nsteps; st++, tl += per * 32, th += per * 32, v += 8) {
			__m128i l = _mm_load_si128((const __m128i *)tl);
			__m128i h = _mm_load_si128((const __m128i *)th);
			__m128i x0 = _mm_unpacklo_epi16(l, h), x1 = _mm_unpackhi_epi16(l, h);
			__m128i m0 = _mm_cmpeq_epi32(x0, _mm_set1_epi32(-1));
			__m128i m1 = _mm_cmpeq_epi32(x1, _mm_set1_epi32(-1));
			/* zero-extended values; a saturated one all-ones through the mask */
			_mm256_storeu_si256((__m256i *)v,
					    _mm256_or_si256(_mm256_cvtepu32_epi64(x0),
							    _mm256_cvtepi32_epi64(m0)));
			_mm256_storeu_si256((__m256i *)(v + 4),
					    _mm256_or_si256(_mm256_cvtepu32_epi64(x1),
							    _mm256_cvtepi32_epi64(m1)));
			acc |= (uint64_t)(unsigned)(_mm_movemask_ps(_mm_castsi128_ps(m0)) |
						    _mm_movemask_ps(_mm_castsi128_ps(m1)) << 4)
			       << (8 * st);
		}
		sw[sc->soff] |= acc << shift;
		n += (uint64_t)__builtin_popcountll(acc);
	}
	*nsat += n;
}

static TARGET void group_block(const struct dec_simd *s, const struct dec_simd_group *g,
			       const uint8_t *p, size_t sb, uint32_t nsteps, uint64_t *vals,
			       uint64_t *sat, uint32_t pos, uint64_t *nsat, const uint8_t *pf,
			       size_t pflen)
{
	/* A whole block (8 steps, the steady state) gets constant trip counts
	 * too, so the per-column loops unroll. */
#define STEPS(call_n) (nsteps == 8 ? call_n(8) : call_n(nsteps))
#define G16(n) group_steps16(s, g, p, sb, n, vals, sat, pos, nsat, pf, pflen)
#define GS(n) group_steps(s, g, p, sb, n, vals, sat, pos, nsat, pf, pflen, NSE_)
	if (g->u16) {
		STEPS(G16);
		return;
	}
	/* The common SE counts get constant trip counts, so the SE loop unrolls. */
	switch (g->nse) {
#define NSE_ 2
	case 2: STEPS(GS); break;
#undef NSE_
#define NSE_ 4
	case 4: STEPS(GS); break;
#undef NSE_
#define NSE_ 8
	case 8: STEPS(GS); break;
#undef NSE_
#define NSE_ g->nse
	default: GS(nsteps); break;
#undef NSE_
	}
#undef GS
#undef G16
#undef STEPS
}

/*
 * steady_ts's check, 4 samples a vector: unsigned 64-bit compares as signed
 * ones of the values with the sign bit flipped (a difference is the same
 * either way).  About 4 instructions a sample instead of 13.
 */
TARGET bool dec_simd_ts(const uint8_t *p, size_t sb, uint32_t j, uint64_t last, uint64_t lim,
			uint64_t *ts)
{
	const __m256i S = _mm256_set1_epi64x(INT64_MIN);
	const __m256i limS = _mm256_xor_si256(_mm256_set1_epi64x((long long)lim), S);
	__m256i lastS = _mm256_xor_si256(_mm256_set1_epi64x((long long)last), S);
	__m256i ok = _mm256_set1_epi64x(-1), big = _mm256_setzero_si256();
	uint32_t i = 0;
	for (; i + 4 <= j; i += 4, p += 4 * sb) {
		uint64_t a, b, c, d;
		memcpy(&a, p, 8), memcpy(&b, p + sb, 8), memcpy(&c, p + 2 * sb, 8);
		memcpy(&d, p + 3 * sb, 8);
		__m256i t = _mm256_set_epi64x((long long)d, (long long)c, (long long)b, (long long)a);
		_mm256_storeu_si256((__m256i *)(ts + i), t);
		__m256i tS = _mm256_xor_si256(t, S);
		/* the previous timestamp of each lane: [last, t0, t1, t2] */
		__m256i pS = _mm256_blend_epi32(_mm256_permute4x64_epi64(tS, 0x90), lastS, 0x03);
		ok = _mm256_and_si256(ok, _mm256_cmpgt_epi64(tS, pS));
		big = _mm256_or_si256(
			big, _mm256_cmpgt_epi64(_mm256_xor_si256(_mm256_sub_epi64(tS, pS), S), limS));
		lastS = _mm256_permute4x64_epi64(tS, 0xFF);
	}
	bool bad = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_andnot_si256(ok, _mm256_set1_epi64x(-1)))) |
		   _mm256_movemask_pd(_mm256_castsi256_pd(big));
	if (i)
		last = ts[i - 1];
	for (; i < j; i++, p += sb) {
		uint64_t t;
		memcpy(&t, p, 8);
		bad |= (t <= last) | (t - last > lim);
		ts[i] = t;
		last = t;
	}
	return bad;
}

TARGET uint32_t dec_simd_block(const struct dec_simd *s, const uint8_t *p, size_t sb,
			       uint32_t k, uint64_t *vals, uint64_t *sat, uint32_t pos,
			       uint64_t *nsat, const uint8_t *pf, size_t pflen)
{
	uint32_t nsteps = k / 8;
	if (!nsteps) {
		for (size_t o = 0; o < pflen; o += 64)
			PREFETCH_L2(pf + o);
		return 0;
	}
	/* Each group's steps carry its share of the next block's prefetches. */
	for (uint32_t gi = 0; gi < s->ngroups; gi++) {
		const struct dec_simd_group *g = &s->group[gi];
		size_t a = (pflen * g->pf0 / 256) & ~(size_t)63;
		size_t b = g->pf1 == 256 ? pflen : (pflen * g->pf1 / 256) & ~(size_t)63;
		group_block(s, g, p, sb, nsteps, vals, sat, pos, nsat, pf + a, b - a);
	}
	return nsteps * 8;
}

#else

bool dec_simd_available(void)
{
	return false;
}

bool dec_simd_ts(const uint8_t *p, size_t sb, uint32_t j, uint64_t last, uint64_t lim,
		 uint64_t *ts)
{
	(void)p, (void)sb, (void)j, (void)last, (void)lim, (void)ts;
	return true;
}

uint32_t dec_simd_block(const struct dec_simd *s, const uint8_t *p, size_t sb, uint32_t k,
			uint64_t *vals, uint64_t *sat, uint32_t pos, uint64_t *nsat,
			const uint8_t *pf, size_t pflen)
{
	(void)s, (void)p, (void)sb, (void)k, (void)vals, (void)sat, (void)pos, (void)nsat;
	(void)pf, (void)pflen;
	return 0;
}

#endif
