/* SPDX-License-Identifier: MIT */
/*
 * Every stop is prompt, and the data stops at the stop (issue 14 items 4
 * and 5; docs/cli/spmtap-record.md "When a recording stops").
 *
 * --duration and SIGTERM end `spmtap record` at every interval from the
 * minimum 32 up, on every emulated profile, and the emulated RLC degrades
 * as hardware does (the kernel flags loss) instead of the recorder hanging.
 * No output holds an SPM or sensor row after the recording's end
 * (start_boottime_ns + duration), and the summary's seconds are that window.
 *
 * No wall-clock races: a stop normally takes well under a second after the
 * duration's end or the signal (about 0.1 s here); the documented promise is
 * 5 s on a loaded two-core host, and these tests only fail past STOP_BOUND_S,
 * which is six times that.  A recorder still alive then is SIGKILLed (the
 * launcher's supervisor takes the emulated node with it) and the case fails.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "files.h"
#include "proc.h"
#include "testenv.h"

#define STOP_BOUND_S 30.0   /* from the duration's end or the signal to the exit */
#define START_BOUND_S 60.0  /* emulator launch, ROCr/libhsakmt start, programming, first data */
/*
 * Rows after the end: none by construction (the session's sinks compare
 * each row's host_ns with the end), so the only slack is for the
 * rounding of a duration given in seconds to ns.
 */
#define END_SLACK_NS 1000

static const char *need_emulator(void)
{
	static char shim[4096];
	snprintf(shim, sizeof(shim), "%s/libspmtap-emu.so", testenv_build_dir());
	return access(shim, R_OK) ? "libspmtap-emu.so not built" : NULL;
}

static const char *need_sqlite(void)
{
	const char *r = need_emulator();
	if (r)
		return r;
	return access("/usr/bin/sqlite3", X_OK) && access("/bin/sqlite3", X_OK) ? "sqlite3 CLI not installed" : NULL;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *path(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *path(const char *fmt, ...)
{
	static char buf[8][4096];
	static int k;
	k = (k + 1) % 8;
	int n = snprintf(buf[k], sizeof(buf[k]), "%s/", testenv_tmpdir());
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf[k] + n, sizeof(buf[k]) - (size_t)n, fmt, ap);
	va_end(ap);
	return buf[k];
}

struct rec {
	pid_t pid;
	double t_spawn, t_stop; /* when it started; when the stop was due (duration's end or the signal) */
	int status;             /* exit status, 128+signal, or -1 if it had to be killed */
	double stop_s;          /* exit - t_stop */
	char dir[4096], err[4096];
};

static void rec_spawn(struct rec *r, const char *profile, const char *tag, const char *const *args)
{
	static const char *pre[3];
	pre[0] = "--emulate";
	pre[1] = profile;
	pre[2] = NULL;
	snprintf(r->dir, sizeof(r->dir), "%s", path("%s", tag));
	snprintf(r->err, sizeof(r->err), "%s", path("%s.err", tag));
	const char *state = path("%s.state", tag);
	mkdir(state, 0700);
	const char *full[32];
	size_t n = 0;
	for (; args[n] && n < 24; n++)
		full[n] = args[n];
	full[n++] = "-d";
	full[n++] = r->dir;
	full[n++] = "-o";
	full[n++] = "run";
	full[n] = NULL;
	r->t_spawn = mono_s();
	r->t_stop = 0;
	r->pid = tp_spawn_spmtap(pre, full, state, &(struct tp_opts){ .err = r->err });
}

/* Waits until the pid exits or `until` (monotonic s) passes: then SIGKILL, status -1. */
static void rec_wait(struct rec *r, double until)
{
	for (;;) {
		int ws;
		pid_t w = waitpid(r->pid, &ws, WNOHANG);
		if (w == r->pid) {
			r->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
			break;
		}
		if (mono_s() > until) {
			kill(r->pid, SIGKILL);
			waitpid(r->pid, &ws, 0);
			r->status = -1;
			break;
		}
		usleep(20000);
	}
	r->stop_s = mono_s() - r->t_stop;
}

static int64_t meta_int(json_t *m, const char *key)
{
	json_t *v = json_object_get(m, key);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

/* The recording's metadata, NULL if absent. */
static json_t *rec_meta(const struct rec *r)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/run_meta.json", r->dir);
	return json_load_file(p, 0, NULL);
}

/* Sum of a per-XCC accounting key over GPU 0's XCCs. */
static int64_t acc_sum(json_t *m, const char *key)
{
	json_t *g = json_array_get(json_object_get(m, "accounting"), 0), *x;
	size_t i;
	int64_t s = 0;
	json_array_foreach(json_object_get(g, "xcc"), i, x)
		s += (int64_t)json_integer_value(json_object_get(x, key));
	return s;
}

/* The largest value of column `col` (by name) in a CSV with a header; -1 when there is none; rows into *rows. */
static int64_t csv_max(const char *file, const char *col, long *rows)
{
	*rows = 0;
	FILE *f = fopen(file, "r");
	if (!f)
		return -1;
	char line[8192];
	int idx = -1;
	int64_t mx = -1;
	if (fgets(line, sizeof(line), f)) {
		int k = 0;
		for (char *s = strtok(line, ",\n"); s; s = strtok(NULL, ",\n"), k++)
			if (!strcmp(s, col))
				idx = k;
	}
	while (idx >= 0 && fgets(line, sizeof(line), f)) {
		char *s = line;
		for (int k = 0; k < idx && s; k++) {
			s = strchr(s, ',');
			if (s)
				s++;
		}
		if (!s)
			continue;
		int64_t v = strtoll(s, NULL, 10);
		if (v > mx)
			mx = v;
		(*rows)++;
	}
	fclose(f);
	return mx;
}

/* "GPU 0: 3.00 s, ..." in the summary: the seconds, or NAN. */
static double summary_seconds(const struct rec *r)
{
	const char *t = tf_peek(r->err);
	const char *p = t ? strstr(t, "GPU 0: ") : NULL;
	double s = NAN;
	if (p && sscanf(p + 7, "%lf s", &s) != 1)
		s = NAN;
	return s;
}

/* The outputs end at the recording's end: the last SPM (and sensor) row of every file is before it. */
static void check_data_ends(const struct rec *r, double duration, bool smi)
{
	json_t *m = rec_meta(r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	int64_t start = meta_int(m, "start_boottime_ns");
	CU_ASSERT(start > 0);
	int64_t end = start + (int64_t)(duration * 1e9) + END_SLACK_NS;
	long rows;
	char f[4200];
	snprintf(f, sizeof(f), "%s/run_spm.csv", r->dir);
	int64_t last = csv_max(f, "host_ns", &rows);
	CU_ASSERT(rows > 0);
	CU_ASSERT(last <= end);
	if (last > end)
		fprintf(stderr, "\n    %s: last SPM row %.6f s after the start, the end is %.3f s ", f,
			(double)(last - start) / 1e9, duration);
	if (smi) {
		snprintf(f, sizeof(f), "%s/run_smi.csv", r->dir);
		int64_t lsmi = csv_max(f, "host_ns", &rows);
		CU_ASSERT(rows > 0);
		CU_ASSERT(lsmi <= end);
		if (lsmi > end)
			fprintf(stderr, "\n    %s: last sensor row %.6f s after the start, the end is %.3f s ", f,
				(double)(lsmi - start) / 1e9, duration);
	}
	json_decref(m);
}

/*
 * --duration 1 at interval 32 on every profile: the recorder exits 0 within
 * the bound, the kernel flagged loss (the ring overran: hardware's way to
 * degrade), and no row is after the end.
 */
static void duration_at(const char *profile, const char *interval)
{
	char tag[64];
	snprintf(tag, sizeof(tag), "dur-%s-%s", profile, interval);
	const char *const args[] = { "record", "--spm", "SQ_WAVES", "--interval", interval, "--duration", "1", NULL };
	struct rec r;
	rec_spawn(&r, profile, tag, args);
	CU_ASSERT_FATAL(r.pid > 0);
	/* The stop is due one second after the recording starts; the start takes what it takes. */
	r.t_stop = r.t_spawn + 1;
	rec_wait(&r, r.t_spawn + START_BOUND_S + 1 + STOP_BOUND_S);
	CU_ASSERT_EQUAL(r.status, 0);
	if (r.status)
		fprintf(stderr, "\n    %s interval %s --duration 1: status %d after %.1f s: %s ", profile, interval,
			r.status, mono_s() - r.t_spawn, tf_peek(r.err) ? tf_peek(r.err) : "");
	if (r.status)
		return;
	check_data_ends(&r, 1.0, false);
	json_t *m = rec_meta(&r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	if (!strcmp(interval, "32")) {
		/* 66 M samples/s per XCC at 2.1 GHz, 53 M at 1.7 GHz: no host keeps up, and the kernel says so. */
		CU_ASSERT(acc_sum(m, "kernel_loss_flags") > 0);
		CU_ASSERT(acc_sum(m, "lost_gap_samples") > 0);
	}
	json_decref(m);
}

static void test_duration_mi300a_32(void) { duration_at("mi300a", "32"); }
static void test_duration_mi300x_32(void) { duration_at("mi300x", "32"); }
static void test_duration_mi250x_32(void) { duration_at("mi250x", "32"); }
static void test_duration_mi210_32(void) { duration_at("mi210", "32"); }

/* Intervals above the minimum (the 128 ran 8 s for --duration 1), on both kernel generations. */
static void test_duration_intervals(void)
{
	static const char *const iv[] = { "64", "128", "1024", "8192", "65504" };
	for (size_t i = 0; i < sizeof(iv) / sizeof(iv[0]); i++) {
		duration_at("mi300a", iv[i]);
		duration_at("mi210", iv[i]);
	}
}

/* SIGTERM (or SIGINT) while interval-32 data pours in: stopped, drained and complete within the bound. */
static void signal_at(const char *profile, int sig)
{
	char tag[64];
	snprintf(tag, sizeof(tag), "sig%d-%s", sig, profile);
	const char *const args[] = { "record", "--spm", "SQ_WAVES", "--interval", "32", NULL };
	struct rec r;
	rec_spawn(&r, profile, tag, args);
	CU_ASSERT_FATAL(r.pid > 0);
	/* Signal once data reaches the SPM CSV (under its final or its temporary name). */
	char f[4200], fp[4300];
	snprintf(f, sizeof(f), "%s/run_spm.csv", r.dir);
	snprintf(fp, sizeof(fp), "%s.part", f);
	bool data = false;
	int ws;
	while (!data && mono_s() < r.t_spawn + START_BOUND_S) {
		struct stat st;
		data = (!stat(f, &st) && st.st_size > 65536) || (!stat(fp, &st) && st.st_size > 65536);
		if (waitpid(r.pid, &ws, WNOHANG) == r.pid) {
			/* It ended before any data: say how, and do not signal a reaped pid. */
			fprintf(stderr, "\n    %s: the recorder ended before data came (status %d): %s ", profile,
				WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws), tf_peek(r.err) ? tf_peek(r.err) : "");
			CU_FAIL("no data before the recorder ended");
			return;
		}
		usleep(50000);
	}
	CU_ASSERT(data);
	kill(r.pid, sig);
	r.t_stop = mono_s();
	rec_wait(&r, r.t_stop + STOP_BOUND_S);
	CU_ASSERT_EQUAL(r.status, 0);
	fprintf(stderr, "\n    %s interval 32: %s to exit %.2f s (bound %.0f s) ", profile, sig == SIGINT ? "SIGINT" : "SIGTERM",
		r.stop_s, STOP_BOUND_S);
	const char *t = tf_peek(r.err);
	CU_ASSERT(t && strstr(t, sig == SIGINT ? "stopped by Interrupt" : "stopped by Terminated"));
}

static void sigterm_at(const char *profile) { signal_at(profile, SIGTERM); }
static void test_sigint_mi300a(void) { signal_at("mi300a", SIGINT); }

static void test_sigterm_mi300a(void) { sigterm_at("mi300a"); }
static void test_sigterm_mi300x(void) { sigterm_at("mi300x"); }
static void test_sigterm_mi250x(void) { sigterm_at("mi250x"); }
static void test_sigterm_mi210(void) { sigterm_at("mi210"); }

/*
 * Item 5: --duration 3 with sensors and the emulator's phases into CSV and
 * SQLite: no SPM or sensor row after start + 3 s in either, and the
 * summary's seconds are the recording's window (3.00), which the data fills:
 * its last rows are within DATA_TAIL_S of the end (one sample interval and
 * one sensor period normally; generous for a loaded host).
 */
#define DATA_TAIL_S 0.5
static void test_data_ends_at_duration(void)
{
	const char *const args[] = { "record", "--spm", "SQ_WAVES", "--smi", "power,energy", "--duration", "3",
				     "--phases", "emulator", "-f", "csv,sqlite", NULL };
	struct rec r;
	rec_spawn(&r, "mi300a", "item5", args);
	CU_ASSERT_FATAL(r.pid > 0);
	rec_wait(&r, r.t_spawn + START_BOUND_S + 3 + STOP_BOUND_S);
	CU_ASSERT_EQUAL_FATAL(r.status, 0);
	check_data_ends(&r, 3.0, true);
	json_t *m = rec_meta(&r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	int64_t start = meta_int(m, "start_boottime_ns");
	/* A host too loaded to take the stream loses samples (flagged), the last ones too: no tail check then. */
	bool lossless = acc_sum(m, "lost_gap_samples") == 0 && acc_sum(m, "kernel_loss_flags") == 0;
	json_decref(m);
	double secs = summary_seconds(&r);
	CU_ASSERT(fabs(secs - 3.0) < 0.005);
	long rows;
	char f[4200], q[8600];
	snprintf(f, sizeof(f), "%s/run_spm.csv", r.dir);
	double spm_last = (double)(csv_max(f, "host_ns", &rows) - start) / 1e9;
	snprintf(f, sizeof(f), "%s/run_smi.csv", r.dir);
	double smi_last = (double)(csv_max(f, "host_ns", &rows) - start) / 1e9;
	CU_ASSERT(spm_last <= secs + 1e-6);
	CU_ASSERT(!lossless || spm_last > secs - DATA_TAIL_S);
	CU_ASSERT(smi_last > secs - DATA_TAIL_S && smi_last <= secs + 1e-6);
	/* The SQLite file holds the same rows: none after the end either. */
	snprintf(q, sizeof(q), "sqlite3 %s/run.db \"select count(*) from sample where host_ns > %" PRId64 "\"", r.dir,
		 start + 3000000000 + END_SLACK_NS);
	CU_ASSERT_STRING_EQUAL(tp_sh1(q), "0");
	snprintf(q, sizeof(q), "sqlite3 %s/run.db \"select count(*) from sample\"", r.dir);
	CU_ASSERT(atol(tp_sh1(q)) > 0);
	fprintf(stderr, "\n    summary %.2f s; last SPM row %.3f s, last sensor row %.3f s after the start%s ", secs,
		spm_last, smi_last, lossless ? "" : " (SPM samples lost: the host did not keep up)");
}

int main(int argc, char **argv)
{
	testenv_under_emu(argc, argv, "mi300a", NULL);
	static const struct testenv_case cases[] = {
		{ "duration_mi300a_32", test_duration_mi300a_32, need_emulator },
		{ "duration_mi300x_32", test_duration_mi300x_32, need_emulator },
		{ "duration_mi250x_32", test_duration_mi250x_32, need_emulator },
		{ "duration_mi210_32", test_duration_mi210_32, need_emulator },
		{ "duration_intervals", test_duration_intervals, need_emulator },
		{ "sigterm_mi300a", test_sigterm_mi300a, need_emulator },
		{ "sigterm_mi300x", test_sigterm_mi300x, need_emulator },
		{ "sigterm_mi250x", test_sigterm_mi250x, need_emulator },
		{ "sigterm_mi210", test_sigterm_mi210, need_emulator },
		{ "sigint_mi300a", test_sigint_mi300a, need_emulator },
		{ "data_ends_at_duration", test_data_ends_at_duration, need_sqlite },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("stop", cases, argc, argv);
}
