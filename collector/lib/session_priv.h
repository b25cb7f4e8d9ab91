/* SPDX-License-Identifier: MIT */
/*
 * Inside a session (session.h): its state and what its files share.  Not
 * installed; only collector/lib/session*.c include it.
 */
#ifndef SPMTAP_COLLECTOR_SESSION_PRIV_H
#define SPMTAP_COLLECTOR_SESSION_PRIV_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "collector/lib/cost.h"
#include "collector/lib/decode_thread.h"
#include "collector/lib/prime.h"
#include "collector/lib/session.h"
#include "collector/lib/smi_sampler.h"
#include "collector/lib/spsc.h"
#include "collector/lib/write_raw.h"
#include "spm/pm4.h"

/* The writer queue buffers 256 Ki SPM samples: its depth follows the decode thread's chunk size. */
_Static_assert(SESSION_QUEUE_DEFAULT * DTHR_CHUNK_SAMPLES == 256u * 1024u,
	       "SESSION_QUEUE_DEFAULT and DTHR_CHUNK_SAMPLES change together");

#define SES_ERRLEN (SPM_ERRLEN + 256)

/* A chunk (or a phase) on its way to the writer thread. */
struct ses_item {
	struct series_chunk c;
	struct series_slice *slice; /* a phase instead of a chunk (c unused) */
	const void *vals[];      /* [ncols] values, then [ncols] missing; data follows */
};

struct sgpu {
	struct session *S;
	const struct spm_device *dev;
	char devname[96];
	struct spm_plan *plan;
	char *layout_text;
	struct dec_layout *layout;
	struct spm_pm4 start, stop;
	bool pm4_init;
	const struct spm_submitter_ops *sops;
	struct spm_submitter *sub;
	char sub_note[SPM_ERRLEN];      /* why a preferred submitter was passed over */
	struct spm_stream *st;
	struct prime prime;
	struct feeder *f;
	struct dthr *dt;
	enum spm_gen gen;
	uint32_t nstreams, size;        /* XCC streams of the stream's shape; buffer size */
	uint32_t nseries;               /* SPM series declared to the writers: nstreams with counters, else 0 */
	char size_note[256];            /* the buffer size was adjusted, and why ("" if not) */
	struct series_stream streams[DEC_MAX_XCC];
	struct series_column *cols;
	/* the timebase: pairs added by the clock thread, mapped by the decode thread */
	struct timebase *tb;
	pthread_mutex_t tb_lock;
	bool stall_done;
	/*
	 * Per XCC stream, SPM samples decoded after the recording's end (left
	 * out of the outputs) and the gap samples counted before them (lost
	 * after the last written sample, so not in the recording's window);
	 * lost_prev: the decoder's lost count at the previous chunk.
	 */
	atomic_uint_least64_t after_end[DEC_MAX_XCC], after_end_gap[DEC_MAX_XCC];
	/*
	 * Per XCC stream, the host time of the last sample decoded (0: none yet)
	 * and the sample period on the host clock in ps (0: not measured yet):
	 * what splits a gap that spans the end, and counts the samples missing
	 * between a stream's last sample and an end it never reached.
	 */
	_Atomic int64_t last_host[DEC_MAX_XCC], period_ps[DEC_MAX_XCC];
	/* [xcc * ncols + col]: saturated cells of samples after the end, left out with them */
	atomic_uint_least64_t *after_end_sat;
	uint64_t lost_prev[DEC_MAX_XCC];
	atomic_uint_least64_t smi_after_end; /* sensor readings after the end, left out */
	/* sensors */
	struct smi_probe probe;
	bool probed;
	struct smi_sampler *smi;
	char smi_note[200];
	/* the spill queue: the journal's path ("" without one) and its first record */
	struct feeder_spill spill;
	char journal[4096];
	char *journal_meta;
	/* after stop */
	struct feeder_stats fs;
	bool have_fs, started;
};

struct session {
	struct session_opts o;
	const struct spm_backend_ops *bops;
	struct spm_backend *b;
	struct sgpu g[SESSION_MAX_GPUS];
	size_t ng;
	struct writer *w[SESSION_MAX_WRITERS];
	const struct writer_ops *wops[SESSION_MAX_WRITERS];
	char *paths[SESSION_MAX_WRITERS + 1];
	size_t nw;
	struct spsc q;          /* the one bounded queue to the writer thread */
	struct raw_writer *raw;   /* o.raw_path: fed by GPU 0's decode thread, before decoding */
	const char *stop_reason;
	int64_t stop_mono;        /* when session_stop began */
	pthread_t writer_thr, clock_thr;
	bool writer_running, clock_running, started, stopped;
	pthread_mutex_t lock;     /* err, clock stop */
	pthread_cond_t clock_cv;
	bool clock_stop;
	char err[SES_ERRLEN];
	int error;
	atomic_bool failed;
	atomic_uint_least64_t samples, smi_samples, chunks, phases;
	/* the marker channel (o.markers) and its thread */
	struct mk_reader *mk;
	int mk_fd;
	pthread_t mk_thr;
	bool mk_running;
	atomic_bool mk_stop;
	/* the kernel dispatch channel (o.kernels) and its thread: session_kernels.c */
	struct kd_reader *kd;
	int kd_fd;
	pthread_t kd_thr;
	bool kd_running;
	atomic_bool kd_stop;
	struct series_dispatch *kdisp; /* mapped at the stop (ses_kernels_finish) */
	size_t nkdisp;
	int64_t t0_mono;
	/*
	 * The recording's window, CLOCK_BOOTTIME ns: from when the outputs open
	 * (their start_boottime_ns) to the end (session_set_end, or session_stop's
	 * start); INT64_MAX while the end is not known.  The sinks leave out every
	 * row after the end (session.h).
	 */
	int64_t start_boot;
	_Atomic int64_t end_boot;
	int64_t decode_stall_at, decode_stall_dur, writer_stall_at, writer_stall_dur;
	double spm_hz;
	uint32_t next_stream_id;
	/*
	 * The recording's files (outset.h): written as .part, renamed together
	 * when the run ends.  meta_path: DIR/NAME_meta.json with -f formats.
	 * rows[i]: rows of stream mst[i] (extra.streams order) the writers have
	 * taken, the writer thread's (read after it is joined); rows_flushed[i]:
	 * of those, the ones every writer had flushed at the last flush that
	 * succeeded (ses_meta_update), so in the files whatever failed later.
	 */
	struct out_set *files;
	char *meta_path;
	const char **outs;        /* session_outputs(): the committed files */
	const char **gone;        /* session_replaced(): an earlier run's files removed with its set */
	const struct series_stream *mst[SESSION_MAX_GPUS * (DEC_MAX_XCC + 1)];
	uint64_t rows[SESSION_MAX_GPUS * (DEC_MAX_XCC + 1)];
	uint64_t rows_flushed[SESSION_MAX_GPUS * (DEC_MAX_XCC + 1)];
	bool writer_failed; /* a write, slice, note or flush failed: rows_flushed stays as it was */
	size_t nmst, last_mst;
	int64_t start_boot_ns;
	char host[256];
	bool start_ok, committed;
	bool abandoned;           /* the catch-up was abandoned: the outputs say "complete": false */
	int64_t meta_mono;        /* when the metadata was last rewritten (CLOCK_MONOTONIC) */
	/*
	 * The metadata's "job" object (session_set_job), JSON text, under lock:
	 * the job layer replaces it after every clock sync while the writer
	 * thread rewrites the metadata.
	 */
	char *job_json;
	/*
	 * CPU per stage (cost.h): wcpu_ns[k], writer k's calls (their thread's
	 * clock, whichever thread calls); the clock and marker threads' own, set
	 * when they end; cost, the metadata's "cost", once after the run.
	 */
	uint64_t wcpu_ns[SESSION_MAX_WRITERS];
	uint64_t clock_cpu_ns, mk_cpu_ns;
	struct cost cost;
	struct ses_cray *cray;    /* o.cray: the Cray EX node power thread (session_cray.c) */
};

/* The metadata and the files are brought up to date at least this often (docs/formats/csv.md). */
#define SES_META_PERIOD_MS 500

int64_t ses_now_ns(clockid_t c);
void ses_sleep_ms(int64_t ms);
/* The first error wins; later ones are logged only. */
void ses_set_error(struct session *S, int rc, const char *msg);

/* session_gpu.c */
int ses_gpu_prepare(struct session *S, struct sgpu *g, char *err, size_t errlen);
int ses_gpu_smi(struct session *S, struct sgpu *g);
void ses_gpu_free(struct sgpu *g);

/* session_sinks.c: producers onto the queue (blocking while it is full) */
struct ses_item *ses_item_slice(const struct series_slice *ph);
void ses_push(struct session *S, struct ses_item *it);
int ses_spm_sink(void *user, const struct dec_chunk *c);
void ses_smi_sink(const struct series_chunk *c, void *arg);

/* session_threads.c */
void *ses_writer_main(void *arg);
void *ses_clock_main(void *arg);
void *ses_marker_main(void *arg);
int ses_kernels_open(struct session *S, char *err, size_t errlen);
void *ses_kernels_main(void *arg);
int ses_kernels_finish(struct session *S, char *err, size_t errlen);
int ses_kernels_to_writers(struct session *S, char *err, size_t errlen);
json_t *ses_kernels_json(const struct session *S);
struct mk_region;
int ses_marker_emit(const struct mk_region *r, void *user);
void ses_add_pair(struct session *S, struct sgpu *g);

/* session_cray.c: Cray EX node power (o.cray) */
struct ses_cray;
int ses_cray_open(struct session *S, char *err, size_t errlen);
int ses_cray_start(struct session *S, char *err, size_t errlen);
void ses_cray_stop(struct session *S);
json_t *ses_cray_json(const struct session *S); /* the metadata's "cray_pm"; NULL without */
void ses_cray_free(struct session *S);

/* session_meta.c */
int ses_open_writers(struct session *S, char *err, size_t errlen);
/* The raw container for g, its metadata first (o.raw_path). */
int ses_open_raw(struct session *S, struct sgpu *g, char *err, size_t errlen);
/* Its end record: what was recorded and lost, per XCC. */
json_t *ses_raw_end_json(struct session *S);
json_t *ses_timebase_json(struct session *S);
/* The metadata's "extra": devices, streams (with their rows so far), counters, formats, options. */
json_t *ses_extra_json(struct session *S);
/*
 * The recording's metadata, NAME_meta.json's object, brought up to date:
 * every writer flushed, then the object rewritten into NAME_meta.json(.part)
 * and handed to every writer's meta op.  final: after the run (the whole
 * accounting, timebase and markers; "complete" unless the session failed).
 * Only the thread that owns the writers calls it.  0 or -errno.
 */
int ses_meta_update(struct session *S, bool final, char *err, size_t errlen);
/* The end of the outputs: commit the file set (a started run) or discard it. */
int ses_outputs_finish(struct session *S, char *err, size_t errlen);
/* The stream's index in extra.streams (rows[]), or -1. */
int ses_stream_index(struct session *S, const struct series_stream *s);
json_t *ses_accounting_json(struct session *S);
/* The raw container's first record for GPU g (session_meta.c); the journal's too. */
json_t *ses_raw_meta(struct session *S, struct sgpu *g);
/* accounting[g].spill (session_spill.c) */
json_t *ses_spill_json(struct session *S, size_t i);
/* Set up GPU g's spill queue before its feeder starts (session_spill.c); NULL: none. */
const struct feeder_spill *ses_spill_opts(struct session *S, struct sgpu *g);
/* Wait for the decoders to catch up from the spill queues, or abandon (session_spill.c). */
void ses_catch_up(struct session *S);
/* After the feeders finished: an abandoned catch-up that left nothing is no abandon. */
void ses_spill_settle(struct session *S);
/*
 * The cost per stage (cost.h), gathered and the memcpy reference timed the
 * first time it is called, after every thread has ended; the same after.
 */
const struct cost *ses_cost(struct session *S);

#endif
