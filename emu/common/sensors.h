/* SPDX-License-Identifier: MIT */
/*
 * The emulated power/energy/temperature/activity sensors (docs/emulator.md,
 * "Sensors").  Everything here is a pure function of the time it is given:
 * the shim calls it with the clocks read at each sysfs read, and tests of
 * other modules call the same functions for the ground truth, so the
 * emulator and its tests cannot disagree about what "true" means.
 *
 * Time base: CLOCK_MONOTONIC_RAW ns, the clock of the workload model and of
 * the emulated GPU clock, so SPM samples and power line up.  The kernel's
 * system_clock_counter (CLOCK_BOOTTIME) is only stamped on at read time.
 *
 * The gpu_metrics structs below are written from the kernel's
 * kgd_pp_interface.h layout as documented in shared/ref/SENSORS.md 4.3;
 * they are deliberately independent of spmtap's own reader.
 */
#ifndef SPMTAP_EMU_SENSORS_H
#define SPMTAP_EMU_SENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "emu/common/emu.h"
#include "emu/common/workload.h"

/* One energy tick: 2^-16 J = 15.259 uJ (the kernel's unit; rsmi 5.2.3 says 15.3). */
#define EMU_ENERGY_TICKS_PER_J 65536.0
/* A "backstep" glitch moves the counter back by this many ticks (10 J). */
#define EMU_GLITCH_BACKSTEP_TICKS 655360ull

struct emu_metrics_header {
	uint16_t structure_size;
	uint8_t format_revision;
	uint8_t content_revision;
};

/* MI200 (aldebaran): v1_3, 120 bytes. */
struct emu_gpu_metrics_v1_3 {
	struct emu_metrics_header hdr;
	uint16_t temperature_edge, temperature_hotspot, temperature_mem;
	uint16_t temperature_vrgfx, temperature_vrsoc, temperature_vrmem;
	uint16_t average_gfx_activity, average_umc_activity, average_mm_activity;
	uint16_t average_socket_power;
	uint64_t energy_accumulator;
	uint64_t system_clock_counter;
	uint16_t average_gfxclk_frequency, average_socclk_frequency, average_uclk_frequency;
	uint16_t average_vclk0_frequency, average_dclk0_frequency;
	uint16_t average_vclk1_frequency, average_dclk1_frequency;
	uint16_t current_gfxclk, current_socclk, current_uclk, current_vclk0;
	uint16_t current_dclk0, current_vclk1, current_dclk1;
	uint32_t throttle_status;
	uint16_t current_fan_speed;
	uint16_t pcie_link_width, pcie_link_speed;
	uint16_t padding;
	uint32_t gfx_activity_acc, mem_activity_acc;
	uint16_t temperature_hbm[4];
	uint64_t firmware_timestamp;
	uint16_t voltage_soc, voltage_gfx, voltage_mem;
	uint16_t padding1;
	uint64_t indep_throttle_status;
};

/* MI300 (smu_v13_0_6): v1_5, 360 bytes (content revision 5: Debian rsmi 5.2.3 asserts on it). */
struct emu_gpu_metrics_v1_5 {
	struct emu_metrics_header hdr;
	uint16_t temperature_hotspot, temperature_mem, temperature_vrsoc;
	uint16_t curr_socket_power;
	uint16_t average_gfx_activity, average_umc_activity;
	uint16_t vcn_activity[4];
	uint16_t jpeg_activity[32];
	uint64_t energy_accumulator;
	uint64_t system_clock_counter;
	uint32_t throttle_status, gfxclk_lock_status;
	uint16_t pcie_link_width, pcie_link_speed, xgmi_link_width, xgmi_link_speed;
	uint32_t gfx_activity_acc, mem_activity_acc;
	uint64_t pcie_bandwidth_acc, pcie_bandwidth_inst, pcie_l0_to_recov_count_acc;
	uint64_t pcie_replay_count_acc, pcie_replay_rover_count_acc;
	uint32_t pcie_nak_sent_count_acc, pcie_nak_rcvd_count_acc;
	uint64_t xgmi_read_data_acc[8], xgmi_write_data_acc[8];
	uint64_t firmware_timestamp;
	uint16_t current_gfxclk[8], current_socclk[4], current_vclk0[4], current_dclk0[4];
	uint16_t current_uclk;
	uint16_t padding;
};

#define EMU_GPU_METRICS_MAX 512

enum emu_glitch_kind { EMU_GLITCH_BACKSTEP, EMU_GLITCH_STUCK, EMU_GLITCH_RESET };
#define EMU_MAX_GLITCHES 8

struct emu_glitches {
	int n;
	struct {
		enum emu_glitch_kind kind;
		uint64_t at_ns, dur_ns; /* relative to the sensor epoch */
	} g[EMU_MAX_GLITCHES];
};

/* The signals whose step response the model states (docs/emulator.md, "Sensors"). */
enum emu_sensor_signal {
	EMU_SIG_AVG,    /* average_socket_power (v1_3), power1_average */
	EMU_SIG_CUR,    /* curr_socket_power (v1_5), power1_input */
	EMU_SIG_ENERGY, /* power derived from energy_accumulator: dE/dt between consecutive tables */
};

/*
 * How a power signal answers a load step: a dead time, then a first-order
 * approach whose time constant depends on the direction (up while the
 * delayed input is above the output, down while below), so rise and fall
 * may differ as on real sensors.  The knobs state the figures of merit;
 * the rest follows: tau = RISE / ln 9 and FALL / ln 9, dead time = DELAY -
 * tau ln(10/9) per direction (at least 0), so the output has moved 10 % of
 * a step DELAY after it in both directions.
 */
struct emu_sensor_response {
	double delay_ns, rise_ns, fall_ns;   /* as configured (SPMTAP_EMU_SENSOR_<SIG>_DELAY_MS, _RISE_MS, _FALL_MS) */
	double tau_up_ns, tau_down_ns;       /* time constants */
	double dead_up_ns, dead_down_ns;     /* dead times applied to rising and falling input edges */
};

/*
 * Power follows kernels (docs/emulator.md "Power follows kernels"): the
 * activity the power model sees, when something besides the workload
 * decides it.  The shim's is the SPM counters' own combination of the
 * workload and the GPU's kernel activity log (emu/shim/kernel_activity.h);
 * a test builds one from the dispatch truth.  activity(ctx, t) is p(t) in
 * [0,1]; integral(ctx, t) is the integral of p from 0 to t in seconds, as
 * emu_workload_integral.  Unset (NULL in the model): the workload alone.
 */
struct emu_sensor_kernels {
	double (*activity)(void *ctx, uint64_t t_ns);
	double (*integral)(void *ctx, uint64_t t_ns);
	void *ctx;
};

/* Everything that decides one GPU node's sensors; see emu_sensor_model_init. */
struct emu_sensor_model {
	const struct emu_profile *profile;
	unsigned gpu_index;   /* GPU node index in spec order (0-based; card N = drm cardN) */
	unsigned card_index;  /* physical card (an MI250X card holds 2 GCD nodes) */
	int primary;          /* 0: the MI250X second GCD, whose energy and power read 0 */
	unsigned dies;        /* dies the sensor measures: 2 on the MI250X primary GCD */
	double idle_w, max_w; /* per die */
	double offset_w;      /* per card: 2.5 W x card_index, so cards are told apart */
	uint64_t energy_base_ticks; /* counter value at MONOTONIC_RAW 0 */
	int metrics_crev;     /* 3 (v1_3) or 5 (v1_5) */
	uint64_t update_ns;   /* SPMTAP_EMU_SENSOR_UPDATE_US */
	struct emu_sensor_response avg, cur;  /* SPMTAP_EMU_SENSOR_AVG_*, _CUR_* */
	double energy_delay_ns; /* SPMTAP_EMU_SENSOR_ENERGY_DELAY_MS: the counter integrates power this much late */
	double temp_tau_ns;
	uint64_t cache_ns;    /* SPMTAP_EMU_SENSOR_CACHE_US */
	uint64_t latency_ns;  /* SPMTAP_EMU_SENSOR_READ_LATENCY_US */
	uint64_t epoch_ns;    /* glitch times are relative to this (tree creation) */
	struct emu_glitches glitches;
	uint32_t sclk_mhz, uclk_mhz;
	double tdp_w;         /* power1_cap */
	/* NULL after emu_sensor_model_init; set by whoever knows the kernels (true power, energy, activity) */
	const struct emu_sensor_kernels *kernels;
};

/* Ground truth at one instant (MONOTONIC_RAW t). */
struct emu_sensor_truth {
	double activity;          /* a(t) */
	double die_power_w;       /* this node's true instantaneous power */
	double die_energy_j;      /* integral of die_power_w from t = 0 */
	double sensor_power_w;    /* what the sensor measures: package on the MI250X primary, 0 on its second GCD */
	double sensor_energy_j;   /* integral of sensor_power_w from t = 0 */
	/*
	 * energy_base_ticks + floor(sensor_energy_j * 65536): no quantisation
	 * in time, no glitches, no delay.  The counter in a table sampled at s
	 * shows this at s - energy_delay_ns (then glitches).
	 */
	uint64_t energy_ticks;
};

/*
 * The figures of merit of one signal as spmtap's sensor analysis measures
 * them (specs/sensor-analysis-v1.md 3) on the continuous signal, i.e.
 * before the tables sample it every update interval: the ground truth a
 * test of that analysis compares with.  Sampling adds to a measured delay
 * between 0 and one table spacing (sample_ms is the median; a cache wider
 * than the update makes spacings of floor and ceil(CACHE / UPDATE)
 * updates), and moves rise and fall by less than one.
 */
struct emu_sensor_figures {
	double delay_ms;        /* step -> 10 % of the way: the mean of the two below (equal unless clamped) */
	double delay_up_ms;     /* rising step -> 10 % */
	double delay_down_ms;   /* falling step -> 90 % (moved 10 % down) */
	double rise_ms;         /* 10 -> 90 % for an upward step */
	double fall_ms;         /* 90 -> 10 % for a downward step */
	double update_ms;       /* firmware update interval (SPMTAP_EMU_SENSOR_UPDATE_US) */
	double sample_ms;       /* median spacing of the distinct tables a fast reader gets (the cache can widen it) */
};

/* What the tables show for a read at (raw_ns, boot_ns). */
struct emu_sensor_reading {
	uint64_t sample_ns;      /* MONOTONIC_RAW time of the firmware sample (quantised to update_ns) */
	uint64_t system_clock_counter; /* BOOTTIME ns when the (possibly cached) table was built */
	uint64_t firmware_timestamp;   /* sample_ns / 10 (10 ns ticks) */
	uint64_t energy_ticks;   /* with glitches */
	double avg_power_w, cur_power_w; /* filter outputs at sample_ns (0 on a second GCD) */
	double temp_edge_c, temp_hotspot_c, temp_mem_c;
	unsigned gfx_busy, umc_busy; /* % */
	double activity_integral_s;  /* integral of a(t) up to sample_ns */
	unsigned vddgfx_mv;
};

/*
 * Parameters of GPU node `gpu_index` of `spec` (a profile spec as for
 * emu_tree_write), with the knobs SPMTAP_EMU_SENSOR_* from the environment.
 * `epoch_ns` is the glitch epoch (emu_sensor_epoch_ns).  0 or -1 (err).
 */
int emu_sensor_model_init(const char *spec, unsigned gpu_index, uint64_t epoch_ns,
			  struct emu_sensor_model *m, char *err, size_t errlen);

/* "backstep@T_MS,stuck@T_MS:DUR_MS,reset@T_MS"; 0 or -1 (err). */
int emu_glitch_parse(const char *spec, struct emu_glitches *g, char *err, size_t errlen);

/* The glitch epoch written by emu_tree_write into <dir>/sensor-epoch; 0 if none. */
uint64_t emu_sensor_epoch_ns(const char *tree_dir);

/* True power and energy at MONOTONIC_RAW t_ns. */
void emu_sensor_truth(const struct emu_sensor_model *m, const struct emu_workload *w, uint64_t t_ns,
		      struct emu_sensor_truth *out);

/*
 * First-order low-pass (time constant tau, dead time d, both ns, the same
 * in both directions) of the sensor's true power at t, in periodic steady
 * state (the workload has always run).
 */
double emu_sensor_filtered_power(const struct emu_sensor_model *m, const struct emu_workload *w, uint64_t t_ns,
				 double tau_ns, double delay_ns);

/*
 * The continuous signal `sig` at MONOTONIC_RAW t, in W: what a table
 * sampled at t shows before rounding to whole watts (for EMU_SIG_ENERGY,
 * the mean power over one table spacing, sample_ms of the figures, before
 * t - energy_delay_ns: what dE/dt between two consecutive distinct tables
 * gives).  0 on an MI250X second GCD.
 */
double emu_sensor_signal_w(const struct emu_sensor_model *m, const struct emu_workload *w,
			   enum emu_sensor_signal sig, uint64_t t_ns);

/* The ground-truth figures of merit of `sig` under the model's knobs. */
void emu_sensor_figures_of(const struct emu_sensor_model *m, enum emu_sensor_signal sig,
			   struct emu_sensor_figures *f);

/* The reading a sysfs read at (raw_ns, boot_ns) returns (update quantisation, cache, glitches). */
void emu_sensor_read(const struct emu_sensor_model *m, const struct emu_workload *w, uint64_t raw_ns,
		     uint64_t boot_ns, struct emu_sensor_reading *r);

/* The gpu_metrics table for a reading; returns its size (120 or 360). */
size_t emu_sensor_render_metrics(const struct emu_sensor_model *m, const struct emu_sensor_reading *r,
				 void *buf, size_t len);

/*
 * Text of a dynamic hwmon/device attribute ("power1_average", "temp2_input",
 * "gpu_busy_percent", ...) with its newline; -1 if `name` is not dynamic.
 */
int emu_sensor_render_attr(const struct emu_sensor_model *m, const struct emu_sensor_reading *r,
			   const char *name, char *buf, size_t len);

#endif
