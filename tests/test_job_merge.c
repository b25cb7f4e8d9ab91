/* SPDX-License-Identifier: MIT */
/*
 * Issue 18 end to end on the emulated 4-node test bed (tests/job/node.sh):
 * `spmtap record --job` as one mpirun step (nodes in their own time
 * namespaces, offsets 0, +3.2 s, -1.7 s, +250 ms; REALTIME skewed per node
 * as spmtap sees it; each its own emulator), the application as its own
 * mpirun step through the same bed emitting markers, `spmtap job stop`,
 * `spmtap merge` of the four node databases, `spmtap report MERGED.db`.
 *
 * Checked against truth the test holds itself, never against our outputs:
 *  - markers: every begin/end in the merged database equals the true instant
 *    (the app's two reads of the machine's CLOCK_REALTIME around the call,
 *    put on rank 0's BOOTTIME with the REALTIME - BOOTTIME this process reads
 *    around the job: node0's namespace is the machine's) within the node's
 *    recorded bound at that point plus the marker clock error and the read gap;
 *  - phases: the workload is a 50 ms square wave in each node's MONOTONIC_RAW
 *    from 0 (docs/emulator.md); every offset is a multiple of 50 ms, so load
 *    starts where the machine's MONOTONIC_RAW = 0 mod 50 ms and idle 25 ms
 *    later.  The expected instants come from BOOTTIME - MONOTONIC_RAW read by
 *    this process before and after (linear between; its change is printed
 *    and added to the allowance).  The emulator phases of every node and the
 *    SQ_WAVES steps in the merged samples must sit at those instants: the
 *    phases within the bound, the SPM steps within the bound plus one
 *    sample interval;
 *    The square wave cannot tell an error of a whole period (every offset is
 *    one): the markers, dated by REALTIME, are what catch a node left off by
 *    whole seconds;
 *  - the Cray PM series (record --cray) come through merge: every row of each
 *    node's NAME_craypm.csv, at its time on rank 0's clock (the true offset)
 *    within the node's bound, with its value;
 *  - the job report gives the load phase per node with energy and the job sum.
 * No wall-clock threshold: every allowance is a recorded bound or a measured
 * gap, and every one is printed.
 *
 * Case kernels: the app step is examples/hsa/hsa_dispatch under
 * `spmtap emulate` with HSA_TOOLS_LIB=libspmtap-tool.so and SPMTAP_JOB (no
 * SPMTAP_KERNELS_FD: the collector did not start it).  Each node's
 * NAME_kernels.csv holds exactly the dispatches its own app rank reports
 * (kernel name and the GPU's start/end ticks, which the app reads back
 * through ROCr itself), none of another node's.
 *
 * Plain build only by default, for test_job's reason (Open MPI is not
 * instrumented); SPMTAP_TEST_JOB_SANITIZED=1 runs it in a sanitized build.
 * Needs root (time namespaces), mpirun and build/spmtap-job.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hsa_example.h"
#include "jobbed.h"
#include "testenv.h"

#define NODES 4
#define APP_REGIONS 20
#define PERIOD_NS 50000000ll /* the square wave: load the first half, idle the second */

static char bed[512];
static char tmp[] = "/tmp/spmtap-test-job-merge-XXXXXX";
static const char *B;

/* mpirun -np 4 tests/job/node.sh BED -- ARGS..., in the background, output to BED/LOG. */
static pid_t start_bed(const char *log, const char *const *args)
{
	const char *argv[64] = { "mpirun", "--allow-run-as-root", "--oversubscribe", "-x", "SPMTAP_JOB", "-x",
				 "SPMTAP_EMU_WORKLOAD", "-np", "4", "tests/job/node.sh", bed, "--" };
	int k = 12;
	while (*args && k < 63)
		argv[k++] = *args++;
	argv[k] = NULL;
	fflush(NULL);
	pid_t p = fork();
	if (p == 0) {
		int fd = open(jb_fmt("%s/%s", bed, log), O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1);
		dup2(fd, 2);
		setenv("SPMTAP_TESTBED_BIN", jb_fmt("%s/tests/helpers", B), 1);
		execvp(argv[0], (char **)argv);
		_exit(127);
	}
	return p;
}

static int wait_st(pid_t p)
{
	int st;
	if (waitpid(p, &st, 0) != p)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int64_t ns(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return t.tv_sec * 1000000000ll + t.tv_nsec;
}

/* A - C of this machine (= node0's, offset 0), bracketed by two reads of C: [*lo, *hi]; *at = C. */
struct pair {
	int64_t lo, hi, at;
};
static struct pair clock_pair(clockid_t a, clockid_t c)
{
	int64_t c0 = ns(c), v = ns(a), c1 = ns(c);
	return (struct pair){ v - c1, v - c0, c0 };
}

/* offset(local): linear between the node's entries, held outside; bound the larger neighbour's (meta-job.md). */
static int64_t offset_at(json_t *offs, int64_t t, int64_t *bound)
{
	size_t n = json_array_size(offs);
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(offs, i);
		int64_t l = json_integer_value(json_object_get(o, "local_ns"));
		if (t < l || i + 1 == n) {
			json_t *p = (i && t < l) ? json_array_get(offs, i - 1) : o;
			int64_t l0 = json_integer_value(json_object_get(p, "local_ns"));
			int64_t o0 = json_integer_value(json_object_get(p, "offset_ns"));
			int64_t o1 = json_integer_value(json_object_get(o, "offset_ns"));
			int64_t b0 = json_integer_value(json_object_get(p, "bound_ns"));
			int64_t b1 = json_integer_value(json_object_get(o, "bound_ns"));
			*bound = b0 > b1 ? b0 : b1;
			if (p == o || l == l0)
				return o1;
			return o0 + (int64_t)((double)(o1 - o0) * (double)(t - l0) / (double)(l - l0));
		}
	}
	*bound = 0;
	return 0;
}

static int64_t read_ll(const char *path)
{
	FILE *f = fopen(path, "r");
	long long v = 0;
	if (!f || fscanf(f, "%lld", &v) != 1)
		CU_FAIL("test bed truth file");
	if (f)
		fclose(f);
	return v;
}

/* Per node: its clock offsets (from its own recording) and its truth offset. */
struct node {
	json_t *meta, *offs;
	int64_t off_ns; /* node clock = machine clock + off_ns (test bed truth) */
	int64_t mk_err; /* the marker library's own clock error, from the recording */
};

/* The node's recorded bound at merged (rank 0) time t: the entry is found by the node's own time. */
static int64_t bound_at(const struct node *nd, int64_t t)
{
	int64_t b;
	offset_at(nd->offs, t + nd->off_ns, &b);
	return b;
}

/* BOOTTIME - MONOTONIC_RAW at boot time t: linear between the reads before and after the job. */
static struct pair d0, d1;
static int64_t boot_minus_raw(int64_t t)
{
	double m0 = (d0.lo + d0.hi) / 2.0, m1 = (d1.lo + d1.hi) / 2.0;
	if (d1.at == d0.at)
		return (int64_t)m0;
	return (int64_t)(m0 + (m1 - m0) * (double)(t - d0.at) / (double)(d1.at - d0.at));
}
/* The allowance for that estimate: half the brackets' width plus how far it moved over the job. */
static int64_t boot_raw_slack(void)
{
	int64_t w0 = d0.hi - d0.lo, w1 = d1.hi - d1.lo;
	return (w0 > w1 ? w0 : w1) + llabs((d1.lo + d1.hi) / 2 - (d0.lo + d0.hi) / 2);
}

/* The true square-wave edge nearest merged time t: returns it, *load = whether load starts there. */
static int64_t true_edge(int64_t t, bool *load)
{
	int64_t raw = t - boot_minus_raw(t), half = PERIOD_NS / 2;
	int64_t k = (raw + half / 2) / half; /* nearest multiple of 25 ms */
	*load = k % 2 == 0;
	return k * half + boot_minus_raw(t);
}

static sqlite3 *db;

/* Markers: each edge at the true instant within bound + marker clock error + the app's read gap. */
static void check_markers(struct node *nd, struct pair rb0, struct pair rb1)
{
	int64_t c_lo = rb0.lo < rb1.lo ? rb0.lo : rb1.lo, c_hi = rb0.hi > rb1.hi ? rb0.hi : rb1.hi;
	for (int n = 0; n < NODES; n++) {
		FILE *f = fopen(jb_fmt("%s/app/node%d.txt", bed, n), "r");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		sqlite3_stmt *st;
		CU_ASSERT_FATAL(sqlite3_prepare_v2(db, "SELECT name, start_ns, end_ns FROM slice_v WHERE node = ?1 AND "
						   "category = 'marker' ORDER BY start_ns", -1, &st, NULL) == SQLITE_OK);
		sqlite3_bind_int(st, 1, n);
		int rows = 0, inside = 0;
		int64_t worst_err = 0, worst_allow = 0, max_gap = 0, max_bound = 0;
		while (sqlite3_step(st) == SQLITE_ROW) {
			CU_ASSERT_STRING_EQUAL((const char *)sqlite3_column_text(st, 0), jb_fmt("node%d/r%d", n, rows));
			for (int e = 0; e < 2; e++) {
				char kind[8];
				long idx;
				long long r0, r1;
				if (fscanf(f, "%7s %ld %lld %lld", kind, &idx, &r0, &r1) != 4) {
					CU_FAIL("app truth file short");
					break;
				}
				int64_t t = sqlite3_column_int64(st, 1 + e), b = bound_at(&nd[n], t);
				/* the true instant on rank 0's BOOTTIME: REALTIME - (REALTIME - BOOTTIME) */
				int64_t lo = r0 - c_hi, hi = r1 - c_lo, mid = lo + (hi - lo) / 2;
				int64_t err = t - mid, allow = b + nd[n].mk_err + (hi - lo) / 2 + 1;
				bool ok = llabs(err) <= allow;
				inside += ok;
				CU_ASSERT(ok);
				if (llabs(err) > llabs(worst_err)) {
					worst_err = err;
					worst_allow = allow;
				}
				if (hi - lo > max_gap)
					max_gap = hi - lo;
				if (b > max_bound)
					max_bound = b;
			}
			rows++;
		}
		sqlite3_finalize(st);
		fclose(f);
		printf("  node%d markers: %d regions, %d of %d edges at the true instant; worst error %+" PRId64
		       " ns (allowed %" PRId64 ": bound up to %" PRId64 ", marker clock error %" PRId64
		       ", REALTIME read gap up to %" PRId64 ")\n",
		       n, rows, inside, 2 * rows, worst_err, worst_allow, max_bound, nd[n].mk_err, max_gap);
		CU_ASSERT_EQUAL(rows, APP_REGIONS);
	}
}

/* The emulator's phases of every node: each inner edge at the true square-wave edge within the bound. */
static void check_phases(struct node *nd, int64_t *nphases)
{
	int64_t slack = boot_raw_slack();
	for (int n = 0; n < NODES; n++) {
		sqlite3_stmt *st;
		CU_ASSERT_FATAL(sqlite3_prepare_v2(db, "SELECT name, start_ns, end_ns FROM slice_v WHERE node = ?1 AND "
						   "category = 'emulator' ORDER BY start_ns", -1, &st, NULL) == SQLITE_OK);
		sqlite3_bind_int(st, 1, n);
		int rows = 0, edges = 0, bad = 0;
		int64_t worst = 0, worst_allow = 0, prev_end = 0;
		while (sqlite3_step(st) == SQLITE_ROW) {
			bool load = !strcmp((const char *)sqlite3_column_text(st, 0), "load");
			int64_t s = sqlite3_column_int64(st, 1), e = sqlite3_column_int64(st, 2);
			/* the first start is the recording's start, not an edge */
			if (rows) {
				CU_ASSERT_EQUAL(s, prev_end);
				bool tl;
				int64_t te = true_edge(s, &tl), allow = bound_at(&nd[n], s) + slack + 1;
				edges++;
				bad += tl != load || llabs(s - te) > allow;
				CU_ASSERT_EQUAL(tl, load); /* a load phase starts where the truth's load does */
				CU_ASSERT(llabs(s - te) <= allow);
				if (llabs(s - te) > llabs(worst)) {
					worst = s - te;
					worst_allow = allow;
				}
			}
			prev_end = e;
			rows++;
		}
		sqlite3_finalize(st);
		nphases[n] = rows;
		printf("  node%d emulator phases: %d, %d inner edges at the true instants (%d off); worst %+" PRId64
		       " ns (allowed %" PRId64 " = bound + BOOTTIME-MONOTONIC_RAW slack %" PRId64 ")\n",
		       n, rows, edges, bad, worst, worst_allow, slack);
		CU_ASSERT(rows >= 10); /* the job ran > 0.25 s */
	}
}

/*
 * SPM: SQ_WAVES is 0 idle and > 0 under load; each step between two samples,
 * dated by the first sample after it, is at the true edge within the node's
 * bound plus one sample interval (the recording's own interval / sclk).
 */
static void check_spm(struct node *nd, int64_t *edges_out)
{
	int64_t slack = boot_raw_slack();
	for (int n = 0; n < NODES; n++) {
		json_t *lay = NULL;
		/* the sample interval: the layout's interval in cycles at its sclk (the truth's layout line) */
		FILE *tf = fopen(jb_fmt("%s/node%d/truth.jsonl", bed, n), "r");
		char line[8192];
		while (tf && fgets(line, sizeof(line), tf) && !lay) {
			json_t *j = json_loads(line, 0, NULL);
			if (j && json_object_get(j, "layout"))
				lay = json_incref(json_object_get(j, "layout"));
			json_decref(j);
		}
		if (tf)
			fclose(tf);
		CU_ASSERT_PTR_NOT_NULL_FATAL(lay);
		double sclk = json_number_value(json_object_get(lay, "sclk_mhz"));
		int64_t ival = (int64_t)ceil(json_integer_value(json_object_get(lay, "interval")) * 1000.0 / sclk);
		json_decref(lay);
		sqlite3_stmt *st;
		CU_ASSERT_FATAL(sqlite3_prepare_v2(db, "SELECT host_ns, value FROM sample_v WHERE node = ?1 AND "
						   "name = 'SQ_WAVES' ORDER BY host_ns", -1, &st, NULL) == SQLITE_OK);
		sqlite3_bind_int(st, 1, n);
		int samples = 0, edges = 0, bad = 0;
		bool have = false, high = false;
		int64_t worst = 0, worst_allow = 0;
		while (sqlite3_step(st) == SQLITE_ROW) {
			int64_t t = sqlite3_column_int64(st, 0);
			bool h = sqlite3_column_double(st, 1) > 0;
			samples++;
			if (have && h != high) {
				bool tl;
				int64_t te = true_edge(t, &tl), allow = bound_at(&nd[n], t) + ival + slack + 1;
				edges++;
				bad += tl != h || llabs(t - te) > allow;
				CU_ASSERT_EQUAL(tl, h);
				CU_ASSERT(llabs(t - te) <= allow);
				if (llabs(t - te) > llabs(worst)) {
					worst = t - te;
					worst_allow = allow;
				}
			}
			have = true;
			high = h;
		}
		sqlite3_finalize(st);
		edges_out[n] = edges;
		printf("  node%d SPM SQ_WAVES: %d samples (interval %" PRId64 " ns), %d steps at the true edges (%d off);"
		       " worst %+" PRId64 " ns (allowed %" PRId64 ")\n",
		       n, samples, ival, edges, bad, worst, worst_allow);
		CU_ASSERT(edges >= 8);
	}
}

/*
 * The Cray PM series (record --cray, NAME_craypm.csv beside each node's
 * database) in the merged database: every row of every node's CSV, value
 * for value, at its time put on rank 0's clock with the test bed's true
 * offset, within the node's bound.
 */
static void check_pm(struct node *nd)
{
	for (int n = 0; n < NODES; n++) {
		FILE *f = fopen(jb_fmt("%s/out/node%d/spmtap_craypm.csv", bed, n), "r");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		char line[8192];
		int col = -1, rows = 0, same = 0;
		int64_t worst = 0, worst_allow = 0;
		sqlite3_stmt *st;
		CU_ASSERT_FATAL(sqlite3_prepare_v2(db, "SELECT host_ns, value, track FROM sample_v WHERE node = ?1 AND "
						   "name = 'pm.power' ORDER BY host_ns", -1, &st, NULL) == SQLITE_OK);
		sqlite3_bind_int(st, 1, n);
		while (fgets(line, sizeof(line), f)) {
			char *c[64], *p = line;
			int m = 0;
			for (; m < 64 && p; m++) {
				c[m] = p;
				p = strchr(p, ',');
				if (p)
					*p++ = 0;
			}
			if (col < 0) {
				for (int i = 0; i < m; i++)
					if (!strcmp(c[i], "pm.power[W]"))
						col = i;
				CU_ASSERT_FATAL(col > 0);
				continue;
			}
			if (col >= m || !*c[col])
				continue;
			rows++;
			if (sqlite3_step(st) != SQLITE_ROW)
				break;
			int64_t t = sqlite3_column_int64(st, 0), truth = strtoll(c[0], NULL, 10) - nd[n].off_ns;
			int64_t allow = bound_at(&nd[n], t) + 1;
			CU_ASSERT_STRING_EQUAL((const char *)sqlite3_column_text(st, 2), jb_fmt("node%d.pm.power", n));
			same += sqlite3_column_double(st, 1) == strtod(c[col], NULL) && llabs(t - truth) <= allow;
			if (llabs(t - truth) > llabs(worst)) {
				worst = t - truth;
				worst_allow = allow;
			}
		}
		CU_ASSERT(sqlite3_step(st) == SQLITE_DONE); /* nothing more than the CSV */
		sqlite3_finalize(st);
		fclose(f);
		printf("  node%d Cray PM: %d pm.power rows in its CSV, %d in the merged database at the true time with "
		       "the same value; worst %+" PRId64 " ns (allowed %" PRId64 ")\n", n, rows, same, worst, worst_allow);
		CU_ASSERT(rows >= 2);
		CU_ASSERT_EQUAL(same, rows);
	}
}

/* spmtap report MERGED.db --json: the load phase per node with energy, and the job sum of them. */
static void check_report(void)
{
	CU_ASSERT_EQUAL_FATAL(system(jb_fmt("%s/spmtap report %s/merged/job.db --json %s/report.json > %s/report.txt 2>&1",
				       B, bed, bed, bed)), 0);
	json_t *r = json_load_file(jb_fmt("%s/report.json", bed), 0, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	char *txt = json_dumps(r, JSON_COMPACT);
	json_t *phases = json_object_get(r, "phases");
	size_t i;
	json_t *p;
	bool seen = false;
	json_array_foreach(phases, i, p) {
		if (strcmp(json_string_value(json_object_get(p, "name")), "load"))
			continue;
		seen = true;
		json_t *nodes = json_object_get(p, "nodes");
		CU_ASSERT_EQUAL(json_array_size(nodes), NODES);
		double sum = 0;
		size_t k, nnull = 0;
		json_t *c;
		printf("  report, phase load:");
		json_array_foreach(nodes, k, c) {
			double e = json_number_value(json_object_get(c, "energy_j"));
			/*
			 * A node's first load can start before its first energy reading
			 * (its recording began inside the phase): then no number, never 0.
			 */
			CU_ASSERT(json_is_null(json_object_get(c, "energy_j")) || (json_is_number(json_object_get(c, "energy_j")) && e > 0));
			nnull += json_is_null(json_object_get(c, "energy_j"));
			/* the first load phase of that node in the merged database */
			int64_t s = json_integer_value(json_object_get(c, "start_ns")), s_db = -1;
			sqlite3_stmt *st;
			sqlite3_prepare_v2(db, "SELECT min(start_ns) FROM slice_v WHERE node = ?1 AND name = 'load'", -1,
					   &st, NULL);
			sqlite3_bind_int64(st, 1, json_integer_value(json_object_get(c, "node")));
			if (sqlite3_step(st) == SQLITE_ROW)
				s_db = sqlite3_column_int64(st, 0);
			sqlite3_finalize(st);
			CU_ASSERT_EQUAL(s, s_db);
			printf(" node%" PRId64 " %.4f J", (int64_t)json_integer_value(json_object_get(c, "node")), e);
			sum += e;
		}
		double js = json_number_value(json_object_get(json_object_get(p, "job"), "energy_j"));
		printf("; job %.4f J (%zu node(s) without energy)\n", js, nnull);
		CU_ASSERT(nnull < NODES);
		/* a job sum never leaves a node out: none where one node has none */
		if (nnull) {
			CU_ASSERT(json_is_null(json_object_get(json_object_get(p, "job"), "energy_j")));
		} else {
			CU_ASSERT(fabs(js - sum) <= 1e-9 * fabs(sum) + 1e-9);
		}
	}
	if (!seen)
		printf("  report JSON without a load phase: %.400s\n", txt);
	CU_ASSERT(seen);
	free(txt);
	json_decref(r);
}

static void test_e2e(void)
{
	snprintf(bed, sizeof(bed), "%s/e2e", tmp);
	CU_ASSERT_EQUAL_FATAL(system(jb_fmt("mkdir -p %s/app %s/merged", bed, bed)), 0);
	setenv("SPMTAP_EMU_WORKLOAD", "square:period_ms=50,duty=0.5", 1);
	d0 = clock_pair(CLOCK_BOOTTIME, CLOCK_MONOTONIC_RAW);
	const char *rec[] = { jb_fmt("%s/spmtap", B), "--emulate", "mi210", "record", "--job", jb_fmt("%s/ctl", bed), "-d",
			      jb_fmt("%s/out/%%hostname%%", bed), "--spm", "SQ_WAVES", "--interval", "65504", "--smi",
			      "power,energy", "--smi-interval", "10ms", "-f", "sqlite", "--sync-interval", "0.3",
			      "--phases", "emulator", "--cray", "--cray-interval", "50ms", NULL };
	pid_t c = start_bed("rec.log", rec);
	char job[128] = "";
	FILE *pj = popen(jb_fmt("%s/spmtap job env %s/ctl --timeout 90", B, bed), "r");
	if (pj && fgets(job, sizeof(job), pj))
		job[strcspn(job, "\n")] = 0;
	if (pj)
		pclose(pj);
	if (!job[0]) {
		kill(c, SIGTERM);
		wait_st(c);
		if (system(jb_fmt("tail -30 %s/rec.log", bed))) {
		}
		CU_FAIL_FATAL("no job came up (spmtap job env)");
	}
	printf("\n  SPMTAP_JOB=%s\n", job);
	struct pair rb0 = clock_pair(CLOCK_REALTIME, CLOCK_BOOTTIME);
	setenv("SPMTAP_JOB", job, 1);
	const char *app[] = { jb_fmt("%s/tests/helpers/job_marker_app", B), jb_fmt("%s/app", bed), "20", "3000", NULL };
	int ast = wait_st(start_bed("app.log", app));
	unsetenv("SPMTAP_JOB");
	struct pair rb1 = clock_pair(CLOCK_REALTIME, CLOCK_BOOTTIME);
	CU_ASSERT_EQUAL(ast, 0);
	CU_ASSERT_EQUAL(system(jb_fmt("%s/spmtap job stop %s/ctl > /dev/null", B, bed)), 0);
	int st = wait_st(c);
	d1 = clock_pair(CLOCK_BOOTTIME, CLOCK_MONOTONIC_RAW);
	unsetenv("SPMTAP_EMU_WORKLOAD");
	if (st && system(jb_fmt("tail -30 %s/rec.log", bed))) {
	}
	CU_ASSERT_EQUAL_FATAL(st, 0);

	int mst = system(jb_fmt("%s/spmtap merge -d %s/merged -o job -f sqlite %s/out/node0/spmtap.db %s/out/node1/spmtap.db "
			   "%s/out/node2/spmtap.db %s/out/node3/spmtap.db > %s/merge.log 2>&1",
			   B, bed, bed, bed, bed, bed, bed));
	if (mst && system(jb_fmt("cat %s/merge.log", bed))) {
	}
	CU_ASSERT_EQUAL_FATAL(mst, 0);

	struct node nd[NODES];
	for (int n = 0; n < NODES; n++) {
		nd[n].meta = json_load_file(jb_fmt("%s/out/node%d/spmtap_meta.json", bed, n), 0, NULL);
		CU_ASSERT_PTR_NOT_NULL_FATAL(nd[n].meta);
		nd[n].offs = json_object_get(json_object_get(json_object_get(nd[n].meta, "job"), "clock"), "offsets");
		nd[n].off_ns = read_ll(jb_fmt("%s/node%d/offset_ns", bed, n));
		nd[n].mk_err = json_integer_value(json_object_get(json_object_get(nd[n].meta, "markers"),
								  "clock_error_ns"));
	}
	CU_ASSERT_FATAL(sqlite3_open_v2(jb_fmt("%s/merged/job.db", bed), &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
	/* the node table: every node, its rank and host, and its recorded bound (printed) */
	sqlite3_stmt *q;
	CU_ASSERT_FATAL(sqlite3_prepare_v2(db, "SELECT node, rank, hostname, max_bound_ns FROM node ORDER BY node", -1,
					   &q, NULL) == SQLITE_OK);
	int rows = 0;
	while (sqlite3_step(q) == SQLITE_ROW) {
		int n = sqlite3_column_int(q, 0);
		CU_ASSERT_EQUAL(n, rows);
		CU_ASSERT_EQUAL(sqlite3_column_int(q, 1), n);
		CU_ASSERT_STRING_EQUAL((const char *)sqlite3_column_text(q, 2), jb_fmt("node%d", n));
		printf("  node%d: namespace offset %+" PRId64 " ns, max recorded bound %lld ns\n", n, nd[n].off_ns,
		       (long long)sqlite3_column_int64(q, 3));
		rows++;
	}
	sqlite3_finalize(q);
	CU_ASSERT_EQUAL(rows, NODES);

	int64_t nphases[NODES], nedges[NODES];
	check_markers(nd, rb0, rb1);
	check_phases(nd, nphases);
	check_spm(nd, nedges);
	check_pm(nd);
	check_report();
	sqlite3_close(db);
	db = NULL;
	for (int n = 0; n < NODES; n++)
		json_decref(nd[n].meta);
}

static const char *need_kernels(void)
{
	const char *w = jb_need_bed();
	return w ? w : hsa_example_need();
}

/* The (kernel, start_ticks, end_ticks) triples of one line each, sorted, in out (max n); the count. */
static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

#define KMAX 64
static int app_dispatches(int n, char **out)
{
	FILE *f = fopen(jb_fmt("%s/app/node%d.json", bed, n), "r");
	char line[1024];
	int k = 0;
	while (f && fgets(line, sizeof(line), f) && k < KMAX) {
		json_t *j = json_loads(line, 0, NULL);
		if (j && json_is_string(json_object_get(j, "kernel")) &&
		    asprintf(&out[k], "%s %" PRId64 " %" PRId64, json_string_value(json_object_get(j, "kernel")),
			     (int64_t)json_integer_value(json_object_get(j, "start_ts")),
			     (int64_t)json_integer_value(json_object_get(j, "end_ts"))) > 0)
			k++;
		json_decref(j);
	}
	if (f)
		fclose(f);
	qsort(out, (size_t)k, sizeof(*out), by_str);
	return k;
}

/* corr_id,pid,tid,queue_id,packet_index,kernel,grid_x..wg_z,start_ns,end_ns,start_ticks,end_ticks,status */
static int csv_dispatches(int n, char **out, int *unmapped)
{
	FILE *f = fopen(jb_fmt("%s/out/node%d/spmtap_kernels.csv", bed, n), "r");
	char line[1024];
	int k = 0;
	*unmapped = 0;
	while (f && fgets(line, sizeof(line), f) && k < KMAX) {
		char *c[17], *p = line;
		int m = 0;
		for (; m < 17 && p; m++) {
			c[m] = p;
			p = strchr(p, ',');
			if (p)
				*p++ = 0;
		}
		if (m != 17 || !strcmp(c[0], "corr_id"))
			continue;
		*unmapped += !*c[12] || atoi(c[16]) != 0;
		if (asprintf(&out[k], "%s %s %s", c[5], c[14], c[15]) > 0)
			k++;
	}
	if (f)
		fclose(f);
	qsort(out, (size_t)k, sizeof(*out), by_str);
	return k;
}

static void test_kernels(void)
{
	snprintf(bed, sizeof(bed), "%s/kernels", tmp);
	CU_ASSERT_EQUAL_FATAL(system(jb_fmt("mkdir -p %s/app", bed)), 0);
	const char *rec[] = { jb_fmt("%s/spmtap", B), "--emulate", "mi210", "record", "--job", jb_fmt("%s/ctl", bed), "-d",
			      jb_fmt("%s/out/%%hostname%%", bed), "--spm", "SQ_WAVES", "--interval", "65504", "-f", "sqlite",
			      "--sync-interval", "0.3", NULL };
	pid_t c = start_bed("rec.log", rec);
	char job[128] = "";
	FILE *pj = popen(jb_fmt("%s/spmtap job env %s/ctl --timeout 90", B, bed), "r");
	if (pj && fgets(job, sizeof(job), pj))
		job[strcspn(job, "\n")] = 0;
	if (pj)
		pclose(pj);
	if (!job[0]) {
		kill(c, SIGTERM);
		wait_st(c);
		CU_FAIL_FATAL("no job came up (spmtap job env)");
	}
	/* each app rank: its node's emulated GPUs, the tool through HSA_TOOLS_LIB, its dispatches to its own file */
	setenv("SPMTAP_JOB", job, 1);
	setenv("HSA_TOOLS_LIB", jb_fmt("%s/libspmtap-tool.so", B), 1);
	const char *app[] = { "sh", "-c",
			      jb_fmt("exec %s/spmtap emulate mi210 -- %s/hsa_dispatch %s/k.hsaco 2 4 > %s/app/$(hostname).json",
				B, hsa_example_dir(), hsa_example_dir(), bed),
			      NULL };
	int ast = wait_st(start_bed("app.log", app));
	unsetenv("SPMTAP_JOB");
	unsetenv("HSA_TOOLS_LIB");
	CU_ASSERT_EQUAL(ast, 0);
	CU_ASSERT_EQUAL(system(jb_fmt("%s/spmtap job stop %s/ctl > /dev/null", B, bed)), 0);
	int st = wait_st(c);
	if (st && system(jb_fmt("tail -30 %s/rec.log %s/app.log", bed, bed))) {
	}
	CU_ASSERT_EQUAL_FATAL(st, 0);
	printf("\n");
	for (int n = 0; n < NODES; n++) {
		char *a[KMAX], *k[KMAX];
		int unmapped, na = app_dispatches(n, a), nk = csv_dispatches(n, k, &unmapped), same = 0;
		for (int i = 0; i < na && i < nk; i++)
			same += !strcmp(a[i], k[i]);
		printf("  node%d: its app rank reports %d dispatches; its recording has %d, %d of them the same "
		       "(kernel, GPU start/end ticks), %d unmapped or failed\n", n, na, nk, same, unmapped);
		CU_ASSERT_EQUAL(na, 8); /* 2 threads x 4 */
		CU_ASSERT_EQUAL(nk, na);
		CU_ASSERT_EQUAL(same, na);
		CU_ASSERT_EQUAL(unmapped, 0);
		for (int i = 0; i < na; i++)
			free(a[i]);
		for (int i = 0; i < nk; i++)
			free(k[i]);
	}
	/* the job is over: its channels' names are gone */
	for (int n = 0; n < NODES; n++)
		CU_ASSERT(access(jb_fmt("/dev/shm/spmtap-job.%s.node%d.kernels", job, n), F_OK) != 0);
}

int main(int argc, char **argv)
{
	B = testenv_build_dir();
	static const struct testenv_case cases[] = {
		{ "e2e", test_e2e, jb_need_bed },
		{ "kernels", test_kernels, need_kernels },
		{ NULL, NULL, NULL },
	};
	if (!mkdtemp(tmp)) {
		perror(tmp);
		return 1;
	}
	return testenv_remove_tmp(tmp, testenv_run_suite("job_merge", cases, argc, argv));
}
