/* SPDX-License-Identifier: MIT */
/*
 * Loss in the emulated SPM engine, accounted exactly: every line lost to an
 * overflow, a stall or an injected drop shows as a seq gap in what was
 * delivered, and matches the ground-truth file (SPM.md 4.2-4.4).
 */
#include <sys/mman.h>

#include "emu/common/emu.h"
#include "test_emu_util.h"

#define SPEC "mi210,mi300a"

static int kfd = -1;
static uint32_t GA, GB;

static void reset_env(void)
{
	unsetenv("SPMTAP_EMU_GEN");
	unsetenv("SPMTAP_EMU_RATE");
	unsetenv("SPMTAP_EMU_RING_SIZE");
	unsetenv("SPMTAP_EMU_INJECT_DROP");
}

/* Gen A: a full buffer makes the worker discard the ring; the gap equals lost_overflow. */
static void test_gen_a_overflow_exact(void)
{
	reset_env();
	static uint8_t small[4096], big1[1 << 20], big2[1 << 20];
	struct stream s = { 0 };
	uint32_t copied, loss;
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GA, SPMTAP_KFD_SPM_OP_ACQUIRE), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, small, sizeof(small), 0, NULL, NULL), 0);
	ms_sleep(20);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, big1, sizeof(big1), 0, &copied, &loss), 0);
	CU_ASSERT_EQUAL(copied, sizeof(small));
	CU_ASSERT_EQUAL(loss, 1);
	stream_add(&s, small, copied);
	ms_sleep(10);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, big2, sizeof(big2), 0, &copied, &loss), 0);
	CU_ASSERT_EQUAL(loss, 0);
	stream_add(&s, big1, copied);
	ms_sleep(5);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, NULL, 0, 0, &copied, &loss), 0);
	stream_add(&s, big2, copied);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, SPMTAP_KFD_SPM_OP_RELEASE), 0);
	stream_check(&s, 0, GA);
	CU_ASSERT_EQUAL(s.bad, 0);
	CU_ASSERT(s.gap_lines > 0);
	json_t *j = truth_last(GA, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	CU_ASSERT(truth_consistent(j));
	CU_ASSERT_EQUAL(tv(j, "copied_bytes"), (long long)s.len);
	CU_ASSERT_EQUAL(tv(j, "lost_overflow_bytes"), (long long)(s.gap_lines * LINE));
	CU_ASSERT_EQUAL(tv(j, "lines"), (long long)(s.last_seq + 1));
	CU_ASSERT_EQUAL(tv(j, "discarded_stop_bytes") + tv(j, "discarded_release_bytes"), 0);
	json_decref(j);
	stream_free(&s);
}

/* Gen B: a full region keeps data in the ring until it is full; then the RLC stalls. */
static void test_gen_b_stall_exact(void)
{
	reset_env();
	setenv("SPMTAP_EMU_RING_SIZE", "8192", 1); /* 256 lines: full after 1 ms */
	const uint32_t sregion = 32 + 4096, bregion = 32 + (512 << 10);
	uint8_t *small = malloc(6 * sregion), *big1 = malloc(6 * bregion), *big2 = malloc(6 * bregion);
	struct stream s[6] = { { 0 } };
	uint32_t copied, loss;
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GB, SPMTAP_KFD_SPM_OP_ACQUIRE), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, small, 6 * sregion, 0, NULL, NULL), 0);
	ms_sleep(20);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, big1, 6 * bregion, 0, &copied, &loss), 0);
	CU_ASSERT_EQUAL(copied, 6 * 4096);
	CU_ASSERT_EQUAL(loss, 6);
	for (int k = 0; k < 6; k++)
		stream_add(&s[k], small + k * sregion + 32, (size_t)le(small + k * sregion + 4, 4));
	/* the ring (8 KiB per XCC) went into big1 when it was armed: no loss from here on */
	for (int i = 0; i < 4; i++) {
		uint8_t *cur = i % 2 ? big2 : big1, *next = i % 2 ? big1 : big2;
		ms_sleep(2);
		CU_ASSERT_EQUAL(spm_set(kfd, GB, i == 3 ? NULL : next, 6 * bregion, 0, &copied, &loss), 0);
		CU_ASSERT_EQUAL(loss, 0);
		for (int k = 0; k < 6; k++)
			stream_add(&s[k], cur + k * bregion + 32, (size_t)le(cur + k * bregion + 4, 4));
	}
	CU_ASSERT_EQUAL(spm_op(kfd, GB, SPMTAP_KFD_SPM_OP_RELEASE), 0);
	for (unsigned k = 0; k < 6; k++) {
		stream_check(&s[k], (uint16_t)k, GB);
		CU_ASSERT_EQUAL(s[k].bad, 0);
		CU_ASSERT_EQUAL(s[k].first_seq, 0);
		/* 128 lines fit the region, 256 more waited in the ring, the rest stalled */
		CU_ASSERT_EQUAL(le(s[k].bytes + 383 * LINE + 8, 8), 383);
		json_t *j = truth_last(GB, k);
		CU_ASSERT_PTR_NOT_NULL_FATAL(j);
		CU_ASSERT(truth_consistent(j));
		CU_ASSERT_EQUAL(tv(j, "copied_bytes"), (long long)s[k].len);
		CU_ASSERT(s[k].gap_lines > 1000);
		CU_ASSERT_EQUAL(tv(j, "lost_overflow_bytes"), (long long)(s[k].gap_lines * LINE));
		CU_ASSERT_EQUAL(tv(j, "lines"), (long long)(s[k].last_seq + 1));
		json_decref(j);
		stream_free(&s[k]);
	}
	free(small);
	free(big1);
	free(big2);
	reset_env();
}

/* SPMTAP_EMU_INJECT_DROP: 100 lines from 20 ms after the start, on every XCC. */
/*
 * An injected drop of 100 lines at `at_ms` on gen A: the delivered stream
 * jumps by exactly 100 seqs at the first line due then, and the truth says
 * 3200 bytes.  A drop inside a copy's range (15 ms, between the 10 ms polls)
 * also checks the device's line runs: the lines after the gap take seqs the
 * ring's slots say, not the ones a run from before the gap would continue.
 *
 * On a loaded host a copy can end exactly at the gap and the next start
 * after it; the device then flags both (seen twice: polls at 20.4 and 30.6
 * ms, and at 32.0 and 42.3 ms, the jump at the second copy's first line
 * each time).  Whether the real kernel flags the second copy too is not
 * established (issue 15 note).  So one flag, or two on consecutive polls
 * whose copies meet exactly at the jump; the gap and the truth's bytes stay
 * exact.
 */
static void inject_drop_gen_a(const char *spec, uint64_t first_line)
{
	reset_env();
	setenv("SPMTAP_EMU_INJECT_DROP", spec, 1);
	static uint8_t b[2][1 << 20];
	struct stream s = { 0 };
	uint32_t copied, loss, losses = 0;
	char polls[5][48];
	size_t end[5];     /* the stream's length after each poll's copy */
	uint32_t flag[5];  /* each poll's loss flag */
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GA, SPMTAP_KFD_SPM_OP_ACQUIRE), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, b[0], sizeof(b[0]), 0, NULL, NULL), 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 1; i <= 5; i++) {
		ms_sleep(10);
		CU_ASSERT_EQUAL(spm_set(kfd, GA, i == 5 ? NULL : b[i % 2], sizeof(b[0]), 0, &copied, &loss), 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		snprintf(polls[i - 1], sizeof(polls[0]), "%.1f ms: %u bytes, loss %u",
			 (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6, copied, loss);
		losses += loss;
		flag[i - 1] = loss;
		stream_add(&s, b[(i - 1) % 2], copied);
		end[i - 1] = s.len;
	}
	/* Two flags: polls k and k + 1, and the jump at the first line of copy k + 1. */
	bool straddled = false;
	for (int k = 0; k + 1 < 5; k++)
		straddled |= losses == 2 && flag[k] && flag[k + 1] && end[k] == first_line * LINE;
	if (losses != 1)
		for (int i = 0; i < 5; i++)
			fprintf(stderr, "\n  %s: poll %d at %s%s", spec, i + 1, polls[i],
				straddled ? " (the copies meet at the gap: both flagged)" : "");
	CU_ASSERT(losses == 1 || straddled);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, SPMTAP_KFD_SPM_OP_RELEASE), 0);
	stream_check(&s, 0, GA);
	CU_ASSERT_EQUAL(s.bad, 0);
	CU_ASSERT_EQUAL(s.gap_lines, 100);
	/* line j exists at start + (j + 1) * 3906.25 ns: j = 5119 is the first at 20 ms */
	bool jumped = false;
	for (size_t off = 0; off + LINE <= s.len; off += LINE) {
		uint64_t seq = le(s.bytes + off + 8, 8);
		if (seq != off / LINE) {
			CU_ASSERT_EQUAL(seq, first_line + 100);
			CU_ASSERT_EQUAL(off / LINE, first_line);
			jumped = true;
			break;
		}
	}
	CU_ASSERT(jumped);
	json_t *j = truth_last(GA, 0);
	CU_ASSERT(truth_consistent(j));
	CU_ASSERT_EQUAL(tv(j, "lost_injected_bytes"), 3200);
	CU_ASSERT_EQUAL(tv(j, "lost_bytes"), 3200);
	CU_ASSERT_EQUAL(tv(j, "copied_bytes"), (long long)s.len);
	json_decref(j);
	stream_free(&s);
}

static void test_inject_drop(void)
{
	inject_drop_gen_a("20:3200", 5119);
	inject_drop_gen_a("15:3200", 3839); /* 15 ms / 3906.25 ns - 1 */
	uint32_t copied, loss;

	/* gen B: every XCC drops */
	uint8_t *gb = malloc(6 << 20);
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GB, SPMTAP_KFD_SPM_OP_ACQUIRE), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, gb, 6 << 20, 0, NULL, NULL), 0);
	ms_sleep(30);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, NULL, 6 << 20, 0, &copied, &loss), 0);
	CU_ASSERT_EQUAL(loss, 6);
	CU_ASSERT_EQUAL(spm_op(kfd, GB, SPMTAP_KFD_SPM_OP_RELEASE), 0);
	for (unsigned k = 0; k < 6; k++) {
		json_t *jb = truth_last(GB, k);
		CU_ASSERT(truth_consistent(jb));
		CU_ASSERT_EQUAL(tv(jb, "lost_injected_bytes"), 3200);
		json_decref(jb);
	}
	free(gb);
	reset_env();
}

/*
 * SPM.md 6.2's interval-32 rate (21 GB/s per XCC, SPMTAP_EMU_RATE in B/ms):
 * the ring overruns at once and almost every line is lost.  The engine
 * counts such stretches in one step (docs/emulator.md "The cost of a step is
 * bounded"); this checks that the step counts what line by line would: the
 * truth balances, every gap in what was delivered is lost_overflow, and the
 * RLC produced at the rate for at least the time slept.  (That a stop gets
 * through at this rate is tests/test_stop.c.)
 */
static void high_rate(uint32_t gpu, uint32_t nxcc)
{
	reset_env();
	setenv("SPMTAP_EMU_RATE", "21000000", 1);
	const uint32_t region = 32 + (256 << 10);
	uint32_t size = gpu == GB ? nxcc * region : (256 << 10);
	uint8_t *b[2] = { malloc(size), malloc(size) };
	struct stream s[6] = { { 0 } };
	uint32_t copied, loss, losses = 0;
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, gpu, SPMTAP_KFD_SPM_OP_ACQUIRE), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, gpu, b[0], size, 0, NULL, NULL), 0);
	for (int i = 1; i <= 3; i++) {
		ms_sleep(50);
		CU_ASSERT_EQUAL(spm_set(kfd, gpu, i == 3 ? NULL : b[i % 2], size, 0, &copied, &loss), 0);
		losses += loss;
		for (uint32_t k = 0; k < nxcc; k++) {
			const uint8_t *r = b[(i - 1) % 2] + (gpu == GB ? k * region : 0);
			stream_add(&s[k], gpu == GB ? r + 32 : r, gpu == GB ? (size_t)le(r + 4, 4) : copied);
		}
	}
	CU_ASSERT(losses > 0);
	CU_ASSERT_EQUAL(spm_op(kfd, gpu, SPMTAP_KFD_SPM_OP_RELEASE), 0);
	for (uint32_t k = 0; k < nxcc; k++) {
		stream_check(&s[k], (uint16_t)k, gpu);
		CU_ASSERT_EQUAL(s[k].bad, 0);
		json_t *j = truth_last(gpu, k);
		CU_ASSERT_PTR_NOT_NULL_FATAL(j);
		CU_ASSERT(truth_consistent(j));
		CU_ASSERT_EQUAL(tv(j, "copied_bytes"), (long long)s[k].len);
		/* lines lost between delivered ones are overflow; after the last one, overflow or the stop's discard */
		CU_ASSERT(tv(j, "lost_overflow_bytes") >= (long long)(s[k].gap_lines * LINE));
		CU_ASSERT(tv(j, "lost_overflow_bytes") > 100 * tv(j, "copied_bytes"));
		/* 150 ms slept at 21 GB/s: at least 3.15 GB produced */
		CU_ASSERT(tv(j, "produced_bytes") >= 3150000000ll);
		json_decref(j);
		stream_free(&s[k]);
	}
	free(b[0]);
	free(b[1]);
	reset_env();
}

static void test_interval32_rate_gen_a(void) { high_rate(GA, 1); }
static void test_interval32_rate_gen_b(void) { high_rate(GB, 6); }

/* A bad destination: gen A flags loss and succeeds; gen B's header write fails with EFAULT. */
static void test_efault(void)
{
	reset_env();
	static uint8_t good[6 << 16];
	uint32_t copied, loss;
	void *bad = mmap(NULL, 6 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(bad != MAP_FAILED);
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GA, SPMTAP_KFD_SPM_OP_ACQUIRE), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, bad, 1 << 16, 0, NULL, NULL), 0);
	ms_sleep(5);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, good, 1 << 16, 0, &copied, &loss), 0);
	CU_ASSERT_EQUAL(copied, 0);
	CU_ASSERT_EQUAL(loss, 1);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, SPMTAP_KFD_SPM_OP_RELEASE), 0);
	json_t *j = truth_last(GA, 0);
	CU_ASSERT(truth_consistent(j));
	CU_ASSERT(tv(j, "lost_efault_bytes") >= 4 * 8192);
	json_decref(j);

	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GB, SPMTAP_KFD_SPM_OP_ACQUIRE), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, bad, 6 << 16, 0, NULL, NULL), 0);
	ms_sleep(2);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, good, sizeof(good), 0, &copied, &loss), EFAULT);
	ms_sleep(2);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, NULL, sizeof(good), 0, &copied, &loss), 0);
	CU_ASSERT(copied > 0); /* streaming went on into the good buffer */
	CU_ASSERT_EQUAL(spm_op(kfd, GB, SPMTAP_KFD_SPM_OP_RELEASE), 0);
	munmap(bad, 6 << 16);
}

/* RELEASE reports nothing: the ring and the armed buffer's bytes are discarded. */
static void test_release_discards(void)
{
	reset_env();
	static uint8_t b[1 << 20];
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GA, SPMTAP_KFD_SPM_OP_ACQUIRE), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, b, sizeof(b), 0, NULL, NULL), 0);
	ms_sleep(10);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, SPMTAP_KFD_SPM_OP_RELEASE), 0);
	json_t *j = truth_last(GA, 0);
	CU_ASSERT(truth_consistent(j));
	CU_ASSERT_EQUAL(tv(j, "copied_bytes"), 0);
	CU_ASSERT(tv(j, "discarded_release_bytes") >= 9 * 8192);
	CU_ASSERT_EQUAL(tv(j, "discarded_release_bytes"), tv(j, "produced_bytes"));
	json_decref(j);
}

static const struct testenv_case cases[] = {
	{ "gen_a_overflow_exact", test_gen_a_overflow_exact, NULL },
	{ "gen_b_stall_exact", test_gen_b_stall_exact, NULL },
	{ "inject_drop", test_inject_drop, NULL },
	{ "interval32_rate_gen_a", test_interval32_rate_gen_a, NULL },
	{ "interval32_rate_gen_b", test_interval32_rate_gen_b, NULL },
	{ "efault", test_efault, NULL },
	{ "release_discards", test_release_discards, NULL },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	struct emu_gpu_desc g[2];
	char err[256];
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return testenv_run_suite("emu_loss", cases, argc, argv);
	testenv_under_emu(argc, argv, SPEC, NULL);
	if (emu_spec_parse(SPEC, g, 2, err, sizeof(err)) != 2)
		return 2;
	GA = g[0].gpu_id;
	GB = g[1].gpu_id;
	uint32_t ids[2] = { GA, GB };
	unsigned minors[2] = { g[0].render_minor, g[1].render_minor };
	kfd = kfd_open_vm(ids, minors, 2);
	if (kfd < 0) {
		fprintf(stderr, "cannot open the emulated KFD: %s\n", strerror(errno));
		return 2;
	}
	return testenv_run_suite("emu_loss", cases, argc, argv);
}
