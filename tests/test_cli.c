/* SPDX-License-Identifier: MIT */
/*
 * The command line as rocprofv3 users type it (collector/cli/main.c,
 * cmd-record.c, collector/lib/writers.c): global options after the verb,
 * rocprofv3's -f names (pftrace; rocpd, json and otf2 refused with why),
 * -d always the output directory.  Runs the real build/spmtap; each
 * emulated run gets its own state directory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "files.h"
#include "testenv.h"

static char dir[4096];

static const char *path(const char *name)
{
	static char buf[8][4096];
	static int k;
	k = (k + 1) % 8;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, name);
	return buf[k];
}

/*
 * build/spmtap ARGS (a shell word list), outside any emulator of this
 * process, stdout and stderr to DIR/out and DIR/err; its exit status.
 */
static int spmtap_env(const char *env, const char *args)
{
	char cmd[8192];
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && env -u LD_PRELOAD -u SPMTAP_EMU_ACTIVE -u SPMTAP_EMULATE "
		 "SPMTAP_EMU_STATE_DIR='%s' %s '%s/spmtap' %s >out 2>err </dev/null",
		 dir, path("state"), env, testenv_build_dir(), args);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int spmtap(const char *args) { return spmtap_env("", args); }

static bool exists(const char *p)
{
	struct stat sb;
	return stat(p, &sb) == 0;
}

static off_t size_of(const char *p)
{
	struct stat sb;
	return stat(p, &sb) == 0 ? sb.st_size : -1;
}

static const char *need_emulator(void)
{
	static char shim[4096];
	snprintf(shim, sizeof(shim), "%s/libspmtap-emu.so", testenv_build_dir());
	return access(shim, R_OK) ? "libspmtap-emu.so not built" : NULL;
}

/* issue 2's form: every option after the verb, --emulate among them. */
static void test_emulate_after_verb(void)
{
	int rc = spmtap("record --emulate mi300a --raw -o x.spmraw --duration 0.5");
	CU_ASSERT_EQUAL(rc, 0);
	if (rc)
		fprintf(stderr, "%s", tf_peek(path("err")));
	CU_ASSERT(size_of(path("x.spmraw")) > 4096);
	CU_ASSERT_PTR_NULL(strstr(tf_peek(path("err")), "unrecognized option"));

	rc = spmtap("list --smi --emulate mi300a");
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("out")), "gfx942"));
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("out")), "gpu_metrics"));

	/* Both spellings, and the global place still works. */
	CU_ASSERT_EQUAL(spmtap("plan --spm SQ_WAVES --emulate=mi210"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("out")), "SQ_WAVES"));
	CU_ASSERT_EQUAL(spmtap("--emulate mi210 plan --spm SQ_WAVES"), 0);
}

/* rocprofv3's -f names: pftrace is our Perfetto trace; the outputs are the ones it names. */
static void test_formats_rocprof_names(void)
{
	int rc = spmtap("record --emulate mi210 --spm SQ_WAVES -d fmt -f csv,pftrace,sqlite "
			"--duration 0.3");
	CU_ASSERT_EQUAL(rc, 0);
	if (rc)
		fprintf(stderr, "%s", tf_peek(path("err")));
	CU_ASSERT(size_of(path("fmt/spmtap_spm.csv")) > 0);
	CU_ASSERT(size_of(path("fmt/spmtap.pftrace")) > 0);
	CU_ASSERT(size_of(path("fmt/spmtap.db")) > 0);
}

/*
 * Names we do not write are refused with the reason and what to use, before
 * any device is opened (no --emulate here: the machine has no GPU).
 */
static void test_formats_refused(void)
{
	static const struct {
		const char *f, *why, *instead;
	} cases[] = {
		{ "rocpd", "versioned with ROCm", "-f sqlite" },
		{ "json", "Chrome-trace", "-f pftrace" },
		{ "otf2", "whole-job", "-f pftrace" },
		{ "csv,xml", "unknown", "pftrace" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char args[256];
		snprintf(args, sizeof(args), "record --spm SQ_WAVES -d refused -f %s", cases[i].f);
		CU_ASSERT_EQUAL(spmtap(args), 64);
		const char *err = tf_peek(path("err"));
		CU_ASSERT_PTR_NOT_NULL(strstr(err, cases[i].why));
		CU_ASSERT_PTR_NOT_NULL(strstr(err, cases[i].instead));
		CU_ASSERT_PTR_NULL(strstr(err, "KFD"));
		if (!strstr(err, cases[i].why))
			fprintf(stderr, "-f %s: %s", cases[i].f, err);
	}
	CU_ASSERT(!exists(path("refused")));
}

/* -d is always the directory: a number is a directory name, with a hint about --duration. */
static void test_d_is_directory(void)
{
	int rc = spmtap("record --emulate mi210 --spm SQ_WAVES -d 7 --duration 0.2");
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT(size_of(path("7/spmtap_spm.csv")) > 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("err")), "--duration 7"));
	/* The recording stopped at its --duration, not after 7 s: the summary's seconds say so. */
	const char *s = strstr(tf_peek(path("err")), "GPU 0: ");
	CU_ASSERT_PTR_NOT_NULL(s);
	CU_ASSERT(s && strtod(s + 7, NULL) > 0.1 && strtod(s + 7, NULL) < 3.5);
}

/* After "--" everything is the application's, --emulate included. */
static void test_app_args_untouched(void)
{
	int rc = spmtap("record --spm SQ_WAVES -d app --emulate mi210 -- "
			"/bin/sh -c 'echo \"$*\" > args.txt' sh --emulate x --help");
	CU_ASSERT_EQUAL(rc, 0);
	if (rc)
		fprintf(stderr, "%s", tf_peek(path("err")));
	CU_ASSERT_STRING_EQUAL(tf_peek(path("args.txt")), "--emulate x --help\n");
}

/* `spmtap emulate` names its profile; SPMTAP_EMULATE left in the shell must not nest sessions. */
static void test_emulate_verb_ignores_env(void)
{
	CU_ASSERT_EQUAL(spmtap_env("SPMTAP_EMULATE=mi300a", "emulate mi210 -- sh -c 'echo ok'"), 0);
	CU_ASSERT_STRING_EQUAL(tf_peek(path("out")), "ok\n");
}

static void test_bad_global_options(void)
{
	CU_ASSERT_EQUAL(spmtap("record --spm SQ_WAVES --emulate"), 64);
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("err")), "--emulate needs a PROFILE"));
	CU_ASSERT_EQUAL(spmtap("--bogus record"), 64);
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("err")), "'--bogus'"));
	CU_ASSERT_EQUAL(spmtap("--emulate nosuchgpu list"), 64);
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("err")), "nosuchgpu"));
	CU_ASSERT_EQUAL(spmtap("recrod"), 64);
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("err")), "Did you mean 'record'"));
}

int main(int argc, char **argv)
{
	const char *base = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/spmtap-cli-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	static const struct testenv_case cases[] = {
		{ "emulate_after_verb", test_emulate_after_verb, need_emulator },
		{ "formats_rocprof_names", test_formats_rocprof_names, need_emulator },
		{ "formats_refused", test_formats_refused, NULL },
		{ "d_is_directory", test_d_is_directory, need_emulator },
		{ "app_args_untouched", test_app_args_untouched, need_emulator },
		{ "emulate_verb_ignores_env", test_emulate_verb_ignores_env, need_emulator },
		{ "bad_global_options", test_bad_global_options, NULL },
		{ NULL, NULL, NULL },
	};
	int rc = testenv_run_suite("cli", cases, argc, argv);
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return rc;
}
