/* SPDX-License-Identifier: MIT */
/*
 * spmtap merge (collector/analysis/merge*.c, docs/cli/spmtap-merge.md)
 * against the truth of synthetic node recordings (tests/lib/synjob.h:
 * every node its own CLOCK_BOOTTIME origin and a drifting offset, phases
 * at common reference instants):
 *  - clock: the mapping by itself (interpolated, held outside, bounds);
 *  - truth: phase edges in the merged SQLite equal the true reference edges
 *    within each node's bound (and a held offset would miss them: the
 *    drift is larger than the bound, so interpolation is what passes);
 *    sample counts, sums and times per node equal the truth; the node
 *    table carries the clock method and every bound;
 *  - csv_inputs: CSV recordings merge to the same rows as SQLite ones;
 *  - perfetto: the trace parses by Perfetto's rules, one process per node
 *    ("nodeK (rank K)"), every counter track under its node's process with
 *    the node's samples (counts and sums equal the truth);
 *  - report: the job report's energy per node and phase is the synthetic
 *    power x duration, its job sum the nodes' sum, SQ_WAVES the level x
 *    samples; the phases' starts line up across nodes within the bounds;
 *  - refusals: two recordings of one rank, a recording without a job object
 *    among job recordings (and --allow-unaligned), a truncated CSV (and
 *    --accept-truncated), an unreadable path, an output over an input,
 *    more than 16 recordings without --serial;
 *  - replace: a second merge replaces the earlier set as record does, a
 *    failed one leaves it byte for byte;
 *  - mpi: spmtap-merge-mpi under mpirun -np 2 and 3 writes the same SQLite
 *    rows as the serial merge (skipped in sanitized builds: OpenMPI is not
 *    instrumented);
 *  - craypm: a NAME_craypm.csv beside each node's recording (SQLite and CSV
 *    inputs) becomes the node's own stream (nodeK.pm.power), every row at its
 *    true reference time, every value, an empty cell missing.
 */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/analysis/merge.h"
#include "collector/analysis/report_job.h"
#include "collector/proto/perfetto_trace.pb-c.h"
#include "files.h"
#include "pftrace.h"
#include "synjob.h"
#include "testenv.h"

#define NODES 4
#define SECONDS 1.0
#define SPM_HZ 5000.0
#define SMI_HZ 1000.0
#define PHASES 4

static char dir[] = "/tmp/spmtap-test-merge-XXXXXX";
static char job[PATH_MAX];     /* the synthetic job, CSV and SQLite */
static char merged[PATH_MAX];  /* its serial merge from the SQLite inputs */
static json_t *truth;

/* Run a shell command, its output into dir/out.txt; the exit status. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	char full[8400];
	snprintf(full, sizeof(full), "%s >'%s/out.txt' 2>&1", cmd, dir);
	int st = system(full);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static bool out_has(const char *s)
{
	char *t = tf_slurp(testenv_path(dir, "out.txt"), NULL);
	bool yes = t && strstr(t, s);
	if (!yes)
		fprintf(stderr, "\nexpected \"%s\" in:\n%s\n", s, t ? t : "(nothing)");
	free(t);
	return yes;
}

static const char *spmtap(void)
{
	static char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/spmtap", testenv_build_dir());
	return p;
}

/* The SQLite inputs "J/node0/rec.db J/node1/rec.db ..." (or the CSV directories). */
static const char *inputs(const char *jdir, bool csv, unsigned n)
{
	static char s[8192];
	size_t k = 0;
	s[0] = 0;
	for (unsigned i = 0; i < n; i++)
		k += (size_t)snprintf(s + k, sizeof(s) - k, " '%s/node%u%s'", jdir, i, csv ? "" : "/rec.db");
	return s;
}

static int64_t q_int(sqlite3 *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int64_t q_int(sqlite3 *h, const char *fmt, ...)
{
	char sql[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	sqlite3_stmt *st = NULL;
	int64_t v = INT64_MIN;
	if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	else
		fprintf(stderr, "\nquery failed: %s: %s\n", sql, sqlite3_errmsg(h));
	sqlite3_finalize(st);
	return v;
}

static double q_real(sqlite3 *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static double q_real(sqlite3 *h, const char *fmt, ...)
{
	char sql[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	sqlite3_stmt *st = NULL;
	double v = NAN;
	if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return v;
}

static json_t *tnode(unsigned k)
{
	return json_array_get(json_object_get(truth, "nodes"), k);
}

static int64_t tint(json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

/* The true reference time of node k's SPM sample i (synjob.c's clock, real-valued). */
static double true_ref(unsigned k, uint64_t i)
{
	double period = 1e9 / SPM_HZ;
	int64_t l = synjob_origin(k) + llround((double)i * period);
	return (double)SYNJOB_T0 + (double)(l - synjob_origin(k)) * (1.0 + synjob_drift(k));
}

/* The mapping itself (job_iface.md): linear between entries, held outside, the larger neighbouring bound. */
static void test_clock(void)
{
	json_t *m = json_loads("{\"job\":{\"rank\":1,\"clock\":{\"method\":\"mpi-min-rtt-pingpong\",\"offsets\":["
			       "{\"local_ns\":1000,\"offset_ns\":500,\"bound_ns\":10,\"rtt_ns\":20},"
			       "{\"local_ns\":2000,\"offset_ns\":700,\"bound_ns\":30,\"rtt_ns\":60},"
			       "{\"local_ns\":4000,\"offset_ns\":-100,\"bound_ns\":20,\"rtt_ns\":40}]}}}",
			       0, NULL);
	CU_ASSERT_FATAL(m != NULL);
	struct mg_clock c;
	char err[256];
	CU_ASSERT_FATAL(mg_clock_parse(m, &c, err, sizeof(err)) == 0);
	int64_t b;
	CU_ASSERT_EQUAL(mg_clock_map(&c, 0, &b), 500); /* held before the first */
	CU_ASSERT_EQUAL(b, 10);
	CU_ASSERT_EQUAL(mg_clock_map(&c, 1500, &b), 1500 + 600);
	CU_ASSERT_EQUAL(b, 30);
	CU_ASSERT_EQUAL(mg_clock_map(&c, 3000, &b), 3000 + 300);
	CU_ASSERT_EQUAL(b, 30);
	CU_ASSERT_EQUAL(mg_clock_map(&c, 2000, NULL), 2700);
	CU_ASSERT_EQUAL(mg_clock_map(&c, 9000, &b), 9000 - 100); /* held after the last */
	CU_ASSERT_EQUAL(b, 20);
	CU_ASSERT_EQUAL(c.max_bound_ns, 30);
	CU_ASSERT_STRING_EQUAL(c.method, "mpi-min-rtt-pingpong");
	mg_clock_free(&c);
	json_decref(m);
	/* no job object: offset 0, bound unknown; offsets out of order: refused */
	m = json_loads("{\"hostname\":\"x\"}", 0, NULL);
	CU_ASSERT(mg_clock_parse(m, &c, err, sizeof(err)) == 0 && mg_clock_map(&c, 123, &b) == 123 && b == -1);
	CU_ASSERT_STRING_EQUAL(c.method, "none (unaligned)");
	mg_clock_free(&c);
	json_decref(m);
	m = json_loads("{\"job\":{\"clock\":{\"offsets\":[{\"local_ns\":9,\"offset_ns\":0,\"bound_ns\":1},"
		       "{\"local_ns\":5,\"offset_ns\":0,\"bound_ns\":1}]}}}", 0, NULL);
	CU_ASSERT(mg_clock_parse(m, &c, err, sizeof(err)) < 0 && strstr(err, "time order"));
	json_decref(m);
}

static void test_truth(void)
{
	sqlite3 *h = NULL;
	CU_ASSERT_FATAL(sqlite3_open_v2(merged, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
	CU_ASSERT_EQUAL(q_int(h, "SELECT count(*) FROM node"), NODES);
	bool held_would_fail = false;
	for (unsigned k = 0; k < NODES; k++) {
		json_t *t = tnode(k);
		int64_t bound = tint(t, "bound_ns");
		/* the node table: rank, host, method, bound */
		CU_ASSERT_EQUAL(q_int(h, "SELECT rank FROM node WHERE node = %u", k), k);
		CU_ASSERT_EQUAL(q_int(h, "SELECT max_bound_ns FROM node WHERE node = %u", k), bound);
		CU_ASSERT_EQUAL(q_int(h, "SELECT count(*) FROM node WHERE node = %u AND hostname = 'node%u' AND "
				      "clock_method = 'mpi-min-rtt-pingpong'", k, k), 1);
		/* phase edges: the true reference edges within the node's bound */
		size_t p;
		json_t *ph;
		json_array_foreach(json_object_get(truth, "phases"), p, ph)
		{
			const char *name = json_string_value(json_object_get(ph, "name"));
			int64_t s = q_int(h, "SELECT start_ns FROM slice_v WHERE node = %u AND name = '%s'", k, name);
			int64_t e = q_int(h, "SELECT end_ns FROM slice_v WHERE node = %u AND name = '%s'", k, name);
			int64_t ds = llabs(s - tint(ph, "start_ns")), de = llabs(e - tint(ph, "end_ns"));
			if (ds > bound || de > bound)
				fprintf(stderr, "\nnode %u %s: edges off by %lld / %lld ns, bound %lld\n", k, name,
					(long long)ds, (long long)de, (long long)bound);
			CU_ASSERT(ds <= bound && de <= bound);
			/* what a held (first) offset would give: the drift over the phase's distance */
			double held = fabs(synjob_drift(k)) * (double)(tint(ph, "end_ns") - SYNJOB_T0);
			if (held > (double)bound)
				held_would_fail = true;
		}
		/* samples: counts, sums, times against the truth */
		int64_t spm = q_int(h, "SELECT id FROM stream WHERE node = %u AND source = 'spm'", k);
		int64_t smi = q_int(h, "SELECT id FROM stream WHERE node = %u AND source = 'smi'", k);
		CU_ASSERT_EQUAL(q_int(h, "SELECT count(*) FROM samples_%lld", (long long)spm), tint(t, "spm_n"));
		CU_ASSERT_EQUAL(q_int(h, "SELECT sum(v0) FROM samples_%lld", (long long)spm), tint(t, "sum_waves"));
		CU_ASSERT_EQUAL(q_int(h, "SELECT sum(v1) FROM samples_%lld", (long long)spm), tint(t, "sum_cycles"));
		CU_ASSERT_EQUAL(q_int(h, "SELECT count(*) FROM samples_%lld", (long long)smi), tint(t, "smi_n"));
		double sp = q_real(h, "SELECT sum(v1) FROM samples_%lld", (long long)smi);
		CU_ASSERT_DOUBLE_EQUAL(sp, json_real_value(json_object_get(t, "sum_power")), 1e-6);
		double le = q_real(h, "SELECT v0 FROM samples_%lld ORDER BY host_ns DESC LIMIT 1", (long long)smi);
		CU_ASSERT_DOUBLE_EQUAL(le, json_real_value(json_object_get(t, "last_energy")), 1e-9);
		uint64_t n = (uint64_t)tint(t, "spm_n");
		uint64_t idx[] = { 0, n / 3, n / 2, n - 1 };
		for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++) {
			int64_t got = q_int(h, "SELECT host_ns FROM samples_%lld WHERE v1 = %llu", (long long)spm,
					    (unsigned long long)idx[i]);
			double d = fabs((double)got - true_ref(k, idx[i]));
			if (d > 2)
				fprintf(stderr, "\nnode %u sample %llu: %lld, true %.1f\n", k, (unsigned long long)idx[i],
					(long long)got, true_ref(k, idx[i]));
			CU_ASSERT(d <= 2); /* integer offsets and rounding: within 2 ns of the true time */
		}
	}
	/* the synthetic drift is there to be interpolated: a held offset would break the bound */
	CU_ASSERT(held_would_fail);
	/* the clock method and bounds are in the file's metadata too */
	CU_ASSERT_EQUAL(q_int(h, "SELECT json_extract(value, '$.merged.max_bound_ns') FROM meta WHERE key = "
			      "'recording_meta'"), synjob_bound(NODES - 1));
	sqlite3_close(h);
}

/*
 * Every table of a and b holds the same rows (both directions of EXCEPT).
 * csv: b was merged from CSV inputs, whose phases file has no category,
 * thread or pid: slices compare by node, edges and name.
 */
static bool same_rows(const char *a, const char *b, bool csv)
{
	sqlite3 *h = NULL;
	if (sqlite3_open_v2(a, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		return false;
	char sql[PATH_MAX + 64];
	snprintf(sql, sizeof(sql), "ATTACH '%s' AS b", b);
	bool ok = sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK;
	const char *fixed[] = { "node", "stream", "metric", "slice", "kernel_dispatch" };
	for (size_t i = 0; ok && i < 5; i++) {
		const char *cols = !strcmp(fixed[i], "node")		      ? "node, hostname, rank, clock_method, max_bound_ns"
				   : csv && !strcmp(fixed[i], "slice") ? "node, start_ns, end_ns, name"
								       : "*";
		int64_t d = q_int(h, "SELECT (SELECT count(*) FROM (SELECT %s FROM main.%s EXCEPT SELECT %s FROM b.%s)) + "
				     "(SELECT count(*) FROM (SELECT %s FROM b.%s EXCEPT SELECT %s FROM main.%s))",
				  cols, fixed[i], cols, fixed[i], cols, fixed[i], cols, fixed[i]);
		if (d)
			fprintf(stderr, "\n%s: %lld rows differ between %s and %s\n", fixed[i], (long long)d, a, b);
		ok = d == 0;
	}
	int64_t ns = q_int(h, "SELECT count(*) FROM stream");
	ok = ok && ns > 0 && ns == q_int(h, "SELECT count(*) FROM b.stream");
	for (int64_t i = 1; ok && i <= ns; i++) {
		int64_t d = q_int(h, "SELECT (SELECT count(*) FROM (SELECT * FROM main.samples_%lld EXCEPT SELECT * FROM "
				     "b.samples_%lld)) + (SELECT count(*) FROM (SELECT * FROM b.samples_%lld EXCEPT "
				     "SELECT * FROM main.samples_%lld))",
				  (long long)i, (long long)i, (long long)i, (long long)i);
		int64_t n = q_int(h, "SELECT count(*) FROM main.samples_%lld", (long long)i);
		if (d || n != q_int(h, "SELECT count(*) FROM b.samples_%lld", (long long)i)) {
			fprintf(stderr, "\nsamples_%lld differ between %s and %s\n", (long long)i, a, b);
			ok = false;
		}
	}
	sqlite3_close(h);
	return ok;
}

static void test_csv_inputs(void)
{
	CU_ASSERT_EQUAL_FATAL(sh("'%s' merge -d '%s' -o fromcsv -f sqlite %s", spmtap(), dir, inputs(job, true, NODES)), 0);
	CU_ASSERT(same_rows(merged, testenv_path(dir, "fromcsv.db"), true));
}

static void test_perfetto(void)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/m.pftrace", dir);
	/* the tracks: processes (one per node) and every track's parent */
	size_t len;
	uint8_t *b = (uint8_t *)tf_slurp(p, &len);
	CU_ASSERT_FATAL(b != NULL);
	Perfetto__Protos__Trace *t = perfetto__protos__trace__unpack(NULL, len, b);
	free(b);
	CU_ASSERT_FATAL(t != NULL);
	enum { MAXT = 256 };
	uint64_t uuid[MAXT], parent[MAXT];
	int pid[MAXT];
	size_t nt = 0, nproc = 0;
	for (size_t i = 0; i < t->n_packet; i++) {
		Perfetto__Protos__TrackDescriptor *d = t->packet[i]->track_descriptor;
		if (!d || nt == MAXT)
			continue;
		uuid[nt] = d->uuid;
		parent[nt] = d->has_parent_uuid ? d->parent_uuid : 0;
		pid[nt] = d->process ? d->process->pid : 0;
		if (d->process) {
			char want[64];
			snprintf(want, sizeof(want), "node%d (rank %d)", d->process->pid - 1, d->process->pid - 1);
			CU_ASSERT_STRING_EQUAL(d->process->process_name, want);
			nproc++;
		}
		nt++;
	}
	perfetto__protos__trace__free_unpacked(t, NULL);
	CU_ASSERT_EQUAL(nproc, NODES);
	/* counter tracks, as trace_processor resolves them */
	static struct pft_counter c[MAXT];
	int n = pft_counters(p, c, MAXT);
	CU_ASSERT_EQUAL_FATAL(n, NODES * 4);
	uint64_t spm_n[NODES] = { 0 };
	double waves[NODES] = { 0 };
	for (int i = 0; i < n; i++) {
		/* the node: the process above the track */
		uint64_t u = c[i].uuid;
		int node = -1;
		for (int hop = 0; hop < 8 && node < 0 && u; hop++) {
			size_t j = 0;
			while (j < nt && uuid[j] != u)
				j++;
			if (j == nt)
				break;
			if (pid[j])
				node = pid[j] - 1;
			u = parent[j];
		}
		CU_ASSERT_FATAL(node >= 0 && node < NODES);
		if (strstr(c[i].name, "SQ_WAVES")) {
			spm_n[node] += c[i].n;
			waves[node] += c[i].sum;
		}
	}
	for (unsigned k = 0; k < NODES; k++) {
		CU_ASSERT_EQUAL(spm_n[k], (uint64_t)tint(tnode(k), "spm_n"));
		CU_ASSERT_DOUBLE_EQUAL(waves[k], (double)tint(tnode(k), "sum_waves"), 0.5);
	}
}

static void test_report(void)
{
	struct rj_report *r = NULL;
	char err[512];
	CU_ASSERT_FATAL(rj_load(merged, &r, err, sizeof(err)) == 0);
	CU_ASSERT_EQUAL(r->nnode, NODES);
	CU_ASSERT_EQUAL_FATAL(r->nphase, PHASES);
	CU_ASSERT(r->ncounter == 2 && !strcmp(r->counter[0], "SQ_WAVES"));
	double len_s = SECONDS / PHASES;
	for (unsigned p = 0; p < PHASES; p++) {
		const struct rj_phase *ph = &r->phase[p];
		char name[16];
		snprintf(name, sizeof(name), "phase%u", p);
		CU_ASSERT_STRING_EQUAL(ph->name, name);
		CU_ASSERT_EQUAL_FATAL(ph->ncell, NODES);
		/* the phases line up across nodes: their starts within the largest bound */
		CU_ASSERT(ph->start_spread_ns <= synjob_bound(NODES - 1));
		double sum = 0;
		for (unsigned k = 0; k < NODES; k++) {
			const struct rj_cell *c = &ph->cell[k];
			double watts = 50.0 + 10.0 * p + k;
			/* the power steps inside one sensor period at each edge: at most one period's difference */
			if (fabs(c->energy_j - watts * len_s) > 10.0 / SMI_HZ + 1e-9)
				fprintf(stderr, "\n%s node %u: %.6f J, expected %.6f\n", name, k, c->energy_j, watts * len_s);
			CU_ASSERT_DOUBLE_EQUAL(c->energy_j, watts * len_s, 10.0 / SMI_HZ + 1e-9);
			sum += c->energy_j;
			double level = 100.0 * (p + 1) + k;
			CU_ASSERT(c->samples >= (uint64_t)(SPM_HZ * len_s) - 1 && c->samples <= (uint64_t)(SPM_HZ * len_s) + 1);
			CU_ASSERT_DOUBLE_EQUAL(c->counter[0], level * (double)c->samples, 100.0 + 1e-9);
		}
		CU_ASSERT_DOUBLE_EQUAL(ph->energy_j, sum, 1e-9);
	}
	rj_free(r);
	/* the command prints it, with every node's bound */
	CU_ASSERT_EQUAL(sh("'%s' report '%s'", spmtap(), merged), 0);
	CU_ASSERT(out_has("1.800 us") && out_has("(sum over nodes)") && out_has("phase phase3: 4 node(s)"));
	/* and as JSON: the job's energy is the nodes' sum */
	char jp[PATH_MAX];
	snprintf(jp, sizeof(jp), "%s/job.json", dir);
	CU_ASSERT_EQUAL(sh("'%s' report '%s' --json '%s'", spmtap(), merged, jp), 0);
	json_error_t je;
	json_t *j = json_load_file(jp, 0, &je);
	CU_ASSERT_FATAL(j != NULL);
	json_t *p1 = json_array_get(json_object_get(j, "phases"), 1);
	double s1 = 0;
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(p1, "nodes"), i, c)
	s1 += json_real_value(json_object_get(c, "energy_j"));
	CU_ASSERT_EQUAL(json_array_size(json_object_get(p1, "nodes")), NODES);
	CU_ASSERT_DOUBLE_EQUAL(json_real_value(json_object_get(json_object_get(p1, "job"), "energy_j")), s1, 1e-9);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_array_get(json_object_get(j, "nodes"), 3),
							   "max_bound_ns")), synjob_bound(3));
	json_decref(j);
	/* one node through the single-recording report and plot */
	CU_ASSERT_EQUAL(sh("'%s' report '%s' --node 2", spmtap(), merged), 0);
	CU_ASSERT(out_has("phase2"));
	CU_ASSERT_EQUAL(sh("'%s' plot '%s' --node 1 -o '%s/n1.svg'", spmtap(), merged, dir), 0);
	CU_ASSERT_NOT_EQUAL(sh("'%s' plot '%s' -o '%s/all.svg'", spmtap(), merged, dir), 0);
	CU_ASSERT(out_has("--node N"));
}

static void test_refusals(void)
{
	/* two recordings of one rank */
	CU_ASSERT_EQUAL(sh("'%s' merge -d '%s' -o r1 '%s/node1/rec.db' '%s/node1'", spmtap(), dir, job, job), 1);
	CU_ASSERT(out_has("are both rank 1"));
	CU_ASSERT(access(testenv_path(dir, "r1.db"), F_OK) != 0);
	/* a recording without a job object among job recordings */
	char nj[PATH_MAX];
	snprintf(nj, sizeof(nj), "%s/nojob", dir);
	struct synjob j = { .dir = nj, .nodes = 2, .seconds = 0.2, .spm_hz = 1000, .smi_hz = 100, .phases = 2,
			    .sqlite = 1, .no_job_node = 1 };
	CU_ASSERT_FATAL(synjob_make(&j) == 0);
	CU_ASSERT_EQUAL(sh("'%s' merge -d '%s' -o r2 %s", spmtap(), dir, inputs(nj, false, 2)), 1);
	CU_ASSERT(out_has("has no \"job\" object") && out_has("--allow-unaligned"));
	CU_ASSERT_EQUAL(sh("'%s' merge -d '%s' -o r2 --allow-unaligned %s", spmtap(), dir, inputs(nj, false, 2)), 0);
	CU_ASSERT(out_has("unaligned"));
	sqlite3 *h = NULL;
	CU_ASSERT_FATAL(sqlite3_open_v2(testenv_path(dir, "r2.db"), &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
	CU_ASSERT_EQUAL(q_int(h, "SELECT count(*) FROM node WHERE rank IS NULL AND max_bound_ns IS NULL AND "
				 "clock_method = 'none (unaligned)'"), 1);
	sqlite3_close(h);
	/* a truncated CSV: its last row cut */
	char cut[PATH_MAX];
	snprintf(cut, sizeof(cut), "%s/cut", dir);
	struct synjob c = { .dir = cut, .nodes = 2, .seconds = 0.2, .spm_hz = 1000, .smi_hz = 100, .phases = 2,
			    .csv = 1, .no_job_node = -1 };
	CU_ASSERT_FATAL(synjob_make(&c) == 0);
	char f[PATH_MAX + 32];
	snprintf(f, sizeof(f), "%s/node1/rec_spm.csv", cut);
	struct stat st;
	CU_ASSERT_FATAL(stat(f, &st) == 0 && truncate(f, st.st_size - 7) == 0);
	CU_ASSERT_EQUAL(sh("'%s' merge -d '%s' -o r3 %s", spmtap(), dir, inputs(cut, true, 2)), 1);
	CU_ASSERT(out_has("node1: truncated recording") && out_has("--accept-truncated"));
	CU_ASSERT(access(testenv_path(dir, "r3.db"), F_OK) != 0 && access(testenv_path(dir, "r3.db.part"), F_OK) != 0);
	CU_ASSERT_EQUAL(sh("'%s' merge -d '%s' -o r3 --accept-truncated %s", spmtap(), dir, inputs(cut, true, 2)), 0);
	CU_ASSERT(out_has("(truncated)"));
	/* unreadable: a path that is not there, a meta file that is not JSON */
	CU_ASSERT_EQUAL(sh("'%s' merge -d '%s' -o r4 '%s/node0' '%s/nowhere'", spmtap(), dir, job, dir), 1);
	CU_ASSERT(out_has("nowhere"));
	snprintf(f, sizeof(f), "%s/node0/rec_meta.json", cut);
	FILE *fp = fopen(f, "w");
	CU_ASSERT_FATAL(fp != NULL);
	fputs("{\"complete\": tr", fp);
	fclose(fp);
	CU_ASSERT_EQUAL(sh("'%s' merge -d '%s' -o r4 %s", spmtap(), dir, inputs(cut, true, 2)), 1);
	CU_ASSERT(out_has("node0: unreadable"));
	/* an output over an input */
	CU_ASSERT_EQUAL(sh("'%s' merge -d '%s/node0' -o rec '%s/node0/rec.db' '%s/node1/rec.db'", spmtap(), job, job,
			   job), 1);
	CU_ASSERT(out_has("would replace the input"));
	/* above the MPI threshold without --serial */
	char many[8192] = "";
	for (int i = 0; i < 17; i++)
		strcat(many, " x");
	CU_ASSERT_EQUAL(sh("'%s' merge %s", spmtap(), many), 64);
	CU_ASSERT(out_has("mpirun") && out_has("--serial"));
}

static void test_replace(void)
{
	const char *o = inputs(job, false, 2);
	CU_ASSERT_EQUAL_FATAL(sh("'%s' merge -d '%s' -o rp %s", spmtap(), dir, o), 0);
	CU_ASSERT(access(testenv_path(dir, "rp.pftrace"), F_OK) == 0);
	/* a failed merge (two of one rank) leaves the earlier set byte for byte */
	size_t n1, n2;
	char *before = tf_slurp(testenv_path(dir, "rp.db"), &n1);
	CU_ASSERT_EQUAL(sh("'%s' merge -d '%s' -o rp '%s/node0/rec.db' '%s/node0'", spmtap(), dir, job, job), 1);
	char *after = tf_slurp(testenv_path(dir, "rp.db"), &n2);
	CU_ASSERT(before && after && n1 == n2 && !memcmp(before, after, n1));
	free(before);
	free(after);
	CU_ASSERT(access(testenv_path(dir, "rp.db.part"), F_OK) != 0);
	/* another -f set replaces the set as a whole: the old trace goes */
	CU_ASSERT_EQUAL(sh("'%s' merge -d '%s' -o rp -f sqlite %s", spmtap(), dir, o), 0);
	CU_ASSERT(access(testenv_path(dir, "rp.db"), F_OK) == 0);
	CU_ASSERT(access(testenv_path(dir, "rp.pftrace"), F_OK) != 0);
	/* -d as record takes it: a directory that does not exist yet is made, parents too */
	const char *nd = testenv_path(dir, "new/sub");
	CU_ASSERT_EQUAL(sh("'%s' merge -d '%s' -o rp -f sqlite %s", spmtap(), nd, o), 0);
	CU_ASSERT(access(testenv_path(nd, "rp.db"), F_OK) == 0);
	/* but not over a file */
	CU_ASSERT_EQUAL(sh("'%s' merge -d '%s' -o rp -f sqlite %s", spmtap(), testenv_path(dir, "rp.db"), o), 1);
}

static const char *need_mpi(void)
{
	if (TESTENV_SANITIZED)
		return "sanitized build: OpenMPI is not instrumented";
	static char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/spmtap-merge-mpi", testenv_build_dir());
	if (access(p, X_OK) || access("/usr/bin/mpirun", X_OK))
		return "spmtap-merge-mpi or mpirun not built/installed";
	return NULL;
}

static void test_mpi(void)
{
	for (int np = 2; np <= 3; np++) {
		char name[16];
		snprintf(name, sizeof(name), "mpi%d", np);
		CU_ASSERT_EQUAL_FATAL(sh("mpirun --allow-run-as-root --oversubscribe -np %d '%s/spmtap-merge-mpi' -d '%s' "
					 "-o %s %s",
					 np, testenv_build_dir(), dir, name, inputs(job, false, NODES)),
				      0);
		CU_ASSERT(out_has("1.800 us"));
		char db[PATH_MAX];
		snprintf(db, sizeof(db), "%s/%s.db", dir, name);
		CU_ASSERT(same_rows(merged, db, false));
		/* its chunk files are gone */
		CU_ASSERT_EQUAL(sh("ls -a '%s' | grep -c '\\.merge-'", dir), 1);
	}
	/* CSV inputs through MPI equal the serial merge too */
	CU_ASSERT_EQUAL_FATAL(sh("mpirun --allow-run-as-root --oversubscribe -np 2 '%s/spmtap-merge-mpi' -d '%s' -o "
				 "mpicsv -f sqlite %s",
				 testenv_build_dir(), dir, inputs(job, true, NODES)),
			      0);
	CU_ASSERT(same_rows(merged, testenv_path(dir, "mpicsv.db"), true));
}

/*
 * NAME_craypm.csv (record --cray) beside each node's recording: merged as
 * the node's own stream from SQLite and CSV inputs alike, every row at its
 * true reference time (the synthetic clock: exact to the ns), every value.
 */
#define PM_ROWS 15
static void test_craypm(void)
{
	for (unsigned k = 0; k < NODES; k++) {
		char path[PATH_MAX + 64];
		snprintf(path, sizeof(path), "%s/node%u/rec_craypm.csv", job, k);
		FILE *f = fopen(path, "w");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		fprintf(f, "time_ns,pm.power[W],pm.power[ts_ns],pm.energy[J],pm.energy[ts_ns]\n");
		for (int i = 0; i < PM_ROWS; i++) {
			int64_t l = synjob_origin(k) + i * 50000000ll;
			/* a row without energy: that cell is missing, not 0 */
			if (i == 3)
				fprintf(f, "%lld,%d,%lld,,\n", (long long)l, 500 + 10 * (int)k + i, (long long)l);
			else
				fprintf(f, "%lld,%d,%lld,%d,%lld\n", (long long)l, 500 + 10 * (int)k + i, (long long)l,
					100 * i, (long long)l);
		}
		fclose(f);
	}
	for (int csv = 0; csv < 2; csv++) {
		const char *name = csv ? "pmcsv" : "pmsq";
		CU_ASSERT_EQUAL_FATAL(sh("'%s' merge -d '%s' -o %s -f sqlite %s", spmtap(), dir, name,
					 inputs(job, csv, NODES)), 0);
		sqlite3 *h = NULL;
		char db[PATH_MAX + 64];
		snprintf(db, sizeof(db), "%s/%s.db", dir, name);
		CU_ASSERT_FATAL(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
		for (unsigned k = 0; k < NODES; k++) {
			sqlite3_stmt *st = NULL;
			char sql[256];
			snprintf(sql, sizeof(sql), "SELECT host_ns, value, node, name FROM sample_v WHERE track = "
				 "'node%u.pm.power' ORDER BY host_ns", k);
			CU_ASSERT_FATAL(sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK);
			int i = 0, ok = 0;
			while (sqlite3_step(st) == SQLITE_ROW) {
				double tr = (double)SYNJOB_T0 + (double)i * 50000000.0 * (1.0 + synjob_drift(k));
				ok += fabs((double)sqlite3_column_int64(st, 0) - tr) <= 1.0 &&
				      sqlite3_column_double(st, 1) == 500 + 10 * (int)k + i &&
				      sqlite3_column_int(st, 2) == (int)k;
				i++;
			}
			sqlite3_finalize(st);
			CU_ASSERT_EQUAL(i, PM_ROWS);
			CU_ASSERT_EQUAL(ok, PM_ROWS);
			/* the row without energy is missing there (NULL), not 0 */
			CU_ASSERT_EQUAL(q_int(h, "SELECT count(*) FROM sample_v WHERE track = 'node%u.pm.energy' AND "
					      "value IS NOT NULL", k), PM_ROWS - 1);
			CU_ASSERT_EQUAL(q_int(h, "SELECT count(*) FROM stream WHERE node = %u AND source = 'cray_pm'", k), 1);
		}
		sqlite3_close(h);
	}
	for (unsigned k = 0; k < NODES; k++) {
		char path[PATH_MAX + 64];
		snprintf(path, sizeof(path), "%s/node%u/rec_craypm.csv", job, k);
		unlink(path);
	}
}

/*
 * The nodes' kernel dispatches (synjob: even nodes, NAME_kernels.csv and
 * kernel_dispatch) in the merged kernel_dispatch of a merged file: every
 * timed one at its true reference time (the synthetic clock is linear, so
 * the interpolated offsets are exact but for the ns rounding of the
 * recorded local instant and offsets: <= 1 ns, far inside every bound),
 * the untimed one kept without times, counts per node and name equal.
 */
static void kernels_in(const char *db)
{
	sqlite3 *h = NULL;
	CU_ASSERT_FATAL(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
	sqlite3_stmt *st = NULL;
	CU_ASSERT_FATAL(sqlite3_prepare_v2(h, "SELECT start_ns, end_ns FROM kernel_dispatch WHERE node = ?1 AND "
					      "kernel = ?2 AND queue_id = ?3 ORDER BY abs(start_ns - ?4) LIMIT 1",
					   -1, &st, NULL) == SQLITE_OK);
	int64_t total = 0, worst = 0;
	for (unsigned k = 0; k < NODES; k++) {
		json_t *td = json_object_get(tnode(k), "dispatches");
		CU_ASSERT_EQUAL(json_array_size(td), synjob_ndisp(k));
		size_t i;
		json_t *d;
		json_array_foreach(td, i, d)
		{
			int64_t t0 = tint(d, "start_ns"), t1 = tint(d, "end_ns");
			sqlite3_bind_int64(st, 1, k);
			sqlite3_bind_text(st, 2, json_string_value(json_object_get(d, "kernel")), -1, SQLITE_STATIC);
			sqlite3_bind_int64(st, 3, tint(d, "queue"));
			sqlite3_bind_int64(st, 4, t0);
			CU_ASSERT_EQUAL_FATAL(sqlite3_step(st), SQLITE_ROW);
			int64_t e0 = llabs(sqlite3_column_int64(st, 0) - t0), e1 = llabs(sqlite3_column_int64(st, 1) - t1);
			worst = e0 > worst ? e0 : worst;
			worst = e1 > worst ? e1 : worst;
			CU_ASSERT(e0 <= 1 && e1 <= 1 && e0 <= synjob_bound(k) + 1);
			sqlite3_reset(st);
		}
		/* counts per node and name: the truth's, and the one untimed dispatch without times */
		for (unsigned n = 0; n < 3; n++) {
			unsigned want = 0;
			for (unsigned x = 0; x < synjob_ndisp(k); x++)
				want += !strcmp(synjob_kname(x), synjob_kname(n));
			sqlite3_stmt *c = NULL;
			sqlite3_prepare_v2(h, "SELECT count(*) FROM kernel_dispatch WHERE node = ?1 AND kernel = ?2", -1, &c,
					   NULL);
			sqlite3_bind_int64(c, 1, k);
			sqlite3_bind_text(c, 2, synjob_kname(n), -1, SQLITE_STATIC);
			CU_ASSERT(sqlite3_step(c) == SQLITE_ROW && sqlite3_column_int64(c, 0) == want);
			sqlite3_finalize(c);
		}
		CU_ASSERT_EQUAL(q_int(h, "SELECT count(*) FROM kernel_dispatch WHERE node = %u AND kernel = 'untimed' AND "
				      "start_ns IS NULL AND status = -1", k), synjob_ndisp(k) ? 1 : 0);
		total += synjob_ndisp(k) + (synjob_ndisp(k) ? 1 : 0);
	}
	sqlite3_finalize(st);
	fprintf(stderr, "(%s: worst |merged - true| %lld ns) ", strrchr(db, '/') + 1, (long long)worst);
	/* SELECT node, kernel, count(*) ... GROUP BY 1,2: as many groups as the truth has (node, name) pairs */
	unsigned groups = 0;
	for (unsigned k = 0; k < NODES; k++)
		groups += synjob_ndisp(k) ? 4 : 0;
	CU_ASSERT_EQUAL(q_int(h, "SELECT count(*) FROM (SELECT node, kernel, count(*) FROM kernel_dispatch GROUP BY 1, 2)"),
			groups);
	CU_ASSERT_EQUAL(q_int(h, "SELECT count(*) FROM kernel_dispatch"), total);
	/* kernel_samples_<id>: a node's samples beside its own dispatches only (every node has a GPU 0) */
	int64_t ns = q_int(h, "SELECT count(*) FROM stream");
	int64_t joined = 0;
	for (int64_t i = 1; i <= ns; i++) {
		int64_t sn = q_int(h, "SELECT node FROM stream WHERE id = %lld", (long long)i);
		CU_ASSERT_EQUAL(q_int(h, "SELECT count(*) FROM kernel_samples_%lld WHERE node != %lld", (long long)i,
				      (long long)sn), 0);
		joined += q_int(h, "SELECT count(*) FROM kernel_samples_%lld", (long long)i);
		/* the same count as joining by hand on node and GPU */
		CU_ASSERT_EQUAL(q_int(h, "SELECT count(*) FROM kernel_samples_%lld", (long long)i),
				q_int(h, "SELECT count(*) FROM kernel_dispatch d JOIN samples_%lld x ON x.host_ns >= d.start_ns "
					 "AND x.host_ns < d.end_ns WHERE d.node = %lld AND d.gpu = (SELECT gpu FROM stream "
					 "WHERE id = %lld)", (long long)i, (long long)sn, (long long)i));
	}
	CU_ASSERT(joined > 0);
	sqlite3_close(h);
}

static void test_kernels(void)
{
	kernels_in(merged);
	/* from the CSV inputs (NAME_kernels.csv, quoted names): the same rows (csv_inputs compares them too) */
	if (access(testenv_path(dir, "fromcsv.db"), F_OK))
		CU_ASSERT_EQUAL_FATAL(sh("'%s' merge -d '%s' -o fromcsv -f sqlite %s", spmtap(), dir,
					 inputs(job, true, NODES)), 0);
	kernels_in(testenv_path(dir, "fromcsv.db"));
	/* one node's per-kernel tables through report --node */
	CU_ASSERT_EQUAL(sh("'%s' report '%s' --node 2", spmtap(), merged), 0);
	CU_ASSERT(out_has("gemm_f32") && out_has("reduce<int, 4>"));
	CU_ASSERT_EQUAL(sh("'%s' report '%s' --node 1", spmtap(), merged), 0);
	CU_ASSERT(!out_has("gemm_f32"));
}

/* The timed dispatches as "kernel" slices on their queue's track, under their node's process, at the true times. */
static void test_kernels_perfetto(void)
{
	size_t len;
	uint8_t *b = (uint8_t *)tf_slurp(testenv_path(dir, "m.pftrace"), &len);
	CU_ASSERT_FATAL(b != NULL);
	Perfetto__Protos__Trace *t = perfetto__protos__trace__unpack(NULL, len, b);
	free(b);
	CU_ASSERT_FATAL(t != NULL);
	enum { MAXT = 512 };
	static uint64_t uuid[MAXT], parent[MAXT];
	static int pid[MAXT], kq[MAXT];
	size_t nt = 0;
	for (size_t i = 0; i < t->n_packet && nt < MAXT; i++) {
		Perfetto__Protos__TrackDescriptor *d = t->packet[i]->track_descriptor;
		if (!d)
			continue;
		uuid[nt] = d->uuid;
		parent[nt] = d->has_parent_uuid ? d->parent_uuid : 0;
		pid[nt] = d->process ? d->process->pid : 0;
		unsigned q, p;
		kq[nt] = d->name && sscanf(d->name, "kernels: queue %u (pid %u)", &q, &p) == 2 ? (int)q : 0;
		nt++;
	}
	static struct pft_state ps;
	memset(&ps, 0, sizeof(ps));
	unsigned per_node[NODES] = { 0 }, at_truth = 0, total = 0;
	for (size_t i = 0; i < t->n_packet; i++) {
		uint64_t ts, tr;
		CU_ASSERT_FATAL(pft_resolve(&ps, t->packet[i], &ts, &tr) == 0);
		Perfetto__Protos__TrackEvent *e = t->packet[i]->track_event;
		if (!e || e->type != PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN)
			continue;
		uint64_t u = e->has_track_uuid ? e->track_uuid : tr;
		size_t j = 0;
		while (j < nt && uuid[j] != u)
			j++;
		if (j == nt || !kq[j])
			continue;
		/* the node: the process above the queue's track (through its GPU's) */
		int node = -1;
		for (int hop = 0; hop < 8 && node < 0 && u; hop++) {
			size_t x = 0;
			while (x < nt && uuid[x] != u)
				x++;
			if (x == nt)
				break;
			if (pid[x])
				node = pid[x] - 1;
			u = parent[x];
		}
		CU_ASSERT_FATAL(node >= 0 && node < NODES);
		per_node[node]++;
		total++;
		size_t k;
		json_t *d;
		json_array_foreach(json_object_get(tnode((unsigned)node), "dispatches"), k, d)
		if (e->name && !strcmp(e->name, json_string_value(json_object_get(d, "kernel"))) &&
		    tint(d, "queue") == kq[j] && llabs((int64_t)ts - tint(d, "start_ns")) <= 1) {
			at_truth++;
			break;
		}
	}
	perfetto__protos__trace__free_unpacked(t, NULL);
	for (unsigned k = 0; k < NODES; k++)
		CU_ASSERT_EQUAL(per_node[k], synjob_ndisp(k));
	CU_ASSERT(total > 0 && at_truth == total);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "clock", test_clock, NULL },
		{ "truth", test_truth, NULL },
		{ "csv_inputs", test_csv_inputs, NULL },
		{ "perfetto", test_perfetto, NULL },
		{ "report", test_report, NULL },
		{ "refusals", test_refusals, NULL },
		{ "replace", test_replace, NULL },
		{ "mpi", test_mpi, need_mpi },
		{ "craypm", test_craypm, NULL },
		{ "kernels", test_kernels, NULL },
		{ "kernels_perfetto", test_kernels_perfetto, NULL },
		{ NULL, NULL, NULL },
	};
	if (!mkdtemp(dir))
		return 1;
	snprintf(job, sizeof(job), "%s/job", dir);
	snprintf(merged, sizeof(merged), "%s/m.db", dir);
	struct synjob j = { .dir = job, .nodes = NODES, .seconds = SECONDS, .spm_hz = SPM_HZ, .smi_hz = SMI_HZ,
			    .phases = PHASES, .csv = 1, .sqlite = 1, .no_job_node = -1, .kernels = 1 };
	int rc = synjob_make(&j);
	json_error_t je;
	truth = rc ? NULL : json_load_file(testenv_path(job, "truth.json"), 0, &je);
	/* the merge every case reads: the SQLite inputs, serial, both outputs */
	if (!truth || sh("'%s' merge -d '%s' -o m %s", spmtap(), dir, inputs(job, false, NODES))) {
		fprintf(stderr, "test_merge: cannot make or merge the synthetic job\n");
		char *t = tf_slurp(testenv_path(dir, "out.txt"), NULL);
		fprintf(stderr, "%s\n", t ? t : "");
		free(t);
		return testenv_remove_tmp(dir, 1);
	}
	rc = testenv_run_suite("merge", cases, argc, argv);
	json_decref(truth);
	return testenv_remove_tmp(dir, rc);
}
