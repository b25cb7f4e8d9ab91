/* SPDX-License-Identifier: MIT */
/*
 * The gfx9 block table, the counters whose event ids are equal on gfx90a
 * and gfx942, the choice of catalog per target, and name lookup.
 * Sources: shared/ref/PROGRAMMING.md §2.5 (select registers), §3.2 (SPM
 * block ids), §4.1 (slots, instances, SAMPLE_DELAY), §4.2 (event ids, from
 * rocprofiler-sdk counter_defs.yaml).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "spm/catalog.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * One row per block, indexed by enum spm_block.  Every field is [V] from
 * PROGRAMMING.md unless its comment says otherwise.  Select addresses are
 * absolute (0xA000 + the offset in the reference); SELECT1 is never
 * SELECT + 1 (CPF's +1 is CP_PERFMON_CNTL).
 */
static const struct spm_block_info blocks[SPM_BLK_COUNT] = {
	[SPM_BLK_CPC] = {
		.id = SPM_BLK_CPC, .name = "CPC", .segment = SPM_SEG_GLOBAL, .spm_id = 1,
		.slots = 2, .width = 16, .sel_bits = 10, .inst_rule = SPM_INST_ONE, .v2_gate = true,
		.sample_delay = 0xDC88, .nsel = 2,
		.sel = { { 0xD809, 0xD804 }, { 0xD803, 0 } },
	},
	[SPM_BLK_CPF] = {
		.id = SPM_BLK_CPF, .name = "CPF", .segment = SPM_SEG_GLOBAL, .spm_id = 2,
		.slots = 2, .width = 16, .sel_bits = 10, .inst_rule = SPM_INST_ONE, .v2_gate = true,
		.sample_delay = 0xDC89, .nsel = 2,
		.sel = { { 0xD807, 0xD806 }, { 0xD805, 0 } },
	},
	/* Streamable by the hardware and aqlprofile's builder, outside AMD's v2
	 * gate; no counters are catalogued because no event ids were read. */
	[SPM_BLK_GDS] = {
		.id = SPM_BLK_GDS, .name = "GDS", .segment = SPM_SEG_GLOBAL, .spm_id = 3,
		.slots = 4, .width = 16, .sel_bits = 10, .inst_rule = SPM_INST_ONE, .v2_gate = false,
		.sample_delay = 0xDC8D, .nsel = 4,
		.sel = { { 0xDA80, 0xDA84 }, { 0xDA81, 0 }, { 0xDA82, 0 }, { 0xDA83, 0 } },
	},
	[SPM_BLK_GRBM] = {
		.id = SPM_BLK_GRBM, .name = "GRBM", .segment = SPM_SEG_NONE, .spm_id = -1,
		.no_spm_reason = "GRBM has no SPM block id, so the RLC cannot stream it "
				 "(it is a PMC-only counter)",
	},
	[SPM_BLK_SPI] = {
		.id = SPM_BLK_SPI, .name = "SPI", .segment = SPM_SEG_SE, .spm_id = 8,
		.slots = 6, .width = 16, .sel_bits = 10, .inst_rule = SPM_INST_ONE, .v2_gate = true,
		.sample_delay = 0xDC97, .nsel = 6,
		.sel = { { 0xD980, 0xD984 }, { 0xD981, 0xD985 }, { 0xD982, 0xD986 },
			 { 0xD983, 0xD987 }, { 0xD988, 0 }, { 0xD989, 0 } },
	},
	/* SQ ("SQG" in the RLC): 8 counters of 32 bits, selected by
	 * SQ_PERFCOUNTERn_SELECT (regs_gfx9.h), not by the SELECT/SELECT1 model. */
	[SPM_BLK_SQ] = {
		.id = SPM_BLK_SQ, .name = "SQ", .segment = SPM_SEG_SE, .spm_id = 9,
		.slots = 8, .width = 32, .sel_bits = 9, .inst_rule = SPM_INST_ONE, .v2_gate = true,
		.sample_delay = 0xDC98, .nsel = 0,
	},
	[SPM_BLK_SX] = {
		.id = SPM_BLK_SX, .name = "SX", .segment = SPM_SEG_SE, .spm_id = 3,
		.slots = 4, .width = 16, .sel_bits = 10, .inst_rule = SPM_INST_ONE, .v2_gate = false,
		.sample_delay = 0xDC9A, .nsel = 4,
		.sel = { { 0xDA40, 0xDA44 }, { 0xDA41, 0xDA45 }, { 0xDA42, 0 }, { 0xDA43, 0 } },
	},
	[SPM_BLK_TA] = {
		.id = SPM_BLK_TA, .name = "TA", .segment = SPM_SEG_SE, .spm_id = 5,
		.slots = 2, .width = 16, .sel_bits = 8, .inst_rule = SPM_INST_PER_CU, .v2_gate = true,
		.sample_delay = 0xDC94, .nsel = 2,
		.sel = { { 0xDAC0, 0xDAC1 }, { 0xDAC2, 0 } },
	},
	[SPM_BLK_TCA] = {
		.id = SPM_BLK_TCA, .name = "TCA", .segment = SPM_SEG_GLOBAL, .spm_id = 5,
		.slots = 4, .width = 16, .sel_bits = 10, .inst_rule = SPM_INST_TABLE, .v2_gate = true,
		.sample_delay = 0xDC92, .nsel = 4,
		.sel = { { 0xDB90, 0xDB91 }, { 0xDB92, 0xDB93 }, { 0xDB94, 0 }, { 0xDB95, 0 } },
	},
	[SPM_BLK_TCC] = {
		.id = SPM_BLK_TCC, .name = "TCC", .segment = SPM_SEG_GLOBAL, .spm_id = 4,
		.slots = 4, .width = 16, .sel_bits = 10, .inst_rule = SPM_INST_TABLE, .v2_gate = true,
		.sample_delay = 0xDC91, .nsel = 4,
		.sel = { { 0xDB80, 0xDB81 }, { 0xDB82, 0xDB83 }, { 0xDB84, 0 }, { 0xDB85, 0 } },
	},
	[SPM_BLK_TCP] = {
		.id = SPM_BLK_TCP, .name = "TCP", .segment = SPM_SEG_SE, .spm_id = 7,
		.slots = 4, .width = 16, .sel_bits = 10, .inst_rule = SPM_INST_PER_CU, .v2_gate = true,
		.sample_delay = 0xDC93, .nsel = 4,
		.sel = { { 0xDB40, 0xDB41 }, { 0xDB42, 0xDB43 }, { 0xDB44, 0 }, { 0xDB45, 0 } },
	},
	[SPM_BLK_TD] = {
		.id = SPM_BLK_TD, .name = "TD", .segment = SPM_SEG_SE, .spm_id = 6,
		.slots = 2, .width = 16, .sel_bits = 8, .inst_rule = SPM_INST_PER_CU, .v2_gate = true,
		.sample_delay = 0xDC95, .nsel = 2,
		.sel = { { 0xDB00, 0xDB01 }, { 0xDB02, 0 } },
	},
};

/*
 * Counters whose name and event id are the same on gfx90a and gfx942
 * (PROGRAMMING.md §4.2) [V].  Descriptions paraphrase counter_defs.yaml.
 */
static const struct spm_counter common[] = {
	{ "SQ_WAVES", SPM_BLK_SQ, 4, "waves dispatched to the sequencers", NULL },
	{ "SQ_CYCLES", SPM_BLK_SQ, 2, "clock cycles seen by SQ; the cycle base for SPM ratios", NULL },
	{ "SQ_BUSY_CYCLES", SPM_BLK_SQ, 3, "cycles SQ reports busy", NULL },
	{ "SQ_BUSY_CU_CYCLES", SPM_BLK_SQ, 13, "quad-cycles any CU of the SE is busy", NULL },
	{ "SQ_LEVEL_WAVES", SPM_BLK_SQ, 5, "waves in flight (a level; per-interval meaning [U])", NULL },
	{ "SQ_INSTS_VALU", SPM_BLK_SQ, 26, "vector ALU instructions issued", NULL },
	{ "SQ_INSTS_VALU_FMA_F32", SPM_BLK_SQ, 33, "VALU FMA F32 instructions issued", NULL },
	{ "SQ_INSTS_VALU_MFMA_F16", SPM_BLK_SQ, 43, "VALU MFMA F16 instructions issued", NULL },
	{ "SQC_ICACHE_MISSES", SPM_BLK_SQ, 272, "SQC instruction-cache misses", NULL },
	{ "SQC_DCACHE_HITS", SPM_BLK_SQ, 291, "SQC scalar data-cache hits", NULL },
	{ "TD_TD_BUSY", SPM_BLK_TD, 1, "cycles the texture data unit is busy", NULL },
	{ "TCP_GATE_EN1", SPM_BLK_TCP, 0, "cycles the vector L1 is clock-enabled", NULL },
	{ "TCP_TCP_TA_DATA_STALL_CYCLES", SPM_BLK_TCP, 6, "cycles TCP stalls TA data", NULL },
	{ "TCP_TOTAL_CACHE_ACCESSES", SPM_BLK_TCP, 60, "vector L1 cache accesses", NULL },
	{ "TCC_CYCLE", SPM_BLK_TCC, 1, "L2 channel clock cycles", NULL },
	{ "TCC_BUSY", SPM_BLK_TCC, 2, "cycles the L2 channel is busy", NULL },
	{ "TCC_REQ", SPM_BLK_TCC, 3, "L2 requests", NULL },
	{ "TCC_READ", SPM_BLK_TCC, 12, "L2 read requests", NULL },
	{ "TCC_WRITE", SPM_BLK_TCC, 13, "L2 write requests", NULL },
	{ "TCC_HIT", SPM_BLK_TCC, 17, "L2 cache hits", NULL },
	{ "TCC_MISS", SPM_BLK_TCC, 19, "L2 cache misses", NULL },
	{ "TCC_TAG_STALL", SPM_BLK_TCC, 45, "cycles the L2 tag lookup stalls", NULL },
	{ "TCA_CYCLE", SPM_BLK_TCA, 1, "TCA clock cycles", NULL },
	{ "TCA_BUSY", SPM_BLK_TCA, 2, "cycles TCA is busy", NULL },
	{ "SPI_CSN_WINDOW_VALID", SPM_BLK_SPI, 47, "cycles the compute shader-input window is valid", NULL },
	{ "SPI_CSN_BUSY", SPM_BLK_SPI, 48, "cycles compute shader input is busy", NULL },
	{ "SPI_CSN_NUM_THREADGROUPS", SPM_BLK_SPI, 49, "compute workgroups launched", NULL },
	{ "SPI_CSN_WAVE", SPM_BLK_SPI, 52, "compute waves launched", NULL },
	{ "SPI_RA_REQ_NO_ALLOC_CSN", SPM_BLK_SPI, 85, "cycles compute waits for resource allocation", NULL },
	{ "SPI_RA_WAVE_SIMD_FULL_CSN", SPM_BLK_SPI, 103, "cycles compute waves cannot launch: SIMD full", NULL },
	{ "CPC_ME1_BUSY_FOR_PACKET_DECODE", SPM_BLK_CPC, 13, "cycles compute ME1 decodes packets", NULL },
	{ "CPC_UTCL1_STALL_ON_TRANSLATION", SPM_BLK_CPC, 24, "cycles CPC stalls on UTCL1 translation", NULL },
	{ "CPC_CPC_STAT_BUSY", SPM_BLK_CPC, 25, "cycles CPC is busy", NULL },
	{ "CPC_CPC_STAT_IDLE", SPM_BLK_CPC, 26, "cycles CPC is idle", NULL },
	{ "CPF_CMP_UTCL1_STALL_ON_TRANSLATION", SPM_BLK_CPF, 20, "cycles CPF compute stalls on UTCL1 translation", NULL },
	{ "CPF_CPF_STAT_BUSY", SPM_BLK_CPF, 23, "cycles CPF is busy", NULL },
	{ "CPF_CPF_STAT_IDLE", SPM_BLK_CPF, 24, "cycles CPF is idle", NULL },
	/* Known so they can be refused with an alternative. */
	{ "GRBM_COUNT", SPM_BLK_GRBM, 0, "GPU free-running clock cycles (PMC only)",
	  "the sample timestamp (global slots 0..3), or SQ_CYCLES" },
	{ "GRBM_GUI_ACTIVE", SPM_BLK_GRBM, 2, "cycles the graphics pipe is active (PMC only)",
	  "SQ_CYCLES or SQ_BUSY_CYCLES" },
	{ "GRBM_CP_BUSY", SPM_BLK_GRBM, 3, "cycles any CP block is busy (PMC only)",
	  "CPC_CPC_STAT_BUSY or CPF_CPF_STAT_BUSY" },
};

const struct spm_block_info *spm_block_info(enum spm_block b)
{
	return (unsigned int)b < SPM_BLK_COUNT ? &blocks[b] : NULL;
}

const char *spm_segment_name(enum spm_segment s)
{
	switch (s) {
	case SPM_SEG_GLOBAL:
		return "global";
	case SPM_SEG_SE:
		return "se";
	default:
		return "none";
	}
}

int spm_gfx_parse(const char *gfx, enum spm_gfx *out, char *err, size_t errlen)
{
	*out = SPM_GFX_NONE;
	if (!gfx || !*gfx)
		return spmtap_seterr(err, errlen, EINVAL, "no gfx target given");
	if (!strcasecmp(gfx, "gfx90a")) {
		*out = SPM_GFX_90A;
		return 0;
	}
	/* gfx940/941 are MI300 pre-production steppings that counter_defs.yaml
	 * groups with gfx942 for every block checked [V]. */
	if (!strcasecmp(gfx, "gfx940") || !strcasecmp(gfx, "gfx941") || !strcasecmp(gfx, "gfx942")) {
		*out = SPM_GFX_942;
		return 0;
	}
	return spmtap_seterr(err, errlen, EOPNOTSUPP,
			     "no SPM counter catalog for %s: spmtap knows gfx90a and gfx940/941/942 "
			     "(event ids are per target and were not verified for others)", gfx);
}

const char *spm_gfx_name(enum spm_gfx gfx)
{
	switch (gfx) {
	case SPM_GFX_90A:
		return "gfx90a";
	case SPM_GFX_942:
		return "gfx942";
	default:
		return "unknown";
	}
}

int spm_catalog_get(enum spm_gfx gfx, const struct spm_catalog **out, char *err, size_t errlen)
{
	switch (gfx) {
	case SPM_GFX_90A:
		*out = &spm_catalog_gfx90a;
		return 0;
	case SPM_GFX_942:
		*out = &spm_catalog_gfx942;
		return 0;
	default:
		*out = NULL;
		return spmtap_seterr(err, errlen, EOPNOTSUPP,
				     "no SPM counter catalog for gfx family %d: only gfx90a and gfx942 are described",
				     (int)gfx);
	}
}

enum spm_gfx spm_catalog_gfx(const struct spm_catalog *cat)
{
	return cat->gfx;
}

unsigned int spm_catalog_instances(const struct spm_catalog *cat, enum spm_block b,
				   unsigned int cus_per_se)
{
	const struct spm_block_info *bi = spm_block_info(b);

	if (!bi || bi->segment == SPM_SEG_NONE)
		return 0;
	switch (bi->inst_rule) {
	case SPM_INST_TABLE:
		return cat->table_instances[b];
	case SPM_INST_PER_CU:
		/* The RLC has 16 instance slots per SE; which of them a harvested
		 * CU occupies is [U] (PROGRAMMING.md §9 q6). */
		return cus_per_se > 16 ? 16 : cus_per_se;
	default:
		return 1;
	}
}

size_t spm_catalog_count(const struct spm_catalog *cat)
{
	return ARRAY_SIZE(common) + cat->own.n;
}

const struct spm_counter *spm_catalog_at(const struct spm_catalog *cat, size_t i)
{
	if (i < ARRAY_SIZE(common))
		return &common[i];
	i -= ARRAY_SIZE(common);
	return i < cat->own.n ? &cat->own.v[i] : NULL;
}

int spm_catalog_foreach(const struct spm_catalog *cat,
			int (*fn)(const struct spm_counter *c, void *user), void *user)
{
	size_t n = spm_catalog_count(cat);

	for (size_t i = 0; i < n; i++) {
		int r = fn(spm_catalog_at(cat, i), user);
		if (r)
			return r;
	}
	return 0;
}

bool spm_counter_streamable(const struct spm_counter *c)
{
	return blocks[c->block].segment != SPM_SEG_NONE;
}

enum spm_segment spm_counter_segment(const struct spm_counter *c)
{
	return blocks[c->block].segment;
}

unsigned int spm_counter_width(const struct spm_counter *c)
{
	return spm_counter_streamable(c) ? blocks[c->block].width : 0;
}

unsigned int spm_edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
	unsigned int row[65];

	if (la > 64 || lb > 64)
		return 1000;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned int)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned int diag = row[0];
		row[0] = (unsigned int)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned int up = row[j];
			unsigned int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
			unsigned int best = diag + cost;
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

static bool has_prefix_ci(const char *s, const char *prefix)
{
	return !strncasecmp(s, prefix, strlen(prefix));
}

size_t spm_catalog_suggest(const struct spm_catalog *cat, const char *name,
			   const struct spm_counter **out, size_t max)
{
	size_t n = spm_catalog_count(cat), len = strlen(name), got = 0;
	unsigned int limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;
	/* Scores: an edit within the limit ranks by distance (0..3); a name
	 * that merely contains the input (a shortened name) ranks after. */
	unsigned int score[8];

	if (max > 8)
		max = 8;
	for (size_t i = 0; i < n; i++) {
		const struct spm_counter *c = spm_catalog_at(cat, i);
		unsigned int d = spm_edit_distance(name, strlen(name), c->name, strlen(c->name)), s;

		if (d <= limit)
			s = d;
		else if (len >= 3 && has_prefix_ci(c->name, name))
			s = 10 + (unsigned int)(strlen(c->name) - len);
		else if (len >= 4 && strcasestr(c->name, name))
			s = 100 + (unsigned int)(strlen(c->name) - len);
		else
			continue;
		/* insertion into the sorted top-max list */
		size_t pos = got;
		while (pos > 0 && score[pos - 1] > s)
			pos--;
		if (pos >= max)
			continue;
		size_t last = got < max ? got : max - 1;
		for (size_t k = last; k > pos; k--) {
			score[k] = score[k - 1];
			out[k] = out[k - 1];
		}
		score[pos] = s;
		out[pos] = c;
		if (got < max)
			got++;
	}
	return got;
}

int spm_catalog_lookup(const struct spm_catalog *cat, const char *name,
		       const struct spm_counter **out, char *err, size_t errlen)
{
	size_t n = spm_catalog_count(cat);

	*out = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct spm_counter *c = spm_catalog_at(cat, i);
		if (strcasecmp(c->name, name))
			continue;
		*out = c;
		if (!spm_counter_streamable(c))
			return spmtap_seterr(err, errlen, EOPNOTSUPP, "%s cannot be streamed by SPM: %s; use %s",
					     c->name, blocks[c->block].no_spm_reason,
					     c->alt ? c->alt : "a counter from an SPM block");
		return 0;
	}

	const struct spm_counter *sug[4];
	size_t ns = spm_catalog_suggest(cat, name, sug, 4);
	char list[256] = "";
	size_t off = 0;
	for (size_t i = 0; i < ns && off < sizeof(list); i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", i ? ", " : "", sug[i]->name);
	if (ns)
		return spmtap_seterr(err, errlen, ENOENT, "unknown counter %s for %s; did you mean %s?", name,
				     cat->name, list);
	return spmtap_seterr(err, errlen, ENOENT,
			     "unknown counter %s for %s (`spmtap list --counters` shows the catalog)", name,
			     cat->name);
}
