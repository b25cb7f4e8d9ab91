/* SPDX-License-Identifier: MIT */
/*
 * The layout planner: counter names + device geometry + interval in, the
 * complete hardware programming out (slot assignment, line counts, muxsel
 * RAM images, select values, segment sizes, PERFMON_CNTL) and the
 * spmtap-layout v1 descriptor the decoder reads.  Rules and sources are in
 * docs/programming.md; pm4.h turns a plan into the start/stop programs.
 *
 * Every value of a plan is per XCC: on gfx942 each XCC runs the same start
 * program and streams its own copy of this layout.  Instances and SEs are
 * reported separately (TCC_HIT[0..15], SE counters once per SE segment);
 * summing them is the consumer's job.
 */
#ifndef SPMTAP_SPM_PLAN_H
#define SPMTAP_SPM_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spm/catalog.h"

struct spm_device;
struct json_t;

/* Device shape the plan depends on, per XCC. */
struct spm_geometry {
	uint32_t num_se;     /* shader engines per XCC: 8 on gfx90a, 4 on MI300X */
	uint32_t num_xcc;    /* informational: every XCC gets the same program */
	uint32_t cus_per_se; /* TA/TD/TCP instances per SE (clamped to 16) */
};

/*
 * From discovery: num_se per XCC, CUs per SE = ceil(cu_count / (num_xcc *
 * num_se)) because harvesting leaves SEs uneven (MI300X 38 CUs per XCC over
 * 4 SEs) [I].  Also resolves the gfx family.
 */
int spm_geometry_from_device(const struct spm_device *dev, struct spm_geometry *geo,
			     enum spm_gfx *gfx, char *err, size_t errlen);

#define SPM_INTERVAL_MIN 32u
#define SPM_INTERVAL_MAX 65504u
#define SPM_INTERVAL_STEP 32u
#define SPM_INTERVAL_DEFAULT 8192u /* aqlprofile v2's default */

#define SPM_MAX_LINES 31        /* GLOBAL_NUM_LINE / SEx_NUM_LINE are 5 bits */
#define SPM_MAX_TOTAL_LINES 255 /* PERFMON_SEGMENT_SIZE total, 8 bits */
#define SPM_MAX_CORE1_LINES 127 /* SEGMENT_SIZE_CORE1 total, 7 bits */
#define SPM_RAM_MAX (SPM_MAX_LINES * 16 + 2) /* u16 entries, incl. 2 terminators */
#define SPM_PLAN_MAX_COUNTERS (2 * SPM_MAX_LINES * 16)
#define SPM_PLAN_MAX_SELECTS SPM_PLAN_MAX_COUNTERS /* each write carries >= 1 counter */

struct spm_plan_request {
	const char *gfx;            /* "gfx942" etc. */
	struct spm_geometry geo;
	const char *const *counters; /* "TCC_HIT" (every instance) or "TCC_HIT[3]" */
	size_t ncounters;
	uint32_t interval;          /* SCLK cycles; 0 = SPM_INTERVAL_DEFAULT */
};

/* One streamed value: one block instance's counter in one segment. */
struct spm_plan_counter {
	char name[64];            /* "TCC_HIT[3]", "SQ_WAVES" */
	const struct spm_counter *ctr;
	enum spm_block block;
	enum spm_segment segment;
	uint16_t event;
	uint8_t instance;
	uint8_t sub;              /* 16-bit sub-counter k; SQ: counter number n */
	uint16_t slot;            /* u16 index in its segment */
	int32_t hi_slot;          /* 32-bit counters: slot + 16; else -1 */
	uint16_t muxsel;          /* RAM entry at slot */
	uint16_t muxsel_hi;       /* RAM entry at hi_slot */
};

/* One register write of the select phase, in emission order. */
struct spm_plan_select {
	enum spm_block block;
	int32_t instance;  /* GRBM_GFX_INDEX = 0xA0000000 | instance; -1 = broadcast (SQ) */
	uint32_t reg;      /* absolute dword address */
	uint32_t value;
};

struct spm_plan {
	enum spm_gfx gfx;
	char gfx_target[16];         /* as requested, lower-case */
	const struct spm_catalog *cat;
	struct spm_geometry geo;

	uint32_t interval_requested; /* SCLK cycles */
	uint32_t interval;           /* rounded to a multiple of 32 */

	uint32_t global_lines;       /* G */
	uint32_t se_lines;           /* S, per SE */
	uint32_t sample_bytes;       /* (G + num_se * S) * 32, per XCC */

	uint32_t perfmon_cntl;       /* RLC_SPM_PERFMON_CNTL */
	uint32_t segment_size;       /* RLC_SPM_PERFMON_SEGMENT_SIZE */
	bool has_core1;              /* gfx90a: also write _CORE1 */
	uint32_t segment_size_core1;
	uint32_t sample_delay_max;   /* 0 = not written */

	uint16_t global_ram[SPM_RAM_MAX];
	size_t global_ram_n;         /* G*16 + 2 */
	uint16_t se_ram[SPM_RAM_MAX];
	size_t se_ram_n;             /* S*16 + 2 */

	/* Select writes: non-SQ blocks (block order, instance, perfcounter), then SQ. */
	struct spm_plan_select selects[SPM_PLAN_MAX_SELECTS];
	size_t nselects;
	bool has_sq;                 /* SQ MASK/CTRL are written before the SQ selects */

	/* Request order, each request expanded over its instances. */
	struct spm_plan_counter counters[SPM_PLAN_MAX_COUNTERS];
	size_t ncounters;
};

/*
 * Build a plan; *out is malloc'd, free with spm_plan_free().  Errors:
 * -ENOENT unknown counter (with suggestions), -EOPNOTSUPP not streamable
 * (reason and alternative) or unknown gfx, -ERANGE interval or instance out
 * of range, -E2BIG too many counters for one pass (says which to drop),
 * -EEXIST duplicate, -EINVAL malformed request or geometry.
 */
int spm_plan_create(const struct spm_plan_request *req, struct spm_plan **out, char *err,
		    size_t errlen);
void spm_plan_free(struct spm_plan *plan);

/* Round an interval as aqlprofile does; -ERANGE with "32..65504 in steps of 32". */
int spm_interval_round(uint32_t requested, uint32_t *rounded, char *err, size_t errlen);

/*
 * Saturation forecast, one entry per distinct catalog counter of the plan
 * (plan order): the slot's width, the counter's peak per cycle
 * (spm_counter_peak; 0 unknown) and the longest interval that cannot
 * saturate it (0 unknown; SPM_INTERVAL_MAX when none can).  Returns the
 * number of entries written (at most max).
 */
struct spm_plan_sat {
	const struct spm_counter *ctr;
	double per_cycle;
	const char *why;          /* the peak's reason; NULL when unknown */
	unsigned int width;       /* 16 or 32 bits per slot */
	uint32_t safe_interval;
	bool saturates;           /* at the plan's interval (peak known) */
};
size_t spm_plan_saturation(const struct spm_plan *p, struct spm_plan_sat *out, size_t max);

/*
 * What this collector is known to sustain, all GPUs of one process together,
 * in MB/s of SPM bytes (docs/bench.md "Data-rate estimate", measured on a
 * 2-vCPU VM with the emulated device on the same cores, 2026-11-28): CSV and
 * Perfetto lossless at 788 MB/s for 60 s, and at 1.05 GB/s for 20 s only on
 * a quiet day, so 800; SQLite lossless at 525 MB/s for 60 s, so 500.  A plan
 * above it is warned about; it is an estimate, not a limit (a larger machine
 * sustains more; the loss line tells).
 */
#define SPM_SUSTAINED_MBS_CSV 800.0
#define SPM_SUSTAINED_MBS_SQLITE 500.0
/* What a rate above it does, in every warning that names it (plan, record, several GPUs). */
#define SPM_RATE_ABOVE_SUSTAINED                                                                           \
	"expect the outputs to fall behind (the spill queue and the journal hold the backlog while memory " \
	"and disk last; then samples are lost)"

/* The family's assumed peak SCLK in GHz (SPM.md 6.2: 2.1 gfx942, 1.7 gfx90a), for data rates. */
double spm_gfx_sclk_ghz(enum spm_gfx gfx);
/* SPM bytes per second of one GPU (every XCC) at sclk_ghz, in MB/s. */
double spm_plan_mbs(const struct spm_plan *p, double sclk_ghz);
/*
 * The warnings a plan deserves before a run, one sentence per line (each
 * ending in '\n') into buf: counters predicted to saturate at the plan's
 * interval with the interval that avoids it, and a data rate above
 * sustained_mbs (0: SPM_SUSTAINED_MBS_CSV) with the interval that keeps
 * under it.  Returns the number of warnings.
 */
int spm_plan_warnings(const struct spm_plan *p, double sclk_ghz, double sustained_mbs, char *buf,
		      size_t len);

/* The spmtap-layout v1 descriptor (a new reference), or NULL on ENOMEM. */
struct json_t *spm_plan_layout(const struct spm_plan *plan);
/* Same, as a malloc'd compact JSON string. */
char *spm_plan_layout_dumps(const struct spm_plan *plan);

#endif
