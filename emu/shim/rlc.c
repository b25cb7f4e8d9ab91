/* SPDX-License-Identifier: MIT */
/*
 * The emulated RLC sample source (see rlc.h).  The layout is taken from the
 * registers only, never from spmtap's planner, so a planner that programs
 * the registers wrongly gets a stream that decodes wrongly.
 */
#include "emu/shim/rlc.h"
#include "emu/shim/kernel_activity.h"
#include "emu/common/readback.h"
#include "emu/shim/shim.h"
#include "emu/shim/spm_source.h"

#include <stdlib.h>
#include <string.h>

#define EMU_TS_ENTRY 0xF0F0u
#define EMU_UNUSED_ENTRY 0xFFFFu
#define EMU_SUPPRESSED_ENTRY 0x0000u

static uint32_t emu_rlc_ids; /* layout ids of this process (sample truth), derived or loaded */

/* $SPMTAP_EMU_SAMPLE_TEMPLATES=0: every sample from the counter model, not from the template ring. */
static bool emu_rlc_direct(void)
{
	const char *v = getenv("SPMTAP_EMU_SAMPLE_TEMPLATES");
	return v && !strcmp(v, "0");
}

struct emu_rlc_layout *emu_rlc_get(struct emu_rlc_layout *L)
{
	if (L)
		L->refs++;
	return L;
}

void emu_rlc_put(struct emu_rlc_layout *L)
{
	if (L && --L->refs == 0) {
		emu_rlc_tpl_drop(L);
		free(L);
	}
}

/* Unknown event ids are logged once per (gfx, block, event) in debug mode. */
static void emu_rlc_note_unknown(enum emu_gfx gfx, int blk, unsigned ev)
{
	static uint32_t seen[64];
	static int nseen;
	uint32_t key = (uint32_t)gfx << 24 | (uint32_t)blk << 16 | ev;
	for (int i = 0; i < nseen; i++)
		if (seen[i] == key)
			return;
	if (nseen < 64)
		seen[nseen++] = key;
	EMU_DBG("RLC: %s event %u on %s is not in the emulator's counter table: low-rate values\n",
		emu_blk((enum emu_blk)blk)->name, ev, emu_gfx_name(gfx));
}

struct emu_derive {
	const struct emu_gpu_regs *r;
	uint32_t xcc;
	struct emu_rlc_layout *L;
	uint32_t cap;
	char *err;
	size_t errlen;
};

static struct emu_rlc_entry *emu_ent_add(struct emu_derive *d)
{
	if (d->L->nent == d->cap)
		return NULL;
	struct emu_rlc_entry *e = &d->L->ent[d->L->nent++];
	memset(e, 0, sizeof(*e));
	return e;
}

/* One muxsel entry `v` at index idx of the global (se < 0) or SE RAM; the segment has nlines. */
static int emu_derive_entry(struct emu_derive *d, int se, const uint16_t *ram, uint32_t idx, uint32_t nlines,
			    uint32_t base)
{
	const struct emu_xcc_regs *x = &d->r->x[d->xcc];
	uint16_t v = ram[idx];
	bool se_ram = se >= 0;
	const char *ramname = se_ram ? "SE" : "global";
	char where[48];
	if (se_ram)
		snprintf(where, sizeof(where), "SE%d muxsel entry %u", se, idx);
	else
		snprintf(where, sizeof(where), "global muxsel entry %u", idx);
	if (v == EMU_UNUSED_ENTRY || v == EMU_SUPPRESSED_ENTRY)
		return 0; /* both read as 0 in the sample (the RLC's real output there is unknown) */
	struct emu_rlc_entry *e = emu_ent_add(d);
	if (!e) {
		snprintf(d->err, d->errlen, "too many muxsel entries");
		return -1;
	}
	e->off = (uint16_t)(base + idx);
	e->se = (int8_t)se;
	e->slot = (uint16_t)idx;
	e->mux = v;
	if (v == EMU_TS_ENTRY) {
		if (se_ram || idx >= 4) {
			snprintf(d->err, d->errlen, "%s is the timestamp code 0xF0F0; only global entries 0..3 may be",
				 where);
			return -1;
		}
		e->part = EMU_PART_TS;
		e->ts_word = (uint8_t)idx;
		return 0;
	}
	unsigned cntr = v & 0x3F, id = (v >> 6) & 0x1F, inst = v >> 11;
	int blk = emu_blk_by_spm_id(se_ram, id);
	if (blk < 0) {
		snprintf(d->err, d->errlen, "%s = 0x%04X names %s SPM block %u (%s), not modelled", where, v, ramname,
			 id, emu_spm_block_name(se_ram, id));
		return -1;
	}
	const struct emu_blk_info *bi = emu_blk((enum emu_blk)blk);
	if (cntr >= bi->slots || inst >= bi->inst[d->r->gfx]) {
		snprintf(d->err, d->errlen, "%s = 0x%04X: %s counter %u instance %u out of range (%u counters, %u instances)",
			 where, v, bi->name, cntr, inst, bi->slots, bi->inst[d->r->gfx]);
		return -1;
	}
	const uint32_t *sel = x->sel[blk][se_ram ? se : 0][inst];
	uint32_t selv, mode, event, ident;
	if (blk == EMU_BLK_SQ) {
		/* SQ: SELECT n = counter >> 1 holds the event; even = low half, odd = high half. */
		selv = sel[cntr >> 1];
		event = selv & 0x1FF;
		mode = (selv >> 20) & 0xF;
		ident = cntr >> 1;
		bool wide = mode == 3 || mode == 4;
		if (!wide && (cntr & 1)) {
			d->L->nent--; /* no high half in 16-bit mode: reads 0 */
			return 0;
		}
		e->part = wide ? ((cntr & 1) ? EMU_PART_HI : EMU_PART_LO) : EMU_PART_16;
	} else {
		/* 2.5: sub-counter k -> perfcounter k>>2, SELECT (k&2 == 0) or SELECT1, low or high field by k&1. */
		int reg = -1, reg0 = -1;
		for (int j = 0; j < bi->nregs; j++) {
			if (bi->perf[j] == cntr >> 2 && bi->sel1[j] == ((cntr & 2) != 0))
				reg = j;
			if (bi->perf[j] == cntr >> 2 && !bi->sel1[j])
				reg0 = j;
		}
		if (reg < 0 || reg0 < 0) {
			snprintf(d->err, d->errlen, "%s = 0x%04X: %s counter %u has no select register in the model", where,
				 v, bi->name, cntr);
			return -1;
		}
		uint32_t mask = (1u << bi->sel_bits) - 1;
		event = (cntr & 1) ? (sel[reg] >> 10) & mask : sel[reg] & mask;
		mode = (sel[reg0] >> 20) & 0xF; /* CNTR_MODE lives in SELECT only */
		ident = cntr;
		e->part = (mode == 3 || mode == 4) ? EMU_PART_LO : EMU_PART_16;
	}
	e->blk = (uint8_t)blk;
	e->inst = (uint8_t)inst;
	e->cntr = (uint8_t)cntr;
	e->event = (uint16_t)event;
	e->width = e->part == EMU_PART_16 ? 16 : 32;
	e->no_clamp = mode == 2 || mode == 4;
	e->m = emu_cnt_lookup(d->r->gfx, (enum emu_blk)blk, event);
	if (e->m.cls == EMU_CNT_UNKNOWN)
		emu_rlc_note_unknown(d->r->gfx, blk, event);
	e->key = emu_mix64((uint64_t)d->r->gpu_id << 48 ^ (uint64_t)d->xcc << 40 ^ (uint64_t)(se + 1) << 32 ^
			   (uint64_t)blk << 24 ^ (uint64_t)inst << 16 ^ (uint64_t)ident << 10 ^ event);
	if (blk != EMU_BLK_SQ && e->part == EMU_PART_LO) {
		/* A 32-bit non-SQ counter's high half sits 16 slots on, over a 0xFFFF filler (3.3). */
		uint32_t hi = idx + 16;
		if ((idx / 16) % 2 || hi >= nlines * 16 || ram[hi] != EMU_UNUSED_ENTRY) {
			snprintf(d->err, d->errlen,
				 "%s = 0x%04X: 32-bit %s counter needs entry %u (16 on, odd line) free (0xFFFF)", where, v,
				 bi->name, hi);
			return -1;
		}
		struct emu_rlc_entry *h = emu_ent_add(d);
		if (!h) {
			snprintf(d->err, d->errlen, "too many muxsel entries");
			return -1;
		}
		e = &d->L->ent[d->L->nent - 2];
		*h = *e;
		h->off = (uint16_t)(base + hi);
		h->slot = (uint16_t)hi;
		h->part = EMU_PART_HI;
	}
	return 0;
}

/* Entries a derive may hold: every RAM entry of the largest segments, and a derived HI half for each. */
static uint32_t emu_rlc_cap(uint32_t G, uint32_t num_se)
{
	return (G + 31 * num_se) * 16 * 2;
}

struct emu_rlc_layout *emu_rlc_derive(const struct emu_gpu_regs *r, uint32_t xcc, char *err, size_t errlen)
{
	const struct emu_xcc_regs *x = &r->x[xcc];
	uint32_t interval = x->spm_perfmon_cntl >> 16, seg = x->seg_size;
	uint32_t total = seg & 0xFF, G = (seg >> 11) & 0x1F, S[EMU_MAX_SE] = { 0 };
	S[0] = (seg >> 16) & 0x1F;
	S[1] = (seg >> 21) & 0x1F;
	S[2] = (seg >> 26) & 0x1F;
	if (interval < 32) {
		snprintf(err, errlen, "RLC_SPM_PERFMON_CNTL interval %u is below the minimum 32", interval);
		return NULL;
	}
	if (G == 0) {
		snprintf(err, errlen, "SEGMENT_SIZE 0x%08X has GLOBAL_NUM_LINE 0 (the timestamp needs a global line)",
			 seg);
		return NULL;
	}
	if (G + S[0] + S[1] + S[2] > total) {
		snprintf(err, errlen, "SEGMENT_SIZE 0x%08X: total %u is less than global + SE0..2 = %u", seg, total,
			 G + S[0] + S[1] + S[2]);
		return NULL;
	}
	S[3] = total - G - S[0] - S[1] - S[2]; /* SE3 is implied */
	if (r->num_se > 4) {
		uint32_t c1 = x->seg_size_core1, t1 = c1 & 0x7F;
		S[4] = (c1 >> 12) & 0x1F;
		S[5] = (c1 >> 17) & 0x1F;
		S[6] = (c1 >> 22) & 0x1F;
		S[7] = (c1 >> 27) & 0x1F;
		if (t1 != S[4] + S[5] + S[6] + S[7]) {
			snprintf(err, errlen, "SEGMENT_SIZE_CORE1 0x%08X: total %u is not SE4..7 = %u", c1, t1,
				 S[4] + S[5] + S[6] + S[7]);
			return NULL;
		}
	}
	uint32_t lines = G;
	for (uint32_t se = 0; se < r->num_se; se++) {
		if (S[se] > 31 || S[se] * 16 > EMU_MUXSEL_ENTRIES - 2) {
			snprintf(err, errlen, "SE%u has %u lines (at most 31)", se, S[se]);
			return NULL;
		}
		lines += S[se];
	}
	uint32_t cap = emu_rlc_cap(G, r->num_se);
	struct emu_rlc_layout *L = calloc(1, sizeof(*L) + cap * sizeof(L->ent[0]));
	if (!L) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	L->refs = 1;
	L->id = ++emu_rlc_ids;
	L->gpu_id = r->gpu_id;
	L->xcc = xcc;
	L->gfx = r->gfx;
	L->G = G;
	memcpy(L->S, S, sizeof(S));
	L->num_se = r->num_se;
	L->lines = lines;
	L->sample_bytes = lines * EMU_SPM_LINE;
	L->interval = interval;
	L->sclk_mhz = (uint32_t)emu_env_u64("SPMTAP_EMU_SCLK_MHZ", r->sclk_mhz);
	if (!L->sclk_mhz)
		L->sclk_mhz = r->sclk_mhz;
	L->direct = emu_rlc_direct();
	char wlerr[160];
	const char *wl = getenv("SPMTAP_EMU_WORKLOAD");
	L->wl_given = wl && *wl;
	emu_kact_block_fractions(L->kfrac);
	if (emu_workload_parse(wl, &L->wl, wlerr, sizeof(wlerr)))
		emu_log("SPMTAP_EMU_WORKLOAD=%s: %s; using constant:1\n", wl, wlerr);
	struct emu_derive d = { r, xcc, L, cap, err, errlen };
	for (uint32_t i = 0; i < G * 16; i++)
		if (emu_derive_entry(&d, -1, x->glb_ram, i, G, 0))
			goto fail;
	uint32_t base = G * 16;
	for (uint32_t se = 0; se < r->num_se; se++) {
		for (uint32_t i = 0; i < S[se] * 16; i++)
			if (emu_derive_entry(&d, (int)se, x->se_ram[se], i, S[se], base))
				goto fail;
		base += S[se] * 16;
	}
	/* A derived high half may override a 0xFFFF slot written as 0 earlier: order is irrelevant. */
	for (uint32_t i = 0; i < L->nent; i++)
		L->ncnt += L->ent[i].part != EMU_PART_TS;
	return L;
fail:
	free(L);
	return NULL;
}

size_t emu_rlc_layout_max_bytes(uint32_t num_se)
{
	return sizeof(struct emu_rlc_layout) + emu_rlc_cap(31, num_se) * sizeof(struct emu_rlc_entry);
}

void emu_rlc_layout_store(const struct emu_rlc_layout *L, void *dst, size_t cap)
{
	uint32_t n = L->nent;
	if (sizeof(*L) + (size_t)n * sizeof(L->ent[0]) > cap)
		n = (uint32_t)((cap - sizeof(*L)) / sizeof(L->ent[0]));
	struct emu_rlc_layout *d = dst;
	memcpy(d, L, sizeof(*L) + (size_t)n * sizeof(L->ent[0]));
	d->nent = n;
	d->tpl = NULL; /* per process */
	d->struth_checked = false;
}

struct emu_rlc_layout *emu_rlc_layout_load(const void *src, size_t cap)
{
	const struct emu_rlc_layout *s = src;
	if (cap < sizeof(*s) || s->nent > (cap - sizeof(*s)) / sizeof(s->ent[0]))
		return NULL;
	size_t bytes = sizeof(*s) + (size_t)s->nent * sizeof(s->ent[0]);
	struct emu_rlc_layout *L = malloc(bytes);
	if (!L)
		return NULL;
	memcpy(L, s, bytes);
	L->refs = 1;
	L->id = ++emu_rlc_ids;
	L->truth_header_done = false;
	L->tpl = NULL;
	L->struth_checked = false;
	L->direct = emu_rlc_direct();
	/* The counter models name static strings of the process that derived the layout: look them up here. */
	for (uint32_t i = 0; i < L->nent; i++)
		if (L->ent[i].part != EMU_PART_TS)
			L->ent[i].m = emu_cnt_lookup(L->gfx, (enum emu_blk)L->ent[i].blk, L->ent[i].event);
	return L;
}

/* ---- the source ---------------------------------------------------------------- */

/*
 * The activity of a sample at t, per block (docs/emulator.md "Counters
 * follow kernels"): the workload model's a(t) until the GPU has run a
 * kernel; then, per block, the levels of the dispatches running at t summed
 * times the block's fraction, on top of the workload if $SPMTAP_EMU_WORKLOAD
 * was given (else on idle from the first dispatch on), capped at 1, the
 * block's peak.  *k says which dispatches.
 */
static void emu_rlc_activity(const struct emu_spm_source_ctx *ctx, const struct emu_rlc_layout *L, uint64_t t,
			     struct emu_kact *k, struct emu_rlc_act *act)
{
	double a = emu_workload_activity(&L->wl, t);
	if (!ctx->gs || !emu_kact_at(ctx->gs, t, k)) {
		emu_rlc_act_all(act, a);
		return;
	}
	a = emu_kact_background(a, L->wl_given, k, t);
	for (int b = 0; b < EMU_NBLK; b++)
		act->a[b] = emu_kact_block(a, k->level, L->kfrac[b]);
}

/*
 * Sample u of period p: lines [from, from + n) of it into dst, the
 * timestamp patched when line 0 (the global segment's entries 0..3, where
 * the timestamp lives) is among them.
 */
static void emu_rlc_copy(const struct emu_spm_source_ctx *ctx, const struct emu_spm_period *p, uint32_t xcc,
			 uint64_t u, uint32_t from, uint32_t n, uint8_t *dst)
{
	struct emu_rlc_layout *L = p->layout;
	uint64_t t = emu_period_unit_ns(p, u);
	struct emu_kact k;
	struct emu_rlc_act a;
	emu_rlc_activity(ctx, L, t, &k, &a);
	const uint8_t *s = emu_rlc_gen_act(L, xcc, p->first_sample + u, &a, NULL);
	if (!s) {
		memset(dst, 0, (size_t)n * EMU_SPM_LINE); /* out of memory: a sample of zeros, never a crash */
		return;
	}
	memcpy(dst, s + (size_t)from * EMU_SPM_LINE, (size_t)n * EMU_SPM_LINE);
	if (from == 0)
		emu_rlc_put_ticks(L, dst, emu_clock_ticks(t));
}

static void emu_rlc_fill(const struct emu_spm_source_ctx *ctx, const struct emu_spm_period *p, uint32_t xcc,
			 uint64_t first_line, uint32_t nlines, uint8_t *dst)
{
	uint32_t U = p->unit_lines;
	uint64_t j = first_line - p->first_seq;
	while (nlines) {
		uint32_t from = (uint32_t)(j % U), n = U - from < nlines ? U - from : nlines;
		emu_rlc_copy(ctx, p, xcc, j / U, from, n, dst);
		dst += (size_t)n * EMU_SPM_LINE;
		j += n;
		nlines -= n;
	}
}

static void emu_rlc_produced(const struct emu_spm_source_ctx *ctx, const struct emu_spm_period *p, uint32_t xcc,
			     uint64_t u, uint64_t t_ns, uint32_t fate)
{
	struct emu_rlc_layout *L = p->layout;
	if (!L->struth_checked) {
		L->struth = emu_struth_enabled(); /* once per layout: getenv per sample was 2 % of a recording */
		L->struth_checked = true;
	}
	if (!L->struth)
		return;
	const uint64_t *vals = NULL;
	struct emu_kact k;
	struct emu_rlc_act a;
	emu_rlc_activity(ctx, L, t_ns, &k, &a);
	/* Lost unmade by a device behind real time: its existence, not its values, is the truth. */
	if (!(fate & EMU_UNIT_LATE) && !emu_rlc_gen_act(L, xcc, p->first_sample + u, &a, &vals))
		return;
	/* Which dispatches it saw (docs/emulator.md "Per-sample ground truth"): flag, count, the newest's seq. */
	if (k.count)
		fate |= EMU_UNIT_KERNEL | (k.count < 255 ? k.count : 255u) << 8 | (uint32_t)(k.newest & 0xFFFF) << 16;
	emu_struth_record(L, xcc, p->first_sample + u, emu_clock_ticks(t_ns), fate, vals);
}

const struct emu_spm_source emu_spm_source_rlc = { "rlc", emu_rlc_fill, emu_rlc_produced };
