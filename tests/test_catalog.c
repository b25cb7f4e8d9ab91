/* SPDX-License-Identifier: MIT */
/* spm/catalog*.c: per-gfx event ids, refusals with alternatives, suggestions, table sanity. */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "spm/catalog.h"
#include "testenv.h"

#define HAS(s, sub) CU_ASSERT_PTR_NOT_NULL(strstr((s), (sub)))

static const struct spm_catalog *cat(enum spm_gfx g)
{
	const struct spm_catalog *c = NULL;
	CU_ASSERT_EQUAL_FATAL(spm_catalog_get(g, &c, NULL, 0), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	return c;
}

static unsigned int event_of(enum spm_gfx g, const char *name)
{
	const struct spm_counter *c = NULL;
	char err[256];
	int r = spm_catalog_lookup(cat(g), name, &c, err, sizeof(err));
	CU_ASSERT_EQUAL_FATAL(r, 0);
	return c->event;
}

/* PROGRAMMING.md §4.2: the ids that differ between targets. */
static void test_ids_differ_by_gfx(void)
{
	CU_ASSERT_EQUAL(event_of(SPM_GFX_90A, "TA_TA_BUSY"), 15);
	CU_ASSERT_EQUAL(event_of(SPM_GFX_942, "TA_TA_BUSY"), 13);
	CU_ASSERT_EQUAL(event_of(SPM_GFX_90A, "SQ_INSTS_SALU"), 56);
	CU_ASSERT_EQUAL(event_of(SPM_GFX_942, "SQ_INSTS_SALU"), 60);
	CU_ASSERT_EQUAL(event_of(SPM_GFX_90A, "SQ_WAVE_CYCLES"), 74);
	CU_ASSERT_EQUAL(event_of(SPM_GFX_942, "SQ_WAVE_CYCLES"), 79);
	CU_ASSERT_EQUAL(event_of(SPM_GFX_90A, "TA_FLAT_READ_WAVEFRONTS"), 101);
	CU_ASSERT_EQUAL(event_of(SPM_GFX_942, "TA_FLAT_READ_WAVEFRONTS"), 52);
	CU_ASSERT_EQUAL(event_of(SPM_GFX_90A, "TCP_TCC_READ_REQ"), 69);
	CU_ASSERT_EQUAL(event_of(SPM_GFX_942, "TCP_TCC_READ_REQ"), 65);
	/* equal on both */
	CU_ASSERT_EQUAL(event_of(SPM_GFX_90A, "TCC_HIT"), 17);
	CU_ASSERT_EQUAL(event_of(SPM_GFX_942, "TCC_HIT"), 17);
	CU_ASSERT_EQUAL(event_of(SPM_GFX_942, "SQ_WAVES"), 4);
	/* renamed on gfx942 */
	CU_ASSERT_EQUAL(event_of(SPM_GFX_90A, "TCC_EA_RDREQ"), 38);
	CU_ASSERT_EQUAL(event_of(SPM_GFX_942, "TCC_EA0_RDREQ"), 38);
}

static void test_gfx_parse(void)
{
	enum spm_gfx g;
	char err[256] = "";

	CU_ASSERT_EQUAL(spm_gfx_parse("gfx90a", &g, NULL, 0), 0);
	CU_ASSERT_EQUAL(g, SPM_GFX_90A);
	CU_ASSERT_EQUAL(spm_gfx_parse("GFX942", &g, NULL, 0), 0);
	CU_ASSERT_EQUAL(g, SPM_GFX_942);
	CU_ASSERT_EQUAL(spm_gfx_parse("gfx940", &g, NULL, 0), 0);
	CU_ASSERT_EQUAL(g, SPM_GFX_942);
	CU_ASSERT_EQUAL(spm_gfx_parse("gfx950", &g, err, sizeof(err)), -EOPNOTSUPP);
	HAS(err, "gfx950");
	HAS(err, "gfx90a");

	const struct spm_catalog *c = (const struct spm_catalog *)1;
	err[0] = '\0';
	CU_ASSERT_EQUAL(spm_catalog_get(SPM_GFX_NONE, &c, err, sizeof(err)), -EOPNOTSUPP);
	CU_ASSERT_PTR_NULL(c);
	CU_ASSERT(strlen(err) > 0);
	CU_ASSERT_EQUAL(spm_catalog_gfx(cat(SPM_GFX_942)), SPM_GFX_942);
}

static void test_grbm_refused_with_alternative(void)
{
	const struct spm_counter *c = NULL;
	char err[256] = "";
	int r = spm_catalog_lookup(cat(SPM_GFX_942), "GRBM_GUI_ACTIVE", &c, err, sizeof(err));

	CU_ASSERT_EQUAL(r, -EOPNOTSUPP);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_FALSE(spm_counter_streamable(c));
	CU_ASSERT_EQUAL(spm_counter_width(c), 0);
	HAS(err, "no SPM block id");
	HAS(err, "SQ_CYCLES or SQ_BUSY_CYCLES");

	r = spm_catalog_lookup(cat(SPM_GFX_90A), "grbm_count", &c, err, sizeof(err));
	CU_ASSERT_EQUAL(r, -EOPNOTSUPP);
	HAS(err, "GRBM_COUNT");
	HAS(err, "timestamp");
	r = spm_catalog_lookup(cat(SPM_GFX_90A), "GRBM_CP_BUSY", &c, err, sizeof(err));
	CU_ASSERT_EQUAL(r, -EOPNOTSUPP);
	HAS(err, "CPC_CPC_STAT_BUSY");
}

static void test_suggestions(void)
{
	const struct spm_counter *c = NULL;
	char err[256] = "";

	CU_ASSERT_EQUAL(spm_catalog_lookup(cat(SPM_GFX_942), "SQ_WAVE", &c, err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NULL(c);
	HAS(err, "unknown counter SQ_WAVE for gfx942");
	HAS(err, "did you mean SQ_WAVES, SQ_WAVE_CYCLES");

	CU_ASSERT_EQUAL(spm_catalog_lookup(cat(SPM_GFX_942), "tcc_hti", &c, err, sizeof(err)), -ENOENT);
	HAS(err, "did you mean TCC_HIT");

	/* gfx90a's name on gfx942 leads to the renamed counter */
	CU_ASSERT_EQUAL(spm_catalog_lookup(cat(SPM_GFX_942), "TCC_EA_RDREQ", &c, err, sizeof(err)), -ENOENT);
	HAS(err, "TCC_EA0_RDREQ");

	/* a shortened name finds the full one */
	const struct spm_counter *s[4];
	size_t n = spm_catalog_suggest(cat(SPM_GFX_90A), "TA_BUSY", s, 4);
	CU_ASSERT(n >= 1);
	int found = 0;
	for (size_t i = 0; i < n; i++)
		found |= !strcmp(s[i]->name, "TA_TA_BUSY");
	CU_ASSERT(found);

	CU_ASSERT_EQUAL(spm_catalog_lookup(cat(SPM_GFX_942), "ZZZZZZZZZZZZ", &c, err, sizeof(err)), -ENOENT);
	HAS(err, "spmtap list --counters");

	/* case-insensitive exact match */
	CU_ASSERT_EQUAL(spm_catalog_lookup(cat(SPM_GFX_942), "sq_waves", &c, NULL, 0), 0);
	CU_ASSERT_STRING_EQUAL(c->name, "SQ_WAVES");
}

static int count_cb(const struct spm_counter *c, void *user)
{
	(void)c;
	(*(size_t *)user)++;
	return 0;
}

static int stop_cb(const struct spm_counter *c, void *user)
{
	(void)user;
	return !strcmp(c->name, "TCC_HIT") ? 7 : 0;
}

static void test_iteration_and_sanity(void)
{
	const enum spm_gfx gfxs[] = { SPM_GFX_90A, SPM_GFX_942 };

	for (size_t g = 0; g < 2; g++) {
		const struct spm_catalog *c = cat(gfxs[g]);
		size_t n = spm_catalog_count(c), seen = 0;
		CU_ASSERT(n >= 60);
		CU_ASSERT_EQUAL(spm_catalog_foreach(c, count_cb, &seen), 0);
		CU_ASSERT_EQUAL(seen, n);
		CU_ASSERT_EQUAL(spm_catalog_foreach(c, stop_cb, NULL), 7);
		CU_ASSERT_PTR_NULL(spm_catalog_at(c, n));
		for (size_t i = 0; i < n; i++) {
			const struct spm_counter *a = spm_catalog_at(c, i);
			const struct spm_block_info *bi = spm_block_info(a->block);
			CU_ASSERT_PTR_NOT_NULL_FATAL(bi);
			CU_ASSERT(a->desc && a->desc[0]);
			/* unique names within one target */
			for (size_t j = i + 1; j < n; j++)
				CU_ASSERT(strcasecmp(a->name, spm_catalog_at(c, j)->name) != 0);
			if (!spm_counter_streamable(a)) {
				CU_ASSERT_PTR_NOT_NULL(a->alt);
				continue;
			}
			/* the event id must fit the block's select field */
			CU_ASSERT(a->event < (1u << bi->sel_bits));
			CU_ASSERT(bi->spm_id >= 0 && bi->spm_id < 32);
			CU_ASSERT(!strncmp(a->name, bi->name, strlen(bi->name)));
		}
	}
}

static void test_blocks(void)
{
	const struct spm_catalog *a = cat(SPM_GFX_90A), *m = cat(SPM_GFX_942);

	/* PROGRAMMING.md §4.1 instance counts */
	CU_ASSERT_EQUAL(spm_catalog_instances(a, SPM_BLK_TCC, 13), 32);
	CU_ASSERT_EQUAL(spm_catalog_instances(m, SPM_BLK_TCC, 10), 16);
	CU_ASSERT_EQUAL(spm_catalog_instances(m, SPM_BLK_TCA, 10), 32);
	CU_ASSERT_EQUAL(spm_catalog_instances(m, SPM_BLK_TA, 10), 10);
	CU_ASSERT_EQUAL(spm_catalog_instances(m, SPM_BLK_TCP, 40), 16);
	CU_ASSERT_EQUAL(spm_catalog_instances(m, SPM_BLK_SQ, 10), 1);
	CU_ASSERT_EQUAL(spm_catalog_instances(m, SPM_BLK_GRBM, 10), 0);

	/* §3.2 SPM block ids (separate numbering per RAM) and §2.5 selects */
	CU_ASSERT_EQUAL(spm_block_info(SPM_BLK_CPC)->spm_id, 1);
	CU_ASSERT_EQUAL(spm_block_info(SPM_BLK_TCC)->spm_id, 4);
	CU_ASSERT_EQUAL(spm_block_info(SPM_BLK_TCA)->spm_id, 5);
	CU_ASSERT_EQUAL(spm_block_info(SPM_BLK_TA)->spm_id, 5);
	CU_ASSERT_EQUAL(spm_block_info(SPM_BLK_SQ)->spm_id, 9);
	CU_ASSERT_EQUAL(spm_block_info(SPM_BLK_SPI)->spm_id, 8);
	CU_ASSERT_EQUAL(spm_block_info(SPM_BLK_GRBM)->spm_id, -1);
	CU_ASSERT_EQUAL(spm_block_info(SPM_BLK_TCC)->sel[0].select, 0xDB80);
	CU_ASSERT_EQUAL(spm_block_info(SPM_BLK_TCC)->sel[0].select1, 0xDB81);
	/* CPF's SELECT1 is not SELECT + 1 (that is CP_PERFMON_CNTL) */
	CU_ASSERT_EQUAL(spm_block_info(SPM_BLK_CPF)->sel[0].select, 0xD807);
	CU_ASSERT_EQUAL(spm_block_info(SPM_BLK_CPF)->sel[0].select1, 0xD806);
	CU_ASSERT_EQUAL(spm_block_info(SPM_BLK_SPI)->sel[1].select, 0xD981);
	CU_ASSERT_EQUAL(spm_block_info(SPM_BLK_TCC)->sample_delay, 0xDC91);
	CU_ASSERT_EQUAL(spm_block_info(SPM_BLK_SQ)->width, 32);
	CU_ASSERT_EQUAL(spm_block_info(SPM_BLK_TA)->slots, 2);
	CU_ASSERT_EQUAL(spm_block_info(SPM_BLK_SPI)->slots, 6);
	CU_ASSERT_FALSE(spm_block_info(SPM_BLK_GDS)->v2_gate);
	CU_ASSERT_FALSE(spm_block_info(SPM_BLK_SX)->v2_gate);
	CU_ASSERT_TRUE(spm_block_info(SPM_BLK_TCA)->v2_gate);
	CU_ASSERT_PTR_NULL(spm_block_info(SPM_BLK_COUNT));

	/* blocks are in aqlprofile's CounterBlockId order, so the enum sorts them */
	for (int b = 1; b < SPM_BLK_COUNT; b++)
		CU_ASSERT(strcmp(spm_block_info((enum spm_block)(b - 1))->name,
				 spm_block_info((enum spm_block)b)->name) < 0);

	const struct spm_counter *c;
	CU_ASSERT_EQUAL(spm_catalog_lookup(m, "SQ_WAVES", &c, NULL, 0), 0);
	CU_ASSERT_EQUAL(spm_counter_width(c), 32);
	CU_ASSERT_EQUAL(spm_counter_segment(c), SPM_SEG_SE);
	CU_ASSERT_EQUAL(spm_catalog_lookup(m, "TCC_HIT", &c, NULL, 0), 0);
	CU_ASSERT_EQUAL(spm_counter_width(c), 16);
	CU_ASSERT_STRING_EQUAL(spm_segment_name(spm_counter_segment(c)), "global");
}

/*
 * Peaks per cycle (catalog_peak.c): every streamable counter described as
 * counting "cycles ..." of one unit has a peak of 1 (so it can never
 * saturate 16 bits: 65504 < 65535), the L2 request counters 2, and counters
 * of many units (waves, instructions) none.  Checked on both catalogs.
 */
static void test_peaks(void)
{
	enum spm_gfx gfx[] = { SPM_GFX_90A, SPM_GFX_942 };
	for (size_t g = 0; g < 2; g++) {
		const struct spm_catalog *cat;
		CU_ASSERT_EQUAL_FATAL(spm_catalog_get(gfx[g], &cat, NULL, 0), 0);
		for (size_t i = 0; i < spm_catalog_count(cat); i++) {
			const struct spm_counter *c = spm_catalog_at(cat, i);
			const char *why = NULL;
			double pk = spm_counter_peak(c, &why);
			CU_ASSERT_EQUAL(pk > 0, why != NULL);
			bool cycles = !strncmp(c->desc, "cycles ", 7) || strstr(c->desc, "clock cycles") ||
				      !strcmp(c->name, "TCP_GATE_EN1");
			/* SQ_BUSY_CU_CYCLES counts quad-cycles over every CU of an SE: no single-unit bound */
			if (cycles && spm_counter_streamable(c) && strcmp(c->name, "SQ_BUSY_CU_CYCLES") &&
			    strcmp(c->name, "SQ_VALU_MFMA_BUSY_CYCLES") && strcmp(c->name, "SQ_LDS_BANK_CONFLICT")) {
				if (pk != 1.0)
					fprintf(stderr, "\n    %s: peak %g\n", c->name, pk);
				CU_ASSERT_DOUBLE_EQUAL(pk, 1.0, 0);
				CU_ASSERT_EQUAL(spm_saturation_safe_interval(pk, spm_counter_width(c), 32, 65504),
						65504);
			}
		}
		const struct spm_counter *c;
		CU_ASSERT_EQUAL(spm_catalog_lookup(cat, "TCC_HIT", &c, NULL, 0), 0);
		CU_ASSERT_DOUBLE_EQUAL(spm_counter_peak(c, NULL), 2.0, 0);
		CU_ASSERT_EQUAL(spm_catalog_lookup(cat, "TCC_REQ", &c, NULL, 0), 0);
		CU_ASSERT_DOUBLE_EQUAL(spm_counter_peak(c, NULL), 2.0, 0);
		CU_ASSERT_EQUAL(spm_catalog_lookup(cat, "SQ_WAVES", &c, NULL, 0), 0);
		CU_ASSERT_DOUBLE_EQUAL(spm_counter_peak(c, NULL), 0.0, 0);
	}
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "catalog/ids_differ_by_gfx", test_ids_differ_by_gfx, NULL },
		{ "catalog/gfx_parse", test_gfx_parse, NULL },
		{ "catalog/grbm_refused", test_grbm_refused_with_alternative, NULL },
		{ "catalog/suggestions", test_suggestions, NULL },
		{ "catalog/iteration_sanity", test_iteration_and_sanity, NULL },
		{ "catalog/blocks", test_blocks, NULL },
		{ "catalog/peaks", test_peaks, NULL },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("catalog", cases, argc, argv);
}
