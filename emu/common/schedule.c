/* SPDX-License-Identifier: MIT */
/* The workload's schedule (schedule.h), found from a(t) so it matches the model to the nanosecond. */
#include "emu/common/schedule.h"

#include <stdio.h>

int emu_workload_steps(const struct emu_workload *w, uint64_t *period, uint64_t *on, const char **first,
		       const char **second)
{
	double period_ms = w->kind == EMU_WL_SQUARE ? w->period_ms : w->kind == EMU_WL_BURSTS ? w->every_ms : 0;
	*period = (uint64_t)(period_ms * 1e6);
	if (!*period)
		return 0;
	/* Levels as a(t) gives them (clamped), measured rather than re-derived. */
	double a0 = emu_workload_activity(w, 0), a1 = emu_workload_activity(w, *period - 1);
	if (a0 == a1)
		return 0; /* duty 0 or 1, or high == low: no step */
	*on = emu_workload_first_change(w, *period);
	*first = a0 > a1 ? "load" : "idle";
	*second = a0 > a1 ? "idle" : "load";
	return 2;
}

int emu_workload_schedule(const struct emu_workload *w, uint64_t t0_ns, uint64_t t1_ns, emu_stretch_fn fn,
			  void *user)
{
	uint64_t period, on;
	const char *n1, *n2;
	if (t1_ns <= t0_ns || !emu_workload_steps(w, &period, &on, &n1, &n2))
		return 0;
	int count = 0;
	for (uint64_t k = t0_ns / period; k * period < t1_ns; k++) {
		uint64_t b = k * period;
		uint64_t s[3] = { b, b + on, b + period };
		for (int i = 0; i < 2; i++) {
			uint64_t a = s[i] > t0_ns ? s[i] : t0_ns, e = s[i + 1] < t1_ns ? s[i + 1] : t1_ns;
			if (a >= e)
				continue;
			int rc = fn(a, e, i ? n2 : n1, user);
			if (rc)
				return rc;
			count++;
		}
	}
	return count;
}

size_t emu_schedule_render(const char *spec, char *buf, size_t len)
{
	struct emu_workload w;
	char err[160];
	int n = snprintf(buf, len, "spmtap-emu-schedule 1\nworkload %s\n", spec && *spec ? spec : "constant:1");
	size_t off = n < 0 ? 0 : (size_t)n < len ? (size_t)n : len;
	if (emu_workload_parse(spec, &w, err, sizeof(err)) < 0) {
		n = snprintf(buf + off, len - off, "error %s\n", err);
	} else {
		uint64_t period = 0, on = 0;
		const char *n1 = NULL, *n2 = NULL;
		if (emu_workload_steps(&w, &period, &on, &n1, &n2))
			n = snprintf(buf + off, len - off, "period_ns %llu\nstep 0 %s\nstep %llu %s\n",
				     (unsigned long long)period, n1, (unsigned long long)on, n2);
		else
			n = snprintf(buf + off, len - off, "period_ns 0\n");
	}
	off += n < 0 ? 0 : (size_t)n;
	return off < len ? off : len ? len - 1 : 0;
}
