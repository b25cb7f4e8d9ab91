/* SPDX-License-Identifier: MIT */
/*
 * The session path of `spmtap record` (collector/lib/session.c) on the
 * emulated mi300a,mi210: every format read back by its real reader
 * (sqlite3, protoc --decode, a CSV parse), the byte accounting under
 * injected decode/writer stalls, SIGINT, a full disk, and `-- app`.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "files.h"
#include "pftrace.h"
#include "proc.h"
#include "testenv.h"

static char spmtap[4096];

static const char *need_emulator(void)
{
	snprintf(spmtap, sizeof(spmtap), "%s/spmtap", testenv_build_dir());
	const char *why = testenv_need_emu_shim();
	return why ? why : testenv_need_sqlite3_cli();
}

static const char *path(const char *name)
{
	return testenv_path(testenv_tmpdir(), name);
}

/* spmtap --emulate mi300a,mi210 ARGS, stderr to errfile; the pid (tests/lib/proc.h). */
static pid_t spawn(const char *const *args, const char *const *env, const char *errfile, long fsize)
{
	static const char *const pre[] = { "--emulate", "mi300a,mi210", NULL };
	return tp_spawn_spmtap(pre, args, path("state"),
			       &(struct tp_opts){ .env = env, .err = errfile, .fsize = fsize });
}

static int wait_status(pid_t pid) { return tp_wait(pid); }

static const char *slurp(const char *p) { return tf_peek(p); }

/* One line of a shell command's output. */
static const char *sh1(const char *cmd) { return tp_sh1(cmd); }

/* Rows per stream and host_ns monotonic per (gpu,xcc) in NAME_spm.csv. */
static long csv_check(const char *file, long *bad_order)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return -1;
	char line[4096];
	long rows = 0;
	int64_t last[16][16];
	memset(last, 0, sizeof(last));
	*bad_order = 0;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned g, x;
		long long h;
		if (sscanf(line, "%u,%u,%lld,", &g, &x, &h) != 3 || g > 15 || x > 15) {
			rows = -2;
			break;
		}
		if (h <= last[g][x])
			(*bad_order)++;
		last[g][x] = h;
		rows++;
	}
	fclose(f);
	return rows;
}

/*
 * The Perfetto trace holds, per GPU, XCC and counter, the samples of the CSV
 * of the same run: as many, the same values and the same times (both
 * summed), read back as trace_processor reads it (tests/lib/pftrace.c).
 * Returns the number of (track, CSV column) pairs compared, or -1.
 */
static int pftrace_matches_csv(const char *trace, const char *csv, const char *const *names, int nnames)
{
	static struct pft_counter tr[256];
	int ntr = pft_counters(trace, tr, 256);
	FILE *f = fopen(csv, "r");
	if (ntr < 0 || !f) {
		if (f)
			fclose(f);
		return -1;
	}
	char line[4096];
	int col[8] = { -1, -1, -1, -1, -1, -1, -1, -1 };
	if (nnames > 8 || !fgets(line, sizeof(line), f)) {
		fclose(f);
		return -1;
	}
	char *save = NULL;
	int k = 0;
	for (char *c = strtok_r(line, ",\n", &save); c; c = strtok_r(NULL, ",\n", &save), k++)
		for (int j = 0; j < nnames; j++)
			if (!strcmp(c, names[j]))
				col[j] = k;
	/* per GPU (< 4), XCC (< 16), name: samples, sum of values, sum of times */
	static uint64_t n[4][16][8], sum[4][16][8], sum_ts[4][16][8];
	memset(n, 0, sizeof(n));
	memset(sum, 0, sizeof(sum));
	memset(sum_ts, 0, sizeof(sum_ts));
	while (fgets(line, sizeof(line), f)) {
		char *cell[64];
		int nc = 0;
		for (char *p = line; nc < 64; nc++) {
			cell[nc] = p;
			char *e = strpbrk(p, ",\n");
			if (!e)
				break;
			*e = 0;
			p = e + 1;
		}
		unsigned g = (unsigned)atoi(cell[0]), x = (unsigned)atoi(cell[1]);
		if (g >= 4 || x >= 16)
			continue;
		for (int j = 0; j < nnames; j++)
			if (col[j] >= 0 && col[j] < nc && *cell[col[j]]) {
				n[g][x][j]++;
				sum[g][x][j] += strtoull(cell[col[j]], NULL, 10);
				sum_ts[g][x][j] += strtoull(cell[2], NULL, 10);
			}
	}
	fclose(f);
	int compared = 0;
	for (int t = 0; t < ntr; t++) {
		unsigned g, x;
		char name[128];
		if (sscanf(tr[t].name, "GPU%u XCC%u %127s", &g, &x, name) != 3 || g >= 4 || x >= 16)
			continue;
		for (int j = 0; j < nnames; j++) {
			if (strcmp(name, names[j]))
				continue;
			compared++;
			if (tr[t].n != n[g][x][j] || tr[t].sum != (double)sum[g][x][j] ||
			    tr[t].sum_ts != sum_ts[g][x][j]) {
				fprintf(stderr, "\n    %s: pftrace %" PRIu64 " samples sum %.0f, csv %" PRIu64
					" sum %" PRIu64 " ", tr[t].name, tr[t].n, tr[t].sum, n[g][x][j], sum[g][x][j]);
				return -1;
			}
		}
	}
	return compared;
}

static void test_formats(void)
{
	const char *dir = path("fmt");
	const char *args[] = { "record", "--spm", "SQ_WAVES,TCC_HIT", "--device", "all", "--smi",
			       "power,energy", "-d", dir, "-o", "run", "-f", "csv,perfetto,sqlite",
			       "--duration", "1", NULL };
	int st = wait_status(spawn(args, NULL, path("fmt.err"), 0));
	if (st)
		fprintf(stderr, "\n%s\n", slurp(path("fmt.err")));
	CU_ASSERT_EQUAL_FATAL(st, 0);
	char cmd[8192], db[4096], csv[4096];
	snprintf(db, sizeof(db), "%s/run.db", dir);
	snprintf(csv, sizeof(csv), "%s/run_spm.csv", dir);
	/* sqlite3: 7 SPM streams (6 XCCs of the MI300A, 1 of the MI210), 2 sensor streams */
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select count(*) from stream where source='spm'\"", db);
	CU_ASSERT_STRING_EQUAL(sh1(cmd), "7");
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select count(*) from stream where source='smi'\"", db);
	CU_ASSERT_STRING_EQUAL(sh1(cmd), "2");
	/* rows per counter: every SPM metric has as many rows as its stream has samples */
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select count(distinct n) from (select m.stream_id, "
		 "count(*) n from sample s join metric m on m.id = s.metric_id join stream t on "
		 "t.id = m.stream_id where t.source = 'spm' group by m.id) group by stream_id\" | sort -u", db);
	CU_ASSERT_STRING_EQUAL(sh1(cmd), "1");
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select count(*) from sample s join metric m on "
		 "m.id = s.metric_id where m.name = 'SQ_WAVES'\"", db);
	long sq = atol(sh1(cmd));
	long bad = 0, rows = csv_check(csv, &bad);
	fprintf(stderr, "\n    csv %ld SPM rows, sqlite %ld SQ_WAVES rows, %ld out of order ", rows, sq, bad);
	CU_ASSERT(rows > 1000);
	CU_ASSERT_EQUAL(rows, sq);
	CU_ASSERT_EQUAL(bad, 0);
	/* time range: within the run, about a second */
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select (max(host_ns) - min(host_ns)) / 1000000 from sample\"", db);
	long span = atol(sh1(cmd));
	if (!(span > 500 && span < 2000))
		fprintf(stderr, "\n    time span of the samples: %ld ms (the run: 1 s) ", span);
	CU_ASSERT(span > 500 && span < 2000);
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select value from meta where key='timebase'\"", db);
	CU_ASSERT_PTR_NOT_NULL(strstr(sh1(cmd), "residual_rms_ns"));
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select value from meta where key='spm_clock_hz'\"", db);
	CU_ASSERT_EQUAL(atof(sh1(cmd)), 1e8);
	/* Perfetto: protoc reads it; one track per counter per GPU/XCC */
	snprintf(cmd, sizeof(cmd), "protoc --decode=perfetto.protos.Trace -I collector/proto "
		 "collector/proto/perfetto_trace.proto < %s/run.pftrace | grep -c "
		 "'name: \"GPU[01] XCC[0-9] \\(SQ_WAVES\\|TCC_HIT\\)\"'", dir);
	if (!access("collector/proto/perfetto_trace.proto", R_OK))
		CU_ASSERT_STRING_EQUAL(sh1(cmd), "14");
	/* and its samples are the CSV's, track by track */
	char trace[4096];
	snprintf(trace, sizeof(trace), "%s/run.pftrace", dir);
	const char *const counters[] = { "SQ_WAVES", "TCC_HIT" };
	CU_ASSERT_EQUAL(pftrace_matches_csv(trace, csv, counters, 2), 14);
	/* sensors in CSV */
	snprintf(cmd, sizeof(cmd), "head -1 %s/run_smi.csv", dir);
	CU_ASSERT_PTR_NOT_NULL(strstr(sh1(cmd), "gpu,host_ns,sensor_ts,"));
}

/*
 * Every byte: written samples + resync drops + pre-start + trailing + samples decoded after
 * the recording's end (left out, docs/cli/spmtap-record.md) == bytes fed, per XCC.
 */
static void check_accounting(const char *db, const char *what)
{
	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select count(*) from json_each((select value from meta "
		 "where key='accounting')) g, json_each(g.value, '$.xcc') x where "
		 "json_extract(x.value,'$.bytes') != json_extract(x.value,'$.sample_bytes') + "
		 "json_extract(x.value,'$.resync_dropped_bytes') + json_extract(x.value,'$.prestart_bytes') + "
		 "json_extract(x.value,'$.trailing_bytes') + json_extract(x.value,'$.after_end_bytes')\"", db);
	CU_ASSERT_STRING_EQUAL(sh1(cmd), "0");
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select sum(json_extract(x.value,'$.lost_gap_samples')) || ' gap samples, ' || "
		 "sum(json_extract(x.value,'$.kernel_loss_flags')) || ' kernel flags, ' || "
		 "sum(json_extract(x.value,'$.resync_dropped_bytes')) || ' resync bytes, ' || "
		 "sum(json_extract(x.value,'$.bytes')) || ' bytes' from json_each((select value from meta "
		 "where key='accounting')) g, json_each(g.value, '$.xcc') x\"", db);
	fprintf(stderr, "\n    %s: %s ", what, sh1(cmd));
}

/*
 * Samples against the emulator's per-sample truth (SPMTAP_EMU_SAMPLE_TRUTH),
 * per GPU and XCC.  The recording window of a stream is [first, last]: the
 * GPU ticks of the first and the last sample decoded for it.  Before the
 * window lie what the session drops on purpose (feeder seq 0, the
 * pre-program buffer, and the bytes before the first sample boundary; the
 * accounting reports them as first_buffer_bytes and prestart_bytes); after
 * it, what STOP left unfinished (a partial sample: trailing_bytes).  Inside
 * it every produced sample is either decoded or counted lost:
 *     samples + lost_gap_samples - lost_at_end_samples
 *         == truth records with first <= ticks <= last,
 * lost_at_end_samples being what the accounting counts between a stream's
 * last sample and the recording's end (no later sample shows that gap).
 * (Resync drops are partial samples of the same gaps: bytes, not samples.)
 */
struct acct_stream {
	uint32_t gpu_id, xcc;
	uint64_t first, last, decoded;       /* from the SQLite output */
	uint64_t in_window, before, after, flagged, after_flagged; /* from the truth */
	uint64_t samples, gap, at_end, ngaps; /* from the accounting metadata */
	bool have_acct;
};

static struct acct_stream *acct_find(struct acct_stream *a, size_t n, uint32_t gpu_id, uint32_t xcc)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].gpu_id == gpu_id && a[i].xcc == xcc)
			return &a[i];
	return NULL;
}

static void check_truth(const char *db, const char *truth, const char *what)
{
	struct acct_stream a[32];
	size_t n = 0;
	memset(a, 0, sizeof(a));
	sqlite3 *h = NULL;
	CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_stmt *q = NULL;
	CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h, "select t.gpu_id, t.xcc, min(s.ticks), max(s.ticks), "
		"count(*) from sample s join metric m on m.id = s.metric_id join stream t on t.id = "
		"m.stream_id where t.source = 'spm' and m.col = 0 group by t.id", -1, &q, NULL), SQLITE_OK);
	while (sqlite3_step(q) == SQLITE_ROW && n < 32)
		a[n++] = (struct acct_stream){ .gpu_id = (uint32_t)sqlite3_column_int64(q, 0),
			.xcc = (uint32_t)sqlite3_column_int(q, 1),
			.first = (uint64_t)sqlite3_column_int64(q, 2),
			.last = (uint64_t)sqlite3_column_int64(q, 3),
			.decoded = (uint64_t)sqlite3_column_int64(q, 4) };
	sqlite3_finalize(q);
	/* the accounting metadata: gpu index -> gpu_id through the stream table */
	CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h, "select (select value from meta where key = "
		"'accounting'), (select json_group_object(gpu, gpu_id) from (select distinct gpu, "
		"gpu_id from stream))", -1, &q, NULL), SQLITE_OK);
	CU_ASSERT_EQUAL_FATAL(sqlite3_step(q), SQLITE_ROW);
	json_t *acc = json_loads((const char *)sqlite3_column_text(q, 0), 0, NULL);
	json_t *ids = json_loads((const char *)sqlite3_column_text(q, 1), 0, NULL);
	sqlite3_finalize(q);
	sqlite3_close(h);
	CU_ASSERT_PTR_NOT_NULL_FATAL(acc);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ids);
	size_t gi;
	json_t *g;
	json_array_foreach(acc, gi, g) {
		char key[16];
		snprintf(key, sizeof(key), "%d", (int)json_integer_value(json_object_get(g, "gpu")));
		uint32_t gpu_id = (uint32_t)json_integer_value(json_object_get(ids, key));
		size_t xi;
		json_t *x;
		json_array_foreach(json_object_get(g, "xcc"), xi, x) {
			struct acct_stream *s = acct_find(a, n, gpu_id,
				(uint32_t)json_integer_value(json_object_get(x, "xcc")));
			if (!s)
				continue;
			s->have_acct = true;
			s->samples = (uint64_t)json_integer_value(json_object_get(x, "samples"));
			s->gap = (uint64_t)json_integer_value(json_object_get(x, "lost_gap_samples"));
			s->at_end = (uint64_t)json_integer_value(json_object_get(x, "lost_at_end_samples"));
			s->ngaps = (uint64_t)json_integer_value(json_object_get(x, "gaps"));
		}
	}
	json_decref(acc);
	json_decref(ids);
	/* the truth: JSON layout headers (pid, layout_id -> gpu_id) and binary records */
	FILE *f = fopen(truth, "rb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	struct { uint32_t pid, id, gpu_id; } lay[256];
	size_t nlay = 0;
	static char line[1 << 20];
	int c;
	bool ok = true;
	while (ok && (c = fgetc(f)) != EOF) {
		if (c == '{') {
			size_t len = 0;
			line[len++] = (char)c;
			while ((c = fgetc(f)) != EOF && c != '\n' && len + 1 < sizeof(line))
				line[len++] = (char)c;
			line[len] = 0;
			json_t *j = json_loads(line, 0, NULL);
			if (j && nlay < 256) {
				lay[nlay].pid = (uint32_t)json_integer_value(json_object_get(j, "pid"));
				lay[nlay].id = (uint32_t)json_integer_value(json_object_get(j, "layout_id"));
				lay[nlay++].gpu_id = (uint32_t)json_integer_value(json_object_get(j, "gpu_id"));
			}
			json_decref(j);
			continue;
		}
		ungetc(c, f);
		uint32_t hd[6];
		uint64_t h2[2];
		if (fread(hd, sizeof(hd), 1, f) != 1 || fread(h2, sizeof(h2), 1, f) != 1 ||
		    hd[0] != 0x52545053u || fseek(f, (long)hd[5] * 8, SEEK_CUR)) {
			ok = false;
			break;
		}
		uint32_t gpu_id = 0;
		for (size_t i = nlay; i-- > 0;)
			if (lay[i].pid == hd[1] && lay[i].id == hd[2]) {
				gpu_id = lay[i].gpu_id;
				break;
			}
		struct acct_stream *s = acct_find(a, n, gpu_id, hd[3]);
		if (!s)
			continue;
		/*
		 * Dropped by the emulated kernel: gen B's stall (bit 0, EMU_UNIT_STALLED)
		 * or gen A's discard (bit 1, EMU_UNIT_DISCARDED; emu/shim/spm_source.h).
		 * Counting bit 0 alone left every MI210 drop out: CI's TSan run failed on
		 * gpu 0x4001's 35 samples lost after its last one, which the device,
		 * late, had discarded.
		 */
		uint32_t dropped = (hd[4] & 3u) != 0;
		if (h2[1] < s->first)
			s->before++;
		else if (h2[1] > s->last) {
			s->after++;
			s->after_flagged += dropped;
		}
		else {
			s->in_window++;
			s->flagged += dropped;
		}
	}
	fclose(f);
	CU_ASSERT(ok);
	CU_ASSERT(n >= 7);
	uint64_t tot_dec = 0, tot_gap = 0, tot_win = 0, tot_before = 0, tot_after = 0, tot_flag = 0,
		 tot_after_flag = 0;
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		struct acct_stream *s = &a[i];
		CU_ASSERT(s->have_acct);
		CU_ASSERT_EQUAL(s->samples, s->decoded);
		/*
		 * Loss after the last sample, up to the recording's end, is counted from
		 * the host times (lost_at_end_samples): at most what the emulator
		 * dropped after the window.
		 */
		/*
		 * Each gap's loss is its length over the sample period, rounded: a
		 * stream that resumes off the sample grid is within one sample per gap
		 * (TSan in CI: 35 over a stream's gaps).
		 */
		uint64_t got = s->samples + s->gap - s->at_end;
		uint64_t off = got > s->in_window ? got - s->in_window : s->in_window - got;
		if (off > s->ngaps || s->at_end > s->after_flagged) {
			bad++;
			fprintf(stderr, "\n    gpu_id %u xcc %u: %" PRIu64 " decoded + %" PRIu64
				" lost (%" PRIu64 " after the last sample) != %" PRIu64 " produced in the window "
				"(by more than its %" PRIu64 " gaps), or more than the %" PRIu64 " dropped after it",
				s->gpu_id, s->xcc, s->samples, s->gap, s->at_end, s->in_window, s->ngaps, s->after_flagged);
		}
		tot_dec += s->samples;
		tot_gap += s->gap;
		tot_win += s->in_window;
		tot_before += s->before;
		tot_after += s->after;
		tot_flag += s->flagged;
		tot_after_flag += s->after_flagged;
		/* After the window: what the stall dropped whole, and samples past the end. */
	}
	CU_ASSERT_EQUAL(bad, 0);
	fprintf(stderr, "\n    %s vs truth, %zu streams: %" PRIu64 " decoded + %" PRIu64 " lost = %" PRIu64
		" produced in the windows (%" PRIu64 " stall-dropped by the emulator); %" PRIu64
		" before the windows, %" PRIu64 " after (%" PRIu64 " of them stall-dropped) ", what, n,
		tot_dec, tot_gap, tot_win, tot_flag, tot_before, tot_after, tot_after_flag);
}

static void test_stalls(void)
{
	static char truth[2][4200];
	snprintf(truth[0], sizeof(truth[0]), "SPMTAP_EMU_SAMPLE_TRUTH=%s", path("wstall.truth"));
	snprintf(truth[1], sizeof(truth[1]), "SPMTAP_EMU_SAMPLE_TRUTH=%s", path("dstall.truth"));
	const char *const envs[2][3] = { { "SPMTAP_WRITER_STALL=300:700", truth[0], NULL },
					 { "SPMTAP_DECODE_STALL=300:700", truth[1], NULL } };
	for (int k = 0; k < 2; k++) {
		const char *dir = path(k ? "dstall" : "wstall");
		const char *args[] = { "record", "--spm", "SQ_WAVES", "--device", "all", "-d", dir,
				       "-o", "run", "-f", "sqlite", "--buffers", "2", "--buffer-size",
				       "256k", "--duration", "1.5", NULL };
		int st = wait_status(spawn(args, envs[k], path("stall.err"), 0));
		if (st)
			fprintf(stderr, "\n%s\n", slurp(path("stall.err")));
		CU_ASSERT_EQUAL(st, 0);
		char db[4096];
		snprintf(db, sizeof(db), "%s/run.db", dir);
		check_accounting(db, k ? "decode stall 700 ms" : "writer stall 700 ms");
		check_truth(db, strchr(envs[k][1], '=') + 1, k ? "decode stall" : "writer stall");
	}
}

static void test_sigint(void)
{
	const char *dir = path("sig");
	const char *args[] = { "record", "--spm", "SQ_WAVES", "--device", "all", "-d", dir, "-o",
			       "run", "-f", "csv,sqlite,perfetto", NULL };
	pid_t pid = spawn(args, NULL, path("sig.err"), 0);
	/* SIGINT once rows are being written, not after a fixed second: on a loaded
	 * 2-core machine the device setup alone can take longer, and a stop before
	 * the first row is another case (test_stop). */
	char part[4096];
	snprintf(part, sizeof(part), "%s/run_spm.csv.part", dir);
	for (int i = 0; i < 600; i++) {
		struct stat sb;
		if (stat(part, &sb) == 0 && sb.st_size > 4096)
			break;
		usleep(50000);
	}
	kill(pid, SIGINT);
	int st = wait_status(pid);
	CU_ASSERT_EQUAL(st, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(slurp(path("sig.err")), "stopped by"));
	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "sqlite3 %s/run.db 'pragma integrity_check'", dir);
	CU_ASSERT_STRING_EQUAL(sh1(cmd), "ok");
	snprintf(cmd, sizeof(cmd), "%s/run_spm.csv", dir);
	long bad, rows = csv_check(cmd, &bad);
	CU_ASSERT(rows > 0);
	snprintf(cmd, sizeof(cmd), "tail -c1 %s/run_spm.csv | od -An -c | tr -d ' '", dir);
	CU_ASSERT_STRING_EQUAL(sh1(cmd), "\\n");
}

static void test_full_disk(void)
{
	const char *dir = path("full");
	const char *args[] = { "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "run", "-f", "csv",
			       "--duration", "2", NULL };
	int st = wait_status(spawn(args, NULL, path("full.err"), 1 << 20));
	const char *e = slurp(path("full.err"));
	CU_ASSERT_EQUAL(st, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(e, "run_spm.csv"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e, "File too large"));
	char f[4096];
	snprintf(f, sizeof(f), "%s/run_spm.csv", dir);
	FILE *fp = fopen(f, "r");
	char line[256] = "";
	CU_ASSERT(fp && fgets(line, sizeof(line), fp));
	if (fp)
		fclose(fp);
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "gpu,xcc,host_ns,gpu_ticks,SQ_WAVES"));
	/*
	 * The stream was lossless, the file is not: the summary says how many
	 * samples the outputs hold at least, and it is true of the file; the
	 * metadata says why it is not complete.
	 */
	unsigned long long held = 0, samples = 0;
	const char *w = strstr(e, "every output holds at least "), *w0 = strstr(e, "the outputs hold only part of the ");
	CU_ASSERT_FATAL(w || w0);
	int got = w ? sscanf(w, "every output holds at least %llu of the %llu samples", &held, &samples)
		    : sscanf(w0, "the outputs hold only part of the %llu samples", &samples) + 1;
	CU_ASSERT_EQUAL(got, 2);
	/* the limit cut the file before the first flush that would have succeeded: nothing is known written */
	snprintf(f, sizeof(f), "%s/run_meta.json", dir);
	json_t *m0 = json_load_file(f, 0, NULL);
	unsigned long long mrows = 0;
	json_t *sv;
	size_t si;
	json_array_foreach(json_object_get(json_object_get(m0, "extra"), "streams"), si, sv)
		if (json_string_value(json_object_get(sv, "source")) &&
		    !strcmp(json_string_value(json_object_get(sv, "source")), "spm"))
			mrows += (unsigned long long)json_integer_value(json_object_get(sv, "rows"));
	json_decref(m0);
	CU_ASSERT_EQUAL(mrows, held);
	snprintf(f, sizeof(f), "%s/run_spm.csv", dir);
	/* whole rows: the file may end inside one, where the limit cut the write */
	char cmd[8300];
	snprintf(cmd, sizeof(cmd), "tail -n +2 %s | grep -c ','", f);
	long rows = atol(sh1(cmd));
	CU_ASSERT(held < samples);
	CU_ASSERT((unsigned long long)rows >= held); /* the claim, and the metadata's count, are true of the file */
	CU_ASSERT((unsigned long long)rows < samples);
	CU_ASSERT_PTR_NOT_NULL(strstr(e, "run_spm.csv (incomplete: cut short by the error below)"));
	snprintf(f, sizeof(f), "%s/run_meta.json", dir);
	json_t *m = json_load_file(f, 0, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	CU_ASSERT(json_is_false(json_object_get(m, "complete")));
	const char *why = json_string_value(json_object_get(m, "error"));
	CU_ASSERT(why && strstr(why, "run_spm.csv") && strstr(why, "File too large"));
	json_decref(m);
	/* The tick CSV (-o FILE.csv) says the same, without a metadata file to point at. */
	snprintf(f, sizeof(f), "%s/ticks.csv", dir);
	const char *targs[] = { "record", "--spm", "SQ_WAVES", "-o", f, "--duration", "2", NULL };
	CU_ASSERT_EQUAL(wait_status(spawn(targs, NULL, path("fullt.err"), 1 << 20)), 1);
	e = slurp(path("fullt.err"));
	CU_ASSERT(strstr(e, "every output holds at least ") || strstr(e, "the outputs hold only part of the "));
	CU_ASSERT_PTR_NULL(strstr(e, "extra.streams"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e, "ticks.csv.part: write: File too large"));
}

static void test_app(void)
{
	const char *dir = path("app");
	const char *args[] = { "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "run", "--",
			       "/bin/sh", "-c", "sleep 1; exit 7", NULL };
	int st = wait_status(spawn(args, NULL, path("app.err"), 0));
	CU_ASSERT_EQUAL(st, 7);
	char f[4096];
	snprintf(f, sizeof(f), "%s/run_spm.csv", dir);
	long bad, rows = csv_check(f, &bad);
	CU_ASSERT(rows > 100);
	const char *args2[] = { "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "run2", "--",
				"/bin/sleep", "1", NULL };
	CU_ASSERT_EQUAL(wait_status(spawn(args2, NULL, path("app.err"), 0)), 0);
}

int main(int argc, char **argv)
{
	testenv_under_emu(argc, argv, "mi300a,mi210", NULL);
	static const struct testenv_case cases[] = {
		{ "formats", test_formats, need_emulator },
		{ "stalls", test_stalls, need_emulator },
		{ "sigint", test_sigint, need_emulator },
		{ "full_disk", test_full_disk, need_emulator },
		{ "app", test_app, need_emulator },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("session", cases, argc, argv);
}
