/* SPDX-License-Identifier: MIT */
/*
 * collector/lib/write_otf2.c and otf2w.c, read back by the real OTF2 tools:
 * `otf2-print --silent -Werror` validates, `otf2-print -G` lists the metrics
 * with units, modes and occurrence, `otf2-print -C` the clock offsets, and
 * tests/otf2_compare.py (python3-otf2 and sqlite3 under /usr/bin/python3)
 * finds every sample value and every slice of the SQLite output of the same
 * data in the archive, with Enter/Leave nested per location.  The ground
 * truth is what the test wrote (synthetic cases) and a real recording on the
 * emulated MI210 with markers from three threads and overlapping phases.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector/lib/otf2w.h"
#include "collector/lib/writer.h"
#include "lib/hsa_example.h"
#include "lib/proc.h"
#include "lib/synjob.h"
#include "lib/testenv.h"

static char dir[] = "/tmp/spmtap-otf2-XXXXXX";

static const char *path(const char *name) { return testenv_path(dir, name); }

static const char *need_tools(void)
{
	static char why[256];
	if (access("/usr/bin/otf2-print", X_OK))
		return "otf2-print is not installed (apt install otf2-tools)";
	if (tp_sh("/usr/bin/python3 -c 'import otf2' 2>/dev/null", NULL, 0))
		return "python3-otf2 is not installed (apt install python3-otf2)";
	if (otf2w_probe(why, sizeof(why)))
		return why;
	return NULL;
}

/* Run sh -c cmd; its stdout into a buffer the next call reuses. */
static const char *sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh_rc;
static const char *sh(const char *fmt, ...)
{
	static char out[1 << 16];
	char cmd[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	out[0] = 0;
	/* The suite runs under the emulator's shim (for the HSA example); the tools do not need it. */
	char full[2100];
	snprintf(full, sizeof(full), "unset LD_PRELOAD; %s", cmd);
	sh_rc = tp_sh(full, out, sizeof(out));
	return out;
}

static const char *compare_script(void)
{
	static char p[4096];
	snprintf(p, sizeof(p), "%s/../tests/otf2_compare.py", testenv_build_dir());
	return p;
}

/* ---- synthetic data: an SPM stream with a missing cell, a sensor stream, slices ---- */

static const struct series_column spm_cols[] = {
	{ "SQ_WAVES", "count", SERIES_U64 },
	{ "GRBM_COUNT", "count", SERIES_U64 },
};
static const struct series_column smi_cols[] = {
	{ "power_avg", "W", SERIES_F64 },
	{ "energy", "J", SERIES_F64 },
	{ "gfxclk", "MHz", SERIES_F64 },
};

#define NSAMP 100
#define T0 1000000000000ll

struct fixture {
	struct series_stream spm, smi;
	uint64_t sq[NSAMP], grbm[NSAMP];
	double pw[NSAMP], en[NSAMP], clk[NSAMP];
	int64_t t_spm[NSAMP], t_smi[NSAMP];
	uint64_t miss_sq[2];
};

static void fixture_init(struct fixture *f, uint32_t gpu)
{
	memset(f, 0, sizeof(*f));
	f->spm = (struct series_stream){ .id = 7, .source = "spm", .gpu = gpu, .gpu_id = 0x1234, .xcc = 1,
					 .device_name = "AMD Instinct MI300A", .tick_domain = "gpu_ref_100MHz",
					 .ncols = 2, .cols = spm_cols };
	f->smi = (struct series_stream){ .id = 9, .source = "smi", .gpu = gpu, .gpu_id = 0x1234, .xcc = -1,
					 .device_name = "AMD Instinct MI300A", .tick_domain = "smu_10ns",
					 .ncols = 3, .cols = smi_cols };
	for (int i = 0; i < NSAMP; i++) {
		f->t_spm[i] = T0 + i * 1000;
		f->t_smi[i] = T0 + i * 5000 + 7;
		f->sq[i] = 3 * (uint64_t)i;
		f->grbm[i] = i == 99 ? UINT64_MAX - 1 : 1000 + (uint64_t)i;
		f->pw[i] = 400.0 + i * 0.25;
		f->en[i] = 1e6 + i * 0.125;
		f->clk[i] = 1700.0 + i;
	}
	f->miss_sq[0] = 1ull << 17; /* SQ_WAVES of sample 17 saturated: missing */
}

/* The slices: markers on one thread where c overlaps a without nesting, kernels out of order. */
static const struct series_slice fixture_slices[] = {
	{ .start_ns = T0 + 10000, .end_ns = T0 + 50000, .name = "a",
	  .track = 8, .category = "marker", .depth = 0, .pid = 7 },
	{ .start_ns = T0 + 20000, .end_ns = T0 + 30000, .name = "b",
	  .track = 8, .category = "marker", .depth = 1, .pid = 7 },
	{ .start_ns = T0 + 40000, .end_ns = T0 + 70000, .name = "c",
	  .track = 8, .category = "marker", .depth = 0, .pid = 7 },
	{ .start_ns = T0 + 45000, .end_ns = T0 + 46000, .name = "d",
	  .track = 8, .category = "marker", .depth = 1, .pid = 7 },
	{ .start_ns = T0 + 5000, .end_ns = T0 + 90000, .name = "fwd",
	  .track = 0, .category = "file", .depth = 0, .pid = 0 },
	{ .start_ns = T0 + 60000, .end_ns = T0 + 61000, .name = "k2",
	  .track = 3, .category = "kernel", .depth = 0, .pid = 0 },
	{ .start_ns = T0 + 20000, .end_ns = T0 + 21000, .name = "k1",
	  .track = 3, .category = "kernel", .depth = 0, .pid = 0 },
	{ .start_ns = T0 + 20500, .end_ns = T0 + 20600, .name = "k1",
	  .track = 4, .category = "kernel", .depth = 0, .pid = 0 },
};

static int write_fixture(const struct writer_ops *ops, const char *out, const char *meta_json, uint32_t gpu)
{
	struct fixture f;
	fixture_init(&f, gpu);
	struct writer_meta m = { .spmtap_version = "0.1.0-test", .command_line = "spmtap record -f otf2",
				 .hostname = "node7", .start_boottime_ns = T0 - 1000, .spm_clock_hz = 1e8 };
	struct writer *w = NULL;
	char err[512] = "";
	int rc = ops->open(&w, out, &m, err, sizeof(err));
	if (rc) {
		printf("\n    open: %s\n", err);
		return rc;
	}
	rc = ops->begin(w, &f.spm, err, sizeof(err));
	if (!rc)
		rc = ops->begin(w, &f.smi, err, sizeof(err));
	if (!rc && ops->meta)
		rc = ops->meta(w, "{\"complete\": false}", err, sizeof(err));
	/* chunks of 10, the two streams interleaved */
	for (int k = 0; !rc && k < NSAMP; k += 10) {
		const void *v1[] = { f.sq + k, f.grbm + k };
		uint64_t miss[2] = { k <= 17 && 17 < k + 10 ? 1ull << (17 - k) : 0, 0 };
		const uint64_t *m1[] = { miss, NULL };
		struct series_chunk c1 = { .stream = &f.spm, .n = 10, .host_ns = f.t_spm + k, .values = v1,
					   .missing = m1 };
		rc = ops->write(w, &c1, err, sizeof(err));
		const void *v2[] = { f.pw + k, f.en + k, f.clk + k };
		struct series_chunk c2 = { .stream = &f.smi, .n = 10, .host_ns = f.t_smi + k, .values = v2 };
		if (!rc)
			rc = ops->write(w, &c2, err, sizeof(err));
	}
	for (size_t i = 0; !rc && i < sizeof(fixture_slices) / sizeof(fixture_slices[0]); i++)
		rc = ops->slice(w, &fixture_slices[i], err, sizeof(err));
	if (!rc && ops->meta && meta_json)
		rc = ops->meta(w, meta_json, err, sizeof(err));
	int erc = ops->end(w, rc ? NULL : err, rc ? 0 : sizeof(err));
	if (rc || erc)
		printf("\n    %s: %s\n", out, err);
	return rc ? rc : erc;
}

static void test_lookup(void)
{
	char err[256] = "";
	CU_ASSERT_PTR_EQUAL(writer_lookup("otf2", err, sizeof(err)), &writer_otf2);
	CU_ASSERT_PTR_EQUAL(writer_find("OTF2"), &writer_otf2);
	CU_ASSERT_STRING_EQUAL(writer_otf2.ext, ".otf2");
	char why[256] = "x";
	CU_ASSERT_EQUAL(writer_otf2.probe(why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(why, "");
	/* standard output is no archive */
	struct writer *w = NULL;
	CU_ASSERT_EQUAL(writer_otf2.open(&w, "-", NULL, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "directory"));
}

/* Definitions: units, modes, occurrence, the system tree, separate lanes for overlaps. */
static void test_definitions(void)
{
	const char *a = path("fix.otf2");
	CU_ASSERT_EQUAL_FATAL(write_fixture(&writer_otf2, a, NULL, 0), 0);
	sh("otf2-print --silent -Werror %s/traces.otf2 2>&1", a);
	CU_ASSERT_EQUAL(sh_rc, 0);
	const char *g = sh("otf2-print -G %s/traces.otf2", a);
	CU_ASSERT_EQUAL_FATAL(sh_rc, 0);
	static const char *const want[] = {
		"Name: \"SQ_WAVES\"", "Mode: RELATIVE_LAST, Value Type: UINT64, Base: DECIMAL, Exponent: 0, Unit: \"#\"",
		"Name: \"power_avg\"", "Mode: ABSOLUTE_POINT, Value Type: DOUBLE, Base: DECIMAL, Exponent: 0, Unit: \"W\"",
		"Mode: ACCUMULATED_START, Value Type: DOUBLE, Base: DECIMAL, Exponent: 0, Unit: \"J\"",
		"Exponent: 6, Unit: \"Hz\"", "Occurrence: ASYNCHRONOUS",
		"Name: \"node7\" <", "Class: \"node\"", "Name: \"GPU 0 (AMD Instinct MI300A)\"",
		"Name: \"GPU 0 XCC 1 SPM\"", "Name: \"GPU 0 sensors\"", "Type: PROCESS",
		"Name: \"markers pid 7 tid 8\"", "Name: \"markers pid 7 tid 8 (overlap 1)\"",
		"Name: \"kernels queue 3\"", "Name: \"kernels queue 4\"", "Name: \"phases (file)\"",
		"Ticks per Seconds: 1000000000",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(g, want[i])) {
			printf("\n    -G lacks %s", want[i]);
			CU_FAIL("a definition is missing");
		}
	/* the global offset is the first time: 1e12 (sample 0 of the SPM stream) */
	CU_ASSERT_PTR_NOT_NULL(strstr(g, "Global Offset: 1000000000000,"));
	/* a plain recording: no clock offsets (g is gone from here: sh() reuses its buffer) */
	CU_ASSERT_PTR_NULL(strstr(sh("otf2-print -C %s/traces.otf2", a), "CLOCK_OFFSET"));
	/* a, b nest; c overlaps a: own lane; d nests in c.  Kernels: 3 events pairs, by queue. */
	const char *ev = sh("otf2-print %s/traces.otf2 | grep -c '^ENTER'", a);
	CU_ASSERT_EQUAL(atoi(ev), 8);
}

/* Every value and slice of the same data in SQLite, found in OTF2 (python3-otf2), nested. */
static void test_values_vs_sqlite(void)
{
	const char *a = path("same.otf2"), *db = path("same.db");
	CU_ASSERT_EQUAL_FATAL(write_fixture(&writer_otf2, a, NULL, 0), 0);
	CU_ASSERT_EQUAL_FATAL(write_fixture(&writer_sqlite, db, NULL, 0), 0);
	const char *out = sh("/usr/bin/python3 %s %s/traces.otf2 %s 2>&1", compare_script(), a, db);
	printf("\n    %s", out);
	CU_ASSERT_EQUAL(sh_rc, 0);
	/* 2 x 100 - 1 missing SPM cells, 3 x 100 sensor cells; 5 slices SQLite keeps, 3 kernels */
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "samples 499=499 cells, slices 5=5, kernels 3,"));
}

/* The recording's job metadata becomes ClockOffsets (stddev = the bound), applied by readers. */
static void test_clock_offsets(void)
{
	const char *a = path("job.otf2");
	const char *meta =
		"{\"hostname\": \"vm\", \"job\": {\"rank\": 2, \"size\": 4, \"hostname\": \"node2\", "
		"\"launcher\": \"mpirun\", \"job_id\": \"j1\", \"clock\": {\"clock\": \"CLOCK_BOOTTIME\", "
		"\"reference_rank\": 0, \"method\": \"mpi-min-rtt-pingpong\", \"rounds\": 20, "
		"\"offsets\": [{\"local_ns\": 999999000000, \"offset_ns\": -3200000000, \"bound_ns\": 1800, "
		"\"rtt_ns\": 3600}, {\"local_ns\": 1000001000000, \"offset_ns\": -3199998000, \"bound_ns\": 900, "
		"\"rtt_ns\": 1800}]}, "
		/* as spmtap-job writes them (docs/formats/meta-job.md): the first is the start's */
		"\"realtime_anchors\": [{\"boottime_ns\": 1000000000000, \"realtime_ns\": 1700000000000000000, "
		"\"window_ns\": 60}, {\"boottime_ns\": 1000001000000, \"realtime_ns\": 1700000001000000100, "
		"\"window_ns\": 80}]}}";
	CU_ASSERT_EQUAL_FATAL(write_fixture(&writer_otf2, a, meta, 0), 0);
	sh("otf2-print --silent -Werror %s/traces.otf2 2>&1", a);
	CU_ASSERT_EQUAL(sh_rc, 0);
	const char *c = sh("otf2-print -C %s/traces.otf2 | grep CLOCK_OFFSET", a);
	printf("\n    %.*s", (int)strcspn(c, "\n"), c);
	/* every location of the node (SPM, sensors, 2 marker lanes, 2 kernel queues, phases) has both */
	int lines = 0;
	for (const char *p = c; (p = strstr(p, "CLOCK_OFFSET")); p++)
		lines++;
	CU_ASSERT_EQUAL(lines, 2 * 7);
	CU_ASSERT_PTR_NOT_NULL(strstr(c, "-3200000000"));
	CU_ASSERT_PTR_NOT_NULL(strstr(c, "1800"));
	CU_ASSERT_PTR_NOT_NULL(strstr(c, "-3199998000"));
	const char *g = sh("otf2-print -G %s/traces.otf2", a);
	/* named by the job's hostname and rank */
	CU_ASSERT_PTR_NOT_NULL(strstr(g, "Name: \"node2 (rank 2)\""));
	/*
	 * Readers apply the offsets: the first SPM sample (local 1e12, where the
	 * offset interpolates to -3199999000) reads as 1e12 - 3199999000.
	 */
	const char *t = sh("/usr/bin/python3 -c 'import otf2\n"
			   "with otf2.reader.open(\"%s/traces.otf2\") as t:\n"
			   "  print(min(e.time for l, e in t.events if l.name == \"GPU 0 XCC 1 SPM\"))\n"
			   "  print(t.definitions.clock_properties.global_offset, t.definitions.clock_properties.realtime_timestamp)'",
			   a);
	int64_t first = 0, goff = 0, rt = 0;
	CU_ASSERT_EQUAL(sscanf(t, "%" SCNd64 " %" SCNd64 " %" SCNd64, &first, &goff, &rt), 3);
	CU_ASSERT_EQUAL(first, T0 - 3199999000ll);
	CU_ASSERT(goff <= first);
	/* REALTIME at the global offset: the anchor moved by (anchor's reference time - global offset) */
	CU_ASSERT_EQUAL(rt, 1700000000000000000ll - (T0 - 3199999000ll - goff));
}

/* Two nodes in one archive through otf2w directly (merge's path). */
static void test_two_nodes(void)
{
	const char *a = path("two.otf2");
	char err[512] = "";
	struct otf2w *w = NULL;
	CU_ASSERT_EQUAL_FATAL(otf2w_open(&w, a, "spmtap test", err, sizeof(err)), 0);
	struct fixture f[2];
	struct otf2w_node *last = NULL;
	for (int k = 0; k < 2; k++) {
		fixture_init(&f[k], 0);
		struct otf2w_node *n = NULL;
		char host[16];
		snprintf(host, sizeof(host), "node%d", k);
		CU_ASSERT_EQUAL_FATAL(otf2w_node(w, &n, host, k, err, sizeof(err)), 0);
		struct otf2w_offset o[2] = { { T0, k * 1000000, k * 500 }, { T0 + 1000000, k * 1000000 + 100, k * 400 } };
		CU_ASSERT_EQUAL(otf2w_node_offsets(n, o, 2, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(otf2w_begin(n, &f[k].spm, err, sizeof(err)), 0);
		const void *v1[] = { f[k].sq, f[k].grbm };
		struct series_chunk c1 = { .stream = &f[k].spm, .n = NSAMP, .host_ns = f[k].t_spm, .values = v1 };
		CU_ASSERT_EQUAL(otf2w_write(n, &c1, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(otf2w_slice(n, &fixture_slices[0], err, sizeof(err)), 0);
		last = n;
	}
	/* a range that ends before it starts is left out and counted, not an error that ends the recording */
	struct series_slice bad = { .start_ns = T0 + 9, .end_ns = T0 + 8, .name = "backwards", .track = 1,
				    .category = "marker", .pid = 1 };
	CU_ASSERT_EQUAL(otf2w_slice(last, &bad, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(otf2w_dropped_slices(w), 1);
	CU_ASSERT_EQUAL_FATAL(otf2w_close(w, err, sizeof(err)), 0);
	sh("otf2-print --silent -Werror %s/traces.otf2 2>&1", a);
	CU_ASSERT_EQUAL(sh_rc, 0);
	const char *g = sh("otf2-print -G %s/traces.otf2 | grep -E '^(LOCATION_GROUP|SYSTEM_TREE_NODE)' | sort", a);
	CU_ASSERT_PTR_NOT_NULL(strstr(g, "Name: \"node0 (rank 0)\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(g, "Name: \"node1 (rank 1)\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(g, "Parent: \"node::node1\""));
	/* per node its samples, node1's moved by its offset (1 ms at the start) */
	const char *t = sh("/usr/bin/python3 -c 'import otf2, collections\n"
			   "c = collections.Counter(); m = {}\n"
			   "with otf2.reader.open(\"%s/traces.otf2\") as t:\n"
			   "  for l, e in t.events:\n"
			   "    c[l.group.name] += 1; m.setdefault(l.group.name, e.time)\n"
			   "print(c[\"node0 (rank 0)\"], c[\"node1 (rank 1)\"], m[\"node1 (rank 1)\"] - m[\"node0 (rank 0)\"])'",
			   a);
	printf("\n    events per node and first-event gap: %s", t);
	CU_ASSERT_STRING_EQUAL(t, "102 102 1000000\n");
}

static long maxrss_kib(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/*
 * Memory stays bounded by the streams, not the duration: a million samples
 * of 4 streams (4 million Metric events, ~75 MB of archive) grow the
 * process by at most a few chunks per location (without otf2w's memory
 * callbacks OTF2 keeps every chunk until close: 278 MB at twice this size).
 */
static void test_bounded_memory(void)
{
	const char *a = path("big.otf2");
	char err[512] = "";
	struct otf2w *w = NULL;
	CU_ASSERT_EQUAL_FATAL(otf2w_open(&w, a, NULL, err, sizeof(err)), 0);
	struct otf2w_node *n = NULL;
	CU_ASSERT_EQUAL_FATAL(otf2w_node(w, &n, "big", -1, err, sizeof(err)), 0);
	enum { NS = 4, CH = 4096, CHUNKS = 250 };
	struct series_stream st[NS];
	static uint64_t v[4][CH];
	static int64_t t[CH];
	for (int k = 0; k < NS; k++) {
		st[k] = (struct series_stream){ .id = (uint32_t)k, .source = "spm", .gpu = 0, .xcc = k, .ncols = 4,
						.cols = (const struct series_column[]){ { "A", "count", SERIES_U64 },
											{ "B", "count", SERIES_U64 },
											{ "C", "count", SERIES_U64 },
											{ "D", "count", SERIES_U64 } } };
		CU_ASSERT_EQUAL_FATAL(otf2w_begin(n, &st[k], err, sizeof(err)), 0);
	}
	long before = 0;
	for (int c = 0; c < CHUNKS; c++) {
		for (int i = 0; i < CH; i++) {
			t[i] = T0 + ((int64_t)c * CH + i) * 1000;
			for (int j = 0; j < 4; j++)
				v[j][i] = (uint64_t)(c * CH + i) * 7 + (uint64_t)j;
		}
		const void *vals[] = { v[0], v[1], v[2], v[3] };
		for (int k = 0; k < NS; k++) {
			struct series_chunk ch = { .stream = &st[k], .n = CH, .host_ns = t, .values = vals };
			CU_ASSERT_EQUAL_FATAL(otf2w_write(n, &ch, err, sizeof(err)), 0);
		}
		if (c == CHUNKS / 10)
			before = maxrss_kib(); /* every location's buffer is in use by now */
	}
	long after = maxrss_kib();
	CU_ASSERT_EQUAL_FATAL(otf2w_close(w, err, sizeof(err)), 0);
	printf("\n    %d samples x %d streams: max RSS %ld KiB after a tenth, %ld KiB at the end ", CHUNKS * CH, NS,
	       before, after);
#if TESTENV_SANITIZED
	/*
	 * ASan keeps freed chunks in its quarantine (256 MB), TSan's allocator and
	 * shadow grow with every chunk touched (23 MB seen in CI): RSS says nothing here
	 */
	(void)before;
	(void)after;
#else
	CU_ASSERT(after - before < 16 * 1024);
#endif
	/* and the archive holds them all */
	const char *g = sh("otf2-print -G %s/traces.otf2 | grep -c '# Events: 1024000,'", a);
	CU_ASSERT_EQUAL(atoi(g), NS);
	sh("rm -rf %s", a);
}

/*
 * In a child limited to `limit` bytes per file: `chunks` chunks of 1000
 * samples, then close.  Exits 0 when a write or the close failed with EFBIG
 * and a message naming the event file, 1 when everything "succeeded", 2 on
 * another error; a crash shows as a signal.
 */
static int write_limited(const char *a, long limit, int chunks)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		signal(SIGXFSZ, SIG_IGN);
		struct rlimit r = { (rlim_t)limit, (rlim_t)limit };
		setrlimit(RLIMIT_FSIZE, &r);
		char err[512] = "";
		struct otf2w *w = NULL;
		struct otf2w_node *n = NULL;
		if (otf2w_open(&w, a, NULL, err, sizeof(err)) || otf2w_node(w, &n, "x", -1, err, sizeof(err)))
			_exit(2);
		static const struct series_column col[] = { { "A", "count", SERIES_U64 } };
		struct series_stream st = { .id = 1, .source = "spm", .xcc = 0, .ncols = 1, .cols = col };
		if (otf2w_begin(n, &st, err, sizeof(err)))
			_exit(2);
		static uint64_t v[1000];
		static int64_t t[1000];
		int rc = 0;
		for (int c = 0; c < chunks && !rc; c++) {
			for (int i = 0; i < 1000; i++) {
				t[i] = T0 + (int64_t)(c * 1000 + i) * 1000;
				v[i] = (uint64_t)i;
			}
			const void *vals[] = { v };
			struct series_chunk ch = { .stream = &st, .n = 1000, .host_ns = t, .values = vals };
			rc = otf2w_write(n, &ch, err, sizeof(err));
		}
		int crc = otf2w_close(w, rc ? NULL : err, rc ? 0 : sizeof(err));
		printf("\n    limit %ld, %d chunks: %s", limit, chunks, err);
		fflush(stdout);
		if (!rc && !crc)
			_exit(1);
		_exit((rc ? rc : crc) == -EFBIG && strstr(err, "traces/0.evt") ? 0 : 2);
	}
	return tp_wait(pid);
}

/* A full disk mid-recording and at the last flush: an error that names the file, never a crash. */
static void test_full_disk(void)
{
	/* ~12 bytes a sample: the 1 MiB chunks go out at ~87,000 samples */
	CU_ASSERT_EQUAL(write_limited(path("full1.otf2"), 3000000, 1000), 0); /* a flush while writing */
	CU_ASSERT_EQUAL(write_limited(path("full2.otf2"), 1100000, 100), 0);  /* the last flush, at close */
	CU_ASSERT_EQUAL(write_limited(path("full3.otf2"), 100000000, 100), 1); /* room enough: no error */
}

/* An earlier archive is replaced; a directory of the user's is not touched. */
static void test_replace(void)
{
	const char *a = path("again.otf2");
	CU_ASSERT_EQUAL_FATAL(write_fixture(&writer_otf2, a, NULL, 0), 0);
	CU_ASSERT_EQUAL_FATAL(write_fixture(&writer_otf2, a, NULL, 1), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(sh("otf2-print -G %s/traces.otf2", a), "GPU 1 XCC 1 SPM"));
	const char *u = path("mine.otf2");
	CU_ASSERT_EQUAL_FATAL(mkdir(u, 0755), 0);
	FILE *f = fopen(testenv_path(u, "notes.txt"), "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("keep\n", f);
	fclose(f);
	char err[512] = "";
	struct otf2w *w = NULL;
	CU_ASSERT_EQUAL(otf2w_open(&w, u, NULL, err, sizeof(err)), -ENOTEMPTY);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "not an OTF2 archive"));
	CU_ASSERT_EQUAL(access(testenv_path(u, "notes.txt"), F_OK), 0);
}

/* A real recording (emulated MI210): markers from 3 threads, overlapping phases, SPM and power. */
static void test_record(void)
{
	char app[4096], phases[4096], state[4096], d[4096];
	snprintf(app, sizeof(app), "%s/tests/helpers/marker_app", testenv_build_dir());
	snprintf(phases, sizeof(phases), "%s", path("phases.csv"));
	snprintf(state, sizeof(state), "%s", path("emu"));
	snprintf(d, sizeof(d), "%s", path("rec"));
	mkdir(state, 0755);
	/* A and B overlap without nesting; C nests in A; D in B */
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	int64_t b = (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
	FILE *f = fopen(phases, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fprintf(f, "start_ns,end_ns,name\n%" PRId64 ",%" PRId64 ",A\n%" PRId64 ",%" PRId64 ",B\n%" PRId64
		   ",%" PRId64 ",C\n%" PRId64 ",%" PRId64 ",D\n",
		b, b + 200000000, b + 100000000, b + 300000000, b + 20000000, b + 50000000, b + 150000000,
		b + 250000000);
	fclose(f);
	const char *args[] = { "--emulate", "mi210", "record", "--spm", "SQ_WAVES,SQ_BUSY_CYCLES", "--smi", "power",
			       "--phases", phases, "-f", "otf2,sqlite", "-d", d, "-o", "run", "--", app, "3", "40",
			       "2000", NULL };
	struct tp_opts o = { .err = path("rec.err") };
	int st = tp_wait(tp_spawn_spmtap(NULL, args, state, &o));
	if (st)
		printf("\n    %s", sh("tail -5 %s", path("rec.err")));
	CU_ASSERT_EQUAL_FATAL(st, 0);
	sh("otf2-print --silent -Werror %s/run.otf2/traces.otf2 2>&1", d);
	CU_ASSERT_EQUAL(sh_rc, 0);
	const char *out = sh("/usr/bin/python3 %s %s/run.otf2/traces.otf2 %s/run.db 2>&1", compare_script(), d, d);
	printf("\n    %s", out);
	CU_ASSERT_EQUAL(sh_rc, 0);
	/* 3 threads x 40 x 2 marker regions and the 4 phases, in both */
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "slices 244=244"));
	int cells = 0;
	CU_ASSERT(sscanf(out, "samples %d=", &cells) == 1 && cells > 100);
	const char *g = sh("otf2-print -G %s/run.otf2/traces.otf2", d);
	CU_ASSERT_PTR_NOT_NULL(strstr(g, "Name: \"phases (file) (overlap 1)\""));
	CU_ASSERT_PTR_NULL(strstr(g, "(overlap 2)"));
	/* the metadata lists the archive */
	CU_ASSERT_PTR_NOT_NULL(strstr(sh("cat %s/run_meta.json", d), "\"otf2\": \"run.otf2\""));
	/* a later run under the same NAME with other -f removes the archive with the rest of the old set */
	const char *again[] = { "--emulate", "mi210", "record", "--spm", "SQ_WAVES", "-f", "csv", "-d", d, "-o", "run",
				"--duration", "0.2", NULL };
	CU_ASSERT_EQUAL(tp_wait(tp_spawn_spmtap(NULL, again, state, &o)), 0);
	struct stat sb;
	CU_ASSERT_NOT_EQUAL(stat(testenv_path(d, "run.otf2"), &sb), 0);
	CU_ASSERT_EQUAL(stat(testenv_path(d, "run_spm.csv"), &sb), 0);
	/* `spmtap list` says OTF2 output is available */
	const char *list[] = { "--emulate", "mi210", "list", NULL };
	struct tp_opts lo = { .out = path("list.out") };
	CU_ASSERT_EQUAL(tp_wait(tp_spawn_spmtap(NULL, list, state, &lo)), 0);
	const char *l = sh("grep -A8 'Output formats' %s", path("list.out"));
	CU_ASSERT_PTR_NOT_NULL(strstr(l, "otf2      available"));
}

/*
 * Kernel dispatches of a real HSA application (examples/hsa on the emulated
 * MI210): every timed row of NAME_kernels.csv is an Enter/Leave pair on its
 * queue's location, with the same start, end and name.
 */
static const char *need_kernels(void)
{
	const char *why = need_tools();
	return why ? why : hsa_example_need();
}

static void test_kernels(void)
{
	char exe[4096], hsaco[4096], state[4096], d[4096];
	snprintf(exe, sizeof(exe), "%s/hsa_dispatch", hsa_example_dir());
	snprintf(hsaco, sizeof(hsaco), "%s/k.hsaco", hsa_example_dir());
	snprintf(state, sizeof(state), "%s", path("kemu"));
	snprintf(d, sizeof(d), "%s", path("krec"));
	mkdir(state, 0755);
	const char *args[] = { "--emulate", "mi210", "record", "--spm", "SQ_WAVES", "-f", "otf2,sqlite", "-d", d, "-o",
			       "run", "--", exe, hsaco, "2", "100", "many", NULL };
	struct tp_opts o = { .err = path("krec.err"), .out = path("krec.out") };
	int st = tp_wait(tp_spawn_spmtap(NULL, args, state, &o));
	if (st)
		printf("\n    %s", sh("tail -5 %s", path("krec.err")));
	CU_ASSERT_EQUAL_FATAL(st, 0);
	sh("otf2-print --silent -Werror %s/run.otf2/traces.otf2 2>&1", d);
	CU_ASSERT_EQUAL(sh_rc, 0);
	/* (start, end, name) of every timed CSV row against the kernel regions the reader sees */
	const char *r = sh("/usr/bin/python3 -c 'import otf2, collections, csv\n"
			   "want = collections.Counter((int(r[\"start_ns\"]), int(r[\"end_ns\"]), r[\"kernel\"])\n"
			   "  for r in csv.DictReader(open(\"%s/run_kernels.csv\")) if r[\"start_ns\"])\n"
			   "got = collections.Counter(); st = collections.defaultdict(list); locs = set()\n"
			   "with otf2.reader.open(\"%s/run.otf2/traces.otf2\") as t:\n"
			   "  for l, e in t.events:\n"
			   "    if not l.name.startswith(\"kernels queue\"): continue\n"
			   "    locs.add(l.name)\n"
			   "    if type(e).__name__ == \"Enter\": st[l.name].append(e)\n"
			   "    elif type(e).__name__ == \"Leave\":\n"
			   "      b = st[l.name].pop(); got[(b.time, e.time, e.region.name)] += 1\n"
			   "print(sum(want.values()), sum(got.values()), int(want == got), len(locs))'",
			   d, d);
	printf("\n    kernels in CSV, in OTF2, equal, queue locations: %s", r);
	int nw = 0, ng = 0, eq = 0, nl = 0;
	CU_ASSERT_EQUAL(sscanf(r, "%d %d %d %d", &nw, &ng, &eq, &nl), 4);
	CU_ASSERT_EQUAL(nw, 200);
	CU_ASSERT_EQUAL(ng, 200);
	CU_ASSERT_EQUAL(eq, 1);
	CU_ASSERT(nl >= 2);
	/* and the samples still agree with SQLite, kernels counted apart */
	const char *out = sh("/usr/bin/python3 %s %s/run.otf2/traces.otf2 %s/run.db 2>&1", compare_script(), d, d);
	CU_ASSERT_EQUAL(sh_rc, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "kernels 200,"));
}

/*
 * `spmtap merge -f otf2,sqlite` of 4 synthetic node recordings (tests/lib/synjob.h): one archive, a
 * location group per node, every merged value and phase of the merged SQLite in it, and per node one
 * ClockOffset of 0 (merge already put the times on rank 0's clock) whose stddev is the node's bound.
 */
static void test_merge(void)
{
	char job[4096], d[4096], cmd[4096];
	snprintf(job, sizeof(job), "%s", path("job"));
	snprintf(d, sizeof(d), "%s", path("merged"));
	struct synjob j = { .dir = job, .nodes = 4, .seconds = 0.3, .spm_hz = 2000, .smi_hz = 100, .phases = 3,
			    .sqlite = 1, .no_job_node = -1, .kernels = 1 };
	CU_ASSERT_EQUAL_FATAL(synjob_make(&j), 0);
	mkdir(d, 0755);
	snprintf(cmd, sizeof(cmd), "%s/spmtap merge -d %s -o m -f otf2,sqlite", testenv_build_dir(), d);
	for (unsigned k = 0; k < 4; k++)
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " %s/node%u/rec.db", job, k);
	const char *o = sh("%s 2>&1", cmd);
	if (sh_rc)
		printf("\n    %s", o);
	CU_ASSERT_EQUAL_FATAL(sh_rc, 0);
	sh("otf2-print --silent -Werror %s/m.otf2/traces.otf2 2>&1", d);
	CU_ASSERT_EQUAL(sh_rc, 0);
	const char *out = sh("/usr/bin/python3 %s %s/m.otf2/traces.otf2 %s/m.db 2>&1", compare_script(), d, d);
	printf("\n    merged: %s", out);
	CU_ASSERT_EQUAL(sh_rc, 0);
	/* the nodes' kernel dispatches (synjob: even nodes): the merged kernel_dispatch's timed rows as regions */
	const char *kr = sh("/usr/bin/python3 -c 'import otf2, collections, sqlite3\n"
			    "want = collections.Counter(sqlite3.connect(\"%s/m.db\").execute(\"SELECT start_ns, end_ns, kernel "
			    "FROM kernel_dispatch WHERE start_ns IS NOT NULL\").fetchall())\n"
			    "got = collections.Counter(); st = collections.defaultdict(list)\n"
			    "with otf2.reader.open(\"%s/m.otf2/traces.otf2\") as t:\n"
			    "  for l, e in t.events:\n"
			    "    if not l.name.startswith(\"kernels queue\"): continue\n"
			    "    k = (l.group.name, l.name)\n"
			    "    if type(e).__name__ == \"Enter\": st[k].append(e)\n"
			    "    elif type(e).__name__ == \"Leave\":\n"
			    "      b = st[k].pop(); got[(b.time, e.time, e.region.name)] += 1\n"
			    "print(sum(want.values()), sum(got.values()), int(want == got))' 2>&1",
			    d, d);
	printf("\n    merged kernels in SQLite, in OTF2, equal: %s", kr);
	int kw = 0, kg = 0, ke = 0;
	CU_ASSERT_EQUAL(sscanf(kr, "%d %d %d", &kw, &kg, &ke), 3);
	CU_ASSERT_EQUAL(kw, (int)(synjob_ndisp(0) + synjob_ndisp(2)));
	CU_ASSERT_EQUAL(kg, kw);
	CU_ASSERT_EQUAL(ke, 1);
	const char *g = sh("otf2-print -G %s/m.otf2/traces.otf2 | grep -c '^LOCATION_GROUP.*(rank [0-3])'", d);
	CU_ASSERT_EQUAL(atoi(g), 4);
	for (unsigned k = 0; k < 4; k++) {
		char want[96];
		snprintf(want, sizeof(want), "Offset: +0, StdDev: %" PRId64, synjob_bound(k));
		const char *c = sh("otf2-print -C %s/m.otf2/traces.otf2 | grep -c '%s$'", d, want);
		CU_ASSERT(atoi(c) >= 1);
	}
}

int main(int argc, char **argv)
{
	/* Under the emulator only for the HSA example's build directory (hsa_example.h); records start their own. */
	testenv_under_emu(argc, argv, "mi210", NULL);
	static const struct testenv_case cases[] = {
		{ "lookup", test_lookup, need_tools },
		{ "definitions", test_definitions, need_tools },
		{ "values_vs_sqlite", test_values_vs_sqlite, need_tools },
		{ "clock_offsets", test_clock_offsets, need_tools },
		{ "two_nodes", test_two_nodes, need_tools },
		{ "bounded_memory", test_bounded_memory, need_tools },
		{ "full_disk", test_full_disk, need_tools },
		{ "replace", test_replace, need_tools },
		{ "record", test_record, need_tools },
		{ "kernels", test_kernels, need_kernels },
		{ "merge", test_merge, need_tools },
		{ NULL, NULL, NULL },
	};
	if (!mkdtemp(dir))
		return 1;
	int rc = testenv_run_suite("write_otf2", cases, argc, argv);
	return testenv_remove_tmp(dir, rc);
}
