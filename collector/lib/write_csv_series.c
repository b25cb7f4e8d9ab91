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
 * writer_meta names a file set (outset.h); flush() pushes the stdio
 * buffers to the files (the session calls it at least once a second).
 * A source's file is created at its first stream; its header is the union
 * of the columns (by name, in declaration order) of every stream of that
 * source declared before its first chunk, so all streams are declared
 * first.  A stream that lacks a column leaves that cell empty, as does a
 * missing value.  Rows go straight to a stdio buffer: memory is bounded.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/lib/outset.h"
#include "collector/lib/writer.h"

#define CSVS_MAX_COLS 1024u
#define CSVS_MAX_STREAMS 256u

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
	FILE *f;
	char *buf;
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
	if (cf->f)
		return 0;
	cf->kind = kind;
	char *final = path_with(w->base, csvs_kinds[kind].suffix);
	cf->path = final ? out_set_part(w->files, final) : NULL;
	free(final);
	if (!cf->path)
		return fail(w, ENOMEM, err, errlen, "out of memory");
	cf->f = fopen(cf->path, "we");
	if (!cf->f)
		return fail(w, errno, err, errlen, "%s: %s", cf->path, strerror(errno));
	cf->buf = malloc(1 << 16);
	if (cf->buf)
		setvbuf(cf->f, cf->buf, _IOFBF, 1 << 16);
	return 0;
}

static int io_fail(struct writer *w, struct csvs_file *cf, char *err, size_t errlen)
{
	int e = errno ? errno : EIO;
	return fail(w, e, err, errlen, "%s: %s", cf->path, strerror(e));
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
	fputs(csvs_kinds[cf->kind].head, cf->f);
	for (uint32_t k = 0; k < cf->ncols; k++) {
		fputc(',', cf->f);
		fputs(cf->cols[k], cf->f);
	}
	if (fputc('\n', cf->f) == EOF)
		return io_fail(w, cf, err, errlen);
	return 0;
}

/*
 * The shortest of 15, 16 or 17 digits that reads back as the same double,
 * so a CSV recording holds exactly what the SQLite one does (the analysis
 * reads both, docs/formats/csv.md); 15 digits already show an energy
 * counter's 2^-16 J ticks at 10^7 J, so most values stay as short as before.
 */
static void put_f64(FILE *f, double v)
{
	char b[40];
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(b, sizeof(b), "%.*g", prec, v);
		if (strtod(b, NULL) == v)
			break;
	}
	fputs(b, f);
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
	char line[64];
	for (uint32_t i = 0; i < c->n; i++) {
		if (cf->kind == CSVS_SPM)
			snprintf(line, sizeof(line), "%u,%d,%" PRId64 ",", s->gpu, s->xcc, c->host_ns[i]);
		else
			snprintf(line, sizeof(line), "%u,%" PRId64 ",", s->gpu, c->host_ns[i]);
		fputs(line, cf->f);
		if (c->ticks)
			fprintf(cf->f, "%" PRIu64, c->ticks[i]);
		for (uint32_t k = 0; k < nc; k++) {
			fputc(',', cf->f);
			int32_t j = inv[k];
			if (j < 0 || series_missing(c, (uint32_t)j, i))
				continue;
			if (s->cols[j].type == SERIES_U64)
				fprintf(cf->f, "%" PRIu64, series_u64(c, (uint32_t)j, i));
			else
				put_f64(cf->f, series_f64(c, (uint32_t)j, i));
		}
		fputc('\n', cf->f);
	}
	if (ferror(cf->f))
		return io_fail(w, cf, err, errlen);
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
	struct csvs_file *cf = &w->phases;
	int rc = file_open(w, cf, CSVS_PHASES, err, errlen);
	if (!rc)
		rc = header(w, cf, err, errlen);
	if (rc)
		return rc;
	fprintf(cf->f, "%" PRId64 ",%" PRId64 ",", sl->start_ns, sl->end_ns);
	for (const char *p = sl->name && *sl->name ? sl->name : "(unnamed)"; *p; p++)
		fputc(*p == ',' || *p == '\n' || *p == '\r' ? ' ' : *p, cf->f);
	if (fputc('\n', cf->f) == EOF || ferror(cf->f))
		return io_fail(w, cf, err, errlen);
	return 0;
}

static int csvs_flush(struct writer *w, char *err, size_t errlen)
{
	struct csvs_file *all[] = { &w->spm, &w->smi, &w->phases };
	for (size_t i = 0; i < 3; i++)
		if (all[i]->f && fflush(all[i]->f))
			return io_fail(w, all[i], err, errlen);
	return 0;
}

static int file_close(struct writer *w, struct csvs_file *cf, int rc, char *err, size_t errlen)
{
	if (cf->f) {
		if (!rc && !w->error)
			rc = header(w, cf, err, errlen);
		errno = 0;
		int bad = fflush(cf->f) != 0 || ferror(cf->f);
		int e = errno;
		if (fclose(cf->f) && !bad) {
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
