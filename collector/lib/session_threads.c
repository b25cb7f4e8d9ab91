/* SPDX-License-Identifier: MIT */
/*
 * The session's threads besides the feeders and decode threads
 * (session_priv.h): the writer thread (the one consumer of the queue), the
 * clock thread (timebase pairs) and the marker thread; and phases.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/lib/marker_reader.h"
#include "collector/lib/marker_shm.h"
#include "collector/lib/session_priv.h"
#include "collector/lib/timebase.h"
#include "log.h"

/* The files flushed and the metadata rewritten, at least once a second (session_outputs.c). */
static void meta_tick(struct session *S)
{
	char e[SES_ERRLEN] = "";
	if (atomic_load(&S->failed))
		return;
	int rc = ses_meta_update(S, false, e, sizeof(e));
	if (rc < 0)
		ses_set_error(S, rc, e[0] ? e : spmtap_strerror(rc));
}

void *ses_writer_main(void *arg)
{
	struct session *S = arg;
	pthread_setname_np(pthread_self(), "spmtap-writer"); /* top -H, perf --sort comm */
	bool stalled = false;
	void *p;
	char e[SES_ERRLEN];
	for (;;) {
		int r = spsc_pop(&S->q, &p, SES_META_PERIOD_MS / 2);
		if (r == -ENODATA)
			break;
		if (ses_now_ns(CLOCK_MONOTONIC) - S->meta_mono >= SES_META_PERIOD_MS * 1000000ll)
			meta_tick(S);
		if (r < 0)
			continue;
		struct ses_item *it = p;
		if (S->writer_stall_at >= 0 && !stalled &&
		    ses_now_ns(CLOCK_MONOTONIC) - S->t0_mono >= S->writer_stall_at * 1000000) {
			stalled = true;
			ses_sleep_ms(S->writer_stall_dur);
		}
		if (it->slice) {
			for (size_t k = 0; k < S->nw && !atomic_load(&S->failed); k++) {
				e[0] = 0;
				uint64_t c0 = cost_thread_cpu_ns();
				int rc = S->wops[k]->slice ? S->wops[k]->slice(S->w[k], it->slice, e, sizeof(e)) : 0;
				S->wcpu_ns[k] += cost_thread_cpu_ns() - c0;
				if (rc < 0) {
					S->writer_failed = true;
					ses_set_error(S, rc, e[0] ? e : spmtap_strerror(rc));
				}
			}
			if (!it->slice->category || strcmp(it->slice->category, "kernel"))
				atomic_fetch_add(&S->phases, 1);
			free(it);
			continue;
		}
		if (!atomic_load(&S->failed)) {
			bool ok = true;
			for (size_t k = 0; k < S->nw; k++) {
				e[0] = 0;
				uint64_t c0 = cost_thread_cpu_ns();
				int rc = S->wops[k]->write(S->w[k], &it->c, e, sizeof(e));
				S->wcpu_ns[k] += cost_thread_cpu_ns() - c0;
				if (rc < 0) {
					S->writer_failed = true;
					ses_set_error(S, rc, e[0] ? e : spmtap_strerror(rc));
					ok = false;
					break;
				}
			}
			/* Rows every writer took: the metadata's extra.streams[i].rows. */
			int si = ok ? ses_stream_index(S, it->c.stream) : -1;
			if (si >= 0)
				S->rows[si] += it->c.n;
			if (S->o.on_chunk && !atomic_load(&S->failed)) {
				int rc = S->o.on_chunk(&it->c, S->o.user);
				if (rc)
					ses_set_error(S, rc < 0 ? rc : -ECANCELED, "the chunk callback failed");
			}
		}
		atomic_fetch_add(&S->chunks, 1);
		free(it);
	}
	return NULL;
}

int session_add_phase(struct session *S, const struct series_slice *ph)
{
	if (!ph || ph->end_ns < ph->start_ns)
		return -EINVAL;
	struct ses_item *it = ses_item_slice(ph);
	if (!it)
		return -ENOMEM;
	ses_push(S, it);
	return 0;
}

int ses_marker_emit(const struct mk_region *r, void *user)
{
	struct series_slice sl = { .start_ns = r->start_ns, .end_ns = r->end_ns, .name = r->name,
				   .track = r->tid, .category = "marker", .depth = r->depth, .pid = r->pid };
	return session_add_phase(user, &sl);
}

/*
 * Every 5 ms, the rings (4096 events each) take 800 k events/s per thread;
 * a ring found a quarter full is read again at once instead.
 */
#define MARKER_POLL_MS 5

void *ses_marker_main(void *arg)
{
	struct session *S = arg;
	pthread_setname_np(pthread_self(), "spmtap-markers");
	while (!atomic_load(&S->mk_stop)) {
		int most = mk_reader_poll(S->mk, ses_marker_emit, S);
		if (most < (int)(MK_EVENTS / 4))
			ses_sleep_ms(MARKER_POLL_MS);
	}
	S->mk_cpu_ns = cost_thread_cpu_ns();
	return NULL;
}

int session_markers_fd(const struct session *S)
{
	return S->mk ? S->mk_fd : -1;
}

int session_marker_stats(const struct session *S, struct mk_stats *st)
{
	if (!S->mk)
		return -ENOENT;
	mk_reader_stats(S->mk, st);
	return 0;
}

/*
 * A pair is read SES_PAIR_BURST times in a row, each call bracketed by host
 * RAW reads: the kernel reads all three clocks inside the bracket, so its
 * width bounds how far apart they were read (a thread preempted between two
 * of them shows as a wide window).  The narrowest call is kept and its
 * window goes with it to the timebase, which rejects a pair still far
 * wider than usual and states its error bound from the windows
 * (docs/timebase.md); then another burst is read at once, a few times at most.
 * A call whose RAW is outside its own bracket is not on our clock: its
 * window means nothing, so it is passed as unknown.
 */
#define SES_PAIR_BURST 4
#define SES_PAIR_TRIES 3

static int ses_pair_burst(struct session *S, struct sgpu *g)
{
	struct spm_clock_pair p, best;
	int64_t best_w = -1;
	for (int k = 0; k < SES_PAIR_BURST; k++) {
		int64_t t0 = ses_now_ns(CLOCK_MONOTONIC_RAW);
		if (S->bops->clock_counters(S->b, g->dev, &p) < 0)
			return -EIO;
		int64_t t1 = ses_now_ns(CLOCK_MONOTONIC_RAW), w = t1 - t0;
		if (!p.cpu_raw_ns || (int64_t)p.cpu_raw_ns < t0 || (int64_t)p.cpu_raw_ns > t1)
			w = 0;
		if (best_w < 0 || (w > 0 && (best_w == 0 || w < best_w))) {
			best = p;
			best_w = w;
		}
	}
	pthread_mutex_lock(&g->tb_lock);
	int rc = tb_add_pair_w(g->tb, best.gpu_ticks, (int64_t)best.cpu_raw_ns, (int64_t)best.boottime_ns,
			       best_w);
	pthread_mutex_unlock(&g->tb_lock);
	return rc;
}

void ses_add_pair(struct session *S, struct sgpu *g)
{
	if (!S->bops->clock_counters)
		return;
	for (int k = 0; k < SES_PAIR_TRIES && ses_pair_burst(S, g) == 1; k++)
		;
}

void *ses_clock_main(void *arg)
{
	struct session *S = arg;
	pthread_setname_np(pthread_self(), "spmtap-clock");
	pthread_mutex_lock(&S->lock);
	while (!S->clock_stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += SESSION_CLOCK_PERIOD_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&S->clock_cv, &S->lock, &ts);
		if (S->clock_stop)
			break;
		pthread_mutex_unlock(&S->lock);
		for (size_t i = 0; i < S->ng; i++)
			ses_add_pair(S, &S->g[i]);
		pthread_mutex_lock(&S->lock);
	}
	pthread_mutex_unlock(&S->lock);
	S->clock_cpu_ns = cost_thread_cpu_ns();
	return NULL;
}
