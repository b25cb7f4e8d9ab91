/* SPDX-License-Identifier: MIT */
/*
 * Finding every descendant of the supervisor.  A process group would miss
 * what a shell puts in groups of its own (`cmd &` under job control) and
 * what calls setsid; parent links do not, and the supervisor, a child
 * subreaper, inherits whatever is orphaned below it, so the links never
 * skip past it.
 */
#include "emu/launcher/descend.h"

#include "emu/common/emu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct proc_link {
	pid_t pid, ppid;
	unsigned long long start;
	bool below; /* a descendant of root */
};

/* pid, ppid and start time of one /proc entry; false when it went away. */
static bool read_link(pid_t pid, struct proc_link *l)
{
	char p[64], buf[1024];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	char *s = strrchr(buf, ')'); /* the name may contain ") " */
	int ppid;
	unsigned long long start;
	if (!s || sscanf(s + 1, " %*c %d %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu",
			 &ppid, &start) != 2)
		return false;
	*l = (struct proc_link){ .pid = pid, .ppid = (pid_t)ppid, .start = start };
	return true;
}

static int scan(struct proc_link **out, size_t *n)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -errno;
	size_t cap = 256;
	struct proc_link *v = malloc(cap * sizeof(*v));
	*n = 0;
	struct dirent *e;
	while (v && (e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		if (*n == cap) {
			struct proc_link *nv = realloc(v, 2 * cap * sizeof(*v));
			if (!nv) {
				free(v);
				v = NULL;
				break;
			}
			v = nv;
			cap *= 2;
		}
		if (read_link((pid_t)pid, &v[*n]))
			(*n)++;
	}
	closedir(d);
	*out = v;
	return v ? 0 : -ENOMEM;
}

/* Signal pid only if it is still the process that was scanned. */
static bool signal_same(const struct proc_link *l, int sig)
{
	int fd = (int)syscall(SYS_pidfd_open, l->pid, 0);
	if (fd < 0) {
		if (errno != ENOSYS)
			return false; /* gone */
		/* Kernels before 5.3: the start-time check narrows the window, it cannot close it. */
		return emu_proc_start(l->pid) == l->start && kill(l->pid, sig) == 0;
	}
	bool ok = emu_proc_start(l->pid) == l->start && syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) == 0;
	close(fd);
	return ok;
}

int emu_signal_descendants(pid_t root, int sig)
{
	struct proc_link *v = NULL;
	size_t n = 0;
	int rc = scan(&v, &n);
	if (rc < 0)
		return rc;
	/* Closure over parent links; depth is small, so repeated passes are cheap. */
	for (bool grew = true; grew;) {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			if (v[i].below)
				continue;
			bool up = v[i].ppid == root;
			for (size_t j = 0; !up && j < n; j++)
				up = v[j].below && v[j].pid == v[i].ppid;
			if (up)
				grew = v[i].below = true;
		}
	}
	int count = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i].below && signal_same(&v[i], sig))
			count++;
	free(v);
	return count;
}
