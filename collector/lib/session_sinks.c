/* SPDX-License-Identifier: MIT */
/*
 * The session's producers (session_priv.h): decoded SPM chunks and sensor
 * chunks become items on the one bounded queue to the writer thread.  An
 * item is one allocation; the queue blocking here is the back-pressure.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/lib/session_priv.h"
#include "collector/lib/timebase.h"
#include "collector/lib/window_loss.h"

void ses_push(struct session *S, struct ses_item *it)
{
	/* Refused only after stop closed the queue: nothing writes it any more. */
	if (spsc_push_wait(&S->q, it) < 0)
		free(it);
}

/* One allocation: the chunk, its column pointers and its arrays. */
static struct ses_item *ses_item_alloc(const struct series_stream *s, uint32_t n, bool ticks)
{
	uint32_t nc = s->ncols, words = (n + 63) / 64;
	size_t sz = sizeof(struct ses_item) + 2 * nc * sizeof(void *) + (size_t)n * 8 * (ticks ? 2 : 1) +
		    (size_t)nc * n * 8 + (size_t)nc * words * 8;
	struct ses_item *it = malloc(sz);
	if (!it)
		return NULL;
	const void **vals = it->vals;
	const uint64_t **miss = (const uint64_t **)(it->vals + nc);
	uint8_t *p = (uint8_t *)(it->vals + 2 * nc);
	it->c.stream = s;
	it->c.n = n;
	it->c.host_ns = (int64_t *)p;
	p += (size_t)n * 8;
	it->c.ticks = NULL;
	if (ticks) {
		it->c.ticks = (uint64_t *)p;
		p += (size_t)n * 8;
	}
	for (uint32_t k = 0; k < nc; k++, p += (size_t)n * 8)
		vals[k] = p;
	for (uint32_t k = 0; k < nc; k++, p += (size_t)words * 8) {
		miss[k] = (const uint64_t *)p;
		memset(p, 0, (size_t)words * 8);
	}
	it->c.values = vals;
	it->c.missing = miss;
	it->slice = NULL;
	return it;
}

/* One allocation: the slice and its strings. */
struct ses_item *ses_item_slice(const struct series_slice *ph)
{
	const char *name = ph->name ? ph->name : "", *cat = ph->category ? ph->category : "phase";
	size_t nl = strlen(name) + 1, cl = strlen(cat) + 1;
	struct ses_item *it = calloc(1, sizeof(*it) + sizeof(struct series_slice) + nl + cl);
	if (!it)
		return NULL;
	struct series_slice *sl = (struct series_slice *)(void *)(it->vals);
	char *p = (char *)(sl + 1);
	*sl = *ph;
	sl->name = memcpy(p, name, nl);
	sl->category = memcpy(p + nl, cat, cl);
	it->slice = sl;
	return it;
}

int ses_spm_sink(void *user, const struct dec_chunk *c)
{
	struct sgpu *g = user;
	struct session *S = g->S;
	if (c->xcc >= g->nstreams || !c->nsamples)
		return 0;
	if (S->decode_stall_at >= 0 && !g->stall_done &&
	    ses_now_ns(CLOCK_MONOTONIC) - S->t0_mono >= S->decode_stall_at * 1000000) {
		g->stall_done = true;
		ses_sleep_ms(S->decode_stall_dur);
	}
	const struct series_stream *s = &g->streams[c->xcc];
	struct ses_item *it = ses_item_alloc(s, c->nsamples, true);
	if (!it)
		return -ENOMEM;
	int64_t *host = (int64_t *)it->c.host_ns;
	uint64_t *ticks = (uint64_t *)it->c.ticks;
	memcpy(ticks, c->timestamp, (size_t)c->nsamples * 8);
	pthread_mutex_lock(&g->tb_lock);
	if (tb_map_spm_n(g->tb, c->timestamp, c->nsamples, host) < 0)
		memset(host, 0, (size_t)c->nsamples * sizeof(*host));
	pthread_mutex_unlock(&g->tb_lock);
	/*
	 * The counters run until the stop program executes, after the
	 * recording's end (session.h): a stream's samples are in time order, so
	 * the first one past the end cuts the chunk, and the rest are counted.
	 */
	int64_t end = atomic_load(&S->end_boot);
	uint32_t n = c->nsamples;
	while (n && host[n - 1] > end)
		n--;
	/* The decoder counts a gap before emitting the chunk it precedes (a chunk holds none). */
	struct dthr_xcc ds;
	uint64_t lost = g->dt && dthr_stats(g->dt, c->xcc, &ds) == 0 ? ds.dec.lost_samples_est : 0;
	uint64_t gap_before = lost - g->lost_prev[c->xcc];
	g->lost_prev[c->xcc] = lost;
	if (n < c->nsamples) {
		atomic_fetch_add(&g->after_end[c->xcc], c->nsamples - n);
		/* Their saturated cells leave with them (the accounting's "saturated" counts what is written). */
		uint32_t nc = dthr_ncols(g->dt);
		for (uint32_t k = 0; g->after_end_sat && c->saturated && k < c->ncols && k < nc; k++) {
			uint64_t ns = 0;
			for (uint32_t i = n; i < c->nsamples; i++)
				ns += dec_chunk_saturated(c, k, i);
			if (ns)
				atomic_fetch_add(&g->after_end_sat[(size_t)c->xcc * nc + k], ns);
		}
	}
	int64_t last = atomic_load_explicit(&g->last_host[c->xcc], memory_order_relaxed);
	if (!n && gap_before)
		atomic_fetch_add(&g->after_end_gap[c->xcc], wloss_gap_after_end(last, host[0], end, gap_before));
	/* A chunk holds no gap: its span measures the period (the mapping is linear between pairs). */
	if (c->nsamples >= 2 && host[0] && host[c->nsamples - 1] > host[0])
		atomic_store_explicit(&g->period_ps[c->xcc],
				      (host[c->nsamples - 1] - host[0]) * 1000 / (int64_t)(c->nsamples - 1),
				      memory_order_relaxed);
	if (host[c->nsamples - 1])
		atomic_store_explicit(&g->last_host[c->xcc], host[c->nsamples - 1], memory_order_relaxed);
	if (!n) {
		free(it);
		return 0;
	}
	it->c.n = n;
	uint32_t words = (c->nsamples + 63) / 64;
	for (uint32_t k = 0; k < s->ncols && k < c->ncols; k++) {
		memcpy((void *)it->c.values[k], c->values[k], (size_t)c->nsamples * 8);
		if (c->saturated && c->saturated[k])
			memcpy((void *)it->c.missing[k], c->saturated[k], (size_t)words * 8);
	}
	atomic_fetch_add(&S->samples, n);
	ses_push(S, it);
	return 0;
}

void ses_smi_sink(const struct series_chunk *c, void *arg)
{
	struct sgpu *g = arg;
	/* Readings after the recording's end are left out (session.h); a chunk is in time order. */
	int64_t end = atomic_load(&g->S->end_boot);
	uint32_t n = c->n;
	while (n && c->host_ns[n - 1] > end)
		n--;
	atomic_fetch_add(&g->smi_after_end, c->n - n);
	if (!n)
		return;
	struct series_chunk cut = *c;
	cut.n = n;
	c = &cut;
	struct ses_item *it = ses_item_alloc(c->stream, c->n, c->ticks != NULL);
	if (!it) {
		ses_set_error(g->S, -ENOMEM, "out of memory");
		return;
	}
	uint32_t words = (c->n + 63) / 64;
	memcpy((void *)it->c.host_ns, c->host_ns, (size_t)c->n * 8);
	if (c->ticks)
		memcpy((void *)it->c.ticks, c->ticks, (size_t)c->n * 8);
	for (uint32_t k = 0; k < c->stream->ncols; k++) {
		memcpy((void *)it->c.values[k], c->values[k], (size_t)c->n * 8);
		if (c->missing && c->missing[k])
			memcpy((void *)it->c.missing[k], c->missing[k], (size_t)words * 8);
	}
	atomic_fetch_add(&g->S->smi_samples, c->n);
	ses_push(g->S, it);
}
