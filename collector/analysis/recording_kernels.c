/* SPDX-License-Identifier: MIT */
/*
 * The application's kernel dispatches of a recording (recording.h, struct
 * rec_kernels): NAME_kernels.csv (docs/formats/kernels-csv.md) or, in a
 * SQLite recording, the table kernel_dispatch (docs/formats/sqlite.md),
 * whose columns carry the CSV's names.  Columns are found by name, so a
 * column added later (`gpu`) or moved is no error; the ones the analysis
 * needs (kernel, start_ns, end_ns) must be there.  A row cut short at the
 * end of the CSV (a killed recorder) is left out with a note.
 */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/recording_priv.h"
#include "log.h"

enum { C_CORR, C_PID, C_TID, C_QUEUE, C_INDEX, C_KERNEL, C_GX, C_GY, C_GZ, C_WX, C_WY, C_WZ, C_START, C_END,
       C_STICKS, C_ETICKS, C_STATUS, C_GPU, C_N };
static const char *const colname[C_N] = { "corr_id", "pid", "tid", "queue_id", "packet_index", "kernel",
					  "grid_x", "grid_y", "grid_z", "wg_x", "wg_y", "wg_z", "start_ns", "end_ns",
					  "start_ticks", "end_ticks", "status", "gpu" };
/* Without these there is nothing to attribute. */
static bool required(int c)
{
	return c == C_KERNEL || c == C_START || c == C_END;
}

static int grow(struct rec_kernels *k, size_t *cap)
{
	if (k->n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 1024;
	struct rec_dispatch *v = realloc(k->v, nc * sizeof(*v));
	if (!v)
		return -ENOMEM;
	k->v = v;
	*cap = nc;
	return 0;
}

static int cmp_disp(const void *a, const void *b)
{
	const struct rec_dispatch *x = a, *y = b;
	if (x->mapped != y->mapped)
		return x->mapped ? -1 : 1;
	if (x->mapped && x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->corr_id < y->corr_id ? -1 : x->corr_id > y->corr_id;
}

/* A row's cells (NULL: the column is absent; "" : empty) into d; -1 with what is wrong in why. */
static int row_of(struct recording *r, const char *const *cell, struct rec_dispatch *d, char *why, size_t len)
{
	memset(d, 0, sizeof(*d));
	d->gpu = -1;
	int64_t v[C_N] = { 0 };
	bool have[C_N] = { false };
	for (int c = 0; c < C_N; c++) {
		if (c == C_KERNEL || !cell[c] || !*cell[c])
			continue;
		char *end;
		errno = 0;
		long long x = strtoll(cell[c], &end, 10);
		if (errno || end == cell[c] || *end) {
			snprintf(why, len, "%s '%s' is not an integer", colname[c], cell[c]);
			return -1;
		}
		v[c] = x;
		have[c] = true;
	}
	d->corr_id = (uint64_t)v[C_CORR];
	d->pid = v[C_PID];
	d->tid = v[C_TID];
	d->queue_id = (uint64_t)v[C_QUEUE];
	d->packet_index = (uint64_t)v[C_INDEX];
	for (int i = 0; i < 3; i++) {
		d->grid[i] = (uint32_t)v[C_GX + i];
		d->wg[i] = (uint32_t)v[C_WX + i];
	}
	d->start_ticks = have[C_STICKS] ? v[C_STICKS] : -1;
	d->end_ticks = have[C_ETICKS] ? v[C_ETICKS] : -1;
	d->status = (int)v[C_STATUS];
	d->gpu = have[C_GPU] ? (int32_t)v[C_GPU] : -1;
	d->mapped = have[C_START] && have[C_END];
	if (d->mapped) {
		d->start_ns = v[C_START];
		d->end_ns = v[C_END];
		if (d->end_ns < d->start_ns) {
			snprintf(why, len, "end_ns %" PRId64 " is before start_ns %" PRId64, d->end_ns, d->start_ns);
			return -1;
		}
	}
	d->kernel = rec_keep(r, cell[C_KERNEL] ? cell[C_KERNEL] : "");
	if (!d->kernel) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	return 0;
}

static int load_csv(struct recording *r, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return spmtap_seterr(err, errlen, errno, "%s: %s", path, strerror(errno));
	char *line = NULL, *cells[256];
	size_t cap = 0, lineno = 0, vcap = 0;
	int idx[C_N];
	for (int c = 0; c < C_N; c++)
		idx[c] = -1;
	int rc = 0;
	ssize_t got;
	uint32_t nhead = 0;
	struct rec_kernels *k = &r->kernels;
	while (!rc && (got = getline(&line, &cap, f)) > 0) {
		lineno++;
		bool whole = line[got - 1] == '\n';
		line[got - (whole ? 1 : 0)] = 0;
		if (got > 1 && line[got - 2] == '\r')
			line[got - 2] = 0;
		uint32_t n = 0;
		for (char *p = line;; n++) {
			if (n < 256)
				cells[n] = p;
			char *comma = strchr(p, ',');
			if (!comma) {
				n++;
				break;
			}
			*comma = 0;
			p = comma + 1;
		}
		if (lineno == 1) {
			nhead = n < 256 ? n : 256;
			for (uint32_t i = 0; i < nhead; i++)
				for (int c = 0; c < C_N; c++)
					if (!strcmp(cells[i], colname[c]))
						idx[c] = (int)i;
			for (int c = 0; c < C_N; c++)
				if (required(c) && idx[c] < 0)
					rc = spmtap_seterr(err, errlen, EINVAL, "%s:1: no column '%s' in the header "
							   "(docs/formats/kernels-csv.md)", path, colname[c]);
			continue;
		}
		if (!whole || n != nhead) {
			/* the recorder writes the file whole at its stop: a short line is a cut or a damaged file */
			if (!whole)
				rc = rec_note(r, "%s: line %zu is cut short (left out)", rec_basename(path), lineno);
			else
				rc = spmtap_seterr(err, errlen, EINVAL, "%s:%zu: %u cells, the header has %u", path, lineno,
						   n, nhead);
			continue;
		}
		const char *cell[C_N];
		for (int c = 0; c < C_N; c++)
			cell[c] = idx[c] >= 0 ? cells[idx[c]] : NULL;
		char why[160];
		if ((rc = grow(k, &vcap)))
			break;
		if (row_of(r, cell, &k->v[k->n], why, sizeof(why)))
			rc = spmtap_seterr(err, errlen, EINVAL, "%s:%zu: %s", path, lineno, why);
		else
			k->n++;
	}
	if (!rc && lineno == 0)
		rc = spmtap_seterr(err, errlen, EINVAL, "%s: empty (no header)", path);
	free(line);
	fclose(f);
	if (!rc)
		snprintf(k->source, sizeof(k->source), "%s", rec_basename(path));
	return rc;
}

/* The SQLite table kernel_dispatch; 1 when the file has no such table (an older writer). */
static int load_sqlite(struct recording *r, const char *path, char *err, size_t errlen)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int c = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);
	int rc = 0;
	if (c == SQLITE_OK)
		c = sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE name = 'kernel_dispatch'", -1, &st,
				       NULL);
	if (c == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 0)
		rc = 1;
	sqlite3_finalize(st);
	st = NULL;
	if (c == SQLITE_OK && !rc && r->node >= 0) {
		/* a merged job recording read as node N (PATH#node=N): that node's dispatches only */
		char q[96];
		snprintf(q, sizeof(q), "SELECT * FROM kernel_dispatch WHERE node = %d", (int)r->node);
		/* a file merged before dispatches were carried has no node column, and no dispatches */
		if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
			c = sqlite3_prepare_v2(db, "SELECT * FROM kernel_dispatch WHERE 0", -1, &st, NULL);
	} else if (c == SQLITE_OK && !rc)
		c = sqlite3_prepare_v2(db, "SELECT * FROM kernel_dispatch", -1, &st, NULL);
	int idx[C_N];
	for (int i = 0; i < C_N; i++)
		idx[i] = -1;
	for (int i = 0; c == SQLITE_OK && !rc && i < sqlite3_column_count(st); i++)
		for (int k = 0; k < C_N; k++)
			if (!strcmp(sqlite3_column_name(st, i), colname[k]))
				idx[k] = i;
	for (int k = 0; c == SQLITE_OK && !rc && k < C_N; k++)
		if (required(k) && idx[k] < 0)
			rc = spmtap_seterr(err, errlen, EINVAL, "%s: table kernel_dispatch has no column '%s'", path,
					   colname[k]);
	size_t vcap = 0;
	while (c == SQLITE_OK && !rc && (c = sqlite3_step(st)) == SQLITE_ROW) {
		char buf[C_N][48];
		const char *cell[C_N];
		for (int k = 0; k < C_N; k++) {
			cell[k] = NULL;
			if (idx[k] < 0)
				continue;
			if (k == C_KERNEL) {
				cell[k] = (const char *)sqlite3_column_text(st, idx[k]);
				if (!cell[k])
					cell[k] = "";
				continue;
			}
			/* NULL: empty, as in the CSV (start_ns/end_ns of an unmapped dispatch) */
			if (sqlite3_column_type(st, idx[k]) == SQLITE_NULL)
				snprintf(buf[k], sizeof(buf[k]), "%s", "");
			else
				snprintf(buf[k], sizeof(buf[k]), "%lld", (long long)sqlite3_column_int64(st, idx[k]));
			cell[k] = buf[k];
		}
		char why[160];
		if ((rc = grow(&r->kernels, &vcap)))
			break;
		if (row_of(r, cell, &r->kernels.v[r->kernels.n], why, sizeof(why)))
			rc = spmtap_seterr(err, errlen, EINVAL, "%s: kernel_dispatch: %s", path, why);
		else
			r->kernels.n++;
		c = SQLITE_OK;
	}
	if (!rc && c != SQLITE_OK && c != SQLITE_DONE)
		rc = spmtap_seterr(err, errlen, EBADMSG, "%s: reading kernel_dispatch: %s", path,
				   db ? sqlite3_errmsg(db) : sqlite3_errstr(c));
	sqlite3_finalize(st);
	sqlite3_close(db);
	if (!rc)
		snprintf(r->kernels.source, sizeof(r->kernels.source), "%s:kernel_dispatch", rec_basename(path));
	return rc;
}

int rec_load_kernels(struct recording *r, const struct rec_src *src, char *err, size_t errlen)
{
	int rc = 1;
	if (src->sqlite && src->db.path)
		rc = load_sqlite(r, src->db.path, err, errlen);
	if (rc == 1) {
		/* an older SQLite file without the table: the CSV beside it is the same dispatches */
		free(r->kernels.v);
		memset(&r->kernels, 0, sizeof(r->kernels));
		rc = src->kernels.path ? load_csv(r, src->kernels.path, err, errlen) : 0;
	}
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < r->kernels.n; i++)
		r->kernels.unmapped += !r->kernels.v[i].mapped;
	if (r->kernels.n)
		qsort(r->kernels.v, r->kernels.n, sizeof(r->kernels.v[0]), cmp_disp);
	return 0;
}
