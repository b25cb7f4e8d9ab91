/* SPDX-License-Identifier: MIT */
/*
 * `spmtap record`'s outputs as one set (collector/lib/outset.c,
 * session_outputs.c, collector/cli/outname.c), against the real CLI on the
 * emulated MI300A (this suite's emulator, so the pid spawned is the
 * recorder's own): a bad app leaves earlier outputs byte-identical; a run
 * with other -f replaces the old set as a whole; the metadata counts the
 * rows in the files and says complete; kill -9 leaves .part files with rows
 * and metadata saying complete:false; -o with an extension or an absolute
 * path; rocprofv3's placeholders.
 *
 * No wall-clock thresholds: the kill -9 case waits (up to 120 s, a loaded
 * 2-core machine) for the metadata to count rows, then kills.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "files.h"
#include "proc.h"
#include "testenv.h"

static char spmtap[PATH_MAX];

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

static const char *in(const char *dir, const char *name)
{
	static char buf[8][PATH_MAX];
	static int k;
	k = (k + 1) % 8;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, name);
	return buf[k];
}

/* build/spmtap ARGS under this suite's emulator, stderr to errfile; the recorder's pid. */
static pid_t spawn(const char *const *args, const char *const *env, const char *errfile)
{
	const char *argv[64] = { spmtap };
	size_t n = 1;
	for (; args[n - 1] && n < 63; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	return tp_spawn(argv, &(struct tp_opts){ .env = env, .err = errfile, .out = "/dev/null" });
}

static int run(const char *const *args, const char *errfile)
{
	int st = tp_wait(spawn(args, NULL, errfile));
	if (st && getenv("SPMTAP_TEST_VERBOSE"))
		fprintf(stderr, "\n%s: %d\n%s\n", args[6] ? args[6] : "", st, tf_peek(errfile));
	return st;
}

/* The directory's names, sorted, space-separated ("" when it does not exist). */
static const char *listing(const char *dir)
{
	static char out[4096];
	struct dirent **v = NULL;
	int n = scandir(dir, &v, NULL, alphasort);
	out[0] = 0;
	for (int i = 0; i < n; i++) {
		if (v[i]->d_name[0] != '.') {
			if (out[0])
				strncat(out, " ", sizeof(out) - strlen(out) - 1);
			strncat(out, v[i]->d_name, sizeof(out) - strlen(out) - 1);
		}
		free(v[i]);
	}
	free(v);
	return out;
}

static bool exists(const char *p)
{
	struct stat sb;
	return stat(p, &sb) == 0;
}

/* Data rows of a CSV (lines after the header), per (gpu, xcc) for the SPM file; -1 unreadable. */
static long csv_rows(const char *file, long per[16][17], bool spm)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return -1;
	char line[8192];
	long rows = 0;
	if (per)
		memset(per, 0, sizeof(long) * 16 * 17);
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return 0;
	}
	while (fgets(line, sizeof(line), f)) {
		if (!strchr(line, '\n'))
			break; /* a cut last row is no row */
		unsigned g, x;
		if (per && spm && sscanf(line, "%u,%u,", &g, &x) == 2 && g < 16 && x < 16)
			per[g][x]++;
		rows++;
	}
	fclose(f);
	return rows;
}

/* A JSON string's text, "(none)" for anything else (a failing check must not crash the suite). */
static const char *js(json_t *j)
{
	const char *v = json_string_value(j);
	return v ? v : "(none)";
}

/* extra.streams[i].rows summed by source ("spm", "smi"); -1 without it. */
static long meta_rows(json_t *m, const char *source)
{
	json_t *streams = json_object_get(json_object_get(m, "extra"), "streams"), *s;
	size_t i;
	long n = -1;
	json_array_foreach(streams, i, s) {
		json_t *r = json_object_get(s, "rows");
		if (strcmp(js(json_object_get(s, "source")), source) || !json_is_integer(r))
			continue;
		n = (n < 0 ? 0 : n) + (long)json_integer_value(r);
	}
	return n;
}

/* sha256 of every file of a directory, one line each ("" when the directory is missing). */
static char *sums(const char *dir)
{
	char cmd[PATH_MAX + 64], *out = malloc(65536);
	snprintf(cmd, sizeof(cmd), "cd '%s' && sha256sum * 2>/dev/null", dir);
	if (out && tp_sh(cmd, out, 65536) < 0)
		out[0] = 0;
	return out;
}

/* Item 3: a typo in the app costs nothing — checked before any file is touched. */
static void test_bad_app(void)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path("bad"));
	const char *rec[] = { "record", "--spm", "SQ_WAVES", "--smi", "power", "-d", dir, "-o", "run",
			      "--duration", "1", NULL };
	CU_ASSERT_EQUAL_FATAL(run(rec, path("bad.err")), 0);
	char *before = sums(dir);
	char lbefore[4096];
	snprintf(lbefore, sizeof(lbefore), "%s", listing(dir));
	CU_ASSERT_STRING_EQUAL(lbefore, "run_meta.json run_smi.csv run_spm.csv");
	const char *typo[] = { "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "run", "--", "./no-such-app",
			       NULL };
	CU_ASSERT_EQUAL(run(typo, path("bad2.err")), 127);
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("bad2.err")), "./no-such-app: No such file or directory"));
	const char *typo2[] = { "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "run", "--",
				"no-such-app-on-path", NULL };
	CU_ASSERT_EQUAL(run(typo2, path("bad2.err")), 127);
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("bad2.err")), "not found on PATH"));
	const char *noexec[] = { "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "run", "--",
				 in(dir, "run_meta.json"), NULL };
	CU_ASSERT_EQUAL(run(noexec, path("bad2.err")), 126);
	char *after = sums(dir);
	CU_ASSERT_STRING_EQUAL(after, before);
	CU_ASSERT_STRING_EQUAL(listing(dir), lbefore);
	if (strcmp(after, before))
		fprintf(stderr, "\nbefore:\n%s\nafter:\n%s\n", before, after);
	free(before);
	free(after);
	/* Not even the directory is made. */
	const char *fresh[] = { "record", "--spm", "SQ_WAVES", "-d", path("bad-new"), "--", "./no-such-app",
				NULL };
	CU_ASSERT_EQUAL(run(fresh, path("bad2.err")), 127);
	CU_ASSERT_FALSE(exists(path("bad-new")));
}

static json_t *load(const char *p)
{
	json_t *j = json_load_file(p, 0, NULL);
	if (!j)
		fprintf(stderr, "\n%s: cannot read\n", p);
	return j;
}

/* A run with other -f replaces the old set as a whole; "formats" says what was asked. */
static void test_other_formats(void)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path("fmt"));
	const char *csv[] = { "record", "--spm", "SQ_WAVES", "--smi", "power", "-d", dir, "-o", "run",
			      "--duration", "1", NULL };
	/* A file under NAME with no spmtap metadata beside it is not spmtap's to remove. */
	mkdir(dir, 0755);
	FILE *fp = fopen(in(dir, "run.pftrace"), "w");
	if (fp) {
		fputs("mine\n", fp);
		fclose(fp);
	}
	CU_ASSERT_EQUAL_FATAL(run(csv, path("fmt.err")), 0);
	CU_ASSERT_STRING_EQUAL(listing(dir), "run.pftrace run_meta.json run_smi.csv run_spm.csv");
	json_t *m = load(in(dir, "run_meta.json"));
	json_t *f = json_object_get(json_object_get(m, "extra"), "formats");
	CU_ASSERT_EQUAL(json_array_size(f), 1);
	CU_ASSERT_STRING_EQUAL(js(json_array_get(f, 0)), "csv");
	json_decref(m);
	const char *db[] = { "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "run", "-f", "sqlite",
			     "--duration", "1", NULL };
	CU_ASSERT_EQUAL_FATAL(run(db, path("fmt.err")), 0);
	CU_ASSERT_STRING_EQUAL(listing(dir), "run.db run_meta.json");
	/* and says so */
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("fmt.err")), "run_smi.csv (the earlier run under this name"));
	m = load(in(dir, "run_meta.json"));
	f = json_object_get(json_object_get(m, "extra"), "formats");
	CU_ASSERT_EQUAL(json_array_size(f), 1);
	CU_ASSERT_STRING_EQUAL(js(json_array_get(f, 0)), "sqlite");
	json_t *files = json_object_get(m, "files");
	CU_ASSERT_EQUAL(json_object_size(files), 2);
	CU_ASSERT_STRING_EQUAL(js(json_object_get(files, "sqlite")), "run.db");
	json_decref(m);
	/* And back: the database goes with the set it belonged to; another NAME is untouched. */
	const char *other[] = { "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "keep", "-f", "pftrace",
				"--duration", "1", NULL };
	CU_ASSERT_EQUAL_FATAL(run(other, path("fmt.err")), 0);
	const char *back[] = { "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "run", "-f", "csv,pftrace",
			       "--duration", "1", NULL };
	CU_ASSERT_EQUAL_FATAL(run(back, path("fmt.err")), 0);
	CU_ASSERT_STRING_EQUAL(listing(dir),
			       "keep.pftrace keep_meta.json run.pftrace run_meta.json run_spm.csv");
}

/* A clean end: complete, rows equal to the files' rows, the same object in SQLite. */
static void test_complete_meta(void)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path("meta"));
	const char *rec[] = { "record", "--spm", "SQ_WAVES,TCC_HIT", "--smi", "power,energy", "-d", dir,
			      "-o", "run", "-f", "csv,sqlite", "--duration", "1.5", NULL };
	int st = run(rec, path("meta.err"));
	if (st)
		fprintf(stderr, "\n%s\n", tf_peek(path("meta.err")));
	CU_ASSERT_EQUAL_FATAL(st, 0);
	json_t *m = load(in(dir, "run_meta.json"));
	CU_ASSERT_TRUE(json_is_true(json_object_get(m, "complete")));
	long per[16][17];
	long spm = csv_rows(in(dir, "run_spm.csv"), per, true), smi = csv_rows(in(dir, "run_smi.csv"), NULL, false);
	CU_ASSERT(spm > 0 && smi > 0);
	CU_ASSERT_EQUAL(meta_rows(m, "spm"), spm);
	CU_ASSERT_EQUAL(meta_rows(m, "smi"), smi);
	/* stream by stream, against the CSV's own (gpu, xcc) counts */
	json_t *s;
	size_t i;
	json_array_foreach(json_object_get(json_object_get(m, "extra"), "streams"), i, s) {
		if (strcmp(js(json_object_get(s, "source")), "spm"))
			continue;
		int g = (int)json_integer_value(json_object_get(s, "gpu"));
		int x = (int)json_integer_value(json_object_get(s, "xcc"));
		CU_ASSERT_EQUAL(json_integer_value(json_object_get(s, "rows")), per[g][x]);
	}
	char cmd[PATH_MAX + 128], out[1 << 16];
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select value from meta where key='recording_meta'\"",
		 in(dir, "run.db"));
	CU_ASSERT_EQUAL(tp_sh(cmd, out, sizeof(out)), 0);
	json_t *dbm = json_loads(out, 0, NULL);
	CU_ASSERT_PTR_NOT_NULL(dbm);
	CU_ASSERT_TRUE(json_equal(dbm, m));
	json_decref(dbm);
	json_decref(m);
	CU_ASSERT_PTR_NULL(strstr(listing(dir), ".part"));
}

/* Item 8: kill -9 leaves .part files with rows and metadata that says complete:false. */
static void test_kill9(void)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path("k9"));
	const char *rec[] = { "record", "--spm", "SQ_WAVES", "--smi", "power", "-d", dir, "-o", "run",
			      "-f", "csv,sqlite", "--duration", "600", NULL };
	pid_t pid = spawn(rec, NULL, path("k9.err"));
	CU_ASSERT_FATAL(pid > 0);
	/* Until the metadata counts rows of both sources (up to 120 s: a loaded machine). */
	long mspm = -1, msmi = -1;
	for (int k = 0; k < 1200 && (mspm <= 0 || msmi <= 0); k++) {
		usleep(100 * 1000);
		json_t *m = json_load_file(in(dir, "run_meta.json.part"), 0, NULL);
		if (m) {
			mspm = meta_rows(m, "spm");
			msmi = meta_rows(m, "smi");
		}
		json_decref(m);
	}
	kill(pid, SIGKILL);
	CU_ASSERT_EQUAL(tp_wait(pid), 128 + SIGKILL);
	CU_ASSERT(mspm > 0 && msmi > 0);
	const char *l = listing(dir);
	CU_ASSERT_PTR_NOT_NULL(strstr(l, "run_spm.csv.part"));
	CU_ASSERT_PTR_NOT_NULL(strstr(l, "run_smi.csv.part"));
	CU_ASSERT_PTR_NOT_NULL(strstr(l, "run_meta.json.part"));
	CU_ASSERT_PTR_NOT_NULL(strstr(l, "run.db.part"));
	CU_ASSERT_FALSE(exists(in(dir, "run_spm.csv")) || exists(in(dir, "run_meta.json")) ||
			exists(in(dir, "run.db")));
	json_t *m = load(in(dir, "run_meta.json.part"));
	CU_ASSERT_TRUE(json_is_false(json_object_get(m, "complete")));
	long spm = csv_rows(in(dir, "run_spm.csv.part"), NULL, true);
	long smi = csv_rows(in(dir, "run_smi.csv.part"), NULL, false);
	/* What the metadata counts is on disk (rows written after its last update may follow). */
	CU_ASSERT(spm > 0 && spm >= meta_rows(m, "spm"));
	CU_ASSERT(smi > 0 && smi >= meta_rows(m, "smi"));
	if (!(smi > 0 && smi >= meta_rows(m, "smi")))
		fprintf(stderr, "\nsmi rows %ld, metadata %ld\n", smi, meta_rows(m, "smi"));
	json_decref(m);
	/* The database too: its own copy of the metadata, and at least the rows it counts. */
	char cmd[PATH_MAX + 256];
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select json_extract(value, '$.complete') from meta "
		 "where key='recording_meta'\"", in(dir, "run.db.part"));
	CU_ASSERT_STRING_EQUAL(tp_sh1(cmd), "0");
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select count(*) >= (select json_extract(value, "
		 "'$.extra.streams[6].rows') from meta where key='recording_meta') from sample_v where "
		 "name='power_cur'\"", in(dir, "run.db.part"));
	CU_ASSERT_STRING_EQUAL(tp_sh1(cmd), "1");
	/* The next run under the same NAME leaves no .part of the killed one. */
	const char *again[] = { "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "run", "-f", "csv",
				"--duration", "1", NULL };
	CU_ASSERT_EQUAL(run(again, path("k9b.err")), 0);
	const char *after = listing(dir);
	if (strcmp(after, "run_meta.json run_spm.csv"))
		fprintf(stderr, "\n    left after the next run: %s ", after);
	CU_ASSERT_STRING_EQUAL(after, "run_meta.json run_spm.csv");
}

/* SIGTERM is a clean end: final names, complete. */
static void test_sigterm(void)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path("term"));
	const char *rec[] = { "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "run", "--duration", "600",
			      NULL };
	pid_t pid = spawn(rec, NULL, path("term.err"));
	for (int k = 0; k < 1200 && !exists(in(dir, "run_meta.json.part")); k++)
		usleep(100 * 1000);
	usleep(500 * 1000);
	kill(pid, SIGTERM);
	CU_ASSERT_EQUAL(tp_wait(pid), 0);
	CU_ASSERT_STRING_EQUAL(listing(dir), "run_meta.json run_spm.csv");
	json_t *m = load(in(dir, "run_meta.json"));
	CU_ASSERT_TRUE(json_is_true(json_object_get(m, "complete")));
	json_decref(m);
}

/* A writer that fails (the file size limit): final names, "complete": false, the accounting there. */
static void test_failed_writer(void)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path("full"));
	const char *rec[] = { "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "run", "--duration", "2", NULL };
	const char *argv[16] = { spmtap };
	for (size_t i = 0; rec[i]; i++)
		argv[i + 1] = rec[i];
	int st = tp_run(argv, &(struct tp_opts){ .err = path("full.err"), .out = "/dev/null", .fsize = 1 << 20 });
	CU_ASSERT_EQUAL(st, 1);
	CU_ASSERT_STRING_EQUAL(listing(dir), "run_meta.json run_spm.csv");
	json_t *m = load(in(dir, "run_meta.json"));
	CU_ASSERT_TRUE(json_is_false(json_object_get(m, "complete")));
	CU_ASSERT_TRUE(json_is_array(json_object_get(m, "timebase")));
	json_decref(m);
}

/* The single-stream outputs too: the raw container and the tick CSV with its layout, renamed at the end. */
static void test_raw_and_ticks(void)
{
	char dir[PATH_MAX], raw[PATH_MAX], csv[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path("single"));
	mkdir(dir, 0755);
	snprintf(raw, sizeof(raw), "%s/r.spmraw", dir);
	snprintf(csv, sizeof(csv), "%s/t.csv", dir);
	const char *r[] = { "record", "--raw", "-o", raw, "--duration", "1", NULL };
	CU_ASSERT_EQUAL(run(r, path("single.err")), 0);
	const char *t[] = { "record", "--spm", "SQ_WAVES", "-o", csv, "--duration", "1", NULL };
	CU_ASSERT_EQUAL(run(t, path("single.err")), 0);
	CU_ASSERT_STRING_EQUAL(listing(dir), "r.spmraw t.csv t.layout.json");
	/* a bad app: nothing is written, the earlier files are as they were */
	char *before = sums(dir);
	const char *bad[] = { "record", "--spm", "SQ_WAVES", "-o", csv, "--duration", "1", "--", "./no-such-app",
			      NULL };
	CU_ASSERT_EQUAL(run(bad, path("single.err")), 127);
	char *after = sums(dir);
	CU_ASSERT_STRING_EQUAL(after, before);
	free(before);
	free(after);
}

/* Item 10: -o with the format's extension, an absolute -o, a relative one with a directory. */
static void test_paths(void)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path("paths"));
	const char *ext[] = { "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "results.db", "-f", "sqlite",
			      "--duration", "1", NULL };
	CU_ASSERT_EQUAL(run(ext, path("paths.err")), 0);
	CU_ASSERT_STRING_EQUAL(listing(dir), "results.db results_meta.json");
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("paths.err")), "wrote "));
	char abs[PATH_MAX];
	snprintf(abs, sizeof(abs), "%s", path("abs/deep/run.db"));
	const char *a[] = { "record", "--spm", "SQ_WAVES", "-d", path("ignored"), "-o", abs, "-f", "sqlite",
			    "--duration", "1", NULL };
	CU_ASSERT_EQUAL(run(a, path("paths.err")), 0);
	CU_ASSERT_TRUE(exists(abs));
	CU_ASSERT_FALSE(exists(path("ignored")));
	CU_ASSERT_STRING_EQUAL(listing(path("abs/deep")), "run.db run_meta.json");
	const char *rel[] = { "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "sub/x.csv", "--duration", "1",
			      NULL };
	CU_ASSERT_EQUAL(run(rel, path("paths.err")), 0);
	CU_ASSERT_STRING_EQUAL(listing(in(dir, "sub")), "x_meta.json x_spm.csv");
	const char *bad[] = { "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "sub/", "--duration", "1", NULL };
	CU_ASSERT_EQUAL(run(bad, path("paths.err")), 64);
}

/* rocprofv3's placeholders in -d and -o; an unknown one is a usage error that writes nothing. */
static void test_placeholders(void)
{
	char root[PATH_MAX];
	snprintf(root, sizeof(root), "%s", path("ph"));
	char d[PATH_MAX], host[256] = "";
	gethostname(host, sizeof(host) - 1);
	snprintf(d, sizeof(d), "%s/%%hostname%%_%%rank%%", root);
	const char *rec[] = { "record", "--spm", "SQ_WAVES", "-d", d, "-o",
			      "r_%pid%_%job%_%env{SPMTAP_T_X}%_$env{SPMTAP_T_X}_%launch_time%", "--duration",
			      "1", NULL };
	static const char *const env[] = { "OMPI_COMM_WORLD_RANK=3", "SLURM_JOB_ID=77", "SPMTAP_T_X=xy",
					   NULL };
	pid_t pid = spawn(rec, env, path("ph.err"));
	CU_ASSERT_EQUAL_FATAL(tp_wait(pid), 0);
	char want_dir[PATH_MAX], prefix[256];
	snprintf(want_dir, sizeof(want_dir), "%s/%s_3", root, host);
	snprintf(prefix, sizeof(prefix), "r_%ld_77_xy_xy_", (long)pid);
	const char *l = listing(want_dir);
	CU_ASSERT_EQUAL(strncmp(l, prefix, strlen(prefix)), 0);
	/* YYYY_MM_DD_HH.MM.SS */
	int y, mo, da, h, mi, s;
	char tail[64] = "";
	CU_ASSERT_EQUAL(sscanf(l + strlen(prefix), "%4d_%2d_%2d_%2d.%2d.%2d%63s", &y, &mo, &da, &h, &mi, &s, tail),
			7);
	CU_ASSERT_STRING_EQUAL(tail, "_meta.json");
	if (strncmp(l, prefix, strlen(prefix)))
		fprintf(stderr, "\n%s: [%s], want %s...\n", want_dir, l, prefix);
	const char *bad[] = { "record", "--spm", "SQ_WAVES", "-d", path("ph2"), "-o", "r_%nope%", "--duration",
			      "1", NULL };
	CU_ASSERT_EQUAL(run(bad, path("ph2.err")), 64);
	CU_ASSERT_PTR_NOT_NULL(strstr(tf_peek(path("ph2.err")), "unknown placeholder '%nope%'"));
	CU_ASSERT_FALSE(exists(path("ph2")));
}

int main(int argc, char **argv)
{
	testenv_under_emu(argc, argv, "mi300a", NULL);
	static const struct testenv_case cases[] = {
		{ "bad_app", test_bad_app, need_emulator },
		{ "other_formats", test_other_formats, need_emulator },
		{ "complete_meta", test_complete_meta, need_emulator },
		{ "kill9", test_kill9, need_emulator },
		{ "sigterm", test_sigterm, need_emulator },
		{ "failed_writer", test_failed_writer, need_emulator },
		{ "raw_and_ticks", test_raw_and_ticks, need_emulator },
		{ "paths", test_paths, need_emulator },
		{ "placeholders", test_placeholders, need_emulator },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("outputs", cases, argc, argv);
}
