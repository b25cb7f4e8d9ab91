/* SPDX-License-Identifier: MIT */
/*
 * spmtap record --job on the emulated multi-node test bed (tests/job/node.sh,
 * docs/howto-job.md "Test bed"): `mpirun -np 4`, each rank an emulated node
 * in its own time and UTS namespace whose clocks are off by a known,
 * fractional amount (0, +3.2 s, -1.7 s, +250 ms).  Checked against that
 * truth, not against the code: every recovered offset of a node's
 * CLOCK_BOOTTIME to rank 0 equals rank0 - rankN within the bound_ns stored
 * beside it (each printed; no wall-clock threshold is asserted); the
 * REALTIME anchors carry the emulator's wall-clock skew, so the offsets
 * cannot have come from REALTIME; the application step's markers land in
 * their own node's recording only, at the true instants (bracketed by the
 * machine's CLOCK_REALTIME, which the namespaces do not offset); every stop
 * path (the stop file, SIGUSR1 to mpirun, --duration) stops every node with
 * a complete recording; two ranks on one host name are refused.
 *
 * Plain build only by default: Open MPI is not instrumented, so a report
 * from inside it would be noise, and the record path the ranks run is
 * covered under ASan/TSan by the other suites.  SPMTAP_TEST_JOB_SANITIZED=1
 * runs it in a sanitized build anyway (clean under ASan when tried).
 * Needs root (time namespaces), mpirun and build/spmtap-job.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jobbed.h"
#include "testenv.h"

#define NODES 4
#define APP_REGIONS 20

static char bed[512];
static char tmp[] = "/tmp/spmtap-test-job-XXXXXX";
static const char *B;

/* mpirun -np N tests/job/node.sh BED -- ARGS..., in the background, output to BED/LOG. */
static pid_t start_bed(int n, const char *log, const char *const *args)
{
	const char *argv[64];
	int k = 0;
	char np[16];
	snprintf(np, sizeof(np), "%d", n);
	argv[k++] = "mpirun";
	argv[k++] = "--allow-run-as-root";
	argv[k++] = "--oversubscribe";
	argv[k++] = "-x";
	argv[k++] = "SPMTAP_JOB";
	argv[k++] = "-np";
	argv[k++] = np;
	argv[k++] = "tests/job/node.sh";
	argv[k++] = bed;
	argv[k++] = "--";
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

static void show_log(const char *log)
{
	char *cmd = jb_fmt("grep -v '^spmtap record: \\(GPU\\|cost\\|wrote\\)' %s/%s | tail -30", bed, log);
	if (system(cmd)) {
	}
}

static void new_bed(const char *name)
{
	snprintf(bed, sizeof(bed), "%s/%s", tmp, name);
	if (system(jb_fmt("rm -rf %s && mkdir -p %s/app", bed, bed))) {
	}
}

/* The collector step's record arguments, without a stop. */
#define RECORD_ARGS(ctl, extra)                                                                     \
	{ jb_fmt("%s/spmtap", B), "--emulate", "mi210", "record", "--job", ctl, "-d", jb_fmt("%s/out/%%hostname%%", bed), \
	  "--spm", "SQ_WAVES", "--interval", "65504", "--smi", "power", "--smi-interval", "10ms", "-f",     \
	  "csv,sqlite", "--sync-interval", "0.3", extra, NULL }

static int64_t node_offset(int n)
{
	FILE *f = fopen(jb_fmt("%s/node%d/offset_ns", bed, n), "r");
	long long v = 0;
	if (!f || fscanf(f, "%lld", &v) != 1)
		CU_FAIL("node offset file");
	if (f)
		fclose(f);
	return v;
}

static int64_t offset_at(json_t *offs, int64_t t, int64_t *bound);

static json_t *node_meta(int n)
{
	json_error_t e;
	json_t *m = json_load_file(jb_fmt("%s/out/node%d/spmtap_meta.json", bed, n), 0, &e);
	if (!m)
		fprintf(stderr, "node%d meta: %s\n", n, e.text);
	return m;
}

/*
 * Every node complete and stopped as expected; every offset within its
 * bound of the truth (rank0 - rankN = -offset_N); returns the metas.
 */
static void check_nodes(json_t **metas, const char *rank0_stop)
{
	for (int n = 0; n < NODES; n++) {
		json_t *m = metas[n] = node_meta(n);
		CU_ASSERT_PTR_NOT_NULL_FATAL(m);
		CU_ASSERT(json_is_true(json_object_get(m, "complete")));
		json_t *j = json_object_get(m, "job");
		CU_ASSERT_PTR_NOT_NULL_FATAL(j);
		CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "rank")), n);
		CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "size")), NODES);
		CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "hostname")), jb_fmt("node%d", n));
		CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "launcher")), "mpirun");
		const char *why = json_string_value(json_object_get(j, "stopped_by"));
		CU_ASSERT_PTR_NOT_NULL_FATAL(why);
		if (n == 0) {
			CU_ASSERT_PTR_NOT_NULL(strstr(why, rank0_stop));
		} else {
			CU_ASSERT_STRING_EQUAL(why, "rank 0");
		}
		json_t *clk = json_object_get(j, "clock");
		CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(clk, "clock")), "CLOCK_BOOTTIME");
		CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(clk, "method")), "mpi-min-rtt-pingpong");
		CU_ASSERT_EQUAL(json_integer_value(json_object_get(clk, "reference_rank")), 0);
		json_t *offs = json_object_get(clk, "offsets");
		/* at least the start and the end */
		CU_ASSERT(json_array_size(offs) >= 2);
		int64_t truth = -node_offset(n), prev = INT64_MIN;
		size_t i;
		json_t *o;
		printf("  node%d: truth %+" PRId64 " ns;", n, truth);
		json_array_foreach(offs, i, o) {
			int64_t off = json_integer_value(json_object_get(o, "offset_ns"));
			int64_t bound = json_integer_value(json_object_get(o, "bound_ns"));
			int64_t local = json_integer_value(json_object_get(o, "local_ns"));
			int64_t err = off - truth;
			printf(" [err %+" PRId64 " bound %" PRId64 "]", err, bound);
			CU_ASSERT(llabs(err) <= bound);
			CU_ASSERT(bound >= 0);
			CU_ASSERT(local > prev); /* time-ordered */
			prev = local;
			if (n == 0) {
				CU_ASSERT(off == 0 && bound == 0);
			}
		}
		printf("\n");
	}
	/* One common end: each node's end_ns, on rank 0's clock, is rank 0's end_ns within the node's bound. */
	int64_t end0 = json_integer_value(json_object_get(json_object_get(metas[0], "job"), "end_ns"));
	CU_ASSERT(end0 > 0);
	for (int n = 1; n < NODES; n++) {
		json_t *j = json_object_get(metas[n], "job");
		int64_t end = json_integer_value(json_object_get(j, "end_ns")), bound;
		int64_t ref = end + offset_at(json_object_get(json_object_get(j, "clock"), "offsets"), end, &bound);
		printf("  node%d: ends %+" PRId64 " ns from node0's end on node0's clock (bound %" PRId64 ")\n", n,
		       ref - end0, bound);
		/* converted with the offset of the moment, held/interpolated differently: within both bounds */
		CU_ASSERT(llabs(ref - end0) <= 2 * bound + 2);
	}
	/* The REALTIME anchors carry each node's skew: REALTIME could not have given these offsets. */
	json_t *a0 = json_array_get(json_object_get(json_object_get(metas[0], "job"), "realtime_anchors"), 0);
	for (int n = 1; n < NODES; n++) {
		json_t *a = json_array_get(json_object_get(json_object_get(metas[n], "job"), "realtime_anchors"), 0);
		CU_ASSERT_PTR_NOT_NULL_FATAL(a);
		FILE *f = fopen(jb_fmt("%s/node%d/realtime_skew_ns", bed, n), "r");
		long long skew = 0;
		CU_ASSERT(f && fscanf(f, "%lld", &skew) == 1);
		if (f)
			fclose(f);
		CU_ASSERT(llabs(skew) >= 10000000); /* the test bed skews every node but node0 */
		int64_t d0 = json_integer_value(json_object_get(a0, "realtime_ns")) -
			     json_integer_value(json_object_get(a0, "boottime_ns"));
		int64_t dn = json_integer_value(json_object_get(a, "realtime_ns")) -
			     json_integer_value(json_object_get(a, "boottime_ns"));
		/* REALTIME - BOOTTIME on node n = the machine's - offset_n + skew_n (anchors ms apart: 1 ms is ample) */
		int64_t e = (dn - d0) - (skew - node_offset(n));
		printf("  node%d: REALTIME anchor skewed by %+lld ns as the emulator says (residual %+" PRId64 " ns)\n",
		       n, skew, e);
		CU_ASSERT(llabs(e) < 1000000);
	}
}

static void free_metas(json_t **m)
{
	for (int n = 0; n < NODES; n++)
		json_decref(m[n]);
}

/* CLOCK_REALTIME - CLOCK_BOOTTIME of this machine (= node0's: offset 0), bracketed. */
static void rt_minus_boot(int64_t *lo, int64_t *hi)
{
	struct timespec a, r, b;
	clock_gettime(CLOCK_BOOTTIME, &a);
	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_BOOTTIME, &b);
	int64_t R = r.tv_sec * 1000000000ll + r.tv_nsec, A = a.tv_sec * 1000000000ll + a.tv_nsec,
		Bt = b.tv_sec * 1000000000ll + b.tv_nsec;
	*lo = R - Bt;
	*hi = R - A;
}

/* offset(local) per docs/formats/meta-job.md: linear between entries, held outside; bound the larger neighbour's. */
static int64_t offset_at(json_t *offs, int64_t t, int64_t *bound)
{
	size_t n = json_array_size(offs);
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(offs, i);
		int64_t l = json_integer_value(json_object_get(o, "local_ns"));
		if (t < l || i + 1 == n) {
			json_t *p = i ? json_array_get(offs, i - 1) : o;
			if (t >= l) /* after the last */
				p = o;
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

/*
 * The app step's markers: node n's recording holds exactly its own ranks'
 * regions, and each begin/end, put on rank 0's clock with the node's
 * offsets, lies between the two machine REALTIME reads around the call.
 */
static void check_markers(json_t **metas, int64_t c_lo, int64_t c_hi)
{
	for (int n = 0; n < NODES; n++) {
		sqlite3 *db = NULL;
		CU_ASSERT_FATAL(sqlite3_open_v2(jb_fmt("%s/out/node%d/spmtap.db", bed, n), &db, SQLITE_OPEN_READONLY,
						NULL) == SQLITE_OK);
		json_t *offs = json_object_get(json_object_get(json_object_get(metas[n], "job"), "clock"), "offsets");
		int64_t mk_err = json_integer_value(
			json_object_get(json_object_get(metas[n], "markers"), "clock_error_ns"));
		FILE *f = fopen(jb_fmt("%s/app/node%d.txt", bed, n), "r");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		sqlite3_stmt *st;
		CU_ASSERT_FATAL(sqlite3_prepare_v2(db, "SELECT name, start_ns, end_ns FROM slice WHERE category = "
						       "'marker' ORDER BY start_ns", -1, &st, NULL) == SQLITE_OK);
		int rows = 0, inside = 0;
		int64_t worst = 0;
		while (sqlite3_step(st) == SQLITE_ROW) {
			const char *name = (const char *)sqlite3_column_text(st, 0);
			CU_ASSERT_STRING_EQUAL(name, jb_fmt("node%d/r%d", n, rows));
			for (int e = 0; e < 2; e++) {
				char kind[8];
				long idx;
				long long r0, r1;
				if (fscanf(f, "%7s %ld %lld %lld", kind, &idx, &r0, &r1) != 4) {
					CU_FAIL("app truth file short");
					break;
				}
				int64_t local = sqlite3_column_int64(st, 1 + e), bound;
				int64_t ref = local + offset_at(offs, local, &bound);
				/* rank 0's BOOTTIME is the machine's: REALTIME - C */
				int64_t lo = r0 - c_hi - bound - mk_err, hi = r1 - c_lo + bound + mk_err;
				bool ok = ref >= lo && ref <= hi;
				inside += ok;
				int64_t miss = ref < lo ? lo - ref : ref > hi ? ref - hi : 0;
				if (miss > worst)
					worst = miss;
				CU_ASSERT(ok);
			}
			rows++;
		}
		sqlite3_finalize(st);
		sqlite3_close(db);
		fclose(f);
		printf("  node%d: %d marker regions, all its own, %d of %d edges within [REALTIME before, after] +- bound"
		       " (worst miss %" PRId64 " ns)\n", n, rows, inside, 2 * rows, worst);
		CU_ASSERT_EQUAL(rows, APP_REGIONS);
	}
}

static void check_summary(void)
{
	json_t *s = json_load_file(jb_fmt("%s/ctl/summary.json", bed), 0, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	json_t *nodes = json_object_get(s, "nodes");
	CU_ASSERT_EQUAL(json_array_size(nodes), NODES);
	size_t i;
	json_t *n;
	json_array_foreach(nodes, i, n) {
		CU_ASSERT_EQUAL(json_integer_value(json_object_get(n, "exit")), 0);
		CU_ASSERT(json_integer_value(json_object_get(n, "samples")) > 0);
		/* "lost" is the node's own SPM accounting (a loaded machine may drop): not this suite's truth */
		CU_ASSERT_PTR_NOT_NULL(json_object_get(n, "lost"));
	}
	json_decref(s);
}

/* `spmtap job env DIR`: the job id once every node records. */
static void job_env(char *out, size_t n)
{
	FILE *p = popen(jb_fmt("%s/spmtap job env %s/ctl --timeout 90", B, bed), "r");
	out[0] = 0;
	if (p && fgets(out, (int)n, p))
		out[strcspn(out, "\n")] = 0;
	if (p)
		pclose(p);
}

/* job_env, or (no job came up) the collector step ended and its log shown: false. */
static bool job_env_or_stop(pid_t c, char *job, size_t n)
{
	job_env(job, n);
	if (job[0])
		return true;
	kill(c, SIGTERM);
	wait_st(c);
	show_log("rec.log");
	CU_FAIL("no job came up (spmtap job env)");
	return false;
}

/* The stop file, with an application step whose markers join each node's recording. */
static void test_stop_file_markers(void)
{
	new_bed("file");
	const char *rec[] = RECORD_ARGS(jb_fmt("%s/ctl", bed), NULL);
	pid_t c = start_bed(NODES, "rec.log", rec);
	char job[128];
	if (!job_env_or_stop(c, job, sizeof(job)))
		return;
	printf("\n  SPMTAP_JOB=%s\n", job);
	int64_t c_lo0, c_hi0, c_lo1, c_hi1;
	rt_minus_boot(&c_lo0, &c_hi0);
	setenv("SPMTAP_JOB", job, 1);
	const char *app[] = { jb_fmt("%s/tests/helpers/job_marker_app", B), jb_fmt("%s/app", bed), "20", "3000", NULL };
	int ast = wait_st(start_bed(NODES, "app.log", app));
	unsetenv("SPMTAP_JOB");
	rt_minus_boot(&c_lo1, &c_hi1);
	CU_ASSERT_EQUAL(ast, 0);
	CU_ASSERT_EQUAL(system(jb_fmt("%s/spmtap job stop %s/ctl", B, bed)), 0);
	int st = wait_st(c);
	if (st)
		show_log("rec.log");
	CU_ASSERT_EQUAL_FATAL(st, 0);
	json_t *m[NODES];
	check_nodes(m, "stop file");
	check_markers(m, c_lo0 < c_lo1 ? c_lo0 : c_lo1, c_hi0 > c_hi1 ? c_hi0 : c_hi1);
	check_summary();
	free_metas(m);
	/* the job is over: its marker names are gone, and `job env` does not hand it out */
	CU_ASSERT(access(jb_fmt("%s/ctl/job.json", bed), F_OK) != 0);
	for (int n = 0; n < NODES; n++)
		CU_ASSERT(access(jb_fmt("/dev/shm/spmtap-job.%s.node%d", job, n), F_OK) != 0);
}

/* SIGUSR1 to mpirun: forwarded to every rank (SIGINT/SIGTERM are not); rank 0 stops them together. */
static void test_stop_usr1(void)
{
	new_bed("usr1");
	const char *rec[] = RECORD_ARGS(jb_fmt("%s/ctl", bed), NULL);
	pid_t c = start_bed(NODES, "rec.log", rec);
	char job[128];
	if (!job_env_or_stop(c, job, sizeof(job)))
		return;
	CU_ASSERT_EQUAL(kill(c, SIGUSR1), 0);
	int st = wait_st(c);
	if (st)
		show_log("rec.log");
	CU_ASSERT_EQUAL_FATAL(st, 0);
	printf("\n");
	json_t *m[NODES];
	check_nodes(m, "SIGUSR1");
	check_summary();
	free_metas(m);
}

/* rank 0's --duration: every node ends at one instant of rank 0's clock. */
static void test_duration(void)
{
	new_bed("duration");
	const char *rec[] = RECORD_ARGS(jb_fmt("%s/ctl", bed), "--duration");
	const char *args[32];
	int k = 0;
	for (; rec[k]; k++)
		args[k] = rec[k];
	args[k++] = "1.5";
	args[k] = NULL;
	int st = wait_st(start_bed(NODES, "rec.log", args));
	if (st)
		show_log("rec.log");
	CU_ASSERT_EQUAL_FATAL(st, 0);
	printf("\n");
	json_t *m[NODES];
	check_nodes(m, "--duration");
	check_summary();
	free_metas(m);
}

/* Two ranks on one host name (no namespaces): refused before any device is touched. */
static void test_refuse_shared_host(void)
{
	new_bed("shared");
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "mpirun --allow-run-as-root --oversubscribe -np 2 %s/spmtap record --job %s/ctl "
		 "-d %s/out --smi power --duration 1 > %s/log 2>&1", B, bed, bed, bed);
	int st = system(cmd);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	CU_ASSERT_EQUAL(system(jb_fmt("grep -q 'run one rank per node' %s/log", bed)), 0);
	CU_ASSERT(access(jb_fmt("%s/out", bed), F_OK) != 0); /* nothing recorded */
}

int main(int argc, char **argv)
{
	B = testenv_build_dir();
	static const struct testenv_case cases[] = {
		{ "refuse_shared_host", test_refuse_shared_host, jb_need_bed },
		{ "stop_file_markers", test_stop_file_markers, jb_need_bed },
		{ "stop_usr1", test_stop_usr1, jb_need_bed },
		{ "duration", test_duration, jb_need_bed },
		{ NULL, NULL, NULL },
	};
	if (!mkdtemp(tmp)) {
		perror(tmp);
		return 1;
	}
	return testenv_remove_tmp(tmp, testenv_run_suite("job", cases, argc, argv));
}
