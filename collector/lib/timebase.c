/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collector/lib/timebase.h"

struct timebase {
	struct tb_opts o;
	bool have_raw;  /* every pair so far carried MONOTONIC_RAW */
	struct tb_pair *pairs;
	size_t npairs, cap_pairs;
	/* seg[k] is the fit of the window ending at pair k+1; it maps ticks in
	 * [pairs[k].gpu, pairs[k+1].gpu]. */
	struct tb_segment *seg;
	size_t nseg, cap_seg;
};

int tb_create(struct timebase **out, const struct tb_opts *opts)
{
	struct timebase *tb = calloc(1, sizeof(*tb));
	if (!tb)
		return -ENOMEM;
	if (opts)
		tb->o = *opts;
	if (tb->o.window < 2)
		tb->o.window = TB_DEFAULT_WINDOW;
	if (!(tb->o.gpu_clock_hz > 0))
		tb->o.gpu_clock_hz = TB_DEFAULT_GPU_HZ;
	if (!(tb->o.spm_clock_hz > 0))
		tb->o.spm_clock_hz = tb->o.gpu_clock_hz;
	*out = tb;
	return 0;
}

void tb_free(struct timebase *tb)
{
	if (!tb)
		return;
	free(tb->pairs);
	free(tb->seg);
	free(tb);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

/*
 * Least squares over pairs [a, b].  Coordinates are taken relative to the
 * window's first pair so that 1e11-tick counters keep their precision; sums
 * in long double because x*x reaches 1e20 over long windows.
 */
/* The clock stage 1 fits: RAW when every pair has it, else BOOTTIME. */
static int64_t yval(const struct timebase *tb, const struct tb_pair *p)
{
	return tb->have_raw ? p->raw : p->host;
}

static void fit(const struct timebase *tb, size_t a, size_t b, struct tb_segment *s)
{
	const struct tb_pair *p = tb->pairs;
	size_t n = b - a + 1;
	spmtap_gpu_ticks g0 = p[a].gpu;
	int64_t h0 = yval(tb, &p[a]);
	long double sx = 0, sy = 0, sxx = 0, sxy = 0;
	for (size_t i = a; i <= b; i++) {
		long double x = (long double)(p[i].gpu - g0), y = (long double)(yval(tb, &p[i]) - h0);
		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
	}
	long double den = (long double)n * sxx - sx * sx;
	long double slope = den != 0 ? ((long double)n * sxy - sx * sy) / den : 0;
	long double icpt = (sy - slope * sx) / (long double)n;
	s->g0 = g0;
	s->h0 = (double)((long double)h0 + icpt);
	s->slope = (double)slope;
	s->g_first = p[a].gpu;
	s->g_last = p[b].gpu;
	s->npairs = (uint32_t)n;
	double ss = 0, mx = 0;
	for (size_t i = a; i <= b; i++) {
		long double x = (long double)(p[i].gpu - g0);
		double r = (double)((long double)(yval(tb, &p[i]) - h0) - (icpt + slope * x));
		ss += r * r;
		if (fabs(r) > mx)
			mx = fabs(r);
	}
	s->rms_ns = sqrt(ss / (double)n);
	s->max_abs_ns = mx;
}

int tb_add_pair(struct timebase *tb, spmtap_gpu_ticks gpu, int64_t raw_ns, spmtap_host_ns boot_ns)
{
	if (tb->npairs) {
		const struct tb_pair *last = &tb->pairs[tb->npairs - 1];
		if (gpu <= last->gpu || boot_ns <= last->host || (raw_ns && raw_ns <= last->raw))
			return -EINVAL;
	} else {
		tb->have_raw = raw_ns != 0;
	}
	if (grow((void **)&tb->pairs, &tb->cap_pairs, tb->npairs + 1, sizeof(*tb->pairs)))
		return -ENOMEM;
	if (!raw_ns && tb->have_raw) {
		/* a source without RAW joined late: refit everything on BOOTTIME */
		tb->have_raw = false;
		tb->nseg = 0;
		for (size_t k = 1; k < tb->npairs; k++) {
			size_t a = k + 1 > tb->o.window ? k + 1 - tb->o.window : 0;
			fit(tb, a, k, &tb->seg[tb->nseg++]);
		}
	}
	tb->pairs[tb->npairs++] = (struct tb_pair){ gpu, raw_ns, boot_ns };
	if (tb->npairs < 2)
		return 0;
	if (grow((void **)&tb->seg, &tb->cap_seg, tb->nseg + 1, sizeof(*tb->seg)))
		return -ENOMEM;
	size_t b = tb->npairs - 1;
	size_t a = b + 1 > tb->o.window ? b + 1 - tb->o.window : 0;
	fit(tb, a, b, &tb->seg[tb->nseg++]);
	return 0;
}

static const struct tb_segment *segment_for(const struct timebase *tb, spmtap_gpu_ticks g)
{
	/* seg[k] serves [pairs[k].gpu, pairs[k+1].gpu]: binary search on pairs. */
	size_t lo = 0, hi = tb->nseg - 1;
	if (g <= tb->pairs[1].gpu)
		return &tb->seg[0];
	if (g >= tb->pairs[tb->nseg].gpu)
		return &tb->seg[tb->nseg - 1];
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (tb->pairs[mid + 1].gpu < g)
			lo = mid + 1;
		else
			hi = mid;
	}
	return &tb->seg[lo];
}

/* Stage 2: BOOTTIME - RAW at a RAW time, linear between the pairs around it. */
static long double boot_minus_raw(const struct timebase *tb, long double r)
{
	const struct tb_pair *p = tb->pairs;
	size_t n = tb->npairs, k;
	if (r <= (long double)p[0].raw)
		k = 0;
	else if (r >= (long double)p[n - 1].raw)
		k = n - 2;
	else {
		size_t lo = 0, hi = n - 2;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if ((long double)p[mid + 1].raw < r)
				lo = mid + 1;
			else
				hi = mid;
		}
		k = lo;
	}
	long double d0 = (long double)(p[k].host - p[k].raw);
	long double d1 = (long double)(p[k + 1].host - p[k + 1].raw);
	long double span = (long double)(p[k + 1].raw - p[k].raw);
	/*
	 * Beyond the ends the slew rate of the nearest interval continues: NTP
	 * changes its frequency correction rarely, so the last rate is the best
	 * guess for the ~100 ms until the next pair.
	 */
	return d0 + (d1 - d0) * (r - (long double)p[k].raw) / span;
}

static spmtap_host_ns apply(const struct timebase *tb, const struct tb_segment *s, long double g)
{
	long double y = (long double)s->h0 + (long double)s->slope * (g - (long double)s->g0);
	if (tb->have_raw)
		y += boot_minus_raw(tb, y);
	return (spmtap_host_ns)llroundl(y);
}

int tb_map_gpu(const struct timebase *tb, spmtap_gpu_ticks gpu, spmtap_host_ns *host)
{
	if (!tb->nseg)
		return -ENODATA;
	*host = apply(tb, segment_for(tb, gpu), (long double)gpu);
	return 0;
}

int tb_map_spm(const struct timebase *tb, uint64_t spm_ticks, spmtap_host_ns *host)
{
	if (!tb->nseg)
		return -ENODATA;
	long double g = (long double)spm_ticks;
	if (tb->o.spm_clock_hz != tb->o.gpu_clock_hz)
		g = g * (long double)tb->o.gpu_clock_hz / (long double)tb->o.spm_clock_hz;
	spmtap_gpu_ticks gi = g < 0 ? 0 : (spmtap_gpu_ticks)g;
	*host = apply(tb, segment_for(tb, gi), g);
	return 0;
}

size_t tb_npairs(const struct timebase *tb) { return tb->npairs; }
const struct tb_pair *tb_pairs(const struct timebase *tb) { return tb->pairs; }
size_t tb_nsegments(const struct timebase *tb) { return tb->nseg; }
const struct tb_segment *tb_segments(const struct timebase *tb) { return tb->seg; }
double tb_spm_clock_hz(const struct timebase *tb) { return tb->o.spm_clock_hz; }

double tb_residual(const struct timebase *tb, size_t i)
{
	spmtap_host_ns h;
	if (i >= tb->npairs || tb_map_gpu(tb, tb->pairs[i].gpu, &h))
		return NAN;
	return (double)(tb->pairs[i].host - h);
}

int tb_rate(const struct timebase *tb, double *hz, double *ppm)
{
	if (!tb->nseg)
		return -ENODATA;
	const struct tb_segment *s = &tb->seg[tb->nseg - 1];
	/* GPU rate against the fitted clock (RAW when known: the oscillator's own error) */
	double f = s->slope > 0 ? 1e9 / s->slope : 0;
	if (hz)
		*hz = f;
	if (ppm)
		*ppm = (f / tb->o.gpu_clock_hz - 1.0) * 1e6;
	return 0;
}
