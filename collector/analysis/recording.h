/* SPDX-License-Identifier: MIT */
/*
 * A recording read back from its CSV outputs (docs/formats/csv.md): the
 * metadata, every GPU's sensor series, every XCC stream's SPM counters and
 * the phases, for the offline commands (export, characterize, report,
 * plot).  Each series is in time order; a missing cell is NAN.
 */
#ifndef SPMTAP_ANALYSIS_RECORDING_H
#define SPMTAP_ANALYSIS_RECORDING_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/analysis/phases.h"

#define REC_MAX_GPUS 16
#define REC_MAX_XCC 16

/* Rows of one stream: n times, and ncols columns of n values each. */
struct rec_table {
	size_t n, cap;
	int64_t *t_ns;      /* host CLOCK_BOOTTIME */
	int64_t *ticks;     /* SPM: gpu_ticks; sensors: sensor_ts in the stream's tick domain; -1 = none */
	uint32_t ncols;
	char **cols;        /* column names (shared with the file's header) */
	const char **units; /* from the metadata's streams; "" when unknown */
	double **v;         /* [ncols][n] */
	/*
	 * The recording's own accounting of this stream (the meta), filled by
	 * rec_load: what the analysis must show beside any number it derives.
	 * SPM tables: a NAN in a column the stream declares is a saturated cell
	 * (SPM has no "did not answer").
	 */
	int64_t rows_expected; /* rows the meta says were written; -1: the meta does not say */
	uint64_t lost_samples; /* samples the recorder counted lost (accounting); 0 for sensors */
	bool cut_last_row;     /* the file's last row of this stream was cut short (dropped) */
};

struct rec_gpu {
	uint32_t index;       /* spmtap GPU number */
	char gfx[16];
	char name[96];
	uint32_t num_xcc;
	uint32_t num_se;      /* shader engines per XCC; 0: unknown */
	uint32_t cu_count;    /* CUs of the GPU; 0: unknown */
	uint32_t cus_per_se;  /* TA/TD/TCP instances per SE as planned; 0: unknown */
	uint32_t interval;    /* SCLK cycles per SPM sample as programmed; 0: no SPM */
	char tick_domain[24]; /* of its sensor timestamps: "smu_10ns", "boottime_ns", ... or "" */
	struct rec_table smi;
	struct rec_table spm[REC_MAX_XCC];
	uint32_t nspm;        /* XCC streams present */
};

/*
 * What the loader found about the files against the metadata.  Analysis
 * commands print every note before any table (text: stderr, JSON: "truth",
 * HTML: a banner) and exit non-zero when truncated or inconsistent, unless
 * the user accepts it (--accept-truncated).
 */
struct rec_truth {
	bool incomplete;   /* the run did not end cleanly (killed; files under temporary names) */
	bool truncated;    /* a file has fewer rows than its meta says, or a cut last row */
	bool inconsistent; /* files and meta disagree otherwise (a stream the meta does not list, ...) */
	char **notes;      /* one sentence each, naming the file */
	size_t nnotes;
};

/*
 * One kernel dispatch of the application (NAME_kernels.csv,
 * docs/formats/kernels-csv.md, or the SQLite table kernel_dispatch), read
 * by recording_kernels.c.  start_ns/end_ns are on the recording's
 * CLOCK_BOOTTIME timebase, the SPM samples' own; `mapped` false when the
 * file left them empty (an untimed dispatch, no clock pairs).
 */
struct rec_dispatch {
	uint64_t corr_id;
	int64_t pid, tid;
	uint64_t queue_id, packet_index;
	const char *kernel;        /* owned by the recording; "" when the tool had no name */
	uint32_t grid[3], wg[3];
	int64_t start_ns, end_ns;  /* valid when mapped */
	bool mapped;
	int64_t start_ticks, end_ticks;
	int status;
	int32_t gpu;               /* the `gpu` column; -1: the file has none (the first recorded GPU) */
};

struct rec_kernels {
	struct rec_dispatch *v;    /* sorted by start_ns (unmapped last), then corr_id */
	size_t n;
	size_t unmapped;           /* rows without start_ns/end_ns */
	char source[64];           /* "NAME_kernels.csv", "NAME.db:kernel_dispatch"; "" without dispatches */
};

struct recording {
	char *base;           /* "DIR/NAME": the files are base + "_spm.csv" ... */
	json_t *meta;
	double spm_clock_hz;
	struct rec_gpu gpu[REC_MAX_GPUS];
	uint32_t ngpu;
	struct sa_phases phases; /* NAME_phases.csv, empty without one */
	struct rec_kernels kernels; /* the application's dispatches; n 0 without any */
	struct rec_truth truth;
	int32_t node;         /* a merged job recording: the node read ("PATH#node=N"), else -1 */
	char **headers;       /* the header cells every table points into */
	size_t nheaders;
};

/*
 * path: a recording directory with exactly one NAME_meta.json, "DIR/NAME",
 * or the meta file itself; "MERGED.db#node=N": node N of a merged job
 * recording (spmtap merge), which is refused without it.  0, or -errno with a sentence (which file, which
 * line, what is wrong; a directory with several recordings lists them).
 */
int rec_load(const char *path, struct recording **out, char *err, size_t errlen);
void rec_free(struct recording *r);
/* The GPU of an spmtap index, or NULL. */
const struct rec_gpu *rec_gpu(const struct recording *r, uint32_t index);
/*
 * Whether the recording asked for sensor readings (its metadata lists a
 * sensor stream): then missing readings are the recording's fault, not a
 * missing --smi.
 */
bool rec_smi_requested(const struct recording *r);
/* Column k of a table by name, or -1. */
int rec_col(const struct rec_table *t, const char *name);

/*
 * The recording's power and energy as a spmtap-sensor-trace v1 CSV
 * (docs/formats/sensor-trace.md) in a malloc'd buffer: energy as NAME[J]
 * and power readings as NAME[W], each with NAME[ts_ns] from the sensor's
 * own timestamp where the source has one; several GPUs prefix their names
 * with "gpuN.".  Rows merge every GPU in time order.  spmtap's own derived
 * power (power_dedt) is left out: the analysis derives it from the energy.
 */
int rec_sensor_trace(const struct recording *r, char **buf, size_t *len, char *err, size_t errlen);
/* The same into a file. */
int rec_sensor_trace_write(const struct recording *r, const char *path, char *err, size_t errlen);

struct sa_trace;
/* rec_sensor_trace() parsed into a trace (sensor_trace.h); -ENOENT without power or energy. */
int rec_trace(const struct recording *r, struct sa_trace **tr, char *err, size_t errlen);

#endif
