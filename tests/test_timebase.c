/* SPDX-License-Identifier: MIT */
/*
 * The timebase against a known truth: a synthetic GPU clock with an offset,
 * a 100 ppm oscillator error and a host clock that NTP slews mid-run, read
 * in pairs every 100 ms with read jitter, over ten emulated minutes.  Every
 * sample tick is mapped the way a streaming writer does (only the pairs read
 * so far are known) and compared with the host time it really had.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/lib/timebase.h"
#include "testenv.h"

/* Deterministic jitter in [-amp, amp] ns. */
static double jitter(uint64_t *s, double amp)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return ((double)(*s >> 11) / (double)(1ull << 53) * 2.0 - 1.0) * amp;
}

struct clockmodel {
	double offset_ticks, ppm;
	double slew_at_s, slew_ppm; /* host clock rate change (NTP) */
	int64_t boot0;
};

/* MONOTONIC_RAW ns at true time t seconds: the unslewed host oscillator. */
static double raw_at(double t)
{
	return 1e12 + t * 1e9;
}

/* Host (BOOTTIME) ns at true time t seconds. */
static double host_at(const struct clockmodel *m, double t)
{
	double h = t * 1e9;
	if (t > m->slew_at_s)
		h += (t - m->slew_at_s) * 1e9 * m->slew_ppm * 1e-6;
	return (double)m->boot0 + h;
}

/* GPU ticks at true time t seconds. */
static double gpu_at(const struct clockmodel *m, double t)
{
	return m->offset_ticks + t * 1e8 * (1.0 + m->ppm * 1e-6);
}

/*
 * How the collector reads a pair (ses_add_pair): host RAW before and after
 * the call bracket it (the window, 100-300 ns here); inside, the GPU
 * counter is latched, then RAW, then BOOTTIME are read, each at some point
 * of the window.  A disturbed pair has its BOOTTIME read (or, at_raw, its
 * RAW read) DELAY ns late, and its window is that much wider.
 */
struct pairgen {
	int every;      /* every Nth pair disturbed (0 none) */
	double delay_ns;
	bool at_raw;    /* the delay between the GPU latch and RAW, not between RAW and BOOTTIME */
	bool window;    /* pass the window to the timebase (else 0: not measured) */
};

struct result {
	double stream_ns, post_ns;  /* worst |error| vs truth: streaming, after the run */
	double ratio;               /* worst |error| / the bound of its segment (<= 1: within) */
	double bound_ns;            /* tb_bound */
	double ppm;
	size_t rejected, over_1us;
};

/* The interval a tick is in: the number of used pairs at or before it, minus 1. */
static size_t interval_of(const struct timebase *tb, spmtap_gpu_ticks g)
{
	size_t lo = 0, hi = tb_npairs(tb);
	const struct tb_pair *p = tb_pairs(tb);
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (p[mid].gpu <= g)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : 0;
}

/*
 * Maps a sample every 1.7 ms (every 3.9 us would be 1.5e8 samples) as a
 * streaming writer does, with only the pairs read so far (extrapolating up
 * to one pair interval), and again after the run with every pair known;
 * each error is checked against the bound of its segment.
 */
static void run_model(const struct clockmodel *m, double minutes, double jitter_ns, bool raw,
		      const struct pairgen *pg, struct result *res)
{
	struct timebase *tb;
	CU_ASSERT_FATAL(tb_create(&tb, NULL) == 0);
	uint64_t seed = 42;
	double dur = minutes * 60.0, next_pair = 0;
	size_t npairs_read = 0, cap = (size_t)(dur / 0.1) + 16;
	double *seg_err = calloc(cap, sizeof(double)); /* worst streaming error per interval */
	CU_ASSERT_PTR_NOT_NULL_FATAL(seg_err);
	memset(res, 0, sizeof(*res));
	for (double t = 0.0005; t < dur; t += 0.0017) {
		while (next_pair <= t) {
			npairs_read++;
			bool hit = pg && pg->every && npairs_read % (size_t)pg->every == 0;
			double w = 100.0 + fabs(jitter(&seed, jitter_ns)); /* the call's window, ns */
			double late = hit ? pg->delay_ns : 0.0;
			double tg = next_pair, tr = tg + 0.3 * w * 1e-9, tb_ = tg + 0.6 * w * 1e-9;
			if (hit && pg->at_raw)
				tr += late * 1e-9;
			tb_ += late * 1e-9;
			int rc = tb_add_pair_w(tb, (spmtap_gpu_ticks)llround(gpu_at(m, tg)),
					       raw ? (int64_t)llround(raw_at(tr)) : 0,
					       (spmtap_host_ns)llround(host_at(m, tb_)),
					       pg && !pg->window ? 0 : (int64_t)llround(w + late));
			CU_ASSERT_FATAL(rc == 0 || rc == 1);
			next_pair += 0.1;
		}
		if (tb_npairs(tb) < 2)
			continue;
		spmtap_host_ns got;
		spmtap_gpu_ticks g = (spmtap_gpu_ticks)llround(gpu_at(m, t));
		CU_ASSERT_EQUAL_FATAL(tb_map_gpu(tb, g, &got), 0);
		double err = fabs((double)got - host_at(m, t));
		size_t k = tb_npairs(tb) - 1;
		if (k < cap && err > seg_err[k])
			seg_err[k] = err;
		res->over_1us += err > 1000.0;
		if (err > res->stream_ns)
			res->stream_ns = err;
	}
	CU_ASSERT_EQUAL(tb_rate(tb, NULL, &res->ppm), 0);
	const struct tb_segment *seg = tb_segments(tb);
	for (size_t k = 0; k + 1 < tb_npairs(tb) && k < cap; k++)
		if (seg_err[k] / seg[k].bound_ns > res->ratio)
			res->ratio = seg_err[k] / seg[k].bound_ns;
	for (double t = 0.0005; t < dur - 0.2; t += 0.0017) {
		spmtap_host_ns got;
		spmtap_gpu_ticks g = (spmtap_gpu_ticks)llround(gpu_at(m, t));
		CU_ASSERT_EQUAL_FATAL(tb_map_gpu(tb, g, &got), 0);
		double err = fabs((double)got - host_at(m, t));
		double r = err / seg[interval_of(tb, g)].bound_ns;
		if (r > res->ratio)
			res->ratio = r;
		res->over_1us += err > 1000.0;
		if (err > res->post_ns)
			res->post_ns = err;
	}
	res->bound_ns = tb_bound(tb);
	res->rejected = tb_nrejected(tb);
	free(seg_err);
	tb_free(tb);
}

static void test_drift_offset_10min(void)
{
	struct clockmodel m = { .offset_ticks = 6.8719476736e10, .ppm = 100.0, .slew_at_s = 1e9,
				.boot0 = 123456789000 };
	struct result r;
	run_model(&m, 10.0, 200.0, true, NULL, &r);
	printf("\n    100 ppm, 10 min, 100-300 ns read windows: worst error %.0f ns streaming, %.0f ns after "
	       "the run, bound %.0f ns (worst error/bound %.2f), fitted %+.2f ppm\n", r.stream_ns, r.post_ns,
	       r.bound_ns, r.ratio, r.ppm);
	CU_ASSERT(r.stream_ns < 1000.0);
	CU_ASSERT(r.post_ns < 1000.0);
	CU_ASSERT(r.ratio <= 1.0);
	CU_ASSERT(fabs(r.ppm - 100.0) < 1.0);
	CU_ASSERT_EQUAL(r.rejected, 0);
}

/*
 * NTP changes BOOTTIME's rate by 10 ppm after 3 minutes.  With RAW in the
 * pairs the GPU fit never sees the slew and only the BOOTTIME-RAW offset,
 * interpolated between pairs, carries it; fitted directly (no RAW), the
 * window straddles the kink and the error grows.  A streaming mapping cannot
 * know of the step until the next pair: its error there is bounded by the
 * step times the pair interval (10 ppm x 100 ms = 1 us), and the bound of
 * that segment says so.
 */
static void test_host_slew(void)
{
	struct clockmodel m = { .offset_ticks = 1e9, .ppm = -100.0, .slew_at_s = 180.05,
				.slew_ppm = 10.0, .boot0 = 5000000000 };
	struct result r, r1;
	run_model(&m, 6.0, 200.0, true, NULL, &r);
	run_model(&m, 6.0, 200.0, false, NULL, &r1);
	printf("\n    -100 ppm, BOOTTIME slewed +10 ppm at 3 min: two stages %.0f ns streaming / %.0f ns "
	       "after, bound %.0f ns (error/bound %.2f); BOOTTIME fitted directly %.0f / %.0f ns, bound "
	       "%.0f ns (error/bound %.2f)\n", r.stream_ns, r.post_ns, r.bound_ns, r.ratio, r1.stream_ns,
	       r1.post_ns, r1.bound_ns, r1.ratio);
	CU_ASSERT(r.post_ns < 1000.0);
	CU_ASSERT(r.stream_ns < 1000.0 + 300.0);
	CU_ASSERT(r.ratio <= 1.0);
	CU_ASSERT(r1.ratio <= 1.0);
	CU_ASSERT(fabs(r.ppm + 100.0) < 1.0);
	CU_ASSERT(r1.post_ns > r.post_ns);
	CU_ASSERT_EQUAL(r.rejected, 0);
}

/*
 * Issue 14 item 11: a pair disturbed between its reads (the reading thread
 * preempted after RAW, before BOOTTIME) says BOOTTIME - RAW is DELAY ns
 * larger than it is; taken at face value and extrapolated it put samples
 * 30 us off while the fit's residual said 69 ns.  Every Nth pair here, GPU
 * +100 ppm from 2^50 ticks, 10 minutes: with the read window measured (the
 * gate rejects it), without (BOOTTIME - RAW leaves the slew's line), and
 * the delay between the GPU latch and RAW instead (stage 1).
 */
static void test_disturbed_pairs(void)
{
	struct clockmodel m = { .offset_ticks = 1125899906842624.0, .ppm = 100.0, .slew_at_s = 1e9,
				.boot0 = 123456789000 };
	static const struct {
		const char *what;
		struct pairgen pg;
	} cases[] = {
		{ "15 us RAW->BOOTTIME every 50th, window measured", { 50, 15000.0, false, true } },
		{ "15 us RAW->BOOTTIME every 50th, no window", { 50, 15000.0, false, false } },
		{ "15 us GPU->RAW every 50th, window measured", { 50, 15000.0, true, true } },
		{ "3 us RAW->BOOTTIME every 7th, window measured", { 7, 3000.0, false, true } },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct result r;
		run_model(&m, 10.0, 200.0, true, &cases[i].pg, &r);
		char ratio[32] = "not a bound: no window";
		if (cases[i].pg.window)
			snprintf(ratio, sizeof(ratio), "error/bound %.2f", r.ratio);
		printf("\n    %s: worst error %.0f ns streaming, %.0f ns after, %zu samples over 1 us; bound "
		       "%.0f ns (%s); %zu of %d pairs rejected", cases[i].what, r.stream_ns, r.post_ns,
		       r.over_1us, r.bound_ns, ratio, r.rejected, 6000 / cases[i].pg.every);
		CU_ASSERT(r.stream_ns < 1000.0);
		CU_ASSERT(r.post_ns < 1000.0);
		/* without a measured window the bound knows nothing of the read latency: not checked */
		if (cases[i].pg.window)
			CU_ASSERT(r.ratio <= 1.0);
		CU_ASSERT(r.rejected >= (size_t)(6000 / cases[i].pg.every) - 1);
	}
	printf("\n");
}

/*
 * BOOTTIME steps by 1 s (a suspend, settimeofday): the first pairs after the
 * step are refused as impossible slews, then the timebase re-anchors; the
 * segment spanning the step states a bound of about the step, and ticks
 * after it map exactly again.  A slower machine (every window 5 us from
 * pair 100 on) is refused only until the median of the windows catches up.
 */
static void test_step_and_slower_machine(void)
{
	struct timebase *tb;
	CU_ASSERT_FATAL(tb_create(&tb, NULL) == 0);
	const int64_t g0 = 1000000000, r0 = 5000000000000, b0 = 7000000000000;
	int accepted_wide = 0, rejected_step = 0;
	for (int k = 0; k < 200; k++) {
		int64_t t = (int64_t)k * 100000000; /* ns */
		int64_t step = k >= 50 ? 1000000000 : 0, w = k >= 100 ? 5000 : 200;
		int rc = tb_add_pair_w(tb, (spmtap_gpu_ticks)(g0 + t / 10), r0 + t, b0 + t + step, w);
		CU_ASSERT(rc == 0 || rc == 1);
		if (k >= 50 && k < 50 + (int)TB_MAX_CONSEC_REJECT)
			CU_ASSERT_EQUAL(rc, 1);
		if (k == 50 + (int)TB_MAX_CONSEC_REJECT)
			CU_ASSERT_EQUAL(rc, 0);
		accepted_wide += k >= 100 && rc == 0;
		rejected_step += k >= 50 && k < 100 && rc == 1;
		if (k == 50 + (int)TB_MAX_CONSEC_REJECT) {
			/* streaming, just after the re-anchor: no slew drawn across the step */
			spmtap_host_ns h;
			int64_t tt = t + 50000000;
			CU_ASSERT_EQUAL(tb_map_gpu(tb, (spmtap_gpu_ticks)(g0 + tt / 10), &h), 0);
			CU_ASSERT(llabs(h - (b0 + tt + 1000000000)) < 1000);
		}
	}
	/* the step: refused 3 times, then taken; the slower windows: refused until the median moves */
	size_t rej = tb_nrejected(tb);
	printf("\n    1 s step at pair 50, 5 us windows from pair 100: %zu pairs rejected, %d of the 100 "
	       "wide ones used, worst bound %.0f ns\n", rej, accepted_wide, tb_bound(tb));
	CU_ASSERT_EQUAL(rejected_step, (int)TB_MAX_CONSEC_REJECT);
	CU_ASSERT(rej <= TB_MAX_CONSEC_REJECT + 16);
	CU_ASSERT(accepted_wide >= 90);
	CU_ASSERT(tb_bound(tb) >= 1e9 * 0.9);
	spmtap_host_ns h;
	int64_t t = 150 * 100000000LL + 50000000;
	CU_ASSERT_EQUAL(tb_map_gpu(tb, (spmtap_gpu_ticks)(g0 + t / 10), &h), 0);
	CU_ASSERT(llabs(h - (b0 + t + 1000000000)) < 1000);
	tb_free(tb);
}

static void test_pairs_order_and_empty(void)
{
	struct timebase *tb;
	spmtap_host_ns h;
	CU_ASSERT_FATAL(tb_create(&tb, NULL) == 0);
	CU_ASSERT_EQUAL(tb_map_gpu(tb, 5, &h), -ENODATA);
	CU_ASSERT_EQUAL(tb_add_pair(tb, 1000, 0, 10000), 0);
	CU_ASSERT_EQUAL(tb_map_gpu(tb, 5, &h), -ENODATA);
	CU_ASSERT_EQUAL(tb_add_pair(tb, 1000, 0, 20000), -EINVAL);
	CU_ASSERT_EQUAL(tb_add_pair(tb, 2000, 0, 9000), -EINVAL);
	CU_ASSERT_EQUAL(tb_add_pair(tb, 2000, 0, 20000), 0);
	CU_ASSERT_EQUAL(tb_map_gpu(tb, 1500, &h), 0);
	CU_ASSERT_EQUAL(h, 15000);
	CU_ASSERT_EQUAL(tb_map_gpu(tb, 3000, &h), 0); /* extrapolated */
	CU_ASSERT_EQUAL(h, 30000);
	CU_ASSERT_DOUBLE_EQUAL(tb_residual(tb, 0), 0.0, 1e-6);
	tb_free(tb);
}

/* The SPM clock assumption is applied, not ignored. */
/*
 * The batched mapper the session uses (tb_map_spm_n) must give every sample
 * the very time tb_map_spm gives it: over a slewing, stepping host with and
 * without RAW, an SPM clock other than the GPU clock, and samples before the
 * first pair, on pairs, between them and past the newest (extrapolated), in
 * stream order with repeats.
 */
static void test_map_batch_bitexact(void)
{
	for (int variant = 0; variant < 4; variant++) {
		bool raw = variant & 1, scaled = variant & 2;
		struct timebase *tb;
		CU_ASSERT_EQUAL_FATAL(tb_create(&tb, &(struct tb_opts){ .window = 8,
			.spm_clock_hz = scaled ? 98.5e6 : 0 }), 0);
		uint64_t seed = 0x9e3779b97f4a7c15ull + (uint64_t)variant;
		int64_t g = 1000000, r = 5000000000, b = 7000000000;
		for (int i = 0; i < 60; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			int64_t dt = 100000000 + (int64_t)(seed >> 40) % 3000000;  /* ~100 ms apart */
			g += dt / 10 + (int64_t)((seed >> 20) & 7);                 /* 100 MHz, jitter */
			r += dt;
			b += dt + (i == 30 ? 2000000 : (int64_t)((seed >> 33) % 20)); /* a step, slew */
			(void)tb_add_pair(tb, (spmtap_gpu_ticks)g, raw ? r : 0, b);
		}
		enum { N = 200000 };
		uint64_t *t = malloc(N * sizeof(*t));
		spmtap_host_ns *h = malloc(N * sizeof(*h));
		CU_ASSERT_FATAL(t && h);
		uint64_t cur = 0;
		for (size_t i = 0; i < N; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			cur += (seed >> 61) == 0 ? 0 : (seed >> 45); /* repeats, and steps up to ~0.5 ms */
			t[i] = cur;
		}
		/* past the newest pair too: the stream runs ahead of the clock thread */
		CU_ASSERT(t[N - 1] * (scaled ? 100e6 / 98.5e6 : 1.0) > (double)g);
		CU_ASSERT_EQUAL(tb_map_spm_n(tb, t, N, h), 0);
		size_t bad = 0;
		for (size_t i = 0; i < N; i++) {
			spmtap_host_ns one;
			CU_ASSERT_EQUAL_FATAL(tb_map_spm(tb, t[i], &one), 0);
			if (one != h[i] && bad++ < 3)
				fprintf(stderr, "\n    variant %d sample %zu ticks %" PRIu64 ": %" PRId64 " vs %" PRId64 " ",
					variant, i, t[i], h[i], one);
		}
		CU_ASSERT_EQUAL(bad, 0);
		/* ...and within 1 ns of the long double evaluation, which has no cells */
		size_t off = 0;
		int64_t worst = 0;
		for (size_t i = 0; i < N; i++) {
			spmtap_host_ns ref;
			CU_ASSERT_EQUAL_FATAL(tb_map_spm_ref(tb, t[i], &ref), 0);
			int64_t d = h[i] > ref ? h[i] - ref : ref - h[i];
			off += d > 1;
			worst = d > worst ? d : worst;
		}
		if (off)
			fprintf(stderr, "\n    variant %d: %zu samples more than 1 ns from the reference (worst %" PRId64 ") ",
				variant, off, worst);
		CU_ASSERT_EQUAL(off, 0);
		free(t);
		free(h);
		tb_free(tb);
	}
	struct timebase *tb;
	CU_ASSERT_EQUAL_FATAL(tb_create(&tb, NULL), 0);
	uint64_t one = 5;
	spmtap_host_ns h;
	CU_ASSERT_EQUAL(tb_map_spm_n(tb, &one, 1, &h), -ENODATA);
	tb_free(tb);
}

static void test_spm_clock_scaling(void)
{
	struct timebase *tb;
	spmtap_host_ns a, b;
	CU_ASSERT_FATAL(tb_create(&tb, &(struct tb_opts){ .spm_clock_hz = 25e6 }) == 0);
	CU_ASSERT_EQUAL(tb_add_pair(tb, 0 + 1, 5, 10), 0);
	CU_ASSERT_EQUAL(tb_add_pair(tb, 100000001, 1000000005, 1000000010), 0);
	CU_ASSERT_EQUAL(tb_map_spm(tb, 25000000, &a), 0); /* 1 s of a 25 MHz clock */
	CU_ASSERT_EQUAL(tb_map_gpu(tb, 100000000, &b), 0);
	CU_ASSERT_EQUAL(a, b);
	CU_ASSERT_DOUBLE_EQUAL(tb_spm_clock_hz(tb), 25e6, 1e-3);
	tb_free(tb);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "timebase/drift_offset_10min", test_drift_offset_10min, NULL },
		{ "timebase/host_slew", test_host_slew, NULL },
		{ "timebase/disturbed_pairs", test_disturbed_pairs, NULL },
		{ "timebase/step_and_slower_machine", test_step_and_slower_machine, NULL },
		{ "timebase/pairs_order_and_empty", test_pairs_order_and_empty, NULL },
		{ "timebase/spm_clock_scaling", test_spm_clock_scaling, NULL },
		{ "timebase/map_batch_bitexact", test_map_batch_bitexact, NULL },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("timebase", cases, argc, argv);
}
