/* SPDX-License-Identifier: MIT */
/*
 * The emulated HPE Cray EX node power counters, /sys/cray/pm_counters
 * (docs/emulator.md "Cray PM counters"; facts: shared/ref/JOB.md 6).
 *
 * Like the GPU sensors (sensors.h) everything is a pure function of
 * CLOCK_MONOTONIC_RAW time: the node controller takes a snapshot every
 * interval (SPMTAP_EMU_CRAY_INTERVAL_US, default 100 ms), snapshot k at
 * t_k = epoch + k * interval, and a read of any file between t_k and
 * t_(k+1) shows snapshot k.  Every file switches at t_k, as the kernel
 * module's show() of one shared snapshot would [I]; a reader that reads the
 * files one after another across t_(k+1) sees a torn snapshot unless it
 * brackets its reads with `freshness` (= k).
 *
 * Values: each accelerator (one per emulated card: an MI250X card's two
 * GCDs are one accel, as Frontier's four OAMs are accel0..3) measures
 * gain x the card's true power + offset (SPMTAP_EMU_CRAY_ACCEL_GAIN,
 * _ACCEL_OFFSET_W: the paper's VRM losses and the NIC etc. on the blade);
 * cpu, memory and the rest of the node are constant (SPMTAP_EMU_CRAY_CPU_W,
 * _MEM_W, _OTHER_W).  Energy files hold whole J since the epoch (floor),
 * power files the mean over the last interval in whole W (rounded).
 * Timestamps are CLOCK_REALTIME us of t_k, from the tree's cray-epoch pair.
 */
#ifndef SPMTAP_EMU_CRAYPM_H
#define SPMTAP_EMU_CRAYPM_H

#include <stddef.h>
#include <stdint.h>

#include "emu/common/sensors.h"
#include "emu/common/workload.h"

#define EMU_CRAY_MAX_ACCEL 16
/* The node-level files; accelN_power / accelN_energy follow at EMU_CRAY_F_ACCEL + 2N (+1). */
enum emu_cray_file {
	EMU_CRAY_F_POWER, EMU_CRAY_F_ENERGY, EMU_CRAY_F_CPU_POWER, EMU_CRAY_F_CPU_ENERGY,
	EMU_CRAY_F_MEM_POWER, EMU_CRAY_F_MEM_ENERGY, EMU_CRAY_F_ACCEL_POWER, EMU_CRAY_F_ACCEL_ENERGY,
	EMU_CRAY_F_FRESHNESS, EMU_CRAY_F_GENERATION, EMU_CRAY_F_STARTUP, EMU_CRAY_F_VERSION,
	EMU_CRAY_F_POWER_CAP, EMU_CRAY_F_RAW_SCAN_HZ,
	EMU_CRAY_F_ACCEL,
};
#define EMU_CRAY_NFILES(naccel) (EMU_CRAY_F_ACCEL + 2 * (naccel))

struct emu_cray_model {
	uint64_t epoch_raw_ns, epoch_real_ns; /* the same instant on MONOTONIC_RAW and REALTIME */
	uint64_t interval_ns;
	unsigned naccel;
	struct emu_sensor_model accel[EMU_CRAY_MAX_ACCEL]; /* the card's primary GPU node: its sensor measures the card */
	double gain[EMU_CRAY_MAX_ACCEL], offset_w[EMU_CRAY_MAX_ACCEL];
	double cpu_w, mem_w, other_w;
	struct emu_workload w;
};

/* One snapshot: what every file shows between t_k and t_(k+1), and the truth behind it. */
struct emu_cray_snapshot {
	uint64_t k;             /* freshness */
	uint64_t t_raw_ns;      /* t_k */
	uint64_t timestamp_us;  /* REALTIME us of t_k: every timestamped file's */
	int64_t power_w, energy_j, cpu_power_w, cpu_energy_j, mem_power_w, mem_energy_j;
	int64_t accel_power_w, accel_energy_j;
	int64_t accel_n_power_w[EMU_CRAY_MAX_ACCEL], accel_n_energy_j[EMU_CRAY_MAX_ACCEL];
	/* truth, unrounded: PM accel energy since the epoch, the card's true (on-chip) energy since the epoch */
	double accel_n_energy_exact_j[EMU_CRAY_MAX_ACCEL], card_energy_j[EMU_CRAY_MAX_ACCEL];
	double card_mean_power_w[EMU_CRAY_MAX_ACCEL]; /* true card power over (t_(k-1), t_k] */
};

/*
 * The model of the node of profile `spec` (as for emu_tree_write) from
 * the epoch pair and the SPMTAP_EMU_CRAY_* knobs.  Gains and offsets are
 * one value for every accel or a comma list per accel (the last repeats).
 * 0 or -1 with the reason in err.
 */
int emu_cray_model_init(const char *spec, uint64_t epoch_raw_ns, uint64_t epoch_real_ns,
			struct emu_cray_model *m, char *err, size_t errlen);
/* Reads <tree>/cray-epoch ("RAW_NS REALTIME_NS"); 0 or -1. */
int emu_cray_epoch(const char *tree_dir, uint64_t *raw_ns, uint64_t *real_ns);
/* The snapshot a read at MONOTONIC_RAW raw_ns shows. */
uint64_t emu_cray_index(const struct emu_cray_model *m, uint64_t raw_ns);
void emu_cray_snapshot_at(const struct emu_cray_model *m, uint64_t k, struct emu_cray_snapshot *s);
/* "power", "accel2_energy", ...; NULL past the last file. */
const char *emu_cray_file_name(unsigned i, unsigned naccel, char *buf, size_t len);
/* The file index of a name, or -1. */
int emu_cray_file_index(const char *name, unsigned naccel);
/* The text of file i in snapshot s, with its newline; its length or -1. */
int emu_cray_render(const struct emu_cray_model *m, const struct emu_cray_snapshot *s, unsigned i, char *buf,
		    size_t len);
/* One JSON line (with its newline) of the truth file for s; its length or -1. */
int emu_cray_truth_line(const struct emu_cray_model *m, const struct emu_cray_snapshot *s, char *buf,
			size_t len);

#endif
