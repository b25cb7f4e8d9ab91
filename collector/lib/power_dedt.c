// SPDX-License-Identifier: MIT
/* dE/dt from the energy counter, and per-sensor offsets (power_dedt.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/lib/power_dedt.h"
#include "log.h"

void dedt_init(struct dedt *d, const struct dedt_opts *o)
{
	memset(d, 0, sizeof(*d));
	if (o)
		d->o = *o;
	if (d->o.tick_j <= 0)
		d->o.tick_j = SMI_ENERGY_TICK_J;
	if (d->o.max_w <= 0)
		d->o.max_w = 5000.0;
	if (!d->o.stuck_after)
		d->o.stuck_after = 20;
}

static void baseline(struct dedt *d, uint64_t e, uint64_t t)
{
	d->have = true;
	d->e_prev = d->e_last = e;
	d->t_prev_ns = d->t_last = t;
	d->same_n = 0;
}

bool dedt_push(struct dedt *d, uint64_t e, uint64_t t, struct dedt_out *out)
{
	memset(out, 0, sizeof(*out));
	/*
	 * An all-zero counter is MI200's secondary GCD (the primary reports
	 * the package).  Zero is never a real reading of a running GPU's
	 * lifetime energy, so no interval is formed from it.
	 */
	if (e == 0) {
		d->n.no_energy++;
		d->have = false;
		out->flags = DEDT_NO_ENERGY;
		return true;
	}
	if (!d->have) {
		baseline(d, e, t);
		out->flags = DEDT_FIRST;
		return true;
	}
	if (e == d->e_last && t == d->t_last) {
		/* a cached re-read: the firmware has no new sample; not a 0 W interval */
		d->n.duplicate++;
		return false;
	}
	if (t < d->t_last) {
		d->n.ts_backwards++;
		out->flags = DEDT_TS_BACKWARDS;
		out->t0_ns = d->t_last;
		out->t1_ns = t;
		baseline(d, e, t);
		return true;
	}
	if (e < d->e_last) {
		/* never integrate a negative delta (ROCm/amdsmi#115) */
		d->n.reset++;
		out->flags = DEDT_RESET;
		out->t0_ns = d->t_prev_ns;
		out->t1_ns = t;
		baseline(d, e, t);
		return true;
	}
	if (t == d->t_prev_ns) {
		/* new energy under an old timestamp: no time to divide by; wait */
		d->e_last = e;
		return false;
	}
	if (e == d->e_prev) {
		/*
		 * Time moved, energy did not.  A counter that updates more
		 * slowly than the timestamp looks like this, so the interval is
		 * held open (the next change then spans it, which keeps the mean
		 * exact); after stuck_after such reads the sensor is called
		 * stuck (ROCm/amdsmi#22, rocm_smi_lib#180).
		 */
		d->t_last = t;
		if (++d->same_n >= d->o.stuck_after) {
			if (d->same_n == d->o.stuck_after)
				d->n.stuck++;
			out->flags = DEDT_STUCK;
			out->t0_ns = d->t_prev_ns;
			out->t1_ns = t;
			return true;
		}
		return false;
	}
	if (d->same_n >= d->o.stuck_after) {
		/*
		 * A stuck counter moves again.  The jump is the energy of the
		 * whole stall, but its start is not t_prev: the held value may
		 * be older than its first sighting (a reader that missed the
		 * last update before the stall sees it one update late, and a
		 * 100 ms stall then reads as 101 ms of energy in 100 ms).  Not a
		 * measurement: flag it and count from here.
		 */
		out->t0_ns = d->t_prev_ns;
		out->t1_ns = t;
		out->flags = DEDT_STUCK | DEDT_HELD;
		baseline(d, e, t);
		return true;
	}
	double dt_s = (double)(t - d->t_prev_ns) * 1e-9;
	double w = (double)(e - d->e_prev) * d->o.tick_j / dt_s;
	out->t0_ns = d->t_prev_ns;
	out->t1_ns = t;
	out->watts = w;
	out->flags = d->same_n ? DEDT_HELD : 0;
	if (w > d->o.max_w) {
		d->n.implausible++;
		out->flags |= DEDT_IMPLAUSIBLE;
	} else {
		out->valid = true;
		d->n.emitted++;
	}
	baseline(d, e, t);
	return true;
}

const char *dedt_flags_str(uint32_t f, char *buf, size_t len)
{
	static const char *const names[] = { "first", "duplicate", "reset", "ts_backwards", "stuck",
					     "no_energy", "implausible", "held", "ts_dup" };
	size_t o = 0;
	buf[0] = 0;
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((f >> i) & 1)
			o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s%s", o ? "," : "", names[i]);
	return buf;
}

int smi_offsets_parse(const char *spec, struct smi_offsets *o, char *err, size_t errlen)
{
	memset(o, 0, sizeof(*o));
	if (!spec || !*spec)
		return 0;
	char *dup = strdup(spec);
	if (!dup)
		return -ENOMEM;
	int rc = 0;
	char *save = NULL;
	for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq) {
			rc = spmtap_seterr(err, errlen, EINVAL, "--smi-offset %s: expected name=value[unit]", tok);
			break;
		}
		*eq = 0;
		char *end;
		double v = strtod(eq + 1, &end);
		if (end == eq + 1) {
			rc = spmtap_seterr(err, errlen, EINVAL, "--smi-offset %s: '%s' is not a number", tok, eq + 1);
			break;
		}
		const char *unit;
		double *slot;
		int m = smi_metric_lookup(tok);
		if (m >= 0) {
			unit = smi_metric_unit((enum smi_metric)m);
			slot = &o->add[m];
		} else if (!strcmp(tok, "power_dedt")) {
			unit = "W";
			slot = &o->add_dedt;
		} else {
			rc = spmtap_seterr(err, errlen, EINVAL,
					   "--smi-offset: unknown sensor '%s' (e.g. power_avg, power_cur, power_dedt, temp_edge)",
					   tok);
			break;
		}
		if (*end && strcmp(end, unit)) {
			rc = spmtap_seterr(err, errlen, EINVAL, "--smi-offset %s: unit '%s', but %s is in %s", tok, end,
					   tok, unit);
			break;
		}
		*slot = v;
	}
	free(dup);
	return rc;
}
