/* SPDX-License-Identifier: MIT */
/*
 * Test harness: re-run a test binary under the emulated device, and a thin
 * CUnit runner with skip reasons and a name filter (see testenv.h).
 */
#include "testenv.h"

#include <CUnit/Basic.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emu/common/emu.h"

/* Set by the parent for the emulated child: where the tree, state and truth live. */
#define TESTENV_TMP_VAR "SPMTAP_TESTENV_TMP"

static void testenv_die(const char *what, const char *why)
{
	fprintf(stderr, "testenv: %s: %s\n", what, why);
	exit(2);
}

void testenv_under_emu(int argc, char **argv, const char *profile, const char *const *extra_env)
{
	char tmp[PATH_MAX], err[512], path[PATH_MAX + 32];
	(void)argc;
	if (getenv("SPMTAP_EMU_ACTIVE") && getenv(TESTENV_TMP_VAR))
		return; /* we are the emulated child */
	if (emu_env_setup(profile, tmp, sizeof(tmp), err, sizeof(err)))
		testenv_die("cannot set up the emulator", err);
	setenv(TESTENV_TMP_VAR, tmp, 1);
	snprintf(path, sizeof(path), "%s/state", tmp);
	if (!getenv("SPMTAP_EMU_STATE_DIR")) {
		mkdir(path, 0700);
		setenv("SPMTAP_EMU_STATE_DIR", path, 1);
	}
	snprintf(path, sizeof(path), "%s/truth.jsonl", tmp);
	if (!getenv("SPMTAP_EMU_TRUTH"))
		setenv("SPMTAP_EMU_TRUTH", path, 1);
	for (const char *const *e = extra_env; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (!eq || eq == *e || (size_t)(eq - *e) >= 128)
			testenv_die("bad extra_env entry", *e);
		char key[128];
		memcpy(key, *e, (size_t)(eq - *e));
		key[eq - *e] = 0;
		setenv(key, eq + 1, 1);
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		testenv_die("fork", strerror(errno));
	if (pid == 0) {
		execv("/proc/self/exe", argv);
		fprintf(stderr, "testenv: exec /proc/self/exe: %s\n", strerror(errno));
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			testenv_die("waitpid", strerror(errno));
	if (emu_tree_remove(tmp))
		fprintf(stderr, "testenv: could not remove %s: %s\n", tmp, strerror(errno));
	if (WIFSIGNALED(st)) {
		fprintf(stderr, "testenv: emulated run killed by signal %d\n", WTERMSIG(st));
		exit(128 + WTERMSIG(st));
	}
	exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
}

static int testenv_has_build(const char *dir)
{
	char p[PATH_MAX + 32];
	struct stat st;
	snprintf(p, sizeof(p), "%s/libspmtap-emu.so", dir);
	return stat(p, &st) == 0;
}

const char *testenv_build_dir(void)
{
	static char dir[PATH_MAX];
	if (dir[0])
		return dir;
	const char *b = getenv("B");
	if (b && *b && realpath(b, dir))
		return dir;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		/* build/tests/test_x or build/tests/helpers/x */
		for (int up = 0; up < 3; up++) {
			char *s = strrchr(exe, '/');
			if (!s)
				break;
			*s = 0;
			if (up > 0 && testenv_has_build(exe) && realpath(exe, dir))
				return dir;
		}
	}
	if (!realpath("build", dir))
		snprintf(dir, sizeof(dir), "build");
	return dir;
}

const char *testenv_tmpdir(void)
{
	const char *t = getenv(TESTENV_TMP_VAR);
	return t ? t : "";
}

const char *testenv_path(const char *dir, const char *name)
{
	static char buf[8][PATH_MAX];
	static unsigned k;
	k = (k + 1) % 8;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, name);
	return buf[k];
}

const char *testenv_dispatch_truth(void)
{
	static char truth[PATH_MAX];
	snprintf(truth, sizeof(truth), "%s/dispatch_truth.jsonl", testenv_tmpdir());
	setenv("SPMTAP_EMU_DISPATCH_TRUTH", truth, 1);
	return truth;
}

const char *testenv_need_emu_shim(void)
{
	char shim[PATH_MAX];
	snprintf(shim, sizeof(shim), "%s/libspmtap-emu.so", testenv_build_dir());
	return access(shim, R_OK) ? "libspmtap-emu.so not built" : NULL;
}

const char *testenv_need_sqlite3_cli(void)
{
	return access("/usr/bin/sqlite3", X_OK) && access("/bin/sqlite3", X_OK) ? "sqlite3 CLI not installed" : NULL;
}

int testenv_remove_tmp(const char *dir, int rc)
{
	if (getenv("SPMTAP_KEEP_TMP"))
		return rc;
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) != 0 && !rc ? 1 : rc;
}

int testenv_run_suite(const char *suite, const struct testenv_case *cases, int argc, char **argv)
{
	const char *filter = argc > 1 ? argv[1] : NULL;
	if (filter && !strcmp(filter, "--list")) {
		for (const struct testenv_case *c = cases; c->name; c++)
			printf("%s\n", c->name);
		return 0;
	}
	if (CU_initialize_registry() != CUE_SUCCESS) {
		fprintf(stderr, "CUnit: %s\n", CU_get_error_msg());
		return 1;
	}
	CU_set_fail_on_inactive(CU_FALSE);
	CU_pSuite s = CU_add_suite(suite, NULL, NULL);
	if (!s) {
		fprintf(stderr, "CUnit: %s\n", CU_get_error_msg());
		CU_cleanup_registry();
		return 1;
	}
	int selected = 0;
	for (const struct testenv_case *c = cases; c->name; c++) {
		if (filter && !strstr(c->name, filter))
			continue;
		CU_pTest t = CU_add_test(s, c->name, c->fn);
		if (!t) {
			fprintf(stderr, "CUnit: %s\n", CU_get_error_msg());
			CU_cleanup_registry();
			return 1;
		}
		selected++;
		const char *why = c->requires ? c->requires() : NULL;
		if (why) {
			printf("  %s: SKIP (%s)\n", c->name, why);
			CU_set_test_active(t, CU_FALSE);
		}
	}
	if (!selected) {
		fprintf(stderr, "%s: no case matches '%s' (try --list)\n", suite, filter ? filter : "");
		CU_cleanup_registry();
		return 1;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_ErrorCode rc = CU_basic_run_tests();
	unsigned failed = CU_get_number_of_tests_failed() + CU_get_number_of_failures();
	int cu_err = rc != CUE_SUCCESS || CU_get_error() != CUE_SUCCESS;
	if (cu_err)
		fprintf(stderr, "CUnit error: %s\n", CU_get_error_msg());
	CU_cleanup_registry();
	return (failed || cu_err) ? 1 : 0;
}
