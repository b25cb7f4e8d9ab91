/* SPDX-License-Identifier: MIT */
/*
 * gfx90a (MI200: one GCD = one agent, 8 SEs x 1 SA) counters whose ids or
 * names differ from gfx942, and its instance counts.  Event ids are [V]
 * from rocprofiler-sdk counter_defs.yaml (PROGRAMMING.md §4.2); TCC and TCA
 * = 32 per GCD from aqlprofile's gfx90a_factory.cpp [V].
 */
#include "spm/catalog.h"

static const struct spm_counter gfx90a[] = {
	{ "SQ_WAVE_CYCLES", SPM_BLK_SQ, 74, "wave-cycles spent by waves in the CUs (quad-cycles)", NULL },
	{ "SQ_INSTS_SALU", SPM_BLK_SQ, 56, "scalar ALU instructions issued", NULL },
	{ "SQ_INSTS_SMEM", SPM_BLK_SQ, 57, "scalar memory instructions issued", NULL },
	{ "SQ_INSTS_VMEM_RD", SPM_BLK_SQ, 54, "vector memory read instructions issued", NULL },
	{ "SQ_INSTS_VMEM_WR", SPM_BLK_SQ, 53, "vector memory write instructions issued", NULL },
	{ "SQ_INSTS_LDS", SPM_BLK_SQ, 60, "LDS instructions issued", NULL },
	{ "SQ_INSTS_FLAT", SPM_BLK_SQ, 58, "FLAT instructions issued", NULL },
	{ "SQ_INSTS_MFMA", SPM_BLK_SQ, 52, "MFMA instructions issued", NULL },
	{ "SQ_VALU_MFMA_BUSY_CYCLES", SPM_BLK_SQ, 72, "cycles the MFMA ALU is busy", NULL },
	{ "SQ_ACTIVE_INST_VALU", SPM_BLK_SQ, 99, "quad-cycles spent issuing VALU instructions", NULL },
	{ "SQ_WAIT_INST_ANY", SPM_BLK_SQ, 88, "wave-cycles waiting for any instruction issue", NULL },
	{ "SQ_LDS_BANK_CONFLICT", SPM_BLK_SQ, 121, "cycles stalled by LDS bank conflicts", NULL },
	{ "TA_TA_BUSY", SPM_BLK_TA, 15, "cycles the texture addresser is busy", NULL },
	{ "TA_TOTAL_WAVEFRONTS", SPM_BLK_TA, 32, "wavefronts processed by TA", NULL },
	{ "TA_BUFFER_WAVEFRONTS", SPM_BLK_TA, 44, "buffer wavefronts processed by TA", NULL },
	{ "TA_FLAT_READ_WAVEFRONTS", SPM_BLK_TA, 101, "FLAT read wavefronts processed by TA", NULL },
	{ "TA_FLAT_WRITE_WAVEFRONTS", SPM_BLK_TA, 102, "FLAT write wavefronts processed by TA", NULL },
	{ "TD_TC_STALL", SPM_BLK_TD, 15, "cycles TD waits for data from the TC", NULL },
	{ "TD_SPI_STALL", SPM_BLK_TD, 18, "cycles TD is stalled by SPI", NULL },
	{ "TD_LOAD_WAVEFRONT", SPM_BLK_TD, 25, "load wavefronts processed by TD", NULL },
	{ "TCP_PENDING_STALL_CYCLES", SPM_BLK_TCP, 22, "cycles TCP stalls on pending data", NULL },
	{ "TCP_TCC_READ_REQ", SPM_BLK_TCP, 69, "vector L1 read requests to L2", NULL },
	{ "TCP_TCC_WRITE_REQ", SPM_BLK_TCP, 70, "vector L1 write requests to L2", NULL },
	{ "TCC_EA_WRREQ", SPM_BLK_TCC, 26, "L2 write requests to memory (EA)", NULL },
	{ "TCC_EA_RDREQ", SPM_BLK_TCC, 38, "L2 read requests to memory (EA)", NULL },
	{ "TCC_EA_RDREQ_32B", SPM_BLK_TCC, 39, "L2 32-byte read requests to memory (EA)", NULL },
};

const struct spm_catalog spm_catalog_gfx90a = {
	.gfx = SPM_GFX_90A,
	.name = "gfx90a",
	.table_instances = { [SPM_BLK_TCC] = 32, [SPM_BLK_TCA] = 32 },
	.own = { gfx90a, sizeof(gfx90a) / sizeof(gfx90a[0]) },
};
