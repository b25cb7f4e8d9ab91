/* SPDX-License-Identifier: MIT */
/*
 * The feeder's buffer sizing (collector/lib/feeder.c): the default grows
 * with the XCC count, and any size is rounded to whole 32-byte lines per XCC
 * region within the ioctl's limits, with a note saying why.  The feeder's
 * rotation, spill queue and stop are exercised end to end against the
 * emulator's truth (test_record, test_record_spm, test_session, test_journal).
 */
#include <stdint.h>
#include <string.h>

#include "collector/lib/feeder.h"
#include "testenv.h"

static void test_default_size(void)
{
	/* at least 8 MiB; 4 MiB per XCC region above two XCCs */
	CU_ASSERT_EQUAL(feeder_default_size(0), 8u << 20);
	CU_ASSERT_EQUAL(feeder_default_size(1), 8u << 20);
	CU_ASSERT_EQUAL(feeder_default_size(2), 8u << 20);
	CU_ASSERT_EQUAL(feeder_default_size(6), 24u << 20);  /* MI300A */
	CU_ASSERT_EQUAL(feeder_default_size(8), 32u << 20);  /* MI300X */
	CU_ASSERT_EQUAL(feeder_default_size(16), 64u << 20);
	/* and the default goes through the rounding unchanged: each region a whole number of lines */
	for (uint32_t x = 1; x <= 16; x++) {
		char note[256];
		uint32_t r = feeder_round_size(0, x, note, sizeof(note));
		CU_ASSERT_EQUAL(r, feeder_default_size(x) / (32u * x) * (32u * x));
		CU_ASSERT_EQUAL(r / x % 32, 0);
		CU_ASSERT(r <= feeder_default_size(x) && feeder_default_size(x) - r < 32u * x);
	}
}

static void test_round_size(void)
{
	char note[256];
	/* already whole: no note */
	CU_ASSERT_EQUAL(feeder_round_size(1u << 20, 8, note, sizeof(note)), 1u << 20);
	CU_ASSERT_STRING_EQUAL(note, "");
	/* down to whole lines per region, said */
	CU_ASSERT_EQUAL(feeder_round_size(1000000, 6, note, sizeof(note)), 1000000 / 192 * 192);
	CU_ASSERT_PTR_NOT_NULL(strstr(note, "32-byte lines"));
	/* too small for a region per XCC: raised, said */
	uint32_t small = feeder_round_size(100, 8, note, sizeof(note));
	CU_ASSERT(small >= 4096 && small % 256 == 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(note, "cannot hold"));
	/* the ioctl's size is 32 bits */
	uint32_t big = feeder_round_size(8ull << 30, 1, note, sizeof(note));
	CU_ASSERT(big <= UINT32_MAX && big % 32 == 0 && big > (3u << 30));
	CU_ASSERT_PTR_NOT_NULL(strstr(note, "32-bit"));
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "default_size", test_default_size, NULL },
		{ "round_size", test_round_size, NULL },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("feeder", cases, argc, argv);
}
