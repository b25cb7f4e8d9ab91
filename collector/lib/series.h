/* SPDX-License-Identifier: MIT */
/*
 * The one chunk type every writer takes, for SPM counters and power samples
 * alike (DESIGN.md "Writers"): columns of one stream (a GPU's XCC for SPM, a
 * GPU for sensors) over n samples, each sample with its host time
 * (CLOCK_BOOTTIME ns, from collector/lib/timebase.c) and the raw device time
 * it was mapped from.  Columns are typed: counters are exact integers,
 * sensor readings are doubles in normalised units (W, J, degC, %, MHz).
 * A cell can be missing (a saturated counter, a sensor that did not answer):
 * writers show it as empty (CSV), omit it (Perfetto), or NULL (SQLite).
 */
#ifndef SPMTAP_COLLECTOR_SERIES_H
#define SPMTAP_COLLECTOR_SERIES_H

#include <stdbool.h>
#include <stdint.h>

enum series_type { SERIES_U64 = 1, SERIES_F64 = 2 };

struct series_column {
	const char *name;  /* "SQ_WAVES", "power_avg" */
	const char *unit;  /* "count", "W", "J", "degC", "%" */
	enum series_type type;
};

/* A stream: declared once with writer begin(), then referenced by its chunks. */
struct series_stream {
	uint32_t id;          /* unique within a session, assigned by the collector */
	const char *source;   /* "spm" or "smi" */
	uint32_t gpu;         /* spmtap GPU index */
	uint32_t gpu_id;      /* KFD gpu_id */
	int32_t xcc;          /* XCC index, or -1 for a whole-GPU stream (sensors) */
	const char *device_name; /* "AMD Instinct MI300A", for track names */
	const char *tick_domain; /* what `ticks` count: "gpu_ref_100MHz", "smu_10ns", ... */
	uint32_t ncols;
	const struct series_column *cols;
	/* The node it was recorded on, in a merged job recording (writer.h node()); 0 otherwise. */
	uint32_t node;
};

struct series_chunk {
	const struct series_stream *stream;
	uint32_t n;
	const int64_t *host_ns;   /* [n] CLOCK_BOOTTIME ns */
	const uint64_t *ticks;    /* [n] raw device time, or NULL */
	/* [ncols][n]: (const uint64_t *) for SERIES_U64, (const double *) for SERIES_F64 */
	const void *const *values;
	/* [ncols][(n + 63) / 64] bit set = cell missing; a NULL column pointer = none missing */
	const uint64_t *const *missing;
};

static inline bool series_missing(const struct series_chunk *c, uint32_t col, uint32_t i)
{
	return c->missing && c->missing[col] && ((c->missing[col][i >> 6] >> (i & 63)) & 1);
}

static inline uint64_t series_u64(const struct series_chunk *c, uint32_t col, uint32_t i)
{
	return ((const uint64_t *)c->values[col])[i];
}

static inline double series_f64(const struct series_chunk *c, uint32_t col, uint32_t i)
{
	return ((const double *)c->values[col])[i];
}

/*
 * A phase: an application's marker region, a phase from a phases file, or
 * the emulator's workload schedule.  Writers that cannot show it ignore it.
 */
struct series_slice {
	int64_t start_ns, end_ns; /* CLOCK_BOOTTIME */
	const char *name;
	uint32_t track;           /* markers: the thread id; 0 for other phases */
	const char *category;     /* "marker", "file", "emulator", "kernel" (a dispatch: Perfetto only,
				   * track = its queue id); NULL: "phase" */
	uint32_t depth;           /* nesting depth within its track, 0 = outermost */
	uint32_t pid;             /* markers: the process id; else 0 */
	uint32_t node;            /* merged job recordings: its node (writer.h node()); else 0 */
	uint32_t gpu;             /* "kernel": the GPU it ran on (series_stream.gpu); else 0 */
};

/*
 * A node of a merged job recording (`spmtap merge`, docs/cli/spmtap-merge.md):
 * declared with the writer's node() before the node's streams and slices,
 * which carry its key in their `node` field.
 */
struct series_node {
	uint32_t node;             /* the key: the job rank, or the order on the command line */
	int32_t rank;              /* the job rank; -1: the recording has no job object */
	const char *hostname;
	const char *recording;     /* the recording merged, as given */
	const char *clock_method;  /* "mpi-min-rtt-pingpong", or "none (unaligned)" */
	int64_t max_bound_ns;      /* the largest bound of its clock offsets; -1: unknown */
};

/*
 * A kernel dispatch of the recorded application (libspmtap-tool.so,
 * docs/formats/kernels-csv.md), its GPU ticks mapped to CLOCK_BOOTTIME
 * through its own GPU's timebase.  Given to writers once, at the end
 * (writer_ops.dispatches).
 */
struct series_dispatch {
	uint64_t corr_id, queue_id, packet_index;
	uint64_t start_ticks, end_ticks;
	int64_t start_ns, end_ns; /* -1 when not mapped (status != 0, or its GPU is not recorded) */
	uint32_t pid, tid;
	uint32_t grid[3], wg[3];
	int32_t status;           /* 0 timed; < 0 the tool could not time it */
	int32_t gpu;              /* spmtap GPU index (series_stream.gpu) of the recording; -1 unknown */
	const char *kernel;       /* "" when no frozen executable named it */
	uint32_t node;            /* a merged job recording: its node (series_node.node); else 0 */
};

#endif
