/* SPDX-License-Identifier: MIT */
/*
 * Sample decoder (decode.h).  Two halves:
 *  - the stream state per XCC (this file): the pending bytes (a partial
 *    sample, or bytes under test while resynchronising), timestamp checks,
 *    gap detection, chunk assembly;
 *  - the column kernels (decode_cols.c): complete samples -> column arrays.
 * Rules and their reasons: docs/decode-csv.md.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/decode.h"
#include "decoder/decode_priv.h"
#include "log.h"
#include "le.h"

#define MOD "decode"

/* Samples whose timestamps must agree before an alignment is believed. */
#define HUNT_SAMPLES 8u
/* Warnings per XCC before they are rate-limited to one in RATE_EVERY. */
#define WARN_FIRST 5u
#define RATE_EVERY 1024u
/*
 * Padding between the columns of a chunk, in values.  Without it the
 * columns are cap * 8 bytes apart, a multiple of 4 KiB: the same 64
 * samples of every column fall into one L1 set, and 17 or more columns
 * (12 ways) evict each other while the block is written.  512 bytes
 * spread a block's 8 lines per column over distinct sets.
 */
#define COL_PAD 64u

enum ts_event { EV_NONE, EV_GAP, EV_BACK };

struct dec_xcc {
	/* the chunk being filled */
	uint32_t n;
	uint32_t flags;
	uint64_t first;
	uint64_t *ts;
	uint64_t *vals;
	uint64_t *sat;
	const uint64_t **vptr;
	const uint64_t **sptr;
	/*
	 * Pending bytes, always starting on a 32-byte line of the stream: while
	 * synced, the partial sample (< sample_bytes) or, right after a resync,
	 * the samples found in the search window; while hunting, the window.
	 */
	uint8_t *pb;
	uint32_t plen;
	bool hunting;
	bool after_resync; /* the next sample starts a new run: no backwards check */
	bool have_ts;
	uint64_t last_ts;
	uint64_t skipped; /* bytes skipped by the current hunt */
	/* gap detection: the last 64 deltas, median refreshed as they fill */
	uint64_t win[64];
	uint64_t ndeltas;
	uint64_t median;
	/* the lost-sample rule's period: the current run without gap or resync */
	uint64_t run_ts0, run_n;
	double period_prev; /* the mean delta of the run before, 0 if none yet */
	uint64_t nwarn;
	struct dec_stats st;
};

struct dec {
	struct dec_layout lay;
	uint32_t num_xcc;
	uint32_t cap;   /* samples per chunk, a multiple of 64 */
	uint32_t words; /* bitmap words per column */
	uint32_t cstride; /* u64s from one column's values to the next: cap + COL_PAD */
	uint32_t ncols;
	uint32_t nscalar; /* columns the SIMD path does not serve */
	uint32_t sb;    /* sample bytes */
	uint32_t pbcap; /* pending buffer: a hunt window plus one sample */
	struct dec_column *cols;
	struct dec_colplan *plan;
	struct dec_simd simd;
	dec_sink_fn sink;
	void *user;
	int err;
	struct dec_xcc x[];
};

static void xwarn(struct dec_xcc *x, uint32_t xi, const char *what, const char *detail)
{
	x->nwarn++;
	if (x->nwarn <= WARN_FIRST || x->nwarn % RATE_EVERY == 0)
		pr_warn(MOD, "xcc %u: %s%s (%" PRIu64 " loss, %" PRIu64 " corrupt, %" PRIu64
			" resync so far)%s", xi, what, detail, x->st.loss_events,
			x->st.corrupt_events, x->st.resyncs,
			x->nwarn == WARN_FIRST ? "; further warnings: one in 1024" : "");
}

/* ---- chunks ---------------------------------------------------------------------------- */

static int emit(struct dec *d, struct dec_xcc *x)
{
	if (d->err)
		return d->err;
	if (!x->n)
		return 0;
	struct dec_chunk c = {
		.xcc = (uint32_t)(x - d->x),
		.nsamples = x->n,
		.ncols = d->ncols,
		.flags = x->flags,
		.first_sample = x->first,
		.timestamp = x->ts,
		.values = x->vptr,
		.saturated = x->sptr,
		.cols = d->cols,
	};
	int r = d->sink ? d->sink(d->user, &c) : 0;
	x->first += x->n;
	memset(x->sat, 0, (size_t)d->ncols * d->words * sizeof(uint64_t));
	x->n = 0;
	x->flags = 0;
	if (r < 0)
		d->err = r;
	return d->err;
}

/* End the current chunk so that `flag` describes what precedes the next one. */
static int cut(struct dec *d, struct dec_xcc *x, uint32_t flag)
{
	int r = emit(d, x);
	x->flags |= flag;
	return r;
}

/* ---- timestamps -------------------------------------------------------------------------- */

/*
 * The expected delta is the median of the last 64, computed at 8, 16, 32, 64
 * deltas and then every 1024: robust to the gaps it must find, and it
 * follows SCLK changes (the sample period is in SCLK cycles, SPM.md 6.2)
 * within a few ms, at a cost that does not show per sample.
 */
static void refresh_median(struct dec_xcc *x)
{
	uint64_t t[64], n = x->ndeltas;
	uint32_t k = n < 64 ? (uint32_t)n : 64;
	for (uint32_t i = 0; i < k; i++) {
		uint64_t v = x->win[i];
		uint32_t j = i;
		for (; j > 0 && t[j - 1] > v; j--)
			t[j] = t[j - 1];
		t[j] = v;
	}
	x->median = t[k / 2];
	x->st.median_delta = x->median;
}

static void push_delta(struct dec_xcc *x, uint64_t delta)
{
	x->win[x->ndeltas % 64] = delta;
	x->ndeltas++;
	uint64_t n = x->ndeltas;
	if (n == 8 || n == 16 || n == 32 || n == 64 || n % 1024 == 0)
		refresh_median(x);
}

static bool is_gap(const struct dec_xcc *x, uint64_t delta)
{
	/* +1 tick: deltas of a slow timestamp clock alternate between n and n+1. */
	return x->median && delta > x->median + x->median / 2 + 1;
}

/*
 * THE rule for lost samples (every output's accounting reads it from here):
 * a gap is found with the median (is_gap), and counted as round(delta /
 * period) - 1 with the period measured as a mean over the run of samples
 * before it, a fraction of a tick.  The integer median would drift by one
 * sample per few thousand lost (1560.4 ticks is not 1560), so a long stall
 * would be miscounted.  The run rolls every RUN_ROLL deltas to follow SCLK
 * changes; a run younger than RUN_TRUST deltas defers to the one before.
 */
#define RUN_ROLL 4096u
#define RUN_TRUST 1024u

static double run_mean(const struct dec_xcc *x)
{
	return x->run_n >= 8 ? (double)(x->last_ts - x->run_ts0) / (double)x->run_n : 0;
}

static double gap_period(const struct dec_xcc *x)
{
	double run = run_mean(x);
	if (run > 0 && (x->run_n >= RUN_TRUST || x->period_prev <= 0))
		return run;
	return x->period_prev > 0 ? x->period_prev : (double)x->median;
}

/* A new run starts at t (the first sample, after a gap or a resync); call before last_ts = t. */
static void run_restart(struct dec_xcc *x, uint64_t t)
{
	double m = run_mean(x);
	if (m > 0)
		x->period_prev = m;
	x->run_ts0 = t;
	x->run_n = 0;
}

/* n more deltas without a gap; call after last_ts moved on. */
static void run_add(struct dec_xcc *x, uint64_t n)
{
	x->run_n += n;
	if (x->run_n >= RUN_ROLL)
		run_restart(x, x->last_ts);
}

static void count_gap(const struct dec *d, struct dec_xcc *x, uint64_t delta)
{
	double n = (double)delta / gap_period(x) + 0.5;
	uint64_t lost = n >= 2 ? (uint64_t)n - 1 : 0;
	x->st.gaps++;
	x->st.lost_samples_est += lost;
	x->flags |= DEC_CHUNK_GAP;
	pr_debug(MOD, "xcc %u: timestamp gap of %" PRIu64 " ticks (median %" PRIu64
		 "): about %" PRIu64 " samples lost", (unsigned)(x - d->x), delta, x->median,
		 lost);
}

/* One sample of scan_ts at p; false: stop before it (*ev says why). */
static bool scan_one(const struct dec *d, struct dec_xcc *x, const uint8_t *p, uint64_t *ts,
		     enum ts_event *ev)
{
	uint64_t t = le_get64(p);
	if (x->after_resync) {
		/* A resumed stream may legitimately start anywhere after the
		 * old one; it is only measured, never refused, or an alignment
		 * just found would be rejected again forever. */
		x->after_resync = false;
		if (x->have_ts && t > x->last_ts && is_gap(x, t - x->last_ts))
			count_gap(d, x, t - x->last_ts);
	} else if (x->have_ts) {
		if (t <= x->last_ts) {
			*ev = EV_BACK;
			return false;
		}
		uint64_t delta = t - x->last_ts;
		bool gap = is_gap(x, delta);
		if (gap) {
			if (ts > x->ts) {
				*ev = EV_GAP;
				return false;
			}
			count_gap(d, x, delta);
		}
		push_delta(x, delta);
		if (gap)
			run_restart(x, t);
		x->last_ts = t;
		*ts = t;
		if (!gap)
			run_add(x, 1);
		return true;
	}
	run_restart(x, t);
	x->last_ts = t;
	x->have_ts = true;
	*ts = t;
	return true;
}

/*
 * The steady state of scan_ts, for up to j samples that end no later than
 * the next median refresh: if every delta is positive and no gap, the
 * deltas are pushed and true returned; otherwise nothing changes (the
 * timestamps written to ts are beyond the accepted samples, hence unused)
 * and scan_ts goes sample by sample.
 */
static bool steady_ts(const struct dec *d, struct dec_xcc *x, const uint8_t *p, uint32_t j,
		      uint64_t *ts)
{
	/* is_gap's expression, wrapping alike */
	uint64_t lim = x->median ? x->median + x->median / 2 + 1 : UINT64_MAX;
	uint64_t last = x->last_ts, bad = 0;
	if (d->simd.ngroups && j) {
		bad = dec_simd_ts(p, d->sb, j, last, lim, ts);
		last = ts[j - 1];
	} else {
		for (uint32_t i = 0; i < j; i++) {
			uint64_t t = le_get64(p + (size_t)i * d->sb);
			bad |= (uint64_t)(t <= last) | (uint64_t)(t - last > lim);
			ts[i] = t;
			last = t;
		}
	}
	if (__builtin_expect(bad != 0, 0))
		return false;
	/* The window is read only by refresh_median, which from here on runs at
	 * the next multiple of 1024 deltas: only the last 64 before it count. */
	uint64_t nd = x->ndeltas, next = (nd / 1024 + 1) * 1024;
	uint32_t from = next - nd > 64 ? (uint32_t)(next - nd - 64) : 0;
	if (from < j) {
		uint64_t prev = from ? ts[from - 1] : x->last_ts;
		for (uint32_t i = from; i < j; i++) {
			x->win[(nd + i) % 64] = ts[i] - prev;
			prev = ts[i];
		}
	}
	x->ndeltas = nd + j;
	x->last_ts = last;
	run_add(x, j);
	if (x->ndeltas % 1024 == 0)
		refresh_median(x);
	return true;
}

/*
 * Check the timestamps of up to m complete samples at p and copy them to the
 * chunk; returns how many may be decoded now.  Stops before a sample that
 * went backwards (EV_BACK) or that follows a gap while the chunk already
 * holds samples (EV_GAP: the caller ends the chunk, and the next call counts
 * the gap).
 */
static uint32_t scan_ts(const struct dec *d, struct dec_xcc *x, const uint8_t *p, uint32_t m,
			enum ts_event *ev)
{
	*ev = EV_NONE;
	uint64_t *ts = x->ts + x->n;
	uint32_t i = 0, end;
	while (i < m) {
		end = i + 1;
		/* Past the first 64 deltas the only refreshes are at multiples of
		 * 1024: up to the next one, a run without events needs no test per
		 * sample beyond two compares. */
		if (!x->after_resync && x->have_ts && x->ndeltas >= 64) {
			uint64_t left = 1024 - x->ndeltas % 1024;
			uint32_t j = m - i < left ? m - i : (uint32_t)left;
			if (steady_ts(d, x, p + (size_t)i * d->sb, j, ts + i)) {
				i += j;
				continue;
			}
			end = i + j;
		}
		for (; i < end; i++)
			if (!scan_one(d, x, p + (size_t)i * d->sb, ts + i, ev))
				return i;
	}
	return m;
}

/*
 * The resync rule: a 32-byte line is the start of a sample if the HUNT_SAMPLES
 * timestamps read from it at sample_bytes steps strictly increase, and their
 * largest delta is at most twice the smallest plus 2 ticks.  Counter slots read
 * as u64 are per-sample deltas, not running values, so they do not climb
 * steadily; zero-filled lines do not increase at all.
 */
static bool plausible(const struct dec *d, const uint8_t *w)
{
	uint64_t prev = le_get64(w), mn = UINT64_MAX, mx = 0;
	for (uint32_t m = 1; m < HUNT_SAMPLES; m++) {
		uint64_t t = le_get64(w + (size_t)m * d->sb);
		if (t <= prev)
			return false;
		uint64_t delta = t - prev;
		mn = delta < mn ? delta : mn;
		mx = delta > mx ? delta : mx;
		prev = t;
	}
	return mx <= 2 * mn + 2 && mx >= mn; /* second term: 2*mn cannot have wrapped */
}

/* ---- runs of complete samples ---------------------------------------------------------- */

/*
 * Decode up to k complete samples at p.  *done = samples consumed.  Returns 1
 * if a timestamp went backwards at sample *done (the caller hunts from there),
 * 0, or a negative error from the sink.
 */
static int run(struct dec *d, struct dec_xcc *x, const uint8_t *p, uint32_t k, uint32_t *done)
{
	uint32_t i = 0;
	while (i < k) {
		/* One bitmap word at a time: 64 samples (<= 510 KiB worst case,
		 * 20 KiB for 320-byte samples) stay in L1/L2 between the SIMD pass
		 * and the scalar column passes. */
		uint32_t m = k - i;
		uint32_t room = 64 - (x->n & 63);
		m = m < room ? m : room;
		enum ts_event ev;
		const uint8_t *q = p + (size_t)i * d->sb;
		uint32_t a = scan_ts(d, x, q, m, &ev);
		/* Ask for the next block now: the decode is fast enough to wait on
		 * memory, and the hardware prefetchers alone (in a VM, with other
		 * streams) leave it there; measured: 0.56x -> 0.85x memcpy.  The
		 * SIMD path spreads these over its work (decode_simd.c). */
		size_t ahead = 0;
		if (k - i > m)
			ahead = (size_t)(k - i - m < m ? k - i - m : m) * d->sb;
		if (!d->simd.ngroups || !a) {
			for (size_t o = 0; o < ahead; o += 64)
				__builtin_prefetch(q + (size_t)m * d->sb + o);
			ahead = 0;
		}
		if (a) {
			if (d->nscalar)
				dec_decode_block(d->plan, d->ncols, q, d->sb, a, x->vals, x->sat,
						 d->cstride, d->words, x->n, &x->st.saturated,
						 false);
			if (d->simd.ngroups) {
				uint32_t s = dec_simd_block(&d->simd, q, d->sb, a, x->vals, x->sat,
							    x->n, &x->st.saturated,
							    q + (size_t)m * d->sb, ahead);
				if (s < a)
					dec_decode_block(d->plan, d->ncols, q + (size_t)s * d->sb,
							 d->sb, a - s, x->vals, x->sat, d->cstride,
							 d->words, x->n + s, &x->st.saturated, true);
			}
			x->n += a;
			x->st.samples += a;
			i += a;
		}
		int r = 0;
		if (x->n == d->cap || ev == EV_GAP)
			r = emit(d, x);
		if (r < 0)
			return r;
		if (ev == EV_BACK) {
			*done = i;
			r = emit(d, x);
			return r < 0 ? r : 1;
		}
	}
	*done = k;
	return 0;
}

static void start_hunt(struct dec_xcc *x)
{
	x->hunting = true;
	x->skipped = 0;
}

static void drop_front(struct dec_xcc *x, uint32_t n)
{
	memmove(x->pb, x->pb + n, x->plen - n);
	x->plen -= n;
}

int dec_feed(struct dec *d, uint32_t xi, const void *bytes, size_t len, bool loss_before)
{
	if (!d || xi >= d->num_xcc || (!bytes && len))
		return -EINVAL;
	if (d->err)
		return d->err;
	struct dec_xcc *x = &d->x[xi];
	const uint8_t *in = bytes;
	const uint32_t sb = d->sb;
	char msg[160];
	int r;

	x->st.bytes_fed += len;
	if (loss_before) {
		/* At the very start of a stream nothing was decoded yet: the caller
		 * asks for an alignment search, and there is nothing to warn about. */
		bool quiet = x->st.bytes_fed == len && x->plen == 0;
		x->st.loss_events++;
		snprintf(msg, sizeof(msg), "; dropping %u pending bytes, searching for the sample "
			 "alignment", x->plen);
		x->st.dropped_bytes += x->plen;
		x->plen = 0;
		if ((r = cut(d, x, DEC_CHUNK_LOSS)) < 0)
			return r;
		if (!quiet)
			xwarn(x, xi, "the kernel flagged loss before these bytes", msg);
		start_hunt(x);
	}
	if (!len)
		return 0;
	for (;;) {
		if (x->hunting) {
			size_t take = d->pbcap - x->plen;
			take = take < len ? take : len;
			memcpy(x->pb + x->plen, in, take);
			in += take;
			len -= take;
			x->plen += (uint32_t)take;
			uint32_t need = HUNT_SAMPLES * sb, pos = 0;
			bool found = false;
			for (; pos + need <= x->plen; pos += DEC_LINE_BYTES)
				if ((found = plausible(d, x->pb + pos)))
					break;
			x->skipped += pos;
			x->st.dropped_bytes += pos;
			drop_front(x, pos);
			if (!found) {
				if (!len)
					return 0;
				continue;
			}
			x->hunting = false;
			x->after_resync = true;
			x->st.resyncs++;
			x->flags |= DEC_CHUNK_RESYNC;
			pr_info(MOD, "xcc %u: sample alignment found after skipping %" PRIu64 " bytes",
				xi, x->skipped);
			continue;
		}
		if (x->plen) {
			if (x->plen < sb) {
				size_t take = sb - x->plen;
				take = take < len ? take : len;
				memcpy(x->pb + x->plen, in, take);
				in += take;
				len -= take;
				x->plen += (uint32_t)take;
				if (x->plen < sb)
					return 0;
			}
			uint32_t k = x->plen / sb, done;
			r = run(d, x, x->pb, k, &done);
			if (r < 0)
				return r;
			drop_front(x, done * sb);
			if (r == 1)
				goto backwards;
			continue;
		}
		if (len / sb) {
			size_t k = len / sb;
			/* run() counts in u32: feed huge regions in slices. */
			uint32_t kk = k > (1u << 20) ? (1u << 20) : (uint32_t)k, done;
			r = run(d, x, in, kk, &done);
			if (r < 0)
				return r;
			in += (size_t)done * sb;
			len -= (size_t)done * sb;
			if (r == 1) {
				/* Hunting copies from `in` into pb, which is empty. */
				goto backwards;
			}
			continue;
		}
		if (len)
			memcpy(x->pb, in, len);
		x->plen = (uint32_t)len;
		return 0;
backwards:
		x->st.corrupt_events++;
		snprintf(msg, sizeof(msg), " (sample %" PRIu64 " of %u bytes); stream corrupt or "
			 "layout wrong, resynchronising", x->first + x->n, sb);
		xwarn(x, xi, "timestamp did not increase", msg);
		start_hunt(x);
	}
}

int dec_flush(struct dec *d)
{
	if (!d)
		return -EINVAL;
	for (uint32_t i = 0; i < d->num_xcc; i++) {
		int r = emit(d, &d->x[i]);
		if (r < 0)
			return r;
	}
	return d->err;
}

int dec_stats(const struct dec *d, uint32_t xi, struct dec_stats *st)
{
	if (!d || xi >= d->num_xcc || !st)
		return -EINVAL;
	*st = d->x[xi].st;
	st->partial_bytes = d->x[xi].plen;
	st->hunting = d->x[xi].hunting;
	return 0;
}

uint32_t dec_ncols(const struct dec *d) { return d->ncols; }
const struct dec_column *dec_columns(const struct dec *d) { return d->cols; }
const struct dec_layout *dec_layout(const struct dec *d) { return &d->lay; }

/* ---- setup -------------------------------------------------------------------------------- */

/* The group of column c in dec_simd.group order: global, then SE sum or SE 0, 1, ... */
static uint32_t group_of(const struct dec *d, uint32_t c)
{
	const struct dec_counter *k = &d->lay.counters[d->cols[c].counter];
	if (k->segment == DEC_SEG_GLOBAL)
		return 0;
	return 1 + (d->cols[c].se >= 0 ? (uint32_t)d->cols[c].se : 0);
}

/* Add column c to group g if the SIMD path can serve it. */
static bool simd_col(struct dec *d, struct dec_simd_group *g, uint32_t c, uint32_t lines)
{
	struct dec_simd *s = &d->simd;
	const struct dec_counter *k = &d->lay.counters[d->cols[c].counter];
	uint32_t lo = (uint32_t)k->slot, line = lo / 16, lane = lo % 16;
	bool wide = k->hi_slot >= 0;
	if (wide && ((uint32_t)k->hi_slot != lo + 16 || line % 2))
		return false;
	uint32_t q = 0, off = line / 2 * 2 * DEC_LINE_BYTES;
	while (q < g->npairs && g->pair[q].off != off)
		q++;
	if (q == g->npairs) {
		if (q == DEC_SIMD_MAX_PAIRS)
			return false;
		struct dec_simd_pair *np = &g->pair[q];
		np->off = off;
		np->two = (line | 1) < lines;
		for (uint32_t i = 0; i < 16; i++)
			np->keep[i] = 0xFFFF;
		g->npairs++;
	}
	struct dec_simd_pair *pp = &g->pair[q];
	uint32_t blk = (line % 2) * 2 + lane % 2;
	struct dec_simd_col *sc = &s->col[s->ncols++];
	sc->voff = (size_t)c * d->cstride;
	sc->soff = c * d->words;
	if (g->u16) {
		sc->lo = (uint16_t)((q * 2 + line % 2) * 8 + lane % 8);
		sc->hi = (uint16_t)(sc->lo + 8); /* the odd line, same slot */
		sc->half = (uint8_t)(lane / 8 * 3);
	} else {
		sc->lo = (uint16_t)(q * 32 + blk * 8 + lane / 2);
		sc->hi = (uint16_t)(sc->lo + 16);
	}
	pp->blocks |= 1u << blk;
	if (wide) {
		pp->blocks |= 1u << (blk + 2);
		pp->keep[lane] = 0;
		pp->pairsel[lane] = 0xFFFF;
	}
	d->plan[c].simd = true;
	g->ncols++;
	return true;
}

/*
 * Pack the pairs of a summing group where each line's used slots sit in one
 * 16-byte half (decode_priv.h), and move its columns' vectors to the packed
 * numbering: pair * 32 + (slot % 2) * 8 + line * 4 + (slot % 8) / 2.
 */
static void pack_pairs(struct dec_simd *s, struct dec_simd_group *g)
{
	for (uint32_t q = 0; q < g->npairs; q++) {
		struct dec_simd_pair *pp = &g->pair[q];
		uint32_t used[2] = {0, 0};
		bool wide = false;
		for (uint32_t i = g->col0; i < g->col0 + g->ncols; i++) {
			const struct dec_simd_col *sc = &s->col[i];
			if (sc->lo / 32 != q)
				continue;
			uint32_t blk = sc->lo % 32 / 8, lane = sc->lo % 8 * 2 + blk % 2;
			used[blk / 2] |= 1u << lane;
			if (i >= g->col0 + g->nnarrow)
				used[1] |= 1u << lane, wide = true;
		}
		uint32_t half[2];
		bool ok = pp->two;
		for (uint32_t l = 0; l < 2; l++) {
			half[l] = used[l] & 0xFF00u ? 1 : 0;
			ok &= !(used[l] & 0xFF00u) || !(used[l] & 0x00FFu);
		}
		if (!ok || (wide && used[0] && used[1] && half[0] != half[1]))
			continue;
		if (wide)
			half[1] = half[0] = used[0] ? half[0] : half[1];
		uint16_t keep[16], sel[16];
		for (uint32_t k = 0; k < 8; k++) {
			keep[k] = pp->keep[half[0] * 8 + k];
			sel[k] = 0;
			keep[8 + k] = 0xFFFF;
			sel[8 + k] = pp->pairsel[half[1] * 8 + k];
		}
		memcpy(pp->keep, keep, sizeof(keep));
		memcpy(pp->pairsel, sel, sizeof(sel));
		pp->packed = true;
		pp->wide = wide;
		pp->hoff[0] = half[0] * 16;
		pp->hoff[1] = half[1] * 16;
		pp->blocks = 3;
		for (uint32_t i = g->col0; i < g->col0 + g->ncols; i++) {
			struct dec_simd_col *sc = &s->col[i];
			if (sc->lo / 32 != q)
				continue;
			uint32_t blk = sc->lo % 32 / 8, lane = sc->lo % 8 * 2 + blk % 2;
			sc->lo = (uint16_t)(q * 32 + lane % 2 * 8 + blk / 2 * 4 + lane % 8 / 2);
			sc->hi = (uint16_t)(sc->lo + 4);
		}
	}
}

/*
 * The same for a group with nothing to sum (u16): a packed pair's 8 rows are
 * line 0's used half and line 1's, one 16-bit transpose instead of two; a
 * column's vector is pair * 16 + slot % 8, its 128-bit half the line.
 */
static void pack_pairs16(struct dec_simd *s, struct dec_simd_group *g)
{
	for (uint32_t q = 0; q < g->npairs; q++) {
		struct dec_simd_pair *pp = &g->pair[q];
		uint32_t used[2] = {0, 0};
		for (uint32_t i = g->col0; i < g->col0 + g->ncols; i++) {
			const struct dec_simd_col *sc = &s->col[i];
			if (sc->lo / 16 != q)
				continue;
			uint32_t line = sc->lo % 16 / 8, lane = sc->lo % 8 + (sc->half & 1) * 8;
			used[line] |= 1u << lane;
			if (i >= g->col0 + g->nnarrow)
				used[1] |= 1u << lane;
		}
		bool ok = pp->two;
		for (uint32_t l = 0; l < 2; l++)
			ok &= !(used[l] & 0xFF00u) || !(used[l] & 0x00FFu);
		if (!ok)
			continue;
		pp->packed = true;
		pp->hoff[0] = used[0] & 0xFF00u ? 16 : 0;
		pp->hoff[1] = used[1] & 0xFF00u ? 16 : 0;
		for (uint32_t i = g->col0; i < g->col0 + g->ncols; i++) {
			struct dec_simd_col *sc = &s->col[i];
			if (sc->lo / 16 != q)
				continue;
			uint32_t line = sc->lo % 16 / 8;
			sc->lo = (uint16_t)(q * 16 + sc->lo % 8);
			sc->hi = sc->lo;
			sc->half = (uint8_t)(line | 2); /* hi: line 1, the upper half */
		}
	}
}

/* Hand the columns the SIMD path can serve to it (decode_priv.h). */
static int plan_simd(struct dec *d, bool per_se)
{
	const struct dec_layout *l = &d->lay;
	struct dec_simd *s = &d->simd;
	if (!dec_simd_available())
		return 0;
	uint32_t ng = 1 + (l->se_lines ? (per_se ? l->num_se : 1) : 0);
	s->group = calloc(ng, sizeof(*s->group));
	s->col = calloc(d->ncols ? d->ncols : 1, sizeof(*s->col));
	s->scratch = aligned_alloc(32, DEC_SIMD_SCRATCH);
	if (!s->group || !s->col || !s->scratch)
		return -ENOMEM;
	uint32_t gbytes = l->global_lines * DEC_LINE_BYTES, seg = l->se_lines * DEC_LINE_BYTES;
	for (uint32_t gi = 0; gi < ng; gi++) {
		struct dec_simd_group *g = &s->group[s->ngroups];
		memset(g, 0, sizeof(*g));
		g->base = gi == 0 ? 0 : gbytes + (per_se ? (gi - 1) * seg : 0);
		g->nse = gi == 0 || per_se ? 1 : l->num_se;
		g->u16 = g->nse == 1;
		g->stride = seg;
		g->col0 = s->ncols;
		uint32_t lines = gi == 0 ? l->global_lines : l->se_lines;
		/* 16-bit counters first, then 32-bit ones */
		for (uint32_t pass = 0; pass < 2; pass++)
			for (uint32_t c = 0; c < d->ncols; c++) {
				if (group_of(d, c) != gi ||
				    (l->counters[d->cols[c].counter].hi_slot >= 0) != pass)
					continue;
				if (simd_col(d, g, c, lines))
					g->nnarrow += !pass;
			}
		if (g->u16)
			pack_pairs16(s, g);
		else
			pack_pairs(s, g);
		if (g->ncols)
			s->ngroups++;
	}
	/* Work per sample is about SEs summed times line pairs loaded. */
	uint32_t w = 0, acc = 0;
	for (uint32_t gi = 0; gi < s->ngroups; gi++)
		w += s->group[gi].nse * s->group[gi].npairs;
	for (uint32_t gi = 0; gi < s->ngroups; gi++) {
		struct dec_simd_group *g = &s->group[gi];
		g->pf0 = acc * 256 / w;
		acc += g->nse * g->npairs;
		g->pf1 = gi + 1 == s->ngroups ? 256 : acc * 256 / w;
	}
	return 0;
}

static int plan_columns(struct dec *d, bool per_se)
{
	const struct dec_layout *l = &d->lay;
	uint32_t n = 0;
	for (uint32_t i = 0; i < l->ncounters; i++)
		n += (per_se && l->counters[i].segment == DEC_SEG_SE) ? l->num_se : 1;
	d->cols = calloc(n, sizeof(*d->cols));
	d->plan = calloc(n, sizeof(*d->plan));
	if (!d->cols || !d->plan)
		return -ENOMEM;
	d->ncols = n;
	uint32_t seg_bytes = l->se_lines * DEC_LINE_BYTES, gbytes = l->global_lines * DEC_LINE_BYTES;
	uint32_t c = 0;
	for (uint32_t i = 0; i < l->ncounters; i++) {
		const struct dec_counter *k = &l->counters[i];
		bool wide = k->hi_slot >= 0;
		uint32_t lo = (uint32_t)k->slot * 2, hi = wide ? (uint32_t)k->hi_slot * 2 : 0;
		if (k->segment == DEC_SEG_GLOBAL || !per_se) {
			struct dec_colplan *p = &d->plan[c];
			struct dec_column *col = &d->cols[c++];
			snprintf(col->name, sizeof(col->name), "%s", k->name);
			col->counter = i;
			col->se = -1;
			col->wide = wide;
			uint32_t base = k->segment == DEC_SEG_GLOBAL ? 0 : gbytes;
			p->lo = base + lo;
			p->hi = base + hi;
			p->nse = k->segment == DEC_SEG_GLOBAL ? 1 : l->num_se;
			p->stride = seg_bytes;
			p->wide = wide;
			continue;
		}
		for (uint32_t s = 0; s < l->num_se; s++) {
			struct dec_colplan *p = &d->plan[c];
			struct dec_column *col = &d->cols[c++];
			snprintf(col->name, sizeof(col->name), "%s[se%u]", k->name,
				 (unsigned)(uint8_t)s);
			col->counter = i;
			col->se = (int32_t)s;
			col->wide = wide;
			p->lo = gbytes + s * seg_bytes + lo;
			p->hi = gbytes + s * seg_bytes + hi;
			p->nse = 1;
			p->stride = seg_bytes;
			p->wide = wide;
		}
	}
	return 0;
}

void dec_close(struct dec *d)
{
	if (!d)
		return;
	for (uint32_t i = 0; i < d->num_xcc; i++) {
		struct dec_xcc *x = &d->x[i];
		free(x->ts);
		free(x->vals);
		free(x->sat);
		free(x->vptr);
		free(x->sptr);
		free(x->pb);
	}
	free(d->cols);
	free(d->plan);
	free(d->simd.group);
	free(d->simd.col);
	free(d->simd.scratch);
	free(d->lay.counters);
	free(d);
}

int dec_open(const struct dec_layout *layout, uint32_t num_xcc, const struct dec_opts *opts,
	     dec_sink_fn sink, void *user, struct dec **out, char *err, size_t errlen)
{
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!layout)
		return spmtap_seterr(err, errlen, EINVAL, "no layout");
	if (num_xcc < 1 || num_xcc > DEC_DECODE_MAX_XCC)
		return spmtap_seterr(err, errlen, EINVAL, "num_xcc %u is out of range [1, %u]",
				     num_xcc, DEC_DECODE_MAX_XCC);
	bool per_se = false, no_simd = false;
	uint32_t chunk = DEC_CHUNK_DEFAULT;
	if (opts) {
		if (opts->sz < sizeof(size_t))
			return spmtap_seterr(err, errlen, EINVAL, "dec_opts.sz is not set");
		if (opts->sz >= offsetof(struct dec_opts, per_se) + sizeof(opts->per_se))
			per_se = opts->per_se;
		if (opts->sz >= offsetof(struct dec_opts, chunk_samples) + sizeof(uint32_t) &&
		    opts->chunk_samples)
			chunk = opts->chunk_samples;
		if (opts->sz >= offsetof(struct dec_opts, no_simd) + sizeof(bool))
			no_simd = opts->no_simd;
	}
	if (chunk > DEC_CHUNK_MAX)
		return spmtap_seterr(err, errlen, EINVAL, "chunk_samples %u is more than %u", chunk,
				     DEC_CHUNK_MAX);
	struct dec *d = calloc(1, sizeof(*d) + num_xcc * sizeof(struct dec_xcc));
	if (!d)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	d->lay = *layout;
	d->lay.counters = NULL;
	if (layout->ncounters && layout->counters) {
		d->lay.counters = malloc(layout->ncounters * sizeof(*layout->counters));
		if (!d->lay.counters) {
			free(d);
			return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
		}
		memcpy(d->lay.counters, layout->counters,
		       layout->ncounters * sizeof(*layout->counters));
	}
	d->num_xcc = num_xcc;
	int r = dec_layout_validate(&d->lay, err, errlen);
	if (r)
		goto fail;
	d->sink = sink;
	d->user = user;
	d->sb = d->lay.sample_bytes;
	d->cap = (chunk + 63) & ~63u;
	d->words = d->cap / 64;
	d->pbcap = (HUNT_SAMPLES + 1) * d->sb;
	if ((r = plan_columns(d, per_se)))
		goto nomem;
	d->cstride = d->cap + COL_PAD;
	if (!no_simd && (r = plan_simd(d, per_se)))
		goto nomem;
	for (uint32_t c = 0; c < d->ncols; c++)
		d->nscalar += !d->plan[c].simd;
	for (uint32_t i = 0; i < num_xcc; i++) {
		struct dec_xcc *x = &d->x[i];
		x->ts = malloc(d->cap * sizeof(uint64_t));
		x->vals = malloc((size_t)d->cstride * d->ncols * sizeof(uint64_t));
		x->sat = calloc((size_t)d->words * d->ncols, sizeof(uint64_t));
		x->vptr = malloc(d->ncols * sizeof(*x->vptr));
		x->sptr = malloc(d->ncols * sizeof(*x->sptr));
		x->pb = malloc(d->pbcap);
		if (!x->ts || !x->vals || !x->sat || !x->vptr || !x->sptr || !x->pb)
			goto nomem;
		for (uint32_t c = 0; c < d->ncols; c++) {
			x->vptr[c] = x->vals + (size_t)c * d->cstride;
			x->sptr[c] = x->sat + (size_t)c * d->words;
		}
	}
	*out = d;
	return 0;
nomem:
	r = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
fail:
	dec_close(d);
	return r;
}
