/* SPDX-License-Identifier: MIT */
/*
 * <tree>/emu-schedule: the workload's load/idle steps as the opening
 * process's own SPMTAP_EMU_WORKLOAD makes them (emu_schedule_render), for
 * readers that link no emulator code (`spmtap record --phases emulator`).
 * Generated at each open, like a sysfs attribute: processes sharing a tree
 * may run different workloads, and each must read its own.
 */
#include "emu/common/schedule.h"
#include "emu/shim/shim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int emu_schedule_open(const char *path, int flags)
{
	size_t l = strlen(emu_p.sysfs);
	if (!emu_p.active || !path || !l || strncmp(path, emu_p.sysfs, l) || strcmp(path + l, "/emu-schedule"))
		return -2;
	if ((flags & O_ACCMODE) != O_RDONLY) {
		errno = EACCES; /* read-only, as sysfs */
		return -1;
	}
	char text[1024];
	size_t n = emu_schedule_render(getenv("SPMTAP_EMU_WORKLOAD"), text, sizeof(text));
	int fd = memfd_create("spmtap-emu-schedule", (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
	if (fd < 0)
		return -1;
	if (write(fd, text, n) != (ssize_t)n || lseek(fd, 0, SEEK_SET) != 0) {
		int e = errno;
		emu_real_close(fd);
		errno = e ? e : EIO;
		return -1;
	}
	EMU_DBG("open(%s) -> schedule memfd %d\n", path, fd);
	return fd;
}
