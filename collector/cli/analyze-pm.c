// SPDX-License-Identifier: MIT
/*
 * `spmtap report` on a recording made with --cray: the PM cross-check
 * (collector/analysis/pm_crosscheck.h) with the accelN -> GPU map of
 * report's --cray-accel-map, else the one the recording's metadata holds
 * (extra.cray_pm.accel_map, from record's --cray-accel-map): the pairing is
 * not documented publicly, and is often found only from the data.
 * Recordings without Cray PM data get nothing.
 */
#include <errno.h>
#include <string.h>

#include "collector/analysis/pm_crosscheck.h"
#include "collector/cli/analyze.h"
#include "collector/lib/smi_cray_pm.h"
#include "log.h"

/* 1 with the cross-check in x, 0 when the recording has no Cray PM data; -errno on failure. */
int ana_pm_compute(const struct ana_in *in, const struct sa_report *r, const char *map_spec, struct pm_xc *x,
		   char *err, size_t errlen)
{
	memset(x, 0, sizeof(*x));
	json_t *cp = in->rec ? json_object_get(json_object_get(in->rec->meta, "extra"), "cray_pm") : NULL;
	json_t *map = json_object_get(cp, "accel_map");
	json_int_t na = json_integer_value(json_object_get(cp, "naccel"));
	if (!cp || na <= 0)
		return 0;
	_Static_assert(PM_XC_MAX_ACCEL == CRAY_PM_MAX_ACCEL, "one accel limit");
	int32_t m[CRAY_PM_MAX_ACCEL];
	if (map_spec) {
		/* The user's pairing now (found from the data, say) replaces the one recorded. */
		int rc = cray_pm_parse_map(map_spec, m, err, errlen);
		if (rc < 0)
			return rc;
		for (unsigned a = 0; a < CRAY_PM_MAX_ACCEL; a++) {
			if (m[a] >= 0 && a >= (unsigned)na)
				return spmtap_seterr(err, errlen, EINVAL,
						     "--cray-accel-map names accel%u, but the recording has %d accel", a,
						     (int)na);
			if (m[a] >= 0 && !rec_gpu(in->rec, (uint32_t)m[a]))
				return spmtap_seterr(err, errlen, EINVAL,
						     "--cray-accel-map: accel%u=gpu%d, but the recording has no GPU %d", a,
						     m[a], m[a]);
		}
	} else {
		for (unsigned a = 0; a < CRAY_PM_MAX_ACCEL; a++) {
			char k[16];
			snprintf(k, sizeof(k), "accel%u", a);
			json_t *g = json_object_get(map, k);
			m[a] = json_is_integer(g) ? (int32_t)json_integer_value(g) : -1;
		}
	}
	int rc = pm_xc_compute(r, in->tr, m, (unsigned)(na > PM_XC_MAX_ACCEL ? PM_XC_MAX_ACCEL : na),
			       in->rec->ngpu > 1, x, err, errlen);
	return rc < 0 ? rc : 1;
}
