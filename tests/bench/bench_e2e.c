/* SPDX-License-Identifier: MIT */
/*
 * make bench: end to end.  How fast can `spmtap record` stream, decode and
 * write SPM counters without losing a sample, what does it cost in CPU per
 * GB, and does its memory stay flat with duration?
 *
 * Each trial runs `spmtap --emulate PROFILE record --spm COUNTERS --interval
 * I --duration S -d TMP -o run -f FORMAT` as a child (FORMAT csv, then
 * sqlite), takes its rusage (CPU, peak RSS of the child and its re-executed
 * emulated child: wait4 reports the largest), and reads the recording's own
 * accounting (run_meta.json, or the SQLite `meta` table) and the emulator's
 * truth (bytes produced, copied and lost per XCC).  A trial is lossless when
 * spmtap exits 0, its accounting shows no lost sample and the emulator lost no
 * byte.  The interval is searched downwards (smaller interval = more bytes)
 * for the smallest lossless one, in steps of 32 SCLK cycles.
 *
 * Then, at that interval, one 10 s run per format (and with
 * SPMTAP_BENCH_LONG=1 a 60 s run) for CPU s/GB and peak RSS.  Nothing here is
 * a pass/fail check; memcpy of this machine is printed for scale.
 *
 * Environment: B (build dir), SPMTAP_BENCH_PROFILE (mi300a),
 * SPMTAP_BENCH_COUNTERS (SQ_WAVES,SQ_CYCLES,TCC_HIT,TA_TA_BUSY),
 * SPMTAP_BENCH_SEARCH_S (2), SPMTAP_BENCH_LONG.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

struct trial {
	double bytes;          /* SPM bytes decoded, from the recording's accounting */
	double samples, lost;  /* samples written / lost (timestamp gaps) */
	double emu_lost;       /* bytes the emulator lost (its truth) */
	double cpu_s, wall_s, out_bytes;
	long maxrss_kb;
	int status;
};

/* The accounting JSON: from NAME_meta.json, else the SQLite meta table. */
static json_t *load_accounting(const char *dir)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/run_meta.json", dir);
	json_t *m = json_load_file(p, 0, NULL);
	if (m) {
		json_t *a = json_incref(json_object_get(m, "accounting"));
		json_decref(m);
		return a;
	}
	snprintf(p, sizeof(p), "%s/run.db", dir);
	sqlite3 *db;
	json_t *a = NULL;
	if (sqlite3_open_v2(p, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
		sqlite3_stmt *st;
		if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'accounting'", -1, &st,
				       NULL) == SQLITE_OK) {
			if (sqlite3_step(st) == SQLITE_ROW)
				a = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
			sqlite3_finalize(st);
		}
	}
	sqlite3_close(db);
	return a;
}

static double file_size(const char *p)
{
	FILE *f = fopen(p, "rb");
	if (!f)
		return 0;
	fseek(f, 0, SEEK_END);
	double n = (double)ftell(f);
	fclose(f);
	return n;
}

static int run_trial(const char *spmtap, const char *profile, const char *counters, unsigned interval,
		     double seconds, const char *fmt, const char *tmp, struct trial *t)
{
	char dir[PATH_MAX], truth[PATH_MAX + 16], state[PATH_MAX + 16], iv[32], dur[32], cmd[PATH_MAX + 16];
	snprintf(dir, sizeof(dir), "%s/out", tmp);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return -EIO;
	snprintf(truth, sizeof(truth), "%s/truth.jsonl", tmp);
	snprintf(state, sizeof(state), "%s/state", tmp);
	snprintf(iv, sizeof(iv), "%u", interval);
	snprintf(dur, sizeof(dur), "%g", seconds);
	unlink(truth);
	memset(t, 0, sizeof(*t));
	double t0 = now_s();
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		setenv("SPMTAP_EMU_TRUTH", truth, 1);
		setenv("SPMTAP_EMU_STATE_DIR", state, 1);
		if (!freopen("/dev/null", "w", stderr))
			_exit(127);
		execl(spmtap, spmtap, "--emulate", profile, "record", "--spm", counters, "--interval", iv,
		      "--duration", dur, "-d", dir, "-o", "run", "-f", fmt, (char *)NULL);
		_exit(127);
	}
	int st;
	struct rusage ru;
	if (wait4(pid, &st, 0, &ru) < 0)
		return -errno;
	t->wall_s = now_s() - t0;
	t->cpu_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
		   ru.ru_stime.tv_usec * 1e-6;
	t->maxrss_kb = ru.ru_maxrss;
	t->status = st;

	json_t *acc = load_accounting(dir);
	size_t gi, xi;
	json_t *g, *x;
	json_array_foreach(acc, gi, g) {
		json_array_foreach(json_object_get(g, "xcc"), xi, x) {
			t->bytes += json_number_value(json_object_get(x, "sample_bytes"));
			t->samples += json_number_value(json_object_get(x, "samples"));
			t->lost += json_number_value(json_object_get(x, "lost_gap_samples"));
		}
	}
	json_decref(acc);
	char p[PATH_MAX + 32];
	snprintf(p, sizeof(p), "%s/run_spm.csv", dir);
	t->out_bytes = file_size(p);
	snprintf(p, sizeof(p), "%s/run.db", dir);
	t->out_bytes += file_size(p);

	FILE *f = fopen(truth, "r");
	if (f) {
		char line[4096];
		while (fgets(line, sizeof(line), f)) {
			json_t *j = json_loads(line, 0, NULL);
			t->emu_lost += json_number_value(json_object_get(j, "lost_bytes"));
			json_decref(j);
		}
		fclose(f);
	}
	return t->bytes > 0 ? 0 : -ENODATA;
}

static int lossless(const struct trial *t)
{
	return WIFEXITED(t->status) && WEXITSTATUS(t->status) == 0 && t->lost == 0 && t->emu_lost == 0;
}

static void print_trial(const char *what, unsigned iv, double secs, const struct trial *t, double mc)
{
	double mbs = t->bytes / secs / 1e6;
	printf("  %-8s %6u %5.0f s %9.1f MB/s %7.3fx %10.0f %10.0f %8.2f %8.1f MB %8.0f MB%s\n", what,
	       iv, secs, mbs, mbs * 1e6 / mc, t->samples, t->lost, t->cpu_s / (t->bytes / 1e9),
	       t->maxrss_kb / 1024.0, t->out_bytes / 1e6, lossless(t) ? "" : "  (loss)");
	fflush(stdout);
}

static const char header[] = "  %-8s %6s %7s %14s %8s %10s %10s %8s %11s %11s\n";

int main(void)
{
	const char *b = getenv("B") ? getenv("B") : "build";
	const char *profile = getenv("SPMTAP_BENCH_PROFILE") ? getenv("SPMTAP_BENCH_PROFILE") : "mi300a";
	const char *counters = getenv("SPMTAP_BENCH_COUNTERS") ? getenv("SPMTAP_BENCH_COUNTERS")
							       : "SQ_WAVES,SQ_CYCLES,TCC_HIT,TA_TA_BUSY";
	double search_s = getenv("SPMTAP_BENCH_SEARCH_S") ? atof(getenv("SPMTAP_BENCH_SEARCH_S")) : 2.0;
	int long_run = getenv("SPMTAP_BENCH_LONG") && atoi(getenv("SPMTAP_BENCH_LONG"));
	char spmtap[PATH_MAX];
	snprintf(spmtap, sizeof(spmtap), "%s/spmtap", b);
	char tmp[] = "/tmp/spmtap-bench-e2e-XXXXXX";
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	double mc = memcpy_rate();
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	printf("bench_e2e: %s, --spm %s, %ld CPUs, search trials %g s\n", profile, counters, ncpu,
	       search_s);
	printf("  memcpy (64 MiB, best of 8)          %10.0f MB/s\n", mc / 1e6);
	static const char *const fmts[] = { "csv", "sqlite" };
	int ok_all = 1;
	for (int fi = 0; fi < 2; fi++) {
		const char *fmt = fmts[fi];
		printf("-f %s\n", fmt);
		printf(header, "trial", "interv", "length", "SPM bytes", "xmemcpy", "samples", "lost",
		       "CPU s/GB", "peak RSS", "output");
		/* Downward search: hi lossless interval, lo lossy one (0: none yet). */
		unsigned hi = 0, lo = 0, iv = 65504;
		struct trial t;
		for (int i = 0; i < 12; i++) {
			int rc = run_trial(spmtap, profile, counters, iv, search_s, fmt, tmp, &t);
			if (rc) {
				fprintf(stderr, "trial at interval %u failed: %s (status %d)\n", iv,
					strerror(-rc), t.status);
				break;
			}
			print_trial("search", iv, search_s, &t, mc);
			if (lossless(&t))
				hi = iv;
			else
				lo = iv;
			if (!lo) {
				if (iv <= 32)
					break;
				iv = iv / 2 < 32 ? 32 : (iv / 2) / 32 * 32;
			} else if (!hi) {
				iv = iv * 2 > 65504 ? 65504 : iv * 2;
				if (iv == lo)
					break;
			} else {
				if (hi - lo <= 32 || hi - lo <= hi / 16)
					break;
				iv = (lo + hi) / 2 / 32 * 32;
			}
		}
		if (!hi) {
			printf("  no lossless interval\n");
			ok_all = 0;
			continue;
		}
		printf("  smallest lossless interval: %u SCLK cycles\n", hi);
		double lens[2] = { 10, 60 };
		for (int k = 0; k < 1 + long_run; k++) {
			if (run_trial(spmtap, profile, counters, hi, lens[k], fmt, tmp, &t) == 0)
				print_trial(k ? "long" : "steady", hi, lens[k], &t, mc);
			else
				printf("  %g s run failed (status %d)\n", lens[k], t.status);
		}
	}
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	return ok_all ? 0 : 1;
}
