/* SPDX-License-Identifier: MIT */
/*
 * A recording session: several GPUs, each with its feeder -> decode thread
 * (feeder.h, decode_thread.h), its timebase (timebase.h) and optional sensor
 * sampler (smi_sampler.h); all of them feed ONE writer thread through one
 * bounded queue, which fans every chunk out to the chosen writers (writer.h)
 * and to an optional callback.  docs/architecture.md "Session" states the
 * back-pressure policy; in short:
 *   writer behind  -> producers (decode threads, samplers) block on the queue;
 *   decoder behind -> the feeder keeps the armed buffer, the kernel flags loss;
 * so every byte is decoded or counted lost, by reason (struct session_xcc).
 *
 * Threads: feeder + decode thread per GPU, sampler per GPU (with --smi), one
 * clock thread (timebase pairs every ~100 ms for every GPU), one writer thread.
 *
 * Fault injection for tests: SPMTAP_DECODE_STALL=AT:DUR and
 * SPMTAP_WRITER_STALL=AT:DUR (milliseconds since start): the decode sink of
 * every GPU, or the writer thread, sleeps DUR once, AT after start.
 */
#ifndef SPMTAP_COLLECTOR_SESSION_H
#define SPMTAP_COLLECTOR_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/lib/feeder.h"
#include "collector/lib/power_dedt.h"
#include "collector/lib/series.h"
#include "collector/lib/writer.h"
#include "spm/spm.h"

#define SESSION_MAX_GPUS 16u
#define SESSION_MAX_WRITERS 4u
#define SESSION_QUEUE_DEFAULT 256u  /* chunks between the producers and the writer thread (DTHR_CHUNK_SAMPLES each) */
#define SESSION_CLOCK_PERIOD_MS 100u

/* The catch-up after a stop (session_opts.on_catchup). */
struct session_catchup {
	double seconds;          /* since the catch-up began */
	uint64_t decoded_bytes;  /* SPM bytes taken by the decoders since then */
	uint64_t left_bytes;     /* still waiting, all GPUs */
	uint64_t journal_bytes;  /* of them in the journal */
};

struct session_opts {
	const struct spm_device *devs;  /* every discovered device (the backend opens them all) */
	size_t ndev;
	const uint32_t *gpus;           /* indices into devs of the GPUs to record */
	size_t ngpus;
	const struct spm_backend_ops *backend; /* NULL: the first usable */
	const char *submitter;          /* PM4 submitter by name (spm/submit.h); NULL: the first that works */
	const char *const *counters;    /* names; NULL/0: no SPM (sensors only) */
	size_t ncounters;
	uint32_t interval;              /* SCLK cycles; 0: 32768 */
	bool per_se, per_instance;
	enum spm_gen gen;
	uint32_t nbuffers;              /* 0: FEEDER_DEFAULT_BUFFERS */
	uint64_t buffer_size;           /* 0: feeder_default_size(the GPU's XCCs) */
	double spm_clock_hz;            /* 0: 100 MHz (the GPU reference clock) */
	uint32_t smi_metrics;           /* SMI_M_BIT() set; 0: no sensors */
	uint64_t smi_interval_ns;       /* 0: 1 ms */
	const struct smi_offsets *smi_offsets;
	const char *dir, *name;         /* outputs: DIR/NAME + ext; dir NULL: "." */
	const struct writer_ops *const *formats;
	size_t nformats;
	const char *command_line;       /* for the metadata */
	/*
	 * Outputs of one GPU's stream (ngpus 1), beside or instead of formats:
	 * the raw container (docs/raw-format.md), fed every framed region before
	 * it is decoded; without counters nothing is decoded and only bytes and
	 * kernel flags are accounted.  The tick-only CSV (writer_csv_ticks), "-"
	 * for standard output.
	 */
	const char *raw_path;
	const char *ticks_csv;
	const char *device_spec;        /* for the raw container's metadata: --device as given */
	double duration_s;              /* and --duration (0: none) */
	uint32_t queue_chunks;          /* 0: SESSION_QUEUE_DEFAULT */
	/* Every chunk, on the writer thread, after the writers; nonzero return fails the session. */
	int (*on_chunk)(const struct series_chunk *c, void *user);
	void *user;
	/* Every stream, before start (on the caller's thread). */
	void (*on_stream)(const struct series_stream *s, void *user);
	/*
	 * The spill queue (feeder.h; docs/architecture.md "Back-pressure
	 * policy"): spill_mem > 0 lets retired buffers the decoder has not taken
	 * wait in memory, spill_mem bytes over all GPUs, and then in the journal
	 * journal_base + "_journal.raw" (one GPU; with several,
	 * journal_base + "_gpuI_journal.raw"), which session_stop waits to
	 * catch up from.  journal_base NULL: memory only.  spill_mem 0: no
	 * spill queue (a decoder behind makes the kernel flag loss).  keep_raw:
	 * the journal is kept after the catch-up.
	 */
	uint64_t spill_mem;
	const char *journal_base;
	bool keep_raw;
	/*
	 * Called by session_stop about every 200 ms while the decoders catch up
	 * from the spill queue; returning true abandons the catch-up: the rest
	 * stays in the journal, the outputs end now, marked incomplete.
	 */
	bool (*on_catchup)(const struct session_catchup *c, void *user);
	/*
	 * Open the marker channel (docs/markers.md): an application started with
	 * session_markers_fd() in SPMTAP_MARKERS_FD has its spmtap_region_begin/end
	 * regions written as phases into every output.
	 */
	bool markers;
	/*
	 * Open the kernel dispatch channel (docs/architecture.md "Kernels"): an
	 * application started with session_kernels_fd() in SPMTAP_KERNELS_FD and
	 * libspmtap-tool.so in HSA_TOOLS_LIB has its dispatches received; at the
	 * stop they are written to kernels_csv (docs/formats/kernels-csv.md)
	 * when it is set, and counted in the metadata's "kernels".
	 */
	bool kernels;
	const char *kernels_csv;
	/*
	 * HPE Cray EX node power (smi_cray_pm.h, docs/power.md): poll
	 * /sys/cray/pm_counters every cray_interval_ns (0: 50 ms) into
	 * DIR/NAME_craypm.csv; cray_accel_map[CRAY_PM_MAX_ACCEL] (NULL: none)
	 * pairs accelN with a GPU index (-1: unmapped), for the metadata.
	 */
	bool cray;
	uint64_t cray_interval_ns;
	const int32_t *cray_accel_map;
};

/* Per XCC stream: every byte retired is one of these (docs/architecture.md). */
struct session_xcc {
	uint64_t bytes;            /* retired by the kernel into feeder buffers (after seq 0) */
	uint64_t samples;          /* decoded and written */
	uint64_t sample_bytes;     /* samples * sample size */
	uint64_t gap_samples;      /* lost in the window, from timestamps (samples never in any
				    * buffer): the gaps' samples due before the end, and end_lost */
	uint64_t end_lost;         /* of gap_samples: due between the stream's last sample and
				    * the end (no later sample shows that gap; window_loss.h) */
	uint64_t after_end_gap;    /* gap samples due after the end: not the window's, not loss */
	uint64_t loss_flags;       /* parts the kernel flagged (loss or untrusted framing) */
	uint64_t resync_bytes;     /* dropped: partial samples cut by loss, resync skips */
	uint64_t prestart_bytes;   /* before the first sample boundary: not loss */
	uint64_t trailing_bytes;   /* a partial sample at the end */
	uint64_t gaps;             /* timestamp gaps the lost samples were counted in */
	uint64_t resyncs;          /* alignment searches after the start's */
	uint64_t after_end;        /* decoded after the recording's end (the counters run until the stop
				    * program executes): left out of the outputs, not loss, not in
				    * samples; bytes = (samples + after_end) * sample size + resync +
				    * prestart + trailing.  gap_samples counts the window's gaps only */
	uint64_t regions;          /* parts retired (every buffer has one per XCC stream) */
};

struct session_gpu_stats {
	uint32_t gpu;              /* spmtap index */
	uint32_t nxcc;
	struct session_xcc xcc[16];
	uint64_t first_buffer_bytes; /* feeder seq 0: pre-program bytes, dropped by design */
	uint64_t overrun_polls;
	uint64_t polls, loss_buffers, bad_buffers;
	uint64_t poll_gap_max_ns, rotate_max_ns; /* feeder_stats gap_max_ns, rotate_max_ns */
	uint64_t buffers;          /* retired by the feeder (the first, pre-program one included) */
	uint32_t drain_calls;
	bool drain_capped;
	uint32_t ncols;            /* decoded columns; 0 without counters */
	uint32_t sample_size;      /* bytes of one sample; 0 without counters */
	/* SPM rows every -f writer took (the metadata's extra.streams[].rows, summed): the samples, unless
	 * an output failed and the rest stayed out of the files; rows_known: there are -f writers */
	uint64_t rows_written;
	bool rows_known;
	uint64_t smi_samples, smi_missed; /* sensor rows written; deadlines missed */
	uint64_t smi_missed_late;         /* of those, passed before the sampler woke (scheduling) */
	int64_t smi_max_late_ns, smi_max_read_ns; /* worst wake-up after a deadline; worst sample */
	uint64_t smi_after_end;           /* sensor readings after the recording's end, left out */
	uint64_t sink_wait_ns;     /* decode thread blocked on the output queue (the writer behind) */
	uint32_t interval;         /* SCLK cycles per sample; 0 without counters */
	const struct spm_plan *plan; /* the counters' plan (catalog entries, widths); NULL without */
	uint32_t tb_pairs, tb_rejected; /* pairs used, pairs rejected as disturbed */
	double tb_rms_ns, tb_max_ns, tb_ppm;
	double tb_bound_ns;             /* worst-case mapping error (timebase.h), not the fit's residual */
	/* The spill queue (after session_stop; feeder_stats) */
	bool spill;                     /* there was one */
	uint64_t spilled_bytes, spill_mem_peak, journal_bytes, journal_cpu_ns;
	uint64_t spill_cooled; /* free buffers whose pages were given back after a backlog */
	uint64_t spill_packed; /* retired buffers that waited as packed copies of their data */
	uint64_t abandoned_bytes;       /* neither decoded nor in the journal */
	uint64_t journal_left_bytes;    /* left in the journal by an abandoned catch-up */
	uint64_t journal_read_failed;   /* journalled buffers not read back: lost (feeder_stats) */
	uint64_t journal_read_lost_bytes;
	/* Why the host lost SPM data despite it: "" none, "memory full and the journal behind", "journal write failed: ..." */
	char loss_reason[SPM_ERRLEN + 32];
	char journal[4096];             /* the journal's path when the run left one, else "" */
	char journal_io[SPILL_IO_LEN];  /* "direct", "page cache: <why>", "" when no journal was made */
};

struct session_progress {
	double seconds;
	uint64_t bytes, samples, lost_samples, smi_samples, chunks_written;
	uint32_t queue_depth;
};

struct session;
struct spm_plan;

int session_open(struct session **out, const struct session_opts *o, char *err, size_t errlen);
int session_start(struct session *s, char *err, size_t errlen);
/* Cheap, any thread. */
void session_progress(struct session *s, struct session_progress *p);
/*
 * A phase into every output (any thread, between start and the end of
 * stop): a phases file's rows, the emulator's schedule.  0 or -errno.
 */
int session_add_phase(struct session *s, const struct series_slice *ph);
/* The marker channel's descriptor for the application's SPMTAP_MARKERS_FD, or -1 without --markers. */
int session_markers_fd(const struct session *s);
/* The kernel dispatch channel's descriptor for the application (o.kernels), else -1. */
int session_kernels_fd(const struct session *s);
/* Dispatches received and dropped (channel full, no slot, untimed); -ENOENT without the channel. */
/* The dispatches mapped at the stop (series.h), valid until session_free; NULL/0 before or without kernels. */
const struct series_dispatch *session_kernels(const struct session *s, size_t *n);
int session_kernels_counts(const struct session *s, uint64_t *received, uint64_t *dropped);
struct mk_stats;
/* What the marker channel saw; -ENOENT without it.  Complete after session_stop. */
int session_marker_stats(const struct session *s, struct mk_stats *st);
/* A writer or a decoder failed (the session keeps draining; stop it). */
bool session_failed(struct session *s);
/* Why the recording ends (e.g. a signal's name), for the raw container's end record; a static string. */
void session_set_stop_reason(struct session *s, const char *why);
/*
 * The metadata's top-level "job" object (a recording made as one rank of a
 * job: docs/howto-job.md, docs/formats/meta-job.md): json_text, a JSON
 * object, copied; it replaces the previous one and is in every metadata
 * rewrite from now on, the final one included (NAME_meta.json and SQLite's
 * recording_meta).  Any thread.  0, -EINVAL (not an object) or -ENOMEM.
 */
int session_set_job(struct session *s, const char *json_text);
/* GPU i's layout descriptor (spmtap-layout JSON), NULL without counters. */
const char *session_layout(const struct session *s, size_t i);
/* GPU i's note when its buffer size was adjusted, or "". */
const char *session_size_note(const struct session *s, size_t i);
/*
 * The recording's window on CLOCK_BOOTTIME (docs/cli/spmtap-record.md "When a
 * recording stops"): it starts when the outputs open (their
 * start_boottime_ns) and ends at the earliest time given to session_set_end
 * (any thread, any time: a --duration's end before it comes, a signal's
 * arrival), or else when session_stop begins.  No SPM or sensor row after
 * the end reaches an output: the counters keep running until the stop
 * program executes, and those samples are counted (session_xcc.after_end)
 * and left out, so the data ends at the stop however long the stop takes.
 * session_end_boottime: the end, or INT64_MAX while it is not known.
 */
int64_t session_start_boottime(const struct session *s);
void session_set_end(struct session *s, int64_t boottime_ns);
int64_t session_end_boottime(const struct session *s);
/*
 * Stop counters, drain, catch up from the spill queue (session_opts.on_catchup),
 * write the end metadata, close outputs.  0 or the first error.
 */
int session_stop(struct session *s, char *err, size_t errlen);
/* The catch-up was abandoned (session_opts.on_catchup): the outputs are incomplete. */
bool session_abandoned(const struct session *s);
size_t session_ngpus(const struct session *s);
int session_gpu_stats(const struct session *s, size_t i, struct session_gpu_stats *st);
/*
 * GPU i's output column col: its name (NULL past the last column), and in
 * *saturated the cells of XCC xcc that were saturated (written empty).
 */
const char *session_gpu_column(const struct session *s, size_t i, uint32_t col, uint32_t xcc,
			       uint64_t *saturated);
/*
 * For a saturated 16-bit counter of GPU i without a catalog peak: the
 * interval its observed values say would have avoided it (decode_thread.h,
 * dthr_saturation_interval); 0 when unknown.  After session_stop.
 */
uint32_t session_gpu_saturation_interval(const struct session *s, size_t i, const char *counter);
/* GPU i's timebase (timebase.h), for tests and the public API; valid until session_close. */
struct timebase;
const struct timebase *session_timebase(const struct session *s, size_t i);
/*
 * After session_stop: the files of the run under their final names
 * ("DIR/NAME.db", "DIR/NAME_meta.json", ...), NULL-terminated; empty before,
 * or when the run never started (its .part files were removed).
 */
const char *const *session_outputs(const struct session *s);
/*
 * After session_stop: the files of an earlier run under the same NAME that
 * were removed with its set (another -f), NULL-terminated (docs/formats/csv.md).
 */
const char *const *session_replaced(const struct session *s);
void session_close(struct session *s);

/*
 * Option parsing shared by the CLI and the public API: --smi groups or
 * metric names -> SMI_M_BIT mask; -f formats -> writer ops (duplicates
 * dropped).  0, or -errno with a sentence in err.
 */
int session_parse_smi(const char *spec, uint32_t *mask, char *err, size_t errlen);
/* The output directory and its missing parents (mkdir -p), 0755; 0 or -errno with "DIR: reason". */
int session_make_dir(const char *dir, char *err, size_t errlen);
int session_parse_formats(const char *spec, const struct writer_ops **out, size_t *n, char *err,
			  size_t errlen);

/*
 * One sentence on the Cray EX node power (--cray) for the summary: snapshots,
 * missed, torn reads retried, failed polls, the accel map.  False without
 * --cray.
 */
bool session_cray_summary(struct session *S, char *buf, size_t len);

#endif
