/* SPDX-License-Identifier: MIT */
/*
 * Power, energy and other GPU sensors behind one interface (docs/power.md).
 *
 * A source (gpu_metrics, amd_smi, rocm_smi, hwmon) opens one GPU and reads
 * every metric it has in one batch: one call per sample keeps the per-read
 * cost (SENSORS.md 7: hundreds of us per SMU transfer) paid once, which is
 * what makes 1 ms sampling possible.  Each batch carries the host read
 * time before and after (CLOCK_BOOTTIME) and the sensor's own timestamp
 * with the clock domain it counts in, because the domain differs by source
 * and even by library version (SENSORS.md 3, 8).
 *
 * Discovery is by probe (smi_probe.c): a metric is exposed only if a read
 * actually returned data for it, not because an API claims to support it.
 */
#ifndef SPMTAP_COLLECTOR_SMI_SOURCE_H
#define SPMTAP_COLLECTOR_SMI_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Values are normalised: W, J, degC, %, MHz. */
enum smi_metric {
	SMI_M_ENERGY = 0,    /* J, from raw ticks x SMI_ENERGY_TICK_J */
	SMI_M_POWER_AVG,     /* W, firmware-averaged socket power (MI200: v1.3) */
	SMI_M_POWER_CUR,     /* W, current socket power (MI300: v1.4+) */
	SMI_M_TEMP_EDGE,     /* degC */
	SMI_M_TEMP_HOTSPOT,  /* degC (junction) */
	SMI_M_TEMP_MEM,      /* degC */
	SMI_M_TEMP_VRSOC,    /* degC */
	SMI_M_GFX_ACTIVITY,  /* % */
	SMI_M_UMC_ACTIVITY,  /* % */
	SMI_M_MM_ACTIVITY,   /* % */
	SMI_M_GFXCLK,        /* MHz, current (XCC 0 on MI300) */
	SMI_M_SOCCLK,        /* MHz, current */
	SMI_M_UCLK,          /* MHz, current memory clock */
	SMI_M_COUNT
};

#define SMI_M_BIT(m) (1u << (m))

/*
 * One energy tick is 2^-16 J = 15.2587890625 uJ (the kernel's unit for
 * energy_accumulator).  ROCm SMI and AMD SMI hard-code 15.3 uJ, 0.27 % high;
 * spmtap keeps raw ticks and uses the kernel's value whatever a library says.
 */
#define SMI_ENERGY_TICK_J (1.0 / 65536.0)
#define SMI_LIB_ENERGY_TICK_UJ 15.3

/* Which clock a sensor timestamp counts. */
enum smi_ts_domain {
	SMI_TS_NONE = 0,      /* the source has no timestamp (hwmon) */
	SMI_TS_BOOTTIME_NS,   /* driver's ktime_get_boottime_ns() when it built the table */
	SMI_TS_FW_10NS,       /* PMFW firmware_timestamp, 10 ns ticks, own epoch */
	SMI_TS_FW_NS,         /* the same firmware clock already x10 (old rocm_smi) */
};

const char *smi_metric_name(enum smi_metric m);   /* "power_avg" */
const char *smi_metric_unit(enum smi_metric m);   /* "W" */
/* -1 if unknown. */
int smi_metric_lookup(const char *name);
const char *smi_ts_domain_name(enum smi_ts_domain d); /* "smu_10ns", ... */

#define SMI_TS_ABSENT UINT64_MAX

struct smi_batch {
	int64_t host_before_ns, host_after_ns; /* CLOCK_BOOTTIME around the read */
	/* Sensor time for the whole batch, in `ts_domain`; SMI_TS_ABSENT if none. */
	uint64_t sensor_ts;
	enum smi_ts_domain ts_domain;
	/* Both gpu_metrics clocks when the source exposes them; else SMI_TS_ABSENT. */
	uint64_t fw_ts_10ns;   /* firmware_timestamp (10 ns) */
	uint64_t sys_clock_ns; /* system_clock_counter (BOOTTIME ns) */
	uint64_t energy_ticks; /* raw energy_accumulator when SMI_M_ENERGY is present */
	uint32_t present;      /* SMI_M_BIT() of metrics that returned data this read */
	double v[SMI_M_COUNT];
};

/* The GPU a source opens: matched by PCI address (KFD domain/location_id). */
struct smi_dev {
	uint32_t index;        /* spmtap GPU index */
	uint32_t domain;       /* PCI domain */
	uint32_t location_id;  /* bus<<8 | dev<<3 | fn, as KFD topology says */
	char name[64];
};

struct smi_env {
	const char *sysfs_root;   /* NULL: "/sys" (tests point it at a temp tree) */
	const char *amdsmi_lib;   /* NULL: $SPMTAP_AMDSMI_LIB, then libamd_smi.so */
	const char *rocm_lib;     /* NULL: $SPMTAP_ROCM_SMI_LIB, then librocm_smi64.so.1 */
	int rocm_probe_timeout_ms; /* child probe of rocm_smi; 0: 15000 */
};

enum smi_avail { SMI_NOT_PROBED = 0, SMI_OK, SMI_PARTIAL, SMI_DISABLED };
const char *smi_avail_name(enum smi_avail a);

struct smi_source;

struct smi_source_ops {
	const char *name; /* "gpu_metrics", "amd_smi", "rocm_smi", "hwmon" */
	/* 0 or -errno, with the reason in why. */
	int (*open)(const struct smi_dev *dev, const struct smi_env *env,
		    struct smi_source **out, char *why, size_t whylen);
	/* One batch of every metric; 0 or -errno.  Fills host times itself. */
	int (*read_all)(struct smi_source *s, struct smi_batch *b);
	void (*close)(struct smi_source *s);
};

/* Probe order (docs/power.md "Probe order"). */
extern const struct smi_source_ops smi_gpu_metrics_ops;
extern const struct smi_source_ops smi_amdsmi_ops;
extern const struct smi_source_ops smi_rocm_ops;
extern const struct smi_source_ops smi_hwmon_ops;
#define SMI_NSOURCES 4
extern const struct smi_source_ops *const smi_sources[SMI_NSOURCES];

/* ---- shared helpers (smi_probe.c) ------------------------------------ */

int64_t smi_now_boot_ns(void);
void smi_batch_reset(struct smi_batch *b);
static inline void smi_batch_set(struct smi_batch *b, enum smi_metric m, double v)
{
	b->v[m] = v;
	b->present |= SMI_M_BIT(m);
}
/*
 * The DRM device directory of the GPU at (domain, location_id):
 * "<root>/class/drm/cardN/device".  0, or -ENODEV with the cards seen in why.
 */
int smi_find_drm_device(const char *sysfs_root, uint32_t domain, uint32_t location_id,
			char *dir, size_t dirlen, char *why, size_t whylen);
/* Parse "DDDD:BB:DD.F" into domain and location_id; 0 or -EINVAL. */
int smi_parse_bdf(const char *s, uint32_t *domain, uint32_t *location_id);

/* ---- gpu_metrics table decoding (smi_gpu_metrics.c) -------------------- */

struct smi_gm_header {
	uint16_t structure_size;
	uint8_t format_revision, content_revision;
};

/*
 * Decode one table into b (metrics, fw_ts_10ns, sys_clock_ns, energy_ticks;
 * not the host times).  Unsupported fields (0xFF fill) are left absent.
 * 0, or -EPROTO (unknown version or size, with the numbers in why) or
 * -EMSGSIZE (shorter than the header says).
 */
int smi_gm_decode(const void *buf, size_t len, struct smi_batch *b, char *why, size_t whylen);
/* Read just the header of <devdir>/gpu_metrics; 0 or -errno. */
int smi_gm_read_header(const char *devdir, struct smi_gm_header *h, char *why, size_t whylen);

/* ---- probe (smi_probe.c) ------------------------------------------- */

struct smi_source_report {
	const char *source;
	enum smi_avail avail;
	int err;
	char reason[256];      /* why disabled, or "" */
	char note[160];        /* e.g. "second GCD reports no energy" */
	uint32_t metrics;      /* metrics that returned data in the probe reads */
	enum smi_ts_domain ts_domain;
};

struct smi_probe {
	struct smi_dev dev;
	struct smi_source_report src[SMI_NSOURCES];
	int selected;                       /* index into smi_sources, or -1 */
	const struct smi_source_ops *ops;   /* of the selected source */
	struct smi_source *inst;            /* the selected source, open */
	uint32_t metrics;                   /* what the selected source exposes */
	bool energy_second_die;             /* energy reads 0: MI200 secondary GCD */
};

/*
 * Try every source in order on dev, keep the first that returns data open.
 * Always fills every report; returns 0 if a source was selected, else
 * -ENODEV.  smi_probe_release() closes the selected source.
 */
int smi_probe_device(const struct smi_dev *dev, const struct smi_env *env, struct smi_probe *p);
void smi_probe_release(struct smi_probe *p);

#endif
