/* SPDX-License-Identifier: MIT */
/*
 * PM4 encoder, the SPM start/stop programs and a disassembler.  Packet
 * encodings follow PROGRAMMING.md §1 [V]; the programs follow §2.4/§2.6 in
 * AQP-NEW's order (docs/programming.md says where it differs from AQP-25).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spm/catalog.h"
#include "spm/plan.h"
#include "spm/pm4.h"
#include "spm/regs_gfx9.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- builder ------------------------------------------------------------- */

void spm_pm4_init(struct spm_pm4 *b)
{
	memset(b, 0, sizeof(*b));
}

void spm_pm4_fini(struct spm_pm4 *b)
{
	free(b->dw);
	memset(b, 0, sizeof(*b));
}

static int fail(struct spm_pm4 *b, int err)
{
	if (!b->err)
		b->err = err;
	return b->err;
}

static int reserve(struct spm_pm4 *b, size_t more)
{
	if (b->err)
		return b->err;
	if (b->n + more <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->n + more)
		cap *= 2;
	uint32_t *dw = realloc(b->dw, cap * sizeof(*dw));
	if (!dw)
		return fail(b, -ENOMEM);
	b->dw = dw;
	b->cap = cap;
	return 0;
}

static void emit(struct spm_pm4 *b, uint32_t v)
{
	b->dw[b->n++] = v;
}

int spm_pm4_set_uconfig(struct spm_pm4 *b, uint32_t reg, uint32_t value)
{
	if (reg < GFX9_UCONFIG_BASE || reg > GFX9_UCONFIG_END)
		return fail(b, -EINVAL);
	if (reserve(b, 3))
		return b->err;
	emit(b, spm_pm4_header(SPM_PM4_SET_UCONFIG_REG, 1));
	emit(b, reg - GFX9_UCONFIG_BASE);
	emit(b, value);
	if (reg == GFX9_GRBM_GFX_INDEX) {
		b->grbm = value;
		b->grbm_known = true;
	}
	return 0;
}

int spm_pm4_set_sh(struct spm_pm4 *b, uint32_t reg, uint32_t value)
{
	if (reg < GFX9_SH_BASE || reg > GFX9_SH_END)
		return fail(b, -EINVAL);
	if (reserve(b, 3))
		return b->err;
	emit(b, spm_pm4_header(SPM_PM4_SET_SH_REG, 1));
	emit(b, reg - GFX9_SH_BASE);
	emit(b, value);
	return 0;
}

int spm_pm4_write_data_reg(struct spm_pm4 *b, uint32_t reg, const uint32_t *data, size_t n)
{
	/* COUNT is 14 bits and N + 2 of them are used. */
	if (!n || n + 2 > 0x3FFE || reg > 0x3FFFF)
		return fail(b, -EINVAL);
	if (reserve(b, 4 + n + 1))
		return b->err;
	emit(b, spm_pm4_header(SPM_PM4_WRITE_DATA, (unsigned int)n + 2));
	emit(b, SPM_PM4_WRITE_DATA_REG_CTRL);
	emit(b, reg); /* absolute address, not a UCONFIG offset */
	emit(b, 0);
	for (size_t i = 0; i < n; i++)
		emit(b, data[i]);
	/* aqlprofile pads an odd payload so the stream stays even-sized [V]. */
	if (n & 1)
		emit(b, SPM_PM4_NOP1);
	return 0;
}

int spm_pm4_event_write(struct spm_pm4 *b, uint32_t event_dword)
{
	if (reserve(b, 2))
		return b->err;
	emit(b, spm_pm4_header(SPM_PM4_EVENT_WRITE, 0));
	emit(b, event_dword);
	return 0;
}

int spm_pm4_cs_partial_flush(struct spm_pm4 *b)
{
	return spm_pm4_event_write(b, SPM_PM4_EV_CS_PARTIAL_FLUSH);
}

int spm_pm4_nop1(struct spm_pm4 *b)
{
	if (reserve(b, 1))
		return b->err;
	emit(b, SPM_PM4_NOP1);
	return 0;
}

int spm_pm4_indirect_buffer(struct spm_pm4 *b, uint64_t addr, uint32_t size_dw)
{
	if ((addr & 3) || !size_dw || size_dw > 0xFFFFF)
		return fail(b, -EINVAL);
	if (reserve(b, 4))
		return b->err;
	emit(b, spm_pm4_header(SPM_PM4_INDIRECT_BUFFER, 2));
	emit(b, (uint32_t)addr);
	emit(b, (uint32_t)(addr >> 32));
	emit(b, SPM_PM4_IB_CTRL | size_dw);
	return 0;
}

int spm_pm4_grbm(struct spm_pm4 *b, uint32_t value)
{
	if (b->grbm_known && b->grbm == value)
		return b->err;
	return spm_pm4_set_uconfig(b, GFX9_GRBM_GFX_INDEX, value);
}

void spm_pm4_aql_packet(uint32_t pkt[16], uint64_t ib_addr, uint32_t ib_dw, uint64_t completion_signal)
{
	memset(pkt, 0, 16 * sizeof(pkt[0]));
	pkt[0] = SPM_AQL_PM4_IB_HEADER;
	pkt[1] = spm_pm4_header(SPM_PM4_INDIRECT_BUFFER, 2);
	pkt[2] = (uint32_t)ib_addr;
	pkt[3] = (uint32_t)(ib_addr >> 32);
	pkt[4] = SPM_PM4_IB_CTRL | (ib_dw & 0xFFFFF);
	pkt[5] = 10; /* dw_count_remain: dwords left in the slot after the IB packet [I] */
	pkt[14] = (uint32_t)completion_signal;
	pkt[15] = (uint32_t)(completion_signal >> 32);
}

/* ---- programs ------------------------------------------------------------ */

/* Muxsel entries 2i and 2i+1 go in the low and high half of dword i. */
static int write_ram(struct spm_pm4 *b, uint32_t addr_reg, uint32_t data_reg, const uint16_t *ram, size_t n)
{
	uint32_t dw[SPM_RAM_MAX / 2 + 1];
	size_t nd = (n + 1) / 2;

	for (size_t i = 0; i < nd; i++) {
		uint32_t lo = ram[2 * i], hi = 2 * i + 1 < n ? ram[2 * i + 1] : GFX9_MUXSEL_UNUSED;
		dw[i] = lo | hi << 16;
	}
	spm_pm4_set_uconfig(b, addr_reg, 0);
	return spm_pm4_write_data_reg(b, data_reg, dw, nd);
}

int spm_pm4_build_start(const struct spm_plan *p, struct spm_pm4 *b)
{
	/* A new IB: nothing is known about GRBM_GFX_INDEX. */
	b->grbm_known = false;

	spm_pm4_set_uconfig(b, GFX9_RLC_PERFMON_CLK_CNTL, 1);
	spm_pm4_grbm(b, GFX9_GRBM_BROADCAST);
	spm_pm4_cs_partial_flush(b);
	/* AQP-NEW: SPM STOP, not the old reset to 0, which would reset the RLC
	 * write pointer that only KFD may re-sync. */
	spm_pm4_set_uconfig(b, GFX9_CP_PERFMON_CNTL, GFX9_CP_PERFMON_SPM_STOP);
	spm_pm4_cs_partial_flush(b);
	spm_pm4_set_uconfig(b, GFX9_RLC_SPM_PERFMON_CNTL, p->perfmon_cntl);
	if (p->sample_delay_max)
		spm_pm4_set_uconfig(b, GFX9_RLC_SPM_PERFMON_SAMPLE_DELAY_MAX, p->sample_delay_max);

	/* Selects: non-SQ per instance in every SE, then the SQ block. */
	bool sq_started = false;
	for (size_t i = 0; i < p->nselects; i++) {
		const struct spm_plan_select *s = &p->selects[i];
		if (s->instance >= 0) {
			spm_pm4_grbm(b, GFX9_GRBM_INSTANCE_ALL_SE | (uint32_t)s->instance);
		} else if (!sq_started) {
			spm_pm4_grbm(b, GFX9_GRBM_BROADCAST);
			spm_pm4_set_uconfig(b, GFX9_SQ_PERFCOUNTER_MASK, GFX9_SQ_PERFCOUNTER_MASK_ALL);
			spm_pm4_set_uconfig(b, GFX9_SQ_PERFCOUNTER_CTRL, GFX9_SQ_PERFCOUNTER_CTRL_SPM);
			sq_started = true;
		}
		spm_pm4_set_uconfig(b, s->reg, s->value);
	}
	spm_pm4_grbm(b, GFX9_GRBM_BROADCAST);

	spm_pm4_set_uconfig(b, GFX9_RLC_SPM_PERFMON_SEGMENT_SIZE, p->segment_size);
	if (p->has_core1)
		spm_pm4_set_uconfig(b, GFX9_RLC_SPM_PERFMON_SEGMENT_SIZE_CORE1, p->segment_size_core1);
	write_ram(b, GFX9_RLC_SPM_GLOBAL_MUXSEL_ADDR, GFX9_RLC_SPM_GLOBAL_MUXSEL_DATA, p->global_ram,
		  p->global_ram_n);
	/* Written under SE broadcast: every SE gets the same image. */
	write_ram(b, GFX9_RLC_SPM_SE_MUXSEL_ADDR, GFX9_RLC_SPM_SE_MUXSEL_DATA, p->se_ram, p->se_ram_n);
	spm_pm4_set_uconfig(b, GFX9_RLC_SPM_GLOBAL_MUXSEL_ADDR, 0);
	spm_pm4_set_uconfig(b, GFX9_RLC_SPM_SE_MUXSEL_ADDR, 0);
	spm_pm4_cs_partial_flush(b);
	/* Per queue: only the queue running this IB; see docs/programming.md. */
	spm_pm4_set_sh(b, GFX9_COMPUTE_PERFCOUNT_ENABLE, GFX9_COMPUTE_PERFCOUNT_ENABLE_ON);
	spm_pm4_set_uconfig(b, GFX9_CP_PERFMON_CNTL, GFX9_CP_PERFMON_SPM_START);
	spm_pm4_cs_partial_flush(b);
	return b->err;
}

int spm_pm4_build_stop(const struct spm_plan *p, struct spm_pm4 *b)
{
	(void)p; /* the stop IB is the same for every plan */
	b->grbm_known = false;
	spm_pm4_grbm(b, GFX9_GRBM_BROADCAST);
	spm_pm4_cs_partial_flush(b);
	spm_pm4_set_uconfig(b, GFX9_CP_PERFMON_CNTL, GFX9_CP_PERFMON_SPM_STOP);
	/* AQP-NEW drops AQP-25's CP_PERFMON_CNTL = 0: KFD resets at stop/release. */
	spm_pm4_set_uconfig(b, GFX9_RLC_PERFMON_CLK_CNTL, 0);
	return b->err;
}

/* ---- names --------------------------------------------------------------- */

static const struct {
	uint32_t addr;
	const char *name;
} reg_names[] = {
	{ GFX9_GRBM_GFX_INDEX, "GRBM_GFX_INDEX" },
	{ GFX9_COMPUTE_PERFCOUNT_ENABLE, "COMPUTE_PERFCOUNT_ENABLE" },
	{ GFX9_CP_PERFMON_CNTL, "CP_PERFMON_CNTL" },
	{ GFX9_SQ_PERFCOUNTER_CTRL, "SQ_PERFCOUNTER_CTRL" },
	{ GFX9_SQ_PERFCOUNTER_MASK, "SQ_PERFCOUNTER_MASK" },
	{ GFX9_RLC_SPM_PERFMON_CNTL, "RLC_SPM_PERFMON_CNTL" },
	{ GFX9_RLC_SPM_PERFMON_RING_BASE_LO, "RLC_SPM_PERFMON_RING_BASE_LO" },
	{ GFX9_RLC_SPM_PERFMON_RING_BASE_HI, "RLC_SPM_PERFMON_RING_BASE_HI" },
	{ GFX9_RLC_SPM_PERFMON_RING_SIZE, "RLC_SPM_PERFMON_RING_SIZE" },
	{ GFX9_RLC_SPM_PERFMON_SEGMENT_SIZE, "RLC_SPM_PERFMON_SEGMENT_SIZE" },
	{ GFX9_RLC_SPM_SE_MUXSEL_ADDR, "RLC_SPM_SE_MUXSEL_ADDR" },
	{ GFX9_RLC_SPM_SE_MUXSEL_DATA, "RLC_SPM_SE_MUXSEL_DATA" },
	{ GFX9_RLC_SPM_GLOBAL_MUXSEL_ADDR, "RLC_SPM_GLOBAL_MUXSEL_ADDR" },
	{ GFX9_RLC_SPM_GLOBAL_MUXSEL_DATA, "RLC_SPM_GLOBAL_MUXSEL_DATA" },
	{ GFX9_RLC_SPM_RING_RDPTR, "RLC_SPM_RING_RDPTR" },
	{ GFX9_RLC_SPM_SEGMENT_THRESHOLD, "RLC_SPM_SEGMENT_THRESHOLD" },
	{ GFX9_RLC_SPM_PERFMON_SAMPLE_DELAY_MAX, "RLC_SPM_PERFMON_SAMPLE_DELAY_MAX" },
	{ GFX9_RLC_SPM_PERFMON_SEGMENT_SIZE_CORE1, "RLC_SPM_PERFMON_SEGMENT_SIZE_CORE1" },
	{ GFX9_RLC_PERFMON_CLK_CNTL, "RLC_PERFMON_CLK_CNTL" },
	{ GFX9_RLC_SPM_MC_CNTL, "RLC_SPM_MC_CNTL" },
	{ GFX9_RLC_SPM_INT_CNTL, "RLC_SPM_INT_CNTL" },
};

const char *spm_gfx9_reg_name(uint32_t addr, char *buf, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(reg_names); i++)
		if (reg_names[i].addr == addr)
			return reg_names[i].name;
	if (addr >= GFX9_SQ_PERFCOUNTER0_SELECT && addr < GFX9_SQ_PERFCOUNTER0_SELECT + 16) {
		snprintf(buf, len, "SQ_PERFCOUNTER%u_SELECT", addr - GFX9_SQ_PERFCOUNTER0_SELECT);
		return buf;
	}
	for (int blk = 0; blk < SPM_BLK_COUNT; blk++) {
		const struct spm_block_info *bi = spm_block_info((enum spm_block)blk);
		for (unsigned int p = 0; p < bi->nsel; p++) {
			if (bi->sel[p].select == addr) {
				snprintf(buf, len, "%s_PERFCOUNTER%u_SELECT", bi->name, p);
				return buf;
			}
			if (bi->sel[p].select1 == addr) {
				snprintf(buf, len, "%s_PERFCOUNTER%u_SELECT1", bi->name, p);
				return buf;
			}
		}
		if (bi->sample_delay && bi->sample_delay == addr) {
			snprintf(buf, len, "RLC_SPM_%s_PERFMON_SAMPLE_DELAY", bi->id == SPM_BLK_SQ ? "SQG" : bi->name);
			return buf;
		}
	}
	snprintf(buf, len, "reg 0x%04x", addr);
	return buf;
}

/* ---- disassembler -------------------------------------------------------- */

struct text {
	char *s;
	size_t n, cap;
	bool oom;
};

static void __attribute__((format(printf, 2, 3))) put(struct text *t, const char *fmt, ...)
{
	va_list ap;

	if (t->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		int k = vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
		va_end(ap);
		if (k < 0) {
			t->oom = true;
			return;
		}
		if (t->n + (size_t)k < t->cap) {
			t->n += (size_t)k;
			return;
		}
		size_t cap = t->cap * 2 + (size_t)k + 256;
		char *s = realloc(t->s, cap);
		if (!s) {
			t->oom = true;
			return;
		}
		t->s = s;
		t->cap = cap;
	}
}

/* GRBM_GFX_INDEX: broadcast bits 31 SE, 29 SH, 30 instance (PROGRAMMING.md §2.3). */
static void grbm_note(struct text *t, uint32_t v)
{
	if (v == GFX9_GRBM_BROADCAST) {
		put(t, "  broadcast");
		return;
	}
	if (v & (1u << 30))
		put(t, "  all instances");
	else
		put(t, "  instance %u", v & 0xFF);
	if (v & (1u << 31))
		put(t, ", all SEs");
	else
		put(t, ", SE %u", (v >> 16) & 0xFF);
	if (v & (1u << 29))
		put(t, ", all SHs");
	else
		put(t, ", SH %u", (v >> 8) & 0xFF);
}

static void reg_write(struct text *t, const char *op, uint32_t reg, uint32_t v)
{
	char buf[64];

	put(t, "%-16s %s = 0x%08x", op, spm_gfx9_reg_name(reg, buf, sizeof(buf)), v);
	if (reg == GFX9_GRBM_GFX_INDEX)
		grbm_note(t, v);
	put(t, "\n");
}

char *spm_pm4_disasm(const uint32_t *dw, size_t n)
{
	struct text t = { .s = malloc(1024), .cap = 1024 };
	size_t i = 0;
	char buf[64];

	if (!t.s)
		return NULL;
	t.s[0] = '\0';
	while (i < n && !t.oom) {
		uint32_t h = dw[i];
		put(&t, "%04zx  ", i);
		if (h >> 30 != 3) {
			put(&t, "%-16s 0x%08x (not a type-3 header)\n", "DATA?", h);
			i++;
			continue;
		}
		unsigned int count = (h >> 16) & 0x3FFF, op = (h >> 8) & 0xFF;
		if (op == SPM_PM4_NOP && count == 0x3FFF) {
			put(&t, "NOP              (1 dword)\n");
			i++;
			continue;
		}
		size_t body = count + 1;
		if (i + 1 + body > n) {
			put(&t, "TRUNCATED        op 0x%02x wants %zu dwords, %zu left\n", op, body, n - i - 1);
			break;
		}
		const uint32_t *d = &dw[i + 1];
		switch (op) {
		case SPM_PM4_SET_UCONFIG_REG:
		case SPM_PM4_SET_SH_REG: {
			uint32_t base = op == SPM_PM4_SET_UCONFIG_REG ? GFX9_UCONFIG_BASE : GFX9_SH_BASE;
			const char *name = op == SPM_PM4_SET_UCONFIG_REG ? "SET_UCONFIG_REG" : "SET_SH_REG";
			for (size_t k = 1; k < body; k++) {
				if (k > 1)
					put(&t, "      ");
				reg_write(&t, name, base + (d[0] & 0xFFFF) + (uint32_t)(k - 1), d[k]);
			}
			if (body < 2)
				put(&t, "%s (no value)\n", name);
			break;
		}
		case SPM_PM4_WRITE_DATA:
			if (body < 3) {
				put(&t, "WRITE_DATA       (short)\n");
				break;
			}
			if (((d[0] >> 8) & 0xF) == 0) {
				put(&t, "%-16s %s x%zu%s:", "WRITE_DATA", spm_gfx9_reg_name(d[1], buf, sizeof(buf)),
				    body - 3, d[0] & (1u << 16) ? "" : " (incrementing)");
			} else {
				put(&t, "%-16s dst_sel %u addr 0x%08x%08x x%zu:", "WRITE_DATA", (d[0] >> 8) & 0xF,
				    d[2], d[1], body - 3);
			}
			for (size_t k = 3; k < body; k++)
				put(&t, " %08x", d[k]);
			put(&t, "\n");
			break;
		case SPM_PM4_EVENT_WRITE:
			if (d[0] == SPM_PM4_EV_CS_PARTIAL_FLUSH)
				put(&t, "EVENT_WRITE      CS_PARTIAL_FLUSH\n");
			else
				put(&t, "EVENT_WRITE      type 0x%02x index %u\n", d[0] & 0x3F, (d[0] >> 8) & 0xF);
			break;
		case SPM_PM4_INDIRECT_BUFFER:
			put(&t, "INDIRECT_BUFFER  addr 0x%08x%08x size %u dwords ctrl 0x%08x\n", body > 1 ? d[1] : 0,
			    d[0], body > 2 ? d[2] & 0xFFFFF : 0, body > 2 ? d[2] & ~0xFFFFFu : 0);
			break;
		case SPM_PM4_NOP:
			put(&t, "NOP              (%zu dwords)\n", body + 1);
			break;
		case SPM_PM4_PRED_EXEC:
			put(&t, "PRED_EXEC        xcc mask 0x%02x, next %u dwords\n", d[0] >> 24, d[0] & 0x3FFF);
			break;
		default:
			put(&t, "OP_0x%02x          (%zu dwords)\n", op, body + 1);
			break;
		}
		i += 1 + body;
	}
	if (t.oom) {
		free(t.s);
		return NULL;
	}
	return t.s;
}
