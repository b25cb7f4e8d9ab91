/* SPDX-License-Identifier: MIT */
/*
 * The raw container (docs/raw-format.md) as a session's writer: fed every
 * framed region of every retired buffer before it is decoded (a
 * dthr_part_fn), with the session's metadata first and its summary last.
 */
#ifndef SPMTAP_COLLECTOR_WRITE_RAW_H
#define SPMTAP_COLLECTOR_WRITE_RAW_H

#include <jansson.h>
#include <stdint.h>

#include "collector/lib/feeder.h"
#include "spm/spm.h"

struct raw_writer;

struct raw_writer_opts {
	const char *path;                     /* replaced if it exists */
	const struct spm_device *dev;
	const char *backend;                  /* the backend's name */
	const struct spm_stream_shape *shape; /* its gen goes into the header */
	uint32_t buffer_size, nbuffers;
};

/* Create the file, write its header and meta (consumed) as the first record. */
int raw_writer_open(struct raw_writer **out, const struct raw_writer_opts *o, json_t *meta,
		    char *err, size_t errlen);
/* A dthr_part_fn: one region into the container (a record even when empty, if flagged). */
int raw_writer_part(void *user, const struct feeder_buf *b, const struct dec_part *p,
		    const void *data);
/* Retired buffers that reached the container. */
uint64_t raw_writer_buffers(const struct raw_writer *w);
/* The first write error as a sentence, or "". */
const char *raw_writer_error(const struct raw_writer *w);
/* Append end (consumed; NULL: none, after an error), fsync, close, free; 0 or the first error. */
int raw_writer_finish(struct raw_writer *w, json_t *end, char *err, size_t errlen);

#endif
