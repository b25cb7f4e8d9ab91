// SPDX-License-Identifier: MIT
/* The Cray PM cross-check of `spmtap report` (pm_crosscheck.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/pm_crosscheck.h"
#include "log.h"

static int find_signal(const struct sa_trace *tr, const char *name)
{
	for (size_t i = 0; i < sa_trace_nsignals(tr); i++)
		if (!strcmp(sa_trace_signal(tr, i)->name, name))
			return (int)i;
	return -1;
}

/*
 * The steady window of energy signal i over phase p (pm_crosscheck.h): from
 * its first to its last kept reading inside [start + d, end + d], d its
 * delay; the counter's difference between them over their distance is the
 * mean power of the phase's level alone.  False with fewer than two.
 */
static bool steady_mean(const struct sa_report *r, const struct sa_trace *tr, int i, const struct sa_phase *p,
			double *w, double *t0, double *t1, size_t *nread)
{
	const struct sa_signal *s = sa_trace_signal(tr, (size_t)i);
	const struct sa_sig_char *c = &r->ch->sig[i];
	/* A counter cannot run ahead of the power: a negative measured delay is the estimate's error. */
	double d = isfinite(c->step_delay_ns) && c->step_delay_ns > 0 ? c->step_delay_ns : 0;
	double guard = isfinite(c->step_delay_spread_ns) ? c->step_delay_spread_ns : 0;
	double lo = (double)p->start_ns + d + guard, hi = (double)p->end_ns + d - guard;
	size_t k0 = s->nkept, k1 = 0, n = 0;
	for (size_t k = 0; k < s->nkept; k++) {
		if ((double)s->kept_t[k] < lo || (double)s->kept_t[k] > hi)
			continue;
		if (!n++)
			k0 = k;
		k1 = k;
	}
	*nread = n;
	if (n < 2)
		return false;
	*t0 = (double)s->kept_t[k0];
	*t1 = (double)s->kept_t[k1];
	*w = (s->ec_j[k1] - s->ec_j[k0]) / ((*t1 - *t0) * 1e-9);
	return true;
}

/*
 * Least squares y = g x + o over the phases used, each weighted by its PM
 * window's length: a phase's mean is off by up to two counter steps (the
 * PM energy is in whole J) over its window, so a long phase knows its level
 * better, and weighted so a level's mean is its total energy over its total
 * time.  Then the residuals and the energy ratio (PM over on-chip).
 */
static void fit(struct pm_xc_accel *a)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0, xmin = INFINITY, xmax = -INFINITY;
	for (size_t k = 0; k < a->nph; k++) {
		double x = a->ph[k].onchip_w, y = a->ph[k].pm_w, w = (a->ph[k].pm_t1_ns - a->ph[k].pm_t0_ns) * 1e-9;
		sx += w * x, sy += w * y, sxx += w * x * x, sxy += w * x * y, n += w;
		xmin = fmin(xmin, x), xmax = fmax(xmax, x);
	}
	a->energy_ratio = sx > 0 ? sy / sx : NAN;
	/* Two phases at one level cannot tell a gain from an offset: 1 W apart at least. */
	if (a->nph < 2 || !(xmax - xmin >= 1.0)) {
		snprintf(a->reason, sizeof(a->reason),
			 "%zu steady phase(s), on-chip power %s: a gain and an offset need phases at two levels "
			 "at least",
			 a->nph, a->nph ? "at one level" : "none");
		return;
	}
	double den = n * sxx - sx * sx;
	a->gain = (n * sxy - sx * sy) / den;
	a->offset_w = (sy - a->gain * sx) / n;
	double ss = 0, mx = 0;
	for (size_t k = 0; k < a->nph; k++) {
		double res = a->ph[k].pm_w - (a->gain * a->ph[k].onchip_w + a->offset_w);
		ss += res * res;
		mx = fmax(mx, fabs(res));
	}
	a->residual_rms_w = sqrt(ss / (double)a->nph);
	a->residual_max_w = mx;
}

int pm_xc_compute(const struct sa_report *r, const struct sa_trace *tr, const int32_t *map, unsigned naccel,
		  bool multi_gpu, struct pm_xc *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (naccel > PM_XC_MAX_ACCEL)
		naccel = PM_XC_MAX_ACCEL;
	for (unsigned ai = 0; ai < naccel; ai++) {
		struct pm_xc_accel *a = &out->a[out->n++];
		a->accel = ai;
		a->gpu = map ? map[ai] : -1;
		a->gain = a->offset_w = a->residual_rms_w = a->residual_max_w = a->energy_ratio = NAN;
		snprintf(a->pm_signal, sizeof(a->pm_signal), "pm.accel%u_energy", ai);
		if (a->gpu < 0) {
			snprintf(a->reason, sizeof(a->reason),
				 "unmapped: which accelN is which GPU is not documented publicly; record with "
				 "--cray-accel-map accel%u=gpuN",
				 ai);
			continue;
		}
		if (multi_gpu)
			snprintf(a->onchip_signal, sizeof(a->onchip_signal), "gpu%d.energy", a->gpu);
		else
			snprintf(a->onchip_signal, sizeof(a->onchip_signal), "energy");
		int pi = find_signal(tr, a->pm_signal), oi = find_signal(tr, a->onchip_signal);
		if (pi < 0 || oi < 0) {
			snprintf(a->reason, sizeof(a->reason), "no %s signal in the recording",
				 pi < 0 ? a->pm_signal : a->onchip_signal);
			continue;
		}
		a->ph = calloc(r->nphases ? r->nphases : 1, sizeof(*a->ph));
		if (!a->ph) {
			pm_xc_free(out);
			return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
		}
		for (size_t k = 0; k < r->nphases; k++) {
			const struct sa_phase *p = r->ph[k].phase;
			struct pm_xc_phase *x = &a->ph[a->nph];
			double o0, o1, w_on, w_pm;
			size_t n_on;
			if (!steady_mean(r, tr, oi, p, &w_on, &o0, &o1, &n_on) ||
			    !steady_mean(r, tr, pi, p, &w_pm, &x->pm_t0_ns, &x->pm_t1_ns, &x->pm_readings))
				continue;
			x->name = p->name;
			x->onchip_w = w_on;
			x->pm_w = w_pm;
			a->nph++;
		}
		fit(a);
	}
	return 0;
}

void pm_xc_free(struct pm_xc *x)
{
	for (unsigned i = 0; i < x->n; i++) {
		free(x->a[i].ph);
		x->a[i].ph = NULL;
	}
	x->n = 0;
}

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

json_t *pm_xc_json(const struct pm_xc *x)
{
	json_t *accels = json_array();
	for (unsigned i = 0; i < x->n; i++) {
		const struct pm_xc_accel *a = &x->a[i];
		json_t *ph = json_array();
		for (size_t k = 0; k < a->nph; k++)
			json_array_append_new(ph, json_pack("{s:s, s:o, s:o, s:I, s:I, s:I}", "name", a->ph[k].name,
				"onchip_mean_w", num(a->ph[k].onchip_w), "pm_mean_w", num(a->ph[k].pm_w),
				"pm_window_start_ns", (json_int_t)a->ph[k].pm_t0_ns, "pm_window_end_ns",
				(json_int_t)a->ph[k].pm_t1_ns, "pm_readings", (json_int_t)a->ph[k].pm_readings));
		json_array_append_new(accels, json_pack("{s:i, s:o, s:s, s:s?, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
			"accel", (int)a->accel, "gpu", a->gpu >= 0 ? json_integer(a->gpu) : json_null(), "pm_signal",
			a->pm_signal, "onchip_signal", a->onchip_signal[0] ? a->onchip_signal : NULL, "phases_used",
			(json_int_t)a->nph, "gain", num(a->gain), "offset_w", num(a->offset_w), "residual_rms_w",
			num(a->residual_rms_w), "residual_max_w", num(a->residual_max_w), "energy_ratio",
			num(a->energy_ratio), "reason", a->reason[0] ? json_string(a->reason) : json_null(),
			"phases", ph));
	}
	return json_pack("{s:s, s:o}", "model", "pm_mean_w = gain * onchip_mean_w + offset_w (least squares over "
			 "the steady phases)", "accels", accels);
}

void pm_xc_print(FILE *out, const struct pm_xc *x)
{
	if (!x->n)
		return;
	fprintf(out, "\nCray PM cross-check: PM accel power = gain x on-chip power + offset, over the steady phases\n");
	for (unsigned i = 0; i < x->n; i++) {
		const struct pm_xc_accel *a = &x->a[i];
		if (a->gpu < 0) {
			fprintf(out, "  accel%u: %s\n", a->accel, a->reason);
			continue;
		}
		fprintf(out, "  accel%u -> GPU %d (%s vs %s): ", a->accel, a->gpu, a->pm_signal, a->onchip_signal);
		if (a->reason[0]) {
			fprintf(out, "no fit: %s", a->reason);
			if (isfinite(a->energy_ratio))
				fprintf(out, "; energy ratio %.4f", a->energy_ratio);
			fputc('\n', out);
			continue;
		}
		fprintf(out, "gain %.4f, offset %.2f W, residual %.3f W rms (%.3f W max) over %zu phases; energy ratio %.4f\n",
			a->gain, a->offset_w, a->residual_rms_w, a->residual_max_w, a->nph, a->energy_ratio);
	}
}
