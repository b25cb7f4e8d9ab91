/* SPDX-License-Identifier: MIT */
/*
 * The feeder thread: keeps a destination buffer armed in the kernel, retires
 * it at a polling period and hands retired buffers to one consumer through a
 * bounded queue.  The consumer gives each buffer back when it is done.
 *
 * Back-pressure (the one place it is decided; docs/cli/spmtap-record.md
 * repeats it): the feeder never re-arms a buffer the consumer owns.  When a
 * poll finds no free buffer, it leaves the current buffer armed and counts a
 * "consumer overrun poll"; the kernel keeps filling that buffer and, once it
 * is full, flags loss, which the loss accounting then measures.  The feeder
 * never blocks the kernel's copy and never drops a retired buffer.
 */
#ifndef SPMTAP_COLLECTOR_FEEDER_H
#define SPMTAP_COLLECTOR_FEEDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decoder/frame.h"
#include "spm/spm.h"

#define FEEDER_DEFAULT_BUFFERS 3u
#define FEEDER_MAX_BUFFERS 64u
#define FEEDER_DEFAULT_SIZE (8u << 20)
#define FEEDER_MIN_SIZE 4096u

struct feeder_buf {
	void *data;
	uint32_t size;
	uint32_t args_bytes;  /* the ioctl's bytes_copied */
	uint32_t args_loss;   /* the ioctl's has_data_loss */
	/* The buffer split into its per-XCC parts once, when it was retired (decoder/frame.h). */
	struct dec_part parts[DEC_MAX_XCC];
	uint32_t nparts;
	uint32_t bytes;       /* data bytes over all parts, from the framing */
	uint32_t loss_parts;  /* parts flagged loss by the kernel */
	uint32_t bad_parts;   /* parts whose framing could not be trusted */
	uint64_t seq;         /* 0, 1, 2 ... in retire order */
	uint64_t host_ns;     /* CLOCK_BOOTTIME when it was retired */
	uint32_t index;       /* which of the feeder's buffers */
};

struct feeder_opts {
	uint32_t nbuffers;    /* 0: FEEDER_DEFAULT_BUFFERS */
	uint64_t buffer_size; /* 0: FEEDER_DEFAULT_SIZE; rounded by feeder_round_size() */
};

struct feeder_stats {
	uint64_t polls;          /* wake-ups of the poll loop */
	uint64_t rotations;      /* SET_DEST_BUF calls that armed a buffer */
	uint64_t retired;        /* buffers handed to the consumer */
	uint64_t overrun_polls;  /* polls that found no free buffer */
	uint64_t loss_buffers;   /* retired buffers with any part flagged loss */
	uint64_t bad_buffers;    /* retired buffers with an untrusted part */
	uint64_t bytes;          /* data bytes retired */
	uint32_t drain_calls;    /* rotations during the stop drain */
	bool drain_capped;       /* the drain gave up before a call returned 0 bytes */
	bool stalled;            /* SPMTAP_FEEDER_STALL fired */
	uint32_t period_us;      /* last poll period */
	uint64_t cpu_ns;         /* CPU time of the feeder thread (includes the kernel's copy) */
	uint64_t journal_cpu_ns; /* CPU time of the journal thread, 0 when none ran (cost.h) */
	uint64_t spilled_bytes;  /* bytes that went through the journal (issue 15 item 3) */
	int error;               /* first error of the thread, 0 if none */
	char errmsg[SPM_ERRLEN];
};

struct feeder;

/*
 * Round a requested buffer size to what the feeder will use: a multiple of
 * 32 * num_xcc (whole regions of whole lines), at least FEEDER_MIN_SIZE and
 * 64 * num_xcc, at most the u32 the ioctl takes.  A note for the user goes
 * into `note` when the value changed ("" otherwise).
 */
uint32_t feeder_round_size(uint64_t want, uint32_t num_xcc, char *note, size_t len);

/*
 * Start streaming from an open stream; the feeder owns it from here and
 * releases it (spm_stream_close) when it stops.  SPMTAP_FEEDER_STALL=AT:DUR
 * (milliseconds) makes the thread sleep DUR once, AT after start: a fault
 * injection for tests.
 */
int feeder_start(struct feeder **out, struct spm_stream *s, const struct spm_device *dev,
		 const struct feeder_opts *opts, char *err, size_t errlen);
/* Size every buffer has. */
uint32_t feeder_buffer_size(const struct feeder *f);
uint32_t feeder_nbuffers(const struct feeder *f);
/*
 * Next retired buffer, in order.  0 and *b set; -EAGAIN after timeout_ms;
 * -ENODATA once the feeder has stopped, released the stream and every
 * retired buffer has been taken.
 */
int feeder_next(struct feeder *f, struct feeder_buf **b, int timeout_ms);
/* The shape of the stream the feeder owns (spm.h). */
const struct spm_stream_shape *feeder_shape(const struct feeder *f);
/* Give a buffer back; it may be armed again. */
void feeder_put(struct feeder *f, struct feeder_buf *b);
/* Ask the thread to drain and stop; returns at once. Safe to call twice. */
void feeder_request_stop(struct feeder *f);
/* Wait for the thread, copy its statistics and free everything. */
int feeder_finish(struct feeder *f, struct feeder_stats *st);

#endif
