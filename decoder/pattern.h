/* SPDX-License-Identifier: MIT */
/*
 * Checker for the emulator's self-checking test pattern.  The stream of each
 * XCC is a run of 32-byte little-endian lines:
 *
 *   [0,8)   u64 GPU timestamp
 *   [8,16)  u64 seq: line index in this XCC's stream since ACQUIRE
 *   [16,20) u32 magic 0x544D5053 ("SPMT")
 *   [20,22) u16 xcc
 *   [22,24) u16 low 16 bits of gpu_id
 *   [24,32) u64 check = seq * 0x9E3779B97F4A7C15 ^ ts ^ ((u64)xcc << 48)
 *
 * Because every line names its own position, the kernel's loss *flag* turns
 * into lost *bytes*: a jump in seq is exactly that many 32-byte lines that
 * never reached us.  Real SPM samples carry no sequence number; there loss
 * will be measured from timestamp gaps instead.
 */
#ifndef SPMTAP_DECODER_PATTERN_H
#define SPMTAP_DECODER_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decoder/frame.h"

#define DEC_PAT_LINE 32u
#define DEC_PAT_MAGIC 0x544D5053u
#define DEC_PAT_MUL 0x9E3779B97F4A7C15ull

struct dec_pat_stats {
	uint64_t bytes_fed;       /* every byte given to feed() */
	uint64_t good_lines;      /* magic and check right, seq new */
	uint64_t lost_lines;      /* seq gaps, counted from seq 0 */
	uint64_t lost_bytes;      /* lost_lines * 32 minus the dropped partial bytes (see .c) */
	uint64_t dup_lines;       /* good lines whose seq was already passed */
	uint64_t corrupt_lines;   /* bad magic, check, xcc or gpu_id */
	uint64_t ts_backwards;    /* good lines older than the previous good line */
	uint64_t dropped_partial; /* bytes of a line cut by a discontinuity */
	uint64_t next_seq;        /* one past the highest good seq */
	uint32_t carry;           /* bytes of an incomplete line held for the next feed */
};

struct dec_pat_xcc {
	struct dec_pat_stats st;
	unsigned char partial[DEC_PAT_LINE];
	uint64_t last_ts;
	bool have_ts;
};

struct dec_pat {
	uint32_t num_xcc;
	int32_t gpu_id_low; /* -1: accept any */
	struct dec_pat_xcc x[DEC_MAX_XCC];
};

/* gpu_id < 0: do not check the gpu_id field.  Returns -EINVAL on a bad num_xcc. */
int dec_pat_init(struct dec_pat *p, uint32_t num_xcc, int64_t gpu_id);
/* Bytes of one XCC's stream, in order; lines may be split across calls. */
void dec_pat_feed(struct dec_pat *p, uint32_t xcc, const void *bytes, size_t len);
/* The caller knows the stream is discontinuous here: drop the carried partial line. */
void dec_pat_break(struct dec_pat *p, uint32_t xcc);
const struct dec_pat_stats *dec_pat_stats(const struct dec_pat *p, uint32_t xcc);
/* Sum over XCCs into *out. */
void dec_pat_total(const struct dec_pat *p, struct dec_pat_stats *out);
/* True if any XCC has seen a valid pattern line: the stream is the test pattern. */
bool dec_pat_detected(const struct dec_pat *p);
/* Build one line (for the emulator's tests and ours). */
void dec_pat_make_line(unsigned char out[DEC_PAT_LINE], uint64_t ts, uint64_t seq, uint16_t xcc,
		       uint32_t gpu_id);

#endif
