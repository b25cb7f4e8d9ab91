/* SPDX-License-Identifier: MIT */
/*
 * spmtap plan: what `record --spm` would program, without touching SPM: the
 * slot plan, the sample size and data rate, the layout descriptor and, on
 * request, the start/stop PM4 programs disassembled.  For users who want to
 * check a counter set before a run, or reuse the programming elsewhere.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/cli/cli.h"
#include "collector/cli/record.h"
#include "spm/pm4.h"

const char cmd_plan_usage[] =
	"usage: spmtap plan --spm NAMES [--interval CYCLES] [--gfx gfx942|gfx90a | --device D]\n"
	"                   [--layout-out L.json] [--pm4]\n"
	"\n"
	"Plan counters as `spmtap record --spm` would, and show the result: every\n"
	"streamed value with its segment and slot, the line counts G and S, the\n"
	"sample size and the data rate at the target's assumed peak SCLK.\n"
	"\n"
	"  --spm NAMES         counters, comma-separated (repeatable)\n"
	"  --interval CYCLES   sample interval in SCLK cycles (default 32768, as record)\n"
	"  --gfx TARGET        plan for a gfx target without a GPU (geometry of a\n"
	"                      representative part: gfx942 MI300X, gfx90a MI210)\n"
	"  --device D          plan for this GPU's geometry (default: GPU 0, or --gfx);\n"
	"                      a list (0,2) or `all` prints one plan per GPU\n"
	"  --layout-out FILE   write the layout descriptor (spmtap-layout v1)\n"
	"  --pm4               print the start and stop PM4 programs, disassembled\n"
	"\n"
	"Exit status: 0 planned; 1 no GPU to plan for or an output error; 64 bad\n"
	"command line or a counter request the planner refuses.\n";

static void print_plan(const struct spm_plan *p, const char *target, double ghz)
{
	printf("target     %s (%u SE per XCC, %u CUs per SE, %u XCC)\n", target, p->geo.num_se,
	       p->geo.cus_per_se, p->geo.num_xcc);
	printf("interval   %u SCLK cycles", p->interval);
	if (p->interval != p->interval_requested)
		printf(" (requested %u, rounded to a multiple of %u)", p->interval_requested,
		       SPM_INTERVAL_STEP);
	double period_us = p->interval / (ghz * 1e3);
	double mbs = p->sample_bytes / period_us; /* bytes per us = MB/s */
	printf("\nlines      G=%u global, S=%u per SE -> %u bytes per sample per XCC\n",
	       p->global_lines, p->se_lines, p->sample_bytes);
	printf("rate       at %.1f GHz SCLK (assumed): %.2f us per sample, %.1f MB/s per XCC, "
	       "%.1f MB/s for %u XCC\n", ghz, period_us, mbs, mbs * p->geo.num_xcc, p->geo.num_xcc);
	printf("registers  RLC_SPM_PERFMON_CNTL=0x%08x SEGMENT_SIZE=0x%08x", p->perfmon_cntl,
	       p->segment_size);
	if (p->has_core1)
		printf(" SEGMENT_SIZE_CORE1=0x%08x", p->segment_size_core1);
	printf("\n\n  %-24s %-5s %-6s %5s %7s %7s %8s\n", "counter", "block", "seg", "event",
	       "slot", "hi_slot", "muxsel");
	for (size_t i = 0; i < p->ncounters; i++) {
		const struct spm_plan_counter *c = &p->counters[i];
		char hi[16] = "-";
		if (c->hi_slot >= 0)
			snprintf(hi, sizeof(hi), "%d", c->hi_slot);
		printf("  %-24s %-5s %-6s %5u %7u %7s   0x%04x\n", c->name,
		       spm_block_info(c->block)->name, spm_segment_name(c->segment), c->event, c->slot,
		       hi, c->muxsel);
	}
}

static int print_pm4(const struct spm_plan *p)
{
	struct spm_pm4 start, stop;
	spm_pm4_init(&start);
	spm_pm4_init(&stop);
	int rc = spm_pm4_build_start(p, &start);
	if (!rc)
		rc = spm_pm4_build_stop(p, &stop);
	char *a = rc ? NULL : spm_pm4_disasm(start.dw, start.n);
	char *b = rc ? NULL : spm_pm4_disasm(stop.dw, stop.n);
	if (a && b)
		printf("\nstart program (%zu dwords):\n%s\nstop program (%zu dwords):\n%s", start.n, a,
		       stop.n, b);
	else
		fprintf(stderr, "spmtap plan: cannot encode the PM4 programs: %s\n",
			spmtap_strerror(rc ? rc : -ENOMEM));
	free(a);
	free(b);
	spm_pm4_fini(&start);
	spm_pm4_fini(&stop);
	return a && b ? EXIT_OK : EXIT_FAIL;
}

/* What every plan of one command line shares, and the layout descriptor the plans agree on. */
struct plan_out {
	const char **list;
	size_t n;
	uint32_t interval;
	const char *layout_out;
	bool pm4;
	char *layout; /* the first plan's descriptor (with --layout-out) */
	char first[128]; /* its target, for the message when another plan's differs */
};

/* Plan, print, warn; the layout descriptor kept for --layout-out.  An exit status. */
static int plan_one(struct plan_out *o, const char *gfx, const struct spm_geometry *geo, enum spm_gfx family,
		    const char *target)
{
	struct spm_plan *p = NULL;
	int st = cli_make_plan("plan", gfx, geo, o->list, o->n, o->interval, &p);
	if (st != EXIT_OK)
		return st;
	print_plan(p, target, cli_sclk_ghz(family));
	/* Said before any run: saturation the catalog can predict, a rate above the estimate. */
	char warn[4096];
	if (spm_plan_warnings(p, cli_sclk_ghz(family), 0, warn, sizeof(warn))) {
		fflush(stdout);
		for (char *save = NULL, *l = strtok_r(warn, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
			fprintf(stderr, "spmtap plan: warning: %s\n", l);
	}
	if (o->layout_out) {
		/* One file describes one stream's bytes: GPUs that lay them out differently need one each. */
		char *text = spm_plan_layout_dumps(p);
		if (!text) {
			fprintf(stderr, "spmtap plan: out of memory\n");
			st = EXIT_FAIL;
		} else if (!o->layout) {
			o->layout = text;
			snprintf(o->first, sizeof(o->first), "%s", target);
		} else {
			if (strcmp(text, o->layout)) {
				fprintf(stderr, "spmtap plan: --layout-out: %s and %s lay the samples out differently; "
						"give --device one of them\n", o->first, target);
				st = EXIT_USAGE;
			}
			free(text);
		}
	}
	if (st == EXIT_OK && o->pm4)
		st = print_pm4(p);
	spm_plan_free(p);
	return st;
}

int cmd_plan(int argc, char **argv)
{
	enum { O_SPM = 256, O_INTERVAL, O_GFX, O_DEVICE, O_LAYOUT, O_PM4, O_INTERVAL_UNIT, O_BETA, O_PMC };
	static const struct option opts[] = {
		{ "spm", required_argument, NULL, O_SPM },
		{ "interval", required_argument, NULL, O_INTERVAL },
		/* rocprofv3's names (rocprof.c) */
		{ "spm-sample-interval", required_argument, NULL, O_INTERVAL },
		{ "spm-sample-interval-unit", required_argument, NULL, O_INTERVAL_UNIT },
		{ "spm-beta-enabled", no_argument, NULL, O_BETA },
		{ "pmc", required_argument, NULL, O_PMC },
		{ "gfx", required_argument, NULL, O_GFX },
		{ "device", required_argument, NULL, O_DEVICE },
		{ "layout-out", required_argument, NULL, O_LAYOUT },
		{ "pm4", no_argument, NULL, O_PM4 },
		{ NULL, 0, NULL, 0 },
	};
	const char *gfx = NULL, *device = NULL, *layout_out = NULL;
	bool pm4 = false;
	uint32_t interval = REC_INTERVAL_DEFAULT;
	char *names = NULL;
	int c, st = EXIT_OK;
	optind = 1;
	/* "+": a word that is not an option ends the options (an error below), so --spm's words stay put. */
	while (st == EXIT_OK && (c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (c) {
		case O_SPM:
			if (cli_spm_names(argc, argv, &optind, optarg, &names) < 0)
				st = EXIT_FAIL;
			break;
		case O_INTERVAL:
			st = cli_parse_interval("plan", optarg, &interval);
			break;
		case O_INTERVAL_UNIT:
			st = cli_spm_interval_unit("plan", optarg);
			break;
		case O_BETA: cli_beta_flag(argc, argv, &optind); break;
		case O_PMC: st = cli_pmc_refused("plan"); break;
		case O_GFX: gfx = optarg; break;
		case O_DEVICE: device = optarg; break;
		case O_LAYOUT: layout_out = optarg; break;
		case O_PM4: pm4 = true; break;
		default:
			fputs(cmd_plan_usage, stderr);
			st = EXIT_USAGE;
		}
	}
	if (st == EXIT_OK && optind < argc) {
		fprintf(stderr, "spmtap plan: unexpected argument '%s'\n", argv[optind]);
		st = EXIT_USAGE;
	}
	if (st == EXIT_OK && !names) {
		fprintf(stderr, "spmtap plan: --spm NAMES is required (see `spmtap list --counters`)\n");
		st = EXIT_USAGE;
	}
	if (st == EXIT_OK && gfx && device) {
		fprintf(stderr, "spmtap plan: give --gfx or --device, not both\n");
		st = EXIT_USAGE;
	}
	const char *list[REC_MAX_COUNTERS];
	size_t n = 0;
	for (char *save = NULL, *tok = st == EXIT_OK ? strtok_r(names, ",", &save) : NULL; tok;
	     tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		if (*tok && n < REC_MAX_COUNTERS)
			list[n++] = tok;
	}
	if (st == EXIT_OK && !n) {
		fprintf(stderr, "spmtap plan: --spm needs at least one counter name\n");
		st = EXIT_USAGE;
	}

	struct plan_out out = { .list = list, .n = n, .interval = interval, .layout_out = layout_out, .pm4 = pm4 };
	struct cli_target t = { 0 };
	if (st == EXIT_OK && gfx) {
		struct spm_geometry geo;
		enum spm_gfx family = SPM_GFX_NONE;
		const char *part;
		char target[256];
		st = cli_gfx_geometry("plan", gfx, &geo, &family, &part);
		snprintf(target, sizeof(target), "%s, geometry of %s", gfx, part);
		if (st == EXIT_OK)
			st = plan_one(&out, gfx, &geo, family, target);
	} else if (st == EXIT_OK) {
		uint32_t gpus[CLI_MAX_GPUS];
		size_t ngpus = 0;
		st = cli_target_devices(&t, "plan");
		if (st == EXIT_OK && !t.ndev) {
			fprintf(stderr, "spmtap plan: no GPU found; plan for a target without a GPU with --gfx gfx942 "
					"or --gfx gfx90a\n");
			st = EXIT_FAIL;
		}
		if (st == EXIT_OK && cli_parse_devices(&t, "plan", device ? device : "0", gpus, CLI_MAX_GPUS,
						       &ngpus) < 0)
			st = EXIT_USAGE;
		/* One plan per GPU asked for (`--device all` as record takes it), a blank line apart. */
		for (size_t k = 0; k < ngpus && st == EXIT_OK; k++) {
			const struct spm_device *d = &t.devs[gpus[k]];
			struct spm_geometry geo;
			enum spm_gfx family = SPM_GFX_NONE;
			char err[SPM_ERRLEN], label[128];
			if (spm_geometry_from_device(d, &geo, &family, err, sizeof(err)) < 0) {
				fprintf(stderr, "spmtap plan: %s\n", err);
				st = EXIT_FAIL;
				break;
			}
			if (k)
				printf("\n");
			st = plan_one(&out, d->gfx, &geo, family, spm_device_label(d, label, sizeof(label)));
		}
	}
	if (st == EXIT_OK && out.layout) {
		FILE *f = fopen(layout_out, "we");
		if (!f || fputs(out.layout, f) < 0 || fputc('\n', f) < 0 || fclose(f)) {
			fprintf(stderr, "spmtap plan: %s: %s\n", layout_out, strerror(errno));
			st = EXIT_FAIL;
		} else {
			printf("\nlayout descriptor written to %s\n", layout_out);
		}
	}
	free(out.layout);
	cli_target_free(&t);
	free(names);
	return st;
}
