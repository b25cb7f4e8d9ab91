/* SPDX-License-Identifier: MIT */
/*
 * Register writes and reads of the emulated CP (see regs.h).  The table
 * below is every register the emulator models; anything else is refused
 * by name so that a planner bug cannot pass silently.
 */
#include "emu/shim/regs.h"
#include "emu/common/readback.h"
#include "emu/shim/rlc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum emu_rk {
	RK_GRBM, RK_CP_PERFMON, RK_SPM_CNTL, RK_SEG, RK_SEG1, RK_GLB_ADDR, RK_GLB_DATA, RK_SE_ADDR, RK_SE_DATA,
	RK_DELAY, RK_DELAY_MAX, RK_CLK_CNTL, RK_PERFCOUNT_EN, RK_SQ_CTRL, RK_SQ_MASK, RK_KFD, RK_SEL,
};

static const struct {
	uint32_t addr;
	const char *name;
	enum emu_rk kind;
} emu_regtab[] = {
	{ EMU_REG_GRBM_GFX_INDEX, "GRBM_GFX_INDEX", RK_GRBM },
	{ EMU_REG_CP_PERFMON_CNTL, "CP_PERFMON_CNTL", RK_CP_PERFMON },
	{ EMU_REG_RLC_SPM_PERFMON_CNTL, "RLC_SPM_PERFMON_CNTL", RK_SPM_CNTL },
	{ 0xDC81, "RLC_SPM_PERFMON_RING_BASE_LO", RK_KFD },
	{ 0xDC82, "RLC_SPM_PERFMON_RING_BASE_HI", RK_KFD },
	{ 0xDC83, "RLC_SPM_PERFMON_RING_SIZE", RK_KFD },
	{ EMU_REG_SEGMENT_SIZE, "RLC_SPM_PERFMON_SEGMENT_SIZE", RK_SEG },
	{ EMU_REG_SE_MUXSEL_ADDR, "RLC_SPM_SE_MUXSEL_ADDR", RK_SE_ADDR },
	{ EMU_REG_SE_MUXSEL_DATA, "RLC_SPM_SE_MUXSEL_DATA", RK_SE_DATA },
	{ 0xDC87, "RLC_SPM_CPG_PERFMON_SAMPLE_DELAY", RK_DELAY },
	{ 0xDC88, "RLC_SPM_CPC_PERFMON_SAMPLE_DELAY", RK_DELAY },
	{ 0xDC89, "RLC_SPM_CPF_PERFMON_SAMPLE_DELAY", RK_DELAY },
	{ 0xDC8A, "RLC_SPM_CB_PERFMON_SAMPLE_DELAY", RK_DELAY },
	{ 0xDC8B, "RLC_SPM_DB_PERFMON_SAMPLE_DELAY", RK_DELAY },
	{ 0xDC8C, "RLC_SPM_PA_PERFMON_SAMPLE_DELAY", RK_DELAY },
	{ 0xDC8D, "RLC_SPM_GDS_PERFMON_SAMPLE_DELAY", RK_DELAY },
	{ 0xDC8E, "RLC_SPM_IA_PERFMON_SAMPLE_DELAY", RK_DELAY },
	{ 0xDC90, "RLC_SPM_SC_PERFMON_SAMPLE_DELAY", RK_DELAY },
	{ 0xDC91, "RLC_SPM_TCC_PERFMON_SAMPLE_DELAY", RK_DELAY },
	{ 0xDC92, "RLC_SPM_TCA_PERFMON_SAMPLE_DELAY", RK_DELAY },
	{ 0xDC93, "RLC_SPM_TCP_PERFMON_SAMPLE_DELAY", RK_DELAY },
	{ 0xDC94, "RLC_SPM_TA_PERFMON_SAMPLE_DELAY", RK_DELAY },
	{ 0xDC95, "RLC_SPM_TD_PERFMON_SAMPLE_DELAY", RK_DELAY },
	{ 0xDC96, "RLC_SPM_VGT_PERFMON_SAMPLE_DELAY", RK_DELAY },
	{ 0xDC97, "RLC_SPM_SPI_PERFMON_SAMPLE_DELAY", RK_DELAY },
	{ 0xDC98, "RLC_SPM_SQG_PERFMON_SAMPLE_DELAY", RK_DELAY },
	{ 0xDC9A, "RLC_SPM_SX_PERFMON_SAMPLE_DELAY", RK_DELAY },
	{ EMU_REG_GLOBAL_MUXSEL_ADDR, "RLC_SPM_GLOBAL_MUXSEL_ADDR", RK_GLB_ADDR },
	{ EMU_REG_GLOBAL_MUXSEL_DATA, "RLC_SPM_GLOBAL_MUXSEL_DATA", RK_GLB_DATA },
	{ 0xDC9D, "RLC_SPM_RING_RDPTR", RK_KFD },
	{ 0xDC9E, "RLC_SPM_SEGMENT_THRESHOLD", RK_KFD },
	{ 0xDCA3, "RLC_SPM_RMI_PERFMON_SAMPLE_DELAY", RK_DELAY },
	{ EMU_REG_SAMPLE_DELAY_MAX, "RLC_SPM_PERFMON_SAMPLE_DELAY_MAX", RK_DELAY_MAX },
	{ EMU_REG_SEGMENT_SIZE_CORE1, "RLC_SPM_PERFMON_SEGMENT_SIZE_CORE1", RK_SEG1 },
	{ EMU_REG_RLC_PERFMON_CLK_CNTL, "RLC_PERFMON_CLK_CNTL", RK_CLK_CNTL },
	{ EMU_REG_COMPUTE_PERFCOUNT_ENABLE, "COMPUTE_PERFCOUNT_ENABLE", RK_PERFCOUNT_EN },
	{ 0xD9E0, "SQ_PERFCOUNTER_CTRL", RK_SQ_CTRL },
	{ 0xD9E1, "SQ_PERFCOUNTER_MASK", RK_SQ_MASK },
	{ 0xEC71, "RLC_SPM_MC_CNTL", RK_KFD },
	{ 0xEC72, "RLC_SPM_INT_CNTL", RK_KFD },
	{ 0xFB31, "RLC_CLK_CNTL", RK_KFD },
};

struct emu_reg_ref {
	enum emu_rk kind;
	const char *name;
	int blk, reg; /* RK_SEL */
	char selname[48];
};

static int emu_reg_find(uint32_t addr, struct emu_reg_ref *ref)
{
	for (size_t i = 0; i < sizeof(emu_regtab) / sizeof(emu_regtab[0]); i++) {
		if (emu_regtab[i].addr == addr) {
			ref->kind = emu_regtab[i].kind;
			ref->name = emu_regtab[i].name;
			return 0;
		}
	}
	for (int b = 0; b < EMU_NBLK; b++) {
		const struct emu_blk_info *bi = emu_blk((enum emu_blk)b);
		for (int j = 0; j < bi->nregs; j++) {
			if (bi->addr[j] != addr)
				continue;
			ref->kind = RK_SEL;
			ref->blk = b;
			ref->reg = j;
			snprintf(ref->selname, sizeof(ref->selname), "%s_PERFCOUNTER%u_SELECT%s", bi->name, bi->perf[j],
				 bi->sel1[j] ? "1" : "");
			ref->name = ref->selname;
			return 0;
		}
	}
	return -1;
}

const char *emu_gfx_name(enum emu_gfx gfx)
{
	return gfx == EMU_GFX90A ? "gfx90a" : "gfx942";
}

void emu_regs_power_on(struct emu_xcc_regs *x)
{
	memset(x, 0, sizeof(*x));
	/* Broadcast, and RAMs reading "unused" everywhere. */
	x->grbm_gfx_index = 0xE0000000u;
	memset(x->glb_ram, 0xFF, sizeof(x->glb_ram));
	memset(x->se_ram, 0xFF, sizeof(x->se_ram));
}

/* The SEs a write reaches under GRBM_GFX_INDEX, as a bitmask. */
static int emu_grbm_ses(const struct emu_gpu_regs *r, const struct emu_xcc_regs *x, uint32_t *mask, char *err,
			size_t errlen, const char *name)
{
	uint32_t g = x->grbm_gfx_index, se = (g >> 16) & 0xFF;
	if (g & 0x80000000u) {
		*mask = (1u << r->num_se) - 1;
		return 0;
	}
	if (se >= r->num_se) {
		snprintf(err, errlen, "%s while GRBM_GFX_INDEX selects SE %u (an XCC has %u)", name, se, r->num_se);
		return -1;
	}
	*mask = 1u << se;
	return 0;
}

static int emu_grbm_insts(const struct emu_gpu_regs *r, const struct emu_xcc_regs *x, int blk, uint32_t *first,
			  uint32_t *last, char *err, size_t errlen, const char *name)
{
	const struct emu_blk_info *bi = emu_blk((enum emu_blk)blk);
	uint32_t n = bi->inst[r->gfx], inst = x->grbm_gfx_index & 0xFF;
	if (x->grbm_gfx_index & 0x40000000u) {
		*first = 0;
		*last = n - 1;
		return 0;
	}
	if (inst >= n) {
		snprintf(err, errlen, "%s while GRBM_GFX_INDEX selects instance %u (%s has %u%s on %s)", name, inst,
			 bi->name, n, bi->se_block ? " per SE" : "", emu_gfx_name(r->gfx));
		return -1;
	}
	*first = *last = inst;
	return 0;
}

static int emu_ram_store(uint16_t *ram, uint32_t *ptr, uint32_t val, const char *name, char *err, size_t errlen)
{
	if (*ptr + 1 >= EMU_MUXSEL_ENTRIES) {
		snprintf(err, errlen, "%s past the end of the %u-entry muxsel RAM", name, EMU_MUXSEL_ENTRIES);
		return -1;
	}
	/* 3.4: each DATA dword is two entries, low half first, and advances the pointer. */
	ram[*ptr] = (uint16_t)val;
	ram[*ptr + 1] = (uint16_t)(val >> 16);
	*ptr += 2;
	return 0;
}

static int emu_cp_perfmon_write(struct emu_gpu_regs *r, uint32_t xcc, uint32_t val, char *err, size_t errlen)
{
	struct emu_xcc_regs *x = &r->x[xcc];
	unsigned st = (val >> 4) & 0xF;
	if (val & ~0x7FFu) {
		/* CPF_PERFCOUNTER0_SELECT + 1 is this register: a select written there lands here. */
		snprintf(err, errlen,
			 "CP_PERFMON_CNTL (0xD808) value 0x%08X sets bits above its fields (10:0); "
			 "a select computed as CPF_PERFCOUNTER0_SELECT + 1?",
			 val);
		return -1;
	}
	if (st > EMU_SPM_STOPPED) {
		snprintf(err, errlen, "CP_PERFMON_CNTL (0xD808) SPM_PERFMON_STATE %u: not modelled (0, 1, 2)", st);
		return -1;
	}
	struct emu_rlc_layout *L = NULL;
	if (st == EMU_SPM_COUNTING) {
		char why[160];
		L = emu_rlc_derive(r, xcc, why, sizeof(why));
		if (!L) {
			snprintf(err, errlen, "CP_PERFMON_CNTL (0xD808) START_COUNTING: %s", why);
			return -1;
		}
		x->rlc_sample_bytes = L->sample_bytes;
		x->rlc_interval = L->interval;
		x->rlc_lines = L->lines;
	} else if (st == EMU_SPM_RESET) {
		x->rlc_sample_bytes = x->rlc_interval = x->rlc_lines = 0;
	}
	unsigned old = x->spm_state;
	x->cp_perfmon_cntl = val;
	x->spm_state = st;
	if (r->hook)
		r->hook(r, xcc, old, st, L);
	emu_rlc_put(L);
	return 0;
}

int emu_regs_write(struct emu_gpu_regs *r, uint32_t xcc, uint32_t addr, uint32_t val, char *err, size_t errlen)
{
	struct emu_xcc_regs *x = &r->x[xcc];
	struct emu_reg_ref ref;
	uint32_t ses, i0, i1;
	if (emu_reg_find(addr, &ref)) {
		snprintf(err, errlen, "unmodelled register 0x%04X", addr);
		return -1;
	}
	switch (ref.kind) {
	case RK_GRBM:
		if (!(val & 0x80000000u) && ((val >> 16) & 0xFF) >= r->num_se) {
			snprintf(err, errlen, "GRBM_GFX_INDEX (0xC200) value 0x%08X selects SE %u; an XCC has %u", val,
				 (val >> 16) & 0xFF, r->num_se);
			return -1;
		}
		x->grbm_gfx_index = val;
		return 0;
	case RK_CP_PERFMON:
		return emu_cp_perfmon_write(r, xcc, val, err, errlen);
	case RK_SPM_CNTL:
		x->spm_perfmon_cntl = val;
		return 0;
	case RK_SEG:
		x->seg_size = val;
		return 0;
	case RK_SEG1:
		if (r->num_se <= 4) {
			snprintf(err, errlen, "%s (0x%04X): absent on %s, whose XCCs have %u SEs", ref.name, addr,
				 emu_gfx_name(r->gfx), r->num_se);
			return -1;
		}
		x->seg_size_core1 = val;
		return 0;
	case RK_GLB_ADDR:
		/* Address unit: dwords, i.e. one address per entry pair (3.4, as Mesa uses it). */
		if (val >= EMU_MUXSEL_ENTRIES / 2) {
			snprintf(err, errlen, "%s (0x%04X) = %u: beyond the %u-entry RAM", ref.name, addr, val,
				 EMU_MUXSEL_ENTRIES);
			return -1;
		}
		x->glb_ptr = val * 2;
		return 0;
	case RK_GLB_DATA:
		return emu_ram_store(x->glb_ram, &x->glb_ptr, val, ref.name, err, errlen);
	case RK_SE_ADDR:
	case RK_SE_DATA:
		if (emu_grbm_ses(r, x, &ses, err, errlen, ref.name))
			return -1;
		if (ref.kind == RK_SE_ADDR && val >= EMU_MUXSEL_ENTRIES / 2) {
			snprintf(err, errlen, "%s (0x%04X) = %u: beyond the %u-entry RAM", ref.name, addr, val,
				 EMU_MUXSEL_ENTRIES);
			return -1;
		}
		for (uint32_t se = 0; se < r->num_se; se++) {
			if (!(ses & (1u << se)))
				continue;
			if (ref.kind == RK_SE_ADDR)
				x->se_ptr[se] = val * 2;
			else if (emu_ram_store(x->se_ram[se], &x->se_ptr[se], val, ref.name, err, errlen))
				return -1;
		}
		return 0;
	case RK_DELAY:
		return 0; /* delays only skew when a block latches; the model samples instantly */
	case RK_DELAY_MAX:
		x->sample_delay_max = val;
		return 0;
	case RK_CLK_CNTL:
		x->perfmon_clk_cntl = val;
		return 0;
	case RK_PERFCOUNT_EN:
		x->compute_perfcount_enable = val;
		return 0;
	case RK_SQ_CTRL:
	case RK_SQ_MASK:
		if (emu_grbm_ses(r, x, &ses, err, errlen, ref.name))
			return -1;
		for (uint32_t se = 0; se < r->num_se; se++)
			if (ses & (1u << se))
				*(ref.kind == RK_SQ_CTRL ? &x->sq_ctrl[se] : &x->sq_mask[se]) = val;
		return 0;
	case RK_KFD:
		snprintf(err, errlen, "%s (0x%04X): owned by KFD; user PM4 never writes it", ref.name, addr);
		return -1;
	case RK_SEL: {
		const struct emu_blk_info *bi = emu_blk((enum emu_blk)ref.blk);
		if (emu_grbm_insts(r, x, ref.blk, &i0, &i1, err, errlen, ref.name))
			return -1;
		if (!bi->se_block)
			ses = 1; /* global blocks: SE bits do not apply */
		else if (emu_grbm_ses(r, x, &ses, err, errlen, ref.name))
			return -1;
		for (uint32_t se = 0; se < EMU_MAX_SE; se++)
			if (ses & (1u << se))
				for (uint32_t in = i0; in <= i1; in++)
					x->sel[ref.blk][se][in][ref.reg] = val;
		return 0;
	}
	}
	return -1;
}

static int emu_regs_get(const struct emu_gpu_regs *r, uint32_t xcc, const struct emu_reg_ref *ref, uint32_t se,
			uint32_t inst, uint32_t *val)
{
	const struct emu_xcc_regs *x = &r->x[xcc];
	switch (ref->kind) {
	case RK_GRBM: *val = x->grbm_gfx_index; return 0;
	case RK_CP_PERFMON: *val = x->cp_perfmon_cntl; return 0;
	case RK_SPM_CNTL: *val = x->spm_perfmon_cntl; return 0;
	case RK_SEG: *val = x->seg_size; return 0;
	case RK_SEG1: *val = x->seg_size_core1; return 0;
	case RK_GLB_ADDR: *val = x->glb_ptr / 2; return 0;
	case RK_SE_ADDR: *val = x->se_ptr[se % EMU_MAX_SE] / 2; return 0;
	case RK_DELAY: *val = 0; return 0;
	case RK_DELAY_MAX: *val = x->sample_delay_max; return 0;
	case RK_CLK_CNTL: *val = x->perfmon_clk_cntl; return 0;
	case RK_PERFCOUNT_EN: *val = x->compute_perfcount_enable; return 0;
	case RK_SQ_CTRL: *val = x->sq_ctrl[se % EMU_MAX_SE]; return 0;
	case RK_SQ_MASK: *val = x->sq_mask[se % EMU_MAX_SE]; return 0;
	case RK_SEL:
		if (se >= EMU_MAX_SE || inst >= EMU_MAX_INST)
			return -1;
		*val = x->sel[ref->blk][emu_blk((enum emu_blk)ref->blk)->se_block ? se : 0][inst][ref->reg];
		return 0;
	default:
		return -1; /* DATA ports and KFD registers are not readable here */
	}
}

int emu_regs_read(const struct emu_gpu_regs *r, uint32_t xcc, uint32_t addr, uint32_t *val, char *err,
		  size_t errlen)
{
	struct emu_reg_ref ref;
	if (emu_reg_find(addr, &ref)) {
		snprintf(err, errlen, "unmodelled register 0x%04X", addr);
		return -1;
	}
	uint32_t g = r->x[xcc].grbm_gfx_index;
	uint32_t se = (g & 0x80000000u) ? 0 : (g >> 16) & 0xFF, inst = (g & 0x40000000u) ? 0 : g & 0xFF;
	if (emu_regs_get(r, xcc, &ref, se, inst, val)) {
		snprintf(err, errlen, "%s (0x%04X): not readable in the model", ref.name, addr);
		return -1;
	}
	return 0;
}

int emu_regs_peek(const struct emu_gpu_regs *r, uint32_t xcc, uint32_t what, uint32_t addr, uint32_t se,
		  uint32_t inst, uint32_t *val)
{
	if (xcc >= r->num_xcc)
		return EINVAL;
	const struct emu_xcc_regs *x = &r->x[xcc];
	struct emu_reg_ref ref;
	switch (what) {
	case EMU_RB_REG:
		if (emu_reg_find(addr, &ref) || se >= r->num_se)
			return EINVAL;
		return emu_regs_get(r, xcc, &ref, se, inst, val) ? EINVAL : 0;
	case EMU_RB_GLOBAL_RAM:
		if (addr >= EMU_MUXSEL_ENTRIES)
			return EINVAL;
		*val = x->glb_ram[addr];
		return 0;
	case EMU_RB_SE_RAM:
		if (addr >= EMU_MUXSEL_ENTRIES || se >= r->num_se)
			return EINVAL;
		*val = x->se_ram[se][addr];
		return 0;
	case EMU_RB_RLC:
		switch (addr) {
		case 0: *val = x->spm_state; return 0;
		case 1: *val = x->rlc_sample_bytes; return 0;
		case 2: *val = x->rlc_interval; return 0;
		case 3: *val = x->rlc_lines; return 0;
		case 4: *val = r->num_se; return 0;
		}
		return EINVAL;
	}
	return EINVAL;
}

void emu_regs_kfd_start(struct emu_gpu_regs *r)
{
	for (uint32_t k = 0; k < r->num_xcc; k++) {
		struct emu_xcc_regs *x = &r->x[k];
		/* gfx9 spm start: RING_MODE = 3, then DISABLE_AND_RESET (SPM.md 4.3). */
		x->spm_perfmon_cntl = (x->spm_perfmon_cntl & ~0x3000u) | 0x3000u;
		x->cp_perfmon_cntl &= ~0xF0u;
		x->spm_state = EMU_SPM_RESET;
		x->rlc_sample_bytes = x->rlc_interval = x->rlc_lines = 0;
	}
}

void emu_regs_kfd_stop(struct emu_gpu_regs *r)
{
	for (uint32_t k = 0; k < r->num_xcc; k++) {
		struct emu_xcc_regs *x = &r->x[k];
		x->cp_perfmon_cntl &= ~0xF0u;
		x->spm_state = EMU_SPM_RESET;
		x->rlc_sample_bytes = x->rlc_interval = x->rlc_lines = 0;
	}
}
