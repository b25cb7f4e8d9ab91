/* SPDX-License-Identifier: MIT */
/* Streaming CSV writer for decoder chunks (write_csv.h, docs/decode-csv.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/lib/write_csv.h"

#define BUF_BYTES (256u * 1024)
/* Longest row cell: 20 digits + comma. */
#define CELL_MAX 21u

struct csv_writer {
	int fd;
	unsigned int flags;
	uint32_t ncols;
	int err; /* sticky: the first write error */
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
		ssize_t n = write(w->fd, w->buf + off, w->len - off);
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

static void put_u64(struct csv_writer *w, uint64_t v)
{
	char tmp[20];
	int i = 20;
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put(w, tmp + i, (size_t)(20 - i));
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
			if (!dec_chunk_saturated(c, k, i))
				put_u64(w, c->values[k][i]);
		}
		w->buf[w->len++] = '\n';
	}
	w->rows += c->nsamples;
	return 0;
}

int csv_end(struct csv_writer *w)
{
	return drain(w);
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
	free(w);
}
