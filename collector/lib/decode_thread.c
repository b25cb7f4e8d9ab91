/* SPDX-License-Identifier: MIT */
/* The feeder's consumer: parts -> decoder -> aggregation -> sink (decode_thread.h). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "collector/lib/aggregate.h"
#include "collector/lib/cost.h"
#include "collector/lib/decode_thread.h"
#include "decoder/layout.h"
#include "log.h"
#include "spm/catalog.h"

/* Where an XCC's first sample came out: what the decoder dropped before it was the start's. */
struct start {
	bool seen;         /* a sample came out */
	bool fed;          /* any bytes yet: the first are fed with loss_before */
	uint64_t skipped;  /* decoder's dropped bytes when the first sample came out */
	uint64_t resyncs0; /* and its resync count then */
};

/*
 * What a 16-bit counter without a catalog peak counted per slot, so that the
 * summary can say from the observed values which interval would have avoided
 * its saturation (dthr_saturation_interval): a histogram of the unsaturated
 * per-slot values over [0, 65535) and the saturated cells, per counter.
 */
#define SAT_BINS 64u
struct satgroup {
	char base[DEC_MAX_NAME + 1];
	uint64_t hist[SAT_BINS];
	uint64_t sat;
};

struct dthr {
	struct dthr_opts o;
	struct start start[DEC_MAX_XCC];
	uint64_t lost_seen[DEC_MAX_XCC]; /* decode thread's: what lost_live already holds */
	atomic_uint_least64_t lost_live;
	struct dec *dec;
	struct agg *agg;
	uint32_t sample_bytes;
	struct dthr_xcc x[DEC_MAX_XCC];
	atomic_uint_least64_t *sat;     /* [xcc * ncols + col]: saturated output cells (read live) */
	struct satgroup *grp;           /* decode thread's until dthr_finish */
	uint32_t ngrp;
	int32_t *col_grp;               /* per decoder column: its group, -1 not observed */
	uint32_t *col_nse;              /* per decoder column: slots summed (SEs) */
	uint32_t ncols;
	bool loss_next[DEC_MAX_XCC]; /* the previous part was flagged: this one may not continue it */

	struct feeder *f;
	uint64_t cpu_ns, part_cpu_ns; /* the thread's CPU, and of it the part callback's (cost.h) */
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

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * After aggregation: count the saturated cells a writer will show empty,
 * per XCC and output column (the summary and the accounting's "saturated"),
 * and time the sink, which blocks while the writer's queue is full.
 */
static int count_sink(void *user, const struct dec_chunk *c)
{
	struct dthr *t = user;
	if (t->sat && c->xcc < t->o.shape.nstreams && c->saturated) {
		uint32_t words = (c->nsamples + 63) / 64;
		for (uint32_t k = 0; k < c->ncols && k < t->ncols; k++) {
			uint64_t n = 0;
			for (uint32_t w = 0; w < words; w++)
				n += (uint64_t)__builtin_popcountll(c->saturated[k][w]);
			if (n)
				atomic_fetch_add_explicit(&t->sat[(size_t)c->xcc * t->ncols + k], n,
							  memory_order_relaxed);
		}
	}
	if (!t->o.sink)
		return 0;
	uint64_t t0 = mono_ns();
	int rc = t->o.sink(t->o.sink_user, c);
	if (c->xcc < DEC_MAX_XCC)
		t->x[c->xcc].sink_wait_ns += mono_ns() - t0;
	return rc;
}

/* Per-slot values of the observed columns into their counter's histogram. */
static void observe(struct dthr *t, const struct dec_chunk *c)
{
	for (uint32_t k = 0; k < c->ncols; k++) {
		int32_t g = t->col_grp[k];
		if (g < 0)
			continue;
		struct satgroup *sg = &t->grp[g];
		uint32_t nse = t->col_nse[k];
		for (uint32_t i = 0; i < c->nsamples; i++) {
			if (dec_chunk_saturated(c, k, i)) {
				sg->sat++;
				continue;
			}
			uint64_t b = c->values[k][i] / nse * SAT_BINS / 65535u;
			sg->hist[b < SAT_BINS ? b : SAT_BINS - 1]++;
		}
	}
}

/*
 * Decoder columns of 16-bit counters the catalog has no peak for (those
 * with one are forecast before the run): grouped by counter name.
 */
static int observe_setup(struct dthr *t, const struct dec_layout *l)
{
	uint32_t n = dec_ncols(t->dec);
	const struct dec_column *cols = dec_columns(t->dec);
	enum spm_gfx gfx;
	const struct spm_catalog *cat = NULL;
	if (spm_gfx_parse(l->gfx, &gfx, NULL, 0) == 0)
		spm_catalog_get(gfx, &cat, NULL, 0);
	t->col_grp = calloc(n ? n : 1, sizeof(*t->col_grp));
	t->col_nse = calloc(n ? n : 1, sizeof(*t->col_nse));
	t->grp = calloc(n ? n : 1, sizeof(*t->grp));
	if (!t->col_grp || !t->col_nse || !t->grp)
		return -ENOMEM;
	for (uint32_t k = 0; k < n; k++) {
		const struct dec_counter *dc = &l->counters[cols[k].counter];
		char base[DEC_MAX_NAME + 1];
		snprintf(base, sizeof(base), "%s", dc->name);
		base[strcspn(base, "[")] = 0;
		const struct spm_counter *sc = NULL;
		t->col_grp[k] = -1;
		t->col_nse[k] = cols[k].se < 0 && dc->segment == DEC_SEG_SE && l->num_se ? l->num_se : 1;
		if (dc->hi_slot >= 0 ||
		    (cat && spm_catalog_lookup(cat, base, &sc, NULL, 0) == 0 && spm_counter_peak(sc, NULL) > 0))
			continue;
		uint32_t g = 0;
		while (g < t->ngrp && strcmp(t->grp[g].base, base))
			g++;
		if (g == t->ngrp)
			snprintf(t->grp[t->ngrp++].base, sizeof(t->grp[0].base), "%s", base);
		t->col_grp[k] = (int32_t)g;
	}
	return 0;
}

uint32_t dthr_saturation_interval_of(const uint64_t *hist, uint32_t nbins, uint64_t sat, uint32_t interval)
{
	if (!sat || !interval || !nbins)
		return 0;
	/*
	 * The saturated cells' values are unknown, only >= 65535.  Mirror the
	 * top of the observed distribution: if the highest unsaturated cells as
	 * many as the saturated ones start at v, take the peak as 65535 + (65535
	 * - v); when fewer cells were unsaturated than saturated, at least twice
	 * the limit.
	 */
	uint64_t acc = 0;
	double v = 0;
	for (uint32_t b = nbins; b-- > 0;) {
		acc += hist[b];
		if (acc >= sat) {
			v = (double)b * 65535.0 / nbins;
			break;
		}
	}
	double peak = 2 * 65535.0 - v;
	double iv = (double)interval * 65534.0 / peak;
	uint32_t r = (uint32_t)iv;
	r -= r % 32;
	return r < 32 ? 32 : r;
}

uint32_t dthr_saturation_interval(const struct dthr *t, const char *counter, uint32_t interval)
{
	for (uint32_t g = 0; g < t->ngrp; g++)
		if (!strcasecmp(t->grp[g].base, counter))
			return dthr_saturation_interval_of(t->grp[g].hist, SAT_BINS, t->grp[g].sat, interval);
	return 0;
}

/* The aggregator needs the decoder's columns, so it exists only after dec_open. */
static int to_agg(void *user, const struct dec_chunk *c)
{
	struct dthr *t = user;
	if (t->ngrp)
		observe(t, c);
	if (c->xcc < DEC_MAX_XCC && c->nsamples && !t->start[c->xcc].seen) {
		struct start *g = &t->start[c->xcc];
		struct dec_stats st;
		if (dec_stats(t->dec, c->xcc, &st) == 0) {
			g->skipped = st.dropped_bytes;
			g->resyncs0 = st.resyncs;
		}
		g->seen = true;
	}
	return agg_sink(t->agg, c);
}

int dthr_open(struct dthr **out, const struct dthr_opts *o, char *err, size_t errlen)
{
	*out = NULL;
	if (!o || !o->shape.nstreams || o->shape.nstreams > DEC_MAX_XCC)
		return spmtap_seterr(err, errlen, EINVAL, "decoder: need 1..%u streams", DEC_MAX_XCC);
	struct dthr *t = calloc(1, sizeof(*t));
	if (!t)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	t->o = *o;
	*out = t;
	if (!o->layout)
		return 0;
	*out = NULL;
	t->sample_bytes = o->layout->sample_bytes;
	struct dec_opts dopts = { .sz = sizeof(dopts), .per_se = o->per_se, .chunk_samples = DTHR_CHUNK_SAMPLES };
	int rc = dec_open(o->layout, o->shape.nstreams, &dopts, to_agg, t, &t->dec, err, errlen);
	if (rc == 0)
		rc = agg_open(dec_columns(t->dec), dec_ncols(t->dec), o->requests, o->nreq,
			      o->per_instance, count_sink, t, &t->agg, err, errlen);
	if (rc == 0 && observe_setup(t, o->layout) < 0)
		rc = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	if (rc == 0) {
		t->ncols = agg_ncols(t->agg);
		t->sat = calloc((size_t)o->shape.nstreams * (t->ncols ? t->ncols : 1), sizeof(*t->sat));
		if (!t->sat)
			rc = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	}
	if (rc < 0) {
		dthr_close(t);
		return rc;
	}
	*out = t;
	return 0;
}

uint32_t dthr_ncols(const struct dthr *t)
{
	return t->agg ? agg_ncols(t->agg) : 0;
}

const struct dec_column *dthr_columns(const struct dthr *t)
{
	return t->agg ? agg_columns(t->agg) : NULL;
}

uint32_t dthr_sample_bytes(const struct dthr *t)
{
	return t->sample_bytes;
}

int dthr_feed(struct dthr *t, uint32_t xcc, const void *bytes, size_t len, bool loss, bool bad)
{
	if (xcc >= t->o.shape.nstreams)
		return fail(t, -EINVAL, "a part names an XCC beyond the stream count");
	struct dthr_xcc *x = &t->x[xcc];
	x->parts++;
	x->loss_parts += loss;
	x->bad_parts += bad;
	x->bytes += len;
	if (t->error || !t->dec)
		return t->error;
	/* Untrusted framing: its bytes are not fed, and the stream cannot continue across it. */
	bool cut = bad || (loss && t->o.shape.loss == SPM_LOSS_CUTS_LINES);
	if (bad)
		len = 0;
	/* An empty part carries its cut to the next bytes, so a raw container
	 * (which stores no empty unflagged parts) decodes exactly as the live stream. */
	if (!len) {
		t->loss_next[xcc] |= cut;
		return 0;
	}
	bool before = cut || t->loss_next[xcc] || !t->start[xcc].fed;
	t->loss_next[xcc] = cut;
	t->start[xcc].fed = true;
	int rc = dec_feed(t->dec, xcc, bytes, len, before);
	struct dec_stats st;
	if (dec_stats(t->dec, xcc, &st) == 0 && st.lost_samples_est != t->lost_seen[xcc]) {
		atomic_fetch_add(&t->lost_live, st.lost_samples_est - t->lost_seen[xcc]);
		t->lost_seen[xcc] = st.lost_samples_est;
	}
	if (rc < 0) {
		char m[SPM_ERRLEN];
		snprintf(m, sizeof(m), "writing decoded samples failed: %s", spmtap_strerror(rc));
		return fail(t, rc, m);
	}
	return 0;
}

static void consume(struct dthr *t, struct feeder_buf *b)
{
	for (uint32_t i = 0; i < b->nparts; i++) {
		const struct dec_part *p = &b->parts[i];
		const unsigned char *data = (const unsigned char *)b->data + p->offset;
		if (t->o.part && !t->error) {
			uint64_t c0 = cost_thread_cpu_ns();
			int rc = t->o.part(t->o.part_user, b, p, data);
			t->part_cpu_ns += cost_thread_cpu_ns() - c0;
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
	pthread_setname_np(pthread_self(), "spmtap-decode"); /* top -H, perf --sort comm */
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
	t->cpu_ns = cost_thread_cpu_ns();
	return NULL;
}

void dthr_cpu(const struct dthr *t, uint64_t *thread_ns, uint64_t *part_ns)
{
	*thread_ns = t->cpu_ns;
	*part_ns = t->part_cpu_ns;
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
	if (!t->error && t->dec) {
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
	if (xcc >= t->o.shape.nstreams)
		return -EINVAL;
	*out = t->x[xcc];
	out->skipped_start = t->start[xcc].skipped;
	memset(&out->dec, 0, sizeof(out->dec));
	int rc = t->dec ? dec_stats(t->dec, xcc, &out->dec) : 0;
	/* Before any sample everything dropped is still the start's. */
	if (!t->start[xcc].seen) {
		out->skipped_start = out->dec.dropped_bytes;
		out->resyncs = 0;
	} else {
		out->resyncs = out->dec.resyncs - t->start[xcc].resyncs0;
	}
	return rc;
}

uint64_t dthr_lost_live(const struct dthr *t)
{
	return atomic_load(&((struct dthr *)t)->lost_live);
}

uint64_t dthr_saturated(const struct dthr *t, uint32_t xcc, uint32_t col)
{
	if (!t->sat || xcc >= t->o.shape.nstreams || col >= t->ncols)
		return 0;
	return atomic_load_explicit(&t->sat[(size_t)xcc * t->ncols + col], memory_order_relaxed);
}

void dthr_close(struct dthr *t)
{
	if (!t)
		return;
	free(t->sat);
	free(t->grp);
	free(t->col_grp);
	free(t->col_nse);
	if (t->started)
		pthread_join(t->tid, NULL);
	dec_close(t->dec);
	agg_close(t->agg);
	free(t);
}
