/* SPDX-License-Identifier: MIT */
/*
 * Kernel dispatches in the SQLite output (sqlite_kernels.h,
 * docs/formats/sqlite.md "kernel_dispatch").
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "collector/lib/sqlite_kernels.h"

const char sqlk_schema_sql[] =
	"CREATE TABLE kernel_dispatch(\n"
	"  corr_id INTEGER NOT NULL,\n"
	"  pid INTEGER NOT NULL,\n"
	"  tid INTEGER NOT NULL,\n"
	"  queue_id INTEGER NOT NULL,\n"
	"  packet_index INTEGER NOT NULL,\n"
	"  kernel TEXT NOT NULL,\n"
	"  grid_x INTEGER NOT NULL, grid_y INTEGER NOT NULL, grid_z INTEGER NOT NULL,\n"
	"  wg_x INTEGER NOT NULL, wg_y INTEGER NOT NULL, wg_z INTEGER NOT NULL,\n"
	"  start_ns INTEGER,\n"
	"  end_ns INTEGER,\n"
	"  start_ticks INTEGER NOT NULL,\n"
	"  end_ticks INTEGER NOT NULL,\n"
	"  status INTEGER NOT NULL,\n"
	"  gpu INTEGER\n"
	");\n"
	"CREATE INDEX kernel_dispatch_by_time ON kernel_dispatch(start_ns, end_ns);\n"
	"CREATE INDEX kernel_dispatch_by_kernel ON kernel_dispatch(kernel, start_ns);\n"
	"CREATE VIEW kernel_dispatch_v AS\n"
	"  SELECT *, end_ns - start_ns AS dur_ns FROM kernel_dispatch;\n";

/* After sqlk_schema_sql, in a merged file: the view is made again so that it shows the column too. */
const char sqlk_merged_sql[] =
	"ALTER TABLE kernel_dispatch ADD COLUMN node INTEGER NOT NULL DEFAULT 0;\n"
	"CREATE INDEX kernel_dispatch_by_node ON kernel_dispatch(node, gpu, start_ns);\n"
	"DROP VIEW kernel_dispatch_v;\n"
	"CREATE VIEW kernel_dispatch_v AS\n"
	"  SELECT *, end_ns - start_ns AS dur_ns FROM kernel_dispatch;\n";

/* The dispatch columns every kernel_samples_<id> view has: a counter of that name gets v<col> instead. */
static const char *const fixed[] = { "corr_id", "kernel", "gpu", "queue_id", "pid", "tid", "status",
				     "start_ns", "end_ns", "host_ns", "idx", "ticks", NULL };

struct buf {
	char *s;
	size_t n, cap;
	bool oom;
};

static void add(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct buf *b, const char *fmt, ...)
{
	if (b->oom)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
		va_end(ap);
		if (k < 0) {
			b->oom = true;
			return;
		}
		if (b->s && b->n + (size_t)k < b->cap) {
			b->n += (size_t)k;
			return;
		}
		size_t ncap = (b->cap + (size_t)k + 1) * 2;
		char *p = realloc(b->s, ncap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->s = p, b->cap = ncap;
	}
}

/* A column name SQLite takes as it is inside double quotes: printable ASCII; a quote is doubled. */
static bool usable(const char *name, bool merged)
{
	if (merged && name && !strcasecmp(name, "node"))
		return false;
	if (!name || !*name || strlen(name) > 200)
		return false;
	for (const char *p = name; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			return false;
	for (int i = 0; fixed[i]; i++)
		if (!strcasecmp(name, fixed[i]))
			return false;
	return true;
}

/*
 * CROSS JOIN keeps the dispatches outside (SQLite does not reorder it): one
 * seek of the stream's table per dispatch by its key (host_ns, idx).  Left
 * to itself the planner scanned every sample and looked the dispatches up
 * through an automatic index on gpu: about 10^4 times slower on 10^4
 * dispatches.
 */
char *sqlk_stream_view_sql(uint32_t id, uint32_t gpu, int64_t node, uint32_t ncols,
			   const struct series_column *cols)
{
	struct buf b = { 0 };
	add(&b,
	    "CREATE VIEW kernel_samples_%u AS\n"
	    "  SELECT d.corr_id AS corr_id, d.kernel AS kernel, d.gpu AS gpu, d.queue_id AS queue_id, d.pid AS pid,\n"
	    "         d.tid AS tid, d.status AS status, d.start_ns AS start_ns, d.end_ns AS end_ns,\n"
	    "         x.host_ns AS host_ns, x.idx AS idx, x.ticks AS ticks%s",
	    id, node >= 0 ? ", d.node AS node" : "");
	for (uint32_t c = 0; c < ncols; c++) {
		const char *n = cols[c].name;
		bool ok = usable(n, node >= 0);
		/* a name used twice in the stream (or differing only in case) keeps v<col> for the second */
		for (uint32_t k = 0; ok && k < c; k++)
			ok = !cols[k].name || strcasecmp(cols[k].name, n);
		if (!ok) {
			add(&b, ", x.v%u AS v%u", c, c);
			continue;
		}
		add(&b, ", x.v%u AS \"", c);
		for (const char *p = n; *p; p++)
			add(&b, "%s%c", *p == '"' ? "\"" : "", *p);
		add(&b, "\"");
	}
	add(&b,
	    "\n  FROM kernel_dispatch d CROSS JOIN samples_%u x\n"
	    "    ON x.host_ns >= d.start_ns AND x.host_ns < d.end_ns\n"
	    "  WHERE d.gpu = %u",
	    id, gpu);
	/* merged: the same node's dispatches only (every node has a GPU 0) */
	if (node >= 0)
		add(&b, " AND d.node = %lld", (long long)node);
	add(&b, ";\n");
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

int sqlk_insert(sqlite3 *db, const struct series_dispatch *d, size_t n, bool merged)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db,
				    merged ? "INSERT INTO kernel_dispatch(corr_id, pid, tid, queue_id, packet_index, kernel, "
					     "grid_x, grid_y, grid_z, wg_x, wg_y, wg_z, start_ns, end_ns, start_ticks, "
					     "end_ticks, status, gpu, node) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
					     "?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)"
					   : "INSERT INTO kernel_dispatch(corr_id, pid, tid, queue_id, packet_index, kernel, "
					     "grid_x, grid_y, grid_z, wg_x, wg_y, wg_z, start_ns, end_ns, start_ticks, "
					     "end_ticks, status, gpu) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
					     "?12, ?13, ?14, ?15, ?16, ?17, ?18)",
				    -1, &st, NULL);
	for (size_t i = 0; rc == SQLITE_OK && i < n; i++) {
		const struct series_dispatch *x = &d[i];
		/* u64 ids and ticks above 2^63-1 keep their bit pattern (negative), as samples' ticks do */
		sqlite3_int64 v[] = { (sqlite3_int64)x->corr_id, x->pid, x->tid, (sqlite3_int64)x->queue_id,
				      (sqlite3_int64)x->packet_index };
		for (int k = 0; rc == SQLITE_OK && k < 5; k++)
			rc = sqlite3_bind_int64(st, k + 1, v[k]);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_text(st, 6, x->kernel ? x->kernel : "", -1, SQLITE_STATIC);
		for (int k = 0; rc == SQLITE_OK && k < 3; k++) {
			rc = sqlite3_bind_int64(st, 7 + k, x->grid[k]);
			if (rc == SQLITE_OK)
				rc = sqlite3_bind_int64(st, 10 + k, x->wg[k]);
		}
		if (rc == SQLITE_OK)
			rc = x->start_ns >= 0 ? sqlite3_bind_int64(st, 13, x->start_ns) : sqlite3_bind_null(st, 13);
		if (rc == SQLITE_OK)
			rc = x->start_ns >= 0 ? sqlite3_bind_int64(st, 14, x->end_ns) : sqlite3_bind_null(st, 14);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_int64(st, 15, (sqlite3_int64)x->start_ticks);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_int64(st, 16, (sqlite3_int64)x->end_ticks);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_int64(st, 17, x->status);
		if (rc == SQLITE_OK)
			rc = x->gpu >= 0 ? sqlite3_bind_int64(st, 18, x->gpu) : sqlite3_bind_null(st, 18);
		if (rc == SQLITE_OK && merged)
			rc = sqlite3_bind_int64(st, 19, x->node);
		if (rc == SQLITE_OK) {
			rc = sqlite3_step(st);
			rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
		}
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return rc;
}
