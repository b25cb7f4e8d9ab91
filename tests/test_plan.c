/* SPDX-License-Identifier: MIT */
/*
 * spm/plan.c: the SPM.md §5.5 worked example, PROGRAMMING.md §7's register
 * values, 32-bit SQ placement, gfx90a CORE1, intervals, limits and errors.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "spm/plan.h"
#include "spm/spm.h"
#include "testenv.h"

#define HAS(s, sub) CU_ASSERT_PTR_NOT_NULL(strstr((s), (sub)))
#define N(a) (sizeof(a) / sizeof((a)[0]))

static char err[512];

static struct spm_plan *plan_of(const char *gfx, uint32_t num_se, uint32_t cus, const char *const *names,
				size_t n, uint32_t interval, int *ret)
{
	struct spm_plan_request req = {
		.gfx = gfx,
		.geo = { .num_se = num_se, .num_xcc = 1, .cus_per_se = cus },
		.counters = names,
		.ncounters = n,
		.interval = interval,
	};
	struct spm_plan *p = NULL;
	err[0] = '\0';
	*ret = spm_plan_create(&req, &p, err, sizeof(err));
	return p;
}

static struct spm_plan *plan_ok(const char *gfx, uint32_t num_se, uint32_t cus, const char *const *names,
				size_t n, uint32_t interval)
{
	int r;
	struct spm_plan *p = plan_of(gfx, num_se, cus, names, n, interval, &r);
	if (r)
		fprintf(stderr, "plan failed: %s\n", err);
	CU_ASSERT_EQUAL_FATAL(r, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	return p;
}

static const struct spm_plan_counter *find(const struct spm_plan *p, const char *name)
{
	for (size_t i = 0; i < p->ncounters; i++)
		if (!strcmp(p->counters[i].name, name))
			return &p->counters[i];
	CU_FAIL("counter not in plan");
	return NULL;
}

static int slot_of(const struct spm_plan *p, const char *name)
{
	const struct spm_plan_counter *c = find(p, name);
	return c ? c->slot : -1;
}

static uint32_t select_at(const struct spm_plan *p, uint32_t reg, int32_t inst)
{
	for (size_t i = 0; i < p->nselects; i++)
		if (p->selects[i].reg == reg && p->selects[i].instance == inst)
			return p->selects[i].value;
	return 0xDEADBEEF;
}

/* SPM.md §5.5 with real counters of the same shape: CPC reg 0; TCC regs 0,1,2; TA regs 0,1. */
static void test_worked_example(void)
{
	static const char *const names[] = {
		"CPC_CPC_STAT_BUSY", "TCC_HIT[0]", "TCC_MISS[0]", "TCC_READ[0]", "TA_TA_BUSY[0]",
		"TA_TOTAL_WAVEFRONTS[0]",
	};
	struct spm_plan *p = plan_ok("gfx942", 4, 10, names, N(names), 8192);

	CU_ASSERT_EQUAL(p->ncounters, 6);
	CU_ASSERT_EQUAL(slot_of(p, "CPC_CPC_STAT_BUSY"), 4);
	CU_ASSERT_EQUAL(slot_of(p, "TCC_HIT[0]"), 5);
	CU_ASSERT_EQUAL(slot_of(p, "TCC_READ[0]"), 6);
	CU_ASSERT_EQUAL(slot_of(p, "TCC_MISS[0]"), 16);
	CU_ASSERT_EQUAL(slot_of(p, "TA_TA_BUSY[0]"), 0);
	CU_ASSERT_EQUAL(slot_of(p, "TA_TOTAL_WAVEFRONTS[0]"), 16);
	CU_ASSERT_EQUAL(find(p, "TA_TA_BUSY[0]")->segment, SPM_SEG_SE);
	CU_ASSERT_EQUAL(find(p, "TCC_HIT[0]")->hi_slot, -1);
	CU_ASSERT_EQUAL(p->global_lines, 2);
	CU_ASSERT_EQUAL(p->se_lines, 2);
	CU_ASSERT_EQUAL(p->sample_bytes, 320);

	/* RAM images: timestamp x4, entries = counter | block << 6 | instance << 11 */
	CU_ASSERT_EQUAL(p->global_ram_n, 34);
	CU_ASSERT_EQUAL(p->se_ram_n, 34);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(p->global_ram[i], 0xF0F0);
	CU_ASSERT_EQUAL(p->global_ram[4], 0x0040); /* CPC counter 0 */
	CU_ASSERT_EQUAL(p->global_ram[5], 0x0100); /* TCC counter 0 */
	CU_ASSERT_EQUAL(p->global_ram[6], 0x0102); /* TCC counter 2 */
	CU_ASSERT_EQUAL(p->global_ram[16], 0x0101); /* TCC counter 1, odd line */
	CU_ASSERT_EQUAL(p->global_ram[7], 0xFFFF);
	CU_ASSERT_EQUAL(p->global_ram[33], 0xFFFF);
	CU_ASSERT_EQUAL(p->se_ram[0], 0x0140);
	CU_ASSERT_EQUAL(p->se_ram[16], 0x0141);
	CU_ASSERT_EQUAL(p->se_ram[1], 0xFFFF);

	/* TCC sub-counter 2 goes to SELECT1; CNTR_MODE only in SELECT */
	CU_ASSERT_EQUAL(select_at(p, 0xDB80, 0), 17u | 19u << 10 | 1u << 20);
	CU_ASSERT_EQUAL(select_at(p, 0xDB81, 0), 12u);
	CU_ASSERT_EQUAL(select_at(p, 0xD809, 0), 25u | 1u << 20);
	CU_ASSERT_EQUAL(select_at(p, 0xDAC0, 0), 13u | 29u << 10 | 1u << 20);
	spm_plan_free(p);
}

/* PROGRAMMING.md §7: SQ_WAVES + TCC_HIT + TA_TA_BUSY on gfx942, interval 8192. */
static void test_known_registers(void)
{
	static const char *const names[] = { "SQ_WAVES", "TCC_HIT[0]", "TA_TA_BUSY[0]" };
	struct spm_plan *p = plan_ok("gfx942", 4, 10, names, N(names), 8192);

	CU_ASSERT_EQUAL(p->segment_size, 0x0842100A);
	CU_ASSERT_FALSE(p->has_core1);
	CU_ASSERT_EQUAL(p->perfmon_cntl, 0x20003000); /* interval << 16 | ring mode 3 << 12 */
	CU_ASSERT_EQUAL(p->sample_delay_max, 0x34);
	CU_ASSERT_EQUAL(select_at(p, 0xDB80, 0), 0x00100011); /* TCC_HIT */
	CU_ASSERT_EQUAL(select_at(p, 0xDAC0, 0), 0x0010000D); /* TA_TA_BUSY on gfx942 */
	CU_ASSERT_EQUAL(select_at(p, 0xD9C0, -1), 0x0F3FF004); /* SQ_WAVES, SPM_MODE 3 */
	CU_ASSERT_TRUE(p->has_sq);
	/* select order: TA before TCC (block order), SQ last */
	CU_ASSERT_EQUAL(p->nselects, 3);
	CU_ASSERT_EQUAL(p->selects[0].reg, 0xDAC0);
	CU_ASSERT_EQUAL(p->selects[1].reg, 0xDB80);
	CU_ASSERT_EQUAL(p->selects[2].reg, 0xD9C0);
	/* SE RAM: SQ low at 0, TA at 1, SQ high at 16 (AQP-NEW streams it) */
	CU_ASSERT_EQUAL(p->se_ram[0], 0x0240);
	CU_ASSERT_EQUAL(p->se_ram[1], 0x0140);
	CU_ASSERT_EQUAL(p->se_ram[16], 0x0241);
	CU_ASSERT_EQUAL(p->global_ram[4], 0x0100);
	spm_plan_free(p);
}

static void test_tcc_all_instances(void)
{
	static const char *const names[] = { "TCC_HIT" };
	struct spm_plan *p = plan_ok("gfx942", 4, 10, names, 1, 0);

	CU_ASSERT_EQUAL(p->interval, 8192);
	CU_ASSERT_EQUAL(p->ncounters, 16);
	CU_ASSERT_STRING_EQUAL(p->counters[0].name, "TCC_HIT[0]");
	CU_ASSERT_STRING_EQUAL(p->counters[15].name, "TCC_HIT[15]");
	/* 4 timestamp + 16 evens: slots 4..15, then the next even line 32..35 */
	CU_ASSERT_EQUAL(slot_of(p, "TCC_HIT[0]"), 4);
	CU_ASSERT_EQUAL(slot_of(p, "TCC_HIT[11]"), 15);
	CU_ASSERT_EQUAL(slot_of(p, "TCC_HIT[12]"), 32);
	CU_ASSERT_EQUAL(slot_of(p, "TCC_HIT[15]"), 35);
	CU_ASSERT_EQUAL(p->global_lines, 4);
	CU_ASSERT_EQUAL(p->se_lines, 0);
	CU_ASSERT_EQUAL(p->sample_bytes, 128);
	CU_ASSERT_EQUAL(p->segment_size, 4u | 4u << 11);
	CU_ASSERT_EQUAL(p->se_ram_n, 2);
	CU_ASSERT_EQUAL(p->global_ram[35], 0x0100 | 15 << 11);
	CU_ASSERT_EQUAL(p->nselects, 16);
	for (int i = 0; i < 16; i++) {
		CU_ASSERT_EQUAL(p->selects[i].instance, i);
		CU_ASSERT_EQUAL(p->selects[i].reg, 0xDB80);
		CU_ASSERT_EQUAL(p->selects[i].value, 0x00100011);
	}
	spm_plan_free(p);

	/* gfx90a: 32 channels per GCD */
	p = plan_ok("gfx90a", 8, 13, names, 1, 0);
	CU_ASSERT_EQUAL(p->ncounters, 32);
	CU_ASSERT_EQUAL(p->global_lines, 6);
	spm_plan_free(p);
}

static void test_per_se_instances(void)
{
	static const char *const names[] = { "TA_TA_BUSY", "SPI_CSN_WAVE" };
	struct spm_plan *p = plan_ok("gfx942", 4, 10, names, N(names), 0);

	CU_ASSERT_EQUAL(p->ncounters, 11);
	CU_ASSERT_STRING_EQUAL(p->counters[9].name, "TA_TA_BUSY[9]");
	CU_ASSERT_STRING_EQUAL(p->counters[10].name, "SPI_CSN_WAVE");
	/* block order: SPI (SE id 8) before TA in aqlprofile's order */
	CU_ASSERT_EQUAL(slot_of(p, "SPI_CSN_WAVE"), 0);
	CU_ASSERT_EQUAL(slot_of(p, "TA_TA_BUSY[0]"), 1);
	CU_ASSERT_EQUAL(slot_of(p, "TA_TA_BUSY[9]"), 10);
	CU_ASSERT_EQUAL(p->se_ram[10], 0x0140 | 9 << 11);
	CU_ASSERT_EQUAL(p->global_lines, 2);
	CU_ASSERT_EQUAL(p->se_lines, 2);
	/* per-instance selects under GRBM 0xA0000000|inst: instance 0..9 */
	CU_ASSERT_EQUAL(select_at(p, 0xDAC0, 9), 0x0010000D);
	CU_ASSERT_EQUAL(select_at(p, 0xDAC0, 10), 0xDEADBEEF);
	CU_ASSERT_EQUAL(select_at(p, 0xD980, 0), 52u | 1u << 20);
	spm_plan_free(p);
}

/* 32-bit SQ counters go first in both parities so hi = lo + 16, whatever the request order. */
static void test_sq_32bit(void)
{
	static const char *const names[] = { "TA_TA_BUSY[0]", "TA_TOTAL_WAVEFRONTS[0]", "SQ_WAVES", "SQ_CYCLES",
					      "TD_TD_BUSY[2]" };
	struct spm_plan *p = plan_ok("gfx942", 4, 10, names, N(names), 0);

	const struct spm_plan_counter *w = find(p, "SQ_WAVES"), *c = find(p, "SQ_CYCLES");
	CU_ASSERT_EQUAL(w->slot, 0);
	CU_ASSERT_EQUAL(w->hi_slot, 16);
	CU_ASSERT_EQUAL(c->slot, 1);
	CU_ASSERT_EQUAL(c->hi_slot, 17);
	CU_ASSERT_EQUAL(slot_of(p, "TA_TA_BUSY[0]"), 2);
	CU_ASSERT_EQUAL(slot_of(p, "TA_TOTAL_WAVEFRONTS[0]"), 18);
	CU_ASSERT_EQUAL(slot_of(p, "TD_TD_BUSY[2]"), 3);
	CU_ASSERT_EQUAL(p->se_ram[0], 0x0240);
	CU_ASSERT_EQUAL(p->se_ram[16], 0x0241);
	CU_ASSERT_EQUAL(p->se_ram[1], 0x0242);
	CU_ASSERT_EQUAL(p->se_ram[17], 0x0243);
	CU_ASSERT_EQUAL(p->se_ram[3], 0x0180 | 2 << 11);
	CU_ASSERT_EQUAL(select_at(p, 0xD9C0, -1), 0x0F3FF004);
	CU_ASSERT_EQUAL(select_at(p, 0xD9C1, -1), 0x0F3FF002);
	for (size_t i = 0; i < p->ncounters; i++)
		if (p->counters[i].hi_slot >= 0)
			CU_ASSERT_EQUAL(p->counters[i].hi_slot, p->counters[i].slot + 16);
	spm_plan_free(p);

	/* 8 SQ counters fill the first even line's 8 slots and 8 odd; still +16 */
	static const char *const eight[] = { "SQ_WAVES", "SQ_CYCLES", "SQ_BUSY_CYCLES", "SQ_BUSY_CU_CYCLES",
					     "SQ_WAVE_CYCLES", "SQ_LEVEL_WAVES", "SQ_INSTS_VALU", "SQ_INSTS_SALU",
					     "TCP_TCC_READ_REQ" };
	p = plan_ok("gfx942", 4, 10, eight, N(eight), 0);
	for (size_t i = 0; i < p->ncounters; i++)
		if (p->counters[i].block == SPM_BLK_SQ)
			CU_ASSERT_EQUAL(p->counters[i].hi_slot, p->counters[i].slot + 16);
	CU_ASSERT_EQUAL(find(p, "SQ_INSTS_SALU")->slot, 7);
	CU_ASSERT_EQUAL(select_at(p, 0xD9C7, -1), 0x0F3FF000u | 60);
	CU_ASSERT_EQUAL(slot_of(p, "TCP_TCC_READ_REQ[0]"), 8);
	CU_ASSERT_EQUAL(slot_of(p, "TCP_TCC_READ_REQ[7]"), 15);
	CU_ASSERT_EQUAL(slot_of(p, "TCP_TCC_READ_REQ[8]"), 32);
	CU_ASSERT_EQUAL(p->se_lines, 4);
	spm_plan_free(p);
}

/* gfx90a: 8 SEs; SEGMENT_SIZE keeps G + 4S and SE0..2, CORE1 carries 4S and SE4..7. */
static void test_gfx90a_core1(void)
{
	static const char *const names[] = { "SQ_WAVES" };
	struct spm_plan *p = plan_ok("gfx90a", 8, 13, names, 1, 0);

	CU_ASSERT_EQUAL(p->global_lines, 2);
	CU_ASSERT_EQUAL(p->se_lines, 2);
	CU_ASSERT_EQUAL(p->segment_size, 0x0842100A);
	CU_ASSERT_TRUE(p->has_core1);
	CU_ASSERT_EQUAL(p->segment_size_core1, 8u | 2u << 12 | 2u << 17 | 2u << 22 | 2u << 27);
	CU_ASSERT_EQUAL(p->segment_size_core1, 0x10842008);
	CU_ASSERT_EQUAL(p->sample_bytes, 576); /* (2 + 8*2) * 32, SPM.md §6.2 */
	CU_ASSERT_EQUAL(p->sample_delay_max, 0);
	spm_plan_free(p);

	int r;
	p = plan_of("gfx942", 8, 10, names, 1, 0, &r);
	CU_ASSERT_EQUAL(r, -EINVAL);
	CU_ASSERT_PTR_NULL(p);
	HAS(err, "1..4");
}

static void test_interval(void)
{
	uint32_t v;

	CU_ASSERT_EQUAL(spm_interval_round(8192, &v, NULL, 0), 0);
	CU_ASSERT_EQUAL(v, 8192);
	CU_ASSERT_EQUAL(spm_interval_round(1000, &v, NULL, 0), 0);
	CU_ASSERT_EQUAL(v, 992);
	CU_ASSERT_EQUAL(spm_interval_round(1008, &v, NULL, 0), 0);
	CU_ASSERT_EQUAL(v, 1024);
	CU_ASSERT_EQUAL(spm_interval_round(16, &v, NULL, 0), 0);
	CU_ASSERT_EQUAL(v, 32);
	CU_ASSERT_EQUAL(spm_interval_round(65504, &v, NULL, 0), 0);
	CU_ASSERT_EQUAL(v, 65504);
	CU_ASSERT_EQUAL(spm_interval_round(65519, &v, NULL, 0), 0);
	CU_ASSERT_EQUAL(v, 65504);
	CU_ASSERT_EQUAL(spm_interval_round(15, &v, err, sizeof(err)), -ERANGE);
	HAS(err, "32..65504 in steps of 32");
	CU_ASSERT_EQUAL(spm_interval_round(65520, &v, err, sizeof(err)), -ERANGE);
	CU_ASSERT_EQUAL(spm_interval_round(0xFFFFFFFFu, &v, err, sizeof(err)), -ERANGE);

	static const char *const names[] = { "SQ_WAVES" };
	struct spm_plan *p = plan_ok("gfx942", 4, 10, names, 1, 1000);
	CU_ASSERT_EQUAL(p->interval_requested, 1000);
	CU_ASSERT_EQUAL(p->interval, 992);
	CU_ASSERT_EQUAL(p->perfmon_cntl, 992u << 16 | 3u << 12);
	spm_plan_free(p);

	int r;
	p = plan_of("gfx942", 4, 10, names, 1, 70000, &r);
	CU_ASSERT_EQUAL(r, -ERANGE);
	HAS(err, "32..65504 in steps of 32");
}

static void test_errors(void)
{
	int r;
	struct spm_plan *p;

	static const char *const unknown[] = { "SQ_WAVE" };
	p = plan_of("gfx942", 4, 10, unknown, 1, 0, &r);
	CU_ASSERT_EQUAL(r, -ENOENT);
	CU_ASSERT_PTR_NULL(p);
	HAS(err, "did you mean SQ_WAVES");

	static const char *const grbm[] = { "SQ_WAVES", "GRBM_GUI_ACTIVE" };
	p = plan_of("gfx942", 4, 10, grbm, 2, 0, &r);
	CU_ASSERT_EQUAL(r, -EOPNOTSUPP);
	HAS(err, "use SQ_CYCLES or SQ_BUSY_CYCLES");

	static const char *const dup[] = { "TCC_HIT", "TCC_HIT[3]" };
	p = plan_of("gfx942", 4, 10, dup, 2, 0, &r);
	CU_ASSERT_EQUAL(r, -EEXIST);
	HAS(err, "TCC_HIT[3] is requested twice");

	static const char *const dup2[] = { "SQ_WAVES", "sq_waves" };
	p = plan_of("gfx942", 4, 10, dup2, 2, 0, &r);
	CU_ASSERT_EQUAL(r, -EEXIST);

	static const char *const range[] = { "TCC_HIT[16]" };
	p = plan_of("gfx942", 4, 10, range, 1, 0, &r);
	CU_ASSERT_EQUAL(r, -ERANGE);
	HAS(err, "16 TCC instances");
	p = plan_ok("gfx90a", 8, 13, range, 1, 0);
	CU_ASSERT_EQUAL(p->ncounters, 1);
	CU_ASSERT_STRING_EQUAL(p->counters[0].name, "TCC_HIT[16]");
	CU_ASSERT_EQUAL(p->counters[0].muxsel, 0x0100 | 16 << 11);
	spm_plan_free(p);

	static const char *const ta[] = { "TA_TA_BUSY[10]" };
	p = plan_of("gfx942", 4, 10, ta, 1, 0, &r);
	CU_ASSERT_EQUAL(r, -ERANGE);
	HAS(err, "one per CU");

	static const char *const single[] = { "SQ_WAVES[0]" };
	p = plan_of("gfx942", 4, 10, single, 1, 0, &r);
	CU_ASSERT_EQUAL(r, -EINVAL);
	HAS(err, "without [i]");

	static const char *const bad[] = { "TCC_HIT[x]" };
	p = plan_of("gfx942", 4, 10, bad, 1, 0, &r);
	CU_ASSERT_EQUAL(r, -EINVAL);

	p = plan_of("gfx1100", 4, 10, unknown, 1, 0, &r);
	CU_ASSERT_EQUAL(r, -EOPNOTSUPP);
	HAS(err, "gfx1100");

	p = plan_of("gfx942", 4, 0, unknown, 1, 0, &r);
	CU_ASSERT_EQUAL(r, -EINVAL);
}

/* A block instance has `slots` sub-counters; the message names what to drop. */
static void test_slot_limits(void)
{
	int r;
	struct spm_plan *p;

	static const char *const ta[] = { "TA_TA_BUSY", "TA_TOTAL_WAVEFRONTS", "TA_BUFFER_WAVEFRONTS" };
	p = plan_of("gfx942", 4, 10, ta, N(ta), 0, &r);
	CU_ASSERT_EQUAL(r, -E2BIG);
	CU_ASSERT_PTR_NULL(p);
	HAS(err, "too many TA counters");
	HAS(err, "at most 2");
	HAS(err, "drop TA_BUFFER_WAVEFRONTS");

	static const char *const sq[] = { "SQ_WAVES", "SQ_CYCLES", "SQ_BUSY_CYCLES", "SQ_BUSY_CU_CYCLES",
					  "SQ_WAVE_CYCLES", "SQ_LEVEL_WAVES", "SQ_INSTS_VALU", "SQ_INSTS_SALU",
					  "SQ_INSTS_SMEM" };
	p = plan_of("gfx942", 4, 10, sq, N(sq), 0, &r);
	CU_ASSERT_EQUAL(r, -E2BIG);
	HAS(err, "at most 8 32-bit counters");
	HAS(err, "drop SQ_INSTS_SMEM");

	/* Single instances do not use the other instances' sub-counters */
	static const char *const inst[] = { "TA_TA_BUSY[0]", "TA_TOTAL_WAVEFRONTS[0]", "TA_BUFFER_WAVEFRONTS[1]" };
	p = plan_ok("gfx942", 4, 10, inst, N(inst), 0);
	CU_ASSERT_EQUAL(find(p, "TA_BUFFER_WAVEFRONTS[1]")->sub, 0);
	spm_plan_free(p);

	/* SPI: sub-counters 4 and 5 use perfcounter 1 (0xD981), not SELECT + 1 */
	static const char *const spi[] = { "SPI_CSN_WINDOW_VALID", "SPI_CSN_BUSY", "SPI_CSN_NUM_THREADGROUPS",
					   "SPI_CSN_WAVE", "SPI_RA_REQ_NO_ALLOC_CSN", "SPI_RA_WAVE_SIMD_FULL_CSN" };
	p = plan_ok("gfx942", 4, 10, spi, N(spi), 0);
	CU_ASSERT_EQUAL(select_at(p, 0xD980, 0), 47u | 48u << 10 | 1u << 20);
	CU_ASSERT_EQUAL(select_at(p, 0xD984, 0), 49u | 52u << 10);
	CU_ASSERT_EQUAL(select_at(p, 0xD981, 0), 85u | 103u << 10 | 1u << 20);
	CU_ASSERT_EQUAL(p->nselects, 3);
	spm_plan_free(p);
}

/* The biggest request the catalog allows still fits the line fields. */
static void test_largest_request(void)
{
	static const char *const names[] = {
		"CPC_CPC_STAT_BUSY", "CPC_CPC_STAT_IDLE", "CPF_CPF_STAT_BUSY", "CPF_CPF_STAT_IDLE",
		"TCC_HIT", "TCC_MISS", "TCC_READ", "TCC_WRITE", "TCA_CYCLE", "TCA_BUSY",
		"TA_TA_BUSY", "TA_TOTAL_WAVEFRONTS", "TD_TD_BUSY", "TD_TC_STALL",
		"TCP_GATE_EN1", "TCP_TCC_READ_REQ", "TCP_TCC_WRITE_REQ", "TCP_TOTAL_CACHE_ACCESSES",
		"SPI_CSN_WAVE", "SQ_WAVES", "SQ_CYCLES",
	};
	struct spm_plan *p = plan_ok("gfx90a", 8, 16, names, N(names), 0);

	CU_ASSERT(p->global_lines <= SPM_MAX_LINES);
	CU_ASSERT(p->se_lines <= SPM_MAX_LINES);
	CU_ASSERT_EQUAL(p->global_ram_n, p->global_lines * 16 + 2);
	CU_ASSERT_EQUAL(p->global_ram[p->global_ram_n - 1], 0xFFFF);
	CU_ASSERT_EQUAL(p->global_ram[p->global_ram_n - 2], 0xFFFF);
	/* no two counters share a slot */
	for (size_t i = 0; i < p->ncounters; i++)
		for (size_t j = i + 1; j < p->ncounters; j++)
			if (p->counters[i].segment == p->counters[j].segment)
				CU_ASSERT(p->counters[i].slot != p->counters[j].slot);
	/* every entry in the RAMs is a counter's or a timestamp */
	size_t used = 0;
	for (size_t i = 0; i < p->global_ram_n; i++)
		used += p->global_ram[i] != 0xFFFF;
	CU_ASSERT_EQUAL(used, 4 + 4 + 32 * 4 + 32 * 2);
	spm_plan_free(p);
}

static void test_layout_json(void)
{
	static const char *const names[] = { "TCC_HIT[0]", "SQ_WAVES" };
	struct spm_plan *p = plan_ok("GFX942", 4, 10, names, N(names), 0);
	char *s = spm_plan_layout_dumps(p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);

	json_error_t je;
	json_t *j = json_loads(s, 0, &je);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "format")), "spmtap-layout");
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "version")), 1);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "gfx")), "gfx942");
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "num_se")), 4);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "global_lines")), 2);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "se_lines")), 2);
	CU_ASSERT_EQUAL(json_object_size(j), 7);
	json_t *cs = json_object_get(j, "counters");
	CU_ASSERT_EQUAL_FATAL(json_array_size(cs), 2);
	json_t *a = json_array_get(cs, 0), *b = json_array_get(cs, 1);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(a, "name")), "TCC_HIT[0]");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(a, "segment")), "global");
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(a, "slot")), 4);
	CU_ASSERT_PTR_NULL(json_object_get(a, "hi_slot"));
	CU_ASSERT_EQUAL(json_object_size(a), 3);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(b, "name")), "SQ_WAVES");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(b, "segment")), "se");
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(b, "slot")), 0);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(b, "hi_slot")), 16);
	/* the brief's key order */
	CU_ASSERT_EQUAL(strncmp(s, "{\"format\":\"spmtap-layout\",\"version\":1,\"gfx\":\"gfx942\",\"num_se\":4,"
				   "\"global_lines\":2,\"se_lines\":2,\"counters\":[",
				60),
			0);
	json_decref(j);
	free(s);
	spm_plan_free(p);
}

static void test_geometry_from_device(void)
{
	struct spm_device mi300x = { .gfx = "gfx942", .num_xcc = 8, .num_se = 4, .cu_count = 304 };
	struct spm_device mi210 = { .gfx = "gfx90a", .num_xcc = 1, .num_se = 8, .cu_count = 104 };
	struct spm_device navi = { .gfx = "gfx1030", .num_xcc = 1, .num_se = 2, .cu_count = 40 };
	struct spm_geometry g;
	enum spm_gfx gfx;

	CU_ASSERT_EQUAL(spm_geometry_from_device(&mi300x, &g, &gfx, NULL, 0), 0);
	CU_ASSERT_EQUAL(gfx, SPM_GFX_942);
	CU_ASSERT_EQUAL(g.num_se, 4);
	CU_ASSERT_EQUAL(g.num_xcc, 8);
	CU_ASSERT_EQUAL(g.cus_per_se, 10); /* 38 CUs per XCC over 4 SEs: ceil */
	CU_ASSERT_EQUAL(spm_geometry_from_device(&mi210, &g, &gfx, NULL, 0), 0);
	CU_ASSERT_EQUAL(gfx, SPM_GFX_90A);
	CU_ASSERT_EQUAL(g.cus_per_se, 13);
	CU_ASSERT_EQUAL(spm_geometry_from_device(&navi, &g, &gfx, err, sizeof(err)), -EOPNOTSUPP);
}

/*
 * Issue 14 item 6: the plan predicts saturation from the catalog's peak and
 * the slot width.  TCC_HIT (16 bits, at most 2 tag lookups per channel per
 * cycle) is safe up to 32736 and saturates from the default 32768 on; a
 * cycle counter never can (65504 < 65535); a counter without a peak is not
 * predicted.  Before the fix plan/record said nothing at 32768.
 */
static void test_saturation_forecast(void)
{
	static const char *const names[] = { "TCC_HIT", "TCC_CYCLE", "SQ_WAVES", "TA_TOTAL_WAVEFRONTS[0]" };
	struct spm_plan_sat sat[8];
	char text[2048];

	CU_ASSERT_EQUAL(spm_saturation_safe_interval(2, 16, 32, SPM_INTERVAL_MAX), 32736);
	CU_ASSERT_EQUAL(spm_saturation_safe_interval(1, 16, 32, SPM_INTERVAL_MAX), SPM_INTERVAL_MAX);
	CU_ASSERT_EQUAL(spm_saturation_safe_interval(1, 32, 32, SPM_INTERVAL_MAX), SPM_INTERVAL_MAX);
	CU_ASSERT_EQUAL(spm_saturation_safe_interval(0, 16, 32, SPM_INTERVAL_MAX), 0);
	/* 3 per cycle: 65534 / 3 = 21844.67 -> 21824 */
	CU_ASSERT_EQUAL(spm_saturation_safe_interval(3, 16, 32, SPM_INTERVAL_MAX), 21824);

	const char *gfx[] = { "gfx942", "gfx90a" };
	for (size_t g = 0; g < 2; g++) {
		struct spm_plan *p = plan_ok(gfx[g], 4, 10, names, N(names), 32768);
		size_t n = spm_plan_saturation(p, sat, N(sat));
		CU_ASSERT_EQUAL(n, 4);
		CU_ASSERT_STRING_EQUAL(sat[0].ctr->name, "TCC_HIT");
		CU_ASSERT_EQUAL(sat[0].width, 16);
		CU_ASSERT_DOUBLE_EQUAL(sat[0].per_cycle, 2.0, 1e-12);
		CU_ASSERT_EQUAL(sat[0].safe_interval, 32736);
		CU_ASSERT_TRUE(sat[0].saturates);
		CU_ASSERT_EQUAL(sat[1].safe_interval, SPM_INTERVAL_MAX);
		CU_ASSERT_FALSE(sat[1].saturates);
		CU_ASSERT_EQUAL(sat[2].safe_interval, 0); /* SQ_WAVES: no peak known */
		CU_ASSERT_FALSE(sat[2].saturates);
		CU_ASSERT_EQUAL(sat[3].safe_interval, 0);
		CU_ASSERT_EQUAL(spm_plan_warnings(p, 2.1, 1e9, text, sizeof(text)), 1);
		HAS(text, "TCC_HIT will saturate at interval 32768");
		HAS(text, "--interval 32736 or shorter");
		CU_ASSERT_PTR_NULL(strstr(text, "TCC_CYCLE"));
		spm_plan_free(p);
		/* one step shorter: nothing to say */
		p = plan_ok(gfx[g], 4, 10, names, N(names), 32736);
		spm_plan_saturation(p, sat, N(sat));
		CU_ASSERT_FALSE(sat[0].saturates);
		CU_ASSERT_EQUAL(spm_plan_warnings(p, 2.1, 1e9, text, sizeof(text)), 0);
		CU_ASSERT_STRING_EQUAL(text, "");
		spm_plan_free(p);
	}
}

/*
 * The data-rate warning: `plan --interval 32` on an MI300X (8 XCC, 384-byte
 * samples at 2.1 GHz = 201,600 MB/s) said nothing before; now it names the
 * estimate and the interval that keeps under it (the smallest multiple of 32
 * whose rate is <= the estimate, checked here both ways).
 */
static void test_rate_warning(void)
{
	static const char *const names[] = { "SQ_WAVES", "SQ_CYCLES", "TCC_HIT" };
	struct spm_plan_request req = {
		.gfx = "gfx942", .geo = { .num_se = 4, .num_xcc = 8, .cus_per_se = 10 },
		.counters = names, .ncounters = N(names), .interval = 32,
	};
	struct spm_plan *p = NULL;
	char text[2048];
	CU_ASSERT_EQUAL_FATAL(spm_plan_create(&req, &p, err, sizeof(err)), 0);
	CU_ASSERT_DOUBLE_EQUAL(spm_plan_mbs(p, 2.1), 201600.0, 0.5);
	CU_ASSERT_EQUAL(spm_plan_warnings(p, 2.1, 0, text, sizeof(text)), 1);
	HAS(text, "201600.0 MB/s");
	HAS(text, "800 MB/s");
	const char *iv = strstr(text, "--interval ");
	CU_ASSERT_PTR_NOT_NULL_FATAL(iv);
	uint32_t safe = (uint32_t)strtoul(iv + 11, NULL, 10);
	spm_plan_free(p);
	req.interval = safe;
	CU_ASSERT_EQUAL_FATAL(spm_plan_create(&req, &p, err, sizeof(err)), 0);
	CU_ASSERT(spm_plan_mbs(p, 2.1) <= SPM_SUSTAINED_MBS_CSV * (1 + 1e-9));
	CU_ASSERT_PTR_NULL(strstr((spm_plan_warnings(p, 2.1, 0, text, sizeof(text)), text), "data rate"));
	spm_plan_free(p);
	req.interval = safe - 32;
	CU_ASSERT_EQUAL_FATAL(spm_plan_create(&req, &p, err, sizeof(err)), 0);
	CU_ASSERT(spm_plan_mbs(p, 2.1) > SPM_SUSTAINED_MBS_CSV);
	spm_plan_free(p);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "plan/worked_example", test_worked_example, NULL },
		{ "plan/known_registers", test_known_registers, NULL },
		{ "plan/tcc_all_instances", test_tcc_all_instances, NULL },
		{ "plan/per_se_instances", test_per_se_instances, NULL },
		{ "plan/sq_32bit", test_sq_32bit, NULL },
		{ "plan/gfx90a_core1", test_gfx90a_core1, NULL },
		{ "plan/interval", test_interval, NULL },
		{ "plan/errors", test_errors, NULL },
		{ "plan/slot_limits", test_slot_limits, NULL },
		{ "plan/largest_request", test_largest_request, NULL },
		{ "plan/layout_json", test_layout_json, NULL },
		{ "plan/geometry_from_device", test_geometry_from_device, NULL },
		{ "plan/saturation_forecast", test_saturation_forecast, NULL },
		{ "plan/rate_warning", test_rate_warning, NULL },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("plan", cases, argc, argv);
}
