/* SPDX-License-Identifier: MIT */
/*
 * emu/common/sample_gen.c: the template ring against the per-sample
 * reference it replaces.  Sample seq of a level is the reference's sample
 * seq mod K, byte for byte (timestamps aside, which the caller patches);
 * the truth handed out is exactly what the bytes say; levels change at the
 * sample asked for, however many levels come and go; the noise is still
 * there with the reference's spread.  (End to end through the shim and the
 * decoder: test_emu_rlc, test_record_spm, test_lying_analysis.)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emu_fake_layout.h"
#include "lib/testenv.h"

static uint16_t u16at(const uint8_t *s, unsigned off)
{
	return (uint16_t)(s[2 * off] | s[2 * off + 1] << 8);
}

/* What entry e's u16 must read for true value v (width, clamp or wrap, half). */
static uint16_t expect16(const struct emu_rlc_entry *e, uint64_t v)
{
	uint64_t lim = e->width == 16 ? 0xFFFF : 0xFFFFFFFFu;
	uint64_t w = e->no_clamp ? v & lim : (v > lim ? lim : v);
	return (uint16_t)(e->part == EMU_PART_HI ? w >> 16 : w);
}

/* Sample seq at level a from the ring equals the reference's sample seq mod K; its truth is what it says. */
static int check_one(struct emu_rlc_layout *L, uint32_t xcc, uint64_t seq, double a, uint64_t ref_seq)
{
	uint8_t ref[1024];
	uint64_t rt[128];
	const uint64_t *t = NULL;
	const uint8_t *s = emu_rlc_gen(L, xcc, seq, a, &t);
	if (!s || !t)
		return -1;
	emu_rlc_sample_level(L, xcc, ref_seq, a, 0, ref, rt);
	if (memcmp(s, ref, L->sample_bytes) || memcmp(t, rt, L->ncnt * 8))
		return -1;
	uint32_t c = 0;
	for (uint32_t i = 0; i < L->nent; i++) {
		const struct emu_rlc_entry *e = &L->ent[i];
		if (e->part == EMU_PART_TS) {
			if (u16at(s, e->off))
				return -1; /* the caller's to patch */
			continue;
		}
		if (u16at(s, e->off) != expect16(e, t[c++]))
			return -1;
	}
	return 0;
}

static void test_ring_is_reference_mod_k(void)
{
	struct emu_rlc_layout *L = fake_layout_mi300a4(2, 65504, NULL);
	L->ent[4].no_clamp = true; /* one TCC_HIT wraps instead of saturating (CNTR_MODE 2) */
	uint32_t K = emu_rlc_tpl_ring(L);
	CU_ASSERT(K >= 16 && (K & (K - 1)) == 0);
	uint64_t bad = 0, saturated = 0;
	for (uint64_t seq = 0; seq < 3 * K + 5; seq++) {
		bad += check_one(L, 2, seq, 1.0, seq % K) != 0;
		const uint64_t *t;
		const uint8_t *s = emu_rlc_gen(L, 2, seq, 1.0, &t);
		saturated += u16at(s, 5) == 0xFFFF && t[1] > 0xFFFF;
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(saturated, 3 * K + 5); /* TCC_HIT at 65504 cycles and full load: 16 bits saturate */
	fake_layout_free(L);
}

/* Levels in any order, more of them than the ring keeps: every sample at its own level. */
static void test_levels_change_at_the_sample(void)
{
	struct emu_rlc_layout *L = fake_layout_mi300a4(0, 16384, NULL);
	uint32_t K = emu_rlc_tpl_ring(L);
	static const double lv[] = { 1.0, 0.3, 0.0, 0.75, 0.5, 0.1, 0.9 };
	uint64_t bad = 0;
	/* Square-like: runs of 7 samples alternating two levels, then a ramp-like walk over seven. */
	for (uint64_t seq = 0; seq < 2 * K; seq++)
		bad += check_one(L, 0, seq, (seq / 7) % 2 ? 1.0 : 0.3, seq % K) != 0;
	for (uint64_t seq = 0; seq < 2 * K; seq++)
		bad += check_one(L, 0, seq, lv[(seq * 5 + seq / 3) % 7], seq % K) != 0;
	CU_ASSERT_EQUAL(bad, 0);
	/* A level change shows in the values: TA_TA_BUSY of SE0 at 0.3 is about 0.3 of full load. */
	const uint64_t *t;
	emu_rlc_gen(L, 0, 100, 1.0, &t);
	uint64_t full = t[16 + 4];
	emu_rlc_gen(L, 0, 100, 0.3, &t);
	CU_ASSERT(t[16 + 4] > full * 0.28 && t[16 + 4] < full * 0.32);
	fake_layout_free(L);
}

/* The switch back to the reference: every sample computed, no period. */
static void test_direct_is_the_reference(void)
{
	struct emu_rlc_layout *L = fake_layout_mi300a4(1, 16384, NULL);
	L->direct = true;
	uint32_t K = emu_rlc_tpl_ring(L);
	uint64_t bad = 0;
	for (uint64_t seq = K - 3; seq < K + 40; seq++)
		bad += check_one(L, 1, seq, 0.6, seq) != 0;
	CU_ASSERT_EQUAL(bad, 0);
	fake_layout_free(L);
}

/* Each XCC its own noise, also when one layout is asked for two. */
static void test_xcc_independent(void)
{
	struct emu_rlc_layout *L = fake_layout_mi300a4(0, 16384, NULL);
	uint8_t a[384];
	memcpy(a, emu_rlc_gen(L, 0, 9, 1.0, NULL), sizeof(a));
	CU_ASSERT(memcmp(a, emu_rlc_gen(L, 1, 9, 1.0, NULL), sizeof(a)) != 0);
	CU_ASSERT_EQUAL(check_one(L, 1, 9, 1.0, 9), 0);
	CU_ASSERT_EQUAL(memcmp(a, emu_rlc_gen(L, 0, 9, 1.0, NULL), sizeof(a)), 0);
	fake_layout_free(L);
}

/* The timestamp words land where the layout has them, the rest untouched. */
static void test_put_ticks(void)
{
	struct emu_rlc_layout *L = fake_layout_mi300a4(0, 16384, NULL);
	uint8_t s[384];
	memcpy(s, emu_rlc_gen(L, 0, 3, 1.0, NULL), sizeof(s));
	uint8_t ref[384];
	emu_rlc_sample_level(L, 0, 3, 1.0, 0x1122334455667788ull, ref, NULL);
	emu_rlc_put_ticks(L, s, 0x1122334455667788ull);
	CU_ASSERT_EQUAL(memcmp(s, ref, sizeof(s)), 0);
	CU_ASSERT_EQUAL(u16at(s, 0), 0x7788);
	CU_ASSERT_EQUAL(u16at(s, 3), 0x1122);
	fake_layout_free(L);
}

struct moments {
	double mean, sd;
};

static struct moments moments(struct emu_rlc_layout *L, unsigned val, uint64_t n)
{
	double s = 0, s2 = 0;
	for (uint64_t seq = 0; seq < n; seq++) {
		const uint64_t *t;
		emu_rlc_gen(L, 0, seq, 1.0, &t);
		s += (double)t[val];
		s2 += (double)t[val] * (double)t[val];
	}
	double m = s / (double)n;
	return (struct moments){ m, sqrt(s2 / (double)n - m * m) };
}

/* The ring keeps the model's per-sample noise: the same mean and spread as the reference over many samples. */
static void test_noise_kept(void)
{
	struct emu_rlc_layout *L = fake_layout_mi300a4(0, 16384, NULL);
	uint64_t n = 8 * (uint64_t)emu_rlc_tpl_ring(L);
	unsigned noisy = 0;
	for (unsigned val = 0; val < 72; val += 13) {
		if (val >= 16 && val < 32)
			continue; /* SQ values: SQ_CYCLES is exact, SQ_WAVES rounds to a handful */
		L->direct = false;
		struct moments r = moments(L, val, n);
		L->direct = true;
		struct moments d = moments(L, val, n);
		CU_ASSERT(fabs(r.mean - d.mean) < 0.005 * d.mean);
		if (d.sd < 0.005 * d.mean) {
			/* A busy counter pegged at the interval by its +10 % instance factor: no noise either way. */
			CU_ASSERT(r.sd < 0.005 * r.mean);
			continue;
		}
		noisy++;
		CU_ASSERT(r.sd > 0.7 * d.sd && r.sd < 1.3 * d.sd);
	}
	CU_ASSERT(noisy >= 3);
	fake_layout_free(L);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "ring_is_reference_mod_k", test_ring_is_reference_mod_k, NULL },
		{ "levels_change_at_the_sample", test_levels_change_at_the_sample, NULL },
		{ "direct_is_the_reference", test_direct_is_the_reference, NULL },
		{ "xcc_independent", test_xcc_independent, NULL },
		{ "put_ticks", test_put_ticks, NULL },
		{ "noise_kept", test_noise_kept, NULL },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("sample_gen", cases, argc, argv);
}
