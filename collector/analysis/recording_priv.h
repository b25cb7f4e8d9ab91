/* SPDX-License-Identifier: MIT */
/*
 * What the files of the recording reader share (recording.h): where the
 * recording's files are (recording_find.c), the tables (recording.c), the
 * two loaders (recording_csv.c, recording_sqlite.c) and the comparison of
 * what was loaded with the metadata (recording_meta.c).
 */
#ifndef SPMTAP_ANALYSIS_RECORDING_PRIV_H
#define SPMTAP_ANALYSIS_RECORDING_PRIV_H

#include <stdbool.h>
#include <stddef.h>

#include "collector/analysis/recording.h"

/* A file of the recording: its path, and whether it still has its temporary name (FINAL.part). */
struct rec_file {
	char *path; /* NULL: absent */
	bool part;
};

/* What find found: "DIR/NAME" and either the CSV set or the SQLite file. */
struct rec_src {
	char *base;
	bool sqlite;
	struct rec_file meta, spm, smi, phases, db, kernels;
};

/*
 * Locate the recording at path (recording.h's rec_load).  A Perfetto-only
 * recording is refused with what to use instead.  0 or -errno with err.
 */
int rec_find(const char *path, struct rec_src *src, char *err, size_t errlen);
void rec_src_free(struct rec_src *src);
/* The last component of a path (for notes that name a file). */
const char *rec_basename(const char *path);

/* Tables (recording.c). */
int rec_tbl_init(struct rec_table *t, char **cols, uint32_t ncols);
int rec_tbl_grow(struct rec_table *t);
struct rec_gpu *rec_gpu_of(struct recording *r, uint32_t index, bool make);
/* A string the recording owns (freed with it): names and units the SQLite loader reads. */
char *rec_keep(struct recording *r, const char *s);
/* Append a note (a sentence); -ENOMEM. */
int rec_note(struct recording *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 128125 as "128,125" into buf. */
const char *rec_count(char *buf, size_t len, long long v);

/* The CSV files of src into r (recording_csv.c); 0 or -errno with err. */
int rec_load_csv(struct recording *r, const struct rec_src *src, char *err, size_t errlen);
/*
 * The SQLite file of src into r: metadata, streams, phases (recording_sqlite.c);
 * a damaged or cut file gives -EBADMSG with a sentence.
 */
int rec_load_sqlite(struct recording *r, const struct rec_src *src, char *err, size_t errlen);

/*
 * The application's dispatches (recording_kernels.c): the SQLite file's
 * kernel_dispatch table when the recording is SQLite and has one, else
 * NAME_kernels.csv when there is one; none is no error.  0 or -errno with
 * a sentence naming the file and line.
 */
int rec_load_kernels(struct recording *r, const struct rec_src *src, char *err, size_t errlen);

/*
 * Whether the run ended (r->meta "complete", its accounting, temporary
 * names): r->truth.incomplete and its note.  Before the tables are read.
 */
int rec_check_incomplete(struct recording *r, const struct rec_src *src);
/* Units, tick domains and device facts from r->meta (recording_meta.c). */
void rec_units_from_meta(struct recording *r);
/* The tables against the metadata: rows_expected, lost_samples and r->truth (recording_meta.c). */
int rec_check_truth(struct recording *r, const struct rec_src *src);

#endif
