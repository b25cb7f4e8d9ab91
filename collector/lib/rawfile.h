/* SPDX-License-Identifier: MIT */
/*
 * The raw container of `spmtap record --raw`: SPM bytes exactly as the kernel
 * returned them, per XCC region of each retired buffer, plus JSON metadata at
 * both ends.  Every byte is described in docs/raw-format.md.
 */
#ifndef SPMTAP_COLLECTOR_RAWFILE_H
#define SPMTAP_COLLECTOR_RAWFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RAWFILE_MAGIC "SPMTRAW" /* 8 bytes with its NUL */
#define RAWFILE_VERSION 1u
#define RAWFILE_HEADER_SIZE 64u
#define RAWFILE_REC_MAGIC 0x42524D53u /* "SMRB" little-endian */
#define RAWFILE_REC_HEADER_SIZE 32u
/* A JSON record larger than this is garbage, not metadata. */
#define RAWFILE_MAX_JSON (16u << 20)

enum rawfile_type {
	RAWFILE_SPM = 1,  /* one XCC region of one retired buffer */
	RAWFILE_META = 2, /* JSON, first record */
	RAWFILE_END = 3,  /* JSON summary, last record */
	/*
	 * Already decoded: a journal (collector/lib/spill.c) turns the first
	 * header of a buffer's records into one of these once the recording has
	 * decoded them; its payload is those records.  rawfile_next skips it.
	 */
	RAWFILE_SKIP = 4,
};

enum {
	RAWFILE_F_LOSS = 1u << 0, /* the kernel flagged loss for this region */
	RAWFILE_F_BAD = 1u << 1,  /* the region's gen B header could not be trusted */
	RAWFILE_F_KNOWN = RAWFILE_F_LOSS | RAWFILE_F_BAD,
};

enum { RAWFILE_GEN_A = 1, RAWFILE_GEN_B = 2 };

struct rawfile_header {
	uint32_t version;
	uint32_t header_size;
	uint32_t gpu_id;
	uint32_t node;
	uint32_t gfx_target_version;
	uint32_t num_xcc;
	uint32_t num_se;
	uint32_t gen;
	uint32_t buffer_size;
	uint32_t nbuffers;
	uint64_t start_boottime_ns;
	char backend[9]; /* 8 on disk, NUL-padded; one more here for a terminator */
};

struct rawfile_record {
	uint16_t type;
	uint16_t xcc;
	uint32_t flags;
	uint32_t length;
	uint64_t seq;
	uint64_t host_ns;
	const void *data; /* valid until the next rawfile_next() */
	uint64_t offset;  /* of the record header in the file */
};

/* ---- writing ------------------------------------------------------------ */

struct rawfile_writer;

/* Create (truncate) path and write the file header. */
int rawfile_create(struct rawfile_writer **out, const char *path, const struct rawfile_header *h,
		   char *err, size_t errlen);
/*
 * Append one record.  On a failed write (ENOSPC, EFBIG, EIO ...) the file is
 * cut back to the last complete record, so everything before stays readable,
 * and every later call fails with the same error.
 */
/* A record's 32-byte header (docs/raw-format.md), for writers that gather records themselves (the journal). */
void rawfile_rec_header(unsigned char *h, uint16_t type, uint16_t xcc, uint32_t flags, uint32_t length,
			uint64_t seq, uint64_t host_ns);
int rawfile_append(struct rawfile_writer *w, uint16_t type, uint16_t xcc, uint32_t flags,
		   uint64_t seq, uint64_t host_ns, const void *data, uint32_t length, char *err,
		   size_t errlen);
/* Bytes in the file so far. */
uint64_t rawfile_written(const struct rawfile_writer *w);
/* fsync and close; the first error of the writer's life (0 if none). */
int rawfile_finish(struct rawfile_writer *w, char *err, size_t errlen);

/* ---- reading ------------------------------------------------------------ */

struct rawfile_reader;

/* Open and validate the file header. */
int rawfile_open(struct rawfile_reader **out, const char *path, char *err, size_t errlen);
const struct rawfile_header *rawfile_header(const struct rawfile_reader *r);
/*
 * 1 and *rec filled; 0 at the end of the file (see rawfile_trailing());
 * -EBADMSG with the offset and reason in err when a record is invalid (the
 * records before it were good); -errno on a read error.
 */
int rawfile_next(struct rawfile_reader *r, struct rawfile_record *rec, char *err, size_t errlen);
/* Bytes after the last complete record: a file cut mid-record (0 if none). */
uint64_t rawfile_trailing(const struct rawfile_reader *r);
void rawfile_close(struct rawfile_reader *r);

#endif
