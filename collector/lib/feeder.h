/* SPDX-License-Identifier: MIT */
/*
 * The feeder thread: keeps a destination buffer armed in the kernel, retires
 * it at a polling period and hands retired buffers to one consumer through a
 * bounded queue.  The consumer gives each buffer back when it is done.
 *
 * Back-pressure (docs/architecture.md "Back-pressure policy" states it): the
 * feeder never re-arms a buffer the consumer owns and never waits.  With a
 * spill queue (feeder_opts.spill, collector/lib/spill.c) retired buffers
 * wait for the consumer in memory up to a budget and then in a raw journal
 * on disk, written by the journal thread, so a slow consumer costs memory
 * and disk, not samples.  Only when no buffer is free at a poll (no spill
 * queue, or memory and disk cannot absorb the rate, or the journal cannot
 * be written) does it leave the current buffer armed and count a "consumer
 * overrun poll"; the kernel keeps filling that buffer and, once it is full,
 * flags loss, which the loss accounting then measures.  The feeder never
 * blocks the kernel's copy and never drops a retired buffer.
 */
#ifndef SPMTAP_COLLECTOR_FEEDER_H
#define SPMTAP_COLLECTOR_FEEDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/lib/rawfile.h"
#include "decoder/frame.h"
#include "spm/spm.h"

#define FEEDER_DEFAULT_BUFFERS 3u
#define FEEDER_MAX_BUFFERS 64u
#define FEEDER_MAX_POOL 65536u /* buffers a spill queue may grow the pool to */
#define SPILL_IO_LEN 160u      /* feeder_stats.journal_io */
#define FEEDER_DEFAULT_SIZE (8u << 20) /* the smallest default, whatever the XCC count */
/*
 * The default buffer holds FEEDER_DEFAULT_PER_XCC for each XCC region: the
 * region is what the kernel fills between two polls, so its size is how
 * late a poll may come at a stream's rate.  Measured on a 16-core host with
 * an emulated MI300X at 1.5 GB/s (docs/bench.md): 1 MiB regions (8 MiB for
 * 8 XCCs) lost 7.4 % of the samples, 4 MiB regions 0.2 %.
 */
#define FEEDER_DEFAULT_PER_XCC (4u << 20)
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

/*
 * The spill queue between the feeder and its consumer (collector/lib/spill.c):
 * retired buffers the consumer has not taken stay in memory up to mem_budget
 * bytes (whole buffers), then the oldest of them go to the journal, a raw
 * container (docs/raw-format.md) that `spmtap decode` reads, and come back
 * from it in order.  Records the consumer has taken become RAWFILE_SKIP, so
 * the journal holds what is still to decode; it is removed once the consumer
 * has everything, unless `keep`.
 */
struct feeder_spill {
	uint64_t mem_budget;        /* bytes held in memory: whole retired buffers, or packed copies (spill.c) */
	const char *journal;        /* path; NULL: memory only (over budget: overrun, as without) */
	struct rawfile_header hdr;  /* the journal's file header */
	const char *meta_json;      /* its first record (the layout, for `spmtap decode`) */
	bool keep;                  /* --keep-raw: the journal stays, every record in it */
	bool skip_seq0;             /* buffer 0 is the pre-program one the consumer drops: not journalled */
	bool buffered;              /* the journal through the page cache, not O_DIRECT (spill.c) */
};

struct feeder_opts {
	uint32_t nbuffers;    /* 0: FEEDER_DEFAULT_BUFFERS */
	uint64_t buffer_size; /* 0: feeder_default_size(); rounded by feeder_round_size() */
	const struct feeder_spill *spill; /* NULL: no spill queue (the consumer takes from the feeder) */
};

struct feeder_stats {
	uint64_t polls;          /* wake-ups of the poll loop */
	uint64_t rotations;      /* SET_DEST_BUF calls that armed a buffer */
	uint64_t retired;        /* buffers handed to the consumer */
	uint64_t overrun_polls;  /* polls that found no free buffer */
	uint64_t self_grown;     /* buffers the feeder added itself (the journal thread ran late) */
	uint64_t loss_buffers;   /* retired buffers with any part flagged loss */
	uint64_t bad_buffers;    /* retired buffers with an untrusted part */
	uint64_t bytes;          /* data bytes retired */
	uint32_t drain_calls;    /* rotations during the stop drain */
	bool drain_capped;       /* the drain gave up before a call returned 0 bytes */
	bool stalled;            /* SPMTAP_FEEDER_STALL fired */
	uint32_t period_us;      /* last poll period */
	/* The kernel holds the data between two retirements: the longest such
	 * gap, and the longest SET_DEST_BUF call (the driver's share of it). */
	uint64_t gap_max_ns, rotate_max_ns;
	uint64_t cpu_ns;         /* CPU time of the feeder thread (includes the kernel's copy) */
	int error;               /* first error of the thread, 0 if none */
	char errmsg[SPM_ERRLEN];
	/* The spill queue (all 0 without one). */
	uint64_t journal_cpu_ns; /* CPU time of the journal thread, 0 when none ran (cost.h) */
	uint64_t spilled_bytes;  /* data bytes that waited for the consumer (memory or journal) */
	uint64_t journal_bytes;  /* data bytes written to the journal */
	uint64_t spill_mem_peak; /* most bytes of buffers held in memory for the consumer */
	uint32_t spill_buffers;  /* buffers the pool grew to */
	uint64_t spill_cooled;   /* times a free buffer's pages were given back (spill.c, cold buffers) */
	uint64_t spill_packed;   /* retired buffers that waited as packed copies of their data (spill.c) */
	bool spill_pool_full;    /* the pool reached its budget (memory full) */
	uint64_t abandoned_bytes; /* data bytes neither decoded nor in the journal after feeder_abandon */
	uint64_t journal_left_bytes; /* data bytes left in the journal for `spmtap decode` */
	/* Journalled buffers that could not be read back (I/O error, a corrupt
	 * record): each told every stream of loss, so each XCC's loss-flag count
	 * includes them once per buffer, though the kernel flagged nothing. */
	uint64_t journal_read_failed;
	uint64_t journal_read_lost_bytes; /* their data bytes */
	int journal_error;       /* the journal's first write error (then: no more spilling) */
	char journal_errmsg[SPM_ERRLEN];
	bool journal_kept;       /* the journal file is left for `spmtap decode` (keep or abandon) */
	/* How the journal was written: "direct" (O_DIRECT), "page cache: <why>", "" when none was made. */
	char journal_io[SPILL_IO_LEN];
	bool abandoned;          /* feeder_abandon was called with data left */
};

/* What the consumer still has to take (feeder_backlog). */
struct feeder_backlog {
	uint64_t queued_bytes;   /* data bytes waiting: in memory and in the journal */
	uint64_t journal_bytes;  /* of them, in the journal */
	uint64_t taken_bytes;    /* data bytes the consumer has taken so far */
	bool done;               /* the feeder has stopped and the consumer has taken everything */
};

struct feeder;

/*
 * Round a requested buffer size to what the feeder will use: a multiple of
 * 32 * num_xcc (whole regions of whole lines), at least FEEDER_MIN_SIZE and
 * 64 * num_xcc, at most the u32 the ioctl takes.  A note for the user goes
 * into `note` when the value changed ("" otherwise).
 */
uint32_t feeder_round_size(uint64_t want, uint32_t num_xcc, char *note, size_t len);
/* The default buffer size for num_xcc regions: FEEDER_DEFAULT_PER_XCC each, at least FEEDER_DEFAULT_SIZE. */
uint64_t feeder_default_size(uint32_t num_xcc);

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
/* Any thread: the spill queue's state (all 0 and done = false without one). */
void feeder_backlog(struct feeder *f, struct feeder_backlog *b);
/*
 * Stop handing buffers to the consumer: feeder_next returns -ENODATA from
 * now on, and every retired buffer not taken goes, in order, into the
 * journal, which is kept (the second Ctrl-C of a catch-up).  No-op without
 * a spill queue.
 */
void feeder_abandon(struct feeder *f);
/* Wait for the thread, copy its statistics and free everything. */
int feeder_finish(struct feeder *f, struct feeder_stats *st);

#endif
