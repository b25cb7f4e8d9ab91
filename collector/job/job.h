/* SPDX-License-Identifier: MIT */
/*
 * spmtap-job: `spmtap record --job DIR` as one rank of an MPI job, one rank
 * per node (docs/howto-job.md).  The only program of spmtap that links MPI:
 * spmtap itself execs it, so that spmtap runs where no MPI is installed.
 * MPI is for control only: start together, stop together, the node clocks'
 * offsets to rank 0 (job_sync.c), the summaries gathered at the end.  Every
 * byte of data stays in the node's own recording, made by the one record
 * path (collector/cli/record-session.c) through its rec_job hooks.
 */
#ifndef SPMTAP_JOB_H
#define SPMTAP_JOB_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

#include "collector/cli/record.h"

#define JOB_ROUNDS 20              /* ping-pongs per rank per sync (Score-P: 10) */
#define JOB_GOOD_RTT_NS 10000      /* below this, JOB_ROUNDS are enough; else more, up to: */
#define JOB_MAX_ROUNDS 200
#define JOB_MAX_EXTRA_NS 20000000ll /* and while a rank's rounds took less than 20 ms */
#define JOB_SYNC_DEFAULT_S 10.0    /* --sync-interval */
#define JOB_MAX_SYNCS 4096         /* offsets kept per rank (~11 h at 10 s) */
#define JOB_STOP_MARGIN_NS 200000000ll /* a stop's common end: this far ahead of rank 0's now */
#define JOB_STOP_POLL_NS 100000000ll   /* rank 0 looks for DIR/stop this often */

/* Control messages from rank 0 (tag JOB_TAG_CMD): what a worker does next. */
enum job_cmd { JOB_CMD_SYNC = 1, JOB_CMD_STOP = 2, JOB_CMD_FINAL = 3 };
enum { JOB_TAG_CMD = 101, JOB_TAG_PING, JOB_TAG_PONG, JOB_TAG_RES, JOB_TAG_REQ };

/* One clock offset of this rank to rank 0: reference = local + offset, within +-bound. */
struct job_offset {
	int64_t local_ns, offset_ns, bound_ns, rtt_ns;
	int64_t rounds;            /* round trips made (JOB_ROUNDS, more on a busy node) */
};

/*
 * This node's CLOCK_REALTIME beside its CLOCK_BOOTTIME at each sync, for a
 * reader that has no MPI offsets to go on (NTP/PTP grade, never used for
 * the offsets): realtime was read between two BOOTTIME reads window_ns apart.
 */
struct job_anchor {
	int64_t boottime_ns, realtime_ns, window_ns;
};

struct job {
	MPI_Comm comm;
	int rank, size;
	char host[256];
	char job_id[64];
	const char *launcher;      /* "mpirun", "srun", "other" */
	const char *dir;           /* --job DIR: the control directory (rank 0 writes it) */
	double duration, sync_interval;
	/* the lifecycle */
	bool started_called, ok;   /* started() ran; every rank started */
	bool stop_sent, stopped;   /* rank 0: STOP sent; a worker: STOP received */
	bool requested;            /* a worker: a local SIGUSR1/2 passed to rank 0 */
	bool finished;             /* the final sync is done */
	bool aborted;              /* a local SIGINT/SIGTERM: no collective any more */
	const char *stop_why;
	int64_t end_local;         /* the recording's end, local BOOTTIME (INT64_MAX: none yet) */
	int64_t t_start;           /* rank 0: when every node recorded (after the first sync): --duration counts from here */
	int64_t last_sync, last_stop_poll;
	/* a worker's pending control receive */
	MPI_Request cmd_req;
	int64_t cmd[2];
	bool cmd_posted;
	char mk_path[512];         /* the published marker channel (marker_job.h), removed at the end */
	char kd_path[512];         /* the published kernel dispatch channel (marker_job.h), removed at the end */
	struct job_offset off[JOB_MAX_SYNCS];
	size_t noff;
	struct job_anchor anc[JOB_MAX_SYNCS];
	size_t nanc;
	int64_t realtime_skew;     /* the emulator's SPMTAP_EMU_REALTIME_SKEW_NS, under --emulate only */
	struct rec_job hooks;
};

int64_t job_now(void);
/* A (BOOTTIME, REALTIME) anchor into j->anc (job_sync.c). */
void job_anchor(struct job *j);
/* One sync round: rank 0 with every worker in turn (job_sync.c). Rank 0 calls it; a worker answers job_sync_worker. */
void job_sync_root(struct job *j, enum job_cmd cmd);
/* A worker, after receiving SYNC/FINAL: 20 pongs, then its offset. */
void job_sync_worker(struct job *j);
/* The latest offset (0 without any). */
int64_t job_offset_now(const struct job *j);
/* The "job" metadata object as JSON text (malloc'd), per docs/formats/meta-job.md. */
char *job_meta_json(const struct job *j);
/* The hooks (job_ctl.c). */
void job_hooks_init(struct job *j);

#endif
