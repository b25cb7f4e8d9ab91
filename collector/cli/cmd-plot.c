/* SPDX-License-Identifier: MIT */
/* spmtap plot (a recording's figures) and spmtap export (its sensor trace). */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/analysis/figure.h"
#include "collector/analysis/phase_counters.h"
#include "collector/analysis/recording.h"
#include "collector/analysis/report.h"
#include "collector/cli/analyze-truth.h"
#include "collector/cli/cli.h"
#include "log.h"

const char cmd_plot_usage[] =
	"usage: spmtap plot RECORDING -o FILE.{svg,png,pdf} [--phase NAME]... [--size WxH]\n"
	"                   [--range FROM:TO] [--no-kernels]\n"
	"\n"
	"Draw a recording (record -d DIR -f csv or sqlite): one figure per GPU, SPM\n"
	"counters as rates (per ms, summed over the XCCs), each in its own panel,\n"
	"and its power below (derived from the energy counter, and as the sensors\n"
	"report it) on one time axis; the phases shaded, a colour per phase name,\n"
	"and each power signal's confidence window per phase marked\n"
	"(docs/plots.md, docs/analysis.md).  Nothing is drawn where the recording\n"
	"has no data: lost stretches break the lines and are hatched \"lost\",\n"
	"saturated counter samples are hatched \"saturated\" (a counter saturated\n"
	"throughout says so), and a sensor's line ends at its last reading.\n"
	"When the recording has the application's kernel dispatches (record ...\n"
	"-- APP), a track per queue under the panels shows each dispatch, named\n"
	"where the name fits, coloured per kernel name with a key.\n"
	"The format follows FILE's extension.  With several GPUs each goes to\n"
	"FILE-gpuN.ext.\n"
	"\n"
	"  -o, --output FILE   the figure (.svg, .png or .pdf)\n"
	"  --phase NAME        shade only phases named NAME (or starting with\n"
	"                      PREFIX when given as PREFIX*); repeatable.  Without\n"
	"                      it every phase but those named idle is shaded, up\n"
	"                      to 200\n"
	"  --size WxH          canvas size in px (default 1200 wide, 240 per panel)\n"
	"  --range FROM:TO     draw only this time range, from the recording's start\n"
	"                      (ms, or with a unit: 150ms:210ms, 0.15s:0.21s)\n"
	"  --no-kernels        no dispatch tracks\n"
	"  --node N            a merged job recording (spmtap merge's .db): draw node N\n"
	"                      on the job's timeline (it needs one)\n"
	ANA_ACCEPT_USAGE
	"\n"
	"RECORDING is a CSV or SQLite recording (record -f csv or -f sqlite): DIR,\n"
	"DIR/NAME, NAME_meta.json or NAME.db; what its files hold against its\n"
	"metadata is noted on standard error first.\n"
	"Exit status: 0 drawn; 1 unreadable recording, nothing to draw, or an\n"
	"output error; 64 bad command line; 65 the recording is truncated or\n"
	"disagrees with its metadata (what is there is still drawn).\n";

const char cmd_export_usage[] =
	"usage: spmtap export --sensor-trace OUT.csv RECORDING\n"
	"       spmtap export --metric-series OUT.csv RECORDING [--metric NAME=EXPR]...\n"
	"                     [--metrics FILE]... [--no-builtin-metrics]\n"
	"\n"
	"--sensor-trace: a recording's power and energy series as a\n"
	"spmtap-sensor-trace v1 CSV (docs/formats/sensor-trace.md): energy as\n"
	"NAME[J], power readings as NAME[W], each with NAME[ts_ns] from the\n"
	"sensor's own timestamp when the source has one.  `spmtap characterize`\n"
	"and `spmtap report` take it with --trace, like a trace converted from\n"
	"PAPI or AMD SMI logs.\n"
	"--metric-series: derived metrics sample by sample (docs/metrics.md),\n"
	"gpu,host_ns,<metrics>: the built-ins the recording's counters allow and\n"
	"those given; a missing value is an empty cell.\n"
	"\n"
	"RECORDING is a directory holding one recording (record -d DIR -f csv or\n"
	"-f sqlite), DIR/NAME, DIR/NAME_meta.json or DIR/NAME.db; what its files\n"
	"hold against its metadata is noted on standard error first.  OUT.csv `-`\n"
	"is standard output.\n"
	ANA_ACCEPT_USAGE
	"\n"
	"Exit status: 0 written; 1 unreadable recording, a metric that does not\n"
	"compile, or an output error; 64 bad command line; 65 the recording is\n"
	"truncated or disagrees with its metadata (what is there is still written).\n";

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

static int plot_main(int argc, char **argv);

/* A merged job recording's node (--node N, report-job.c), else the recording as given. */
int cmd_plot(int argc, char **argv)
{
	char *keep = NULL;
	char **nv = argv;
	int jrc = cli_job_node("plot", &argc, &nv, &keep);
	if (jrc > 0)
		return jrc;
	int rc = plot_main(argc, nv);
	if (nv != argv)
		free(nv);
	free(keep);
	return rc;
}

static int plot_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "phase", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ ANA_ACCEPT_OPTION, no_argument, NULL, 'A' },
		{ "no-kernels", no_argument, NULL, 'K' },
		{ "range", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL;
	const char *phase[64];
	struct fig_opts fo = { .phase = phase };
	double range[2] = { NAN, NAN };
	bool accept = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'A': accept = true; break;
		case 'K': fo.no_kernels = true; break;
		case 'R': {
			char a[64], *colon = strchr(optarg, ':');
			double from = NAN, to = NAN;
			if (colon && (size_t)(colon - optarg) < sizeof(a)) {
				memcpy(a, optarg, (size_t)(colon - optarg));
				a[colon - optarg] = 0;
				if (cli_parse_time(a, 1e6, &from) < 0 || cli_parse_time(colon + 1, 1e6, &to) < 0)
					from = to = NAN;
			}
			if (!(to > from)) {
				fprintf(stderr, "spmtap plot: --range %s: expected FROM:TO after the recording's start, "
					"FROM < TO (ms, or with a unit: 150:210, 0.15s:0.21s)\n", optarg);
				return EXIT_USAGE;
			}
			range[0] = from;
			range[1] = to;
			break;
		}
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
	int lrc = rec_load(argv[optind], &r, err, sizeof(err));
	if (lrc < 0)
		return ana_load_failed("plot", lrc, err);
	int truth = ana_truth("plot", r, accept);
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
		json_t *t0 = json_object_get(r->meta, "start_boottime_ns");
		if (!isnan(range[0]) && !json_is_integer(t0)) {
			fprintf(stderr, "spmtap plot: --range: %s's metadata has no start_boottime_ns\n", r->base);
			st = EXIT_FAIL;
			break;
		}
		if (fig_build(r, r->gpu[i].index, tr, rep, &fo, &f, &d, note, sizeof(note), err, sizeof(err)) < 0 ||
		    (!isnan(range[0]) &&
		     plot_figure_set_range(f, json_integer_value(t0) + (int64_t)llround(range[0]),
					   json_integer_value(t0) + (int64_t)llround(range[1]), err, sizeof(err)) < 0) ||
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
	return st == EXIT_OK ? truth : st;
}

/* Every GPU's metrics, sample by sample, as CSV: gpu,host_ns,<metric>... (one header per GPU's set). */
static int write_metric_series(const struct recording *r, const char *const *defs, size_t ndefs,
			       const char *const *files, size_t nfiles, bool no_builtins, const char *out, char *err,
			       size_t errlen)
{
	bool to_stdout = !strcmp(out, "-");
	FILE *f = to_stdout ? stdout : fopen(out, "we");
	if (!f)
		return spmtap_seterr(err, errlen, errno, "%s: %s", out, strerror(errno));
	int rc = 0;
	bool any = false;
	for (uint32_t i = 0; !rc && i < r->ngpu; i++) {
		const struct rec_gpu *g = &r->gpu[i];
		if (!g->nspm || !g->spm[0].ncols)
			continue;
		struct mx_set *m;
		rc = pc_metrics_for(r, g, no_builtins, defs, ndefs, files, nfiles, &m, err, errlen);
		if (rc)
			break;
		size_t nm = mx_set_count(m);
		/* A header before each GPU: GPUs of different targets have different sets. */
		fputs("gpu,host_ns", f);
		for (size_t k = 0; k < nm; k++) {
			struct mx_info info;
			mx_set_info(m, k, &info);
			fprintf(f, ",%s", info.name);
		}
		fputc('\n', f);
		for (size_t n = 0; n < pc_samples(g); n++) {
			int64_t t = 0;
			fprintf(f, "%u", g->index);
			for (size_t k = 0; k < nm; k++) {
				struct mx_value v;
				if (pc_eval_sample(g, m, k, n, &t, &v) < 0)
					v.missing = true;
				if (!k)
					fprintf(f, ",%" PRId64, t);
				if (v.missing)
					fputc(',', f);
				else
					fprintf(f, ",%.10g", v.v);
			}
			if (!nm)
				fprintf(f, ",%" PRId64, g->spm[0].t_ns[n]);
			fputc('\n', f);
		}
		any = true;
		mx_set_free(m);
	}
	if (!rc && !any)
		rc = spmtap_seterr(err, errlen, ENOENT, "%s has no SPM counters to derive metrics from", r->base);
	int werr = ferror(f) ? (errno ? errno : EIO) : 0;
	if ((to_stdout ? fflush(f) : fclose(f)) && !werr)
		werr = errno ? errno : EIO;
	if (!rc && werr)
		rc = spmtap_seterr(err, errlen, werr, "%s: write failed: %s", to_stdout ? "standard output" : out,
				   strerror(werr));
	if (rc && !to_stdout)
		unlink(out);
	return rc;
}

int cmd_export(int argc, char **argv)
{
	enum { O_TRACE = 't', O_SERIES = 256, O_METRIC, O_METRICS, O_NOBUILTIN, O_ACCEPT };
	static const struct option opts[] = {
		{ "sensor-trace", required_argument, NULL, O_TRACE },
		{ "metric-series", required_argument, NULL, O_SERIES },
		{ "metric", required_argument, NULL, O_METRIC },
		{ "metrics", required_argument, NULL, O_METRICS },
		{ "no-builtin-metrics", no_argument, NULL, O_NOBUILTIN },
		{ ANA_ACCEPT_OPTION, no_argument, NULL, O_ACCEPT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL, *series = NULL;
	bool accept = false;
	const char *defs[64], *files[64];
	size_t ndefs = 0, nfiles = 0;
	bool no_builtins = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_TRACE: out = optarg; break;
		case O_SERIES: series = optarg; break;
		case O_METRIC:
		case O_METRICS:
			if ((c == O_METRIC ? ndefs : nfiles) == 64) {
				fputs("spmtap export: at most 64 --metric and 64 --metrics\n", stderr);
				return EXIT_USAGE;
			}
			if (c == O_METRIC)
				defs[ndefs++] = optarg;
			else
				files[nfiles++] = optarg;
			break;
		case O_NOBUILTIN: no_builtins = true; break;
		case O_ACCEPT: accept = true; break;
		case 'h': fputs(cmd_export_usage, stdout); return EXIT_OK;
		default: fputs(cmd_export_usage, stderr); return EXIT_USAGE;
		}
	}
	if (!out == !series || optind != argc - 1 || (out && (ndefs || nfiles || no_builtins))) {
		fputs(cmd_export_usage, stderr);
		return EXIT_USAGE;
	}
	struct recording *r;
	char err[1024];
	int lrc = rec_load(argv[optind], &r, err, sizeof(err));
	if (lrc < 0)
		return ana_load_failed("export", lrc, err);
	int truth = ana_truth("export", r, accept);
	int rc = out ? rec_sensor_trace_write(r, out, err, sizeof(err))
		     : write_metric_series(r, defs, ndefs, files, nfiles, no_builtins, series, err, sizeof(err));
	rec_free(r);
	if (rc < 0) {
		fprintf(stderr, "spmtap export: %s\n", err);
		return EXIT_FAIL;
	}
	return truth;
}
