/* SPDX-License-Identifier: MIT */
/* collector/lib/rawfile.c: round trip, every truncation, garbage, full disks. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/lib/rawfile.h"
#include "lib/testenv.h"

static char dir[] = "/tmp/spmtap-rawfile-XXXXXX";

static const char *path(const char *name)
{
	static char p[4][256]; /* a few may be live at once in one call */
	static unsigned i;
	char *r = p[i++ % 4];
	snprintf(r, sizeof(p[0]), "%s/%s", dir, name);
	return r;
}

static const struct rawfile_header hdr = {
	.gpu_id = 0x1001, .node = 1, .gfx_target_version = 90402, .num_xcc = 6, .num_se = 4,
	.gen = RAWFILE_GEN_B, .buffer_size = 6 * 1024, .nbuffers = 3,
	.start_boottime_ns = 123456789, .backend = "hsakmt",
};

/* meta, 6 SPM records of lengths 0..5*13, one loss-flagged empty one, end. */
static int write_small(const char *p)
{
	struct rawfile_writer *w;
	char err[512];
	unsigned char data[100];
	for (int i = 0; i < 100; i++)
		data[i] = (unsigned char)i;
	if (rawfile_create(&w, p, &hdr, err, sizeof(err)))
		return -1;
	const char *meta = "{\"spmtap_version\":\"0.1.0\"}";
	rawfile_append(w, RAWFILE_META, 0, 0, 0, 1, meta, (uint32_t)strlen(meta), err, sizeof(err));
	for (uint16_t k = 0; k < 6; k++)
		rawfile_append(w, RAWFILE_SPM, k, 0, 7, 1000 + k, data, k * 13u, err, sizeof(err));
	rawfile_append(w, RAWFILE_SPM, 2, RAWFILE_F_LOSS, 8, 2000, NULL, 0, err, sizeof(err));
	const char *end = "{\"buffers\":2}";
	rawfile_append(w, RAWFILE_END, 0, 0, 0, 3, end, (uint32_t)strlen(end), err, sizeof(err));
	return rawfile_finish(w, err, sizeof(err));
}

static void test_round_trip(void)
{
	CU_ASSERT_EQUAL_FATAL(write_small(path("a.raw")), 0);
	struct rawfile_reader *r;
	char err[512];
	CU_ASSERT_EQUAL_FATAL(rawfile_open(&r, path("a.raw"), err, sizeof(err)), 0);
	const struct rawfile_header *h = rawfile_header(r);
	CU_ASSERT_EQUAL(h->version, 1);
	CU_ASSERT_EQUAL(h->header_size, 64);
	CU_ASSERT_EQUAL(h->gpu_id, 0x1001);
	CU_ASSERT_EQUAL(h->node, 1);
	CU_ASSERT_EQUAL(h->gfx_target_version, 90402);
	CU_ASSERT_EQUAL(h->num_xcc, 6);
	CU_ASSERT_EQUAL(h->num_se, 4);
	CU_ASSERT_EQUAL(h->gen, RAWFILE_GEN_B);
	CU_ASSERT_EQUAL(h->buffer_size, 6 * 1024);
	CU_ASSERT_EQUAL(h->nbuffers, 3);
	CU_ASSERT_EQUAL(h->start_boottime_ns, 123456789);
	CU_ASSERT_STRING_EQUAL(h->backend, "hsakmt");
	struct rawfile_record rec;
	CU_ASSERT_EQUAL(rawfile_next(r, &rec, err, sizeof(err)), 1);
	CU_ASSERT_EQUAL(rec.type, RAWFILE_META);
	CU_ASSERT_EQUAL(rec.offset, 64);
	for (uint16_t k = 0; k < 6; k++) {
		CU_ASSERT_EQUAL_FATAL(rawfile_next(r, &rec, err, sizeof(err)), 1);
		CU_ASSERT_EQUAL(rec.type, RAWFILE_SPM);
		CU_ASSERT_EQUAL(rec.xcc, k);
		CU_ASSERT_EQUAL(rec.length, k * 13u);
		CU_ASSERT_EQUAL(rec.seq, 7);
		CU_ASSERT_EQUAL(rec.host_ns, 1000 + k);
		CU_ASSERT_EQUAL(rec.offset % 8, 0);
		for (uint32_t i = 0; i < rec.length; i++)
			CU_ASSERT_EQUAL(((const unsigned char *)rec.data)[i], i);
	}
	CU_ASSERT_EQUAL(rawfile_next(r, &rec, err, sizeof(err)), 1);
	CU_ASSERT_EQUAL(rec.flags, RAWFILE_F_LOSS);
	CU_ASSERT_EQUAL(rec.length, 0);
	CU_ASSERT_EQUAL(rawfile_next(r, &rec, err, sizeof(err)), 1);
	CU_ASSERT_EQUAL(rec.type, RAWFILE_END);
	CU_ASSERT_NSTRING_EQUAL(rec.data, "{\"buffers\":2}", rec.length);
	CU_ASSERT_EQUAL(rawfile_next(r, &rec, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(rawfile_trailing(r), 0);
	rawfile_close(r);
}

static long fsize(const char *p)
{
	struct stat st;
	return stat(p, &st) ? -1 : (long)st.st_size;
}

static int copy_prefix(const char *from, const char *to, long n)
{
	FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
	if (!a || !b) {
		if (a)
			fclose(a);
		if (b)
			fclose(b);
		return -1;
	}
	for (long i = 0; i < n; i++)
		fputc(fgetc(a), b);
	fclose(a);
	fclose(b);
	return 0;
}

/* Cut the file at every byte: complete records stay readable, the rest is reported. */
static void test_truncation_every_offset(void)
{
	CU_ASSERT_EQUAL_FATAL(write_small(path("b.raw")), 0);
	long total = fsize(path("b.raw"));
	/* record ends, to know how many complete records a prefix holds */
	long ends[16];
	int nends = 0;
	struct rawfile_reader *r;
	struct rawfile_record rec;
	char err[512];
	CU_ASSERT_EQUAL_FATAL(rawfile_open(&r, path("b.raw"), err, sizeof(err)), 0);
	while (rawfile_next(r, &rec, err, sizeof(err)) == 1)
		ends[nends++] = (long)rec.offset + 32 + ((rec.length + 7) & ~7u);
	rawfile_close(r);
	CU_ASSERT_EQUAL(nends, 9);
	CU_ASSERT_EQUAL(ends[nends - 1], total);

	for (long cut = 0; cut <= total; cut++) {
		copy_prefix(path("b.raw"), path("cut.raw"), cut);
		int rc = rawfile_open(&r, path("cut.raw"), err, sizeof(err));
		if (cut < 64) {
			CU_ASSERT(rc < 0);
			continue;
		}
		CU_ASSERT_EQUAL_FATAL(rc, 0);
		int n = 0, last;
		while ((last = rawfile_next(r, &rec, err, sizeof(err))) == 1)
			n++;
		CU_ASSERT_EQUAL(last, 0);
		int expect = 0;
		while (expect < nends && ends[expect] <= cut)
			expect++;
		CU_ASSERT_EQUAL(n, expect);
		long done = expect ? ends[expect - 1] : 64;
		CU_ASSERT_EQUAL((long)rawfile_trailing(r), cut - done);
		rawfile_close(r);
	}
}

static void test_garbage(void)
{
	CU_ASSERT_EQUAL_FATAL(write_small(path("c.raw")), 0);
	long total = fsize(path("c.raw"));
	unsigned char *orig = malloc((size_t)total), *buf = malloc((size_t)total);
	FILE *f = fopen(path("c.raw"), "rb");
	CU_ASSERT_EQUAL_FATAL(fread(orig, 1, (size_t)total, f), (size_t)total);
	fclose(f);
	srand(11);
	char err[512];
	int rejected = 0;
	for (int it = 0; it < 3000; it++) {
		memcpy(buf, orig, (size_t)total);
		int flips = 1 + rand() % 4;
		for (int i = 0; i < flips; i++)
			buf[rand() % total] ^= (unsigned char)(1 + rand() % 255);
		if (it % 10 == 0) /* pure noise after a valid header */
			for (long i = 64; i < total; i++)
				buf[i] = (unsigned char)rand();
		f = fopen(path("g.raw"), "wb");
		fwrite(buf, 1, (size_t)total, f);
		fclose(f);
		struct rawfile_reader *r;
		if (rawfile_open(&r, path("g.raw"), err, sizeof(err)) < 0) {
			rejected++;
			continue;
		}
		struct rawfile_record rec;
		int rc;
		while ((rc = rawfile_next(r, &rec, err, sizeof(err))) == 1)
			CU_ASSERT(rec.length <= rawfile_header(r)->buffer_size || rec.type != RAWFILE_SPM);
		if (rc < 0) {
			CU_ASSERT_EQUAL(rc, -EBADMSG);
			CU_ASSERT_PTR_NOT_NULL(strstr(err, "offset"));
			rejected++;
		}
		rawfile_close(r);
	}
	CU_ASSERT(rejected > 1000);
	free(orig);
	free(buf);
	/* not our file at all */
	f = fopen(path("h.raw"), "wb");
	fputs("this is not a raw file, it is text that is long enough for a header......", f);
	fclose(f);
	struct rawfile_reader *r;
	CU_ASSERT_EQUAL(rawfile_open(&r, path("h.raw"), err, sizeof(err)), -EBADMSG);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "magic"));
	CU_ASSERT(rawfile_open(&r, path("does-not-exist"), err, sizeof(err)) == -ENOENT);
}

/* A file size limit hit mid-recording: clear error, earlier records readable. */
static void test_efbig(void)
{
	pid_t pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		signal(SIGXFSZ, SIG_IGN);
		struct rlimit rl = { 4096, 4096 };
		setrlimit(RLIMIT_FSIZE, &rl);
		struct rawfile_writer *w;
		char err[512];
		unsigned char data[1000] = { 1 };
		if (rawfile_create(&w, path("big.raw"), &hdr, err, sizeof(err)))
			_exit(10);
		int rc = 0, n = 0;
		while (rc == 0 && n < 100) {
			rc = rawfile_append(w, RAWFILE_SPM, 0, 0, (uint64_t)n, 0, data, sizeof(data), err,
					    sizeof(err));
			n++;
		}
		if (rc != -EFBIG)
			_exit(11);
		if (!strstr(err, path("big.raw")) || !strstr(err, "File too large"))
			_exit(12);
		/* sticky */
		if (rawfile_append(w, RAWFILE_SPM, 0, 0, 0, 0, data, 8, err, sizeof(err)) != -EFBIG)
			_exit(13);
		if (rawfile_finish(w, err, sizeof(err)) != -EFBIG)
			_exit(14);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	CU_ASSERT_TRUE(WIFEXITED(st));
	CU_ASSERT_EQUAL(WEXITSTATUS(st), 0);
	/* The file holds the records that fit, and no torn tail. */
	struct rawfile_reader *r;
	struct rawfile_record rec;
	char err[512];
	CU_ASSERT_EQUAL_FATAL(rawfile_open(&r, path("big.raw"), err, sizeof(err)), 0);
	int n = 0;
	while (rawfile_next(r, &rec, err, sizeof(err)) == 1)
		n++;
	CU_ASSERT_EQUAL(n, (4096 - 64) / (32 + 1000));
	CU_ASSERT_EQUAL(rawfile_trailing(r), 0);
	rawfile_close(r);
}

static const char *need_dev_full(void)
{
	return access("/dev/full", W_OK) ? "/dev/full not writable" : NULL;
}

static void test_enospc(void)
{
	struct rawfile_writer *w = NULL;
	char err[512] = "";
	int rc = rawfile_create(&w, "/dev/full", &hdr, err, sizeof(err));
	CU_ASSERT_EQUAL(rc, -ENOSPC);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "/dev/full"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "full"));
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "round_trip", test_round_trip, NULL },
		{ "truncation_every_offset", test_truncation_every_offset, NULL },
		{ "garbage", test_garbage, NULL },
		{ "efbig", test_efbig, NULL },
		{ "enospc", test_enospc, need_dev_full },
		{ NULL, NULL, NULL },
	};
	if (!mkdtemp(dir))
		return 1;
	int rc = testenv_run_suite("rawfile", cases, argc, argv);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		rc = rc ? rc : 1;
	return rc;
}
