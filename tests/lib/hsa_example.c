/* SPDX-License-Identifier: MIT */
#include "hsa_example.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "testenv.h"

static const char *hsa_skip;
static char hsa_dir[PATH_MAX];

const char *hsa_example_dir(void) { return hsa_dir; }

const char *hsa_example_need(void)
{
	static bool tried;
	if (tried)
		return hsa_skip;
	tried = true;
	/* The source tree: the working directory (make test), else $B/.. */
	char src[PATH_MAX + 32];
	if (access("examples/hsa/kernels.cl", R_OK)) {
		char *r = realpath(testenv_path(testenv_build_dir(), ".."), NULL);
		snprintf(src, sizeof(src), "%s/examples/hsa", r ? r : ".");
		free(r);
	} else {
		snprintf(src, sizeof(src), "examples/hsa");
	}
	char probe[PATH_MAX + 64];
	snprintf(probe, sizeof(probe), "%s/kernels.cl", src);
	if (access(probe, R_OK))
		return hsa_skip = "examples/hsa not found from the working directory or $B/..";
	snprintf(hsa_dir, sizeof(hsa_dir), "%s", testenv_path(testenv_tmpdir(), "hsa"));
	char cmd[4 * PATH_MAX];
	if (system("env -u LD_PRELOAD sh -c 'command -v clang && command -v ld.lld' >/dev/null 2>&1"))
		return hsa_skip = "clang or ld.lld not installed (.ci/install-deps: clang lld)";
	snprintf(cmd, sizeof(cmd),
		 "env -u LD_PRELOAD sh -c 'mkdir -p %s && clang -target amdgcn-amd-amdhsa -mcpu=gfx90a -nogpulib -O2 "
		 "-c %s/kernels.cl -o %s/k.o && ld.lld -shared %s/k.o -o %s/k.hsaco' >&2",
		 hsa_dir, src, hsa_dir, hsa_dir, hsa_dir);
	if (system(cmd))
		return hsa_skip = "clang has no amdgcn target (cannot build examples/hsa/kernels.cl)";
	if (system("env -u LD_PRELOAD sh -c 'test -f /usr/include/hsa/hsa.h && "
		   "ls /usr/lib/*/libhsa-runtime64.so' >/dev/null 2>&1"))
		return hsa_skip = "ROCr's development files not installed (libhsa-runtime-dev)";
	snprintf(cmd, sizeof(cmd),
		 "env -u LD_PRELOAD sh -c 'cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror%s "
		 "-o %s/hsa_dispatch %s/hsa_dispatch.c -lhsa-runtime64 -lpthread' >&2",
		 TESTENV_APP_SAN, hsa_dir, src);
	if (system(cmd))
		return hsa_skip = "examples/hsa/hsa_dispatch.c does not build";
	return NULL;
}
