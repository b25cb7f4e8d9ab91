// SPDX-License-Identifier: MIT
/* Per-phase energy and confident power (report.h). */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

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

int sa_report_compute(const struct sa_trace *tr, const struct sa_phases *ph, struct sa_report **out, char *err,
		      size_t errlen)
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
		pr->sig = calloc(r->nsignals ? r->nsignals : 1, sizeof(*pr->sig));
		if (!pr->sig) {
			sa_report_free(r);
			return spmtap_seterr(err, errlen, ENOMEM, "report: out of memory");
		}
		for (size_t k = 0; k < r->nsignals; k++)
			window(sa_trace_signal(tr, k), &r->ch->sig[k], p, &pr->sig[k]);
	}
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
