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
	/* the read windows of the latest candidates (used or not): the gate's "usual" */
	int64_t win[16];
	size_t nwin;
	size_t nrejected, consec_rejected;
	/* the latest pair taken by re-anchoring: no slew is drawn across it */
	size_t anchor;
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

static long double map_with(const struct timebase *tb, const struct tb_segment *s, long double g);

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* Median of the recent read windows, or -1 while there are too few to judge. */
static int64_t window_median(const struct timebase *tb)
{
	size_t n = tb->nwin < 16 ? tb->nwin : 16;
	if (n < 4)
		return -1;
	int64_t w[16];
	memcpy(w, tb->win, n * sizeof(w[0]));
	qsort(w, n, sizeof(w[0]), cmp_i64);
	return w[n / 2];
}

/*
 * Is the candidate disturbed?  A read window far wider than usual says the
 * call was interrupted; without windows, BOOTTIME - RAW says it when it
 * moves faster than NTP slews or leaves the line of the recent slew.
 * Tolerances add the windows, which bound how far an honest pair's
 * difference can be off.
 */
enum { TB_OK, TB_WIDE, TB_SLEW };

static int disturbed(const struct timebase *tb, int64_t raw, int64_t boot, int64_t w)
{
	int64_t med = window_median(tb);
	if (med < 0) /* the first few: against the narrowest so far */
		for (size_t k = 0; k < tb->nwin; k++)
			if (med < 0 || tb->win[k] < med)
				med = tb->win[k];
	if (w > 0 && med >= 0 && w > 2 * med + TB_WINDOW_SLACK_NS)
		return TB_WIDE;
	size_t n = tb->npairs;
	if (!tb->have_raw || !raw || !n)
		return TB_OK;
	const struct tb_pair *a = &tb->pairs[n - 1];
	long double dr = (long double)(raw - a->raw);
	long double d = (long double)(boot - raw), da = (long double)(a->host - a->raw);
	if (fabsl(d - da) > TB_MAX_SLEW_PPM * 1e-6L * dr + (long double)(w + a->window_ns))
		return TB_SLEW;
	if (n < 2 || n - 1 <= tb->anchor)
		return TB_OK;
	size_t kb = n - 2; /* the slew's baseline, as boot_minus_raw extrapolates it */
	while (kb > tb->anchor && a->raw - tb->pairs[kb].raw < TB_SLEW_BASE_NS)
		kb--;
	const struct tb_pair *b = &tb->pairs[kb];
	long double span = (long double)(a->raw - b->raw);
	long double db = (long double)(b->host - b->raw);
	long double f = dr / span; /* how much the older pair's error is magnified */
	long double pred = da + (da - db) * f;
	long double tol = TB_SLEW_CHANGE_PPM * 1e-6L * dr + (long double)w +
			  (long double)a->window_ns * (1 + f) + (long double)b->window_ns * f + 100;
	return fabsl(d - pred) > tol ? TB_SLEW : TB_OK;
}

/* |mapping - pair| + the pair's window: how far the mapping can be from the truth at that pair. */
static double end_error(const struct timebase *tb, const struct tb_segment *s, const struct tb_pair *p)
{
	return (double)fabsl(map_with(tb, s, (long double)p->gpu) - (long double)p->host) +
	       (double)p->window_ns;
}

int tb_add_pair(struct timebase *tb, spmtap_gpu_ticks gpu, int64_t raw_ns, spmtap_host_ns boot_ns)
{
	return tb_add_pair_w(tb, gpu, raw_ns, boot_ns, 0);
}

int tb_add_pair_w(struct timebase *tb, spmtap_gpu_ticks gpu, int64_t raw_ns, spmtap_host_ns boot_ns,
		  int64_t window_ns)
{
	if (window_ns < 0)
		return -EINVAL;
	if (tb->npairs) {
		const struct tb_pair *last = &tb->pairs[tb->npairs - 1];
		if (gpu <= last->gpu || boot_ns <= last->host || (raw_ns && raw_ns <= last->raw))
			return -EINVAL;
	} else {
		tb->have_raw = raw_ns != 0;
	}
	if (grow((void **)&tb->pairs, &tb->cap_pairs, tb->npairs + 1, sizeof(*tb->pairs)) ||
	    grow((void **)&tb->seg, &tb->cap_seg, tb->nseg + 1, sizeof(*tb->seg)))
		return -ENOMEM;
	int bad = disturbed(tb, raw_ns, boot_ns, window_ns);
	if (window_ns > 0)
		tb->win[tb->nwin++ % 16] = window_ns;
	/*
	 * A wide window is always refused: the recent windows include the
	 * refused ones, so a machine grown slower raises the median and its
	 * pairs pass again.  A slew refusal is re-anchored after a few in a
	 * row: BOOTTIME stepped (a suspend, settimeofday), and staying on the
	 * old line would be wrong for ever.
	 */
	if (bad == TB_WIDE || (bad == TB_SLEW && tb->consec_rejected < TB_MAX_CONSEC_REJECT)) {
		tb->nrejected++;
		tb->consec_rejected += bad == TB_SLEW;
		return 1;
	}
	if (bad == TB_SLEW)
		tb->anchor = tb->npairs;
	tb->consec_rejected = 0;
	/* What a streaming writer mapped the ticks after the last pair with: extrapolated. */
	double stream_err = 0;
	bool streamed = tb->nseg && (raw_ns != 0) == tb->have_raw;
	struct tb_pair cand = { gpu, raw_ns, boot_ns, window_ns };
	if (streamed) {
		const struct tb_segment *s = &tb->seg[tb->nseg - 1];
		double e0 = end_error(tb, s, &tb->pairs[tb->npairs - 1]), e1 = end_error(tb, s, &cand);
		stream_err = e0 > e1 ? e0 : e1;
	}
	if (!raw_ns && tb->have_raw) {
		/* a source without RAW joined late: refit everything on BOOTTIME */
		tb->have_raw = false;
		tb->nseg = 0;
		for (size_t k = 1; k < tb->npairs; k++) {
			size_t a = k + 1 > tb->o.window ? k + 1 - tb->o.window : 0;
			fit(tb, a, k, &tb->seg[tb->nseg]);
			struct tb_segment *s = &tb->seg[tb->nseg++];
			double e0 = end_error(tb, s, &tb->pairs[k - 1]), e1 = end_error(tb, s, &tb->pairs[k]);
			s->bound_ns = e0 > e1 ? e0 : e1;
		}
	}
	tb->pairs[tb->npairs++] = cand;
	if (tb->npairs < 2)
		return 0;
	size_t b = tb->npairs - 1;
	size_t a = b + 1 > tb->o.window ? b + 1 - tb->o.window : 0;
	struct tb_segment *s = &tb->seg[tb->nseg++];
	fit(tb, a, b, s);
	/* ...and what it maps them with now: interpolated between the two pairs. */
	double e0 = end_error(tb, s, &tb->pairs[b - 1]), e1 = end_error(tb, s, &tb->pairs[b]);
	double e = e0 > e1 ? e0 : e1;
	s->bound_ns = e > stream_err ? e : stream_err;
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

/*
 * The pair interval BOOTTIME - RAW is interpolated over for a RAW time r
 * (pairs[k], pairs[k + 1]): the first k whose upper pair is not before r,
 * clamped to the ends.
 */
static size_t raw_interval(const struct tb_pair *p, size_t n, long double r)
{
	if (r <= (long double)p[0].raw)
		return 0;
	if (r >= (long double)p[n - 1].raw)
		return n - 2;
	size_t lo = 0, hi = n - 2;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if ((long double)p[mid + 1].raw < r)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Stage 2: BOOTTIME - RAW at a RAW time, linear between the pairs around it. */
static long double boot_minus_raw_at(const struct timebase *tb, long double r, size_t k)
{
	const struct tb_pair *p = tb->pairs;
	size_t n = tb->npairs;
	size_t k0 = k;
	if (r > (long double)p[n - 1].raw) {
		/*
		 * Past the newest pair the slew is extrapolated: over a baseline of
		 * at least TB_SLEW_BASE_NS where there is one, since the pairs taken
		 * milliseconds apart before a run would turn their read noise into
		 * a slope error of tens of ppm.
		 */
		while (k0 > tb->anchor && p[k + 1].raw - p[k0].raw < TB_SLEW_BASE_NS)
			k0--;
		/* just re-anchored after a step: no slew known on this side of it yet */
		if (k + 1 <= tb->anchor)
			return (long double)(p[n - 1].host - p[n - 1].raw);
	}
	long double d0 = (long double)(p[k0].host - p[k0].raw);
	long double d1 = (long double)(p[k + 1].host - p[k + 1].raw);
	long double span = (long double)(p[k + 1].raw - p[k0].raw);
	k = k0;
	/*
	 * Beyond the ends the slew rate of the nearest interval continues: NTP
	 * changes its frequency correction rarely, so the last rate is the best
	 * guess for the ~100 ms until the next pair.
	 */
	return d0 + (d1 - d0) * (r - (long double)p[k].raw) / span;
}

static long double boot_minus_raw(const struct timebase *tb, long double r)
{
	return boot_minus_raw_at(tb, r, raw_interval(tb->pairs, tb->npairs, r));
}

static long double map_with(const struct timebase *tb, const struct tb_segment *s, long double g)
{
	long double y = (long double)s->h0 + (long double)s->slope * (g - (long double)s->g0);
	if (tb->have_raw)
		y += boot_minus_raw(tb, y);
	return y;
}

/*
 * The public mappers.  Inside one segment and one pair interval of stage 2
 * (a "cell") the mapping is affine in the tick:
 *
 *     y(g)    = h0 + slope (g - g0)                      stage 1 (RAW)
 *     host(g) = y + d0 + c (y - rref)                    stage 2, c = slew
 *             = [h0 + d0 + c (h0 - rref)] + slope (1 + c) (g - g0)
 *
 * so a cell is computed once in long double (its value at g0, split into an
 * integer and a fraction, and its rate) and every tick in it costs one
 * multiply-add in double on the tick's distance from g0 (exact below 2^53
 * ticks; the product's rounding is below 1e-6 ns).  map_with above keeps the
 * long double evaluation for the fit's own error bounds; the two agree within
 * 1 ns.  The cell is a function of the tick alone (which segment, which pair
 * interval its RAW time falls in), so every mapper, one tick or a batch in any
 * chunking, gives every tick the same time bit for bit.
 */
struct tb_cell {
	size_t sk, rk;      /* segment; pair interval (SIZE_MAX: not chosen yet) */
	bool past;          /* RAW beyond the newest pair: the slew is extrapolated */
	double glo, ghi;    /* the segment serves ticks in (glo, ghi] */
	double ylo, yhi;    /* the pair interval serves RAW times in (ylo, yhi] */
	spmtap_gpu_ticks g0;
	double h0, slope;   /* stage 1 of the segment */
	int64_t hi;         /* host at g0: integer part... */
	double hf, rate;    /* ...fraction, and ns per tick */
};

static void cell_segment(const struct timebase *tb, struct tb_cell *c, size_t sk)
{
	const struct tb_pair *p = tb->pairs;
	const struct tb_segment *s = &tb->seg[sk];
	c->sk = sk;
	c->glo = sk == 0 ? -INFINITY : (double)p[sk].gpu;
	c->ghi = sk + 1 == tb->nseg ? INFINITY : (double)p[sk + 1].gpu;
	c->g0 = s->g0;
	c->h0 = s->h0;
	c->slope = s->slope;
	c->rk = SIZE_MAX;
}

/* Stage 2's line over (pairs[k], pairs[k + 1]) as d0 + c (r - rref); what boot_minus_raw_at evaluates. */
static void slew_line(const struct timebase *tb, size_t k, bool past, long double *d0, long double *c,
		      long double *rref)
{
	const struct tb_pair *p = tb->pairs;
	size_t n = tb->npairs, k0 = k;
	*c = 0;
	*rref = 0;
	if (past) {
		while (k0 > tb->anchor && p[k + 1].raw - p[k0].raw < TB_SLEW_BASE_NS)
			k0--;
		if (k + 1 <= tb->anchor) {
			*d0 = (long double)(p[n - 1].host - p[n - 1].raw);
			return;
		}
	}
	*d0 = (long double)(p[k0].host - p[k0].raw);
	long double d1 = (long double)(p[k + 1].host - p[k + 1].raw);
	*c = (d1 - *d0) / (long double)(p[k + 1].raw - p[k0].raw);
	*rref = (long double)p[k0].raw;
}

static void cell_interval(const struct timebase *tb, struct tb_cell *c, double y)
{
	const struct tb_pair *p = tb->pairs;
	size_t n = tb->npairs;
	long double h = (long double)c->h0, rate = (long double)c->slope;
	if (tb->have_raw) {
		size_t k = raw_interval(p, n, (long double)y);
		bool past = (long double)y > (long double)p[n - 1].raw;
		long double d0, sl, rref;
		slew_line(tb, k, past, &d0, &sl, &rref);
		h += d0 + sl * (h - rref);
		rate *= 1 + sl;
		c->rk = k;
		c->past = past;
		c->ylo = past ? (double)p[n - 1].raw : k == 0 ? -INFINITY : (double)p[k].raw;
		c->yhi = past ? INFINITY : (double)p[k + 1].raw;
	} else {
		c->rk = 0;
		c->ylo = -INFINITY;
		c->yhi = INFINITY;
	}
	long double fl = floorl(h);
	c->hi = (int64_t)fl;
	c->hf = (double)(h - fl);
	c->rate = (double)rate;
}

/* Round half away from zero, as llround, without the library call. */
static inline int64_t round_ns(double v)
{
	int64_t t = (int64_t)v;
	double fr = v - (double)t;
	return t + (fr >= 0.5) - (fr <= -0.5);
}

/* One tick (gi: its integer part, for the segment; gd: the tick itself). */
static inline spmtap_host_ns map_cell(const struct timebase *tb, struct tb_cell *c,
				      spmtap_gpu_ticks gi, double gd, bool exact)
{
	double gf = (double)gi;
	if (c->rk == SIZE_MAX || !(gf > c->glo && gf <= c->ghi)) {
		cell_segment(tb, c, (size_t)(segment_for(tb, gi) - tb->seg));
		c->rk = SIZE_MAX;
	}
	/* distance from the segment's reference: exact for integer ticks */
	double dg = exact ? (double)(int64_t)(gi - c->g0) : gd - (double)c->g0;
	if (c->rk == SIZE_MAX) {
		cell_interval(tb, c, c->h0 + c->slope * dg);
	} else if (tb->have_raw) {
		double y = c->h0 + c->slope * dg;
		if (!(y > c->ylo && y <= c->yhi))
			cell_interval(tb, c, y);
	}
	return c->hi + round_ns(c->hf + c->rate * dg);
}

int tb_map_spm_ref(const struct timebase *tb, uint64_t spm_ticks, spmtap_host_ns *host)
{
	if (!tb->nseg)
		return -ENODATA;
	long double g = (long double)spm_ticks;
	if (tb->o.spm_clock_hz != tb->o.gpu_clock_hz)
		g = g * (long double)tb->o.gpu_clock_hz / (long double)tb->o.spm_clock_hz;
	spmtap_gpu_ticks gi = g < 0 ? 0 : (spmtap_gpu_ticks)g;
	*host = (spmtap_host_ns)llroundl(map_with(tb, segment_for(tb, gi), g));
	return 0;
}

int tb_map_gpu(const struct timebase *tb, spmtap_gpu_ticks gpu, spmtap_host_ns *host)
{
	if (!tb->nseg)
		return -ENODATA;
	struct tb_cell c = { .rk = SIZE_MAX };
	*host = map_cell(tb, &c, gpu, 0, true);
	return 0;
}

int tb_map_spm(const struct timebase *tb, uint64_t spm_ticks, spmtap_host_ns *host)
{
	return tb_map_spm_n(tb, &spm_ticks, 1, host);
}

/*
 * Stream order keeps neighbouring samples in one cell, so the cell is checked
 * against the previous sample's before anything is searched.
 */
int tb_map_spm_n(const struct timebase *tb, const uint64_t *spm_ticks, size_t n, spmtap_host_ns *host)
{
	if (!tb->nseg)
		return -ENODATA;
	struct tb_cell c = { .rk = SIZE_MAX };
	if (tb->o.spm_clock_hz == tb->o.gpu_clock_hz) {
		for (size_t i = 0; i < n; i++)
			host[i] = map_cell(tb, &c, spm_ticks[i], 0, true);
		return 0;
	}
	double ratio = tb->o.gpu_clock_hz / tb->o.spm_clock_hz;
	for (size_t i = 0; i < n; i++) {
		double g = (double)spm_ticks[i] * ratio;
		host[i] = map_cell(tb, &c, g < 0 ? 0 : (spmtap_gpu_ticks)g, g, false);
	}
	return 0;
}

size_t tb_npairs(const struct timebase *tb) { return tb->npairs; }
const struct tb_pair *tb_pairs(const struct timebase *tb) { return tb->pairs; }
size_t tb_nsegments(const struct timebase *tb) { return tb->nseg; }
size_t tb_nrejected(const struct timebase *tb) { return tb->nrejected; }

double tb_bound(const struct timebase *tb)
{
	double m = 0;
	for (size_t k = 0; k < tb->nseg; k++)
		if (tb->seg[k].bound_ns > m)
			m = tb->seg[k].bound_ns;
	return m;
}
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
