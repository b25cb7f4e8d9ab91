/* SPDX-License-Identifier: MIT */
/*
 * --emulate PROFILE: run this same command line again in a child that has
 * the emulator preloaded (the shim must be in place before the dynamic
 * loader resolves libhsakmt, so it cannot be switched on in-process).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/cli/cli.h"
#include "emu/common/emu.h"

static volatile sig_atomic_t child_pid;

static void forward(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

int emulate_run(const char *profile, char **argv)
{
	const char *active = getenv("SPMTAP_EMU_ACTIVE");
	if (active && *active)
		return -1; /* already the child: the option has done its job */

	char tmpdir[4096], err[512] = "";
	if (emu_env_setup(profile, tmpdir, sizeof(tmpdir), err, sizeof(err)) < 0) {
		fprintf(stderr, "spmtap: --emulate %s: %s\n", profile, err);
		return EXIT_USAGE;
	}
	/* Forward before forking so no signal falls between fork and the handler. */
	struct sigaction sa = { .sa_handler = forward };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "spmtap: --emulate: fork: %s\n", strerror(errno));
		emu_tree_remove(tmpdir);
		return EXIT_FAIL;
	}
	if (pid == 0) {
		/* /proc/self/exe, not argv[0]: works from any directory and any PATH. */
		execv("/proc/self/exe", argv);
		fprintf(stderr, "spmtap: --emulate: exec /proc/self/exe: %s\n", strerror(errno));
		_exit(127);
	}
	child_pid = pid;
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	child_pid = 0;
	emu_tree_remove(tmpdir);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return EXIT_FAIL;
}
