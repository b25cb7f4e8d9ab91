/* SPDX-License-Identifier: MIT */
/* libFuzzer: the raw container reader must take any file without crashing. */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collector/lib/rawfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-raw", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	char path[64], err[256];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct rawfile_reader *r;
	if (rawfile_open(&r, path, err, sizeof(err)) == 0) {
		struct rawfile_record rec;
		uint64_t sum = 0;
		while (rawfile_next(r, &rec, err, sizeof(err)) > 0) {
			/* touch every payload byte the reader vouches for */
			for (uint32_t i = 0; i < rec.length; i++)
				sum += ((const uint8_t *)rec.data)[i];
		}
		(void)rawfile_trailing(r);
		rawfile_close(r);
		if (sum == 0xFFFFFFFFFFFFFFFFull)
			puts("");
	}
	close(fd);
	return 0;
}
