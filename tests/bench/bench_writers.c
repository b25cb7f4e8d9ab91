/* SPDX-License-Identifier: MIT */
/*
 * The writers alone (issue 15 item 4): synthetic decoded chunks, shaped like
 * an emulated MI300X recording of 4 counters (8 XCC streams of 4 U64 columns,
 * chunks of 1024 samples interleaved across the XCCs, a saturated cell now
 * and then, one sensor stream of doubles at 1/1000 of the SPM rate), fed to
 * every -f writer and to the ticks CSV (`record --spm -o x.csv`, `spmtap
 * decode`).  Prints per writer, as key=value lines:
 *   ns_per_row         writer thread CPU (CLOCK_THREAD_CPUTIME_ID: formatting
 *                      plus the write syscalls) per SPM row
 *   cpu_s_per_gb       the same per GB of the SPM bytes those rows stand for
 *                      (384 bytes per sample per XCC: 4 counters, 4 SEs)
 *   out_per_spm_byte   output bytes per SPM byte
 *   x_memcpy           cpu_s over one memcpy of the SPM bytes
 * Never fails on a timing.  Usage: bench_writers [ROWS_PER_XCC] [--keep DIR]
 * (--keep leaves the outputs in DIR, to compare two builds byte for byte).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "collector/lib/write_csv.h"
#include "collector/lib/writer.h"

#define NXCC 8u
#define NCOL 4u
#define CHUNK 1024u
#define SPM_SAMPLE_BYTES 384u /* plan: G=4, S=2 per SE, 4 SEs */

static const struct series_column spm_cols[NCOL] = {
	{ "SQ_WAVES", "count", SERIES_U64 },
	{ "SQ_CYCLES", "count", SERIES_U64 },
	{ "TCC_HIT", "count", SERIES_U64 },
	{ "TA_TA_BUSY", "count", SERIES_U64 },
};
static const struct series_column smi_cols[] = {
	{ "power_avg", "W", SERIES_F64 },
	{ "energy", "J", SERIES_F64 },
	{ "temp_edge", "degC", SERIES_F64 },
	{ "sclk", "MHz", SERIES_F64 },
};
#define NSMI (sizeof(smi_cols) / sizeof(smi_cols[0]))

/* xorshift: the same values on every run and build. */
static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct feed {
	struct series_stream st[NXCC + 1];
	int64_t host[NXCC][CHUNK];
	uint64_t ticks[NXCC][CHUNK];
	uint64_t val[NXCC][NCOL][CHUNK];
	uint64_t miss[NXCC][NCOL][CHUNK / 64];
	const void *vals[NXCC][NCOL];
	const uint64_t *misses[NXCC][NCOL];
	int64_t smi_host[1];
	uint64_t smi_ticks[1];
	double smi_val[NSMI][1];
	const void *smi_vals[NSMI];
};

static void fill(struct feed *f, uint32_t xcc, uint64_t base)
{
	for (uint32_t i = 0; i < CHUNK; i++) {
		uint64_t k = base + i;
		f->host[xcc][i] = 5000000000000LL + (int64_t)k * 15604 + xcc * 7;
		f->ticks[xcc][i] = 400000000000ull + k * 1560 + xcc;
		f->val[xcc][0][i] = next() % 2000;          /* SQ_WAVES */
		f->val[xcc][1][i] = 120000 + next() % 4000; /* SQ_CYCLES, 4 SEs summed */
		f->val[xcc][2][i] = next() % 1048576;       /* TCC_HIT, 16 channels */
		f->val[xcc][3][i] = next() % 330000;        /* TA_TA_BUSY */
	}
	for (uint32_t c = 0; c < NCOL; c++) {
		memset(f->miss[xcc][c], 0, sizeof(f->miss[xcc][c]));
		if (c == 2 && (base / CHUNK) % 7 == 3) /* a saturated TCC_HIT now and then */
			f->miss[xcc][c][(base / CHUNK) % (CHUNK / 64)] = 0x8000000000000101ull;
	}
}

static struct feed *feed_new(void)
{
	struct feed *f = calloc(1, sizeof(*f));
	if (!f)
		exit(1);
	for (uint32_t x = 0; x < NXCC; x++) {
		f->st[x] = (struct series_stream){
			.id = x + 1, .source = "spm", .gpu = 0, .gpu_id = 0x2001, .xcc = (int32_t)x,
			.device_name = "AMD Instinct MI300X", .tick_domain = "gpu_ref_100MHz",
			.ncols = NCOL, .cols = spm_cols,
		};
		for (uint32_t c = 0; c < NCOL; c++) {
			f->vals[x][c] = f->val[x][c];
			f->misses[x][c] = f->miss[x][c];
		}
	}
	f->st[NXCC] = (struct series_stream){
		.id = 100, .source = "smi", .gpu = 0, .gpu_id = 0x2001, .xcc = -1,
		.device_name = "AMD Instinct MI300X", .tick_domain = "smu_10ns", .ncols = NSMI,
		.cols = smi_cols,
	};
	for (uint32_t c = 0; c < NSMI; c++)
		f->smi_vals[c] = f->smi_val[c];
	return f;
}

static uint64_t file_bytes(const char *dir, const char *prefix)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "cat %s/%s* 2>/dev/null | wc -c", dir, prefix);
	FILE *p = popen(cmd, "r");
	unsigned long long n = 0;
	if (p) {
		if (fscanf(p, "%llu", &n) != 1)
			n = 0;
		pclose(p);
	}
	return n;
}

/* One writer over rows_per_xcc samples of each XCC; CPU seconds of this thread. */
static double run_writer(const struct writer_ops *o, const char *path, uint64_t rows_per_xcc)
{
	struct feed *f = feed_new();
	rng = 88172645463325252ull;
	struct writer *w;
	char err[512] = "";
	struct writer_meta meta = { .spmtap_version = "bench", .command_line = "bench_writers",
				    .hostname = "bench", .start_boottime_ns = 4999000000000LL,
				    .spm_clock_hz = 1e8 };
	double t0 = thread_cpu_s();
	if (o->open(&w, path, &meta, err, sizeof(err))) {
		fprintf(stderr, "bench_writers: %s: %s\n", o->name, err);
		exit(1);
	}
	for (uint32_t x = 0; x <= NXCC; x++)
		if (o->begin(w, &f->st[x], err, sizeof(err))) {
			fprintf(stderr, "bench_writers: %s: %s\n", o->name, err);
			exit(1);
		}
	double gen = 0; /* time spent making the synthetic data, taken out */
	uint64_t smi_k = 0;
	for (uint64_t done = 0; done < rows_per_xcc; done += CHUNK) {
		uint32_t n = rows_per_xcc - done < CHUNK ? (uint32_t)(rows_per_xcc - done) : CHUNK;
		for (uint32_t x = 0; x < NXCC; x++) {
			double g0 = thread_cpu_s();
			fill(f, x, done);
			gen += thread_cpu_s() - g0;
			struct series_chunk c = { &f->st[x], n, f->host[x], f->ticks[x], f->vals[x],
						  f->misses[x] };
			if (o->write(w, &c, err, sizeof(err))) {
				fprintf(stderr, "bench_writers: %s: %s\n", o->name, err);
				exit(1);
			}
		}
		for (; smi_k * 1000 < done + n; smi_k++) { /* sensors at 1/1000 of the rate */
			f->smi_host[0] = 5000000000000LL + (int64_t)smi_k * 15604000;
			f->smi_ticks[0] = smi_k * 1560400;
			f->smi_val[0][0] = 350.0 + (double)(next() % 100000) / 997.0;
			f->smi_val[1][0] = (double)smi_k * 0.35 + (double)(next() % 65536) / 65536.0;
			f->smi_val[2][0] = (double)(40 + next() % 30);
			f->smi_val[3][0] = 2100.0;
			struct series_chunk c = { &f->st[NXCC], 1, f->smi_host, f->smi_ticks,
						  f->smi_vals, NULL };
			if (o->write(w, &c, err, sizeof(err))) {
				fprintf(stderr, "bench_writers: %s: %s\n", o->name, err);
				exit(1);
			}
		}
		if (o->flush && (done / CHUNK) % 64 == 63 && o->flush(w, err, sizeof(err))) {
			fprintf(stderr, "bench_writers: %s: %s\n", o->name, err);
			exit(1);
		}
	}
	if (o->end(w, err, sizeof(err))) {
		fprintf(stderr, "bench_writers: %s: %s\n", o->name, err);
		exit(1);
	}
	double cpu = thread_cpu_s() - t0 - gen;
	free(f);
	return cpu;
}

int main(int argc, char **argv)
{
	uint64_t rows = 100000;
	const char *keep = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--keep") && i + 1 < argc)
			keep = argv[++i];
		else
			rows = strtoull(argv[i], NULL, 10);
	}
	char tmpl[] = "/tmp/spmtap-bench-writers-XXXXXX";
	const char *dir = keep ? keep : mkdtemp(tmpl);
	if (!dir || (keep && mkdir(keep, 0755) && errno != EEXIST)) {
		perror("bench_writers: output directory");
		return 1;
	}
	double mc = memcpy_rate();
	uint64_t spm_bytes = rows * NXCC * SPM_SAMPLE_BYTES;
	printf("bench=writers rows=%" PRIu64 " xcc=%u counters=%u spm_bytes=%" PRIu64
	       " memcpy_gbps=%.2f\n", rows * NXCC, NXCC, NCOL, spm_bytes, mc / 1e9);
	const struct writer_ops *list[8];
	size_t nw = 0;
	for (const struct writer_ops *const *a = writers(); *a && nw < 7; a++)
		list[nw++] = *a;
	list[nw++] = &writer_csv_ticks;
	for (size_t i = 0; i < nw; i++) {
		const struct writer_ops *o = list[i];
		char path[1024], prefix[64];
		snprintf(prefix, sizeof(prefix), "out_%s", o->name);
		snprintf(path, sizeof(path), "%s/%s%s", dir, prefix, o->ext);
		/* SQLite stores a row per cell: a tenth of the rows keeps the run short. */
		uint64_t r = strcmp(o->name, "sqlite") ? rows : (rows / 10 / CHUNK + 1) * CHUNK;
		double cpu = run_writer(o, path, r);
		uint64_t out = file_bytes(dir, prefix);
		double sb = (double)(r * NXCC * SPM_SAMPLE_BYTES);
		printf("writer=%s rows=%" PRIu64 " cpu_s=%.4f ns_per_row=%.1f cpu_s_per_gb=%.3f "
		       "x_memcpy=%.2f out_bytes=%" PRIu64 " out_per_spm_byte=%.4f\n",
		       o->name, r * NXCC, cpu, cpu * 1e9 / (double)(r * NXCC), cpu / (sb / 1e9),
		       cpu / (sb / mc), out, (double)out / sb);
		fflush(stdout);
	}
	if (!keep) {
		char cmd[256];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			return 1;
	}
	return 0;
}
