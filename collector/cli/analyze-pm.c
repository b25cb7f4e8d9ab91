// SPDX-License-Identifier: MIT
/*
 * `spmtap report` on a recording made with --cray: the PM cross-check
 * (collector/analysis/pm_crosscheck.h) with the accelN -> GPU map the
 * recording's metadata holds (extra.cray_pm.accel_map, from
 * --cray-accel-map).  Recordings without Cray PM data get nothing.
 */
#include <string.h>

#include "collector/analysis/pm_crosscheck.h"
#include "collector/cli/analyze.h"

/* 1 with the cross-check in x, 0 when the recording has no Cray PM data; -errno on failure. */
int ana_pm_compute(const struct ana_in *in, const struct sa_report *r, struct pm_xc *x, char *err, size_t errlen)
{
	memset(x, 0, sizeof(*x));
	json_t *cp = in->rec ? json_object_get(json_object_get(in->rec->meta, "extra"), "cray_pm") : NULL;
	json_t *map = json_object_get(cp, "accel_map");
	json_int_t na = json_integer_value(json_object_get(cp, "naccel"));
	if (!cp || na <= 0)
		return 0;
	int32_t m[PM_XC_MAX_ACCEL];
	for (unsigned a = 0; a < PM_XC_MAX_ACCEL; a++) {
		char k[16];
		snprintf(k, sizeof(k), "accel%u", a);
		json_t *g = json_object_get(map, k);
		m[a] = json_is_integer(g) ? (int32_t)json_integer_value(g) : -1;
	}
	int rc = pm_xc_compute(r, in->tr, m, (unsigned)(na > PM_XC_MAX_ACCEL ? PM_XC_MAX_ACCEL : na),
			       in->rec->ngpu > 1, x, err, errlen);
	return rc < 0 ? rc : 1;
}
