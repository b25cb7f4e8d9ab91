/* SPDX-License-Identifier: MIT */
/* Block table and counter behaviour model; see counters.h. */
#include "emu/common/counters.h"

#include <stddef.h>

/*
 * Select register addresses: PROGRAMMING.md 2.5 (base idx 1, absolute =
 * 0xA000 + offset).  perf/sel1 say which perfcounter and which of its two
 * registers each address is; SELECT1 is never SELECT + 1 (CPF!).
 */
static const struct emu_blk_info emu_blks[EMU_NBLK] = {
	[EMU_BLK_CPC] = { "CPC", false, 1, 2, { 1, 1 }, 10, 3, { 0xD809, 0xD804, 0xD803 }, { 0, 0, 1 }, { 0, 1, 0 } },
	[EMU_BLK_CPF] = { "CPF", false, 2, 2, { 1, 1 }, 10, 3, { 0xD807, 0xD806, 0xD805 }, { 0, 0, 1 }, { 0, 1, 0 } },
	[EMU_BLK_TCC] = { "TCC", false, 4, 4, { 32, 16 }, 10, 6,
			  { 0xDB80, 0xDB81, 0xDB82, 0xDB83, 0xDB84, 0xDB85 }, { 0, 0, 1, 1, 2, 3 }, { 0, 1, 0, 1, 0, 0 } },
	[EMU_BLK_TCA] = { "TCA", false, 5, 4, { 32, 32 }, 10, 6,
			  { 0xDB90, 0xDB91, 0xDB92, 0xDB93, 0xDB94, 0xDB95 }, { 0, 0, 1, 1, 2, 3 }, { 0, 1, 0, 1, 0, 0 } },
	[EMU_BLK_TA] = { "TA", true, 5, 2, { 16, 16 }, 8, 3, { 0xDAC0, 0xDAC1, 0xDAC2 }, { 0, 0, 1 }, { 0, 1, 0 } },
	[EMU_BLK_TD] = { "TD", true, 6, 2, { 16, 16 }, 8, 3, { 0xDB00, 0xDB01, 0xDB02 }, { 0, 0, 1 }, { 0, 1, 0 } },
	[EMU_BLK_TCP] = { "TCP", true, 7, 4, { 16, 16 }, 10, 6,
			  { 0xDB40, 0xDB41, 0xDB42, 0xDB43, 0xDB44, 0xDB45 }, { 0, 0, 1, 1, 2, 3 }, { 0, 1, 0, 1, 0, 0 } },
	[EMU_BLK_SPI] = { "SPI", true, 8, 6, { 1, 1 }, 10, 10,
			  { 0xD980, 0xD984, 0xD981, 0xD985, 0xD982, 0xD986, 0xD983, 0xD987, 0xD988, 0xD989 },
			  { 0, 0, 1, 1, 2, 2, 3, 3, 4, 5 }, { 0, 1, 0, 1, 0, 1, 0, 1, 0, 0 } },
	[EMU_BLK_SQ] = { "SQ", true, 9, 16, { 1, 1 }, 9, 16,
			 { 0xD9C0, 0xD9C1, 0xD9C2, 0xD9C3, 0xD9C4, 0xD9C5, 0xD9C6, 0xD9C7, 0xD9C8, 0xD9C9, 0xD9CA,
			   0xD9CB, 0xD9CC, 0xD9CD, 0xD9CE, 0xD9CF },
			 { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 }, { 0 } },
};

const struct emu_blk_info *emu_blk(enum emu_blk b)
{
	return &emu_blks[b];
}

int emu_blk_by_spm_id(bool se_ram, unsigned id)
{
	for (int b = 0; b < EMU_NBLK; b++)
		if (emu_blks[b].se_block == se_ram && emu_blks[b].spm_id == id)
			return b;
	return -1;
}

const char *emu_spm_block_name(bool se_ram, unsigned id)
{
	static const char *const glb[] = { "CPG", "CPC", "CPF", "GDS", "TCC", "TCA", "IA", "TCS" };
	static const char *const se[] = { "CB", "DB", "PA", "SX", "SC", "TA", "TD", "TCP", "SPI", "SQG", "VGT" };
	if (se_ram)
		return id < sizeof(se) / sizeof(se[0]) ? se[id] : "unassigned";
	return id < sizeof(glb) / sizeof(glb[0]) ? glb[id] : "unassigned";
}

/* PROGRAMMING.md 4.2; rates are per SCLK cycle at full load, chosen to be plausible, not measured. */
static const struct {
	enum emu_blk blk;
	uint16_t ev[2]; /* gfx90a, gfx942 */
	enum emu_cnt_class cls;
	double rate, ratio;
	const char *name;
} emu_cnt_table[] = {
	{ EMU_BLK_SQ, { 4, 4 }, EMU_CNT_RATE, 0.002, 0, "SQ_WAVES" },
	{ EMU_BLK_SQ, { 2, 2 }, EMU_CNT_CYCLES, 1, 0, "SQ_CYCLES" },
	{ EMU_BLK_SQ, { 3, 3 }, EMU_CNT_BUSY, 0.98, 0, "SQ_BUSY_CYCLES" },
	{ EMU_BLK_SQ, { 13, 13 }, EMU_CNT_BUSY, 9.0, 0, "SQ_BUSY_CU_CYCLES" },
	{ EMU_BLK_SQ, { 74, 79 }, EMU_CNT_RATE, 32.0, 0, "SQ_WAVE_CYCLES" },
	{ EMU_BLK_SQ, { 5, 5 }, EMU_CNT_RATE, 0.05, 0, "SQ_LEVEL_WAVES" },
	{ EMU_BLK_SQ, { 26, 26 }, EMU_CNT_RATE, 2.2, 0, "SQ_INSTS_VALU" },
	{ EMU_BLK_SQ, { 56, 60 }, EMU_CNT_RATE, 0.6, 0, "SQ_INSTS_SALU" },
	{ EMU_BLK_SQ, { 57, 61 }, EMU_CNT_RATE, 0.3, 0, "SQ_INSTS_SMEM" },
	{ EMU_BLK_SQ, { 54, 58 }, EMU_CNT_RATE, 0.25, 0, "SQ_INSTS_VMEM_RD" },
	{ EMU_BLK_SQ, { 53, 57 }, EMU_CNT_RATE, 0.1, 0, "SQ_INSTS_VMEM_WR" },
	{ EMU_BLK_SQ, { 60, 65 }, EMU_CNT_RATE, 0.2, 0, "SQ_INSTS_LDS" },
	{ EMU_BLK_SQ, { 58, 62 }, EMU_CNT_RATE, 0.05, 0, "SQ_INSTS_FLAT" },
	{ EMU_BLK_SQ, { 52, 56 }, EMU_CNT_RATE, 0.4, 0, "SQ_INSTS_MFMA" },
	{ EMU_BLK_SQ, { 33, 33 }, EMU_CNT_RATE, 0.8, 0, "SQ_INSTS_VALU_FMA_F32" },
	{ EMU_BLK_SQ, { 43, 43 }, EMU_CNT_RATE, 0.3, 0, "SQ_INSTS_VALU_MFMA_F16" },
	{ EMU_BLK_SQ, { 72, 77 }, EMU_CNT_BUSY, 6.0, 0, "SQ_VALU_MFMA_BUSY_CYCLES" },
	{ EMU_BLK_SQ, { 99, 104 }, EMU_CNT_BUSY, 7.0, 0, "SQ_ACTIVE_INST_VALU" },
	{ EMU_BLK_SQ, { 88, 93 }, EMU_CNT_STALL, 20.0, 0, "SQ_WAIT_INST_ANY" },
	{ EMU_BLK_SQ, { 121, 126 }, EMU_CNT_STALL, 0.5, 0, "SQ_LDS_BANK_CONFLICT" },
	{ EMU_BLK_SQ, { 272, 272 }, EMU_CNT_MISS, 0.3, 0.97, "SQC_ICACHE_MISSES" },
	{ EMU_BLK_SQ, { 291, 291 }, EMU_CNT_HIT, 0.6, 0.9, "SQC_DCACHE_HITS" },
	{ EMU_BLK_TA, { 15, 13 }, EMU_CNT_BUSY, 0.9, 0, "TA_TA_BUSY" },
	{ EMU_BLK_TA, { 32, 29 }, EMU_CNT_RATE, 0.01, 0, "TA_TOTAL_WAVEFRONTS" },
	{ EMU_BLK_TA, { 44, 32 }, EMU_CNT_RATE, 0.006, 0, "TA_BUFFER_WAVEFRONTS" },
	{ EMU_BLK_TA, { 101, 52 }, EMU_CNT_RATE, 0.003, 0, "TA_FLAT_READ_WAVEFRONTS" },
	{ EMU_BLK_TA, { 102, 53 }, EMU_CNT_RATE, 0.001, 0, "TA_FLAT_WRITE_WAVEFRONTS" },
	{ EMU_BLK_TD, { 1, 1 }, EMU_CNT_BUSY, 0.85, 0, "TD_TD_BUSY" },
	{ EMU_BLK_TD, { 15, 12 }, EMU_CNT_STALL, 0.2, 0, "TD_TC_STALL" },
	{ EMU_BLK_TD, { 18, 15 }, EMU_CNT_STALL, 0.05, 0, "TD_SPI_STALL" },
	{ EMU_BLK_TD, { 25, 16 }, EMU_CNT_RATE, 0.01, 0, "TD_LOAD_WAVEFRONT" },
	{ EMU_BLK_TCP, { 0, 0 }, EMU_CNT_CYCLES, 1, 0, "TCP_GATE_EN1" },
	{ EMU_BLK_TCP, { 6, 6 }, EMU_CNT_STALL, 0.3, 0, "TCP_TCP_TA_DATA_STALL_CYCLES" },
	{ EMU_BLK_TCP, { 22, 21 }, EMU_CNT_STALL, 0.4, 0, "TCP_PENDING_STALL_CYCLES" },
	{ EMU_BLK_TCP, { 60, 60 }, EMU_CNT_RATE, 0.5, 0, "TCP_TOTAL_CACHE_ACCESSES" },
	{ EMU_BLK_TCP, { 69, 65 }, EMU_CNT_RATE, 0.15, 0, "TCP_TCC_READ_REQ" },
	{ EMU_BLK_TCP, { 70, 66 }, EMU_CNT_RATE, 0.05, 0, "TCP_TCC_WRITE_REQ" },
	{ EMU_BLK_TCC, { 1, 1 }, EMU_CNT_CYCLES, 1, 0, "TCC_CYCLE" },
	{ EMU_BLK_TCC, { 2, 2 }, EMU_CNT_BUSY, 0.95, 0, "TCC_BUSY" },
	/* Two tag lookups per cycle per channel: TCC_REQ/HIT saturate 16 bits at long intervals. */
	{ EMU_BLK_TCC, { 3, 3 }, EMU_CNT_RATE, 2.0, 0, "TCC_REQ" },
	{ EMU_BLK_TCC, { 12, 12 }, EMU_CNT_RATE, 1.4, 0, "TCC_READ" },
	{ EMU_BLK_TCC, { 13, 13 }, EMU_CNT_RATE, 0.6, 0, "TCC_WRITE" },
	{ EMU_BLK_TCC, { 17, 17 }, EMU_CNT_HIT, 2.0, 0.8, "TCC_HIT" },
	{ EMU_BLK_TCC, { 19, 19 }, EMU_CNT_MISS, 2.0, 0.8, "TCC_MISS" },
	{ EMU_BLK_TCC, { 26, 26 }, EMU_CNT_RATE, 0.12, 0, "TCC_EA_WRREQ" },
	{ EMU_BLK_TCC, { 38, 38 }, EMU_CNT_RATE, 0.28, 0, "TCC_EA_RDREQ" },
	{ EMU_BLK_TCC, { 39, 39 }, EMU_CNT_RATE, 0.05, 0, "TCC_EA_RDREQ_32B" },
	{ EMU_BLK_TCC, { 45, 45 }, EMU_CNT_STALL, 0.1, 0, "TCC_TAG_STALL" },
	{ EMU_BLK_TCA, { 1, 1 }, EMU_CNT_CYCLES, 1, 0, "TCA_CYCLE" },
	{ EMU_BLK_TCA, { 2, 2 }, EMU_CNT_BUSY, 0.7, 0, "TCA_BUSY" },
	{ EMU_BLK_SPI, { 47, 47 }, EMU_CNT_BUSY, 0.99, 0, "SPI_CSN_WINDOW_VALID" },
	{ EMU_BLK_SPI, { 48, 48 }, EMU_CNT_BUSY, 0.9, 0, "SPI_CSN_BUSY" },
	{ EMU_BLK_SPI, { 49, 49 }, EMU_CNT_RATE, 0.0005, 0, "SPI_CSN_NUM_THREADGROUPS" },
	{ EMU_BLK_SPI, { 52, 52 }, EMU_CNT_RATE, 0.002, 0, "SPI_CSN_WAVE" },
	{ EMU_BLK_SPI, { 85, 85 }, EMU_CNT_STALL, 0.1, 0, "SPI_RA_REQ_NO_ALLOC_CSN" },
	{ EMU_BLK_SPI, { 103, 103 }, EMU_CNT_STALL, 0.2, 0, "SPI_RA_WAVE_SIMD_FULL_CSN" },
	{ EMU_BLK_CPC, { 13, 13 }, EMU_CNT_BUSY, 0.05, 0, "CPC_ME1_BUSY_FOR_PACKET_DECODE" },
	{ EMU_BLK_CPC, { 24, 24 }, EMU_CNT_STALL, 0.01, 0, "CPC_UTCL1_STALL_ON_TRANSLATION" },
	{ EMU_BLK_CPC, { 25, 25 }, EMU_CNT_BUSY, 0.6, 0, "CPC_CPC_STAT_BUSY" },
	{ EMU_BLK_CPC, { 26, 26 }, EMU_CNT_IDLE, 1, 0, "CPC_CPC_STAT_IDLE" },
	{ EMU_BLK_CPF, { 20, 20 }, EMU_CNT_STALL, 0.01, 0, "CPF_CMP_UTCL1_STALL_ON_TRANSLATION" },
	{ EMU_BLK_CPF, { 23, 23 }, EMU_CNT_BUSY, 0.3, 0, "CPF_CPF_STAT_BUSY" },
	{ EMU_BLK_CPF, { 24, 24 }, EMU_CNT_IDLE, 1, 0, "CPF_CPF_STAT_IDLE" },
};

struct emu_cnt_model emu_cnt_lookup(enum emu_gfx gfx, enum emu_blk blk, unsigned event)
{
	for (size_t i = 0; i < sizeof(emu_cnt_table) / sizeof(emu_cnt_table[0]); i++)
		if (emu_cnt_table[i].blk == blk && emu_cnt_table[i].ev[gfx] == event) {
			enum emu_cnt_class c = emu_cnt_table[i].cls;
			/* Requests, hits, misses of an L2 channel: at most two tag lookups per cycle. */
			double peak = blk == EMU_BLK_TCC && (c == EMU_CNT_RATE || c == EMU_CNT_HIT ||
							     c == EMU_CNT_MISS) ? 2.0 : 0.0;
			return (struct emu_cnt_model){ c, emu_cnt_table[i].rate, emu_cnt_table[i].ratio,
						       emu_cnt_table[i].name, peak };
		}
	return (struct emu_cnt_model){ EMU_CNT_UNKNOWN, 0, 0, NULL, 0 };
}

uint64_t emu_mix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/*
 * A deterministic factor meant to be in [1 - span, 1 + span]; it is in
 * [1 - span, 1 + 3 span): (h >> 11) is below 2^53, divided by 2^52.  Left
 * so: which counters saturate where (TCC_HIT at interval 32768 at full load,
 * docs/emulator.md) follows from it and several suites check that story;
 * the right scale (2^53) wants the TCC rates retuned with it.
 */
static double emu_spread(uint64_t h, double span)
{
	return 1.0 + span * ((double)(h >> 11) / 4503599627370496.0 * 2.0 - 1.0);
}

uint64_t emu_cnt_value(const struct emu_cnt_model *m, uint32_t interval, double a, uint64_t key, uint64_t noise)
{
	double iv = interval, v;
	switch (m->cls) {
	case EMU_CNT_CYCLES:
		return interval;
	case EMU_CNT_BUSY:
		v = a * iv * m->rate;
		break;
	case EMU_CNT_IDLE:
		v = (1.0 - a) * iv * m->rate;
		break;
	case EMU_CNT_RATE:
		v = m->rate * a * iv;
		break;
	case EMU_CNT_HIT:
		v = m->rate * a * iv * m->ratio;
		break;
	case EMU_CNT_MISS:
		v = m->rate * a * iv * (1.0 - m->ratio);
		break;
	case EMU_CNT_STALL:
		v = m->rate * a * a * iv;
		break;
	default:
		/* Unknown ids: a few counts per sample, scaled gently with the interval. */
		return (emu_mix64(key ^ noise) & 7) + interval / 4096;
	}
	v *= emu_spread(emu_mix64(key), 0.10) * emu_spread(emu_mix64(noise), 0.03);
	if ((m->cls == EMU_CNT_BUSY || m->cls == EMU_CNT_IDLE) && m->rate <= 1.0 && v > iv)
		v = iv; /* one unit cannot be busy (or idle) for more cycles than the interval has */
	if (m->peak > 0 && v > m->peak * iv)
		v = m->peak * iv; /* nor count more than its hardware can per cycle */
	return v <= 0 ? 0 : (uint64_t)(v + 0.5);
}
