/* SPDX-License-Identifier: MIT */
/*
 * The emulated workload: one activity level a(t) in [0,1] per process,
 * from $SPMTAP_EMU_WORKLOAD, as a pure function of CLOCK_MONOTONIC_RAW
 * time.  Being a function of time only (no state), every consumer (the
 * RLC's counters today, power sensors later) and every process sharing the
 * knob sees the same load at the same instant.
 */
#ifndef SPMTAP_EMU_WORKLOAD_H
#define SPMTAP_EMU_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

enum emu_wl_kind { EMU_WL_IDLE, EMU_WL_CONSTANT, EMU_WL_SQUARE, EMU_WL_RAMP, EMU_WL_BURSTS };

struct emu_workload {
	enum emu_wl_kind kind;
	double level;         /* constant */
	double period_ms;     /* square, ramp */
	double duty;          /* square: fraction of the period at `high` */
	double high, low;     /* square, bursts */
	double every_ms, len_ms; /* bursts */
};

/*
 * Grammar (docs/emulator.md):
 *   idle | constant[:LEVEL] | square:period_ms=P,duty=D[,high=H,low=L]
 *   | ramp:period_ms=P | bursts:every_ms=E,len_ms=L[,high=H,low=L]
 * NULL or "" is constant:1.  Returns 0, or -1 with the reason in err and
 * *w set to constant:1.
 */
int emu_workload_parse(const char *spec, struct emu_workload *w, char *err, size_t errlen);

/* a(t) at CLOCK_MONOTONIC_RAW time t_ns, in [0,1]. */
double emu_workload_activity(const struct emu_workload *w, uint64_t t_ns);

/*
 * The integral of a(s) ds over [0, t_ns], in seconds, in closed form, so
 * that energy (the sensors) is exact and stateless like a(t) itself.
 */
double emu_workload_integral(const struct emu_workload *w, uint64_t t_ns);

/*
 * The first t in [1, period) at which a(t) differs from a(0), found from
 * a(t) itself so that schedules and sensor waves agree with the model to
 * the nanosecond; period if a(t) never changes.
 */
uint64_t emu_workload_first_change(const struct emu_workload *w, uint64_t period);

#endif
