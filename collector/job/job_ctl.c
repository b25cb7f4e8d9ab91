/* SPDX-License-Identifier: MIT */
/*
 * A job rank's lifecycle inside the one record path (record.h, struct
 * rec_job): started (every rank started: a barrier, the first clock sync,
 * DIR/job.json), poll (rank 0 decides the stop and the syncs; workers
 * follow), ending (the last sync, the final "job" metadata) and done (the
 * summaries gathered; rank 0 prints one line per node and DIR/summary.json).
 *
 * Stops (docs/howto-job.md "Stopping"): rank 0's --duration; SIGUSR1/SIGUSR2
 * on any rank (mpirun forwards them; a worker passes its own to rank 0);
 * the file DIR/stop (`spmtap job stop DIR`).  Rank 0 then sends every worker
 * one common end, JOB_STOP_MARGIN_NS ahead on its own clock, which each
 * worker turns into its own clock with its latest offset: every node's
 * recording ends at the same instant, within the offset's bound plus a tick.
 */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector/job/job.h"
#include "collector/lib/marker_job.h"

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	nanosleep(&ts, NULL);
}

char *job_meta_json(const struct job *j)
{
	json_t *offs = json_array();
	for (size_t i = 0; i < j->noff; i++)
		json_array_append_new(offs, json_pack("{s:I, s:I, s:I, s:I, s:I}", "local_ns",
			(json_int_t)j->off[i].local_ns, "offset_ns", (json_int_t)j->off[i].offset_ns,
			"bound_ns", (json_int_t)j->off[i].bound_ns, "rtt_ns", (json_int_t)j->off[i].rtt_ns,
			"rounds", (json_int_t)j->off[i].rounds));
	json_t *clk = json_pack("{s:s, s:i, s:s, s:i, s:o}", "clock", "CLOCK_BOOTTIME", "reference_rank", 0,
				"method", "mpi-min-rtt-pingpong", "rounds", JOB_ROUNDS, "offsets", offs);
	json_t *anc = json_array();
	for (size_t i = 0; i < j->nanc; i++)
		json_array_append_new(anc, json_pack("{s:I, s:I, s:I}", "boottime_ns", (json_int_t)j->anc[i].boottime_ns,
			"realtime_ns", (json_int_t)j->anc[i].realtime_ns, "window_ns", (json_int_t)j->anc[i].window_ns));
	json_t *m = json_pack("{s:i, s:i, s:s, s:s, s:s, s:o, s:o, s:f, s:s?}", "rank", j->rank, "size", j->size,
			      "hostname", j->host, "launcher", j->launcher, "job_id", j->job_id, "clock", clk,
			      "realtime_anchors", anc, "sync_interval_s", j->sync_interval, "stopped_by", j->stop_why);
	/* the job's common end on this node's clock, once decided: every node's recording ends there */
	if (m && j->end_local != INT64_MAX)
		json_object_set_new(m, "end_ns", json_integer(j->end_local));
	char *s = m ? json_dumps(m, JSON_COMPACT) : NULL;
	json_decref(m);
	return s;
}

static void set_meta(struct job *j, struct session *S)
{
	char *t = job_meta_json(j);
	if (!t || session_set_job(S, t) < 0)
		fprintf(stderr, "spmtap-job: rank %d: the job metadata could not be set\n", j->rank);
	free(t);
}

static void dir_path(const struct job *j, const char *leaf, char *p, size_t n)
{
	snprintf(p, n, "%s/%s", j->dir, leaf);
}

/* Rank 0: DIR/job.json, which `spmtap job env DIR` waits for (written whole, then renamed). */
static void write_job_file(const struct job *j, json_t *hosts)
{
	char p[4096], tmp[4200];
	dir_path(j, "job.json", p, sizeof(p));
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	json_t *m = json_pack("{s:s, s:s, s:i, s:O, s:s, s:I}", "job_id", j->job_id, "launcher", j->launcher,
			      "size", j->size, "hostnames", hosts, "state", "recording", "rank0_pid",
			      (json_int_t)getpid());
	if (!m || json_dump_file(m, tmp, JSON_INDENT(2)) || rename(tmp, p))
		fprintf(stderr, "spmtap-job: %s: %s\n", p, strerror(errno));
	json_decref(m);
}

static bool started(void *user, struct session *S, const struct rec_opts *o, bool ok)
{
	struct job *j = user;
	if (j->started_called)
		return j->ok;
	j->started_called = true;
	j->duration = o->duration;
	j->sync_interval = o->sync_interval > 0 ? o->sync_interval : JOB_SYNC_DEFAULT_S;
	int mine = ok, all = 0;
	if (j->rank == 0 && ok) {
		/* an earlier job's stop request must not stop this one */
		char p[4096];
		dir_path(j, "stop", p, sizeof(p));
		unlink(p);
	}
	MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, j->comm);
	j->ok = all;
	if (!all) {
		if (j->rank == 0)
			fprintf(stderr, "spmtap-job: the job does not record: %s (see each rank's message above)\n",
				ok ? "another rank failed to start" : "rank 0 failed to start");
		return false;
	}
	if (j->rank == 0)
		job_sync_root(j, JOB_CMD_SYNC);
	else {
		int64_t c[2];
		MPI_Recv(c, 2, MPI_INT64_T, 0, JOB_TAG_CMD, j->comm, MPI_STATUS_IGNORE);
		job_sync_worker(j);
	}
	set_meta(j, S);
	/* The app step's markers find this node's channel through SPMTAP_JOB (marker_job.h). */
	int mfd = session_markers_fd(S);
	int prc = mfd >= 0 ? mk_job_publish(j->job_id, mfd, j->mk_path, sizeof(j->mk_path)) : -ENOENT;
	if (prc < 0) {
		fprintf(stderr, "spmtap-job: rank %d: the app's markers cannot join this node's recording: %s\n",
			j->rank, strerror(-prc));
		j->mk_path[0] = 0;
	}
	/* Its kernel dispatches (libspmtap-tool.so under HSA_TOOLS_LIB) find this node's kernel channel the same way. */
	int kfd = session_kernels_fd(S);
	if (kfd >= 0 && (prc = mk_job_publish_kind(j->job_id, MK_JOB_KERNELS, kfd, j->kd_path, sizeof(j->kd_path))) < 0) {
		fprintf(stderr, "spmtap-job: rank %d: the app's kernel dispatches cannot join this node's recording: %s\n",
			j->rank, strerror(-prc));
		j->kd_path[0] = 0;
	}
	/* Host names for DIR/job.json (rank 0): which rank records which node. */
	char *all_hosts = j->rank == 0 ? calloc((size_t)j->size, sizeof(j->host)) : NULL;
	MPI_Gather(j->host, sizeof(j->host), MPI_CHAR, all_hosts, sizeof(j->host), MPI_CHAR, 0, j->comm);
	if (j->rank == 0) {
		json_t *hosts = json_array();
		for (int r = 0; all_hosts && r < j->size; r++)
			json_array_append_new(hosts, json_string(all_hosts + (size_t)r * sizeof(j->host)));
		write_job_file(j, hosts);
		json_decref(hosts);
		fprintf(stderr, "spmtap-job: %d node(s) recording, job %s; stop: --duration, SIGUSR1 to "
				"mpirun, or `spmtap job stop %s`\n", j->size, j->job_id, j->dir);
	}
	free(all_hosts);
	/* The common start: every node records and has its first offset; --duration counts from here. */
	j->t_start = job_now();
	if (j->rank != 0) {
		MPI_Irecv(j->cmd, 2, MPI_INT64_T, 0, JOB_TAG_CMD, j->comm, &j->cmd_req);
		j->cmd_posted = true;
	}
	return true;
}

/* Rank 0: tell every worker the common end, on rank 0's clock. */
static void send_stop(struct job *j, int64_t end_ref, const char *why)
{
	j->stop_sent = true;
	j->stop_why = why;
	j->end_local = end_ref;
	for (int r = 1; r < j->size; r++) {
		int64_t c[2] = { JOB_CMD_STOP, end_ref };
		MPI_Send(c, 2, MPI_INT64_T, r, JOB_TAG_CMD, j->comm);
	}
}

static int64_t poll_root(struct job *j, struct session *S)
{
	if (j->stop_sent)
		return j->end_local;
	int64_t now = job_now();
	int sig = rec_stop_signal;
	int flag = 0;
	MPI_Status st;
	MPI_Iprobe(MPI_ANY_SOURCE, JOB_TAG_REQ, j->comm, &flag, &st);
	if (flag) {
		int what;
		MPI_Recv(&what, 1, MPI_INT, st.MPI_SOURCE, JOB_TAG_REQ, j->comm, MPI_STATUS_IGNORE);
		fprintf(stderr, "spmtap-job: rank %d passed on a stop signal\n", st.MPI_SOURCE);
		send_stop(j, now + JOB_STOP_MARGIN_NS, "SIGUSR1 (a rank)");
		return j->end_local;
	}
	if (sig == SIGUSR1 || sig == SIGUSR2) {
		send_stop(j, now + JOB_STOP_MARGIN_NS, sig == SIGUSR1 ? "SIGUSR1" : "SIGUSR2");
		return j->end_local;
	}
	if (now - j->last_stop_poll >= JOB_STOP_POLL_NS) {
		char p[4096];
		struct stat sb;
		j->last_stop_poll = now;
		dir_path(j, "stop", p, sizeof(p));
		if (!stat(p, &sb)) {
			unlink(p);
			send_stop(j, now + JOB_STOP_MARGIN_NS, "the stop file (spmtap job stop)");
			return j->end_local;
		}
	}
	if (j->duration > 0) {
		int64_t end = j->t_start + (int64_t)(j->duration * 1e9);
		if (now >= end - JOB_STOP_MARGIN_NS) {
			send_stop(j, end > now ? end : now, "--duration");
			return j->end_local;
		}
	}
	if (now - j->last_sync >= (int64_t)(j->sync_interval * 1e9)) {
		job_sync_root(j, JOB_CMD_SYNC);
		set_meta(j, S);
	}
	return INT64_MAX;
}

/* A worker: the commands rank 0 sent since the last tick; wait: block (sleeping) until one comes. */
static void worker_cmds(struct job *j, struct session *S, bool wait_final)
{
	while (j->cmd_posted) {
		int flag = 0;
		MPI_Test(&j->cmd_req, &flag, MPI_STATUS_IGNORE);
		if (!flag) {
			if (!wait_final)
				return;
			sleep_us(200);
			continue;
		}
		j->cmd_posted = false;
		int64_t kind = j->cmd[0], arg = j->cmd[1];
		if (kind == JOB_CMD_SYNC || kind == JOB_CMD_FINAL) {
			job_sync_worker(j);
			set_meta(j, S);
		} else if (kind == JOB_CMD_STOP) {
			j->stopped = true;
			j->stop_why = "rank 0";
			j->end_local = arg - job_offset_now(j);
		}
		if (kind == JOB_CMD_FINAL) {
			j->finished = true;
			return;
		}
		MPI_Irecv(j->cmd, 2, MPI_INT64_T, 0, JOB_TAG_CMD, j->comm, &j->cmd_req);
		j->cmd_posted = true;
	}
}

static int64_t poll(void *user, struct session *S)
{
	struct job *j = user;
	if (j->rank == 0)
		return poll_root(j, S);
	int sig = rec_stop_signal;
	if ((sig == SIGUSR1 || sig == SIGUSR2) && !j->requested) {
		int what = sig;
		j->requested = true;
		MPI_Send(&what, 1, MPI_INT, 0, JOB_TAG_REQ, j->comm);
	}
	worker_cmds(j, S, false);
	return j->stopped ? j->end_local : INT64_MAX;
}

static void ending(void *user, struct session *S, bool aborted)
{
	struct job *j = user;
	if (j->mk_path[0]) /* no app process joins from now on */
		unlink(j->mk_path);
	if (j->kd_path[0])
		unlink(j->kd_path);
	if (aborted) {
		/* the launcher is killing the job: no collective, the metadata says what is known */
		j->aborted = true;
		j->stop_why = "SIGINT/SIGTERM (the launcher ends the job: no final clock sync)";
		set_meta(j, S);
		return;
	}
	if (j->rank == 0) {
		if (!j->stop_sent) /* rank 0's own recording failed: the others stop with it */
			send_stop(j, job_now(), "rank 0 stopped (an error)");
		job_sync_root(j, JOB_CMD_FINAL);
		j->finished = true;
	} else {
		worker_cmds(j, S, true);
	}
	set_meta(j, S);
	if (j->stop_why)
		session_set_stop_reason(S, j->stop_why);
}

/* What each rank sends rank 0 at the end: one line of the job's summary. */
struct node_sum {
	char host[64];
	int64_t samples, lost, smi, bound_ns, status;
	double seconds;
};

static void done(void *user, struct session *S, int status)
{
	struct job *j = user;
	if (j->aborted || !j->ok)
		return;
	struct node_sum me = { .status = status };
	snprintf(me.host, sizeof(me.host), "%s", j->host);
	if (S) {
		struct session_progress p;
		session_progress(S, &p);
		me.samples = (int64_t)p.samples;
		me.lost = (int64_t)p.lost_samples;
		me.smi = (int64_t)p.smi_samples;
		me.seconds = (double)(session_end_boottime(S) - session_start_boottime(S)) / 1e9;
	}
	for (size_t i = 0; i < j->noff; i++)
		if (j->off[i].bound_ns > me.bound_ns)
			me.bound_ns = j->off[i].bound_ns;
	struct node_sum *all = j->rank == 0 ? calloc((size_t)j->size, sizeof(*all)) : NULL;
	MPI_Gather(&me, sizeof(me), MPI_BYTE, all, sizeof(me), MPI_BYTE, 0, j->comm);
	if (j->rank != 0 || !all)
		return;
	json_t *arr = json_array();
	fprintf(stderr, "spmtap-job: summary of job %s (%d nodes; clock: offsets to rank 0, each within "
			"its bound):\n", j->job_id, j->size);
	for (int r = 0; r < j->size; r++) {
		const struct node_sum *n = &all[r];
		fprintf(stderr, "spmtap-job:   rank %d %-16s %.2f s, %lld SPM samples, %lld lost, %lld sensor "
				"samples, clock bound %lld ns, exit %lld\n", r, n->host, n->seconds,
			(long long)n->samples, (long long)n->lost, (long long)n->smi, (long long)n->bound_ns,
			(long long)n->status);
		json_array_append_new(arr, json_pack("{s:i, s:s, s:f, s:I, s:I, s:I, s:I, s:I}", "rank", r,
			"hostname", n->host, "seconds", n->seconds, "samples", (json_int_t)n->samples, "lost",
			(json_int_t)n->lost, "sensor_samples", (json_int_t)n->smi, "max_bound_ns",
			(json_int_t)n->bound_ns, "exit", (json_int_t)n->status));
	}
	char p[4096];
	dir_path(j, "summary.json", p, sizeof(p));
	json_t *m = json_pack("{s:s, s:i, s:s?, s:o}", "job_id", j->job_id, "size", j->size, "stopped_by",
			      j->stop_why, "nodes", arr);
	if (!m || json_dump_file(m, p, JSON_INDENT(2)))
		fprintf(stderr, "spmtap-job: %s: %s\n", p, strerror(errno));
	json_decref(m);
	dir_path(j, "job.json", p, sizeof(p));
	unlink(p); /* the job is over: `spmtap job env` must not hand it out */
	free(all);
}

void job_hooks_init(struct job *j)
{
	j->hooks = (struct rec_job){ .started = started, .poll = poll, .ending = ending, .done = done, .user = j };
	j->end_local = INT64_MAX;
}
