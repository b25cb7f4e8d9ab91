/* SPDX-License-Identifier: MIT */
/* spmtap characterize and spmtap report: placeholders until the analysis lands. */
#include <stdio.h>

#include "collector/cli/cli.h"

const char cmd_characterize_usage[] = "usage: spmtap characterize --trace T.csv --phases P.csv --json OUT.json\n";
const char cmd_report_usage[] = "usage: spmtap report --trace T.csv --phases P.csv --json OUT.json\n";

int cmd_characterize(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("spmtap characterize: not implemented yet\n", stderr);
	return EXIT_FAIL;
}

int cmd_report(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("spmtap report: not implemented yet\n", stderr);
	return EXIT_FAIL;
}
