/* SPDX-License-Identifier: MIT */
/*
 * Counter names -> slots, muxsel RAMs, selects and segment sizes, following
 * aqlprofile's newest SPM builder (AQP-NEW, PROGRAMMING.md §3.3) and the
 * slot rules of SPM.md §5.3-§5.6.  docs/programming.md states each rule.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "spm/plan.h"
#include "spm/regs_gfx9.h"
#include "spm/spm.h"

#define DIV_ROUND_UP(a, b) (((a) + (b) - 1) / (b))
#define TS_ENTRIES 4 /* timestamp: the first 4 even entries of the global segment */

int spm_interval_round(uint32_t requested, uint32_t *rounded, char *err, size_t errlen)
{
	/* aqlprofile: add 16 and clear the low 5 bits, i.e. nearest multiple of 32. */
	uint64_t r = ((uint64_t)requested + SPM_INTERVAL_STEP / 2) & ~(uint64_t)(SPM_INTERVAL_STEP - 1);

	*rounded = 0;
	if (r < SPM_INTERVAL_MIN || r > SPM_INTERVAL_MAX)
		return spmtap_seterr(err, errlen, ERANGE,
				     "sample interval %u SCLK cycles is out of range: use %u..%u in steps of %u",
				     requested, SPM_INTERVAL_MIN, SPM_INTERVAL_MAX, SPM_INTERVAL_STEP);
	*rounded = (uint32_t)r;
	return 0;
}

int spm_geometry_from_device(const struct spm_device *dev, struct spm_geometry *geo,
			     enum spm_gfx *gfx, char *err, size_t errlen)
{
	int r = spm_gfx_parse(dev->gfx, gfx, err, errlen);
	uint32_t xcc = dev->num_xcc ? dev->num_xcc : 1;

	if (r)
		return r;
	if (!dev->num_se || !dev->cu_count)
		return spmtap_seterr(err, errlen, EINVAL,
				     "%s: the topology gives no shader-engine or CU count", dev->gfx);
	geo->num_se = dev->num_se;
	geo->num_xcc = xcc;
	geo->cus_per_se = DIV_ROUND_UP(dev->cu_count, xcc * dev->num_se);
	return 0;
}

/* ---- requests ------------------------------------------------------------ */

/* Which request produced a plan counter, for error messages. */
struct origin {
	size_t req;
};

struct builder {
	struct spm_plan *p;
	const struct spm_plan_request *req;
	size_t nreq;                  /* requests considered (a prefix when searching) */
	struct origin from[SPM_PLAN_MAX_COUNTERS];
	uint16_t next_sub[SPM_BLK_COUNT][SPM_MAX_INSTANCES];
	size_t idx[SPM_PLAN_MAX_COUNTERS]; /* layout scratch */
	char *err;
	size_t errlen;
};

/* "NAME" or "NAME[i]"; *index = -1 when absent. */
static int parse_request(const char *text, char *name, size_t len, int *index, char *err,
			 size_t errlen)
{
	const char *open = strchr(text, '[');
	size_t n = open ? (size_t)(open - text) : strlen(text);

	*index = -1;
	if (!n || n >= len)
		return spmtap_seterr(err, errlen, EINVAL, "malformed counter name \"%s\"", text);
	memcpy(name, text, n);
	name[n] = '\0';
	if (!open)
		return 0;
	char *end;
	errno = 0;
	long v = strtol(open + 1, &end, 10);
	if (end == open + 1 || !isdigit((unsigned char)open[1]) || *end != ']' || end[1] || errno ||
	    v < 0 || v > 255)
		return spmtap_seterr(err, errlen, EINVAL,
				     "malformed instance in \"%s\": use NAME or NAME[i] with a decimal i", text);
	*index = (int)v;
	return 0;
}

static bool multi_instance(enum spm_block b)
{
	return spm_block_info(b)->inst_rule != SPM_INST_ONE;
}

static int add_counter(struct builder *b, size_t req, const struct spm_counter *c, unsigned int inst)
{
	struct spm_plan *p = b->p;
	const struct spm_block_info *bi = spm_block_info(c->block);

	for (size_t i = 0; i < p->ncounters; i++) {
		if (p->counters[i].ctr != c || p->counters[i].instance != inst)
			continue;
		if (b->from[i].req == req)
			continue;
		return spmtap_seterr(b->err, b->errlen, EEXIST, "%s is requested twice (\"%s\" and \"%s\")",
				     p->counters[i].name, b->req->counters[b->from[i].req],
				     b->req->counters[req]);
	}
	if (p->ncounters >= SPM_PLAN_MAX_COUNTERS)
		return spmtap_seterr(b->err, b->errlen, E2BIG,
				     "too many counters for one pass: more than %d streamed values",
				     SPM_PLAN_MAX_COUNTERS);
	if (c->event >= (1u << bi->sel_bits))
		return spmtap_seterr(b->err, b->errlen, EINVAL,
				     "catalog error: %s event %u does not fit %s's %u-bit select field",
				     c->name, c->event, bi->name, bi->sel_bits);

	struct spm_plan_counter *pc = &p->counters[p->ncounters];
	memset(pc, 0, sizeof(*pc));
	pc->ctr = c;
	pc->block = c->block;
	pc->segment = bi->segment;
	pc->event = c->event;
	pc->instance = (uint8_t)inst;
	unsigned int k = b->next_sub[c->block][inst]++;
	pc->sub = (uint8_t)(k > 255 ? 255 : k); /* >= slots either way: refused by check_slots */
	pc->hi_slot = -1;
	if (multi_instance(c->block))
		snprintf(pc->name, sizeof(pc->name), "%s[%u]", c->name, inst);
	else
		snprintf(pc->name, sizeof(pc->name), "%s", c->name);
	b->from[p->ncounters].req = req;
	p->ncounters++;
	return 0;
}

/* A block instance has `slots` sub-counters: name the requests that do not fit. */
static int check_slots(struct builder *b)
{
	struct spm_plan *p = b->p;

	for (size_t i = 0; i < p->ncounters; i++) {
		const struct spm_block_info *bi = spm_block_info(p->counters[i].block);
		if (p->counters[i].sub < bi->slots)
			continue;

		char have[256] = "", drop[256] = "";
		size_t ho = 0, dof = 0;
		size_t last_req = (size_t)-1;
		for (size_t j = 0; j < p->ncounters; j++) {
			const struct spm_plan_counter *pc = &p->counters[j];
			if (pc->block != bi->id || b->from[j].req == last_req)
				continue;
			last_req = b->from[j].req;
			const char *text = b->req->counters[last_req];
			bool over = false;
			for (size_t k = j; k < p->ncounters && b->from[k].req == last_req; k++)
				over |= p->counters[k].sub >= bi->slots;
			if (over && dof < sizeof(drop))
				dof += (size_t)snprintf(drop + dof, sizeof(drop) - dof, "%s%s", dof ? ", " : "", text);
			else if (!over && ho < sizeof(have))
				ho += (size_t)snprintf(have + ho, sizeof(have) - ho, "%s%s", ho ? ", " : "", text);
		}
		return spmtap_seterr(b->err, b->errlen, E2BIG,
				     "too many %s counters for one pass: each %s instance streams at most %u%s "
				     "(kept: %s); drop %s",
				     bi->name, bi->name, bi->slots,
				     bi->width == 32 ? " 32-bit counters" : " sub-counters", have, drop);
	}
	return 0;
}

static int expand_requests(struct builder *b)
{
	const struct spm_plan_request *req = b->req;
	struct spm_plan *p = b->p;

	for (size_t r = 0; r < b->nreq; r++) {
		char name[64];
		int index, ret;
		const struct spm_counter *c;

		if (!req->counters[r])
			return spmtap_seterr(b->err, b->errlen, EINVAL, "counter %zu is NULL", r);
		ret = parse_request(req->counters[r], name, sizeof(name), &index, b->err, b->errlen);
		if (ret)
			return ret;
		ret = spm_catalog_lookup(p->cat, name, &c, b->err, b->errlen);
		if (ret)
			return ret;

		const struct spm_block_info *bi = spm_block_info(c->block);
		unsigned int n = spm_catalog_instances(p->cat, c->block, p->geo.cus_per_se);
		if (index >= 0 && !multi_instance(c->block))
			return spmtap_seterr(b->err, b->errlen, EINVAL,
					     "%s has one %s instance %s; request it as %s without [i]",
					     req->counters[r], bi->name,
					     bi->segment == SPM_SEG_SE ? "per SE (read in every SE segment)"
								       : "per XCC",
					     c->name);
		if (index >= 0 && (unsigned int)index >= n)
			return spmtap_seterr(b->err, b->errlen, ERANGE,
					     "%s: %s has %u %s instances %s (0..%u)", req->counters[r],
					     p->cat->name, n, bi->name,
					     bi->inst_rule == SPM_INST_PER_CU ? "per SE on this device, one per CU"
									      : "per XCC",
					     n - 1);
		for (unsigned int i = 0; i < n; i++) {
			if (index >= 0 && (unsigned int)index != i)
				continue;
			ret = add_counter(b, r, c, i);
			if (ret)
				return ret;
		}
	}
	return check_slots(b);
}

/* ---- slots and lines ------------------------------------------------------ */

/* k-th entry of a parity list -> u16 index in the segment (SPM.md §5.3). */
static uint16_t even_slot(unsigned int k)
{
	return (uint16_t)(32 * (k / 16) + k % 16);
}

static uint16_t odd_slot(unsigned int k)
{
	return (uint16_t)(16 + 32 * (k / 16) + k % 16);
}

/* 32-bit counters first (so hi = lo + 16), then block order, instance, sub-counter. */
static bool before(const struct spm_plan_counter *x, const struct spm_plan_counter *y)
{
	unsigned int wx = spm_block_info(x->block)->width, wy = spm_block_info(y->block)->width;

	if (wx != wy)
		return wx == 32;
	if (x->block != y->block)
		return x->block < y->block;
	if (x->instance != y->instance)
		return x->instance < y->instance;
	return x->sub < y->sub;
}

static uint16_t muxsel(const struct spm_plan_counter *pc, unsigned int counter)
{
	return (uint16_t)(counter | (unsigned int)spm_block_info(pc->block)->spm_id << GFX9_MUXSEL_BLOCK_SHIFT |
			  (unsigned int)pc->instance << GFX9_MUXSEL_INSTANCE_SHIFT);
}

/* Assign slots of one segment; returns its line count. */
static uint32_t layout_segment(struct builder *b, enum spm_segment seg)
{
	struct spm_plan *p = b->p;
	size_t *idx = b->idx, n = 0;
	bool any32 = false;

	for (size_t i = 0; i < p->ncounters; i++) {
		if (p->counters[i].segment != seg)
			continue;
		idx[n++] = i;
		any32 |= spm_block_info(p->counters[i].block)->width == 32;
	}
	/* Stable insertion sort: n is at most a few hundred. */
	for (size_t i = 1; i < n; i++) {
		size_t v = idx[i], j = i;
		for (; j > 0 && before(&p->counters[v], &p->counters[idx[j - 1]]); j--)
			idx[j] = idx[j - 1];
		idx[j] = v;
	}

	unsigned int ne = seg == SPM_SEG_GLOBAL ? TS_ENTRIES : 0;
	/* AQP-NEW pads the global odd line with 4 fillers when a global
	 * counter is 32-bit, so its high half lands under its low half. */
	unsigned int no = seg == SPM_SEG_GLOBAL && any32 ? TS_ENTRIES : 0;

	for (size_t i = 0; i < n; i++) {
		struct spm_plan_counter *pc = &p->counters[idx[i]];
		if (spm_block_info(pc->block)->width == 32) {
			/* Placed before every 16-bit counter, so ne == no here. */
			pc->slot = even_slot(ne++);
			pc->hi_slot = odd_slot(no++);
			pc->muxsel = muxsel(pc, 2u * pc->sub);
			pc->muxsel_hi = muxsel(pc, 2u * pc->sub + 1);
		} else {
			pc->slot = pc->sub & 1 ? odd_slot(no++) : even_slot(ne++);
			pc->muxsel = muxsel(pc, pc->sub);
		}
	}
	/* aqlprofile's rule: an even number of lines; the global segment >= 2. */
	unsigned int lines = DIV_ROUND_UP(ne, 16) > DIV_ROUND_UP(no, 16) ? DIV_ROUND_UP(ne, 16)
									: DIV_ROUND_UP(no, 16);
	return 2 * lines;
}

static void fill_ram(uint16_t *ram, size_t n, const struct spm_plan *p, enum spm_segment seg)
{
	for (size_t i = 0; i < n; i++)
		ram[i] = GFX9_MUXSEL_UNUSED;
	if (seg == SPM_SEG_GLOBAL)
		for (size_t i = 0; i < TS_ENTRIES; i++)
			ram[i] = GFX9_MUXSEL_TIMESTAMP;
	for (size_t i = 0; i < p->ncounters; i++) {
		const struct spm_plan_counter *pc = &p->counters[i];
		if (pc->segment != seg)
			continue;
		ram[pc->slot] = pc->muxsel;
		if (pc->hi_slot >= 0)
			ram[pc->hi_slot] = pc->muxsel_hi;
	}
}

static uint32_t segment_size(uint32_t g, uint32_t s, uint32_t num_se)
{
	uint32_t se4 = num_se < 4 ? num_se : 4;
	uint32_t v = (g + se4 * s) & GFX9_SEGSZ_TOTAL_MASK;

	v |= g << GFX9_SEGSZ_GLOBAL_SHIFT;
	/* SE3 has no field: the RLC takes total minus the others. */
	for (uint32_t se = 0; se < 3 && se < num_se; se++)
		v |= s << (GFX9_SEGSZ_SE0_SHIFT + GFX9_SEGSZ_SE_BITS * se);
	return v;
}

static uint32_t segment_size_core1(uint32_t s, uint32_t num_se)
{
	uint32_t extra = num_se > 4 ? num_se - 4 : 0;
	uint32_t v = (extra * s) & GFX9_SEGSZ_CORE1_TOTAL_MASK;

	for (uint32_t se = 0; se < extra; se++)
		v |= s << (GFX9_SEGSZ_CORE1_SE4_SHIFT + GFX9_SEGSZ_SE_BITS * se);
	return v;
}

/* Line limits; the message is completed by the caller with what to drop. */
static int check_lines(const struct spm_plan *p, char *why, size_t len)
{
	uint32_t se4 = p->geo.num_se < 4 ? p->geo.num_se : 4;
	uint32_t extra = p->geo.num_se > 4 ? p->geo.num_se - 4 : 0;

	if (p->global_lines > SPM_MAX_LINES)
		return spmtap_seterr(why, len, E2BIG, "the global segment needs %u lines (at most %u)",
				     p->global_lines, SPM_MAX_LINES);
	if (p->se_lines > SPM_MAX_LINES)
		return spmtap_seterr(why, len, E2BIG, "each SE segment needs %u lines (at most %u)",
				     p->se_lines, SPM_MAX_LINES);
	if (p->global_lines + se4 * p->se_lines > SPM_MAX_TOTAL_LINES)
		return spmtap_seterr(why, len, E2BIG, "a sample needs %u lines in SEGMENT_SIZE (at most %u)",
				     p->global_lines + se4 * p->se_lines, SPM_MAX_TOTAL_LINES);
	if (extra * p->se_lines > SPM_MAX_CORE1_LINES)
		return spmtap_seterr(why, len, E2BIG, "SEs 4..7 need %u lines in SEGMENT_SIZE_CORE1 (at most %u)",
				     extra * p->se_lines, SPM_MAX_CORE1_LINES);
	return 0;
}

static int layout(struct builder *b, char *why, size_t len)
{
	b->p->global_lines = layout_segment(b, SPM_SEG_GLOBAL);
	b->p->se_lines = layout_segment(b, SPM_SEG_SE);
	return check_lines(b->p, why, len);
}

/* ---- selects ------------------------------------------------------------- */

static int add_select(struct spm_plan *p, enum spm_block blk, int32_t inst, uint32_t reg, uint32_t value)
{
	if (p->nselects >= SPM_PLAN_MAX_SELECTS)
		return -E2BIG;
	p->selects[p->nselects++] = (struct spm_plan_select){ blk, inst, reg, value };
	return 0;
}

/*
 * Sub-counter k of a block instance = perfcounter k>>2; k&2 picks SELECT or
 * SELECT1, k&1 the field (PROGRAMMING.md §2.5, AQP-NEW).  CNTR_MODE lives
 * in SELECT only, so SELECT is written whenever its perfcounter is used.
 */
static int build_selects(struct spm_plan *p, char *err, size_t errlen)
{
	p->nselects = 0;
	for (int blk = 0; blk < SPM_BLK_COUNT; blk++) {
		const struct spm_block_info *bi = spm_block_info((enum spm_block)blk);
		if (blk == SPM_BLK_SQ || bi->segment == SPM_SEG_NONE)
			continue;
		for (unsigned int inst = 0; inst < SPM_MAX_INSTANCES; inst++) {
			int32_t ev[SPM_MAX_PERFCOUNTERS * 4];
			bool any = false;
			for (size_t k = 0; k < SPM_MAX_PERFCOUNTERS * 4; k++)
				ev[k] = -1;
			for (size_t i = 0; i < p->ncounters; i++) {
				const struct spm_plan_counter *pc = &p->counters[i];
				if ((int)pc->block == blk && pc->instance == inst) {
					ev[pc->sub] = pc->event;
					any = true;
				}
			}
			if (!any)
				continue;
			for (unsigned int pcn = 0; pcn < SPM_MAX_PERFCOUNTERS; pcn++) {
				const int32_t *e = &ev[4 * pcn];
				if (e[0] < 0 && e[1] < 0 && e[2] < 0 && e[3] < 0)
					continue;
				bool need1 = e[2] >= 0 || e[3] >= 0;
				if (pcn >= bi->nsel || !bi->sel[pcn].select || (need1 && !bi->sel[pcn].select1))
					return spmtap_seterr(err, errlen, EINVAL,
							     "catalog error: %s has no select register for sub-counter %u",
							     bi->name, 4 * pcn);
				uint32_t sel = (uint32_t)(e[0] < 0 ? 0 : e[0]) |
					       (uint32_t)(e[1] < 0 ? 0 : e[1]) << GFX9_PERF_SEL1_SHIFT |
					       (uint32_t)GFX9_SPM_MODE_16BIT_CLAMP << GFX9_CNTR_MODE_SHIFT;
				if (add_select(p, bi->id, (int32_t)inst, bi->sel[pcn].select, sel))
					goto full;
				if (!need1)
					continue;
				uint32_t sel1 = (uint32_t)(e[2] < 0 ? 0 : e[2]) |
						(uint32_t)(e[3] < 0 ? 0 : e[3]) << GFX9_PERF_SEL1_SHIFT;
				if (add_select(p, bi->id, (int32_t)inst, bi->sel[pcn].select1, sel1))
					goto full;
			}
		}
	}
	/* SQ: counter n -> SQ_PERFCOUNTERn_SELECT, 32-bit clamp (PROGRAMMING.md §2.5). */
	p->has_sq = false;
	for (size_t i = 0; i < p->ncounters; i++) {
		const struct spm_plan_counter *pc = &p->counters[i];
		if (pc->block != SPM_BLK_SQ)
			continue;
		p->has_sq = true;
		if (add_select(p, SPM_BLK_SQ, -1, GFX9_SQ_PERFCOUNTER0_SELECT + pc->sub,
			       GFX9_SQ_SPM_SELECT | pc->event))
			goto full;
	}
	return 0;
full:
	return spmtap_seterr(err, errlen, E2BIG, "too many select writes (more than %d)",
			     SPM_PLAN_MAX_SELECTS);
}

/* ---- the plan ------------------------------------------------------------ */

/* *lines_full: the request failed only the line limits. */
static int plan_prefix(struct builder *b, size_t nreq, char *why, size_t whylen, bool *lines_full)
{
	b->nreq = nreq;
	b->p->ncounters = 0;
	memset(b->next_sub, 0, sizeof(b->next_sub));
	*lines_full = false;
	int r = expand_requests(b);
	if (r)
		return r;
	r = layout(b, why, whylen);
	*lines_full = r != 0;
	return r;
}

/* The largest request prefix that fits names what to drop. */
static int explain_too_big(struct builder *b, const char *why)
{
	char drop[384] = "";
	size_t off = 0, fit = 0;
	char *saved_err = b->err;
	bool full;

	b->err = NULL;
	for (size_t n = b->req->ncounters; n-- > 0;) {
		if (!plan_prefix(b, n, NULL, 0, &full)) {
			fit = n;
			break;
		}
	}
	b->err = saved_err;
	for (size_t i = fit; i < b->req->ncounters && off < sizeof(drop); i++)
		off += (size_t)snprintf(drop + off, sizeof(drop) - off, "%s%s", off ? ", " : "",
					b->req->counters[i]);
	return spmtap_seterr(b->err, b->errlen, E2BIG,
			     "too many counters for one pass: %s; drop %s (or request single instances as NAME[i])",
			     why, drop);
}

static int geometry_check(const struct spm_plan_request *req, enum spm_gfx gfx, char *err, size_t errlen)
{
	uint32_t max_se = gfx == SPM_GFX_90A ? 8 : 4;

	if (!req->geo.num_se || req->geo.num_se > max_se)
		return spmtap_seterr(err, errlen, EINVAL,
				     "%u shader engines per XCC: %s SPM programming describes 1..%u", req->geo.num_se,
				     spm_gfx_name(gfx), max_se);
	if (!req->geo.cus_per_se)
		return spmtap_seterr(err, errlen, EINVAL, "CUs per SE is 0: the device geometry is incomplete");
	return 0;
}

int spm_plan_create(const struct spm_plan_request *req, struct spm_plan **out, char *err, size_t errlen)
{
	struct builder *b = NULL;
	struct spm_plan *p = NULL;
	enum spm_gfx gfx;
	char why[160];
	int r;

	*out = NULL;
	if (!req || (req->ncounters && !req->counters))
		return spmtap_seterr(err, errlen, EINVAL, "no plan request");
	r = spm_gfx_parse(req->gfx, &gfx, err, errlen);
	if (r)
		return r;
	r = geometry_check(req, gfx, err, errlen);
	if (r)
		return r;
	p = calloc(1, sizeof(*p));
	b = calloc(1, sizeof(*b));
	if (!p || !b) {
		r = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
		goto fail;
	}
	p->gfx = gfx;
	for (size_t i = 0; i + 1 < sizeof(p->gfx_target) && req->gfx[i]; i++)
		p->gfx_target[i] = (char)tolower((unsigned char)req->gfx[i]);
	r = spm_catalog_get(gfx, &p->cat, err, errlen);
	if (r)
		goto fail;
	p->geo = req->geo;
	if (!p->geo.num_xcc)
		p->geo.num_xcc = 1;
	p->interval_requested = req->interval ? req->interval : SPM_INTERVAL_DEFAULT;
	r = spm_interval_round(p->interval_requested, &p->interval, err, errlen);
	if (r)
		goto fail;
	if (p->interval != p->interval_requested)
		pr_info("plan", "sample interval %u rounded to %u SCLK cycles (steps of %u)",
			p->interval_requested, p->interval, SPM_INTERVAL_STEP);

	b->p = p;
	b->req = req;
	b->err = err;
	b->errlen = errlen;
	bool lines_full;
	r = plan_prefix(b, req->ncounters, why, sizeof(why), &lines_full);
	if (r && lines_full)
		r = explain_too_big(b, why);
	if (r)
		goto fail;

	p->global_ram_n = p->global_lines * 16u + 2;
	p->se_ram_n = p->se_lines * 16u + 2;
	fill_ram(p->global_ram, p->global_ram_n, p, SPM_SEG_GLOBAL);
	fill_ram(p->se_ram, p->se_ram_n, p, SPM_SEG_SE);
	r = build_selects(p, err, errlen);
	if (r)
		goto fail;

	p->sample_bytes = (p->global_lines + p->geo.num_se * p->se_lines) * 32u;
	p->perfmon_cntl = p->interval << GFX9_SPM_INTERVAL_SHIFT |
			  (uint32_t)GFX9_SPM_RING_MODE_KFD << GFX9_SPM_RING_MODE_SHIFT;
	p->segment_size = segment_size(p->global_lines, p->se_lines, p->geo.num_se);
	/* aqlprofile writes CORE1 on every MI100/MI200 (spm_has_core1) [V]. */
	p->has_core1 = gfx == SPM_GFX_90A;
	p->segment_size_core1 = p->has_core1 ? segment_size_core1(p->se_lines, p->geo.num_se) : 0;
	p->sample_delay_max = gfx == SPM_GFX_942 ? GFX9_SAMPLE_DELAY_MAX_GFX94X : 0;

	free(b);
	*out = p;
	return 0;
fail:
	free(b);
	free(p);
	return r;
}

void spm_plan_free(struct spm_plan *plan)
{
	free(plan);
}

/* ---- descriptor ----------------------------------------------------------- */

json_t *spm_plan_layout(const struct spm_plan *p)
{
	json_t *root = json_object(), *arr = json_array();

	if (!root || !arr)
		goto fail;
	if (json_object_set_new(root, "format", json_string("spmtap-layout")) ||
	    json_object_set_new(root, "version", json_integer(1)) ||
	    json_object_set_new(root, "gfx", json_string(p->gfx_target)) ||
	    json_object_set_new(root, "num_se", json_integer(p->geo.num_se)) ||
	    json_object_set_new(root, "global_lines", json_integer(p->global_lines)) ||
	    json_object_set_new(root, "se_lines", json_integer(p->se_lines)))
		goto fail;
	for (size_t i = 0; i < p->ncounters; i++) {
		const struct spm_plan_counter *pc = &p->counters[i];
		json_t *c = json_object();
		if (!c || json_array_append_new(arr, c))
			goto fail;
		if (json_object_set_new(c, "name", json_string(pc->name)) ||
		    json_object_set_new(c, "segment", json_string(spm_segment_name(pc->segment))) ||
		    json_object_set_new(c, "slot", json_integer(pc->slot)))
			goto fail;
		if (pc->hi_slot >= 0 && json_object_set_new(c, "hi_slot", json_integer(pc->hi_slot)))
			goto fail;
	}
	if (json_object_set_new(root, "counters", arr))
		goto fail_root;
	return root;
fail:
	json_decref(arr);
fail_root:
	json_decref(root);
	return NULL;
}

char *spm_plan_layout_dumps(const struct spm_plan *p)
{
	json_t *j = spm_plan_layout(p);
	char *s = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

	json_decref(j);
	return s;
}

/* ---- before a run: saturation and data rate -------------------------------- */

size_t spm_plan_saturation(const struct spm_plan *p, struct spm_plan_sat *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < p->ncounters; i++) {
		const struct spm_counter *c = p->counters[i].ctr;
		bool seen = false;
		for (size_t k = 0; k < n && !seen; k++)
			seen = out[k].ctr == c;
		if (seen || n == max)
			continue;
		struct spm_plan_sat *s = &out[n++];
		s->ctr = c;
		s->per_cycle = spm_counter_peak(c, &s->why);
		s->width = spm_counter_width(c);
		s->safe_interval = spm_saturation_safe_interval(s->per_cycle, s->width, SPM_INTERVAL_STEP,
								SPM_INTERVAL_MAX);
		s->saturates = s->safe_interval && s->safe_interval < p->interval;
	}
	return n;
}

double spm_gfx_sclk_ghz(enum spm_gfx gfx)
{
	return gfx == SPM_GFX_90A ? 1.7 : gfx == SPM_GFX_942 ? 2.1 : 2.0;
}

double spm_plan_mbs(const struct spm_plan *p, double sclk_ghz)
{
	uint32_t xcc = p->geo.num_xcc ? p->geo.num_xcc : 1;
	return (double)p->sample_bytes * xcc * sclk_ghz * 1e9 / p->interval / 1e6;
}

static size_t addf(char *buf, size_t len, size_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static size_t addf(char *buf, size_t len, size_t off, const char *fmt, ...)
{
	if (off >= len)
		return off;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf + off, len - off, fmt, ap);
	va_end(ap);
	return n < 0 ? off : off + (size_t)n;
}

int spm_plan_warnings(const struct spm_plan *p, double sclk_ghz, double sustained_mbs, char *buf,
		      size_t len)
{
	struct spm_plan_sat sat[SPM_PLAN_MAX_COUNTERS];
	size_t n = spm_plan_saturation(p, sat, SPM_PLAN_MAX_COUNTERS), off = 0;
	int count = 0;
	if (len)
		buf[0] = 0;
	for (size_t i = 0; i < n; i++) {
		const struct spm_plan_sat *s = &sat[i];
		if (!s->saturates)
			continue;
		double most = s->per_cycle * p->interval;
		off = addf(buf, len, off,
			   "%s will saturate at interval %u: up to %.0f per sample (%s) in a %u-bit slot, "
			   "which reads %.0f or more as saturated; --interval %u or shorter avoids it\n",
			   s->ctr->name, p->interval, most, s->why, s->width,
			   s->width >= 32 ? 4294967295.0 : (double)((1u << s->width) - 1u), s->safe_interval);
		count++;
	}
	if (sustained_mbs <= 0)
		sustained_mbs = SPM_SUSTAINED_MBS_CSV;
	double mbs = spm_plan_mbs(p, sclk_ghz);
	/* A relative 1e-9: the interval suggested below lands exactly on the estimate. */
	if (mbs > sustained_mbs * (1 + 1e-9)) {
		uint32_t xcc = p->geo.num_xcc ? p->geo.num_xcc : 1;
		double cycles = (double)p->sample_bytes * xcc * sclk_ghz * 1e9 / (sustained_mbs * 1e6);
		uint64_t iv = (uint64_t)ceil(cycles * (1 - 1e-12));
		iv = (iv + SPM_INTERVAL_STEP - 1) / SPM_INTERVAL_STEP * SPM_INTERVAL_STEP;
		if (iv <= SPM_INTERVAL_MAX)
			off = addf(buf, len, off,
				   "the data rate, %.1f MB/s (%u XCC at %.1f GHz SCLK), exceeds the %.0f MB/s "
				   "this collector is known to sustain on a 2-core host (docs/bench.md): "
				   SPM_RATE_ABOVE_SUSTAINED "; --interval %" PRIu64
				   " or longer, or fewer counters, keeps under it\n",
				   mbs, xcc, sclk_ghz, sustained_mbs, iv);
		else
			off = addf(buf, len, off,
				   "the data rate, %.1f MB/s (%u XCC at %.1f GHz SCLK), exceeds the %.0f MB/s "
				   "this collector is known to sustain on a 2-core host (docs/bench.md) even at "
				   "the longest interval: " SPM_RATE_ABOVE_SUSTAINED "; fewer counters keep under it\n",
				   mbs, xcc, sclk_ghz, sustained_mbs);
		count++;
	}
	return count;
}
