/* SPDX-License-Identifier: MIT */
/*
 * The consumer of the feeder: retired buffers -> per-XCC parts -> decoder
 * -> aggregation -> a sink (a writer).  During `spmtap record` it runs on its
 * own thread; `spmtap decode` drives the same object inline from a raw
 * container, so a recording and its offline re-decode go through one code
 * path and give the same rows.  A later writer thread plugs in as the sink.
 *
 * What a kernel loss flag means for the bytes is the stream's shape
 * (spm.h, struct spm_stream_shape, given in dthr_opts.shape):
 *  - SPM_LOSS_CUTS_LINES: whole lines were discarded somewhere around the
 *    flagged part (gen A discards the ring when the buffer is full, so the
 *    gap follows the flagged data), possibly mid-sample.  The flagged part
 *    and the next part of that XCC are fed with loss_before, so the decoder
 *    drops the carried partial sample and searches the alignment on both
 *    sides.
 *  - SPM_LOSS_WHOLE_SAMPLES: the flag does not cut the byte stream, so
 *    parts are fed as they are.
 * Either way the samples lost show up as timestamp gaps, which the decoder
 * counts (dec_stats.lost_samples_est, the one rule; SPM.md 5.8); the flags
 * are counted per part.
 *
 * Every XCC's stream may begin anywhere in a sample (a recording starts at
 * a flush, not at a sample boundary), so its first bytes are always fed
 * with loss_before: the decoder searches the alignment, and what it skips
 * there is reported as `skipped_start`, not as loss.
 */
#ifndef SPMTAP_COLLECTOR_DECODE_THREAD_H
#define SPMTAP_COLLECTOR_DECODE_THREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/lib/feeder.h"
#include "decoder/decode.h"
#include "decoder/layout.h"
#include "spm/spm.h"

struct dthr;

/* Called for each part before it is decoded (the raw container's writer). */
typedef int (*dthr_part_fn)(void *user, const struct feeder_buf *b, const struct dec_part *p,
			    const void *data);

/*
 * Samples per decoded chunk.  The instance sums and the copy for the writer
 * read every decoder column again (an MI300X with TCC_HIT and TA_TA_BUSY:
 * 28 columns of u64, 224 bytes per sample): at 1024 samples they are still
 * in L2, at the decoder's 4096 (917 KB) they were not.  Measured: the
 * decode stage 0.35-0.38 -> 0.30-0.32 s per GB (8 s MI300X recordings at
 * 16384, alternating; docs/bench.md).  The kernel alone is the same at
 * either size (bench_decode).  The session's queue holds
 * SESSION_QUEUE_DEFAULT of them; session_priv.h checks the product.
 */
#define DTHR_CHUNK_SAMPLES 1024u

struct dthr_opts {
	/* NULL: no counters were programmed (the emulator's test pattern, `record
	 * --raw` alone): parts go to the part callback and are counted, bytes and
	 * kernel flags, nothing is decoded. */
	const struct dec_layout *layout;
	struct spm_stream_shape shape; /* XCC streams, what a loss flag means (above) */
	bool per_se;                  /* decoder: one column per SE */
	bool per_instance;            /* aggregation off */
	const char *const *requests;  /* the user's counter names (aggregate.h); NULL: sum all */
	size_t nreq;
	dec_sink_fn sink;             /* NULL: decode and count only */
	void *sink_user;
	dthr_part_fn part;            /* optional */
	void *part_user;
	bool skip_first;              /* thread use: drop the first retired buffer (prime.h) */
};

/* Per XCC stream, for summaries and end records; lost samples are dec.lost_samples_est. */
struct dthr_xcc {
	struct dec_stats dec;         /* zero without a layout */
	uint64_t bytes;               /* in the parts, as the framing gave them */
	uint64_t skipped_start;       /* bytes before the first sample: not loss */
	uint64_t resyncs;             /* alignment searches after the start's */
	uint64_t parts;
	uint64_t loss_parts;          /* parts the kernel flagged */
	uint64_t bad_parts;           /* parts whose framing could not be trusted */
	uint64_t sink_wait_ns;        /* time the sink held the thread (a full queue): the writer's delay */
};

int dthr_open(struct dthr **out, const struct dthr_opts *o, char *err, size_t errlen);
/* The output columns (after aggregation): what a writer's header needs. */
uint32_t dthr_ncols(const struct dthr *t);
const struct dec_column *dthr_columns(const struct dthr *t);

/* Inline use: one part of one XCC's stream.  0 or the first error (sticky). */
int dthr_feed(struct dthr *t, uint32_t xcc, const void *bytes, size_t len, bool loss, bool bad);

/*
 * Thread use: consume f until it has stopped and every buffer was taken.
 * Signals should be blocked by the caller around this call (the thread
 * inherits the mask).
 */
int dthr_start(struct dthr *t, struct feeder *f, char *err, size_t errlen);
/* Set once the sink or a part callback failed; the thread keeps draining the feeder. */
bool dthr_failed(const struct dthr *t);
/* Wait for the thread (if started), flush the decoder; 0 or the first error. */
int dthr_finish(struct dthr *t);
/* The first error as a sentence, or "". */
const char *dthr_error(const struct dthr *t);

int dthr_stats(const struct dthr *t, uint32_t xcc, struct dthr_xcc *out);
uint32_t dthr_sample_bytes(const struct dthr *t);
/*
 * After dthr_finish: the thread's CPU (CLOCK_THREAD_CPUTIME_ID) and, of it,
 * the part callback's (the raw container's appends); 0 for inline use.
 */
void dthr_cpu(const struct dthr *t, uint64_t *thread_ns, uint64_t *part_ns);
/* Samples lost so far over every XCC (the decoder's count), cheap from any thread. */
uint64_t dthr_lost_live(const struct dthr *t);
/*
 * For a 16-bit counter without a catalog peak that saturated: the interval
 * (a multiple of 32, at least 32) at which the peak estimated from the
 * observed values would fit (the top of the unsaturated distribution
 * mirrored above the limit); 0 when it did not saturate or is not observed.
 * After dthr_finish.  The estimator alone: dthr_saturation_interval_of.
 */
uint32_t dthr_saturation_interval(const struct dthr *t, const char *counter, uint32_t interval);
uint32_t dthr_saturation_interval_of(const uint64_t *hist, uint32_t nbins, uint64_t sat, uint32_t interval);
/* Saturated cells of output column col in XCC xcc's rows so far (what a CSV shows empty). */
uint64_t dthr_saturated(const struct dthr *t, uint32_t xcc, uint32_t col);
void dthr_close(struct dthr *t);

#endif
