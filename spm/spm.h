/* SPDX-License-Identifier: MIT */
/*
 * spm/: finding GPUs and moving SPM bytes out of the kernel.
 *
 * Everything here returns 0 (or a count) on success and a negative errno on
 * failure; where a user needs more than an errno, a sentence is written into
 * the caller's `err` buffer (may be NULL).  No threads, no files other than
 * sysfs and device nodes, no output formats.
 */
#ifndef SPMTAP_SPM_H
#define SPMTAP_SPM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SPM_ERRLEN 512

/* ---- discovery ---------------------------------------------------------- */

struct spm_device {
	uint32_t index;              /* spmtap's GPU number, 0-based, topology order */
	uint32_t node;               /* KFD topology node (libhsakmt's NodeId) */
	uint32_t gpu_id;             /* KFD gpu_id: what the ioctls take */
	uint32_t gfx_target_version; /* e.g. 90402 */
	char gfx[16];                /* "gfx942" */
	uint32_t num_xcc;            /* 1 unless the topology says num_xcc */
	uint32_t num_se;             /* shader engines per XCC */
	uint32_t cu_count;
	uint32_t device_id, vendor_id;
	uint32_t domain, location_id; /* PCI: domain and bus<<8|dev<<3|fn */
	uint32_t drm_render_minor;
	char name[64];               /* topology name, e.g. "aldebaran" */
	char marketing_name[128];    /* libdrm's, or "" */
};

/* sysfs_root NULL = /sys/devices/virtual/kfd/kfd.  *out is malloc'd. */
int spm_discover(const char *sysfs_root, struct spm_device **out, size_t *count,
		 char *err, size_t errlen);
/* Fill marketing_name through libdrm_amdgpu (dlopen'd); best effort. */
void spm_device_marketing_name(struct spm_device *dev);
/* "GPU 1 (gpu_id 0x1234, gfx942)" into buf; for messages. */
const char *spm_device_label(const struct spm_device *dev, char *buf, size_t len);
/*
 * Resolve "0" (index), "gpu_id:0x1234" or "0x1234" against the list: the
 * position in devs, or -EINVAL (unparsable) / -ENODEV (no such GPU) with the
 * valid choices listed in err.
 */
int spm_device_lookup(const struct spm_device *devs, size_t n, const char *spec,
		      char *err, size_t errlen);

/* ---- backends ----------------------------------------------------------- */

enum spm_gen {
	SPM_GEN_UNKNOWN = 0,
	SPM_GEN_A = 1, /* raw bytes, one ring (ROCK-Kernel-Driver kfd_spm.c) */
	SPM_GEN_B = 2, /* per-XCC regions with 32-byte headers (ROCm/amdgpu, SPM >= 0.2) */
};
const char *spm_gen_name(enum spm_gen gen);

/*
 * What a kernel generation's stream is, said once (SPM.md 3.3, 3.5, 5.8):
 * everything downstream (feeder, decoder, raw container, decode) asks this
 * instead of comparing generations.
 */
enum spm_loss_cut {
	/* Gen A: a full buffer makes the kernel discard ring data in whole 32-byte
	 * lines, possibly mid-sample, and flag the buffer through the ioctl's
	 * has_data_loss: the stream after a flag must be re-aligned. */
	SPM_LOSS_CUTS_LINES = 0,
	/* Gen B: a region's header flags that it filled while the ring kept the
	 * data, and the RLC stalls for whole samples: the stream continues. */
	SPM_LOSS_WHOLE_SAMPLES = 1,
};

struct spm_stream_shape {
	enum spm_gen gen;
	uint32_t nstreams;      /* per-XCC streams in a retired buffer: num_xcc, or 1 */
	bool headers;           /* regions framed with a header each (decoder/frame.h) */
	uint32_t header_bytes;  /* of each region's header; 0 without */
	bool loss_per_region;   /* loss flagged per region (header) or per buffer (ioctl) */
	enum spm_loss_cut loss; /* what a loss flag means for the bytes around it */
	uint32_t loss_align;    /* bytes: where a flagged cut may fall (a line, or a whole sample: 0) */
};

/* The shape of gen's stream on a GPU with num_xcc XCCs; -EINVAL for an unknown generation. */
int spm_stream_shape_of(enum spm_gen gen, uint32_t num_xcc, struct spm_stream_shape *out);

struct spm_clock_pair {
	uint64_t gpu_ticks;    /* GPU reference clock */
	uint64_t cpu_raw_ns;   /* CLOCK_MONOTONIC_RAW */
	uint64_t boottime_ns;  /* CLOCK_BOOTTIME */
	uint64_t system_freq;  /* 1e9 */
};

struct spm_backend;

/*
 * One implementation per file (backend_hsakmt.c, backend_kfd.c,
 * backend_hsa.c).  set_dest follows the ioctl exactly: buf NULL stops
 * streaming; *timeout_ms is in/out; the outputs describe the buffer that this
 * call retired.
 */
struct spm_backend_ops {
	const char *name;
	const char *summary;
	/* 0 if usable here, else -errno and a reason ("dlopen(libhsakmt.so.1): ..."). */
	int (*probe)(char *reason, size_t len);
	int (*open)(struct spm_backend **out, const struct spm_device *devs, size_t ndev,
		    char *err, size_t errlen);
	int (*acquire)(struct spm_backend *b, const struct spm_device *dev);
	int (*set_dest)(struct spm_backend *b, const struct spm_device *dev, void *buf,
			uint32_t size, uint32_t *timeout_ms, uint32_t *bytes_copied,
			uint32_t *data_loss);
	int (*release)(struct spm_backend *b, const struct spm_device *dev);
	int (*clock_counters)(struct spm_backend *b, const struct spm_device *dev,
			      struct spm_clock_pair *out);
	void (*close)(struct spm_backend *b);
};

extern const struct spm_backend_ops spm_backend_hsakmt;
extern const struct spm_backend_ops spm_backend_kfd;
extern const struct spm_backend_ops spm_backend_hsa;

/* NULL-terminated, default first. */
const struct spm_backend_ops *const *spm_backends(void);
const struct spm_backend_ops *spm_backend_find(const char *name);

/* Turn a backend errno on an SPM op into a sentence a user can act on. */
void spm_explain(int err, const char *op, const struct spm_device *dev, const char *backend,
		 char *out, size_t len);
/* Pids (and comm) of other processes with the KFD device open, for EBUSY messages. */
void spm_kfd_holders(char *out, size_t len);

/* ---- streams: acquire, probe the generation, rotate, drain, release ----- */

struct spm_stream;

/*
 * Data bytes one kernel SPM ring holds per XCC (4 MiB GTT less the 0x400
 * overflow reserve and the 0x20 metadata, SPM.md 4.1): the most a drain
 * can find waiting.
 */
#define SPM_KERNEL_RING_BYTES 4193248u

/* A buffer the kernel just gave back; framing is decoder/frame.h's job. */
struct spm_retired {
	void *buf;             /* NULL if no buffer was armed before this call */
	uint32_t size;         /* its size */
	uint32_t args_bytes;   /* the ioctl's bytes_copied */
	uint32_t args_loss;    /* the ioctl's has_data_loss */
};

struct spm_stream_opts {
	enum spm_gen gen_override; /* SPM_GEN_UNKNOWN = probe */
};

int spm_stream_open(struct spm_stream **out, const struct spm_backend_ops *ops,
		    struct spm_backend *b, const struct spm_device *dev,
		    const struct spm_stream_opts *opts, char *err, size_t errlen);
enum spm_gen spm_stream_gen(const struct spm_stream *s);
/* The open stream's shape (spm_stream_shape_of its generation and device). */
const struct spm_stream_shape *spm_stream_shape(const struct spm_stream *s);
/*
 * Bytes the kernel writes into a buffer of `size` before any data (per
 * region): gen B's 32-byte header (each of the num_xcc regions has one), gen A 0.
 */
uint32_t spm_stream_overhead(const struct spm_stream *s, uint32_t size);
/*
 * Arm `next` (NULL = stop) and retire the previously armed buffer into *r
 * (r->buf NULL if none was armed).  timeout 0 = flush synchronously.  A stop
 * sends at least 64 * num_xcc as its size (gen B rejects less).  Re-arming
 * the buffer that is armed now is -EINVAL.  On failure nothing is retired and
 * the armed buffer stays armed.
 */
int spm_stream_rotate(struct spm_stream *s, void *next, uint32_t size, uint32_t timeout_ms,
		      struct spm_retired *r, char *err, size_t errlen);
int spm_stream_close(struct spm_stream *s); /* RELEASE; safe after errors */

#endif
