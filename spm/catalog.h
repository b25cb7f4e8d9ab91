/* SPDX-License-Identifier: MIT */
/*
 * The SPM counter catalog: which hardware blocks RLC SPM can stream, how
 * each is selected, and the counters users know by their rocprofv3 names,
 * with event ids per gfx target (they differ between gfx90a and gfx942, so
 * nothing here is keyed by name alone).  Facts are const tables tagged
 * [V]/[I]/[U] as in shared/ref/PROGRAMMING.md §4; see docs/counters.md.
 *
 * Return convention as in spm.h: 0 / count or -errno, with a sentence in the
 * optional err buffer.
 */
#ifndef SPMTAP_SPM_CATALOG_H
#define SPMTAP_SPM_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A gfx target family with its own catalog. */
enum spm_gfx {
	SPM_GFX_NONE = 0,
	SPM_GFX_90A,  /* MI200 (one GCD = one agent, 8 SEs) */
	SPM_GFX_942,  /* MI300: gfx940, gfx941, gfx942 share the YAML definitions [V] */
};

/*
 * Blocks, in aqlprofile's CounterBlockId order (alphabetical), which is the
 * order its builder groups counters in the muxsel RAMs and programs the
 * selects (PROGRAMMING.md §3.3) [V].  Sorting by this enum reproduces it.
 */
enum spm_block {
	SPM_BLK_CPC,
	SPM_BLK_CPF,
	SPM_BLK_GDS,
	SPM_BLK_GRBM, /* not streamable: no SPM block id */
	SPM_BLK_SPI,
	SPM_BLK_SQ,
	SPM_BLK_SX,
	SPM_BLK_TA,
	SPM_BLK_TCA,
	SPM_BLK_TCC,
	SPM_BLK_TCP,
	SPM_BLK_TD,
	SPM_BLK_COUNT
};

enum spm_segment {
	SPM_SEG_GLOBAL, /* one copy per sample (per XCC on gfx942) */
	SPM_SEG_SE,     /* one copy in every SE segment of a sample */
	SPM_SEG_NONE,   /* cannot be streamed */
};

/* How many instances a block has on a device. */
enum spm_inst_rule {
	SPM_INST_ONE,     /* one per segment (CPC, CPF, GDS; SQ, SPI, SX once per SE) */
	SPM_INST_TABLE,   /* per-gfx count from the catalog (TCC, TCA) */
	SPM_INST_PER_CU,  /* one per CU of an SE, from the topology (TA, TD, TCP) */
};

#define SPM_MAX_PERFCOUNTERS 6 /* SPI has 6 select registers */
#define SPM_MAX_INSTANCES 32   /* the muxsel instance field is 5 bits */

struct spm_select_regs {
	uint16_t select;  /* absolute dword address; sub-counters k&3 = 0, 1 */
	uint16_t select1; /* sub-counters k&3 = 2, 3; 0 = none */
};

struct spm_block_info {
	enum spm_block id;
	const char *name;
	enum spm_segment segment;
	int8_t spm_id;         /* muxsel block id in its RAM (global or SE numbering); -1 none */
	uint8_t slots;         /* sub-counters per instance (aqlprofile counter_count); SQ: 32-bit counters */
	uint8_t width;         /* 16 or 32 bits per counter value */
	uint8_t sel_bits;      /* width of a PERF_SEL field: event ids must fit */
	enum spm_inst_rule inst_rule;
	bool v2_gate;          /* accepted by aqlprofile v2's SPM gate */
	uint16_t sample_delay; /* RLC_SPM_<blk>_PERFMON_SAMPLE_DELAY, absolute; 0 none */
	uint8_t nsel;          /* perfcounters p, each with SELECT/SELECT1 */
	struct spm_select_regs sel[SPM_MAX_PERFCOUNTERS];
	const char *no_spm_reason; /* for SPM_SEG_NONE */
};

struct spm_counter {
	const char *name;   /* rocprofv3 name */
	enum spm_block block;
	uint16_t event;     /* event id for the catalog's gfx */
	const char *desc;   /* one line */
	const char *alt;    /* non-streamable: the streamable counters to use instead */
};

struct spm_catalog;

/* Static description of every block; never NULL for a valid id. */
const struct spm_block_info *spm_block_info(enum spm_block b);
const char *spm_segment_name(enum spm_segment s); /* "global", "se", "none" */

/*
 * "gfx90a" / "gfx940" / "gfx941" / "gfx942" (case-insensitive) to a catalog
 * family.  -EOPNOTSUPP with a reason for anything else.
 */
int spm_gfx_parse(const char *gfx, enum spm_gfx *out, char *err, size_t errlen);
const char *spm_gfx_name(enum spm_gfx gfx);

/* The catalog of a gfx family: the one switch on the target. */
int spm_catalog_get(enum spm_gfx gfx, const struct spm_catalog **out, char *err, size_t errlen);
enum spm_gfx spm_catalog_gfx(const struct spm_catalog *cat);

/*
 * Instances of block b present per XCC (global) or per SE (SE blocks).
 * cus_per_se feeds SPM_INST_PER_CU blocks (clamped to 16, the hardware's
 * instance slots per SE).  0 for non-streamable blocks.
 */
unsigned int spm_catalog_instances(const struct spm_catalog *cat, enum spm_block b,
				   unsigned int cus_per_se);

/* Iteration for `spmtap list --counters`: every counter, streamable or not. */
size_t spm_catalog_count(const struct spm_catalog *cat);
const struct spm_counter *spm_catalog_at(const struct spm_catalog *cat, size_t i);
/* Calls fn for each counter until it returns non-zero; returns that value. */
int spm_catalog_foreach(const struct spm_catalog *cat,
			int (*fn)(const struct spm_counter *c, void *user), void *user);

bool spm_counter_streamable(const struct spm_counter *c);
enum spm_segment spm_counter_segment(const struct spm_counter *c);
unsigned int spm_counter_width(const struct spm_counter *c); /* 16 or 32; 0 if not streamable */

/*
 * The most one slot of c (one instance in one segment) can count per SCLK
 * cycle, where the counter's definition bounds it (cycle, busy, stall and
 * idle counters: 1; L2 tag lookups: 2), with the reason in *why; 0 (and
 * *why NULL) when nothing bounds it.  catalog_peak.c, docs/counters.md.
 */
double spm_counter_peak(const struct spm_counter *c, const char **why);
/*
 * The longest interval, a multiple of step and at most max, at which a slot
 * counting per_cycle events per cycle cannot saturate width bits (a value
 * of 2^width - 1 reads as saturated); max when none in range can; 0 when
 * per_cycle is unknown (<= 0).
 */
uint32_t spm_saturation_safe_interval(double per_cycle, unsigned int width, uint32_t step,
				      uint32_t max);

/*
 * Exact lookup, case-insensitive.  Unknown: -ENOENT and "unknown counter X
 * for gfx942; did you mean A, B?".  Known but not streamable: *out is set,
 * -EOPNOTSUPP and the reason with the alternative.
 */
int spm_catalog_lookup(const struct spm_catalog *cat, const char *name,
		       const struct spm_counter **out, char *err, size_t errlen);
/*
 * Case-insensitive Levenshtein distance of a[0..la) and b[0..lb), for
 * "did you mean" lists; names longer than 64 are 1000 away from anything.
 */
unsigned int spm_edit_distance(const char *a, size_t la, const char *b, size_t lb);
/* Up to max close names (edit distance, prefix), best first. */
size_t spm_catalog_suggest(const struct spm_catalog *cat, const char *name,
			   const struct spm_counter **out, size_t max);

/*
 * Defined here only so catalog_<gfx>.c can build their instances; callers
 * treat it as opaque.  A catalog is the common gfx9 counters (equal ids on
 * every target) plus the target's own array, which holds the counters whose
 * ids or names differ.
 */
struct spm_counter_array {
	const struct spm_counter *v;
	size_t n;
};

struct spm_catalog {
	enum spm_gfx gfx;
	const char *name;                        /* "gfx942" */
	uint8_t table_instances[SPM_BLK_COUNT];  /* SPM_INST_TABLE blocks, per XCC */
	struct spm_counter_array own;            /* after the common gfx9 array */
};

extern const struct spm_catalog spm_catalog_gfx90a;
extern const struct spm_catalog spm_catalog_gfx942;

#endif
