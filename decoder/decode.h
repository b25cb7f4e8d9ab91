/* SPDX-License-Identifier: MIT */
/*
 * Sample decoder: bytes of each XCC's SPM stream + a layout descriptor ->
 * columnar chunks handed to a sink.  It does not know where the bytes come
 * from (a live buffer region or a file), clocks, or files; the same code
 * serves `spmtap record` and `spmtap decode`.
 *
 * A chunk is a run of samples of one XCC with no discontinuity inside it:
 * kernel-flagged loss, a timestamp gap and a resynchronisation each end the
 * current chunk, and the next chunk's flags say which of them came before
 * its first sample.  Timestamps are raw GPU ticks.
 */
#ifndef SPMTAP_DECODER_DECODE_H
#define SPMTAP_DECODER_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decoder/layout.h"

#define DEC_DECODE_MAX_XCC 16u
#define DEC_CHUNK_DEFAULT 4096u
#define DEC_CHUNK_MAX (1u << 20)
/* The value of a saturated cell; no real sum can reach it (32 SEs x 0xFFFFFFFE < 2^37). */
#define DEC_SATURATED UINT64_MAX

/* dec_chunk.flags: what happened between the previous chunk of this XCC and this one. */
#define DEC_CHUNK_LOSS   (1u << 0) /* the kernel flagged loss (dec_feed loss_before) */
#define DEC_CHUNK_GAP    (1u << 1) /* a timestamp gap: samples were lost (dec_stats) */
#define DEC_CHUNK_RESYNC (1u << 2) /* alignment was lost and found again; bytes skipped */

struct dec_opts {
	size_t sz;               /* sizeof(struct dec_opts) */
	bool per_se;             /* one column per SE for `se` counters, instead of the sum */
	uint32_t chunk_samples;  /* samples per chunk, rounded up to a multiple of 64;
				  * 0: DEC_CHUNK_DEFAULT */
	bool no_simd;            /* scalar kernels only (tests, comparisons) */
};
#define dec_opts__last_field no_simd

/* One output column: a counter (the SE sum or one SE), in descriptor order. */
struct dec_column {
	char name[DEC_MAX_NAME + 16]; /* "NAME" or "NAME[seN]" */
	uint32_t counter;            /* index into layout->counters */
	int32_t se;                  /* -1: global counter or SE sum; else the SE */
	bool wide;                   /* 32-bit counter */
};

struct dec_chunk {
	uint32_t xcc;
	uint32_t nsamples;
	uint32_t ncols;
	uint32_t flags;                /* DEC_CHUNK_* */
	uint64_t first_sample;         /* index of timestamp[0] among this XCC's decoded samples */
	const uint64_t *timestamp;     /* [nsamples], raw GPU ticks */
	const uint64_t *const *values; /* [ncols][nsamples]; DEC_SATURATED where saturated */
	/* [ncols][(nsamples + 63) / 64]: bit i % 64 of word i / 64 set = value i saturated */
	const uint64_t *const *saturated;
	const struct dec_column *cols; /* [ncols] */
};

static inline bool dec_chunk_saturated(const struct dec_chunk *c, uint32_t col, uint32_t i)
{
	return (c->saturated[col][i >> 6] >> (i & 63)) & 1;
}

/*
 * Called once per chunk; the chunk's arrays are valid only during the call.
 * A negative return stops decoding: dec_feed/dec_flush return it, and every
 * later call returns it again.
 */
typedef int (*dec_sink_fn)(void *user, const struct dec_chunk *chunk);

struct dec_stats {
	uint64_t bytes_fed;
	uint64_t samples;          /* decoded and handed to the sink (or pending in a chunk) */
	uint64_t partial_bytes;    /* held now, not yet a sample: the carried partial sample, or
				    * bytes waiting for a resync decision; after the last feed,
				    * the trailing bytes of the stream */
	uint64_t dropped_bytes;    /* discarded: partial samples cut by loss, bytes skipped
				    * while resynchronising */
	uint64_t loss_events;      /* feeds with loss_before */
	uint64_t corrupt_events;   /* timestamps that went backwards (or stood still) */
	uint64_t resyncs;          /* alignment found again after loss or corruption */
	uint64_t gaps;             /* timestamp deltas > 1.5 x the median delta */
	uint64_t lost_samples_est; /* sum over gaps of round(delta / period) - 1: THE count of
				    * lost samples every output reports (decode.c, count_gap) */
	uint64_t median_delta;     /* ticks; 0 until 8 deltas were seen */
	uint64_t saturated;        /* saturated values delivered (per column cell) */
	bool hunting;              /* looking for the sample alignment now */
};

struct dec;

/*
 * The layout is copied; `layout` need not outlive the decoder.  Returns 0 and
 * *out, or a negative errno with a sentence in `err`.
 */
int dec_open(const struct dec_layout *layout, uint32_t num_xcc, const struct dec_opts *opts,
	     dec_sink_fn sink, void *user, struct dec **out, char *err, size_t errlen);
/*
 * Bytes of one XCC's stream, in order; a call may start and end anywhere
 * inside a sample.  loss_before: the bytes may not continue the previous ones
 * (the kernel flagged loss); the carried partial sample is dropped and the
 * sample alignment is searched for again (docs/decode-csv.md, "Resync").
 */
int dec_feed(struct dec *d, uint32_t xcc, const void *bytes, size_t len, bool loss_before);
/* Hand every pending chunk to the sink.  Partial samples stay carried. */
int dec_flush(struct dec *d);
int dec_stats(const struct dec *d, uint32_t xcc, struct dec_stats *st);
uint32_t dec_ncols(const struct dec *d);
const struct dec_column *dec_columns(const struct dec *d);
const struct dec_layout *dec_layout(const struct dec *d);
void dec_close(struct dec *d);

#endif
