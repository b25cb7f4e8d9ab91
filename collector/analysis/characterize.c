// SPDX-License-Identifier: MIT
/* Sensor characterisation against a square wave (characterize.h). */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/characterize.h"
#include "collector/analysis/delay_shift.h"
#include "log.h"

/* Adjacency of a step's two phases: an idle end within 1 ms of a load start, or the reverse. */
#define ADJACENT_NS INT64_C(1000000)

struct step {
	int64_t s, e;
	int64_t prev_s; /* start of the adjacent phase before the step (delay_shift.h's settled stretch) */
	bool rising;
};

/* A load or idle phase, by its end: the phase before a step. */
struct ended {
	int64_t end, start;
};

/* A half-open interval [lo, hi) of host ns. */
struct span {
	int64_t lo, hi;
};

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int cmp_span(const void *a, const void *b)
{
	return cmp_i64(&((const struct span *)a)->lo, &((const struct span *)b)->lo);
}

static bool is(const struct sa_phase *p, const char *name)
{
	return p->name && !strcmp(p->name, name);
}

static int cmp_ended(const void *a, const void *b)
{
	return cmp_i64(&((const struct ended *)a)->end, &((const struct ended *)b)->end);
}

/* The first of a sorted array whose end lies in [lo, hi], or NULL. */
static const struct ended *any_within(const struct ended *v, size_t n, int64_t lo, int64_t hi)
{
	size_t a = 0, b = n;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (v[mid].end < lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a < n && v[a].end <= hi ? &v[a] : NULL;
}

/*
 * The steps, in phase order, and T_ph.  Phase ends are sorted once so that
 * a long square wave (thousands of phases) costs n log n, not n^2.
 */
static int find_steps(const struct sa_phases *ph, struct step **out, size_t *nout, double *phase_ms)
{
	struct ended *load_end = malloc((ph->n ? ph->n : 1) * sizeof(*load_end));
	struct ended *idle_end = malloc((ph->n ? ph->n : 1) * sizeof(*idle_end));
	double *dur = malloc((ph->n ? ph->n : 1) * sizeof(double));
	struct step *st = malloc((ph->n ? ph->n : 1) * sizeof(*st));
	if (!load_end || !idle_end || !dur || !st) {
		free(load_end);
		free(idle_end);
		free(dur);
		free(st);
		return -ENOMEM;
	}
	size_t nl = 0, ni = 0, nd = 0, ns = 0;
	for (size_t i = 0; i < ph->n; i++) {
		const struct sa_phase *p = &ph->v[i];
		if (is(p, "load"))
			load_end[nl++] = (struct ended){ p->end_ns, p->start_ns };
		else if (is(p, "idle"))
			idle_end[ni++] = (struct ended){ p->end_ns, p->start_ns };
		else
			continue;
		dur[nd++] = (double)(p->end_ns - p->start_ns);
	}
	qsort(load_end, nl, sizeof(*load_end), cmp_ended);
	qsort(idle_end, ni, sizeof(*idle_end), cmp_ended);
	for (size_t i = 0; i < ph->n; i++) {
		const struct sa_phase *p = &ph->v[i];
		bool rising = is(p, "load");
		if (!rising && !is(p, "idle"))
			continue;
		const struct ended *other = rising ? idle_end : load_end;
		const struct ended *prev = any_within(other, rising ? ni : nl, p->start_ns - ADJACENT_NS,
						      p->start_ns + ADJACENT_NS);
		if (prev)
			st[ns++] = (struct step){ .s = p->start_ns, .e = p->end_ns, .prev_s = prev->start, .rising = rising };
	}
	*phase_ms = sa_median(dur, nd) / 1e6;
	free(load_end);
	free(idle_end);
	free(dur);
	*out = st;
	*nout = ns;
	return 0;
}

/* Second halves [s + (e - s)/2, e) of the phases named `name`, sorted and merged. */
static int halves(const struct sa_phases *ph, const char *name, struct span **out, size_t *nout)
{
	struct span *v = malloc((ph->n ? ph->n : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < ph->n; i++) {
		const struct sa_phase *p = &ph->v[i];
		if (!is(p, name))
			continue;
		/* integer t >= s + (e - s)/2 exactly when t >= s + ceil((e - s)/2) */
		v[n++] = (struct span){ .lo = p->start_ns + (p->end_ns - p->start_ns + 1) / 2, .hi = p->end_ns };
	}
	qsort(v, n, sizeof(*v), cmp_span);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && v[i].lo <= v[m - 1].hi) {
			if (v[i].hi > v[m - 1].hi)
				v[m - 1].hi = v[i].hi;
		} else {
			v[m++] = v[i];
		}
	}
	*out = v;
	*nout = m;
	return 0;
}

/* Median of the readings inside the spans (each reading once: the spans are disjoint). */
static int level(const struct sa_signal *s, const struct span *sp, size_t nsp, double *out)
{
	double *v = malloc((s->n ? s->n : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	size_t n = 0;
	for (size_t k = 0; k < nsp; k++)
		for (size_t i = sa_signal_lower_bound(s, sp[k].lo); i < s->n && s->r[i].t_ns < sp[k].hi; i++)
			v[n++] = s->r[i].v;
	*out = sa_median(v, n);
	free(v);
	return 0;
}

/*
 * Index of the first reading from i on, before e, whose normalised value
 * passes `thr` (upwards when `up`), or SIZE_MAX when none does before e.
 */
static size_t crossing(const struct sa_signal *s, size_t i, int64_t e, double low, double den, double thr, bool up)
{
	for (; i < s->n && s->r[i].t_ns < e; i++) {
		double y = (s->r[i].v - low) / den;
		if (up ? y >= thr : y <= thr)
			return i;
	}
	return SIZE_MAX;
}

/* Delays, rises and falls (ns) of the counted steps of one signal. */
static int timings(const struct sa_signal *s, const struct step *st, size_t nst, struct sa_sig_char *c)
{
	double *delay = malloc((nst ? nst : 1) * sizeof(double));
	double *rise = malloc((nst ? nst : 1) * sizeof(double));
	double *fall = malloc((nst ? nst : 1) * sizeof(double));
	if (!delay || !rise || !fall) {
		free(delay);
		free(rise);
		free(fall);
		return -ENOMEM;
	}
	size_t nd = 0, nr = 0, nf = 0;
	double den = c->high_w - c->low_w;
	/* Without a contrast there is nothing to normalise by: no step can be measured. */
	for (size_t k = 0; k < nst && isfinite(den) && den != 0; k++) {
		const struct step *p = &st[k];
		size_t i = sa_signal_lower_bound(s, p->s);
		/* rising: 10 % then 90 %; falling: 90 % then 10 % */
		size_t a = crossing(s, i, p->e, c->low_w, den, p->rising ? 0.1 : 0.9, p->rising);
		size_t b = a == SIZE_MAX ? SIZE_MAX : crossing(s, a, p->e, c->low_w, den, p->rising ? 0.9 : 0.1, p->rising);
		if (b == SIZE_MAX)
			continue;
		delay[nd++] = (double)(s->r[a].t_ns - p->s);
		if (p->rising)
			rise[nr++] = (double)(s->r[b].t_ns - s->r[a].t_ns);
		else
			fall[nf++] = (double)(s->r[b].t_ns - s->r[a].t_ns);
	}
	c->rising = nr;
	c->falling = nf;
	c->delay_meas_ns = sa_median(delay, nd);
	c->rise_meas_ns = sa_median(rise, nr);
	c->fall_meas_ns = sa_median(fall, nf);
	free(delay);
	free(rise);
	free(fall);
	return 0;
}

/*
 * The equivalent-step delay of every step (delay_shift.h) and their median
 * and spread.  A stretch is settled from the phase's start plus the
 * signal's measured settle (delay + max(rise, fall)) and one update more,
 * for the update grid; the levels must differ by half the contrast.
 */
static int step_delay(const struct sa_signal *s, const struct step *st, size_t nst, struct sa_sig_char *c)
{
	c->step_delay_ns = c->step_delay_spread_ns = NAN;
	c->step_edges = 0;
	double settle = c->delay_meas_ns + fmax(isfinite(c->rise_meas_ns) ? c->rise_meas_ns : 0,
						isfinite(c->fall_meas_ns) ? c->fall_meas_ns : 0) +
			c->update_interval_ms * 1e6;
	double jump = 0.5 * fabs(c->high_w - c->low_w);
	if (!isfinite(settle) || !(jump > 0))
		return 0;
	double *d = malloc((nst ? nst : 1) * sizeof(double));
	if (!d)
		return -ENOMEM;
	size_t n = 0;
	int64_t set = (int64_t)ceil(settle);
	for (size_t k = 0; k < nst; k++) {
		double at;
		if (!sa_edge_time(s, st[k].prev_s + set, st[k].s, st[k].s + set, st[k].e, jump, &at))
			d[n++] = at - (double)st[k].s;
	}
	c->step_edges = n;
	if (n) {
		double med = sa_median(d, n), worst = 0;
		/*
		 * The spread is the worst edge, not a robust scatter: an edge whose
		 * phase marker was late (a recorder preempted while stamping it) is
		 * exactly the boundary the residual must cover.
		 */
		for (size_t k = 0; k < n; k++)
			worst = fmax(worst, fabs(d[k] - med));
		c->step_delay_spread_ns = worst;
		c->step_delay_ns = med;
	}
	free(d);
	return 0;
}

void sa_characterization_free(struct sa_characterization *c)
{
	if (!c)
		return;
	free(c->sig);
	free(c);
}

int sa_characterize(const struct sa_trace *tr, const struct sa_phases *ph, struct sa_characterization **out,
		    char *err, size_t errlen)
{
	struct sa_characterization *c = calloc(1, sizeof(*c));
	size_t n = sa_trace_nsignals(tr);
	struct step *st = NULL;
	struct span *hi = NULL, *lo = NULL;
	size_t nst = 0, nhi = 0, nlo = 0;
	int rc = -ENOMEM;
	if (!c || !(c->sig = calloc(n ? n : 1, sizeof(*c->sig))))
		goto out;
	c->n = n;
	if (find_steps(ph, &st, &nst, &c->phase_ms) || halves(ph, "load", &hi, &nhi) ||
	    halves(ph, "idle", &lo, &nlo))
		goto out;
	for (size_t k = 0; k < nst; k++)
		*(st[k].rising ? &c->rising_steps : &c->falling_steps) += 1;
	c->c_ref_w = NAN;
	for (size_t i = 0; i < n; i++) {
		const struct sa_signal *s = sa_trace_signal(tr, i);
		struct sa_sig_char *sc = &c->sig[i];
		sc->name = s->name;
		sc->unit = s->unit;
		sc->changes = s->changes;
		sc->update_interval_ms = s->update_interval_ms;
		sc->high_w = sc->low_w = NAN;
		sc->delay_ns = sc->rise_ns = sc->fall_ns = NAN;
		sc->delay_meas_ns = sc->rise_meas_ns = sc->fall_meas_ns = NAN;
		sc->step_delay_ns = sc->step_delay_spread_ns = NAN;
		sc->aliasing = SA_NULL;
		if (!nst)
			continue; /* no step: levels, timings and aliasing are null */
		if (level(s, hi, nhi, &sc->high_w) || level(s, lo, nlo, &sc->low_w) || timings(s, st, nst, sc) ||
		    step_delay(s, st, nst, sc))
			goto out;
		/* Fewer than two changes: fewer than two updates per phase, whatever T_ph is. */
		if (!(c->phase_ms >= 2 * sc->update_interval_ms))
			sc->alias_why |= SA_ALIAS_A;
		else if (isfinite(sc->high_w - sc->low_w) && !(sc->high_w - sc->low_w <= c->c_ref_w))
			c->c_ref_w = sc->high_w - sc->low_w;
		if (!sc->rising || !sc->falling)
			sc->alias_why |= SA_ALIAS_C;
	}
	for (size_t i = 0; i < n && nst; i++) {
		struct sa_sig_char *sc = &c->sig[i];
		if (sc->high_w - sc->low_w < 0.5 * c->c_ref_w)
			sc->alias_why |= SA_ALIAS_B;
		sc->aliasing = sc->alias_why ? SA_TRUE : SA_FALSE;
		if (!sc->alias_why) {
			sc->delay_ns = sc->delay_meas_ns;
			sc->rise_ns = sc->rise_meas_ns;
			sc->fall_ns = sc->fall_meas_ns;
		}
	}
	rc = 0;
out:
	free(st);
	free(hi);
	free(lo);
	if (rc) {
		sa_characterization_free(c);
		return spmtap_seterr(err, errlen, ENOMEM, "characterize: out of memory");
	}
	*out = c;
	return 0;
}

json_t *sa_json_num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

json_t *sa_json_ns(double v)
{
	if (isfinite(v) && v == floor(v) && fabs(v) < 9007199254740992.0)
		return json_integer((json_int_t)v);
	return sa_json_num(v);
}

static json_t *tristate(int v)
{
	return v == SA_NULL ? json_null() : json_boolean(v == SA_TRUE);
}

/* set_new that remembers a failure instead of leaking or crashing on NULL values */
static void put(json_t *o, const char *k, json_t *v, bool *ok)
{
	if (!v || json_object_set_new(o, k, v))
		*ok = false;
}

int sa_characterization_json(const struct sa_characterization *c, json_t **out, char *err, size_t errlen)
{
	bool ok = true;
	json_t *root = json_object(), *sigs = json_object();
	if (!root || !sigs) {
		json_decref(root);
		json_decref(sigs);
		return spmtap_seterr(err, errlen, ENOMEM, "characterize: out of memory");
	}
	put(root, "phase_ms", sa_json_num(c->phase_ms), &ok);
	put(root, "signals", sigs, &ok);
	for (size_t i = 0; i < c->n && ok; i++) {
		const struct sa_sig_char *s = &c->sig[i];
		json_t *o = json_object();
		put(sigs, s->name, o, &ok);
		if (!ok)
			break;
		put(o, "unit", json_string(sa_unit_name(s->unit)), &ok);
		put(o, "update_interval_ms", sa_json_num(s->update_interval_ms), &ok);
		put(o, "changes", json_integer((json_int_t)s->changes), &ok);
		put(o, "high_w", sa_json_num(s->high_w), &ok);
		put(o, "low_w", sa_json_num(s->low_w), &ok);
		put(o, "delay_ms", sa_json_num(s->delay_ns / 1e6), &ok);
		put(o, "rise_ms", sa_json_num(s->rise_ns / 1e6), &ok);
		put(o, "fall_ms", sa_json_num(s->fall_ns / 1e6), &ok);
		put(o, "aliasing", tristate(s->aliasing), &ok);
		/* extra keys (delay_shift.h): null when no edge gave one, or when the signal aliases */
		bool sd = s->aliasing == SA_FALSE && s->step_edges;
		put(o, "step_delay_ms", sa_json_num(sd ? s->step_delay_ns / 1e6 : NAN), &ok);
		put(o, "step_delay_spread_ms", sa_json_num(sd ? s->step_delay_spread_ns / 1e6 : NAN), &ok);
		put(o, "step_edges", json_integer((json_int_t)s->step_edges), &ok);
	}
	if (!ok) {
		json_decref(root);
		return spmtap_seterr(err, errlen, ENOMEM, "characterize: out of memory building JSON");
	}
	*out = root;
	return 0;
}
