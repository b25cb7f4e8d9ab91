/* SPDX-License-Identifier: MIT */
/*
 * collector/lib/write_sqlite.c, read back by the sqlite3 command-line tool
 * (as a user would): exact typed values, NULL for missing cells, the
 * per-counter time-range query and its plan (an index search, not a scan),
 * slices, metadata, integrity; bounded memory over millions of rows; a full
 * disk.  SPMTAP_SQLITE_BENCH=1 adds a 10-million-row insert and query timing.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collector/lib/writer.h"
#include "lib/testenv.h"

static char dir[] = "/tmp/spmtap-sqlite-XXXXXX";

static const char *path(const char *name)
{
	static char p[4][256];
	static unsigned i;
	char *r = p[i++ % 4];
	snprintf(r, sizeof(p[0]), "%s/%s", dir, name);
	return r;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- the sqlite3 command-line tool as a child process ---- */

static const char *need_cli(void)
{
	const char *p = getenv("PATH");
	char buf[4096];
	while (p && *p) {
		const char *e = strchr(p, ':');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		snprintf(buf, sizeof(buf), "%.*s/sqlite3", (int)n, p);
		if (n && !access(buf, X_OK))
			return NULL;
		p = e ? e + 1 : NULL;
	}
	return "the sqlite3 command-line tool is not on PATH (apt install sqlite3)";
}

/*
 * Run `sqlite3 -batch -bail -noheader -list db sql`; stdout and stderr go to
 * out (trailing newline removed).  Returns the exit status, or -1.
 */
static int cli(const char *db, const char *sql, char *out, size_t outlen)
{
	int pfd[2];
	if (pipe(pfd))
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		close(pfd[0]);
		close(pfd[1]);
		execlp("sqlite3", "sqlite3", "-batch", "-bail", "-noheader", "-list", db, sql, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	size_t got = 0;
	for (;;) {
		char tmp[4096];
		ssize_t r = read(pfd[0], tmp, sizeof(tmp));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (ssize_t k = 0; k < r; k++)
			if (got + 1 < outlen)
				out[got++] = tmp[k];
	}
	close(pfd[0]);
	if (outlen)
		out[got < outlen ? got : outlen - 1] = 0;
	while (got && (out[got - 1] == '\n' || out[got - 1] == '\r'))
		out[--got] = 0;
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The CLI's answer to sql must be exactly `want`. */
#define CHECK_SQL(db, sql, want)                                                                 \
	do {                                                                                     \
		char out_[8192];                                                                 \
		int rc_ = cli((db), (sql), out_, sizeof(out_));                                  \
		if (rc_ != 0 || strcmp(out_, (want)))                                            \
			fprintf(stderr, "\n  %s\n  -> rc %d, got [%s], want [%s]\n", (sql), rc_, \
				out_, (want));                                                   \
		CU_ASSERT_EQUAL(rc_, 0);                                                         \
		CU_ASSERT_STRING_EQUAL(out_, (want));                                            \
	} while (0)

/* The plan must search a stream's table by its key on host_ns, never scan one. */
static void check_plan(const char *db, const char *query)
{
	char sql[2048], out[8192];
	snprintf(sql, sizeof(sql), "EXPLAIN QUERY PLAN %s", query);
	int rc = cli(db, sql, out, sizeof(out));
	CU_ASSERT_EQUAL(rc, 0);
	bool ok = strstr(out, "SEARCH x USING PRIMARY KEY (host_ns>? AND host_ns<?)") && !strstr(out, "SCAN x") &&
		  !strstr(out, "SCAN sample") && !strstr(out, "MATERIALIZE");
	if (!ok)
		fprintf(stderr, "\n  plan of %s:\n%s\n", query, out);
	CU_ASSERT(ok);
}

/* ---- fixtures ---- */

static const struct writer_meta meta = {
	.spmtap_version = "0.1.0-test",
	.command_line = "spmtap record -f sqlite -o out.db -- ./app",
	.hostname = "node7",
	.start_boottime_ns = 999000000000ll,
	.spm_clock_hz = 100e6,
	.extra_json = "{\"devices\":[{\"gpu\":0}]}",
};

static const struct series_column spm_cols[] = {
	{ "SQ_WAVES", "count", SERIES_U64 },
	{ "GRBM_COUNT", "count", SERIES_U64 },
};
static const struct series_stream spm = {
	.id = 7, .source = "spm", .gpu = 0, .gpu_id = 0x1234, .xcc = 1,
	.device_name = "AMD Instinct MI300A", .tick_domain = "gpu_ref_100MHz",
	.ncols = 2, .cols = spm_cols,
};
static const struct series_column smi_cols[] = {
	{ "power_avg", "W", SERIES_F64 },
	{ "temp_hotspot", "degC", SERIES_F64 },
};
static const struct series_stream smi = {
	.id = 9, .source = "smi", .gpu = 0, .gpu_id = 0x1234, .xcc = -1,
	.device_name = "AMD Instinct MI300A", .tick_domain = "smu_10ns",
	.ncols = 2, .cols = smi_cols,
};

#define T0 1000000000000ll

/* SPM: 100 samples in two chunks; SQ_WAVES[17] missing, GRBM_COUNT[98] > INT64_MAX, [99] = 2^53+1. */
static void write_spm(const struct writer_ops *ops, struct writer *w)
{
	char err[512];
	for (int k = 0; k < 2; k++) {
		int64_t host[50];
		uint64_t ticks[50], waves[50], grbm[50];
		uint64_t miss0[1] = { 0 };
		for (int j = 0; j < 50; j++) {
			int i = k * 50 + j;
			host[j] = T0 + i * 1000;
			ticks[j] = 5000 + (uint64_t)i * 100;
			waves[j] = (uint64_t)i * 3;
			grbm[j] = 1000 + (uint64_t)i;
			if (i == 17)
				miss0[0] |= 1ull << j;
			if (i == 98)
				grbm[j] = UINT64_MAX - 5;
			if (i == 99)
				grbm[j] = (1ull << 53) + 1;
		}
		const void *vals[2] = { waves, grbm };
		const uint64_t *miss[2] = { miss0, NULL };
		struct series_chunk c = { &spm, 50, host, ticks, vals, miss };
		int rc = ops->write(w, &c, err, sizeof(err));
		if (rc)
			fprintf(stderr, "write: %s\n", err);
		CU_ASSERT_EQUAL(rc, 0);
	}
}

/* Sensors: 10 samples every 5 us, no ticks; temp_hotspot[3] missing. */
static void write_smi(const struct writer_ops *ops, struct writer *w)
{
	char err[512];
	int64_t host[10];
	double pw[10], tp[10];
	for (int i = 0; i < 10; i++) {
		host[i] = T0 + i * 5000;
		pw[i] = 400.25 + i * 0.5;
		tp[i] = 55.0; /* integral: must still come back REAL */
	}
	uint64_t m1[1] = { 1ull << 3 };
	const void *vals[2] = { pw, tp };
	const uint64_t *miss[2] = { NULL, m1 };
	struct series_chunk c = { &smi, 10, host, NULL, vals, miss };
	CU_ASSERT_EQUAL(ops->write(w, &c, err, sizeof(err)), 0);
}

static int write_fixture(const char *p)
{
	const struct writer_ops *ops = &writer_sqlite;
	struct writer *w;
	char err[512];
	int rc = ops->open(&w, p, &meta, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "open: %s\n", err);
		return rc;
	}
	CU_ASSERT_EQUAL(ops->begin(w, &spm, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ops->begin(w, &smi, err, sizeof(err)), 0);
	write_spm(ops, w);
	write_smi(ops, w);
	struct series_slice sl = { .start_ns = T0 + 10000, .end_ns = T0 + 30000, .name = "phase:fwd", .track = 42 };
	CU_ASSERT_EQUAL(ops->slice(w, &sl, err, sizeof(err)), 0);
	struct series_slice sl2 = { .start_ns = T0 + 60000, .end_ns = T0 + 90000, .name = "phase:bwd", .track = 42 };
	CU_ASSERT_EQUAL(ops->slice(w, &sl2, err, sizeof(err)), 0);
	rc = ops->end(w, err, sizeof(err));
	if (rc)
		fprintf(stderr, "end: %s\n", err);
	return rc;
}

/* ---- cases ---- */

static void test_values(void)
{
	const char *db = path("values.db");
	CU_ASSERT_EQUAL_FATAL(write_fixture(db), 0);
	/* exact integers, typed */
	CHECK_SQL(db, "SELECT value, typeof(value), ticks FROM sample_v WHERE name='SQ_WAVES' AND idx=16",
		  "48|integer|6600");
	CHECK_SQL(db, "SELECT count(*) FROM sample_v WHERE name='SQ_WAVES'", "100");
	CHECK_SQL(db, "SELECT sum(value), count(value) FROM sample_v WHERE name='SQ_WAVES'",
		  "14799|99"); /* 3 * (0 + ... + 99) - 3 * 17 */
	/* the missing cell is NULL, and only that one */
	CHECK_SQL(db, "SELECT idx, typeof(value) FROM sample_v WHERE name='SQ_WAVES' AND value IS NULL",
		  "17|null");
	CHECK_SQL(db, "SELECT value FROM sample_v WHERE name='GRBM_COUNT' AND idx=99", "9007199254740993");
	CHECK_SQL(db, "SELECT typeof(value), value > 1.8e19 FROM sample_v WHERE name='GRBM_COUNT' AND idx=98",
		  "real|1");
	/* doubles, exact, still REAL when integral-looking */
	CHECK_SQL(db,
		  "SELECT value = 402.25, typeof(value), ticks IS NULL, source, gpu, xcc FROM sample_v "
		  "WHERE name='power_avg' AND idx=4",
		  "1|real|1|smi|0|-1");
	CHECK_SQL(db, "SELECT printf('%.17g', value) FROM sample_v WHERE name='power_avg' AND idx=9",
		  "404.75");
	CHECK_SQL(db, "SELECT group_concat(idx) FROM sample_v WHERE name='temp_hotspot' AND value IS NULL",
		  "3");
	CHECK_SQL(db, "SELECT DISTINCT typeof(value), value FROM sample_v WHERE name='temp_hotspot' AND idx<>3",
		  "real|55.0");
	/* time range per counter: 1.010e12..1.020e12 ns -> samples 10..20 */
	CHECK_SQL(db,
		  "SELECT count(*), min(value), max(value) FROM sample WHERE metric_id = "
		  "(SELECT metric_id FROM metric_v WHERE track='gpu0.xcc1.GRBM_COUNT') "
		  "AND host_ns BETWEEN 1000000010000 AND 1000000020000",
		  "11|1010|1020");
	CHECK_SQL(db,
		  "SELECT count(*), min(host_ns), max(host_ns) FROM sample_v WHERE name='GRBM_COUNT' "
		  "AND gpu=0 AND xcc=1 AND host_ns >= 1000000010000 AND host_ns < 1000000020000",
		  "10|1000000010000|1000000019000");
	/* slices, and samples inside them */
	CHECK_SQL(db, "SELECT name, track, dur_ns FROM slice_v ORDER BY start_ns",
		  "phase:fwd|42|20000\nphase:bwd|42|30000");
	CHECK_SQL(db,
		  "SELECT s.name, count(*), avg(x.value) FROM slice s JOIN sample_v x "
		  "ON x.host_ns BETWEEN s.start_ns AND s.end_ns WHERE x.name='power_avg' "
		  "GROUP BY s.id ORDER BY s.start_ns",
		  "phase:fwd|5|402.25"); /* 20..30 us: samples 2..6; bwd has none */
	/* metadata, streams, metrics */
	CHECK_SQL(db, "SELECT key || '=' || value FROM meta WHERE key IN "
		      "('spmtap_version','command_line','hostname','start_boottime_ns','time_base') ORDER BY key",
		  "command_line=spmtap record -f sqlite -o out.db -- ./app\nhostname=node7\n"
		  "spmtap_version=0.1.0-test\nstart_boottime_ns=999000000000\ntime_base=CLOCK_BOOTTIME ns");
	CHECK_SQL(db, "SELECT value, typeof(value) FROM meta WHERE key='spm_clock_hz'", "100000000.0|real");
	CHECK_SQL(db, "SELECT json_extract(value, '$.devices[0].gpu') FROM meta WHERE key='extra_json'", "0");
	CHECK_SQL(db, "SELECT id, source, gpu, gpu_id, xcc, device_name, tick_domain, ncols FROM stream ORDER BY id",
		  "7|spm|0|4660|1|AMD Instinct MI300A|gpu_ref_100MHz|2\n"
		  "9|smi|0|4660|-1|AMD Instinct MI300A|smu_10ns|2");
	CHECK_SQL(db, "SELECT track, unit, type FROM metric_v ORDER BY metric_id",
		  "gpu0.xcc1.SQ_WAVES|count|u64\ngpu0.xcc1.GRBM_COUNT|count|u64\n"
		  "gpu0.power_avg|W|f64\ngpu0.temp_hotspot|degC|f64");
	CHECK_SQL(db, "PRAGMA application_id; PRAGMA user_version; PRAGMA journal_mode",
		  "1397771604\n2\ndelete");
	CHECK_SQL(db, "PRAGMA integrity_check", "ok");
	/* one self-contained file */
	CU_ASSERT_NOT_EQUAL(access(path("values.db-wal"), F_OK), 0);
}

static void test_plans(void)
{
	const char *db = path("plans.db");
	CU_ASSERT_EQUAL_FATAL(write_fixture(db), 0);
	check_plan(db, "SELECT host_ns, value FROM sample WHERE metric_id = 2 "
		       "AND host_ns BETWEEN 1000000010000 AND 1000000020000");
	check_plan(db, "SELECT host_ns, value FROM sample_v WHERE name='GRBM_COUNT' AND gpu=0 AND xcc=1 "
		       "AND host_ns BETWEEN 1000000010000 AND 1000000020000");
	check_plan(db, "SELECT host_ns, value FROM sample_v WHERE track='gpu0.power_avg' "
		       "AND host_ns >= 1000000010000 AND host_ns < 1000000020000");
	/* slices by time use their index */
	char out[4096];
	CU_ASSERT_EQUAL(cli(db, "EXPLAIN QUERY PLAN SELECT * FROM slice WHERE start_ns BETWEEN 1 AND 2",
			    out, sizeof(out)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "slice_by_time"));
}

/* Values a test can check anywhere: metric col of stream sample idx. */
static uint64_t big_value(uint32_t col, int64_t idx)
{
	return (uint64_t)idx * 16u + col;
}

struct big {
	struct series_column cols[16];
	char names[16][16];
	struct series_stream s;
	uint32_t chunk;
	int64_t *host;
	uint64_t *ticks;
	uint64_t *vals[16];
	const void *vp[16];
	int64_t next;
};

static void big_init(struct big *b, uint32_t id, int32_t xcc, uint32_t ncols, uint32_t chunk)
{
	memset(b, 0, sizeof(*b));
	for (uint32_t c = 0; c < ncols; c++) {
		snprintf(b->names[c], sizeof(b->names[c]), "CTR_%02u", c);
		b->cols[c] = (struct series_column){ b->names[c], "count", SERIES_U64 };
	}
	b->s = (struct series_stream){ .id = id, .source = "spm", .gpu = 0, .gpu_id = 1, .xcc = xcc,
				       .device_name = "emulated", .tick_domain = "gpu_ref_100MHz",
				       .ncols = ncols, .cols = b->cols };
	b->chunk = chunk;
	b->host = malloc(chunk * sizeof(*b->host));
	b->ticks = malloc(chunk * sizeof(*b->ticks));
	for (uint32_t c = 0; c < ncols; c++) {
		b->vals[c] = malloc(chunk * sizeof(uint64_t));
		b->vp[c] = b->vals[c];
	}
}

static void big_free(struct big *b)
{
	free(b->host);
	free(b->ticks);
	for (uint32_t c = 0; c < b->s.ncols; c++)
		free(b->vals[c]);
}

/* Next chunk: samples every 3.9 us (the SPM rate at 8192 SCLK). */
static struct series_chunk big_next(struct big *b)
{
	for (uint32_t i = 0; i < b->chunk; i++) {
		int64_t k = b->next + i;
		b->host[i] = T0 + k * 3900;
		b->ticks[i] = (uint64_t)k * 390;
		for (uint32_t c = 0; c < b->s.ncols; c++)
			b->vals[c][i] = big_value(c, k);
	}
	b->next += b->chunk;
	return (struct series_chunk){ &b->s, b->chunk, b->host, b->ticks, b->vp, NULL };
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec * 1e-6;
}

static long maxrss_kib(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* 8 million cells (a file 3 times SQLite's page cache): its heap and the process RSS stay bounded. */
static void test_bounded_memory(void)
{
	const char *db = path("big.db");
	const struct writer_ops *ops = &writer_sqlite;
	struct writer *w;
	char err[512];
	struct big b;
	big_init(&b, 1, 0, 16, 4096);
	CU_ASSERT_EQUAL_FATAL(ops->open(&w, db, &meta, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(ops->begin(w, &b.s, err, sizeof(err)), 0);
	long rss0 = maxrss_kib();
	sqlite3_int64 hw_first = 0;
	double t0 = now_s();
	const int nchunks = 124; /* 124 * 4096 * 16 = 8.1 M cells, about 50 MB */
	for (int k = 0; k < nchunks; k++) {
		struct series_chunk c = big_next(&b);
		CU_ASSERT_EQUAL_FATAL(ops->write(w, &c, err, sizeof(err)), 0);
		if (k == 60) /* about 24 MB written: the 16 MiB page cache is full */
			hw_first = sqlite3_memory_highwater(0);
	}
	CU_ASSERT_EQUAL_FATAL(ops->end(w, err, sizeof(err)), 0);
	double dt = now_s() - t0;
	sqlite3_int64 hw = sqlite3_memory_highwater(0);
	long rss1 = maxrss_kib();
	uint64_t cells = (uint64_t)nchunks * 4096 * 16;
	struct stat sb;
	stat(db, &sb);
	printf("\n    %" PRIu64 " cells in %.2f s: %.2f M cells/s, %.1f B/cell; sqlite heap high-water "
	       "%.1f MiB (%.1f MiB after 61 chunks), max RSS +%.1f MiB\n",
	       cells, dt, cells / dt / 1e6, (double)sb.st_size / (double)cells, hw / 1048576.0,
	       hw_first / 1048576.0, (rss1 - rss0) / 1024.0);
	/* page cache (16 MiB) plus statements and schema; a leak per row would be >> 100 MiB */
	CU_ASSERT(hw < 24 * 1048576);
	CU_ASSERT(hw - hw_first < 4 * 1048576);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) /* sanitizer shadow and quarantine grow RSS on their own */
	CU_ASSERT(rss1 - rss0 < 64 * 1024);
#endif
	big_free(&b);
	if (need_cli())
		return;
	char want[128];
	/* samples 100000..100999 of CTR_05 */
	snprintf(want, sizeof(want), "1000|%" PRIu64 "|%" PRIu64, big_value(5, 100000), big_value(5, 100999));
	CHECK_SQL(db,
		  "SELECT count(*), min(value), max(value) FROM sample_v WHERE track='gpu0.xcc0.CTR_05' "
		  "AND host_ns >= 1000000000000 + 100000 * 3900 AND host_ns < 1000000000000 + 101000 * 3900",
		  want);
	snprintf(want, sizeof(want), "%" PRIu64, cells);
	CHECK_SQL(db, "SELECT count(*) FROM sample", want);
	check_plan(db, "SELECT value FROM sample_v WHERE track='gpu0.xcc0.CTR_05' "
		       "AND host_ns >= 1000390000000 AND host_ns < 1000393900000");
	CHECK_SQL(db, "PRAGMA integrity_check", "ok");
}

/*
 * One row per sample, in a table per stream keyed by time: two XCC streams
 * of 16 counters written in interleaved chunks, as the session does.  Each
 * insert then appends at the right edge of its stream's B-tree, so the cost
 * per sample does not grow with the table (bench_sqlite measures it), and
 * the file holds a few bytes per counter value, not a key per value.
 */
static void test_one_row_per_sample(void)
{
	const char *db = path("wide.db");
	const struct writer_ops *ops = &writer_sqlite;
	struct writer *w;
	char err[512];
	enum { NS = 2, NC = 16, CH = 4096, CHUNKS = 5 };
	static struct big b[NS];
	CU_ASSERT_EQUAL_FATAL(ops->open(&w, db, &meta, err, sizeof(err)), 0);
	for (int s = 0; s < NS; s++) {
		big_init(&b[s], 20 + s, s, NC, CH);
		CU_ASSERT_EQUAL_FATAL(ops->begin(w, &b[s].s, err, sizeof(err)), 0);
	}
	for (int k = 0; k < CHUNKS; k++)
		for (int s = 0; s < NS; s++) {
			struct series_chunk c = big_next(&b[s]);
			CU_ASSERT_EQUAL_FATAL(ops->write(w, &c, err, sizeof(err)), 0);
		}
	CU_ASSERT_EQUAL_FATAL(ops->end(w, err, sizeof(err)), 0);
	for (int s = 0; s < NS; s++)
		big_free(&b[s]);
	if (need_cli())
		return;
	const uint64_t samples = (uint64_t)CHUNKS * CH, cells = samples * NS * NC;
	char want[256];
	CHECK_SQL(db, "SELECT group_concat(sample_table) FROM (SELECT sample_table FROM stream ORDER BY id)",
		  "samples_20,samples_21");
	snprintf(want, sizeof(want), "%" PRIu64 "|%" PRIu64, samples, samples);
	CHECK_SQL(db, "SELECT (SELECT count(*) FROM samples_20), (SELECT count(*) FROM samples_21)", want);
	/* column vC is metric col C; the rows are the samples, by idx and time */
	snprintf(want, sizeof(want), "%" PRIu64 "|%" PRIu64 "|%" PRId64 "|%" PRIu64, big_value(5, 100),
		 big_value(15, 100), (int64_t)(T0 + 100 * 3900), (uint64_t)100 * 390);
	CHECK_SQL(db, "SELECT v5, v15, host_ns, ticks FROM samples_21 WHERE idx = 100", want);
	snprintf(want, sizeof(want), "%" PRIu64, cells);
	CHECK_SQL(db, "SELECT count(*) FROM sample", want);
	/* keyed by time: a time range of a stream is a seek, no index beside it */
	char out[4096];
	CU_ASSERT_EQUAL(cli(db, "EXPLAIN QUERY PLAN SELECT v3 FROM samples_20 WHERE host_ns BETWEEN 1 AND 2", out,
			    sizeof(out)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "SEARCH samples_20 USING PRIMARY KEY (host_ns>? AND host_ns<?)"));
	CHECK_SQL(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name LIKE 'samples_%'", "0");
	/* a few bytes per counter value: one key per sample, not one per value (28.5 B/value before) */
	struct stat sb;
	CU_ASSERT_EQUAL_FATAL(stat(db, &sb), 0);
	printf("\n    %" PRIu64 " cells: %.1f B/cell\n", cells, (double)sb.st_size / (double)cells);
	CU_ASSERT((double)sb.st_size / (double)cells < 8.0);
	CHECK_SQL(db, "PRAGMA integrity_check", "ok");
}

/*
 * More streams than one compound SELECT may have arms (SQLite's 500): the
 * views still open in a fresh reader, count every row, and keep the seek.
 */
static void test_many_streams(void)
{
	const char *db = path("many.db");
	const struct writer_ops *ops = &writer_sqlite;
	struct writer *w;
	char err[512];
	enum { NS = 520, N = 3 };
	static struct big b[NS];
	CU_ASSERT_EQUAL_FATAL(ops->open(&w, db, &meta, err, sizeof(err)), 0);
	for (int s = 0; s < NS; s++) {
		big_init(&b[s], 100 + s, s, 1, N);
		b[s].s.gpu = s / 8;
		b[s].s.xcc = s % 8;
		CU_ASSERT_EQUAL_FATAL(ops->begin(w, &b[s].s, err, sizeof(err)), 0);
	}
	for (int s = 0; s < NS; s++) {
		struct series_chunk c = big_next(&b[s]);
		CU_ASSERT_EQUAL_FATAL(ops->write(w, &c, err, sizeof(err)), 0);
	}
	int rc = ops->end(w, err, sizeof(err));
	if (rc)
		fprintf(stderr, "\n    end: %s\n", err);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	for (int s = 0; s < NS; s++)
		big_free(&b[s]);
	if (need_cli())
		return;
	char want[64];
	snprintf(want, sizeof(want), "%d|%d", NS * N, NS * N);
	CHECK_SQL(db, "SELECT (SELECT count(*) FROM sample), (SELECT count(*) FROM sample_v)", want);
	CHECK_SQL(db, "SELECT idx, value, stream_id FROM sample_v WHERE track = 'gpu60.xcc3.CTR_00' AND idx = 2",
		  "2|32|583");
	check_plan(db, "SELECT value FROM sample_v WHERE track = 'gpu60.xcc3.CTR_00' "
		       "AND host_ns >= 1000000000000 AND host_ns < 1000000010000");
}

/*
 * Fill a small file system (a private tmpfs where this process may mount one,
 * else RLIMIT_FSIZE) in a child; report through a pipe what happened and
 * what the sqlite3 tool then reads from the file, there and then.
 */
static void fill_disk_child(int fd, const char *mnt)
{
	char mode[16] = "tmpfs";
	/* SPMTAP_TEST_NO_TMPFS=1 tries the RLIMIT_FSIZE path where tmpfs would work */
	if (getenv("SPMTAP_TEST_NO_TMPFS") || unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", mnt, "tmpfs", 0, "size=4m")) {
		snprintf(mode, sizeof(mode), "fsize");
		signal(SIGXFSZ, SIG_IGN);
		struct rlimit rl;
		getrlimit(RLIMIT_FSIZE, &rl);
		rl.rlim_cur = 4 << 20;
		setrlimit(RLIMIT_FSIZE, &rl);
	}
	char db[300];
	snprintf(db, sizeof(db), "%s/full.db", mnt);
	const struct writer_ops *ops = &writer_sqlite;
	struct writer *w;
	char err[512] = "";
	int rc = ops->open(&w, db, &meta, err, sizeof(err));
	if (rc) {
		dprintf(fd, "open_rc=%d\nerr=%s\n", rc, err);
		_exit(0);
	}
	struct big b;
	big_init(&b, 3, 2, 8, 2000);
	rc = ops->begin(w, &b.s, err, sizeof(err));
	int ok_chunks = 0;
	for (int k = 0; !rc && k < 400; k++) {
		struct series_chunk c = big_next(&b);
		rc = ops->write(w, &c, err, sizeof(err));
		if (!rc) {
			ok_chunks++;
			usleep(110 * 1000); /* past the commit interval: the next write commits this one */
		}
	}
	/* after an error nothing more goes in (no gap in the series): the same error again */
	char err3[512] = "";
	struct series_chunk c3 = big_next(&b);
	int rc3 = ops->write(w, &c3, err3, sizeof(err3));
	dprintf(fd, "sticky=%d\n", rc3 == rc && !strcmp(err3, err));
	char err2[512] = "";
	int rc2 = ops->end(w, err2, sizeof(err2));
	/* the reader is not limited */
	struct rlimit rl;
	getrlimit(RLIMIT_FSIZE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_FSIZE, &rl);
	char out[4096];
	dprintf(fd, "mode=%s\nrc=%d\nerr=%s\nend_rc=%d\nend_err=%s\nok_chunks=%d\n", mode, rc, err, rc2, err2,
		ok_chunks);
	int crc = cli(db, "PRAGMA integrity_check", out, sizeof(out));
	dprintf(fd, "integrity=%d:%s\n", crc, out);
	crc = cli(db, "SELECT count(*) FROM sample", out, sizeof(out));
	dprintf(fd, "count=%s\n", crc ? "-1" : out);
	/* every metric holds an exact prefix of its series: idx 0..n-1, values as written */
	crc = cli(db,
		  "SELECT count(*) FROM sample x JOIN metric m ON m.id = x.metric_id "
		  "WHERE x.value IS NOT x.idx * 16 + m.col OR x.host_ns IS NOT 1000000000000 + x.idx * 3900",
		  out, sizeof(out));
	dprintf(fd, "bad=%s\n", crc ? "-1" : out);
	crc = cli(db, "SELECT count(DISTINCT n) FROM (SELECT count(*) AS n, max(idx) + 1 - count(*) AS gap "
		      "FROM sample GROUP BY metric_id HAVING gap = 0)",
		  out, sizeof(out));
	dprintf(fd, "prefix=%s\n", crc ? "-1" : out);
	crc = cli(db, "SELECT value FROM meta WHERE key='spmtap_version'", out, sizeof(out));
	dprintf(fd, "version=%s\n", crc ? "?" : out);
	big_free(&b);
	_exit(0);
}

static const char *field(const char *buf, const char *key, char *val, size_t len)
{
	char k[64];
	snprintf(k, sizeof(k), "\n%s=", key);
	const char *p = strstr(buf, k);
	val[0] = 0;
	if (!p)
		return val;
	p += strlen(k);
	size_t n = strcspn(p, "\n");
	snprintf(val, len, "%.*s", (int)n, p);
	return val;
}

static void test_full_disk(void)
{
	char mnt[300];
	snprintf(mnt, sizeof(mnt), "%s/small", dir);
	CU_ASSERT_EQUAL_FATAL(mkdir(mnt, 0700), 0);
	int pfd[2];
	CU_ASSERT_EQUAL_FATAL(pipe(pfd), 0);
	pid_t pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		fill_disk_child(pfd[1], mnt);
	}
	close(pfd[1]);
	char buf[16384] = "\n";
	size_t got = 1;
	ssize_t r;
	while ((r = read(pfd[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)r;
	buf[got] = 0;
	close(pfd[0]);
	int st;
	waitpid(pid, &st, 0);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	char mode[16], rc[16], err[512], end_rc[16], end_err[512], okc[16], integ[256], count[32], bad[32],
		prefix[32], ver[64];
	field(buf, "mode", mode, sizeof(mode));
	field(buf, "rc", rc, sizeof(rc));
	field(buf, "err", err, sizeof(err));
	field(buf, "end_rc", end_rc, sizeof(end_rc));
	field(buf, "end_err", end_err, sizeof(end_err));
	field(buf, "ok_chunks", okc, sizeof(okc));
	field(buf, "integrity", integ, sizeof(integ));
	field(buf, "count", count, sizeof(count));
	field(buf, "bad", bad, sizeof(bad));
	field(buf, "prefix", prefix, sizeof(prefix));
	field(buf, "version", ver, sizeof(ver));
	printf("\n    %s: after %s chunks: %s\n    end: %s\n    committed cells %s, integrity %s\n", mode,
	       okc, err, end_err, count, integ);
	char dbp[320];
	snprintf(dbp, sizeof(dbp), "%s/full.db", mnt);
	bool tmpfs = !strcmp(mode, "tmpfs");
	int e = tmpfs ? ENOSPC : EFBIG;
	CU_ASSERT_EQUAL(atoi(rc), -e);
	CU_ASSERT_EQUAL(atoi(end_rc), -e); /* sticky */
	CU_ASSERT_PTR_NOT_NULL(strstr(err, dbp));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, strerror(e)));
	CU_ASSERT_STRING_EQUAL(err, end_err);
	CU_ASSERT_STRING_EQUAL(field(buf, "sticky", rc, sizeof(rc)), "1");
	CU_ASSERT_STRING_EQUAL(integ, "0:ok");
	CU_ASSERT_STRING_EQUAL(bad, "0");
	CU_ASSERT_STRING_EQUAL(prefix, "1"); /* all 8 metrics the same length, no gaps */
	CU_ASSERT_STRING_EQUAL(ver, "0.1.0-test");
	long n = atol(count), ok = atol(okc), per = 8 * 2000;
	CU_ASSERT(ok >= 2);
	/* all but the last good chunk were committed (each write commits the previous one) */
	CU_ASSERT(n >= (ok - 1) * per && n <= ok * per);
}

/* A reader on the live file sees committed batches; holding it open at end() is no error. */
static void test_live_reader(void)
{
	const char *db = path("live.db");
	const struct writer_ops *ops = &writer_sqlite;
	struct writer *w;
	char err[512];
	struct big b;
	big_init(&b, 4, 0, 4, 1000);
	CU_ASSERT_EQUAL_FATAL(ops->open(&w, db, &meta, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(ops->begin(w, &b.s, err, sizeof(err)), 0);
	struct series_chunk c = big_next(&b);
	CU_ASSERT_EQUAL_FATAL(ops->write(w, &c, err, sizeof(err)), 0);
	usleep(110 * 1000);
	c = big_next(&b);
	CU_ASSERT_EQUAL_FATAL(ops->write(w, &c, err, sizeof(err)), 0); /* commits the first */
	sqlite3 *h;
	CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_stmt *st;
	CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h, "SELECT count(*) FROM sample", -1, &st, NULL), SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_ROW);
	CU_ASSERT_EQUAL(sqlite3_column_int64(st, 0), 4000);
	/* the statement holds a read transaction open across end() */
	int rc = ops->end(w, err, sizeof(err));
	if (rc)
		fprintf(stderr, "end: %s\n", err);
	CU_ASSERT_EQUAL(rc, 0);
	sqlite3_finalize(st);
	CU_ASSERT_EQUAL(sqlite3_close(h), SQLITE_OK);
	big_free(&b);
	if (!need_cli()) {
		CHECK_SQL(db, "SELECT count(*) FROM sample", "8000");
		CHECK_SQL(db, "PRAGMA integrity_check", "ok");
	}
}

static void test_errors(void)
{
	const struct writer_ops *ops = &writer_sqlite;
	struct writer *w = NULL;
	char err[512], reason[256];
	CU_ASSERT_EQUAL(ops->probe(reason, sizeof(reason)), 0);
	CU_ASSERT_STRING_EQUAL(ops->name, "sqlite");
	/* a directory that does not exist */
	const char *p = path("nodir/x.db");
	CU_ASSERT_EQUAL(ops->open(&w, p, &meta, err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NULL(w);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, p));
	CU_ASSERT_EQUAL(ops->open(&w, "-", &meta, err, sizeof(err)), -EINVAL);
	/* a chunk of a stream never begun; a stream begun twice */
	p = path("err.db");
	CU_ASSERT_EQUAL_FATAL(ops->open(&w, p, NULL, err, sizeof(err)), 0);
	int64_t h = 1;
	uint64_t v = 1;
	const void *vals[2] = { &v, &v };
	struct series_chunk c = { &spm, 1, &h, NULL, vals, NULL };
	CU_ASSERT_EQUAL(ops->write(w, &c, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "never begun"));
	CU_ASSERT_EQUAL(ops->begin(w, &spm, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ops->begin(w, &spm, err, sizeof(err)), -EEXIST);
	CU_ASSERT_EQUAL(ops->write(w, &c, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ops->end(w, err, sizeof(err)), 0);
	/* opening again replaces the file, it does not append */
	CU_ASSERT_EQUAL_FATAL(write_fixture(p), 0);
	if (!need_cli()) {
		CHECK_SQL(p, "SELECT count(*) FROM stream", "2");
		CHECK_SQL(p, "SELECT count(*) FROM sample", "220");
	}
}

/*
 * SPMTAP_SQLITE_BENCH=1: 10 M cells (4 XCC streams x 16 counters x 156250
 * samples), then a time-range query per counter, timed in process.
 */
static const char *need_bench(void)
{
	return getenv("SPMTAP_SQLITE_BENCH") ? NULL : "set SPMTAP_SQLITE_BENCH=1 to run";
}

static void test_bench(void)
{
	const char *db = path("bench.db");
	const struct writer_ops *ops = &writer_sqlite;
	struct writer *w;
	char err[512];
	enum { NS = 4, NC = 16, CH = 4096 };
	long per = getenv("SPMTAP_SQLITE_BENCH_SAMPLES") ? atol(getenv("SPMTAP_SQLITE_BENCH_SAMPLES"))
							   : 156250;
	static struct big b[NS];
	CU_ASSERT_EQUAL_FATAL(ops->open(&w, db, &meta, err, sizeof(err)), 0);
	for (int s = 0; s < NS; s++) {
		big_init(&b[s], 10 + s, s, NC, CH);
		CU_ASSERT_EQUAL_FATAL(ops->begin(w, &b[s].s, err, sizeof(err)), 0);
	}
	double t0 = now_s(), c0 = cpu_s();
	long chunks = (per + CH - 1) / CH;
	for (long k = 0; k < chunks; k++)
		for (int s = 0; s < NS; s++) {
			struct series_chunk c = big_next(&b[s]);
			CU_ASSERT_EQUAL_FATAL(ops->write(w, &c, err, sizeof(err)), 0);
		}
	double tw = now_s() - t0;
	CU_ASSERT_EQUAL_FATAL(ops->end(w, err, sizeof(err)), 0);
	double te = now_s() - t0, ce = cpu_s() - c0;
	uint64_t cells = (uint64_t)chunks * CH * NS * NC;
	struct stat sb;
	stat(db, &sb);
	printf("\n    insert: %" PRIu64 " cells in %.2f s (%.2f s with end; %.2f s CPU): %.2f M cells/s "
	       "(%.2f M per CPU second); file %.0f MiB (%.1f B/cell); sqlite heap high-water %.1f MiB; "
	       "max RSS %.0f MiB\n",
	       cells, tw, te, ce, cells / te / 1e6, cells / ce / 1e6, sb.st_size / 1048576.0,
	       (double)sb.st_size / (double)cells,
	       sqlite3_memory_highwater(0) / 1048576.0, maxrss_kib() / 1024.0);
	for (int s = 0; s < NS; s++)
		big_free(&b[s]);
	/* a fresh connection, cold statement cache; the OS page cache is warm */
	sqlite3 *h;
	CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_stmt *st;
	CU_ASSERT_EQUAL_FATAL(
		sqlite3_prepare_v2(h,
				   "SELECT count(*), sum(value) FROM sample_v WHERE track = ?1 "
				   "AND host_ns >= ?2 AND host_ns < ?3",
				   -1, &st, NULL),
		SQLITE_OK);
	int64_t span = (int64_t)chunks * CH * 3900;
	const double windows_ms[] = { 1, 10, 100 };
	for (int wi = 0; wi < 3; wi++) {
		int64_t len = (int64_t)(windows_ms[wi] * 1e6);
		int reps = 200;
		int64_t rows = 0;
		double q0 = now_s();
		for (int q = 0; q < reps; q++) {
			char track[64];
			snprintf(track, sizeof(track), "gpu0.xcc%d.CTR_%02d", q % NS, (q * 7) % NC);
			int64_t start = T0 + (int64_t)(((uint64_t)q * 2654435761u) % (uint64_t)(span - len));
			sqlite3_bind_text(st, 1, track, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(st, 2, start);
			sqlite3_bind_int64(st, 3, start + len);
			CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_ROW);
			rows += sqlite3_column_int64(st, 0);
			sqlite3_reset(st);
		}
		double dq = (now_s() - q0) / reps;
		printf("    range query per counter, %4.0f ms window: %.1f us/query, %.0f rows/query\n",
		       windows_ms[wi], dq * 1e6, (double)rows / reps);
	}
	sqlite3_finalize(st);
	/* the same without an index: a scan of the whole table */
	double q0 = now_s();
	CU_ASSERT_EQUAL(sqlite3_exec(h, "SELECT count(*) FROM sample WHERE +metric_id = 37 "
					"AND host_ns >= 1000100000000 AND host_ns < 1000101000000",
				     NULL, NULL, NULL),
			SQLITE_OK);
	printf("    the same 1 ms window by full scan (index disabled): %.1f ms\n", (now_s() - q0) * 1e3);
	sqlite3_close(h);
	if (!need_cli())
		check_plan(db, "SELECT count(*), sum(value) FROM sample_v WHERE track = 'gpu0.xcc1.CTR_03' "
			       "AND host_ns >= 1000100000000 AND host_ns < 1000101000000");
}

/*
 * Kernel dispatches (writer_ops.dispatches): the kernel_dispatch table with
 * NULL times/GPU for an unmapped one, kernel_dispatch_v's dur_ns, and a
 * stream's kernel_samples view: counters under their names (v<col> for a
 * repeat in another case, a dispatch column's name; a quote kept), the
 * samples with start_ns <= host_ns < end_ns of dispatches on the stream's
 * GPU only, a concurrent dispatch getting its own rows.
 */
static void test_kernels(void)
{
	static const struct series_column cols[] = {
		{ "SQ_WAVES", "count", SERIES_U64 }, { "sq_waves", "count", SERIES_U64 },
		{ "gpu", "count", SERIES_U64 }, { "TCC\"HIT[0]", "count", SERIES_U64 },
	};
	static const struct series_stream st = { .id = 3, .source = "spm", .gpu = 1, .gpu_id = 0x22, .xcc = 0,
						 .ncols = 4, .cols = cols };
	char err[512];
	struct writer *w = NULL;
	const char *db = path("kernels.db");
	CU_ASSERT_EQUAL_FATAL(writer_sqlite.open(&w, db, &meta, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(writer_sqlite.begin(w, &st, err, sizeof(err)), 0);
	int64_t host[100];
	uint64_t v[4][100];
	for (int i = 0; i < 100; i++) {
		host[i] = T0 + i * 1000;
		for (int c = 0; c < 4; c++)
			v[c][i] = (uint64_t)i * (uint64_t)(c + 1);
	}
	const void *vals[4] = { v[0], v[1], v[2], v[3] };
	struct series_chunk c = { &st, 100, host, NULL, vals, NULL };
	CU_ASSERT_EQUAL_FATAL(writer_sqlite.write(w, &c, err, sizeof(err)), 0);
	struct series_dispatch d[4] = {
		{ .corr_id = 1, .start_ns = T0 + 10000, .end_ns = T0 + 20000, .gpu = 1, .kernel = "a", .pid = 5,
		  .start_ticks = 100, .end_ticks = 1100, .grid = { 64, 1, 1 }, .wg = { 64, 1, 1 } },
		{ .corr_id = 2, .start_ns = T0 + 15500, .end_ns = T0 + 16500, .gpu = 1, .kernel = "b" },
		{ .corr_id = 3, .start_ns = T0 + 10000, .end_ns = T0 + 20000, .gpu = 0, .kernel = "other_gpu" },
		{ .corr_id = 4, .start_ns = -1, .end_ns = -1, .gpu = -1, .kernel = "", .status = -5,
		  .start_ticks = UINT64_MAX },
	};
	CU_ASSERT_EQUAL_FATAL(writer_sqlite.dispatches(w, d, 4, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(writer_sqlite.end(w, err, sizeof(err)), 0);
	CHECK_SQL(db, "SELECT group_concat(name, ',') FROM pragma_table_info('kernel_samples_3')",
		  "corr_id,kernel,gpu,queue_id,pid,tid,status,start_ns,end_ns,host_ns,idx,ticks,SQ_WAVES,v1,v2,"
		  "TCC\"HIT[0]");
	CHECK_SQL(db, "SELECT kernel, count(*), sum(SQ_WAVES), sum(v2), sum(\"TCC\"\"HIT[0]\") FROM kernel_samples_3 "
		      "GROUP BY kernel ORDER BY kernel",
		  "a|10|145|435|580\nb|1|16|48|64");
	CHECK_SQL(db, "SELECT corr_id, dur_ns, gpu, grid_x, wg_x, start_ticks, end_ticks, pid FROM kernel_dispatch_v "
		      "WHERE corr_id = 1", "1|10000|1|64|64|100|1100|5");
	CHECK_SQL(db, "SELECT corr_id, start_ns IS NULL, end_ns IS NULL, gpu IS NULL, status, kernel, start_ticks "
		      "FROM kernel_dispatch WHERE corr_id = 4", "4|1|1|1|-5||-1");
	CHECK_SQL(db, "SELECT count(*) FROM kernel_dispatch", "4");
	CHECK_SQL(db, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'kernel_dispatch' "
		      "ORDER BY name", "kernel_dispatch_by_kernel\nkernel_dispatch_by_time");
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "values", test_values, need_cli },
		{ "plans", test_plans, need_cli },
		{ "bounded_memory", test_bounded_memory, NULL },
		{ "one_row_per_sample", test_one_row_per_sample, NULL },
		{ "many_streams", test_many_streams, NULL },
		{ "full_disk", test_full_disk, need_cli },
		{ "live_reader", test_live_reader, NULL },
		{ "errors", test_errors, NULL },
		{ "kernels", test_kernels, need_cli },
		{ "bench", test_bench, need_bench },
		{ NULL, NULL, NULL },
	};
	if (!mkdtemp(dir))
		return 1;
	int rc = testenv_run_suite("write_sqlite", cases, argc, argv);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		rc = rc ? rc : 1;
	return rc;
}
