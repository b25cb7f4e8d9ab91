/* SPDX-License-Identifier: MIT */
/* Streaming CSV writer for decoder chunks (write_csv.h, docs/decode-csv.md). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/lib/outset.h"
#include "collector/lib/write_csv.h"
#include "collector/lib/writebehind.h"
#include "collector/lib/writer.h"

#define BUF_BYTES (256u * 1024)
/* Longest row cell: 20 digits + comma. */
#define CELL_MAX 21u

struct csv_writer {
	int fd;
	unsigned int flags;
	uint32_t ncols;
	int err; /* sticky: the first write error */
	struct wbehind wb; /* the pages far behind the end leave the page cache (writebehind.h) */
	uint64_t rows;
	size_t len;
	char msg[128];
	char buf[BUF_BYTES];
};

int csv_open_fd(int fd, unsigned int flags, struct csv_writer **out)
{
	struct csv_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = fd;
	w->flags = flags;
	*out = w;
	return 0;
}

static int drain(struct csv_writer *w)
{
	size_t off = 0;
	while (off < w->len && !w->err) {
		ssize_t n = wb_write(&w->wb, w->fd, w->buf + off, w->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* write() returning 0 for a regular file means no space. */
			w->err = n < 0 ? -errno : -ENOSPC;
			snprintf(w->msg, sizeof(w->msg), "write: %s", strerror(-w->err));
			break;
		}
		off += (size_t)n;
	}
	w->len = 0;
	return w->err;
}

/* Room for `n` more bytes, draining first if needed. */
static int reserve(struct csv_writer *w, size_t n)
{
	if (w->len + n > BUF_BYTES)
		return drain(w);
	return w->err;
}

static void put(struct csv_writer *w, const char *s, size_t n)
{
	memcpy(w->buf + w->len, s, n);
	w->len += n;
}

/* "00" .. "99": two digits per division, half the divisions of one at a time. */
static const char digits2[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

static const uint64_t pow10_u64[20] = {
	1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
	100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
	10000000000000ull, 100000000000000ull, 1000000000000000ull, 10000000000000000ull,
	100000000000000000ull, 1000000000000000000ull, 10000000000000000000ull,
};

/* Decimal digits of v: log10 from the bit length (1233/4096 ~ log10(2)), corrected by one compare. */
static inline unsigned int ndigits(uint64_t v)
{
	unsigned int t = ((unsigned int)(64 - __builtin_clzll(v | 1)) * 1233u) >> 12;
	return t + (v >= pow10_u64[t]);
}

size_t csv_fmt_u64(char *p, uint64_t v)
{
	unsigned int n = v ? ndigits(v) : 1;
	char *e = p + n;
	while (v >= 100) {
		uint64_t q = v / 100;
		unsigned int r = (unsigned int)(v - q * 100);
		v = q;
		e -= 2;
		memcpy(e, digits2 + 2 * r, 2);
	}
	if (v >= 10) {
		e -= 2;
		memcpy(e, digits2 + 2 * v, 2);
	} else {
		*--e = (char)('0' + v);
	}
	return n;
}

size_t csv_fmt_u64_near(char *p, uint64_t v, struct csv_prefix *c)
{
	if (v < 1000000)
		return csv_fmt_u64(p, v);
	uint64_t hi = v / 1000000;
	unsigned int lo = (unsigned int)(v - hi * 1000000);
	if (hi != c->hi) {
		c->hi = hi;
		c->len = (unsigned int)csv_fmt_u64(c->d, hi);
	}
	memcpy(p, c->d, 16); /* hi < 2^64 / 10^6 has at most 14 digits */
	p += c->len;
	memcpy(p, digits2 + 2 * (lo / 10000), 2);
	memcpy(p + 2, digits2 + 2 * (lo / 100 % 100), 2);
	memcpy(p + 4, digits2 + 2 * (lo % 100), 2);
	return c->len + 6;
}

size_t csv_fmt_i64(char *p, int64_t v)
{
	if (v >= 0)
		return csv_fmt_u64(p, (uint64_t)v);
	*p = '-';
	/* 0 - (uint64_t)v: INT64_MIN's magnitude without signed overflow. */
	return 1 + csv_fmt_u64(p + 1, 0 - (uint64_t)v);
}

/*
 * The shortest of 15, 16 or 17 digits that reads back as the same double
 * (write_csv_series.c's sensor cells; docs/formats/csv.md).  An integral
 * value below 10^15 in magnitude is what %.15g prints as an integer (its
 * exponent is below the precision, trailing zeros go) and reads back
 * exactly, so it takes the integer path; anything else (fractions, -0,
 * huge, NaN, inf) still goes through snprintf: sensors are a few thousand
 * cells a second, SPM counters are integers.
 */
size_t csv_fmt_f64(char *p, double v)
{
	if (v > -1e15 && v < 1e15) {
		int64_t i = (int64_t)v;
		if ((double)i == v && (i != 0 || !signbit(v)))
			return csv_fmt_i64(p, i);
	}
	char b[40];
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(b, sizeof(b), "%.*g", prec, v);
		if (strtod(b, NULL) == v)
			break;
	}
	size_t n = strlen(b);
	memcpy(p, b, n);
	return n;
}

static void put_u64(struct csv_writer *w, uint64_t v)
{
	w->len += csv_fmt_u64(w->buf + w->len, v);
}

int csv_begin(struct csv_writer *w, const struct dec_column *cols, uint32_t ncols)
{
	w->ncols = ncols;
	if (reserve(w, 16))
		return w->err;
	if (w->flags & CSV_XCC_COLUMN)
		put(w, "xcc,", 4);
	put(w, "timestamp", 9);
	for (uint32_t c = 0; c < ncols; c++) {
		size_t n = strlen(cols[c].name);
		if (reserve(w, n + 2))
			return w->err;
		put(w, ",", 1);
		put(w, cols[c].name, n);
	}
	if (reserve(w, 1))
		return w->err;
	put(w, "\n", 1);
	return 0;
}

int csv_write(struct csv_writer *w, const struct dec_chunk *c)
{
	if (w->err)
		return w->err;
	if (c->ncols != w->ncols) {
		snprintf(w->msg, sizeof(w->msg), "chunk has %u columns, header has %u", c->ncols,
			 w->ncols);
		return w->err = -EINVAL;
	}
	for (uint32_t i = 0; i < c->nsamples; i++) {
		if (reserve(w, 2 * CELL_MAX))
			return w->err;
		if (w->flags & CSV_XCC_COLUMN) {
			put_u64(w, c->xcc);
			put(w, ",", 1);
		}
		put_u64(w, c->timestamp[i]);
		for (uint32_t k = 0; k < c->ncols; k++) {
			/* Per cell, not per row: a per-SE row can outgrow the buffer. */
			if (reserve(w, CELL_MAX + 1))
				return w->err;
			w->buf[w->len++] = ',';
			/* A session chunk may have no bit set for a column (series.h: NULL = none). */
			if (!c->saturated || !c->saturated[k] || !dec_chunk_saturated(c, k, i))
				put_u64(w, c->values[k][i]);
		}
		w->buf[w->len++] = '\n';
	}
	w->rows += c->nsamples;
	return 0;
}

int csv_end(struct csv_writer *w)
{
	int rc = drain(w);
	wb_stop(&w->wb); /* the caller closes the descriptor next */
	return rc;
}

int csv_sink(void *user, const struct dec_chunk *chunk)
{
	return csv_write(user, chunk);
}

const char *csv_error(const struct csv_writer *w)
{
	return w->msg;
}

uint64_t csv_rows(const struct csv_writer *w)
{
	return w->rows;
}

void csv_close(struct csv_writer *w)
{
	if (w)
		wb_stop(&w->wb); /* a no-op after csv_end; every caller closes the descriptor after this */
	free(w);
}

/*
 * The same CSV as a session's writer (writer.h): `spmtap record --spm [-o
 * FILE.csv]`, one GPU, raw GPU ticks, rows as `spmtap decode` writes them
 * from the raw container.  Only SPM streams are written; "-" is standard
 * output.  Not a -f format: the session's CSV (write_csv_series.c) puts
 * every source on the recording's timebase.
 */
struct writer {
	struct csv_writer *csv;
	int fd;
	char *path;
	bool begun;
};

static int ticks_fail(struct writer *w, int rc, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: %s", w->path, w->csv && w->csv->msg[0] ? w->csv->msg : strerror(-rc));
	return rc;
}

static int ticks_open(struct writer **out, const char *final, const struct writer_meta *meta,
		      char *err, size_t errlen)
{
	bool std = !strcmp(final, "-");
	struct writer *w = calloc(1, sizeof(*w));
	/* A file is FINAL.part while recording, renamed with the rest of the set (outset.h). */
	if (!w || !(w->path = std ? strdup("standard output") : out_set_part(meta ? meta->files : NULL, final))) {
		free(w);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	w->fd = std ? STDOUT_FILENO : open(w->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0 || csv_open_fd(w->fd, CSV_XCC_COLUMN, &w->csv) < 0) {
		int rc = w->fd < 0 ? -errno : -ENOMEM;
		snprintf(err, errlen, "%s: %s", w->path, strerror(-rc));
		if (w->fd > STDOUT_FILENO)
			close(w->fd);
		free(w->path);
		free(w);
		return rc;
	}
	*out = w;
	return 0;
}

/* The header comes with the first SPM stream; every XCC's has the same columns. */
static int ticks_begin(struct writer *w, const struct series_stream *s, char *err, size_t errlen)
{
	if (w->begun || strcmp(s->source, "spm"))
		return 0;
	struct dec_column *cols = calloc(s->ncols ? s->ncols : 1, sizeof(*cols));
	if (!cols)
		return ticks_fail(w, -ENOMEM, err, errlen);
	for (uint32_t k = 0; k < s->ncols; k++)
		snprintf(cols[k].name, sizeof(cols[k].name), "%s", s->cols[k].name);
	int rc = csv_begin(w->csv, cols, s->ncols);
	free(cols);
	w->begun = true;
	return rc < 0 ? ticks_fail(w, rc, err, errlen) : 0;
}

static int ticks_write(struct writer *w, const struct series_chunk *c, char *err, size_t errlen)
{
	if (strcmp(c->stream->source, "spm") || !c->ticks)
		return 0;
	struct dec_chunk d = {
		.xcc = (uint32_t)c->stream->xcc, .nsamples = c->n, .ncols = c->stream->ncols,
		.timestamp = c->ticks, .values = (const uint64_t *const *)c->values,
		.saturated = c->missing,
	};
	int rc = csv_write(w->csv, &d);
	return rc < 0 ? ticks_fail(w, rc, err, errlen) : 0;
}

static int ticks_end(struct writer *w, char *err, size_t errlen)
{
	int rc = csv_end(w->csv);
	if (rc < 0 && err)
		ticks_fail(w, rc, err, errlen);
	if (w->fd > STDOUT_FILENO && close(w->fd) < 0 && !rc) {
		rc = -errno;
		if (err)
			snprintf(err, errlen, "%s: close: %s", w->path, strerror(errno));
	}
	csv_close(w->csv);
	free(w->path);
	free(w);
	return rc;
}

/* The rows so far to the file (the session calls it at least once a second). */
static int ticks_flush(struct writer *w, char *err, size_t errlen)
{
	int rc = drain(w->csv);
	return rc < 0 ? ticks_fail(w, rc, err, errlen) : 0;
}

const struct writer_ops writer_csv_ticks = {
	.name = "csv-ticks", .ext = ".csv", .open = ticks_open, .begin = ticks_begin,
	.write = ticks_write, .end = ticks_end, .flush = ticks_flush,
};
