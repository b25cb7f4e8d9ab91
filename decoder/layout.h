/* SPDX-License-Identifier: MIT */
/*
 * The layout descriptor (spmtap-layout v1, docs/layout-format.md): which
 * 16-bit slots of an SPM sample hold which counter.  The stream itself says
 * nothing about its shape (shared/ref/SPM.md 5.8), so this is the only
 * source of the sample size and of every counter's position.
 */
#ifndef SPMTAP_DECODER_LAYOUT_H
#define SPMTAP_DECODER_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define DEC_LINE_BYTES 32u
#define DEC_SLOTS_PER_LINE 16u
/* Global slots 0..3 hold the u64 timestamp (SPM.md 5.2). */
#define DEC_TS_SLOTS 4u
/* GLOBAL_NUM_LINE / SEx_NUM_LINE are 5-bit fields (SPM.md 5.4). */
#define DEC_MAX_SEG_LINES 31u
/* PERFMON_SEGMENT_SIZE is 8 bits: at most 255 lines per sample. */
#define DEC_MAX_SAMPLE_LINES 255u
#define DEC_MAX_SE 32u
#define DEC_MAX_NAME 63u
#define DEC_MAX_GFX 31u

enum dec_segment { DEC_SEG_GLOBAL = 0, DEC_SEG_SE = 1 };

struct dec_counter {
	char name[DEC_MAX_NAME + 1];
	enum dec_segment segment;
	int32_t slot;    /* u16 index inside its segment (line * 16 + position) */
	int32_t hi_slot; /* high half of a 32-bit counter, or -1 for a 16-bit one */
};

struct dec_layout {
	char gfx[DEC_MAX_GFX + 1];
	uint32_t num_se;
	uint32_t global_lines;
	uint32_t se_lines;
	uint32_t sample_bytes; /* (global_lines + se_lines * num_se) * 32 */
	uint32_t ncounters;
	struct dec_counter *counters;
};

/*
 * Parse and validate a descriptor.  On success *out is a new layout (free it
 * with dec_layout_free) and 0 is returned; otherwise a negative errno and a
 * sentence naming the counter and field in `err`.
 */
int dec_layout_parse(const char *json, size_t len, struct dec_layout **out, char *err,
		     size_t errlen);
int dec_layout_load(const char *path, struct dec_layout **out, char *err, size_t errlen);
/*
 * Check a layout built in memory (the planner's); fills sample_bytes.  Same
 * rules and messages as dec_layout_parse.
 */
int dec_layout_validate(struct dec_layout *l, char *err, size_t errlen);
/* The descriptor as JSON text (malloc'd, NUL-terminated), or NULL with errno set. */
char *dec_layout_to_json(const struct dec_layout *l);
void dec_layout_free(struct dec_layout *l);

#endif
