/* SPDX-License-Identifier: MIT */
/*
 * The most a counter can count per SCLK cycle in one slot (one block
 * instance in one segment), where that is knowable from what the counter
 * counts: a cycle or busy/stall/idle counter counts at most every cycle of
 * its unit; an L2 channel does at most two tag lookups per cycle.  From it
 * and the slot's width the planner predicts saturation before a run
 * (spm_plan_saturation, docs/counters.md "Saturation").  Counters that
 * count events of many units at once (waves, instructions, quad-cycles over
 * all CUs of an SE) have no peak here: their saturation is counted in the
 * recording instead.
 */
#include <string.h>
#include <strings.h>

#include "spm/catalog.h"

struct peak {
	const char *name;
	double per_cycle;
	const char *why;
};

/* [I]: from the counter's definition ("cycles ..."), not measured on hardware. */
#define CYCLE "counts cycles of one unit: at most 1 per cycle"
/* [I]: the emulator's model (emu/common/counters.c); the hardware figure is [U]. */
#define TAG "an L2 channel does at most 2 tag lookups per cycle"

static const struct peak peaks[] = {
	{ "SQ_CYCLES", 1, CYCLE },
	{ "SQ_BUSY_CYCLES", 1, CYCLE },
	{ "TD_TD_BUSY", 1, CYCLE },
	{ "TD_TC_STALL", 1, CYCLE },
	{ "TD_SPI_STALL", 1, CYCLE },
	{ "TA_TA_BUSY", 1, CYCLE },
	{ "TCP_GATE_EN1", 1, CYCLE },
	{ "TCP_TCP_TA_DATA_STALL_CYCLES", 1, CYCLE },
	{ "TCP_PENDING_STALL_CYCLES", 1, CYCLE },
	{ "TCC_CYCLE", 1, CYCLE },
	{ "TCC_BUSY", 1, CYCLE },
	{ "TCC_TAG_STALL", 1, CYCLE },
	{ "TCC_REQ", 2, TAG },
	{ "TCC_READ", 2, TAG },
	{ "TCC_WRITE", 2, TAG },
	{ "TCC_HIT", 2, TAG },
	{ "TCC_MISS", 2, TAG },
	{ "TCA_CYCLE", 1, CYCLE },
	{ "TCA_BUSY", 1, CYCLE },
	{ "SPI_CSN_WINDOW_VALID", 1, CYCLE },
	{ "SPI_CSN_BUSY", 1, CYCLE },
	{ "SPI_RA_REQ_NO_ALLOC_CSN", 1, CYCLE },
	{ "SPI_RA_WAVE_SIMD_FULL_CSN", 1, CYCLE },
	{ "CPC_ME1_BUSY_FOR_PACKET_DECODE", 1, CYCLE },
	{ "CPC_UTCL1_STALL_ON_TRANSLATION", 1, CYCLE },
	{ "CPC_CPC_STAT_BUSY", 1, CYCLE },
	{ "CPC_CPC_STAT_IDLE", 1, CYCLE },
	{ "CPF_CMP_UTCL1_STALL_ON_TRANSLATION", 1, CYCLE },
	{ "CPF_CPF_STAT_BUSY", 1, CYCLE },
	{ "CPF_CPF_STAT_IDLE", 1, CYCLE },
};

double spm_counter_peak(const struct spm_counter *c, const char **why)
{
	for (size_t i = 0; c && i < sizeof(peaks) / sizeof(peaks[0]); i++)
		if (!strcasecmp(peaks[i].name, c->name)) {
			if (why)
				*why = peaks[i].why;
			return peaks[i].per_cycle;
		}
	if (why)
		*why = NULL;
	return 0;
}

uint32_t spm_saturation_safe_interval(double per_cycle, unsigned int width, uint32_t step,
				      uint32_t max)
{
	/* A slot reading all-ones is saturated (SPM.md 5.6), so the largest
	 * true value that reads as itself is 2^width - 2. */
	double limit = width >= 32 ? 4294967294.0 : (double)((1u << width) - 2u);
	if (per_cycle <= 0 || !step)
		return 0;
	double cycles = limit / per_cycle;
	if (cycles >= (double)max)
		return max;
	uint32_t iv = (uint32_t)cycles;
	return iv - iv % step;
}
