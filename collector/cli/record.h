/* SPDX-License-Identifier: MIT */
/*
 * `spmtap record`: the options (cmd-record.c), the stop signals
 * (record-common.c), the run (record-session.c: every mode is a session with
 * writers) and the end-of-stream summary (record-summary.c).
 */
#ifndef SPMTAP_CLI_RECORD_H
#define SPMTAP_CLI_RECORD_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "collector/cli/cli.h"
#include "collector/lib/feeder.h"
#include "collector/lib/session.h"

#define REC_MAX_COUNTERS 256

/*
 * The default sample interval of `record --spm`, in SCLK cycles: lossless
 * on the emulated MI300X on a 2-core machine with twice the headroom
 * (docs/cli/spmtap-record.md has the measurements and why it is not
 * aqlprofile's 8192).
 */
#define REC_INTERVAL_DEFAULT 32768u

struct rec_opts;

/*
 * A recording made as one rank of a job (`spmtap record --job DIR`, run by
 * build/spmtap-job, collector/job/): the MPI layer's hooks into the one
 * record path, so that a job rank records exactly as `spmtap record` does.
 * record_session calls, in this order:
 *   started(ok)   once: after session_start (ok) or after anything failed
 *                 before it (!ok, S may be NULL), so that every rank meets
 *                 the others; returns false when the job is not to run
 *                 (another rank failed): the recording then stops at once;
 *   poll          every loop tick (~20 ms): the end of the recording as a
 *                 local CLOCK_BOOTTIME instant, INT64_MAX while none; a
 *                 local SIGINT/SIGTERM ends the loop without it (the
 *                 launcher is about to kill the rank: no collective then);
 *   ending        after the end, before session_stop: the last clock sync,
 *                 the final "job" metadata (session_set_job);
 *   done          after session_stop: the summaries gathered (rank 0 prints).
 * The job's own --duration is rank 0's: o->duration is not used locally.
 */
struct rec_job {
	bool (*started)(void *user, struct session *S, const struct rec_opts *o, bool ok);
	int64_t (*poll)(void *user, struct session *S);
	void (*ending)(void *user, struct session *S, bool aborted);
	void (*done)(void *user, struct session *S, int status);
	void *user;
};

struct rec_opts {
	const char *out;
	double duration;
	const char *device;
	const char *backend;
	const char *submitter;               /* --submitter: rocr, hsakmt (default: the first that works) */
	enum spm_gen gen;
	uint32_t nbuffers;
	uint64_t buffer_size;
	bool raw;
	bool size_given;
	uint64_t spill_mem;                  /* --spill-mem (0: the default, rec_spill_default()) */
	bool keep_raw;                       /* --keep-raw: keep the journal */
	bool no_kernels;                     /* --no-kernels: no libspmtap-tool.so in the app */
	/* --spm */
	char *spm_names;                     /* strdup'd --spm arguments, joined */
	const char *counters[REC_MAX_COUNTERS];
	size_t ncounters;
	uint32_t interval;                   /* 0: REC_INTERVAL_DEFAULT */
	bool per_se, per_instance;
	/* the session path (record-session.c) */
	const char *dir;                     /* -d DIR */
	const char *formats;                 /* -f csv,perfetto,sqlite */
	const char *smi;                     /* --smi power,energy,... */
	uint64_t smi_interval_ns;
	const char *smi_offset;
	bool cray;                           /* --cray: /sys/cray/pm_counters (docs/power.md) */
	uint64_t cray_interval_ns;           /* --cray-interval; 0: 50 ms */
	const char *cray_accel_map;          /* --cray-accel-map accel0=gpu1,... */
	double spm_clock_hz;
	char **app;                          /* -- app args */
	const char *phases[4];               /* --phases FILE|emulator (repeatable) */
	size_t nphases;
	int argc;
	char **argv;
	/* --job DIR: one rank of a job (docs/howto-job.md); job: the hooks, set by spmtap-job */
	const char *job_dir;
	double sync_interval;                /* --sync-interval, seconds (0: the default, 10 s) */
	const struct rec_job *job;
};

/*
 * The stop signal, 0 until one arrives.  Atomic, not volatile sig_atomic_t:
 * the handler runs on whichever thread the kernel picks, often one that
 * libhsa-runtime started without our signal mask, while the main thread
 * polls it; volatile orders nothing between threads (TSan reports it).
 */
extern _Atomic int rec_stop_signal;
/* Stop signals so far: one more during the catch-up after the stop abandons it. */
extern _Atomic int rec_signal_count;
/* Handlers for SIGINT/SIGTERM (and, with job, SIGUSR1/SIGUSR2: the job's stop); threads started between block/unblock never take them. */
void rec_signals_install(bool job);
void rec_signals_block(sigset_t *old);
void rec_signals_restore(const sigset_t *old);

uint64_t rec_now_ns(clockid_t c);
/*
 * The end of one GPU's stream written as a tick CSV or a raw container (record-summary.c).  cut: the
 * session failed (a write error, say), so the outputs end before the stream does.
 */
void rec_summary_stream(struct session *S, const struct rec_opts *o, double secs, bool cut);
/* -f outputs: GPU i's loss verdict, saturated counters and missed sensor deadlines (record-summary.c). */
void rec_summary_gpu(struct session *S, size_t i, double secs, bool cut);
/* The cost line: the recorder's CPU per GB of SPM bytes, per stage, and memcpy's (cost.h). */
void rec_summary_cost(struct session *S);

/* Every mode of `spmtap record` is a session with writers (collector/lib/session.h). */
int record_session(const struct rec_opts *o);
/*
 * `spmtap record` with argv as typed; job: NULL in spmtap, where --job execs
 * spmtap-job beside the executable; the hooks in spmtap-job.
 */
int cmd_record_job(int argc, char **argv, const struct rec_job *job);

#endif
