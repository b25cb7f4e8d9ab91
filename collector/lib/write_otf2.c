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

struct writer {
	struct otf2w *a;
	struct otf2w_node *n;
	char *meta_json; /* the latest recording metadata (its clock offsets are read at the end) */
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
	if (!rc)
		rc = otf2w_node(w->a, &w->n, meta ? meta->hostname : NULL, -1, err, errlen);
	if (rc) {
		otf2w_abort(w->a);
		free(w);
		return rc;
	}
	/* REALTIME at BOOTTIME: the closer of two readings around it, to a few hundred ns. */
	int64_t b0 = clock_ns(CLOCK_BOOTTIME), r = clock_ns(CLOCK_REALTIME), b1 = clock_ns(CLOCK_BOOTTIME);
	otf2w_node_realtime(w->n, b0 + (b1 - b0) / 2, r);
	*out = w;
	return 0;
}

static int ow_begin(struct writer *w, const struct series_stream *s, char *err, size_t errlen)
{
	return otf2w_begin(w->n, s, err, errlen);
}

static int ow_write(struct writer *w, const struct series_chunk *c, char *err, size_t errlen)
{
	return otf2w_write(w->n, c, err, errlen);
}

static int ow_slice(struct writer *w, const struct series_slice *s, char *err, size_t errlen)
{
	return otf2w_slice(w->n, s, err, errlen);
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
	int rc = w->meta_json ? otf2w_node_meta(w->n, w->meta_json, err, errlen) : 0;
	int crc = otf2w_close(w->a, rc ? NULL : err, rc ? 0 : errlen);
	free(w->meta_json);
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
};
