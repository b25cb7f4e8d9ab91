/* SPDX-License-Identifier: MIT */
/*
 * A node's clock offsets against rank 0 (the "job".clock object of its
 * metadata, written by `spmtap record --job`), and the mapping of its
 * CLOCK_BOOTTIME to rank 0's: reference = local + offset(local), offset
 * linear in local_ns between entries and held before the first and after
 * the last; the bound at a point is the larger of the two neighbouring
 * entries' bound_ns (held outside).  Linear because a node's clock runs at
 * a slightly different rate (NTP slews it): a held offset would be off by
 * the drift times the distance to the entry.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/merge.h"
#include "log.h"

void mg_clock_free(struct mg_clock *c)
{
	free(c->local_ns);
	free(c->offset_ns);
	free(c->bound_ns);
	memset(c, 0, sizeof(*c));
}

int mg_clock_parse(const json_t *meta, struct mg_clock *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	json_t *job = json_object_get(meta, "job");
	if (!json_is_object(job)) {
		snprintf(c->method, sizeof(c->method), "none (unaligned)");
		c->max_bound_ns = -1;
		return 0;
	}
	json_t *clock = json_object_get(job, "clock");
	json_t *offs = json_object_get(clock, "offsets");
	const char *method = json_string_value(json_object_get(clock, "method"));
	snprintf(c->method, sizeof(c->method), "%s", method ? method : "unknown");
	size_t n = json_array_size(offs);
	if (!n)
		return spmtap_seterr(err, errlen, EBADMSG, "its \"job\" object has no clock offsets");
	c->local_ns = calloc(n, sizeof(int64_t));
	c->offset_ns = calloc(n, sizeof(int64_t));
	c->bound_ns = calloc(n, sizeof(int64_t));
	if (!c->local_ns || !c->offset_ns || !c->bound_ns) {
		mg_clock_free(c);
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	}
	c->max_bound_ns = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(offs, i);
		json_t *l = json_object_get(e, "local_ns"), *o = json_object_get(e, "offset_ns"),
		       *b = json_object_get(e, "bound_ns");
		if (!json_is_integer(l) || !json_is_integer(o) || !json_is_integer(b) || json_integer_value(b) < 0) {
			mg_clock_free(c);
			return spmtap_seterr(err, errlen, EBADMSG,
					     "clock offset %zu lacks an integer local_ns, offset_ns or bound_ns", i);
		}
		c->local_ns[i] = json_integer_value(l);
		c->offset_ns[i] = json_integer_value(o);
		c->bound_ns[i] = json_integer_value(b);
		if (i && c->local_ns[i] < c->local_ns[i - 1]) {
			mg_clock_free(c);
			return spmtap_seterr(err, errlen, EBADMSG, "clock offsets are not in time order (entry %zu)", i);
		}
		if (c->bound_ns[i] > c->max_bound_ns)
			c->max_bound_ns = c->bound_ns[i];
	}
	c->n = n;
	return 0;
}

int64_t mg_clock_map(const struct mg_clock *c, int64_t t, int64_t *bound)
{
	if (!c->n) {
		if (bound)
			*bound = -1;
		return t;
	}
	if (t <= c->local_ns[0] || c->n == 1) {
		if (bound)
			*bound = c->bound_ns[0];
		return t + c->offset_ns[0];
	}
	if (t >= c->local_ns[c->n - 1]) {
		if (bound)
			*bound = c->bound_ns[c->n - 1];
		return t + c->offset_ns[c->n - 1];
	}
	/* the segment [lo, lo+1] holding t: binary search, entries are few but samples many */
	size_t lo = 0, hi = c->n - 1;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->local_ns[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	int64_t span = c->local_ns[hi] - c->local_ns[lo];
	int64_t off = c->offset_ns[lo];
	if (span > 0) {
		/* in long double: (t - lo) * (offset step) overflows int64 for hours and seconds */
		long double f = (long double)(t - c->local_ns[lo]) / (long double)span;
		long double d = f * (long double)(c->offset_ns[hi] - c->offset_ns[lo]);
		off += (int64_t)(d < 0 ? d - 0.5L : d + 0.5L);
	}
	if (bound)
		*bound = c->bound_ns[lo] > c->bound_ns[hi] ? c->bound_ns[lo] : c->bound_ns[hi];
	return t + off;
}
