/* SPDX-License-Identifier: MIT */
/*
 * spmtap record: the command line.  Every mode (the tick CSV, the raw
 * container with or without counters, -d/-f outputs, several GPUs, an app)
 * is a session with writers (record-session.c, collector/lib/session.h).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/cli/record.h"
#include "collector/lib/smi_cray_pm.h"
#include "spm/submit.h"
#include "collector/lib/session.h"
#include "collector/lib/writer.h"
#include "spm/plan.h"

const char cmd_record_usage[] =
	"usage: spmtap record --spm NAMES [-d DIR] [-o NAME] [-f csv,perfetto,sqlite,otf2]\n"
	"                     [--device all|LIST] [--smi SENSORS] [options] [-- app args]\n"
	"       spmtap record --spm NAMES [options] [-o FILE.csv]\n"
	"       spmtap record --spm NAMES --raw -o FILE [options]\n"
	"       spmtap record --raw -o FILE [options]\n"
	"\n"
	"Program SPM counters on one GPU and record them until --duration ends or\n"
	"until Ctrl-C / SIGTERM; either way the counters are stopped, the data is\n"
	"drained and the output is complete.\n"
	"\n"
	"  --spm NAMES            counters, comma-separated (repeatable): TCC_HIT sums\n"
	"                         every instance, TCC_HIT[3] is one instance; see\n"
	"                         `spmtap list --counters` and `spmtap plan`; as in\n"
	"                         rocprofv3, more names may follow as words\n"
	"                         (--spm-sample-interval N is --interval N)\n"
	"  --interval CYCLES      sample interval in SCLK cycles, 32..65504 in steps of\n"
	"                         32 (default 32768, see docs/cli/spmtap-record.md)\n"
	"  --per-se               one column per shader engine for SE counters\n"
	"  --per-instance         one column per block instance (no instance sums)\n"
	"  -d, --output-dir DIR   write DIR/NAME_spm.csv, DIR/NAME.pftrace, DIR/NAME.db,\n"
	"                         DIR/NAME.otf2/ (an OTF2 archive directory)\n"
	"                         (created if missing; docs/formats/)\n"
	"  -f, --output-format F  csv, pftrace (or perfetto), sqlite, otf2 (libotf2\n"
	"                         loaded at run time), comma-separated (default csv);\n"
	"                         rocpd and json are refused\n"
	"                         with the reason and what to use instead\n"
	"  --device all|LIST      GPUs: all, or indices/gpu_ids comma-separated\n"
	"  --smi SENSORS          power,energy,temp,activity,clock,all or metric names\n"
	"  --smi-interval T       sensor period, e.g. 1ms, 10ms (default 1ms)\n"
	"  --smi-offset M=V[unit] add V to a sensor (power_avg=30W), comma-separated\n"
	"  --cray                 HPE Cray EX node power (/sys/cray/pm_counters): node,\n"
	"                         cpu, memory, accel power and energy into\n"
	"                         NAME_craypm.csv (docs/power.md)\n"
	"  --cray-interval T      its polling period (default 50ms; it updates ~100ms)\n"
	"  --cray-accel-map MAP   accel0=gpu1,... : which GPU each accelN measures (not\n"
	"                         documented publicly; default: unmapped)\n"
	"  --spm-clock-hz HZ      assumed SPM timestamp rate (default 100000000, the\n"
	"                         GPU reference clock); recorded in every output\n"
	"  -- app args            run the application; record until it exits; exit\n"
	"                         with its status; its spmtap_region_begin/end markers\n"
	"                         become phases in every output (docs/markers.md);\n"
	"                         its kernel dispatches go to NAME_kernels.csv\n"
	"                         (libspmtap-tool.so through HSA_TOOLS_LIB)\n"
	"  --no-kernels           with an app: do not load libspmtap-tool.so into it\n"
	"  --phases FILE          phases (start_ns,end_ns,name CSV) to add to the outputs;\n"
	"                         `--phases emulator`: the emulated workload's load/idle\n"
	"                         schedule, its ground truth (repeatable)\n"
	"  -o, --output FILE      with -d/-f/--smi/--device list/an app: NAME of the\n"
	"                         outputs (default spmtap); otherwise\n"
	"                         CSV of the decoded series (default standard output);\n"
	"                         the layout descriptor goes to FILE's name with\n"
	"                         .layout.json instead of .csv; with --raw: the raw\n"
	"                         container (replaced if it exists)\n"
	"  --raw                  write the raw container (docs/raw-format.md) instead\n"
	"                         of CSV; `spmtap decode` turns it into the same CSV\n"
	"  --duration T           stop after T: 2s, 500ms, 1m (bare: seconds; default:\n"
	"                         until a signal or the app's exit)\n"
	"  --device D             GPU: index (0), gpu_id (0x1234) or gpu_id:0x1234\n"
	"  --spm-backend NAME     hsakmt, kfd or hsa (default: the first usable)\n"
	"  --submitter NAME       how the counter program reaches the GPU: rocr (a ROCr\n"
	"                         queue) or hsakmt (a libhsakmt queue); default: the\n"
	"                         first that works (`spmtap list` says which and why)\n"
	"  --spm-gen A|B|auto     kernel generation; auto probes it (default)\n"
	"  --buffers N            destination buffers, 2..64 (default 3)\n"
	"  --buffer-size BYTES    per buffer, k/M/G suffixes (default 4M per XCC, at\n"
	"                         least 8M: 32M on an MI300X); rounded to\n"
	"                         whole 32-byte lines per XCC region\n"
	"  --spill-mem SIZE       SPM data the decoder has not taken yet is held in\n"
	"                         memory up to SIZE (default 1G or a quarter of the\n"
	"                         RAM, whichever is less), then in the journal\n"
	"                         NAME_journal.raw beside the outputs\n"
	"  --keep-raw             keep the journal after the catch-up\n"
	"  --job DIR              one rank of a job, one rank per node, under mpirun\n"
	"                         or srun (runs spmtap-job, which links MPI): start and\n"
	"                         stop together, node clocks aligned to rank 0, DIR\n"
	"                         the job's control directory; --device defaults to\n"
	"                         all (docs/howto-job.md)\n"
	"  --sync-interval T      with --job: clock sync period (default 10s)\n"
	"\n"
	"CSV: xcc,timestamp,<counters> (docs/cli/spmtap-record.md); timestamps are\n"
	"raw GPU ticks.  A saturated value is an empty cell.\n"
	"\n"
	"Back-pressure: the recorder never waits for an output.  Data the decoder or\n"
	"a writer is not ready for waits in memory (--spill-mem) and then in the\n"
	"journal; after the stop the outputs catch up from it, with a progress line\n"
	"(Ctrl-C again stops the catch-up: the outputs are marked incomplete and the\n"
	"journal is kept for `spmtap decode`).  Samples are lost only when memory\n"
	"and disk cannot take the rate, or the journal cannot be written; the summary\n"
	"says which.\n"
	"\n"
	"Exit status: 0 recording complete (also after Ctrl-C, and also with data\n"
	"loss, which is printed as a warning); 1 device, stream or output error\n"
	"(what was written stays readable); 2 SPM is held by another process;\n"
	"64 bad command line or counter request; 130 the catch-up was stopped by a\n"
	"second signal (outputs incomplete, the rest in the journal).\n";

/* Split the joined names in place; pointers stay valid while spm_names lives. */
static int split_names(struct rec_opts *o)
{
	o->ncounters = 0;
	for (char *save = NULL, *tok = strtok_r(o->spm_names, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ' || *tok == '\t')
			tok++;
		char *e = tok + strlen(tok);
		while (e > tok && (e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		if (!*tok)
			continue;
		if (o->ncounters == REC_MAX_COUNTERS) {
			fprintf(stderr, "spmtap record: --spm: more than %d counters\n",
				REC_MAX_COUNTERS);
			return EXIT_USAGE;
		}
		o->counters[o->ncounters++] = tok;
	}
	if (!o->ncounters) {
		fprintf(stderr, "spmtap record: --spm needs at least one counter name "
				"(see `spmtap list --counters`)\n");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

static int parse_opts(int argc, char **argv, struct rec_opts *o)
{
	enum { O_RAW = 256, O_DEVICE, O_BACKEND, O_GEN, O_BUFFERS, O_BUFSIZE, O_SPM, O_INTERVAL,
	       O_PER_SE, O_PER_INSTANCE, O_DURATION, O_SMI, O_SMI_INTERVAL, O_SMI_OFFSET,
	       O_SPM_CLOCK, O_SUBMITTER, O_PHASES, O_SPILL_MEM, O_KEEP_RAW, O_NO_KERNELS, O_CRAY,
	       O_CRAY_INTERVAL, O_CRAY_MAP,
	       O_JOB, O_SYNC_INTERVAL, O_INTERVAL_UNIT, O_BETA, O_PMC };
	static const struct option opts[] = {
		{ "raw", no_argument, NULL, O_RAW },
		{ "output", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, O_DURATION },
		{ "output-dir", required_argument, NULL, 'd' },
		{ "output-format", required_argument, NULL, 'f' },
		{ "smi", required_argument, NULL, O_SMI },
		{ "smi-interval", required_argument, NULL, O_SMI_INTERVAL },
		{ "smi-offset", required_argument, NULL, O_SMI_OFFSET },
		{ "cray", no_argument, NULL, O_CRAY },
		{ "cray-interval", required_argument, NULL, O_CRAY_INTERVAL },
		{ "cray-accel-map", required_argument, NULL, O_CRAY_MAP },
		{ "spm-clock-hz", required_argument, NULL, O_SPM_CLOCK },
		{ "device", required_argument, NULL, O_DEVICE },
		{ "spm-backend", required_argument, NULL, O_BACKEND },
		{ "submitter", required_argument, NULL, O_SUBMITTER },
		{ "phases", required_argument, NULL, O_PHASES },
		{ "spm-gen", required_argument, NULL, O_GEN },
		{ "buffers", required_argument, NULL, O_BUFFERS },
		{ "buffer-size", required_argument, NULL, O_BUFSIZE },
		{ "spill-mem", required_argument, NULL, O_SPILL_MEM },
		{ "keep-raw", no_argument, NULL, O_KEEP_RAW },
		{ "no-kernels", no_argument, NULL, O_NO_KERNELS },
		{ "job", required_argument, NULL, O_JOB },
		{ "sync-interval", required_argument, NULL, O_SYNC_INTERVAL },
		{ "spm", required_argument, NULL, O_SPM },
		{ "interval", required_argument, NULL, O_INTERVAL },
		/* rocprofv3's names (rocprof.c) */
		{ "spm-sample-interval", required_argument, NULL, O_INTERVAL },
		{ "spm-sample-interval-unit", required_argument, NULL, O_INTERVAL_UNIT },
		{ "spm-beta-enabled", no_argument, NULL, O_BETA },
		{ "pmc", required_argument, NULL, O_PMC },
		{ "per-se", no_argument, NULL, O_PER_SE },
		{ "per-instance", no_argument, NULL, O_PER_INSTANCE },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	char *end;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:d:f:", opts, NULL)) != -1) {
		switch (c) {
		case O_RAW: o->raw = true; break;
		case 'o': o->out = optarg; break;
		case 'f': {
			/* Checked here, so a typo is named before any device is touched. */
			const struct writer_ops *fmts[SESSION_MAX_WRITERS];
			size_t nfmt;
			char err[512];
			if (session_parse_formats(optarg, fmts, &nfmt, err, sizeof(err)) < 0) {
				fprintf(stderr, "spmtap record: -f: %s\n", err);
				return EXIT_USAGE;
			}
			o->formats = optarg;
			break;
		}
		case O_SMI: o->smi = optarg; break;
		case O_SMI_OFFSET: o->smi_offset = optarg; break;
		case O_CRAY: o->cray = true; break;
		case O_CRAY_MAP: {
			int32_t map[CRAY_PM_MAX_ACCEL];
			char err[256];
			if (cray_pm_parse_map(optarg, map, err, sizeof(err)) < 0) {
				fprintf(stderr, "spmtap record: --cray-accel-map: %s\n", err);
				return EXIT_USAGE;
			}
			o->cray_accel_map = optarg;
			o->cray = true;
			break;
		}
		case O_CRAY_INTERVAL: {
			double ns;
			if (cli_parse_time(optarg, 1e6, &ns) < 0 || ns < 1e6) {
				fprintf(stderr, "spmtap record: --cray-interval %s: expected >= 1ms (e.g. 50ms)\n",
					optarg);
				return EXIT_USAGE;
			}
			o->cray_interval_ns = (uint64_t)ns;
			o->cray = true;
			break;
		}
		case O_SMI_INTERVAL: {
			double ns;
			if (cli_parse_time(optarg, 1e6, &ns) < 0 || ns < 1e6) { /* bare: ms, as before */
				fprintf(stderr, "spmtap record: --smi-interval %s: expected >= 1ms (e.g. 1ms, 10ms)\n",
					optarg);
				return EXIT_USAGE;
			}
			o->smi_interval_ns = (uint64_t)ns;
			break;
		}
		case O_SPM_CLOCK:
			o->spm_clock_hz = strtod(optarg, &end);
			if (end == optarg || *end || !(o->spm_clock_hz > 0) || !isfinite(o->spm_clock_hz)) {
				fprintf(stderr, "spmtap record: --spm-clock-hz %s: expected Hz > 0\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'd': {
			/* Always the directory (rocprofv3's -d); an old habit's `-d SEC` gets a hint. */
			struct stat sb;
			double v = strtod(optarg, &end);
			if (end != optarg && !*end && v > 0 && stat(optarg, &sb) < 0)
				fprintf(stderr, "spmtap record: note: -d %s is the output directory "
						"(%s/ is created); for a time limit use --duration %s\n",
					optarg, optarg, optarg);
			o->dir = optarg;
			break;
		}
		case O_DURATION: {
			double ns;
			if (cli_parse_time(optarg, 1e9, &ns) < 0 || !(ns > 0)) {
				fprintf(stderr, "spmtap record: --duration %s: expected a time > 0 "
						"(seconds, or with a unit: 2s, 500ms, 1m)\n", optarg);
				return EXIT_USAGE;
			}
			o->duration = ns / 1e9;
			break;
		}
		case O_DEVICE: o->device = optarg; break;
		case O_BACKEND: o->backend = optarg; break;
		case O_PHASES:
			if (o->nphases == sizeof(o->phases) / sizeof(o->phases[0])) {
				fprintf(stderr, "spmtap record: --phases: at most %zu\n", o->nphases);
				return EXIT_USAGE;
			}
			o->phases[o->nphases++] = optarg;
			break;
		case O_SUBMITTER:
			if (!spm_submitter_find(optarg)) {
				fprintf(stderr, "spmtap record: --submitter %s: expected one of %s\n", optarg,
					spm_submitter_names());
				return EXIT_USAGE;
			}
			o->submitter = optarg;
			break;
		case O_GEN:
			if (!strcasecmp(optarg, "A"))
				o->gen = SPM_GEN_A;
			else if (!strcasecmp(optarg, "B"))
				o->gen = SPM_GEN_B;
			else if (!strcasecmp(optarg, "auto"))
				o->gen = SPM_GEN_UNKNOWN;
			else {
				fprintf(stderr, "spmtap record: --spm-gen %s: expected A, B or auto\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case O_BUFFERS: {
			unsigned long n = strtoul(optarg, &end, 10);
			if (end == optarg || *end || n < 2 || n > FEEDER_MAX_BUFFERS) {
				fprintf(stderr, "spmtap record: --buffers %s: expected 2..%u\n", optarg,
					FEEDER_MAX_BUFFERS);
				return EXIT_USAGE;
			}
			o->nbuffers = (uint32_t)n;
			break;
		}
		case O_BUFSIZE:
			o->size_given = true;
			if (cli_parse_size(optarg, &o->buffer_size) < 0 || !o->buffer_size) {
				fprintf(stderr, "spmtap record: --buffer-size %s: expected bytes, e.g. 8M or 512k\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case O_SPILL_MEM:
			if (cli_parse_size(optarg, &o->spill_mem) < 0 || !o->spill_mem) {
				fprintf(stderr, "spmtap record: --spill-mem %s: expected bytes, e.g. 1G or 256M\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case O_KEEP_RAW: o->keep_raw = true; break;
		case O_NO_KERNELS: o->no_kernels = true; break;
		case O_JOB: o->job_dir = optarg; break;
		case O_SYNC_INTERVAL: {
			double ns;
			if (cli_parse_time(optarg, 1e9, &ns) < 0 || ns < 1e8) {
				fprintf(stderr, "spmtap record: --sync-interval %s: expected a time >= 100ms "
						"(e.g. 10s)\n", optarg);
				return EXIT_USAGE;
			}
			o->sync_interval = ns / 1e9;
			break;
		}
		case O_SPM:
			if (cli_spm_names(argc, argv, &optind, optarg, &o->spm_names) < 0) {
				fprintf(stderr, "spmtap record: out of memory\n");
				return EXIT_FAIL;
			}
			break;
		case O_INTERVAL:
			if (cli_parse_interval("record", optarg, &o->interval) != EXIT_OK)
				return EXIT_USAGE;
			break;
		case O_INTERVAL_UNIT:
			if (cli_spm_interval_unit("record", optarg) != EXIT_OK)
				return EXIT_USAGE;
			break;
		case O_BETA: cli_beta_flag(argc, argv, &optind); break;
		case O_PMC: return cli_pmc_refused("record");
		case O_PER_SE: o->per_se = true; break;
		case O_PER_INSTANCE: o->per_instance = true; break;
		default:
			fputs(cmd_record_usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc)
		o->app = &argv[optind];
	if (o->app && o->raw) {
		fprintf(stderr, "spmtap record: --raw does not run an application\n");
		return EXIT_USAGE;
	}
	if (!o->spm_names) {
		if (o->interval || o->per_se || o->per_instance) {
			fprintf(stderr, "spmtap record: --interval, --per-se and --per-instance need "
					"--spm NAMES\n");
			return EXIT_USAGE;
		}
		if (!o->raw && !o->smi && !o->cray) {
			fprintf(stderr, "spmtap record: say what to record: --spm NAMES for counters "
					"(see `spmtap list --counters`), or --raw -o FILE for the raw stream\n");
			return EXIT_USAGE;
		}
	}
	if (o->sync_interval > 0 && !o->job_dir) {
		fprintf(stderr, "spmtap record: --sync-interval is for --job\n");
		return EXIT_USAGE;
	}
	if (o->job_dir && (o->raw || !(o->dir || o->formats || o->smi))) {
		fprintf(stderr, "spmtap record: --job writes the -d/-f outputs (e.g. -d out/%%hostname%%), "
				"not --raw or the tick CSV\n");
		return EXIT_USAGE;
	}
	if (o->raw && !o->out) {
		fprintf(stderr, "spmtap record: --raw needs -o FILE\n");
		return EXIT_USAGE;
	}
	if (o->raw && (o->dir || o->formats || o->smi || o->cray)) {
		fprintf(stderr, "spmtap record: --raw writes one container (-o FILE); -d, -f, --smi and --cray "
				"are for decoded outputs\n");
		return EXIT_USAGE;
	}
	return o->spm_names ? split_names(o) : EXIT_OK;
}

/*
 * --job in spmtap, which links no MPI: exec spmtap-job from beside this
 * executable (the build tree, or the installed <prefix>/bin), with the
 * same arguments; it returns only when that fails.
 */
static int exec_job(char **argv)
{
	char exe[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		fprintf(stderr, "spmtap record: --job: /proc/self/exe: %s\n", strerror(errno));
		return EXIT_FAIL;
	}
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	snprintf(path, sizeof(path), "%s/spmtap-job", exe);
	/* spmtap-job record ARGS: the same command line, argv[0] is "record" */
	int argc = 0;
	while (argv[argc])
		argc++;
	char **nv = calloc((size_t)argc + 2, sizeof(*nv));
	if (!nv)
		return EXIT_FAIL;
	nv[0] = path;
	memcpy(nv + 1, argv, (size_t)argc * sizeof(*nv));
	fflush(NULL);
	execv(path, nv);
	free(nv);
	fprintf(stderr, "spmtap record: --job needs %s (built with OpenMPI: `make` where mpicc is "
			"installed): %s\n", path, strerror(errno));
	return EXIT_FAIL;
}

int cmd_record_job(int argc, char **argv, const struct rec_job *job)
{
	/* buffer_size 0: the session's default, which grows with the GPU's XCCs */
	struct rec_opts o = { .device = "0", .nbuffers = FEEDER_DEFAULT_BUFFERS };
	o.argc = argc;
	o.argv = argv;
	o.job = job;
	const char *dev0 = o.device;
	int st = parse_opts(argc, argv, &o);
	/* A job rank records its whole node: every GPU unless --device says otherwise. */
	if (st == EXIT_OK && o.job_dir && o.device == dev0)
		o.device = "all";
	if (st == EXIT_OK && o.job_dir && !job)
		st = exec_job(argv);
	else if (st == EXIT_OK && !o.job_dir && job)
		st = (fprintf(stderr, "spmtap-job: record needs --job DIR\n"), EXIT_USAGE);
	else if (st == EXIT_OK)
		st = record_session(&o);
	free(o.spm_names);
	return st;
}

int cmd_record(int argc, char **argv) { return cmd_record_job(argc, argv, NULL); }
