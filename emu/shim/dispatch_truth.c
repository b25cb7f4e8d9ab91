/* SPDX-License-Identifier: MIT */
#include "emu/shim/dispatch_truth.h"
#include "emu/shim/shim.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

bool emu_dtruth_enabled(void)
{
	const char *p = getenv("SPMTAP_EMU_DISPATCH_TRUTH");
	return p && *p;
}

void emu_dtruth_line(uint32_t gpu_id, const char *engine, const char *fields)
{
	const char *path = getenv("SPMTAP_EMU_DISPATCH_TRUTH");
	if (!path || !*path)
		return;
	char line[2048];
	int n = snprintf(line, sizeof(line), "{\"pid\":%d,\"gpu_id\":%u,\"engine\":\"%s\"%s%s}\n", (int)getpid(),
			 gpu_id, engine, fields && *fields ? "," : "", fields ? fields : "");
	if (n < 0 || (size_t)n >= sizeof(line)) {
		emu_log("dispatch truth: a line of %d bytes does not fit; not written\n", n);
		return;
	}
	/* Opened per line: rare (one per packet that did work), and no descriptor is left in the app. */
	int fd = emu_real_open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		emu_log("cannot append to SPMTAP_EMU_DISPATCH_TRUTH=%s\n", path);
		return;
	}
	if (write(fd, line, (size_t)n) != n)
		emu_log("dispatch truth: a short write to %s\n", path);
	close(fd);
}
