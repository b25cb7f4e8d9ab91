/* SPDX-License-Identifier: MIT */
/* Planning counters for a device or a named gfx target: shared by record, plan and list. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "collector/cli/cli.h"

/*
 * Shapes for --gfx without a GPU: the emulator's MI300X (4 SEs per XCC, 38
 * CUs per XCC) and MI210 (8 SEs, 104 CUs).  A real device's topology wins.
 */
static const struct cli_gfx_shape {
	const char *gfx;
	const char *part;
	struct spm_geometry geo;
	double sclk_ghz; /* assumed peak SCLK, SPM.md 6.2: for data rates only */
} shapes[] = {
	{ "gfx942", "MI300X", { .num_se = 4, .num_xcc = 8, .cus_per_se = 10 }, 2.1 },
	{ "gfx90a", "MI210", { .num_se = 8, .num_xcc = 1, .cus_per_se = 13 }, 1.7 },
};

double cli_sclk_ghz(enum spm_gfx gfx)
{
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		enum spm_gfx g;
		if (spm_gfx_parse(shapes[i].gfx, &g, NULL, 0) == 0 && g == gfx)
			return shapes[i].sclk_ghz;
	}
	return 2.0;
}

int cli_gfx_geometry(const char *cmd, const char *gfx, struct spm_geometry *geo,
		     enum spm_gfx *family, const char **part)
{
	char err[SPM_ERRLEN];
	if (spm_gfx_parse(gfx, family, err, sizeof(err)) < 0) {
		fprintf(stderr, "spmtap %s: --gfx: %s\n", cmd, err);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		enum spm_gfx g;
		if (spm_gfx_parse(shapes[i].gfx, &g, NULL, 0) == 0 && g == *family) {
			*geo = shapes[i].geo;
			*part = shapes[i].part;
			return EXIT_OK;
		}
	}
	fprintf(stderr, "spmtap %s: --gfx %s: no default geometry; use --device\n", cmd, gfx);
	return EXIT_USAGE;
}

int cli_make_plan(const char *cmd, const char *gfx, const struct spm_geometry *geo,
		  const char *const *names, size_t n, uint32_t interval, struct spm_plan **out)
{
	char err[SPM_ERRLEN * 2] = "";
	struct spm_plan_request req = {
		.gfx = gfx, .geo = *geo, .counters = names, .ncounters = n, .interval = interval,
	};
	int rc = spm_plan_create(&req, out, err, sizeof(err));
	if (rc == 0)
		return EXIT_OK;
	fprintf(stderr, "spmtap %s: %s\n", cmd, err[0] ? err : spmtap_strerror(rc));
	/* Everything the planner refuses is something the user asked for. */
	return rc == -ENOMEM ? EXIT_FAIL : EXIT_USAGE;
}
