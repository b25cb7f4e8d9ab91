/* SPDX-License-Identifier: MIT */
/*
 * The emulated RLC_SPM ioctl against SPM.md section 3, through raw ioctls:
 * per-op error codes of generations A and B, timeouts, gen B headers and
 * regions, stop rules, the no-SPM kernel, the clock model and fork.
 * Runs under the emulator with mi210 (gen A), mi300a (gen B, 6 XCCs) and a
 * second mi210 for which this process never does ACQUIRE_VM.
 */
#include <sys/mman.h>
#include <sys/wait.h>

#include "emu/common/emu.h"
#include "test_emu_util.h"

#define SPEC "mi210,mi300a,mi210"
#define OFFSET 0x123456789ull
#define PPM (-12.5)

enum { OP_ACQ = SPMTAP_KFD_SPM_OP_ACQUIRE, OP_REL = SPMTAP_KFD_SPM_OP_RELEASE };

static int kfd = -1;
static uint32_t GA, GB, GN; /* gen A GPU, gen B GPU, GPU without a per-process device */

static void reset_env(void)
{
	unsetenv("SPMTAP_EMU_GEN");
	unsetenv("SPMTAP_EMU_RATE");
	unsetenv("SPMTAP_EMU_RING_SIZE");
	unsetenv("SPMTAP_EMU_NO_SPM");
	unsetenv("SPMTAP_EMU_INJECT_DROP");
}

static void test_common_errors(void)
{
	CU_ASSERT_EQUAL(spm_op(kfd, 0xDEAD, OP_ACQ), EINVAL);
	CU_ASSERT_EQUAL(spm_op(kfd, GN, OP_ACQ), EINVAL); /* no ACQUIRE_VM: no pdd */
	CU_ASSERT_EQUAL(spm_op(kfd, GA, 7), EINVAL);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_REL), EINVAL);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, NULL, 0, 0, NULL, NULL), EINVAL);
	CU_ASSERT_EQUAL(spm_op(kfd, GB, OP_REL), EINVAL);
	uint8_t junk[40] = { 0 };
	CU_ASSERT_EQUAL(ioctl(kfd, _IOWR('K', 0x82, uint8_t[40]), junk), -1); /* old DBG_TRAP */
	CU_ASSERT_EQUAL(errno, ENOTTY);
	CU_ASSERT_EQUAL(ioctl(kfd, _IOWR('K', 0x70, uint64_t), junk), -1);
	CU_ASSERT_EQUAL(errno, ENOTTY);
	/* ACQUIRE_VM needs the GPU's own render node */
	struct spmtap_kfd_acquire_vm_args vm = { 0, GN };
	CU_ASSERT_EQUAL(ioctl(kfd, SPMTAP_KFD_IOC_ACQUIRE_VM, &vm), -1);
	CU_ASSERT_EQUAL(errno, EINVAL);
}

static void test_gen_a_ops(void)
{
	reset_env();
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GA, OP_ACQ), 0);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_ACQ), EINVAL);
	/* Probe of 3.2: a NULL stop right after ACQUIRE is harmless in gen A, any size. */
	uint32_t copied, loss;
	CU_ASSERT_EQUAL(spm_set(kfd, GA, NULL, 0, 0, &copied, &loss), 0);
	CU_ASSERT_EQUAL(copied, 0);
	CU_ASSERT_EQUAL(loss, 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, NULL, 7, 0, NULL, NULL), 0);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_REL), 0);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_REL), EINVAL);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, NULL, 0, 0, NULL, NULL), EINVAL);
}

static void test_gen_b_ops(void)
{
	reset_env();
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GB, OP_ACQ), 0);
	CU_ASSERT_EQUAL(spm_op(kfd, GB, OP_ACQ), EBUSY);
	static uint8_t buf[6 * 64];
	/* ubufsize = rounddown(size / 6, 32) must exceed 32, NULL dest or not */
	CU_ASSERT_EQUAL(spm_set(kfd, GB, NULL, 0, 0, NULL, NULL), EINVAL);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, buf, 6 * 32, 0, NULL, NULL), EINVAL);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, buf, 6 * 64 - 1, 0, NULL, NULL), EINVAL);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, NULL, 6 * 64, 0, NULL, NULL), 0);
	CU_ASSERT_EQUAL(spm_op(kfd, GB, OP_REL), 0);
	CU_ASSERT_EQUAL(spm_op(kfd, GB, OP_REL), EINVAL);
	/* Gen B forced on a single-XCC part; gen A refused on a multi-XCC part. */
	setenv("SPMTAP_EMU_GEN", "B", 1);
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GA, OP_ACQ), 0);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_ACQ), EBUSY);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, NULL, 0, 0, NULL, NULL), EINVAL);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_REL), 0);
	setenv("SPMTAP_EMU_GEN", "A", 1);
	CU_ASSERT_EQUAL(spm_op(kfd, GB, OP_ACQ), EINVAL);
	reset_env();
}

/* ACQUIRE does not start streaming; the first non-NULL SET_DEST_BUF does (gen A). */
static void test_gen_a_stream_start_and_rotation(void)
{
	reset_env();
	static uint8_t b[3][256 * 1024];
	struct stream s = { 0 };
	uint32_t copied, loss, t;
	struct spmtap_kfd_clock_counters_args cc = { .gpu_id = GA };
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GA, OP_ACQ), 0);
	ms_sleep(30);
	CU_ASSERT_EQUAL(ioctl(kfd, SPMTAP_KFD_IOC_GET_CLOCK_COUNTERS, &cc), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, b[0], sizeof(b[0]), 0, &copied, &loss), 0);
	CU_ASSERT_EQUAL(copied, 0);
	for (int i = 1; i <= 6; i++) {
		ms_sleep(10);
		CU_ASSERT_EQUAL(spm_set(kfd, GA, b[i % 3], sizeof(b[0]), 0, &copied, &loss), 0);
		CU_ASSERT_EQUAL(loss, 0);
		CU_ASSERT(copied > 0 && copied % LINE == 0);
		stream_add(&s, b[(i - 1) % 3], copied);
	}
	/* timeout 0: no wait, nothing written back, the ring is flushed before the stop */
	t = 0;
	CU_ASSERT_EQUAL(spm_call(kfd, GA, SPMTAP_KFD_SPM_OP_SET_DEST_BUF, NULL, 0, &t, &copied, &loss), 0);
	CU_ASSERT_EQUAL(t, 0);
	CU_ASSERT_EQUAL(loss, 0);
	stream_add(&s, b[6 % 3], copied);
	stream_check(&s, 0, GA);
	CU_ASSERT_EQUAL(s.bad, 0);
	CU_ASSERT_EQUAL(s.first_seq, 0);
	CU_ASSERT_EQUAL(s.gap_lines, 0);
	CU_ASSERT(s.first_ts > cc.gpu_clock_counter); /* not produced while only acquired */
	CU_ASSERT(s.lines > 60 * 8192 / 32 / 2);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_REL), 0);
	json_t *j = truth_last(GA, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	CU_ASSERT(truth_consistent(j));
	CU_ASSERT_EQUAL(tv(j, "copied_bytes"), (long long)s.len);
	CU_ASSERT_EQUAL(tv(j, "lost_bytes"), 0);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "gen")), "A");
	json_decref(j);
	stream_free(&s);
}

static void test_gen_a_timeouts(void)
{
	reset_env();
	static uint8_t b1[64 * 1024], b2[64 * 1024], big[4 << 20];
	uint32_t copied, loss, t;
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GA, OP_ACQ), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, b1, sizeof(b1), 0, NULL, NULL), 0);
	/* b1 fills in 8 ms at 8192 B/ms: the wait ends early and reports the ms left */
	double t0 = now_ms();
	t = 1000;
	CU_ASSERT_EQUAL(spm_call(kfd, GA, SPMTAP_KFD_SPM_OP_SET_DEST_BUF, b2, sizeof(b2), &t, &copied, &loss), 0);
	double el = now_ms() - t0;
	CU_ASSERT_EQUAL(copied, sizeof(b1));
	CU_ASSERT(t >= 900 && t < 1000);
	CU_ASSERT(el < 500);
	/* plain expiry: returns after the timeout with what the worker had copied, out = 0 */
	CU_ASSERT_EQUAL(spm_set(kfd, GA, big, sizeof(big), 0, NULL, NULL), 0);
	t0 = now_ms();
	t = 40;
	CU_ASSERT_EQUAL(spm_call(kfd, GA, SPMTAP_KFD_SPM_OP_SET_DEST_BUF, b1, sizeof(b1), &t, &copied, &loss), 0);
	el = now_ms() - t0;
	CU_ASSERT_EQUAL(t, 0);
	CU_ASSERT(el >= 39);
	CU_ASSERT(copied >= 38 * 8192 && copied < sizeof(big));
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_REL), 0);
}

static void test_gen_b_timeout_unchanged_no_flush(void)
{
	reset_env();
	size_t size = 6 * (1u << 20);
	uint8_t *a = malloc(size), *b = malloc(size), *c = malloc(size);
	uint32_t copied, loss, t;
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GB, OP_ACQ), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, a, (uint32_t)size, 0, NULL, NULL), 0);
	/* 50 ms is 400 KB per XCC: under half the 4 MiB ring, so the kthread copied nothing */
	double t0 = now_ms();
	t = 50;
	CU_ASSERT_EQUAL(spm_call(kfd, GB, SPMTAP_KFD_SPM_OP_SET_DEST_BUF, b, (uint32_t)size, &t, &copied, &loss), 0);
	CU_ASSERT(now_ms() - t0 >= 49);
	CU_ASSERT_EQUAL(t, 50);
	CU_ASSERT_EQUAL(copied, 0);
	CU_ASSERT_EQUAL(loss, 0);
	for (int k = 0; k < 6; k++)
		CU_ASSERT_EQUAL(le(a + (size_t)k * (size / 6) + 4, 4), 0); /* header: 0 bytes */
	/* the re-arm copied the ring into b; a timeout-0 call retires it */
	CU_ASSERT_EQUAL(spm_set(kfd, GB, c, (uint32_t)size, 0, &copied, &loss), 0);
	CU_ASSERT(copied >= 6u * 49 * 8192);
	uint32_t sum = 0;
	for (int k = 0; k < 6; k++) {
		const uint8_t *h = b + (size_t)k * (size / 6);
		sum += (uint32_t)le(h + 4, 4);
		CU_ASSERT_EQUAL(le(h, 4), 4);
		CU_ASSERT_EQUAL(le(h + 32 + 8, 8), 0); /* first data line is seq 0 */
		CU_ASSERT_EQUAL(le(h + 32 + 20, 2), k);
	}
	CU_ASSERT_EQUAL(sum, copied);
	CU_ASSERT_EQUAL(spm_op(kfd, GB, OP_REL), 0);
	free(a);
	free(b);
	free(c);
}

/* Gen B: per-XCC regions, headers written only at retire, counts summed in args. */
static void test_gen_b_headers_regions(void)
{
	reset_env();
	const uint32_t region = 32 + 100 * LINE, size = 6 * region + 17;
	uint8_t *a = malloc(size), *b = malloc(size);
	uint32_t copied, loss;
	memset(a, 0xAA, size);
	memset(b, 0xAA, size);
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GB, OP_ACQ), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, a, size, 0, NULL, NULL), 0);
	ms_sleep(10); /* 80 KB per XCC: every region fills */
	CU_ASSERT_EQUAL(spm_set(kfd, GB, b, size, 0, &copied, &loss), 0);
	CU_ASSERT_EQUAL(copied, 6 * 100 * LINE);
	CU_ASSERT_EQUAL(loss, 0); /* the flush filled the regions; loss needs a copy into a full one */
	for (uint32_t k = 0; k < 6; k++) {
		const uint8_t *h = a + k * region;
		CU_ASSERT_EQUAL(le(h, 4), 0x00000004u);
		CU_ASSERT_EQUAL(le(h + 4, 4), 100 * LINE);
		CU_ASSERT_EQUAL(le(h + 8, 4), 0);
		for (int r = 0; r < 5; r++)
			CU_ASSERT_EQUAL(le(h + 12 + 4 * r, 4), 0);
		struct stream s = { 0 };
		stream_add(&s, h + 32, 100 * LINE);
		stream_check(&s, (uint16_t)k, GB);
		CU_ASSERT_EQUAL(s.bad, 0);
		CU_ASSERT_EQUAL(s.lines, 100);
		CU_ASSERT_EQUAL(s.first_seq, 0);
		CU_ASSERT_EQUAL(s.gap_lines, 0);
		stream_free(&s);
		/* the armed buffer's headers are stale memory until it is retired */
		CU_ASSERT_EQUAL(le(b + k * region, 4), 0xAAAAAAAAu);
	}
	CU_ASSERT_EQUAL(a[6 * region], 0xAA); /* the remainder after the regions is untouched */
	/*
	 * Gen B kept what did not fit in the ring: b continues at seq 100.  The
	 * re-arm's copy filled b at once, so this timeout-0 flush finds it full
	 * and flags loss, although no line was lost.
	 */
	CU_ASSERT_EQUAL(spm_set(kfd, GB, NULL, size, 0, &copied, &loss), 0);
	CU_ASSERT_EQUAL(copied, 6 * 100 * LINE);
	for (uint32_t k = 0; k < 6; k++) {
		CU_ASSERT_EQUAL(le(b + k * region + 8, 4), 1);
		CU_ASSERT_EQUAL(le(b + k * region + 32 + 8, 8), 100);
	}
	/* a timeout-0 call on a full region: the flush flags loss (a hint), no data is lost yet */
	CU_ASSERT_EQUAL(spm_set(kfd, GB, a, size, 0, NULL, NULL), 0);
	ms_sleep(10);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, b, size, 0, NULL, NULL), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, a, size, 0, &copied, &loss), 0);
	CU_ASSERT_EQUAL(copied, 6 * 100 * LINE);
	CU_ASSERT_EQUAL(loss, 6);
	CU_ASSERT_EQUAL(le(b + 8, 4), 1);
	CU_ASSERT_EQUAL(spm_op(kfd, GB, OP_REL), 0);
	json_t *j = truth_last(GB, 5);
	CU_ASSERT(truth_consistent(j));
	CU_ASSERT_EQUAL(tv(j, "lost_overflow_bytes"), 0);
	CU_ASSERT_EQUAL(tv(j, "copied_bytes"), 4 * 100 * LINE);
	json_decref(j);
	free(a);
	free(b);
}

/* Stop rules (3.6): gen A any size; gen B refuses a small stop and keeps streaming. */
static void test_null_dest_stop(void)
{
	reset_env();
	static uint8_t b1[1 << 20], b2[1 << 20];
	uint32_t copied, loss;
	struct stream s = { 0 };
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GA, OP_ACQ), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, b1, sizeof(b1), 0, NULL, NULL), 0);
	ms_sleep(10);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, NULL, 0, 0, &copied, &loss), 0);
	CU_ASSERT(copied >= 9 * 8192);
	stream_add(&s, b1, copied);
	ms_sleep(20); /* stopped: nothing is produced */
	CU_ASSERT_EQUAL(spm_set(kfd, GA, b2, sizeof(b2), 0, NULL, NULL), 0);
	ms_sleep(5);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, NULL, 3, 0, &copied, &loss), 0);
	CU_ASSERT(copied < 10 * 8192);
	stream_add(&s, b2, copied);
	stream_check(&s, 0, GA);
	CU_ASSERT_EQUAL(s.bad, 0);
	CU_ASSERT_EQUAL(s.gap_lines, 0); /* seq continues across stop/start */
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_REL), 0);
	json_t *j = truth_last(GA, 0);
	CU_ASSERT(truth_consistent(j));
	CU_ASSERT_EQUAL(tv(j, "discarded_stop_bytes"), 0);
	CU_ASSERT_EQUAL(tv(j, "copied_bytes"), (long long)s.len);
	json_decref(j);
	stream_free(&s);

	uint8_t *a = malloc(6 << 20), *b = malloc(6 << 20);
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GB, OP_ACQ), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, a, 6 << 20, 0, NULL, NULL), 0);
	ms_sleep(5);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, NULL, 0, 0, NULL, NULL), EINVAL);
	ms_sleep(5);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, b, 6 << 20, 0, &copied, &loss), 0);
	CU_ASSERT(copied >= 6 * 9 * 8192); /* still streaming into a after the refused stop */
	CU_ASSERT_EQUAL(spm_set(kfd, GB, NULL, 6 * 64, 0, &copied, &loss), 0);
	CU_ASSERT_EQUAL(spm_op(kfd, GB, OP_REL), 0);
	free(a);
	free(b);
}

/* Gen A buffers fill to exactly their size, mid-line; the rest of the ring is discarded. */
static void test_gen_a_partial_line(void)
{
	reset_env();
	static uint8_t b1[100], b2[64 * 1024];
	uint32_t copied, loss;
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GA, OP_ACQ), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, b1, sizeof(b1), 0, NULL, NULL), 0);
	ms_sleep(5);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, b2, sizeof(b2), 0, &copied, &loss), 0);
	CU_ASSERT_EQUAL(copied, 100);
	CU_ASSERT_EQUAL(loss, 1);
	CU_ASSERT_EQUAL(le(b1 + 8, 8), 0);
	CU_ASSERT_EQUAL(le(b1 + 32 + 8, 8), 1);
	CU_ASSERT_EQUAL(le(b1 + 64 + 8, 8), 2);
	uint64_t step3 = (uint32_t)(le(b1 + 96, 4) - le(b1 + 64, 4)); /* a partial line 3: its ts */
	CU_ASSERT(step3 == 390 || step3 == 391);
	ms_sleep(2);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, NULL, 0, 0, &copied, &loss), 0);
	CU_ASSERT(copied > 0);
	CU_ASSERT_EQUAL(le(b2 + 16, 4), 0x544D5053u); /* the next buffer starts on a whole line */
	CU_ASSERT(le(b2 + 8, 8) > 3);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_REL), 0);
}

/*
 * Gen A: the device makes a line's bytes when the worker's copy is written,
 * from the seq its ring slot holds (docs/emulator.md, "Not done like
 * hardware").  A buffer far larger than the ring, filled in one step that
 * laps the ring several times, must still get every line once, in order:
 * the lines of one step must not take the slots of lines not yet written.
 * Both engines: the device process (a 1 ms step at 256 KiB/ms laps a
 * 64 KiB ring four times) and the inline one (the whole sleep in one call).
 */
static void gen_a_laps(const char *device)
{
	reset_env();
	if (device)
		setenv("SPMTAP_EMU_DEVICE", device, 1);
	setenv("SPMTAP_EMU_RING_SIZE", "65536", 1);
	setenv("SPMTAP_EMU_RATE", "262144", 1);
	static uint8_t b[2][16 << 20];
	struct stream s = { 0 };
	uint32_t copied, loss, t = 0;
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GA, OP_ACQ), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, b[0], sizeof(b[0]), 0, NULL, NULL), 0);
	ms_sleep(20);
	CU_ASSERT_EQUAL(spm_call(kfd, GA, SPMTAP_KFD_SPM_OP_SET_DEST_BUF, b[1], sizeof(b[1]), &t, &copied, &loss), 0);
	CU_ASSERT_EQUAL(loss, 0);
	CU_ASSERT(copied > 4 * 65536); /* the ring lapped */
	stream_add(&s, b[0], copied);
	t = 0;
	CU_ASSERT_EQUAL(spm_call(kfd, GA, SPMTAP_KFD_SPM_OP_SET_DEST_BUF, NULL, 0, &t, &copied, &loss), 0);
	stream_add(&s, b[1], copied);
	stream_check(&s, 0, GA);
	if (s.bad || s.gap_lines)
		fprintf(stderr, "gen_a_laps (%s): %llu of %llu lines out of order or bad, %llu missing\n",
			device ? device : "device process", (unsigned long long)s.bad, (unsigned long long)s.lines,
			(unsigned long long)s.gap_lines);
	CU_ASSERT_EQUAL(s.bad, 0);
	CU_ASSERT_EQUAL(s.gap_lines, 0);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_REL), 0);
	stream_free(&s);
	unsetenv("SPMTAP_EMU_DEVICE");
	reset_env();
}

static void test_gen_a_laps_device(void)
{
	gen_a_laps(NULL);
}

static void test_gen_a_laps_inline(void)
{
	gen_a_laps("inline");
}

static void test_no_spm_kernel(void)
{
	reset_env();
	setenv("SPMTAP_EMU_NO_SPM", "einval", 1);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_ACQ), EINVAL);
	setenv("SPMTAP_EMU_NO_SPM", "enotty", 1);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_ACQ), ENOTTY);
	CU_ASSERT_EQUAL(spm_op(kfd, GB, OP_REL), ENOTTY);
	unsetenv("SPMTAP_EMU_NO_SPM");
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_ACQ), 0);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_REL), 0);
}

static void test_clock_model(void)
{
	struct spmtap_kfd_clock_counters_args c = { .gpu_id = GB };
	struct timespec bt;
	CU_ASSERT_EQUAL_FATAL(ioctl(kfd, SPMTAP_KFD_IOC_GET_CLOCK_COUNTERS, &c), 0);
	clock_gettime(CLOCK_BOOTTIME, &bt);
	long double drift = (long double)c.cpu_clock_counter * PPM / 1e7L;
	int64_t d = (int64_t)(drift + (drift >= 0 ? 0.5L : -0.5L));
	CU_ASSERT_EQUAL(c.gpu_clock_counter, OFFSET + c.cpu_clock_counter / 10 + (uint64_t)d);
	CU_ASSERT_EQUAL(c.system_clock_freq, 1000000000ull);
	uint64_t boot = (uint64_t)bt.tv_sec * 1000000000ull + (uint64_t)bt.tv_nsec;
	CU_ASSERT(c.system_clock_counter <= boot && boot - c.system_clock_counter < 100000000ull);
	struct timespec raw;
	clock_gettime(CLOCK_MONOTONIC_RAW, &raw);
	uint64_t rawns = (uint64_t)raw.tv_sec * 1000000000ull + (uint64_t)raw.tv_nsec;
	CU_ASSERT(c.cpu_clock_counter <= rawns && rawns - c.cpu_clock_counter < 100000000ull);
	struct spmtap_kfd_clock_counters_args cpu = { .gpu_id = 0 };
	CU_ASSERT_EQUAL(ioctl(kfd, SPMTAP_KFD_IOC_GET_CLOCK_COUNTERS, &cpu), 0);
	CU_ASSERT_EQUAL(cpu.gpu_clock_counter, 0);

	/* SPM line timestamps are on the same clock, inside the bracketing samples. */
	static uint8_t b[64 * 1024];
	struct spmtap_kfd_clock_counters_args c0 = { .gpu_id = GA }, c1 = { .gpu_id = GA };
	uint32_t copied;
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GA, OP_ACQ), 0);
	ioctl(kfd, SPMTAP_KFD_IOC_GET_CLOCK_COUNTERS, &c0);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, b, sizeof(b), 0, NULL, NULL), 0);
	ms_sleep(3);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, NULL, 0, 0, &copied, NULL), 0);
	ioctl(kfd, SPMTAP_KFD_IOC_GET_CLOCK_COUNTERS, &c1);
	CU_ASSERT(copied >= 2 * LINE);
	CU_ASSERT(le(b, 8) > c0.gpu_clock_counter);
	CU_ASSERT(le(b + copied - LINE, 8) <= c1.gpu_clock_counter);
	/* 8192 B/ms = 256 lines per ms: 3906.25 ns = 390 or 391 ticks apart */
	uint64_t step = le(b + LINE, 8) - le(b, 8);
	CU_ASSERT(step == 390 || step == 391);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_REL), 0);
}

/* A forked child has no per-process device and owns no SPM; the parent keeps it. */
static void test_fork_child_not_owner(void)
{
	reset_env();
	static uint8_t b[64 * 1024];
	uint32_t copied;
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GA, OP_ACQ), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, b, sizeof(b), 0, NULL, NULL), 0);
	pid_t pid = fork();
	if (pid == 0) {
		int ok = spm_op(kfd, GA, OP_REL) == EINVAL && spm_set(kfd, GA, NULL, 0, 0, NULL, NULL) == EINVAL;
		_exit(ok ? 0 : 1);
	}
	int st = -1;
	waitpid(pid, &st, 0);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ms_sleep(2);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, NULL, 0, 0, &copied, NULL), 0);
	CU_ASSERT(copied > 0);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_REL), 0);
}

static const struct testenv_case cases[] = {
	{ "common_errors", test_common_errors, NULL },
	{ "gen_a_ops", test_gen_a_ops, NULL },
	{ "gen_b_ops", test_gen_b_ops, NULL },
	{ "gen_a_stream_start_and_rotation", test_gen_a_stream_start_and_rotation, NULL },
	{ "gen_a_timeouts", test_gen_a_timeouts, NULL },
	{ "gen_b_timeout_unchanged_no_flush", test_gen_b_timeout_unchanged_no_flush, NULL },
	{ "gen_b_headers_regions", test_gen_b_headers_regions, NULL },
	{ "null_dest_stop", test_null_dest_stop, NULL },
	{ "gen_a_partial_line", test_gen_a_partial_line, NULL },
	{ "gen_a_laps_device", test_gen_a_laps_device, NULL },
	{ "gen_a_laps_inline", test_gen_a_laps_inline, NULL },
	{ "no_spm_kernel", test_no_spm_kernel, NULL },
	{ "clock_model", test_clock_model, NULL },
	{ "fork_child_not_owner", test_fork_child_not_owner, NULL },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	static const char *const env[] = { "SPMTAP_EMU_CLOCK_OFFSET=0x123456789", "SPMTAP_EMU_CLOCK_PPM=-12.5", NULL };
	struct emu_gpu_desc g[4];
	char err[256];
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return testenv_run_suite("emu_spm", cases, argc, argv);
	testenv_under_emu(argc, argv, SPEC, env);
	if (emu_spec_parse(SPEC, g, 4, err, sizeof(err)) != 3)
		return 2;
	GA = g[0].gpu_id;
	GB = g[1].gpu_id;
	GN = g[2].gpu_id;
	uint32_t ids[2] = { GA, GB };
	unsigned minors[2] = { g[0].render_minor, g[1].render_minor };
	kfd = kfd_open_vm(ids, minors, 2);
	if (kfd < 0) {
		fprintf(stderr, "cannot open the emulated KFD: %s\n", strerror(errno));
		return 2;
	}
	return testenv_run_suite("emu_spm", cases, argc, argv);
}
