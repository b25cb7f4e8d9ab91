/* SPDX-License-Identifier: MIT */
/*
 * The SQLite writer alone (collector/lib/write_sqlite.c), fed synthetic
 * decoded chunks as the session would feed it: XCC streams of an emulated
 * MI300X with a few counters, chunks of one stream after another, a flush
 * and the whole metadata every 500 ms of wall time (session_outputs.c), as
 * fast as the writer takes them for --seconds of wall time (or, with
 * --emulated S, exactly S seconds of emulated samples, for a run that does
 * the same work every time: deciles then by samples).  It prints the
 * writer's rate in the first and the last 10 % of the run (does it slow down
 * as the tables grow?) and the writer's CPU per GB of the SPM bytes those
 * samples stand for (--sample-bytes per sample per XCC: 384 for 4 counters
 * on gfx942, `spmtap plan`).  key=value lines; never fails on a timing.
 *
 *   build/bench/bench_sqlite [--seconds 10 | --emulated S] [--xcc 8] [--cols 4] [--chunk 4096]
 *                            [--sample-bytes 384] [--dir DIR] [--keep]
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "collector/lib/writer.h"

static long arg_long(int argc, char **argv, const char *name, long def)
{
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], name))
			return strtol(argv[i + 1], NULL, 0);
	return def;
}

static const char *arg_str(int argc, char **argv, const char *name, const char *def)
{
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], name))
			return argv[i + 1];
	return def;
}

static int has_flag(int argc, char **argv, const char *name)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], name))
			return 1;
	return 0;
}

static void die(const char *what, const char *err)
{
	fprintf(stderr, "bench_sqlite: %s: %s\n", what, err);
	exit(1);
}

static off_t file_size(const char *p)
{
	struct stat sb;
	return stat(p, &sb) ? 0 : sb.st_size;
}

int main(int argc, char **argv)
{
	double seconds = (double)arg_long(argc, argv, "--seconds", 10);
	double emulated = (double)arg_long(argc, argv, "--emulated", 0);
	uint32_t nx = (uint32_t)arg_long(argc, argv, "--xcc", 8);
	uint32_t nc = (uint32_t)arg_long(argc, argv, "--cols", 4);
	uint32_t chunk = (uint32_t)arg_long(argc, argv, "--chunk", 4096);
	double sample_bytes = (double)arg_long(argc, argv, "--sample-bytes", 384);
	const char *dir_arg = arg_str(argc, argv, "--dir", NULL);
	int keep = has_flag(argc, argv, "--keep");
	if (seconds <= 0 || !nx || !nc || !chunk || nx > 64 || nc > 256) {
		fprintf(stderr, "bench_sqlite: bad arguments\n");
		return 64;
	}

	char dir[PATH_MAX], path[PATH_MAX + 16], err[512];
	if (dir_arg)
		snprintf(dir, sizeof(dir), "%s", dir_arg);
	else {
		snprintf(dir, sizeof(dir), "%s/bench_sqlite.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (!mkdtemp(dir))
			die("mkdtemp", strerror(errno));
	}
	snprintf(path, sizeof(path), "%s/bench.db", dir);

	/* Columns and streams as session_gpu.c declares them: u64 counters, one stream per XCC. */
	static const char *const names[] = { "SQ_WAVES", "SQ_CYCLES", "TCC_HIT", "TA_TA_BUSY" };
	struct series_column *cols = calloc(nc, sizeof(*cols));
	char(*cname)[32] = calloc(nc, sizeof(*cname));
	struct series_stream *st = calloc(nx, sizeof(*st));
	int64_t *host = calloc(chunk, sizeof(*host));
	uint64_t *ticks = calloc(chunk, sizeof(*ticks));
	uint64_t **vals = calloc(nc, sizeof(*vals));
	if (!cols || !cname || !st || !host || !ticks || !vals)
		die("setup", "out of memory");
	for (uint32_t c = 0; c < nc; c++) {
		if (c < 4)
			snprintf(cname[c], sizeof(cname[c]), "%s", names[c]);
		else
			snprintf(cname[c], sizeof(cname[c]), "CTR_%02u", c);
		cols[c] = (struct series_column){ .name = cname[c], .unit = "count", .type = SERIES_U64 };
		vals[c] = calloc(chunk, sizeof(uint64_t));
		if (!vals[c])
			die("setup", "out of memory");
		/* Counter-like values: small, varying, a few bytes each as SQLite stores them. */
		uint64_t x = 0x9e3779b97f4a7c15ull * (c + 1);
		for (uint32_t i = 0; i < chunk; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			vals[c][i] = (x % 40000u) + 100u * c;
		}
	}
	for (uint32_t x = 0; x < nx; x++)
		st[x] = (struct series_stream){ .id = x + 1, .source = "spm", .gpu = 0, .gpu_id = 0x2001,
						.xcc = (int32_t)x, .device_name = "AMD Instinct MI300X",
						.tick_domain = "spm_ticks", .ncols = nc, .cols = cols };

	/* 32768 SCLK at 2.1 GHz: one sample per XCC every 15.6 us of emulated time. */
	const int64_t dt_ns = 15604;
	const int64_t t0_ns = 1000000000000ll;
	struct writer_meta meta = { .spmtap_version = "bench", .command_line = "bench_sqlite",
				    .hostname = "bench", .start_boottime_ns = t0_ns,
				    .spm_clock_hz = 100e6, .extra_json = "{}" };
	const struct writer_ops *ops = &writer_sqlite;
	struct writer *w = NULL;
	double cpu = 0, c0 = thread_cpu_s();
	if (ops->open(&w, path, &meta, err, sizeof(err)))
		die("open", err);
	for (uint32_t x = 0; x < nx; x++)
		if (ops->begin(w, &st[x], err, sizeof(err)))
			die("begin", err);
	cpu += thread_cpu_s() - c0;

	/* A metadata object about as large as a real one (streams, accounting, cost). */
	char metajson[4096];
	int ml = snprintf(metajson, sizeof(metajson), "{\"complete\":false,\"pad\":\"");
	while (ml < 2048)
		metajson[ml++] = 'x';
	snprintf(metajson + ml, sizeof(metajson) - (size_t)ml, "\"}");

	/* Per 1/10 of the run: samples written (all XCCs) and the writer's CPU. */
	uint64_t dec_samples[10] = { 0 };
	double dec_cpu[10] = { 0 }, dec_wall[10] = { 0 };
	uint64_t samples = 0, idx = 0; /* idx: samples per stream so far */
	/* --emulated: this many samples per stream, whole chunks */
	uint64_t want = emulated > 0 ? ((uint64_t)(emulated * 1e9 / (double)dt_ns) + chunk - 1) / chunk * chunk : 0;
	double w0 = now_s(), next_meta = want ? 0.5 : w0 + 0.5;
	const void *vptr[256];
	for (uint32_t c = 0; c < nc; c++)
		vptr[c] = vals[c];
	for (;;) {
		double now = now_s();
		if (want ? idx >= want : now - w0 >= seconds)
			break;
		int dec = want ? (int)(idx * 10 / want) : (int)((now - w0) / seconds * 10);
		if (dec > 9)
			dec = 9;
		for (uint32_t i = 0; i < chunk; i++) {
			host[i] = t0_ns + (int64_t)(idx + i) * dt_ns;
			ticks[i] = (idx + i) * 32768u;
		}
		double cs = thread_cpu_s(), ws = now;
		for (uint32_t x = 0; x < nx; x++) {
			struct series_chunk ch = { .stream = &st[x], .n = chunk, .host_ns = host, .ticks = ticks,
						   .values = vptr };
			if (ops->write(w, &ch, err, sizeof(err)))
				die("write", err);
		}
		/* the session's flush and metadata every 500 ms: of wall time, or (--emulated) of emulated time */
		double clock = want ? (double)(idx + chunk) * (double)dt_ns * 1e-9 : now;
		if (clock >= next_meta) {
			if (ops->flush(w, err, sizeof(err)) || ops->meta(w, metajson, err, sizeof(err)))
				die("flush", err);
			next_meta = clock + 0.5;
		}
		double ce = thread_cpu_s() - cs;
		cpu += ce;
		dec_cpu[dec] += ce;
		dec_wall[dec] += now_s() - ws;
		dec_samples[dec] += (uint64_t)chunk * nx;
		samples += (uint64_t)chunk * nx;
		idx += chunk;
	}
	double wall_write = now_s() - w0;
	double ce0 = thread_cpu_s(), we0 = now_s();
	if (ops->note(w, "recording_meta", metajson, err, sizeof(err)) || ops->end(w, err, sizeof(err)))
		die("end", err);
	double end_cpu = thread_cpu_s() - ce0, end_wall = now_s() - we0;
	cpu += end_cpu;

	double spm_gb = (double)samples * sample_bytes / 1e9;
	/* rates per tenth: the samples of that tenth over the wall time they took */
	double first = dec_wall[0] > 0 ? dec_samples[0] / dec_wall[0] : 0;
	double last = dec_wall[9] > 0 ? dec_samples[9] / dec_wall[9] : 0;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	char fin[PATH_MAX + 16];
	snprintf(fin, sizeof(fin), "%s", path);
	off_t fsz = file_size(fin);
	printf("bench=sqlite\n");
	printf("streams=%u\ncols=%u\nchunk=%u\nsample_bytes=%.0f\n", nx, nc, chunk, sample_bytes);
	printf("seconds=%.1f\n", wall_write);
	printf("samples=%" PRIu64 "\ncells=%" PRIu64 "\n", samples, samples * nc);
	printf("spm_gb=%.3f\n", spm_gb);
	printf("samples_per_s_first10=%.0f\nsamples_per_s_last10=%.0f\n", first, last);
	printf("last_over_first=%.3f\n", first > 0 ? last / first : 0);
	printf("cpu_per_msample_first10=%.3f\ncpu_per_msample_last10=%.3f\n",
	       dec_samples[0] ? dec_cpu[0] / (dec_samples[0] / 1e6) : 0,
	       dec_samples[9] ? dec_cpu[9] / (dec_samples[9] / 1e6) : 0);
	/* the trend over the run, tenth by tenth: flat if the cost per row does not grow with the tables */
	printf("cpu_per_msample_tenths=");
	for (int d = 0; d < 10; d++)
		printf("%s%.3f", d ? "," : "", dec_samples[d] ? dec_cpu[d] / (dec_samples[d] / 1e6) : 0);
	printf("\n");
	printf("samples_per_s=%.0f\ncells_per_s=%.0f\n", samples / wall_write, samples * (double)nc / wall_write);
	printf("end_s=%.3f\nend_cpu_s=%.3f\n", end_wall, end_cpu);
	printf("writer_cpu_s=%.3f\n", cpu);
	printf("writer_cpu_s_per_gb=%.3f\n", spm_gb > 0 ? cpu / spm_gb : 0);
	printf("spm_gb_per_writer_cpu_s=%.3f\n", cpu > 0 ? spm_gb / cpu : 0);
	printf("db_bytes=%lld\ndb_bytes_per_spm_byte=%.4f\n", (long long)fsz,
	       spm_gb > 0 ? fsz / (spm_gb * 1e9) : 0);
	printf("max_rss_kib=%ld\n", ru.ru_maxrss);
	printf("memcpy_gbps=%.2f\n", memcpy_rate() / 1e9);
	if (!keep) {
		unlink(fin);
		if (!dir_arg)
			rmdir(dir);
	} else
		printf("db=%s\n", fin);
	for (uint32_t c = 0; c < nc; c++)
		free(vals[c]);
	free(vals);
	free(cols);
	free(cname);
	free(st);
	free(host);
	free(ticks);
	return 0;
}
