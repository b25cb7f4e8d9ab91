/* SPDX-License-Identifier: MIT */
/*
 * Counters follow kernels (docs/emulator.md "Counters follow kernels").
 * The CP that starts a dispatch appends it to the GPU's kernel activity log
 * (gpu_state.h) with its modelled end and its activity level; the process
 * that holds SPM asks, for each sample's time, which dispatches ran then.
 * The two are different processes: the log in the shared state file is
 * where they meet, as on hardware the counters see whatever the shader
 * engines run, whoever submitted it.
 *
 * The profile: one level per kernel in [0,1], and one fraction per block
 * for every kernel: block b runs at level x fraction(b) of its peak (the
 * activity a(t) of the counter model, counters.h), so every SPM counter of
 * b counts as under the workload model at that activity.  Concurrent
 * kernels add up per block, capped at 1 (the peak).
 */
#ifndef SPMTAP_EMU_KERNEL_ACTIVITY_H
#define SPMTAP_EMU_KERNEL_ACTIVITY_H

#include <stdbool.h>
#include <stdint.h>

#include "emu/common/counters.h"
#include "emu/common/workload.h"
#include "emu/shim/gpu_state.h"

#define EMU_KERNEL_LEVEL_DEFAULT 0.5 /* SPMTAP_EMU_KERNEL_LEVEL's default */

/*
 * The level of a kernel named `name` (a user kernel's symbol, with or
 * without ".kd", or a blit's kind name such as blit_copy):
 * $SPMTAP_EMU_KERNEL_PROFILE's "name=level" entry, else
 * $SPMTAP_EMU_KERNEL_LEVEL, else EMU_KERNEL_LEVEL_DEFAULT; clamped to [0,1].
 */
double emu_kact_level(const char *name);

/*
 * The per-block fractions into f (enum emu_blk): the defaults (SQ and SPI
 * 1, TA/TD/TCP 0.5, TCC/TCA 0.3, CPC/CPF 0.1) overridden by
 * $SPMTAP_EMU_KERNEL_BLOCKS="TA=0.6,TCC=0.4" (block names as in
 * counters.c), clamped to [0,1].  Unknown names are logged and ignored.
 */
void emu_kact_block_fractions(double f[EMU_NBLK]);

/*
 * Under the GPU's lock: append a dispatch that runs [start_ns, end_ns).
 * Returns its seq (the dispatch number in the log).  When the oldest entry
 * is overwritten while its kernel still runs, klog->dropped counts it.
 */
uint64_t emu_kact_append(struct emu_gpu_state *gs, uint64_t start_ns, uint64_t end_ns, uint32_t pid, uint32_t queue,
			 uint64_t index, double level);

/* Which dispatches ran at one instant. */
struct emu_kact {
	double level;          /* their levels summed (not capped) */
	uint32_t count;        /* how many */
	uint64_t newest;       /* the seq of the latest started of them; 0 when none */
	uint64_t first_start_ns; /* when the GPU's first logged dispatch started */
};

/*
 * The dispatches running at t_ns (start <= t < end).  False, *k zeroed,
 * when no dispatch was ever logged on this GPU (no lock taken then: the
 * cost of a recording without kernels is one atomic load).  Takes the lock.
 */
bool emu_kact_at(struct emu_gpu_state *gs, uint64_t t_ns, struct emu_kact *k);

/*
 * The one combination of the workload and the kernels (docs/emulator.md
 * "Counters follow kernels"), for the counters and for power alike.  The
 * background at t: the workload's activity a when $SPMTAP_EMU_WORKLOAD was
 * given (wl_given), else a until the GPU's first dispatch started and 0
 * (idle) from then on.  A block at fraction f runs at background + level x
 * f, capped at 1.
 */
static inline double emu_kact_background(double a, bool wl_given, const struct emu_kact *k, uint64_t t_ns)
{
	return !wl_given && t_ns >= k->first_start_ns ? 0.0 : a;
}

static inline double emu_kact_block(double background, double level, double fraction)
{
	double v = background + level * fraction;
	return v < 1.0 ? v : 1.0;
}

/*
 * Power follows kernels: the activity the power model sees is that of a
 * block at fraction 1 (SQ and SPI by default: the shader engines), i.e.
 * emu_kact_block(background, level, 1).  The running integral (*c, one
 * per GPU per process) saves a read from integrating the log from the
 * first dispatch.
 */
struct emu_kact_power_cache {
	bool cached;
	uint64_t t;  /* the integral up to here is i (s); never after the time a CP could still start at */
	double i;
};

struct emu_kact_power {
	struct emu_gpu_state *gs;
	const struct emu_workload *w;
	bool wl_given;
	struct emu_kact_power_cache *c; /* per GPU per process, used under the GPU's lock; NULL: none */
};

/* p(t) as above; without any logged dispatch exactly emu_workload_activity(w, t). */
double emu_kact_power_activity(struct emu_kact_power *p, uint64_t t_ns);
/*
 * The integral of p from 0 to t in seconds, exact per segment of the log
 * (between any two starts or ends) where the workload's activity plus the
 * running levels stays at or below 1 or the workload is constant; where
 * the cap bites under a varying workload it caps the segment's mean.
 * Without any logged dispatch exactly emu_workload_integral(w, t).  Takes
 * the lock when the GPU has logged a dispatch.
 */
double emu_kact_power_integral(struct emu_kact_power *p, uint64_t t_ns);

#endif
