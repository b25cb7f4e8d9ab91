/* SPDX-License-Identifier: MIT */
/*
 * One input of `spmtap merge` (merge.h): find it (recording_find.c), read
 * its metadata and clock, then stream it to a sink: its streams, every
 * sample in chunks of at most `chunk` rows per stream with its time mapped
 * to rank 0's CLOCK_BOOTTIME, its slices.  A CSV recording is read one file
 * at a time, line by line (streams of a file interleave: one chunk buffer
 * each); a SQLite one a stream table at a time, in key (time) order.
 * Memory: one chunk per stream of the file being read.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/analysis/merge.h"
#include "collector/analysis/recording_priv.h"
#include "log.h"

void mg_node_free(struct mg_node *n)
{
	free(n->path);
	free(n->meta_path);
	free(n->db);
	free(n->spm_csv);
	free(n->smi_csv);
	free(n->phases_csv);
	free(n->pm_csv);
	free(n->kernels_csv);
	json_decref(n->meta);
	mg_clock_free(&n->clk);
	memset(n, 0, sizeof(*n));
}

static json_t *db_meta(const char *db, char *err, size_t errlen)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	json_t *m = NULL;
	int rc = sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(h, "SELECT value FROM meta WHERE key = 'recording_meta'", -1, &st, NULL);
	if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 0);
		json_error_t je;
		m = t ? json_loads(t, 0, &je) : NULL;
		if (!m)
			spmtap_seterr(err, errlen, EBADMSG, "%s: its recording_meta is not JSON", db);
	} else {
		spmtap_seterr(err, errlen, EBADMSG, "%s: not a spmtap SQLite recording (%s)", db,
			      h ? sqlite3_errmsg(h) : "cannot open");
	}
	sqlite3_finalize(st);
	sqlite3_close(h);
	return m;
}

/*
 * NAME_craypm.csv (record --cray: node-level power, docs/power.md) beside
 * DIR/NAME.db or DIR/NAME_meta.json, or its .part: the path, or NULL.
 */
static char *pm_csv_of(const char *f)
{
	if (!f)
		return NULL;
	size_t n = strlen(f);
	static const char *const ends[] = { ".db.part", ".db", "_meta.json.part", "_meta.json" };
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
		size_t e = strlen(ends[i]);
		if (n < e || strcmp(f + n - e, ends[i]))
			continue;
		char *p = malloc(n + 32);
		if (!p)
			return NULL;
		for (int part = 0; part < 2; part++) {
			snprintf(p, n + 32, "%.*s_craypm.csv%s", (int)(n - e), f, part ? ".part" : "");
			if (!access(p, R_OK))
				return p;
		}
		free(p);
		return NULL;
	}
	return NULL;
}

int mg_node_open(struct mg_node *n, const char *path, uint32_t order, char *err, size_t errlen)
{
	memset(n, 0, sizeof(*n));
	n->rank = -1;
	n->key = order;
	if (!(n->path = strdup(path)))
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	struct rec_src src;
	memset(&src, 0, sizeof(src));
	char e2[512];
	int rc = rec_find(path, &src, e2, sizeof(e2));
	if (rc) {
		rec_src_free(&src);
		return spmtap_seterr(err, errlen, -rc, "%s: %s", path, e2);
	}
	n->incomplete = src.meta.part || src.db.part || src.spm.part || src.smi.part;
	if (src.sqlite) {
		n->db = strdup(src.db.path);
		n->meta = db_meta(src.db.path, e2, sizeof(e2));
	} else {
		if (src.meta.path) {
			json_error_t je;
			n->meta_path = strdup(src.meta.path);
			n->meta = json_load_file(src.meta.path, 0, &je);
			if (!n->meta)
				snprintf(e2, sizeof(e2), "%s: line %d: %s", src.meta.path, je.line, je.text);
		} else {
			snprintf(e2, sizeof(e2), "%s: no NAME_meta.json", path);
		}
		n->spm_csv = src.spm.path ? strdup(src.spm.path) : NULL;
		n->smi_csv = src.smi.path ? strdup(src.smi.path) : NULL;
		n->phases_csv = src.phases.path ? strdup(src.phases.path) : NULL;
	}
	n->pm_csv = pm_csv_of(n->db ? n->db : n->meta_path);
	n->kernels_csv = src.kernels.path ? strdup(src.kernels.path) : NULL;
	rec_src_free(&src);
	if (!n->meta)
		return spmtap_seterr(err, errlen, EBADMSG, "%s: unreadable: %s", path, e2);
	if (!json_is_true(json_object_get(n->meta, "complete")))
		n->incomplete = true;
	rc = mg_clock_parse(n->meta, &n->clk, e2, sizeof(e2));
	if (rc)
		return spmtap_seterr(err, errlen, -rc, "%s: %s", path, e2);
	json_t *job = json_object_get(n->meta, "job");
	n->job = json_is_object(job);
	const char *host = json_string_value(json_object_get(job, "hostname"));
	if (!host)
		host = json_string_value(json_object_get(n->meta, "hostname"));
	snprintf(n->hostname, sizeof(n->hostname), "%s", host ? host : "unknown");
	if (n->job) {
		json_t *r = json_object_get(job, "rank");
		if (!json_is_integer(r) || json_integer_value(r) < 0)
			return spmtap_seterr(err, errlen, EBADMSG, "%s: its \"job\" object has no rank", path);
		n->rank = (int32_t)json_integer_value(r);
		n->key = (uint32_t)n->rank;
	}
	return 0;
}

static int by_key(const void *a, const void *b)
{
	const struct mg_node *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

int mg_nodes_check(struct mg_node *nodes, size_t n, const struct merge_opts *o, char *err, size_t errlen)
{
	size_t njob = 0;
	for (size_t i = 0; i < n; i++)
		njob += nodes[i].job;
	if (njob && njob < n && !o->allow_unaligned) {
		for (size_t i = 0; i < n; i++)
			if (!nodes[i].job)
				return spmtap_seterr(err, errlen, EINVAL,
						     "%s has no \"job\" object (not recorded with --job), the others "
						     "have: its clock cannot be aligned with theirs; --allow-unaligned "
						     "merges it with offset 0 and an unknown bound (\"unaligned\")",
						     nodes[i].path);
	}
	for (size_t i = 0; i < n; i++) {
		if (nodes[i].incomplete && !o->accept_truncated)
			return spmtap_seterr(err, errlen, EBADMSG,
					     "%s: incomplete recording (the run did not end cleanly, or files under "
					     ".part names): merge it with --accept-truncated",
					     nodes[i].path);
		for (size_t j = 0; j < i; j++)
			if (nodes[i].job && nodes[j].job && nodes[i].rank == nodes[j].rank)
				return spmtap_seterr(err, errlen, EINVAL,
						     "%s and %s are both rank %d: one recording per rank (two runs of "
						     "one job, or two jobs?)",
						     nodes[j].path, nodes[i].path, nodes[i].rank);
	}
	/* Without job objects the keys are the order given; with a mix, keep the unaligned ones after the ranks. */
	if (njob && njob < n) {
		uint32_t next = 0;
		for (size_t i = 0; i < n; i++)
			if (nodes[i].job && nodes[i].key >= next)
				next = nodes[i].key + 1;
		for (size_t i = 0; i < n; i++)
			if (!nodes[i].job)
				nodes[i].key = next++;
	}
	qsort(nodes, n, sizeof(*nodes), by_key);
	return 0;
}

/* ---- chunk buffers, one per stream ---- */

struct sbuf {
	struct series_stream s;
	struct series_column *cols;
	int64_t *host;
	uint64_t *ticks;
	int ticks_state; /* rows in the buffer: -1 none yet, 0 without ticks, 1 with */
	uint64_t **vals; /* [ncols][chunk] (u64 or the bits of a double) */
	uint64_t **miss; /* [ncols][(chunk+63)/64] */
	uint32_t n;
	int *hdr;        /* CSV: the header cell of each column, -1: none */
	int64_t rows, rows_expected;
	char table[32];  /* SQLite: samples_<id> */
};

struct emit {
	const struct mg_node *node;
	const struct mg_sink *sink;
	uint32_t chunk;
	struct sbuf *b;
	size_t nb;
	struct mg_node_stats *st;
	char *err;
	size_t errlen;
};

static void sbuf_free(struct sbuf *b)
{
	for (uint32_t c = 0; c < b->s.ncols; c++) {
		if (b->vals)
			free(b->vals[c]);
		if (b->miss)
			free(b->miss[c]);
		if (b->cols) {
			free((char *)b->cols[c].name);
			free((char *)b->cols[c].unit);
		}
	}
	free(b->vals);
	free(b->miss);
	free(b->cols);
	free(b->host);
	free(b->ticks);
	free(b->hdr);
	free((char *)b->s.source);
	free((char *)b->s.device_name);
	free((char *)b->s.tick_domain);
}

static int sbuf_alloc(struct sbuf *b, uint32_t chunk)
{
	uint32_t nc = b->s.ncols, words = (chunk + 63) / 64;
	b->host = calloc(chunk, sizeof(*b->host));
	b->ticks = calloc(chunk, sizeof(*b->ticks));
	b->vals = calloc(nc ? nc : 1, sizeof(*b->vals));
	b->miss = calloc(nc ? nc : 1, sizeof(*b->miss));
	b->hdr = calloc(nc ? nc : 1, sizeof(*b->hdr));
	if (!b->host || !b->ticks || !b->vals || !b->miss || !b->hdr)
		return -ENOMEM;
	for (uint32_t c = 0; c < nc; c++) {
		b->hdr[c] = -1;
		if (!(b->vals[c] = calloc(chunk, sizeof(uint64_t))) || !(b->miss[c] = calloc(words, sizeof(uint64_t))))
			return -ENOMEM;
	}
	b->ticks_state = -1;
	return 0;
}

static int sbuf_flush(struct emit *E, struct sbuf *b)
{
	if (!b->n)
		return 0;
	const void *vals[b->s.ncols ? b->s.ncols : 1];
	const uint64_t *miss[b->s.ncols ? b->s.ncols : 1];
	for (uint32_t c = 0; c < b->s.ncols; c++) {
		vals[c] = b->vals[c];
		miss[c] = b->miss[c];
	}
	struct series_chunk ch = {
		.stream = &b->s, .n = b->n, .host_ns = b->host,
		.ticks = b->ticks_state == 1 ? b->ticks : NULL, .values = vals, .missing = miss,
	};
	int rc = E->sink->write(E->sink->ctx, &ch, E->err, E->errlen);
	uint32_t words = (E->chunk + 63) / 64;
	for (uint32_t c = 0; c < b->s.ncols; c++)
		memset(b->miss[c], 0, words * sizeof(uint64_t));
	E->st->samples += b->n;
	b->n = 0;
	b->ticks_state = -1;
	return rc;
}

/* A row's time and ticks into b (flushing first when full or when its ticks differ): its index. */
static int sbuf_row(struct emit *E, struct sbuf *b, int64_t local_ns, bool has_ticks, uint64_t ticks, uint32_t *at)
{
	int rc = 0;
	if (b->n == E->chunk || (b->ticks_state >= 0 && b->ticks_state != (int)has_ticks))
		rc = sbuf_flush(E, b);
	if (rc)
		return rc;
	b->ticks_state = has_ticks;
	uint32_t i = b->n++;
	b->host[i] = mg_clock_map(&E->node->clk, local_ns, NULL);
	b->ticks[i] = has_ticks ? ticks : 0;
	b->rows++;
	*at = i;
	return 0;
}

static void sbuf_set_missing(struct sbuf *b, uint32_t c, uint32_t i)
{
	b->miss[c][i >> 6] |= 1ull << (i & 63);
}

static void emit_free(struct emit *E)
{
	for (size_t i = 0; i < E->nb; i++)
		sbuf_free(&E->b[i]);
	free(E->b);
	E->b = NULL;
	E->nb = 0;
}

static char *dup0(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* The metadata's row count of a stream (extra.streams), -1 when it does not say. */
static int64_t meta_rows(const json_t *meta, const char *source, uint32_t gpu, int32_t xcc)
{
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(json_object_get(meta, "extra"), "streams"), i, s)
	{
		const char *src = json_string_value(json_object_get(s, "source"));
		if (src && !strcmp(src, source) && json_integer_value(json_object_get(s, "gpu")) == gpu &&
		    json_integer_value(json_object_get(s, "xcc")) == xcc) {
			json_t *r = json_object_get(s, "rows");
			return json_is_integer(r) ? json_integer_value(r) : -1;
		}
	}
	return -1;
}

/* ---- CSV ---- */

/* The streams of the metadata (extra.streams) as buffers. */
static int csv_streams(struct emit *E)
{
	json_t *streams = json_object_get(json_object_get(E->node->meta, "extra"), "streams");
	size_t n = json_array_size(streams);
	E->b = calloc(n ? n : 1, sizeof(*E->b));
	if (!E->b)
		return -ENOMEM;
	json_t *devs = json_object_get(json_object_get(E->node->meta, "extra"), "devices");
	for (size_t i = 0; i < n; i++) {
		json_t *s = json_array_get(streams, i);
		struct sbuf *b = &E->b[E->nb++];
		const char *src = json_string_value(json_object_get(s, "source"));
		json_t *cols = json_object_get(s, "columns");
		b->s.id = (uint32_t)i + 1;
		b->s.source = dup0(src ? src : "");
		b->s.gpu = (uint32_t)json_integer_value(json_object_get(s, "gpu"));
		b->s.xcc = (int32_t)json_integer_value(json_object_get(s, "xcc"));
		b->s.tick_domain = dup0(json_string_value(json_object_get(s, "tick_domain")));
		size_t k;
		json_t *d;
		json_array_foreach(devs, k, d)
		if ((uint32_t)json_integer_value(json_object_get(d, "gpu")) == b->s.gpu) {
			b->s.device_name = dup0(json_string_value(json_object_get(d, "name")));
			b->s.gpu_id = (uint32_t)json_integer_value(json_object_get(d, "gpu_id"));
		}
		b->s.ncols = (uint32_t)json_array_size(cols);
		b->cols = calloc(b->s.ncols ? b->s.ncols : 1, sizeof(*b->cols));
		if (!b->cols)
			return -ENOMEM;
		for (uint32_t c = 0; c < b->s.ncols; c++) {
			json_t *cj = json_array_get(cols, c);
			b->cols[c].name = dup0(json_string_value(json_object_get(cj, "name")));
			b->cols[c].unit = dup0(json_string_value(json_object_get(cj, "unit")));
			/* CSV carries no type: SPM counters are exact integers, sensor readings doubles */
			b->cols[c].type = src && !strcmp(src, "spm") ? SERIES_U64 : SERIES_F64;
		}
		b->s.cols = b->cols;
		b->s.node = E->node->key;
		b->rows_expected = json_is_integer(json_object_get(s, "rows"))
					   ? json_integer_value(json_object_get(s, "rows")) : -1;
		if (sbuf_alloc(b, E->chunk))
			return -ENOMEM;
	}
	return 0;
}

/* Split line (modified in place) at commas: up to max cells. */
static size_t split(char *line, char **cells, size_t max)
{
	size_t n = 0;
	char *p = line;
	while (n < max) {
		cells[n++] = p;
		char *c = strchr(p, ',');
		if (!c)
			break;
		*c = 0;
		p = c + 1;
	}
	return n;
}

#define CSV_MAX_CELLS 2048

static int csv_pass(struct emit *E, const char *path, bool spm)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return spmtap_seterr(E->err, E->errlen, errno, "%s: %s", path, strerror(errno));
	char *line = NULL, **cells = calloc(CSV_MAX_CELLS, sizeof(char *));
	size_t cap = 0;
	ssize_t len;
	int rc = 0;
	uint32_t fixed = spm ? 4 : 3; /* gpu,xcc,host_ns,gpu_ticks | gpu,host_ns,sensor_ts */
	size_t nhdr = 0;
	char **hdr = NULL;
	long lineno = 0;
	if (!cells)
		rc = -ENOMEM;
	while (!rc && (len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		bool cut = len == 0 || line[len - 1] != '\n';
		if (cut) {
			/* a cut last row (the disk filled, the run was killed): left out, and said */
			E->st->truncated = true;
			break;
		}
		line[--len] = 0;
		if (len && line[len - 1] == '\r')
			line[--len] = 0;
		if (lineno == 1) {
			nhdr = split(line, cells, CSV_MAX_CELLS);
			hdr = calloc(nhdr, sizeof(*hdr));
			if (!hdr) {
				rc = -ENOMEM;
				break;
			}
			for (size_t i = 0; i < nhdr; i++)
				if (!(hdr[i] = strdup(cells[i])))
					rc = -ENOMEM;
			/* each stream's columns by name in this header */
			for (size_t s = 0; s < E->nb; s++) {
				struct sbuf *b = &E->b[s];
				if (strcmp(b->s.source, spm ? "spm" : "smi"))
					continue;
				for (uint32_t c = 0; c < b->s.ncols; c++)
					for (size_t h = fixed; h < nhdr; h++)
						if (b->cols[c].name && !strcmp(hdr[h], b->cols[c].name))
							b->hdr[c] = (int)h;
			}
			continue;
		}
		size_t n = split(line, cells, CSV_MAX_CELLS);
		if (n != nhdr) {
			rc = spmtap_seterr(E->err, E->errlen, EBADMSG, "%s: line %ld has %zu cells, the header %zu",
					   path, lineno, n, nhdr);
			break;
		}
		uint32_t gpu = (uint32_t)strtoul(cells[0], NULL, 10);
		int32_t xcc = spm ? (int32_t)strtol(cells[1], NULL, 10) : -1;
		struct sbuf *b = NULL;
		for (size_t s = 0; s < E->nb && !b; s++)
			if (E->b[s].s.gpu == gpu && E->b[s].s.xcc == xcc && !strcmp(E->b[s].s.source, spm ? "spm" : "smi"))
				b = &E->b[s];
		if (!b) {
			rc = spmtap_seterr(E->err, E->errlen, EBADMSG,
					   "%s: line %ld: GPU %u%s is no stream of its metadata", path, lineno, gpu,
					   spm ? " XCC" : "");
			break;
		}
		const char *tcell = cells[spm ? 3 : 2];
		int64_t t = strtoll(cells[spm ? 2 : 1], NULL, 10);
		uint32_t i;
		rc = sbuf_row(E, b, t, *tcell != 0, strtoull(tcell, NULL, 10), &i);
		for (uint32_t c = 0; !rc && c < b->s.ncols; c++) {
			const char *v = b->hdr[c] >= 0 ? cells[b->hdr[c]] : "";
			if (!*v) {
				sbuf_set_missing(b, c, i);
				b->vals[c][i] = 0;
			} else if (b->cols[c].type == SERIES_U64) {
				b->vals[c][i] = strtoull(v, NULL, 10);
			} else {
				double d = strtod(v, NULL);
				memcpy(&b->vals[c][i], &d, sizeof(d));
			}
		}
	}
	for (size_t s = 0; !rc && s < E->nb; s++)
		if (!strcmp(E->b[s].s.source, spm ? "spm" : "smi"))
			rc = sbuf_flush(E, &E->b[s]);
	if (rc == -ENOMEM)
		spmtap_seterr(E->err, E->errlen, ENOMEM, "%s: out of memory", path);
	for (size_t i = 0; hdr && i < nhdr; i++)
		free(hdr[i]);
	free(hdr);
	free(cells);
	free(line);
	fclose(f);
	return rc;
}

static int csv_slices(struct emit *E, const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return spmtap_seterr(E->err, E->errlen, errno, "%s: %s", path, strerror(errno));
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	long lineno = 0;
	int rc = 0;
	while (!rc && (len = getline(&line, &cap, f)) >= 0) {
		if (++lineno == 1)
			continue; /* start_ns,end_ns,name */
		if (line[len - 1] != '\n') {
			E->st->truncated = true;
			break;
		}
		line[--len] = 0;
		char *cells[3];
		if (split(line, cells, 3) != 3)
			continue;
		struct series_slice sl = {
			.start_ns = mg_clock_map(&E->node->clk, strtoll(cells[0], NULL, 10), NULL),
			.end_ns = mg_clock_map(&E->node->clk, strtoll(cells[1], NULL, 10), NULL),
			.name = cells[2], .node = E->node->key,
		};
		rc = E->sink->slice(E->sink->ctx, &sl, E->err, E->errlen);
		E->st->slices++;
	}
	free(line);
	fclose(f);
	return rc;
}

/* ---- NAME_craypm.csv: one node-level stream (source "cray_pm"), sensor-trace v1 ---- */

#define PM_SOURCE "cray_pm"

/*
 * Its stream from the header (time_ns, then NAME[W|J] and NAME[ts_ns]):
 * one f64 column per NAME[W] / NAME[J], named NAME (pm.power, ...); the
 * ts_ns columns are the row time itself (the snapshot's own stamp) and are
 * left out.  Added to E->b before any stream is begun.
 */
static int pm_stream(struct emit *E)
{
	const char *path = E->node->pm_csv;
	if (!path)
		return 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return spmtap_seterr(E->err, E->errlen, errno, "%s: %s", path, strerror(errno));
	char *line = NULL, *cells[CSV_MAX_CELLS];
	size_t cap = 0;
	ssize_t len = getline(&line, &cap, f);
	fclose(f);
	if (len <= 0 || line[len - 1] != '\n') {
		free(line);
		return spmtap_seterr(E->err, E->errlen, EBADMSG, "%s: no header line", path);
	}
	line[--len] = 0;
	if (len && line[len - 1] == '\r')
		line[--len] = 0;
	size_t nh = split(line, cells, CSV_MAX_CELLS);
	struct sbuf *nb = realloc(E->b, (E->nb + 1) * sizeof(*E->b));
	if (!nb) {
		free(line);
		return -ENOMEM;
	}
	E->b = nb;
	struct sbuf *b = &E->b[E->nb++];
	memset(b, 0, sizeof(*b));
	b->s.id = (uint32_t)E->nb;
	b->s.source = dup0(PM_SOURCE);
	b->s.xcc = -1;
	b->s.node = E->node->key;
	b->s.device_name = dup0("node");
	b->rows_expected = -1;
	b->cols = calloc(nh, sizeof(*b->cols));
	int *at = calloc(nh, sizeof(*at));
	int rc = b->cols && at && b->s.source ? 0 : -ENOMEM;
	for (size_t h = 1; !rc && h < nh; h++) {
		char *u = strrchr(cells[h], '[');
		if (!u || (strcmp(u, "[W]") && strcmp(u, "[J]")))
			continue; /* NAME[ts_ns]: the row time */
		at[b->s.ncols] = (int)h;
		struct series_column *c = &b->cols[b->s.ncols++];
		c->name = strndup(cells[h], (size_t)(u - cells[h]));
		c->unit = strndup(u + 1, 1);
		c->type = SERIES_F64;
		if (!c->name || !c->unit)
			rc = -ENOMEM;
	}
	b->s.cols = b->cols;
	if (!rc && sbuf_alloc(b, E->chunk))
		rc = -ENOMEM;
	for (uint32_t c = 0; !rc && c < b->s.ncols; c++)
		b->hdr[c] = at[c];
	free(at);
	free(line);
	return rc;
}

/* Its rows: time_ns on the node's BOOTTIME, mapped like every other time; an empty cell is missing. */
static int pm_pass(struct emit *E)
{
	struct sbuf *b = NULL;
	for (size_t i = 0; i < E->nb && !b; i++)
		if (!strcmp(E->b[i].s.source, PM_SOURCE))
			b = &E->b[i];
	if (!b)
		return 0;
	const char *path = E->node->pm_csv;
	FILE *f = fopen(path, "r");
	if (!f)
		return spmtap_seterr(E->err, E->errlen, errno, "%s: %s", path, strerror(errno));
	char *line = NULL, **cells = calloc(CSV_MAX_CELLS, sizeof(char *));
	size_t cap = 0;
	ssize_t len;
	long lineno = 0;
	int rc = cells ? 0 : -ENOMEM;
	while (!rc && (len = getline(&line, &cap, f)) >= 0) {
		if (++lineno == 1)
			continue;
		if (line[len - 1] != '\n') {
			E->st->truncated = true; /* a cut last row */
			break;
		}
		line[--len] = 0;
		if (len && line[len - 1] == '\r')
			line[--len] = 0;
		if (!len)
			continue;
		size_t n = split(line, cells, CSV_MAX_CELLS);
		uint32_t i;
		rc = sbuf_row(E, b, strtoll(cells[0], NULL, 10), false, 0, &i);
		for (uint32_t c = 0; !rc && c < b->s.ncols; c++) {
			const char *v = (size_t)b->hdr[c] < n ? cells[b->hdr[c]] : "";
			double d = *v ? strtod(v, NULL) : 0;
			if (!*v)
				sbuf_set_missing(b, c, i);
			memcpy(&b->vals[c][i], &d, sizeof(d));
		}
	}
	if (!rc)
		rc = sbuf_flush(E, b);
	if (rc == -ENOMEM)
		spmtap_seterr(E->err, E->errlen, ENOMEM, "%s: out of memory", path);
	free(cells);
	free(line);
	fclose(f);
	return rc;
}

static int emit_csv(struct emit *E)
{
	int rc = csv_streams(E);
	if (!rc)
		rc = pm_stream(E);
	if (rc)
		return rc == -ENOMEM ? spmtap_seterr(E->err, E->errlen, ENOMEM, "%s: out of memory", E->node->path) : rc;
	for (size_t i = 0; !rc && i < E->nb; i++)
		rc = E->sink->begin(E->sink->ctx, &E->b[i].s, E->err, E->errlen);
	if (!rc && E->node->spm_csv)
		rc = csv_pass(E, E->node->spm_csv, true);
	if (!rc && E->node->smi_csv)
		rc = csv_pass(E, E->node->smi_csv, false);
	if (!rc)
		rc = pm_pass(E);
	if (!rc && E->node->phases_csv)
		rc = csv_slices(E, E->node->phases_csv);
	return rc;
}

/* ---- SQLite ---- */

static int sq_fail(struct emit *E, sqlite3 *h, const char *what)
{
	return spmtap_seterr(E->err, E->errlen, EBADMSG, "%s: %s: %s (a damaged or cut file?)", E->node->db, what,
			     h ? sqlite3_errmsg(h) : "cannot open");
}

static int sq_streams(struct emit *E, sqlite3 *h)
{
	sqlite3_stmt *st = NULL, *mt = NULL;
	int rc = 0;
	if (sqlite3_prepare_v2(h, "SELECT id, source, gpu, gpu_id, xcc, device_name, tick_domain, ncols, sample_table "
				  "FROM stream ORDER BY id", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(h, "SELECT col, name, unit, type FROM metric WHERE stream_id = ?1 ORDER BY col", -1,
			       &mt, NULL) != SQLITE_OK) {
		rc = sq_fail(E, h, "reading its streams (schema version 2 needed)");
		goto out;
	}
	size_t cap = 0;
	int s;
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		if (E->nb == cap) {
			cap = cap ? 2 * cap : 8;
			struct sbuf *nbuf = realloc(E->b, cap * sizeof(*nbuf));
			if (!nbuf) {
				rc = spmtap_seterr(E->err, E->errlen, ENOMEM, "out of memory");
				goto out;
			}
			E->b = nbuf;
		}
		struct sbuf *b = &E->b[E->nb++];
		memset(b, 0, sizeof(*b));
		b->s.id = (uint32_t)sqlite3_column_int64(st, 0);
		b->s.source = dup0((const char *)sqlite3_column_text(st, 1));
		b->s.gpu = (uint32_t)sqlite3_column_int64(st, 2);
		b->s.gpu_id = (uint32_t)sqlite3_column_int64(st, 3);
		b->s.xcc = (int32_t)sqlite3_column_int64(st, 4);
		b->s.device_name = dup0((const char *)sqlite3_column_text(st, 5));
		b->s.tick_domain = dup0((const char *)sqlite3_column_text(st, 6));
		b->s.ncols = (uint32_t)sqlite3_column_int64(st, 7);
		const char *tab = (const char *)sqlite3_column_text(st, 8);
		snprintf(b->table, sizeof(b->table), "%s", tab ? tab : "");
		b->s.node = E->node->key;
		b->cols = calloc(b->s.ncols ? b->s.ncols : 1, sizeof(*b->cols));
		if (!b->cols || !b->s.source) {
			rc = spmtap_seterr(E->err, E->errlen, ENOMEM, "out of memory");
			goto out;
		}
		sqlite3_bind_int64(mt, 1, b->s.id);
		uint32_t got = 0;
		while (sqlite3_step(mt) == SQLITE_ROW) {
			uint32_t c = (uint32_t)sqlite3_column_int64(mt, 0);
			if (c >= b->s.ncols)
				continue;
			b->cols[c].name = dup0((const char *)sqlite3_column_text(mt, 1));
			b->cols[c].unit = dup0((const char *)sqlite3_column_text(mt, 2));
			const char *ty = (const char *)sqlite3_column_text(mt, 3);
			b->cols[c].type = ty && !strcmp(ty, "u64") ? SERIES_U64 : SERIES_F64;
			got++;
		}
		sqlite3_reset(mt);
		b->s.cols = b->cols;
		b->rows_expected = meta_rows(E->node->meta, b->s.source, b->s.gpu, b->s.xcc);
		if (got != b->s.ncols || strncmp(b->table, "samples_", 8) || !b->cols[0].name) {
			rc = spmtap_seterr(E->err, E->errlen, EBADMSG, "%s: stream %u: its metrics do not match it",
					   E->node->db, b->s.id);
			goto out;
		}
		if (sbuf_alloc(b, E->chunk)) {
			rc = spmtap_seterr(E->err, E->errlen, ENOMEM, "out of memory");
			goto out;
		}
	}
	if (s != SQLITE_DONE)
		rc = sq_fail(E, h, "reading its streams");
out:
	sqlite3_finalize(st);
	sqlite3_finalize(mt);
	return rc;
}

static int sq_pass(struct emit *E, sqlite3 *h, struct sbuf *b)
{
	char sql[64 + 16 * 64];
	size_t n = (size_t)snprintf(sql, sizeof(sql), "SELECT host_ns, ticks");
	/* a stream's values by name would need quoting: v0..vN are the schema's (docs/formats/sqlite.md) */
	char *q = NULL;
	size_t qlen = 0;
	FILE *mf = open_memstream(&q, &qlen);
	if (!mf)
		return spmtap_seterr(E->err, E->errlen, ENOMEM, "out of memory");
	fputs(sql, mf);
	(void)n;
	for (uint32_t c = 0; c < b->s.ncols; c++)
		fprintf(mf, ", v%u", c);
	fprintf(mf, " FROM %s ORDER BY host_ns, idx", b->table);
	fclose(mf);
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (!q || sqlite3_prepare_v2(h, q, -1, &st, NULL) != SQLITE_OK) {
		free(q);
		return sq_fail(E, h, "reading a stream's table");
	}
	free(q);
	int s;
	while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
		bool has_ticks = sqlite3_column_type(st, 1) != SQLITE_NULL;
		uint32_t i;
		rc = sbuf_row(E, b, sqlite3_column_int64(st, 0), has_ticks, (uint64_t)sqlite3_column_int64(st, 1), &i);
		for (uint32_t c = 0; !rc && c < b->s.ncols; c++) {
			int ty = sqlite3_column_type(st, 2 + (int)c);
			if (ty == SQLITE_NULL) {
				sbuf_set_missing(b, c, i);
				b->vals[c][i] = 0;
			} else if (b->cols[c].type == SERIES_U64) {
				/* above 2^63-1 the writer stored the nearest REAL */
				b->vals[c][i] = ty == SQLITE_INTEGER ? (uint64_t)sqlite3_column_int64(st, 2 + (int)c)
								     : (uint64_t)sqlite3_column_double(st, 2 + (int)c);
			} else {
				double d = sqlite3_column_double(st, 2 + (int)c);
				memcpy(&b->vals[c][i], &d, sizeof(d));
			}
		}
	}
	if (!rc && s != SQLITE_DONE)
		rc = sq_fail(E, h, "reading samples");
	sqlite3_finalize(st);
	return rc ? rc : sbuf_flush(E, b);
}

static int sq_slices(struct emit *E, sqlite3 *h)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(h, "SELECT start_ns, end_ns, name, track, category, depth, pid FROM slice "
				  "ORDER BY start_ns, id", -1, &st, NULL) != SQLITE_OK)
		return sq_fail(E, h, "reading its slices");
	int rc = 0, s;
	while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
		const char *cat = (const char *)sqlite3_column_text(st, 4);
		struct series_slice sl = {
			.start_ns = mg_clock_map(&E->node->clk, sqlite3_column_int64(st, 0), NULL),
			.end_ns = mg_clock_map(&E->node->clk, sqlite3_column_int64(st, 1), NULL),
			.name = (const char *)sqlite3_column_text(st, 2),
			.track = (uint32_t)sqlite3_column_int64(st, 3),
			.category = cat && strcmp(cat, "phase") ? cat : NULL,
			.depth = (uint32_t)sqlite3_column_int64(st, 5),
			.pid = (uint32_t)sqlite3_column_int64(st, 6),
			.node = E->node->key,
		};
		rc = E->sink->slice(E->sink->ctx, &sl, E->err, E->errlen);
		E->st->slices++;
	}
	if (!rc && s != SQLITE_DONE)
		rc = sq_fail(E, h, "reading its slices");
	sqlite3_finalize(st);
	return rc;
}

static int emit_sqlite(struct emit *E)
{
	sqlite3 *h = NULL;
	if (sqlite3_open_v2(E->node->db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		int rc = sq_fail(E, h, "opening");
		sqlite3_close(h);
		return rc;
	}
	/* a small page cache: merge's memory is its chunks */
	sqlite3_exec(h, "PRAGMA cache_size=-2048", NULL, NULL, NULL);
	int rc = sq_streams(E, h);
	if (!rc && (rc = pm_stream(E)) == -ENOMEM)
		rc = spmtap_seterr(E->err, E->errlen, ENOMEM, "%s: out of memory", E->node->path);
	for (size_t i = 0; !rc && i < E->nb; i++)
		rc = E->sink->begin(E->sink->ctx, &E->b[i].s, E->err, E->errlen);
	for (size_t i = 0; !rc && i < E->nb; i++)
		if (strcmp(E->b[i].s.source, PM_SOURCE))
			rc = sq_pass(E, h, &E->b[i]);
	if (!rc)
		rc = pm_pass(E);
	if (!rc)
		rc = sq_slices(E, h);
	sqlite3_close(h);
	return rc;
}

int mg_node_emit(const struct mg_node *n, uint32_t chunk, bool accept_truncated, const struct mg_sink *sink,
		 struct mg_node_stats *st, char *err, size_t errlen)
{
	struct emit E = { .node = n, .sink = sink, .chunk = chunk ? chunk : MERGE_CHUNK_DEFAULT, .st = st,
			  .err = err, .errlen = errlen };
	memset(st, 0, sizeof(*st));
	struct series_node sn = {
		.node = n->key, .rank = n->rank, .hostname = n->hostname, .recording = n->path,
		.clock_method = n->clk.method, .max_bound_ns = n->clk.max_bound_ns,
	};
	int rc = sink->node(sink->ctx, &sn, err, errlen);
	if (!rc)
		rc = n->db ? emit_sqlite(&E) : emit_csv(&E);
	if (!rc)
		rc = mg_node_kernels(n, sink, &st->dispatches, err, errlen);
	/* rows against the metadata: fewer is a truncated input */
	for (size_t i = 0; !rc && i < E.nb; i++)
		if (E.b[i].rows_expected >= 0 && E.b[i].rows < E.b[i].rows_expected)
			st->truncated = true;
	if (!rc && st->truncated && !accept_truncated)
		rc = spmtap_seterr(err, errlen, EBADMSG,
				   "%s: truncated recording (fewer rows than its metadata says, or a cut last row): "
				   "merge it with --accept-truncated",
				   n->path);
	emit_free(&E);
	return rc;
}
