/* SPDX-License-Identifier: MIT */
/*
 * spmtap record through a session (collector/lib/session.h), every mode:
 * several GPUs, several output formats at once (-d DIR -o NAME -f
 * csv,perfetto,sqlite), sensors (--smi), an application to run (-- app
 * args); or one GPU's stream as the tick CSV (-o FILE.csv or standard
 * output, its layout beside it) or the raw container (--raw -o FILE).
 */
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collector/analysis/phases.h"
#include "collector/cli/outname.h"
#include "collector/cli/record.h"
#include "collector/lib/marker_reader.h"
#include "collector/lib/marker_shm.h"
#include "collector/lib/kernel_shm.h"
#include "collector/cli/emu-schedule.h"
#include "collector/lib/power_dedt.h"
#include "collector/lib/session.h"
#include "collector/lib/smi_cray_pm.h"
#include "collector/lib/smi_source.h"
#include "log.h"

/* -d DIR, -f, --smi, an app, phases or a GPU list: the -f outputs; otherwise one stream's file. */
static bool wants_formats(const struct rec_opts *o)
{
	return !o->raw && (o->dir || o->formats || o->smi || o->cray || o->app || o->nphases ||
			   (o->device && (strchr(o->device, ',') || !strcmp(o->device, "all"))));
}

/*
 * x.csv -> x.layout.json; anything else gets .layout.json appended.  Written
 * as p.layout.json.part, like the CSV it describes, and renamed with it at
 * the end (layout_done): a run that never starts leaves the earlier one.
 */
static int write_layout(const char *out, const char *text, char *p, size_t plen)
{
	size_t n = strlen(out);
	if (n > 4 && !strcmp(out + n - 4, ".csv"))
		n -= 4;
	snprintf(p, plen, "%.*s.layout.json", (int)n, out);
	char part[4200];
	snprintf(part, sizeof(part), "%s.part", p);
	FILE *f = fopen(part, "we");
	int bad = !f || fputs(text, f) < 0 || fputc('\n', f) < 0;
	if (f && fclose(f))
		bad = 1;
	if (bad)
		fprintf(stderr, "spmtap record: %s: %s\n", part, strerror(errno));
	return bad ? EXIT_FAIL : EXIT_OK;
}

/* The layout's .part renamed (the run recorded) or removed (it never started). */
static void layout_done(char *p, bool keep)
{
	char part[4200];
	if (!p[0])
		return;
	snprintf(part, sizeof(part), "%s.part", p);
	if (keep ? rename(part, p) : unlink(part))
		fprintf(stderr, "spmtap record: %s: %s\n", part, strerror(errno));
	p[0] = 0;
}

static void outerr(const char *msg)
{
	fprintf(stderr, "spmtap record: %s\n", msg);
}

_Static_assert(CLI_MAX_GPUS == SESSION_MAX_GPUS, "cli_parse_devices's bound is a session's");

/*
 * libspmtap-tool.so for the app: SPMTAP_TOOL_LIB, else beside this
 * executable (the build tree), else in <exe dir>/../lib/spmtap/ (installed).  NULL (kernels off, said why) when it is not there, or when the
 * user set HSA_TOOLS_LIB: their tool is left alone, not chained (ROCr 5.2's
 * list syntax is not pinned by a test here), and the recording says so.
 */
static const char *rec_tool_lib(char *buf, size_t len)
{
	const char *u = getenv("HSA_TOOLS_LIB");
	if (u && *u) {
		fprintf(stderr, "spmtap record: note: HSA_TOOLS_LIB is already set (%s): it is kept and kernel "
				"dispatches are not recorded (unset it, or pass --no-kernels to silence this)\n", u);
		return NULL;
	}
	const char *e = getenv("SPMTAP_TOOL_LIB");
	if (e && *e) {
		snprintf(buf, len, "%s", e);
	} else {
		char exe[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0)
			return NULL;
		exe[n] = 0;
		char *s = strrchr(exe, '/');
		if (s)
			*s = 0;
		snprintf(buf, len, "%s/libspmtap-tool.so", exe);
		if (access(buf, R_OK))
			snprintf(buf, len, "%s/../lib/spmtap/libspmtap-tool.so", exe);
	}
	if (access(buf, R_OK)) {
		fprintf(stderr, "spmtap record: note: %s: %s; kernel dispatches are not recorded\n", buf, strerror(errno));
		return NULL;
	}
	return buf;
}

static char *join_argv(int argc, char **argv)
{
	size_t n = 1;
	for (int i = 0; i < argc; i++)
		n += strlen(argv[i]) + 1;
	char *s = calloc(1, n);
	for (int i = 0; s && i < argc; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

static void status_line(struct session *S, bool tty, bool final)
{
	if (!tty)
		return;
	struct session_progress p;
	session_progress(S, &p);
	/* The lost count is the decoder's (the final rule): while the queue is full the decoder
	 * waits, the kernel drops, and the count can only grow when it resumes: say so. */
	bool full = p.queue_depth >= SESSION_QUEUE_DEFAULT; /* record leaves queue_chunks 0 */
	fprintf(stderr, "\r\033[Kspmtap record: %6.1f s  %8.1f MB/s  %" PRIu64 " samples  %" PRIu64
		"%s lost%s  %" PRIu64 " sensor samples  queue %u%s", p.seconds,
		p.seconds > 0 ? (double)p.bytes / p.seconds / 1e6 : 0.0, p.samples, p.lost_samples,
		full ? "+" : "", full ? " (queue full: the writer is behind; the data waits in memory and the journal)" : "",
		p.smi_samples, p.queue_depth, final ? "\n" : "");
}

/*
 * The catch-up after the stop (session_opts.on_catchup): a progress line
 * (rewritten on a terminal, every second otherwise), and a stop signal
 * arriving during it abandons it.
 */
struct catchup {
	bool tty;
	int signals0;   /* stop signals before the catch-up began */
	double last;    /* when the line was last printed */
	bool printed;
};

static bool on_catchup(const struct session_catchup *c, void *user)
{
	struct catchup *x = user;
	if (x->signals0 < 0)
		x->signals0 = rec_signal_count;
	if (rec_signal_count > x->signals0) {
		if (x->printed && x->tty)
			fputc('\n', stderr);
		return true;
	}
	/* A catch-up of less than half a second is not worth a line. */
	if (c->seconds < 0.5 || c->seconds - x->last < (x->tty ? 0.2 : 1.0))
		return false;
	x->last = c->seconds;
	double done = (double)c->decoded_bytes, total = done + (double)c->left_bytes;
	double rate = c->seconds > 0 ? done / c->seconds : 0;
	char left[48];
	if (rate > 0)
		snprintf(left, sizeof(left), "%.0f s left", (double)c->left_bytes / rate);
	else
		snprintf(left, sizeof(left), "the output is stalled");
	fprintf(stderr, "%sspmtap record: catching up: %.2f of %.2f GB decoded (%.2f GB in the journal), "
		"%s; Ctrl-C again to stop and keep the journal%s", x->tty ? "\r\033[K" : "", done / 1e9,
		total / 1e9, (double)c->journal_bytes / 1e9, left, x->tty ? "" : "\n");
	x->printed = true;
	return false;
}

/* DIR/NAME, or the -o file without its extension: the journal is BASE_journal.raw. */
static char *journal_base(const struct rec_opts *o, bool formats, const char *outdir, const char *name)
{
	char *b = NULL;
	if (formats) {
		if (asprintf(&b, "%s/%s", outdir ? outdir : ".", name) < 0)
			return NULL;
		return b;
	}
	const char *out = o->out && strcmp(o->out, "-") ? o->out : "spmtap";
	b = strdup(out);
	char *slash = b ? strrchr(b, '/') : NULL;
	char *dot = b ? strrchr(slash ? slash : b, '.') : NULL;
	if (dot && dot != (slash ? slash + 1 : b))
		*dot = 0;
	return b;
}

/* 1 GiB or a quarter of the RAM, whichever is less (docs/cli/spmtap-record.md). */
static uint64_t spill_default(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t quarter = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz / 4 : (1ull << 30);
	return quarter < (1ull << 30) ? quarter : (1ull << 30);
}

static void summary(struct session *S, double secs, bool cut)
{
	for (size_t i = 0; i < session_ngpus(S); i++) {
		struct session_gpu_stats st;
		session_gpu_stats(S, i, &st);
		uint64_t samples = 0, bytes = 0, gap = 0, flags = 0, resync = 0, pre = 0, trail = 0;
		for (uint32_t x = 0; x < st.nxcc; x++) {
			samples += st.xcc[x].samples;
			bytes += st.xcc[x].bytes;
			gap += st.xcc[x].gap_samples;
			flags += st.xcc[x].loss_flags;
			resync += st.xcc[x].resync_bytes;
			pre += st.xcc[x].prestart_bytes;
			trail += st.xcc[x].trailing_bytes;
		}
		/* the timebase's worst-case error (docs/timebase.md "Error bound"), not the fit's residual */
		char tbw[64];
		if (st.tb_pairs >= 2)
			snprintf(tbw, sizeof(tbw), "times within %.0f ns (worst-case bound)", st.tb_bound_ns);
		else
			snprintf(tbw, sizeof(tbw), "too few to map times");
		/* A stopped catch-up decoded only part of the stream: the rate is the stream's, all of it. */
		char left[96] = "";
		if (st.journal_left_bytes)
			snprintf(left, sizeof(left), " decoded, %" PRIu64 " more left in the journal", st.journal_left_bytes);
		uint64_t all = bytes + st.journal_left_bytes;
		fprintf(stderr, "spmtap record: GPU %u: %.2f s, %" PRIu64 " bytes%s (%.1f MB/s), %" PRIu64
			" samples from %u XCC stream(s); %" PRIu64 " sensor samples; timebase %u pairs ("
			"%u rejected as disturbed), %s, %.2f ppm\n", st.gpu, secs, bytes, left,
			secs > 0 ? (double)all / secs / 1e6 : 0.0, samples, st.nxcc, st.smi_samples,
			st.tb_pairs, st.tb_rejected, tbw, st.tb_ppm);
		rec_summary_gpu(S, i, secs, cut);
		/* A poll with no free buffer leaves the armed one armed: loss only if it filled meanwhile. */
		if (st.loss_reason[0] && (gap || resync))
			fprintf(stderr, "spmtap record: GPU %u: the loss was not absorbed by the spill queue: %s "
				"(%.1f MB held in memory at most, %.1f MB through the journal)\n", st.gpu,
				st.loss_reason, (double)st.spill_mem_peak / 1e6, (double)st.journal_bytes / 1e6);
		else if (st.loss_reason[0])
			fprintf(stderr, "spmtap record: GPU %u: %" PRIu64 " poll(s) found no free buffer (%s: %.1f MB "
				"held in memory at most, %.1f MB through the journal); the armed buffer held the data, "
				"nothing was lost\n", st.gpu, st.overrun_polls, st.loss_reason,
				(double)st.spill_mem_peak / 1e6, (double)st.journal_bytes / 1e6);
		else if (st.journal_bytes)
			pr_info("record", "GPU %u: %.1f MB waited for the outputs in the journal (%.1f MB in memory at "
				"most)", st.gpu, (double)st.journal_bytes / 1e6, (double)st.spill_mem_peak / 1e6);
		if (gap || resync || flags)
			pr_info("record", "GPU %u: ~%" PRIu64 " samples lost (timestamp gaps), %" PRIu64
				" bytes dropped at resync, %" PRIu64 " region(s) flagged by the kernel, %" PRIu64
				" overrun poll(s)", st.gpu, gap, resync, flags, st.overrun_polls);
		pr_info("record", "GPU %u: %" PRIu64 " bytes before the first sample, %" PRIu64
			" trailing, %" PRIu64 " pre-program bytes (first buffer)", st.gpu, pre, trail,
			st.first_buffer_bytes);
	}
	char cray[400];
	if (session_cray_summary(S, cray, sizeof(cray)))
		fprintf(stderr, "spmtap record: %s\n", cray);
	rec_summary_cost(S);
	/* The files of this run, under their final names (an earlier run's set is gone with it). */
	for (const char *const *p = session_outputs(S); *p; p++) {
		/* The metadata is whole either way: it says "complete": false and the error. */
		size_t n = strlen(*p);
		bool meta = n >= 10 && !strcmp(*p + n - 10, "_meta.json");
		fprintf(stderr, "spmtap record: wrote %s%s\n", *p,
			cut && !meta ? " (incomplete: cut short by the error below)" : "");
	}
	for (const char *const *p = session_replaced(S); *p; p++)
		fprintf(stderr, "spmtap record: removed %s (the earlier run under this name, with other -f)\n", *p);
}

/*
 * CLOCK_BOOTTIME - CLOCK_MONOTONIC_RAW now (the emulator's schedule is on
 * RAW).  A preemption between the two reads would move every phase edge by
 * its length, so read RAW on both sides of BOOTTIME a few times and keep the
 * narrowest window, taking its middle (as the timebase does for its pairs).
 */
static int64_t boot_minus_raw(void)
{
	int64_t best = 0;
	uint64_t best_w = UINT64_MAX;
	for (int i = 0; i < 8; i++) {
		uint64_t a = rec_now_ns(CLOCK_MONOTONIC_RAW);
		uint64_t b = rec_now_ns(CLOCK_BOOTTIME);
		uint64_t c = rec_now_ns(CLOCK_MONOTONIC_RAW);
		if (c - a < best_w) {
			best_w = c - a;
			best = (int64_t)b - (int64_t)(a + (c - a) / 2);
		}
	}
	return best;
}

struct emu_sched {
	struct session *S;
	uint64_t r0, r1;     /* the recording, MONOTONIC_RAW */
	int64_t off0, off1;  /* BOOTTIME - RAW at r0 and r1: slewing between them is interpolated */
	size_t n;
};

static int64_t raw_to_boot(const struct emu_sched *e, uint64_t raw)
{
	double f = e->r1 > e->r0 ? (double)(raw - e->r0) / (double)(e->r1 - e->r0) : 0.0;
	return (int64_t)raw + e->off0 + (int64_t)((double)(e->off1 - e->off0) * f);
}

static int sched_phase(uint64_t start, uint64_t end, const char *name, void *user)
{
	struct emu_sched *e = user;
	struct series_slice sl = { .start_ns = raw_to_boot(e, start), .end_ns = raw_to_boot(e, end), .name = name,
				   .category = "emulator" };
	e->n++;
	return session_add_phase(e->S, &sl);
}

/* `--phases emulator`: the emulated workload's schedule over the recording, its ground truth. */
static int emulator_phases(struct emu_sched *e)
{
	struct sched_file w;
	char err[512];
	if (sched_file_read(&w, err, sizeof(err)) < 0) {
		fprintf(stderr, "spmtap record: --phases emulator: %s\n", err);
		return -EINVAL;
	}
	int rc = sched_file_each(&w, e->r0, e->r1, sched_phase, e);
	if (rc == 0)
		fprintf(stderr, "spmtap record: --phases emulator: the workload (%s) has no load/idle steps\n",
			w.workload);
	return rc < 0 ? rc : 0;
}

static void free_phase_files(struct sa_phases *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sa_phases_free(&p[i]);
}

/* `--phases FILE`: the user's phases, as they are (the file is on the recording's timebase). */
static int add_phase_files(struct session *S, const struct sa_phases *p, size_t n, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < p[i].n; k++) {
			struct series_slice sl = { .start_ns = p[i].v[k].start_ns, .end_ns = p[i].v[k].end_ns,
						   .name = p[i].v[k].name, .category = "file" };
			int rc = session_add_phase(S, &sl);
			if (rc < 0)
				return spmtap_seterr(err, errlen, -rc, "--phases: adding phase %zu: %s", k + 1,
						     strerror(-rc));
		}
	return 0;
}

static bool wants_emulator_phases(const struct rec_opts *o)
{
	for (size_t i = 0; i < o->nphases; i++)
		if (!strcmp(o->phases[i], "emulator"))
			return true;
	return false;
}

/*
 * The application as execvp will find it (a name with a slash as it is,
 * else the first match on PATH), checked before any file is touched: a
 * typo must not cost an earlier recording.  0, or 127 (not found) / 126
 * (not executable) with the shell's sentence printed.
 */
static int find_app(const char *app)
{
	struct stat sb;
	int found = ENOENT;
	if (strchr(app, '/')) {
		if (stat(app, &sb))
			found = errno;
		else if (!S_ISREG(sb.st_mode) || access(app, X_OK))
			found = EACCES;
		else
			return 0;
	} else {
		const char *path = getenv("PATH");
		char def[256];
		if (!path) { /* execvp's default */
			confstr(_CS_PATH, def, sizeof(def));
			path = def;
		}
		for (const char *d = path; *d && *app;) {
			size_t n = strcspn(d, ":");
			char p[4096];
			snprintf(p, sizeof(p), "%.*s%s%s", (int)n, n ? d : ".", n ? "/" : "", app);
			if (!stat(p, &sb)) {
				if (S_ISREG(sb.st_mode) && !access(p, X_OK))
					return 0;
				found = EACCES;
			}
			d += n + (d[n] == ':');
		}
	}
	fprintf(stderr, "spmtap record: %s: %s%s\n", app, strerror(found),
		strchr(app, '/') ? "" : " (not found on PATH)");
	return found == EACCES ? 126 : 127;
}

/*
 * -d and -o with rocprofv3's placeholders replaced, and in -f mode
 * resolved into the directory and NAME (outname.h).  EXIT_OK or EXIT_USAGE.
 */
static int out_names(struct rec_opts *o, bool formats, char **dir, char **name, char **out)
{
	struct outname_env env;
	char err[512];
	int rc = 0;
	outname_env_init(&env);
	char *d = o->dir ? outname_expand(o->dir, &env, &rc, err, sizeof(err)) : NULL;
	char *x = !rc && o->out ? outname_expand(o->out, &env, &rc, err, sizeof(err)) : NULL;
	if (!rc && formats)
		rc = outname_resolve(d, x, dir, name, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "spmtap record: %s\n", err);
		free(d);
		free(x);
		return EXIT_USAGE;
	}
	if (!formats) {
		*dir = d;
		d = NULL;
		o->dir = *dir;
	}
	free(d);
	*out = x;
	if (x)
		o->out = x;
	return EXIT_OK;
}

static int run(const struct rec_opts *o, const char *odir, const char *oname, bool *met);

int record_session(const struct rec_opts *opts)
{
	struct rec_opts ox = *opts;
	if (ox.app) {
		int ast = find_app(ox.app[0]);
		if (ast) {
			if (ox.job)
				ox.job->started(ox.job->user, NULL, &ox, false);
			return ast;
		}
	}
	char *odir = NULL, *oname = NULL, *oout = NULL;
	bool met = false; /* a job rank has met the others (rec_job.started) */
	int st = out_names(&ox, wants_formats(&ox), &odir, &oname, &oout);
	if (st == EXIT_OK)
		st = run(&ox, odir, oname, &met);
	/* Failed before the start: the other ranks wait for this one at the start. */
	if (ox.job && !met)
		ox.job->started(ox.job->user, NULL, &ox, false);
	free(odir);
	free(oname);
	free(oout);
	return st;
}

static int run(const struct rec_opts *o, const char *odir, const char *oname, bool *met)
{
	struct cli_target t;
	int st = cli_target_devices(&t, "record");
	if (st != EXIT_OK)
		return st;
	for (size_t i = 0; i < t.ndev; i++)
		spm_device_marketing_name(&t.devs[i]);
	uint32_t gpus[SESSION_MAX_GPUS];
	size_t ngpus = 0;
	const struct writer_ops *fmts[SESSION_MAX_WRITERS];
	size_t nfmt = 0;
	uint32_t smi = 0;
	struct smi_offsets offs;
	memset(&offs, 0, sizeof(offs));
	char err[SPM_ERRLEN + 512] = "";
	char *cmdline = NULL;
	struct session *S = NULL;
	pid_t child = -1;
	int app_status = -1;
	if (cli_parse_devices(&t, "record", o->device ? o->device : "0", gpus, SESSION_MAX_GPUS, &ngpus) < 0) {
		/* a name that is not one of the GPUs is the command line's fault; no GPU at all is not */
		int bad = t.ndev ? EXIT_USAGE : EXIT_FAIL;
		cli_target_free(&t);
		return bad;
	}
	bool formats = wants_formats(o);
	if ((formats && session_parse_formats(o->formats ? o->formats : "csv", fmts, &nfmt, err,
					      sizeof(err)) < 0) ||
	    (o->smi && session_parse_smi(o->smi, &smi, err, sizeof(err)) < 0)) {
		fprintf(stderr, "spmtap record: %s\n", err);
		cli_target_free(&t);
		return EXIT_USAGE;
	}
	int32_t cray_map[CRAY_PM_MAX_ACCEL];
	if (cray_pm_parse_map(o->cray_accel_map, cray_map, err, sizeof(err)) < 0) {
		fprintf(stderr, "spmtap record: --cray-accel-map: %s\n", err);
		cli_target_free(&t);
		return EXIT_USAGE;
	}
	for (unsigned a = 0; a < CRAY_PM_MAX_ACCEL; a++) {
		bool known = cray_map[a] < 0;
		for (size_t i = 0; i < ngpus && !known; i++)
			known = t.devs[gpus[i]].index == (uint32_t)cray_map[a];
		if (!known) {
			fprintf(stderr, "spmtap record: --cray-accel-map: accel%u=gpu%d, but GPU %d is not recorded "
					"(--device)\n", a, cray_map[a], cray_map[a]);
			cli_target_free(&t);
			return EXIT_USAGE;
		}
	}
	if (o->smi_offset && smi_offsets_parse(o->smi_offset, &offs, err, sizeof(err)) < 0) {
		fprintf(stderr, "spmtap record: --smi-offset: %s\n", err);
		cli_target_free(&t);
		return EXIT_USAGE;
	}
	st = cli_target_backend(&t, "record", o->backend);
	if (st != EXIT_OK) {
		cli_target_free(&t);
		return st;
	}
	const char *name = oname ? oname : o->out ? o->out : "spmtap";
	const char *outdir = oname ? odir : o->dir;
	if (outdir && session_make_dir(outdir, err, sizeof(err)) < 0) {
		fprintf(stderr, "spmtap record: %s\n", err);
		cli_target_free(&t);
		return EXIT_FAIL;
	}
	/* -o DIR/FILE (the tick CSV, --raw): its directory is made as -d's is, not left to fail at the open. */
	const char *slash = !outdir && o->out && strcmp(o->out, "-") ? strrchr(o->out, '/') : NULL;
	if (slash && slash != o->out) {
		char d[4096];
		snprintf(d, sizeof(d), "%.*s", (int)(slash - o->out), o->out);
		if (session_make_dir(d, err, sizeof(err)) < 0) {
			fprintf(stderr, "spmtap record: -o %s: %s\n", o->out, err);
			cli_target_free(&t);
			return EXIT_FAIL;
		}
	}
	/* Phases files are read before anything starts, so that a bad one costs no recording. */
	struct sa_phases filep[sizeof(o->phases) / sizeof(o->phases[0])];
	size_t nfilep = 0;
	for (size_t i = 0; i < o->nphases; i++) {
		if (strcmp(o->phases[i], "emulator")) {
			if (sa_phases_load(o->phases[i], &filep[nfilep], err, sizeof(err)) < 0) {
				fprintf(stderr, "spmtap record: --phases: %s\n", err);
				free_phase_files(filep, nfilep);
				cli_target_free(&t);
				return EXIT_USAGE;
			}
			nfilep++;
			continue;
		}
		if (!getenv("SPMTAP_EMU_ACTIVE")) {
			fprintf(stderr, "spmtap record: --phases emulator: not running on the emulated device "
					"(use --emulate PROFILE)\n");
			free_phase_files(filep, nfilep);
			cli_target_free(&t);
			return EXIT_USAGE;
		}
	}
	cmdline = join_argv(o->argc, o->argv);
	char *jbase = journal_base(o, formats, outdir, name);
	/* Kernel dispatches from inside the app: docs/cli/spmtap-record.md "Kernels". */
	char toolbuf[PATH_MAX], kcsv[PATH_MAX + 64];
	/* Under --job the channel is made too: the app step's tool finds it through SPMTAP_JOB (marker_job.h). */
	const char *tool = (o->app || o->job_dir) && !o->no_kernels ? rec_tool_lib(toolbuf, sizeof(toolbuf)) : NULL;
	snprintf(kcsv, sizeof(kcsv), "%s/%s_kernels.csv", outdir ? outdir : ".", name);
	struct catchup cu = { .tty = isatty(STDERR_FILENO), .signals0 = -1, .last = -1.0 };
	struct session_opts so = {
		.devs = t.devs, .ndev = t.ndev, .gpus = gpus, .ngpus = ngpus, .backend = t.ops, .submitter = o->submitter,
		.counters = o->counters, .ncounters = o->ncounters, .interval = o->interval,
		.per_se = o->per_se, .per_instance = o->per_instance, .gen = o->gen,
		.nbuffers = o->nbuffers, .buffer_size = o->buffer_size,
		.spm_clock_hz = o->spm_clock_hz, .smi_metrics = smi,
		.smi_interval_ns = o->smi_interval_ns, .smi_offsets = o->smi_offset ? &offs : NULL,
		.cray = o->cray, .cray_interval_ns = o->cray_interval_ns, .cray_accel_map = cray_map,
		.dir = outdir ? outdir : ".", .name = name, .formats = fmts, .nformats = nfmt,
		.command_line = cmdline, .markers = o->app != NULL || o->job_dir != NULL,
		.kernels = tool != NULL, .kernels_csv = tool ? kcsv : NULL,
		.raw_path = o->raw ? o->out : NULL,
		.ticks_csv = formats || o->raw ? NULL : o->out ? o->out : "-",
		.device_spec = o->device, .duration_s = o->duration,
		.spill_mem = o->spill_mem ? o->spill_mem : spill_default(), .journal_base = jbase,
		.keep_raw = o->keep_raw, .on_catchup = on_catchup, .user = &cu,
	};
	struct emu_sched sched = { 0 };
	char layout[4096] = ""; /* the tick CSV's layout file while its .part is pending */
	int rc = session_open(&S, &so, err, sizeof(err));
	if (rc < 0) {
		outerr(err);
		st = rc == -EBUSY ? EXIT_BUSY : rc == -EINVAL ? EXIT_USAGE : EXIT_FAIL;
		goto out;
	}
	if (o->size_given && session_size_note(S, 0)[0])
		outerr(session_size_note(S, 0));
	/* The tick CSV's layout descriptor goes beside it, as `spmtap decode --layout` reads it. */
	if (so.ticks_csv && strcmp(so.ticks_csv, "-") &&
	    (st = write_layout(o->out, session_layout(S, 0), layout, sizeof(layout))))
		goto out;
	sigset_t old;
	rec_signals_install(o->job != NULL);
	rec_signals_block(&old);
	rc = session_start(S, err, sizeof(err));
	rec_signals_restore(&old);
	if (rc < 0) {
		outerr(err);
		session_stop(S, NULL, 0);
		st = EXIT_FAIL;
		goto out;
	}
	rc = add_phase_files(S, filep, nfilep, err, sizeof(err));
	if (rc < 0) {
		outerr(err);
		session_stop(S, NULL, 0);
		st = EXIT_FAIL;
		goto out;
	}
	if (o->job) {
		/* Every rank started (a barrier) and the first clock sync; or another rank failed. */
		*met = true;
		if (!o->job->started(o->job->user, S, o, true)) {
			session_stop(S, NULL, 0);
			st = EXIT_FAIL;
			goto out;
		}
	}
	sched.S = S;
	sched.r0 = rec_now_ns(CLOCK_MONOTONIC_RAW);
	sched.off0 = boot_minus_raw();
	if (o->app) {
		fflush(NULL);
		child = fork();
		if (child == 0) {
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			char fd[16];
			snprintf(fd, sizeof(fd), "%d", session_markers_fd(S));
			setenv(MK_ENV_FD, fd, 1);
			if (tool) {
				snprintf(fd, sizeof(fd), "%d", session_kernels_fd(S));
				setenv(KD_ENV_FD, fd, 1);
				setenv("HSA_TOOLS_LIB", tool, 1);
			}
			execvp(o->app[0], o->app);
			fprintf(stderr, "spmtap record: %s: %s\n", o->app[0], strerror(errno));
			_exit(127);
		}
		if (child < 0)
			fprintf(stderr, "spmtap record: fork: %s\n", strerror(errno));
	}
	bool tty = isatty(STDERR_FILENO);
	uint64_t last = 0;
	/*
	 * --duration counts from the recording's start (the outputs'
	 * start_boottime_ns) and the session knows its end at once, so no row
	 * after it reaches an output however late this loop or the stop program
	 * comes (docs/cli/spmtap-record.md "When a recording stops").
	 */
	int64_t t_start = session_start_boottime(S);
	int64_t deadline = o->duration > 0 && !o->job ? t_start + (int64_t)(o->duration * 1e9) : INT64_MAX;
	session_set_end(S, deadline);
	bool forwarded = false, aborted = false;
	while (!session_failed(S) && (int64_t)rec_now_ns(CLOCK_BOOTTIME) < deadline) {
		/*
		 * A job rank: SIGUSR1/2 is a job-wide stop that rank 0 decides
		 * (poll); SIGINT/SIGTERM come from a launcher about to kill the
		 * rank, which stops here and now.
		 */
		int sig = rec_stop_signal;
		bool local = o->job ? sig == SIGINT || sig == SIGTERM : sig != 0;
		if (o->job && local) {
			aborted = true;
			break;
		}
		if (o->job) {
			int64_t e = o->job->poll(o->job->user, S);
			if (e < deadline) {
				deadline = e;
				session_set_end(S, e);
			}
		}
		if (local && child > 0 && !forwarded) {
			kill(child, sig == SIGINT ? SIGINT : SIGTERM);
			forwarded = true;
		}
		if (local && child <= 0)
			break;
		if (child > 0) {
			int ws;
			pid_t w = waitpid(child, &ws, WNOHANG);
			if (w == child) {
				app_status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
				child = -1;
				break;
			}
		} else if (o->app) {
			break; /* fork failed */
		}
		int64_t left = deadline - (int64_t)rec_now_ns(CLOCK_BOOTTIME);
		struct timespec ts = { 0, left > 0 && left < 20 * 1000000 ? (long)left : 20 * 1000000 };
		nanosleep(&ts, NULL); /* a signal ends it early */
		uint64_t now = rec_now_ns(CLOCK_MONOTONIC);
		if (now - last >= 500000000ull) {
			status_line(S, tty, false);
			last = now;
		}
	}
	/* A signal, the app's exit or a failure ends it now; a --duration that ran out, at its end. */
	session_set_end(S, (int64_t)rec_now_ns(CLOCK_BOOTTIME));
	status_line(S, tty, true);
	double secs = (double)(session_end_boottime(S) - t_start) / 1e9;
	sched.r1 = rec_now_ns(CLOCK_MONOTONIC_RAW);
	sched.off1 = boot_minus_raw();
	if (wants_emulator_phases(o) && emulator_phases(&sched) < 0)
		st = EXIT_FAIL;
	if (rec_stop_signal)
		session_set_stop_reason(S, strsignal(rec_stop_signal));
	if (o->job)
		o->job->ending(o->job->user, S, aborted);
	cu.signals0 = rec_signal_count; /* a signal from now on abandons the catch-up */
	rc = session_stop(S, err, sizeof(err));
	if (cu.printed && cu.tty && !session_abandoned(S))
		fputc('\n', stderr); /* end the progress line rewritten in place */
	layout_done(layout, true);
	if (!formats) {
		rec_summary_stream(S, o, secs, rc < 0);
	} else {
		summary(S, secs, rc < 0);
		if (rec_stop_signal && !session_abandoned(S) && rc >= 0)
			fprintf(stderr, "spmtap record: stopped by %s; counters stopped, data drained, "
				"outputs complete\n", strsignal(rec_stop_signal));
	}
	struct mk_stats ms;
	if (session_marker_stats(S, &ms) == 0 && (ms.events || ms.threads_refused))
		fprintf(stderr, "spmtap record: markers: %" PRIu64 " regions from %u thread(s)%s\n", ms.regions,
			ms.threads, ms.unterminated ? " (some still open at the end: closed there)" : "");
	if (session_marker_stats(S, &ms) == 0 && (ms.dropped || ms.threads_refused || ms.unmatched))
		fprintf(stderr, "spmtap record: WARNING: markers lost: %" PRIu64 " events dropped (a thread's ring "
			"was full), %" PRIu64 " threads beyond the %u slots, %" PRIu64 " begin/end left unpaired\n",
			ms.dropped, ms.threads_refused, MK_SLOTS, ms.unmatched);
	uint64_t kn, kd;
	if (session_kernels_counts(S, &kn, &kd) == 0) {
		fprintf(stderr, "spmtap record: kernels: %" PRIu64 " dispatches in %s\n", kn, kcsv);
		if (kd)
			fprintf(stderr, "spmtap record: WARNING: kernel dispatches lost: %" PRIu64 " dropped (the "
				"channel was full; metadata \"kernels\")\n", kd);
	}
	if (sched.n)
		fprintf(stderr, "spmtap record: %zu phases from the emulated workload's schedule\n", sched.n);
	for (size_t i = 0; i < session_ngpus(S); i++) {
		struct session_gpu_stats gs;
		if (session_gpu_stats(S, i, &gs) == 0 && gs.journal[0] && session_abandoned(S))
			fprintf(stderr, "spmtap record: GPU %u: catch-up stopped; the rest of the data: %s "
				"(`spmtap decode %s` turns it into rows)\n", gs.gpu, gs.journal, gs.journal);
		else if (gs.journal[0])
			fprintf(stderr, "spmtap record: GPU %u: journal kept (--keep-raw): %s, every buffer that "
				"waited on disk (all decoded into the outputs too)\n", gs.gpu, gs.journal);
	}
	if (rc < 0) {
		outerr(err);
		st = EXIT_FAIL;
	} else if (session_abandoned(S)) {
		fprintf(stderr, "spmtap record: the outputs are incomplete (\"complete\": false)\n");
		st = 128 + SIGINT;
	} else if (o->app) {
		if (child > 0) { /* the duration ended first: the app keeps running, we wait for it */
			int ws;
			if (waitpid(child, &ws, 0) == child)
				app_status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
		}
		st = app_status >= 0 ? app_status : EXIT_FAIL;
	}
out:
	if (o->job && *met)
		o->job->done(o->job->user, S, st);
	layout_done(layout, false);
	free_phase_files(filep, nfilep);
	session_close(S);
	free(cmdline);
	free(jbase);
	cli_target_free(&t);
	return st;
}
