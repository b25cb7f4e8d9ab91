/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the sensor-trace and phases parsers and the
 * analysis behind `spmtap characterize` and `spmtap report`.  The input is
 * a trace, a NUL byte, then phases (no NUL: its first half is the trace).
 * Whatever parses must characterise, report and become JSON: building the
 * JSON fails on a NaN or an infinity (json_real() refuses them), so a
 * non-finite number that leaks into the results aborts here.
 */
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/characterize.h"
#include "collector/analysis/phases.h"
#include "collector/analysis/report.h"
#include "collector/analysis/sensor_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void dump_check(json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	if (!s)
		abort();
	free(s);
	json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	const char *nul = memchr(buf, 0, size);
	size_t tlen = nul ? (size_t)(nul - buf) : size / 2;
	size_t poff = nul ? tlen + 1 : tlen;
	char err[256];
	struct sa_trace *tr;
	struct sa_phases ph;
	int trc = sa_trace_parse(buf, tlen, "t.csv", &tr, err, sizeof(err));
	int prc = sa_phases_parse(buf + poff, size - poff, "p.csv", &ph, err, sizeof(err));
	if (!trc && !prc) {
		struct sa_characterization *c;
		struct sa_report *r;
		json_t *j;
		if (sa_characterize(tr, &ph, &c, err, sizeof(err)))
			abort();
		if (sa_characterization_json(c, &j, err, sizeof(err)))
			abort();
		dump_check(j);
		sa_characterization_free(c);
		if (sa_report_compute(tr, &ph, &r, err, sizeof(err)))
			abort();
		if (sa_report_json(r, &j, err, sizeof(err)))
			abort();
		dump_check(j);
		sa_report_free(r);
	}
	if (!trc)
		sa_trace_free(tr);
	if (!prc)
		sa_phases_free(&ph);
	return 0;
}
