/* SPDX-License-Identifier: MIT */
/* The activity model a(t); see workload.h for why it is stateless. */
#include "emu/common/workload.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double emu_clamp01(double v)
{
	return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* One "key=value" of a parameter list; 0 or -1. */
static int emu_wl_param(struct emu_workload *w, const char *kv, char *err, size_t errlen)
{
	const char *eq = strchr(kv, '=');
	char *end;
	if (!eq) {
		snprintf(err, errlen, "parameter '%s' is not key=value", kv);
		return -1;
	}
	size_t klen = (size_t)(eq - kv);
	double v = strtod(eq + 1, &end);
	if (end == eq + 1 || (*end && *end != ',') || !(v >= 0 && v < 1e12)) {
		snprintf(err, errlen, "parameter '%.*s' needs a non-negative number", (int)klen, kv);
		return -1;
	}
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "period_ms", offsetof(struct emu_workload, period_ms) },
		{ "duty", offsetof(struct emu_workload, duty) },
		{ "high", offsetof(struct emu_workload, high) },
		{ "low", offsetof(struct emu_workload, low) },
		{ "every_ms", offsetof(struct emu_workload, every_ms) },
		{ "len_ms", offsetof(struct emu_workload, len_ms) },
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (strlen(keys[i].key) == klen && !strncmp(keys[i].key, kv, klen)) {
			*(double *)((char *)w + keys[i].off) = v;
			return 0;
		}
	}
	snprintf(err, errlen, "unknown parameter '%.*s'", (int)klen, kv);
	return -1;
}

static int emu_wl_parse(const char *spec, struct emu_workload *w, char *err, size_t errlen)
{
	memset(w, 0, sizeof(*w));
	w->high = 1.0;
	w->level = 1.0;
	if (!spec || !*spec) {
		w->kind = EMU_WL_CONSTANT;
		return 0;
	}
	const char *colon = strchr(spec, ':');
	size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
	const char *args = colon ? colon + 1 : "";
	static const char *const names[] = { "idle", "constant", "square", "ramp", "bursts" };
	int kind = -1;
	for (int i = 0; i < 5; i++)
		if (strlen(names[i]) == nlen && !strncmp(names[i], spec, nlen))
			kind = i;
	if (kind < 0) {
		snprintf(err, errlen, "unknown workload '%.*s' (idle, constant, square, ramp, bursts)", (int)nlen, spec);
		return -1;
	}
	w->kind = (enum emu_wl_kind)kind;
	if (w->kind == EMU_WL_IDLE) {
		if (*args) {
			snprintf(err, errlen, "idle takes no parameters");
			return -1;
		}
		return 0;
	}
	if (w->kind == EMU_WL_CONSTANT) {
		char *end;
		if (!*args)
			return 0;
		w->level = strtod(args, &end);
		if (*end || end == args || !(w->level >= 0 && w->level <= 1)) {
			snprintf(err, errlen, "constant level '%s' is not a number in [0,1]", args);
			return -1;
		}
		return 0;
	}
	for (const char *p = args; *p;) {
		if (emu_wl_param(w, p, err, errlen))
			return -1;
		p = strchr(p, ',');
		if (!p)
			break;
		p++;
	}
	if (w->high > 1 || w->low > 1 || w->duty > 1) {
		snprintf(err, errlen, "high, low and duty must be in [0,1]");
		return -1;
	}
	if ((w->kind == EMU_WL_SQUARE || w->kind == EMU_WL_RAMP) && !(w->period_ms > 0)) {
		snprintf(err, errlen, "%s needs period_ms=P > 0", names[kind]);
		return -1;
	}
	if (w->kind == EMU_WL_BURSTS && !(w->every_ms > 0 && w->len_ms > 0)) {
		snprintf(err, errlen, "bursts needs every_ms=E > 0 and len_ms=L > 0");
		return -1;
	}
	if (w->kind == EMU_WL_SQUARE && !strstr(args, "duty=")) {
		snprintf(err, errlen, "square needs duty=D");
		return -1;
	}
	return 0;
}

int emu_workload_parse(const char *spec, struct emu_workload *w, char *err, size_t errlen)
{
	char dummy[8];
	if (!err) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	if (emu_wl_parse(spec, w, err, errlen) == 0)
		return 0;
	memset(w, 0, sizeof(*w));
	w->kind = EMU_WL_CONSTANT;
	w->level = 1.0;
	return -1;
}

/* Phase in [0,1) of t within a period; integer ns arithmetic keeps the shim free of libm. */
static double emu_phase(uint64_t t_ns, double period_ms)
{
	uint64_t p = (uint64_t)(period_ms * 1e6);
	if (!p)
		return 0.0;
	return (double)(t_ns % p) / (double)p;
}

double emu_workload_activity(const struct emu_workload *w, uint64_t t_ns)
{
	switch (w->kind) {
	case EMU_WL_IDLE:
		return 0.0;
	case EMU_WL_CONSTANT:
		return emu_clamp01(w->level);
	case EMU_WL_SQUARE: {
		return emu_clamp01(emu_phase(t_ns, w->period_ms) < w->duty ? w->high : w->low);
	}
	case EMU_WL_RAMP:
		return emu_phase(t_ns, w->period_ms);
	case EMU_WL_BURSTS:
		return emu_clamp01(emu_phase(t_ns, w->every_ms) * w->every_ms < w->len_ms ? w->high : w->low);
	}
	return 0.0;
}

/*
 * Integral over [0, t] of a periodic signal that is `hi` for the first
 * `on_ns` of each `period_ns` and `lo` after: whole periods plus the part
 * of the last one.  Integer ns keep the shim free of libm.
 */
static double emu_pulse_integral(uint64_t t_ns, uint64_t period_ns, uint64_t on_ns, double hi, double lo)
{
	if (!period_ns)
		return 0.0;
	if (on_ns > period_ns)
		on_ns = period_ns;
	uint64_t n = t_ns / period_ns, r = t_ns % period_ns;
	double per = ((double)on_ns * hi + (double)(period_ns - on_ns) * lo) * 1e-9;
	double part = r < on_ns ? (double)r * hi * 1e-9
				: ((double)on_ns * hi + (double)(r - on_ns) * lo) * 1e-9;
	return (double)n * per + part;
}

double emu_workload_integral(const struct emu_workload *w, uint64_t t_ns)
{
	switch (w->kind) {
	case EMU_WL_IDLE:
		return 0.0;
	case EMU_WL_CONSTANT:
		return emu_clamp01(w->level) * (double)t_ns * 1e-9;
	case EMU_WL_SQUARE: {
		uint64_t p = (uint64_t)(w->period_ms * 1e6);
		/* The same comparison as emu_workload_activity: phase < duty is high. */
		uint64_t on = (uint64_t)(w->duty * (double)p);
		while (on < p && (double)on / (double)p < w->duty)
			on++;
		return emu_pulse_integral(t_ns, p, on, emu_clamp01(w->high), emu_clamp01(w->low));
	}
	case EMU_WL_RAMP: {
		uint64_t p = (uint64_t)(w->period_ms * 1e6);
		if (!p)
			return 0.0;
		double r = (double)(t_ns % p) / (double)p;
		return (double)(t_ns / p) * (double)p * 0.5e-9 + r * r * (double)p * 0.5e-9;
	}
	case EMU_WL_BURSTS: {
		uint64_t p = (uint64_t)(w->every_ms * 1e6);
		uint64_t on = (uint64_t)(w->len_ms * 1e6);
		while (on < p && (double)on / (double)p * w->every_ms < w->len_ms)
			on++;
		return emu_pulse_integral(t_ns, p, on, emu_clamp01(w->high), emu_clamp01(w->low));
	}
	}
	return 0.0;
}

uint64_t emu_workload_first_change(const struct emu_workload *w, uint64_t period)
{
	double a0 = emu_workload_activity(w, 0);
	uint64_t lo = 1, hi = period;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (emu_workload_activity(w, mid) == a0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
