/* SPDX-License-Identifier: MIT */
/*
 * Test harness helpers: run a test binary (or a child program) under the
 * emulated device, and small CUnit conveniences shared by every suite.
 */
#ifndef SPMTAP_TESTENV_H
#define SPMTAP_TESTENV_H

#include <CUnit/CUnit.h>
#include <stdbool.h>
#include <sys/types.h>

/*
 * If this process is not yet running under the emulator: generate a topology
 * for `profile` (e.g. "mi300a", "mi250x:2", "mi300a,mi210") in a fresh
 * temporary directory, set SPMTAP_EMU_* (private state dir and truth file
 * inside that directory), LD_PRELOAD the shim from the build tree and
 * re-execute /proc/self/exe with the same argv; the parent waits, removes
 * the directory and exits with the child's status.  Returns only in the
 * emulated child.  `extra_env` is a NULL-terminated list of "KEY=VALUE".
 */
void testenv_under_emu(int argc, char **argv, const char *profile, const char *const *extra_env);

/* Directory of the build outputs ($B, default "build"), as an absolute path. */
const char *testenv_build_dir(void);
/* Temporary directory of this emulated run (holds the tree, state, truth). */
const char *testenv_tmpdir(void);

/*
 * "dir/name" in one of 8 buffers used in turn: a call may hold several at
 * once (rename(path(a), path(b))), each valid until 8 more calls.
 */
const char *testenv_path(const char *dir, const char *name);

/*
 * The per-dispatch truth file of this emulated run ($tmpdir/dispatch_truth.jsonl),
 * exported as SPMTAP_EMU_DISPATCH_TRUTH for the apps the suite starts; call
 * after testenv_under_emu.  The path stays valid for the whole run.
 */
const char *testenv_dispatch_truth(void);

/*
 * The end of a suite's main(): remove its temporary directory `dir` unless
 * SPMTAP_KEEP_TMP is set.  Returns rc, or 1 when rc is 0 and the directory
 * could not be removed.
 */
int testenv_remove_tmp(const char *dir, int rc);

/*
 * One CUnit case with an optional requirement: requires() returns NULL when
 * the case can run, else the reason it is skipped (printed as SKIP (reason)).
 */
struct testenv_case {
	const char *name;
	void (*fn)(void);
	const char *(*requires)(void);
};

/* Common requirements: the emulator's shim is built; the sqlite3 CLI is installed. */
const char *testenv_need_emu_shim(void);
const char *testenv_need_sqlite3_cli(void);

/*
 * Register `cases` (terminated by a {NULL}) as suite `suite`, run it
 * (optionally only cases whose name contains argv[1]; "--list" lists them),
 * print CUnit's summary and return the process exit status (0 = all passed).
 */
int testenv_run_suite(const char *suite, const struct testenv_case *cases, int argc, char **argv);

/*
 * Compiler flags for a program a suite builds and runs against this build's
 * libspmtap: a sanitized library needs the sanitizer's runtime in the
 * program too.  Run such compilers without LD_PRELOAD: under the emulator
 * the suite preloads its (sanitized) shim, which a compiler cannot load.
 */
#if defined(__SANITIZE_ADDRESS__)
#define TESTENV_APP_SAN " -fsanitize=address,undefined"
#elif defined(__SANITIZE_THREAD__)
#define TESTENV_APP_SAN " -fsanitize=thread"
#else
#define TESTENV_APP_SAN ""
#endif

/*
 * 1 in a sanitized build (make check-asan, check-tsan): code runs at -O1
 * with instrumentation, several times slower, so a CPU budget of the
 * product build means nothing there and a workload sized for it may need
 * scaling down.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TESTENV_SANITIZED 1
#else
#define TESTENV_SANITIZED 0
#endif

#endif
