/* SPDX-License-Identifier: MIT */
/*
 * A recording read back from its SQLite file (docs/formats/sqlite.md) into
 * the same struct recording as its CSV files give: the metadata from the
 * meta key "recording_meta" (the whole NAME_meta.json), streams from the
 * stream and metric tables and `sample` (schema version 1's table, or
 * version 2's view over a table per stream: the same columns and order, so
 * one query reads both), phases from slice.  Tables get the
 * columns the CSV files would have (per source, every stream's metric names
 * in stream order) so that both read back identically.  A file cut short or
 * damaged is an error naming it, never a crash; opened read-only, so a
 * killed run's -wal is read, not checkpointed into the file.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/recording_priv.h"
#include "log.h"

#define SQ_APP_ID 0x53504d54 /* "SPMT", write_sqlite.c */
#define SQ_MAX_COLS 1024

struct sq {
	sqlite3 *db;
	const char *path;
	char *err;
	size_t errlen;
};

/* A SQLite failure as a sentence; a damaged or cut file is -EBADMSG. */
static int sq_fail(struct sq *q, int code, const char *doing)
{
	int prim = code & 0xff;
	const char *msg = q->db ? sqlite3_errmsg(q->db) : sqlite3_errstr(code);
	if (prim == SQLITE_CORRUPT || prim == SQLITE_NOTADB || prim == SQLITE_IOERR || prim == SQLITE_FORMAT ||
	    prim == SQLITE_ERROR || prim == SQLITE_RANGE)
		return spmtap_seterr(q->err, q->errlen, EBADMSG,
				     "%s cannot be read (sqlite: %s, while %s): the file is damaged or cut short, "
				     "or not an spmtap recording",
				     q->path, msg, doing);
	if (prim == SQLITE_NOMEM)
		return spmtap_seterr(q->err, q->errlen, ENOMEM, "%s: out of memory (while %s)", q->path, doing);
	return spmtap_seterr(q->err, q->errlen, EIO, "%s: sqlite: %s (while %s)", q->path, msg, doing);
}

static int sq_prepare(struct sq *q, const char *sql, sqlite3_stmt **st, const char *doing)
{
	int c = sqlite3_prepare_v2(q->db, sql, -1, st, NULL);
	return c == SQLITE_OK ? 0 : sq_fail(q, c, doing);
}

/* One integer from a one-row query. */
static int sq_int(struct sq *q, const char *sql, int64_t *v, const char *doing)
{
	sqlite3_stmt *st;
	int rc = sq_prepare(q, sql, &st, doing);
	if (rc)
		return rc;
	int c = sqlite3_step(st);
	if (c == SQLITE_ROW)
		*v = sqlite3_column_int64(st, 0);
	else
		rc = sq_fail(q, c == SQLITE_DONE ? SQLITE_CORRUPT : c, doing);
	sqlite3_finalize(st);
	return rc;
}

/* extra.streams rebuilt from the stream and metric tables, for a file without recording_meta. */
static int streams_json(struct sq *q, json_t **out)
{
	sqlite3_stmt *st;
	int rc = sq_prepare(q,
			    "SELECT s.id, s.source, s.gpu, s.xcc, s.tick_domain, m.name, m.unit FROM stream s "
			    "LEFT JOIN metric m ON m.stream_id = s.id ORDER BY s.id, m.col",
			    &st, "reading the streams");
	if (rc)
		return rc;
	json_t *a = json_array(), *cur = NULL;
	int64_t id = -1;
	int c;
	while ((c = sqlite3_step(st)) == SQLITE_ROW) {
		if (!cur || sqlite3_column_int64(st, 0) != id) {
			id = sqlite3_column_int64(st, 0);
			const char *td = (const char *)sqlite3_column_text(st, 4);
			cur = json_pack("{s:s?, s:I, s:I, s:s?, s:[]}", "source", (const char *)sqlite3_column_text(st, 1),
					"gpu", (json_int_t)sqlite3_column_int64(st, 2), "xcc",
					(json_int_t)sqlite3_column_int64(st, 3), "tick_domain", td, "columns");
			json_array_append_new(a, cur);
		}
		if (sqlite3_column_type(st, 5) != SQLITE_NULL)
			json_array_append_new(json_object_get(cur, "columns"),
					      json_pack("{s:s, s:s?}", "name", (const char *)sqlite3_column_text(st, 5),
							"unit", (const char *)sqlite3_column_text(st, 6)));
	}
	if (c != SQLITE_DONE) {
		json_decref(a);
		a = NULL;
		rc = sq_fail(q, c, "reading the streams");
	}
	sqlite3_finalize(st);
	*out = a;
	return rc;
}

/*
 * The metadata: "recording_meta" when the recorder stored it; else rebuilt
 * from the other keys (extra_json as "extra", JSON texts parsed), with a note.
 */
static int load_meta(struct recording *r, struct sq *q)
{
	sqlite3_stmt *st;
	int rc = sq_prepare(q, "SELECT key, value FROM meta", &st, "reading the meta table");
	if (rc)
		return rc;
	json_t *built = json_object(), *whole = NULL;
	int c;
	while ((c = sqlite3_step(st)) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(st, 0);
		int type = sqlite3_column_type(st, 1);
		json_t *v = NULL;
		if (!k)
			continue;
		if (type == SQLITE_INTEGER)
			v = json_integer(sqlite3_column_int64(st, 1));
		else if (type == SQLITE_FLOAT)
			v = json_real(sqlite3_column_double(st, 1));
		else if (type == SQLITE_TEXT) {
			const char *s = (const char *)sqlite3_column_text(st, 1);
			v = s && (*s == '{' || *s == '[') ? json_loads(s, 0, NULL) : NULL;
			if (!v)
				v = json_string(s ? s : "");
		}
		if (!strcmp(k, "recording_meta")) {
			json_decref(whole);
			whole = v;
			continue;
		}
		if (v)
			json_object_set_new(built, !strcmp(k, "extra_json") ? "extra" : k, v);
	}
	if (c != SQLITE_DONE)
		rc = sq_fail(q, c, "reading the meta table");
	sqlite3_finalize(st);
	if (!rc && json_is_object(whole)) {
		r->meta = whole;
		json_decref(built);
		return 0;
	}
	json_decref(whole);
	if (rc) {
		json_decref(built);
		return rc;
	}
	r->meta = built;
	if (!json_is_object(json_object_get(built, "extra")))
		json_object_set_new(built, "extra", json_object());
	if (!json_object_get(json_object_get(built, "extra"), "streams")) {
		json_t *s;
		if ((rc = streams_json(q, &s)))
			return rc;
		json_object_set_new(json_object_get(built, "extra"), "streams", s);
	}
	return rec_note(r, "%s has no recording_meta (an older recorder): its metadata is rebuilt from the meta, "
			   "stream and metric tables",
			rec_basename(q->path));
}

struct sq_stream {
	int64_t id;
	bool spm;
	uint32_t gpu;
	int32_t xcc;
	char tick_domain[24];
	uint32_t nmetric;
};

struct sq_metric {
	int64_t id, stream;
	const char *name, *unit; /* rec_keep'd */
};

/* Column names per source in stream order, as the CSV writer puts them in one header. */
static uint32_t union_cols(const struct sq_metric *m, size_t nm, const struct sq_stream *s, size_t ns, bool spm,
			   char **cols)
{
	uint32_t n = 0;
	for (size_t i = 0; i < ns; i++) {
		if (s[i].spm != spm)
			continue;
		for (size_t j = 0; j < nm; j++) {
			if (m[j].stream != s[i].id)
				continue;
			uint32_t k = 0;
			while (k < n && strcmp(cols[k], m[j].name))
				k++;
			if (k == n && n < SQ_MAX_COLS)
				cols[n++] = (char *)m[j].name;
		}
	}
	return n;
}

/* The rows of one metric into column k of t; rows[] counts them, top the highest idx + 1. */
static int load_metric(struct sq *q, sqlite3_stmt *st, struct rec_table *t, uint32_t k, bool first,
		       const char *what, int64_t *count, int64_t *top)
{
	int c;
	*count = 0;
	*top = 0;
	while ((c = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t idx = sqlite3_column_int64(st, 1);
		if (idx < 0 || idx > (int64_t)1 << 40)
			return spmtap_seterr(q->err, q->errlen, EBADMSG, "%s: %s: sample number %" PRId64 " out of range",
					     q->path, what, idx);
		/*
		 * A metric's rows are numbered 0..n-1 (checked after the loop) and come
		 * in that order (the table's key, or insertion): a number far past the
		 * rows read so far is damage, refused before the table grows to it
		 * (fuzz_recording_sqlite: a 5-byte edit asked for gigabytes).
		 */
		if (idx > *count + ((int64_t)1 << 20))
			return spmtap_seterr(q->err, q->errlen, EBADMSG,
					     "%s: %s: sample number %" PRId64 " after %" PRId64 " rows: the file is damaged",
					     q->path, what, idx, *count);
		while ((size_t)idx >= t->cap) {
			size_t n = t->n;
			t->n = t->cap; /* grow to at least idx + 1 */
			int rc = rec_tbl_grow(t);
			t->n = n;
			if (rc)
				return rc;
		}
		/* slots not yet seen are NAN until their row comes */
		for (size_t i = t->n; i <= (size_t)idx; i++) {
			for (uint32_t cc = 0; cc < t->ncols; cc++)
				t->v[cc][i] = NAN;
			t->t_ns[i] = INT64_MIN;
			t->ticks[i] = -1;
		}
		if ((size_t)idx >= t->n)
			t->n = (size_t)idx + 1;
		if (first || t->t_ns[idx] == INT64_MIN) {
			t->t_ns[idx] = sqlite3_column_int64(st, 0);
			t->ticks[idx] = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 2);
		}
		t->v[k][idx] = sqlite3_column_type(st, 3) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 3);
		(*count)++;
		if (idx + 1 > *top)
			*top = idx + 1;
	}
	if (c != SQLITE_DONE) {
		char doing[96];
		snprintf(doing, sizeof(doing), "reading the samples of %s", what);
		return sq_fail(q, c, doing);
	}
	return 0;
}

/* One stream's samples into its table, with the columns cols (the source's union). */
static int load_stream(struct recording *r, struct sq *q, const struct sq_stream *s, const struct sq_metric *m,
		       size_t nm, char **cols, uint32_t ncols)
{
	char what[48];
	if (s->spm)
		snprintf(what, sizeof(what), "GPU %u XCC %d", s->gpu, s->xcc);
	else
		snprintf(what, sizeof(what), "GPU %u's sensors", s->gpu);
	sqlite3_stmt *st;
	int rc = sq_prepare(q, "SELECT host_ns, idx, ticks, value FROM sample WHERE metric_id = ?", &st,
			    "reading the samples");
	if (rc)
		return rc;
	struct rec_table t = { 0 };
	rc = rec_tbl_init(&t, cols, ncols);
	int64_t lo = INT64_MAX, hi = 0;
	bool first = true;
	for (size_t j = 0; j < nm && !rc; j++) {
		if (m[j].stream != s->id)
			continue;
		int k = rec_col(&t, m[j].name);
		if (k < 0)
			continue;
		t.units[k] = m[j].unit;
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, m[j].id);
		int64_t count, top;
		rc = load_metric(q, st, &t, (uint32_t)k, first, what, &count, &top);
		first = false;
		if (!rc && count != top)
			rc = spmtap_seterr(q->err, q->errlen, EBADMSG,
					   "%s: %s: %s has %" PRId64 " samples numbered up to %" PRId64
					   ": the file is damaged",
					   q->path, what, m[j].name, count, top - 1);
		lo = count < lo ? count : lo;
		hi = count > hi ? count : hi;
	}
	sqlite3_finalize(st);
	if (!rc && lo < hi) {
		/* a batch cut between its columns: the last rows lack some metrics */
		t.n = (size_t)lo;
		t.cut_last_row = true;
		char a[32];
		rc = rec_note(r, "%s: the last %s row(s) of %s lack some of their columns (the file was cut): they are left out",
			      rec_basename(q->path), rec_count(a, sizeof(a), hi - lo), what);
	}
	if (rc || !t.n) {
		/* as from CSV: a stream without rows has no table */
		free(t.t_ns);
		free(t.ticks);
		for (uint32_t c = 0; c < t.ncols; c++)
			free(t.v[c]);
		free(t.v);
		free(t.cols);
		free(t.units);
		return rc;
	}
	struct rec_gpu *g = rec_gpu_of(r, s->gpu, true);
	if (!g) {
		rc = spmtap_seterr(q->err, q->errlen, E2BIG, "%s: more than %d GPUs", q->path, REC_MAX_GPUS);
	} else {
		struct rec_table *dst = s->spm ? &g->spm[s->xcc] : &g->smi;
		if (dst->cols) {
			rc = spmtap_seterr(q->err, q->errlen, EBADMSG, "%s: two streams of %s", q->path, what);
		} else {
			*dst = t;
			if (s->spm && (uint32_t)s->xcc + 1 > g->nspm)
				g->nspm = (uint32_t)s->xcc + 1;
			if (!s->spm)
				snprintf(g->tick_domain, sizeof(g->tick_domain), "%s", s->tick_domain);
			return 0;
		}
	}
	free(t.t_ns);
	free(t.ticks);
	for (uint32_t c = 0; c < t.ncols; c++)
		free(t.v[c]);
	free(t.v);
	free(t.cols);
	free(t.units);
	return rc;
}

static int load_streams(struct recording *r, struct sq *q)
{
	int64_t ns = 0, nm = 0;
	/* a merged job recording: only the node asked for (rec_load's "#node=N") */
	char sw[64] = "", mw[128] = "", sql[256];
	if (r->node >= 0) {
		snprintf(sw, sizeof(sw), " WHERE node = %d", r->node);
		snprintf(mw, sizeof(mw), " WHERE stream_id IN (SELECT id FROM stream WHERE node = %d)", r->node);
	}
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM stream%s", sw);
	int rc = sq_int(q, sql, &ns, "counting the streams");
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM metric%s", mw);
	if (!rc)
		rc = sq_int(q, sql, &nm, "counting the metrics");
	if (rc)
		return rc;
	struct sq_stream *s = calloc((size_t)ns + 1, sizeof(*s));
	struct sq_metric *m = calloc((size_t)nm + 1, sizeof(*m));
	char **cols = malloc(SQ_MAX_COLS * sizeof(*cols));
	sqlite3_stmt *st = NULL;
	size_t n = 0, k = 0;
	if (!s || !m || !cols)
		rc = -ENOMEM;
	if (!rc)
		snprintf(sql, sizeof(sql), "SELECT id, source, gpu, xcc, tick_domain FROM stream%s ORDER BY id", sw);
	if (!rc)
		rc = sq_prepare(q, sql, &st, "reading the streams");
	int c = SQLITE_DONE;
	while (!rc && (c = sqlite3_step(st)) == SQLITE_ROW && n < (size_t)ns) {
		const char *src = (const char *)sqlite3_column_text(st, 1);
		int64_t gpu = sqlite3_column_int64(st, 2), xcc = sqlite3_column_int64(st, 3);
		const char *td = (const char *)sqlite3_column_text(st, 4);
		s[n] = (struct sq_stream){ .id = sqlite3_column_int64(st, 0), .spm = src && !strcmp(src, "spm"),
					   .gpu = (uint32_t)gpu, .xcc = (int32_t)xcc };
		snprintf(s[n].tick_domain, sizeof(s[n].tick_domain), "%s", td ? td : "");
		if (gpu < 0 || gpu > UINT32_MAX || (s[n].spm && (xcc < 0 || xcc >= REC_MAX_XCC)) ||
		    (!s[n].spm && (!src || strcmp(src, "smi"))))
			rc = spmtap_seterr(q->err, q->errlen, EBADMSG, "%s: stream %" PRId64 " (%s, gpu %" PRId64
					   ", xcc %" PRId64 ") is not one spmtap writes",
					   q->path, s[n].id, src ? src : "NULL", gpu, xcc);
		n++;
	}
	if (!rc && c != SQLITE_DONE && c != SQLITE_ROW)
		rc = sq_fail(q, c, "reading the streams");
	sqlite3_finalize(st);
	st = NULL;
	if (!rc)
		snprintf(sql, sizeof(sql), "SELECT id, stream_id, name, unit FROM metric%s ORDER BY stream_id, col", mw);
	if (!rc)
		rc = sq_prepare(q, sql, &st, "reading the metrics");
	while (!rc && (c = sqlite3_step(st)) == SQLITE_ROW && k < (size_t)nm) {
		m[k].id = sqlite3_column_int64(st, 0);
		m[k].stream = sqlite3_column_int64(st, 1);
		m[k].name = rec_keep(r, (const char *)sqlite3_column_text(st, 2));
		m[k].unit = rec_keep(r, (const char *)sqlite3_column_text(st, 3));
		if (!m[k].name || !m[k].unit)
			rc = -ENOMEM;
		k++;
	}
	if (!rc && c != SQLITE_DONE && c != SQLITE_ROW)
		rc = sq_fail(q, c, "reading the metrics");
	sqlite3_finalize(st);
	for (int pass = 0; pass < 2 && !rc; pass++) {
		/* spm first, then the sensors, as the CSV files are read */
		uint32_t nc = union_cols(m, k, s, n, pass == 0, cols);
		for (size_t i = 0; i < n && !rc; i++)
			if (s[i].spm == (pass == 0))
				rc = load_stream(r, q, &s[i], m, k, cols, nc);
	}
	free(cols);
	free(s);
	free(m);
	return rc;
}

/* The slice table as the phases CSV would hold it (names made CSV-safe the same way). */
static int load_phases(struct recording *r, struct sq *q)
{
	sqlite3_stmt *st;
	char sql[128];
	if (r->node >= 0)
		snprintf(sql, sizeof(sql), "SELECT start_ns, end_ns, name FROM slice WHERE node = %d ORDER BY id", r->node);
	else
		snprintf(sql, sizeof(sql), "SELECT start_ns, end_ns, name FROM slice ORDER BY id");
	int rc = sq_prepare(q, sql, &st, "reading the phases");
	if (rc)
		return rc;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f) {
		sqlite3_finalize(st);
		return -ENOMEM;
	}
	fputs("start_ns,end_ns,name\n", f);
	int c;
	while ((c = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 2);
		fprintf(f, "%" PRId64 ",%" PRId64 ",", (int64_t)sqlite3_column_int64(st, 0),
			(int64_t)sqlite3_column_int64(st, 1));
		for (const char *p = name && *name ? name : "(unnamed)"; *p; p++)
			fputc(*p == ',' || *p == '\n' || *p == '\r' ? ' ' : *p, f);
		fputc('\n', f);
	}
	if (c != SQLITE_DONE)
		rc = sq_fail(q, c, "reading the phases");
	sqlite3_finalize(st);
	if (fclose(f) || !buf) {
		free(buf);
		return rc ? rc : -ENOMEM;
	}
	if (!rc)
		rc = sa_phases_parse(buf, len, q->path, &r->phases, q->err, q->errlen);
	free(buf);
	return rc;
}

/*
 * A merged job recording (spmtap merge: a node table) is read one node at a
 * time (r->node, from rec_load's "PATH#node=N"); its job summary is
 * report_job.c's.
 */
static int merged_node(struct recording *r, struct sq *q)
{
	int64_t has = 0;
	int rc = sq_int(q, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'node'", &has,
			"reading its schema");
	if (rc)
		return rc;
	if (has && r->node < 0)
		return spmtap_seterr(q->err, q->errlen, EINVAL,
				     "%s is a merged job recording (spmtap merge): `spmtap report` on it shows the job, "
				     "per phase and node; name one node with --node N (or %s#node=N)",
				     q->path, q->path);
	if (!has && r->node >= 0)
		return spmtap_seterr(q->err, q->errlen, EINVAL, "%s is no merged job recording: --node needs one",
				     q->path);
	int64_t n = 0;
	char sql[96];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM node WHERE node = %d", r->node);
	if (has && !(rc = sq_int(q, sql, &n, "reading its nodes")) && !n)
		return spmtap_seterr(q->err, q->errlen, ENOENT, "%s has no node %d", q->path, r->node);
	return rc;
}

int rec_load_sqlite(struct recording *r, const struct rec_src *src, char *err, size_t errlen)
{
	struct sq q = { .path = src->db.path, .err = err, .errlen = errlen };
	int c = sqlite3_open_v2(q.path, &q.db, SQLITE_OPEN_READONLY, NULL);
	int rc = c == SQLITE_OK ? 0 : sq_fail(&q, c, "opening it");
	int64_t app = 0;
	if (!rc)
		rc = sq_int(&q, "PRAGMA application_id", &app, "reading its header");
	if (!rc && app == 0)
		rc = spmtap_seterr(err, errlen, EBADMSG,
				   "%s holds no spmtap recording (an empty file, or one cut before its header)", q.path);
	else if (!rc && app != SQ_APP_ID)
		rc = spmtap_seterr(err, errlen, EINVAL, "%s is a SQLite file but not an spmtap recording "
					"(application_id %#" PRIx64 ", not \"SPMT\")",
				   q.path, (uint64_t)app);
	if (!rc)
		rc = merged_node(r, &q);
	if (!rc)
		rc = load_meta(r, &q);
	if (!rc)
		rc = rec_check_incomplete(r, src);
	if (!rc)
		rc = load_streams(r, &q);
	if (!rc)
		rc = load_phases(r, &q);
	sqlite3_close(q.db);
	return rc;
}
