/* SPDX-License-Identifier: MIT */
/* Who else has the KFD device open: the likely SPM holders, for EBUSY messages. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spm/spm.h"

/* The emulator's /dev/kfd is a memfd of this name (emu/). */
#define EMU_KFD_MEMFD "/memfd:spmtap-emu-kfd"

static bool is_kfd_link(const char *target)
{
	return !strcmp(target, "/dev/kfd") ||
	       !strncmp(target, EMU_KFD_MEMFD, sizeof(EMU_KFD_MEMFD) - 1);
}

static bool has_kfd_open(long pid)
{
	char path[64], link[256];
	snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
	DIR *d = opendir(path);
	if (!d)
		return false; /* gone, or another user's: we cannot tell */
	bool found = false;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);
		if (*end || end == e->d_name)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/fd/%ld", pid, fd);
		ssize_t n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		found = is_kfd_link(link);
	}
	closedir(d);
	return found;
}

void spm_kfd_holders(char *out, size_t len)
{
	if (!out || !len)
		return;
	out[0] = '\0';
	DIR *proc = opendir("/proc");
	if (!proc)
		return;
	size_t off = 0;
	pid_t self = getpid();
	struct dirent *e;
	while ((e = readdir(proc)) && off + 1 < len) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid == self || !has_kfd_open(pid))
			continue;
		char path[64], comm[32] = "?";
		snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
		FILE *f = fopen(path, "re");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = '\0';
			fclose(f);
		}
		int w = snprintf(out + off, len - off, "%s%ld (%s)", off ? ", " : "", pid, comm);
		if (w < 0)
			break;
		off += (size_t)w;
	}
	closedir(proc);
}
