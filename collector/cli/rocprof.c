/* SPDX-License-Identifier: MIT */
/*
 * rocprofv3's SPM flags, so that its documented command line runs with
 * `spmtap record` in place of `rocprofv3`:
 *   rocprofv3 --spm-beta-enabled --spm SQ_CYCLES SQ_WAVES \
 *     --spm-sample-interval-unit sclk_cycles --spm-sample-interval 4096 -- ./app
 * Its --spm takes counter names as separate words (argparse's nargs='+'),
 * which getopt would read as the application; the interval is in SCLK cycles
 * (the only unit rocprofv3 accepts); the beta opt-in has no meaning here.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "collector/cli/cli.h"

/* TCC_HIT, TCC_HIT[3], or such names joined by commas; nothing else (an app, a path, an option). */
bool cli_counter_word(const char *s)
{
	if (!s || !*s)
		return false;
	for (;;) {
		if (!isupper((unsigned char)*s))
			return false;
		while (isupper((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '_')
			s++;
		if (*s == '[') {
			if (!isdigit((unsigned char)*++s))
				return false;
			while (isdigit((unsigned char)*s))
				s++;
			if (*s++ != ']')
				return false;
		}
		if (!*s)
			return true;
		if (*s++ != ',')
			return false;
	}
}

/* *list gains ",add" (or becomes "add"): repeated --spm options and their words make one list. */
static int join(char **list, const char *add)
{
	size_t old = *list ? strlen(*list) : 0;
	char *s = realloc(*list, old + strlen(add) + 2);
	if (!s)
		return -ENOMEM;
	if (old)
		s[old++] = ',';
	strcpy(s + old, add);
	*list = s;
	return 0;
}

int cli_spm_names(int argc, char **argv, int *optind_, const char *arg, char **list)
{
	int rc = join(list, arg);
	for (; !rc && *optind_ < argc && cli_counter_word(argv[*optind_]); (*optind_)++)
		rc = join(list, argv[*optind_]);
	return rc;
}

int cli_spm_interval_unit(const char *cmd, const char *unit)
{
	if (!strcasecmp(unit, "sclk_cycles") || !strcasecmp(unit, "sclk") || !strcasecmp(unit, "cycles"))
		return EXIT_OK;
	fprintf(stderr, "spmtap %s: --spm-sample-interval-unit %s: the SPM interval counts SCLK cycles "
			"(sclk_cycles, rocprofv3's only unit); `spmtap plan --spm NAMES --interval N` prints the "
			"period in us\n", cmd, unit);
	return EXIT_USAGE;
}

void cli_beta_flag(int argc, char **argv, int *optind_)
{
	/* `--spm-beta-enabled 1` appears in AMD's examples: a boolean word after it is part of it. */
	static const char *const words[] = { "1", "0", "true", "false", "yes", "no", "on", "off" };
	if (*optind_ >= argc)
		return;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcasecmp(argv[*optind_], words[i])) {
			(*optind_)++;
			return;
		}
}

int cli_pmc_refused(const char *cmd)
{
	fprintf(stderr, "spmtap %s: --pmc is rocprofv3's counting per kernel dispatch; spmtap streams "
			"counters over time: --spm NAMES (the same names, `spmtap list --counters`), and gives "
			"each kernel's share of them from the stream (docs/howto-kernels.md)\n", cmd);
	return EXIT_USAGE;
}
