/* SPDX-License-Identifier: MIT */
/*
 * collector/lib/writebehind.c: an output written front to back keeps only
 * its last WB_LAG bytes (and what had not reached the disk) in the page
 * cache.  Residency is read from the kernel (mincore on a mapping of the
 * file), not from the helper's own bookkeeping.  The advice runs on the
 * helper's thread; wb_stop waits for its last turn.
 */
#include <CUnit/Basic.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "collector/lib/writebehind.h"
#include "testenv.h"

/* Resident pages of fd in [lo, hi), as a fraction of the range's pages. */
static double resident(int fd, uint64_t size, uint64_t lo, uint64_t hi)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -1;
	size_t npg = (size + (uint64_t)pg - 1) / (uint64_t)pg;
	unsigned char *v = malloc(npg);
	double frac = -1;
	if (v && mincore(m, size, v) == 0) {
		size_t in = 0, n = 0;
		for (uint64_t p = lo / (uint64_t)pg; p < hi / (uint64_t)pg && p < npg; p++, n++)
			in += v[p] & 1;
		frac = n ? (double)in / (double)n : 0;
	}
	free(v);
	munmap(m, size);
	return frac;
}

/*
 * 136 MiB in 1 MiB writes, made clean by fdatasync, then one step more:
 * that turn drops [its previous mark - WB_STEP, end - WB_LAG), now clean, so
 * those pages are gone, the last WB_LAG are still there, and the pages the
 * earlier turns dropped while dirty were retried.
 */
static void test_drops_behind(void)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s", testenv_path(testenv_tmpdir(), "wb.out"));
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	struct statfs sf;
	if (fstatfs(fd, &sf) == 0 && sf.f_type == TMPFS_MAGIC) {
		/* tmpfs pages are the file itself: nothing to drop. */
		fprintf(stderr, "\n  %s is on tmpfs: residency not checked ", path);
		close(fd);
		unlink(path);
		return;
	}
	size_t blk = 1u << 20;
	char *buf = malloc(blk);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	memset(buf, 0x5A, blk);
	struct wbehind wb = { 0 };
	uint64_t total = WB_LAG + 9u * WB_STEP; /* 136 MiB */
	for (uint64_t done = 0; done < total - WB_STEP; done += blk) {
		CU_ASSERT_EQUAL_FATAL(write(fd, buf, blk), (ssize_t)blk);
		wb_wrote(&wb, fd, blk);
	}
	/* The thread's turns run behind the writer; a stop takes the last one. */
	wb_stop(&wb);
	CU_ASSERT(wb.calls > 0);
	uint64_t before = wb.dropped;
	CU_ASSERT_EQUAL(before, total - WB_STEP - WB_LAG);
	CU_ASSERT_EQUAL(fdatasync(fd), 0);
	for (uint64_t done = 0; done < WB_STEP; done += blk) {
		CU_ASSERT_EQUAL_FATAL(write(fd, buf, blk), (ssize_t)blk);
		wb_wrote(&wb, fd, blk);
	}
	wb_stop(&wb);
	CU_ASSERT_EQUAL(wb.end, total);
	CU_ASSERT_EQUAL(wb.dropped, total - WB_LAG);
	CU_ASSERT_FALSE(wb.off);
	/* The last turn's range (one step back included), clean when dropped: gone. */
	double gone = resident(fd, total, before - WB_STEP, total - WB_LAG);
	/* The last WB_LAG bytes: written by the test and never dropped. */
	double kept = resident(fd, total, total - WB_LAG, total);
	if (gone != 0 || kept < 0.99)
		fprintf(stderr, "\n  resident: %.3f of the dropped range, %.3f of the last %u MiB ", gone, kept,
			WB_LAG >> 20);
	CU_ASSERT_EQUAL(gone, 0);
	CU_ASSERT(kept >= 0.99);
	free(buf);
	close(fd);
	unlink(path);
}

/* A pipe refuses the advice (ESPIPE): the helper stops asking, and the output is not in error. */
static void test_pipe_off(void)
{
	int p[2];
	CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
	struct wbehind wb = { 0 };
	wb_wrote(&wb, p[1], WB_LAG + WB_STEP);
	wb_stop(&wb);
	CU_ASSERT_TRUE(atomic_load(&wb.off));
	CU_ASSERT_EQUAL(wb.calls, 1);
	wb_wrote(&wb, p[1], 4 * WB_STEP);
	wb_stop(&wb);
	CU_ASSERT_EQUAL(wb.calls, 1);
	close(p[0]);
	close(p[1]);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "writebehind/drops_behind", test_drops_behind, NULL },
		{ "writebehind/pipe_off", test_pipe_off, NULL },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("writebehind", cases, argc, argv);
}
