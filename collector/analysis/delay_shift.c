// SPDX-License-Identifier: MIT
/* Delay-aware attribution: equivalent-step delay of an edge, energy at a shifted boundary (delay_shift.h). */
#include <errno.h>
#include <math.h>

#include "collector/analysis/delay_shift.h"

/* A signal's points: the kept readings of a J signal, the readings of a W one. */
static size_t npoints(const struct sa_signal *s)
{
	return s->unit == SA_UNIT_J ? s->nkept : s->n;
}

static int64_t point(const struct sa_signal *s, size_t i)
{
	return s->unit == SA_UNIT_J ? s->kept_t[i] : s->r[i].t_ns;
}

/* Index of the first point with t >= t_ns (npoints when none). */
static size_t lower_bound(const struct sa_signal *s, double t_ns)
{
	size_t lo = 0, hi = npoints(s);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if ((double)point(s, mid) < t_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The signal's integral from point i to point j >= i, in J. */
static double integral(const struct sa_signal *s, size_t i, size_t j)
{
	if (s->unit == SA_UNIT_J)
		return s->ec_j[j] - s->ec_j[i];
	double acc = 0;
	for (size_t k = i; k < j; k++)
		acc += s->r[k].v * (double)(s->r[k + 1].t_ns - s->r[k].t_ns) * 1e-9;
	return acc;
}

/* Mean power (W) from point i to point j > i. */
static double level(const struct sa_signal *s, size_t i, size_t j)
{
	return integral(s, i, j) / ((double)(point(s, j) - point(s, i)) * 1e-9);
}

int sa_edge_time(const struct sa_signal *s, int64_t pre_lo, int64_t edge, int64_t post_lo, int64_t post_hi,
		 double min_jump_w, double *c_ns)
{
	size_t n = npoints(s);
	size_t i0 = lower_bound(s, (double)pre_lo), i1 = lower_bound(s, (double)edge + 1);
	size_t j0 = lower_bound(s, (double)post_lo), j1 = lower_bound(s, (double)post_hi + 1);
	if (!i1 || !j1)
		return -ENODATA;
	i1--; /* the last point <= edge */
	j1--; /* the last point <= post_hi */
	if (i0 >= i1 || j0 >= j1 || i1 >= j0 || j1 >= n)
		return -ENODATA;
	double p0 = level(s, i0, i1), p1 = level(s, j0, j1);
	if (!(fabs(p1 - p0) >= min_jump_w) || !isfinite(p0) || !isfinite(p1))
		return -ENODATA;
	/* integral over [a, b] = p0 (c - a) + p1 (b - c), all in W x ns */
	double a = (double)point(s, i1), b = (double)point(s, j0), e = integral(s, i1, j0) * 1e9;
	double c = (p1 * b - p0 * a - e) / (p1 - p0);
	if (!(c >= a - (b - a) && c <= b + (b - a)))
		return -ERANGE;
	*c_ns = c;
	return 0;
}

/* Mean power (W) of kept interval i, (kept_t[i - 1], kept_t[i]]; NAN when there is none. */
static double interval_w(const struct sa_signal *s, size_t i)
{
	if (i < 1 || i >= s->nkept)
		return NAN;
	return (s->ec_j[i] - s->ec_j[i - 1]) / ((double)(s->kept_t[i] - s->kept_t[i - 1]) * 1e-9);
}

/* Whether a boundary other than t's own (more than 1 ms from it) lies in (lo, hi). */
static bool other_boundary(const double *bnd, size_t nbnd, double t, double lo, double hi)
{
	size_t a = 0, z = nbnd;
	while (a < z) {
		size_t mid = a + (z - a) / 2;
		if (bnd[mid] <= lo)
			a = mid + 1;
		else
			z = mid;
	}
	for (; a < nbnd && bnd[a] < hi; a++)
		if (fabs(bnd[a] - t) > 1e6)
			return true;
	return false;
}

int sa_energy_at(const struct sa_signal *s, double t_ns, const double *bnd, size_t nbnd, double *ec_j,
		 struct sa_boundary *b)
{
	if (s->unit != SA_UNIT_J)
		return -EINVAL;
	if (!s->nkept || !(t_ns >= (double)s->kept_t[0] && t_ns <= (double)s->kept_t[s->nkept - 1]))
		return -ERANGE;
	size_t k = lower_bound(s, t_ns); /* kept_t[k] >= t, k < nkept */
	*b = (struct sa_boundary){ .jump_w = NAN, .flat_j = NAN };
	if ((double)s->kept_t[k] == t_ns) {
		b->jump_w = fabs(interval_w(s, k + 1) - interval_w(s, k));
		*ec_j = s->ec_j[k];
		return 0;
	}
	/* g0 = kept_t[k - 1] < t < g1 = kept_t[k] */
	double g0 = (double)s->kept_t[k - 1], g1 = (double)s->kept_t[k];
	double de = s->ec_j[k] - s->ec_j[k - 1];
	double pl = interval_w(s, k - 1), pr = interval_w(s, k + 1);
	double wl = pl * (t_ns - g0), wr = pr * (g1 - t_ns);
	b->jump_w = fabs(pr - pl);
	b->interval_j = fabs(de);
	b->width_ns = g1 - g0;
	if (wl > 0 && wr > 0 && isfinite(wl + wr)) {
		b->split = true;
		*ec_j = s->ec_j[k - 1] + de * wl / (wl + wr);
		b->flat_j = (fabs(pl - interval_w(s, k - 2)) * (t_ns - g0) + fabs(pr - interval_w(s, k + 2)) * (g1 - t_ns)) *
			    1e-9;
		b->mismatch_j = fabs(de - (wl + wr) * 1e-9);
	} else {
		b->linear = true;
		*ec_j = s->ec_j[k - 1] + de * (t_ns - g0) / (g1 - g0);
	}
	/* the span the split leans on: the interval and its neighbours */
	double lo = (double)s->kept_t[k >= 2 ? k - 2 : k - 1], hi = (double)s->kept_t[k + 1 < s->nkept ? k + 1 : k];
	b->gap = other_boundary(bnd, nbnd, t_ns, lo, hi);
	b->hard_j = fmax(*ec_j - s->ec_j[k - 1], s->ec_j[k] - *ec_j);
	return 0;
}

double sa_boundary_error_j(const struct sa_boundary *b, double sigma_ns)
{
	double e = 0;
	if (isfinite(b->jump_w))
		e += b->jump_w * sigma_ns * 1e-9;
	if (b->gap)
		e += b->hard_j;
	else if (b->split && isfinite(b->flat_j))
		e += b->flat_j + b->mismatch_j;
	else if (b->split)
		e += b->mismatch_j + (isfinite(b->jump_w) ? b->jump_w * b->width_ns * 1e-9 / 4 : b->interval_j / 2);
	else if (b->linear)
		e += isfinite(b->jump_w) ? b->jump_w * b->width_ns * 1e-9 / 4 : b->interval_j / 2;
	return e;
}
