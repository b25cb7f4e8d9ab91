/* SPDX-License-Identifier: MIT */
/*
 * --emulate PROFILE and `spmtap emulate`: hand over to the emulator's
 * launcher, spmtap-emu, by exec (so the pid the user started stays the
 * session's front, and its exit status is the command's).  spmtap links no
 * emulator code; the launcher sets up the emulated node, runs the command
 * under the preloaded shim, and ends the session with this process
 * (docs/emulator.md, "Running something under the emulator").
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/cli/cli.h"

#define LAUNCHER_NAME "spmtap-emu"

static bool is_exe(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

/*
 * The launcher, found as the emulator's shim is: $SPMTAP_EMU_LAUNCHER, else
 * beside this executable or one or two levels up (the build tree), else in
 * <exe dir>/../lib/spmtap/ (installed).  0, or -ENOENT with the reason in buf.
 */
static int launcher_path(char *buf, size_t len)
{
	static const char *const rel[] = { "", "/..", "/../..", "/../lib/spmtap" };
	char exe[PATH_MAX], cand[PATH_MAX + 64];
	const char *env = getenv("SPMTAP_EMU_LAUNCHER");
	if (env && *env) {
		if (!is_exe(env)) {
			snprintf(buf, len, "SPMTAP_EMU_LAUNCHER=%s: not an executable file", env);
			return -ENOENT;
		}
		snprintf(buf, len, "%s", env);
		return 0;
	}
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		snprintf(buf, len, "cannot read /proc/self/exe: %s", strerror(errno));
		return -ENOENT;
	}
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(cand, sizeof(cand), "%s%s/" LAUNCHER_NAME, exe, rel[i]);
		if (is_exe(cand) && strlen(cand) < len) {
			snprintf(buf, len, "%s", cand);
			return 0;
		}
	}
	snprintf(buf, len, LAUNCHER_NAME " (installed with the emulator) not found beside %s, in ../, ../../ or "
		 "../lib/spmtap/ (set SPMTAP_EMU_LAUNCHER)", exe);
	return -ENOENT;
}

int emulate_exec(const char *what, const char *profile, const char *gen, char **cmd)
{
	char launcher[PATH_MAX + 128];
	if (launcher_path(launcher, sizeof(launcher)) < 0) {
		fprintf(stderr, "spmtap: %s %s: %s\n", what, profile, launcher);
		return EXIT_USAGE;
	}
	size_t n = 0;
	while (cmd[n])
		n++;
	char **argv = calloc(n + 7, sizeof(*argv));
	if (!argv) {
		fprintf(stderr, "spmtap: %s: out of memory\n", what);
		return EXIT_FAIL;
	}
	size_t k = 0;
	argv[k++] = (char *)LAUNCHER_NAME;
	if (gen) {
		argv[k++] = (char *)"--gen";
		argv[k++] = (char *)gen;
	}
	argv[k++] = (char *)profile;
	argv[k++] = (char *)"--";
	memcpy(argv + k, cmd, (n + 1) * sizeof(*argv));
	fflush(NULL);
	execv(launcher, argv);
	fprintf(stderr, "spmtap: %s: exec %s: %s\n", what, launcher, strerror(errno));
	free(argv);
	return EXIT_FAIL;
}

int emulate_run(const char *profile, char **argv)
{
	const char *active = getenv("SPMTAP_EMU_ACTIVE");
	if (active && *active)
		return -1; /* already the child: the option has done its job */
	/* /proc/self/exe, not argv[0]: works from any directory and any PATH. */
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		fprintf(stderr, "spmtap: --emulate: cannot read /proc/self/exe: %s\n", strerror(errno));
		return EXIT_FAIL;
	}
	exe[n] = 0;
	char *old0 = argv[0];
	argv[0] = exe;
	int st = emulate_exec("--emulate", profile, NULL, argv);
	argv[0] = old0;
	return st;
}
