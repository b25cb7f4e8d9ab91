/* SPDX-License-Identifier: MIT */
/*
 * spmtap record end to end under the emulator: the CLI runs as a child
 * (`spmtap --emulate PROFILE record --raw ...`), the file is read back, the
 * test pattern is checked line by line, and the byte counts are compared
 * with the emulator's ground truth ($SPMTAP_EMU_TRUTH).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collector/lib/rawfile.h"
#include "decoder/pattern.h"
#include "lib/files.h"
#include "lib/proc.h"
#include "lib/testenv.h"

static char dir[] = "/tmp/spmtap-test-record-XXXXXX";
static char spmtap[4096];

static const char *path(const char *name)
{
	static char p[8][1024];
	static unsigned i;
	char *r = p[i++ % 8];
	snprintf(r, sizeof(p[0]), "%s/%s", dir, name);
	return r;
}

static const char *need_emulator(void)
{
	static char shim[4096];
	snprintf(shim, sizeof(shim), "%s/libspmtap-emu.so", testenv_build_dir());
	snprintf(spmtap, sizeof(spmtap), "%s/spmtap", testenv_build_dir());
	if (access(shim, R_OK))
		return "build/libspmtap-emu.so not built";
	if (access(spmtap, X_OK))
		return "build/spmtap not built";
	return NULL;
}

/* Start spmtap with argv and extra "K=V" env; stderr goes to errfile (tests/lib/proc.h). */
static pid_t spawn(const char *const *args, const char *const *env, const char *errfile)
{
	return tp_spawn_spmtap(NULL, args, path("state"), &(struct tp_opts){ .env = env, .err = errfile });
}

static int wait_status(pid_t pid) { return tp_wait(pid); }

static int run(const char *const *args, const char *const *env, const char *errfile)
{
	return wait_status(spawn(args, env, errfile));
}

static char *slurp(const char *p) { return tf_text(p); }

struct readback {
	uint32_t num_xcc, gen;
	uint64_t recorded[DEC_MAX_XCC];
	uint64_t loss_records;
	bool meta, end;
	json_t *end_json;
	struct dec_pat pat;
};

static void read_back(const char *file, struct readback *rb)
{
	memset(rb, 0, sizeof(*rb));
	struct rawfile_reader *r;
	struct rawfile_record rec;
	char err[512];
	int rc = rawfile_open(&r, file, err, sizeof(err));
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	const struct rawfile_header *h = rawfile_header(r);
	rb->num_xcc = h->gen == RAWFILE_GEN_B ? h->num_xcc : 1;
	rb->gen = h->gen;
	dec_pat_init(&rb->pat, rb->num_xcc, h->gpu_id);
	int n = 0;
	while ((rc = rawfile_next(r, &rec, err, sizeof(err))) == 1) {
		if (n++ == 0)
			rb->meta = rec.type == RAWFILE_META;
		CU_ASSERT_FALSE(rb->end); /* nothing after the end record */
		if (rec.type == RAWFILE_SPM) {
			CU_ASSERT_FATAL(rec.xcc < rb->num_xcc);
			rb->recorded[rec.xcc] += rec.length;
			rb->loss_records += (rec.flags & RAWFILE_F_LOSS) != 0;
			dec_pat_feed(&rb->pat, rec.xcc, rec.data, rec.length);
		} else if (rec.type == RAWFILE_END) {
			rb->end = true;
			rb->end_json = json_loadb(rec.data, rec.length, 0, NULL);
		}
	}
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(rawfile_trailing(r), 0);
	CU_ASSERT_TRUE(rb->meta);
	CU_ASSERT_TRUE(rb->end);
	rawfile_close(r);
}

struct truth {
	uint64_t produced, copied, lost, in_stream_lost, late;
	bool seen;
};

/* Last release line per XCC. */
static void read_truth(const char *file, struct truth *t, uint32_t n)
{
	memset(t, 0, sizeof(*t) * n);
	FILE *f = fopen(file, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	char line[2048];
	while (fgets(line, sizeof(line), f)) {
		json_t *j = json_loads(line, 0, NULL);
		if (!j)
			continue;
		json_int_t xcc = json_integer_value(json_object_get(j, "xcc"));
		if (xcc >= 0 && xcc < (json_int_t)n) {
			struct truth *x = &t[xcc];
#define G(k) (uint64_t)json_integer_value(json_object_get(j, k))
			x->produced = G("produced_bytes");
			x->copied = G("copied_bytes");
			x->lost = G("lost_bytes");
			/* What fell between lines we saw; data after the last copy never
			 * shows up as a sequence gap. */
			x->in_stream_lost = G("lost_overflow_bytes") + G("lost_no_buffer_bytes") +
					    G("lost_injected_bytes") + G("lost_efault_bytes");
			x->late = G("lost_late_bytes");
#undef G
			x->seen = true;
		}
		json_decref(j);
	}
	fclose(f);
}

/* The invariants every recording must satisfy. */
static void check(const char *name, struct readback *rb, bool expect_loss)
{
	char truthfile[1024];
	snprintf(truthfile, sizeof(truthfile), "%s", path(name));
	struct truth t[DEC_MAX_XCC];
	read_truth(truthfile, t, rb->num_xcc);
	uint64_t lost_total = 0;
	for (uint32_t k = 0; k < rb->num_xcc; k++) {
		const struct dec_pat_stats *s = dec_pat_stats(&rb->pat, k);
		CU_ASSERT_TRUE(t[k].seen);
		CU_ASSERT(s->good_lines > 0);
		CU_ASSERT_EQUAL(s->dup_lines, 0);
		CU_ASSERT_EQUAL(s->corrupt_lines, 0);
		CU_ASSERT_EQUAL(s->ts_backwards, 0);
		/* every byte the kernel copied is in the file, nothing else */
		CU_ASSERT_EQUAL(rb->recorded[k], t[k].copied);
		CU_ASSERT_EQUAL(rb->recorded[k] + t[k].lost, t[k].produced);
		/* the checker measures exactly the loss inside the stream */
		CU_ASSERT_EQUAL(s->lost_bytes, t[k].in_stream_lost);
		CU_ASSERT_EQUAL(s->bytes_fed + s->lost_bytes - s->carry, s->next_seq * DEC_PAT_LINE);
		/*
		 * No loss is the recorder's: an emulated device starved of CPU (a
		 * sanitizer on a busy box) skips whole samples as a stalled RLC would,
		 * and the truth says how many; those, and only those, may be missing.
		 */
		if (!expect_loss) {
			CU_ASSERT_EQUAL(s->lost_bytes, t[k].late);
			if (t[k].late)
				fprintf(stderr, "\n  xcc %u: %llu bytes skipped by the emulated device running late "
					"(a starved emulator, not the recorder)\n", k, (unsigned long long)t[k].late);
		}
		lost_total += s->lost_bytes;
		if (rb->recorded[k] != t[k].copied || s->lost_bytes != t[k].in_stream_lost)
			fprintf(stderr, "\n  xcc %u: recorded %llu copied %llu produced %llu lost %llu checker_lost %llu in_stream %llu\n",
				k, (unsigned long long)rb->recorded[k], (unsigned long long)t[k].copied,
				(unsigned long long)t[k].produced, (unsigned long long)t[k].lost,
				(unsigned long long)s->lost_bytes, (unsigned long long)t[k].in_stream_lost);
	}
	if (expect_loss)
		CU_ASSERT(lost_total > 0);
	/*
	 * The end record agrees with what is in the file: without counters the
	 * recorder has no layout and accounts bytes and kernel flags only (the
	 * pattern is this test's to check, above, from the file).
	 */
	CU_ASSERT_TRUE(json_is_false(json_object_get(rb->end_json, "decoded")));
	json_t *xs = json_object_get(rb->end_json, "xcc");
	CU_ASSERT_EQUAL(json_array_size(xs), rb->num_xcc);
	uint64_t flagged = 0;
	for (uint32_t k = 0; k < rb->num_xcc && k < json_array_size(xs); k++) {
		json_t *x = json_array_get(xs, k);
		CU_ASSERT_EQUAL((uint64_t)json_integer_value(json_object_get(x, "bytes")), rb->recorded[k]);
		flagged += (uint64_t)json_integer_value(json_object_get(x, "loss_regions"));
	}
	CU_ASSERT_EQUAL(flagged, rb->loss_records);
	json_decref(rb->end_json);
}

static void record_case(const char *profile, const char *backend, const char *tag,
			const char *duration, const char *const *extra_args, const char *const *extra_env,
			bool expect_loss)
{
	char out[1024], errf[1100], truth_env[1100], truth[64];
	snprintf(out, sizeof(out), "%s", path(tag));
	snprintf(errf, sizeof(errf), "%s.err", out);
	snprintf(truth, sizeof(truth), "%s.truth", tag);
	snprintf(truth_env, sizeof(truth_env), "SPMTAP_EMU_TRUTH=%s", path(truth));
	const char *args[24] = { "--emulate", profile, "record", "--raw", "-o", out, "--duration",
				 duration, "--spm-backend", backend };
	int n = 10;
	for (; extra_args && *extra_args; extra_args++)
		args[n++] = *extra_args;
	args[n] = NULL;
	const char *env[8] = { truth_env };
	int m = 1;
	for (; extra_env && *extra_env; extra_env++)
		env[m++] = *extra_env;
	env[m] = NULL;
	int st = run(args, env, errf);
	char *msg = slurp(errf);
	if (st != 0)
		fprintf(stderr, "\n%s\n", msg);
	CU_ASSERT_EQUAL_FATAL(st, 0);
	if (expect_loss) {
		CU_ASSERT_PTR_NOT_NULL(strstr(msg, "DATA LOSS"));
		CU_ASSERT_PTR_NOT_NULL(strstr(msg, "bytes"));
	}
	/* the summary says what a recording without a layout can account for */
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "no layout: bytes and the kernel's loss flags"));
	free(msg);
	struct readback rb;
	read_back(out, &rb);
	check(truth, &rb, expect_loss);
}

static void test_mi300a_hsakmt(void)
{
	record_case("mi300a", "hsakmt", "a.raw", "2", NULL, NULL, false);
}

static void test_mi300a_kfd(void)
{
	record_case("mi300a", "kfd", "b.raw", "1", NULL, NULL, false);
}

static void test_mi210_gen_a(void)
{
	record_case("mi210", "hsakmt", "c.raw", "1", NULL, NULL, false);
}

static void test_mi210_kfd(void)
{
	record_case("mi210", "kfd", "c2.raw", "1", NULL, NULL, false);
}

/* Loss made inside the emulated RLC (a stall), not by the feeder, must show too. */
static void test_emu_drop(void)
{
	static const char *const env[] = { "SPMTAP_EMU_INJECT_DROP=300:65536,700:4000", NULL };
	record_case("mi300a", "kfd", "g.raw", "1.2", NULL, env, true);
}

/*
 * make soak: SPMTAP_SOAK_SECONDS of streaming at 4x the default rate with a
 * feeder stall every few seconds' worth; the accounting must still close.
 */
static const char *need_soak(void)
{
	const char *why = need_emulator();
	if (why)
		return why;
	return getenv("SPMTAP_SOAK_SECONDS") ? NULL : "soak runs only under make soak (SPMTAP_SOAK_SECONDS)";
}

static void test_soak(void)
{
	static const char *const args[] = { "--buffer-size", "1M", NULL };
	static const char *const env[] = { "SPMTAP_EMU_RATE=32768", "SPMTAP_FEEDER_STALL=5000:700",
					   "SPMTAP_EMU_INJECT_DROP=9000:1048576", NULL };
	record_case("mi300a", "hsakmt", "soak.raw", getenv("SPMTAP_SOAK_SECONDS"), args, env, true);
}

/* A feeder that sleeps 800 ms with 256 KiB buffers must lose data, and say how much. */
static void test_stall_loss(void)
{
	static const char *const args[] = { "--buffer-size", "256k", NULL };
	static const char *const env[] = { "SPMTAP_FEEDER_STALL=200:800", NULL };
	record_case("mi300a", "hsakmt", "d.raw", "1.5", args, env, true);
}

static void test_mi210_stall_loss(void)
{
	static const char *const args[] = { "--buffer-size", "64k", NULL };
	static const char *const env[] = { "SPMTAP_FEEDER_STALL=200:800", NULL };
	record_case("mi210", "hsakmt", "e.raw", "1.5", args, env, true);
}

static void test_busy(void)
{
	const char *a1[] = { "--emulate", "mi300a", "record", "--raw", "-o", path("f1.raw"),
			     "--duration", "4", NULL };
	const char *a2[] = { "--emulate", "mi300a", "record", "--raw", "-o", path("f2.raw"),
			     "--duration", "4", NULL };
	pid_t first = spawn(a1, NULL, path("f1.err"));
	/* Wait until the first one holds SPM: its file gets data. */
	struct stat st;
	for (int i = 0; i < 100; i++) {
		/* f1.raw.part while it records (outputs are renamed at the end, docs/raw-format.md) */
		if (stat(path("f1.raw.part"), &st) == 0 && st.st_size > 64 + 32 + 512)
			break;
		usleep(50000);
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int s2 = run(a2, NULL, path("f2.err"));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	char *msg = slurp(path("f2.err"));
	CU_ASSERT_EQUAL(s2, 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "held by another process"));
	CU_ASSERT(t1.tv_sec - t0.tv_sec < 3); /* at once, not after the first ends */
	free(msg);
	kill(first, SIGINT);
	CU_ASSERT_EQUAL(wait_status(first), 0);
	/* interrupted, yet complete */
	struct readback rb;
	read_back(path("f1.raw"), &rb);
	json_decref(rb.end_json);
}

/* A kernel without the SPM ioctl (upstream amdgpu) must be named, not guessed at. */
static void test_no_spm_kernel(void)
{
	static const char *const modes[] = { "SPMTAP_EMU_NO_SPM=enotty", "SPMTAP_EMU_NO_SPM=einval" };
	for (int i = 0; i < 2; i++) {
		const char *args[] = { "--emulate", "mi210", "record", "--raw", "-o", path("h.raw"),
				       "--duration", "1", NULL };
		const char *env[] = { modes[i], NULL };
		int st = run(args, env, path("h.err"));
		char *msg = slurp(path("h.err"));
		CU_ASSERT_EQUAL(st, 1);
		CU_ASSERT_PTR_NOT_NULL(strstr(msg, "amdgpu-dkms"));
		CU_ASSERT_PTR_NOT_NULL(strstr(msg, i ? "EINVAL is ambiguous" : "ENOTTY"));
		free(msg);
	}
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "mi300a_hsakmt", test_mi300a_hsakmt, need_emulator },
		{ "mi300a_kfd", test_mi300a_kfd, need_emulator },
		{ "mi210_gen_a", test_mi210_gen_a, need_emulator },
		{ "mi210_kfd", test_mi210_kfd, need_emulator },
		{ "emu_drop", test_emu_drop, need_emulator },
		{ "stall_loss", test_stall_loss, need_emulator },
		{ "mi210_stall_loss", test_mi210_stall_loss, need_emulator },
		{ "busy", test_busy, need_emulator },
		{ "no_spm_kernel", test_no_spm_kernel, need_emulator },
		{ "soak", test_soak, need_soak },
		{ NULL, NULL, NULL },
	};
	if (!mkdtemp(dir))
		return 1;
	mkdir(path("state"), 0700);
	int rc = testenv_run_suite("record", cases, argc, argv);
	if (!getenv("SPMTAP_KEEP_TMP")) {
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0 && !rc)
			rc = 1;
	}
	return rc;
}
