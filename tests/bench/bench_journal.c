/* SPDX-License-Identifier: MIT */
/*
 * make bench: the journal (issue 15 item 3; docs/architecture.md
 * "Back-pressure policy").  Prints key=value lines; never fails on a timing.
 *
 *  1. The disk's write rate where the outputs go: DD_MB written in 8 MiB
 *     blocks, then fdatasync, timed (as `dd conv=fdatasync` does):
 *     disk_write_mbps.  Then why the journal uses O_DIRECT: the writing
 *     thread's CPU per GB for IO_MB written in 8 MiB buffers through the
 *     page cache and with O_DIRECT, alternated IO_ROUNDS times
 *     (io_buffered_cpu_s_per_gb, io_direct_cpu_s_per_gb: medians).
 *  2. A 1 s probe of the emulated device at interval PROBE_INTERVAL gives
 *     the rate per interval; the trials then pick the interval for their
 *     target rate, rounded up so that they run at or below it (the emulator
 *     may not reach it on a small host: the rate reached is printed beside
 *     the target).  The probe's rate is what was retired: at a rate the host
 *     cannot hold it would understate the device's and the trials would run
 *     above their target (they ran at 0.86-0.93x the disk when the probe was
 *     at 4096), so the probe runs where nothing is lost.
 *  3. raw_*: `record --raw` at 0.8x the disk rate: lossless or not.
 *  4. journal_*: `-f csv` with the writer stalled for the whole recording
 *     and a 64 MiB memory budget, so nearly everything goes through the
 *     journal, at 0.8x the disk rate: lossless or not, and the catch-up time
 *     after the end.
 *  5. burst_*: a BURST_S burst at >= 0.5 GB/s into `-f sqlite`: lossless
 *     through the journal or not, how much went through it, and the catch-up
 *     time after the end.
 *
 * Environment: B (build dir), SPMTAP_BENCH_PROFILE (mi300x),
 * SPMTAP_BENCH_COUNTERS (SQ_WAVES,SQ_CYCLES,TCC_HIT,TA_TA_BUSY),
 * SPMTAP_BENCH_DIR (where the outputs and the journal go: the disk measured;
 * default a new directory under /tmp), SPMTAP_BENCH_DD_MB (256),
 * SPMTAP_BENCH_IO_MB (1024), SPMTAP_BENCH_IO_ROUNDS (3),
 * SPMTAP_BENCH_JOURNAL_S (3), SPMTAP_BENCH_BURST_S (10).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

static double boot_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* dd if=/dev/zero bs=8M count=N conv=fdatasync, in MB/s (0 on an error). */
static double disk_rate(const char *dir, unsigned mb)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/dd.tmp", dir);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return 0;
	size_t blk = 8u << 20;
	char *buf = malloc(blk);
	if (!buf) {
		close(fd);
		return 0;
	}
	memset(buf, 0xA5, blk);
	double t0 = now_s();
	uint64_t done = 0, want = (uint64_t)mb << 20;
	while (done < want) {
		ssize_t n = write(fd, buf, blk);
		if (n <= 0)
			break;
		done += (uint64_t)n;
	}
	fdatasync(fd);
	double dt = now_s() - t0;
	close(fd);
	unlink(p);
	free(buf);
	return done == want && dt > 0 ? (double)done / dt / 1e6 : 0;
}

/*
 * CPU seconds of this thread per GB for mb MiB written in 8 MiB pwrites to
 * a new file, through the page cache or with O_DIRECT (the journal's way:
 * collector/lib/spill.c), fdatasync included; -1 when the file system
 * refuses.  The page cache's cost is the copy into pages the kernel first
 * allocates and charges; O_DIRECT's is the block layer's.
 */
static double write_cpu_per_gb(const char *dir, unsigned mb, bool direct)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/io.tmp", dir);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (direct ? O_DIRECT : 0), 0644);
	if (fd < 0)
		return -1;
	size_t blk = 8u << 20;
	void *buf = NULL;
	if (posix_memalign(&buf, 4096, blk)) {
		close(fd);
		unlink(p);
		return -1;
	}
	memset(buf, 0x5A, blk);
	double c0 = thread_cpu_s();
	uint64_t done = 0, want = (uint64_t)mb << 20;
	while (done < want) {
		ssize_t n = pwrite(fd, buf, blk, (off_t)done);
		if (n <= 0)
			break;
		done += (uint64_t)n;
	}
	fdatasync(fd);
	double c = thread_cpu_s() - c0;
	close(fd);
	unlink(p);
	free(buf);
	return done == want ? c / ((double)done / 1e9) : -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct run {
	int status;
	double mbps;       /* from the summary: "N bytes (X MB/s)" */
	double lost;       /* samples: the accounting's lost_gap_samples, or the summary's ~N */
	double journal_mb; /* accounting[*].spill.journal_bytes */
	double catchup_s;  /* from the recording's end to the exit */
	bool data_loss;    /* a DATA LOSS warning */
};

static char *slurp(const char *p)
{
	FILE *f = fopen(p, "rb");
	if (!f)
		return strdup("");
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)(n > 0 ? n : 0) + 1);
	size_t got = s && n > 0 ? fread(s, 1, (size_t)n, f) : 0;
	if (s)
		s[got] = 0;
	fclose(f);
	return s ? s : strdup("");
}

/* spmtap --emulate PROFILE record ARGS... (NULL-terminated), stderr kept in DIR/err. */
static void record(const char *spmtap, const char *profile, const char *dir, const char *stall,
		   double secs, const char *const *args, struct run *r)
{
	char err[PATH_MAX], state[PATH_MAX], meta[PATH_MAX], dur[32];
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(meta, sizeof(meta), "%s/run_meta.json", dir);
	snprintf(dur, sizeof(dur), "%g", secs);
	unlink(meta);
	memset(r, 0, sizeof(*r));
	const char *argv[40] = { spmtap, "--emulate", profile, "record", "--duration", dur };
	int n = 6;
	for (; *args && n < 38; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	pid_t pid = fork();
	if (pid == 0) {
		setenv("SPMTAP_EMU_STATE_DIR", state, 1);
		if (stall)
			setenv("SPMTAP_WRITER_STALL", stall, 1);
		if (!freopen(err, "w", stderr))
			_exit(127);
		execv(spmtap, (char *const *)argv);
		_exit(127);
	}
	int st = 0;
	if (pid > 0)
		waitpid(pid, &st, 0);
	double end = boot_s();
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	char *e = slurp(err);
	const char *p = strstr(e, " bytes (");
	r->mbps = p ? strtod(p + 8, NULL) : 0;
	r->data_loss = strstr(e, "DATA LOSS") != NULL;
	const char *l = strstr(e, "DATA LOSS: ~");
	if (l)
		r->lost = strtod(l + 12, NULL);
	json_t *m = json_load_file(meta, 0, NULL);
	if (m) {
		r->lost = 0;
		size_t gi, xi;
		json_t *g, *x;
		json_array_foreach(json_object_get(m, "accounting"), gi, g) {
			json_array_foreach(json_object_get(g, "xcc"), xi, x)
				r->lost += json_number_value(json_object_get(x, "lost_gap_samples"));
			r->journal_mb += json_number_value(
				json_object_get(json_object_get(g, "spill"), "journal_bytes")) / 1e6;
		}
		double start = json_number_value(json_object_get(m, "start_boottime_ns")) / 1e9;
		r->catchup_s = start > 0 ? end - (start + secs) : 0;
		json_decref(m);
	}
	free(e);
}

/* About 390 MB/s on the emulated MI300X with 4 counters: lossless on the 2-vCPU VM. */
#define PROBE_INTERVAL 16384u

/*
 * The interval (multiple of 32, 32..65504) for at most `target` MB/s, from
 * the probe's rate: the rate goes as 1/interval, so round the interval up.
 */
static unsigned interval_for(double probe_mbps, double target)
{
	if (probe_mbps <= 0 || target <= 0)
		return 4096;
	double iv = PROBE_INTERVAL * probe_mbps / target;
	if (iv < 32)
		iv = 32;
	if (iv > 65504)
		iv = 65504;
	return (unsigned)ceil(iv / 32) * 32;
}

int main(void)
{
	const char *b = getenv("B") ? getenv("B") : "build";
	const char *profile = getenv("SPMTAP_BENCH_PROFILE") ? getenv("SPMTAP_BENCH_PROFILE") : "mi300x";
	const char *counters = getenv("SPMTAP_BENCH_COUNTERS") ? getenv("SPMTAP_BENCH_COUNTERS")
							       : "SQ_WAVES,SQ_CYCLES,TCC_HIT,TA_TA_BUSY";
	unsigned dd_mb = getenv("SPMTAP_BENCH_DD_MB") ? (unsigned)atoi(getenv("SPMTAP_BENCH_DD_MB")) : 256;
	double js = getenv("SPMTAP_BENCH_JOURNAL_S") ? atof(getenv("SPMTAP_BENCH_JOURNAL_S")) : 3.0;
	double bs = getenv("SPMTAP_BENCH_BURST_S") ? atof(getenv("SPMTAP_BENCH_BURST_S")) : 10.0;
	char spmtap[PATH_MAX];
	snprintf(spmtap, sizeof(spmtap), "%s/spmtap", b);
	char tmp[] = "/tmp/spmtap-bench-journal-XXXXXX";
	const char *dir = getenv("SPMTAP_BENCH_DIR");
	if (!dir) {
		if (!mkdtemp(tmp)) {
			perror("mkdtemp");
			return 1;
		}
		dir = tmp;
	}
	mkdir(dir, 0755);
	printf("bench_journal: profile=%s counters=%s dir=%s\n", profile, counters, dir);

	double disk = disk_rate(dir, dd_mb);
	printf("disk_write_mbps=%.1f\n", disk);
	printf("disk_write_method=%u MiB in 8 MiB writes + fdatasync\n", dd_mb);

	/* The journal's write path: page cache against O_DIRECT, rounds alternated, medians. */
	unsigned io_mb = getenv("SPMTAP_BENCH_IO_MB") ? (unsigned)atoi(getenv("SPMTAP_BENCH_IO_MB")) : 1024;
	int rounds = getenv("SPMTAP_BENCH_IO_ROUNDS") ? atoi(getenv("SPMTAP_BENCH_IO_ROUNDS")) : 3;
	if (rounds < 1 || rounds > 15)
		rounds = 3;
	double bcpu[15], dcpu[15];
	for (int i = 0; i < rounds; i++) {
		bcpu[i] = write_cpu_per_gb(dir, io_mb, false);
		dcpu[i] = write_cpu_per_gb(dir, io_mb, true);
	}
	qsort(bcpu, (size_t)rounds, sizeof(double), cmp_double);
	qsort(dcpu, (size_t)rounds, sizeof(double), cmp_double);
	printf("io_method=%u MiB in 8 MiB pwrites + fdatasync, page cache and O_DIRECT alternated, median of %d\n",
	       io_mb, rounds);
	printf("io_buffered_cpu_s_per_gb=%.3f\nio_buffered_cpu_s_per_gb_range=%.3f-%.3f\n", bcpu[rounds / 2], bcpu[0],
	       bcpu[rounds - 1]);
	if (dcpu[0] < 0)
		printf("io_direct_cpu_s_per_gb=n/a (the file system refuses O_DIRECT)\n");
	else
		printf("io_direct_cpu_s_per_gb=%.3f\nio_direct_cpu_s_per_gb_range=%.3f-%.3f\n", dcpu[rounds / 2],
		       dcpu[0], dcpu[rounds - 1]);

	char odir[PATH_MAX], raw[PATH_MAX + 16], ivs[32];
	snprintf(odir, sizeof(odir), "%s/out", dir);
	snprintf(raw, sizeof(raw), "%s/out/probe.raw", dir);
	mkdir(odir, 0755);
	struct run r;
	snprintf(ivs, sizeof(ivs), "%u", PROBE_INTERVAL);
	const char *probe[] = { "--spm", counters, "--interval", ivs, "--raw", "-o", raw, NULL };
	record(spmtap, profile, odir, NULL, 1.0, probe, &r);
	double probe_mbps = r.mbps;
	printf("probe_interval=%u\nprobe_mbps=%.1f\nprobe_lost_samples=%.0f\n", PROBE_INTERVAL, probe_mbps,
	       r.lost);
	unlink(raw);

	/* raw at 0.8x the disk */
	double target = 0.8 * disk;
	unsigned iv = interval_for(probe_mbps, target);
	snprintf(ivs, sizeof(ivs), "%u", iv);
	snprintf(raw, sizeof(raw), "%s/out/raw.raw", dir);
	const char *rawargs[] = { "--spm", counters, "--interval", ivs, "--raw", "-o", raw, NULL };
	record(spmtap, profile, odir, NULL, js, rawargs, &r);
	printf("raw_target_mbps=%.1f\nraw_interval=%u\nraw_mbps=%.1f\nraw_x_disk=%.3f\nraw_lost_samples=%.0f\n"
	       "raw_lossless=%d\nraw_status=%d\n", target, iv, r.mbps, disk > 0 ? r.mbps / disk : 0, r.lost,
	       r.status == 0 && !r.data_loss, r.status);
	unlink(raw);

	/* the journal at 0.8x the disk: the writer stalled for the whole recording */
	char stall[64];
	snprintf(stall, sizeof(stall), "100:%.0f", js * 1000);
	const char *jargs[] = { "--spm", counters, "--interval", ivs, "-d", odir, "-o", "run", "-f", "csv",
				"--spill-mem", "64M", NULL };
	record(spmtap, profile, odir, stall, js, jargs, &r);
	printf("journal_interval=%u\njournal_mbps=%.1f\njournal_x_disk=%.3f\njournal_mb=%.1f\n"
	       "journal_lost_samples=%.0f\njournal_lossless=%d\njournal_catchup_s=%.2f\njournal_status=%d\n",
	       iv, r.mbps, disk > 0 ? r.mbps / disk : 0, r.journal_mb, r.lost, r.status == 0 && !r.data_loss,
	       r.catchup_s, r.status);

	/* a burst at >= 0.5 GB/s into SQLite */
	unsigned biv = interval_for(probe_mbps, 500.0);
	snprintf(ivs, sizeof(ivs), "%u", biv);
	const char *bargs[] = { "--spm", counters, "--interval", ivs, "-d", odir, "-o", "run", "-f", "sqlite",
				NULL };
	char cmd[2 * PATH_MAX + 32];
	snprintf(cmd, sizeof(cmd), "rm -f '%s'/run.db '%s'/run_meta.json", odir, odir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_journal: %s failed\n", cmd);
	record(spmtap, profile, odir, NULL, bs, bargs, &r);
	printf("burst_s=%.0f\nburst_interval=%u\nburst_mbps=%.1f\nburst_rate_reached=%d\nburst_journal_mb=%.1f\n"
	       "burst_lost_samples=%.0f\nburst_lossless=%d\nburst_catchup_s=%.2f\nburst_status=%d\n", bs, biv,
	       r.mbps, r.mbps >= 500.0, r.journal_mb, r.lost, r.status == 0 && !r.data_loss, r.catchup_s,
	       r.status);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", odir);
	if (!getenv("SPMTAP_BENCH_DIR") && system(cmd) != 0)
		fprintf(stderr, "bench_journal: %s failed\n", cmd);
	if (!getenv("SPMTAP_BENCH_DIR"))
		rmdir(dir);
	return 0;
}
