/* SPDX-License-Identifier: MIT */
/*
 * One OTF2 archive holding one or more nodes (docs/formats/otf2.md): the
 * engine behind `-f otf2` (write_otf2.c, one node) and behind `spmtap merge`
 * (every node of a job).  Per node: a system-tree node under the machine
 * with one child per GPU, a PROCESS location group, a METRIC location per
 * stream (asynchronous metrics with units) and CPU_THREAD locations for
 * phases, markers and kernels (Enter/Leave nested per location; ranges that
 * overlap without nesting get locations of their own), and the node's
 * ClockOffsets (local CLOCK_BOOTTIME + offset = the job's reference time;
 * the stddev field carries the offset's hard bound, half the round trip).
 *
 * Samples stream into OTF2's event writers as they come (OTF2 flushes a
 * location's buffer to disk when its chunk fills: memory is bounded by the
 * locations, not the duration).  Slices can come out of order: they are kept
 * (OTF2W_MAX_SLICES at most, 40 bytes each, names interned; more are counted
 * and dropped) and written at close.  Definitions are written at close, so an
 * archive is readable only after otf2w_close (the SQLite and CSV outputs are
 * the crash-safe ones).
 *
 * Every call returns 0 or -errno with a sentence in err that names the
 * archive.  The first error is sticky.  OTF2's error callback is one per
 * process: an archive takes it from open to close, so open one archive at a
 * time (several nodes go into one archive, not several archives).
 */
#ifndef SPMTAP_COLLECTOR_OTF2W_H
#define SPMTAP_COLLECTOR_OTF2W_H

#include <stddef.h>
#include <stdint.h>

#include "collector/lib/series.h"

#ifndef OTF2W_MAX_SLICES
#define OTF2W_MAX_SLICES (1u << 21)
#endif

struct otf2w;
struct otf2w_node;

/* One clock alignment (docs/formats/otf2.md): reference = local + offset_ns, |error| <= bound_ns. */
struct otf2w_offset {
	int64_t local_ns;  /* the node's CLOCK_BOOTTIME */
	int64_t offset_ns;
	int64_t bound_ns;  /* half the round trip; < 0: unknown */
};

/*
 * 0 if libotf2 can be loaded here, else -errno and why (for `spmtap list`
 * and the writer's probe).
 */
int otf2w_probe(char *reason, size_t len);

/*
 * A new archive in the directory `dir` (created; an earlier spmtap archive
 * there is replaced, anything else in it is refused): dir/traces.otf2 (the
 * anchor file readers open), dir/traces.def, dir/traces/.  `creator` e.g.
 * "spmtap 0.1.0", or NULL.
 */
int otf2w_open(struct otf2w **out, const char *dir, const char *creator, char *err, size_t errlen);

/* A node: `hostname`, `rank` (< 0: none, the order of the calls). Owned by the archive. */
int otf2w_node(struct otf2w *a, struct otf2w_node **out, const char *hostname, int64_t rank, char *err,
	       size_t errlen);
/* The node's clock offsets, time-ordered (copied; replaces earlier ones).  None: a plain recording. */
int otf2w_node_offsets(struct otf2w_node *n, const struct otf2w_offset *o, size_t count, char *err,
		       size_t errlen);
/* A REALTIME anchor of the node: CLOCK_REALTIME ns at its CLOCK_BOOTTIME boottime_ns. */
void otf2w_node_realtime(struct otf2w_node *n, int64_t boottime_ns, int64_t realtime_ns);
/*
 * From a recording's metadata (NAME_meta.json text, docs/formats/csv.md):
 * job.hostname/job.rank (else hostname) renames the node, job.clock.offsets
 * become its offsets, a REALTIME anchor (job.clock.realtime or
 * realtime_anchor: {boottime_ns, realtime_ns}) its anchor.  What is absent
 * is left as it was; 0 or -EINVAL for text that is no JSON object.
 */
int otf2w_node_meta(struct otf2w_node *n, const char *json, char *err, size_t errlen);

/* As writer.h's begin/write/slice, for one node (stream ids are per node). */
int otf2w_begin(struct otf2w_node *n, const struct series_stream *s, char *err, size_t errlen);
int otf2w_write(struct otf2w_node *n, const struct series_chunk *c, char *err, size_t errlen);
int otf2w_slice(struct otf2w_node *n, const struct series_slice *s, char *err, size_t errlen);

/*
 * Slices left out (past OTF2W_MAX_SLICES, or ending before they start), and
 * sample times moved up to keep a location's time order.
 */
uint64_t otf2w_dropped_slices(const struct otf2w *a);
uint64_t otf2w_clamped_times(const struct otf2w *a);

/* Write the slices and every definition, close the archive and free it (also on error). */
int otf2w_close(struct otf2w *a, char *err, size_t errlen);
/* Free without finishing: what was flushed stays on disk as an unreadable archive. */
void otf2w_abort(struct otf2w *a);

#endif
