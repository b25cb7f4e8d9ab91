/* SPDX-License-Identifier: MIT */
/*
 * The command line as rocprofv3 users type it (collector/cli/main.c,
 * cmd-record.c, collector/lib/writers.c): global options after the verb,
 * rocprofv3's -f names (pftrace, otf2; rocpd and json refused with why),
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

/*
 * `spmtap list` on an MI300A (gfx942) beside an MI210: where ROCr has no
 * gfx942 agent (Debian's 5.2.3), the MI300A's rows say that apps' kernel
 * dispatch needs ROCm >= 5.7 while the counters go through libhsakmt; the
 * MI210, which ROCr knows, says nothing of the kind.
 */
static void test_list_gfx942_apps(void)
{
	int rc = spmtap("list --emulate mi300a,mi210");
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	const char *out = tf_peek(path("out"));
	const char *g0 = strstr(out, "  GPU 0  rocr    "), *g1 = strstr(out, "  GPU 1  rocr    ");
	CU_ASSERT_FATAL(g0 && g1 && g0 < g1);
	const char *note = strstr(out, "kernel dispatch through ROCr (HIP and HSA apps) needs ROCm >= 5.7 on gfx942");
	bool rocr_knows_942 = !strncmp(g0 + strlen("  GPU 0  rocr    "), "available", 9);
	if (rocr_knows_942) {
		CU_ASSERT_PTR_NULL(note); /* a ROCm >= 5.7 is installed: nothing to say */
	} else {
		CU_ASSERT_PTR_NOT_NULL(strstr(g0, "does not know gfx942"));
		CU_ASSERT(note && note > g0 && note < g1); /* on the MI300A's rows */
		CU_ASSERT_PTR_NOT_NULL(note ? strstr(note, "record --spm programs the counters without it") : NULL);
		CU_ASSERT_PTR_NOT_NULL(strstr(g0, "hsakmt  available"));
	}
	CU_ASSERT_PTR_NULL(strstr(g1, "needs ROCm >= 5.7")); /* not on the MI210's */
	if (!note && !rocr_knows_942)
		fprintf(stderr, "%s", out);
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

/*
 * rocprofv3's documented SPM command line, with `spmtap record` for
 * `rocprofv3`: --spm takes its names as separate words (the app is after
 * `--`, and a lower-case word after the names is still the app), the interval
 * and its unit have rocprofv3's names, the beta opt-in (with or without a
 * boolean) is accepted; the columns are the counters in the order given.
 */
static void test_rocprof_spm_flags(void)
{
	int rc = spmtap("record --emulate mi210 --spm-beta-enabled 1 --spm SQ_CYCLES SQ_WAVES TA_TA_BUSY[0] "
			"--spm-sample-interval-unit sclk_cycles --spm-sample-interval 16384 -d rp -- "
			"/bin/sh -c 'echo \"$*\" > rp_args.txt; sleep 0.3' sh SQ_BUSY_CYCLES x");
	CU_ASSERT_EQUAL(rc, 0);
	if (rc)
		fprintf(stderr, "%s", tf_peek(path("err")));
	char head[256] = "";
	FILE *f = fopen(path("rp/spmtap_spm.csv"), "r");
	CU_ASSERT(f && fgets(head, sizeof(head), f));
	if (f)
		fclose(f);
	CU_ASSERT_STRING_EQUAL(head, "gpu,xcc,host_ns,gpu_ticks,SQ_CYCLES,SQ_WAVES,TA_TA_BUSY[0]\n");
	CU_ASSERT_STRING_EQUAL(tf_peek(path("rp_args.txt")), "SQ_BUSY_CYCLES x\n");
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("rp/spmtap_meta.json")), "\"interval\": 16384"));
	/* without `--`, the first word that is no counter name is the application, as before */
	rc = spmtap("record --emulate mi210 --spm SQ_WAVES SQ_CYCLES -d rp2 /bin/sh -c 'sleep 0.2'");
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT(size_of(path("rp2/spmtap_spm.csv")) > 0);
	/* rocprofv3-avail's `list --spm` lists the counters (it was taken for a --spm-backend without its argument) */
	CU_ASSERT_EQUAL(spmtap("list --spm --gfx gfx942"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("out")), "SQ_WAVES"));
	/* plan reads the same words */
	CU_ASSERT_EQUAL(spmtap("plan --gfx gfx942 --spm SQ_CYCLES SQ_WAVES --spm-sample-interval 4096"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("out")), "4096 SCLK cycles"));
	/* what spmtap does not do is refused, with what to use, before any device (no --emulate) */
	static const struct {
		const char *args, *says;
	} refused[] = {
		{ "record --spm SQ_WAVES --spm-sample-interval-unit time -d x", "counts SCLK cycles" },
		{ "plan --gfx gfx942 --spm SQ_WAVES --spm-sample-interval-unit ns", "counts SCLK cycles" },
		{ "record --pmc SQ_WAVES -d x", "--spm NAMES" },
		{ "plan --gfx gfx942 --pmc SQ_WAVES", "--spm NAMES" },
		{ "plan --gfx gfx942 --spm SQ_WAVES stray", "unexpected argument 'stray'" },
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		CU_ASSERT_EQUAL(spmtap(refused[i].args), 64);
		if (!strstr(tf_peek(path("err")), refused[i].says))
			fprintf(stderr, "%s: %s", refused[i].args, tf_peek(path("err")));
		CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("err")), refused[i].says));
	}
	CU_ASSERT(!exists(path("x")));
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
	/* -o with a directory part (the tick CSV, --raw): the directory is made, as -d's is */
	CU_ASSERT_EQUAL(spmtap("record --emulate mi210 --spm SQ_WAVES -o sub/dir/t.csv --duration 0.2"), 0);
	CU_ASSERT(size_of(path("sub/dir/t.csv")) > 0);
	CU_ASSERT_EQUAL(spmtap("record --emulate mi210 --raw -o sub/raw/r.spmraw --duration 0.2"), 0);
	CU_ASSERT(size_of(path("sub/raw/r.spmraw")) > 0);
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

/* Durations with units, as typed by habit (issue 14 item 10); a bare number is still seconds. */
static void test_duration_units(void)
{
	static const struct {
		const char *arg;
		double lo, hi; /* the summary's seconds */
	} ok[] = { { "500ms", 0.3, 3.0 }, { "0.4s", 0.3, 3.0 }, { "0.4", 0.3, 3.0 } };
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char args[256];
		snprintf(args, sizeof(args), "record --emulate mi210 --spm SQ_WAVES -d units --duration %s",
			 ok[i].arg);
		int rc = spmtap(args);
		CU_ASSERT_EQUAL(rc, 0);
		const char *s = strstr(tf_peek(path("err")), "record: GPU 0: ");
		CU_ASSERT_PTR_NOT_NULL(s);
		double secs = s ? strtod(s + 15, NULL) : -1;
		CU_ASSERT(secs > ok[i].lo && secs < ok[i].hi);
		if (rc || !(secs > ok[i].lo && secs < ok[i].hi))
			fprintf(stderr, "--duration %s: rc %d, %s", ok[i].arg, rc, tf_peek(path("err")));
	}
	/* Refused with an example of what works, before any device is opened. */
	static const char *const bad[] = { "2 s", "-1s", "2parsecs", "0ms", "s" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char args[256];
		snprintf(args, sizeof(args), "record --smi power_cur -d units --duration '%s'", bad[i]);
		CU_ASSERT_EQUAL(spmtap(args), 64);
		CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("err")), "500ms"));
	}
	/* The sensor period takes the same units (bare: ms, as before). */
	CU_ASSERT_EQUAL(spmtap("record --emulate mi210 --spm SQ_WAVES -d units --duration 0.3s "
			       "--smi-interval 0.01s"), 0);
	CU_ASSERT_EQUAL(spmtap("record --smi power_cur -d units --smi-interval 10parsecs"), 64);
}

/* --interval as typed: 0 is reported as 0 (it was "1"), a time gets how to see the period. */
static void test_interval_as_typed(void)
{
	static const char *const cmds[] = { "plan --spm SQ_WAVES --gfx gfx942 --interval %s",
					    "record --spm SQ_WAVES -d iv --interval %s" };
	for (size_t i = 0; i < 2; i++) {
		char args[256];
		snprintf(args, sizeof(args), cmds[i], "0");
		CU_ASSERT_EQUAL(spmtap(args), 64);
		const char *err = tf_peek(path("err"));
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "interval 0 SCLK cycles is out of range"));
		CU_ASSERT_PTR_NULL(strstr(err, "KFD"));
		if (!strstr(err, "interval 0 SCLK"))
			fprintf(stderr, "%s", err);
		snprintf(args, sizeof(args), cmds[i], "10us");
		CU_ASSERT_EQUAL(spmtap(args), 64);
		CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("err")), "counts SCLK cycles, not time"));
	}
	CU_ASSERT(!exists(path("iv")));
}

/*
 * One exit status per kind of error across modes (docs/cli/spmtap.md): a
 * counter request the planner refuses is 64 whether it comes from `plan`,
 * the tick CSV, the session (-d), the raw container, with an application,
 * or on every GPU.
 */
static void test_exit_status_planner(void)
{
	static const char *const modes[] = {
		"plan --spm %s",
		"record --spm %s -o t.csv --duration 0.3",
		"record --spm %s -d st --duration 0.3",
		"record --spm %s --raw -o t.spmraw --duration 0.3",
		"record --spm %s -d st -- true",
		"record --spm %s -d st --device all --duration 0.3",
	};
	static const char *const refused[] = { "NO_SUCH", "GRBM_GUI_ACTIVE", "SQ_WAVES,SQ_WAVES" };
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
		for (size_t r = 0; r < sizeof(refused) / sizeof(refused[0]); r++) {
			char cmd[256], args[300];
			snprintf(cmd, sizeof(cmd), modes[m], refused[r]);
			snprintf(args, sizeof(args), "--emulate mi210 %s", cmd);
			int rc = spmtap(args);
			CU_ASSERT_EQUAL(rc, 64);
			if (rc != 64)
				fprintf(stderr, "%s: exit %d: %s", cmd, rc, tf_peek(path("err")));
		}
}

/*
 * `--device all` and lists, as record takes them, on plan too (a recording's
 * command line copied to plan): one plan per GPU; --layout-out only where
 * the GPUs lay a sample out the same way, else 64 and no file.
 */
static void test_plan_devices(void)
{
	int rc = spmtap("--emulate mi300a,mi210 plan --spm SQ_WAVES --device all");
	CU_ASSERT_EQUAL(rc, 0);
	const char *out = tf_peek(path("out"));
	const char *a = strstr(out, "target     GPU 0 "), *b = strstr(out, "target     GPU 1 ");
	CU_ASSERT(a && b && a < b);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "gfx90a"));
	CU_ASSERT_EQUAL(spmtap("--emulate mi300a,mi210 plan --spm SQ_WAVES --device 1,0"), 0);
	out = tf_peek(path("out"));
	a = strstr(out, "target     GPU 0 ");
	b = strstr(out, "target     GPU 1 ");
	CU_ASSERT(a && b && b < a);

	rc = spmtap("--emulate mi300a,mi210 plan --spm SQ_WAVES --device all --layout-out two.json");
	CU_ASSERT_EQUAL(rc, 64);
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("err")), "lay the samples out differently"));
	CU_ASSERT_FALSE(exists(path("two.json")));
	CU_ASSERT_EQUAL(spmtap("--emulate mi210,mi210 plan --spm SQ_WAVES --device all --layout-out same.json"), 0);
	CU_ASSERT(size_of(path("same.json")) > 100);

	static const struct {
		const char *spec, *want;
	} bad[] = { { "0,0", "given twice" }, { "7", "no GPU \"7\"" }, { "''", "names no GPU" } };
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		char args[256];
		snprintf(args, sizeof(args), "--emulate mi210 plan --spm SQ_WAVES --device %s", bad[k].spec);
		CU_ASSERT_EQUAL(spmtap(args), 64);
		CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("err")), bad[k].want));
		snprintf(args, sizeof(args), "--emulate mi210 record --raw -o d.spmraw --duration 0.2 --device %s",
			 bad[k].spec);
		CU_ASSERT_EQUAL(spmtap(args), 64);
		CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("err")), bad[k].want));
	}
}

/*
 * Third-party noise: ROCr's own "Agent creation failed" lines (an emulated
 * MI300A, which Debian's ROCr 5.2.3 does not know) only with -v, and the
 * submitter fallback in one short line.
 */
static void test_vendor_noise(void)
{
	CU_ASSERT_EQUAL(spmtap("--emulate mi300a record --spm SQ_WAVES -d noise --duration 0.2"), 0);
	const char *err = tf_peek(path("err"));
	CU_ASSERT_PTR_NULL(strstr(err, "Agent creation failed"));
	const char *sub = strstr(err, "through hsakmt");
	CU_ASSERT_PTR_NOT_NULL(sub);
	/* It was 330 characters, with the library's path: now what the user can act on. */
	const char *bol = sub;
	while (bol > err && bol[-1] != '\n')
		bol--;
	const char *eol = strchr(sub, '\n');
	size_t len = eol ? (size_t)(eol - bol) : strlen(bol);
	CU_ASSERT(len <= 160);
	CU_ASSERT_PTR_NULL(strstr(err, "/usr/lib"));
	if (len > 160)
		fprintf(stderr, "a %zu-character line: %.*s\n", len, (int)len, bol);
	CU_ASSERT_EQUAL(spmtap("--emulate mi300a record -v --spm SQ_WAVES -d noise --duration 0.2"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("err")), "Agent creation failed"));
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
		{ "list_gfx942_apps", test_list_gfx942_apps, need_emulator },
		{ "formats_rocprof_names", test_formats_rocprof_names, need_emulator },
		{ "formats_refused", test_formats_refused, NULL },
		{ "d_is_directory", test_d_is_directory, need_emulator },
		{ "rocprof_spm_flags", test_rocprof_spm_flags, need_emulator },
		{ "app_args_untouched", test_app_args_untouched, need_emulator },
		{ "emulate_verb_ignores_env", test_emulate_verb_ignores_env, need_emulator },
		{ "bad_global_options", test_bad_global_options, NULL },
		{ "duration_units", test_duration_units, need_emulator },
		{ "interval_as_typed", test_interval_as_typed, NULL },
		{ "exit_status_planner", test_exit_status_planner, need_emulator },
		{ "vendor_noise", test_vendor_noise, need_emulator },
		{ "plan_devices", test_plan_devices, need_emulator },
		{ NULL, NULL, NULL },
	};
	int rc = testenv_run_suite("cli", cases, argc, argv);
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return rc;
}
