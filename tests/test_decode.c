/* SPDX-License-Identifier: MIT */
/* decoder/decode.c: hand-built sample streams, split, corrupted, truncated. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/decode.h"
#include "decoder/layout.h"
#include "lib/testenv.h"
#include "spmtap.h"

/* SPM.md 5.5: CPC_A, TCC_A, TCC_C at global 4/5/6, TCC_B at 16, TA_A/TA_B at SE 0/16. */
static const char *WORKED =
	"{\"format\":\"spmtap-layout\",\"version\":1,\"gfx\":\"gfx942\",\"num_se\":4,"
	"\"global_lines\":2,\"se_lines\":2,\"counters\":["
	"{\"name\":\"CPC_A\",\"segment\":\"global\",\"slot\":4},"
	"{\"name\":\"TCC_A\",\"segment\":\"global\",\"slot\":5},"
	"{\"name\":\"TCC_B\",\"segment\":\"global\",\"slot\":16},"
	"{\"name\":\"TCC_C\",\"segment\":\"global\",\"slot\":6},"
	"{\"name\":\"TA_A\",\"segment\":\"se\",\"slot\":0},"
	"{\"name\":\"TA_B\",\"segment\":\"se\",\"slot\":16}]}";

/* The worked example plus a 32-bit global and a 32-bit SE (SQ) counter. */
static const char *WIDE =
	"{\"format\":\"spmtap-layout\",\"version\":1,\"gfx\":\"gfx942\",\"num_se\":4,"
	"\"global_lines\":2,\"se_lines\":2,\"counters\":["
	"{\"name\":\"CPC_A\",\"segment\":\"global\",\"slot\":4},"
	"{\"name\":\"GRBM_W\",\"segment\":\"global\",\"slot\":7,\"hi_slot\":23},"
	"{\"name\":\"TA_A\",\"segment\":\"se\",\"slot\":0},"
	"{\"name\":\"SQ_WAVES\",\"segment\":\"se\",\"slot\":1,\"hi_slot\":17}]}";

static struct dec_layout *L(const char *json)
{
	struct dec_layout *l = NULL;
	char err[256];
	int r = dec_layout_parse(json, strlen(json), &l, err, sizeof(err));
	if (r)
		fprintf(stderr, "layout: %s\n", err);
	CU_ASSERT_FATAL(r == 0);
	return l;
}

/* ---- capture sink: every chunk appended, for comparison --------------------------------- */

struct cap {
	uint32_t ncols;
	size_t n, alloc;
	uint64_t *ts;
	uint64_t *v;   /* [n][ncols] */
	uint8_t *sat;  /* [n][ncols] */
	uint32_t *xcc; /* [n] */
	uint32_t nchunks;
	uint32_t flags[64]; /* of the first 64 chunks */
	uint32_t sizes[64];
	uint64_t firsts[64];
	bool bad_first; /* first_sample did not follow on */
	uint64_t next_first[DEC_DECODE_MAX_XCC];
	int fail_with; /* return this from the sink */
};

static int cap_sink(void *user, const struct dec_chunk *c)
{
	struct cap *k = user;
	k->ncols = c->ncols;
	if (c->first_sample != k->next_first[c->xcc])
		k->bad_first = true;
	k->next_first[c->xcc] = c->first_sample + c->nsamples;
	if (k->nchunks < 64) {
		k->flags[k->nchunks] = c->flags;
		k->sizes[k->nchunks] = c->nsamples;
		k->firsts[k->nchunks] = c->first_sample;
	}
	k->nchunks++;
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
	k->n += c->nsamples;
	return k->fail_with;
}

static void cap_free(struct cap *k)
{
	free(k->ts);
	free(k->v);
	free(k->sat);
	free(k->xcc);
	memset(k, 0, sizeof(*k));
}

static bool cap_equal(const struct cap *a, const struct cap *b)
{
	if (a->n != b->n || a->ncols != b->ncols)
		return false;
	return !memcmp(a->ts, b->ts, a->n * 8) && !memcmp(a->v, b->v, a->n * a->ncols * 8) &&
	       !memcmp(a->sat, b->sat, a->n * a->ncols);
}

/* ---- stream builder ---------------------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static void put16(uint8_t *s, uint32_t idx, uint16_t v)
{
	s[idx * 2] = (uint8_t)v;
	s[idx * 2 + 1] = (uint8_t)(v >> 8);
}

static uint16_t get16(const uint8_t *s, uint32_t idx)
{
	return (uint16_t)(s[idx * 2] | s[idx * 2 + 1] << 8);
}

static void put_ts(uint8_t *s, uint64_t ts)
{
	for (int i = 0; i < 8; i++)
		s[i] = (uint8_t)(ts >> (8 * i));
}

/* n samples; timestamps t0 + i*dt; every non-timestamp slot a pseudo-random value < 0xFFF0. */
static uint8_t *stream(const struct dec_layout *l, uint32_t n, uint64_t t0, uint64_t dt,
		       uint64_t seed)
{
	uint8_t *b = calloc(n ? n : 1, l->sample_bytes);
	uint32_t slots = l->sample_bytes / 2;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *s = b + (size_t)i * l->sample_bytes;
		put_ts(s, t0 + i * dt);
		for (uint32_t k = DEC_TS_SLOTS; k < slots; k++)
			put16(s, k, (uint16_t)(mix(seed ^ ((uint64_t)i << 20) ^ k) % 0xFFF0));
	}
	return b;
}

static struct dec *open_cap(const struct dec_layout *l, uint32_t nx, bool per_se, uint32_t chunk,
			    struct cap *k)
{
	struct dec_opts o = {.sz = sizeof(o), .per_se = per_se, .chunk_samples = chunk};
	struct dec *d = NULL;
	char err[256];
	int r = dec_open(l, nx, &o, cap_sink, k, &d, err, sizeof(err));
	if (r)
		fprintf(stderr, "dec_open: %s\n", err);
	CU_ASSERT_FATAL(r == 0);
	return d;
}

static void decode_all(const struct dec_layout *l, const uint8_t *b, size_t len, bool per_se,
		       struct cap *k, struct dec_stats *st)
{
	struct dec *d = open_cap(l, 1, per_se, 0, k);
	CU_ASSERT_EQUAL(dec_feed(d, 0, b, len, false), 0);
	CU_ASSERT_EQUAL(dec_flush(d), 0);
	if (st)
		dec_stats(d, 0, st);
	dec_close(d);
}

/* ---- cases --------------------------------------------------------------------------------- */

static void test_worked_example(void)
{
	struct dec_layout *l = L(WORKED);
	CU_ASSERT_EQUAL(l->sample_bytes, 320);
	uint8_t s[320] = {0};
	put_ts(s, 0x0102030405060708ull);
	put16(s, 4, 11);  /* CPC_A */
	put16(s, 5, 12);  /* TCC_A */
	put16(s, 6, 13);  /* TCC_C */
	put16(s, 16, 14); /* TCC_B */
	for (uint32_t j = 0; j < 4; j++) {
		put16(s, 32 + 32 * j, (uint16_t)(100 + j)); /* TA_A, SPM.md table */
		put16(s, 48 + 32 * j, (uint16_t)(200 + j)); /* TA_B */
	}
	/* The byte offsets of the table, too. */
	CU_ASSERT_EQUAL(s[8], 11);
	CU_ASSERT_EQUAL(s[32], 14);
	CU_ASSERT_EQUAL(s[64 + 64 * 3], 103);
	CU_ASSERT_EQUAL(s[96 + 64 * 2], 202);

	struct cap k = {0};
	struct dec_stats st;
	decode_all(l, s, sizeof(s), false, &k, &st);
	CU_ASSERT_EQUAL_FATAL(k.n, 1);
	CU_ASSERT_EQUAL_FATAL(k.ncols, 6);
	CU_ASSERT_EQUAL(k.ts[0], 0x0102030405060708ull);
	uint64_t want[6] = {11, 12, 14, 13, 406, 806};
	for (int c = 0; c < 6; c++) {
		CU_ASSERT_EQUAL(k.v[c], want[c]);
		CU_ASSERT_EQUAL(k.sat[c], 0);
	}
	CU_ASSERT_EQUAL(st.samples, 1);
	CU_ASSERT_EQUAL(st.partial_bytes, 0);
	CU_ASSERT_EQUAL(st.saturated, 0);
	cap_free(&k);

	decode_all(l, s, sizeof(s), true, &k, NULL);
	CU_ASSERT_EQUAL_FATAL(k.ncols, 4 + 8);
	uint64_t wse[12] = {11, 12, 14, 13, 100, 101, 102, 103, 200, 201, 202, 203};
	for (int c = 0; c < 12; c++)
		CU_ASSERT_EQUAL(k.v[c], wse[c]);
	cap_free(&k);
	dec_layout_free(l);
}

static void test_column_names(void)
{
	struct dec_layout *l = L(WORKED);
	struct cap k = {0};
	struct dec *d = open_cap(l, 1, true, 0, &k);
	CU_ASSERT_EQUAL_FATAL(dec_ncols(d), 12);
	const struct dec_column *c = dec_columns(d);
	CU_ASSERT_STRING_EQUAL(c[0].name, "CPC_A");
	CU_ASSERT_STRING_EQUAL(c[4].name, "TA_A[se0]");
	CU_ASSERT_STRING_EQUAL(c[7].name, "TA_A[se3]");
	CU_ASSERT_STRING_EQUAL(c[11].name, "TA_B[se3]");
	CU_ASSERT_EQUAL(c[11].se, 3);
	CU_ASSERT_EQUAL(c[11].counter, 5);
	CU_ASSERT_EQUAL(c[0].se, -1);
	dec_close(d);
	d = open_cap(l, 1, false, 0, &k);
	CU_ASSERT_EQUAL(dec_ncols(d), 6);
	CU_ASSERT_STRING_EQUAL(dec_columns(d)[4].name, "TA_A");
	CU_ASSERT_EQUAL(dec_columns(d)[4].se, -1);
	dec_close(d);
	dec_layout_free(l);
}

static void test_saturation_16(void)
{
	struct dec_layout *l = L(WORKED);
	uint8_t *b = stream(l, 3, 1000, 100, 1);
	/* sample 0: CPC_A saturated; sample 1: TA_A saturated in SE 2 only; sample 2: none */
	put16(b, 4, 0xFFFF);
	put16(b + 320, 32 + 32 * 2, 0xFFFF);
	put16(b + 320, 32, 5);
	put16(b + 320, 64, 6);
	put16(b + 320, 128, 7);
	struct cap k = {0};
	struct dec_stats st;
	decode_all(l, b, 3 * 320, false, &k, &st);
	CU_ASSERT_EQUAL_FATAL(k.n, 3);
	CU_ASSERT_TRUE(k.sat[0 * 6 + 0]);
	CU_ASSERT_EQUAL(k.v[0 * 6 + 0], DEC_SATURATED);
	CU_ASSERT_FALSE(k.sat[0 * 6 + 1]);
	CU_ASSERT_TRUE(k.sat[1 * 6 + 4]);  /* one saturated SE makes the sum saturated */
	CU_ASSERT_EQUAL(k.v[1 * 6 + 4], DEC_SATURATED);
	CU_ASSERT_FALSE(k.sat[1 * 6 + 5]);
	CU_ASSERT_FALSE(k.sat[1 * 6 + 0]);
	for (int c = 0; c < 6; c++)
		CU_ASSERT_FALSE(k.sat[2 * 6 + c]);
	CU_ASSERT_EQUAL(st.saturated, 2);
	cap_free(&k);

	/* per SE: only SE 2's column is saturated; the others keep their values */
	decode_all(l, b, 3 * 320, true, &k, &st);
	CU_ASSERT_EQUAL_FATAL(k.ncols, 12);
	CU_ASSERT_EQUAL(k.v[12 + 4], 5);
	CU_ASSERT_EQUAL(k.v[12 + 5], 6);
	CU_ASSERT_TRUE(k.sat[12 + 6]);
	CU_ASSERT_EQUAL(k.v[12 + 7], 7);
	CU_ASSERT_FALSE(k.sat[12 + 7]);
	CU_ASSERT_EQUAL(st.saturated, 2);
	cap_free(&k);
	free(b);
	dec_layout_free(l);
}

static void test_saturation_32(void)
{
	struct dec_layout *l = L(WIDE);
	uint8_t *b = stream(l, 3, 1000, 100, 2);
	/* sample 0: GRBM_W = 0xFFFF|0xFFFF<<16 saturated; SQ_WAVES SE1 saturated */
	put16(b, 7, 0xFFFF);
	put16(b, 23, 0xFFFF);
	put16(b, 32 + 32 * 1 + 1, 0xFFFF);
	put16(b, 32 + 32 * 1 + 17, 0xFFFF);
	/* sample 1: a low half of 0xFFFF alone is a value, not saturation */
	uint8_t *s1 = b + 320;
	put16(s1, 7, 0xFFFF);
	put16(s1, 23, 0x0001);
	for (uint32_t j = 0; j < 4; j++) {
		put16(s1, 32 + 32 * j + 1, 0xFFFF);
		put16(s1, 32 + 32 * j + 17, (uint16_t)j);
	}
	struct cap k = {0};
	struct dec_stats st;
	decode_all(l, b, 3 * 320, false, &k, &st);
	CU_ASSERT_EQUAL_FATAL(k.n, 3);
	CU_ASSERT_TRUE(k.sat[1]);
	CU_ASSERT_EQUAL(k.v[1], DEC_SATURATED);
	CU_ASSERT_TRUE(k.sat[3]);
	CU_ASSERT_EQUAL(k.v[3], DEC_SATURATED);
	CU_ASSERT_FALSE(k.sat[2]);
	CU_ASSERT_FALSE(k.sat[4 + 1]);
	CU_ASSERT_EQUAL(k.v[4 + 1], 0x1FFFF);
	CU_ASSERT_FALSE(k.sat[4 + 3]);
	CU_ASSERT_EQUAL(k.v[4 + 3], 4 * 0xFFFFull + ((0ull + 1 + 2 + 3) << 16));
	/* 32-bit values from a random sample: lo | hi << 16, summed */
	const uint8_t *s2 = b + 640;
	uint64_t want = 0;
	for (uint32_t j = 0; j < 4; j++)
		want += get16(s2, 32 + 32 * j + 1) | (uint64_t)get16(s2, 32 + 32 * j + 17) << 16;
	CU_ASSERT_EQUAL(k.v[8 + 3], want);
	CU_ASSERT_EQUAL(k.v[8 + 1], get16(s2, 7) | (uint64_t)get16(s2, 23) << 16);
	CU_ASSERT_EQUAL(st.saturated, 2);
	cap_free(&k);

	decode_all(l, b, 3 * 320, true, &k, NULL);
	/* columns: CPC_A, GRBM_W, TA_A[se0..3], SQ_WAVES[se0..3] */
	CU_ASSERT_EQUAL_FATAL(k.ncols, 10);
	CU_ASSERT_FALSE(k.sat[6]);
	CU_ASSERT_TRUE(k.sat[7]);
	CU_ASSERT_FALSE(k.sat[8]);
	CU_ASSERT_EQUAL(k.v[10 + 7], 0x1FFFF);
	cap_free(&k);
	free(b);
	dec_layout_free(l);
}

/* Every split point, then byte by byte: the output never depends on how bytes arrive. */
static void test_split_every_offset(void)
{
	struct dec_layout *l = L(WIDE);
	const uint32_t n = 5;
	size_t len = n * 320 + 77;
	uint8_t *b = stream(l, n + 1, 5000, 321, 3);
	put16(b + 640, 7, 0xFFFF);
	put16(b + 640, 23, 0xFFFF);
	struct cap ref = {0};
	decode_all(l, b, len, false, &ref, NULL);
	CU_ASSERT_EQUAL_FATAL(ref.n, n);
	bool all_same = true;
	for (size_t s = 0; s <= len; s++) {
		struct cap k = {0};
		struct dec *d = open_cap(l, 1, false, 0, &k);
		CU_ASSERT_EQUAL(dec_feed(d, 0, b, s, false), 0);
		CU_ASSERT_EQUAL(dec_feed(d, 0, b + s, len - s, false), 0);
		dec_flush(d);
		struct dec_stats st;
		dec_stats(d, 0, &st);
		all_same &= cap_equal(&ref, &k) && st.partial_bytes == 77 && st.samples == n;
		dec_close(d);
		cap_free(&k);
	}
	CU_ASSERT_TRUE(all_same);
	struct cap k = {0};
	struct dec *d = open_cap(l, 1, false, 0, &k);
	for (size_t i = 0; i < len; i++)
		dec_feed(d, 0, b + i, 1, false);
	dec_flush(d);
	CU_ASSERT_TRUE(cap_equal(&ref, &k));
	dec_close(d);
	cap_free(&k);
	cap_free(&ref);
	free(b);
	dec_layout_free(l);
}

/* Two XCCs fed interleaved in different pieces: each carries its own partial sample. */
static void test_multi_xcc_carry(void)
{
	struct dec_layout *l = L(WORKED);
	const uint32_t n = 40;
	uint8_t *a = stream(l, n, 100, 50, 10), *b = stream(l, n, 7777, 60, 11);
	struct cap ra = {0}, rb = {0};
	decode_all(l, a, n * 320, false, &ra, NULL);
	decode_all(l, b, n * 320, false, &rb, NULL);

	struct cap k = {0};
	struct dec *d = open_cap(l, 2, false, 0, &k);
	size_t oa = 0, ob = 0, len = n * 320;
	uint64_t r = 42;
	while (oa < len || ob < len) {
		r = mix(r);
		size_t pa = r % 700, pb = (r >> 20) % 500;
		pa = pa < len - oa ? pa : len - oa;
		pb = pb < len - ob ? pb : len - ob;
		CU_ASSERT_EQUAL(dec_feed(d, 0, a + oa, pa, false), 0);
		CU_ASSERT_EQUAL(dec_feed(d, 1, b + ob, pb, false), 0);
		oa += pa;
		ob += pb;
	}
	dec_flush(d);
	CU_ASSERT_FALSE(k.bad_first);
	/* split the capture by xcc and compare */
	struct cap x0 = {0}, x1 = {0};
	x0.ncols = x1.ncols = k.ncols;
	for (size_t i = 0; i < k.n; i++) {
		struct cap *t = k.xcc[i] ? &x1 : &x0;
		if (t->n == t->alloc) {
			t->alloc = t->alloc * 2 + 8;
			t->ts = realloc(t->ts, t->alloc * 8);
			t->v = realloc(t->v, t->alloc * k.ncols * 8);
			t->sat = realloc(t->sat, t->alloc * k.ncols);
		}
		t->ts[t->n] = k.ts[i];
		memcpy(t->v + t->n * k.ncols, k.v + i * k.ncols, k.ncols * 8);
		memcpy(t->sat + t->n * k.ncols, k.sat + i * k.ncols, k.ncols);
		t->n++;
	}
	CU_ASSERT_TRUE(cap_equal(&ra, &x0));
	CU_ASSERT_TRUE(cap_equal(&rb, &x1));
	struct dec_stats s0, s1;
	dec_stats(d, 0, &s0);
	dec_stats(d, 1, &s1);
	CU_ASSERT_EQUAL(s0.samples, n);
	CU_ASSERT_EQUAL(s1.samples, n);
	CU_ASSERT_EQUAL(s0.corrupt_events + s1.corrupt_events, 0);
	CU_ASSERT_EQUAL(dec_feed(d, 2, a, 1, false), -EINVAL);
	dec_close(d);
	cap_free(&x0);
	cap_free(&x1);
	cap_free(&k);
	cap_free(&ra);
	cap_free(&rb);
	free(a);
	free(b);
	dec_layout_free(l);
}

static void test_truncated(void)
{
	struct dec_layout *l = L(WORKED);
	uint8_t *b = stream(l, 4, 100, 50, 4);
	struct cap k = {0};
	struct dec_stats st;
	decode_all(l, b, 3 * 320 + 100, false, &k, &st);
	CU_ASSERT_EQUAL(k.n, 3);
	CU_ASSERT_EQUAL(st.samples, 3);
	CU_ASSERT_EQUAL(st.partial_bytes, 100);
	CU_ASSERT_FALSE(st.hunting);
	cap_free(&k);
	/* less than one sample */
	decode_all(l, b, 319, false, &k, &st);
	CU_ASSERT_EQUAL(k.n, 0);
	CU_ASSERT_EQUAL(st.partial_bytes, 319);
	cap_free(&k);
	free(b);
	dec_layout_free(l);
}

/* A timestamp that goes backwards: that sample is skipped and the stream picks up again. */
static char logged[4096];
static void log_hook(enum spmtap_log_level lv, const char *msg, void *user)
{
	(void)lv;
	(void)user;
	size_t n = strlen(logged);
	snprintf(logged + n, sizeof(logged) - n, "%s\n", msg);
}

static void test_backwards_resync(void)
{
	logged[0] = 0;
	spmtap_set_print(log_hook, NULL);
	struct dec_layout *l = L(WORKED);
	const uint32_t n = 30;
	uint8_t *b = stream(l, n, 1000, 100, 5);
	put_ts(b + 10 * 320, 1); /* sample 10 is garbage */
	struct cap k = {0};
	struct dec_stats st;
	decode_all(l, b, n * 320, false, &k, &st);
	CU_ASSERT_EQUAL(st.corrupt_events, 1);
	CU_ASSERT_EQUAL(st.resyncs, 1);
	CU_ASSERT_EQUAL(st.dropped_bytes, 320);
	CU_ASSERT_EQUAL(k.n, n - 1);
	CU_ASSERT_EQUAL(k.ts[9], 1000 + 9 * 100);
	CU_ASSERT_EQUAL(k.ts[10], 1000 + 11 * 100);
	CU_ASSERT_EQUAL(st.gaps, 1);           /* the skipped sample shows as a gap... */
	CU_ASSERT_EQUAL(st.lost_samples_est, 1); /* ...of one sample */
	CU_ASSERT_EQUAL(k.sizes[0], 10);
	CU_ASSERT_TRUE(k.flags[1] & DEC_CHUNK_RESYNC);
	CU_ASSERT_TRUE(k.flags[1] & DEC_CHUNK_GAP);
	CU_ASSERT_FALSE(k.bad_first);
	spmtap_set_print(NULL, NULL);
	CU_ASSERT_PTR_NOT_NULL(strstr(logged, "xcc 0: timestamp did not increase (sample 10 of 320"));
	cap_free(&k);
	free(b);
	dec_layout_free(l);
}

/*
 * Loss: the first region ends mid-sample, the next starts 3 lines into sample
 * 30.  The carried bytes are dropped, 7 lines are skipped, sample 31 is next,
 * and the timestamp gap says 11 samples were lost (20..30; 20 arrived cut short).
 */
static void test_loss_line_offset_resync(void)
{
	struct dec_layout *l = L(WIDE);
	const uint32_t n = 60;
	uint8_t *b = stream(l, n, 1000, 100, 6);
	for (uint32_t split = 0; split < 400; split += 37) {
		struct cap k = {0};
		struct dec *d = open_cap(l, 1, false, 0, &k);
		CU_ASSERT_EQUAL(dec_feed(d, 0, b, 20 * 320 + 150, false), 0);
		size_t start = 30 * 320 + 3 * 32, len = n * 320 - start;
		/* the resumed region itself may arrive in pieces */
		size_t s = split < len ? split : len;
		CU_ASSERT_EQUAL(dec_feed(d, 0, b + start, s, true), 0);
		CU_ASSERT_EQUAL(dec_feed(d, 0, b + start + s, len - s, false), 0);
		dec_flush(d);
		struct dec_stats st;
		dec_stats(d, 0, &st);
		CU_ASSERT_EQUAL(st.loss_events, 1);
		CU_ASSERT_EQUAL(st.resyncs, 1);
		CU_ASSERT_EQUAL(st.corrupt_events, 0);
		CU_ASSERT_EQUAL(st.dropped_bytes, 150 + 7 * 32);
		CU_ASSERT_EQUAL(st.samples, 20 + (n - 31));
		CU_ASSERT_EQUAL(st.gaps, 1);
		CU_ASSERT_EQUAL(st.lost_samples_est, 11);
		CU_ASSERT_EQUAL(st.partial_bytes, 0);
		CU_ASSERT_EQUAL_FATAL(k.n, 20 + (n - 31));
		CU_ASSERT_EQUAL(k.ts[20], 1000 + 31 * 100);
		CU_ASSERT_EQUAL(k.nchunks, 2);
		CU_ASSERT_EQUAL(k.flags[0], 0);
		CU_ASSERT_EQUAL(k.flags[1], DEC_CHUNK_LOSS | DEC_CHUNK_RESYNC | DEC_CHUNK_GAP);
		/* values after resync are those of sample 31 */
		struct cap ref = {0};
		decode_all(l, b + 31 * 320, (n - 31) * 320, false, &ref, NULL);
		CU_ASSERT_EQUAL(memcmp(ref.v, k.v + 20 * k.ncols, ref.n * k.ncols * 8), 0);
		cap_free(&ref);
		dec_close(d);
		cap_free(&k);
	}
	free(b);
	dec_layout_free(l);
}

/*
 * The one rule for lost samples (decode.c count_gap): a long stall is
 * counted with the run's mean period, a fraction of a tick.  A period of
 * 1560.4 ticks (SCLK 2.1 GHz, interval 32768, 100 MHz ticks) has deltas of
 * 1560 and 1561; 40000 lost samples counted with the integer median (1560)
 * would read as 40011.
 */
static void test_long_stall_fractional_period(void)
{
	struct dec_layout *l = L(WORKED);
	const uint32_t before = 3000, after = 100, lost = 40000;
	uint8_t *b = stream(l, before + after, 0, 1, 3);
	for (uint32_t i = 0; i < before + after; i++) {
		uint64_t k = i < before ? i : i + lost;
		put_ts(b + (size_t)i * 320, 1000000 + k * 15604 / 10);
	}
	struct cap k = {0};
	struct dec_stats st;
	decode_all(l, b, (size_t)(before + after) * 320, false, &k, &st);
	CU_ASSERT_EQUAL(k.n, before + after);
	CU_ASSERT_EQUAL(st.gaps, 1);
	CU_ASSERT_EQUAL(st.median_delta, 1560);
	CU_ASSERT_EQUAL(st.lost_samples_est, lost);
	cap_free(&k);
	free(b);
	dec_layout_free(l);
}

/* Gaps without any loss flag: counted against the median delta, chunk cut there. */
static void test_gaps_counted(void)
{
	struct dec_layout *l = L(WORKED);
	const uint32_t n = 100;
	uint8_t *b = stream(l, n, 1000, 400, 7);
	/* samples 50.. move 4 periods later (3 lost), 80.. 10 more periods (9 lost) */
	for (uint32_t i = 50; i < n; i++)
		put_ts(b + i * 320, 1000 + (i + 3) * 400 + (i >= 80 ? 9 * 400 : 0));
	/* jitter of +-1 tick is not a gap */
	put_ts(b + 20 * 320, 1000 + 20 * 400 + 1);
	struct cap k = {0};
	struct dec_stats st;
	decode_all(l, b, n * 320, false, &k, &st);
	CU_ASSERT_EQUAL(k.n, n);
	CU_ASSERT_EQUAL(st.gaps, 2);
	CU_ASSERT_EQUAL(st.lost_samples_est, 12);
	CU_ASSERT_EQUAL(st.median_delta, 400);
	CU_ASSERT_EQUAL(st.corrupt_events, 0);
	CU_ASSERT_EQUAL(k.nchunks, 3);
	CU_ASSERT_EQUAL(k.sizes[0], 50);
	CU_ASSERT_EQUAL(k.sizes[1], 30);
	CU_ASSERT_EQUAL(k.firsts[2], 80);
	CU_ASSERT_EQUAL(k.flags[1], DEC_CHUNK_GAP);
	cap_free(&k);
	free(b);
	dec_layout_free(l);
}

static void test_chunking(void)
{
	struct dec_layout *l = L(WORKED);
	const uint32_t n = 200;
	uint8_t *b = stream(l, n, 1, 3, 8);
	struct cap k = {0};
	struct dec *d = open_cap(l, 1, false, 64, &k);
	dec_feed(d, 0, b, 100 * 320 + 5, false);
	CU_ASSERT_EQUAL(k.nchunks, 1); /* 64 out, 36 pending */
	dec_feed(d, 0, b + 100 * 320 + 5, 100 * 320 - 5, false);
	dec_flush(d);
	CU_ASSERT_EQUAL(k.nchunks, 4);
	CU_ASSERT_EQUAL(k.sizes[3], 8);
	CU_ASSERT_EQUAL(k.firsts[3], 192);
	CU_ASSERT_FALSE(k.bad_first);
	struct cap ref = {0};
	decode_all(l, b, n * 320, false, &ref, NULL);
	CU_ASSERT_TRUE(cap_equal(&ref, &k));
	dec_close(d);
	cap_free(&k);
	cap_free(&ref);
	free(b);
	dec_layout_free(l);
}

/* The wrong layout decodes as garbage: it must be noticed, never crash or read out of bounds. */
static void test_wrong_layout(void)
{
	logged[0] = 0;
	spmtap_set_print(log_hook, NULL);
	struct dec_layout *l = L(WORKED), *w = L(WIDE);
	w->se_lines = 3; /* 448-byte samples for a 320-byte stream */
	char err[128];
	CU_ASSERT_EQUAL(dec_layout_validate(w, err, sizeof(err)), 0);
	uint8_t *b = stream(l, 200, 1000, 100, 9);
	struct cap k = {0};
	struct dec_stats st;
	decode_all(w, b, 200 * 320, false, &k, &st);
	CU_ASSERT_TRUE(st.corrupt_events > 0);
	CU_ASSERT_TRUE(st.samples < 200 * 320 / 448);
	spmtap_set_print(NULL, NULL);
	CU_ASSERT_PTR_NOT_NULL(strstr(logged, "layout wrong"));
	cap_free(&k);
	free(b);
	dec_layout_free(l);
	dec_layout_free(w);
}

static void test_sink_error_sticks(void)
{
	struct dec_layout *l = L(WORKED);
	uint8_t *b = stream(l, 200, 1, 3, 8);
	struct cap k = {.fail_with = -EIO};
	struct dec *d = open_cap(l, 1, false, 64, &k);
	CU_ASSERT_EQUAL(dec_feed(d, 0, b, 200 * 320, false), -EIO);
	CU_ASSERT_EQUAL(k.nchunks, 1);
	CU_ASSERT_EQUAL(dec_feed(d, 0, b, 320, false), -EIO);
	CU_ASSERT_EQUAL(dec_flush(d), -EIO);
	dec_close(d);
	cap_free(&k);
	free(b);
	dec_layout_free(l);
}

/* The SIMD SE sums and the scalar kernels agree, saturation included. */
static void test_simd_matches_scalar(void)
{
	const char *layouts[] = {WORKED, WIDE};
	for (int li = 0; li < 2; li++) {
		struct dec_layout *l = L(layouts[li]);
		const uint32_t n = 300;
		uint8_t *b = stream(l, n, 10, 7, 12 + li);
		uint64_t r = 5;
		for (uint32_t i = 0; i < 400; i++) {
			r = mix(r);
			uint32_t at = 4 + (uint32_t)(r % (n * 160 - 4));
			if (at % 160 >= 4)
				put16(b, at, 0xFFFF);
		}
		struct cap a = {0}, c = {0};
		for (int simd = 0; simd < 2; simd++) {
			struct dec_opts o = {.sz = sizeof(o), .no_simd = !simd};
			struct dec *d;
			CU_ASSERT_EQUAL_FATAL(dec_open(l, 1, &o, cap_sink, simd ? &a : &c, &d, NULL, 0),
					      0);
			dec_feed(d, 0, b, n * 320, false);
			dec_flush(d);
			dec_close(d);
		}
		CU_ASSERT_EQUAL(a.n, n);
		CU_ASSERT_TRUE(cap_equal(&a, &c));
		cap_free(&a);
		cap_free(&c);
		free(b);
		dec_layout_free(l);
	}
}

static void test_open_args(void)
{
	struct dec_layout *l = L(WORKED);
	struct dec *d;
	char err[128];
	CU_ASSERT_EQUAL(dec_open(l, 0, NULL, NULL, NULL, &d, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "num_xcc"));
	CU_ASSERT_EQUAL(dec_open(l, 17, NULL, NULL, NULL, &d, err, sizeof(err)), -EINVAL);
	struct dec_opts o = {0};
	CU_ASSERT_EQUAL(dec_open(l, 1, &o, NULL, NULL, &d, err, sizeof(err)), -EINVAL);
	l->counters[1].slot = 2; /* a timestamp slot: the decoder re-validates */
	CU_ASSERT_EQUAL(dec_open(l, 1, NULL, NULL, NULL, &d, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "timestamp"));
	l->counters[1].slot = 5;
	CU_ASSERT_EQUAL(dec_open(l, 1, NULL, NULL, NULL, &d, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(dec_feed(d, 0, NULL, 5, false), -EINVAL);
	CU_ASSERT_EQUAL(dec_feed(d, 0, NULL, 0, false), 0);
	dec_close(d);
	dec_layout_free(l);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{"decode/worked_example", test_worked_example, NULL},
		{"decode/column_names", test_column_names, NULL},
		{"decode/saturation_16", test_saturation_16, NULL},
		{"decode/saturation_32", test_saturation_32, NULL},
		{"decode/split_every_offset", test_split_every_offset, NULL},
		{"decode/multi_xcc_carry", test_multi_xcc_carry, NULL},
		{"decode/truncated", test_truncated, NULL},
		{"decode/backwards_resync", test_backwards_resync, NULL},
		{"decode/loss_line_offset_resync", test_loss_line_offset_resync, NULL},
		{"decode/gaps_counted", test_gaps_counted, NULL},
		{"decode/long_stall_fractional_period", test_long_stall_fractional_period, NULL},
		{"decode/chunking", test_chunking, NULL},
		{"decode/wrong_layout", test_wrong_layout, NULL},
		{"decode/sink_error_sticks", test_sink_error_sticks, NULL},
		{"decode/simd_matches_scalar", test_simd_matches_scalar, NULL},
		{"decode/open_args", test_open_args, NULL},
		{NULL, NULL, NULL},
	};
	return testenv_run_suite("decode", cases, argc, argv);
}
