/* SPDX-License-Identifier: MIT */
/* The workload's schedule (schedule.h), found from a(t) so it matches the model to the nanosecond. */
#include "emu/common/schedule.h"

int emu_workload_schedule(const struct emu_workload *w, uint64_t t0_ns, uint64_t t1_ns, emu_stretch_fn fn,
			  void *user)
{
	double period_ms = w->kind == EMU_WL_SQUARE ? w->period_ms : w->kind == EMU_WL_BURSTS ? w->every_ms : 0;
	uint64_t period = (uint64_t)(period_ms * 1e6);
	if (!period || t1_ns <= t0_ns)
		return 0;
	/* Levels as a(t) gives them (clamped), measured rather than re-derived. */
	double first = emu_workload_activity(w, 0), second = emu_workload_activity(w, period - 1);
	if (first == second)
		return 0; /* duty 0 or 1, or high == low: no step */
	uint64_t on = emu_workload_first_change(w, period);
	const char *n1 = first > second ? "load" : "idle", *n2 = first > second ? "idle" : "load";
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
