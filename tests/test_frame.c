/* SPDX-License-Identifier: MIT */
/* decoder/frame.c: hand-built retired buffers of both kernel generations. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/frame.h"
#include "lib/testenv.h"

static void put_hdr(unsigned char *buf, uint32_t region, uint32_t k, uint32_t version,
		    uint32_t bytes, uint32_t loss)
{
	uint32_t h[8] = { version, bytes, loss, 0, 0, 0, 0, 0 };
	memcpy(buf + (size_t)k * region, h, sizeof(h));
}

static void test_region_size(void)
{
	CU_ASSERT_EQUAL(dec_frame_region_size(6 * 1024, 6), 1024);
	CU_ASSERT_EQUAL(dec_frame_region_size(1000, 3), 320); /* 333 rounded down to 32 */
	CU_ASSERT_EQUAL(dec_frame_region_size(64, 1), 64);
	CU_ASSERT_EQUAL(dec_frame_region_size(63, 1), 0);     /* 32: header only, the kernel says EINVAL */
	CU_ASSERT_EQUAL(dec_frame_region_size(1024, 0), 0);
	CU_ASSERT_EQUAL(dec_frame_region_size(1024, DEC_MAX_XCC + 1), 0);
}

static void test_gen_a(void)
{
	unsigned char buf[256] = { 0 };
	struct dec_part p[2];
	CU_ASSERT_EQUAL(dec_frame_split(false, 1, buf, sizeof(buf), 100, 0, p, 2), 1);
	CU_ASSERT_EQUAL(p[0].offset, 0);
	CU_ASSERT_EQUAL(p[0].bytes, 100);
	CU_ASSERT_FALSE(p[0].loss);
	CU_ASSERT_FALSE(p[0].bad);
	CU_ASSERT_EQUAL(dec_frame_split(false, 1, buf, sizeof(buf), 0, 1, p, 2), 1);
	CU_ASSERT_EQUAL(p[0].bytes, 0);
	CU_ASSERT_TRUE(p[0].loss);
	/* A count beyond the buffer is clamped, never trusted. */
	CU_ASSERT_EQUAL(dec_frame_split(false, 1, buf, sizeof(buf), 100000, 0, p, 2), 1);
	CU_ASSERT_EQUAL(p[0].bytes, sizeof(buf));
	CU_ASSERT_TRUE(p[0].bad);
	CU_ASSERT(dec_frame_split(false, 1, buf, sizeof(buf), 10, 0, p, 0) < 0);
}

static void test_gen_b_multi_xcc(void)
{
	const uint32_t n = 6, size = 6 * 1024 + 17; /* odd size: regions round down */
	uint32_t region = dec_frame_region_size(size, n);
	CU_ASSERT_EQUAL(region, 1024);
	unsigned char *buf = calloc(1, size);
	for (uint32_t k = 0; k < n; k++)
		put_hdr(buf, region, k, 0x00000004, k * 32, k == 3);
	struct dec_part p[DEC_MAX_XCC];
	/* args are ignored for gen B: headers are authoritative */
	CU_ASSERT_EQUAL(dec_frame_split(true, n, buf, size, 0, 0, p, DEC_MAX_XCC), (int)n);
	for (uint32_t k = 0; k < n; k++) {
		CU_ASSERT_EQUAL(p[k].xcc, k);
		CU_ASSERT_EQUAL(p[k].offset, k * region + 32);
		CU_ASSERT_EQUAL(p[k].bytes, k * 32);
		CU_ASSERT_EQUAL(p[k].loss, k == 3);
		CU_ASSERT_FALSE(p[k].bad);
	}
	/* too few slots for the parts */
	CU_ASSERT(dec_frame_split(true, n, buf, size, 0, 0, p, n - 1) < 0);
	free(buf);
}

static void test_gen_b_poison(void)
{
	const uint32_t n = 2, size = 4096;
	unsigned char *buf = malloc(size);
	memset(buf, 0x55, size);
	dec_frame_poison(true, n, buf, size);
	uint32_t w;
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = 0; i < 8; i++) {
			memcpy(&w, buf + k * 2048 + i * 4, 4);
			CU_ASSERT_EQUAL(w, DEC_FRAME_POISON);
		}
	memcpy(&w, buf + 32, 4); /* data untouched */
	CU_ASSERT_EQUAL(w, 0x55555555u);
	struct dec_part p[DEC_MAX_XCC];
	CU_ASSERT_EQUAL(dec_frame_split(true, n, buf, size, 64, 0, p, DEC_MAX_XCC), 2);
	CU_ASSERT_TRUE(p[0].bad);
	CU_ASSERT_TRUE(p[1].bad);
	CU_ASSERT_EQUAL(p[0].bytes, 0);
	/* One region retired, the other still poisoned (a failed retire). */
	put_hdr(buf, 2048, 1, 0x00000004, 64, 0);
	CU_ASSERT_EQUAL(dec_frame_split(true, n, buf, size, 64, 0, p, DEC_MAX_XCC), 2);
	CU_ASSERT_TRUE(p[0].bad);
	CU_ASSERT_FALSE(p[1].bad);
	CU_ASSERT_EQUAL(p[1].bytes, 64);
	/* gen A: poisoning must not touch anything */
	memset(buf, 0x55, size);
	dec_frame_poison(false, n, buf, size);
	memcpy(&w, buf, 4);
	CU_ASSERT_EQUAL(w, 0x55555555u);
	free(buf);
}

static void test_gen_b_oversized_and_versions(void)
{
	const uint32_t size = 1024;
	unsigned char buf[1024] = { 0 };
	struct dec_part p[DEC_MAX_XCC];
	put_hdr(buf, size, 0, 0x00000004, size - 32, 0); /* exactly full: fine */
	dec_frame_split(true, 1, buf, size, 0, 0, p, DEC_MAX_XCC);
	CU_ASSERT_FALSE(p[0].bad);
	CU_ASSERT_EQUAL(p[0].bytes, size - 32);
	put_hdr(buf, size, 0, 0x00000004, size - 31, 1);
	dec_frame_split(true, 1, buf, size, 0, 0, p, DEC_MAX_XCC);
	CU_ASSERT_TRUE(p[0].bad);
	CU_ASSERT_EQUAL(p[0].bytes, 0);
	put_hdr(buf, size, 0, 0xFFFFFFFFu, 32, 0);
	dec_frame_split(true, 1, buf, size, 0, 0, p, DEC_MAX_XCC);
	CU_ASSERT_TRUE(p[0].bad);
	put_hdr(buf, size, 0, 0x01000004u, 32, 0); /* major 1: unknown layout */
	dec_frame_split(true, 1, buf, size, 0, 0, p, DEC_MAX_XCC);
	CU_ASSERT_TRUE(p[0].bad);
	put_hdr(buf, size, 0, 0x00000001u, 32, 0); /* 0.1 had no header */
	dec_frame_split(true, 1, buf, size, 0, 0, p, DEC_MAX_XCC);
	CU_ASSERT_TRUE(p[0].bad);
	put_hdr(buf, size, 0, 0x00000002u, 32, 0);
	dec_frame_split(true, 1, buf, size, 0, 0, p, DEC_MAX_XCC);
	CU_ASSERT_FALSE(p[0].bad);
	CU_ASSERT_EQUAL(p[0].bytes, 32);
	/* buffer too small for one region */
	CU_ASSERT(dec_frame_split(true, 2, buf, 100, 0, 0, p, DEC_MAX_XCC) < 0);
}

/* Random headers: never a part that reaches outside the buffer. */
static void test_gen_b_random(void)
{
	unsigned char buf[3 * 512];
	struct dec_part p[DEC_MAX_XCC];
	srand(7);
	for (int it = 0; it < 20000; it++) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (unsigned char)rand();
		uint32_t n = 1 + (uint32_t)rand() % 3, size = (uint32_t)rand() % (sizeof(buf) + 1);
		int r = dec_frame_split(true, n, buf, size, (uint32_t)rand(), 0, p, DEC_MAX_XCC);
		for (int k = 0; k < r; k++)
			CU_ASSERT((uint64_t)p[k].offset + p[k].bytes <= size);
	}
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "region_size", test_region_size, NULL },
		{ "gen_a", test_gen_a, NULL },
		{ "gen_b_multi_xcc", test_gen_b_multi_xcc, NULL },
		{ "gen_b_poison", test_gen_b_poison, NULL },
		{ "gen_b_oversized_and_versions", test_gen_b_oversized_and_versions, NULL },
		{ "gen_b_random", test_gen_b_random, NULL },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("frame", cases, argc, argv);
}
