/* SPDX-License-Identifier: MIT */
/*
 * The emulated SDMA engine (docs/emulator.md "SDMA engine") through the real
 * libhsakmt on the emulated MI210: SDMA queues made with hsaKmtCreateQueue,
 * packets in ROCr 5.2.x's BlitSdmaV4 layouts written by the helper
 * tests/helpers/emu_sdma_kmt (a fresh KFD process per case).  The helper
 * checks bytes, fences, timestamps and the event; this suite checks the
 * dispatch truth file (SPMTAP_EMU_DISPATCH_TRUTH) against what the helper
 * submitted: the packets that did work, in order, with their sizes,
 * addresses and modelled times.
 */
#include <dlfcn.h>
#include <limits.h>
#include <sys/wait.h>

#include "emu/common/emu.h"
#include "proc.h"
#include "test_emu_util.h"

#define SPEC "mi210"
#define MAX_COPY 0x3fffe0ull /* ROCr's kMaxSingleCopySize: the helper splits at it */
#define GBPS 25.0            /* the engine's documented default copy rate */

static uint32_t GA;

/*
 * Runs build/REL with args a1 a2 (a1 NULL: none) and a fresh truth file named after tag, HSA_ENABLE_SDMA
 * unset; its stdout in out; returns its exit status.
 */
static int run(const char *rel, const char *a1, const char *a2, const char *tag, char *out, size_t outlen,
	       char *truth, size_t truthlen)
{
	snprintf(truth, truthlen, "%s/dtruth-%s.jsonl", testenv_tmpdir(), tag);
	unlink(truth);
	char exe[PATH_MAX + 64], env_truth[PATH_MAX + 32];
	snprintf(exe, sizeof(exe), "%s/%s", testenv_build_dir(), rel);
	snprintf(env_truth, sizeof(env_truth), "SPMTAP_EMU_DISPATCH_TRUTH=%s", truth);
	const char *argv[] = { exe, a1, a2, NULL };
	const char *unset[] = { "HSA_ENABLE_SDMA", NULL }; /* ROCr's default: SDMA for host<->device copies */
	const char *env[] = { env_truth, NULL };
	return tp_capture_buf(argv, &(struct tp_opts){ .unset = unset, .env = env }, out, outlen);
}

/* The libhsakmt helper in MODE on the MI210. */
static int helper(const char *mode, char *out, size_t outlen, char *truth, size_t truthlen)
{
	char id[16];
	snprintf(id, sizeof(id), "0x%x", GA);
	return run("tests/helpers/emu_sdma_kmt", id, mode, mode, out, outlen, truth, truthlen);
}

struct tline {
	char op[32];
	unsigned long long bytes, src, dst, start, end;
	unsigned queue;
};

/* The sdma lines of the truth file, in file order; returns how many (at most max). */
static size_t read_truth(const char *path, struct tline *t, size_t max)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char line[4096];
	size_t n = 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		json_error_t e;
		json_t *j = json_loads(line, 0, &e);
		CU_ASSERT_PTR_NOT_NULL(j); /* every line is one JSON object */
		if (!j)
			continue;
		const char *eng = json_string_value(json_object_get(j, "engine"));
		if (eng && !strcmp(eng, "sdma")) {
			struct tline *x = &t[n++];
			snprintf(x->op, sizeof(x->op), "%s", json_string_value(json_object_get(j, "op")));
			x->bytes = (unsigned long long)json_integer_value(json_object_get(j, "bytes"));
			x->src = strtoull(json_string_value(json_object_get(j, "src")), NULL, 16);
			x->dst = strtoull(json_string_value(json_object_get(j, "dst")), NULL, 16);
			x->start = (unsigned long long)json_integer_value(json_object_get(j, "start"));
			x->end = (unsigned long long)json_integer_value(json_object_get(j, "end"));
			x->queue = (unsigned)json_integer_value(json_object_get(j, "queue"));
			CU_ASSERT_EQUAL((uint32_t)json_integer_value(json_object_get(j, "gpu_id")), GA);
		}
		json_decref(j);
	}
	fclose(f);
	return n;
}

/* Checks k COPY_LINEAR lines from t[*i]: n bytes in pieces of at most MAX_COPY, contiguous, modelled times. */
static void check_copies(const struct tline *t, size_t nt, size_t *i, unsigned long long n)
{
	unsigned long long done = 0, src0 = 0, dst0 = 0;
	while (done < n && *i < nt && !strcmp(t[*i].op, "COPY_LINEAR")) {
		const struct tline *x = &t[(*i)++];
		unsigned long long want = n - done < MAX_COPY ? n - done : MAX_COPY;
		CU_ASSERT_EQUAL(x->bytes, want);
		if (done == 0) {
			src0 = x->src;
			dst0 = x->dst;
		}
		CU_ASSERT_EQUAL(x->src, src0 + done);
		CU_ASSERT_EQUAL(x->dst, dst0 + done);
		/* bytes at GBPS, in 100 MHz ticks (one tick of rounding either side) */
		double ticks = (double)x->bytes / (GBPS * 1e9) * 1e8;
		CU_ASSERT(x->end >= x->start && (double)(x->end - x->start) >= ticks - 1.0 &&
			  (double)(x->end - x->start) <= ticks + 1.0);
		if (done && *i >= 2)
			CU_ASSERT(x->start >= t[*i - 2].end); /* one engine: a copy starts after the one before ends */
		done += x->bytes;
	}
	CU_ASSERT_EQUAL(done, n);
}

static void expect_op(const struct tline *t, size_t nt, size_t *i, const char *op)
{
	CU_ASSERT_FATAL(*i < nt);
	if (strcmp(t[*i].op, op))
		fprintf(stderr, "truth line %zu: %s, expected %s\n", *i, t[*i].op, op);
	CU_ASSERT_STRING_EQUAL(t[*i].op, op);
	(*i)++;
}

static void test_copy(void)
{
	static char out[16384];
	char truth[PATH_MAX];
	CU_ASSERT_EQUAL_FATAL(helper("copy", out, sizeof(out), truth, sizeof(truth)), 0);
	static struct tline t[256];
	size_t nt = read_truth(truth, t, 256), i = 0;
	CU_ASSERT_FATAL(nt > 0);
	/* The helper's commands, from its "copy BYTES START_TS END_TS" lines, in order. */
	unsigned rounds = 0;
	for (const char *p = out; (p = strstr(p, "\ncopy ")); p++) {
		unsigned long long n, s, e;
		CU_ASSERT_FATAL(sscanf(p + 1, "copy %llu %llu %llu", &n, &s, &e) == 3);
		rounds++;
		/* host -> VRAM: TIMESTAMP, (HDP flush: no line), COPY x k, TIMESTAMP, ATOMIC, FENCE, TRAP */
		expect_op(t, nt, &i, "TIMESTAMP");
		CU_ASSERT_EQUAL(t[i - 1].start, s); /* the value the packet wrote is the truth's time */
		size_t first = i;
		check_copies(t, nt, &i, n);
		CU_ASSERT_EQUAL(i - first, (n + MAX_COPY - 1) / MAX_COPY);
		unsigned long long last_end = t[i - 1].end;
		expect_op(t, nt, &i, "TIMESTAMP");
		CU_ASSERT_EQUAL(t[i - 1].start, e);
		CU_ASSERT(e >= last_end); /* the end timestamp comes after the copies' modelled time */
		CU_ASSERT(s <= t[first].start);
		expect_op(t, nt, &i, "ATOMIC_ADD64");
		CU_ASSERT(t[i - 1].start >= last_end); /* the signal drops after the copy ended */
		expect_op(t, nt, &i, "FENCE");
		expect_op(t, nt, &i, "TRAP");
		/* VRAM -> host, then the completion FENCE */
		check_copies(t, nt, &i, n);
		expect_op(t, nt, &i, "FENCE");
	}
	CU_ASSERT_EQUAL(rounds, 3);
	CU_ASSERT_EQUAL(i, nt); /* nothing else did work */
	printf("\n    %zu SDMA truth lines for %u round trips ", nt, rounds);
}

static void test_fill(void)
{
	char out[8192], truth[PATH_MAX];
	CU_ASSERT_EQUAL(helper("fill", out, sizeof(out), truth, sizeof(truth)), 0);
	struct tline t[16];
	size_t nt = read_truth(truth, t, 16), i = 0;
	CU_ASSERT_EQUAL_FATAL(nt, 4);
	expect_op(t, nt, &i, "CONST_FILL");
	CU_ASSERT_EQUAL(t[0].bytes, 3ull << 20);
	expect_op(t, nt, &i, "CONST_FILL");
	CU_ASSERT_EQUAL(t[1].bytes, 8);
	CU_ASSERT_EQUAL(t[1].dst, t[0].dst + 4);
	check_copies(t, nt, &i, 3ull << 20);
	expect_op(t, nt, &i, "FENCE");
}

static void test_poll(void)
{
	char out[8192], truth[PATH_MAX];
	CU_ASSERT_EQUAL(helper("poll", out, sizeof(out), truth, sizeof(truth)), 0);
	struct tline t[8];
	size_t nt = read_truth(truth, t, 8), i = 0;
	CU_ASSERT_EQUAL_FATAL(nt, 2);
	expect_op(t, nt, &i, "POLL_REGMEM");
	expect_op(t, nt, &i, "FENCE");
}

/*
 * A POLL_REGMEM that never holds (emu_sdma_kmt giveup): retry_count 3 halts its queue with the error the
 * helper checks; 0xfff waits until the queue is destroyed, and a queue left waiting does not hold up the
 * process's exit (the helper exits at all, with status 0).  No poll completed: the truth has no line.
 */
static void test_poll_giveup(void)
{
	char out[8192], truth[PATH_MAX];
	CU_ASSERT_EQUAL(helper("giveup", out, sizeof(out), truth, sizeof(truth)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "ok"));
	struct tline t[8];
	CU_ASSERT_EQUAL(read_truth(truth, t, 8), 0);
}

/*
 * One queue's copy in its modelled time does not hold another queue: at 0.01 GB/s the 3 MiB copy takes
 * 315 ms of modelled time; the truth must show the second queue's FENCE inside it and the first queue's
 * FENCE after it.
 */
static void test_busy_not_blocking(void)
{
	char out[8192], truth[PATH_MAX];
	setenv("SPMTAP_EMU_SDMA_GBPS", "0.01", 1);
	int rc = helper("busy", out, sizeof(out), truth, sizeof(truth));
	unsetenv("SPMTAP_EMU_SDMA_GBPS");
	CU_ASSERT_EQUAL(rc, 0);
	struct tline t[8];
	size_t nt = read_truth(truth, t, 8);
	CU_ASSERT_EQUAL_FATAL(nt, 3);
	CU_ASSERT_STRING_EQUAL(t[0].op, "COPY_LINEAR");
	CU_ASSERT_EQUAL(t[0].bytes, 3ull << 20);
	double ticks = (double)t[0].bytes / 0.01e9 * 1e8;
	CU_ASSERT((double)(t[0].end - t[0].start) >= ticks - 1 && (double)(t[0].end - t[0].start) <= ticks + 1);
	CU_ASSERT_STRING_EQUAL(t[1].op, "FENCE");
	CU_ASSERT_NOT_EQUAL(t[1].queue, t[0].queue);
	CU_ASSERT(t[1].start < t[0].end); /* ran while the copy was in its modelled time */
	CU_ASSERT_STRING_EQUAL(t[2].op, "FENCE");
	CU_ASSERT_EQUAL(t[2].queue, t[0].queue);
	CU_ASSERT(t[2].start >= t[0].end);
}

static void test_wrap(void)
{
	char out[8192], truth[PATH_MAX];
	CU_ASSERT_EQUAL(helper("wrap", out, sizeof(out), truth, sizeof(truth)), 0);
	static struct tline t[1024];
	size_t nt = read_truth(truth, t, 1024);
	CU_ASSERT_EQUAL(nt, 600);
	unsigned copies = 0;
	for (size_t i = 0; i < nt; i++)
		copies += !strcmp(t[i].op, "COPY_LINEAR") && t[i].bytes == 1;
	CU_ASSERT_EQUAL(copies, 300);
}

static void test_unknown_opcode(void)
{
	char out[8192], truth[PATH_MAX];
	CU_ASSERT_EQUAL(helper("bad", out, sizeof(out), truth, sizeof(truth)), 0);
	struct tline t[8];
	size_t nt = read_truth(truth, t, 8), i = 0;
	CU_ASSERT_EQUAL_FATAL(nt, 1); /* the fence before it; nothing for it or after it */
	expect_op(t, nt, &i, "FENCE");
}

static const char *rocr_skip;
static const char *need_rocr(void)
{
	return rocr_skip;
}

/* The real ROCr 5.2.3 (examples/hsa_copy): hsa_amd_memory_async_copy host<->VRAM takes its SDMA path. */
static void test_rocr_copy(void)
{
	static char out[16384];
	char truth[PATH_MAX];
	CU_ASSERT_EQUAL_FATAL(run("examples/hsa_copy", NULL, NULL, "rocr", out, sizeof(out), truth, sizeof(truth)), 0);
	static const unsigned long long sizes[3] = { 4096, 1000003, 12595161 };
	for (int k = 0; k < 3; k++) {
		char want[64];
		snprintf(want, sizeof(want), "copy %llu ", sizes[k]);
		const char *p = strstr(out, want);
		unsigned long long n, s1, e1, s2, e2;
		char verdict[16] = "";
		CU_ASSERT_FATAL(p && sscanf(p, "copy %llu %llu %llu %llu %llu %15s", &n, &s1, &e1, &s2, &e2, verdict) == 6);
		CU_ASSERT_STRING_EQUAL(verdict, "ok"); /* the bytes came back equal */
		CU_ASSERT(e1 > s1 && s2 >= e1 && e2 > s2); /* ROCr's copy times: valid, in order */
	}
	static struct tline t[256];
	size_t nt = read_truth(truth, t, 256);
	unsigned long long bytes = 0;
	unsigned copies = 0, atomics = 0, stamps = 0;
	for (size_t i = 0; i < nt; i++) {
		if (!strcmp(t[i].op, "COPY_LINEAR")) {
			copies++;
			bytes += t[i].bytes;
			CU_ASSERT(t[i].bytes <= MAX_COPY);
		}
		atomics += !strcmp(t[i].op, "ATOMIC_ADD64");
		stamps += !strcmp(t[i].op, "TIMESTAMP");
	}
	/* Each size there and back: ROCr split the 12.6 MB ones in 4 packets; one signal decrement and
	 * (async-copy profiling on) two timestamps per copy. */
	CU_ASSERT_EQUAL(bytes, 2 * (sizes[0] + sizes[1] + sizes[2]));
	CU_ASSERT_EQUAL(copies, 2 * (1 + 1 + 4));
	CU_ASSERT_EQUAL(atomics, 6);
	CU_ASSERT_EQUAL(stamps, 12);
	printf("\n    ROCr: %u SDMA copy packets, %llu bytes ", copies, bytes);
}

static const struct testenv_case cases[] = {
	{ "copy", test_copy, NULL },
	{ "fill", test_fill, NULL },
	{ "poll", test_poll, NULL },
	{ "poll_giveup", test_poll_giveup, NULL },
	{ "busy_not_blocking", test_busy_not_blocking, NULL },
	{ "wrap", test_wrap, NULL },
	{ "unknown_opcode", test_unknown_opcode, NULL },
	{ "rocr_copy", test_rocr_copy, need_rocr },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	struct emu_gpu_desc g[1];
	char err[256];
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return testenv_run_suite("emu_sdma", cases, argc, argv);
	testenv_under_emu(argc, argv, SPEC, NULL);
	if (emu_spec_parse(SPEC, g, 1, err, sizeof(err)) != 1)
		return 2;
	GA = g[0].gpu_id;
	void *h = dlopen("libhsa-runtime64.so.1", RTLD_LAZY);
	if (!h)
		rocr_skip = "libhsa-runtime64.so.1 not installed";
	return testenv_run_suite("emu_sdma", cases, argc, argv);
}
