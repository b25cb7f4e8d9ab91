/* SPDX-License-Identifier: MIT */
/*
 * `spmtap merge` (docs/cli/spmtap-merge.md): many node recordings of one job
 * on one timeline, rank 0's CLOCK_BOOTTIME.
 *
 * Every input is read as a stream, never loaded whole: its samples pass in
 * chunks of at most `chunk` rows per stream, each time mapped through the
 * node's clock offsets (merge_clock.c), to the outputs through the writer
 * interface (collector/lib/writer.h), node after node ("per-stream passes":
 * the writers take chunks of any stream in any interleaving, so no k-way
 * merge and no heap of every stream's head is needed; memory is one chunk
 * per stream of the file being read, whatever the job's length or size).
 *
 * The producer (merge_node.c) emits a node's calls (node, streams, chunks,
 * slices) to a sink (struct mg_sink).  The serial path's sink is the
 * outputs themselves (merge_out.c); the MPI path's (collector/merge/
 * mpi_main.c) is a node's chunk file (merge_spill.c) that rank 0 replays
 * into the outputs in node order: the same calls in the same order, so
 * both paths write the same files.
 */
#ifndef SPMTAP_ANALYSIS_MERGE_H
#define SPMTAP_ANALYSIS_MERGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/lib/series.h"

/* Above this many recordings `spmtap merge` asks for the MPI binary (or --serial). */
#define MERGE_MPI_THRESHOLD 16
/* Rows per chunk and stream (--chunk): what bounds merge's memory. */
#define MERGE_CHUNK_DEFAULT 4096u

/* A node's clock: its offsets against rank 0 (docs/cli/spmtap-merge.md "Clock"). */
struct mg_clock {
	size_t n;
	int64_t *local_ns, *offset_ns, *bound_ns;
	char method[64];   /* "mpi-min-rtt-pingpong", or "none (unaligned)" */
	int64_t max_bound_ns; /* -1: unknown (no job object) */
};

/*
 * reference = local + offset(local): linear between entries, held outside;
 * *bound (may be NULL) the larger neighbouring bound_ns, -1 when unknown.
 */
int64_t mg_clock_map(const struct mg_clock *c, int64_t local_ns, int64_t *bound);
/* meta's "job".clock into c; a meta without "job": offset 0, method "none (unaligned)". */
int mg_clock_parse(const json_t *meta, struct mg_clock *c, char *err, size_t errlen);
void mg_clock_free(struct mg_clock *c);

/* One input recording. */
struct mg_node {
	char *path;            /* as given */
	char *meta_path;       /* the metadata read (NAME_meta.json), or NULL for a .db */
	char *db;              /* the SQLite file, or NULL: CSV */
	char *spm_csv, *smi_csv, *phases_csv; /* CSV files that exist (or NULL) */
	char *pm_csv;                         /* NAME_craypm.csv beside either kind (record --cray), or NULL */
	char *kernels_csv;                    /* NAME_kernels.csv beside either kind, or NULL */
	json_t *meta;
	struct mg_clock clk;
	bool job;              /* it has a "job" object */
	bool incomplete;       /* "complete" false, or files under .part names */
	int32_t rank;          /* job.rank, or -1 */
	uint32_t key;          /* node key: rank, or the order given */
	char hostname[128];
};

struct merge_opts {
	const char *dir;        /* -d (".") */
	const char *name;       /* -o ("merged") */
	bool sqlite, perfetto, otf2; /* -f */
	bool allow_unaligned;   /* --allow-unaligned */
	bool accept_truncated;  /* --accept-truncated */
	uint32_t chunk;         /* --chunk rows */
	const char *command_line;
};

/* Find and read a recording's metadata and clock (no samples). */
int mg_node_open(struct mg_node *n, const char *path, uint32_t order, char *err, size_t errlen);
void mg_node_free(struct mg_node *n);
/*
 * The set as a whole: two recordings of one rank, job recordings mixed with
 * recordings without a job object (unless allow_unaligned), incomplete ones
 * (unless accept_truncated); then sorted by key.
 */
int mg_nodes_check(struct mg_node *nodes, size_t n, const struct merge_opts *o, char *err, size_t errlen);

/* Where a node's calls go (the outputs, or a chunk file). */
struct mg_sink {
	void *ctx;
	int (*node)(void *ctx, const struct series_node *n, char *err, size_t errlen);
	int (*begin)(void *ctx, const struct series_stream *s, char *err, size_t errlen);
	int (*write)(void *ctx, const struct series_chunk *c, char *err, size_t errlen);
	int (*slice)(void *ctx, const struct series_slice *s, char *err, size_t errlen);
	/* The node's kernel dispatches, once, after its slices (writer_ops.dispatches). */
	int (*dispatches)(void *ctx, const struct series_dispatch *d, size_t n, char *err, size_t errlen);
};

/* What a node's pass counted, for the summary and the tests. */
struct mg_node_stats {
	uint64_t samples, slices;
	uint64_t dispatches; /* kernel dispatches carried (mapped or not) */
	bool truncated; /* fewer rows than the metadata says, or a cut last row */
};

/*
 * Node n's calls to sink: node, streams, every sample time-mapped in
 * chunks of at most chunk rows, slices, kernel dispatches.  A truncated input is an error
 * unless accept_truncated.
 */
int mg_node_emit(const struct mg_node *n, uint32_t chunk, bool accept_truncated, const struct mg_sink *sink,
		 struct mg_node_stats *st, char *err, size_t errlen);

/*
 * Node n's kernel dispatches (merge_kernels.c): kernel_dispatch of its .db,
 * else NAME_kernels.csv; times mapped as its samples are; each mapped one a
 * "kernel" slice, then all of them to sink->dispatches.  The node's
 * dispatches are held in memory together.  *count: how many.
 */
int mg_node_kernels(const struct mg_node *n, const struct mg_sink *sink, uint64_t *count, char *err,
		    size_t errlen);

/* The outputs: DIR/NAME.db, DIR/NAME.pftrace and DIR/NAME_meta.json, replaced as record does. */
struct mg_out;
int mg_out_open(struct mg_out **out, const struct merge_opts *o, const struct mg_node *nodes, size_t n,
		char *err, size_t errlen);
struct mg_sink mg_out_sink(struct mg_out *o);
/* Finish: metadata, end every writer, rename .part files (ok) or remove them (!ok). */
int mg_out_close(struct mg_out *o, bool ok, char *err, size_t errlen);
/* The final names written (valid until mg_out_free). */
size_t mg_out_nfiles(const struct mg_out *o);
const char *mg_out_file(const struct mg_out *o, size_t i);
void mg_out_free(struct mg_out *o);

/* A node's chunk file (MPI path): a sink that writes calls, and their replay. */
struct mg_spill;
int mg_spill_open(struct mg_spill **sp, const char *path, char *err, size_t errlen);
struct mg_sink mg_spill_sink(struct mg_spill *sp);
int mg_spill_close(struct mg_spill *sp, char *err, size_t errlen);
int mg_spill_replay(const char *path, const struct mg_sink *sink, char *err, size_t errlen);

/* The summary lines (every node's bound), to f. */
struct mg_summary_row {
	const struct mg_node *node;
	struct mg_node_stats st;
};
void mg_summary_print(FILE *f, const struct mg_summary_row *rows, size_t n);

#endif
