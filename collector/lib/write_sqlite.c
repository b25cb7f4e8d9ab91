/* SPDX-License-Identifier: MIT */
/*
 * SQLite writer (collector/lib/writer.h, docs/formats/sqlite.md), schema
 * version 2: one row per sample with all its counters, in a WITHOUT ROWID
 * table per stream keyed by (host_ns, idx).  Samples of a stream come in
 * time order, so every insert appends at the right edge of its B-tree and
 * the cost per sample does not grow with the recording; the key is the
 * time index, so a time range is one seek and no index is kept per row.
 * The views `sample` and `sample_v` give version 1's one row per (metric,
 * sample).  The schema is spmtap's own, not rocpd's; the documentation
 * says why.
 *
 * Streaming with bounded memory: one prepared INSERT … SELECT per chunk that
 * reads the chunk's arrays through a virtual table, a write-ahead log, and
 * a commit every SQLW_COMMIT_ROWS cells or SQLW_COMMIT_NS of wall time,
 * whichever comes first; SQLite's page cache is capped (SQLW_CACHE_KIB).
 * Every sqlite call is checked.  The first error is sticky: the transaction
 * in progress is rolled back, what was committed stays in the file, and
 * every later call returns the same error.  end() checkpoints the log into
 * the database and leaves a single self-contained file in rollback-journal
 * mode.
 */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector/lib/outset.h"
#include "collector/lib/sqlite_kernels.h"
#include "collector/lib/writer.h"
#include "log.h"

/* Knobs (measured in docs/formats/sqlite.md "Measured"); -D to experiment. */
#ifndef SQLW_COMMIT_ROWS
#define SQLW_COMMIT_ROWS (256u * 1024u)
#endif
#ifndef SQLW_COMMIT_NS
#define SQLW_COMMIT_NS (100 * 1000 * 1000ll)
#endif
#ifndef SQLW_JOURNAL
#define SQLW_JOURNAL "WAL"
#endif
#ifndef SQLW_SYNC
#define SQLW_SYNC "NORMAL"
#endif
#ifndef SQLW_CACHE_KIB
#define SQLW_CACHE_KIB 16384
#endif
/* Columns of a stream: SQLite's default SQLITE_MAX_COLUMN (2000) less idx, host_ns and ticks. */
#define SQLW_MAX_COLS 1990u
#ifndef SQLW_PAGE_SIZE
#define SQLW_PAGE_SIZE 16384
#endif

/* PRAGMA user_version: the schema version of docs/formats/sqlite.md. */
#define SQLW_SCHEMA_VERSION 2
/* PRAGMA application_id: "SPMT". */
#define SQLW_APPLICATION_ID 0x53504d54

struct sqlw_stream {
	const struct series_stream *ptr; /* the declaring pointer, for a fast match */
	uint32_t id;
	uint32_t ncols;
	enum series_type *types;
	int64_t metric0; /* metric.id of column 0; column c is metric0 + c */
	int64_t next_idx; /* sample index within the stream */
	bool merged;      /* the file has a node column (its views carry it) */
	/* INSERT INTO samples_<id> SELECT * FROM the chunk being written (struct chunk_src) */
	sqlite3_stmt *ins;
	struct chunk_src *src;
};

/*
 * The chunk being written, as an eponymous virtual table (spmtap_chunk_<id>)
 * that one INSERT … SELECT reads: SQLite takes the cells straight from the
 * chunk's arrays, with no bound parameter per cell.
 */
struct chunk_src {
	uint32_t ncols;
	const enum series_type *types;
	const struct series_chunk *c; /* set around each step */
	int64_t idx0;                 /* idx of the chunk's first sample */
};

struct chunk_vtab {
	sqlite3_vtab base;
	struct chunk_src *src;
};

struct chunk_cur {
	sqlite3_vtab_cursor base;
	const struct chunk_src *src;
	uint32_t i;
};

static int chunk_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out, char **errp)
{
	(void)argc;
	(void)argv;
	(void)errp;
	struct chunk_src *src = aux;
	char decl[64 + 8 * SQLW_MAX_COLS];
	size_t n = (size_t)snprintf(decl, sizeof(decl), "CREATE TABLE x(idx, host_ns, ticks");
	for (uint32_t c = 0; c < src->ncols && n < sizeof(decl); c++)
		n += (size_t)snprintf(decl + n, sizeof(decl) - n, ",v%u", c);
	if (n + 2 >= sizeof(decl))
		return SQLITE_TOOBIG;
	snprintf(decl + n, sizeof(decl) - n, ")");
	int rc = sqlite3_declare_vtab(db, decl);
	if (rc != SQLITE_OK)
		return rc;
	struct chunk_vtab *v = sqlite3_malloc(sizeof(*v));
	if (!v)
		return SQLITE_NOMEM;
	memset(v, 0, sizeof(*v));
	v->src = src;
	*out = &v->base;
	return SQLITE_OK;
}

static int chunk_disconnect(sqlite3_vtab *v)
{
	sqlite3_free(v);
	return SQLITE_OK;
}

static int chunk_best_index(sqlite3_vtab *v, sqlite3_index_info *info)
{
	(void)v;
	info->estimatedCost = 4096;
	info->estimatedRows = 4096;
	return SQLITE_OK;
}

static int chunk_open(sqlite3_vtab *v, sqlite3_vtab_cursor **out)
{
	struct chunk_cur *cur = sqlite3_malloc(sizeof(*cur));
	if (!cur)
		return SQLITE_NOMEM;
	memset(cur, 0, sizeof(*cur));
	cur->src = ((struct chunk_vtab *)v)->src;
	*out = &cur->base;
	return SQLITE_OK;
}

static int chunk_close(sqlite3_vtab_cursor *cur)
{
	sqlite3_free(cur);
	return SQLITE_OK;
}

static int chunk_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc, sqlite3_value **argv)
{
	(void)idxNum;
	(void)idxStr;
	(void)argc;
	(void)argv;
	((struct chunk_cur *)cur)->i = 0;
	return SQLITE_OK;
}

static int chunk_next(sqlite3_vtab_cursor *cur)
{
	((struct chunk_cur *)cur)->i++;
	return SQLITE_OK;
}

static int chunk_eof(sqlite3_vtab_cursor *cur)
{
	const struct chunk_cur *k = (const struct chunk_cur *)cur;
	return !k->src->c || k->i >= k->src->c->n;
}

static int chunk_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
	const struct chunk_cur *k = (const struct chunk_cur *)cur;
	const struct chunk_src *src = k->src;
	const struct series_chunk *c = src->c;
	uint32_t i = k->i;
	if (col == 0)
		sqlite3_result_int64(ctx, src->idx0 + i);
	else if (col == 1)
		sqlite3_result_int64(ctx, c->host_ns[i]);
	else if (col == 2) {
		if (c->ticks)
			sqlite3_result_int64(ctx, (sqlite3_int64)c->ticks[i]);
		else
			sqlite3_result_null(ctx);
	} else {
		uint32_t v = (uint32_t)col - 3;
		if (series_missing(c, v, i))
			sqlite3_result_null(ctx);
		else if (src->types[v] == SERIES_F64)
			sqlite3_result_double(ctx, series_f64(c, v, i)); /* NaN: NULL */
		else {
			uint64_t x = series_u64(c, v, i);
			/* Past INT64_MAX SQLite has no integer: the nearest REAL. */
			if (x <= (uint64_t)INT64_MAX)
				sqlite3_result_int64(ctx, (sqlite3_int64)x);
			else
				sqlite3_result_double(ctx, (double)x);
		}
	}
	return SQLITE_OK;
}

static int chunk_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
	*rowid = ((const struct chunk_cur *)cur)->i;
	return SQLITE_OK;
}

static const sqlite3_module chunk_module = {
	.iVersion = 0,
	.xCreate = NULL, /* eponymous only: no CREATE VIRTUAL TABLE, nothing in the file */
	.xConnect = chunk_connect,
	.xBestIndex = chunk_best_index,
	.xDisconnect = chunk_disconnect,
	.xDestroy = chunk_disconnect,
	.xOpen = chunk_open,
	.xClose = chunk_close,
	.xFilter = chunk_filter,
	.xNext = chunk_next,
	.xEof = chunk_eof,
	.xColumn = chunk_column,
	.xRowid = chunk_rowid,
};

struct writer {
	sqlite3 *db;
	char *path;
	sqlite3_stmt *ins_stream, *ins_metric, *ins_slice;
	struct sqlw_stream *streams;
	size_t nstreams, cap;
	size_t last; /* index of the stream matched last */
	int64_t next_metric;
	bool in_tx;
	bool views_stale; /* a stream was declared since the views were last made */
	bool merged;      /* a node was declared (sqlw_node): node table and columns */
	sqlite3_stmt *ins_node;
	uint64_t tx_rows;
	int64_t tx_start_ns; /* CLOCK_MONOTONIC */
	int error;           /* sticky -errno, 0 while healthy */
	char errmsg[512];
};

static const char schema_sql[] =
	"CREATE TABLE meta(\n"
	"  key TEXT PRIMARY KEY NOT NULL,\n"
	"  value\n"
	");\n"
	"CREATE TABLE stream(\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  source TEXT NOT NULL,\n"
	"  gpu INTEGER NOT NULL,\n"
	"  gpu_id INTEGER NOT NULL,\n"
	"  xcc INTEGER NOT NULL,\n"
	"  device_name TEXT,\n"
	"  tick_domain TEXT,\n"
	"  ncols INTEGER NOT NULL,\n"
	"  sample_table TEXT NOT NULL\n"
	");\n"
	"CREATE TABLE metric(\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  stream_id INTEGER NOT NULL REFERENCES stream(id),\n"
	"  col INTEGER NOT NULL,\n"
	"  name TEXT NOT NULL,\n"
	"  unit TEXT,\n"
	"  type TEXT NOT NULL CHECK (type IN ('u64', 'f64')),\n"
	"  track TEXT NOT NULL,\n"
	"  UNIQUE (stream_id, col)\n"
	");\n"
	"CREATE INDEX metric_by_name ON metric(name, stream_id);\n"
	"CREATE INDEX metric_by_track ON metric(track);\n"
	"CREATE TABLE slice(\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  start_ns INTEGER NOT NULL,\n"
	"  end_ns INTEGER NOT NULL,\n"
	"  name TEXT,\n"
	"  track INTEGER NOT NULL,\n"
	"  category TEXT NOT NULL,\n"
	"  depth INTEGER NOT NULL,\n"
	"  pid INTEGER NOT NULL\n"
	");\n"
	"CREATE INDEX slice_by_time ON slice(start_ns, end_ns);\n"
	"CREATE INDEX slice_by_track ON slice(track, start_ns);\n"
	"CREATE VIEW metric_v AS\n"
	"  SELECT m.id AS metric_id, m.name AS name, m.unit AS unit, m.type AS type,\n"
	"         m.col AS col, s.id AS stream_id, s.source AS source, s.gpu AS gpu,\n"
	"         s.gpu_id AS gpu_id, s.xcc AS xcc, s.device_name AS device_name,\n"
	"         s.tick_domain AS tick_domain, m.track AS track\n"
	"  FROM metric m JOIN stream s ON s.id = m.stream_id;\n"
	"CREATE VIEW slice_v AS\n"
	"  SELECT id, name, category, pid, track, depth, start_ns, end_ns, end_ns - start_ns AS dur_ns,\n"
	"         (end_ns - start_ns) / 1e6 AS dur_ms\n"
	"  FROM slice;\n";

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* errno for a failed sqlite call: the OS's where SQLite reports one, else by code. */
static int sqlite_errno(sqlite3 *db, int rc)
{
	int prim = rc & 0xff;
	if (db && (prim == SQLITE_IOERR || prim == SQLITE_FULL || prim == SQLITE_CANTOPEN)) {
		/*
		 * The errno each file kept from its failed call (the log or
		 * journal first, where appends fail), else the last one SQLite
		 * saw (which later calls may have overwritten).
		 */
		int e = 0;
		sqlite3_file *jf = NULL;
		if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &jf) == SQLITE_OK && jf &&
		    jf->pMethods && jf->pMethods->xFileControl)
			(void)jf->pMethods->xFileControl(jf, SQLITE_FCNTL_LAST_ERRNO, &e);
		if (e <= 0 && sqlite3_file_control(db, "main", SQLITE_FCNTL_LAST_ERRNO, &e) != SQLITE_OK)
			e = 0;
		if (e <= 0)
			e = sqlite3_system_errno(db);
		if (e > 0)
			return e;
	}
	switch (prim) {
	case SQLITE_FULL: return ENOSPC;
	case SQLITE_NOMEM: return ENOMEM;
	case SQLITE_READONLY: return EROFS;
	case SQLITE_PERM:
	case SQLITE_AUTH: return EACCES;
	case SQLITE_CANTOPEN: return ENOENT;
	case SQLITE_BUSY:
	case SQLITE_LOCKED: return EBUSY;
	case SQLITE_TOOBIG: return EFBIG;
	case SQLITE_MISUSE:
	case SQLITE_RANGE:
	case SQLITE_CONSTRAINT: return EINVAL;
	default: return EIO;
	}
}

/* Record the first error (sticky) and copy it to err; returns -errno. */
static int fail_errno(struct writer *w, int e, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int fail_errno(struct writer *w, int e, char *err, size_t errlen, const char *fmt, ...)
{
	if (!w->error) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(w->errmsg, sizeof(w->errmsg), fmt, ap);
		va_end(ap);
		w->error = -e;
		/* Drop the batch in progress: the file keeps what was committed. */
		if (w->in_tx && w->db && !sqlite3_get_autocommit(w->db))
			(void)sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
		w->in_tx = false;
	}
	return spmtap_seterr(err, errlen, -w->error, "%s", w->errmsg);
}

/* A failed sqlite call: "<path>: <strerror> (sqlite: <message>, while <what>)". */
static int fail_sq(struct writer *w, int rc, const char *what, char *err, size_t errlen)
{
	int e = sqlite_errno(w->db, rc);
	const char *msg = w->db ? sqlite3_errmsg(w->db) : sqlite3_errstr(rc);
	char m[256];
	snprintf(m, sizeof(m), "%s", msg ? msg : sqlite3_errstr(rc));
	return fail_errno(w, e, err, errlen, "%s: %s (sqlite: %s, while %s)", w->path,
			  spmtap_strerror(e), m, what);
}

static int exec(struct writer *w, const char *sql, const char *what, char *err, size_t errlen)
{
	int rc = sqlite3_exec(w->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : fail_sq(w, rc, what, err, errlen);
}

/* exec(), where another connection holding the file (SQLITE_BUSY/LOCKED) is no error. */
static int exec_busy_ok(struct writer *w, const char *sql, const char *what, char *err, size_t errlen)
{
	int rc = sqlite3_exec(w->db, sql, NULL, NULL, NULL);
	int prim = rc & 0xff;
	return rc == SQLITE_OK || prim == SQLITE_BUSY || prim == SQLITE_LOCKED
		       ? 0
		       : fail_sq(w, rc, what, err, errlen);
}

static int prepare(struct writer *w, const char *sql, sqlite3_stmt **st, char *err, size_t errlen)
{
	int rc = sqlite3_prepare_v3(w->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
	return rc == SQLITE_OK ? 0 : fail_sq(w, rc, "preparing a statement", err, errlen);
}

/* Step a fully bound insert and reset it. */
static int step_reset(struct writer *w, sqlite3_stmt *st, const char *what, char *err, size_t errlen)
{
	int rc = sqlite3_step(st);
	if (rc != SQLITE_DONE) {
		(void)sqlite3_reset(st);
		return fail_sq(w, rc, what, err, errlen);
	}
	rc = sqlite3_reset(st);
	return rc == SQLITE_OK ? 0 : fail_sq(w, rc, what, err, errlen);
}

static int bind_text(sqlite3_stmt *st, int i, const char *s)
{
	return s ? sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}

static int tx_begin(struct writer *w, char *err, size_t errlen)
{
	if (w->in_tx)
		return 0;
	int rc = exec(w, "BEGIN", "starting a transaction", err, errlen);
	if (rc)
		return rc;
	w->in_tx = true;
	w->tx_rows = 0;
	w->tx_start_ns = mono_ns();
	return 0;
}

static int tx_commit(struct writer *w, char *err, size_t errlen)
{
	if (!w->in_tx)
		return 0;
	int rc = sqlite3_exec(w->db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		/*
		 * A COMMIT that fails on I/O leaves the transaction open (SQLite
		 * keeps it for a retry); fail_errno() rolls it back.  A failed
		 * automatic checkpoint after a good commit reports an error too,
		 * with the transaction already closed: either way nothing more
		 * is written and the committed part stays.
		 */
		return fail_sq(w, rc, "committing", err, errlen);
	}
	w->in_tx = false;
	return 0;
}

/* Commit when the batch is big or old enough, then open the next one. */
static int tx_maybe_commit(struct writer *w, char *err, size_t errlen)
{
	if (w->in_tx && (w->tx_rows >= SQLW_COMMIT_ROWS || mono_ns() - w->tx_start_ns >= SQLW_COMMIT_NS)) {
		int rc = tx_commit(w, err, errlen);
		if (rc)
			return rc;
	}
	return tx_begin(w, err, errlen);
}

static int put_meta(struct writer *w, sqlite3_stmt *st, const char *key, int kind, const char *s,
		    int64_t i, double d, char *err, size_t errlen)
{
	int rc = sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK) {
		if (kind == 's')
			rc = bind_text(st, 2, s);
		else if (kind == 'i')
			rc = sqlite3_bind_int64(st, 2, i);
		else
			rc = sqlite3_bind_double(st, 2, d);
	}
	if (rc != SQLITE_OK)
		return fail_sq(w, rc, "binding metadata", err, errlen);
	return step_reset(w, st, "writing metadata", err, errlen);
}

static int write_meta(struct writer *w, const struct writer_meta *meta, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = prepare(w, "INSERT INTO meta(key, value) VALUES (?1, ?2)", &st, err, errlen);
	if (rc)
		return rc;
	rc = put_meta(w, st, "schema_version", 'i', NULL, SQLW_SCHEMA_VERSION, 0, err, errlen);
	if (!rc)
		rc = put_meta(w, st, "writer", 's', "spmtap sqlite", 0, 0, err, errlen);
	if (!rc)
		rc = put_meta(w, st, "time_base", 's', "CLOCK_BOOTTIME ns", 0, 0, err, errlen);
	if (!rc)
		rc = put_meta(w, st, "sqlite_version", 's', sqlite3_libversion(), 0, 0, err, errlen);
	if (!rc && meta) {
		rc = put_meta(w, st, "spmtap_version", 's', meta->spmtap_version, 0, 0, err, errlen);
		if (!rc)
			rc = put_meta(w, st, "command_line", 's', meta->command_line, 0, 0, err, errlen);
		if (!rc)
			rc = put_meta(w, st, "hostname", 's', meta->hostname, 0, 0, err, errlen);
		if (!rc)
			rc = put_meta(w, st, "start_boottime_ns", 'i', NULL, meta->start_boottime_ns, 0,
				      err, errlen);
		if (!rc)
			rc = put_meta(w, st, "spm_clock_hz", 'd', NULL, 0, meta->spm_clock_hz, err, errlen);
		if (!rc)
			rc = put_meta(w, st, "extra_json", 's', meta->extra_json, 0, 0, err, errlen);
	}
	int frc = sqlite3_finalize(st);
	if (!rc && frc != SQLITE_OK)
		rc = fail_sq(w, frc, "writing metadata", err, errlen);
	return rc;
}

static void free_writer(struct writer *w)
{
	if (!w)
		return;
	/* finalize/close only report errors already reported by the calls before them */
	for (size_t i = 0; i < w->nstreams; i++) {
		sqlite3_finalize(w->streams[i].ins);
		free(w->streams[i].types);
	}
	sqlite3_finalize(w->ins_stream);
	sqlite3_finalize(w->ins_metric);
	sqlite3_finalize(w->ins_slice);
	sqlite3_finalize(w->ins_node);
	if (w->db)
		sqlite3_close_v2(w->db);
	for (size_t i = 0; i < w->nstreams; i++)
		free(w->streams[i].src); /* after the connection: its module points at it */
	free(w->streams);
	free(w->path);
	free(w);
}

static int sqlw_probe(char *reason, size_t len)
{
	/* WITHOUT ROWID needs 3.8.2; sqlite3_prepare_v3 needs 3.20.0. */
	if (sqlite3_libversion_number() < 3020000)
		return spmtap_seterr(reason, len, ENOTSUP,
				     "libsqlite3 %s is too old (spmtap needs 3.20.0 or newer)",
				     sqlite3_libversion());
	if (reason && len)
		reason[0] = 0;
	return 0;
}

/* Remove a previous file and its log/journal: a stale -wal would be replayed into the new file. */
static int remove_old(const char *path, char *err, size_t errlen)
{
	static const char *const sfx[] = { "", "-wal", "-shm", "-journal" };
	char p[4096];
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		if ((size_t)snprintf(p, sizeof(p), "%s%s", path, sfx[i]) >= sizeof(p))
			return spmtap_seterr(err, errlen, ENAMETOOLONG, "%s: %s", path,
					     spmtap_strerror(ENAMETOOLONG));
		struct stat sb;
		if (lstat(p, &sb)) {
			if (errno == ENOENT)
				continue;
			return spmtap_seterr(err, errlen, errno, "%s: %s", p, spmtap_strerror(errno));
		}
		if (!S_ISREG(sb.st_mode))
			return spmtap_seterr(err, errlen, EINVAL, "%s: exists and is not a regular file", p);
		if (unlink(p))
			return spmtap_seterr(err, errlen, errno, "%s: cannot replace: %s", p,
					     spmtap_strerror(errno));
	}
	return 0;
}

/* A growing SQL text; on failure it stays NULL-safe and says so with oom. */
struct sqlbuf {
	char *s;
	size_t len, cap;
	bool oom;
};

static void sb_add(struct sqlbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(struct sqlbuf *b, const char *fmt, ...)
{
	if (b->oom)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if (b->s && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t ncap = b->cap ? b->cap : 4096;
		while (ncap <= b->len + (size_t)n)
			ncap *= 2;
		char *p = realloc(b->s, ncap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->s = p;
		b->cap = ncap;
	}
}

/*
 * One view with an arm per metric (arm() writes the SELECT of stream ss's
 * column c).  SQLite allows 500 arms in one compound SELECT
 * (SQLITE_MAX_COMPOUND_SELECT), in the writer and in every reader: past
 * SQLW_VIEW_GROUP metrics the arms go in groups, each a subquery in FROM,
 * into which SQLite pushes the filters just the same.
 */
#define SQLW_VIEW_GROUP 256u
static void sb_view(struct sqlbuf *b, const struct writer *w, const char *name, const char *empty,
		    void (*arm)(struct sqlbuf *, const struct sqlw_stream *, uint32_t))
{
	size_t n = 0;
	for (size_t i = 0; i < w->nstreams; i++)
		n += w->streams[i].ncols;
	sb_add(b, "CREATE VIEW %s AS\n", name);
	if (!n) {
		sb_add(b, "  %s;\n", empty);
		return;
	}
	bool grouped = n > SQLW_VIEW_GROUP;
	size_t k = 0;
	for (size_t i = 0; i < w->nstreams; i++)
		for (uint32_t c = 0; c < w->streams[i].ncols; c++, k++) {
			if (grouped && k % SQLW_VIEW_GROUP == 0)
				sb_add(b, "%sSELECT * FROM (\n", k ? ")\nUNION ALL\n" : "");
			else if (k)
				sb_add(b, "  UNION ALL\n");
			arm(b, &w->streams[i], c);
		}
	sb_add(b, "%s;\n", grouped ? ")" : "");
}

/* `sample`: the metric's id is a constant, so `metric_id = ?` skips every other arm before reading a row. */
static void arm_sample(struct sqlbuf *b, const struct sqlw_stream *ss, uint32_t c)
{
	sb_add(b, "  SELECT %" PRId64 " AS metric_id, x.host_ns AS host_ns, x.idx AS idx, x.ticks AS ticks, x.v%u AS value\n"
		  "  FROM samples_%u x\n",
	       ss->metric0 + c, c, ss->id);
}

/* `sample_v`: the metric's row first (one seek, where a filter on its names applies), then the samples. */
static void arm_sample_v(struct sqlbuf *b, const struct sqlw_stream *ss, uint32_t c)
{
	sb_add(b, "  SELECT x.host_ns AS host_ns, x.ticks AS ticks, x.v%u AS value, x.idx AS idx,\n"
		  "    m.metric_id AS metric_id, m.name AS name, m.unit AS unit, m.type AS type,\n"
		  "    m.stream_id AS stream_id, m.source AS source, m.gpu AS gpu, m.gpu_id AS gpu_id, m.xcc AS xcc,\n"
		  "    m.device_name AS device_name, m.track AS track%s\n"
		  "  FROM metric_v m CROSS JOIN samples_%u x WHERE m.metric_id = %" PRId64 "\n",
	       c, ss->merged ? ", m.node AS node" : "", ss->id, ss->metric0 + c);
}

/*
 * The views `sample` (one row per metric and sample, the columns of schema
 * version 1's table) and `sample_v` (with the names), over every stream's
 * table: a UNION ALL with one arm per metric.  Arms, not a join of `sample`
 * with `metric_v`, so that a filter on track, name or metric_id is pushed
 * into every arm (SQLite cannot push a join term into a compound view): the
 * arms of other metrics read no row, and the one that matches seeks its
 * table's key.  Rebuilt after streams are declared.
 */
static int make_views(struct writer *w, char *err, size_t errlen)
{
	struct sqlbuf b = { 0 };
	sb_add(&b, "DROP VIEW IF EXISTS sample; DROP VIEW IF EXISTS sample_v;\n");
	sb_view(&b, w, "sample",
		"SELECT 0 AS metric_id, 0 AS host_ns, 0 AS idx, NULL AS ticks, NULL AS value WHERE 0", arm_sample);
	sb_view(&b, w, "sample_v",
		w->merged ? "SELECT 0 AS host_ns, NULL AS ticks, NULL AS value, 0 AS idx, 0 AS metric_id, NULL AS name, "
			    "NULL AS unit, NULL AS type, 0 AS stream_id, NULL AS source, 0 AS gpu, 0 AS gpu_id, 0 AS xcc, "
			    "NULL AS device_name, NULL AS track, 0 AS node WHERE 0"
			  : "SELECT 0 AS host_ns, NULL AS ticks, NULL AS value, 0 AS idx, 0 AS metric_id, NULL AS name, "
			    "NULL AS unit, NULL AS type, 0 AS stream_id, NULL AS source, 0 AS gpu, 0 AS gpu_id, 0 AS xcc, "
			    "NULL AS device_name, NULL AS track WHERE 0",
		arm_sample_v);
	int rc = b.oom ? fail_errno(w, ENOMEM, err, errlen, "%s: out of memory", w->path)
		       : exec(w, b.s, "creating the views", err, errlen);
	free(b.s);
	return rc;
}

static int sqlw_open(struct writer **out, const char *final, const struct writer_meta *meta, char *err,
		     size_t errlen)
{
	*out = NULL;
	if (!final || !*final)
		return spmtap_seterr(err, errlen, EINVAL, "sqlite: no output file name");
	if (!strcmp(final, "-"))
		return spmtap_seterr(err, errlen, EINVAL,
				     "sqlite output needs a file name, not standard output");
	int rc = sqlw_probe(err, errlen);
	if (rc)
		return rc;
	/* FINAL.part while recording (outset.h): the session renames it at the end. */
	char *path = out_set_part(meta ? meta->files : NULL, final);
	if (!path)
		return spmtap_seterr(err, errlen, ENOMEM, "%s: out of memory", final);
	rc = remove_old(path, err, errlen);
	if (rc) {
		free(path);
		return rc;
	}
	struct writer *w = calloc(1, sizeof(*w));
	if (!w) {
		free(path);
		return spmtap_seterr(err, errlen, ENOMEM, "%s: out of memory", final);
	}
	w->path = path;
	w->next_metric = 1;
	int src = sqlite3_open_v2(path, &w->db,
				  SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
					  SQLITE_OPEN_EXRESCODE,
				  NULL);
	if (src != SQLITE_OK) {
		rc = fail_sq(w, src, "opening", err, errlen);
		free_writer(w);
		return rc;
	}
	char pragmas[512];
	snprintf(pragmas, sizeof(pragmas),
		 "PRAGMA page_size=%d;"
		 "PRAGMA application_id=%d;"
		 "PRAGMA user_version=%d;"
		 "PRAGMA cache_size=-%d;"
		 "PRAGMA temp_store=MEMORY;"
		 "PRAGMA foreign_keys=OFF;",
		 SQLW_PAGE_SIZE, SQLW_APPLICATION_ID, SQLW_SCHEMA_VERSION, SQLW_CACHE_KIB);
	rc = exec(w, pragmas, "setting up", err, errlen);
	/* journal_mode answers with a row: the mode it got, which must be the one asked for. */
	if (!rc) {
		sqlite3_stmt *st = NULL;
		int prc = sqlite3_prepare_v2(w->db, "PRAGMA journal_mode=" SQLW_JOURNAL, -1, &st, NULL);
		if (prc == SQLITE_OK)
			prc = sqlite3_step(st);
		if (prc == SQLITE_ROW) {
			const char *got = (const char *)sqlite3_column_text(st, 0);
			if (!got || strcasecmp(got, SQLW_JOURNAL)) {
				sqlite3_finalize(st);
				st = NULL;
				rc = fail_errno(w, ENOTSUP, err, errlen,
						"%s: cannot use journal_mode=%s (got %s)", path,
						SQLW_JOURNAL, got ? got : "nothing");
			}
			prc = SQLITE_OK;
		}
		if (!rc && prc != SQLITE_OK && prc != SQLITE_DONE)
			rc = fail_sq(w, prc, "setting journal_mode", err, errlen);
		sqlite3_finalize(st);
	}
	if (!rc)
		rc = exec(w, "PRAGMA synchronous=" SQLW_SYNC, "setting synchronous", err, errlen);
	if (!rc)
		rc = exec(w, "BEGIN", "starting a transaction", err, errlen);
	if (!rc) {
		w->in_tx = true;
		rc = exec(w, schema_sql, "creating the schema", err, errlen);
		if (!rc)
			rc = exec(w, sqlk_schema_sql, "creating the kernel dispatch table", err, errlen);
	}
	if (!rc)
		rc = make_views(w, err, errlen);
	if (!rc)
		rc = write_meta(w, meta, err, errlen);
	/* The schema and metadata are committed at once: a file cut short still says what it is. */
	if (!rc)
		rc = tx_commit(w, err, errlen);
	if (!rc)
		rc = prepare(w,
			     "INSERT INTO stream(id, source, gpu, gpu_id, xcc, device_name, "
			     "tick_domain, ncols, sample_table) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
			     &w->ins_stream, err, errlen);
	if (!rc)
		rc = prepare(w,
			     "INSERT INTO metric(id, stream_id, col, name, unit, type, track) "
			     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
			     &w->ins_metric, err, errlen);
	if (!rc)
		rc = prepare(w,
			     "INSERT INTO slice(start_ns, end_ns, name, track, category, depth, pid) "
			     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
			     &w->ins_slice, err, errlen);
	if (!rc)
		rc = tx_begin(w, err, errlen);
	if (rc) {
		free_writer(w);
		return rc;
	}
	*out = w;
	return 0;
}

/* The views over every stream declared so far, in the open transaction. */
static int sync_views(struct writer *w, char *err, size_t errlen)
{
	if (!w->views_stale)
		return 0;
	int rc = make_views(w, err, errlen);
	if (!rc)
		w->views_stale = false;
	return rc;
}

/*
 * The stream's own table, one row per sample with all its counters, keyed
 * by time: (host_ns, idx) grows with every sample of a stream, so each
 * insert appends at the right edge of the B-tree, and the cost per row stays
 * the same however long the recording.  The key is the time index (a time
 * range is one seek), there from the first row, also in a file cut short;
 * idx keeps two samples with the same host_ns apart.
 */
static int make_stream_table(struct writer *w, struct sqlw_stream *ss, const struct series_stream *s, char *err,
			     size_t errlen)
{
	struct sqlbuf b = { 0 };
	/* value columns have no declared type: no affinity, so 412.0 stays REAL and 7 INTEGER */
	sb_add(&b, "CREATE TABLE samples_%u(\n  idx INTEGER NOT NULL,\n  host_ns INTEGER NOT NULL,\n  ticks INTEGER",
	       ss->id);
	for (uint32_t c = 0; c < ss->ncols; c++)
		sb_add(&b, ",\n  v%u", c);
	sb_add(&b, ",\n  PRIMARY KEY (host_ns, idx)\n) WITHOUT ROWID");
	int rc = b.oom ? fail_errno(w, ENOMEM, err, errlen, "%s: out of memory", w->path)
		       : exec(w, b.s, "creating a stream's table", err, errlen);
	free(b.s);
	if (rc)
		return rc;
	ss->src = calloc(1, sizeof(*ss->src));
	if (!ss->src)
		return fail_errno(w, ENOMEM, err, errlen, "%s: out of memory", w->path);
	ss->src->ncols = ss->ncols;
	ss->src->types = ss->types;
	char name[48], sql[160];
	snprintf(name, sizeof(name), "spmtap_chunk_%u", ss->id);
	int mrc = sqlite3_create_module_v2(w->db, name, &chunk_module, ss->src, NULL);
	if (mrc != SQLITE_OK)
		return fail_sq(w, mrc, "registering the chunk table", err, errlen);
	snprintf(sql, sizeof(sql), "INSERT INTO samples_%u SELECT * FROM %s", ss->id, name);
	rc = prepare(w, sql, &ss->ins, err, errlen);
	if (rc)
		return rc;
	/* Its samples beside the dispatches on its GPU (sqlite_kernels.h): kernel_samples_<id>. */
	char *view = sqlk_stream_view_sql(ss->id, s->gpu, w->merged ? (int64_t)s->node : -1, s->ncols, s->cols);
	rc = view ? exec(w, view, "creating a stream's kernel view", err, errlen)
		  : fail_errno(w, ENOMEM, err, errlen, "%s: out of memory", w->path);
	free(view);
	return rc;
}

static struct sqlw_stream *find_stream(struct writer *w, const struct series_stream *s)
{
	if (w->last < w->nstreams && w->streams[w->last].ptr == s)
		return &w->streams[w->last];
	for (size_t i = 0; i < w->nstreams; i++)
		if (w->streams[i].ptr == s || w->streams[i].id == s->id) {
			w->last = i;
			return &w->streams[i];
		}
	return NULL;
}

static int sqlw_begin(struct writer *w, const struct series_stream *s, char *err, size_t errlen)
{
	if (w->error)
		return spmtap_seterr(err, errlen, -w->error, "%s", w->errmsg);
	if (!s || (s->ncols && !s->cols))
		return spmtap_seterr(err, errlen, EINVAL, "%s: begin without a stream", w->path);
	for (size_t i = 0; i < w->nstreams; i++)
		if (w->streams[i].id == s->id)
			return spmtap_seterr(err, errlen, EEXIST, "%s: stream %u declared twice", w->path,
					     s->id);
	/* A table has at most SQLITE_MAX_COLUMN (2000 by default) columns: idx, host_ns, ticks and ours. */
	if (s->ncols > SQLW_MAX_COLS)
		return spmtap_seterr(err, errlen, E2BIG,
				     "%s: stream %u has %u columns, more than the %u a SQLite table can hold",
				     w->path, s->id, s->ncols, SQLW_MAX_COLS);
	for (uint32_t c = 0; c < s->ncols; c++)
		if (s->cols[c].type != SERIES_U64 && s->cols[c].type != SERIES_F64)
			return spmtap_seterr(err, errlen, EINVAL, "%s: stream %u column %u: unknown type %d",
					     w->path, s->id, c, (int)s->cols[c].type);
	if (w->nstreams == w->cap) {
		size_t ncap = w->cap ? 2 * w->cap : 8;
		struct sqlw_stream *n = realloc(w->streams, ncap * sizeof(*n));
		if (!n)
			return fail_errno(w, ENOMEM, err, errlen, "%s: out of memory", w->path);
		w->streams = n;
		w->cap = ncap;
	}
	struct sqlw_stream *ss = &w->streams[w->nstreams];
	memset(ss, 0, sizeof(*ss));
	ss->types = calloc(s->ncols ? s->ncols : 1, sizeof(*ss->types));
	if (!ss->types)
		return fail_errno(w, ENOMEM, err, errlen, "%s: out of memory", w->path);
	ss->ptr = s;
	ss->id = s->id;
	ss->ncols = s->ncols;
	ss->metric0 = w->next_metric;
	for (uint32_t c = 0; c < s->ncols; c++)
		ss->types[c] = s->cols[c].type;
	w->nstreams++; /* owned from here on (free_writer frees types) */

	int rc = tx_begin(w, err, errlen);
	if (rc)
		return rc;
	sqlite3_stmt *st = w->ins_stream;
	int b = sqlite3_bind_int64(st, 1, s->id);
	if (b == SQLITE_OK)
		b = bind_text(st, 2, s->source ? s->source : "");
	if (b == SQLITE_OK)
		b = sqlite3_bind_int64(st, 3, s->gpu);
	if (b == SQLITE_OK)
		b = sqlite3_bind_int64(st, 4, s->gpu_id);
	if (b == SQLITE_OK)
		b = sqlite3_bind_int64(st, 5, s->xcc);
	if (b == SQLITE_OK)
		b = bind_text(st, 6, s->device_name);
	if (b == SQLITE_OK)
		b = bind_text(st, 7, s->tick_domain);
	if (b == SQLITE_OK)
		b = sqlite3_bind_int64(st, 8, s->ncols);
	char table[32];
	snprintf(table, sizeof(table), "samples_%u", s->id);
	if (b == SQLITE_OK)
		b = sqlite3_bind_text(st, 9, table, -1, SQLITE_TRANSIENT);
	if (b == SQLITE_OK && w->merged)
		b = sqlite3_bind_int64(st, 10, s->node);
	if (b != SQLITE_OK)
		return fail_sq(w, b, "binding a stream", err, errlen);
	ss->merged = w->merged;
	rc = step_reset(w, st, "writing a stream", err, errlen);
	for (uint32_t c = 0; !rc && c < s->ncols; c++) {
		const struct series_column *col = &s->cols[c];
		st = w->ins_metric;
		b = sqlite3_bind_int64(st, 1, ss->metric0 + c);
		if (b == SQLITE_OK)
			b = sqlite3_bind_int64(st, 2, s->id);
		if (b == SQLITE_OK)
			b = sqlite3_bind_int64(st, 3, c);
		if (b == SQLITE_OK)
			b = bind_text(st, 4, col->name ? col->name : "");
		if (b == SQLITE_OK)
			b = bind_text(st, 5, col->unit);
		if (b == SQLITE_OK)
			b = bind_text(st, 6, col->type == SERIES_U64 ? "u64" : "f64");
		if (b == SQLITE_OK) {
			/* "gpu0.xcc1.SQ_WAVES", "gpu0.power_avg": the name other writers give the series */
			char track[256], nd[24] = "";
			/* a merged job recording: "node3.gpu0.power_avg", one track per node */
			if (w->merged)
				snprintf(nd, sizeof(nd), "node%u.", s->node);
			/* a node-level stream (Cray PM, source "cray_pm"): "node3.pm.power", no GPU */
			if (s->source && !strcmp(s->source, "cray_pm"))
				snprintf(track, sizeof(track), "%s%s", nd, col->name ? col->name : "");
			else if (s->xcc >= 0)
				snprintf(track, sizeof(track), "%sgpu%u.xcc%d.%s", nd, s->gpu, s->xcc,
					 col->name ? col->name : "");
			else
				snprintf(track, sizeof(track), "%sgpu%u.%s", nd, s->gpu, col->name ? col->name : "");
			b = sqlite3_bind_text(st, 7, track, -1, SQLITE_TRANSIENT);
		}
		if (b != SQLITE_OK)
			return fail_sq(w, b, "binding a metric", err, errlen);
		rc = step_reset(w, st, "writing a metric", err, errlen);
	}
	if (!rc)
		rc = make_stream_table(w, ss, s, err, errlen);
	if (rc)
		return rc;
	/* the views follow with the next write or flush: streams come together, views are made once */
	w->views_stale = true;
	w->next_metric += s->ncols;
	/* Streams are few: commit their description at once, readers see it while recording. */
	rc = tx_commit(w, err, errlen);
	return rc ? rc : tx_begin(w, err, errlen);
}

static int sqlw_write(struct writer *w, const struct series_chunk *c, char *err, size_t errlen)
{
	if (w->error)
		return spmtap_seterr(err, errlen, -w->error, "%s", w->errmsg);
	if (!c || !c->stream)
		return spmtap_seterr(err, errlen, EINVAL, "%s: chunk without a stream", w->path);
	struct sqlw_stream *ss = find_stream(w, c->stream);
	if (!ss)
		return spmtap_seterr(err, errlen, EINVAL, "%s: chunk of stream %u, which was never begun",
				     w->path, c->stream->id);
	if (!c->n)
		return 0;
	if (!c->host_ns || (ss->ncols && !c->values))
		return spmtap_seterr(err, errlen, EINVAL, "%s: stream %u: chunk without data", w->path,
				     ss->id);
	for (uint32_t col = 0; col < ss->ncols; col++)
		if (!c->values[col])
			return spmtap_seterr(err, errlen, EINVAL, "%s: stream %u: column %u has no values",
					     w->path, ss->id, col);
	int rc = tx_maybe_commit(w, err, errlen);
	if (!rc)
		rc = sync_views(w, err, errlen);
	if (rc)
		return rc;
	/* One statement step for the whole chunk, read through its virtual table. */
	ss->src->c = c;
	ss->src->idx0 = ss->next_idx;
	int st = sqlite3_step(ss->ins);
	ss->src->c = NULL;
	if (st != SQLITE_DONE) {
		(void)sqlite3_reset(ss->ins);
		return fail_sq(w, st, "writing samples", err, errlen);
	}
	st = sqlite3_reset(ss->ins);
	if (st != SQLITE_OK)
		return fail_sq(w, st, "writing samples", err, errlen);
	ss->next_idx += c->n;
	w->tx_rows += (uint64_t)c->n * (ss->ncols ? ss->ncols : 1);
	return 0;
}

static int sqlw_slice(struct writer *w, const struct series_slice *s, char *err, size_t errlen)
{
	if (w->error)
		return spmtap_seterr(err, errlen, -w->error, "%s", w->errmsg);
	if (!s)
		return spmtap_seterr(err, errlen, EINVAL, "%s: no slice", w->path);
	/* Kernel dispatches are not phases: they come whole at the end, into kernel_dispatch (sqlw_dispatches). */
	if (s->category && !strcmp(s->category, "kernel"))
		return 0;
	int rc = tx_maybe_commit(w, err, errlen);
	if (rc)
		return rc;
	sqlite3_stmt *st = w->ins_slice;
	int b = sqlite3_bind_int64(st, 1, s->start_ns);
	if (b == SQLITE_OK)
		b = sqlite3_bind_int64(st, 2, s->end_ns);
	if (b == SQLITE_OK)
		b = bind_text(st, 3, s->name);
	if (b == SQLITE_OK)
		b = sqlite3_bind_int64(st, 4, s->track);
	if (b == SQLITE_OK)
		b = bind_text(st, 5, s->category ? s->category : "phase");
	if (b == SQLITE_OK)
		b = sqlite3_bind_int64(st, 6, s->depth);
	if (b == SQLITE_OK)
		b = sqlite3_bind_int64(st, 7, s->pid);
	if (b == SQLITE_OK && w->merged)
		b = sqlite3_bind_int64(st, 8, s->node);
	if (b != SQLITE_OK)
		return fail_sq(w, b, "binding a slice", err, errlen);
	rc = step_reset(w, st, "writing a slice", err, errlen);
	if (!rc)
		w->tx_rows++;
	return rc;
}

/*
 * A merged job recording (docs/formats/sqlite.md "Merged job recordings"):
 * the first node turns the file into one, before any stream is declared:
 * the node table, a node column in stream and slice, views that carry it,
 * and track names that start with the node ("node3.gpu0.power_avg").
 */
static const char merged_sql[] =
	"CREATE TABLE node(\n"
	"  node INTEGER PRIMARY KEY,\n"
	"  hostname TEXT,\n"
	"  rank INTEGER,\n"
	"  recording TEXT,\n"
	"  clock_method TEXT,\n"
	"  max_bound_ns INTEGER\n"
	");\n"
	"ALTER TABLE stream ADD COLUMN node INTEGER NOT NULL DEFAULT 0;\n"
	"ALTER TABLE slice ADD COLUMN node INTEGER NOT NULL DEFAULT 0;\n"
	"CREATE INDEX slice_by_node ON slice(node, start_ns);\n"
	"DROP VIEW metric_v;\n"
	"CREATE VIEW metric_v AS\n"
	"  SELECT m.id AS metric_id, m.name AS name, m.unit AS unit, m.type AS type,\n"
	"         m.col AS col, s.id AS stream_id, s.source AS source, s.gpu AS gpu,\n"
	"         s.gpu_id AS gpu_id, s.xcc AS xcc, s.device_name AS device_name,\n"
	"         s.tick_domain AS tick_domain, m.track AS track, s.node AS node\n"
	"  FROM metric m JOIN stream s ON s.id = m.stream_id;\n"
	"DROP VIEW slice_v;\n"
	"CREATE VIEW slice_v AS\n"
	"  SELECT id, name, category, pid, track, depth, start_ns, end_ns, end_ns - start_ns AS dur_ns,\n"
	"         (end_ns - start_ns) / 1e6 AS dur_ms, node\n"
	"  FROM slice;\n";

static int sqlw_node(struct writer *w, const struct series_node *n, char *err, size_t errlen)
{
	if (w->error)
		return spmtap_seterr(err, errlen, -w->error, "%s", w->errmsg);
	if (!n)
		return spmtap_seterr(err, errlen, EINVAL, "%s: no node", w->path);
	int rc = 0;
	if (!w->merged) {
		if (w->nstreams)
			return spmtap_seterr(err, errlen, EINVAL, "%s: a node declared after streams", w->path);
		rc = exec(w, merged_sql, "making a merged file", err, errlen);
		if (!rc)
			rc = exec(w, sqlk_merged_sql, "making a merged file's kernel dispatch table", err, errlen);
		sqlite3_finalize(w->ins_stream);
		sqlite3_finalize(w->ins_slice);
		w->ins_stream = w->ins_slice = NULL;
		if (!rc)
			rc = prepare(w,
				     "INSERT INTO stream(id, source, gpu, gpu_id, xcc, device_name, "
				     "tick_domain, ncols, sample_table, node) "
				     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
				     &w->ins_stream, err, errlen);
		if (!rc)
			rc = prepare(w,
				     "INSERT INTO slice(start_ns, end_ns, name, track, category, depth, pid, node) "
				     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
				     &w->ins_slice, err, errlen);
		if (!rc)
			rc = prepare(w,
				     "INSERT INTO node(node, hostname, rank, recording, clock_method, max_bound_ns) "
				     "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
				     &w->ins_node, err, errlen);
		if (rc)
			return rc;
		w->merged = true;
		w->views_stale = true;
	}
	sqlite3_stmt *st = w->ins_node;
	int b = sqlite3_bind_int64(st, 1, n->node);
	if (b == SQLITE_OK)
		b = bind_text(st, 2, n->hostname);
	if (b == SQLITE_OK)
		b = n->rank >= 0 ? sqlite3_bind_int64(st, 3, n->rank) : sqlite3_bind_null(st, 3);
	if (b == SQLITE_OK)
		b = bind_text(st, 4, n->recording);
	if (b == SQLITE_OK)
		b = bind_text(st, 5, n->clock_method);
	if (b == SQLITE_OK)
		b = n->max_bound_ns >= 0 ? sqlite3_bind_int64(st, 6, n->max_bound_ns) : sqlite3_bind_null(st, 6);
	if (b != SQLITE_OK)
		return fail_sq(w, b, "binding a node", err, errlen);
	return step_reset(w, st, "writing a node", err, errlen);
}

/* Every dispatch of the recording, once, at the end (writer.h), in the open transaction. */
static int sqlw_dispatches(struct writer *w, const struct series_dispatch *d, size_t n, char *err, size_t errlen)
{
	if (w->error)
		return spmtap_seterr(err, errlen, -w->error, "%s", w->errmsg);
	int rc = tx_begin(w, err, errlen);
	if (rc)
		return rc;
	int src = sqlk_insert(w->db, d, n, w->merged);
	if (src != SQLITE_OK)
		return fail_sq(w, src, "writing kernel dispatches", err, errlen);
	w->tx_rows += n;
	return 0;
}

/* Metadata known at the end: one more row of meta, in the open transaction. */
static int sqlw_note(struct writer *w, const char *key, const char *json, char *err, size_t errlen)
{
	if (w->error)
		return spmtap_seterr(err, errlen, -w->error, "%s", w->errmsg);
	sqlite3_stmt *st;
	int rc = prepare(w, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)", &st, err, errlen);
	if (rc)
		return rc;
	rc = put_meta(w, st, key, 's', json, 0, 0, err, errlen);
	sqlite3_finalize(st);
	return rc;
}

/* Commit what was written: the rows so far are in the file whatever happens next. */
static int sqlw_flush(struct writer *w, char *err, size_t errlen)
{
	if (w->error)
		return spmtap_seterr(err, errlen, -w->error, "%s", w->errmsg);
	int rc = sync_views(w, err, errlen);
	if (!rc)
		rc = tx_commit(w, err, errlen);
	return rc ? rc : tx_begin(w, err, errlen);
}

/*
 * The recording's whole metadata under "recording_meta" (the NAME_meta.json
 * object), committed at once: the .db alone is a complete recording, and
 * after a crash its metadata describes the rows committed with it.
 */
static int sqlw_meta(struct writer *w, const char *json, char *err, size_t errlen)
{
	int rc = sqlw_note(w, "recording_meta", json, err, errlen);
	return rc ? rc : sqlw_flush(w, err, errlen);
}

static int sqlw_end(struct writer *w, char *err, size_t errlen)
{
	if (!w)
		return 0;
	int rc = 0;
	if (w->error) {
		rc = spmtap_seterr(err, errlen, -w->error, "%s", w->errmsg);
	} else {
		rc = sync_views(w, err, errlen);
		if (!rc)
			rc = tx_commit(w, err, errlen);
		/*
		 * Fold the log into the database: one self-contained file.  A
		 * reader still open (sqlite3 on the live file) can keep that
		 * from happening; the file is complete all the same, with its
		 * -wal beside it until the last reader closes.
		 */
		if (!rc && strcasecmp(SQLW_JOURNAL, "DELETE")) {
			int brc = sqlite3_busy_timeout(w->db, 500);
			if (brc != SQLITE_OK)
				rc = fail_sq(w, brc, "setting a busy timeout", err, errlen);
			if (!rc)
				rc = exec_busy_ok(w, "PRAGMA wal_checkpoint(TRUNCATE)", "checkpointing", err,
						  errlen);
			if (!rc)
				rc = exec_busy_ok(w, "PRAGMA journal_mode=DELETE", "leaving WAL mode", err,
						  errlen);
		}
	}
	for (size_t i = 0; i < w->nstreams; i++) {
		sqlite3_finalize(w->streams[i].ins);
		w->streams[i].ins = NULL;
	}
	sqlite3_finalize(w->ins_stream);
	sqlite3_finalize(w->ins_metric);
	sqlite3_finalize(w->ins_slice);
	sqlite3_finalize(w->ins_node);
	w->ins_stream = w->ins_metric = w->ins_slice = w->ins_node = NULL;
	int crc = sqlite3_close(w->db);
	if (crc == SQLITE_OK)
		w->db = NULL;
	else if (!rc)
		rc = fail_sq(w, crc, "closing", err, errlen);
	free_writer(w);
	return rc;
}

const struct writer_ops writer_sqlite = {
	.name = "sqlite",
	.ext = ".db",
	.probe = sqlw_probe,
	.open = sqlw_open,
	.begin = sqlw_begin,
	.write = sqlw_write,
	.slice = sqlw_slice,
	.dispatches = sqlw_dispatches,
	.end = sqlw_end,
	.note = sqlw_note,
	.flush = sqlw_flush,
	.meta = sqlw_meta,
	.node = sqlw_node,
};
