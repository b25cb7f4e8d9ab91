/* SPDX-License-Identifier: MIT */
/*
 * spmtap record through a session (collector/lib/session.h): several GPUs,
 * several output formats at once (-d DIR -o NAME -f csv,perfetto,sqlite),
 * sensors (--smi), and an application to run (-- app args).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collector/cli/record.h"
#include "collector/lib/power_dedt.h"
#include "collector/lib/session.h"
#include "collector/lib/smi_source.h"
#include "log.h"

bool rec_wants_session(const struct rec_opts *o)
{
	return !o->raw && (o->dir || o->formats || o->smi || o->app ||
			   (o->device && (strchr(o->device, ',') || !strcmp(o->device, "all"))));
}

static void outerr(const char *msg)
{
	fprintf(stderr, "spmtap record: %s\n", msg);
}

static int parse_devices(const struct cli_target *t, const char *spec, uint32_t *gpus, size_t *n)
{
	char err[SPM_ERRLEN];
	*n = 0;
	if (!strcmp(spec, "all")) {
		for (size_t i = 0; i < t->ndev && *n < SESSION_MAX_GPUS; i++)
			gpus[(*n)++] = (uint32_t)i;
		return *n ? 0 : -ENODEV;
	}
	char *dup = strdup(spec), *save = NULL;
	if (!dup)
		return -ENOMEM;
	int rc = 0;
	for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int idx = spm_device_lookup(t->devs, t->ndev, tok, err, sizeof(err));
		if (idx < 0) {
			fprintf(stderr, "spmtap record: %s\n", err);
			rc = idx;
			break;
		}
		if (*n == SESSION_MAX_GPUS) {
			rc = -E2BIG;
			break;
		}
		gpus[(*n)++] = (uint32_t)idx;
	}
	free(dup);
	return rc;
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
	fprintf(stderr, "\r\033[Kspmtap record: %6.1f s  %8.1f MB/s  %" PRIu64 " samples  %" PRIu64
		" lost  %" PRIu64 " sensor samples  queue %u%s", p.seconds,
		p.seconds > 0 ? (double)p.bytes / p.seconds / 1e6 : 0.0, p.samples, p.lost_samples,
		p.smi_samples, p.queue_depth, final ? "\n" : "");
}

static void summary(struct session *S, double secs)
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
		fprintf(stderr, "spmtap record: GPU %u: %.2f s, %" PRIu64 " bytes (%.1f MB/s), %" PRIu64
			" samples from %u XCC stream(s); %" PRIu64 " sensor samples; timebase %u pairs, "
			"residual rms %.0f ns max %.0f ns, %.2f ppm\n", st.gpu, secs, bytes,
			secs > 0 ? (double)bytes / secs / 1e6 : 0.0, samples, st.nxcc, st.smi_samples,
			st.tb_pairs, st.tb_rms_ns, st.tb_max_ns, st.tb_ppm);
		if (gap || resync || flags)
			fprintf(stderr, "spmtap record: WARNING: GPU %u: DATA LOSS: ~%" PRIu64
				" samples lost (timestamp gaps), %" PRIu64 " bytes dropped at resync, %" PRIu64
				" region(s) flagged by the kernel, %" PRIu64 " overrun poll(s)\n", st.gpu,
				gap, resync, flags, st.overrun_polls);
		pr_info("record", "GPU %u: %" PRIu64 " bytes before the first sample, %" PRIu64
			" trailing, %" PRIu64 " pre-program bytes (first buffer)", st.gpu, pre, trail,
			st.first_buffer_bytes);
	}
	for (const char *const *p = session_outputs(S); *p; p++) {
		size_t l = strlen(*p);
		if (l < 4 || strcmp(*p + l - 4, ".csv")) {
			fprintf(stderr, "spmtap record: wrote %s\n", *p);
			continue;
		}
		/* the CSV writer makes one file per source next to NAME (docs/formats/csv.md) */
		static const char *const parts[] = { "_spm.csv", "_smi.csv", "_meta.json" };
		for (size_t k = 0; k < sizeof(parts) / sizeof(parts[0]); k++) {
			char f[4096];
			snprintf(f, sizeof(f), "%.*s%s", (int)(l - 4), *p, parts[k]);
			if (access(f, F_OK) == 0)
				fprintf(stderr, "spmtap record: wrote %s\n", f);
		}
	}
}

int record_session(const struct rec_opts *o)
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
	if (parse_devices(&t, o->device ? o->device : "0", gpus, &ngpus) < 0 || !ngpus) {
		cli_target_free(&t);
		return t.ndev ? EXIT_USAGE : EXIT_FAIL;
	}
	if (session_parse_formats(o->formats ? o->formats : "csv", fmts, &nfmt, err, sizeof(err)) < 0 ||
	    (o->smi && session_parse_smi(o->smi, &smi, err, sizeof(err)) < 0)) {
		fprintf(stderr, "spmtap record: %s\n", err);
		cli_target_free(&t);
		return EXIT_USAGE;
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
	const char *name = o->out ? o->out : "spmtap";
	if (o->dir && mkdir(o->dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "spmtap record: %s: %s\n", o->dir, strerror(errno));
		cli_target_free(&t);
		return EXIT_FAIL;
	}
	cmdline = join_argv(o->argc, o->argv);
	struct session_opts so = {
		.devs = t.devs, .ndev = t.ndev, .gpus = gpus, .ngpus = ngpus, .backend = t.ops, .submitter = o->submitter,
		.counters = o->counters, .ncounters = o->ncounters, .interval = o->interval,
		.per_se = o->per_se, .per_instance = o->per_instance, .gen = o->gen,
		.nbuffers = o->nbuffers, .buffer_size = o->buffer_size,
		.spm_clock_hz = o->spm_clock_hz, .smi_metrics = smi,
		.smi_interval_ns = o->smi_interval_ns, .smi_offsets = o->smi_offset ? &offs : NULL,
		.dir = o->dir ? o->dir : ".", .name = name, .formats = fmts, .nformats = nfmt,
		.command_line = cmdline,
	};
	int rc = session_open(&S, &so, err, sizeof(err));
	if (rc < 0) {
		outerr(err);
		st = rc == -EBUSY ? EXIT_BUSY : rc == -EINVAL ? EXIT_USAGE : EXIT_FAIL;
		goto out;
	}
	sigset_t old;
	rec_signals_install();
	rec_signals_block(&old);
	rc = session_start(S, err, sizeof(err));
	rec_signals_restore(&old);
	if (rc < 0) {
		outerr(err);
		session_stop(S, NULL, 0);
		st = EXIT_FAIL;
		goto out;
	}
	if (o->app) {
		fflush(NULL);
		child = fork();
		if (child == 0) {
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			execvp(o->app[0], o->app);
			fprintf(stderr, "spmtap record: %s: %s\n", o->app[0], strerror(errno));
			_exit(127);
		}
		if (child < 0)
			fprintf(stderr, "spmtap record: fork: %s\n", strerror(errno));
	}
	bool tty = isatty(STDERR_FILENO);
	uint64_t start = rec_now_ns(CLOCK_MONOTONIC), last = 0;
	uint64_t deadline = o->duration > 0 ? start + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
	bool forwarded = false;
	while (!session_failed(S) && rec_now_ns(CLOCK_MONOTONIC) < deadline) {
		if (rec_stop_signal && child > 0 && !forwarded) {
			kill(child, rec_stop_signal == SIGINT ? SIGINT : SIGTERM);
			forwarded = true;
		}
		if (rec_stop_signal && child <= 0)
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
		struct timespec ts = { 0, 20 * 1000000 };
		nanosleep(&ts, NULL);
		uint64_t now = rec_now_ns(CLOCK_MONOTONIC);
		if (now - last >= 500000000ull) {
			status_line(S, tty, false);
			last = now;
		}
	}
	status_line(S, tty, true);
	double secs = (double)(rec_now_ns(CLOCK_MONOTONIC) - start) / 1e9;
	rc = session_stop(S, err, sizeof(err));
	summary(S, secs);
	if (rec_stop_signal)
		fprintf(stderr, "spmtap record: stopped by %s; counters stopped, data drained, outputs complete\n",
			strsignal(rec_stop_signal));
	if (rc < 0) {
		outerr(err);
		st = EXIT_FAIL;
	} else if (o->app) {
		if (child > 0) { /* the duration ended first: the app keeps running, we wait for it */
			int ws;
			if (waitpid(child, &ws, 0) == child)
				app_status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
		}
		st = app_status >= 0 ? app_status : EXIT_FAIL;
	}
out:
	session_close(S);
	free(cmdline);
	cli_target_free(&t);
	return st;
}
