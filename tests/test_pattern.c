/* SPDX-License-Identifier: MIT */
/* decoder/pattern.c: streams built here, cut, corrupted, reordered. */
#include <stdlib.h>
#include <string.h>

#include "decoder/pattern.h"
#include "lib/testenv.h"

#define GPU 0x1001u

/* Lines seq0..seq0+n-1 of one XCC, timestamps 100 apart. */
static unsigned char *make(uint16_t xcc, uint64_t seq0, size_t n)
{
	unsigned char *b = malloc(n * DEC_PAT_LINE + 1);
	for (size_t i = 0; i < n; i++)
		dec_pat_make_line(b + i * DEC_PAT_LINE, 1000 + (seq0 + i) * 100, seq0 + i, xcc, GPU);
	return b;
}

static void test_clean_stream(void)
{
	struct dec_pat p;
	CU_ASSERT_EQUAL(dec_pat_init(&p, 2, GPU), 0);
	CU_ASSERT_FALSE(dec_pat_detected(&p));
	unsigned char *b = make(1, 0, 100);
	dec_pat_feed(&p, 1, b, 100 * DEC_PAT_LINE);
	const struct dec_pat_stats *s = dec_pat_stats(&p, 1);
	CU_ASSERT_EQUAL(s->good_lines, 100);
	CU_ASSERT_EQUAL(s->lost_lines, 0);
	CU_ASSERT_EQUAL(s->lost_bytes, 0);
	CU_ASSERT_EQUAL(s->corrupt_lines, 0);
	CU_ASSERT_EQUAL(s->next_seq, 100);
	CU_ASSERT_EQUAL(dec_pat_stats(&p, 0)->good_lines, 0);
	CU_ASSERT_TRUE(dec_pat_detected(&p));
	/* Lines of XCC 1 fed as XCC 0 are misrouted: corrupt, not good. */
	dec_pat_feed(&p, 0, b, 100 * DEC_PAT_LINE);
	CU_ASSERT_EQUAL(dec_pat_stats(&p, 0)->corrupt_lines, 100);
	CU_ASSERT_EQUAL(dec_pat_stats(&p, 0)->good_lines, 0);
	free(b);
}

/* Every split point, including inside the first and the last line. */
static void test_split_every_offset(void)
{
	const size_t n = 10, len = n * DEC_PAT_LINE;
	unsigned char *b = make(0, 0, n);
	for (size_t cut = 0; cut <= len; cut++) {
		for (size_t cut2 = cut; cut2 <= len; cut2 += 7) {
			struct dec_pat p;
			dec_pat_init(&p, 1, GPU);
			dec_pat_feed(&p, 0, b, cut);
			dec_pat_feed(&p, 0, b + cut, cut2 - cut);
			dec_pat_feed(&p, 0, b + cut2, len - cut2);
			const struct dec_pat_stats *s = dec_pat_stats(&p, 0);
			CU_ASSERT_EQUAL(s->good_lines, n);
			CU_ASSERT_EQUAL(s->corrupt_lines, 0);
			CU_ASSERT_EQUAL(s->lost_bytes, 0);
			CU_ASSERT_EQUAL(s->carry, 0);
			CU_ASSERT_EQUAL(s->bytes_fed, len);
		}
	}
	/* One byte at a time. */
	struct dec_pat p;
	dec_pat_init(&p, 1, GPU);
	for (size_t i = 0; i < len; i++)
		dec_pat_feed(&p, 0, b + i, 1);
	CU_ASSERT_EQUAL(dec_pat_stats(&p, 0)->good_lines, n);
	free(b);
}

static void test_gaps(void)
{
	struct dec_pat p;
	dec_pat_init(&p, 1, GPU);
	unsigned char *a = make(0, 5, 10);   /* seq 0..4 never arrived */
	unsigned char *b = make(0, 20, 10);  /* 15..19 lost */
	dec_pat_feed(&p, 0, a, 10 * DEC_PAT_LINE);
	dec_pat_feed(&p, 0, b, 10 * DEC_PAT_LINE);
	const struct dec_pat_stats *s = dec_pat_stats(&p, 0);
	CU_ASSERT_EQUAL(s->good_lines, 20);
	CU_ASSERT_EQUAL(s->lost_lines, 10);
	CU_ASSERT_EQUAL(s->lost_bytes, 10 * DEC_PAT_LINE);
	CU_ASSERT_EQUAL(s->next_seq, 30);
	/* recorded + lost = produced through the last line seen */
	CU_ASSERT_EQUAL(s->bytes_fed + s->lost_bytes, s->next_seq * DEC_PAT_LINE);
	free(a);
	free(b);
}

/* The kernel cut a line at the end of a buffer and dropped the rest (gen A overflow). */
static void test_partial_line_dropped(void)
{
	for (uint32_t keep = 1; keep < DEC_PAT_LINE; keep++) {
		struct dec_pat p;
		dec_pat_init(&p, 1, GPU);
		unsigned char *a = make(0, 0, 4);    /* lines 0..3, 3 cut after `keep` bytes */
		unsigned char *b = make(0, 9, 4);    /* lines 4..8 lost */
		dec_pat_feed(&p, 0, a, 3 * DEC_PAT_LINE + keep);
		dec_pat_feed(&p, 0, b, 4 * DEC_PAT_LINE);
		const struct dec_pat_stats *s = dec_pat_stats(&p, 0);
		CU_ASSERT_EQUAL(s->good_lines, 7);
		CU_ASSERT_EQUAL(s->corrupt_lines, 0);
		CU_ASSERT_EQUAL(s->lost_lines, 6);
		CU_ASSERT_EQUAL(s->dropped_partial, keep);
		CU_ASSERT_EQUAL(s->bytes_fed + s->lost_bytes, s->next_seq * DEC_PAT_LINE);
		free(a);
		free(b);
	}
	/* The same, told explicitly. */
	struct dec_pat p;
	dec_pat_init(&p, 1, GPU);
	unsigned char *a = make(0, 0, 2);
	dec_pat_feed(&p, 0, a, 40);
	CU_ASSERT_EQUAL(dec_pat_stats(&p, 0)->carry, 8);
	dec_pat_break(&p, 0);
	CU_ASSERT_EQUAL(dec_pat_stats(&p, 0)->carry, 0);
	CU_ASSERT_EQUAL(dec_pat_stats(&p, 0)->dropped_partial, 8);
	free(a);
}

static void test_duplicates_and_backwards(void)
{
	struct dec_pat p;
	dec_pat_init(&p, 1, GPU);
	unsigned char *a = make(0, 0, 10);
	dec_pat_feed(&p, 0, a, 10 * DEC_PAT_LINE);
	dec_pat_feed(&p, 0, a + 5 * DEC_PAT_LINE, 5 * DEC_PAT_LINE); /* replayed */
	const struct dec_pat_stats *s = dec_pat_stats(&p, 0);
	CU_ASSERT_EQUAL(s->dup_lines, 5);
	CU_ASSERT_EQUAL(s->good_lines, 10);
	CU_ASSERT_EQUAL(s->lost_lines, 0);
	/* A new seq with an older timestamp. */
	unsigned char l[DEC_PAT_LINE];
	dec_pat_make_line(l, 5, 10, 0, GPU);
	dec_pat_feed(&p, 0, l, sizeof(l));
	CU_ASSERT_EQUAL(s->ts_backwards, 1);
	CU_ASSERT_EQUAL(s->good_lines, 11);
	free(a);
}

static void test_corruption(void)
{
	static const size_t fields[] = { 0, 8, 16, 20, 22, 24, 31 };
	for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
		struct dec_pat p;
		dec_pat_init(&p, 1, GPU);
		unsigned char *a = make(0, 0, 5);
		a[2 * DEC_PAT_LINE + fields[f]] ^= 0x10;
		dec_pat_feed(&p, 0, a, 5 * DEC_PAT_LINE);
		const struct dec_pat_stats *s = dec_pat_stats(&p, 0);
		CU_ASSERT_EQUAL(s->corrupt_lines, 1);
		CU_ASSERT_EQUAL(s->good_lines, 4);
		/* the corrupt line's seq is unaccounted for: a gap of one */
		CU_ASSERT_EQUAL(s->lost_lines, 1);
		free(a);
	}
	/* gpu_id check off: another GPU's lines are fine */
	struct dec_pat p;
	dec_pat_init(&p, 1, -1);
	unsigned char l[DEC_PAT_LINE];
	dec_pat_make_line(l, 1, 0, 0, 0xBEEF);
	dec_pat_feed(&p, 0, l, sizeof(l));
	CU_ASSERT_EQUAL(dec_pat_stats(&p, 0)->good_lines, 1);
	dec_pat_init(&p, 1, GPU);
	dec_pat_feed(&p, 0, l, sizeof(l));
	CU_ASSERT_EQUAL(dec_pat_stats(&p, 0)->corrupt_lines, 1);
}

static void test_garbage(void)
{
	struct dec_pat p;
	dec_pat_init(&p, 3, GPU);
	unsigned char buf[4096];
	srand(3);
	for (int it = 0; it < 2000; it++) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (unsigned char)rand();
		size_t len = (size_t)rand() % sizeof(buf);
		dec_pat_feed(&p, (uint32_t)rand() % 5, buf, len); /* xcc 3, 4: ignored */
	}
	CU_ASSERT_FALSE(dec_pat_detected(&p));
	dec_pat_feed(&p, 0, NULL, 10);
	dec_pat_feed(NULL, 0, buf, 10);
	CU_ASSERT_PTR_NULL(dec_pat_stats(&p, 3));
	CU_ASSERT(dec_pat_init(&p, 0, 0) < 0);
	CU_ASSERT(dec_pat_init(&p, DEC_MAX_XCC + 1, 0) < 0);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "clean_stream", test_clean_stream, NULL },
		{ "split_every_offset", test_split_every_offset, NULL },
		{ "gaps", test_gaps, NULL },
		{ "partial_line_dropped", test_partial_line_dropped, NULL },
		{ "duplicates_and_backwards", test_duplicates_and_backwards, NULL },
		{ "corruption", test_corruption, NULL },
		{ "garbage", test_garbage, NULL },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("pattern", cases, argc, argv);
}
