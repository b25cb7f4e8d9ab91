/* SPDX-License-Identifier: MIT */
/*
 * The node clocks' offsets to rank 0, Score-P's method with the bound kept
 * (docs/howto-job.md "Clocks"): rank 0 sends a ping, the worker answers with
 * its CLOCK_BOOTTIME tw, rank 0 brackets the answer between its own t1 (before
 * the ping) and t2 (after the pong).  The worker's read happened somewhere in
 * [t1, t2] of rank 0's clock, whatever the two one-way delays, so
 * offset = (t1 + t2) / 2 - tw is within (t2 - t1) / 2 of the truth.  Of
 * JOB_ROUNDS round trips the one with the smallest RTT is kept, and rank 0
 * sends it back to the worker, which stores it in its own recording.
 * CLOCK_REALTIME is never read: it agrees across nodes only as well as
 * NTP/PTP.
 */
#include <time.h>

#include "collector/job/job.h"

int64_t job_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/*
 * CLOCK_REALTIME as this node sees it.  On an emulated node (SPMTAP_EMU_ACTIVE)
 * the emulator's SPMTAP_EMU_REALTIME_SKEW_NS is added (read once, at
 * MPI_Init, by job_main.c): a test-only hook, compiled in, read only under
 * --emulate, so that a test bed whose "nodes" share the machine's REALTIME
 * still has nodes whose wall clocks disagree (docs/emulator.md).  Nothing
 * else in spmtap reads REALTIME for a time stamp.
 */
static int64_t realtime(const struct job *j)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec + j->realtime_skew;
}

void job_anchor(struct job *j)
{
	struct job_anchor best = { .window_ns = INT64_MAX };
	for (int i = 0; i < 5; i++) {
		int64_t a = job_now(), r = realtime(j), b = job_now();
		if (b - a < best.window_ns)
			best = (struct job_anchor){ .boottime_ns = a + (b - a) / 2, .realtime_ns = r, .window_ns = b - a };
	}
	if (j->nanc == JOB_MAX_SYNCS)
		for (size_t i = 1; i + 1 < j->nanc; i++)
			j->anc[i] = j->anc[i + 1];
	else
		j->nanc++;
	j->anc[j->nanc - 1] = best;
}

static void keep(struct job *j, const struct job_offset *o)
{
	job_anchor(j);
	if (j->noff == JOB_MAX_SYNCS) /* keep the first and the latest: drop the second */
		for (size_t i = 1; i + 1 < j->noff; i++)
			j->off[i] = j->off[i + 1];
	else
		j->noff++;
	j->off[j->noff - 1] = *o;
}

static void pingpong_root(struct job *j, int peer)
{
	int64_t best_rtt = INT64_MAX, best_t1 = 0, best_t2 = 0, best_tw = 0;
	/* JOB_ROUNDS, and more (up to JOB_MAX_ROUNDS) while no round trip was short: a busy node */
	int i = 0;
	int64_t t0 = job_now();
	for (; i < JOB_ROUNDS || (best_rtt > JOB_GOOD_RTT_NS && i < JOB_MAX_ROUNDS &&
				  job_now() - t0 < JOB_MAX_EXTRA_NS);
	     i++) {
		int64_t tw, t1 = job_now();
		MPI_Send(&i, 1, MPI_INT, peer, JOB_TAG_PING, j->comm);
		MPI_Recv(&tw, 1, MPI_INT64_T, peer, JOB_TAG_PONG, j->comm, MPI_STATUS_IGNORE);
		int64_t t2 = job_now();
		if (t2 - t1 < best_rtt) {
			best_rtt = t2 - t1;
			best_t1 = t1;
			best_t2 = t2;
			best_tw = tw;
		}
	}
	/* (t1 + t2) / 2 without overflow; the bound rounded up, plus the 1 ns the halving may lose */
	int64_t mid = best_t1 + (best_t2 - best_t1) / 2;
	struct job_offset o = { .local_ns = best_tw, .offset_ns = mid - best_tw,
				.bound_ns = (best_rtt + 1) / 2 + 1, .rtt_ns = best_rtt, .rounds = i };
	MPI_Send(&o, 5, MPI_INT64_T, peer, JOB_TAG_RES, j->comm);
}

void job_sync_root(struct job *j, enum job_cmd cmd)
{
	for (int r = 1; r < j->size; r++) {
		int64_t c[2] = { cmd, 0 };
		MPI_Send(c, 2, MPI_INT64_T, r, JOB_TAG_CMD, j->comm);
		pingpong_root(j, r);
	}
	/* the reference: offset 0 within 0, at the end of the round */
	struct job_offset o = { .local_ns = job_now() };
	keep(j, &o);
	j->last_sync = o.local_ns;
}

void job_sync_worker(struct job *j)
{
	/* pings until the result comes: rank 0 decides how many rounds (pingpong_root) */
	for (;;) {
		MPI_Status st;
		MPI_Probe(0, MPI_ANY_TAG, j->comm, &st);
		if (st.MPI_TAG != JOB_TAG_PING)
			break;
		int seq;
		MPI_Recv(&seq, 1, MPI_INT, 0, JOB_TAG_PING, j->comm, MPI_STATUS_IGNORE);
		int64_t tw = job_now();
		MPI_Send(&tw, 1, MPI_INT64_T, 0, JOB_TAG_PONG, j->comm);
	}
	struct job_offset o;
	MPI_Recv(&o, 5, MPI_INT64_T, 0, JOB_TAG_RES, j->comm, MPI_STATUS_IGNORE);
	keep(j, &o);
	j->last_sync = o.local_ns;
}

int64_t job_offset_now(const struct job *j)
{
	return j->noff ? j->off[j->noff - 1].offset_ns : 0;
}
