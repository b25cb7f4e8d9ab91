/* SPDX-License-Identifier: MIT */
/* RLC sample bytes: the reference per sample and the template ring; see sample_gen.h. */
#include "emu/common/sample_gen.h"

#include <stdlib.h>
#include <string.h>

/*
 * Bytes a level's ring may take (samples and their truth): an L2's worth,
 * so that the copies of a few XCCs' rings stay in cache.  The ring has at
 * least 16 samples however large the layout, at most 1024.
 */
#define EMU_TPL_BUDGET (512u * 1024u)
#define EMU_TPL_MIN 16u
#define EMU_TPL_MAX 1024u

struct emu_tpl_level {
	bool live;
	struct emu_rlc_act a; /* the activity per block, compared exactly: a(t) takes few values except on a ramp */
	uint64_t used;  /* for replacing the least recently used level */
	uint8_t *bytes; /* K samples, timestamp words 0 */
	uint64_t *truth; /* K x ncnt true values */
	uint64_t *valid; /* bit i: template i computed (lazily: a level seen once costs one sample) */
};

struct emu_rlc_tpl {
	uint32_t K, xcc;
	uint64_t clock;
	int last;
	uint32_t nts;
	uint16_t ts_off[4];
	uint8_t ts_word[4];
	struct emu_tpl_level lv[EMU_RLC_TPL_LEVELS];
	/* The reference's one-sample cache (L->direct): fill asks once per line range. */
	bool d_valid;
	uint64_t d_seq;
	struct emu_rlc_act d_a;
	uint8_t *d_bytes;
	uint64_t *d_truth;
};

static void emu_put16(uint8_t *out, uint32_t off, uint32_t v)
{
	out[2 * off] = (uint8_t)v;
	out[2 * off + 1] = (uint8_t)(v >> 8);
}

static bool emu_act_eq(const struct emu_rlc_act *x, const struct emu_rlc_act *y)
{
	for (int b = 0; b < EMU_NBLK; b++)
		if (x->a[b] != y->a[b])
			return false;
	return true;
}

void emu_rlc_act_all(struct emu_rlc_act *x, double a)
{
	for (int b = 0; b < EMU_NBLK; b++)
		x->a[b] = a;
}

void emu_rlc_sample_level(const struct emu_rlc_layout *L, uint32_t xcc, uint64_t sample_seq, double a,
			  uint64_t ticks, uint8_t *out, uint64_t *truth)
{
	struct emu_rlc_act x;
	emu_rlc_act_all(&x, a);
	emu_rlc_sample_act(L, xcc, sample_seq, &x, ticks, out, truth);
}

void emu_rlc_sample_act(const struct emu_rlc_layout *L, uint32_t xcc, uint64_t sample_seq,
			const struct emu_rlc_act *act, uint64_t ticks, uint8_t *out, uint64_t *truth)
{
	memset(out, 0, L->sample_bytes);
	uint64_t sn = emu_mix64(sample_seq ^ (uint64_t)xcc << 56);
	uint32_t c = 0;
	for (uint32_t i = 0; i < L->nent; i++) {
		const struct emu_rlc_entry *e = &L->ent[i];
		if (e->part == EMU_PART_TS) {
			emu_put16(out, e->off, (uint32_t)(ticks >> (16 * e->ts_word)) & 0xFFFF);
			continue;
		}
		uint64_t v = emu_cnt_value(&e->m, L->interval, act->a[e->blk < EMU_NBLK ? e->blk : 0], e->key,
					   e->key ^ sn);
		uint64_t w;
		if (e->width == 16)
			w = e->no_clamp ? v & 0xFFFF : (v > 0xFFFF ? 0xFFFF : v);
		else
			w = e->no_clamp ? v & 0xFFFFFFFFu : (v > 0xFFFFFFFFu ? 0xFFFFFFFFu : v);
		emu_put16(out, e->off, (uint32_t)(e->part == EMU_PART_HI ? w >> 16 : w) & 0xFFFF);
		if (truth)
			truth[c++] = v;
	}
}

void emu_rlc_sample(const struct emu_rlc_layout *L, uint32_t xcc, uint64_t sample_seq, uint64_t t_ns,
		    uint64_t ticks, uint8_t *out, uint64_t *truth)
{
	emu_rlc_sample_level(L, xcc, sample_seq, emu_workload_activity(&L->wl, t_ns), ticks, out, truth);
}

uint32_t emu_rlc_tpl_ring(const struct emu_rlc_layout *L)
{
	size_t per = (size_t)L->sample_bytes + (size_t)L->ncnt * 8;
	uint32_t K = EMU_TPL_MAX;
	while (K > EMU_TPL_MIN && (size_t)K * per > EMU_TPL_BUDGET)
		K >>= 1;
	return K;
}

static void emu_tpl_level_free(struct emu_tpl_level *v)
{
	free(v->bytes);
	free(v->truth);
	free(v->valid);
	memset(v, 0, sizeof(*v));
}

void emu_rlc_tpl_drop(struct emu_rlc_layout *L)
{
	struct emu_rlc_tpl *T = L->tpl;
	if (!T)
		return;
	for (int i = 0; i < EMU_RLC_TPL_LEVELS; i++)
		emu_tpl_level_free(&T->lv[i]);
	free(T->d_bytes);
	free(T->d_truth);
	free(T);
	L->tpl = NULL;
}

static struct emu_rlc_tpl *emu_tpl_new(const struct emu_rlc_layout *L, uint32_t xcc)
{
	struct emu_rlc_tpl *T = calloc(1, sizeof(*T));
	if (!T)
		return NULL;
	T->K = emu_rlc_tpl_ring(L);
	T->xcc = xcc;
	T->last = -1;
	T->d_bytes = malloc(L->sample_bytes);
	T->d_truth = malloc(((size_t)L->ncnt + 1) * 8);
	if (!T->d_bytes || !T->d_truth) {
		free(T->d_bytes);
		free(T->d_truth);
		free(T);
		return NULL;
	}
	for (uint32_t i = 0; i < L->nent && T->nts < 4; i++)
		if (L->ent[i].part == EMU_PART_TS) {
			T->ts_off[T->nts] = L->ent[i].off;
			T->ts_word[T->nts++] = L->ent[i].ts_word;
		}
	return T;
}

void emu_rlc_put_ticks(const struct emu_rlc_layout *L, uint8_t *sample, uint64_t ticks)
{
	const struct emu_rlc_tpl *T = L->tpl;
	if (T) {
		for (uint32_t i = 0; i < T->nts; i++)
			emu_put16(sample, T->ts_off[i], (uint32_t)(ticks >> (16 * T->ts_word[i])) & 0xFFFF);
		return;
	}
	for (uint32_t i = 0; i < L->nent; i++)
		if (L->ent[i].part == EMU_PART_TS)
			emu_put16(sample, L->ent[i].off, (uint32_t)(ticks >> (16 * L->ent[i].ts_word)) & 0xFFFF);
}

/* The ring of level a: the one that has it, else a free or the least recently used one, emptied. */
static struct emu_tpl_level *emu_tpl_level(struct emu_rlc_tpl *T, const struct emu_rlc_layout *L,
					   const struct emu_rlc_act *a)
{
	T->clock++;
	if (T->last >= 0 && T->lv[T->last].live && emu_act_eq(&T->lv[T->last].a, a)) {
		T->lv[T->last].used = T->clock;
		return &T->lv[T->last];
	}
	int pick = 0;
	for (int i = 0; i < EMU_RLC_TPL_LEVELS; i++) {
		struct emu_tpl_level *v = &T->lv[i];
		if (v->live && emu_act_eq(&v->a, a)) {
			pick = i;
			goto found;
		}
	}
	for (int i = 1; i < EMU_RLC_TPL_LEVELS; i++) {
		const struct emu_tpl_level *v = &T->lv[i], *p = &T->lv[pick];
		if (!v->live ? p->live : (p->live && v->used < p->used))
			pick = i;
	}
	struct emu_tpl_level *v = &T->lv[pick];
	size_t words = (T->K + 63) / 64;
	if (!v->bytes) {
		v->bytes = malloc((size_t)T->K * L->sample_bytes);
		v->truth = malloc((size_t)T->K * L->ncnt * 8 + 8);
		v->valid = malloc(words * 8);
		if (!v->bytes || !v->truth || !v->valid) {
			emu_tpl_level_free(v);
			return NULL;
		}
	}
	memset(v->valid, 0, words * 8);
	v->live = true;
	v->a = *a;
found:
	T->lv[pick].used = T->clock;
	T->last = pick;
	return &T->lv[pick];
}

const uint8_t *emu_rlc_gen(struct emu_rlc_layout *L, uint32_t xcc, uint64_t seq, double a,
			   const uint64_t **truth)
{
	struct emu_rlc_act x;
	emu_rlc_act_all(&x, a);
	return emu_rlc_gen_act(L, xcc, seq, &x, truth);
}

const uint8_t *emu_rlc_gen_act(struct emu_rlc_layout *L, uint32_t xcc, uint64_t seq, const struct emu_rlc_act *a,
			       const uint64_t **truth)
{
	struct emu_rlc_tpl *T = L->tpl;
	if (!T) {
		T = L->tpl = emu_tpl_new(L, xcc);
		if (!T)
			return NULL;
	}
	if (T->xcc != xcc) {
		/* The noise depends on the XCC: another XCC's templates are not this one's. */
		for (int i = 0; i < EMU_RLC_TPL_LEVELS; i++)
			T->lv[i].live = false;
		T->d_valid = false;
		T->xcc = xcc;
	}
	if (L->direct) {
		if (!T->d_valid || T->d_seq != seq || !emu_act_eq(&T->d_a, a)) {
			emu_rlc_sample_act(L, xcc, seq, a, 0, T->d_bytes, T->d_truth);
			T->d_valid = true;
			T->d_seq = seq;
			T->d_a = *a;
		}
		if (truth)
			*truth = T->d_truth;
		return T->d_bytes;
	}
	struct emu_tpl_level *v = emu_tpl_level(T, L, a);
	if (!v)
		return NULL;
	uint32_t i = (uint32_t)(seq & (T->K - 1));
	uint8_t *s = v->bytes + (size_t)i * L->sample_bytes;
	uint64_t *t = v->truth + (size_t)i * L->ncnt;
	if (!(v->valid[i / 64] >> (i % 64) & 1)) {
		emu_rlc_sample_act(L, xcc, i, a, 0, s, t);
		v->valid[i / 64] |= 1ull << (i % 64);
	}
	if (truth)
		*truth = t;
	return s;
}
