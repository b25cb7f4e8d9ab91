/* SPDX-License-Identifier: MIT */
/*
 * The recording's cost per stage (collector/lib/cost.c, session_meta.c
 * ses_cost, the summary's cost line in collector/cli/record-summary.c),
 * against the real CLI on an emulated MI300A and MI210 (this suite's emulator):
 *  - NAME_meta.json has "cost" with one entry per stage that ran (feeder,
 *    decode, each writer, sensors, clock), the SQLite copy of the metadata
 *    the same object;
 *  - its bytes are the emulator's ground truth (bytes copied into our
 *    buffers, SPMTAP_EMU_TRUTH), not our own count;
 *  - the stages' CPU, read from per-thread clocks, sum to no more than the
 *    process's CPU, and every per-GB figure and memcpy multiple is its CPU
 *    over those bytes and that memcpy;
 *  - the summary prints the cost line, with the raw container's writer
 *    when --raw is recorded, whose end record has the object too;
 *  - with an application, the marker thread has its entry;
 *  - with two GPUs, one entry per stage over both, the bytes of both.
 * No wall-clock thresholds: the CPU figures are only checked against each
 * other and against the bytes.
 */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "files.h"
#include "raw_end.h"
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

/* build/spmtap ARGS under this suite's emulator, its truth into `truth`, stderr into errfile. */
static int run(const char *const *args, const char *truth, const char *errfile)
{
	const char *argv[64] = { spmtap };
	size_t n = 1;
	for (; args[n - 1] && n < 63; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	char env[PATH_MAX + 32];
	snprintf(env, sizeof(env), "SPMTAP_EMU_TRUTH=%s", truth);
	const char *const e[] = { env, NULL };
	remove(truth);
	int st = tp_run(argv, &(struct tp_opts){ .env = e, .err = errfile, .out = "/dev/null" });
	if (st)
		fprintf(stderr, "\nspmtap exited %d:\n%s\n", st, tf_peek(errfile));
	return st;
}

/* Bytes the emulator copied into the recorder's buffers, every XCC of every release. */
static double truth_copied(const char *truth)
{
	FILE *f = fopen(truth, "r");
	double sum = 0;
	char line[8192];
	while (f && fgets(line, sizeof(line), f)) {
		json_t *j = json_loads(line, 0, NULL);
		sum += json_number_value(json_object_get(j, "copied_bytes"));
		json_decref(j);
	}
	if (f)
		fclose(f);
	return sum;
}

static double num(json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

static json_t *stage(json_t *cost, const char *name)
{
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(cost, "stages"), i, s)
		if (!strcmp(json_string_value(json_object_get(s, "stage")), name))
			return s;
	return NULL;
}

/* a == b up to a relative 1e-9 (both printed from the same doubles). */
static int close_to(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b)) + 1e-12;
}

static void test_meta(void)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path("meta"));
	const char *rec[] = { "record", "--spm", "SQ_WAVES,TCC_HIT", "--smi", "power", "-d", dir, "-o", "run",
			      "-f", "csv,sqlite", "--duration", "1.5", NULL };
	CU_ASSERT_EQUAL_FATAL(run(rec, path("meta.truth"), path("meta.err")), 0);
	char p[PATH_MAX + 32];
	snprintf(p, sizeof(p), "%s/run_meta.json", dir);
	json_t *m = json_load_file(p, 0, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	json_t *c = json_object_get(m, "cost");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);

	/* The bytes are the emulator's: everything it copied into our buffers was retired. */
	double bytes = num(c, "bytes"), copied = truth_copied(path("meta.truth"));
	CU_ASSERT(bytes > 0);
	CU_ASSERT_EQUAL(bytes, copied);
	if (bytes != copied)
		fprintf(stderr, "\ncost.bytes %.0f, truth copied_bytes %.0f\n", bytes, copied);

	/* One entry per stage that ran; every thread's CPU within the process's. */
	static const char *const want[] = { "feeder", "decode", "writer:csv", "writer:sqlite", "sensors",
					    "clock" };
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		CU_ASSERT_PTR_NOT_NULL(stage(c, want[k]));
		if (!stage(c, want[k]))
			fprintf(stderr, "\nno stage %s\n", want[k]);
	}
	CU_ASSERT_PTR_NULL(stage(c, "markers")); /* no app, no marker thread */
	CU_ASSERT_PTR_NULL(stage(c, "writer:raw"));
	double cpu = num(c, "collector_cpu_s"), memcpy_s = num(c, "memcpy_s"), sum = 0;
	CU_ASSERT(cpu > 0);
	CU_ASSERT(memcpy_s > 0);
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(c, "stages"), i, s) {
		double v = num(s, "cpu_s");
		CU_ASSERT(v >= 0);
		sum += v;
		CU_ASSERT(close_to(num(s, "cpu_s_per_gb"), v / (bytes / 1e9)));
		CU_ASSERT(close_to(num(s, "x_memcpy"), v / memcpy_s));
	}
	/* the feeder and the decoder did work on every byte */
	CU_ASSERT(num(stage(c, "feeder"), "cpu_s") > 0);
	CU_ASSERT(num(stage(c, "decode"), "cpu_s") > 0);
	CU_ASSERT(num(stage(c, "writer:csv"), "cpu_s") > 0);
	CU_ASSERT(sum <= cpu + 1e-6);
	if (sum > cpu + 1e-6)
		fprintf(stderr, "\nstages %.6f s > process %.6f s\n", sum, cpu);
	CU_ASSERT(close_to(num(c, "other_cpu_s"), cpu - sum) || fabs(num(c, "other_cpu_s") - (cpu - sum)) < 1e-6);
	CU_ASSERT(close_to(num(c, "collector_cpu_s_per_gb"), cpu / (bytes / 1e9)));
	CU_ASSERT(close_to(num(c, "memcpy_s_per_gb"), memcpy_s / (bytes / 1e9)));

	/* The database's copy of the metadata carries the same object. */
	char cmd[PATH_MAX + 128], out[1 << 16];
	snprintf(cmd, sizeof(cmd), "sqlite3 %s/run.db \"select json_extract(value, '$.cost') from meta "
		 "where key='recording_meta'\"", dir);
	CU_ASSERT_EQUAL(tp_sh(cmd, out, sizeof(out)), 0);
	json_t *dbc = json_loads(out, 0, NULL);
	CU_ASSERT_TRUE(json_equal(dbc, c));
	json_decref(dbc);

	/* The summary's line: the process's CPU per GB first, then each stage. */
	const char *err = tf_peek(path("meta.err"));
	const char *l = strstr(err, "spmtap record: cost: ");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	char first[32];
	snprintf(first, sizeof(first), "%.2f s CPU per GB (feeder ", cpu / (bytes / 1e9));
	CU_ASSERT_PTR_NOT_NULL(strstr(l, first));
	CU_ASSERT_PTR_NOT_NULL(strstr(l, "csv "));
	CU_ASSERT_PTR_NOT_NULL(strstr(l, "sqlite "));
	CU_ASSERT_PTR_NOT_NULL(strstr(l, "; memcpy "));
	/* A short recording says that fixed costs weigh on its per-GB figures (COST_FIXED_BYTES, cost.h). */
	const char *eol = strchr(l, '\n');
	const char *fixed = strstr(l, "fixed costs weigh on these figures");
	CU_ASSERT_EQUAL(bytes < (double)(256ull << 20), fixed && (!eol || fixed < eol));
	json_decref(m);
}

/* `record --spm --raw`: no metadata file, but the summary's cost line has the raw container's writer. */
static void test_raw_line(void)
{
	const char *raw = path("x.raw");
	const char *rec[] = { "record", "--spm", "SQ_WAVES", "--raw", "-o", raw, "--duration", "1", NULL };
	CU_ASSERT_EQUAL_FATAL(run(rec, path("raw.truth"), path("raw.err")), 0);
	const char *err = tf_peek(path("raw.err"));
	const char *l = strstr(err, "spmtap record: cost: ");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	CU_ASSERT_PTR_NOT_NULL(strstr(l, "feeder "));
	CU_ASSERT_PTR_NOT_NULL(strstr(l, "decode "));
	CU_ASSERT_PTR_NOT_NULL(strstr(l, "raw "));
	/* The container's end record carries the same cost object (docs/raw-format.md). */
	json_t *end = raw_end_json(raw);
	json_t *c = json_object_get(end, "cost");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_PTR_NOT_NULL(stage(c, "writer:raw"));
	CU_ASSERT_EQUAL(num(c, "bytes"), truth_copied(path("raw.truth")));
	json_decref(end);
}

/* With an application the marker thread runs: its own entry, and still within the process's CPU. */
static void test_app_markers(void)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path("app"));
	const char *rec[] = { "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "run", "-f", "perfetto", "--",
			      "/bin/sleep", "1", NULL };
	CU_ASSERT_EQUAL_FATAL(run(rec, path("app.truth"), path("app.err")), 0);
	char p[PATH_MAX + 32];
	snprintf(p, sizeof(p), "%s/run_meta.json", dir);
	json_t *m = json_load_file(p, 0, NULL);
	json_t *c = json_object_get(m, "cost");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_PTR_NOT_NULL(stage(c, "markers"));
	CU_ASSERT_PTR_NOT_NULL(stage(c, "writer:perfetto"));
	CU_ASSERT_PTR_NULL(stage(c, "sensors"));
	double sum = 0;
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(c, "stages"), i, s)
		sum += num(s, "cpu_s");
	CU_ASSERT(sum <= num(c, "collector_cpu_s") + 1e-6);
	CU_ASSERT_EQUAL(num(c, "bytes"), truth_copied(path("app.truth")));
	json_decref(m);
}

/* Two GPUs: one entry per stage, their threads summed, the bytes of both against the truth. */
static void test_two_gpus(void)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path("two"));
	const char *rec[] = { "record", "--spm", "SQ_WAVES", "--device", "all", "-d", dir, "-o", "run", "-f",
			      "csv", "--duration", "1", NULL };
	CU_ASSERT_EQUAL_FATAL(run(rec, path("two.truth"), path("two.err")), 0);
	char p[PATH_MAX + 32];
	snprintf(p, sizeof(p), "%s/run_meta.json", dir);
	json_t *m = json_load_file(p, 0, NULL);
	json_t *c = json_object_get(m, "cost");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(json_array_size(json_object_get(m, "accounting")), 2);
	CU_ASSERT_EQUAL(num(c, "bytes"), truth_copied(path("two.truth")));
	size_t i, feeders = 0;
	json_t *s;
	double sum = 0;
	json_array_foreach(json_object_get(c, "stages"), i, s) {
		feeders += !strcmp(json_string_value(json_object_get(s, "stage")), "feeder");
		sum += num(s, "cpu_s");
	}
	CU_ASSERT_EQUAL(feeders, 1);
	CU_ASSERT(sum <= num(c, "collector_cpu_s") + 1e-6);
	json_decref(m);
}

int main(int argc, char **argv)
{
	testenv_under_emu(argc, argv, "mi300a,mi210", NULL);
	static const struct testenv_case cases[] = {
		{ "meta", test_meta, need_emulator },
		{ "raw_line", test_raw_line, need_emulator },
		{ "app_markers", test_app_markers, need_emulator },
		{ "two_gpus", test_two_gpus, need_emulator },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("cost", cases, argc, argv);
}
