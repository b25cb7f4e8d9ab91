/* SPDX-License-Identifier: MIT */
/*
 * decoder/decode*.c, differential: the SIMD path (the default) and the
 * scalar kernels (dec_opts.no_simd) over random layouts and random streams
 * -- gaps, SCLK changes, saturation, kernel-flagged loss, corrupt bytes and
 * resyncs, several XCCs, feeds cut anywhere -- must hand the sink the same
 * chunks (timestamps, values, saturation bits, flags, sizes, first_sample)
 * and end with the same dec_stats.  Every decoded sample whose timestamp is
 * one the generator wrote is also checked against a straightforward decode
 * of that sample's bytes written here (SPM.md 5.6), so that both paths are
 * held to the sample format, not only to each other.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/decode.h"
#include "decoder/layout.h"
#include "lib/testenv.h"

static uint64_t rng_state;
static uint64_t rnd(void)
{
	uint64_t x = (rng_state += 0x9E3779B97F4A7C15ull);
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}
static uint32_t below(uint32_t n) { return n ? (uint32_t)(rnd() % n) : 0; }

/* ---- every chunk, as handed over --------------------------------------------------------- */

struct rec {
	uint32_t ncols;
	size_t n, alloc;
	uint64_t *ts, *v;
	uint8_t *sat;
	uint32_t *xcc;
	size_t nchunks, calloc_;
	uint64_t *meta; /* per chunk: xcc, nsamples, flags, first_sample */
};

static int rec_sink(void *user, const struct dec_chunk *c)
{
	struct rec *k = user;
	k->ncols = c->ncols;
	if (k->nchunks == k->calloc_) {
		k->calloc_ = k->calloc_ ? k->calloc_ * 2 : 64;
		k->meta = realloc(k->meta, k->calloc_ * 4 * sizeof(uint64_t));
	}
	uint64_t *m = k->meta + k->nchunks++ * 4;
	m[0] = c->xcc, m[1] = c->nsamples, m[2] = c->flags, m[3] = c->first_sample;
	if (k->n + c->nsamples > k->alloc) {
		k->alloc = (k->n + c->nsamples) * 2;
		k->ts = realloc(k->ts, k->alloc * 8);
		k->v = realloc(k->v, k->alloc * c->ncols * 8);
		k->sat = realloc(k->sat, k->alloc * c->ncols);
		k->xcc = realloc(k->xcc, k->alloc * 4);
	}
	for (uint32_t i = 0; i < c->nsamples; i++) {
		size_t r = k->n + i;
		k->ts[r] = c->timestamp[i];
		k->xcc[r] = c->xcc;
		for (uint32_t j = 0; j < c->ncols; j++) {
			k->v[r * c->ncols + j] = c->values[j][i];
			k->sat[r * c->ncols + j] = dec_chunk_saturated(c, j, i);
		}
	}
	/* bits past nsamples must be clear: a sink may scan whole words */
	for (uint32_t j = 0; j < c->ncols; j++)
		for (uint32_t i = c->nsamples; i < (c->nsamples + 63) / 64 * 64; i++)
			if (dec_chunk_saturated(c, j, i))
				return -EBADMSG;
	k->n += c->nsamples;
	return 0;
}

static void rec_free(struct rec *k)
{
	free(k->ts), free(k->v), free(k->sat), free(k->xcc), free(k->meta);
	memset(k, 0, sizeof(*k));
}

/* ---- random layouts ---------------------------------------------------------------------- */

static struct dec_layout *random_layout(void)
{
	static const uint32_t ses[] = {1, 2, 3, 4, 4, 4, 8, 6};
	struct dec_layout *l = calloc(1, sizeof(*l));
	snprintf(l->gfx, sizeof(l->gfx), "gfx942");
	l->num_se = ses[below(8)];
	l->global_lines = 1 + below(below(3) ? 2 : 5);
	l->se_lines = below(4) ? 1 + below(below(3) ? 2 : 5) : 0;
	uint32_t want = 1 + below(below(4) ? 16 : 40);
	l->counters = calloc(want, sizeof(*l->counters));
	uint8_t used[2][DEC_MAX_SEG_LINES * 16] = {{0}};
	for (uint32_t s = 0; s < DEC_TS_SLOTS; s++)
		used[0][s] = 1;
	for (uint32_t tries = 0; l->ncounters < want && tries < want * 20; tries++) {
		struct dec_counter *c = &l->counters[l->ncounters];
		uint32_t seg = l->se_lines && below(3) ? 1 : 0;
		uint32_t nslots = (seg ? l->se_lines : l->global_lines) * 16;
		uint32_t slot = below(nslots);
		if (used[seg][slot])
			continue;
		int32_t hi = -1;
		if (below(3) == 0) {
			/* mostly the hardware's place (the next, odd line), sometimes anywhere */
			uint32_t h = below(4) ? slot / 16 % 2 == 0 ? slot + 16 : nslots
					      : below(nslots);
			if (h >= nslots || h == slot || used[seg][h])
				continue;
			hi = (int32_t)h;
			used[seg][h] = 1;
		}
		used[seg][slot] = 1;
		snprintf(c->name, sizeof(c->name), "C%u", l->ncounters);
		c->segment = seg ? DEC_SEG_SE : DEC_SEG_GLOBAL;
		c->slot = (int32_t)slot;
		c->hi_slot = hi;
		l->ncounters++;
	}
	if (!l->ncounters) {
		l->counters[0] = (struct dec_counter){.name = "C0", .segment = DEC_SEG_GLOBAL,
						      .slot = 4, .hi_slot = -1};
		l->ncounters = 1;
	}
	char err[256];
	int r = dec_layout_validate(l, err, sizeof(err));
	if (r)
		fprintf(stderr, "random layout: %s\n", err);
	CU_ASSERT_FATAL(r == 0);
	return l;
}

static struct dec_layout *parse(const char *json)
{
	struct dec_layout *l = NULL;
	char err[256];
	int r = dec_layout_parse(json, strlen(json), &l, err, sizeof(err));
	if (r)
		fprintf(stderr, "layout: %s\n", err);
	CU_ASSERT_FATAL(r == 0);
	return l;
}

/* ---- random streams ---------------------------------------------------------------------- */

/* One XCC's bytes as the kernel would hand them over, and what the generator wrote. */
struct xstream {
	uint8_t *b;
	size_t len;
	uint64_t *ts;   /* timestamps of the intact samples written once, sorted */
	size_t *at;     /* their byte offsets in b */
	size_t nts;
	size_t *loss;   /* byte offsets where the kernel flags loss */
	size_t nloss;
};

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

struct tsat {
	uint64_t ts;
	size_t at;
};

static int cmp_tsat(const void *a, const void *b)
{
	uint64_t x = ((const struct tsat *)a)->ts, y = ((const struct tsat *)b)->ts;
	return x < y ? -1 : x > y;
}

static void make_stream(const struct dec_layout *l, uint32_t n, struct xstream *x)
{
	size_t sb = l->sample_bytes, cap = (size_t)n * sb * 2 + 4096;
	memset(x, 0, sizeof(*x));
	x->b = malloc(cap);
	x->ts = malloc(n * sizeof(uint64_t));
	x->at = malloc(n * sizeof(size_t));
	x->loss = malloc((n + 1) * sizeof(size_t));
	uint64_t t = rnd() >> 20, dt = 100 + below(5000);
	/* How often a slot saturates: never, rarely, or often. */
	uint32_t satp = (uint32_t[]){0, 200, 7}[below(3)];
	for (uint32_t i = 0; i < n; i++) {
		uint32_t ev = below(400);
		if (ev == 0)
			t += dt * (1 + below(50)); /* samples lost: a gap */
		else if (ev == 1)
			dt = 100 + below(5000); /* SCLK changed */
		if (ev == 2 && x->len) {
			/* loss flagged: the kernel dropped bytes, maybe mid-sample */
			x->len -= below((uint32_t)(x->len < sb * 3 ? x->len : sb * 3));
			while (x->nts && x->at[x->nts - 1] + sb > x->len)
				x->nts--; /* cut: its bytes are overwritten below */
			x->loss[x->nloss++] = x->len;
			t += dt * (1 + below(20));
		} else if (ev == 3) {
			/* corrupt bytes inside the stream, no flag */
			uint32_t g = 1 + below((uint32_t)sb * 2);
			for (uint32_t k = 0; k < g; k++)
				x->b[x->len++] = (uint8_t)rnd();
		} else if (ev == 4 && x->len > 8) {
			/* a timestamp that goes backwards */
			t -= below((uint32_t)dt * 4);
		} else if (ev == 5 && x->len > 8) {
			/* the same timestamp again (half the time): not after the last */
			t -= dt - 1;
		}
		uint8_t *p = x->b + x->len;
		t += dt - 1 + below(3) / 2; /* a slow clock: n or n+1 ticks */
		for (int k = 0; k < 8; k++)
			p[k] = (uint8_t)(t >> (8 * k));
		for (size_t o = 8; o < sb; o += 2) {
			uint64_t r = rnd();
			uint16_t v = satp && r % satp == 0 ? 0xFFFF : (uint16_t)(r >> 16);
			put16(p + o, (uint16_t)(r & 1 ? v : v & 0x0FFF));
		}
		x->ts[x->nts] = t;
		x->at[x->nts++] = x->len;
		x->len += sb;
	}
	if (below(2))
		x->len -= below((uint32_t)sb); /* a trailing partial sample */
	while (x->nts && x->at[x->nts - 1] + sb > x->len)
		x->nts--;
	/* Sorted by timestamp for the lookup; a timestamp written twice names no sample. */
	struct tsat *v = malloc((x->nts ? x->nts : 1) * sizeof(*v));
	for (size_t i = 0; i < x->nts; i++)
		v[i] = (struct tsat){x->ts[i], x->at[i]};
	qsort(v, x->nts, sizeof(*v), cmp_tsat);
	size_t m = 0;
	for (size_t i = 0; i < x->nts;) {
		size_t j = i + 1;
		while (j < x->nts && v[j].ts == v[i].ts)
			j++;
		if (j == i + 1)
			x->ts[m] = v[i].ts, x->at[m++] = v[i].at;
		i = j;
	}
	x->nts = m;
	free(v);
}

static void free_stream(struct xstream *x)
{
	free(x->b), free(x->ts), free(x->at), free(x->loss);
}

/* ---- the straightforward decode of one sample ------------------------------------------------- */

static uint64_t ref16(const uint8_t *p, int32_t slot)
{
	return (uint64_t)p[slot * 2] | (uint64_t)p[slot * 2 + 1] << 8;
}

/* Column c's value and saturation, per SPM.md 5.6 and decode.h (DEC_SATURATED). */
static void ref_value(const struct dec_layout *l, const struct dec_column *col, const uint8_t *p,
		      uint64_t *v, bool *sat)
{
	const struct dec_counter *k = &l->counters[col->counter];
	uint32_t g = l->global_lines * 32, s = l->se_lines * 32;
	uint32_t first = 0, n = 1;
	if (k->segment == DEC_SEG_SE)
		first = col->se >= 0 ? (uint32_t)col->se : 0, n = col->se >= 0 ? 1 : l->num_se;
	uint64_t sum = 0;
	*sat = false;
	for (uint32_t j = first; j < first + n; j++) {
		const uint8_t *q = k->segment == DEC_SEG_GLOBAL ? p : p + g + j * s;
		uint64_t x = ref16(q, k->slot);
		if (k->hi_slot >= 0) {
			x |= ref16(q, k->hi_slot) << 16;
			*sat |= x == 0xFFFFFFFF;
		} else {
			*sat |= x == 0xFFFF;
		}
		sum += x;
	}
	*v = *sat ? DEC_SATURATED : sum;
}

/* ---- one comparison ---------------------------------------------------------------------------- */

struct outcome {
	struct rec rec;
	struct dec_stats st[DEC_DECODE_MAX_XCC];
	int rc;
};

static void decode_streams(const struct dec_layout *l, uint32_t nx, const struct xstream *xs,
			   bool per_se, uint32_t chunk, bool no_simd, uint64_t feed_seed,
			   struct outcome *o, struct dec **keep)
{
	struct dec_opts opts = {.sz = sizeof(opts), .per_se = per_se, .chunk_samples = chunk,
				.no_simd = no_simd};
	struct dec *d = NULL;
	char err[256];
	memset(o, 0, sizeof(*o));
	CU_ASSERT_EQUAL_FATAL(dec_open(l, nx, &opts, rec_sink, &o->rec, &d, err, sizeof(err)), 0);
	/* The same cuts for both paths: the feed pattern has its own seed. */
	uint64_t saved = rng_state;
	rng_state = feed_seed;
	size_t pos[DEC_DECODE_MAX_XCC] = {0}, li[DEC_DECODE_MAX_XCC] = {0};
	for (uint32_t done = 0; done < nx && o->rc >= 0;) {
		uint32_t xi = below(nx);
		const struct xstream *x = &xs[xi];
		if (pos[xi] >= x->len)
			continue;
		size_t big = (size_t)l->sample_bytes * (1 + below(200));
		size_t n = below(4) ? 1 + below(l->sample_bytes * 3) : big;
		n = n < x->len - pos[xi] ? n : x->len - pos[xi];
		bool loss = false;
		/* end a feed at the next loss point; the feed after it carries the flag */
		if (li[xi] < x->nloss && x->loss[li[xi]] == pos[xi])
			loss = true, li[xi]++;
		while (li[xi] < x->nloss && x->loss[li[xi]] <= pos[xi])
			li[xi]++;
		if (li[xi] < x->nloss && x->loss[li[xi]] < pos[xi] + n)
			n = x->loss[li[xi]] - pos[xi];
		o->rc = dec_feed(d, xi, x->b + pos[xi], n, loss);
		pos[xi] += n;
		if (pos[xi] >= x->len)
			done++;
	}
	if (o->rc >= 0)
		o->rc = dec_flush(d);
	for (uint32_t i = 0; i < nx; i++)
		dec_stats(d, i, &o->st[i]);
	rng_state = saved;
	*keep = d;
}

static bool same_rec(const struct rec *a, const struct rec *b)
{
	return a->n == b->n && a->ncols == b->ncols && a->nchunks == b->nchunks &&
	       !memcmp(a->ts, b->ts, a->n * 8) && !memcmp(a->xcc, b->xcc, a->n * 4) &&
	       !memcmp(a->v, b->v, a->n * a->ncols * 8) &&
	       !memcmp(a->sat, b->sat, a->n * a->ncols) &&
	       !memcmp(a->meta, b->meta, a->nchunks * 4 * sizeof(uint64_t));
}

/* Samples the generator wrote, found by timestamp, against ref_value; returns how many. */
static size_t check_reference(const struct dec_layout *l, const struct dec *d,
			      const struct xstream *xs, const struct rec *r, bool *ok)
{
	const struct dec_column *cols = dec_columns(d);
	size_t checked = 0;
	for (size_t i = 0; i < r->n; i++) {
		const struct xstream *x = &xs[r->xcc[i]];
		size_t lo = 0, hi = x->nts;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (x->ts[mid] < r->ts[i])
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == x->nts || x->ts[lo] != r->ts[i] || x->at[lo] + l->sample_bytes > x->len)
			continue;
		const uint8_t *p = x->b + x->at[lo];
		for (uint32_t c = 0; c < r->ncols; c++) {
			uint64_t v;
			bool sat;
			ref_value(l, &cols[c], p, &v, &sat);
			if (v != r->v[i * r->ncols + c] || sat != r->sat[i * r->ncols + c]) {
				if (*ok)
					fprintf(stderr, "sample %zu (ts %llu) column %s: %llx/%d, "
						"expected %llx/%d\n", i, (unsigned long long)r->ts[i],
						cols[c].name, (unsigned long long)r->v[i * r->ncols + c],
						r->sat[i * r->ncols + c], (unsigned long long)v, sat);
				*ok = false;
			}
		}
		checked++;
	}
	return checked;
}

/* Both paths over the same streams; returns the samples checked against the reference. */
static size_t compare(const struct dec_layout *l, uint32_t nx, uint32_t n, bool per_se,
		      uint32_t chunk)
{
	struct xstream xs[4];
	for (uint32_t i = 0; i < nx; i++)
		make_stream(l, n, &xs[i]);
	uint64_t feed_seed = rnd();
	struct outcome a, b;
	struct dec *da, *db;
	decode_streams(l, nx, xs, per_se, chunk, false, feed_seed, &a, &da);
	decode_streams(l, nx, xs, per_se, chunk, true, feed_seed, &b, &db);
	CU_ASSERT_EQUAL(a.rc, 0);
	CU_ASSERT_EQUAL(b.rc, 0);
	bool same = same_rec(&a.rec, &b.rec) && !memcmp(a.st, b.st, sizeof(a.st));
	if (!same)
		fprintf(stderr, "SIMD and scalar differ: layout G%u S%u x%u se, %u counters, "
			"per_se %d, chunk %u: %zu/%zu samples, %zu/%zu chunks\n", l->global_lines,
			l->se_lines, l->num_se, l->ncounters, per_se, chunk, a.rec.n, b.rec.n,
			a.rec.nchunks, b.rec.nchunks);
	CU_ASSERT_TRUE(same);
	bool ok = true;
	size_t checked = check_reference(l, da, xs, &a.rec, &ok);
	CU_ASSERT_TRUE(ok);
	dec_close(da);
	dec_close(db);
	rec_free(&a.rec);
	rec_free(&b.rec);
	for (uint32_t i = 0; i < nx; i++)
		free_stream(&xs[i]);
	return checked;
}

static void free_layout(struct dec_layout *l)
{
	free(l->counters);
	free(l);
}

/* ---- cases ----------------------------------------------------------------------------------- */

static void test_random_layouts(void)
{
	rng_state = 15;
	size_t checked = 0;
	for (int it = 0; it < 400; it++) {
		struct dec_layout *l = random_layout();
		uint32_t chunk = (uint32_t[]){0, 64, 100, 1000}[below(4)];
		checked += compare(l, 1 + below(3), 50 + below(700), below(3) == 0, chunk);
		free_layout(l);
	}
	/* most samples are intact: the reference saw them */
	CU_ASSERT_TRUE(checked > 100000);
}

/* bench_decode's layouts (tests/bench/bench_decode.c), the ones the speed is measured on. */
static const char *BENCH_LAYOUTS[] = {
	"{\"format\":\"spmtap-layout\",\"version\":1,\"gfx\":\"gfx942\",\"num_se\":4,"
	"\"global_lines\":2,\"se_lines\":2,\"counters\":["
	"{\"name\":\"A\",\"segment\":\"global\",\"slot\":4},{\"name\":\"B\",\"segment\":\"global\","
	"\"slot\":5},{\"name\":\"C\",\"segment\":\"global\",\"slot\":6},{\"name\":\"D\",\"segment\":"
	"\"global\",\"slot\":7},{\"name\":\"E\",\"segment\":\"global\",\"slot\":8},{\"name\":\"F\","
	"\"segment\":\"global\",\"slot\":16},{\"name\":\"G\",\"segment\":\"se\",\"slot\":1,"
	"\"hi_slot\":17},{\"name\":\"H\",\"segment\":\"se\",\"slot\":7,\"hi_slot\":23},{\"name\":\"I\","
	"\"segment\":\"se\",\"slot\":8,\"hi_slot\":24},{\"name\":\"J\",\"segment\":\"se\",\"slot\":0},"
	"{\"name\":\"K\",\"segment\":\"se\",\"slot\":2},{\"name\":\"L\",\"segment\":\"se\",\"slot\":3},"
	"{\"name\":\"M\",\"segment\":\"se\",\"slot\":4},{\"name\":\"N\",\"segment\":\"se\",\"slot\":5},"
	"{\"name\":\"O\",\"segment\":\"se\",\"slot\":6},{\"name\":\"P\",\"segment\":\"se\",\"slot\":18}]}",
	"{\"format\":\"spmtap-layout\",\"version\":1,\"gfx\":\"gfx942\",\"num_se\":4,"
	"\"global_lines\":2,\"se_lines\":2,\"counters\":["
	"{\"name\":\"A\",\"segment\":\"global\",\"slot\":4},{\"name\":\"B\",\"segment\":\"global\","
	"\"slot\":16},{\"name\":\"C\",\"segment\":\"global\",\"slot\":5},{\"name\":\"D\",\"segment\":"
	"\"global\",\"slot\":6},{\"name\":\"E\",\"segment\":\"global\",\"slot\":17},{\"name\":\"F\","
	"\"segment\":\"global\",\"slot\":7},{\"name\":\"G\",\"segment\":\"se\",\"slot\":0,\"hi_slot\":16},"
	"{\"name\":\"H\",\"segment\":\"se\",\"slot\":1,\"hi_slot\":17},{\"name\":\"I\",\"segment\":\"se\","
	"\"slot\":2},{\"name\":\"J\",\"segment\":\"se\",\"slot\":18},{\"name\":\"K\",\"segment\":\"se\","
	"\"slot\":3},{\"name\":\"L\",\"segment\":\"se\",\"slot\":19},{\"name\":\"M\",\"segment\":\"se\","
	"\"slot\":4},{\"name\":\"N\",\"segment\":\"se\",\"slot\":20},{\"name\":\"O\",\"segment\":\"se\","
	"\"slot\":5},{\"name\":\"P\",\"segment\":\"se\",\"slot\":21}]}",
};

static void test_bench_layouts(void)
{
	rng_state = 16;
	for (int li = 0; li < 2; li++) {
		struct dec_layout *l = parse(BENCH_LAYOUTS[li]);
		for (int it = 0; it < 40; it++)
			compare(l, 1 + below(2), 500 + below(3000), it % 2, it % 3 ? 0 : 128);
		dec_layout_free(l);
	}
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{"decode_diff/random_layouts", test_random_layouts, NULL},
		{"decode_diff/bench_layouts", test_bench_layouts, NULL},
		{NULL, NULL, NULL},
	};
	return testenv_run_suite("decode_diff", cases, argc, argv);
}
