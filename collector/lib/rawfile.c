/* SPDX-License-Identifier: MIT */
/*
 * Raw container writer and reader (collector/lib/rawfile.h,
 * docs/raw-format.md).  The writer keeps the file a sequence of complete
 * records at every moment it returns, so a recording cut short by a full disk
 * or a crash is still readable; the reader trusts no field of the file.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "collector/lib/rawfile.h"
#include "collector/lib/writebehind.h"
#include "spm/spm.h"
#include "decoder/frame.h"
#include "log.h"
#include "le.h"

static const unsigned char zeros[8];

static uint32_t pad8(uint32_t n) { return (8u - (n & 7u)) & 7u; }

/* ---- writing ------------------------------------------------------------ */

struct rawfile_writer {
	int fd;
	char *path;
	uint64_t off; /* end of the last complete record */
	struct wbehind wb; /* the pages far behind off leave the page cache (writebehind.h) */
	int error;    /* sticky: the first failure */
	char errmsg[512];
};

/*
 * At most 1 MiB a call.  A whole region (MiBs) in one writev held the CPU in
 * the kernel for ms, which a real-time sensor sampler waits out on a kernel
 * without preemption (writebehind.h).  The other writers' 256 KiB would cost
 * the raw stage 0.30-0.34 s per GB against 0.25-0.27 (bench_e2e 8 --interval
 * 16384 --formats raw, alternating builds): a write call's fixed cost, paid
 * per SPM byte here and per output byte (0.15 of it) there; 1 MiB measured
 * the same as whole regions.
 */
#define RAW_WRITE_MAX (1u << 20)

/* All of iov (n <= 3), or -errno; partial writes are continued, EINTR retried. */
static int write_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		struct iovec part[3];
		int k = 0;
		for (size_t room = RAW_WRITE_MAX; k < n && k < 3 && room; k++) {
			part[k] = iov[k];
			if (part[k].iov_len > room)
				part[k].iov_len = room;
			room -= part[k].iov_len;
		}
		ssize_t w = writev(fd, part, k);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

static int fail(struct rawfile_writer *w, int rc, const char *what, char *err, size_t errlen)
{
	if (!w->error) {
		w->error = rc;
		const char *hint = "";
		if (rc == -ENOSPC)
			hint = " (the file system is full)";
		else if (rc == -EFBIG)
			hint = " (file size limit reached: see ulimit -f)";
		snprintf(w->errmsg, sizeof(w->errmsg),
			 "%s: %s failed: %s%s; the %" PRIu64 " bytes written before stay readable",
			 w->path, what, spmtap_strerror(rc), hint, w->off);
		/* Cut back to the last complete record so readers see no torn tail. */
		if (ftruncate(w->fd, (off_t)w->off) == 0)
			lseek(w->fd, (off_t)w->off, SEEK_SET);
	}
	return spmtap_seterr(err, errlen, w->error, "%s", w->errmsg);
}

/* The container stores the kernel generation as spm.h numbers it, so spm_stream_shape_of reads it back. */
_Static_assert((int)RAWFILE_GEN_A == (int)SPM_GEN_A && (int)RAWFILE_GEN_B == (int)SPM_GEN_B, "gen numbers");

int rawfile_create(struct rawfile_writer **out, const char *path, const struct rawfile_header *h,
		   char *err, size_t errlen)
{
	if (!path || !h || h->num_xcc == 0 || h->num_xcc > 0xFFFF)
		return spmtap_seterr(err, errlen, EINVAL, "rawfile: bad arguments");
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return spmtap_seterr(err, errlen, errno, "%s: cannot create: %s", path,
				     spmtap_strerror(errno));
	struct rawfile_writer *w = calloc(1, sizeof(*w));
	char *p = strdup(path);
	if (!w || !p) {
		free(w);
		free(p);
		close(fd);
		return spmtap_seterr(err, errlen, ENOMEM, "rawfile: out of memory");
	}
	w->fd = fd;
	w->path = p;

	unsigned char b[RAWFILE_HEADER_SIZE] = { 0 };
	memcpy(b, RAWFILE_MAGIC, 8);
	le_put32(b + 8, RAWFILE_VERSION);
	le_put32(b + 12, RAWFILE_HEADER_SIZE);
	le_put32(b + 16, h->gpu_id);
	le_put32(b + 20, h->node);
	le_put32(b + 24, h->gfx_target_version);
	le_put32(b + 28, h->num_xcc);
	le_put32(b + 32, h->num_se);
	le_put32(b + 36, h->gen);
	le_put32(b + 40, h->buffer_size);
	le_put32(b + 44, h->nbuffers);
	le_put64(b + 48, h->start_boottime_ns);
	/* NUL-padded, not terminated when the name is exactly 8 bytes. */
	memcpy(b + 56, h->backend, strnlen(h->backend, 8));
	struct iovec iov = { b, sizeof(b) };
	int rc = write_all(fd, &iov, 1);
	if (rc < 0) {
		fail(w, rc, "writing the file header", err, errlen);
		rawfile_finish(w, NULL, 0);
		return rc;
	}
	w->off = sizeof(b);
	wb_wrote(&w->wb, fd, sizeof(b));
	*out = w;
	return 0;
}

void rawfile_rec_header(unsigned char *h, uint16_t type, uint16_t xcc, uint32_t flags, uint32_t length,
			uint64_t seq, uint64_t host_ns)
{
	le_put32(h, RAWFILE_REC_MAGIC);
	le_put16(h + 4, type);
	le_put16(h + 6, xcc);
	le_put32(h + 8, flags);
	le_put32(h + 12, length);
	le_put64(h + 16, seq);
	le_put64(h + 24, host_ns);
}

int rawfile_append(struct rawfile_writer *w, uint16_t type, uint16_t xcc, uint32_t flags,
		   uint64_t seq, uint64_t host_ns, const void *data, uint32_t length, char *err,
		   size_t errlen)
{
	if (w->error)
		return spmtap_seterr(err, errlen, w->error, "%s", w->errmsg);
	if (length && !data)
		return spmtap_seterr(err, errlen, EINVAL, "rawfile: record without data");
	unsigned char h[RAWFILE_REC_HEADER_SIZE];
	rawfile_rec_header(h, type, xcc, flags, length, seq, host_ns);
	struct iovec iov[3] = {
		{ h, sizeof(h) },
		{ (void *)data, length },
		{ (void *)zeros, pad8(length) },
	};
	int rc = write_all(w->fd, iov, 3);
	if (rc < 0)
		return fail(w, rc, "write", err, errlen);
	w->off += sizeof(h) + length + pad8(length);
	wb_wrote(&w->wb, w->fd, sizeof(h) + length + pad8(length));
	return 0;
}

uint64_t rawfile_written(const struct rawfile_writer *w) { return w->off; }

int rawfile_finish(struct rawfile_writer *w, char *err, size_t errlen)
{
	if (!w)
		return 0;
	wb_stop(&w->wb);
	/* Close-time errors (delayed allocation on NFS, quota) surface here. */
	if (!w->error && fsync(w->fd) < 0 && errno != EINVAL && errno != EROFS)
		fail(w, -errno, "fsync", NULL, 0);
	if (close(w->fd) < 0 && !w->error && errno != EINTR)
		fail(w, -errno, "close", NULL, 0);
	int rc = w->error;
	if (rc)
		spmtap_seterr(err, errlen, rc, "%s", w->errmsg);
	free(w->path);
	free(w);
	return rc;
}

/* ---- reading ------------------------------------------------------------ */

struct rawfile_reader {
	int fd;
	char *path;
	uint64_t size, off, trailing;
	struct rawfile_header h;
	unsigned char *buf;
	size_t cap;
};

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ENODATA; /* the file shrank under us */
		got += (size_t)n;
	}
	return 0;
}

static int bad(struct rawfile_reader *r, uint64_t off, char *err, size_t errlen, const char *why)
{
	return spmtap_seterr(err, errlen, EBADMSG, "%s: offset %" PRIu64 ": %s", r->path, off, why);
}

int rawfile_open(struct rawfile_reader **out, const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return spmtap_seterr(err, errlen, errno, "%s: %s", path, spmtap_strerror(errno));
	struct rawfile_reader *r = calloc(1, sizeof(*r));
	if (!r || !(r->path = strdup(path))) {
		free(r);
		close(fd);
		return spmtap_seterr(err, errlen, ENOMEM, "rawfile: out of memory");
	}
	r->fd = fd;
	struct stat st;
	int rc;
	if (fstat(fd, &st) < 0) {
		rc = spmtap_seterr(err, errlen, errno, "%s: %s", path, spmtap_strerror(errno));
		goto fail;
	}
	r->size = (uint64_t)st.st_size;
	unsigned char b[RAWFILE_HEADER_SIZE];
	if (r->size < sizeof(b)) {
		rc = spmtap_seterr(err, errlen, EBADMSG,
				   "%s: %" PRIu64 " bytes: too short for a spmtap raw file header (64 bytes)",
				   path, r->size);
		goto fail;
	}
	rc = read_at(fd, b, sizeof(b), 0);
	if (rc < 0) {
		spmtap_seterr(err, errlen, rc, "%s: %s", path, spmtap_strerror(rc));
		goto fail;
	}
	struct rawfile_header *h = &r->h;
	h->version = le_get32(b + 8);
	h->header_size = le_get32(b + 12);
	h->gpu_id = le_get32(b + 16);
	h->node = le_get32(b + 20);
	h->gfx_target_version = le_get32(b + 24);
	h->num_xcc = le_get32(b + 28);
	h->num_se = le_get32(b + 32);
	h->gen = le_get32(b + 36);
	h->buffer_size = le_get32(b + 40);
	h->nbuffers = le_get32(b + 44);
	h->start_boottime_ns = le_get64(b + 48);
	memcpy(h->backend, b + 56, 8);
	h->backend[8] = 0;
	const char *why = NULL;
	if (memcmp(b, RAWFILE_MAGIC, 8))
		why = "not a spmtap raw file (bad magic)";
	else if (h->version != RAWFILE_VERSION)
		why = "unsupported format version (this spmtap reads version 1)";
	else if (h->header_size < RAWFILE_HEADER_SIZE || h->header_size % 8 ||
		 h->header_size > r->size)
		why = "bad header_size";
	else if (h->num_xcc == 0 || h->num_xcc > DEC_MAX_XCC)
		why = "bad num_xcc";
	else if (h->gen != RAWFILE_GEN_A && h->gen != RAWFILE_GEN_B)
		why = "bad SPM generation";
	else if (h->buffer_size == 0)
		why = "bad buffer_size";
	if (why) {
		rc = bad(r, 0, err, errlen, why);
		goto fail;
	}
	for (int i = 0; i < 8; i++) /* NUL-padded: nothing after the first NUL */
		if (!b[56 + i] && memcmp(b + 56 + i, zeros, (size_t)(8 - i))) {
			rc = bad(r, 56, err, errlen, "backend name not NUL-padded");
			goto fail;
		}
	r->off = h->header_size;
	*out = r;
	return 0;
fail:
	rawfile_close(r);
	return rc;
}

const struct rawfile_header *rawfile_header(const struct rawfile_reader *r) { return &r->h; }

int rawfile_next(struct rawfile_reader *r, struct rawfile_record *rec, char *err, size_t errlen)
{
again:;
	uint64_t left = r->size - r->off;
	if (left == 0)
		return 0;
	if (left < RAWFILE_REC_HEADER_SIZE) {
		r->trailing = left;
		return 0;
	}
	unsigned char h[RAWFILE_REC_HEADER_SIZE];
	int rc = read_at(r->fd, h, sizeof(h), r->off);
	if (rc < 0)
		return spmtap_seterr(err, errlen, rc, "%s: %s", r->path, spmtap_strerror(rc));
	struct rawfile_record x = {
		.type = le_get16(h + 4),
		.xcc = le_get16(h + 6),
		.flags = le_get32(h + 8),
		.length = le_get32(h + 12),
		.seq = le_get64(h + 16),
		.host_ns = le_get64(h + 24),
		.offset = r->off,
	};
	if (le_get32(h) != RAWFILE_REC_MAGIC)
		return bad(r, r->off, err, errlen, "bad record magic");
	switch (x.type) {
	case RAWFILE_SPM:
		if (x.xcc >= r->h.num_xcc)
			return bad(r, r->off, err, errlen, "SPM record for an XCC the header does not have");
		if (x.flags & ~(uint32_t)RAWFILE_F_KNOWN)
			return bad(r, r->off, err, errlen, "unknown record flags");
		if (x.length > r->h.buffer_size)
			return bad(r, r->off, err, errlen, "SPM record longer than a buffer");
		break;
	case RAWFILE_SKIP: {
		/* Records decoded already (a journal's): stepped over unread. */
		uint64_t len = (uint64_t)x.length + pad8(x.length);
		if (left - RAWFILE_REC_HEADER_SIZE < len) {
			r->trailing = left;
			return 0;
		}
		r->off += RAWFILE_REC_HEADER_SIZE + len;
		goto again;
	}
	case RAWFILE_META:
	case RAWFILE_END:
		if (x.xcc || x.flags)
			return bad(r, r->off, err, errlen, "JSON record with xcc or flags set");
		if (x.length == 0 || x.length > RAWFILE_MAX_JSON)
			return bad(r, r->off, err, errlen, "bad JSON record length");
		break;
	default:
		return bad(r, r->off, err, errlen, "unknown record type");
	}
	uint64_t total = (uint64_t)x.length + pad8(x.length);
	if (left - RAWFILE_REC_HEADER_SIZE < total) {
		r->trailing = left;
		return 0;
	}
	if (total > r->cap) {
		unsigned char *nb = realloc(r->buf, total);
		if (!nb)
			return spmtap_seterr(err, errlen, ENOMEM, "rawfile: out of memory");
		r->buf = nb;
		r->cap = total;
	}
	rc = read_at(r->fd, r->buf, total, r->off + RAWFILE_REC_HEADER_SIZE);
	if (rc < 0)
		return spmtap_seterr(err, errlen, rc, "%s: %s", r->path, spmtap_strerror(rc));
	if (memcmp(r->buf + x.length, zeros, pad8(x.length)))
		return bad(r, r->off, err, errlen, "nonzero padding");
	if (x.type != RAWFILE_SPM) {
		json_error_t je;
		json_t *j = json_loadb((const char *)r->buf, x.length, 0, &je);
		bool ok = j && json_is_object(j);
		json_decref(j);
		if (!ok)
			return bad(r, r->off, err, errlen, "JSON record is not a JSON object");
	}
	x.data = r->buf;
	*rec = x;
	r->off += RAWFILE_REC_HEADER_SIZE + total;
	return 1;
}

uint64_t rawfile_trailing(const struct rawfile_reader *r) { return r->trailing; }

void rawfile_close(struct rawfile_reader *r)
{
	if (!r)
		return;
	close(r->fd);
	free(r->buf);
	free(r->path);
	free(r);
}
