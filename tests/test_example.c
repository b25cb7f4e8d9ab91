/* SPDX-License-Identifier: MIT */
/*
 * examples/record_example.c as a user would build it: `make install` into a
 * temporary prefix (the real install rule, without rebuilding), compile the
 * example with `pkg-config --cflags --libs spmtap` against that prefix, run
 * it on the emulated MI300A (it inherits LD_PRELOAD and SPMTAP_EMU_*) and
 * check what it prints: non-zero totals for both counters and chunks > 0.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"
#include "testenv.h"

static char root[PATH_MAX];

static int is_root(const char *d)
{
	char p[PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/examples/record_example.c", d);
	if (access(p, R_OK))
		return 0;
	snprintf(p, sizeof(p), "%s/Makefile", d);
	return !access(p, R_OK);
}

/* The source tree: the working directory (make test), else $B/.. */
static const char *find_root(void)
{
	if (root[0])
		return root;
	if (getcwd(root, sizeof(root)) && is_root(root))
		return root;
	snprintf(root, sizeof(root), "%s/..", testenv_build_dir());
	char *r = realpath(root, NULL);
	if (r && is_root(r)) {
		snprintf(root, sizeof(root), "%s", r);
		free(r);
		return root;
	}
	free(r);
	root[0] = '\0';
	return NULL;
}

static int have(const char *tool)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	return system(cmd) == 0;
}

static const char *requires_tools(void)
{
	static char shim[PATH_MAX];
	snprintf(shim, sizeof(shim), "%s/libspmtap-emu.so", testenv_build_dir());
	if (access(shim, R_OK))
		return "libspmtap-emu.so not built";
	if (!have("cc"))
		return "no cc";
	if (!have("pkg-config"))
		return "no pkg-config";
	if (!have("make"))
		return "no make";
	if (!find_root())
		return "source tree (examples/record_example.c) not found from the working directory or $B/..";
	return NULL;
}

static unsigned long long value_after(const char *out, const char *key)
{
	const char *p = strstr(out, key);
	if (!p)
		return 0;
	p += strlen(key);
	while (*p == ' ')
		p++;
	if (!strncmp(p, "total", 5))
		p += 5;
	return strtoull(p, NULL, 10);
}

static void test_install_build_run(void)
{
	char prefix[PATH_MAX], cmd[4 * PATH_MAX + 512], out[8192];
	snprintf(prefix, sizeof(prefix), "%s/prefix", testenv_tmpdir());
	/*
	 * Toolchain without the shim preloaded (it is only for the example).
	 * `-o all`: install what $B holds; the suite never rebuilds the tree.
	 */
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && env -u LD_PRELOAD make -s -o all install PREFIX='%s' B='%s' 2>&1",
		 find_root(), prefix, testenv_build_dir());
	int st = tp_sh(cmd, out, sizeof(out));
	if (st)
		fprintf(stderr, "\n%s\n%s", cmd, out);
	CU_ASSERT_EQUAL_FATAL(st, 0);
	static const char *const files[] = { "include/spmtap.h", "lib/libspmtap.a", "lib/libspmtap.so",
					     "lib/libspmtap.so.0", "lib/pkgconfig/spmtap.pc",
					     "bin/spmtap", "lib/spmtap/libspmtap-emu.so" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char f[PATH_MAX + 64];
		snprintf(f, sizeof(f), "%s/%s", prefix, files[i]);
		if (access(f, R_OK))
			fprintf(stderr, "\n    missing %s ", f);
		CU_ASSERT_EQUAL(access(f, R_OK), 0);
	}

	/* The pkg-config file must name this prefix, not the one of the build. */
	snprintf(cmd, sizeof(cmd),
		 "env -u LD_PRELOAD PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --cflags --libs spmtap",
		 prefix);
	st = tp_sh(cmd, out, sizeof(out));
	CU_ASSERT_EQUAL_FATAL(st, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, prefix));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "-lspmtap"));

	snprintf(cmd, sizeof(cmd),
		 "env -u LD_PRELOAD PKG_CONFIG_PATH='%s/lib/pkgconfig' sh -c 'cc -std=c11 -Wall -Wextra "
		 "-Werror" TESTENV_APP_SAN " -o \"$0\" \"$1\" $(pkg-config --cflags --libs spmtap) -Wl,-rpath,\"$2\"' "
		 "'%s/record_example' '%s/examples/record_example.c' '%s/lib' 2>&1",
		 prefix, prefix, find_root(), prefix);
	st = tp_sh(cmd, out, sizeof(out));
	if (st)
		fprintf(stderr, "\n%s\n%s", cmd, out);
	CU_ASSERT_EQUAL_FATAL(st, 0);

	/* Inherits LD_PRELOAD and SPMTAP_EMU_* from this (emulated) process. */
	snprintf(cmd, sizeof(cmd), "'%s/record_example' 300", prefix);
	st = tp_sh(cmd, out, sizeof(out));
	fprintf(stderr, "\n%s", out);
	CU_ASSERT_EQUAL(st, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "MI300A"));
	CU_ASSERT(value_after(out, "SQ_WAVES") > 0);
	CU_ASSERT(value_after(out, "SQ_CYCLES") > 0);
	CU_ASSERT(value_after(out, "\nsamples") > 0);
	CU_ASSERT(value_after(out, "\nchunks") > 0);

	/* Linked against the installed library, not a copy of the build tree's. */
	snprintf(cmd, sizeof(cmd), "env -u LD_PRELOAD ldd '%s/record_example' 2>&1", prefix);
	if (have("ldd") && tp_sh(cmd, out, sizeof(out)) == 0) {
		char want[PATH_MAX + 32];
		snprintf(want, sizeof(want), "%s/lib/libspmtap.so.0", prefix);
		CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
	}
}

int main(int argc, char **argv)
{
	testenv_under_emu(argc, argv, "mi300a", NULL);
	static const struct testenv_case cases[] = {
		{ "install_build_run", test_install_build_run, requires_tools },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("example", cases, argc, argv);
}
