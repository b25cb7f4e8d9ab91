/* SPDX-License-Identifier: MIT */
/*
 * make bench: how fast can SPM bytes stream through the emulator and the
 * feeder without loss, and what does the feeder cost per GB?  Numbers are
 * printed beside this machine's memcpy rate, measured in the same run, so
 * they can be compared across machines; nothing here is a pass/fail check.
 *
 * Each trial runs `spmtap --emulate PROFILE record --raw` as a child at a
 * given emulated production rate and reads the emulator's ground truth
 * (bytes produced, copied, lost per XCC) afterwards.
 */
#include <errno.h>
#include <jansson.h>

#include "collector/lib/rawfile.h"
#include <limits.h>
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
	double produced, copied, lost; /* bytes, from the emulator's truth */
	double cpu_s, wall_s;
	double feeder_cpu_s;           /* from the recording's end record */
	int status;
};

static int run_trial(const char *spmtap, const char *profile, long rate_b_per_ms, double seconds,
		     const char *dir, struct trial *t)
{
	char truth[PATH_MAX], out[PATH_MAX], rate[32], dur[32];
	snprintf(truth, sizeof(truth), "%s/truth-%ld.jsonl", dir, rate_b_per_ms);
	snprintf(out, sizeof(out), "%s/rec-%ld.spmraw", dir, rate_b_per_ms);
	snprintf(rate, sizeof(rate), "%ld", rate_b_per_ms);
	snprintf(dur, sizeof(dur), "%g", seconds);
	unlink(truth);
	double t0 = now_s();
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		setenv("SPMTAP_EMU_TRUTH", truth, 1);
		setenv("SPMTAP_EMU_STATE_DIR", dir, 1);
		setenv("SPMTAP_EMU_RATE", rate, 1);
		if (!freopen("/dev/null", "w", stderr))
			_exit(127);
		execl(spmtap, spmtap, "--emulate", profile, "record", "--raw", "-o", out,
		      "--duration", dur, (char *)NULL);
		_exit(127);
	}
	int st;
	struct rusage ru;
	if (wait4(pid, &st, 0, &ru) < 0)
		return -errno;
	t->wall_s = now_s() - t0;
	t->cpu_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
		   ru.ru_stime.tv_usec * 1e-6;
	t->status = st;
	t->feeder_cpu_s = -1;
	struct rawfile_reader *r;
	char err[256];
	if (rawfile_open(&r, out, err, sizeof(err)) == 0) {
		struct rawfile_record rec;
		while (rawfile_next(r, &rec, err, sizeof(err)) > 0) {
			if (rec.type != RAWFILE_END)
				continue;
			json_t *j = json_loadb(rec.data, rec.length, 0, NULL);
			if (j)
				t->feeder_cpu_s = json_number_value(json_object_get(j, "feeder_cpu_s"));
			json_decref(j);
		}
		rawfile_close(r);
	}
	unlink(out);
	t->produced = t->copied = t->lost = 0;
	FILE *f = fopen(truth, "r");
	if (!f)
		return -ENOENT;
	char line[4096];
	while (fgets(line, sizeof(line), f)) {
		json_t *j = json_loads(line, 0, NULL);
		if (!j)
			continue;
		t->produced += json_number_value(json_object_get(j, "produced_bytes"));
		t->copied += json_number_value(json_object_get(j, "copied_bytes"));
		t->lost += json_number_value(json_object_get(j, "lost_bytes"));
		json_decref(j);
	}
	fclose(f);
	return t->produced > 0 ? 0 : -ENODATA;
}

int main(int argc, char **argv)
{
	const char *b = getenv("B") ? getenv("B") : "build";
	const char *profile = argc > 1 ? argv[1] : "mi300a";
	double secs = argc > 2 ? atof(argv[2]) : 2.0;
	char spmtap[PATH_MAX];
	snprintf(spmtap, sizeof(spmtap), "%s/spmtap", b);
	char dir[] = "/tmp/spmtap-bench-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	double mc = memcpy_rate();
	printf("bench_stream: profile %s, %g s per trial\n", profile, secs);
	printf("  memcpy (64 MiB, best of 8)          %10.0f MB/s\n", mc / 1e6);
	printf("  %-12s %12s %12s %12s %10s %12s %12s\n", "rate/XCC", "produced", "lost", "MB/s",
	       "xmemcpy", "CPU s/GB", "feeder s/GB");

	long rate = 8192, best_ok = 0;
	struct trial best = {0};
	long lo = 0, hi = 0;
	for (int i = 0; i < 14; i++) {
		struct trial t = {0};
		int rc = run_trial(spmtap, profile, rate, secs, dir, &t);
		if (rc) {
			fprintf(stderr, "trial at %ld B/ms failed: %s (status %d)\n", rate, strerror(-rc),
				t.status);
			break;
		}
		double mbs = t.copied / secs / 1e6;
		printf("  %9ld B/ms %10.1f MB %10.1f MB %12.1f %9.3fx %12.2f %12.2f%s\n", rate,
		       t.produced / 1e6, t.lost / 1e6, mbs, mbs * 1e6 / mc, t.cpu_s / (t.copied / 1e9),
		       t.feeder_cpu_s / (t.copied / 1e9), t.lost > 0 ? "  (loss)" : "");
		fflush(stdout);
		if (t.lost == 0 && WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0) {
			best_ok = rate;
			best = t;
			lo = rate;
		} else {
			hi = rate;
		}
		if (!hi)
			rate *= 2;
		else if (hi - lo <= hi / 8 || !lo)
			break;
		else
			rate = (lo + hi) / 2;
	}
	if (best_ok) {
		double mbs = best.copied / secs / 1e6;
		double gb = best.copied / 1e9;
		printf("highest lossless rate: %.1f MB/s (%.3fx memcpy)\n", mbs, mbs * 1e6 / mc);
		printf("feeder thread CPU: %.2f s per GB (%.3f s/GB of it would be one memcpy of "
		       "the bytes; the rest is the emulated kernel producing and copying them)\n",
		       best.feeder_cpu_s / gb, 1.0 / (mc / 1e9));
		printf("whole process CPU: %.2f s per GB (feeder, writer, framing, pattern check)\n",
		       best.cpu_s / gb);
	} else {
		printf("no lossless trial\n");
	}
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return best_ok ? 0 : 1;
}
