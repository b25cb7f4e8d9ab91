/* SPDX-License-Identifier: MIT */
/*
 * writer_csv: series_chunks as CSV, one file per source (docs/formats/csv.md).
 * open("DIR/NAME.csv") makes
 *   DIR/NAME_spm.csv   gpu,xcc,host_ns,gpu_ticks,<counters>
 *   DIR/NAME_smi.csv   gpu,host_ns,sensor_ts,<metrics>
 *   DIR/NAME_phases.csv start_ns,end_ns,name (the phases format of
 *                      docs/formats/sensor-trace.md, so `spmtap report` reads it)
 * (the recording's metadata, DIR/NAME_meta.json, is the session's: it
 * lists these files.)  Each file is written as FINAL.part when the
 * writer_meta names a file set (outset.h); flush() pushes the buffered
 * rows to the files (the session calls it at least once a second).
 * A source's file is created at its first stream; its header is the union
 * of the columns (by name, in declaration order) of every stream of that
 * source declared before its first chunk, so all streams are declared
 * first.  A stream that lacks a column leaves that cell empty, as does a
 * missing value.  Rows are formatted by hand (write_csv.h's formatters,
 * no printf per cell: stdio was half the collector's CPU, issue 15) into
 * one fixed buffer per file, written out with write() when it fills:
 * memory is bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/lib/outset.h"
#include "collector/lib/write_csv.h"
#include "collector/lib/writebehind.h"
#include "collector/lib/writer.h"

#define CSVS_MAX_COLS 1024u
#define CSVS_MAX_STREAMS 256u
/* Big blocks for the SPM file (one write() per MiB); sensors and phases are slow. */
#define CSVS_BUF_SPM (1u << 20)
#define CSVS_BUF_SMALL (1u << 16)
/* Longest fixed part of a row: gpu, xcc, host_ns, ticks and their commas. */
#define CSVS_ROW_FIXED (10u + 1 + 11 + 1 + CSV_I64_MAX + 1 + CSV_U64_MAX + 2)
_Static_assert(CSVS_ROW_FIXED + CSVS_MAX_COLS * (1 + CSV_F64_MAX) <= CSVS_BUF_SMALL,
	       "the longest row fits every file's buffer");

enum csvs_kind { CSVS_SPM, CSVS_SMI, CSVS_PHASES };

static const struct {
	const char *suffix, *key, *head;
} csvs_kinds[] = {
	[CSVS_SPM] = { "_spm.csv", "spm", "gpu,xcc,host_ns,gpu_ticks" },
	[CSVS_SMI] = { "_smi.csv", "smi", "gpu,host_ns,sensor_ts" },
	[CSVS_PHASES] = { "_phases.csv", "phases", "start_ns,end_ns,name" },
};

struct csvs_file {
	char *path;
	int fd; /* -1 until the file is created */
	char *buf;
	size_t len, cap;
	struct wbehind wb; /* the pages far behind the end leave the page cache (writebehind.h) */
	enum csvs_kind kind;
	bool header_done;
	uint32_t ncols;
	char *cols[CSVS_MAX_COLS];
};

struct csvs_stream {
	const struct series_stream *s;
	struct csvs_file *file;
	uint32_t *map; /* stream column -> file column */
};

struct writer {
	char *base; /* DIR/NAME */
	struct out_set *files;
	struct csvs_file spm, smi, phases;
	struct csvs_stream st[CSVS_MAX_STREAMS];
	uint32_t nst;
	int error;
};

static int fail(struct writer *w, int e, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int fail(struct writer *w, int e, char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	if (w && !w->error)
		w->error = -e;
	errno = e;
	return -e;
}

static int csvs_probe(char *reason, size_t len)
{
	if (reason && len)
		reason[0] = 0;
	return 0;
}

static char *path_with(const char *base, const char *suffix)
{
	size_t n = strlen(base);
	char *p = malloc(n + strlen(suffix) + 1);
	if (p) {
		memcpy(p, base, n);
		strcpy(p + n, suffix);
	}
	return p;
}

static int csvs_open(struct writer **out, const char *path, const struct writer_meta *meta,
		     char *err, size_t errlen)
{
	struct writer *w = calloc(1, sizeof(*w));
	if (!w)
		return fail(NULL, ENOMEM, err, errlen, "out of memory");
	size_t n = strlen(path);
	if (n > 4 && !strcmp(path + n - 4, ".csv"))
		n -= 4;
	w->base = strndup(path, n);
	if (!w->base) {
		free(w);
		return fail(NULL, ENOMEM, err, errlen, "out of memory");
	}
	w->files = meta ? meta->files : NULL;
	*out = w;
	return 0;
}

static int file_open(struct writer *w, struct csvs_file *cf, enum csvs_kind kind, char *err, size_t errlen)
{
	if (cf->buf)
		return 0;
	cf->kind = kind;
	cf->fd = -1;
	char *final = path_with(w->base, csvs_kinds[kind].suffix);
	cf->path = final ? out_set_part(w->files, final) : NULL;
	free(final);
	if (!cf->path)
		return fail(w, ENOMEM, err, errlen, "out of memory");
	/* What fopen(path, "we") did: the same flags and mode, so the same file. */
	cf->fd = open(cf->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (cf->fd < 0)
		return fail(w, errno, err, errlen, "%s: %s", cf->path, strerror(errno));
	cf->cap = kind == CSVS_SPM ? CSVS_BUF_SPM : CSVS_BUF_SMALL;
	cf->buf = malloc(cf->cap);
	if (!cf->buf) {
		close(cf->fd);
		cf->fd = -1;
		return fail(w, ENOMEM, err, errlen, "out of memory");
	}
	return 0;
}

static int io_fail(struct writer *w, struct csvs_file *cf, char *err, size_t errlen)
{
	int e = errno ? errno : EIO;
	return fail(w, e, err, errlen, "%s: %s", cf->path, strerror(e));
}

/* The buffered rows to the file; on failure errno says why (ENOSPC for a short write of 0). */
static int drain(struct csvs_file *cf)
{
	size_t off = 0;
	while (off < cf->len) {
		ssize_t n = wb_write(&cf->wb, cf->fd, cf->buf + off, cf->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ENOSPC;
			/* Keep what did not go out: a later flush must not write it twice. */
			memmove(cf->buf, cf->buf + off, cf->len - off);
			cf->len -= off;
			return -1;
		}
		off += (size_t)n;
	}
	cf->len = 0;
	return 0;
}

/* Room for n more bytes (n <= cap), writing the buffer out first if needed. */
static int room(struct writer *w, struct csvs_file *cf, size_t n, char *err, size_t errlen)
{
	if (cf->len + n <= cf->cap)
		return 0;
	return drain(cf) ? io_fail(w, cf, err, errlen) : 0;
}

static void put(struct csvs_file *cf, const char *s, size_t n)
{
	memcpy(cf->buf + cf->len, s, n);
	cf->len += n;
}

/*
 * Text of any length (a column or phase name), in pieces that fit the
 * buffer; `clean` turns a comma or a line break into a space (the format
 * has no quoting).
 */
static int put_text(struct writer *w, struct csvs_file *cf, const char *s, size_t n, bool clean,
		    char *err, size_t errlen)
{
	while (n) {
		int rc = room(w, cf, 1, err, errlen);
		if (rc)
			return rc;
		size_t k = cf->cap - cf->len < n ? cf->cap - cf->len : n;
		char *o = cf->buf + cf->len;
		for (size_t i = 0; i < k; i++)
			o[i] = clean && (s[i] == ',' || s[i] == '\n' || s[i] == '\r') ? ' ' : s[i];
		cf->len += k;
		s += k;
		n -= k;
	}
	return 0;
}

static int csvs_begin(struct writer *w, const struct series_stream *s, char *err, size_t errlen)
{
	if (w->error)
		return fail(w, -w->error, err, errlen, "%s: an earlier error stopped this writer", w->base);
	if (w->nst == CSVS_MAX_STREAMS)
		return fail(w, E2BIG, err, errlen, "%s: more than %u streams", w->base, CSVS_MAX_STREAMS);
	bool spm = !s->source || strcmp(s->source, "smi");
	struct csvs_file *cf = spm ? &w->spm : &w->smi;
	int rc = file_open(w, cf, spm ? CSVS_SPM : CSVS_SMI, err, errlen);
	if (rc)
		return rc;
	struct csvs_stream *st = &w->st[w->nst];
	st->map = calloc(s->ncols ? s->ncols : 1, sizeof(*st->map));
	if (!st->map)
		return fail(w, ENOMEM, err, errlen, "out of memory");
	for (uint32_t c = 0; c < s->ncols; c++) {
		uint32_t k;
		for (k = 0; k < cf->ncols; k++)
			if (!strcmp(cf->cols[k], s->cols[c].name))
				break;
		if (k == cf->ncols) {
			if (cf->header_done) {
				free(st->map);
				return fail(w, EINVAL, err, errlen,
					    "%s: column %s declared after the first rows", cf->path,
					    s->cols[c].name);
			}
			if (cf->ncols == CSVS_MAX_COLS || !(cf->cols[k] = strdup(s->cols[c].name))) {
				free(st->map);
				return fail(w, ENOMEM, err, errlen, "%s: too many columns", cf->path);
			}
			cf->ncols++;
		}
		st->map[c] = k;
	}
	st->s = s;
	st->file = cf;
	w->nst++;
	return 0;
}

static int header(struct writer *w, struct csvs_file *cf, char *err, size_t errlen)
{
	if (cf->header_done)
		return 0;
	cf->header_done = true;
	const char *head = csvs_kinds[cf->kind].head;
	int rc = room(w, cf, strlen(head) + 1, err, errlen);
	if (!rc)
		put(cf, head, strlen(head));
	for (uint32_t k = 0; k < cf->ncols && !rc; k++) {
		rc = put_text(w, cf, ",", 1, false, err, errlen);
		if (!rc)
			rc = put_text(w, cf, cf->cols[k], strlen(cf->cols[k]), false, err, errlen);
	}
	return rc ? rc : put_text(w, cf, "\n", 1, false, err, errlen);
}

static int csvs_write(struct writer *w, const struct series_chunk *c, char *err, size_t errlen)
{
	if (w->error)
		return fail(w, -w->error, err, errlen, "%s: an earlier error stopped this writer", w->base);
	struct csvs_stream *st = NULL;
	for (uint32_t i = 0; i < w->nst; i++)
		if (w->st[i].s == c->stream) {
			st = &w->st[i];
			break;
		}
	if (!st)
		return fail(w, EINVAL, err, errlen, "%s: chunk of an undeclared stream", w->base);
	struct csvs_file *cf = st->file;
	int rc = header(w, cf, err, errlen);
	if (rc)
		return rc;
	const struct series_stream *s = c->stream;
	uint32_t nc = cf->ncols;
	int32_t inv[CSVS_MAX_COLS];
	for (uint32_t k = 0; k < nc; k++)
		inv[k] = -1;
	for (uint32_t j = 0; j < s->ncols; j++)
		inv[st->map[j]] = (int32_t)j;
	/* "gpu,xcc," (SPM) or "gpu," (sensors): the same on every row of the chunk. */
	char pre[32];
	size_t npre = csv_fmt_u64(pre, s->gpu);
	pre[npre++] = ',';
	if (cf->kind == CSVS_SPM) {
		npre += csv_fmt_i64(pre + npre, s->xcc);
		pre[npre++] = ',';
	}
	/* A cell is a comma and at most a double's longest text. */
	size_t row_max = CSVS_ROW_FIXED + (size_t)nc * (1 + CSV_F64_MAX) + 16;
	struct csv_prefix tpre = { 0 }, kpre = { 0 };
	for (uint32_t i = 0; i < c->n; i++) {
		if (cf->len + row_max > cf->cap && (rc = room(w, cf, row_max, err, errlen)))
			return rc;
		char *o = cf->buf + cf->len;
		memcpy(o, pre, npre);
		o += npre;
		if (c->host_ns[i] >= 0)
			o += csv_fmt_u64_near(o, (uint64_t)c->host_ns[i], &tpre);
		else
			o += csv_fmt_i64(o, c->host_ns[i]);
		*o++ = ',';
		if (c->ticks)
			o += csv_fmt_u64_near(o, c->ticks[i], &kpre);
		for (uint32_t k = 0; k < nc; k++) {
			*o++ = ',';
			int32_t j = inv[k];
			if (j < 0 || series_missing(c, (uint32_t)j, i))
				continue;
			if (s->cols[j].type == SERIES_U64)
				o += csv_fmt_u64(o, series_u64(c, (uint32_t)j, i));
			else
				o += csv_fmt_f64(o, series_f64(c, (uint32_t)j, i));
		}
		*o++ = '\n';
		cf->len = (size_t)(o - cf->buf);
	}
	return 0;
}

/*
 * A phase row, in the order phases end.  The format has no quoting, so a
 * comma or a line break in a name becomes a space (docs/formats/csv.md).
 */
static int csvs_slice(struct writer *w, const struct series_slice *sl, char *err, size_t errlen)
{
	if (w->error)
		return fail(w, -w->error, err, errlen, "%s: an earlier error stopped this writer", w->base);
	/* Kernel dispatches have their own file (NAME_kernels.csv), not phases. */
	if (sl->category && !strcmp(sl->category, "kernel"))
		return 0;
	struct csvs_file *cf = &w->phases;
	int rc = file_open(w, cf, CSVS_PHASES, err, errlen);
	if (!rc)
		rc = header(w, cf, err, errlen);
	if (rc)
		return rc;
	if ((rc = room(w, cf, 2 * CSV_I64_MAX + 2, err, errlen)))
		return rc;
	char *o = cf->buf + cf->len;
	o += csv_fmt_i64(o, sl->start_ns);
	*o++ = ',';
	o += csv_fmt_i64(o, sl->end_ns);
	*o++ = ',';
	cf->len = (size_t)(o - cf->buf);
	const char *name = sl->name && *sl->name ? sl->name : "(unnamed)";
	rc = put_text(w, cf, name, strlen(name), true, err, errlen);
	return rc ? rc : put_text(w, cf, "\n", 1, false, err, errlen);
}

static int csvs_flush(struct writer *w, char *err, size_t errlen)
{
	struct csvs_file *all[] = { &w->spm, &w->smi, &w->phases };
	for (size_t i = 0; i < 3; i++)
		if (all[i]->buf && drain(all[i]))
			return io_fail(w, all[i], err, errlen);
	return 0;
}

static int file_close(struct writer *w, struct csvs_file *cf, int rc, char *err, size_t errlen)
{
	if (cf->buf) {
		if (!rc && !w->error)
			rc = header(w, cf, err, errlen);
		errno = 0;
		int bad = drain(cf);
		int e = errno;
		wb_stop(&cf->wb);
		if (close(cf->fd) && !bad) {
			bad = 1;
			e = errno;
		}
		if (bad && !rc) {
			errno = e;
			rc = io_fail(w, cf, err, errlen);
		}
	}
	free(cf->buf);
	free(cf->path);
	for (uint32_t k = 0; k < cf->ncols; k++)
		free(cf->cols[k]);
	return rc;
}

static int csvs_end(struct writer *w, char *err, size_t errlen)
{
	int rc = w->error;
	rc = file_close(w, &w->spm, rc, err, errlen);
	rc = file_close(w, &w->smi, rc, err, errlen);
	rc = file_close(w, &w->phases, rc, err, errlen);
	for (uint32_t i = 0; i < w->nst; i++)
		free(w->st[i].map);
	free(w->base);
	free(w);
	return rc;
}

const struct writer_ops writer_csv = {
	.name = "csv", .ext = ".csv", .probe = csvs_probe, .open = csvs_open,
	.begin = csvs_begin, .write = csvs_write, .slice = csvs_slice, .end = csvs_end, .flush = csvs_flush,
};
