/* SPDX-License-Identifier: MIT */
/* The raw container as a writer of framed regions (write_raw.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/lib/rawfile.h"
#include "collector/lib/write_raw.h"
#include "log.h"

struct raw_writer {
	struct rawfile_writer *f;
	uint64_t buffers, last_seq;
	int error;
	char msg[600];
};

static uint64_t boottime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* j (consumed) as one JSON record. */
static int append_json(struct raw_writer *w, uint16_t type, json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(j);
	int rc = s ? rawfile_append(w->f, type, 0, 0, 0, boottime_ns(), s, (uint32_t)strlen(s), w->msg,
				    sizeof(w->msg))
		   : spmtap_seterr(w->msg, sizeof(w->msg), ENOMEM, "out of memory");
	free(s);
	if (rc < 0 && !w->error)
		w->error = rc;
	return rc;
}

int raw_writer_open(struct raw_writer **out, const struct raw_writer_opts *o, json_t *meta,
		    char *err, size_t errlen)
{
	*out = NULL;
	struct raw_writer *w = calloc(1, sizeof(*w));
	if (!w) {
		json_decref(meta);
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	}
	const struct spm_device *d = o->dev;
	struct rawfile_header h = {
		.gpu_id = d->gpu_id, .node = d->node, .gfx_target_version = d->gfx_target_version,
		.num_xcc = d->num_xcc, .num_se = d->num_se,
		.gen = (uint32_t)o->shape->gen, /* the numbers agree (rawfile.c) */
		.buffer_size = o->buffer_size, .nbuffers = o->nbuffers,
		.start_boottime_ns = boottime_ns(),
	};
	snprintf(h.backend, sizeof(h.backend), "%.8s", o->backend);
	int rc = rawfile_create(&w->f, o->path, &h, err, errlen);
	if (rc < 0) {
		json_decref(meta);
		free(w);
		return rc;
	}
	rc = append_json(w, RAWFILE_META, meta);
	if (rc < 0) {
		snprintf(err, errlen, "%s", w->msg);
		rawfile_finish(w->f, NULL, 0);
		free(w);
		return rc;
	}
	*out = w;
	return 0;
}

int raw_writer_part(void *user, const struct feeder_buf *b, const struct dec_part *p,
		    const void *data)
{
	struct raw_writer *w = user;
	uint32_t flags = (p->loss ? RAWFILE_F_LOSS : 0) | (p->bad ? RAWFILE_F_BAD : 0);
	if (!w->buffers || b->seq != w->last_seq) {
		w->buffers++;
		w->last_seq = b->seq;
	}
	if ((p->bytes || flags) && !w->error) {
		int rc = rawfile_append(w->f, RAWFILE_SPM, (uint16_t)p->xcc, flags, b->seq, b->host_ns,
					data, p->bytes, w->msg, sizeof(w->msg));
		if (rc < 0)
			w->error = rc;
	}
	return w->error;
}

uint64_t raw_writer_buffers(const struct raw_writer *w) { return w->buffers; }

const char *raw_writer_error(const struct raw_writer *w) { return w->error ? w->msg : ""; }

int raw_writer_finish(struct raw_writer *w, json_t *end, char *err, size_t errlen)
{
	if (!w) {
		json_decref(end);
		return 0;
	}
	if (end && !w->error)
		append_json(w, RAWFILE_END, end);
	else
		json_decref(end);
	int rc = rawfile_finish(w->f, w->error ? NULL : w->msg, sizeof(w->msg));
	if (rc < 0 && !w->error)
		w->error = rc;
	rc = w->error;
	if (rc && err)
		snprintf(err, errlen, "%s", w->msg);
	free(w);
	return rc;
}
