/* SPDX-License-Identifier: MIT */
/*
 * The samples lost at the recording's end (collector/lib/window_loss.c):
 * a gap that spans the end is split at it, and a stream that stopped short
 * of the end lost the sample periods in between.  The end-to-end cases
 * (a feeder stalled across the end of a real recording, against the
 * emulator's per-sample truth) are test_record_spm's stall_end_*.
 */
#include <stdint.h>

#include "collector/lib/window_loss.h"
#include "testenv.h"

/* 10 missing samples every 1000 ns from 1000: due at 2000 .. 11000, the next at 12000. */
static void test_gap_split(void)
{
	CU_ASSERT_EQUAL(wloss_gap_after_end(1000, 12000, 20000, 10), 0);  /* the next sample is before the end */
	CU_ASSERT_EQUAL(wloss_gap_after_end(1000, 12000, 11000, 10), 0);  /* the last one due is at the end */
	CU_ASSERT_EQUAL(wloss_gap_after_end(1000, 12000, 10999, 10), 1);
	CU_ASSERT_EQUAL(wloss_gap_after_end(1000, 12000, 5500, 10), 6);   /* 2000..5000 in the window */
	CU_ASSERT_EQUAL(wloss_gap_after_end(1000, 12000, 1999, 10), 10);  /* none was due yet */
	CU_ASSERT_EQUAL(wloss_gap_after_end(1000, 12000, 1000, 10), 10);  /* the last sample is the end */
	CU_ASSERT_EQUAL(wloss_gap_after_end(1000, 12000, 500, 10), 10);   /* all after the end */
}

/* A period that is not a whole number of ns (the SPM clock's ticks mapped to the host). */
static void test_gap_fraction(void)
{
	/* 3 missing every 1562.5 ns after 0: due at 1562.5, 3125, 4687.5; next at 6250. */
	int64_t t0 = 1000000;
	CU_ASSERT_EQUAL(wloss_gap_after_end(t0, t0 + 6250, t0 + 3125, 3), 1);
	CU_ASSERT_EQUAL(wloss_gap_after_end(t0, t0 + 6250, t0 + 3124, 3), 2);
	CU_ASSERT_EQUAL(wloss_gap_after_end(t0, t0 + 6250, t0 + 4688, 3), 0);
}

/* Unknown host times (0: the timebase could not map) keep the old rule: the gap goes with the end. */
static void test_gap_unknown(void)
{
	CU_ASSERT_EQUAL(wloss_gap_after_end(0, 12000, 5500, 10), 10);
	CU_ASSERT_EQUAL(wloss_gap_after_end(1000, 0, 5500, 10), 10);
	CU_ASSERT_EQUAL(wloss_gap_after_end(12000, 1000, 5500, 10), 10);
	CU_ASSERT_EQUAL(wloss_gap_after_end(1000, 12000, 5500, 0), 0);
}

static void test_tail(void)
{
	/* 1562.5 ns per sample */
	CU_ASSERT_EQUAL(wloss_tail(1000, 1562500, 1000), 0);
	CU_ASSERT_EQUAL(wloss_tail(1000, 1562500, 2562), 0);    /* the next one was not due */
	CU_ASSERT_EQUAL(wloss_tail(1000, 1562500, 2563), 1);
	CU_ASSERT_EQUAL(wloss_tail(1000, 1562500, 1000 + 15625000), 10000);
	CU_ASSERT_EQUAL(wloss_tail(5000, 1562500, 1000), 0);    /* samples past the end: nothing missing */
	CU_ASSERT_EQUAL(wloss_tail(0, 1562500, 100000), 0);     /* no sample: not this rule's to count */
	CU_ASSERT_EQUAL(wloss_tail(1000, 0, 100000), 0);        /* no period measured */
	/* a day of boot time and an hour's stall: no overflow */
	int64_t day = 86400LL * 1000000000LL;
	CU_ASSERT_EQUAL(wloss_tail(day, 1000000, day + 3600LL * 1000000000LL), 3600000000ULL);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "gap_split", test_gap_split, NULL },
		{ "gap_fraction", test_gap_fraction, NULL },
		{ "gap_unknown", test_gap_unknown, NULL },
		{ "tail", test_tail, NULL },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("window_loss", cases, argc, argv);
}
