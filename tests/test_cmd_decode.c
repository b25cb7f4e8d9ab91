/* SPDX-License-Identifier: MIT */
/*
 * spmtap decode, run in-process: exact CSV text, empty cells for
 * saturation, the trailing-bytes message and exit status, layout messages,
 * write errors.  The CLI objects are not in libspmtap.a, so the command's
 * source is compiled into this test.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/cli/cmd-decode.c"
#include "lib/files.h"
#include "lib/testenv.h"

static char dir[] = "/tmp/spmtap-cmd-decode-XXXXXX";
static char out_text[1 << 16], err_text[1 << 16];

static const char *path(const char *name)
{
	static char p[16][256];
	static int k;
	k = (k + 1) % 16;
	snprintf(p[k], sizeof(p[k]), "%s/%s", dir, name);
	return p[k];
}

static void write_file(const char *name, const void *b, size_t n)
{
	FILE *f = fopen(path(name), "wb");
	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT_EQUAL(fwrite(b, 1, n, f), n);
	fclose(f);
}

static void slurp(const char *p, char *buf, size_t cap) { tf_slurp_into(p, buf, cap); }

/* Run cmd_decode with stdout and stderr captured into out_text / err_text. */
static int run(int argc, const char *const *args)
{
	char *argv[16];
	for (int i = 0; i < argc; i++)
		argv[i] = (char *)args[i];
	argv[argc] = NULL;
	fflush(stdout);
	fflush(stderr);
	int so = dup(1), se = dup(2);
	int fo = open(path("stdout"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int fe = open(path("stderr"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fo, 1);
	dup2(fe, 2);
	close(fo);
	close(fe);
	int rc = cmd_decode(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	slurp(path("stdout"), out_text, sizeof(out_text));
	slurp(path("stderr"), err_text, sizeof(err_text));
	return rc;
}

/* A smaller shape than SPM.md 5.5 keeps the expected text readable: G=1, S=1, 2 SEs (96 B). */
static const char *LAYOUT =
	"{\"format\":\"spmtap-layout\",\"version\":1,\"gfx\":\"gfx942\",\"num_se\":2,"
	"\"global_lines\":1,\"se_lines\":1,\"counters\":["
	"{\"name\":\"TCC_HIT\",\"segment\":\"global\",\"slot\":4},"
	"{\"name\":\"TA_BUSY\",\"segment\":\"se\",\"slot\":0},"
	"{\"name\":\"SQ_WAVES\",\"segment\":\"se\",\"slot\":1,\"hi_slot\":2}]}";

static void put16(uint8_t *s, uint32_t idx, uint16_t v)
{
	s[idx * 2] = (uint8_t)v;
	s[idx * 2 + 1] = (uint8_t)(v >> 8);
}

/* 3 samples: plain values, a saturated 16-bit SE, a saturated 32-bit counter. */
static void make_raw(uint8_t b[3 * 96])
{
	memset(b, 0, 3 * 96);
	for (int i = 0; i < 3; i++) {
		uint8_t *s = b + i * 96;
		uint64_t ts = 1000 + 100 * (uint64_t)i;
		memcpy(s, &ts, 8);
		put16(s, 4, (uint16_t)(7 + i));         /* TCC_HIT */
		put16(s, 16 + 0, (uint16_t)(10 + i));   /* TA_BUSY se0 */
		put16(s, 32 + 0, (uint16_t)(20 + i));   /* TA_BUSY se1 */
		put16(s, 16 + 1, 1);                    /* SQ_WAVES se0 = 0x20001 */
		put16(s, 16 + 2, 2);
		put16(s, 32 + 1, 0xFFFF);               /* SQ_WAVES se1 = 0x0000FFFF */
		put16(s, 32 + 2, 0);
	}
	put16(b + 96, 32, 0xFFFF);  /* sample 1: TA_BUSY se1 saturated */
	put16(b + 192, 17, 0xFFFF); /* sample 2: SQ_WAVES se0 saturated */
	put16(b + 192, 18, 0xFFFF);
}

static void setup_files(void)
{
	uint8_t b[3 * 96];
	make_raw(b);
	write_file("l.json", LAYOUT, strlen(LAYOUT));
	write_file("raw.bin", b, sizeof(b));
	write_file("trunc.bin", b, 2 * 96 + 40);
}

static void test_csv_exact(void)
{
	setup_files();
	const char *a[] = {"decode", "--layout", path("l.json"), path("raw.bin")};
	CU_ASSERT_EQUAL(run(4, a), 0);
	CU_ASSERT_STRING_EQUAL(out_text, "timestamp,TCC_HIT,TA_BUSY,SQ_WAVES\n"
					 "1000,7,30,196608\n"
					 "1100,8,,196608\n"
					 "1200,9,34,\n");
	CU_ASSERT_STRING_EQUAL(err_text, "");
}

static void test_csv_per_se_to_file(void)
{
	setup_files();
	const char *a[] = {"decode", "--per-se", "-l", path("l.json"), "-o", path("out.csv"),
			   path("raw.bin")};
	CU_ASSERT_EQUAL(run(7, a), 0);
	CU_ASSERT_STRING_EQUAL(out_text, "");
	char csv[4096];
	slurp(path("out.csv"), csv, sizeof(csv));
	CU_ASSERT_STRING_EQUAL(csv, "timestamp,TCC_HIT,TA_BUSY[se0],TA_BUSY[se1],SQ_WAVES[se0],"
				    "SQ_WAVES[se1]\n"
				    "1000,7,10,20,131073,65535\n"
				    "1100,8,11,,131073,65535\n"
				    "1200,9,12,22,,65535\n");
}

static void test_truncated(void)
{
	setup_files();
	const char *a[] = {"decode", "--layout", path("l.json"), path("trunc.bin")};
	CU_ASSERT_NOT_EQUAL(run(4, a), 0);
	CU_ASSERT_STRING_EQUAL(out_text, "timestamp,TCC_HIT,TA_BUSY,SQ_WAVES\n"
					 "1000,7,30,196608\n"
					 "1100,8,,196608\n");
	CU_ASSERT_PTR_NOT_NULL(strstr(err_text, "40 trailing bytes"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err_text, "96-byte sample"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err_text, "2 complete samples written"));
}

static void test_invalid_layout(void)
{
	setup_files();
	const char *bad = "{\"format\":\"spmtap-layout\",\"version\":1,\"gfx\":\"gfx942\","
			  "\"num_se\":2,\"global_lines\":1,\"se_lines\":1,\"counters\":["
			  "{\"name\":\"A\",\"segment\":\"global\",\"slot\":4},"
			  "{\"name\":\"B\",\"segment\":\"global\",\"slot\":4}]}";
	write_file("bad.json", bad, strlen(bad));
	const char *a[] = {"decode", "--layout", path("bad.json"), path("raw.bin")};
	CU_ASSERT_EQUAL(run(4, a), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_text, "invalid layout"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err_text, "bad.json"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err_text, "counters[1] \"B\": slot 4 overlaps the slot of \"A\""));
	CU_ASSERT_STRING_EQUAL(out_text, "");
}

static void test_usage(void)
{
	setup_files();
	/* A bad command line is 64, as in every command (docs/cli/spmtap.md "Exit status"); 2 is "SPM held". */
	const char *a[] = {"decode", path("raw.bin")};
	CU_ASSERT_EQUAL(run(2, a), 64);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_text, "--layout is required"));
	const char *b[] = {"decode", "--layout", path("l.json")};
	CU_ASSERT_EQUAL(run(3, b), 64);
	/* A missing input is said so, whether or not --layout was given. */
	const char *e[] = {"decode", path("missing.bin")};
	CU_ASSERT_EQUAL(run(2, e), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_text, "missing.bin: No such file"));
	CU_ASSERT_PTR_NULL(strstr(err_text, "--layout is required"));
	const char *c[] = {"decode", "--help"};
	CU_ASSERT_EQUAL(run(2, c), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out_text, "usage: spmtap decode"));
	const char *d[] = {"decode", "--layout", path("l.json"), path("missing.bin")};
	CU_ASSERT_EQUAL(run(4, d), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_text, "missing.bin: No such file"));
}

static const char *need_dev_full(void)
{
	return access("/dev/full", W_OK) ? "no writable /dev/full" : NULL;
}

/* A full disk: a clear message naming the output and a non-zero exit. */
static void test_write_error(void)
{
	setup_files();
	const char *a[] = {"decode", "--layout", path("l.json"), "-o", "/dev/full", path("raw.bin")};
	CU_ASSERT_EQUAL(run(6, a), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_text, "/dev/full: write: No space left on device"));
}

int main(int argc, char **argv)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 2;
	}
	static const struct testenv_case cases[] = {
		{"cmd_decode/csv_exact", test_csv_exact, NULL},
		{"cmd_decode/csv_per_se_to_file", test_csv_per_se_to_file, NULL},
		{"cmd_decode/truncated", test_truncated, NULL},
		{"cmd_decode/invalid_layout", test_invalid_layout, NULL},
		{"cmd_decode/usage", test_usage, NULL},
		{"cmd_decode/write_error", test_write_error, need_dev_full},
		{NULL, NULL, NULL},
	};
	int rc = testenv_run_suite("cmd_decode", cases, argc, argv);
	const char *names[] = {"l.json", "bad.json", "raw.bin", "trunc.bin", "out.csv", "stdout",
			       "stderr"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlink(path(names[i]));
	rmdir(dir);
	return rc;
}
