/* SPDX-License-Identifier: MIT */
/*
 * Reading a recording back (recording.h): find its files
 * (recording_find.c), load the CSV set (recording_csv.c) or the SQLite file
 * (recording_sqlite.c), then hold the tables against the metadata
 * (recording_meta.c).  This file keeps the tables and the entry points.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/recording_priv.h"
#include "log.h"

int rec_tbl_grow(struct rec_table *t)
{
	if (t->n < t->cap)
		return 0;
	size_t cap = t->cap ? t->cap * 2 : 1024;
	int64_t *tt = realloc(t->t_ns, cap * sizeof(*tt));
	if (tt)
		t->t_ns = tt;
	int64_t *tk = realloc(t->ticks, cap * sizeof(*tk));
	if (tk)
		t->ticks = tk;
	if (!tt || !tk)
		return -ENOMEM;
	for (uint32_t c = 0; c < t->ncols; c++) {
		double *v = realloc(t->v[c], cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->v[c] = v;
	}
	t->cap = cap;
	return 0;
}

static void tbl_free(struct rec_table *t)
{
	free(t->t_ns);
	free(t->ticks);
	for (uint32_t c = 0; c < t->ncols; c++)
		free(t->v[c]);
	free(t->v);
	free(t->cols);
	free(t->units);
	memset(t, 0, sizeof(*t));
}

int rec_tbl_init(struct rec_table *t, char **cols, uint32_t ncols)
{
	t->ncols = ncols;
	t->rows_expected = -1;
	t->cols = calloc(ncols ? ncols : 1, sizeof(*t->cols));
	t->units = calloc(ncols ? ncols : 1, sizeof(*t->units));
	t->v = calloc(ncols ? ncols : 1, sizeof(*t->v));
	if (!t->cols || !t->units || !t->v)
		return -ENOMEM;
	for (uint32_t c = 0; c < ncols; c++) {
		t->cols[c] = cols[c];
		t->units[c] = "";
	}
	return 0;
}

struct rec_gpu *rec_gpu_of(struct recording *r, uint32_t index, bool make)
{
	for (uint32_t i = 0; i < r->ngpu; i++)
		if (r->gpu[i].index == index)
			return &r->gpu[i];
	if (!make || r->ngpu == REC_MAX_GPUS)
		return NULL;
	struct rec_gpu *g = &r->gpu[r->ngpu++];
	memset(g, 0, sizeof(*g));
	g->index = index;
	g->smi.rows_expected = -1;
	for (uint32_t x = 0; x < REC_MAX_XCC; x++)
		g->spm[x].rows_expected = -1;
	return g;
}

char *rec_keep(struct recording *r, const char *s)
{
	char *p = strdup(s ? s : "");
	char **h = p ? realloc(r->headers, (r->nheaders + 1) * sizeof(*h)) : NULL;
	if (!h) {
		free(p);
		return NULL;
	}
	r->headers = h;
	r->headers[r->nheaders++] = p;
	return p;
}

int rec_note(struct recording *r, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	char **v = n >= 0 ? realloc(r->truth.notes, (r->truth.nnotes + 1) * sizeof(*v)) : NULL;
	if (!v) {
		free(n >= 0 ? s : NULL);
		return -ENOMEM;
	}
	r->truth.notes = v;
	r->truth.notes[r->truth.nnotes++] = s;
	return 0;
}

const char *rec_count(char *buf, size_t len, long long v)
{
	char digits[32];
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	int n = snprintf(digits, sizeof(digits), "%llu", u);
	size_t o = 0;
	if (!len)
		return buf;
	if (v < 0 && o + 1 < len)
		buf[o++] = '-';
	for (int i = 0; i < n && o + 1 < len; i++) {
		buf[o++] = digits[i];
		if ((n - i - 1) % 3 == 0 && i + 1 < n && o + 1 < len)
			buf[o++] = ',';
	}
	buf[o] = 0;
	return buf;
}

static int cmp_gpu(const void *a, const void *b)
{
	const struct rec_gpu *x = a, *y = b;
	return x->index < y->index ? -1 : x->index > y->index;
}

int rec_load(const char *path, struct recording **out, char *err, size_t errlen)
{
	*out = NULL;
	struct rec_src src;
	/* "MERGED.db#node=N": one node of a merged job recording (recording_sqlite.c) */
	int32_t node = -1;
	char *plain = NULL;
	const char *hash = strrchr(path, '#');
	if (hash && !strncmp(hash, "#node=", 6)) {
		char *end;
		long v = strtol(hash + 6, &end, 10);
		if (*end || end == hash + 6 || v < 0 || v > INT32_MAX)
			return spmtap_seterr(err, errlen, EINVAL, "%s: #node= takes a node number", path);
		node = (int32_t)v;
		plain = strndup(path, (size_t)(hash - path));
		if (!plain)
			return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
		path = plain;
	}
	int rc = rec_find(path, &src, err, errlen);
	free(plain);
	if (rc)
		return rc;
	struct recording *r = calloc(1, sizeof(*r));
	if (!r) {
		rec_src_free(&src);
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	}
	r->node = node;
	if (node >= 0 && !src.sqlite) {
		rec_src_free(&src);
		free(r);
		return spmtap_seterr(err, errlen, EINVAL, "#node=N names a node of a merged job recording (a .db)");
	}
	r->base = src.base;
	src.base = NULL;
	if (src.sqlite) {
		rc = rec_load_sqlite(r, &src, err, errlen);
	} else {
		json_error_t je;
		r->meta = json_load_file(src.meta.path, 0, &je);
		if (!r->meta)
			rc = spmtap_seterr(err, errlen, EINVAL, "%s:%d: %s", src.meta.path, je.line, je.text);
		else if (!json_is_object(r->meta))
			rc = spmtap_seterr(err, errlen, EINVAL, "%s: not a JSON object", src.meta.path);
		/* first: whether the run ended decides how the loaders read a cut row */
		if (!rc)
			rc = rec_check_incomplete(r, &src);
		if (!rc)
			rc = rec_load_csv(r, &src, err, errlen);
	}
	if (!rc) {
		json_t *hz = json_object_get(r->meta, "spm_clock_hz");
		r->spm_clock_hz = json_is_number(hz) ? json_number_value(hz) : 1e8;
		qsort(r->gpu, r->ngpu, sizeof(r->gpu[0]), cmp_gpu);
		rec_units_from_meta(r);
		rc = rec_check_truth(r, &src);
		if (rc)
			spmtap_seterr(err, errlen, -rc, "%s: %s", r->base, strerror(-rc));
	}
	if (!rc)
		rc = rec_load_kernels(r, &src, err, errlen);
	rec_src_free(&src);
	if (rc) {
		rec_free(r);
		return rc < 0 ? rc : -rc;
	}
	*out = r;
	return 0;
}

void rec_free(struct recording *r)
{
	if (!r)
		return;
	for (uint32_t i = 0; i < r->ngpu; i++) {
		tbl_free(&r->gpu[i].smi);
		for (uint32_t x = 0; x < REC_MAX_XCC; x++)
			tbl_free(&r->gpu[i].spm[x]);
	}
	for (size_t i = 0; i < r->nheaders; i++)
		free(r->headers[i]);
	free(r->headers);
	for (size_t i = 0; i < r->truth.nnotes; i++)
		free(r->truth.notes[i]);
	free(r->truth.notes);
	sa_phases_free(&r->phases);
	free(r->kernels.v);
	json_decref(r->meta);
	free(r->base);
	free(r);
}

const struct rec_gpu *rec_gpu(const struct recording *r, uint32_t index)
{
	return rec_gpu_of((struct recording *)r, index, false);
}

int rec_col(const struct rec_table *t, const char *name)
{
	for (uint32_t c = 0; name && c < t->ncols; c++)
		if (!strcmp(t->cols[c], name))
			return (int)c;
	return -1;
}
