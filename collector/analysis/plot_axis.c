/* SPDX-License-Identifier: MIT */
/* Axis ticks: 1-2-5 steps and labels that read well (see plot_internal.h). */
#include <math.h>
#include <stdio.h>

#include "collector/analysis/plot_internal.h"

double plot_nice_step(double range, int target)
{
	if (!(range > 0) || !isfinite(range))
		return 1;
	if (target < 1)
		target = 1;
	double raw = range / target;
	double mag = pow(10, floor(log10(raw)));
	double norm = raw / mag;
	/* Thresholds at the geometric means, so the interval count is nearest to target. */
	double m = norm < 1.4142 ? 1 : norm < 3.1623 ? 2 : norm < 7.0711 ? 5 : 10;
	return m * mag;
}

void plot_ticks_make(double lo, double hi, int target, struct plot_ticks *t)
{
	t->n = 0;
	t->scale = 1;
	t->prefix = "";
	t->decimals = 0;
	if (!(hi > lo) || !isfinite(lo) || !isfinite(hi)) {
		t->step = 1;
		return;
	}
	double step = plot_nice_step(hi - lo, target);
	/* Too many ticks for the array (a tiny target on a huge range): coarser steps. */
	while ((hi - lo) / step >= PLOT_MAX_TICKS - 1)
		step = plot_nice_step(hi - lo, (int)((hi - lo) / step) / 2);
	t->step = step;
	double k0 = ceil(lo / step - 1e-9);
	for (double k = k0; t->n < PLOT_MAX_TICKS; k++) {
		double v = k * step;
		if (v > hi + step * 1e-9)
			break;
		if (fabs(v) < step * 1e-9)
			v = 0;
		t->v[t->n++] = v;
	}
	double maxabs = fmax(fabs(lo), fabs(hi));
	static const char *const prefixes[] = { "", "k", "M", "G", "T" };
	if (maxabs >= 1e4) {
		int e = (int)floor(log10(maxabs) / 3);
		if (e > 4)
			e = 4;
		t->scale = pow(10, 3 * e);
		t->prefix = prefixes[e];
	}
	double s = step / t->scale;
	if (s < 1) {
		t->decimals = (int)ceil(-log10(s) - 1e-9);
		if (t->decimals > 12)
			t->decimals = 12;
	}
}

void plot_ticks_plain(struct plot_ticks *t)
{
	t->scale = 1;
	t->prefix = "";
	t->decimals = t->step < 1 ? (int)ceil(-log10(t->step) - 1e-9) : 0;
	if (t->decimals > 12)
		t->decimals = 12;
}

void plot_tick_label(const struct plot_ticks *t, double v, char *buf, size_t len)
{
	if (fabs(v) < t->step * 1e-9) {
		snprintf(buf, len, "0"); /* never "-0", nor "0k" */
		return;
	}
	snprintf(buf, len, "%.*f%s", t->decimals, v / t->scale, t->prefix);
}
