/* SPDX-License-Identifier: MIT */
/*
 * The CSV writers' bytes (contract 4 of issue 15: independent checks compare
 * them byte for byte, so formatting by hand must change nothing):
 *  - the cell formatters (write_csv.h) against snprintf on edges and on
 *    millions of random values: integers of every length, INT64_MIN,
 *    doubles of every exponent, -0, NaN, infinities, subnormals;
 *  - writer_csv (write_csv_series.c) against an oracle built here with stdio
 *    exactly as the writer printed its rows before (fprintf per cell): SPM and
 *    sensor streams, a stream without a column, missing cells, negative
 *    times, no ticks, phases with commas and line breaks, a phase name longer
 *    than any buffer, rows across many buffer fills, flushes in between;
 *  - the ticks CSV (write_csv.c) against the same kind of oracle.
 */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/lib/write_csv.h"
#include "collector/lib/writer.h"
#include "lib/files.h"
#include "lib/testenv.h"

static char dir[] = "/tmp/spmtap-write-csv-XXXXXX";

static const char *path(const char *name)
{
	return testenv_path(dir, name);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* ---- the formatters against snprintf ---- */

static int bad_u64, bad_i64, bad_f64;

static void check_u64(uint64_t v)
{
	char want[32], got[CSV_U64_MAX + 1];
	snprintf(want, sizeof(want), "%" PRIu64, v);
	size_t n = csv_fmt_u64(got, v);
	got[n] = 0;
	if (strcmp(want, got) && bad_u64++ < 5)
		fprintf(stderr, "\n    u64 %s: got %s ", want, got);
}

static void check_i64(int64_t v)
{
	char want[32], got[CSV_I64_MAX + 1];
	snprintf(want, sizeof(want), "%" PRId64, v);
	size_t n = csv_fmt_i64(got, v);
	got[n] = 0;
	if (strcmp(want, got) && bad_i64++ < 5)
		fprintf(stderr, "\n    i64 %s: got %s ", want, got);
}

/* What write_csv_series.c printed for a double before issue 15. */
static void old_f64(char *b, size_t len, double v)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(b, len, "%.*g", prec, v);
		if (strtod(b, NULL) == v)
			break;
	}
}

static void check_f64(double v)
{
	char want[64], got[CSV_F64_MAX + 1];
	old_f64(want, sizeof(want), v);
	size_t n = csv_fmt_f64(got, v);
	if (n > CSV_F64_MAX)
		abort(); /* it wrote past its promise */
	got[n] = 0;
	if (strcmp(want, got) && bad_f64++ < 5)
		fprintf(stderr, "\n    f64 %a: want %s got %s ", v, want, got);
}

static void test_fmt_integers(void)
{
	bad_u64 = bad_i64 = 0;
	uint64_t p = 1;
	for (int e = 0; e < 20; e++, p *= 10) {
		for (int d = -2; d <= 2; d++) {
			check_u64(p + (uint64_t)d);
			check_i64((int64_t)(p + (uint64_t)d));
			check_i64(-(int64_t)(p + (uint64_t)d));
		}
	}
	for (int b = 0; b < 64; b++) {
		uint64_t v = 1ull << b;
		check_u64(v);
		check_u64(v - 1);
		check_u64(v + 1);
		check_i64((int64_t)v);
		check_i64(-(int64_t)(v - 1));
	}
	check_u64(0);
	check_u64(UINT64_MAX);
	check_u64(UINT64_MAX - 1);
	check_u64(10000000000000000000ull);
	check_i64(0);
	check_i64(-1);
	check_i64(INT64_MIN);
	check_i64(INT64_MIN + 1);
	check_i64(INT64_MAX);
	for (int i = 0; i < 2000000; i++) {
		uint64_t v = rnd() >> (rnd() % 64); /* every length */
		check_u64(v);
		check_i64((int64_t)v);
		check_i64(-(int64_t)(v >> 1));
	}
	for (uint64_t v = 0; v < 100000; v++)
		check_u64(v);
	CU_ASSERT_EQUAL(bad_u64, 0);
	CU_ASSERT_EQUAL(bad_i64, 0);
}

/*
 * csv_fmt_u64_near against snprintf over sequences as a stream's times run
 * (small steps that carry into the reused digits, lengths that grow past a
 * power of ten) and as they do not (jumps back, every length, below 10^6).
 */
static void test_fmt_near(void)
{
	int bad = 0;
	struct csv_prefix c = { 0 };
	char want[32], got[64];
	uint64_t v = 999990;
	for (int i = 0; i < 3000000; i++) {
		switch (i % 1000 == 999 ? rnd() % 4 : 0) {
		case 0: v += rnd() % 3000; break;           /* the next sample */
		case 1: v = rnd() >> (rnd() % 64); break;     /* any length */
		case 2: v = v > 5000 ? v - rnd() % 5000 : v; break; /* back */
		default: { /* just below the next power of ten */
			uint64_t p = 10;
			while (p <= v && p < 1000000000000000000ull)
				p *= 10;
			v = p - 1 - rnd() % 50;
		} }
		snprintf(want, sizeof(want), "%" PRIu64, v);
		size_t n = csv_fmt_u64_near(got, v, &c);
		got[n] = 0;
		if (strcmp(want, got) && bad++ < 5)
			fprintf(stderr, "\n    near %s: got %s ", want, got);
	}
	uint64_t edge[] = { UINT64_MAX, 1000000, 999999, 0, 10000000000000000000ull, 1000001 };
	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++) {
		snprintf(want, sizeof(want), "%" PRIu64, edge[i]);
		size_t n = csv_fmt_u64_near(got, edge[i], &c);
		got[n] = 0;
		if (strcmp(want, got) && bad++ < 5)
			fprintf(stderr, "\n    near %s: got %s ", want, got);
	}
	CU_ASSERT_EQUAL(bad, 0);
}

static void test_fmt_doubles(void)
{
	bad_f64 = 0;
	const double edge[] = {
		0.0, -0.0, 1.0, -1.0, 0.1, -0.1, 1.0 / 3, 2.0 / 3, 0.5, 123.5, 45.25, 1e-5, 1e-4,
		9.9999e-5, 1e15, 1e15 - 1, -1e15 + 1, 1e15 + 1, 999999999999999.0, 1e16, 1e17,
		9007199254740992.0, 9007199254740993.0, 1e21, 1e22, 1e300, -1e300, DBL_MAX, -DBL_MAX,
		DBL_MIN, DBL_TRUE_MIN, -DBL_TRUE_MIN, 5e-324, 2.2250738585072009e-308, DBL_EPSILON,
		NAN, -NAN, INFINITY, -INFINITY, 4294967296.0, 65535.99998474121, 1e7 + 1.0 / 65536,
		(double)INT64_MAX, (double)INT64_MIN, 1e14 + 0.5, 99999999999999.9,
	};
	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
		check_f64(edge[i]);
	for (int i = 0; i < 100000; i++) {
		uint64_t bits = rnd();
		double v;
		memcpy(&v, &bits, sizeof(v)); /* any double: every exponent, NaN payloads */
		check_f64(v);
		check_f64((double)(int64_t)(rnd() >> (rnd() % 64)) * (rnd() & 1 ? 1 : -1));
		check_f64((double)(rnd() % 100000000) / 65536.0); /* energy in 2^-16 J */
		check_f64((double)(rnd() % 1000000) / 1000.0);    /* power in mW steps */
		check_f64((double)(rnd() % 2000000000000000ull) - 1e15);
	}
	CU_ASSERT_EQUAL(bad_f64, 0);
}

/* ---- writer_csv against a stdio oracle ---- */

static const struct series_column spm_cols[] = {
	{ "SQ_WAVES", "count", SERIES_U64 },
	{ "TCC_HIT", "count", SERIES_U64 },
	{ "GRBM_GUI_ACTIVE", "count", SERIES_U64 },
};
/* A second SPM stream without TCC_HIT and with a column of its own. */
static const struct series_column spm2_cols[] = {
	{ "GRBM_GUI_ACTIVE", "count", SERIES_U64 },
	{ "SQ_WAVES", "count", SERIES_U64 },
	{ "SQ_BUSY_CYCLES", "count", SERIES_U64 },
};
static const struct series_column smi_cols[] = {
	{ "power_avg", "W", SERIES_F64 },
	{ "energy", "J", SERIES_F64 },
	{ "temp_edge", "degC", SERIES_F64 },
};
static const struct series_stream st_spm = {
	.id = 1, .source = "spm", .gpu = 0, .gpu_id = 1, .xcc = 3, .ncols = 3, .cols = spm_cols,
};
static const struct series_stream st_spm2 = {
	.id = 2, .source = "spm", .gpu = 4294967295u, .gpu_id = 2, .xcc = -1, .ncols = 3, .cols = spm2_cols,
};
static const struct series_stream st_smi = {
	.id = 3, .source = "smi", .gpu = 1, .gpu_id = 3, .xcc = -1, .ncols = 3, .cols = smi_cols,
};

/* The file's columns: the union in declaration order (write_csv_series.c). */
static const char *const spm_union[] = { "SQ_WAVES", "TCC_HIT", "GRBM_GUI_ACTIVE", "SQ_BUSY_CYCLES" };

struct oracle {
	FILE *spm, *smi, *phases;
	int spm_head, smi_head, phases_head;
};

static int col_of(const struct series_stream *s, const char *name)
{
	for (uint32_t j = 0; j < s->ncols; j++)
		if (!strcmp(s->cols[j].name, name))
			return (int)j;
	return -1;
}

/* The rows as the writer printed them before issue 15: fprintf, cell by cell. */
static void oracle_chunk(struct oracle *o, const struct series_chunk *c)
{
	const struct series_stream *s = c->stream;
	int spm = strcmp(s->source, "smi") != 0;
	FILE *f = spm ? o->spm : o->smi;
	const char *const *cols = spm ? spm_union : NULL;
	size_t nc = spm ? 4 : 3;
	if (spm && !o->spm_head) {
		fprintf(f, "gpu,xcc,host_ns,gpu_ticks,SQ_WAVES,TCC_HIT,GRBM_GUI_ACTIVE,SQ_BUSY_CYCLES\n");
		o->spm_head = 1;
	}
	if (!spm && !o->smi_head) {
		fprintf(f, "gpu,host_ns,sensor_ts,power_avg,energy,temp_edge\n");
		o->smi_head = 1;
	}
	for (uint32_t i = 0; i < c->n; i++) {
		if (spm)
			fprintf(f, "%u,%d,%" PRId64 ",", s->gpu, s->xcc, c->host_ns[i]);
		else
			fprintf(f, "%u,%" PRId64 ",", s->gpu, c->host_ns[i]);
		if (c->ticks)
			fprintf(f, "%" PRIu64, c->ticks[i]);
		for (size_t k = 0; k < nc; k++) {
			fputc(',', f);
			int j = spm ? col_of(s, cols[k]) : (int)k;
			if (j < 0 || series_missing(c, (uint32_t)j, i))
				continue;
			if (s->cols[j].type == SERIES_U64) {
				fprintf(f, "%" PRIu64, series_u64(c, (uint32_t)j, i));
			} else {
				char b[64];
				old_f64(b, sizeof(b), series_f64(c, (uint32_t)j, i));
				fputs(b, f);
			}
		}
		fputc('\n', f);
	}
}

static void oracle_slice(struct oracle *o, const struct series_slice *sl)
{
	if (!o->phases_head) {
		fprintf(o->phases, "start_ns,end_ns,name\n");
		o->phases_head = 1;
	}
	fprintf(o->phases, "%" PRId64 ",%" PRId64 ",", sl->start_ns, sl->end_ns);
	for (const char *p = sl->name && *sl->name ? sl->name : "(unnamed)"; *p; p++)
		fputc(*p == ',' || *p == '\n' || *p == '\r' ? ' ' : *p, o->phases);
	fputc('\n', o->phases);
}

static int same_file(const char *a, const char *b)
{
	size_t na, nb;
	char *x = tf_slurp(a, &na), *y = tf_slurp(b, &nb);
	int same = x && y && na == nb && !memcmp(x, y, na);
	if (!same) {
		size_t k = 0;
		while (x && y && k < na && k < nb && x[k] == y[k])
			k++;
		fprintf(stderr, "\n    %s (%zu bytes) and %s (%zu bytes) differ at byte %zu ", a, na, b, nb, k);
	}
	free(x);
	free(y);
	return same;
}

#define N 1500u

static void test_series_csv_bytes(void)
{
	static int64_t host[N];
	static uint64_t ticks[N], a[N], b[N], g[N], miss_a[(N + 63) / 64], miss_g[(N + 63) / 64];
	static double pw[N], en[N], te[N];
	const void *v1[] = { a, b, g };
	const void *v2[] = { g, a, b };
	const void *v3[] = { pw, en, te };
	const uint64_t *m1[] = { miss_a, NULL, miss_g };
	const uint64_t *m3[] = { NULL, miss_a, miss_g };

	struct oracle o = { fopen(path("want_spm.csv"), "w"), fopen(path("want_smi.csv"), "w"),
			    fopen(path("want_phases.csv"), "w"), 0, 0, 0 };
	CU_ASSERT_FATAL(o.spm && o.smi && o.phases);
	struct writer *w;
	char err[512] = "";
	CU_ASSERT_EQUAL_FATAL(writer_csv.open(&w, path("got.csv"), NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(writer_csv.begin(w, &st_spm, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(writer_csv.begin(w, &st_spm2, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(writer_csv.begin(w, &st_smi, err, sizeof(err)), 0);
	/* ~1500 chunks x 3 streams: many fills of the 1 MiB SPM buffer. */
	for (int round = 0; round < 400; round++) {
		for (uint32_t i = 0; i < N; i++) {
			host[i] = round == 3 && i < 10 ? -(int64_t)(rnd() % 1000000) : (int64_t)(rnd() >> (rnd() % 64));
			ticks[i] = rnd() >> (rnd() % 64);
			a[i] = rnd() >> (rnd() % 64);
			b[i] = i == 7 ? UINT64_MAX : rnd() % 100000;
			g[i] = i == 8 ? 0 : rnd() >> 40;
			pw[i] = (double)(rnd() % 1000000) / 1000.0;
			en[i] = (double)(rnd() % 100000000) / 65536.0;
			te[i] = i == 9 ? NAN : i == 10 ? -0.0 : (double)(rnd() % 100);
		}
		for (uint32_t k = 0; k < (N + 63) / 64; k++) {
			miss_a[k] = rnd() & rnd();
			miss_g[k] = round % 5 ? 0 : rnd();
		}
		uint32_t n = round == 0 ? 1 : round == 1 ? 0 : N - (uint32_t)(rnd() % 64);
		struct series_chunk c1 = { &st_spm, n, host, ticks, v1, m1 };
		struct series_chunk c2 = { &st_spm2, n, host, round % 2 ? ticks : NULL, v2, NULL };
		struct series_chunk c3 = { &st_smi, round % 20 ? 3 : n, host, ticks, v3, m3 };
		const struct series_chunk *all[] = { &c1, &c2, &c3 };
		for (int k = 0; k < 3; k++) {
			CU_ASSERT_EQUAL_FATAL(writer_csv.write(w, all[k], err, sizeof(err)), 0);
			oracle_chunk(&o, all[k]);
		}
		if (round % 37 == 5)
			CU_ASSERT_EQUAL_FATAL(writer_csv.flush(w, err, sizeof(err)), 0);
		if (round % 50 == 0) {
			char name[64];
			snprintf(name, sizeof(name), "phase %d, with a comma\nand a line\r", round);
			struct series_slice sl = { .start_ns = -5 + round, .end_ns = INT64_MAX - round,
						   .name = round == 100 ? "" : name };
			CU_ASSERT_EQUAL_FATAL(writer_csv.slice(w, &sl, err, sizeof(err)), 0);
			oracle_slice(&o, &sl);
		}
	}
	/* A phase name longer than the writer's buffers. */
	size_t big = 200000;
	char *name = malloc(big + 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(name);
	for (size_t i = 0; i < big; i++)
		name[i] = "ab,c\nd"[i % 6];
	name[big] = 0;
	struct series_slice sl = { .start_ns = INT64_MIN, .end_ns = 0, .name = name };
	CU_ASSERT_EQUAL(writer_csv.slice(w, &sl, err, sizeof(err)), 0);
	oracle_slice(&o, &sl);
	free(name);
	CU_ASSERT_EQUAL(writer_csv.end(w, err, sizeof(err)), 0);
	fclose(o.spm);
	fclose(o.smi);
	fclose(o.phases);
	CU_ASSERT(same_file(path("want_spm.csv"), path("got_spm.csv")));
	CU_ASSERT(same_file(path("want_smi.csv"), path("got_smi.csv")));
	CU_ASSERT(same_file(path("want_phases.csv"), path("got_phases.csv")));
}

/* A file with streams but no rows: the header alone, as before. */
static void test_series_csv_header_only(void)
{
	struct writer *w;
	char err[512] = "";
	CU_ASSERT_EQUAL_FATAL(writer_csv.open(&w, path("empty.csv"), NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(writer_csv.begin(w, &st_spm, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(writer_csv.end(w, err, sizeof(err)), 0);
	size_t n;
	char *t = tf_slurp(path("empty_spm.csv"), &n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	const char *want = "gpu,xcc,host_ns,gpu_ticks,SQ_WAVES,TCC_HIT,GRBM_GUI_ACTIVE\n";
	CU_ASSERT(n == strlen(want) && !memcmp(t, want, n));
	free(t);
	CU_ASSERT_EQUAL(access(path("empty_smi.csv"), F_OK), -1);
}

/* The ticks CSV (`spmtap decode`, `record --spm -o x.csv`) against fprintf. */
static void test_ticks_csv_bytes(void)
{
	static uint64_t ts[N], a[N], b[N], sat_a[(N + 63) / 64], sat_b[(N + 63) / 64];
	const uint64_t *vals[] = { a, b };
	const uint64_t *sat[] = { sat_a, sat_b }; /* sat_a: none */
	struct dec_column cols[2];
	memset(cols, 0, sizeof(cols));
	snprintf(cols[0].name, sizeof(cols[0].name), "SQ_WAVES");
	snprintf(cols[1].name, sizeof(cols[1].name), "TCC_HIT[3]");
	FILE *want = fopen(path("want_ticks.csv"), "w");
	int fd = open(path("got_ticks.csv"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(want && fd >= 0);
	struct csv_writer *w;
	CU_ASSERT_EQUAL_FATAL(csv_open_fd(fd, CSV_XCC_COLUMN, &w), 0);
	CU_ASSERT_EQUAL_FATAL(csv_begin(w, cols, 2), 0);
	fprintf(want, "xcc,timestamp,SQ_WAVES,TCC_HIT[3]\n");
	for (int round = 0; round < 300; round++) {
		for (uint32_t i = 0; i < N; i++) {
			ts[i] = rnd() >> (rnd() % 64);
			a[i] = i == 5 ? UINT64_MAX : rnd() >> (rnd() % 64);
			b[i] = rnd() % 65536;
		}
		for (uint32_t k = 0; k < (N + 63) / 64; k++)
			sat_b[k] = rnd() & rnd() & rnd();
		struct dec_chunk c = { .xcc = (uint32_t)round % 8, .nsamples = N, .ncols = 2,
				       .timestamp = ts, .values = vals, .saturated = sat };
		CU_ASSERT_EQUAL_FATAL(csv_write(w, &c), 0);
		for (uint32_t i = 0; i < N; i++) {
			fprintf(want, "%u,%" PRIu64 ",%" PRIu64 ",", c.xcc, ts[i], a[i]);
			if (!dec_chunk_saturated(&c, 1, i))
				fprintf(want, "%" PRIu64, b[i]);
			fputc('\n', want);
		}
	}
	CU_ASSERT_EQUAL(csv_end(w), 0);
	CU_ASSERT_EQUAL(csv_rows(w), 300u * N);
	csv_close(w);
	close(fd);
	fclose(want);
	CU_ASSERT(same_file(path("want_ticks.csv"), path("got_ticks.csv")));
}

/* A full disk: the error names the file, at write or at the end, and sticks. */
static const char *need_dev_full(void)
{
	return access("/dev/full", W_OK) ? "no writable /dev/full" : NULL;
}

static void test_series_csv_full_disk(void)
{
	/* NAME_spm.csv is a link to /dev/full: every write() fails with ENOSPC. */
	CU_ASSERT_EQUAL_FATAL(symlink("/dev/full", path("full_spm.csv")), 0);
	struct writer *w;
	char err[512] = "";
	CU_ASSERT_EQUAL_FATAL(writer_csv.open(&w, path("full.csv"), NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(writer_csv.begin(w, &st_spm, err, sizeof(err)), 0);
	static int64_t host[N];
	static uint64_t a[N];
	const void *v[] = { a, a, a };
	struct series_chunk c = { &st_spm, N, host, NULL, v, NULL };
	int rc = 0;
	for (int i = 0; i < 2000 && !rc; i++)
		rc = writer_csv.write(w, &c, err, sizeof(err));
	CU_ASSERT_EQUAL(rc, -ENOSPC);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "full_spm.csv: No space left on device"));
	CU_ASSERT_EQUAL(writer_csv.write(w, &c, err, sizeof(err)), -ENOSPC);
	CU_ASSERT_EQUAL(writer_csv.end(w, err, sizeof(err)), -ENOSPC);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "fmt_integers", test_fmt_integers, NULL },
		{ "fmt_near", test_fmt_near, NULL },
		{ "fmt_doubles", test_fmt_doubles, NULL },
		{ "series_csv_bytes", test_series_csv_bytes, NULL },
		{ "series_csv_header_only", test_series_csv_header_only, NULL },
		{ "ticks_csv_bytes", test_ticks_csv_bytes, NULL },
		{ "series_csv_full_disk", test_series_csv_full_disk, need_dev_full },
		{ NULL, NULL, NULL },
	};
	if (!mkdtemp(dir))
		return 1;
	return testenv_remove_tmp(dir, testenv_run_suite("write_csv", cases, argc, argv));
}
