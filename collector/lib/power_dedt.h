/* SPDX-License-Identifier: MIT */
/*
 * Power derived from the energy counter, dE/dt (SENSORS.md 9, docs/power.md):
 *   P_k = (E_k - E_{k-1}) * 2^-16 J / (T_k - T_{k-1})
 * with T the SENSOR's timestamp (the PMFW firmware_timestamp where there is
 * one), never the host read time: read jitter of hundreds of us would go
 * straight into a 1 ms denominator.  The value is the exact mean power over
 * (T_{k-1}, T_k], a boxcar that cannot alias in energy.
 *
 * Per-sensor offsets (the paper's +30 W static offset) live here too.
 */
#ifndef SPMTAP_COLLECTOR_POWER_DEDT_H
#define SPMTAP_COLLECTOR_POWER_DEDT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/lib/smi_source.h"

enum dedt_flag {
	DEDT_FIRST = 1u << 0,        /* baseline only: no interval yet */
	DEDT_DUPLICATE = 1u << 1,    /* same energy and timestamp: a cached re-read, skipped */
	DEDT_RESET = 1u << 2,        /* energy went backwards: reset or glitch, re-baselined */
	DEDT_TS_BACKWARDS = 1u << 3, /* sensor time went backwards: re-baselined */
	DEDT_STUCK = 1u << 4,        /* energy unchanged while time advanced for stuck_after reads; with
				      * DEDT_HELD: the interval closing such a stall, not emitted */
	DEDT_NO_ENERGY = 1u << 5,    /* counter reads 0: MI200 second GCD reports no energy */
	DEDT_IMPLAUSIBLE = 1u << 6,  /* above max_w: not emitted */
	DEDT_HELD = 1u << 7,         /* energy unchanged, time advanced: interval extended */
	DEDT_TS_DUP = 1u << 8,       /* same timestamp, new energy: time did not advance */
};

struct dedt_opts {
	double tick_j;          /* 0: 2^-16 J (15.259 uJ) */
	double max_w;           /* plausibility bound; 0: 5000 W */
	uint32_t stuck_after;   /* reads with unchanged energy before DEDT_STUCK; 0: 20 */
};

struct dedt {
	struct dedt_opts o;
	bool have;
	uint64_t e_prev, t_prev_ns;
	uint64_t e_last, t_last; /* last reading seen, even when held */
	uint32_t same_n;       /* consecutive reads with unchanged energy */
	struct { uint64_t emitted, duplicate, reset, ts_backwards, stuck, no_energy, implausible; } n;
};

struct dedt_out {
	bool valid;            /* watts is a mean power over (t0_ns, t1_ns] */
	double watts;
	uint64_t t0_ns, t1_ns; /* sensor time, ns */
	uint32_t flags;        /* enum dedt_flag */
};

void dedt_init(struct dedt *d, const struct dedt_opts *o);
/*
 * Feed one reading: energy ticks and sensor time in ns (firmware_timestamp
 * x 10, or BOOTTIME ns).  Returns true when *out holds a new interval
 * (valid or flagged); false when the reading only moved the state (a
 * duplicate, a held interval).
 */
bool dedt_push(struct dedt *d, uint64_t energy_ticks, uint64_t ts_ns, struct dedt_out *out);
/* Short words for a flag set: "reset,stuck". */
const char *dedt_flags_str(uint32_t flags, char *buf, size_t len);

/* ---- per-sensor offsets ("--smi-offset power_avg=30W,temp_edge=-2degC") ---- */

struct smi_offsets {
	double add[SMI_M_COUNT];
	double add_dedt; /* for "power_dedt" */
};

/*
 * Parse a comma-separated list of name=value[unit]; a unit, if given, must
 * be the metric's.  0, or -EINVAL with the reason in err.
 */
int smi_offsets_parse(const char *spec, struct smi_offsets *o, char *err, size_t errlen);

#endif
