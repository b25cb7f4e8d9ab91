/* SPDX-License-Identifier: MIT */
/*
 * How much of a phase one SPM stream covers (phase_counters.h, struct
 * pc_cover): the samples the file holds against the samples that were due.
 * A sample is due every period (the spacing of the samples around it: the
 * SCLK-counted interval follows the shader clock); where the gpu_ticks of
 * two neighbours are more than 1.5 periods apart, the samples between them
 * were lost (the decoder's own rule for lost samples, docs/decode-csv.md
 * "Gaps"), and before the stream's first or after its last sample none was
 * recorded at all (a late start, a truncated file).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/phase_counters.h"
#include "collector/analysis/sensor_trace.h"

/* A step of more than this many periods is a gap (decoder/decode.c counts lost samples the same way). */
#define GAP_PERIODS 1.5

void pc_period_of(const struct rec_table *t, struct pc_period *p)
{
	memset(p, 0, sizeof(*p));
	if (t->n < 2)
		return;
	double *d = malloc((t->n - 1) * sizeof(*d));
	if (!d)
		return;
	bool ticks = true;
	for (size_t k = 0; k < t->n && ticks; k++)
		ticks = t->ticks && t->ticks[k] >= 0;
	if (ticks) {
		for (size_t k = 1; k < t->n; k++)
			d[k - 1] = (double)t->ticks[k] - (double)t->ticks[k - 1];
		p->ticks = sa_median(d, t->n - 1);
		if (!(p->ticks > 0))
			p->ticks = 0;
	}
	for (size_t k = 1; k < t->n; k++)
		d[k - 1] = (double)t->t_ns[k] - (double)t->t_ns[k - 1]; /* a damaged file may hold any times */
	p->ns = sa_median(d, t->n - 1);
	if (!(p->ns > 0))
		p->ns = 0;
	free(d);
}

static void add_stretch(struct pc_cover *c, int64_t a, int64_t b, long long slots, double period_ns)
{
	if (slots <= 0)
		return;
	if (c->nlost < PC_MAX_STRETCHES)
		c->lost[c->nlost] = (struct pc_stretch){ a, b, (size_t)slots };
	c->nlost++;
	c->expected += (size_t)slots;
	c->lost_ns += (int64_t)llround((double)slots * period_ns);
}

/*
 * The sample spacing where it matters.  The SPM interval counts SCLK
 * cycles and the timestamps a fixed clock, so the spacing follows the shader
 * clock: a GPU that drops its clock at idle samples more slowly there.  A
 * step is measured against the steps around it, not against the stream's
 * median: the larger of the medians of the LOCAL_STEPS steps before and
 * after (a clock change makes one side as slow as the step; a gap is longer
 * than both).
 */
#define LOCAL_STEPS 8

/* Step k of t (k >= 1): in ticks when both samples have them, else in host ns. */
static double step_of(const struct rec_table *t, bool ticks, size_t k)
{
	return ticks ? (double)t->ticks[k] - (double)t->ticks[k - 1] : (double)t->t_ns[k] - (double)t->t_ns[k - 1];
}

/* Median of steps [a, b) (at most LOCAL_STEPS of them); 0 without any. */
static double steps_median(const struct rec_table *t, bool ticks, size_t a, size_t b)
{
	double d[LOCAL_STEPS];
	size_t m = 0;
	for (size_t k = a; k < b && m < LOCAL_STEPS; k++)
		d[m++] = step_of(t, ticks, k);
	return m ? sa_median(d, m) : 0;
}

/* The spacing around step k: max(median before, median after), in the unit of step_of(). */
static double local_step(const struct rec_table *t, bool ticks, size_t k)
{
	double before = steps_median(t, ticks, k > LOCAL_STEPS ? k - LOCAL_STEPS : 1, k);
	double after = steps_median(t, ticks, k + 1, k + 1 + LOCAL_STEPS < t->n ? k + 1 + LOCAL_STEPS : t->n);
	return fmax(before, after);
}

/* Slots at x0 + j * P, j in [jlo, jhi], that lie in [s, e). */
static long long slots_in(double x0, double P, long long jlo, long long jhi, double s, double e)
{
	long long a = (long long)ceil((s - x0) / P), b = (long long)ceil((e - x0) / P) - 1;
	if (a < jlo)
		a = jlo;
	if (b > jhi)
		b = jhi;
	return b >= a ? b - a + 1 : 0;
}

void pc_cover_of(const struct rec_table *t, const struct pc_period *p, int64_t start_ns, int64_t end_ns, size_t lo,
		 size_t hi, struct pc_cover *c)
{
	memset(c, 0, sizeof(*c));
	c->present = c->expected = hi > lo ? hi - lo : 0;
	if (t->n) {
		c->first_ns = t->t_ns[0];
		c->last_ns = t->t_ns[t->n - 1];
	}
	double P = p->ns, s = (double)start_ns, e = (double)end_ns;
	if (!(P > 0)) {
		/* fewer than two samples: no period to count by; a phase without any is not covered */
		c->coverage = c->present ? 1 : 0;
		if (!c->present) {
			c->after_last = t->n && t->t_ns[t->n - 1] < start_ns;
			c->before_first = !t->n || t->t_ns[0] >= end_ns;
		}
		return;
	}
	const long long inf = LLONG_MAX / 4;
	if (lo == 0 && t->n) { /* before the first sample: slots t0 - j P, P the spacing at the start */
		double P0 = steps_median(t, false, 1, t->n < 1 + LOCAL_STEPS ? t->n : 1 + LOCAL_STEPS);
		P = P0 > 0 ? P0 : p->ns;
		double t0 = (double)t->t_ns[0];
		long long jmax = (long long)floor((t0 - s) / P), jmin = (long long)floor((t0 - e) / P) + 1;
		if (jmin < 1)
			jmin = 1;
		long long n = jmax >= jmin ? jmax - jmin + 1 : 0;
		if (n > 0) {
			c->before_first = true;
			add_stretch(c, start_ns, t->t_ns[0] < end_ns ? t->t_ns[0] : end_ns, n, P);
		}
	}
	size_t k0 = lo ? lo : 1, k1 = hi < t->n ? hi : t->n - 1;
	for (size_t k = k0; t->n >= 2 && k <= k1; k++) {
		bool ticks = p->ticks > 0 && t->ticks[k] >= 0 && t->ticks[k - 1] >= 0;
		double step = step_of(t, ticks, k);
		/* cheap first: a gap is longer than a neighbouring step by half; then against the steps around */
		double nb = k >= 2 ? step_of(t, ticks, k - 1) : step;
		if (k + 1 < t->n)
			nb = fmin(nb, step_of(t, ticks, k + 1));
		if (!(step > GAP_PERIODS * nb))
			continue;
		double loc = local_step(t, ticks, k);
		if (!(loc > 0) || !(step > GAP_PERIODS * loc))
			continue;
		long long m = llround(step / loc) - 1;
		double Pk = ticks ? loc * (p->ns / p->ticks) : loc; /* in host ns */
		if (!(Pk > 0))
			Pk = p->ns;
		long long n = slots_in((double)t->t_ns[k - 1], Pk, 1, m, s, e);
		int64_t a = t->t_ns[k - 1] > start_ns ? t->t_ns[k - 1] : start_ns;
		int64_t b = t->t_ns[k] < end_ns ? t->t_ns[k] : end_ns;
		add_stretch(c, a, b, n, Pk);
	}
	if (hi == t->n && t->n) { /* after the last sample: slots tl + j P, P the spacing at the end */
		double Pn = steps_median(t, false, t->n > 1 + LOCAL_STEPS ? t->n - LOCAL_STEPS : 1, t->n);
		P = Pn > 0 ? Pn : p->ns;
		double tl = (double)t->t_ns[t->n - 1];
		long long n = slots_in(tl, P, 1, inf, s, e);
		if (n > 0) {
			c->after_last = true;
			add_stretch(c, t->t_ns[t->n - 1] > start_ns ? t->t_ns[t->n - 1] : start_ns, end_ns, n, P);
		}
	}
	c->coverage = c->expected ? (double)c->present / (double)c->expected : 1;
}

int pc_pct(double f)
{
	return (int)floor(f * 100 + 1e-9);
}

void pc_cover_reason(const struct pc_cover *c, char *buf, size_t len)
{
	int o = snprintf(buf, len, "coverage %d %%", pc_pct(c->coverage));
	if (o < 0 || (size_t)o >= len)
		return;
	if (!c->expected && !c->present) {
		snprintf(buf + o, len - (size_t)o, ": %s", c->after_last ? "the stream ends before it" :
			 c->before_first ? "the stream starts after it" : "no samples");
		return;
	}
	const char *sep = ": ";
	if (c->nlost) {
		size_t inner = c->nlost - (size_t)c->before_first - (size_t)c->after_last;
		if (inner)
			o += snprintf(buf + o, len - (size_t)o, "%s%zu lost stretch%s", sep, inner, inner == 1 ? "" : "es");
		else
			o += snprintf(buf + o, len - (size_t)o, "%s", sep);
		if ((size_t)o >= len)
			return;
		o += snprintf(buf + o, len - (size_t)o, "%s%.1f ms without samples", inner ? ", " : "",
			      (double)c->lost_ns / 1e6);
		sep = ", ";
	}
	if ((size_t)o < len && c->before_first)
		o += snprintf(buf + o, len - (size_t)o, "%sno samples before %lld ns (the stream starts there)", sep,
			      (long long)c->first_ns);
	if ((size_t)o < len && c->after_last)
		snprintf(buf + o, len - (size_t)o, "%sno samples after %lld ns (the stream ends there)", sep,
			 (long long)c->last_ns);
}

uint32_t pc_streams_expected(const struct recording *r, uint32_t gpu)
{
	json_t *streams = json_object_get(json_object_get(r->meta, "extra"), "streams");
	uint32_t n = 0;
	size_t i;
	json_t *st;
	json_array_foreach(streams, i, st) {
		const char *src = json_string_value(json_object_get(st, "source"));
		json_t *g = json_object_get(st, "gpu");
		if (src && !strcmp(src, "spm") && json_is_integer(g) && json_integer_value(g) == (json_int_t)gpu)
			n++;
	}
	return n;
}
