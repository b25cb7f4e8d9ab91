/* SPDX-License-Identifier: MIT */
/* spmtap plot and spmtap export: placeholders until the analysis lands. */
#include <stdio.h>

#include "collector/cli/cli.h"

const char cmd_plot_usage[] = "usage: spmtap plot RECORDING -o FILE.{svg,png,pdf}\n";
const char cmd_export_usage[] = "usage: spmtap export --sensor-trace OUT.csv RECORDING\n";

int cmd_plot(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("spmtap plot: not implemented yet\n", stderr);
	return EXIT_FAIL;
}

int cmd_export(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("spmtap export: not implemented yet\n", stderr);
	return EXIT_FAIL;
}
