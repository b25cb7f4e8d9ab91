/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"
#include "testenv.h"

static void redirect(const char *file, int to)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		_exit(126);
	dup2(fd, to);
	close(fd);
}

/* In the child: everything `o` asks for, before the exec. */
static void child_setup(const struct tp_opts *o)
{
	if (!o)
		return;
	for (const char *const *u = o->unset; u && *u; u++)
		unsetenv(*u);
	for (const char *const *e = o->env; e && *e; e++)
		putenv((char *)*e);
	if (o->fsize > 0) {
		struct rlimit rl = { (rlim_t)o->fsize, (rlim_t)o->fsize };
		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
	}
	if (o->out)
		redirect(o->out, 1);
	if (o->err && o->out && !strcmp(o->err, o->out))
		dup2(1, 2);
	else if (o->err)
		redirect(o->err, 2);
}

pid_t tp_spawn(const char *const *argv, const struct tp_opts *o)
{
	/* Buffered output would otherwise be written twice, by both processes. */
	fflush(NULL);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	child_setup(o);
	execv(argv[0], (char *const *)argv);
	_exit(127);
}

int tp_wait(pid_t pid)
{
	int st;
	if (pid < 0)
		return -1;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int tp_run(const char *const *argv, const struct tp_opts *o)
{
	return tp_wait(tp_spawn(argv, o));
}

int tp_capture(const char *const *argv, const struct tp_opts *o, char **out)
{
	*out = NULL;
	int p[2];
	if (pipe(p))
		return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		struct tp_opts c = o ? *o : (struct tp_opts){ 0 };
		c.out = NULL;
		child_setup(&c);
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	/* Read to the end even without memory, so the child never blocks on a full pipe. */
	size_t n = 0, cap = 1 << 16;
	char *b = malloc(cap), sink[4096];
	ssize_t r;
	for (;;) {
		if (b && n + 1 == cap) {
			char *nb = realloc(b, cap * 2);
			if (!nb) {
				free(b);
				b = NULL;
			}
			b = nb, cap *= 2;
		}
		r = b ? read(p[0], b + n, cap - 1 - n) : read(p[0], sink, sizeof(sink));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (b)
			n += (size_t)r;
	}
	if (b)
		b[n] = '\0';
	close(p[0]);
	*out = b;
	return tp_wait(pid);
}

int tp_capture_buf(const char *const *argv, const struct tp_opts *o, char *out, size_t len)
{
	char *all;
	int rc = tp_capture(argv, o, &all);
	if (out && len)
		snprintf(out, len, "%s", all ? all : "");
	if (rc || (all && strstr(all, "FAIL")))
		fprintf(stderr, "  %s said (rc %d):\n%s", argv[0], rc, all ? all : "");
	free(all);
	return rc;
}

static size_t count(const char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

pid_t tp_spawn_spmtap(const char *const *pre, const char *const *args, const char *state_dir,
		      const struct tp_opts *o)
{
	static char spmtap[PATH_MAX];
	snprintf(spmtap, sizeof(spmtap), "%s/spmtap", testenv_build_dir());
	size_t np = count(pre), na = count(args);
	const char **argv = calloc(np + na + 2, sizeof(*argv));
	if (!argv)
		return -1;
	argv[0] = spmtap;
	/* Element by element: memcpy from a NULL `pre` is undefined even for 0 bytes (UBSan). */
	for (size_t i = 0; i < np; i++)
		argv[1 + i] = pre[i];
	for (size_t i = 0; i < na; i++)
		argv[1 + np + i] = args[i];
	fflush(NULL);
	pid_t pid = fork();
	if (pid != 0) {
		free(argv);
		return pid;
	}
	unsetenv("SPMTAP_EMU_ACTIVE"); /* let --emulate set up a fresh emulator */
	unsetenv("LD_PRELOAD");
	if (state_dir)
		setenv("SPMTAP_EMU_STATE_DIR", state_dir, 1);
	child_setup(o);
	execv(spmtap, (char *const *)argv);
	_exit(127);
}

int tp_sh(const char *cmd, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	size_t n = out && len ? fread(out, 1, len - 1, p) : 0;
	if (out && len)
		out[n] = '\0';
	char sink[4096];
	while (fread(sink, 1, sizeof(sink), p) > 0)
		;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

const char *tp_sh1(const char *cmd)
{
	static char line[8192];
	line[0] = '\0';
	FILE *p = popen(cmd, "r");
	if (!p)
		return line;
	if (!fgets(line, sizeof(line), p))
		line[0] = '\0';
	/* Read the rest, so the command does not die of SIGPIPE. */
	char sink[4096];
	while (fread(sink, 1, sizeof(sink), p) > 0)
		;
	pclose(p);
	line[strcspn(line, "\n")] = '\0';
	return line;
}
