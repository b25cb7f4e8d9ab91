/* SPDX-License-Identifier: MIT */
/*
 * spmtap emulate PROFILE [--gen A|B] -- CMD [ARGS]: any program on the
 * emulated node (rocminfo, rocm-smi, a PAPI tool, one's own HSA program),
 * through the emulator's launcher (emulate.c, docs/cli/spmtap-emulate.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/cli/cli.h"

const char cmd_emulate_usage[] =
	"usage: spmtap emulate PROFILE [--gen A|B] -- CMD [ARGS...]\n\n"
	"Run CMD on the emulated node PROFILE (mi300a, mi300x, mi250x, mi210; NAME:CARDS and\n"
	"comma lists, e.g. mi250x:2 or mi300a,mi210): a temporary KFD and DRM tree with the\n"
	"emulator preloaded, so that libhsakmt, ROCr, ROCm SMI and spmtap see those GPUs.\n\n"
	"  --gen A|B   the emulated kernel's SPM generation (default: the profile's)\n\n"
	"Every process CMD starts ends when CMD ends or when this spmtap dies (by any signal):\n"
	"SIGTERM, then SIGKILL after SPMTAP_EMU_KILL_GRACE_MS (default 5000).  The temporary\n"
	"tree is removed; trees of sessions that died are removed at the next start.\n"
	"Exit status: CMD's (128+N when a signal N killed it); 64 for a bad PROFILE.\n";

int cmd_emulate(int argc, char **argv)
{
	const char *profile = NULL, *gen = NULL;
	int i = 1;
	for (; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--gen") || !strncmp(argv[i], "--gen=", 6)) {
			gen = argv[i][5] == '=' ? argv[i] + 6 : i + 1 < argc ? argv[++i] : "";
			if (strcmp(gen, "A") && strcmp(gen, "B")) {
				fprintf(stderr, "spmtap emulate: --gen '%s': the kernel generation is A or B\n", gen);
				return EXIT_USAGE;
			}
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "spmtap emulate: unknown option '%s'\n%s", argv[i], cmd_emulate_usage);
			return EXIT_USAGE;
		} else if (!profile) {
			profile = argv[i];
		} else {
			/* `spmtap emulate mi210 rocminfo`: the command must follow "--", so options stay ours. */
			fprintf(stderr, "spmtap emulate: '%s': put the command after '--' (spmtap emulate %s -- %s)\n",
				argv[i], profile, argv[i]);
			return EXIT_USAGE;
		}
	}
	if (!profile || i + 1 >= argc) {
		fprintf(stderr, "%s", cmd_emulate_usage);
		return EXIT_USAGE;
	}
	const char *active = getenv("SPMTAP_EMU_ACTIVE");
	if (active && *active) {
		fprintf(stderr, "spmtap emulate: already on an emulated node (--emulate, or SPMTAP_EMU_ACTIVE is set)\n");
		return EXIT_USAGE;
	}
	return emulate_exec("emulate", profile, gen, argv + i + 1);
}
