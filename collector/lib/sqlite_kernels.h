/* SPDX-License-Identifier: MIT */
/*
 * The SQLite output's kernel dispatches (docs/formats/sqlite.md
 * "kernel_dispatch"): the table, its indexes and view, created with the
 * schema; a view per stream joining its samples to the dispatches running
 * on its GPU at each sample's host_ns; the rows, inserted once at the end
 * (writer_ops.dispatches).  Used by write_sqlite.c only.
 */
#ifndef SPMTAP_COLLECTOR_SQLITE_KERNELS_H
#define SPMTAP_COLLECTOR_SQLITE_KERNELS_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/lib/series.h"

extern const char sqlk_schema_sql[];
/* A merged job recording (`spmtap merge`): kernel_dispatch gains its node column. */
extern const char sqlk_merged_sql[];
/*
 * CREATE VIEW kernel_samples_<id>: every (dispatch on GPU gpu, sample of
 * stream id with start_ns <= host_ns < end_ns), the counters under their
 * names (v<col> where a name cannot be a column).  node >= 0 (a merged
 * file): only that node's dispatches, and a node column.  malloc'd; NULL:
 * no memory.
 */
char *sqlk_stream_view_sql(uint32_t id, uint32_t gpu, int64_t node, uint32_t ncols,
			   const struct series_column *cols);
/*
 * Every record into kernel_dispatch, in the caller's transaction (merged:
 * with series_dispatch.node in the node column): an SQLite result code.
 */
int sqlk_insert(sqlite3 *db, const struct series_dispatch *d, size_t n, bool merged);

#endif
