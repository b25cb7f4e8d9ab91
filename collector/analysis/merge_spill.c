/* SPDX-License-Identifier: MIT */
/*
 * A node's chunk file (merge.h, the MPI path): the calls a node's pass
 * makes (node, streams, time-mapped chunks, slices) written as records, in
 * order, and replayed into the outputs by rank 0.  Private to one merge
 * run (written and read by the same binary on the same machine), so it is
 * native-endian with no versioning: a tag byte, then the fields.
 *   'N' key rank bound  hostname recording method
 *   'S' id gpu gpu_id xcc ncols  source device tick  ncols x (type name unit)
 *   'C' id n has_ticks  host[n] [ticks[n]]  ncols x (values[n] has_missing [bitmap])
 *   'L' start end track depth pid gpu  name category
 *   'K' n  n x (corr queue index sticks eticks start end pid tid grid[3] wg[3] status gpu  kernel)
 *   'E' the end: a file without it was cut
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/merge.h"
#include "log.h"

struct mg_spill {
	FILE *f;
	char *path;
	uint32_t node;
	/* the streams' column counts, for the chunks */
	struct { uint32_t id, ncols; } *st;
	size_t nst, cap;
};

static int put(struct mg_spill *sp, const void *p, size_t n)
{
	return fwrite(p, 1, n, sp->f) == n ? 0 : -EIO;
}

static int put_u32(struct mg_spill *sp, uint32_t v) { return put(sp, &v, sizeof(v)); }
static int put_i64(struct mg_spill *sp, int64_t v) { return put(sp, &v, sizeof(v)); }

static int put_str(struct mg_spill *sp, const char *s)
{
	uint32_t n = s ? (uint32_t)strlen(s) + 1 : 0; /* 0: NULL */
	int rc = put_u32(sp, n);
	return rc || !n ? rc : put(sp, s, n - 1);
}

static int io_err(struct mg_spill *sp, char *err, size_t errlen)
{
	return spmtap_seterr(err, errlen, errno ? errno : EIO, "%s: %s", sp->path, strerror(errno ? errno : EIO));
}

static int sp_node(void *ctx, const struct series_node *n, char *err, size_t errlen)
{
	struct mg_spill *sp = ctx;
	sp->node = n->node;
	int rc = put(sp, "N", 1);
	rc = rc ? rc : put_u32(sp, n->node);
	rc = rc ? rc : put_i64(sp, n->rank);
	rc = rc ? rc : put_i64(sp, n->max_bound_ns);
	rc = rc ? rc : put_str(sp, n->hostname);
	rc = rc ? rc : put_str(sp, n->recording);
	rc = rc ? rc : put_str(sp, n->clock_method);
	return rc ? io_err(sp, err, errlen) : 0;
}

static int sp_begin(void *ctx, const struct series_stream *s, char *err, size_t errlen)
{
	struct mg_spill *sp = ctx;
	if (sp->nst == sp->cap) {
		size_t nc = sp->cap ? 2 * sp->cap : 16;
		void *n = realloc(sp->st, nc * sizeof(*sp->st));
		if (!n)
			return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
		sp->st = n;
		sp->cap = nc;
	}
	sp->st[sp->nst].id = s->id;
	sp->st[sp->nst++].ncols = s->ncols;
	int rc = put(sp, "S", 1);
	rc = rc ? rc : put_u32(sp, s->id);
	rc = rc ? rc : put_u32(sp, s->gpu);
	rc = rc ? rc : put_u32(sp, s->gpu_id);
	rc = rc ? rc : put_i64(sp, s->xcc);
	rc = rc ? rc : put_u32(sp, s->ncols);
	rc = rc ? rc : put_str(sp, s->source);
	rc = rc ? rc : put_str(sp, s->device_name);
	rc = rc ? rc : put_str(sp, s->tick_domain);
	for (uint32_t c = 0; !rc && c < s->ncols; c++) {
		rc = put_u32(sp, (uint32_t)s->cols[c].type);
		rc = rc ? rc : put_str(sp, s->cols[c].name);
		rc = rc ? rc : put_str(sp, s->cols[c].unit);
	}
	return rc ? io_err(sp, err, errlen) : 0;
}

static int sp_write(void *ctx, const struct series_chunk *c, char *err, size_t errlen)
{
	struct mg_spill *sp = ctx;
	uint32_t nc = c->stream->ncols, words = (c->n + 63) / 64;
	int rc = put(sp, "C", 1);
	rc = rc ? rc : put_u32(sp, c->stream->id);
	rc = rc ? rc : put_u32(sp, c->n);
	rc = rc ? rc : put_u32(sp, c->ticks != NULL);
	rc = rc ? rc : put(sp, c->host_ns, c->n * sizeof(int64_t));
	if (!rc && c->ticks)
		rc = put(sp, c->ticks, c->n * sizeof(uint64_t));
	for (uint32_t k = 0; !rc && k < nc; k++) {
		rc = put(sp, c->values[k], c->n * sizeof(uint64_t));
		bool m = c->missing && c->missing[k];
		rc = rc ? rc : put_u32(sp, m);
		if (!rc && m)
			rc = put(sp, c->missing[k], words * sizeof(uint64_t));
	}
	return rc ? io_err(sp, err, errlen) : 0;
}

static int sp_slice(void *ctx, const struct series_slice *s, char *err, size_t errlen)
{
	struct mg_spill *sp = ctx;
	int rc = put(sp, "L", 1);
	rc = rc ? rc : put_i64(sp, s->start_ns);
	rc = rc ? rc : put_i64(sp, s->end_ns);
	rc = rc ? rc : put_u32(sp, s->track);
	rc = rc ? rc : put_u32(sp, s->depth);
	rc = rc ? rc : put_u32(sp, s->pid);
	rc = rc ? rc : put_u32(sp, s->gpu);
	rc = rc ? rc : put_str(sp, s->name);
	rc = rc ? rc : put_str(sp, s->category);
	return rc ? io_err(sp, err, errlen) : 0;
}

static int sp_dispatches(void *ctx, const struct series_dispatch *d, size_t n, char *err, size_t errlen)
{
	struct mg_spill *sp = ctx;
	int rc = put(sp, "K", 1);
	rc = rc ? rc : put_i64(sp, (int64_t)n);
	for (size_t i = 0; !rc && i < n; i++) {
		const struct series_dispatch *x = &d[i];
		int64_t v[] = { (int64_t)x->corr_id, (int64_t)x->queue_id, (int64_t)x->packet_index,
				(int64_t)x->start_ticks, (int64_t)x->end_ticks, x->start_ns, x->end_ns };
		uint32_t u[] = { x->pid, x->tid, x->grid[0], x->grid[1], x->grid[2], x->wg[0], x->wg[1], x->wg[2],
				 (uint32_t)x->status, (uint32_t)x->gpu };
		rc = put(sp, v, sizeof(v));
		rc = rc ? rc : put(sp, u, sizeof(u));
		rc = rc ? rc : put_str(sp, x->kernel);
	}
	return rc ? io_err(sp, err, errlen) : 0;
}

int mg_spill_open(struct mg_spill **out, const char *path, char *err, size_t errlen)
{
	struct mg_spill *sp = calloc(1, sizeof(*sp));
	if (!sp || !(sp->path = strdup(path))) {
		free(sp);
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	}
	if (!(sp->f = fopen(path, "wb"))) {
		int e = errno;
		free(sp->path);
		free(sp);
		return spmtap_seterr(err, errlen, e, "%s: %s", path, strerror(e));
	}
	*out = sp;
	return 0;
}

struct mg_sink mg_spill_sink(struct mg_spill *sp)
{
	return (struct mg_sink){ .ctx = sp, .node = sp_node, .begin = sp_begin, .write = sp_write, .slice = sp_slice,
				 .dispatches = sp_dispatches };
}

int mg_spill_close(struct mg_spill *sp, char *err, size_t errlen)
{
	int rc = put(sp, "E", 1);
	if (fclose(sp->f) && !rc)
		rc = -EIO;
	if (rc)
		rc = spmtap_seterr(err, errlen, EIO, "%s: cannot write", sp->path);
	free(sp->path);
	free(sp->st);
	free(sp);
	return rc;
}

/* ---- replay ---- */

struct rd {
	FILE *f;
	const char *path;
	bool bad;
};

static void get(struct rd *r, void *p, size_t n)
{
	if (!r->bad && fread(p, 1, n, r->f) != n)
		r->bad = true;
	if (r->bad)
		memset(p, 0, n);
}

static uint32_t get_u32(struct rd *r) { uint32_t v; get(r, &v, sizeof(v)); return v; }
static int64_t get_i64(struct rd *r) { int64_t v; get(r, &v, sizeof(v)); return v; }

static char *get_str(struct rd *r)
{
	uint32_t n = get_u32(r);
	if (!n || r->bad || n > (1u << 20))
		return NULL;
	char *s = malloc(n);
	if (!s) {
		r->bad = true;
		return NULL;
	}
	get(r, s, n - 1);
	s[n - 1] = 0;
	return s;
}

/* The streams replayed so far (the chunks name them by id). */
struct rstream {
	struct series_stream s;
	struct series_column *cols;
};

static void rstream_free(struct rstream *x)
{
	for (uint32_t c = 0; c < x->s.ncols; c++) {
		free((char *)x->cols[c].name);
		free((char *)x->cols[c].unit);
	}
	free(x->cols);
	free((char *)x->s.source);
	free((char *)x->s.device_name);
	free((char *)x->s.tick_domain);
}

int mg_spill_replay(const char *path, const struct mg_sink *sink, char *err, size_t errlen)
{
	struct rd r = { .f = fopen(path, "rb"), .path = path };
	if (!r.f)
		return spmtap_seterr(err, errlen, errno, "%s: %s", path, strerror(errno));
	struct rstream *st = NULL;
	size_t nst = 0;
	uint32_t node = 0;
	int rc = 0;
	bool end = false;
	/* a chunk's arrays, grown to the largest chunk */
	int64_t *host = NULL;
	uint64_t *ticks = NULL, **vals = NULL, **miss = NULL;
	uint32_t have_n = 0, have_c = 0;
	while (!rc && !end && !r.bad) {
		char tag;
		if (fread(&tag, 1, 1, r.f) != 1) {
			r.bad = true;
			break;
		}
		if (tag == 'E') {
			end = true;
		} else if (tag == 'N') {
			struct series_node n = { 0 };
			n.node = node = get_u32(&r);
			n.rank = (int32_t)get_i64(&r);
			n.max_bound_ns = get_i64(&r);
			char *h = get_str(&r), *p = get_str(&r), *m = get_str(&r);
			n.hostname = h;
			n.recording = p;
			n.clock_method = m;
			if (!r.bad)
				rc = sink->node(sink->ctx, &n, err, errlen);
			free(h);
			free(p);
			free(m);
		} else if (tag == 'S') {
			struct rstream *ns = realloc(st, (nst + 1) * sizeof(*st));
			if (!ns) {
				rc = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
				break;
			}
			st = ns;
			struct rstream *x = &st[nst++];
			memset(x, 0, sizeof(*x));
			x->s.id = get_u32(&r);
			x->s.gpu = get_u32(&r);
			x->s.gpu_id = get_u32(&r);
			x->s.xcc = (int32_t)get_i64(&r);
			uint32_t nc = get_u32(&r);
			if (r.bad || nc > 4096)
				break;
			x->s.source = get_str(&r);
			x->s.device_name = get_str(&r);
			x->s.tick_domain = get_str(&r);
			x->cols = calloc(nc ? nc : 1, sizeof(*x->cols));
			if (!x->cols) {
				r.bad = true;
				break;
			}
			x->s.ncols = nc;
			for (uint32_t c = 0; c < nc; c++) {
				x->cols[c].type = (enum series_type)get_u32(&r);
				x->cols[c].name = get_str(&r);
				x->cols[c].unit = get_str(&r);
			}
			x->s.cols = x->cols;
			x->s.node = node;
			if (!r.bad)
				rc = sink->begin(sink->ctx, &x->s, err, errlen);
		} else if (tag == 'C') {
			uint32_t id = get_u32(&r), n = get_u32(&r), ht = get_u32(&r);
			struct rstream *x = NULL;
			for (size_t i = 0; i < nst && !x; i++)
				if (st[i].s.id == id)
					x = &st[i];
			if (!x || r.bad || n > (1u << 26)) {
				r.bad = true;
				break;
			}
			uint32_t nc = x->s.ncols, words = (n + 63) / 64;
			if (n > have_n || nc > have_c) {
				for (uint32_t c = 0; c < have_c; c++) {
					free(vals[c]);
					free(miss[c]);
				}
				free(vals);
				free(miss);
				free(host);
				free(ticks);
				have_n = n > have_n ? n : have_n;
				have_c = nc > have_c ? nc : have_c;
				host = malloc(have_n * sizeof(*host));
				ticks = malloc(have_n * sizeof(*ticks));
				vals = calloc(have_c ? have_c : 1, sizeof(*vals));
				miss = calloc(have_c ? have_c : 1, sizeof(*miss));
				bool ok = host && ticks && vals && miss;
				for (uint32_t c = 0; ok && c < have_c; c++)
					ok = (vals[c] = malloc(have_n * sizeof(uint64_t))) &&
					     (miss[c] = malloc(((have_n + 63) / 64) * sizeof(uint64_t)));
				if (!ok) {
					rc = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
					break;
				}
			}
			get(&r, host, n * sizeof(int64_t));
			if (ht)
				get(&r, ticks, n * sizeof(uint64_t));
			const void *cv[nc ? nc : 1];
			const uint64_t *cm[nc ? nc : 1];
			for (uint32_t c = 0; c < nc; c++) {
				get(&r, vals[c], n * sizeof(uint64_t));
				cv[c] = vals[c];
				cm[c] = NULL;
				if (get_u32(&r)) {
					get(&r, miss[c], words * sizeof(uint64_t));
					cm[c] = miss[c];
				}
			}
			struct series_chunk ch = { .stream = &x->s, .n = n, .host_ns = host, .ticks = ht ? ticks : NULL,
						   .values = cv, .missing = cm };
			if (!r.bad)
				rc = sink->write(sink->ctx, &ch, err, errlen);
		} else if (tag == 'L') {
			struct series_slice s = { 0 };
			s.start_ns = get_i64(&r);
			s.end_ns = get_i64(&r);
			s.track = get_u32(&r);
			s.depth = get_u32(&r);
			s.pid = get_u32(&r);
			s.gpu = get_u32(&r);
			char *name = get_str(&r), *cat = get_str(&r);
			s.name = name;
			s.category = cat;
			s.node = node;
			if (!r.bad)
				rc = sink->slice(sink->ctx, &s, err, errlen);
			free(name);
			free(cat);
		} else if (tag == 'K') {
			int64_t n = get_i64(&r);
			if (r.bad || n < 0 || n > (1ll << 32)) {
				r.bad = true;
				break;
			}
			struct series_dispatch *d = calloc(n ? (size_t)n : 1, sizeof(*d));
			if (!d) {
				rc = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
				break;
			}
			for (int64_t i = 0; i < n && !r.bad; i++) {
				int64_t v[7];
				uint32_t u[10];
				get(&r, v, sizeof(v));
				get(&r, u, sizeof(u));
				d[i] = (struct series_dispatch){
					.corr_id = (uint64_t)v[0], .queue_id = (uint64_t)v[1], .packet_index = (uint64_t)v[2],
					.start_ticks = (uint64_t)v[3], .end_ticks = (uint64_t)v[4], .start_ns = v[5],
					.end_ns = v[6], .pid = u[0], .tid = u[1], .grid = { u[2], u[3], u[4] },
					.wg = { u[5], u[6], u[7] }, .status = (int32_t)u[8], .gpu = (int32_t)u[9],
					.node = node,
				};
				/* "" is written as a one-byte string and comes back as ""; NULL never is */
				char *k = get_str(&r);
				d[i].kernel = k ? k : strdup("");
			}
			if (!r.bad && sink->dispatches)
				rc = sink->dispatches(sink->ctx, d, (size_t)n, err, errlen);
			for (int64_t i = 0; i < n; i++)
				free((char *)d[i].kernel);
			free(d);
		} else {
			r.bad = true;
		}
	}
	if (!rc && (r.bad || !end))
		rc = spmtap_seterr(err, errlen, EBADMSG, "%s: chunk file cut short or damaged", path);
	for (uint32_t c = 0; c < have_c; c++) {
		free(vals[c]);
		free(miss[c]);
	}
	free(vals);
	free(miss);
	free(host);
	free(ticks);
	for (size_t i = 0; i < nst; i++)
		rstream_free(&st[i]);
	free(st);
	fclose(r.f);
	return rc;
}

void mg_summary_print(FILE *f, const struct mg_summary_row *rows, size_t n)
{
	fprintf(f, "%-6s %-6s %-20s %-24s %14s %10s %8s  %s\n", "node", "rank", "hostname", "clock", "max bound",
		"samples", "slices", "recording");
	for (size_t i = 0; i < n; i++) {
		const struct mg_node *x = rows[i].node;
		char rank[16], bound[32];
		if (x->rank >= 0)
			snprintf(rank, sizeof(rank), "%d", x->rank);
		else
			snprintf(rank, sizeof(rank), "-");
		if (x->clk.max_bound_ns >= 0)
			snprintf(bound, sizeof(bound), "%.3f us", x->clk.max_bound_ns / 1e3);
		else
			snprintf(bound, sizeof(bound), "unknown");
		fprintf(f, "%-6u %-6s %-20s %-24s %14s %10llu %8llu  %s%s\n", x->key, rank, x->hostname, x->clk.method,
			bound, (unsigned long long)rows[i].st.samples, (unsigned long long)rows[i].st.slices, x->path,
			rows[i].st.truncated ? " (truncated)" : "");
	}
}
