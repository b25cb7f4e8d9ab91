/* SPDX-License-Identifier: MIT */
/*
 * Times typed on the command line: one parser for every duration and period
 * option, so `--duration 2s`, `--duration 500ms` and `--smi-interval 10ms`
 * read the same way (rocprofv3 and perf users type units by habit).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/cli/cli.h"

static const struct {
	const char *suffix;
	double ns;
} time_units[] = {
	{ "ns", 1 }, { "us", 1e3 }, { "\xc2\xb5s", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
	{ "sec", 1e9 }, { "m", 60e9 }, { "min", 60e9 }, { "h", 3600e9 },
};

int cli_parse_time(const char *s, double bare_ns, double *ns)
{
	char *end;
	if (!s || !*s)
		return -1;
	double v = strtod(s, &end);
	if (end == s || !isfinite(v) || v < 0)
		return -1;
	double mul = 0;
	if (!*end) {
		mul = bare_ns;
	} else {
		for (size_t i = 0; i < sizeof(time_units) / sizeof(time_units[0]); i++)
			if (!strcmp(end, time_units[i].suffix))
				mul = time_units[i].ns;
	}
	if (!mul || !isfinite(v * mul))
		return -1;
	*ns = v * mul;
	return 0;
}

int cli_parse_interval(const char *cmd, const char *s, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(s, &end, 0);
	if (end == s || *end || errno || s[0] == '-' || n > UINT32_MAX) {
		double ns;
		if (end != s && *end && cli_parse_time(s, 1, &ns) == 0)
			/* A time: the hardware counts SCLK cycles, and SCLK varies; say how to see the period. */
			fprintf(stderr, "spmtap %s: --interval %s: the SPM interval counts SCLK cycles, not time "
					"(%u..%u in steps of %u); `spmtap plan --spm NAMES --interval N` prints "
					"the period in us\n", cmd, s, SPM_INTERVAL_MIN, SPM_INTERVAL_MAX,
				SPM_INTERVAL_STEP);
		else
			fprintf(stderr, "spmtap %s: --interval %s: expected SCLK cycles, %u..%u in steps of %u\n",
				cmd, s, SPM_INTERVAL_MIN, SPM_INTERVAL_MAX, SPM_INTERVAL_STEP);
		return EXIT_USAGE;
	}
	/* Checked here, as typed (0 is not "the default"), before any GPU is opened. */
	char err[SPM_ERRLEN];
	uint32_t rounded;
	if (spm_interval_round((uint32_t)n, &rounded, err, sizeof(err)) < 0) {
		fprintf(stderr, "spmtap %s: --interval %s: %s\n", cmd, s, err);
		return EXIT_USAGE;
	}
	*out = (uint32_t)n;
	return EXIT_OK;
}
