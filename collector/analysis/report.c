// SPDX-License-Identifier: MIT
/* Per-phase energy and confident power (report.h). */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/delay_shift.h"
#include "collector/analysis/report.h"
#include "log.h"

void sa_report_free(struct sa_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; r->ph && i < r->nphases; i++)
		free(r->ph[i].sig);
	free(r->ph);
	sa_characterization_free(r->ch);
	free(r);
}

/* The confidence window of one signal in one phase, and its mean there. */
static void window(const struct sa_signal *s, const struct sa_sig_char *c, const struct sa_phase *p,
		   struct sa_phase_signal *out)
{
	out->window_start_ns = out->window_end_ns = out->mean_power_w_confident = NAN;
	out->reason[0] = 0;
	if (!isfinite(c->delay_ns) || !isfinite(c->rise_ns) || !isfinite(c->fall_ns)) {
		snprintf(out->reason, sizeof(out->reason), "no timings (%s)",
			 c->aliasing == SA_TRUE ? "the signal aliases" : "no counted step");
		return; /* no timings, e.g. an aliasing signal */
	}
	/* Eq. 1, direction-independent: a phase may begin with a rise or with a fall */
	double settle = c->delay_ns + fmax(c->rise_ns, c->fall_ns);
	double ws = (double)p->start_ns + settle, we = (double)p->end_ns - settle;
	double w;
	if (sa_signal_mean(s, ws, we, &w, out->reason, sizeof(out->reason)))
		return; /* an empty window, no reading before it, or none after it (the reason says) */
	out->window_start_ns = ws;
	out->window_end_ns = we;
	out->mean_power_w_confident = w;
}

const char *sa_delay_source_name(enum sa_delay_source s)
{
	return s == SA_DELAY_STEP ? "characterised" : s == SA_DELAY_USER ? "--sensor-delay" : NULL;
}

/*
 * The energy signal's delay: the user's, else the characterisation's
 * equivalent-step delay (with its spread as the uncertainty), else none.
 * A user delay inherits the characterised spread when there is one: the
 * residual cannot know how wrong a given delay is.
 */
static int pick_delay(const struct sa_trace *tr, const struct sa_report_opts *o, struct sa_report *r, char *err,
		      size_t errlen)
{
	r->delay_ns = r->delay_sigma_ns = NAN;
	r->delay_source = SA_DELAY_NONE;
	const struct sa_sig_char *c = r->energy_signal >= 0 ? &r->ch->sig[r->energy_signal] : NULL;
	if (c && c->aliasing == SA_FALSE && c->step_edges) {
		r->delay_ns = c->step_delay_ns;
		r->delay_sigma_ns = c->step_delay_spread_ns;
		r->delay_source = SA_DELAY_STEP;
	}
	for (size_t i = 0; o && i < o->ndelay; i++) {
		int k = -1;
		for (size_t j = 0; j < r->nsignals && k < 0; j++)
			if (!strcmp(sa_trace_signal(tr, j)->name, o->delay[i].signal))
				k = (int)j;
		if (k < 0) {
			char have[256] = "";
			for (size_t j = 0; j < r->nsignals; j++)
				snprintf(have + strlen(have), sizeof(have) - strlen(have), "%s%s", j ? ", " : "",
					 sa_trace_signal(tr, j)->name);
			return spmtap_seterr(err, errlen, EINVAL, "--sensor-delay: no signal '%s' (the trace has: %s)",
					     o->delay[i].signal, *have ? have : "none");
		}
		if (k == r->energy_signal) {
			r->delay_ns = o->delay[i].delay_ms * 1e6;
			if (r->delay_source == SA_DELAY_NONE)
				r->delay_sigma_ns = 0;
			r->delay_source = SA_DELAY_USER;
		}
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Every phase's start and end shifted by d, sorted: what delay_shift.h checks a split against. */
static double *shifted_boundaries(const struct sa_phases *ph, double d)
{
	double *v = malloc((2 * ph->n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < ph->n; i++) {
		v[2 * i] = (double)ph->v[i].start_ns + d;
		v[2 * i + 1] = (double)ph->v[i].end_ns + d;
	}
	qsort(v, 2 * ph->n, sizeof(*v), cmp_double);
	return v;
}

/* energy_j_corrected and residual_j of one phase (NAN when not inside the kept readings). */
static void corrected(const struct sa_signal *s, const struct sa_report *r, const double *bnd, size_t nbnd,
		      const struct sa_phase *p, struct sa_phase_result *pr)
{
	pr->energy_j_corrected = pr->residual_j = NAN;
	if (r->delay_source == SA_DELAY_NONE || !isfinite(r->delay_ns))
		return;
	double e0, e1;
	struct sa_boundary b0, b1;
	if (sa_energy_at(s, (double)p->start_ns + r->delay_ns, bnd, nbnd, &e0, &b0) ||
	    sa_energy_at(s, (double)p->end_ns + r->delay_ns, bnd, nbnd, &e1, &b1))
		return;
	double sigma = isfinite(r->delay_sigma_ns) ? r->delay_sigma_ns : 0;
	pr->energy_j_corrected = e1 - e0;
	pr->residual_j = sa_boundary_error_j(&b0, sigma) + sa_boundary_error_j(&b1, sigma);
}

int sa_report_compute(const struct sa_trace *tr, const struct sa_phases *ph, struct sa_report **out, char *err,
		      size_t errlen)
{
	return sa_report_compute_opts(tr, ph, NULL, out, err, errlen);
}

int sa_report_compute_opts(const struct sa_trace *tr, const struct sa_phases *ph, const struct sa_report_opts *o,
			   struct sa_report **out, char *err, size_t errlen)
{
	struct sa_report *r = calloc(1, sizeof(*r));
	if (!r)
		return spmtap_seterr(err, errlen, ENOMEM, "report: out of memory");
	int rc = sa_characterize(tr, ph, &r->ch, err, errlen);
	if (rc) {
		free(r);
		return rc;
	}
	r->nsignals = sa_trace_nsignals(tr);
	r->energy_signal = sa_trace_first_j(tr);
	r->ph = calloc(ph->n ? ph->n : 1, sizeof(*r->ph));
	if (!r->ph) {
		sa_report_free(r);
		return spmtap_seterr(err, errlen, ENOMEM, "report: out of memory");
	}
	if ((rc = pick_delay(tr, o, r, err, errlen))) {
		sa_report_free(r);
		return rc;
	}
	double *bnd = shifted_boundaries(ph, isfinite(r->delay_ns) ? r->delay_ns : 0);
	if (!bnd) {
		sa_report_free(r);
		return spmtap_seterr(err, errlen, ENOMEM, "report: out of memory");
	}
	for (size_t i = 0; i < ph->n; i++) {
		const struct sa_phase *p = &ph->v[i];
		struct sa_phase_result *pr = &r->ph[i];
		r->nphases = i + 1;
		pr->phase = p;
		pr->duration_ms = (double)(p->end_ns - p->start_ns) / 1e6;
		pr->energy_j = pr->mean_power_w = NAN;
		double j;
		if (r->energy_signal < 0)
			snprintf(pr->reason, sizeof(pr->reason), "no energy counter");
		else if (!sa_trace_energy(tr, (size_t)r->energy_signal, (double)p->start_ns, (double)p->end_ns, &j,
					  pr->reason, sizeof(pr->reason))) {
			pr->energy_j = j;
			pr->mean_power_w = j / ((double)(p->end_ns - p->start_ns) * 1e-9);
		}
		pr->energy_j_corrected = pr->residual_j = NAN;
		if (r->energy_signal >= 0)
			corrected(sa_trace_signal(tr, (size_t)r->energy_signal), r, bnd, 2 * ph->n, p, pr);
		pr->sig = calloc(r->nsignals ? r->nsignals : 1, sizeof(*pr->sig));
		if (!pr->sig) {
			free(bnd);
			sa_report_free(r);
			return spmtap_seterr(err, errlen, ENOMEM, "report: out of memory");
		}
		for (size_t k = 0; k < r->nsignals; k++)
			window(sa_trace_signal(tr, k), &r->ch->sig[k], p, &pr->sig[k]);
	}
	free(bnd);
	*out = r;
	return 0;
}

static void put(json_t *o, const char *k, json_t *v, bool *ok)
{
	if (!v || json_object_set_new(o, k, v))
		*ok = false;
}

int sa_report_json(const struct sa_report *r, json_t **out, char *err, size_t errlen)
{
	bool ok = true;
	json_t *root = json_object(), *arr = json_array();
	put(root ? root : arr, "phases", arr, &ok);
	if (!root)
		ok = false;
	json_t *dc = json_object();
	if (root)
		put(root, "delay_correction", dc, &ok);
	else
		json_decref(dc);
	if (ok) {
		const char *src = sa_delay_source_name(r->delay_source);
		put(dc, "signal", r->energy_signal >= 0 ? json_string(r->ch->sig[r->energy_signal].name) : json_null(), &ok);
		put(dc, "delay_ms", sa_json_num(r->delay_ns / 1e6), &ok);
		put(dc, "source", src ? json_string(src) : json_null(), &ok);
		put(dc, "delay_sigma_ms", sa_json_num(r->delay_sigma_ns / 1e6), &ok);
	}
	for (size_t i = 0; i < r->nphases && ok; i++) {
		const struct sa_phase_result *pr = &r->ph[i];
		json_t *o = json_object(), *sigs = json_object();
		if (!o || json_array_append_new(arr, o)) {
			json_decref(sigs);
			ok = false;
			break;
		}
		put(o, "name", json_string(pr->phase->name ? pr->phase->name : ""), &ok);
		put(o, "start_ns", json_integer(pr->phase->start_ns), &ok);
		put(o, "end_ns", json_integer(pr->phase->end_ns), &ok);
		put(o, "duration_ms", sa_json_num(pr->duration_ms), &ok);
		put(o, "energy_j", sa_json_num(pr->energy_j), &ok);
		put(o, "mean_power_w", sa_json_num(pr->mean_power_w), &ok);
		/* extra keys: the delay-aware energy (delay_shift.h) and the root's "delay_correction" */
		put(o, "energy_j_delay_corrected", sa_json_num(pr->energy_j_corrected), &ok);
		put(o, "residual_error_j", sa_json_num(pr->residual_j), &ok);
		put(o, "reason", isnan(pr->energy_j) && pr->reason[0] ? json_string(pr->reason) : json_null(), &ok);
		put(o, "signals", sigs, &ok);
		for (size_t k = 0; k < r->nsignals && ok; k++) {
			const struct sa_phase_signal *ps = &pr->sig[k];
			json_t *so = json_object();
			put(sigs, r->ch->sig[k].name, so, &ok);
			if (!ok)
				break;
			put(so, "window_start_ns", sa_json_ns(ps->window_start_ns), &ok);
			put(so, "window_end_ns", sa_json_ns(ps->window_end_ns), &ok);
			put(so, "mean_power_w_confident", sa_json_num(ps->mean_power_w_confident), &ok);
			put(so, "reason", isnan(ps->mean_power_w_confident) && ps->reason[0] ? json_string(ps->reason)
											: json_null(), &ok);
		}
	}
	if (!ok) {
		json_decref(root);
		return spmtap_seterr(err, errlen, ENOMEM, "report: out of memory building JSON (or a name that is not UTF-8)");
	}
	*out = root;
	return 0;
}
