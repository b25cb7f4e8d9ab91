/* SPDX-License-Identifier: MIT */
/*
 * libspmtap public API.  Every function returns 0 (or a count) on success and
 * a negative errno on failure, and sets errno too; spmtap_strerror() turns
 * either into text.  Only symbols marked SPMTAP_API are exported.
 */
#ifndef SPMTAP_H
#define SPMTAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPMTAP_API __attribute__((visibility("default")))

#define SPMTAP_VERSION_MAJOR 0
#define SPMTAP_VERSION_MINOR 1

SPMTAP_API const char *spmtap_version_string(void);
SPMTAP_API unsigned int spmtap_version_major(void);
SPMTAP_API unsigned int spmtap_version_minor(void);

/* Text for a negative (or positive) errno, including spmtap's own codes. */
SPMTAP_API const char *spmtap_strerror(int err);

enum spmtap_log_level { SPMTAP_LOG_WARN = 0, SPMTAP_LOG_INFO = 1, SPMTAP_LOG_DEBUG = 2 };
typedef void (*spmtap_print_fn)(enum spmtap_log_level level, const char *msg, void *user);
/* NULL restores the default (stderr, level from SPMTAP_LOG_LEVEL). */
SPMTAP_API void spmtap_set_print(spmtap_print_fn fn, void *user);

/* ---- markers -----------------------------------------------------------------
 * Name the phases of your program, and `spmtap record -- app` puts them in
 * every output beside the counters and the power (docs/markers.md):
 *
 *     spmtap_region_begin("solve");  ...  spmtap_region_end();
 *
 * Regions nest, per thread; the time is CLOCK_BOOTTIME, the recording's
 * (stamped with the TSC where it is constant and non-stop, and mapped by the
 * recorder within a stated bound).  Cheap enough around every kernel launch:
 * no lock, no call, no system call (under 30 ns a pair, `make bench`).
 * Outside `spmtap record -- app` both are one branch.  A name is kept up to
 * 43 bytes.  Fortran: include/spmtap_markers.f90.
 */
SPMTAP_API void spmtap_region_begin(const char *name);
SPMTAP_API void spmtap_region_end(void);

/* ---- opts structs ----------------------------------------------------------
 * Every opts struct starts with `size_t sz`, set by its _INIT macro to the
 * size the caller was compiled with.  A shorter sz than the first version of
 * the struct, or a longer one whose unknown tail is not all zero, is refused
 * with -EINVAL; so new fields can be added at the end.
 */

/* ---- devices -------------------------------------------------------------- */

struct spmtap_devices;

struct spmtap_discover_opts {
	size_t sz;
	const char *sysfs_root; /* NULL: /sys/devices/virtual/kfd/kfd */
};
#define SPMTAP_DISCOVER_OPTS_INIT { .sz = sizeof(struct spmtap_discover_opts) }

/* Every AMD GPU KFD knows, in spmtap's order (GPU 0, 1, ...).  opts may be NULL. */
SPMTAP_API int spmtap_devices_open(struct spmtap_devices **out, const struct spmtap_discover_opts *opts);
SPMTAP_API void spmtap_devices_close(struct spmtap_devices *list);
SPMTAP_API int spmtap_devices_count(const struct spmtap_devices *list);
/* Getters for GPU i: NULL / 0 when i is out of range. */
SPMTAP_API const char *spmtap_device_name(const struct spmtap_devices *list, unsigned int i);
SPMTAP_API const char *spmtap_device_gfx(const struct spmtap_devices *list, unsigned int i);
SPMTAP_API uint32_t spmtap_device_gpu_id(const struct spmtap_devices *list, unsigned int i);
SPMTAP_API uint32_t spmtap_device_num_xcc(const struct spmtap_devices *list, unsigned int i);
SPMTAP_API uint32_t spmtap_device_num_se(const struct spmtap_devices *list, unsigned int i);
/* The counters of GPU i's catalog: a count (or -errno), then name/description of k. */
SPMTAP_API int spmtap_device_counter_count(const struct spmtap_devices *list, unsigned int i);
SPMTAP_API const char *spmtap_device_counter_name(const struct spmtap_devices *list, unsigned int i,
						  unsigned int k);
SPMTAP_API const char *spmtap_device_counter_description(const struct spmtap_devices *list,
							 unsigned int i, unsigned int k);
/* 1 if counter k can be streamed by SPM, 0 if not, -errno. */
SPMTAP_API int spmtap_device_counter_streamable(const struct spmtap_devices *list, unsigned int i,
						unsigned int k);

/* ---- decoded chunks --------------------------------------------------------
 * A chunk is n samples of one stream (one XCC of one GPU for "spm", one GPU
 * for "smi" sensors): host times (CLOCK_BOOTTIME ns), raw device ticks, and
 * typed columns.  Valid only during the callback that receives it.
 */
struct spmtap_chunk;
enum spmtap_type { SPMTAP_TYPE_U64 = 1, SPMTAP_TYPE_F64 = 2 };

SPMTAP_API const char *spmtap_chunk_source(const struct spmtap_chunk *c); /* "spm" or "smi" */
SPMTAP_API uint32_t spmtap_chunk_gpu(const struct spmtap_chunk *c);       /* spmtap GPU index */
SPMTAP_API uint32_t spmtap_chunk_gpu_id(const struct spmtap_chunk *c);    /* KFD gpu_id */
SPMTAP_API int32_t spmtap_chunk_xcc(const struct spmtap_chunk *c);        /* -1: whole GPU */
SPMTAP_API uint32_t spmtap_chunk_n(const struct spmtap_chunk *c);
SPMTAP_API const int64_t *spmtap_chunk_host_ns(const struct spmtap_chunk *c);
SPMTAP_API const uint64_t *spmtap_chunk_ticks(const struct spmtap_chunk *c); /* may be NULL */
SPMTAP_API uint32_t spmtap_chunk_ncols(const struct spmtap_chunk *c);
SPMTAP_API const char *spmtap_chunk_col_name(const struct spmtap_chunk *c, uint32_t col);
SPMTAP_API const char *spmtap_chunk_col_unit(const struct spmtap_chunk *c, uint32_t col);
SPMTAP_API enum spmtap_type spmtap_chunk_col_type(const struct spmtap_chunk *c, uint32_t col);
/* [n] values of a column of the matching type, else NULL. */
SPMTAP_API const uint64_t *spmtap_chunk_u64(const struct spmtap_chunk *c, uint32_t col);
SPMTAP_API const double *spmtap_chunk_f64(const struct spmtap_chunk *c, uint32_t col);
/* [(n + 63) / 64] bitmap, bit i set = value i missing (saturated, no reading); NULL: none missing. */
SPMTAP_API const uint64_t *spmtap_chunk_missing(const struct spmtap_chunk *c, uint32_t col);

/* ---- sessions -------------------------------------------------------------- */

struct spmtap_session;
/* On the library's writer thread, chunk by chunk; nonzero fails the session. */
typedef int (*spmtap_chunk_fn)(const struct spmtap_chunk *c, void *user);

struct spmtap_session_opts {
	size_t sz;
	const struct spmtap_devices *devices; /* required; must outlive the session */
	const unsigned int *gpus;             /* indices into devices; NULL: GPU 0 */
	size_t ngpus;
	const char *const *counters;          /* SPM counter names; none: sensors only */
	size_t ncounters;
	uint32_t interval;                    /* SCLK cycles per sample; 0: 32768 */
	const char *smi;                      /* sensors: "power,energy,temp,activity,clock,all"
						 or metric names; NULL: none */
	uint64_t smi_interval_ns;             /* 0: 1 ms */
	const char *dir, *name;               /* outputs DIR/NAME.ext; NULL: ".", "spmtap" */
	const char *formats;                  /* "csv,perfetto,sqlite"; NULL/"": no files */
	spmtap_chunk_fn on_chunk;             /* NULL: none */
	void *user;
	/* Added after the first version (sz tells: an older caller has them 0): */
	int kernels;                          /* nonzero: receive an application's kernel dispatches (below) */
};
#define SPMTAP_SESSION_OPTS_INIT { .sz = sizeof(struct spmtap_session_opts) }

/*
 * Plan the counters on every GPU and open the outputs.  On failure *out is
 * NULL and spmtap_session_errmsg(NULL) gives the sentence (per thread).
 */
SPMTAP_API int spmtap_session_open(struct spmtap_session **out, const struct spmtap_session_opts *opts);
SPMTAP_API int spmtap_session_start(struct spmtap_session *s);
/* Stop the counters, drain, write the end metadata, close the outputs. */
SPMTAP_API int spmtap_session_stop(struct spmtap_session *s);
SPMTAP_API void spmtap_session_close(struct spmtap_session *s);
/* The last error of s (NULL: of this thread's last failed open), "" if none. */
SPMTAP_API const char *spmtap_session_errmsg(const struct spmtap_session *s);

/* ---- kernel dispatches -----------------------------------------------------
 * With opts.kernels the session opens the channel that libspmtap-tool.so
 * (installed as <libdir>/spmtap/libspmtap-tool.so) writes into from inside
 * an HSA/HIP application (docs/architecture.md "Kernels").  Start the
 * application after spmtap_session_open with, in its environment,
 *   HSA_TOOLS_LIB=<path of libspmtap-tool.so>
 *   SPMTAP_KERNELS_FD=<spmtap_session_kernels_fd(s)>
 * (the descriptor is inherited: it is not close-on-exec).  After
 * spmtap_session_stop every dispatch the tool delivered is there, its GPU
 * ticks mapped to CLOCK_BOOTTIME through its own GPU's timebase (the one
 * the SPM samples of that GPU use); with files, NAME_kernels.csv and the
 * SQLite table kernel_dispatch hold the same records
 * (docs/formats/kernels-csv.md).
 */
struct spmtap_kernel_dispatch {
	uint64_t corr_id;                 /* the tool's id: 1, 2, ... per process, in submission order */
	uint32_t pid, tid;                /* the process, and the thread that submitted */
	uint64_t queue_id, packet_index;  /* hsa_queue_t.id, the packet's index in it */
	const char *kernel;               /* symbol name without ".kd"; "" unknown */
	uint32_t grid[3], wg[3];          /* work-items; work-items per workgroup */
	int64_t start_ns, end_ns;         /* CLOCK_BOOTTIME ns; -1 when not mapped */
	uint64_t start_ticks, end_ticks;  /* the GPU clock ticks the packet processor wrote */
	int32_t status;                   /* 0 timed; < 0 the tool could not time it */
	int32_t gpu;                      /* index into opts.devices of its GPU; -1 unknown or not recorded */
};
/* One dispatch; valid only during the call.  Nonzero stops the walk. */
typedef int (*spmtap_kernel_fn)(const struct spmtap_kernel_dispatch *d, void *user);
/* The descriptor for SPMTAP_KERNELS_FD; -ENOENT without opts.kernels. */
SPMTAP_API int spmtap_session_kernels_fd(const struct spmtap_session *s);
/*
 * After spmtap_session_stop: fn for each dispatch, in the order received.
 * The number of dispatches (all of them, whether fn stopped early), or
 * -ENOENT without opts.kernels, -EAGAIN before the stop.
 */
SPMTAP_API int spmtap_session_kernels(const struct spmtap_session *s, spmtap_kernel_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif
