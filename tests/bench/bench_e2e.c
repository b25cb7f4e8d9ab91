/* SPDX-License-Identifier: MIT */
/*
 * make bench: end to end at line rate (issue 15).  An emulated MI300X (8
 * XCC), 4 counters, at an interval that streams >= 1 GB/s (4096: about
 * 1.5 GB/s), for SECONDS, recorded by `spmtap --emulate mi300x record` to
 * each of Perfetto, CSV, the raw container and SQLite in turn, one child
 * each.  Per format it prints key=value lines (tests/bench/run.sh collects
 * them; nothing here fails on a number):
 *
 *   e2e_FMT_bytes, _gbps            SPM bytes retired (the recording's cost object) and per second
 *   e2e_FMT_device_gbps             what the emulated device produced per second (its truth)
 *   e2e_FMT_samples_truth           samples the emulated device produced (SPMTAP_EMU_TRUTH)
 *   e2e_FMT_samples_lost_truth      of them lost in the run (overflow, no buffer, fault), from the truth
 *   e2e_FMT_samples_lost_recorder   the recorder's own count (timestamp gaps)
 *   e2e_FMT_collector_cpu_s_per_gb  the recorder's CPU, all threads, per GB (the cost object)
 *   e2e_FMT_stage_NAME_s_per_gb     per stage (feeder, decode, writer_csv, ...)
 *   e2e_FMT_memcpy_s_per_gb         one memcpy of the bytes, timed in the recorder
 *   e2e_FMT_device_cpu_s_per_gb     the emulated device's own CPU per GB it produced (truth
 *                                   "device_cpu_s"; n/a when the emulator does not report it);
 *                                   e2e_FMT_device says where it ran (process | inline)
 *   e2e_FMT_rss_peak_kb, _rss_half_kb, _rss_end_kb
 *                                   the recorder's VmHWM while recording, VmRSS at half time and
 *                                   near the end (flat = bounded memory); _maxrss_kb is wait4's,
 *                                   which also holds the memcpy reference's 128 MiB after the run
 *   e2e_FMT_output_bytes            the files written
 *   e2e_FMT_lossless, _lossless_gbps  1 when the recorder exited 0 and neither the truth nor the
 *                                   recorder lost a sample; the rate then (else "none")
 *
 * The raw container is written at an interval that keeps it under 0.8x
 * the disk write rate measured first (e2e_disk_write_gbps: 512 MiB with
 * fdatasync into the output directory), since its bytes all go to disk,
 * from the rate `spmtap plan` gives for the interval (e2e_planned_gbps);
 * every run is shortened to fit half the free space (said as _seconds).
 * `--search` adds, per format, the smallest lossless interval found with
 * short trials (the lossless end-to-end rate; SPMTAP_BENCH_SEARCH_S, 2 s).
 *
 * Usage: bench_e2e [SECONDS] [--interval N] [--formats perfetto,csv,raw,sqlite]
 *                  [--profile P] [--search]
 * Environment: B (build dir), SPMTAP_BENCH_COUNTERS
 * (SQ_WAVES,SQ_CYCLES,TCC_HIT,TA_TA_BUSY), SPMTAP_BENCH_DIR (where the
 * outputs go, default /tmp), SPMTAP_BENCH_SEARCH_S.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

struct trial {
	double secs;                      /* the recording's length asked for */
	double bytes;                     /* cost.bytes: SPM bytes retired */
	double samples_truth, lost_truth; /* the device's: produced, lost in the run */
	double lost_rec;                  /* the recorder's count */
	double truth_produced, sample_bytes, sclk_mhz;
	double device_cpu_s;              /* < 0: not reported */
	char device[16];                  /* truth "device": process | inline ("" not reported) */
	double out_bytes, cpu_rusage_s;
	long rss_peak, rss_half, rss_end, maxrss;
	double lost_overflow_b, lost_nobuf_b, lost_late_b; /* the truth's loss by reason, bytes */
	double poll_gap_max_ms, rotate_max_ms; /* the recorder's accounting: the kernel's longest hold */
	char verdict[2048];               /* the recorder's own loss lines (its summary on stderr) */
	json_t *cost;                     /* the recording's cost object */
	int status;
};

static double dnum(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }

/* ---- the recorder's memory, from /proc while it runs ---------------------------------------- */

static int ppid_comm(pid_t pid, pid_t *ppid, char *comm, size_t len)
{
	char p[64], buf[512];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(p, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *l = strchr(buf, '('), *r = strrchr(buf, ')');
	if (!l || !r || r < l)
		return -1;
	snprintf(comm, len, "%.*s", (int)(r - l - 1), l + 1);
	int pp;
	if (sscanf(r + 2, "%*c %d", &pp) != 1)
		return -1;
	*ppid = pp;
	return 0;
}

/* The recorder: a descendant of root named "spmtap" (root itself becomes the emulator's supervisor). */
static pid_t find_recorder(pid_t root)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = 0;
	while (d && !found && (e = readdir(d))) {
		pid_t pid = (pid_t)atoi(e->d_name), pp, cur;
		char comm[64];
		if (pid <= 0 || pid == root || ppid_comm(pid, &pp, comm, sizeof(comm)) || strcmp(comm, "spmtap"))
			continue;
		for (cur = pp; cur > 1; ) {
			if (cur == root) {
				found = pid;
				break;
			}
			char c2[64];
			if (ppid_comm(cur, &cur, c2, sizeof(c2)))
				break;
		}
	}
	if (d)
		closedir(d);
	return found;
}

static long status_kb(pid_t pid, const char *key)
{
	char p[64], line[256];
	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	FILE *f = fopen(p, "r");
	long v = -1;
	size_t kl = strlen(key);
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = atol(line + kl + 1);
			break;
		}
	if (f)
		fclose(f);
	return v;
}

static int dir_nonempty(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int any = 0;
	while (d && !any && (e = readdir(d)))
		any = e->d_name[0] != '.';
	if (d)
		closedir(d);
	return any;
}

static double dir_bytes(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	double sum = 0;
	char p[PATH_MAX + 256];
	struct stat sb;
	while (d && (e = readdir(d))) {
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (e->d_name[0] != '.' && stat(p, &sb) == 0 && S_ISREG(sb.st_mode))
			sum += (double)sb.st_size;
	}
	if (d)
		closedir(d);
	return sum;
}

/* ---- what the run left: the truth, the metadata or the raw end record ------------------------ */

static void read_truth(const char *path, struct trial *t)
{
	FILE *f = fopen(path, "r");
	char line[16384];
	/* device_cpu_s is the same on every XCC line of one GPU: once per gpu_id */
	unsigned seen[64];
	size_t nseen = 0;
	t->device_cpu_s = -1;
	while (f && fgets(line, sizeof(line), f)) {
		json_t *j = json_loads(line, 0, NULL);
		if (!j)
			continue;
		json_t *L = json_object_get(j, "layout");
		double sb = dnum(L, "sample_bytes");
		if (sb > 0) {
			t->sample_bytes = sb;
			t->sclk_mhz = dnum(L, "sclk_mhz");
		}
		double lost = dnum(j, "lost_overflow_bytes") + dnum(j, "lost_no_buffer_bytes") +
			      dnum(j, "lost_injected_bytes") + dnum(j, "lost_efault_bytes");
		t->truth_produced += dnum(j, "produced_bytes");
		t->lost_overflow_b += dnum(j, "lost_overflow_bytes");
		t->lost_nobuf_b += dnum(j, "lost_no_buffer_bytes");
		t->lost_late_b += dnum(j, "lost_late_bytes");
		if (sb > 0) {
			t->samples_truth += floor(dnum(j, "produced_bytes") / sb);
			t->lost_truth += ceil(lost / sb);
		} else {
			t->lost_truth += lost > 0; /* no layout: at least say something was lost */
		}
		if (json_is_string(json_object_get(j, "device")))
			snprintf(t->device, sizeof(t->device), "%s", json_string_value(json_object_get(j, "device")));
		json_t *dc = json_object_get(j, "device_cpu_s");
		unsigned gid = (unsigned)dnum(j, "gpu_id");
		size_t k = 0;
		while (k < nseen && seen[k] != gid)
			k++;
		if (json_is_number(dc) && k == nseen && nseen < 64) {
			seen[nseen++] = gid;
			t->device_cpu_s = (t->device_cpu_s < 0 ? 0 : t->device_cpu_s) + json_number_value(dc);
		}
		json_decref(j);
	}
	if (f)
		fclose(f);
}

/* The raw container's end record: the last JSON object of the file (docs/raw-format.md). */
static json_t *raw_end_record(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 20;
	char *buf = malloc(cap);
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	long from = size > (long)cap ? size - (long)cap : 0;
	fseek(f, from, SEEK_SET);
	size_t n = buf ? fread(buf, 1, cap, f) : 0;
	fclose(f);
	json_t *end = NULL;
	for (size_t i = 0; i < n && !end; i++) {
		if (buf[i] != '{' || i + 1 >= n || buf[i + 1] != '"')
			continue;
		json_t *j = json_loadb(buf + i, n - i, JSON_DISABLE_EOF_CHECK, NULL);
		if (j && json_object_get(j, "duration_s") && json_object_get(j, "cost"))
			end = j;
		else
			json_decref(j);
	}
	free(buf);
	return end;
}

static void read_recording(const char *dir, const char *fmt, struct trial *t)
{
	char p[PATH_MAX + 64];
	json_t *cost = NULL;
	if (!strcmp(fmt, "raw")) {
		snprintf(p, sizeof(p), "%s/run.raw", dir);
		json_t *end = raw_end_record(p);
		t->lost_rec = dnum(end, "lost_samples");
		cost = json_incref(json_object_get(end, "cost"));
		json_decref(end);
	} else {
		snprintf(p, sizeof(p), "%s/run_meta.json", dir);
		json_t *m = json_load_file(p, 0, NULL);
		size_t gi, xi;
		json_t *g, *x;
		json_array_foreach(json_object_get(m, "accounting"), gi, g) {
			json_array_foreach(json_object_get(g, "xcc"), xi, x)
				t->lost_rec += dnum(x, "lost_gap_samples");
			if (dnum(g, "poll_gap_max_ms") > t->poll_gap_max_ms)
				t->poll_gap_max_ms = dnum(g, "poll_gap_max_ms");
			if (dnum(g, "rotate_max_ms") > t->rotate_max_ms)
				t->rotate_max_ms = dnum(g, "rotate_max_ms");
		}
		cost = json_incref(json_object_get(m, "cost"));
		json_decref(m);
	}
	t->cost = cost;
	t->bytes = dnum(cost, "bytes");
}

/* ---- one recording ---------------------------------------------------------------------------- */

static int run_trial(const char *spmtap, const char *profile, const char *counters, unsigned interval,
		     double seconds, const char *fmt, const char *tmp, struct trial *t)
{
	char dir[PATH_MAX], truth[PATH_MAX + 16], state[PATH_MAX + 16], iv[32], dur[32],
		cmd[PATH_MAX + 16], raw[PATH_MAX + 16];
	snprintf(dir, sizeof(dir), "%s/out", tmp);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s/state'", dir, tmp);
	if (system(cmd) != 0 || mkdir(dir, 0755))
		return -EIO;
	snprintf(truth, sizeof(truth), "%s/truth.jsonl", tmp);
	snprintf(state, sizeof(state), "%s/state", tmp);
	snprintf(raw, sizeof(raw), "%s/run.raw", dir);
	snprintf(iv, sizeof(iv), "%u", interval);
	snprintf(dur, sizeof(dur), "%g", seconds);
	unlink(truth);
	memset(t, 0, sizeof(*t));
	t->secs = seconds;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		setenv("SPMTAP_EMU_TRUTH", truth, 1);
		setenv("SPMTAP_EMU_STATE_DIR", state, 1);
		/* the summary goes to a file beside the outputs: its loss lines are printed */
		char log[PATH_MAX + 16];
		snprintf(log, sizeof(log), "%s.log", dir);
		if (!freopen(log, "w", stderr) || !freopen("/dev/null", "w", stdout))
			_exit(127);
		if (!strcmp(fmt, "raw"))
			execl(spmtap, spmtap, "--emulate", profile, "record", "--spm", counters, "--interval", iv,
			      "--duration", dur, "--raw", "-o", raw, (char *)NULL);
		else
			execl(spmtap, spmtap, "--emulate", profile, "record", "--spm", counters, "--interval", iv,
			      "--duration", dur, "-d", dir, "-o", "run", "-f", fmt, (char *)NULL);
		_exit(127);
	}
	/* Memory while it records: from the first file in the output directory for `seconds`. */
	pid_t rec = 0;
	double t_open = 0;
	int st = 0;
	struct rusage ru;
	for (;;) {
		pid_t w = wait4(pid, &st, WNOHANG, &ru);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return -errno;
		if (!rec)
			rec = find_recorder(pid);
		if (rec && !t_open && dir_nonempty(dir))
			t_open = now_s();
		double el = t_open ? now_s() - t_open : -1;
		if (rec && el >= 0 && el < seconds - 0.2) {
			long hwm = status_kb(rec, "VmHWM"), rss = status_kb(rec, "VmRSS");
			if (hwm > t->rss_peak)
				t->rss_peak = hwm;
			if (rss > 0 && !t->rss_half && el >= seconds / 2)
				t->rss_half = rss;
			if (rss > 0)
				t->rss_end = rss;
		}
		usleep(100000);
	}
	t->cpu_rusage_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
			  ru.ru_stime.tv_usec * 1e-6;
	t->maxrss = ru.ru_maxrss;
	t->status = st;
	read_recording(dir, fmt, t);
	read_truth(truth, t);
	{
		char log[PATH_MAX + 16], line[1024];
		snprintf(log, sizeof(log), "%s.log", dir);
		FILE *lf = fopen(log, "r");
		size_t vl = 0;
		while (lf && fgets(line, sizeof(line), lf))
			if ((strstr(line, "DATA LOSS") || strstr(line, "lossless") || strstr(line, "spill queue") ||
			     strstr(line, "cost:")) && vl + strlen(line) + 3 < sizeof(t->verdict))
				vl += (size_t)snprintf(t->verdict + vl, sizeof(t->verdict) - vl, "# %s", line);
		if (lf)
			fclose(lf);
		unlink(log);
	}
	t->out_bytes = dir_bytes(dir);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return t->cost ? 0 : -ENODATA;
}

static int lossless(const struct trial *t)
{
	return WIFEXITED(t->status) && WEXITSTATUS(t->status) == 0 && t->lost_truth == 0 && t->lost_rec == 0 &&
	       t->bytes > 0;
}

static void kv_num(const char *fmt, const char *key, double v, const char *pf)
{
	printf("e2e_%s_%s=", fmt, key);
	printf(pf, v);
	printf("\n");
}

static void print_trial(const char *fmt, unsigned iv, const struct trial *t)
{
	double gb = t->bytes / 1e9;
	printf("e2e_%s_interval=%u\n", fmt, iv);
	kv_num(fmt, "seconds", t->secs, "%g");
	kv_num(fmt, "exit_status", WIFEXITED(t->status) ? WEXITSTATUS(t->status) : 128 + WTERMSIG(t->status), "%.0f");
	kv_num(fmt, "bytes", t->bytes, "%.0f");
	kv_num(fmt, "gbps", gb / t->secs, "%.3f");
	kv_num(fmt, "device_gbps", t->truth_produced / 1e9 / t->secs, "%.3f");
	kv_num(fmt, "samples_truth", t->samples_truth, "%.0f");
	kv_num(fmt, "samples_lost_truth", t->lost_truth, "%.0f");
	kv_num(fmt, "samples_lost_recorder", t->lost_rec, "%.0f");
	kv_num(fmt, "truth_lost_overflow_bytes", t->lost_overflow_b, "%.0f");
	kv_num(fmt, "truth_lost_no_buffer_bytes", t->lost_nobuf_b, "%.0f");
	kv_num(fmt, "truth_lost_late_bytes", t->lost_late_b, "%.0f");
	kv_num(fmt, "poll_gap_max_ms", t->poll_gap_max_ms, "%.1f");
	kv_num(fmt, "rotate_max_ms", t->rotate_max_ms, "%.1f");
	if (t->verdict[0])
		printf("%s", t->verdict);
	kv_num(fmt, "collector_cpu_s", dnum(t->cost, "collector_cpu_s"), "%.3f");
	kv_num(fmt, "collector_cpu_s_per_gb", gb > 0 ? dnum(t->cost, "collector_cpu_s") / gb : 0, "%.3f");
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(t->cost, "stages"), i, s) {
		char key[96];
		snprintf(key, sizeof(key), "stage_%s_s_per_gb", json_string_value(json_object_get(s, "stage")));
		for (char *c = key; *c; c++)
			if (*c == ':' || *c == '-')
				*c = '_';
		kv_num(fmt, key, dnum(s, "cpu_s_per_gb"), "%.3f");
	}
	kv_num(fmt, "other_cpu_s_per_gb", gb > 0 ? dnum(t->cost, "other_cpu_s") / gb : 0, "%.3f");
	kv_num(fmt, "memcpy_s_per_gb", dnum(t->cost, "memcpy_s_per_gb"), "%.4f");
	if (t->device_cpu_s >= 0 && t->truth_produced > 0)
		kv_num(fmt, "device_cpu_s_per_gb", t->device_cpu_s / (t->truth_produced / 1e9), "%.3f");
	else
		printf("e2e_%s_device_cpu_s_per_gb=n/a\n", fmt);
	printf("e2e_%s_device=%s\n", fmt, t->device[0] ? t->device : "n/a");
	kv_num(fmt, "process_tree_cpu_s", t->cpu_rusage_s, "%.3f");
	kv_num(fmt, "rss_peak_kb", (double)t->rss_peak, "%.0f");
	kv_num(fmt, "rss_half_kb", (double)t->rss_half, "%.0f");
	kv_num(fmt, "rss_end_kb", (double)t->rss_end, "%.0f");
	kv_num(fmt, "maxrss_kb", (double)t->maxrss, "%.0f");
	kv_num(fmt, "output_bytes", t->out_bytes, "%.0f");
	kv_num(fmt, "lossless", lossless(t), "%.0f");
	if (lossless(t))
		kv_num(fmt, "lossless_gbps", gb / t->secs, "%.3f");
	else
		printf("e2e_%s_lossless_gbps=none\n", fmt);
	fflush(stdout);
}

/* Smallest lossless interval with short trials, downwards from `hi` (in steps of 32). */
static void search(const char *spmtap, const char *profile, const char *counters, const char *fmt,
		   const char *tmp, double secs)
{
	unsigned hi = 0, lo = 0, iv = 65504;
	struct trial t;
	for (int i = 0; i < 12; i++) {
		if (run_trial(spmtap, profile, counters, iv, secs, fmt, tmp, &t)) {
			json_decref(t.cost);
			break;
		}
		if (lossless(&t))
			hi = iv;
		else
			lo = iv;
		printf("# search %s: interval %u, %.3f GB/s, %s\n", fmt, iv, t.bytes / 1e9 / secs,
		       lossless(&t) ? "lossless" : "lost samples");
		fflush(stdout);
		json_decref(t.cost);
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
	if (hi)
		printf("e2e_%s_search_lossless_interval=%u\n", fmt, hi);
	else
		printf("e2e_%s_search_lossless_interval=none\n", fmt);
}

/*
 * The planned rate at `interval`, bytes/s over every XCC, from `spmtap plan`
 * ("... MB/s for 8 XCC", at the family's assumed SCLK); 0 if it cannot say.
 */
static double plan_rate(const char *spmtap, const char *profile, const char *counters, unsigned interval,
			const char *tmp)
{
	char cmd[3 * PATH_MAX], line[1024];
	snprintf(cmd, sizeof(cmd), "SPMTAP_EMU_STATE_DIR='%s/plan-state' '%s' --emulate %s plan --spm %s "
		 "--interval %u 2>/dev/null", tmp, spmtap, profile, counters, interval);
	FILE *f = popen(cmd, "r");
	double mbs = 0;
	while (f && fgets(line, sizeof(line), f)) {
		const char *r = strstr(line, "MB/s for ");
		if (!strncmp(line, "rate", 4) && r) {
			const char *b = r;
			while (b > line && (b[-1] == ' ' || b[-1] == '.' || (b[-1] >= '0' && b[-1] <= '9')))
				b--;
			mbs = atof(b);
		}
	}
	if (f)
		pclose(f);
	return mbs * 1e6;
}

/* Bytes/s written to dir with fdatasync: 512 MiB in 8 MiB writes. */
static double disk_rate(const char *dir)
{
	char p[PATH_MAX + 16];
	snprintf(p, sizeof(p), "%s/disk.bin", dir);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 0;
	size_t blk = 8u << 20, total = 512u << 20, done = 0;
	char *b = malloc(blk);
	if (b)
		memset(b, 0x5a, blk);
	double t0 = now_s();
	while (b && done < total) {
		ssize_t w = write(fd, b, blk);
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	fdatasync(fd);
	double dt = now_s() - t0;
	close(fd);
	unlink(p);
	free(b);
	return done && dt > 0 ? (double)done / dt : 0;
}

int main(int argc, char **argv)
{
	const char *b = getenv("B") ? getenv("B") : "build";
	const char *profile = "mi300x", *formats = "perfetto,csv,raw,sqlite";
	const char *counters = getenv("SPMTAP_BENCH_COUNTERS") ? getenv("SPMTAP_BENCH_COUNTERS")
							       : "SQ_WAVES,SQ_CYCLES,TCC_HIT,TA_TA_BUSY";
	double secs = 60, search_s = getenv("SPMTAP_BENCH_SEARCH_S") ? atof(getenv("SPMTAP_BENCH_SEARCH_S")) : 2.0;
	unsigned interval = 4096;
	int do_search = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--interval") && i + 1 < argc)
			interval = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--formats") && i + 1 < argc)
			formats = argv[++i];
		else if (!strcmp(argv[i], "--profile") && i + 1 < argc)
			profile = argv[++i];
		else if (!strcmp(argv[i], "--search"))
			do_search = 1;
		else if (atof(argv[i]) > 0)
			secs = atof(argv[i]);
		else {
			fprintf(stderr, "usage: bench_e2e [SECONDS] [--interval N] [--formats LIST] "
					"[--profile P] [--search]\n");
			return 2;
		}
	}
	char spmtap[PATH_MAX];
	snprintf(spmtap, sizeof(spmtap), "%s/spmtap", b);
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s/spmtap-bench-e2e-XXXXXX",
		 getenv("SPMTAP_BENCH_DIR") ? getenv("SPMTAP_BENCH_DIR") : "/tmp");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	double mc = memcpy_rate(), disk = disk_rate(tmp);
	printf("# bench_e2e: %s, --spm %s, interval %u, %g s per format, %ld CPUs, outputs in %s\n", profile,
	       counters, interval, secs, sysconf(_SC_NPROCESSORS_ONLN), tmp);
	printf("e2e_memcpy_gbps=%.2f\n", mc / 1e9);
	printf("e2e_disk_write_gbps=%.3f\n", disk / 1e9);
	fflush(stdout);
	/* SPM bytes/s at `interval`: the plan's, else what the first run's device produced */
	double rate = plan_rate(spmtap, profile, counters, interval, tmp);
	if (rate > 0)
		printf("e2e_planned_gbps=%.3f\n", rate / 1e9);
	char list[256];
	snprintf(list, sizeof(list), "%s", formats);
	for (char *save = NULL, *fmt = strtok_r(list, ",", &save); fmt; fmt = strtok_r(NULL, ",", &save)) {
		unsigned iv = interval;
		/* Raw writes every byte: keep it under 0.8x the disk rate. */
		if (!strcmp(fmt, "raw") && rate > 0 && disk > 0 && rate > 0.8 * disk) {
			iv = (unsigned)ceil(interval * rate / (0.8 * disk) / 32.0) * 32;
			if (iv > 65504)
				iv = 65504;
			printf("# raw: interval %u keeps %.2f GB/s under 0.8x the disk's %.2f GB/s\n", iv,
			       rate * interval / iv / 1e9, disk / 1e9);
		}
		/* Half the free space at most (outputs: raw 1x the SPM bytes, the others well under). */
		double s = secs;
		struct statvfs vf;
		double r = rate > 0 ? rate * interval / iv : 2e9;
		double per_byte = !strcmp(fmt, "raw") ? 1.05 : !strcmp(fmt, "sqlite") ? 0.6 : 0.3;
		if (statvfs(tmp, &vf) == 0) {
			double room = 0.5 * (double)vf.f_bavail * (double)vf.f_frsize;
			if (r * per_byte * s > room) {
				s = floor(room / (r * per_byte));
				printf("# %s: %g s instead of %g s to fit half the free space (%.1f GB)\n", fmt, s, secs,
				       room / 1e9);
			}
		}
		if (s < 1) {
			printf("e2e_%s_skipped=no room\n", fmt);
			continue;
		}
		struct trial t;
		int rc = run_trial(spmtap, profile, counters, iv, s, fmt, tmp, &t);
		if (rc) {
			printf("e2e_%s_failed=%s (status %d)\n", fmt, strerror(-rc), t.status);
			json_decref(t.cost);
			continue;
		}
		/* The device's rate at `interval`, from what it produced (raw's interval comes from it). */
		if (!rate && t.truth_produced > 0)
			rate = t.truth_produced / s * iv / interval;
		print_trial(fmt, iv, &t);
		json_decref(t.cost);
		if (do_search)
			search(spmtap, profile, counters, fmt, tmp, search_s);
	}
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	return 0;
}
