/* SPDX-License-Identifier: MIT */
/*
 * `-f otf2` (writer.h, docs/formats/otf2.md): one node's recording as an
 * OTF2 archive, the directory DIR/NAME.otf2 (traces.otf2 inside is what
 * Vampir and otf2-print open).  A thin layer over otf2w.h, which also writes
 * merged archives of many nodes.  The node's clock offsets come from the
 * last metadata the session gives (its "job" object, when the recording is
 * one rank of a job); its REALTIME anchor from the metadata, else from a
 * reading of both clocks when the writer opens.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/lib/otf2w.h"
#include "collector/lib/outset.h"
#include "collector/lib/writer.h"
#include "log.h"

/* A node of a merged job recording (writer.h node()), by its key. */
struct ow_node {
	uint32_t key;
	struct otf2w_node *n;
};

struct writer {
	struct otf2w *a;
	struct otf2w_node *n; /* the recording's own node; NULL in a merge until a stream needs it */
	const char *hostname;
	char *meta_json; /* the latest recording metadata (its clock offsets are read at the end) */
	struct ow_node *nodes;
	size_t nnodes;
};

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int ow_probe(char *reason, size_t len) { return otf2w_probe(reason, len); }

static int ow_open(struct writer **out, const char *final, const struct writer_meta *meta, char *err,
		   size_t errlen)
{
	*out = NULL;
	if (!final || !*final || !strcmp(final, "-"))
		return spmtap_seterr(err, errlen, EINVAL, "otf2 output needs a directory name, not standard output");
	char *path = out_set_part(meta ? meta->files : NULL, final);
	struct writer *w = calloc(1, sizeof(*w));
	if (!path || !w) {
		free(path);
		free(w);
		return spmtap_seterr(err, errlen, ENOMEM, "%s: out of memory", final);
	}
	char creator[128];
	snprintf(creator, sizeof(creator), "spmtap %s",
		 meta && meta->spmtap_version ? meta->spmtap_version : "");
	int rc = otf2w_open(&w->a, path, creator, err, errlen);
	free(path);
	if (rc) {
		free(w);
		return rc;
	}
	w->hostname = meta ? meta->hostname : NULL;
	*out = w;
	return 0;
}

/*
 * The node a stream or slice belongs to: a merged node by its key, else the
 * recording's own, made at first use (a merge declares its nodes first and
 * has none of its own).
 */
static struct otf2w_node *node_of(struct writer *w, uint32_t key, char *err, size_t errlen)
{
	for (size_t i = 0; i < w->nnodes; i++)
		if (w->nodes[i].key == key)
			return w->nodes[i].n;
	if (!w->n) {
		if (otf2w_node(w->a, &w->n, w->hostname, -1, err, errlen))
			return NULL;
		/* REALTIME at BOOTTIME: the closer of two readings around it, to a few hundred ns. */
		int64_t b0 = clock_ns(CLOCK_BOOTTIME), r = clock_ns(CLOCK_REALTIME), b1 = clock_ns(CLOCK_BOOTTIME);
		otf2w_node_realtime(w->n, b0 + (b1 - b0) / 2, r);
	}
	return w->n;
}

/*
 * A node of a merged job recording: its times come already on rank 0's
 * clock (merge maps them), so no offset is applied; one ClockOffset of 0
 * whose stddev is the node's largest bound keeps the alignment's quality
 * where OTF2 readers look for it.
 */
static int ow_node(struct writer *w, const struct series_node *sn, char *err, size_t errlen)
{
	struct ow_node *v = realloc(w->nodes, (w->nnodes + 1) * sizeof(*v));
	if (!v)
		return spmtap_seterr(err, errlen, ENOMEM, "otf2: out of memory");
	w->nodes = v;
	struct otf2w_node *n = NULL;
	int rc = otf2w_node(w->a, &n, sn->hostname, sn->rank, err, errlen);
	if (rc)
		return rc;
	struct otf2w_offset o = { .local_ns = 0, .offset_ns = 0, .bound_ns = sn->max_bound_ns };
	rc = otf2w_node_offsets(n, &o, 1, err, errlen);
	if (rc)
		return rc;
	w->nodes[w->nnodes++] = (struct ow_node){ .key = sn->node, .n = n };
	return 0;
}

static int ow_begin(struct writer *w, const struct series_stream *s, char *err, size_t errlen)
{
	struct otf2w_node *n = node_of(w, s->node, err, errlen);
	return n ? otf2w_begin(n, s, err, errlen) : -EIO;
}

static int ow_write(struct writer *w, const struct series_chunk *c, char *err, size_t errlen)
{
	struct otf2w_node *n = node_of(w, c && c->stream ? c->stream->node : 0, err, errlen);
	return n ? otf2w_write(n, c, err, errlen) : -EIO;
}

static int ow_slice(struct writer *w, const struct series_slice *s, char *err, size_t errlen)
{
	struct otf2w_node *n = node_of(w, s ? s->node : 0, err, errlen);
	return n ? otf2w_slice(n, s, err, errlen) : -EIO;
}

/* Kept until the end: offsets measured during the run come in later metadata. */
static int ow_meta(struct writer *w, const char *json, char *err, size_t errlen)
{
	char *c = json ? strdup(json) : NULL;
	if (json && !c)
		return spmtap_seterr(err, errlen, ENOMEM, "otf2: out of memory");
	free(w->meta_json);
	w->meta_json = c;
	return 0;
}

static int ow_end(struct writer *w, char *err, size_t errlen)
{
	if (!w)
		return 0;
	/* A recording with nothing in it still has its node (a PROCESS group with its hostname). */
	int rc = !w->nnodes && !node_of(w, 0, err, errlen) ? -EIO : 0;
	if (!rc && w->meta_json && w->n)
		rc = otf2w_node_meta(w->n, w->meta_json, err, errlen);
	int crc = otf2w_close(w->a, rc ? NULL : err, rc ? 0 : errlen);
	free(w->meta_json);
	free(w->nodes);
	free(w);
	return rc ? rc : crc;
}

const struct writer_ops writer_otf2 = {
	.name = "otf2",
	.ext = ".otf2",
	.probe = ow_probe,
	.open = ow_open,
	.begin = ow_begin,
	.write = ow_write,
	.slice = ow_slice,
	.end = ow_end,
	.meta = ow_meta,
	.node = ow_node,
};
