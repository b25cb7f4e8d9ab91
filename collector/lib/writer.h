/* SPDX-License-Identifier: MIT */
/*
 * Output writers behind one ops table (one file each: write_csv_series.c,
 * write_perfetto.c, write_sqlite.c).  Streaming: begin() declares a stream,
 * write() takes chunks in any interleaving of streams (chunks of one stream
 * come in time order), end() finishes the file.  Memory stays bounded
 * whatever the duration.  Every call returns 0 or -errno with a sentence in
 * err that names the file (a full disk: "out.db: No space left on device").
 * After an error the file holds everything written before it and stays
 * readable by its usual tools.
 */
#ifndef SPMTAP_COLLECTOR_WRITER_H
#define SPMTAP_COLLECTOR_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "collector/lib/series.h"

struct writer;
struct out_set; /* outset.h */

/* What a recording is, for the file's metadata. */
struct writer_meta {
	const char *spmtap_version;
	const char *command_line;
	const char *hostname;
	int64_t start_boottime_ns;
	double spm_clock_hz;        /* the assumed SPM timestamp rate */
	const char *extra_json;     /* more metadata (devices, layout, options), or NULL */
	/*
	 * The recording's files (outset.h): every file a writer creates is
	 * opened as out_set_part(files, FINAL), i.e. FINAL.part, and renamed by
	 * the session when the run ends.  NULL: the final names directly.
	 */
	struct out_set *files;
};

struct writer_ops {
	const char *name;  /* "csv", "perfetto", "sqlite", "otf2": the -f value */
	const char *ext;   /* file name suffix, e.g. ".pftrace" */
	/* 0 if usable in this build/here, else -errno and why ("libsqlite3 not found"). */
	int (*probe)(char *reason, size_t len);
	int (*open)(struct writer **out, const char *path, const struct writer_meta *meta,
		    char *err, size_t errlen);
	int (*begin)(struct writer *w, const struct series_stream *s, char *err, size_t errlen);
	int (*write)(struct writer *w, const struct series_chunk *c, char *err, size_t errlen);
	/* Optional (NULL if the format has no place for it). */
	int (*slice)(struct writer *w, const struct series_slice *s, char *err, size_t errlen);
	/*
	 * Optional: every kernel dispatch of the recording, once, after the
	 * last write() and slice() and before note()/end() (the dispatches are
	 * mapped only after the last clock pairs).  Perfetto gets them as
	 * slices instead (category "kernel"); SQLite as its kernel_dispatch table.
	 * `spmtap merge` calls it once per node, after that node's slices
	 * (series_dispatch.node says which).
	 */
	int (*dispatches)(struct writer *w, const struct series_dispatch *d, size_t n, char *err, size_t errlen);
	/* Finish and close; also frees w, whatever it returns. */
	int (*end)(struct writer *w, char *err, size_t errlen);
	/*
	 * Optional: metadata known only at the end (the timebase fit's residuals),
	 * a key and a JSON text, stored beside writer_meta.  Called before end().
	 */
	int (*note)(struct writer *w, const char *key, const char *json, char *err, size_t errlen);
	/*
	 * Optional: push what was written so far to the file, so that a killed
	 * recorder loses at most what came after the last call (the session
	 * calls it at least once a second, docs/formats/csv.md "Crash").
	 */
	int (*flush)(struct writer *w, char *err, size_t errlen);
	/*
	 * Optional: the recording's whole metadata (the NAME_meta.json object,
	 * "complete" false until the clean end), after a flush: at open, at
	 * least once a second, and before end().  SQLite keeps it under the
	 * meta key "recording_meta".
	 */
	int (*meta)(struct writer *w, const char *json, char *err, size_t errlen);
	/*
	 * Optional: a node of a merged job recording (series.h series_node),
	 * before its streams and slices, which name it in their `node` field.
	 * A writer that has it shows each node apart (SQLite: the node table
	 * and column; Perfetto: a process per node).  `spmtap merge` writes
	 * only to writers that have it.
	 */
	int (*node)(struct writer *w, const struct series_node *n, char *err, size_t errlen);
};

extern const struct writer_ops writer_csv;
extern const struct writer_ops writer_perfetto;
extern const struct writer_ops writer_sqlite;
/* An OTF2 archive directory, NAME.otf2 (write_otf2.c; libotf2 loaded at run time). */
extern const struct writer_ops writer_otf2;
/* `record --spm [-o FILE.csv]`: xcc,timestamp,<counters> in raw GPU ticks (write_csv.c); not a -f format. */
extern const struct writer_ops writer_csv_ticks;

/* NULL-terminated. */
const struct writer_ops *const *writers(void);
const struct writer_ops *writer_find(const char *name);
/*
 * writer_find plus rocprofv3's -f names: pftrace is the Perfetto trace;
 * rocpd and json are refused with a sentence in err that says why and
 * what to use.  NULL with err set when the name is no writer.
 */
const struct writer_ops *writer_lookup(const char *name, char *err, size_t errlen);

#endif
