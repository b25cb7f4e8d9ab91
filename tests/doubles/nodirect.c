/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD double of a file system that lets a file be opened with
 * O_DIRECT but refuses the writes (EINVAL), as some FUSE and network file
 * systems do, and as a device whose logical block is larger than the
 * journal's 4 KiB alignment would.  test_journal runs a recording under it:
 * the journal must notice at its first direct write and go on through the
 * page cache without losing a buffer (collector/lib/spill.c).
 *
 * Every refused write is counted in the file named by NODIRECT_COUNT (one
 * byte appended per refusal), so the test knows the path was taken.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* The build hides symbols by default (-fvisibility=hidden); these must interpose. */
#define EXPORT __attribute__((visibility("default")))

typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*pwritev_fn)(int, const struct iovec *, int, off_t);
typedef ssize_t (*write_fn)(int, const void *, size_t);

static int refuse(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || !(fl & O_DIRECT))
		return 0;
	const char *count = getenv("NODIRECT_COUNT");
	if (count) {
		int c = open(count, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		if (c >= 0) {
			write_fn w = (write_fn)dlsym(RTLD_NEXT, "write");
			if (w && w(c, "x", 1) < 0) {
				/* the count is only a witness */
			}
			close(c);
		}
	}
	errno = EINVAL;
	return 1;
}

EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	if (refuse(fd))
		return -1;
	return ((pwrite_fn)dlsym(RTLD_NEXT, "pwrite"))(fd, buf, n, off);
}

EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	if (refuse(fd))
		return -1;
	return ((pwrite_fn)dlsym(RTLD_NEXT, "pwrite64"))(fd, buf, n, off);
}

EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
	if (refuse(fd))
		return -1;
	return ((pwritev_fn)dlsym(RTLD_NEXT, "pwritev"))(fd, iov, n, off);
}

EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int n, off_t off)
{
	if (refuse(fd))
		return -1;
	return ((pwritev_fn)dlsym(RTLD_NEXT, "pwritev64"))(fd, iov, n, off);
}
