// SPDX-License-Identifier: MIT
/*
 * The built-in metrics: definitions in the metric language itself, so that
 * `spmtap` can print them and users can copy and change them.  A built-in
 * applies to a GPU when every counter it names is in that GPU's catalog
 * (TCC_EA_* on gfx90a, TCC_EA0_* on gfx942: one name, two rows).
 *
 * GRBM_GUI_ACTIVE, rocprofv3's cycle base, cannot be streamed (it has no
 * SPM block id): cycles come from `interval`, the SCLK cycles a value
 * covers, so a percentage is of wall-clock cycles, not of GPU-active ones.
 * Names follow rocprofv3's derived counters where the meaning is the same
 * (L2CacheHit, VALUBusy, LDSBankConflict, VALUInsts, FETCH_SIZE, ...).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/metrics_priv.h"
#include "log.h"

/* "% of the cycles its instances had": the mean over every instance streamed. */
#define PCT_OF_INSTANCES(c) "100 * " c " / (interval * inst(" c "))"

static const struct mx_builtin builtins[] = {
	/* busy: how much of the time a block works */
	{ "TABusy", PCT_OF_INSTANCES("TA_TA_BUSY"), "%", "texture addressers (one per CU) busy, mean over instances" },
	{ "TDBusy", PCT_OF_INSTANCES("TD_TD_BUSY"), "%", "texture data units (one per CU) busy, mean over instances" },
	{ "TCCBusy", PCT_OF_INSTANCES("TCC_BUSY"), "%", "L2 channels busy, mean over channels" },
	{ "TCABusy", PCT_OF_INSTANCES("TCA_BUSY"), "%", "TCA instances busy, mean over instances" },
	{ "SPIBusy", PCT_OF_INSTANCES("SPI_CSN_BUSY"), "%", "compute shader input (one per SE) busy, mean over SEs" },
	{ "SQBusy", "100 * SQ_BUSY_CYCLES / SQ_CYCLES", "%", "sequencers busy, of the cycles SQ counted" },
	{ "CPCBusy", "100 * CPC_CPC_STAT_BUSY / (CPC_CPC_STAT_BUSY + CPC_CPC_STAT_IDLE)", "%",
	  "compute command processor busy, of its busy and idle cycles" },
	{ "CPFBusy", "100 * CPF_CPF_STAT_BUSY / (CPF_CPF_STAT_BUSY + CPF_CPF_STAT_IDLE)", "%",
	  "command processor fetcher busy, of its busy and idle cycles" },
	{ "VALUBusy", "100 * SQ_ACTIVE_INST_VALU / (interval * ncu)", "%",
	  "CU cycles spent issuing VALU instructions (rocprofv3's VALUBusy over wall-clock cycles)" },

	/* caches */
	{ "L2CacheHit", "100 * TCC_HIT / (TCC_HIT + TCC_MISS)", "%", "L2 hit rate over every channel" },

	/* waves */
	{ "WavesPerCycle", "SQ_WAVES / interval", "1/cycle", "waves dispatched per SCLK cycle" },
	{ "MeanOccupancy", "4 * SQ_WAVE_CYCLES / (interval * ncu)", "waves/CU",
	  "waves resident per CU, mean over the interval (SQ_WAVE_CYCLES counts quad-cycles)" },

	/* instructions per cycle and CU, per kind */
	{ "IPC_VALU", "SQ_INSTS_VALU / (interval * ncu)", "1/cycle/CU", "VALU instructions per cycle per CU" },
	{ "IPC_SALU", "SQ_INSTS_SALU / (interval * ncu)", "1/cycle/CU", "SALU instructions per cycle per CU" },
	{ "IPC_SMEM", "SQ_INSTS_SMEM / (interval * ncu)", "1/cycle/CU", "scalar memory instructions per cycle per CU" },
	{ "IPC_VMEM_RD", "SQ_INSTS_VMEM_RD / (interval * ncu)", "1/cycle/CU",
	  "vector memory reads per cycle per CU" },
	{ "IPC_VMEM_WR", "SQ_INSTS_VMEM_WR / (interval * ncu)", "1/cycle/CU",
	  "vector memory writes per cycle per CU" },
	{ "IPC_LDS", "SQ_INSTS_LDS / (interval * ncu)", "1/cycle/CU", "LDS instructions per cycle per CU" },
	{ "IPC_FLAT", "SQ_INSTS_FLAT / (interval * ncu)", "1/cycle/CU", "FLAT instructions per cycle per CU" },
	{ "IPC_MFMA", "SQ_INSTS_MFMA / (interval * ncu)", "1/cycle/CU", "MFMA instructions per cycle per CU" },

	/* instructions per wave: meaningful over phases (waves launched vs instructions issued) */
	{ "VALUInsts", "SQ_INSTS_VALU / SQ_WAVES", "1/wave", "VALU instructions per wave" },
	{ "SALUInsts", "SQ_INSTS_SALU / SQ_WAVES", "1/wave", "SALU instructions per wave" },
	{ "SFetchInsts", "SQ_INSTS_SMEM / SQ_WAVES", "1/wave", "scalar memory instructions per wave" },
	{ "VFetchInsts", "(SQ_INSTS_VMEM_RD - TA_FLAT_READ_WAVEFRONTS) / SQ_WAVES", "1/wave",
	  "vector memory reads per wave, FLAT reads excluded" },
	{ "VWriteInsts", "(SQ_INSTS_VMEM_WR - TA_FLAT_WRITE_WAVEFRONTS) / SQ_WAVES", "1/wave",
	  "vector memory writes per wave, FLAT writes excluded" },
	{ "LDSBankConflict", "100 * SQ_LDS_BANK_CONFLICT / (interval * ncu)", "%",
	  "CU cycles stalled by LDS bank conflicts" },

	/* stalls: % of the cycles the instances had */
	{ "TDTCStall", PCT_OF_INSTANCES("TD_TC_STALL"), "%", "TD waiting for data from the TC" },
	{ "TDSPIStall", PCT_OF_INSTANCES("TD_SPI_STALL"), "%", "TD stalled by SPI" },
	{ "TCPPendingStall", PCT_OF_INSTANCES("TCP_PENDING_STALL_CYCLES"), "%", "vector L1 stalled on pending data" },
	{ "TCPTADataStall", PCT_OF_INSTANCES("TCP_TCP_TA_DATA_STALL_CYCLES"), "%", "vector L1 stalling TA data" },
	{ "TCCTagStall", PCT_OF_INSTANCES("TCC_TAG_STALL"), "%", "L2 tag lookup stalled" },
	{ "CPCUTCL1Stall", PCT_OF_INSTANCES("CPC_UTCL1_STALL_ON_TRANSLATION"), "%", "CPC stalled on UTCL1 translation" },
	{ "CPFUTCL1Stall", PCT_OF_INSTANCES("CPF_CMP_UTCL1_STALL_ON_TRANSLATION"), "%",
	  "CPF compute stalled on UTCL1 translation" },
	{ "SPIAllocStall", PCT_OF_INSTANCES("SPI_RA_REQ_NO_ALLOC_CSN"), "%",
	  "compute waiting for resource allocation, per SE" },
	{ "SPISIMDFull", PCT_OF_INSTANCES("SPI_RA_WAVE_SIMD_FULL_CSN"), "%", "compute waves held back by full SIMDs, per SE" },

	/* memory traffic below the L2 (EA); gfx942 names the counters TCC_EA0_* */
	{ "EARdReqPerSec", "TCC_EA_RDREQ / dt", "1/s", "L2 read requests to memory per second" },
	{ "EARdReqPerSec", "TCC_EA0_RDREQ / dt", "1/s", "L2 read requests to memory per second" },
	{ "EAWrReqPerSec", "TCC_EA_WRREQ / dt", "1/s", "L2 write requests to memory per second" },
	{ "EAWrReqPerSec", "TCC_EA0_WRREQ / dt", "1/s", "L2 write requests to memory per second" },
	/* Requests are 32 or 64 bytes on gfx90a; gfx942 adds 128-byte ones, whose
	 * counter is not catalogued, so these two are gfx90a only. */
	{ "FETCH_SIZE", "(32 * TCC_EA_RDREQ_32B + 64 * (TCC_EA_RDREQ - TCC_EA_RDREQ_32B)) / 1024", "KiB",
	  "bytes fetched from memory by the L2" },
	{ "FetchBW", "(32 * TCC_EA_RDREQ_32B + 64 * (TCC_EA_RDREQ - TCC_EA_RDREQ_32B)) / dt", "B/s",
	  "memory read bandwidth of the L2" },
};

const struct mx_builtin *mx_builtins(size_t *n)
{
	*n = sizeof(builtins) / sizeof(builtins[0]);
	return builtins;
}

/*
 * Are all the counters this expression names in the catalog (exactly as
 * spelt) and among the set's columns?  Checked before compiling, so that a
 * built-in for counters not recorded costs no suggestions for a message
 * nobody reads.
 */
static bool available(const struct mx_set *s, const char *expr)
{
	size_t len = strlen(expr), pos = 0;
	struct mx_token k;

	for (mx_lex(expr, len, &pos, &k); k.t != MX_T_END; mx_lex(expr, len, &pos, &k)) {
		if (k.t == MX_T_BAD)
			return false;
		if (k.t != MX_T_NAME || mx_var_lookup(expr + k.pos, k.len) >= 0 ||
		    mx_fn_lookup(expr + k.pos, k.len) >= 0)
			continue;
		if (!mx_catalog_find(s->cat, expr + k.pos, k.len) || !mx_is_column_base(s, expr + k.pos, k.len))
			return false;
	}
	return true;
}

static int set_meta(struct mx_metric *m, const struct mx_builtin *b)
{
	char *u = strdup(b->unit), *d = strdup(b->desc);
	if (!u || !d) {
		free(u);
		free(d);
		return -ENOMEM;
	}
	free(m->unit);
	free(m->desc);
	m->unit = u;
	m->desc = d;
	return 0;
}

int mx_set_add_builtins(struct mx_set *s, char *err, size_t errlen)
{
	const struct mx_src src = { .builtin = true };
	size_t before = s->n;
	int rc = 0;

	if (!s->cat)
		return spmtap_seterr(err, errlen, EINVAL, "metrics: the built-ins need the GPU's counter catalog");
	for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++) {
		const struct mx_builtin *b = &builtins[i];
		char def[512], why[512];
		if (!available(s, b->expr) || mx_set_find(s, b->name) >= 0 ||
		    mx_is_column_base(s, b->name, strlen(b->name)))
			continue;
		snprintf(def, sizeof(def), "%s = %s", b->name, b->expr);
		int r = mx_define(s, def, strlen(def), &src, why, sizeof(why));
		if (r < 0) {
			rc = spmtap_seterr(err, errlen, r, "%s", why);
			break;
		}
		if (set_meta(&s->m[r], b)) {
			rc = spmtap_seterr(err, errlen, ENOMEM, "metrics: out of memory");
			break;
		}
	}
	if (rc < 0) {
		while (s->n > before)
			mx_metric_release(&s->m[--s->n]);
		return rc;
	}
	return (int)(s->n - before);
}
