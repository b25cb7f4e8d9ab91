/* SPDX-License-Identifier: MIT */
/*
 * gfx942 (MI300; gfx940/941 share it) counters whose ids or names differ
 * from gfx90a, and its per-XCC instance counts.  Event ids are [V] from
 * rocprofiler-sdk counter_defs.yaml (PROGRAMMING.md §4.2).  TCC = 16 L2
 * channels per XCC and TCA = 32 from aqlprofile's gfx940_factory.cpp [V];
 * the TCA count looks copied from gfx90a [U].
 */
#include "spm/catalog.h"

static const struct spm_counter gfx942[] = {
	{ "SQ_WAVE_CYCLES", SPM_BLK_SQ, 79, "wave-cycles spent by waves in the CUs (quad-cycles)", NULL },
	{ "SQ_INSTS_SALU", SPM_BLK_SQ, 60, "scalar ALU instructions issued", NULL },
	{ "SQ_INSTS_SMEM", SPM_BLK_SQ, 61, "scalar memory instructions issued", NULL },
	{ "SQ_INSTS_VMEM_RD", SPM_BLK_SQ, 58, "vector memory read instructions issued", NULL },
	{ "SQ_INSTS_VMEM_WR", SPM_BLK_SQ, 57, "vector memory write instructions issued", NULL },
	{ "SQ_INSTS_LDS", SPM_BLK_SQ, 65, "LDS instructions issued", NULL },
	{ "SQ_INSTS_FLAT", SPM_BLK_SQ, 62, "FLAT instructions issued", NULL },
	{ "SQ_INSTS_MFMA", SPM_BLK_SQ, 56, "MFMA instructions issued", NULL },
	{ "SQ_VALU_MFMA_BUSY_CYCLES", SPM_BLK_SQ, 77, "cycles the MFMA ALU is busy", NULL },
	{ "SQ_ACTIVE_INST_VALU", SPM_BLK_SQ, 104, "quad-cycles spent issuing VALU instructions", NULL },
	{ "SQ_WAIT_INST_ANY", SPM_BLK_SQ, 93, "wave-cycles waiting for any instruction issue", NULL },
	{ "SQ_LDS_BANK_CONFLICT", SPM_BLK_SQ, 126, "cycles stalled by LDS bank conflicts", NULL },
	{ "TA_TA_BUSY", SPM_BLK_TA, 13, "cycles the texture addresser is busy", NULL },
	{ "TA_TOTAL_WAVEFRONTS", SPM_BLK_TA, 29, "wavefronts processed by TA", NULL },
	{ "TA_BUFFER_WAVEFRONTS", SPM_BLK_TA, 32, "buffer wavefronts processed by TA", NULL },
	{ "TA_FLAT_READ_WAVEFRONTS", SPM_BLK_TA, 52, "FLAT read wavefronts processed by TA", NULL },
	{ "TA_FLAT_WRITE_WAVEFRONTS", SPM_BLK_TA, 53, "FLAT write wavefronts processed by TA", NULL },
	{ "TD_TC_STALL", SPM_BLK_TD, 12, "cycles TD waits for data from the TC", NULL },
	{ "TD_SPI_STALL", SPM_BLK_TD, 15, "cycles TD is stalled by SPI", NULL },
	{ "TD_LOAD_WAVEFRONT", SPM_BLK_TD, 16, "load wavefronts processed by TD", NULL },
	{ "TCP_PENDING_STALL_CYCLES", SPM_BLK_TCP, 21, "cycles TCP stalls on pending data", NULL },
	{ "TCP_TCC_READ_REQ", SPM_BLK_TCP, 65, "vector L1 read requests to L2", NULL },
	{ "TCP_TCC_WRITE_REQ", SPM_BLK_TCP, 66, "vector L1 write requests to L2", NULL },
	/* Same ids as gfx90a's TCC_EA_*, renamed on gfx942 [V]. */
	{ "TCC_EA0_WRREQ", SPM_BLK_TCC, 26, "L2 write requests to memory (EA)", NULL },
	{ "TCC_EA0_RDREQ", SPM_BLK_TCC, 38, "L2 read requests to memory (EA)", NULL },
	{ "TCC_EA0_RDREQ_32B", SPM_BLK_TCC, 39, "L2 32-byte read requests to memory (EA)", NULL },
};

const struct spm_catalog spm_catalog_gfx942 = {
	.gfx = SPM_GFX_942,
	.name = "gfx942",
	.table_instances = { [SPM_BLK_TCC] = 16, [SPM_BLK_TCA] = 32 },
	.own = { gfx942, sizeof(gfx942) / sizeof(gfx942[0]) },
};
