/* SPDX-License-Identifier: MIT */
/*
 * A node's kernel dispatches in `spmtap merge` (merge.h): the SQLite
 * recording's table kernel_dispatch, or NAME_kernels.csv beside a CSV
 * recording (docs/formats/kernels-csv.md; also beside a .db written before
 * the table existed).  start_ns/end_ns are mapped to rank 0's clock by the
 * node's offsets exactly as its samples are (mg_clock_map); each mapped
 * dispatch also becomes a "kernel" slice on its queue (Perfetto, OTF2: the
 * SQLite writer leaves those to kernel_dispatch), then the whole node's
 * dispatches go to the sink at once.  A node's dispatches are held in
 * memory together (about 150 bytes each plus its name): the writer op
 * takes them as one array (writer.h), as a single recording's do.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/merge.h"
#include "log.h"

enum { K_CORR, K_PID, K_TID, K_QUEUE, K_INDEX, K_KERNEL, K_GX, K_GY, K_GZ, K_WX, K_WY, K_WZ, K_START, K_END,
       K_STICKS, K_ETICKS, K_STATUS, K_GPU, K_N };
static const char *const kcol[K_N] = { "corr_id", "pid", "tid", "queue_id", "packet_index", "kernel",
				       "grid_x", "grid_y", "grid_z", "wg_x", "wg_y", "wg_z", "start_ns", "end_ns",
				       "start_ticks", "end_ticks", "status", "gpu" };

struct kd {
	struct series_dispatch *v;
	size_t n, cap;
};

static void kd_free(struct kd *k)
{
	for (size_t i = 0; i < k->n; i++)
		free((char *)k->v[i].kernel);
	free(k->v);
}

/* One row's cells (NULL or "": absent/empty) into the next dispatch; -ENOMEM, -EINVAL, or 0. */
static int kd_add(struct kd *k, const char *const *cell, uint32_t node)
{
	if (k->n == k->cap) {
		size_t nc = k->cap ? 2 * k->cap : 256;
		void *p = realloc(k->v, nc * sizeof(*k->v));
		if (!p)
			return -ENOMEM;
		k->v = p;
		k->cap = nc;
	}
	int64_t v[K_N] = { 0 };
	bool have[K_N] = { false };
	for (int c = 0; c < K_N; c++) {
		if (c == K_KERNEL || !cell[c] || !*cell[c])
			continue;
		char *end;
		errno = 0;
		long long x = strtoll(cell[c], &end, 10);
		/* ids and ticks above 2^63-1 (CSV): as unsigned, kept as their bit pattern */
		if (errno == ERANGE && *cell[c] != '-') {
			errno = 0;
			x = (long long)strtoull(cell[c], &end, 10);
		}
		if (errno || end == cell[c] || *end)
			return -EINVAL;
		v[c] = x;
		have[c] = true;
	}
	struct series_dispatch *d = &k->v[k->n];
	*d = (struct series_dispatch){
		.corr_id = (uint64_t)v[K_CORR], .queue_id = (uint64_t)v[K_QUEUE], .packet_index = (uint64_t)v[K_INDEX],
		.start_ticks = (uint64_t)v[K_STICKS], .end_ticks = (uint64_t)v[K_ETICKS],
		.start_ns = -1, .end_ns = -1, .pid = (uint32_t)v[K_PID], .tid = (uint32_t)v[K_TID],
		.status = (int32_t)v[K_STATUS], .gpu = have[K_GPU] ? (int32_t)v[K_GPU] : -1, .node = node,
	};
	for (int i = 0; i < 3; i++) {
		d->grid[i] = (uint32_t)v[K_GX + i];
		d->wg[i] = (uint32_t)v[K_WX + i];
	}
	if (have[K_START] && have[K_END]) {
		d->start_ns = v[K_START];
		d->end_ns = v[K_END];
	}
	if (!(d->kernel = strdup(cell[K_KERNEL] ? cell[K_KERNEL] : "")))
		return -ENOMEM;
	k->n++;
	return 0;
}

/* CSV cells of line (changed in place): a quoted cell ("" a quote, as session_kernels.c writes it). */
static size_t split_q(char *line, char **cells, size_t max)
{
	size_t n = 0;
	char *p = line;
	for (;;) {
		char *out = p, *start = p;
		if (*p == '"') {
			p++;
			while (*p) {
				if (*p == '"' && p[1] == '"')
					*out++ = '"', p += 2;
				else if (*p == '"') {
					p++;
					break;
				} else
					*out++ = *p++;
			}
			while (*p && *p != ',')
				p++;
		} else {
			while (*p && *p != ',')
				p++;
			out = p;
		}
		char sep = *p;
		*out = 0;
		if (n < max)
			cells[n] = start;
		n++;
		if (!sep)
			return n;
		p++;
	}
}

/* NAME_kernels.csv: a row cut at the end (a killed recorder) is left out, as `report` does. */
static int read_csv(const char *path, uint32_t node, struct kd *k, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return spmtap_seterr(err, errlen, errno, "%s: %s", path, strerror(errno));
	char *line = NULL, *cells[64];
	size_t cap = 0, lineno = 0, nhead = 0;
	int idx[K_N], rc = 0;
	ssize_t got;
	while (!rc && (got = getline(&line, &cap, f)) > 0) {
		lineno++;
		bool whole = line[got - 1] == '\n';
		line[got - (whole ? 1 : 0)] = 0;
		if (got > 1 && line[got - 2] == '\r')
			line[got - 2] = 0;
		size_t n = split_q(line, cells, 64);
		if (lineno == 1) {
			nhead = n < 64 ? n : 64;
			for (int c = 0; c < K_N; c++) {
				idx[c] = -1;
				for (size_t i = 0; i < nhead; i++)
					if (!strcmp(cells[i], kcol[c]))
						idx[c] = (int)i;
			}
			if (idx[K_KERNEL] < 0 || idx[K_START] < 0 || idx[K_END] < 0)
				rc = spmtap_seterr(err, errlen, EINVAL, "%s:1: not a kernels CSV header "
						   "(docs/formats/kernels-csv.md)", path);
			continue;
		}
		if (!whole)
			break;
		if (n != nhead) {
			rc = spmtap_seterr(err, errlen, EINVAL, "%s:%zu: %zu cells, the header has %zu", path, lineno, n,
					   nhead);
			break;
		}
		const char *cell[K_N];
		for (int c = 0; c < K_N; c++)
			cell[c] = idx[c] >= 0 ? cells[idx[c]] : NULL;
		int a = kd_add(k, cell, node);
		if (a)
			rc = spmtap_seterr(err, errlen, -a, "%s:%zu: %s", path, lineno,
					   a == -ENOMEM ? "out of memory" : "a cell is not an integer");
	}
	free(line);
	fclose(f);
	return rc;
}

/* The table kernel_dispatch: 1 when the file has none (an older writer; the CSV beside it then). */
static int read_sqlite(const char *path, uint32_t node, struct kd *k, char *err, size_t errlen)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int c = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), rc = 0;
	if (c == SQLITE_OK)
		c = sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE name = 'kernel_dispatch'", -1,
				       &st, NULL);
	if (c == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 0)
		rc = 1;
	sqlite3_finalize(st);
	st = NULL;
	/* rowid order: the order they were written (the CSV's) */
	if (c == SQLITE_OK && !rc)
		c = sqlite3_prepare_v2(db, "SELECT * FROM kernel_dispatch ORDER BY rowid", -1, &st, NULL);
	int idx[K_N];
	for (int i = 0; i < K_N; i++)
		idx[i] = -1;
	for (int i = 0; c == SQLITE_OK && !rc && i < sqlite3_column_count(st); i++)
		for (int j = 0; j < K_N; j++)
			if (!strcmp(sqlite3_column_name(st, i), kcol[j]))
				idx[j] = i;
	while (c == SQLITE_OK && !rc && (c = sqlite3_step(st)) == SQLITE_ROW) {
		char buf[K_N][32];
		const char *cell[K_N];
		for (int j = 0; j < K_N; j++) {
			cell[j] = NULL;
			if (idx[j] < 0)
				continue;
			if (j == K_KERNEL) {
				cell[j] = (const char *)sqlite3_column_text(st, idx[j]);
				continue;
			}
			buf[j][0] = 0;
			if (sqlite3_column_type(st, idx[j]) != SQLITE_NULL)
				snprintf(buf[j], sizeof(buf[j]), "%lld", (long long)sqlite3_column_int64(st, idx[j]));
			cell[j] = buf[j];
		}
		int a = kd_add(k, cell, node);
		if (a)
			rc = spmtap_seterr(err, errlen, -a, "%s: kernel_dispatch: %s", path,
					   a == -ENOMEM ? "out of memory" : "a cell is not an integer");
		c = SQLITE_OK;
	}
	if (!rc && c != SQLITE_OK && c != SQLITE_DONE)
		rc = spmtap_seterr(err, errlen, EBADMSG, "%s: reading kernel_dispatch: %s", path,
				   db ? sqlite3_errmsg(db) : sqlite3_errstr(c));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

int mg_node_kernels(const struct mg_node *n, const struct mg_sink *sink, uint64_t *count, char *err,
		    size_t errlen)
{
	struct kd k = { 0 };
	int rc = n->db ? read_sqlite(n->db, n->key, &k, err, errlen) : 1;
	if (rc == 1) {
		kd_free(&k);
		memset(&k, 0, sizeof(k));
		rc = n->kernels_csv ? read_csv(n->kernels_csv, n->key, &k, err, errlen) : 0;
	}
	*count = 0;
	for (size_t i = 0; !rc && i < k.n; i++) {
		struct series_dispatch *d = &k.v[i];
		if (d->start_ns < 0)
			continue;
		/* the same mapping as the node's samples: both ends at their own local instant */
		d->start_ns = mg_clock_map(&n->clk, d->start_ns, NULL);
		d->end_ns = mg_clock_map(&n->clk, d->end_ns, NULL);
		if (d->end_ns < d->start_ns)
			continue;
		/* a slice on its queue's track under its GPU (Perfetto, OTF2), as session_kernels.c makes */
		struct series_slice sl = { .start_ns = d->start_ns, .end_ns = d->end_ns, .name = d->kernel,
					   .track = (uint32_t)d->queue_id, .category = "kernel", .pid = d->pid,
					   .gpu = d->gpu >= 0 ? (uint32_t)d->gpu : 0, .node = n->key };
		rc = sink->slice(sink->ctx, &sl, err, errlen);
	}
	if (!rc && k.n && sink->dispatches)
		rc = sink->dispatches(sink->ctx, k.v, k.n, err, errlen);
	if (!rc)
		*count = k.n;
	kd_free(&k);
	return rc;
}
