/* SPDX-License-Identifier: MIT */
/*
 * collector/analysis/recording*.c and collector/cli/analyze-truth.c: a
 * recording read back with the truth of its files against its metadata.
 *
 * Hand-written CSV and SQLite fixtures (written here into a mkdtemp
 * directory) for every branch of the reader: rows fewer or more than the
 * metadata says, a cut last row, a stream the metadata does not list, old
 * metadata, temporary .part names and "complete": false, a Perfetto-only
 * directory, SQLite with and without recording_meta, SQLite cut at several
 * points.  Then the emulator: one run recorded with -f csv,sqlite must read
 * back identically from both (every table, NAN positions, phases, the
 * report's JSON), and a run killed with SIGKILL must be reported as
 * incomplete, not blamed on the user.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collector/analysis/recording.h"
#include "collector/cli/analyze-truth.h"
#include "files.h"
#include "proc.h"
#include "testenv.h"

static char dir[] = "/tmp/spmtap-test-recording-XXXXXX";

static const char *path(const char *name)
{
	return testenv_path(dir, name);
}

/* A fresh fixture directory dir/sub. */
static const char *fixture(const char *sub)
{
	char cmd[PATH_MAX + 32];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'; mkdir -p '%s'", path(sub), path(sub));
	CU_ASSERT_EQUAL(system(cmd), 0);
	return path(sub);
}

static void put(const char *sub, const char *file, const char *text)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s/%s", dir, sub, file);
	FILE *f = fopen(p, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	CU_ASSERT_EQUAL(fclose(f), 0);
}

/*
 * NAME_meta.json of one GPU with one XCC stream (SQ_WAVES) and a sensor
 * stream (energy, power_cur): rows per stream (-1: no "rows"), complete
 * (-1: no key), accounting with samples acc_spm / acc_smi (-1: none).
 */
static json_t *meta(long spm_rows, long smi_rows, int complete, long acc_spm, long acc_smi)
{
	json_t *spm = json_pack("{s:s, s:i, s:i, s:s, s:[{s:s, s:s}]}", "source", "spm", "gpu", 0, "xcc", 0,
				"tick_domain", "spm_ticks", "columns", "name", "SQ_WAVES", "unit", "count");
	json_t *smi = json_pack("{s:s, s:i, s:i, s:s, s:[{s:s, s:s}, {s:s, s:s}]}", "source", "smi", "gpu", 0, "xcc",
				-1, "tick_domain", "smu_10ns", "columns", "name", "energy", "unit", "J", "name",
				"power_cur", "unit", "W");
	if (spm_rows >= 0)
		json_object_set_new(spm, "rows", json_integer(spm_rows));
	if (smi_rows >= 0)
		json_object_set_new(smi, "rows", json_integer(smi_rows));
	json_t *m = json_pack("{s:f, s:s, s:{s:[{s:i, s:s, s:s, s:i, s:i}], s:[o, o]}}", "spm_clock_hz", 1e8,
			      "command_line", "record --spm SQ_WAVES --smi power,energy -d x", "extra", "devices",
			      "gpu", 0, "gfx", "gfx942", "name", "AMD Instinct MI300A", "num_xcc", 1, "interval",
			      1000, "streams", spm, smi);
	if (complete >= 0)
		json_object_set_new(m, "complete", json_boolean(complete));
	if (acc_spm >= 0)
		json_object_set_new(m, "accounting",
				    json_pack("[{s:i, s:I, s:[{s:i, s:I, s:i}]}]", "gpu", 0, "smi_samples",
					      (json_int_t)acc_smi, "xcc", "xcc", 0, "samples", (json_int_t)acc_spm,
					      "lost_gap_samples", 7));
	return m;
}

static void put_meta(const char *sub, const char *file, json_t *m)
{
	char *s = json_dumps(m, JSON_INDENT(1));
	put(sub, file, s);
	free(s);
	json_decref(m);
}

#define SPM_HDR "gpu,xcc,host_ns,gpu_ticks,SQ_WAVES\n"
#define SPM_ROWS "0,0,1000,100,5\n0,0,2000,200,6\n0,0,3000,300,7\n"
#define SMI_HDR "gpu,host_ns,sensor_ts,energy,power_cur\n"
#define SMI_ROWS "0,1000,10,1.5,100\n0,2000,20,2.5,\n0,3000,30,3.5,102\n"

/* A whole fixture: 3 SPM rows, 3 sensor rows, the metadata saying so. */
static void whole(const char *sub, json_t *m)
{
	fixture(sub);
	put_meta(sub, "run_meta.json", m);
	put(sub, "run_spm.csv", SPM_HDR SPM_ROWS);
	put(sub, "run_smi.csv", SMI_HDR SMI_ROWS);
}

static struct recording *load(const char *p, int want_rc)
{
	struct recording *r = NULL;
	char err[1024] = "";
	int rc = rec_load(p, &r, err, sizeof(err));
	if (rc != want_rc)
		fprintf(stderr, "\n    rec_load(%s) = %d (%s), expected %d\n", p, rc, err, want_rc);
	CU_ASSERT_EQUAL(rc, want_rc);
	return r;
}

static bool has_note(const struct recording *r, const char *part)
{
	for (size_t i = 0; i < r->truth.nnotes; i++)
		if (strstr(r->truth.notes[i], part))
			return true;
	fprintf(stderr, "\n    no note with \"%s\"; the notes:\n", part);
	for (size_t i = 0; i < r->truth.nnotes; i++)
		fprintf(stderr, "    | %s\n", r->truth.notes[i]);
	return false;
}

/* `spmtap ARGS` (NULL-terminated), stdout and stderr into dir/cli.out and dir/cli.err; the exit status. */
static int spmtap(const char *a1, const char *a2, const char *a3, const char *a4, const char *a5)
{
	char bin[PATH_MAX];
	snprintf(bin, sizeof(bin), "%s/spmtap", testenv_build_dir());
	const char *argv[] = { bin, a1, a2, a3, a4, a5, NULL };
	return tp_run(argv, &(struct tp_opts){ .out = path("cli.out"), .err = path("cli.err") });
}

/* ---- CSV ---------------------------------------------------------------------------------------------- */

static void csv_whole(void)
{
	whole("whole", meta(3, 3, 1, 3, 3));
	struct recording *r = load(path("whole"), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->truth.nnotes, 0);
	CU_ASSERT_FALSE(r->truth.incomplete || r->truth.truncated || r->truth.inconsistent);
	const struct rec_gpu *g = rec_gpu(r, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(g);
	CU_ASSERT_EQUAL(g->spm[0].n, 3);
	CU_ASSERT_EQUAL(g->spm[0].rows_expected, 3);
	CU_ASSERT_EQUAL(g->spm[0].lost_samples, 7);
	CU_ASSERT_EQUAL(g->smi.rows_expected, 3);
	CU_ASSERT_TRUE(isnan(g->smi.v[1][1]));
	CU_ASSERT_FALSE(g->spm[0].cut_last_row);
	rec_free(r);
	CU_ASSERT_EQUAL(spmtap("report", path("whole"), "--json", path("whole.json"), NULL), 0);
	json_t *j = json_load_file(path("whole.json"), 0, NULL);
	json_t *t = json_object_get(j, "truth");
	CU_ASSERT_TRUE(json_is_true(json_object_get(t, "complete")));
	CU_ASSERT_TRUE(json_is_false(json_object_get(t, "truncated")));
	CU_ASSERT_EQUAL(json_array_size(json_object_get(t, "streams")), 2);
	json_decref(j);
	/* Named, the database must be what is read: no run.db here, so no answer from the CSV files. */
	char db[PATH_MAX], err[1024] = "";
	snprintf(db, sizeof(db), "%s/run.db", path("whole"));
	CU_ASSERT_EQUAL(rec_load(db, &r, err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "run.db: no such file"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "name the directory or NAME_meta.json"));
}

static off_t size_of(const char *a, const char *b)
{
	struct stat st;
	if (stat(a, &st) == 0)
		return st.st_size;
	return stat(b, &st) == 0 ? st.st_size : 0;
}

/* The issue's `truncate -s 1/3 run_spm.csv`: fewer rows than the metadata says. */
static void csv_fewer_rows(void)
{
	whole("fewer", meta(5, 3, 1, 5, 3));
	struct recording *r = load(path("fewer"), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_TRUE(r->truth.truncated);
	CU_ASSERT_FALSE(r->truth.inconsistent || r->truth.incomplete);
	CU_ASSERT_TRUE(has_note(r, "run_spm.csv has 3 rows of GPU 0 XCC 0 where the metadata says 5: the file is "
				   "truncated"));
	CU_ASSERT_EQUAL(rec_gpu(r, 0)->spm[0].rows_expected, 5);
	rec_free(r);
	/* the command: notes before any table, exit 65; accepted with --accept-truncated */
	CU_ASSERT_EQUAL(spmtap("report", path("fewer"), NULL, NULL, NULL), ANA_EXIT_DATAERR);
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("cli.err")), "spmtap report: run_spm.csv has 3 rows"));
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("cli.out")), "phase"));
	CU_ASSERT_EQUAL(spmtap("report", path("fewer"), "--accept-truncated", NULL, NULL), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("cli.err")), "the file is truncated"));
	CU_ASSERT_EQUAL(spmtap("report", path("fewer"), "--json", path("fewer.json"), NULL), ANA_EXIT_DATAERR);
	json_t *j = json_load_file(path("fewer.json"), 0, NULL);
	CU_ASSERT_TRUE(json_is_true(json_object_get(json_object_get(j, "truth"), "truncated")));
	CU_ASSERT_EQUAL(json_array_size(json_object_get(json_object_get(j, "truth"), "notes")), 1);
	json_decref(j);
	CU_ASSERT_EQUAL(spmtap("characterize", path("fewer"), NULL, NULL, NULL), ANA_EXIT_DATAERR);
	CU_ASSERT_EQUAL(spmtap("characterize", path("fewer"), "--accept-truncated", NULL, NULL), 0);
	CU_ASSERT_EQUAL(spmtap("export", "--sensor-trace", path("fewer.csv"), path("fewer"), NULL), ANA_EXIT_DATAERR);
	CU_ASSERT_EQUAL(spmtap("export", "--sensor-trace", path("fewer.csv"), "--accept-truncated", path("fewer")), 0);
	CU_ASSERT_EQUAL(spmtap("plot", path("fewer"), "-o", path("fewer.svg"), NULL), ANA_EXIT_DATAERR);
	CU_ASSERT_EQUAL(spmtap("plot", path("fewer"), "-o", path("fewer.svg"), "--accept-truncated"), 0);
}

/* A last line cut short (no line end, or too few cells) is left out and said; one in the middle is an error. */
static void csv_cut_row(void)
{
	fixture("cut");
	put_meta("cut", "run_meta.json", meta(4, 3, 1, 4, 3));
	put("cut", "run_spm.csv", SPM_HDR SPM_ROWS "0,0,4000,40");
	put("cut", "run_smi.csv", SMI_HDR SMI_ROWS);
	struct recording *r = load(path("cut"), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	const struct rec_table *t = &rec_gpu(r, 0)->spm[0];
	CU_ASSERT_EQUAL(t->n, 3);
	CU_ASSERT_TRUE(t->cut_last_row);
	CU_ASSERT_TRUE(r->truth.truncated);
	CU_ASSERT_TRUE(has_note(r, "run_spm.csv ends in a cut row of GPU 0 XCC 0 (line 5, 4 of 5 cells)"));
	rec_free(r);
	/* every cell there but no line end: the last number may be cut */
	put("cut", "run_spm.csv", SPM_HDR SPM_ROWS "0,0,4000,400,1");
	r = load(path("cut"), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(rec_gpu(r, 0)->spm[0].n, 3);
	CU_ASSERT_TRUE(has_note(r, "(line 5, no line end)"));
	rec_free(r);
	/* a sensor file cut in its header */
	put("cut", "run_spm.csv", SPM_HDR SPM_ROWS "0,0,4000,400,1\n");
	put("cut", "run_smi.csv", "gpu,host_");
	r = load(path("cut"), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_TRUE(r->truth.truncated);
	CU_ASSERT_TRUE(has_note(r, "run_smi.csv ends within its header"));
	CU_ASSERT_TRUE(has_note(r, "run_smi.csv has 0 rows of GPU 0's sensors where the metadata says 3"));
	rec_free(r);
	/* the same short line in the middle is malformed input */
	put("cut", "run_smi.csv", SMI_HDR SMI_ROWS);
	put("cut", "run_spm.csv", SPM_HDR "0,0,500,5\n" SPM_ROWS "0,0,4000,400,1\n");
	r = load(path("cut"), -EINVAL);
	CU_ASSERT_PTR_NULL(r);
}

static void csv_inconsistent(void)
{
	/* more rows than the metadata says */
	whole("more", meta(2, 3, 1, 2, 3));
	struct recording *r = load(path("more"), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_TRUE(r->truth.inconsistent);
	CU_ASSERT_FALSE(r->truth.truncated);
	CU_ASSERT_TRUE(has_note(r, "run_spm.csv has 3 rows of GPU 0 XCC 0 where the metadata says only 2"));
	rec_free(r);
	/* a stream the metadata does not list */
	whole("unlisted", meta(3, 3, 1, 3, 3));
	put("unlisted", "run_spm.csv", SPM_HDR SPM_ROWS "0,1,1000,100,9\n");
	r = load(path("unlisted"), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_TRUE(r->truth.inconsistent);
	CU_ASSERT_TRUE(has_note(r, "run_spm.csv has 1 rows of GPU 0 XCC 1, a stream its metadata does not list"));
	rec_free(r);
	CU_ASSERT_EQUAL(spmtap("report", path("unlisted"), NULL, NULL, NULL), ANA_EXIT_DATAERR);
}

/* Metadata from before "rows": the end-of-run accounting counts the rows; without it nothing is claimed. */
static void csv_old_meta(void)
{
	whole("old", meta(-1, -1, -1, 5, 3));
	struct recording *r = load(path("old"), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(rec_gpu(r, 0)->spm[0].rows_expected, 5);
	CU_ASSERT_TRUE(r->truth.truncated);
	CU_ASSERT_FALSE(r->truth.incomplete);
	rec_free(r);
	whole("old2", meta(-1, -1, 1, -1, -1));
	r = load(path("old2"), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(rec_gpu(r, 0)->spm[0].rows_expected, -1);
	CU_ASSERT_EQUAL(r->truth.nnotes, 0);
	CU_ASSERT_FALSE(r->truth.truncated || r->truth.inconsistent || r->truth.incomplete);
	rec_free(r);
}

/* A killed run: files under FINAL.part, "complete": false; read, said, not an error. */
static void csv_part_names(void)
{
	fixture("part");
	put_meta("part", "run_meta.json.part", meta(2, 1, 0, -1, -1));
	put("part", "run_spm.csv.part", SPM_HDR SPM_ROWS "0,0,40");
	put("part", "run_smi.csv.part", SMI_HDR SMI_ROWS);
	const char *ways[] = { path("part"), path("part/run"), path("part/run_meta.json.part") };
	for (size_t i = 0; i < 3; i++) {
		struct recording *r = load(ways[i], 0);
		CU_ASSERT_PTR_NOT_NULL_FATAL(r);
		CU_ASSERT_TRUE(r->truth.incomplete);
		CU_ASSERT_FALSE(r->truth.truncated || r->truth.inconsistent);
		CU_ASSERT_EQUAL(rec_gpu(r, 0)->spm[0].n, 3);
		CU_ASSERT_TRUE(rec_gpu(r, 0)->spm[0].cut_last_row);
		CU_ASSERT_TRUE(has_note(r, "incomplete recording (the recorder did not finish): run_meta.json.part, "
					   "run_spm.csv.part, run_smi.csv.part are still under their temporary names; "
					   "its metadata says \"complete\": false"));
		CU_ASSERT_TRUE(has_note(r, "what the incomplete recording holds: GPU 0: 3 SPM rows of 1 XCC stream(s)"));
		rec_free(r);
	}
	CU_ASSERT_EQUAL(spmtap("report", path("part"), NULL, NULL, NULL), 0);
	/* final names, "complete": false */
	whole("notdone", meta(3, 3, 0, -1, -1));
	struct recording *r = load(path("notdone"), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_TRUE(r->truth.incomplete);
	CU_ASSERT_TRUE(has_note(r, "its metadata says \"complete\": false"));
	rec_free(r);
}

/*
 * A run that failed (a full disk): final names, "complete": false, the error;
 * its rows count those known written, and the file may hold more.
 */
static void csv_failed_run(void)
{
	json_t *m = meta(2, 3, 0, 3, 3);
	json_object_set_new(m, "error", json_string("/data/run_spm.csv.part: No space left on device"));
	whole("failed", m);
	struct recording *r = load(path("failed"), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_TRUE(r->truth.incomplete);
	CU_ASSERT_TRUE(has_note(r, "incomplete recording: the recorder stopped on an error: "
				   "/data/run_spm.csv.part: No space left on device"));
	CU_ASSERT_TRUE(has_note(r, "run_spm.csv has 3 rows of GPU 0 XCC 0; the metadata, written when the "
				   "recording failed, counts those known written: 2"));
	for (size_t i = 0; i < r->truth.nnotes; i++)
		CU_ASSERT_PTR_NULL(strstr(r->truth.notes[i], "did not finish"));
	rec_free(r);
}

/* A catch-up stopped by a second Ctrl-C: the rest waits in the journal beside the files, and is named. */
static void csv_catchup_stopped(void)
{
	json_t *m = meta(3, 3, 0, 3, 3);
	json_t *acc = json_array_get(json_object_get(m, "accounting"), 0);
	json_object_set_new(acc, "spill", json_pack("{s:I, s:s}", "journal_left_bytes", (json_int_t)4096, "journal",
						     "elsewhere/run_journal.raw"));
	whole("stopped", m);
	struct recording *r = load(path("stopped"), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_TRUE(r->truth.incomplete);
	char want[8192];
	snprintf(want, sizeof(want), "incomplete recording: its catch-up was stopped, and 4096 bytes of GPU 0's SPM "
		 "data wait in %s/run_journal.raw (`spmtap decode %s/run_journal.raw` gives their rows)",
		 path("stopped"), path("stopped"));
	CU_ASSERT_TRUE(has_note(r, want));
	if (!has_note(r, want))
		for (size_t i = 0; i < r->truth.nnotes; i++)
			fprintf(stderr, "\n  note: %s", r->truth.notes[i]);
	rec_free(r);
}

/* Item 8: a killed run's empty sensor file is not "record with --smi". */
static void killed_no_sensor_rows(void)
{
	fixture("nosmi");
	put_meta("nosmi", "run_meta.json", meta(-1, -1, -1, -1, -1)); /* no accounting: the run never ended */
	put("nosmi", "run_spm.csv", SPM_HDR SPM_ROWS);
	put("nosmi", "run_smi.csv", "");
	CU_ASSERT_EQUAL(spmtap("report", path("nosmi"), NULL, NULL, NULL), 0);
	const char *e = tf_peek(path("cli.err"));
	CU_ASSERT_PTR_NULL(strstr(e, "record with --smi"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e, "incomplete recording (the recorder did not finish)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e, "0 sensor rows"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e, "although the recording asked for them"));
}

static void perfetto_only(void)
{
	const char *names[] = { "run.pftrace", "run.pftrace.part" };
	for (size_t i = 0; i < 2; i++) {
		fixture("pf");
		put("pf", names[i], "\x0a\x00");
		struct recording *r = NULL;
		char err[1024] = "";
		CU_ASSERT_EQUAL(rec_load(path("pf"), &r, err, sizeof(err)), -EPROTONOSUPPORT);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, names[i]));
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "ui.perfetto.dev"));
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "record with -f csv or -f sqlite"));
	}
	/* with its metadata beside it, but no CSV or SQLite data: still only a Perfetto trace */
	put_meta("pf", "run_meta.json", meta(3, 3, 1, 3, 3));
	CU_ASSERT_EQUAL(spmtap("report", path("pf"), NULL, NULL, NULL), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("cli.err")), "ui.perfetto.dev"));
	CU_ASSERT_PTR_NULL(strstr(tf_peek(path("cli.err")), "no recording here"));
	/* nothing of ours at all: what to record */
	fixture("empty");
	struct recording *r = NULL;
	char err[1024] = "";
	CU_ASSERT_EQUAL(rec_load(path("empty"), &r, err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "-f csv or -f sqlite"));
}

/* ---- SQLite ------------------------------------------------------------------------------------------- */

static const char sq_schema[] =
	"PRAGMA application_id=1397771604; PRAGMA user_version=1;"
	"CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value);"
	"CREATE TABLE stream(id INTEGER PRIMARY KEY, source TEXT NOT NULL, gpu INTEGER NOT NULL, gpu_id INTEGER NOT "
	"NULL, xcc INTEGER NOT NULL, device_name TEXT, tick_domain TEXT, ncols INTEGER NOT NULL);"
	"CREATE TABLE metric(id INTEGER PRIMARY KEY, stream_id INTEGER NOT NULL, col INTEGER NOT NULL, name TEXT NOT "
	"NULL, unit TEXT, type TEXT NOT NULL, track TEXT NOT NULL, UNIQUE (stream_id, col));"
	"CREATE TABLE sample(metric_id INTEGER NOT NULL, host_ns INTEGER NOT NULL, idx INTEGER NOT NULL, ticks "
	"INTEGER, value, PRIMARY KEY (metric_id, host_ns, idx)) WITHOUT ROWID;"
	"CREATE TABLE slice(id INTEGER PRIMARY KEY, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, name TEXT, "
	"track INTEGER NOT NULL, category TEXT NOT NULL, depth INTEGER NOT NULL, pid INTEGER NOT NULL);"
	"INSERT INTO meta VALUES ('schema_version', 1), ('spm_clock_hz', 100000000.0);"
	"INSERT INTO stream VALUES (0, 'spm', 0, 4097, 0, 'AMD Instinct MI300A', 'spm_ticks', 2),"
	"  (1, 'smi', 0, 4097, -1, 'AMD Instinct MI300A', 'smu_10ns', 2);"
	"INSERT INTO metric VALUES (0, 0, 0, 'SQ_WAVES', 'count', 'u64', 'gpu0.xcc0.SQ_WAVES'),"
	"  (1, 0, 1, 'SQ_BUSY_CYCLES', 'count', 'u64', 'gpu0.xcc0.SQ_BUSY_CYCLES'),"
	"  (2, 1, 0, 'energy', 'J', 'f64', 'gpu0.energy'), (3, 1, 1, 'power_cur', 'W', 'f64', 'gpu0.power_cur');"
	"INSERT INTO sample VALUES (0, 1000, 0, 100, 5), (0, 2000, 1, 200, 6), (0, 3000, 2, 300, 7),"
	"  (1, 1000, 0, 100, 50), (1, 2000, 1, 200, NULL), (1, 3000, 2, 300, 70),"
	"  (2, 1000, 0, 10, 1.5), (2, 2000, 1, 20, 2.5), (3, 1000, 0, 10, 100.25), (3, 2000, 1, 20, NULL);"
	"INSERT INTO slice VALUES (1, 1000, 2000, 'load', 0, 'file', 0, 0), (2, 2000, 3000, 'i,dle', 0, 'file', 0, 0);";

/* A SQLite recording in dir/sub/run.db: the schema above, with recording_meta m (NULL: none). */
static void sq_fixture(const char *sub, json_t *m)
{
	fixture(sub);
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/run.db", path(sub));
	sqlite3 *db;
	CU_ASSERT_EQUAL_FATAL(sqlite3_open(p, &db), SQLITE_OK);
	char *e = NULL;
	CU_ASSERT_EQUAL(sqlite3_exec(db, sq_schema, NULL, NULL, &e), SQLITE_OK);
	if (e)
		fprintf(stderr, "\n    %s\n", e);
	sqlite3_free(e);
	if (m) {
		char *s = json_dumps(m, 0);
		sqlite3_stmt *st;
		CU_ASSERT_EQUAL(sqlite3_prepare_v2(db, "INSERT INTO meta VALUES ('recording_meta', ?)", -1, &st, NULL),
				SQLITE_OK);
		sqlite3_bind_text(st, 1, s, -1, SQLITE_TRANSIENT);
		CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_DONE);
		sqlite3_finalize(st);
		free(s);
		json_decref(m);
	}
	sqlite3_close(db);
}

/* The SQLite fixture's meta: its streams' columns and rows. */
static json_t *sq_meta(long spm_rows, long smi_rows)
{
	json_t *m = meta(spm_rows, smi_rows, 1, -1, -1);
	json_t *s = json_array_get(json_object_get(json_object_get(m, "extra"), "streams"), 0);
	json_array_append_new(json_object_get(s, "columns"), json_pack("{s:s, s:s}", "name", "SQ_BUSY_CYCLES", "unit",
								      "count"));
	return m;
}

static void sqlite_fixture(void)
{
	sq_fixture("sq", sq_meta(3, 2));
	const char *ways[] = { path("sq"), path("sq/run.db"), path("sq/run") };
	for (size_t w = 0; w < 3; w++) {
		struct recording *r = load(ways[w], 0);
		CU_ASSERT_PTR_NOT_NULL_FATAL(r);
		CU_ASSERT_EQUAL(r->truth.nnotes, 0);
		CU_ASSERT_FALSE(r->truth.truncated || r->truth.inconsistent || r->truth.incomplete);
		const struct rec_gpu *g = rec_gpu(r, 0);
		CU_ASSERT_PTR_NOT_NULL_FATAL(g);
		CU_ASSERT_EQUAL(g->nspm, 1);
		CU_ASSERT_STRING_EQUAL(g->gfx, "gfx942");
		CU_ASSERT_STRING_EQUAL(g->tick_domain, "smu_10ns");
		const struct rec_table *t = &g->spm[0];
		CU_ASSERT_EQUAL_FATAL(t->n, 3);
		CU_ASSERT_EQUAL_FATAL(t->ncols, 2);
		CU_ASSERT_STRING_EQUAL(t->cols[1], "SQ_BUSY_CYCLES");
		CU_ASSERT_STRING_EQUAL(t->units[0], "count");
		CU_ASSERT_EQUAL(t->t_ns[2], 3000);
		CU_ASSERT_EQUAL(t->ticks[1], 200);
		CU_ASSERT_EQUAL(t->v[0][2], 7);
		CU_ASSERT_TRUE(isnan(t->v[1][1]));
		CU_ASSERT_EQUAL(t->rows_expected, 3);
		CU_ASSERT_EQUAL(g->smi.n, 2);
		CU_ASSERT_EQUAL(g->smi.v[1][0], 100.25);
		CU_ASSERT_TRUE(isnan(g->smi.v[1][1]));
		CU_ASSERT_STRING_EQUAL(g->smi.units[0], "J");
		CU_ASSERT_EQUAL_FATAL(r->phases.n, 2);
		CU_ASSERT_STRING_EQUAL(r->phases.v[1].name, "i dle"); /* as the phases CSV writes it */
		CU_ASSERT_EQUAL(r->phases.v[0].end_ns, 2000);
		rec_free(r);
	}
	/* fewer rows than its recording_meta says */
	sq_fixture("sqcut", sq_meta(3, 5));
	struct recording *r = load(path("sqcut"), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_TRUE(r->truth.truncated);
	CU_ASSERT_TRUE(has_note(r, "run.db has 2 rows of GPU 0's sensors where the metadata says 5: the file is "
				   "truncated"));
	rec_free(r);
	CU_ASSERT_EQUAL(spmtap("report", path("sqcut"), NULL, NULL, NULL), ANA_EXIT_DATAERR);
}

/* An older SQLite recording without recording_meta: rebuilt from its tables, with a note. */
static void sqlite_no_recording_meta(void)
{
	sq_fixture("sqold", NULL);
	struct recording *r = load(path("sqold"), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_TRUE(has_note(r, "run.db has no recording_meta"));
	/* no accounting either: a run that never ended as far as the file can tell */
	CU_ASSERT_TRUE(r->truth.incomplete);
	const struct rec_gpu *g = rec_gpu(r, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(g);
	CU_ASSERT_EQUAL(g->spm[0].n, 3);
	CU_ASSERT_STRING_EQUAL(g->smi.units[1], "W");
	CU_ASSERT_EQUAL(r->spm_clock_hz, 1e8);
	rec_free(r);
}

/* A SQLite file cut at many points: an error naming it, or a note; never a crash. */
static void cut_db_at(const char *label, const char *src, const char *sub, int points)
{
	size_t len;
	char *bytes = tf_slurp(src, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
	int errors = 0, loaded = 0;
	for (int k = 0; k < points; k++) {
		size_t at = (size_t)((double)len * k / points);
		fixture(sub);
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/run.db", path(sub));
		int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		CU_ASSERT_TRUE_FATAL(fd >= 0);
		CU_ASSERT_EQUAL((size_t)write(fd, bytes, at), at);
		close(fd);
		struct recording *r = NULL;
		char err[1024] = "";
		int rc = rec_load(path(sub), &r, err, sizeof(err));
		if (rc) {
			errors++;
			CU_ASSERT_PTR_NOT_NULL(strstr(err, "run.db"));
			CU_ASSERT_PTR_NULL(r);
		} else {
			loaded++;
			rec_free(r);
		}
	}
	free(bytes);
	printf("(%s cut at %d points: %d errors, %d loaded) ", label, points, errors, loaded);
}

static void sqlite_cut(void)
{
	sq_fixture("sqsrc", sq_meta(3, 2));
	cut_db_at("fixture run.db", path("sqsrc/run.db"), "sqcutn", 16);
}

/* ---- end to end on the emulator ----------------------------------------------------------------------- */

static const char *bin(void)
{
	static char b[PATH_MAX];
	snprintf(b, sizeof(b), "%s/spmtap", testenv_build_dir());
	return b;
}

/* One recording of the emulated square wave in both formats, made by the first case that needs it. */
static bool recorded(void)
{
	static int made;
	if (!made) {
		setenv("SPMTAP_EMU_WORKLOAD", "square:period_ms=100.2,duty=0.5", 1);
		const char *argv[] = { bin(), "record", "--spm", "SQ_WAVES,SQ_BUSY_CYCLES", "--smi", "power,energy",
				       "--phases", "emulator", "-d", path("emu"), "-o", "run", "-f", "csv,sqlite",
				       "--duration", "0.8", NULL };
		int rc = tp_run(argv, &(struct tp_opts){ .out = "/dev/null", .err = path("record.err") });
		if (rc)
			fprintf(stderr, "\n    record exited %d: %s\n", rc, tf_peek(path("record.err")));
		made = rc ? -1 : 1;
	}
	return made == 1;
}

static bool same_table(const char *what, const struct rec_table *a, const struct rec_table *b)
{
	bool ok = a->n == b->n && a->ncols == b->ncols && a->rows_expected == b->rows_expected &&
		  a->lost_samples == b->lost_samples && a->cut_last_row == b->cut_last_row;
	for (uint32_t c = 0; ok && c < a->ncols; c++)
		ok = !strcmp(a->cols[c], b->cols[c]) && !strcmp(a->units[c], b->units[c]);
	if (ok && a->n)
		ok = !memcmp(a->t_ns, b->t_ns, a->n * sizeof(*a->t_ns)) && !memcmp(a->ticks, b->ticks, a->n * sizeof(*a->ticks));
	size_t nans = 0;
	for (uint32_t c = 0; ok && c < a->ncols; c++)
		for (size_t i = 0; ok && i < a->n; i++) {
			double x = a->v[c][i], y = b->v[c][i];
			nans += isnan(x);
			ok = isnan(x) ? isnan(y) : x == y;
			if (!ok)
				fprintf(stderr, "\n    %s %s row %zu: %.17g (CSV) != %.17g (SQLite)\n", what, a->cols[c], i, x, y);
		}
	if (!ok)
		fprintf(stderr, "\n    %s differs: n %zu/%zu ncols %u/%u expected %lld/%lld\n", what, a->n, b->n, a->ncols,
			b->ncols, (long long)a->rows_expected, (long long)b->rows_expected);
	printf("(%s: %zu rows, %zu NAN) ", what, a->n, nans);
	return ok;
}

static json_t *report_json(const char *input, const char *out)
{
	char o[PATH_MAX];
	snprintf(o, sizeof(o), "%s", path(out));
	int rc = spmtap("report", input, "--json", o, NULL);
	if (rc)
		fprintf(stderr, "\n    report %s exited %d: %s\n", input, rc, tf_peek(path("cli.err")));
	CU_ASSERT_EQUAL(rc, 0);
	return json_load_file(o, 0, NULL);
}

/* -f csv,sqlite of one run: the same tables, NAN positions, phases and report from both. */
static void csv_equals_sqlite(void)
{
	CU_ASSERT_TRUE_FATAL(recorded());
	struct recording *c = load(path("emu/run_meta.json"), 0), *q = load(path("emu/run.db"), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_PTR_NOT_NULL_FATAL(q);
	CU_ASSERT_FALSE(c->truth.truncated || c->truth.inconsistent || c->truth.incomplete);
	CU_ASSERT_FALSE(q->truth.truncated || q->truth.inconsistent || q->truth.incomplete);
	CU_ASSERT_EQUAL_FATAL(c->ngpu, q->ngpu);
	CU_ASSERT_EQUAL(c->spm_clock_hz, q->spm_clock_hz);
	for (uint32_t i = 0; i < c->ngpu; i++) {
		const struct rec_gpu *a = &c->gpu[i], *b = &q->gpu[i];
		CU_ASSERT_EQUAL(a->index, b->index);
		CU_ASSERT_EQUAL_FATAL(a->nspm, b->nspm);
		CU_ASSERT_TRUE(a->nspm > 0);
		CU_ASSERT_STRING_EQUAL(a->tick_domain, b->tick_domain);
		CU_ASSERT_EQUAL(a->interval, b->interval);
		char what[32];
		for (uint32_t x = 0; x < a->nspm; x++) {
			snprintf(what, sizeof(what), "gpu%u.xcc%u", a->index, x);
			CU_ASSERT_TRUE(same_table(what, &a->spm[x], &b->spm[x]));
		}
		snprintf(what, sizeof(what), "gpu%u.smi", a->index);
		CU_ASSERT_TRUE(a->smi.n > 0);
		CU_ASSERT_TRUE(same_table(what, &a->smi, &b->smi));
	}
	CU_ASSERT_TRUE(c->phases.n > 2);
	CU_ASSERT_EQUAL_FATAL(c->phases.n, q->phases.n);
	for (size_t i = 0; i < c->phases.n; i++) {
		CU_ASSERT_EQUAL(c->phases.v[i].start_ns, q->phases.v[i].start_ns);
		CU_ASSERT_EQUAL(c->phases.v[i].end_ns, q->phases.v[i].end_ns);
		CU_ASSERT_STRING_EQUAL(c->phases.v[i].name, q->phases.v[i].name);
	}
	rec_free(c);
	rec_free(q);
	json_t *a = report_json(path("emu/run_meta.json"), "emu-csv.json");
	json_t *b = report_json(path("emu/run.db"), "emu-sq.json");
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	/* the truth's flags agree; its notes may say the SQLite file predates recording_meta */
	json_t *ta = json_object_get(a, "truth"), *tb = json_object_get(b, "truth");
	CU_ASSERT_TRUE(json_equal(json_object_get(ta, "streams"), json_object_get(tb, "streams")));
	CU_ASSERT_TRUE(json_equal(json_object_get(ta, "truncated"), json_object_get(tb, "truncated")));
	CU_ASSERT_TRUE(json_equal(json_object_get(ta, "complete"), json_object_get(tb, "complete")));
	json_object_del(a, "truth");
	json_object_del(b, "truth");
	CU_ASSERT_TRUE(json_equal(a, b));
	if (!json_equal(a, b))
		fprintf(stderr, "\n    report JSON differs: diff %s %s\n", path("emu-csv.json"), path("emu-sq.json"));
	json_decref(a);
	json_decref(b);
}

/* The issue's `truncate -s 1/3 run_spm.csv`, and cuts of the SQLite file, on the emulated recording. */
static void emu_truncated(void)
{
	CU_ASSERT_TRUE_FATAL(recorded());
	char cmd[3 * PATH_MAX];
	off_t third = size_of(path("emu/run_spm.csv"), "/nonexistent") / 3;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && cp -r '%s' '%s' && rm '%s/run.db' && truncate -s %lld '%s/run_spm.csv'",
		 path("emu-t"), path("emu"), path("emu-t"), path("emu-t"), (long long)third, path("emu-t"));
	CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
	CU_ASSERT_EQUAL(spmtap("report", path("emu-t"), NULL, NULL, NULL), ANA_EXIT_DATAERR);
	const char *e = tf_peek(path("cli.err"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e, "where the metadata says"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e, "the file is truncated"));
	CU_ASSERT_EQUAL(spmtap("report", path("emu-t"), "--accept-truncated", NULL, NULL), 0);
	cut_db_at("emulated run.db", path("emu/run.db"), "emu-dbcut", 12);
	/* and through the command: a cut file's status is 65 or its data read back, never a signal */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir '%s' && head -c 200000 '%s' > '%s/run.db'", path("emu-c"),
		 path("emu-c"), path("emu/run.db"), path("emu-c"));
	CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
	int rc = spmtap("report", path("emu-c"), NULL, NULL, NULL);
	CU_ASSERT_TRUE(rc == ANA_EXIT_DATAERR || rc == 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("cli.err")), "run.db"));
}

/*
 * Item 8: `kill -9` of a recorder with --smi; report on its directory says
 * the recording is incomplete and what it holds, and does not tell the user
 * to record with --smi.  The kill waits for the SPM file to grow (bounded by
 * 120 s, far beyond a loaded machine's start-up), so nothing races a clock.
 */
static void killed_recorder(void)
{
	setenv("SPMTAP_EMU_WORKLOAD", "square:period_ms=100.2,duty=0.5", 1);
	const char *argv[] = { bin(), "record", "--spm", "SQ_WAVES", "--smi", "power,energy", "-d", path("killed"),
			       "-o", "run", "-f", "csv,sqlite", "--duration", "120", NULL };
	pid_t pid = tp_spawn(argv, &(struct tp_opts){ .out = "/dev/null", .err = path("killed.err") });
	CU_ASSERT_TRUE_FATAL(pid > 0);
	char spm[PATH_MAX], part[PATH_MAX];
	snprintf(spm, sizeof(spm), "%s/run_spm.csv", path("killed"));
	snprintf(part, sizeof(part), "%s.part", spm);
	for (int i = 0; i < 1200 && size_of(spm, part) < (1 << 20); i++) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	CU_ASSERT_TRUE(size_of(spm, part) >= (1 << 20));
	kill(pid, SIGKILL);
	CU_ASSERT_EQUAL(tp_wait(pid), 128 + SIGKILL);
	int rc = spmtap("report", path("killed"), NULL, NULL, NULL);
	const char *e = tf_peek(path("cli.err"));
	if (rc)
		fprintf(stderr, "\n    report exited %d: %s\n", rc, e);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(e, "incomplete recording (the recorder did not finish)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e, "what the incomplete recording holds: GPU 0:"));
	CU_ASSERT_PTR_NULL(strstr(e, "record with --smi"));
	/* its SQLite file too (read-only, with its -wal): read, never a crash */
	char db[PATH_MAX];
	snprintf(db, sizeof(db), "%s/run.db", path("killed"));
	if (size_of(db, "/nonexistent") == 0)
		snprintf(db, sizeof(db), "%s/run.db.part", path("killed"));
	rc = spmtap("report", db, NULL, NULL, NULL);
	CU_ASSERT_TRUE(rc == 0 || rc == ANA_EXIT_DATAERR);
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("cli.err")), "incomplete recording"));
}

int main(int argc, char **argv)
{
	testenv_under_emu(argc, argv, "mi300a", NULL);
	if (!mkdtemp(dir))
		return 1;
	static const struct testenv_case cases[] = {
		{ "csv_whole", csv_whole, NULL },
		{ "csv_fewer_rows", csv_fewer_rows, NULL },
		{ "csv_cut_row", csv_cut_row, NULL },
		{ "csv_inconsistent", csv_inconsistent, NULL },
		{ "csv_old_meta", csv_old_meta, NULL },
		{ "csv_part_names", csv_part_names, NULL },
		{ "csv_failed_run", csv_failed_run, NULL },
		{ "csv_catchup_stopped", csv_catchup_stopped, NULL },
		{ "killed_no_sensor_rows", killed_no_sensor_rows, NULL },
		{ "perfetto_only", perfetto_only, NULL },
		{ "sqlite_fixture", sqlite_fixture, NULL },
		{ "sqlite_no_recording_meta", sqlite_no_recording_meta, NULL },
		{ "sqlite_cut", sqlite_cut, NULL },
		{ "csv_equals_sqlite", csv_equals_sqlite, NULL },
		{ "emu_truncated", emu_truncated, NULL },
		{ "killed_recorder", killed_recorder, NULL },
		{ NULL, NULL, NULL },
	};
	int rc = testenv_run_suite("recording", cases, argc, argv);
	return testenv_remove_tmp(dir, rc);
}
