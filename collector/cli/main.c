/* SPDX-License-Identifier: MIT */
/*
 * spmtap: the command table, global options and help.  Each command lives
 * in its own cmd-<name>.c as cmd_<name>(argc, argv), argv[0] = its name.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/cli/cli.h"
#include "spm/hsa_lib.h"
#include "collector/cli/cmd-decode.h"
#include "spm/catalog.h"
#include "spmtap.h"

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

static const char help_usage[] = "usage: spmtap help [COMMAND]\n\n"
				 "Without COMMAND: the list of commands.  With it: that command's help,\n"
				 "the same text as `spmtap COMMAND --help`.\n";
static const char version_usage[] = "usage: spmtap version\n\nPrint spmtap's version.\n";

static const struct cli_cmd commands[] = {
	{ "list", cmd_list, "List GPUs and SPM backends (and, with --probe, the SPM generation)",
	  cmd_list_usage },
	{ "record", cmd_record, "Record SPM counters (CSV) or the raw stream to a file",
	  cmd_record_usage },
	{ "plan", cmd_plan, "Show how counters would be programmed, the layout and the PM4",
	  cmd_plan_usage },
	{ "characterize", cmd_characterize,
	  "Characterise power/energy sensors from a recording or a sensor trace (delay, rise, fall, aliasing)",
	  cmd_characterize_usage },
	{ "report", cmd_report, "Per-phase energy, confident power, counters and metrics of a recording or trace",
	  cmd_report_usage },
	{ "plot", cmd_plot, "Draw a recording's counters and power on one time axis (SVG, PNG, PDF)",
	  cmd_plot_usage },
	{ "merge", cmd_merge, "Put a job's node recordings on one timeline (SQLite, Perfetto)", cmd_merge_usage },
	{ "export", cmd_export, "Write a recording's sensor series as a spmtap-sensor-trace v1 CSV",
	  cmd_export_usage },
	{ "job", cmd_job, "Stop a job's recording (record --job), or print SPMTAP_JOB for its application",
	  cmd_job_usage },
	{ "emulate", cmd_emulate, "Run any program on the emulated node (rocminfo, rocm-smi, your HSA app)", cmd_emulate_usage },
	/* usage NULL: the command prints its own help for --help */
	{ "decode", cmd_decode, "Decode a raw container or one XCC's raw stream to CSV", NULL },
	{ "help", cmd_help, "Show help for spmtap or one command", help_usage },
	{ "version", cmd_version, "Print the version", version_usage },
	{ NULL, NULL, NULL, NULL },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: spmtap [--emulate PROFILE] [-v] [--version] [--help] COMMAND [ARGS]\n"
		   "       spmtap COMMAND [ARGS] [--emulate PROFILE]\n\n"
		   "Stream AMD GPU SPM (RLC Streaming Performance Monitor) counters.\n\n"
		   "Commands:\n");
	for (const struct cli_cmd *c = commands; c->name; c++)
		fprintf(f, "  %-13s %s\n", c->name, c->summary);
	fprintf(f, "\nGlobal options:\n"
		   "  --emulate PROFILE  run against the emulated device (e.g. mi300a, mi210,\n"
		   "                     mi250x:2, mi300a,mi210); before or after COMMAND;\n"
		   "                     also SPMTAP_EMULATE=PROFILE\n"
		   "  -v, --verbose      more detail (-vv: debug), including what vendor\n"
		   "                     libraries print (ROCr); also SPMTAP_LOG_LEVEL\n"
		   "  --version          print the version and exit\n"
		   "  -h, --help         this text\n\n"
		   "`spmtap help COMMAND` or `spmtap COMMAND --help` describes a command.\n");
}

static const struct cli_cmd *find(const char *name)
{
	for (const struct cli_cmd *c = commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

static int show_help(const struct cli_cmd *c)
{
	if (c->usage) {
		fputs(c->usage, stdout);
		return EXIT_OK;
	}
	char *argv[] = { (char *)c->name, (char *)"--help", NULL };
	return c->fn(2, argv);
}

static int unknown(const char *name)
{
	fprintf(stderr, "spmtap: '%s' is not a spmtap command.", name);
	const char *best = NULL;
	size_t bestd = 3; /* suggest only close names */
	for (const struct cli_cmd *c = commands; c->name; c++) {
		size_t d = spm_edit_distance(name, strlen(name), c->name, strlen(c->name));
		if (!strncmp(name, c->name, strlen(name)) && strlen(name) >= 2)
			d = 1;
		if (d < bestd) {
			bestd = d;
			best = c->name;
		}
	}
	if (best)
		fprintf(stderr, " Did you mean '%s'?", best);
	fprintf(stderr, " See 'spmtap help'.\n");
	return EXIT_USAGE;
}

static int cmd_help(int argc, char **argv)
{
	if (argc < 2) {
		usage(stdout);
		return EXIT_OK;
	}
	const struct cli_cmd *c = find(argv[1]);
	if (!c)
		return unknown(argv[1]);
	return show_help(c);
}

static int cmd_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("spmtap %s\n", spmtap_version_string());
	return EXIT_OK;
}

/*
 * Global options are taken wherever they stand before a "--" (rocprofv3
 * users put every option after the verb: `spmtap record --emulate mi300a
 * ...`), and removed, so the command's own parser never sees them.  Returns
 * the new argc, or -1 after printing why (*exit_now set to the status).
 */
static int take_globals(int argc, char **argv, const char **emulate, int *verbose, int *exit_now)
{
	int n = 1;
	bool verb = false;
	*exit_now = -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			/* Before the verb it ends the global options; after it, the app's arguments follow. */
			if (!verb)
				i++;
			while (i < argc)
				argv[n++] = argv[i++];
			break;
		}
		if (!strcmp(a, "--emulate")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "spmtap: --emulate needs a PROFILE (mi300a, mi300x, mi250x, mi210)\n");
				*exit_now = EXIT_USAGE;
				return -1;
			}
			*emulate = argv[++i];
			continue;
		}
		if (!strncmp(a, "--emulate=", 10)) {
			*emulate = a + 10;
			continue;
		}
		/* -v / -vv / --verbose anywhere before "--": our info and debug lines, and the
		 * vendor libraries' own output (ROCr's stderr), which is otherwise kept quiet. */
		if (!strcmp(a, "--verbose") || (a[0] == '-' && a[1] == 'v' && strspn(a + 1, "v") == strlen(a + 1))) {
			int lv = a[1] == '-' ? 1 : (int)strlen(a + 1);
			*verbose += lv;
			continue;
		}
		if (!verb) {
			if (!strcmp(a, "--version")) {
				*exit_now = cmd_version(0, NULL);
				return -1;
			}
			if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
				usage(stdout);
				*exit_now = EXIT_OK;
				return -1;
			}
			if (a[0] == '-') {
				fprintf(stderr, "spmtap: unknown option '%s' before the command\n", a);
				usage(stderr);
				*exit_now = EXIT_USAGE;
				return -1;
			}
			verb = true;
		}
		argv[n++] = argv[i];
	}
	argv[n] = NULL;
	return n;
}

int main(int argc, char **argv)
{
	const char *emulate_typed = NULL;
	int exit_now, verbose = 0;
	argc = take_globals(argc, argv, &emulate_typed, &verbose, &exit_now);
	if (verbose > 0)
		/* In the environment, so the emulated child and its tools see it too. */
		setenv("SPMTAP_LOG_LEVEL", verbose > 1 ? "debug" : "info", 1);
	/* ROCr's own "Agent creation failed" lines: logged at info (-v), not on every command. */
	spm_hsa_capture_init_stderr(true);
	const char *emulate = emulate_typed ? emulate_typed : getenv("SPMTAP_EMULATE");
	if (argc < 0)
		return exit_now;
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const struct cli_cmd *c = find(argv[1]);
	if (!c)
		return unknown(argv[1]);
	for (int j = 2; j < argc; j++) {
		if (!strcmp(argv[j], "--"))
			break;
		if (!strcmp(argv[j], "--help") || !strcmp(argv[j], "-h"))
			return show_help(c);
	}
	/*
	 * `emulate` names its own profile: an --emulate typed beside it would nest
	 * one emulated node in another, so it is refused; SPMTAP_EMULATE left in
	 * the shell is not what the user asked for here, so it is ignored.
	 */
	if (c->fn == cmd_emulate) {
		if (emulate_typed) {
			fprintf(stderr, "spmtap emulate: the profile is emulate's own argument; "
					"drop --emulate %s\n", emulate_typed);
			return EXIT_USAGE;
		}
		emulate = NULL;
	}
	if (emulate && *emulate && c->fn != cmd_help && c->fn != cmd_version) {
		int st = emulate_run(emulate, argv);
		if (st >= 0)
			return st;
	}
	/* A file size limit must come back as EFBIG from write(), not kill us
	 * with the output half written. */
	signal(SIGXFSZ, SIG_IGN);
	return c->fn(argc - 1, argv + 1);
}
