/* SPDX-License-Identifier: MIT */
/*
 * The outputs of `spmtap merge` (merge.h): the writers (SQLite, Perfetto)
 * behind one sink.  Streams are renumbered in the order they arrive (node
 * after node), so that two nodes' stream 1 stay apart and both paths
 * (serial, MPI replay) give the same ids.  The files are written under
 * FINAL.part and renamed together at the end, replacing an earlier set of
 * the same NAME as `spmtap record` does (outset.h, docs/formats/csv.md
 * "Temporary names"); a merge that fails removes its .part files and
 * leaves the earlier outputs as they were.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/analysis/merge.h"
#include "collector/lib/outset.h"
#include "collector/lib/session.h"
#include "collector/lib/writer.h"
#include "log.h"
#include "spmtap.h"

struct mg_stream {
	uint32_t node, local_id;
	struct series_stream s; /* owned copy, id renumbered */
};

struct mg_out {
	struct out_set *files;
	const struct writer_ops *ops[3];
	struct writer *w[3];
	size_t nw;
	char *meta_path;  /* DIR/NAME_meta.json */
	char *base;       /* DIR/NAME */
	json_t *meta;
	struct mg_stream **streams; /* pointers: the writers keep the address of a declared stream */
	size_t ns, cap;
	size_t last;
	uint32_t next_id;
	bool closed;
};

static void stream_free(struct mg_stream *m)
{
	if (!m)
		return;
	for (uint32_t c = 0; c < m->s.ncols; c++) {
		free((char *)m->s.cols[c].name);
		free((char *)m->s.cols[c].unit);
	}
	free((void *)m->s.cols);
	free((char *)m->s.source);
	free((char *)m->s.device_name);
	free((char *)m->s.tick_domain);
	free(m);
}

void mg_out_free(struct mg_out *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->nw; i++)
		if (o->w[i])
			o->ops[i]->end(o->w[i], NULL, 0);
	if (!o->closed && o->files)
		out_set_discard(o->files);
	for (size_t i = 0; i < o->ns; i++)
		stream_free(o->streams[i]);
	free(o->streams);
	out_set_free(o->files);
	free(o->meta_path);
	free(o->base);
	json_decref(o->meta);
	free(o);
}

static char *dup0(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int out_node(void *ctx, const struct series_node *n, char *err, size_t errlen)
{
	struct mg_out *o = ctx;
	for (size_t i = 0; i < o->nw; i++) {
		int rc = o->ops[i]->node(o->w[i], n, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

static int out_begin(void *ctx, const struct series_stream *s, char *err, size_t errlen)
{
	struct mg_out *o = ctx;
	if (o->ns == o->cap) {
		size_t nc = o->cap ? 2 * o->cap : 32;
		struct mg_stream **n = realloc(o->streams, nc * sizeof(*n));
		if (!n)
			return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
		o->streams = n;
		o->cap = nc;
	}
	struct mg_stream *m = calloc(1, sizeof(*m));
	struct series_column *cols = calloc(s->ncols ? s->ncols : 1, sizeof(*cols));
	if (!m || !cols) {
		free(m);
		free(cols);
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	}
	m->node = s->node;
	m->local_id = s->id;
	m->s = *s;
	m->s.id = ++o->next_id;
	m->s.source = dup0(s->source);
	m->s.device_name = dup0(s->device_name);
	m->s.tick_domain = dup0(s->tick_domain);
	for (uint32_t c = 0; c < s->ncols; c++)
		cols[c] = (struct series_column){ .name = dup0(s->cols[c].name), .unit = dup0(s->cols[c].unit),
						  .type = s->cols[c].type };
	m->s.cols = cols;
	o->streams[o->ns++] = m;
	for (size_t i = 0; i < o->nw; i++) {
		int rc = o->ops[i]->begin(o->w[i], &m->s, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

static struct mg_stream *find(struct mg_out *o, uint32_t node, uint32_t id)
{
	if (o->last < o->ns && o->streams[o->last]->node == node && o->streams[o->last]->local_id == id)
		return o->streams[o->last];
	for (size_t i = o->ns; i-- > 0;)
		if (o->streams[i]->node == node && o->streams[i]->local_id == id) {
			o->last = i;
			return o->streams[i];
		}
	return NULL;
}

static int out_write(void *ctx, const struct series_chunk *c, char *err, size_t errlen)
{
	struct mg_out *o = ctx;
	struct mg_stream *m = find(o, c->stream->node, c->stream->id);
	if (!m)
		return spmtap_seterr(err, errlen, EINVAL, "node %u stream %u: chunk before its stream", c->stream->node,
				     c->stream->id);
	struct series_chunk k = *c;
	k.stream = &m->s;
	for (size_t i = 0; i < o->nw; i++) {
		int rc = o->ops[i]->write(o->w[i], &k, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

static int out_slice(void *ctx, const struct series_slice *s, char *err, size_t errlen)
{
	struct mg_out *o = ctx;
	for (size_t i = 0; i < o->nw; i++) {
		int rc = o->ops[i]->slice(o->w[i], s, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

static int out_dispatches(void *ctx, const struct series_dispatch *d, size_t n, char *err, size_t errlen)
{
	struct mg_out *o = ctx;
	for (size_t i = 0; i < o->nw; i++) {
		int rc = o->ops[i]->dispatches ? o->ops[i]->dispatches(o->w[i], d, n, err, errlen) : 0;
		if (rc)
			return rc;
	}
	return 0;
}

struct mg_sink mg_out_sink(struct mg_out *o)
{
	return (struct mg_sink){ .ctx = o, .node = out_node, .begin = out_begin, .write = out_write,
				 .slice = out_slice, .dispatches = out_dispatches };
}

/* The merged recording's metadata: what was merged, and how each node's clock was aligned. */
static json_t *merged_meta(const struct merge_opts *opt, const struct mg_node *nodes, size_t n)
{
	json_t *m = json_object(), *jn = json_array();
	int64_t maxb = 0;
	bool unknown = false;
	const char *method = NULL;
	bool mixed = false;
	for (size_t i = 0; i < n; i++) {
		const struct mg_node *x = &nodes[i];
		json_t *e = json_object();
		json_object_set_new(e, "node", json_integer(x->key));
		json_object_set_new(e, "rank", x->rank >= 0 ? json_integer(x->rank) : json_null());
		json_object_set_new(e, "hostname", json_string(x->hostname));
		json_object_set_new(e, "recording", json_string(x->path));
		json_object_set_new(e, "clock_method", json_string(x->clk.method));
		json_object_set_new(e, "max_bound_ns",
				    x->clk.max_bound_ns >= 0 ? json_integer(x->clk.max_bound_ns) : json_null());
		json_t *offs = json_object_get(json_object_get(json_object_get(x->meta, "job"), "clock"), "offsets");
		json_object_set_new(e, "offsets", offs ? json_incref(offs) : json_array());
		json_array_append_new(jn, e);
		if (x->clk.max_bound_ns < 0)
			unknown = true;
		else if (x->clk.max_bound_ns > maxb)
			maxb = x->clk.max_bound_ns;
		if (method && strcmp(method, x->clk.method))
			mixed = true;
		method = x->clk.method;
	}
	json_t *mg = json_object();
	json_object_set_new(mg, "nodes", jn);
	json_object_set_new(mg, "reference", json_string("the CLOCK_BOOTTIME of the reference rank (rank 0)"));
	json_object_set_new(mg, "clock_method", json_string(mixed ? "mixed" : method ? method : "none"));
	json_object_set_new(mg, "interpolation", json_string("linear in local_ns between offsets, held outside"));
	json_object_set_new(mg, "max_bound_ns", unknown ? json_null() : json_integer(maxb));
	json_object_set_new(mg, "chunk_rows", json_integer(opt->chunk));
	json_t *job0 = n ? json_object_get(nodes[0].meta, "job") : NULL;
	if (json_object_get(job0, "job_id"))
		json_object_set(mg, "job_id", json_object_get(job0, "job_id"));
	json_object_set_new(m, "merged", mg);
	json_object_set_new(m, "time_base", json_string("CLOCK_BOOTTIME ns of rank 0"));
	json_object_set_new(m, "spmtap_version", json_string(spmtap_version_string()));
	json_object_set_new(m, "command_line", json_string(opt->command_line ? opt->command_line : ""));
	json_object_set_new(m, "hostname", json_string(n ? nodes[0].hostname : ""));
	json_object_set(m, "spm_clock_hz", n ? json_object_get(nodes[0].meta, "spm_clock_hz") : NULL);
	json_t *st = n ? json_object_get(nodes[0].meta, "start_boottime_ns") : NULL;
	json_object_set_new(m, "start_boottime_ns",
			    json_integer(n ? mg_clock_map(&nodes[0].clk, json_integer_value(st), NULL) : 0));
	return m;
}

int mg_out_open(struct mg_out **out, const struct merge_opts *opt, const struct mg_node *nodes, size_t n,
		char *err, size_t errlen)
{
	*out = NULL;
	struct mg_out *o = calloc(1, sizeof(*o));
	if (!o || out_set_new(&o->files))
		goto oom;
	const char *dir = opt->dir && *opt->dir ? opt->dir : ".";
	const char *name = opt->name && *opt->name ? opt->name : "merged";
	if (strchr(name, '/')) {
		mg_out_free(o);
		return spmtap_seterr(err, errlen, EINVAL, "-o %s: a name, not a path (the directory is -d)", name);
	}
	/* as record does: DIR and its missing parents are made, once the inputs were found good */
	struct stat sb;
	errno = 0;
	int mrc = stat(dir, &sb) && errno == ENOENT ? session_make_dir(dir, err, errlen) : 0;
	if (mrc < 0) {
		mg_out_free(o);
		return mrc;
	}
	errno = 0;
	if (stat(dir, &sb) || !S_ISDIR(sb.st_mode)) {
		int e = errno ? errno : ENOTDIR;
		mg_out_free(o);
		return spmtap_seterr(err, errlen, e, "-d %s: %s", dir, strerror(e));
	}
	size_t bl = strlen(dir) + strlen(name) + 2;
	if (!(o->base = malloc(bl)) || !(o->meta_path = malloc(bl + 16)))
		goto oom;
	snprintf(o->base, bl, "%s/%s", dir, name);
	snprintf(o->meta_path, bl + 16, "%s_meta.json", o->base);
	/* an output over an input would remove the input at the rename: refuse */
	for (size_t i = 0; i < n; i++) {
		const char *ins[] = { nodes[i].meta_path, nodes[i].db };
		const char *sfx[] = { "_meta.json", ".db" };
		for (int k = 0; k < 2; k++) {
			char p[PATH_MAX + 32], a[PATH_MAX], b[PATH_MAX];
			snprintf(p, sizeof(p), "%s%s", o->base, sfx[k]);
			if (ins[k] && realpath(ins[k], a) && realpath(p, b) && !strcmp(a, b)) {
				mg_out_free(o);
				return spmtap_seterr(err, errlen, EEXIST,
						     "%s: the output would replace the input %s: choose another -o or -d",
						     p, nodes[i].path);
			}
		}
	}
	o->meta = merged_meta(opt, nodes, n);
	char *extra = json_dumps(json_object_get(o->meta, "merged"), JSON_COMPACT | JSON_SORT_KEYS);
	struct writer_meta wm = {
		.spmtap_version = spmtap_version_string(),
		.command_line = opt->command_line,
		.hostname = n ? nodes[0].hostname : "",
		.start_boottime_ns = json_integer_value(json_object_get(o->meta, "start_boottime_ns")),
		.spm_clock_hz = json_real_value(json_object_get(o->meta, "spm_clock_hz")),
		.extra_json = extra,
		.files = o->files,
	};
	const struct writer_ops *want[3] = { opt->sqlite ? &writer_sqlite : NULL,
					     opt->perfetto ? &writer_perfetto : NULL, opt->otf2 ? &writer_otf2 : NULL };
	static const char *const keys[3] = { "sqlite", "perfetto", "otf2" };
	json_t *files = json_object();
	for (int k = 0; k < 3; k++) {
		if (!want[k])
			continue;
		char p[PATH_MAX + 32];
		snprintf(p, sizeof(p), "%s%s", o->base, want[k]->ext);
		int rc = want[k]->open(&o->w[o->nw], p, &wm, err, errlen);
		if (rc) {
			free(extra);
			json_decref(files);
			mg_out_free(o);
			return rc;
		}
		o->ops[o->nw++] = want[k];
		json_object_set_new(files, keys[k], json_string(strrchr(p, '/') + 1));
	}
	json_object_set_new(files, "meta", json_string(strrchr(o->meta_path, '/') + 1));
	json_object_set_new(o->meta, "files", files);
	free(extra);
	*out = o;
	return 0;
oom:
	mg_out_free(o);
	return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
}

/* DIR/NAME + every suffix record or merge gives NAME: an earlier set under NAME goes as a whole (record's rule). */
static char **old_set(const struct mg_out *o)
{
	static const char *const sfx[] = { "_meta.json", ".db", ".pftrace", ".otf2", "_spm.csv", "_smi.csv",
					   "_phases.csv", "_kernels.csv", ".spmraw" };
	struct stat sb;
	if (stat(o->meta_path, &sb))
		return NULL; /* no earlier NAME_meta.json: nothing under NAME is spmtap's to remove */
	size_t n = sizeof(sfx) / sizeof(sfx[0]);
	char **v = calloc(n + 1, sizeof(*v));
	for (size_t i = 0; v && i < n; i++)
		if ((v[i] = malloc(strlen(o->base) + strlen(sfx[i]) + 1)))
			sprintf(v[i], "%s%s", o->base, sfx[i]);
	return v;
}

int mg_out_close(struct mg_out *o, bool ok, char *err, size_t errlen)
{
	int rc = 0;
	if (ok) {
		json_object_set_new(o->meta, "complete", json_true());
		char *text = json_dumps(o->meta, JSON_COMPACT | JSON_SORT_KEYS);
		char *mg = json_dumps(json_object_get(o->meta, "merged"), JSON_COMPACT | JSON_SORT_KEYS);
		if (!text || !mg)
			rc = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
		for (size_t i = 0; !rc && i < o->nw; i++) {
			if (o->ops[i]->note)
				rc = o->ops[i]->note(o->w[i], "merged", mg, err, errlen);
			if (!rc && o->ops[i]->meta)
				rc = o->ops[i]->meta(o->w[i], text, err, errlen);
		}
		free(text);
		free(mg);
		if (!rc) {
			char *part = out_set_part(o->files, o->meta_path);
			if (!part || json_dump_file(o->meta, part, JSON_INDENT(2) | JSON_SORT_KEYS))
				rc = spmtap_seterr(err, errlen, errno ? errno : EIO, "%s: cannot write", o->meta_path);
			free(part);
		}
	}
	for (size_t i = 0; i < o->nw; i++) {
		int r = o->ops[i]->end(o->w[i], rc ? NULL : err, rc ? 0 : errlen);
		o->w[i] = NULL;
		if (r && !rc)
			rc = r;
	}
	if (ok && !rc) {
		char **old = old_set(o);
		rc = out_set_commit(o->files, (const char *const *)old, err, errlen);
		for (size_t i = 0; old && old[i]; i++)
			free(old[i]);
		free(old);
	} else {
		out_set_discard(o->files);
	}
	o->closed = true;
	return rc;
}

size_t mg_out_nfiles(const struct mg_out *o)
{
	return out_set_count(o->files);
}

const char *mg_out_file(const struct mg_out *o, size_t i)
{
	return out_set_final(o->files, i);
}
