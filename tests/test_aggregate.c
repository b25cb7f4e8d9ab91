/* SPDX-License-Identifier: MIT */
/*
 * The instance sums between the decoder and the writers
 * (collector/lib/aggregate.c): which columns are summed, against a plain
 * per-sample sum of the inputs, over chunk lengths around the stage's
 * 512-sample blocks and instance counts around its four-a-turn loop, with
 * saturation carried into the sum.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/lib/aggregate.h"
#include "testenv.h"

struct seen {
	uint32_t ncols, nsamples, calls;
	char names[8][64];
	uint64_t *vals[8];
	uint64_t *sat[8];
};

static int keep(void *user, const struct dec_chunk *c)
{
	struct seen *s = user;
	s->calls++;
	s->ncols = c->ncols;
	s->nsamples = c->nsamples;
	for (uint32_t k = 0; k < c->ncols && k < 8; k++) {
		snprintf(s->names[k], sizeof(s->names[k]), "%s", c->cols[k].name);
		free(s->vals[k]);
		free(s->sat[k]);
		s->vals[k] = malloc(c->nsamples * sizeof(uint64_t) + 8);
		s->sat[k] = calloc((c->nsamples + 63) / 64 + 1, sizeof(uint64_t));
		memcpy(s->vals[k], c->values[k], c->nsamples * sizeof(uint64_t));
		memcpy(s->sat[k], c->saturated[k], (c->nsamples + 63) / 64 * sizeof(uint64_t));
	}
	return 0;
}

static void seen_free(struct seen *s)
{
	for (int k = 0; k < 8; k++) {
		free(s->vals[k]);
		free(s->sat[k]);
	}
}

static uint64_t rnd(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return *x >> 33;
}

/*
 * One global column A, then ninst instances of B: B is summed unless the user
 * asked for B[1] by name, which then stays as it is.
 */
static void run_case(uint32_t ninst, uint32_t n, bool name_instance)
{
	uint32_t nin = 1 + ninst;
	struct dec_column *cols = calloc(nin, sizeof(*cols));
	snprintf(cols[0].name, sizeof(cols[0].name), "A");
	for (uint32_t i = 0; i < ninst; i++) {
		snprintf(cols[1 + i].name, sizeof(cols[1 + i].name), "B[%u]", i);
		cols[1 + i].counter = 1;
	}
	const char *req_sum[] = { "A", "B" }, *req_one[] = { "A", "B[1]" };
	struct seen s = { 0 };
	struct agg *a;
	char err[256];
	CU_ASSERT_EQUAL_FATAL(agg_open(cols, nin, name_instance ? req_one : req_sum, 2, false, keep, &s, &a,
				       err, sizeof(err)), 0);
	uint32_t want_cols = name_instance ? nin : 2;
	CU_ASSERT_EQUAL(agg_ncols(a), want_cols);

	uint64_t seed = 0x1234 + n * 31 + ninst;
	uint64_t **in = calloc(nin, sizeof(*in)), **isat = calloc(nin, sizeof(*isat));
	uint32_t words = (n + 63) / 64;
	for (uint32_t k = 0; k < nin; k++) {
		in[k] = malloc((n + 1) * sizeof(uint64_t));
		isat[k] = calloc(words + 1, sizeof(uint64_t));
		for (uint32_t i = 0; i < n; i++) {
			in[k][i] = rnd(&seed) & 0xFFFFF;
			if (rnd(&seed) % 97 == 0) { /* saturated now and then */
				in[k][i] = DEC_SATURATED;
				isat[k][i / 64] |= 1ull << (i % 64);
			}
		}
	}
	struct dec_chunk c = {
		.nsamples = n, .ncols = nin, .values = (const uint64_t *const *)in,
		.saturated = (const uint64_t *const *)isat, .cols = cols,
	};
	CU_ASSERT_EQUAL_FATAL(agg_sink(a, &c), 0);
	CU_ASSERT_EQUAL_FATAL(s.calls, 1);
	CU_ASSERT_EQUAL_FATAL(s.ncols, want_cols);
	CU_ASSERT_STRING_EQUAL(s.names[0], "A");
	if (name_instance) {
		/* nothing summed: every column as it came */
		for (uint32_t k = 0; k < nin; k++)
			CU_ASSERT_EQUAL(memcmp(s.vals[k], in[k], n * sizeof(uint64_t)), 0);
	} else {
		CU_ASSERT_STRING_EQUAL(s.names[1], "B");
		size_t bad = 0;
		for (uint32_t i = 0; i < n; i++) {
			uint64_t sum = 0;
			bool sat = false;
			for (uint32_t k = 1; k < nin; k++) {
				sat |= (isat[k][i / 64] >> (i % 64)) & 1;
				sum += in[k][i];
			}
			uint64_t want = sat ? DEC_SATURATED : sum;
			bool got_sat = (s.sat[1][i / 64] >> (i % 64)) & 1;
			if (s.vals[1][i] != want || got_sat != sat) {
				if (bad++ < 3)
					fprintf(stderr, "\n    %u instances, %u samples: sample %u is %llu, want %llu ",
						ninst, n, i, (unsigned long long)s.vals[1][i],
						(unsigned long long)want);
			}
			/* the untouched column too */
			if (s.vals[0][i] != in[0][i])
				bad++;
		}
		CU_ASSERT_EQUAL(bad, 0);
	}
	agg_close(a);
	for (uint32_t k = 0; k < nin; k++) {
		free(in[k]);
		free(isat[k]);
	}
	free(in);
	free(isat);
	free(cols);
	seen_free(&s);
}

/* Chunk lengths around the 512-sample blocks, instance counts around the four-input turns. */
static void test_sums(void)
{
	static const uint32_t ns[] = { 1, 7, 64, 511, 512, 513, 1024, 1500, 4096 };
	static const uint32_t insts[] = { 1, 2, 3, 4, 5, 6, 9, 16 };
	for (size_t a = 0; a < sizeof(ns) / sizeof(ns[0]); a++)
		for (size_t b = 0; b < sizeof(insts) / sizeof(insts[0]); b++)
			run_case(insts[b], ns[a], false);
}

/* An instance the user named is kept: nothing of its counter is summed. */
static void test_named_instance(void)
{
	run_case(4, 700, true);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "sums", test_sums, NULL },
		{ "named_instance", test_named_instance, NULL },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("aggregate", cases, argc, argv);
}
