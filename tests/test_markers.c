/* SPDX-License-Identifier: MIT */
/*
 * The marker API (spmtap_region_begin/end) and its channel to a recording
 * (docs/markers.md): in process, every region of several threads arrives
 * paired, nested and in order, and what a full ring or a missing slot
 * loses is counted; end to end, a real application under `spmtap record --
 * app` (C with threads, C++, Fortran) gets its regions into the CSV and
 * SQLite outputs, inside the recording's time span, per thread in order.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <jansson.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collector/lib/marker_reader.h"
#include "collector/lib/marker_shm.h"
#include "collector/lib/marker_tsc.h"
#include "lib/proc.h"
#include "lib/testenv.h"
#include "spmtap.h"

static char dir[] = "/tmp/spmtap-test-markers-XXXXXX";

static const char *path(const char *name)
{
	return testenv_path(dir, name);
}

/* ---- in process: the channel itself ------------------------------------------------------ */

#define NREG 4096 /* regions stored by the collecting callback */

struct got {
	struct mk_region r[NREG];
	char names[NREG][MK_NAME];
	size_t n;
};

static int collect(const struct mk_region *r, void *user)
{
	struct got *g = user;
	if (g->n < NREG) {
		g->r[g->n] = *r;
		snprintf(g->names[g->n], MK_NAME, "%s", r->name);
		g->r[g->n].name = g->names[g->n];
		g->n++;
	}
	return 0;
}

static struct mk_reader *reader; /* the process's one channel: SPMTAP_MARKERS_FD is read once */

static void channel(void)
{
	if (reader)
		return;
	int fd;
	char err[256];
	CU_ASSERT_EQUAL_FATAL(mk_reader_create(&reader, &fd, err, sizeof(err)), 0);
	char v[16];
	snprintf(v, sizeof(v), "%d", fd);
	setenv(MK_ENV_FD, v, 1);
}

struct thr {
	int t, iters;
};

static void *nest(void *arg)
{
	struct thr *a = arg;
	char outer[32], inner[32];
	snprintf(outer, sizeof(outer), "T%d", a->t);
	for (int i = 0; i < a->iters; i++) {
		spmtap_region_begin(outer);
		snprintf(inner, sizeof(inner), "T%d.%d", a->t, i);
		spmtap_region_begin(inner);
		spmtap_region_end();
		spmtap_region_end();
	}
	return NULL;
}

static int64_t boot_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* 4 threads x 200 iterations x 2 regions, drained as they come: all 1600, paired and in order. */
static void test_threads_in_order(void)
{
	channel();
	struct got *g = calloc(1, sizeof(*g));
	int64_t t0 = boot_ns();
	pthread_t th[4];
	struct thr a[4];
	for (int t = 0; t < 4; t++) {
		a[t] = (struct thr){ t, 200 };
		pthread_create(&th[t], NULL, nest, &a[t]);
	}
	for (int t = 0; t < 4; t++)
		pthread_join(th[t], NULL);
	int64_t t1 = boot_ns();
	CU_ASSERT_EQUAL(mk_reader_finish(reader, t1, collect, g), 0);
	struct mk_stats st;
	mk_reader_stats(reader, &st);
	printf("\n    %zu regions, %u threads, %" PRIu64 " events, %" PRIu64 " dropped, %" PRIu64 " unmatched ", g->n,
	       st.threads, st.events, st.dropped, st.unmatched);
	CU_ASSERT_EQUAL(g->n, 1600);
	CU_ASSERT_EQUAL(st.dropped + st.unmatched + st.unterminated, 0);
	/* Per thread: inner i inside outer i, both in order, all inside [t0, t1]. */
	for (int t = 0; t < 4; t++) {
		char outer[32];
		snprintf(outer, sizeof(outer), "T%d", t);
		int next_inner = 0, outers = 0;
		int64_t last_start = 0;
		uint32_t tid = 0;
		for (size_t i = 0; i < g->n; i++) {
			const struct mk_region *r = &g->r[i];
			if (strncmp(r->name, outer, strlen(outer)) || (r->name[strlen(outer)] && r->name[strlen(outer)] != '.'))
				continue;
			CU_ASSERT(r->start_ns >= t0 && r->end_ns <= t1 && r->start_ns <= r->end_ns);
			if (!tid)
				tid = r->tid;
			CU_ASSERT_EQUAL(r->tid, tid);
			if (r->name[strlen(outer)] == '.') {
				char want[32];
				snprintf(want, sizeof(want), "T%d.%d", t, next_inner++);
				CU_ASSERT_STRING_EQUAL(r->name, want);
				CU_ASSERT_EQUAL(r->depth, 1);
				CU_ASSERT(r->start_ns >= last_start);
				last_start = r->start_ns;
				/* its outer region is the next one of this thread to end */
				const struct mk_region *o = NULL;
				for (size_t j = i + 1; j < g->n && !o; j++)
					if (g->r[j].tid == tid && g->r[j].depth == 0)
						o = &g->r[j];
				CU_ASSERT_PTR_NOT_NULL_FATAL(o);
				CU_ASSERT_STRING_EQUAL(o->name, outer);
				CU_ASSERT(o->start_ns <= r->start_ns && r->end_ns <= o->end_ns);
			} else {
				outers++;
				CU_ASSERT_EQUAL(r->depth, 0);
			}
		}
		CU_ASSERT_EQUAL(next_inner, 200);
		CU_ASSERT_EQUAL(outers, 200);
	}
	free(g);
}

/* A ring nobody drains: what does not fit is dropped and counted, and pairing survives the gap. */
static void *flood(void *arg)
{
	(void)arg;
	for (int i = 0; i < 3000; i++) {
		spmtap_region_begin("flood");
		spmtap_region_end();
	}
	return NULL;
}

static void test_full_ring(void)
{
	channel();
	struct got *g = calloc(1, sizeof(*g));
	mk_reader_poll(reader, NULL, NULL);
	struct mk_stats s0;
	mk_reader_stats(reader, &s0);
	pthread_t th;
	pthread_create(&th, NULL, flood, NULL);
	pthread_join(th, NULL);
	mk_reader_finish(reader, boot_ns(), collect, g);
	struct mk_stats s1;
	mk_reader_stats(reader, &s1);
	uint64_t dropped = s1.dropped - s0.dropped;
	printf("\n    6000 events into a %u-event ring: %" PRIu64 " dropped, %zu regions kept ", MK_EVENTS, dropped,
	       g->n);
	CU_ASSERT_EQUAL(dropped, 6000 - MK_EVENTS);
	CU_ASSERT_EQUAL(g->n, MK_EVENTS / 2);
	CU_ASSERT_EQUAL(s1.unmatched - s0.unmatched, 0); /* the ring filled between regions */
	free(g);
}

/* An end without a begin is ignored by the API; a region left open is closed at the end, counted. */
static void test_unbalanced(void)
{
	channel();
	struct got *g = calloc(1, sizeof(*g));
	mk_reader_poll(reader, NULL, NULL);
	struct mk_stats s0;
	mk_reader_stats(reader, &s0);
	spmtap_region_end(); /* nothing open on this thread */
	spmtap_region_begin("open-at-end");
	int64_t end = boot_ns() + 1000;
	mk_reader_finish(reader, end, collect, g);
	spmtap_region_end();
	struct mk_stats s1;
	mk_reader_stats(reader, &s1);
	CU_ASSERT_EQUAL(g->n, 1);
	if (g->n) {
		CU_ASSERT_STRING_EQUAL(g->r[0].name, "open-at-end");
		CU_ASSERT_EQUAL(g->r[0].end_ns, end);
		CU_ASSERT(g->r[0].unterminated);
	}
	CU_ASSERT_EQUAL(s1.unterminated - s0.unterminated, 1);
	mk_reader_poll(reader, NULL, NULL); /* its end, unpaired now */
	free(g);
}

/*
 * TSC stamps land where the clock says: each region's begin is taken
 * between two CLOCK_BOOTTIME reads a and b, its end between b and c; the
 * recorder's mapped times must lie in those brackets widened by the error
 * bound it states (checked against clock reads, not the map against
 * itself), over many poll intervals, so across many pairs.  Under
 * SPMTAP_MARKER_CLOCK=boottime (the case below runs this one so) the stamps
 * are clock reads and the bound is 0.
 */
#define NB 400

static void test_tsc_within_bound(void)
{
	channel();
	struct got *g = calloc(1, sizeof(*g));
	mk_reader_poll(reader, NULL, NULL); /* what earlier cases left */
	size_t first = 0;
	static int64_t a[NB], b[NB], c[NB];
	for (int i = 0; i < NB; i++) {
		a[i] = boot_ns();
		spmtap_region_begin("tb");
		b[i] = boot_ns();
		spmtap_region_end();
		c[i] = boot_ns();
		if (i % 20 == 19) {
			mk_reader_poll(reader, collect, g);
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL); /* the next ones map through later pairs */
		}
	}
	CU_ASSERT_EQUAL(mk_reader_finish(reader, boot_ns(), collect, g), 0);
	struct mk_stats st;
	mk_reader_stats(reader, &st);
	char why[160];
	const char *forced = getenv("SPMTAP_MARKER_CLOCK");
	bool want_tsc = mk_tsc_usable(why, sizeof(why));
	CU_ASSERT_EQUAL(st.clock_tsc, want_tsc);
	if (forced && !strcmp(forced, "boottime"))
		CU_ASSERT_FALSE(st.clock_tsc);
	int64_t bound = st.clock_error_ns, worst = 0;
	int k = 0, outside = 0;
	for (size_t i = first; i < g->n && k < NB; i++) {
		const struct mk_region *r = &g->r[i];
		if (strcmp(r->name, "tb"))
			continue;
		/* how far outside its bracket each stamp landed (0 inside) */
		int64_t d0 = r->start_ns < a[k] ? a[k] - r->start_ns : r->start_ns > b[k] ? r->start_ns - b[k] : 0;
		int64_t d1 = r->end_ns < b[k] ? b[k] - r->end_ns : r->end_ns > c[k] ? r->end_ns - c[k] : 0;
		int64_t d = d0 > d1 ? d0 : d1;
		worst = d > worst ? d : worst;
		outside += d > bound;
		k++;
	}
	printf("\n    %d regions stamped with %s (%s): bound %" PRId64 " ns over %" PRIu64
	       " pairs, worst distance outside the clock reads %" PRId64 " ns, %d beyond the bound ",
	       k, st.clock_tsc ? "the TSC" : "clock_gettime", st.clock_why, bound, st.clock_pairs, worst, outside);
	CU_ASSERT_EQUAL(k, NB);
	CU_ASSERT_EQUAL(outside, 0);
	if (st.clock_tsc) {
		CU_ASSERT(st.clock_pairs >= NB / 20);
		CU_ASSERT(bound > 0 && bound < 1000000); /* a bound of a millisecond would say nothing */
		CU_ASSERT(st.tsc_hz > 1e8);
	} else {
		CU_ASSERT_EQUAL(bound, 0);
	}
	free(g);
}

/* The same in a process of its own forced to the clock call: the fallback where the TSC is not usable. */
static void test_clock_fallback(void)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	CU_ASSERT_FATAL(n > 0);
	self[n] = 0;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		setenv("SPMTAP_MARKER_CLOCK", "boottime", 1);
		unsetenv(MK_ENV_FD);
		execl(self, self, "tsc_within_bound", (char *)NULL);
		_exit(127);
	}
	int st = 0;
	CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* ---- end to end: an application under spmtap record ---------------------------------------- */

static int run(const char *const *argv, const char *errfile)
{
	return tp_run(argv, &(struct tp_opts){ .out = "/dev/null", .err = errfile });
}

static void dump(const char *file)
{
	FILE *f = fopen(file, "r");
	char line[512];
	while (f && fgets(line, sizeof(line), f))
		fprintf(stderr, "    | %s", line);
	if (f)
		fclose(f);
}

static int record_app(const char *tag, const char *const *app)
{
	char spmtap[PATH_MAX], d[PATH_MAX];
	snprintf(spmtap, sizeof(spmtap), "%s/spmtap", testenv_build_dir());
	snprintf(d, sizeof(d), "%s", path(tag));
	const char *argv[24] = { spmtap, "--emulate", "mi210", "record", "--smi", "power", "-d", d, "-o", "run",
				 "-f", "csv,sqlite", "--" };
	size_t n = 13;
	for (; *app && n < 23; app++)
		argv[n++] = *app;
	argv[n] = NULL;
	char errf[PATH_MAX + 8];
	snprintf(errf, sizeof(errf), "%s.err", d);
	int st = run(argv, errf);
	if (st)
		dump(errf);
	return st;
}

/* A real threaded application: every region of every thread, complete and in order, per thread. */
static void test_app_threads(void)
{
	char app[PATH_MAX];
	snprintf(app, sizeof(app), "%s/tests/helpers/marker_app", testenv_build_dir());
	const char *args[] = { app, "6", "300", "200", NULL };
	CU_ASSERT_EQUAL_FATAL(record_app("threads", args), 0);
	sqlite3 *db = NULL;
	CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(path("threads/run.db"), &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_stmt *q = NULL;
	/* Per thread, in start order. */
	CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db, "SELECT track, depth, name, start_ns, end_ns FROM slice "
						     "WHERE category = 'marker' ORDER BY track, start_ns, depth",
						     -1, &q, NULL), SQLITE_OK);
	uint32_t track = 0, threads = 0;
	int64_t prev_outer_end = 0;
	int want = 0, bad = 0, regions = 0;
	char prefix[16] = "";
	while (sqlite3_step(q) == SQLITE_ROW) {
		uint32_t t = (uint32_t)sqlite3_column_int64(q, 0);
		int depth = sqlite3_column_int(q, 1);
		const char *name = (const char *)sqlite3_column_text(q, 2);
		int64_t s = sqlite3_column_int64(q, 3), e = sqlite3_column_int64(q, 4);
		regions++;
		if (t != track || !threads) {
			if (threads && want != 300)
				bad++;
			track = t;
			threads++;
			want = 0;
			prev_outer_end = 0;
			snprintf(prefix, sizeof(prefix), "%.*s", (int)(strchr(name, '/') - name + 1), name);
		}
		char exp[48];
		if (depth == 0) {
			snprintf(exp, sizeof(exp), "%siter", prefix);
			bad += strcmp(name, exp) != 0 || s < prev_outer_end;
			prev_outer_end = e;
		} else {
			snprintf(exp, sizeof(exp), "%sinner%d", prefix, want++);
			bad += strcmp(name, exp) != 0 || depth != 1 || e > prev_outer_end;
		}
	}
	if (threads && want != 300)
		bad++;
	sqlite3_finalize(q);
	sqlite3_close(db);
	printf("\n    6 threads x 300 x 2 regions under record: %d regions from %u threads, %d out of place ",
	       regions, threads, bad);
	CU_ASSERT_EQUAL(threads, 6);
	CU_ASSERT_EQUAL(regions, 3600);
	CU_ASSERT_EQUAL(bad, 0);
	/* The CSV has them too, in the phases format, as many. */
	FILE *f = fopen(path("threads/run_phases.csv"), "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	char line[256];
	int rows = 0;
	CU_ASSERT(fgets(line, sizeof(line), f) && !strcmp(line, "start_ns,end_ns,name\n"));
	while (fgets(line, sizeof(line), f))
		rows++;
	fclose(f);
	CU_ASSERT_EQUAL(rows, 3600);
	/* The metadata says which clock stamped them and how far a mapped time can be off. */
	json_t *m = json_load_file(path("threads/run_meta.json"), 0, NULL);
	json_t *mk = json_object_get(m, "markers");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mk);
	char why[160];
	bool tsc = mk_tsc_usable(why, sizeof(why));
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(mk, "clock")), tsc ? "tsc" : "CLOCK_BOOTTIME");
	CU_ASSERT(json_is_integer(json_object_get(mk, "clock_error_ns")));
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(mk, "regions")), 3600);
	if (tsc)
		CU_ASSERT(json_integer_value(json_object_get(mk, "tsc_pairs")) > 0);
	json_decref(m);
}

static const char *need_cxx(void)
{
	return system("command -v g++ >/dev/null 2>&1") ? "g++ not installed" : NULL;
}

static const char *need_fortran(void)
{
	return system("command -v gfortran >/dev/null 2>&1") ? "gfortran not installed" : NULL;
}

/* The source tree: the build directory's parent (build/, build-asan/ ...). */
static const char *src_dir(void)
{
	static char d[PATH_MAX];
	snprintf(d, sizeof(d), "%s", testenv_build_dir());
	char *slash = strrchr(d, '/');
	if (slash)
		*slash = 0;
	return d;
}

/* Compile an application (cmd, run in the temp dir), record it, count its "lang/step" regions. */
static void other_language(const char *exe, const char *src_name, const char *src, const char *cmd)
{
	FILE *f = fopen(path(src_name), "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(src, f);
	fclose(f);
	char sh[4 * PATH_MAX];
	snprintf(sh, sizeof(sh), "cd '%s' && unset LD_PRELOAD && %s", dir, cmd);
	CU_ASSERT_EQUAL_FATAL(system(sh), 0);
	const char *args[] = { path(exe), NULL };
	char d[64];
	snprintf(d, sizeof(d), "%s.rec", exe);
	CU_ASSERT_EQUAL_FATAL(record_app(d, args), 0);
	char csv[PATH_MAX];
	snprintf(csv, sizeof(csv), "%s/run_phases.csv", path(d));
	f = fopen(csv, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	char line[256];
	int rows = 0;
	while (fgets(line, sizeof(line), f))
		rows += strstr(line, ",lang/step\n") != NULL;
	fclose(f);
	printf("\n    %s: %d regions ", exe, rows);
	CU_ASSERT_EQUAL(rows, 50);
}

static void test_cxx(void)
{
	char cmd[3 * PATH_MAX];
	snprintf(cmd, sizeof(cmd), "g++ -Wall -Werror" TESTENV_APP_SAN " -I'%s/include' -o cxxapp app.cc -L'%s' -lspmtap -Wl,-rpath,'%s'",
		 src_dir(), testenv_build_dir(), testenv_build_dir());
	other_language("cxxapp", "app.cc",
		       "#include \"spmtap.h\"\n"
		       "#include <string>\n"
		       "int main() {\n"
		       "  std::string n = \"lang/step\";\n"
		       "  for (int i = 0; i < 50; i++) { spmtap_region_begin(n.c_str()); spmtap_region_end(); }\n"
		       "  return 0;\n"
		       "}\n",
		       cmd);
}

static void test_fortran(void)
{
	char cmd[3 * PATH_MAX];
	snprintf(cmd, sizeof(cmd),
		 "gfortran" TESTENV_APP_SAN " -c -o spmtap_markers.o '%s/include/spmtap_markers.f90' && "
		 "gfortran" TESTENV_APP_SAN " -o fapp app.f90 spmtap_markers.o -L'%s' -lspmtap -Wl,-rpath,'%s'",
		 src_dir(), testenv_build_dir(), testenv_build_dir());
	other_language("fapp", "app.f90",
		       "program app\n"
		       "  use spmtap_markers\n"
		       "  implicit none\n"
		       "  integer :: i\n"
		       "  do i = 1, 50\n"
		       "    call spmtap_region_begin('lang/step')\n"
		       "    call spmtap_region_end()\n"
		       "  end do\n"
		       "end program app\n",
		       cmd);
}

int main(int argc, char **argv)
{
	testenv_under_emu(argc, argv, "mi210", NULL);
	if (!mkdtemp(dir))
		return 1;
	static const struct testenv_case cases[] = {
		{ "threads_in_order", test_threads_in_order, NULL },
		{ "full_ring", test_full_ring, NULL },
		{ "unbalanced", test_unbalanced, NULL },
		{ "tsc_within_bound", test_tsc_within_bound, NULL },
		{ "clock_fallback", test_clock_fallback, NULL },
		{ "app_threads", test_app_threads, NULL },
		{ "cxx", test_cxx, need_cxx },
		{ "fortran", test_fortran, need_fortran },
		{ NULL, NULL, NULL },
	};
	int rc = testenv_run_suite("markers", cases, argc, argv);
	mk_reader_free(reader);
	return testenv_remove_tmp(dir, rc);
}
