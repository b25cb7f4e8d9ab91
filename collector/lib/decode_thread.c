/* SPDX-License-Identifier: MIT */
/* The feeder's consumer: parts -> decoder -> aggregation -> sink (decode_thread.h). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/lib/aggregate.h"
#include "collector/lib/decode_thread.h"
#include "log.h"

/* Where the previous chunk of an XCC ended, and its mean sample period. */
struct gapper {
	bool have_last;
	bool fed;          /* any bytes yet: the first are fed with loss_before */
	uint64_t skipped;  /* decoder's dropped bytes when the first sample came out */
	uint64_t resyncs0; /* and its resync count then */
	uint64_t last_ts;
	double period; /* ticks; 0 until a chunk of >= 8 samples was seen */
	uint64_t lost;
};

struct dthr {
	struct dthr_opts o;
	struct gapper gap[DEC_MAX_XCC];
	struct dec *dec;
	struct agg *agg;
	uint32_t sample_bytes;
	struct dthr_xcc x[DEC_MAX_XCC];
	bool loss_next[DEC_MAX_XCC]; /* the previous part was flagged: this one may not continue it */

	struct feeder *f;
	pthread_t tid;
	bool started;
	atomic_bool failed;
	int error;
	char msg[SPM_ERRLEN];
};

static int fail(struct dthr *t, int rc, const char *what)
{
	if (!t->error) {
		t->error = rc;
		snprintf(t->msg, sizeof(t->msg), "%s", what);
	}
	atomic_store(&t->failed, true);
	return t->error;
}

static void count_gap(struct gapper *g, const struct dec_chunk *c)
{
	if (!c->nsamples)
		return;
	if (g->have_last && g->period > 0 && c->timestamp[0] > g->last_ts) {
		double n = (double)(c->timestamp[0] - g->last_ts) / g->period;
		/* The decoder's own threshold: 1.5 periods. */
		if (n > 1.5)
			g->lost += (uint64_t)(n + 0.5) - 1;
	}
	if (c->nsamples >= 8)
		g->period = (double)(c->timestamp[c->nsamples - 1] - c->timestamp[0]) /
			    (double)(c->nsamples - 1);
	g->have_last = true;
	g->last_ts = c->timestamp[c->nsamples - 1];
}

/* The aggregator needs the decoder's columns, so it exists only after dec_open. */
static int to_agg(void *user, const struct dec_chunk *c)
{
	struct dthr *t = user;
	if (c->xcc < DEC_MAX_XCC) {
		struct gapper *g = &t->gap[c->xcc];
		if (!g->have_last) {
			struct dec_stats st;
			if (dec_stats(t->dec, c->xcc, &st) == 0) {
				g->skipped = st.dropped_bytes;
				g->resyncs0 = st.resyncs;
			}
		}
		count_gap(g, c);
	}
	return agg_sink(t->agg, c);
}

int dthr_open(struct dthr **out, const struct dthr_opts *o, char *err, size_t errlen)
{
	*out = NULL;
	if (!o || !o->layout || !o->nstreams || o->nstreams > DEC_MAX_XCC)
		return spmtap_seterr(err, errlen, EINVAL, "decoder: need a layout and 1..%u streams",
				     DEC_MAX_XCC);
	struct dthr *t = calloc(1, sizeof(*t));
	if (!t)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	t->o = *o;
	t->sample_bytes = o->layout->sample_bytes;
	struct dec_opts dopts = { .sz = sizeof(dopts), .per_se = o->per_se };
	int rc = dec_open(o->layout, o->nstreams, &dopts, to_agg, t, &t->dec, err, errlen);
	if (rc == 0)
		rc = agg_open(dec_columns(t->dec), dec_ncols(t->dec), o->requests, o->nreq,
			      o->per_instance, o->sink, o->sink_user, &t->agg, err, errlen);
	if (rc < 0) {
		dthr_close(t);
		return rc;
	}
	*out = t;
	return 0;
}

uint32_t dthr_ncols(const struct dthr *t)
{
	return agg_ncols(t->agg);
}

const struct dec_column *dthr_columns(const struct dthr *t)
{
	return agg_columns(t->agg);
}

uint32_t dthr_sample_bytes(const struct dthr *t)
{
	return t->sample_bytes;
}

int dthr_feed(struct dthr *t, uint32_t xcc, const void *bytes, size_t len, bool loss, bool bad)
{
	if (xcc >= t->o.nstreams)
		return fail(t, -EINVAL, "a part names an XCC beyond the stream count");
	struct dthr_xcc *x = &t->x[xcc];
	x->parts++;
	x->loss_parts += loss;
	x->bad_parts += bad;
	if (t->error)
		return t->error;
	/* Untrusted framing: its bytes are not fed, and the stream cannot continue across it. */
	bool cut = bad || (loss && t->o.loss == DTHR_LOSS_RESYNC);
	if (bad)
		len = 0;
	/* An empty part carries its cut to the next bytes, so a raw container
	 * (which stores no empty unflagged parts) decodes exactly as the live stream. */
	if (!len) {
		t->loss_next[xcc] |= cut;
		return 0;
	}
	bool before = cut || t->loss_next[xcc] || !t->gap[xcc].fed;
	t->loss_next[xcc] = cut;
	t->gap[xcc].fed = true;
	int rc = dec_feed(t->dec, xcc, bytes, len, before);
	if (rc < 0) {
		char m[SPM_ERRLEN];
		snprintf(m, sizeof(m), "writing decoded samples failed: %s", spmtap_strerror(rc));
		return fail(t, rc, m);
	}
	return 0;
}

static void consume(struct dthr *t, struct feeder_buf *b)
{
	struct dec_part parts[DEC_MAX_XCC];
	int n = feeder_split(t->f, b, parts, DEC_MAX_XCC);
	if (n < 0) {
		fail(t, n, "a retired buffer could not be split into XCC regions");
		return;
	}
	for (int i = 0; i < n; i++) {
		const struct dec_part *p = &parts[i];
		const unsigned char *data = (const unsigned char *)b->data + p->offset;
		if (t->o.part && !t->error) {
			int rc = t->o.part(t->o.part_user, b, p, data);
			if (rc < 0) {
				fail(t, rc, "");
				continue;
			}
		}
		dthr_feed(t, p->xcc, data, p->bytes, p->loss, p->bad);
	}
}

static void *run(void *arg)
{
	struct dthr *t = arg;
	for (;;) {
		struct feeder_buf *b;
		int r = feeder_next(t->f, &b, 100);
		if (r == -EAGAIN)
			continue;
		if (r < 0)
			break;
		/* After a failure keep taking buffers, so the feeder can still stop and release. */
		if (!t->error && !(t->o.skip_first && b->seq == 0))
			consume(t, b);
		feeder_put(t->f, b);
	}
	return NULL;
}

int dthr_start(struct dthr *t, struct feeder *f, char *err, size_t errlen)
{
	t->f = f;
	int rc = pthread_create(&t->tid, NULL, run, t);
	if (rc)
		return spmtap_seterr(err, errlen, rc, "cannot start the decoder thread: %s",
				     strerror(rc));
	t->started = true;
	return 0;
}

bool dthr_failed(const struct dthr *t)
{
	return atomic_load(&((struct dthr *)t)->failed);
}

int dthr_finish(struct dthr *t)
{
	if (t->started) {
		pthread_join(t->tid, NULL);
		t->started = false;
	}
	if (!t->error) {
		int rc = dec_flush(t->dec);
		if (rc < 0) {
			char m[SPM_ERRLEN];
			snprintf(m, sizeof(m), "writing decoded samples failed: %s", spmtap_strerror(rc));
			fail(t, rc, m);
		}
	}
	return t->error;
}

const char *dthr_error(const struct dthr *t)
{
	return t->msg;
}

int dthr_stats(const struct dthr *t, uint32_t xcc, struct dthr_xcc *out)
{
	if (xcc >= t->o.nstreams)
		return -EINVAL;
	*out = t->x[xcc];
	out->lost_samples = t->gap[xcc].lost;
	out->skipped_start = t->gap[xcc].skipped;
	int rc = dec_stats(t->dec, xcc, &out->dec);
	/* Before any sample everything dropped is still the start's. */
	if (!t->gap[xcc].have_last) {
		out->skipped_start = out->dec.dropped_bytes;
		out->resyncs = 0;
	} else {
		out->resyncs = out->dec.resyncs - t->gap[xcc].resyncs0;
	}
	return rc;
}

void dthr_close(struct dthr *t)
{
	if (!t)
		return;
	if (t->started)
		pthread_join(t->tid, NULL);
	dec_close(t->dec);
	agg_close(t->agg);
	free(t);
}
