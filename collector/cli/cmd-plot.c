/* SPDX-License-Identifier: MIT */
/* spmtap plot (a recording's figures) and spmtap export (its sensor trace). */
#include <getopt.h>
#include <stdio.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/figure.h"
#include "collector/analysis/recording.h"
#include "collector/analysis/report.h"
#include "collector/cli/cli.h"

const char cmd_plot_usage[] =
	"usage: spmtap plot RECORDING -o FILE.{svg,png,pdf} [--phase NAME]... [--size WxH]\n"
	"\n"
	"Draw a recording (record -d DIR -f csv): one figure per GPU with its SPM\n"
	"counters as rates (per ms, summed over the XCCs), each in its own panel,\n"
	"and its power below (derived from the energy counter, and as the sensors\n"
	"report it) on one time axis; the phases shaded and each power signal's\n"
	"confidence window per phase marked (docs/plots.md, docs/analysis.md).\n"
	"The format follows FILE's extension.  With several GPUs each goes to\n"
	"FILE-gpuN.ext.\n"
	"\n"
	"  -o, --output FILE   the figure (.svg, .png or .pdf)\n"
	"  --phase NAME        shade only phases named NAME (or starting with\n"
	"                      PREFIX when given as PREFIX*); repeatable.  Without\n"
	"                      it every phase but those named idle is shaded, up\n"
	"                      to 200\n"
	"  --size WxH          canvas size in px (default 1200 wide, 240 per panel)\n"
	"\n"
	"Exit status: 0 drawn; 1 unreadable recording, nothing to draw, or an\n"
	"output error; 64 bad command line.\n";

const char cmd_export_usage[] =
	"usage: spmtap export --sensor-trace OUT.csv RECORDING\n"
	"\n"
	"Write a recording's power and energy series as a spmtap-sensor-trace v1\n"
	"CSV (docs/formats/sensor-trace.md): energy as NAME[J], power readings as\n"
	"NAME[W], each with NAME[ts_ns] from the sensor's own timestamp when the\n"
	"source has one.  `spmtap characterize` and `spmtap report` take it with\n"
	"--trace, like a trace converted from PAPI or AMD SMI logs.  RECORDING is\n"
	"a directory holding one recording (record -d DIR -f csv), DIR/NAME, or\n"
	"DIR/NAME_meta.json.  OUT.csv `-` is standard output.\n"
	"\n"
	"Exit status: 0 written; 1 unreadable recording or output error; 64 bad\n"
	"command line.\n";

/* FILE.ext -> FILE-gpuN.ext for the figures of a recording with several GPUs. */
static void per_gpu_path(const char *out, uint32_t gpu, char *buf, size_t len)
{
	const char *dot = strrchr(out, '.'), *slash = strrchr(out, '/');
	if (!dot || (slash && dot < slash))
		dot = out + strlen(out);
	snprintf(buf, len, "%.*s-gpu%u%s", (int)(dot - out), out, gpu, dot);
}

/* The recording's sensor trace and its report (NULL, NULL without sensors). */
int cli_rec_analysis(const struct recording *r, struct sa_trace **tr, struct sa_report **rep, char *err,
		     size_t errlen)
{
	*rep = NULL;
	int rc = rec_trace(r, tr, err, errlen);
	if (rc == -ENOENT)
		return 0;
	if (!rc)
		rc = sa_report_compute(*tr, &r->phases, rep, err, errlen);
	if (rc) {
		sa_trace_free(*tr);
		*tr = NULL;
	}
	return rc;
}

int cmd_plot(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "phase", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL;
	const char *phase[64];
	struct fig_opts fo = { .phase = phase };
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'p':
			if (fo.nphase == 64) {
				fputs("spmtap plot: --phase: at most 64\n", stderr);
				return EXIT_USAGE;
			}
			phase[fo.nphase++] = optarg;
			break;
		case 's':
			if (sscanf(optarg, "%dx%d", &fo.width, &fo.height) != 2 || fo.width < 200 || fo.height < 100) {
				fprintf(stderr, "spmtap plot: --size %s: expected WxH, e.g. 1600x1200\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h': fputs(cmd_plot_usage, stdout); return EXIT_OK;
		default: fputs(cmd_plot_usage, stderr); return EXIT_USAGE;
		}
	}
	if (!out || optind != argc - 1) {
		fputs(cmd_plot_usage, stderr);
		return EXIT_USAGE;
	}
	char err[512];
	enum plot_format fmt;
	if (plot_format_from_path(out, &fmt, err, sizeof(err)) < 0) {
		fprintf(stderr, "spmtap plot: %s\n", err);
		return EXIT_USAGE;
	}
	struct recording *r;
	if (rec_load(argv[optind], &r, err, sizeof(err)) < 0) {
		fprintf(stderr, "spmtap plot: %s\n", err);
		return EXIT_FAIL;
	}
	struct sa_trace *tr;
	struct sa_report *rep;
	int st = EXIT_OK;
	if (cli_rec_analysis(r, &tr, &rep, err, sizeof(err)) < 0) {
		fprintf(stderr, "spmtap plot: %s\n", err);
		st = EXIT_FAIL;
	}
	for (uint32_t i = 0; st == EXIT_OK && i < r->ngpu; i++) {
		struct plot_figure *f;
		struct fig_data *d;
		char note[256], path[4096];
		if (r->ngpu > 1)
			per_gpu_path(out, r->gpu[i].index, path, sizeof(path));
		else
			snprintf(path, sizeof(path), "%s", out);
		if (fig_build(r, r->gpu[i].index, tr, rep, &fo, &f, &d, note, sizeof(note), err, sizeof(err)) < 0 ||
		    plot_render_file(f, path, err, sizeof(err)) < 0) {
			fprintf(stderr, "spmtap plot: %s\n", err);
			st = EXIT_FAIL;
		} else {
			fprintf(stderr, "spmtap plot: wrote %s%s%s%s\n", path, note[0] ? " (" : "", note, note[0] ? ")" : "");
		}
		plot_figure_free(f);
		fig_data_free(d);
	}
	if (st == EXIT_OK && !r->ngpu) {
		fprintf(stderr, "spmtap plot: %s holds no GPU data\n", r->base);
		st = EXIT_FAIL;
	}
	sa_report_free(rep);
	sa_trace_free(tr);
	rec_free(r);
	return st;
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sensor-trace", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 't': out = optarg; break;
		case 'h': fputs(cmd_export_usage, stdout); return EXIT_OK;
		default: fputs(cmd_export_usage, stderr); return EXIT_USAGE;
		}
	}
	if (!out || optind != argc - 1) {
		fputs(cmd_export_usage, stderr);
		return EXIT_USAGE;
	}
	struct recording *r;
	char err[512];
	if (rec_load(argv[optind], &r, err, sizeof(err)) < 0) {
		fprintf(stderr, "spmtap export: %s\n", err);
		return EXIT_FAIL;
	}
	int rc = rec_sensor_trace_write(r, out, err, sizeof(err));
	rec_free(r);
	if (rc < 0) {
		fprintf(stderr, "spmtap export: %s\n", err);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}
