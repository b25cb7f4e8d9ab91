/* SPDX-License-Identifier: MIT */
/*
 * The one place that converts clocks: GPU reference ticks -> CLOCK_BOOTTIME
 * nanoseconds, fitted from (gpu ticks, boottime) pairs that the backends read
 * with GET_CLOCK_COUNTERS before, during and after a run.
 *
 * Method (docs/timebase.md), in two stages because the two clocks drift for
 * different reasons:
 *  1. GPU ticks -> CLOCK_MONOTONIC_RAW: ordinary least squares,
 *     r = r0 + b * (g - g0), over a sliding window of the most recent pairs.
 *     Both are unslewed oscillators, so the relation is a straight line with
 *     a ppm-level slope error that moves only with temperature; the fit
 *     averages out the latency jitter of reading the GPU counter.  Each
 *     window's fit is kept as a segment; a tick maps through the segment
 *     that covers it, so the mapping is the same during and after the run.
 *  2. MONOTONIC_RAW -> CLOCK_BOOTTIME: NTP slews BOOTTIME (and suspend steps
 *     it), so no line fits it for long; but the kernel reads both in the
 *     same GET_CLOCK_COUNTERS call, so their difference is known exactly at
 *     each pair and is interpolated linearly between pairs.
 * Pairs without a RAW reading (raw == 0) fall back to one stage, BOOTTIME
 * fitted directly.
 *
 * Robustness (issue 14 item 11): a pair whose reads were disturbed (the
 * reading thread preempted between them) must not move the mapping.  The
 * caller measures each pair's read window (host RAW before and after the
 * call: every clock the pair holds was read inside it) and takes pairs in
 * bursts, keeping the narrowest; here a pair is rejected when its window is
 * far wider than the recent ones, or when its BOOTTIME - RAW moved faster
 * than NTP can slew (TB_MAX_SLEW_PPM) or left the recent slew's line by more
 * than the windows allow.  Three slew rejections in a row re-anchor (a
 * suspend or a step is real), and the bound of that interval says so.
 *
 * Error bound: each accepted pair pins the true host time of its GPU tick
 * to within its window.  Between two pairs the mapping and the truth are
 * both linear (constant GPU rate, constant slew over ~100 ms), so the error
 * is largest at an end; both the mapping a streaming writer used before the
 * second pair existed (extrapolated) and the one used after are checked at
 * both ends: segment k's bound_ns covers every tick in [pair k, pair k+1],
 * however it was mapped.  docs/timebase.md "Error bound".
 *
 * SPM timestamps are assumed to count the same reference clock as
 * GPUClockCounter (SPM.md 10.3, unverified on hardware); spm_clock_hz makes
 * the assumption explicit: SPM ticks are scaled by gpu_clock_hz/spm_clock_hz
 * before the fit is applied.
 */
#ifndef SPMTAP_COLLECTOR_TIMEBASE_H
#define SPMTAP_COLLECTOR_TIMEBASE_H

#include <stddef.h>
#include <stdint.h>

/* Host time: CLOCK_BOOTTIME nanoseconds. */
typedef int64_t spmtap_host_ns;
/* Raw device time: GPU reference-clock ticks as the device reports them. */
typedef uint64_t spmtap_gpu_ticks;

#define TB_DEFAULT_WINDOW 32u      /* pairs per fit */
#define TB_DEFAULT_GPU_HZ 100000000.0

#define TB_MAX_SLEW_PPM 500.0     /* NTP's limit on BOOTTIME's rate against RAW */
#define TB_SLEW_CHANGE_PPM 50.0   /* a slew-rate change believable between two pairs */
#define TB_WINDOW_SLACK_NS 1000   /* window gate: 2 x the recent median + this */
#define TB_MAX_CONSEC_REJECT 3u   /* slew refusals in a row, then the next is taken: a real step */
#define TB_SLEW_BASE_NS 50000000  /* shortest baseline of an extrapolated slew (50 ms) */

struct tb_pair {
	spmtap_gpu_ticks gpu;
	int64_t raw;          /* CLOCK_MONOTONIC_RAW ns, or 0 if unknown */
	spmtap_host_ns host;  /* CLOCK_BOOTTIME ns */
	int64_t window_ns;    /* read window measured around the call, ns; 0 unknown */
};

struct tb_segment {
	spmtap_gpu_ticks g0, g_first, g_last; /* reference and span of the pairs fitted */
	double h0;                            /* fitted clock (RAW, or BOOTTIME without RAW) ns at g0 */
	double slope;                         /* ns per tick */
	double rms_ns, max_abs_ns;            /* residuals of the pairs in this fit */
	double bound_ns;                      /* worst-case error of any tick in [its pair, the next] */
	uint32_t npairs;
};

struct timebase;

struct tb_opts {
	uint32_t window;      /* pairs per fit; 0 = TB_DEFAULT_WINDOW */
	double gpu_clock_hz;  /* nominal GET_CLOCK_COUNTERS rate; 0 = 100 MHz */
	double spm_clock_hz;  /* assumed SPM timestamp rate; 0 = gpu_clock_hz */
};

int tb_create(struct timebase **out, const struct tb_opts *opts);
void tb_free(struct timebase *tb);
/*
 * One GET_CLOCK_COUNTERS reading.  Pairs must come in increasing order of
 * every clock; others are refused (-EINVAL).  raw 0: not known.  window_ns:
 * host RAW after the call minus before it (0: not measured).  Returns 0
 * when the pair is used, 1 when it is rejected as disturbed (counted, not
 * used: tb_nrejected).
 */
int tb_add_pair_w(struct timebase *tb, spmtap_gpu_ticks gpu, int64_t raw_ns, spmtap_host_ns boot_ns,
		  int64_t window_ns);
/* tb_add_pair_w with the window not measured. */
int tb_add_pair(struct timebase *tb, spmtap_gpu_ticks gpu, int64_t raw_ns, spmtap_host_ns boot_ns);
/* Host ns for a GPU tick: 0, or -ENODATA before two pairs exist. */
int tb_map_gpu(const struct timebase *tb, spmtap_gpu_ticks gpu, spmtap_host_ns *host);
/* Host ns for an SPM timestamp (scaled by gpu_clock_hz / spm_clock_hz). */
int tb_map_spm(const struct timebase *tb, uint64_t spm_ticks, spmtap_host_ns *host);
/* tb_map_spm over n samples in stream order, the same times bit for bit, at a
 * fraction of the cost (no search per sample). */
int tb_map_spm_n(const struct timebase *tb, const uint64_t *spm_ticks, size_t n, spmtap_host_ns *host);
/* The same mapping evaluated per tick in long double, as the fit's bounds are:
 * the mappers above agree with it within 1 ns (test_timebase checks it). */
int tb_map_spm_ref(const struct timebase *tb, uint64_t spm_ticks, spmtap_host_ns *host);

/* Pairs used (tb_pairs) and pairs rejected as disturbed. */
size_t tb_npairs(const struct timebase *tb);
size_t tb_nrejected(const struct timebase *tb);
/* Worst segment bound_ns so far (0 before two pairs). */
double tb_bound(const struct timebase *tb);
const struct tb_pair *tb_pairs(const struct timebase *tb);
size_t tb_nsegments(const struct timebase *tb);
const struct tb_segment *tb_segments(const struct timebase *tb);
/* Residual of pair i against the mapping (ns): what was measured minus the fit. */
double tb_residual(const struct timebase *tb, size_t i);
/* Fitted GPU clock rate (Hz) and its deviation from nominal (ppm), from the latest segment. */
int tb_rate(const struct timebase *tb, double *hz, double *ppm);
double tb_spm_clock_hz(const struct timebase *tb);

#endif
