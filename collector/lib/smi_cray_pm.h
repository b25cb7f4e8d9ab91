/* SPDX-License-Identifier: MIT */
/*
 * HPE Cray EX node power, /sys/cray/pm_counters (docs/power.md "Cray EX
 * node power"; facts: shared/ref/JOB.md 6).  A node-level source beside the
 * per-GPU ones of smi_source.h: node, CPU, memory and accelerator power (W)
 * and energy (J), each line "<int> <W|J> <timestamp> us" with the node
 * controller's own timestamp (CLOCK_REALTIME us, as far as public readers
 * show), refreshed about every 100 ms.
 *
 * Consistency: the files of one snapshot are read between two reads of
 * `freshness`; when it changed the whole read is retried, so a snapshot
 * returned never mixes two (generation counts power-cap changes and is no
 * use for this).  Files are opened once and re-read with pread at offset 0.
 *
 * Which accelN is which GPU is not documented publicly: the source reports
 * accelN as node-level streams; a user's map (cray_pm_parse_map) pairs
 * them with GPUs.
 */
#ifndef SPMTAP_COLLECTOR_SMI_CRAY_PM_H
#define SPMTAP_COLLECTOR_SMI_CRAY_PM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CRAY_PM_MAX_ACCEL 16
/* power, energy, cpu_*, memory_*, accel_* (8) + accelN_power/_energy */
#define CRAY_PM_MAX_SERIES (8 + 2 * CRAY_PM_MAX_ACCEL)
/* Retries of a torn read before giving up on this period (each costs one pass over the files). */
#define CRAY_PM_MAX_TRIES 8

struct cray_pm;

struct cray_pm_value {
	int64_t v;      /* W or J */
	uint64_t ts_us; /* the line's timestamp */
	bool present;   /* the file answered with a well-formed line */
};

struct cray_pm_snap {
	uint64_t freshness;
	int64_t host_before_ns, host_after_ns; /* CLOCK_BOOTTIME around the consistent pass */
	int64_t real_minus_boot_ns;            /* CLOCK_REALTIME - CLOCK_BOOTTIME at the pass */
	uint32_t tries;                        /* passes it took (1: the first was consistent) */
	uint64_t ts_us;                        /* the snapshot's timestamp: the first present file's */
	struct cray_pm_value val[CRAY_PM_MAX_SERIES]; /* by series index */
};

/*
 * Open <sysfs_root>/cray/pm_counters (sysfs_root NULL: "/sys").  0, or
 * -errno with why ("no /sys/cray/pm_counters: not an HPE Cray EX node").
 */
int cray_pm_open(const char *sysfs_root, struct cray_pm **out, char *why, size_t whylen);
void cray_pm_close(struct cray_pm *p);

/* The series the node has, in a fixed order: power, energy, cpu_power, ..., accel0_power, accel0_energy, ... */
unsigned cray_pm_nseries(const struct cray_pm *p);
const char *cray_pm_series_name(const struct cray_pm *p, unsigned i); /* the file's name */
char cray_pm_series_unit(const struct cray_pm *p, unsigned i);        /* 'W' or 'J' */
/* The accel a series belongs to, or -1 (node, cpu, memory, the accel sum). */
int cray_pm_series_accel(const struct cray_pm *p, unsigned i);
unsigned cray_pm_naccel(const struct cray_pm *p);
/* raw_scan_hz, version, startup as read at open (0 / "" when absent). */
uint64_t cray_pm_raw_scan_hz(const struct cray_pm *p);
const char *cray_pm_version(const struct cray_pm *p);

/*
 * One consistent snapshot: freshness, every file, freshness again; the
 * pass is repeated while freshness moved, up to CRAY_PM_MAX_TRIES.
 * 0; -EAGAIN when every pass was torn; -EIO when freshness cannot be read.
 * torn (may be NULL) counts the passes thrown away.
 */
int cray_pm_read(struct cray_pm *p, struct cray_pm_snap *s, uint64_t *torn);

/* "<int> <W|J> <timestamp> us" (timestamp and "us" optional); 0 or -EINVAL. */
int cray_pm_parse_line(const char *s, int64_t *v, char *unit, uint64_t *ts_us, bool *has_ts);

/*
 * "accel0=gpu1,accel2=gpu0" (or accel0=1) into map[accel] = GPU index,
 * -1 for accels not named.  0, or -EINVAL with the reason in err.
 */
int cray_pm_parse_map(const char *spec, int32_t map[CRAY_PM_MAX_ACCEL], char *err, size_t errlen);

#endif
