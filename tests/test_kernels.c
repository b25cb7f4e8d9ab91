/* SPDX-License-Identifier: MIT */
/*
 * Kernel dispatches seen from inside the application (docs/architecture.md
 * "Kernels"): examples/hsa in its `many` mode (4 threads, 2 queues, 5 kernel
 * names) under `spmtap record --spm SQ_WAVES -f csv -- app` on the emulated
 * MI210, with libspmtap-tool.so loaded by the real Debian ROCr through
 * HSA_TOOLS_LIB, checked against the emulator's dispatch truth:
 *  - many: 10,000 dispatches, none lost; names and counts equal the truth's;
 *    each row's start/end ticks equal its truth line's exactly (same queue
 *    ring index); start_ns/end_ns are the ticks mapped (durations to the
 *    ns, instants within the clock model's bound); the app's own
 *    hsa_amd_profiling_get_dispatch_time still works (it prints the raw
 *    ticks of its own signal, equal to the tool's); the two queues overlap;
 *  - no_kernels: --no-kernels loads no tool (no CSV, no "kernels" in the
 *    metadata) and the queues overlap there too;
 *  - perfetto: each dispatch is a slice on its queue's track under the GPU;
 *  - user_tool: an HSA_TOOLS_LIB already set is kept (no kernels recorded);
 *  - overflow: a 2-record channel (SPMTAP_KERNELS_CHANNEL_EVENTS=2): drops
 *    are counted, received + dropped = every dispatch, the app completes;
 *  - gpu: on two emulated GPUs the app dispatches on the second; each row
 *    says GPU 1 and is mapped through its clock (unmapped when it is not
 *    recorded);
 *  - killed: kill -9 leaves NAME_kernels.csv.part and the earlier file;
 *  - sqlite: -f sqlite's kernel_dispatch table against the truth (sqlite3
 *    CLI), and a stream's kernel_samples view;
 *  - api: spmtap_session_kernels() of a library session against the truth.
 * The suite runs on two emulated MI210s (case gpu); the others use GPU 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sys/mman.h>

#include "collector/lib/kernel_reader.h"
#include "collector/proto/perfetto_trace.pb-c.h"
#include "spmtap.h"
#include "hsa_example.h"
#include "jline.h"
#include "proc.h"
#include "testenv.h"

#define TICK_NS 10 /* the emulated GPU clock is 100 MHz (emu/shim/gpu_clock.c) */
/*
 * How far a mapped duration may be from ticks x 10 ns: the rounding of two
 * instants, and the timebase's piecewise mapping, whose segments need not
 * meet to the ns (seen: 3 ns on a 5 us kernel, once in several runs of
 * `many`; docs/formats/kernels-csv.md), plus a rate error far below 100 ppm.
 */
#define DUR_TOL(dt) (3 + (dt) / 10000)
#define CLOCK_OFFSET 0x1000000000ull /* SPMTAP_EMU_CLOCK_OFFSET's default (emu/shim/config.c) */
#define THREADS 4
#define NNAMES 5
static const char *const names[NNAMES] = { "add1", "scale", "nop", "saxpy", "zero" };

static const char *truth;
static const char *record_more; /* one more option for record(), or NULL */
static double overlap_with_tool = -1; /* overlapping pairs per dispatch in `many`, for no_kernels */

/* ---- rows ------------------------------------------------------------------------------------ */

struct row {
	unsigned long long queue, index, start, end, grid, start_ns, end_ns;
	long long pid, gpu; /* gpu: the CSV's column (-1 empty); the truth's KFD gpu_id */
	char name[48];
	bool used, mapped;
};

static int cmp_ticks(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}


/* The truth's user dispatches (KFD queue, ring index, ticks, name, grid). */
static struct row *read_truth(size_t *n)
{
	FILE *f = fopen(truth, "r");
	size_t cap = 1024;
	struct row *t = malloc(cap * sizeof(*t));
	char line[2048];
	*n = 0;
	while (f && t && fgets(line, sizeof(line), f)) {
		if (!strstr(line, "\"engine\":\"cp\"") || !strstr(line, "\"kind\":\"user\""))
			continue;
		if (*n == cap)
			t = realloc(t, (cap *= 2) * sizeof(*t));
		struct row *r = &t[*n];
		memset(r, 0, sizeof(*r));
		const char *g = strstr(line, "\"grid\":[");
		if (!jget_u64(line, "queue", &r->queue) || !jget_u64(line, "index", &r->index) ||
		    !jget_u64(line, "start_ts", &r->start) || !jget_u64(line, "end_ts", &r->end) || !g ||
		    sscanf(g + 8, "%llu", &r->grid) != 1 || !jget_str(line, "name", r->name, sizeof(r->name)))
			continue;
		unsigned long long gid = 0;
		r->gpu = jget_u64(line, "gpu_id", &gid) ? (long long)gid : -1;
		(*n)++;
	}
	if (f)
		fclose(f);
	return t;
}

/* NAME_kernels.csv (docs/formats/kernels-csv.md); NULL when it is not there. */
static struct row *read_csv(const char *path, size_t *n)
{
	FILE *f = fopen(path, "r");
	*n = 0;
	if (!f)
		return NULL;
	size_t cap = 1024;
	struct row *t = malloc(cap * sizeof(*t));
	char line[1024];
	if (!fgets(line, sizeof(line), f) ||
	    strcmp(line, "corr_id,pid,tid,queue_id,packet_index,kernel,grid_x,grid_y,grid_z,wg_x,wg_y,wg_z,start_ns,"
			 "end_ns,start_ticks,end_ticks,status,gpu\n")) {
		fprintf(stderr, "  unexpected header: %s", line);
		CU_FAIL("kernels CSV header");
	}
	while (t && fgets(line, sizeof(line), f)) {
		if (*n == cap)
			t = realloc(t, (cap *= 2) * sizeof(*t));
		struct row *r = &t[*n];
		memset(r, 0, sizeof(*r));
		/* Split at commas (the example's names have none); empty fields stay empty. */
		char *fld[18];
		int nf = 0;
		line[strcspn(line, "\n")] = 0;
		for (char *p = line; nf < 18; p++) {
			fld[nf++] = p;
			if (!(p = strchr(p, ',')))
				break;
			*p = 0;
		}
		if (nf != 18) {
			fprintf(stderr, "  bad CSV row: %s", line);
			CU_FAIL("kernels CSV row");
			continue;
		}
		unsigned long long gy = strtoull(fld[7], NULL, 10), gz = strtoull(fld[8], NULL, 10);
		unsigned long long wx = strtoull(fld[9], NULL, 10), wy = strtoull(fld[10], NULL, 10),
				   wz = strtoull(fld[11], NULL, 10);
		r->pid = atoll(fld[1]);
		r->queue = strtoull(fld[3], NULL, 10), r->index = strtoull(fld[4], NULL, 10);
		snprintf(r->name, sizeof(r->name), "%s", fld[5]);
		r->grid = strtoull(fld[6], NULL, 10);
		/* start_ns/end_ns empty: not mapped (its GPU has no timebase in this recording); kept as 0. */
		r->start_ns = strtoull(fld[12], NULL, 10), r->end_ns = strtoull(fld[13], NULL, 10);
		r->mapped = *fld[12] && *fld[13];
		r->start = strtoull(fld[14], NULL, 10), r->end = strtoull(fld[15], NULL, 10);
		int status = atoi(fld[16]);
		r->gpu = *fld[17] ? atoll(fld[17]) : -1;
		CU_ASSERT_EQUAL(status, 0);
		CU_ASSERT(gy == 1 && gz == 1 && wx == 64 && wy == 1 && wz == 1);
		(*n)++;
	}
	fclose(f);
	return t;
}

/* The metadata's "kernels" object (NULL: none), as a new reference. */
static json_t *meta_kernels(const char *dir)
{
	json_t *m = json_load_file(testenv_path(dir, "run_meta.json"), 0, NULL);
	json_t *k = m ? json_object_get(m, "kernels") : NULL;
	json_incref(k);
	json_decref(m);
	return k;
}

static long long jint(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

/* Runs argv with extra "K=V" environment; stdout into a malloc'd string. */
static int run(char *const argv[], const char *const *env, char **out)
{
	return tp_capture((const char *const *)argv, &(struct tp_opts){ .env = env }, out);
}

/*
 * Overlapping pairs across the two user queues in the truth: per queue the
 * dispatches run in order, one at a time, so a two-pointer sweep counts them.
 */
static long overlaps(struct row *t, size_t n)
{
	qsort(t, n, sizeof(*t), cmp_ticks);
	long c = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n && t[j].start < t[i].end; j++)
			c += t[j].queue != t[i].queue;
	return c;
}

/* Records `spmtap record ... -- hsa_dispatch k.hsaco 4 PER many` into DIR/run*; the app's stdout in *out. */
static int record(const char *dir, int per, const char *extra_opt, const char *env0, char **out)
{
	char exe[PATH_MAX + 32], hsaco[PATH_MAX + 32], th[8], pt[16], spmtap[PATH_MAX + 32];
	snprintf(exe, sizeof(exe), "%s/hsa_dispatch", hsa_example_dir());
	snprintf(hsaco, sizeof(hsaco), "%s/k.hsaco", hsa_example_dir());
	snprintf(th, sizeof(th), "%d", THREADS);
	snprintf(pt, sizeof(pt), "%d", per);
	snprintf(spmtap, sizeof(spmtap), "%s/spmtap", testenv_build_dir());
	char *argv[24];
	int a = 0;
	argv[a++] = spmtap, argv[a++] = "record", argv[a++] = "--spm", argv[a++] = "SQ_WAVES";
	/* extra_opt "-fFORMATS" replaces the default -f csv; any other option is added. */
	bool fmt = extra_opt && !strncmp(extra_opt, "-f", 2);
	argv[a++] = "-d", argv[a++] = (char *)dir, argv[a++] = "-o", argv[a++] = "run", argv[a++] = "-f";
	argv[a++] = fmt ? (char *)extra_opt + 2 : "csv";
	if (extra_opt && !fmt)
		argv[a++] = (char *)extra_opt;
	if (record_more)
		argv[a++] = (char *)record_more;
	argv[a++] = "--", argv[a++] = exe, argv[a++] = hsaco, argv[a++] = th, argv[a++] = pt, argv[a++] = "many";
	argv[a] = NULL;
	/*
	 * Two names take 100 us instead of the default ~5 us: with only tiny kernels each one ends before
	 * the CP's next doorbell poll (20 us) and the queues could not overlap even unserialised.
	 */
	const char *env[] = { "SPMTAP_EMU_KERNEL_NS=add1=100000,saxpy=100000", env0, NULL };
	unlink(truth);
	return run(argv, env, out);
}

static const char *need(void) { return hsa_example_need(); }

#define PER_THREAD 2500 /* 4 x 2500 = 10,000 dispatches */

static void test_many(void)
{
	char dir[PATH_MAX], csv[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", testenv_path(testenv_tmpdir(), "many"));
	snprintf(csv, sizeof(csv), "%s", testenv_path(dir, "run_kernels.csv"));
	struct timespec b, r;
	clock_gettime(CLOCK_BOOTTIME, &b);
	clock_gettime(CLOCK_MONOTONIC_RAW, &r);
	long long boot_minus_raw = ((long long)b.tv_sec - r.tv_sec) * 1000000000ll + (b.tv_nsec - r.tv_nsec);
	char *out = NULL;
	CU_ASSERT_EQUAL_FATAL(record(dir, PER_THREAD, NULL, NULL, &out), 0);
	const size_t want = THREADS * PER_THREAD;

	size_t nt, nc;
	struct row *t = read_truth(&nt), *c = read_csv(csv, &nc);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(nt, want);
	CU_ASSERT_EQUAL(nc, want); /* zero lost */
	json_t *k = meta_kernels(dir);
	CU_ASSERT_PTR_NOT_NULL_FATAL(k);
	CU_ASSERT_EQUAL(jint(k, "received"), (long long)want);
	CU_ASSERT_EQUAL(jint(k, "dropped_channel_full"), 0);
	CU_ASSERT_EQUAL(jint(k, "threads_refused"), 0);
	CU_ASSERT_EQUAL(jint(k, "untimed"), 0);
	CU_ASSERT_EQUAL(jint(k, "unnamed"), 0);
	CU_ASSERT_EQUAL(jint(k, "queues"), 2);
	json_decref(k);

	/* Names and counts equal the truth's; every row is one truth line, ticks and index exactly. */
	size_t cnt_c[NNAMES] = { 0 }, cnt_t[NNAMES] = { 0 };
	for (size_t i = 0; i < nt; i++)
		for (int j = 0; j < NNAMES; j++)
			cnt_t[j] += !strcmp(t[i].name, names[j]);
	qsort(t, nt, sizeof(*t), cmp_ticks);
	size_t matched = 0, tight_miss = 0;
	long long worst_abs = 0, worst_dur = 0;
	/* The timebase's worst-case error of one instant (the metadata's timebase[0].bound_ns). */
	json_t *mt = json_load_file(testenv_path(dir, "run_meta.json"), 0, NULL);
	long long bound = (long long)json_number_value(json_object_get(json_array_get(json_object_get(mt, "timebase"), 0),
								      "bound_ns"));
	json_decref(mt);
	CU_ASSERT(bound > 0);
	for (size_t i = 0; i < nc; i++) {
		struct row *x = &c[i];
		for (int j = 0; j < NNAMES; j++)
			cnt_c[j] += !strcmp(x->name, names[j]);
		struct row key = { .start = x->start, .end = x->end, .index = x->index };
		struct row *m = bsearch(&key, t, nt, sizeof(*t), cmp_ticks);
		if (m && !m->used && !strcmp(m->name, x->name) && m->grid == x->grid) {
			m->used = true;
			matched++;
		} else if (i - matched < 5) {
			fprintf(stderr, "  no truth line for %s %llu..%llu index %llu\n", x->name, x->start, x->end,
				x->index);
		}
		/*
		 * start_ns/end_ns are the ticks through the session's timebase: a
		 * duration keeps its length to the ns (rounding of two instants
		 * plus a rate error far below 100 ppm); an instant equals the
		 * emulated clock's model (RAW / 10 ns + offset, then BOOTTIME -
		 * RAW) within 1 ms, which covers NTP slew between RAW and
		 * BOOTTIME over the run (the timebase's own bound is in the
		 * metadata and the summary, typically < 1 us).
		 */
		long long dns = (long long)(x->end_ns - x->start_ns), dt = (long long)(x->end - x->start) * TICK_NS;
		long long ed = llabs(dns - dt), ea = llabs((long long)x->start_ns -
							  ((long long)(x->start - CLOCK_OFFSET) * TICK_NS + boot_minus_raw));
		/*
		 * Each fit window is a segment of its own, so a kernel that spans a
		 * boundary between two takes their step (ASan in CI once: 5 ns on a
		 * duration under 20 us).  Every duration stays within the stated
		 * bound of its two instants; the tight tolerance holds for all but
		 * the few that span a boundary.
		 */
		if (ed > DUR_TOL(dt))
			tight_miss++;
		CU_ASSERT(ed <= DUR_TOL(dt) + 2 * bound);
		CU_ASSERT(ea < 1000000);
		CU_ASSERT(x->mapped);
		CU_ASSERT_EQUAL(x->gpu, 0); /* the first GPU agent is GPU 0, the one recorded */
		worst_dur = ed > worst_dur ? ed : worst_dur;
		worst_abs = ea > worst_abs ? ea : worst_abs;
	}
	CU_ASSERT_EQUAL(matched, want);
	if (tight_miss)
		fprintf(stderr, "  [%zu durations beyond %d ns + 100 ppm, within 2 x the bound of %lld ns]\n", tight_miss,
			3, bound);
	CU_ASSERT(tight_miss <= nc / 100);
	for (int j = 0; j < NNAMES; j++) {
		CU_ASSERT_EQUAL(cnt_c[j], cnt_t[j]);
		CU_ASSERT_EQUAL(cnt_c[j], want / NNAMES);
	}

	/* The app's own profiling under the tool: its signal's raw ticks are the tool's, and valid. */
	size_t napp = 0, appmatch = 0;
	for (struct row *x = c; x < c + nc; x++)
		x->used = false;
	qsort(c, nc, sizeof(*c), cmp_ticks);
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		struct row a = { 0 };
		unsigned long long sns, ens;
		if (!jget_u64(line, "start_ts", &a.start) || !jget_u64(line, "end_ts", &a.end) ||
		    !jget_u64(line, "packet", &a.index) || !jget_u64(line, "start_ns", &sns) ||
		    !jget_u64(line, "end_ns", &ens))
			continue;
		napp++;
		struct row *m = bsearch(&a, c, nc, sizeof(*c), cmp_ticks);
		if (m && !m->used && sns > 0 && ens >= sns) {
			m->used = true;
			appmatch++;
		}
	}
	CU_ASSERT_EQUAL(napp, want);
	CU_ASSERT_EQUAL(appmatch, want);

	/* Not serialised: the two queues' dispatches overlap in the truth. */
	long ov = overlaps(t, nt);
	CU_ASSERT(ov > 0);
	overlap_with_tool = (double)ov / (double)nt;
	fprintf(stderr, "  [%zu dispatches, %zu matched, %ld overlapping pairs across queues; worst |duration "
			"ns - ticks*10| %lld ns, worst |start_ns - model| %lld ns]\n",
		nc, matched, ov, worst_dur, worst_abs);
	free(t);
	free(c);
	free(out);
}

static void test_no_kernels(void)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", testenv_path(testenv_tmpdir(), "nok"));
	char *out = NULL;
	CU_ASSERT_EQUAL_FATAL(record(dir, 500, "--no-kernels", NULL, &out), 0);
	CU_ASSERT_EQUAL(access(testenv_path(dir, "run_kernels.csv"), F_OK), -1);
	json_t *k = meta_kernels(dir);
	CU_ASSERT_PTR_NULL(k);
	json_decref(k);
	size_t nt;
	struct row *t = read_truth(&nt);
	CU_ASSERT_EQUAL(nt, THREADS * 500);
	long ov = overlaps(t, nt);
	CU_ASSERT(ov > 0);
	/*
	 * As often with the tool as without: overlapping pairs per dispatch, the same workload, within a
	 * factor of two (measured: 0.52 with, 0.51 without).  A tool that serialised (a barrier or a wait
	 * per dispatch) leaves none.
	 */
	double without = (double)ov / (double)nt;
	if (overlap_with_tool >= 0)
		CU_ASSERT(overlap_with_tool >= without / 2);
	fprintf(stderr, "  [without the tool: %zu dispatches, %ld overlapping pairs across queues: %.2f per dispatch, "
			"%.2f with the tool]\n", nt, ov, without, overlap_with_tool);
	free(t);
	free(out);
}

static void test_overflow(void)
{
	char dir[PATH_MAX], csv[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", testenv_path(testenv_tmpdir(), "overflow"));
	snprintf(csv, sizeof(csv), "%s", testenv_path(dir, "run_kernels.csv"));
	char *out = NULL;
	const int per = 500;
	/* The app completes: a full channel drops, it never waits. */
	CU_ASSERT_EQUAL_FATAL(record(dir, per, NULL, "SPMTAP_KERNELS_CHANNEL_EVENTS=2", &out), 0);
	size_t nc, nt;
	struct row *c = read_csv(csv, &nc), *t = read_truth(&nt);
	json_t *k = meta_kernels(dir);
	CU_ASSERT_PTR_NOT_NULL_FATAL(k);
	long long recv = jint(k, "received"), drop = jint(k, "dropped_channel_full");
	CU_ASSERT_EQUAL(jint(k, "channel_events"), 2);
	CU_ASSERT(drop > 0);
	CU_ASSERT_EQUAL(recv + drop, THREADS * per);
	CU_ASSERT_EQUAL((long long)nc, recv);
	CU_ASSERT_EQUAL(nt, (size_t)(THREADS * per));
	fprintf(stderr, "  [2-record channel: %lld received, %lld dropped of %d]\n", recv, drop, THREADS * per);
	json_decref(k);
	free(c);
	free(t);
	free(out);
}

/*
 * The reader against a writer that does what the tool does, and one that
 * does not: records come out as written, drops are the slot's count, and a
 * head beyond what the ring can hold (a broken or hostile app) reads no more
 * than one ring and never past it; a name without its NUL is cut and counted.
 */
static void test_channel(void)
{
	setenv(KD_ENV_EVENTS, "8", 1);
	struct kd_reader *r = NULL;
	int fd = -1;
	char err[256];
	CU_ASSERT_EQUAL_FATAL(kd_reader_create(&r, &fd, err, sizeof(err)), 0);
	unsetenv(KD_ENV_EVENTS);
	struct kd_header *h = mmap(NULL, kd_channel_bytes(8), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CU_ASSERT_FATAL(h != MAP_FAILED);
	CU_ASSERT_EQUAL(h->magic, KD_MAGIC);
	CU_ASSERT_EQUAL(h->nevents, 8);
	/* A writer claims slot 0 and writes 5 records. */
	h->next_slot = 1;
	h->slot[0].claimed = 1;
	struct kd_record *ring = kd_ring(h, 0);
	for (int i = 0; i < 5; i++) {
		memset(&ring[i], 0, sizeof(ring[i]));
		ring[i].corr = (uint64_t)i + 1;
		ring[i].start_ticks = 100u + (uint64_t)i;
		ring[i].end_ticks = 200u + (uint64_t)i;
		snprintf(ring[i].name, KD_NAME, "k%d", i);
	}
	h->slot[0].head = 5;
	h->slot[0].dropped = 3;
	CU_ASSERT_EQUAL(kd_reader_poll(r), 5);
	size_t n;
	const struct kd_record *rec = kd_reader_records(r, &n);
	CU_ASSERT_EQUAL_FATAL(n, 5);
	for (int i = 0; i < 5; i++) {
		CU_ASSERT_EQUAL(rec[i].corr, (uint64_t)i + 1);
		CU_ASSERT_EQUAL(rec[i].end_ticks, 200u + (uint64_t)i);
		char want[8];
		snprintf(want, sizeof(want), "k%d", i);
		CU_ASSERT_STRING_EQUAL(rec[i].name, want);
	}
	CU_ASSERT_EQUAL(h->slot[0].tail, 5);
	CU_ASSERT_EQUAL(kd_reader_dropped(r), 3);
	/* A head 1000 ahead: one ring's worth is read, no more; a name with no NUL is cut. */
	memset(ring[5].name, 'x', KD_NAME);
	h->slot[0].head = 5 + 1000;
	CU_ASSERT_EQUAL(kd_reader_poll(r), 8);
	rec = kd_reader_records(r, &n);
	CU_ASSERT_EQUAL(n, 13);
	CU_ASSERT_EQUAL(strlen(rec[5].name), KD_NAME - 1);
	json_t *j = kd_reader_json(r);
	CU_ASSERT_EQUAL(jint(j, "received"), 13);
	CU_ASSERT_EQUAL(jint(j, "dropped_channel_full"), 3);
	CU_ASSERT(jint(j, "bad_names") >= 1);
	json_decref(j);
	/*
	 * The app rewrites the header's ring length and rewinds the shared tail: the reader keeps its
	 * own (8, and 13 read), so it neither reads past the segment nor reads the records again.
	 */
	h->slot[0].head = 13;
	h->nevents = 1u << 30;
	h->slot[0].tail = 0;
	CU_ASSERT_EQUAL(kd_reader_poll(r), 0);
	kd_reader_records(r, &n);
	CU_ASSERT_EQUAL(n, 13);
	h->slot[0].head = 13 + 2;
	CU_ASSERT_EQUAL(kd_reader_poll(r), 2);
	kd_reader_records(r, &n);
	CU_ASSERT_EQUAL(n, 15);
	/* A head behind what was read: nothing (not a ring of old records). */
	h->slot[0].head = 3;
	CU_ASSERT_EQUAL(kd_reader_poll(r), 0);
	kd_reader_records(r, &n);
	CU_ASSERT_EQUAL(n, 15);
	h->nevents = 8;
	/* An unclaimed slot is not read, whatever its head says. */
	h->slot[0].head = h->slot[0].tail;
	h->next_slot = 2;
	h->slot[1].head = 4;
	CU_ASSERT_EQUAL(kd_reader_poll(r), 0);
	kd_reader_records(r, &n);
	CU_ASSERT_EQUAL(n, 15);
	munmap(h, kd_channel_bytes(8));
	kd_reader_free(r);
}

/*
 * -f csv,pftrace: every dispatch of the CSV is one slice in the trace, on a
 * "kernels: queue Q (pid P)" track under the GPU's track, at the CSV's
 * start_ns/end_ns, named as in the CSV; the phases file gets none of them.
 */
/* Records into DIR (run.pftrace beside the CSV) and checks the queue tracks sit under "GPU<gpu>". */
static void check_perfetto(const char *sub, const char *env0, unsigned gpu)
{
	char dir[PATH_MAX], csv[PATH_MAX], pf[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", testenv_path(testenv_tmpdir(), sub));
	snprintf(csv, sizeof(csv), "%s", testenv_path(dir, "run_kernels.csv"));
	snprintf(pf, sizeof(pf), "%s", testenv_path(dir, "run.pftrace"));
	char *out = NULL;
	const int per = 100;
	CU_ASSERT_EQUAL_FATAL(record(dir, per, "-fcsv,pftrace", env0, &out), 0);
	free(out);
	size_t nc;
	struct row *c = read_csv(csv, &nc);
	CU_ASSERT_EQUAL_FATAL(nc, (size_t)(THREADS * per));
	CU_ASSERT_EQUAL(access(testenv_path(dir, "run_phases.csv"), F_OK), -1);
	FILE *f = fopen(pf, "rb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)len);
	CU_ASSERT_FATAL(b && fread(b, 1, (size_t)len, f) == (size_t)len);
	fclose(f);
	Perfetto__Protos__Trace *t = perfetto__protos__trace__unpack(NULL, (size_t)len, b);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	/* Tracks: the kernel queues' uuids (and that their parent is a "GPU..." track). */
	uint64_t kq[8] = { 0 }, gpu_uuid = 0, parent[8] = { 0 };
	size_t nkq = 0, ngpu = 0;
	char gname[16];
	snprintf(gname, sizeof(gname), "GPU%u ", gpu);
	for (size_t i = 0; i < t->n_packet; i++) {
		const Perfetto__Protos__TrackDescriptor *d = t->packet[i]->track_descriptor;
		if (!d || !d->name)
			continue;
		if (!strncmp(d->name, "kernels: queue ", 15) && nkq < 8) {
			parent[nkq] = d->has_parent_uuid ? d->parent_uuid : 0;
			kq[nkq++] = d->uuid;
		} else if (!strncmp(d->name, gname, strlen(gname)) && !strstr(d->name, "XCC")) {
			gpu_uuid = d->uuid;
			ngpu++;
		}
	}
	CU_ASSERT_EQUAL(nkq, 2); /* one per queue */
	for (size_t k = 0; k < nkq; k++)
		CU_ASSERT(ngpu == 1 && parent[k] == gpu_uuid);
	/* Slices on those tracks: as many as rows, each begin at a row's start_ns with its name. */
	for (struct row *x = c; x < c + nc; x++)
		x->used = false;
	size_t nsl = 0, matched = 0;
	for (size_t i = 0; i < t->n_packet; i++) {
		const Perfetto__Protos__TracePacket *p = t->packet[i];
		const Perfetto__Protos__TrackEvent *e = p->track_event;
		if (!e || !e->has_track_uuid || e->type != PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN)
			continue;
		bool mine = false;
		for (size_t k = 0; k < nkq; k++)
			mine |= e->track_uuid == kq[k];
		if (!mine)
			continue;
		nsl++;
		for (struct row *x = c; x < c + nc; x++)
			if (!x->used && x->start_ns == p->timestamp && e->name && !strcmp(e->name, x->name)) {
				x->used = true;
				matched++;
				break;
			}
	}
	CU_ASSERT_EQUAL(nsl, nc);
	CU_ASSERT_EQUAL(matched, nc);
	fprintf(stderr, "  [%zu dispatches, %zu slices on %zu queue tracks under GPU %u]\n", nc, nsl, nkq, gpu);
	perfetto__protos__trace__free_unpacked(t, NULL);
	free(b);
	free(c);
}

static void test_perfetto(void)
{
	check_perfetto("pf", NULL, 0);
}


/* A user's HSA_TOOLS_LIB is kept, not replaced: no channel, no CSV, the app runs (ROCr says its tool is missing). */
static void test_user_tool(void)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", testenv_path(testenv_tmpdir(), "usertool"));
	char *out = NULL;
	CU_ASSERT_EQUAL_FATAL(record(dir, 10, NULL, "HSA_TOOLS_LIB=/nonexistent/libusertool.so", &out), 0);
	CU_ASSERT_EQUAL(access(testenv_path(dir, "run_kernels.csv"), F_OK), -1);
	json_t *k = meta_kernels(dir);
	CU_ASSERT_PTR_NULL(k);
	json_decref(k);
	size_t nt;
	free(read_truth(&nt));
	CU_ASSERT_EQUAL(nt, THREADS * 10);
	free(out);
}

static size_t file_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;
	buf[n] = 0;
	if (f)
		fclose(f);
	return n;
}

static size_t lines_in(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;
	int ch;
	while (f && (ch = fgetc(f)) != EOF)
		n += ch == '\n';
	if (f)
		fclose(f);
	return n;
}

/*
 * NAME_kernels.csv is one of the recording's set (outset.h): a recorder
 * killed with SIGKILL while the app dispatches leaves NAME_kernels.csv.part
 * (header only: the records were in memory) and the earlier run's finished
 * file byte for byte; the next clean run removes the stale .part, replaces
 * the file and lists it in the metadata's files.
 */
static void test_killed(void)
{
	char dir[PATH_MAX], csv[PATH_MAX], part[PATH_MAX + 8];
	snprintf(dir, sizeof(dir), "%s", testenv_path(testenv_tmpdir(), "killed"));
	snprintf(csv, sizeof(csv), "%s", testenv_path(dir, "run_kernels.csv"));
	snprintf(part, sizeof(part), "%s.part", csv);
	char *out = NULL;
	CU_ASSERT_EQUAL_FATAL(record(dir, 20, NULL, NULL, &out), 0);
	free(out);
	static char before[1 << 16], after[1 << 16];
	size_t nb = file_text(csv, before, sizeof(before));
	CU_ASSERT_EQUAL_FATAL(lines_in(csv), (size_t)(THREADS * 20 + 1));

	/* A long run in its own process group (the recorder and its app), killed once dispatches flow. */
	char exe[PATH_MAX + 32], hsaco[PATH_MAX + 32], spmtap[PATH_MAX + 32];
	snprintf(exe, sizeof(exe), "%s/hsa_dispatch", hsa_example_dir());
	snprintf(hsaco, sizeof(hsaco), "%s/k.hsaco", hsa_example_dir());
	snprintf(spmtap, sizeof(spmtap), "%s/spmtap", testenv_build_dir());
	char *argv[] = { spmtap, "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "run", "-f", "csv", "--", exe,
			 hsaco, "4", "200000", "many", NULL };
	unlink(truth);
	pid_t pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		int nul = open("/dev/null", O_WRONLY);
		dup2(nul, 1);
		dup2(nul, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	CU_ASSERT_FATAL(pid > 0);
	setpgid(pid, pid);
	/* Until the truth holds user dispatches (up to 120 s on a loaded machine). */
	size_t nt = 0;
	for (int k = 0; k < 1200 && nt < 100; k++) {
		usleep(100 * 1000);
		free(read_truth(&nt));
	}
	CU_ASSERT(nt >= 100);
	CU_ASSERT_EQUAL(access(part, F_OK), 0); /* in the set from the start */
	kill(-pid, SIGKILL);
	int st;
	waitpid(pid, &st, 0);
	CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	usleep(200 * 1000); /* the app, in the same group, is gone too */
	CU_ASSERT_EQUAL(access(part, F_OK), 0);
	CU_ASSERT_EQUAL(lines_in(part), 1);
	size_t na = file_text(csv, after, sizeof(after));
	CU_ASSERT(na == nb && !memcmp(before, after, nb));

	/* The next clean run: the stale .part goes, the file is this run's, listed in files. */
	CU_ASSERT_EQUAL_FATAL(record(dir, 10, NULL, NULL, &out), 0);
	free(out);
	CU_ASSERT_EQUAL(access(part, F_OK), -1);
	CU_ASSERT_EQUAL(lines_in(csv), (size_t)(THREADS * 10 + 1));
	json_t *m = json_load_file(testenv_path(dir, "run_meta.json"), 0, NULL);
	const char *listed = json_string_value(json_object_get(json_object_get(m, "files"), "kernels"));
	CU_ASSERT(listed && !strcmp(listed, "run_kernels.csv"));
	json_decref(m);
}

/* sqlite3 DB "SQL" (the real client): its stdout, malloc'd; NULL when it failed. */
static char *sql(const char *db, const char *q)
{
	size_t n = strlen(db) + strlen(q) + 64;
	char *cmd = malloc(n);
	snprintf(cmd, n, "env -u LD_PRELOAD sqlite3 '%s' \"%s\"", db, q);
	char *out = NULL;
	char *const argv[] = { "/bin/sh", "-c", cmd, NULL };
	int rc = run(argv, NULL, &out);
	free(cmd);
	if (rc) {
		fprintf(stderr, "  sqlite3 failed (%d): %s\n", rc, q);
		free(out);
		return NULL;
	}
	return out;
}

static const char *need_sqlite(void)
{
	const char *w = hsa_example_need();
	return w ? w : testenv_need_sqlite3_cli();
}

/*
 * -f sqlite: the kernel_dispatch table holds every dispatch of `many`, each
 * one truth line (ticks, ring index, name, grid), mapped (start_ns/end_ns,
 * dur_ns of kernel_dispatch_v to the ns), names and counts equal to the
 * truth's; kernel_samples_<stream> (SQ_WAVES per kernel) holds exactly the
 * (dispatch, sample) pairs with start_ns <= host_ns < end_ns counted here
 * from the two tables, seeks the stream's table per dispatch, and the
 * 100 us kernels have waves (the emulated counters follow the kernels).
 */
static void test_sqlite(void)
{
	char dir[PATH_MAX], db[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", testenv_path(testenv_tmpdir(), "sqlite"));
	snprintf(db, sizeof(db), "%s", testenv_path(dir, "run.db"));
	char *out = NULL;
	CU_ASSERT_EQUAL_FATAL(record(dir, PER_THREAD, "-fsqlite", NULL, &out), 0);
	free(out);
	const size_t want = THREADS * PER_THREAD;
	size_t nt;
	struct row *t = read_truth(&nt);
	CU_ASSERT_EQUAL_FATAL(nt, want);
	qsort(t, nt, sizeof(*t), cmp_ticks);

	/* Every row is one truth line; mapped; on GPU 0; dur_ns is the ticks' length. */
	char *rows = sql(db, "SELECT start_ticks, end_ticks, packet_index, kernel, grid_x, gpu, start_ns IS NOT NULL, "
			     "dur_ns FROM kernel_dispatch_v");
	CU_ASSERT_PTR_NOT_NULL_FATAL(rows);
	size_t n = 0, matched = 0, bad = 0;
	for (char *line = strtok(rows, "\n"); line; line = strtok(NULL, "\n"), n++) {
		struct row k = { 0 };
		long long gpu = -1, mapped = 0, dur = 0;
		if (sscanf(line, "%llu|%llu|%llu|%47[^|]|%llu|%lld|%lld|%lld", &k.start, &k.end, &k.index, k.name,
			   &k.grid, &gpu, &mapped, &dur) != 8) {
			bad++;
			continue;
		}
		struct row *m = bsearch(&k, t, nt, sizeof(*t), cmp_ticks);
		if (m && !m->used && !strcmp(m->name, k.name) && m->grid == k.grid) {
			m->used = true;
			matched++;
		}
		long long dt = (long long)(k.end - k.start) * TICK_NS;
		bad += gpu != 0 || !mapped || llabs(dur - dt) > DUR_TOL(dt);
	}
	free(rows);
	CU_ASSERT_EQUAL(n, want);
	CU_ASSERT_EQUAL(matched, want);
	CU_ASSERT_EQUAL(bad, 0);

	/* Names and counts, by the index on kernel. */
	char *counts = sql(db, "SELECT kernel, count(*) FROM kernel_dispatch GROUP BY kernel ORDER BY kernel");
	CU_ASSERT_PTR_NOT_NULL_FATAL(counts);
	char expect[256] = "";
	const char *sorted[NNAMES] = { "add1", "nop", "saxpy", "scale", "zero" };
	for (int j = 0; j < NNAMES; j++) {
		size_t c = 0;
		for (size_t i = 0; i < nt; i++)
			c += !strcmp(t[i].name, sorted[j]);
		snprintf(expect + strlen(expect), sizeof(expect) - strlen(expect), "%s|%zu\n", sorted[j], c);
	}
	CU_ASSERT_STRING_EQUAL(counts, expect);
	free(counts);

	/* The stream's view against the pairs counted here from the two tables. */
	char *sid = sql(db, "SELECT id FROM stream WHERE source = 'spm' AND gpu = 0 AND xcc = 0");
	CU_ASSERT_PTR_NOT_NULL_FATAL(sid);
	unsigned id = (unsigned)atoi(sid);
	free(sid);
	char q[512];
	snprintf(q, sizeof(q), "SELECT host_ns FROM samples_%u ORDER BY host_ns", id);
	char *hs = sql(db, q);
	char *ds = sql(db, "SELECT start_ns, end_ns FROM kernel_dispatch WHERE gpu = 0 ORDER BY start_ns");
	CU_ASSERT_PTR_NOT_NULL_FATAL(hs);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ds);
	size_t ns = 0, cap = 1 << 16;
	long long *h = malloc(cap * sizeof(*h));
	for (char *p = strtok(hs, "\n"); p; p = strtok(NULL, "\n")) {
		if (ns == cap)
			h = realloc(h, (cap *= 2) * sizeof(*h));
		h[ns++] = atoll(p);
	}
	long long pairs = 0;
	for (char *p = strtok(ds, "\n"); p; p = strtok(NULL, "\n")) {
		long long a = 0, b = 0;
		sscanf(p, "%lld|%lld", &a, &b);
		size_t lo = 0, hi = ns; /* first sample at or after a */
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (h[mid] < a)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t i = lo; i < ns && h[i] < b; i++)
			pairs++;
	}
	free(h);
	free(hs);
	free(ds);
	snprintf(q, sizeof(q), "SELECT count(*) FROM kernel_samples_%u", id);
	char *vc = sql(db, q);
	CU_ASSERT_PTR_NOT_NULL_FATAL(vc);
	CU_ASSERT_EQUAL(atoll(vc), pairs);
	CU_ASSERT(pairs > 0);
	free(vc);
	snprintf(q, sizeof(q), "SELECT kernel, count(*), sum(SQ_WAVES) FROM kernel_samples_%u GROUP BY kernel "
			       "ORDER BY kernel", id);
	char *per = sql(db, q);
	CU_ASSERT_PTR_NOT_NULL_FATAL(per);
	fprintf(stderr, "  [%zu dispatches, %zu matched; samples within dispatches: %lld; per kernel "
			"(kernel|samples|SQ_WAVES):\n%s]\n", n, matched, pairs, per);
	for (char *p = strtok(per, "\n"); p; p = strtok(NULL, "\n")) {
		char name[48];
		long long c = 0, waves = 0;
		if (sscanf(p, "%47[^|]|%lld|%lld", name, &c, &waves) == 3 &&
		    (!strcmp(name, "add1") || !strcmp(name, "saxpy")))
			CU_ASSERT(c > 0 && waves > 0);
	}
	free(per);
	/* One seek of the stream's table per dispatch, not a scan. */
	snprintf(q, sizeof(q), "EXPLAIN QUERY PLAN SELECT kernel, sum(SQ_WAVES) FROM kernel_samples_%u GROUP BY kernel",
		 id);
	char *plan = sql(db, q);
	CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
	CU_ASSERT_PTR_NOT_NULL(strstr(plan, "USING PRIMARY KEY (host_ns>? AND host_ns<?)"));
	if (!strstr(plan, "USING PRIMARY KEY (host_ns>? AND host_ns<?)"))
		fprintf(stderr, "%s\n", plan);
	free(plan);
	free(t);
}

struct api_seen {
	struct row *t; /* the truth, sorted by ticks */
	size_t nt, n, matched, bad;
};

static int api_one(const struct spmtap_kernel_dispatch *d, void *user)
{
	struct api_seen *a = user;
	struct row k = { .start = d->start_ticks, .end = d->end_ticks, .index = d->packet_index };
	struct row *m = bsearch(&k, a->t, a->nt, sizeof(*a->t), cmp_ticks);
	a->n++;
	if (m && !m->used && !strcmp(m->name, d->kernel) && m->grid == d->grid[0]) {
		m->used = true;
		a->matched++;
	}
	long long dt = (long long)(d->end_ticks - d->start_ticks) * TICK_NS, dns = d->end_ns - d->start_ns;
	bool bad = d->gpu != 0 || d->status || d->start_ns < 0 || llabs(dns - dt) > DUR_TOL(dt) || d->wg[0] != 64 ||
		   d->pid == 0 || d->corr_id == 0;
	/* Which field: a failure seen once in CI (1 of 1000) could not be told apart. */
	if (bad && a->bad < 5)
		fprintf(stderr,
			"  [API: not as expected: %s gpu %d status %d start_ns %lld ticks %" PRIu64 "..%" PRIu64
			" mapped %lld ns vs %lld ns (tolerance %lld) wg %u pid %d corr_id %" PRIu64 "]\n",
			d->kernel, (int)d->gpu, (int)d->status, (long long)d->start_ns, (uint64_t)d->start_ticks,
			(uint64_t)d->end_ticks, dns, dt, (long long)DUR_TOL(dt), (unsigned)d->wg[0], (int)d->pid,
			(uint64_t)d->corr_id);
	a->bad += bad;
	return 0;
}

static int api_stop_early(const struct spmtap_kernel_dispatch *d, void *user)
{
	(void)d;
	return ++*(int *)user >= 3;
}

/*
 * The C API (include/spmtap.h): a session with kernels on, the app started
 * by the test with HSA_TOOLS_LIB and SPMTAP_KERNELS_FD; after the stop
 * spmtap_session_kernels gives every dispatch, each one truth line (ticks,
 * index, name, grid), mapped, on GPU 0; NAME_kernels.csv has as many rows.
 * Before the stop -EAGAIN, without kernels -ENOENT.
 */
static void test_api(void)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", testenv_path(testenv_tmpdir(), "api"));
	struct spmtap_devices *devs = NULL;
	CU_ASSERT_EQUAL_FATAL(spmtap_devices_open(&devs, NULL), 0);
	const char *counters[] = { "SQ_WAVES" };
	struct spmtap_session_opts o = SPMTAP_SESSION_OPTS_INIT;
	o.devices = devs, o.counters = counters, o.ncounters = 1, o.dir = dir, o.name = "run", o.formats = "csv";
	struct spmtap_session *s = NULL;
	/* without kernels */
	CU_ASSERT_EQUAL_FATAL(spmtap_session_open(&s, &o), 0);
	CU_ASSERT_EQUAL(spmtap_session_kernels_fd(s), -ENOENT);
	CU_ASSERT_EQUAL(spmtap_session_kernels(s, api_one, NULL), -ENOENT);
	spmtap_session_close(s);

	o.kernels = 1;
	CU_ASSERT_EQUAL_FATAL(spmtap_session_open(&s, &o), 0);
	int fd = spmtap_session_kernels_fd(s);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(spmtap_session_start(s), 0);
	char exe[PATH_MAX + 32], hsaco[PATH_MAX + 32], tool[PATH_MAX + 64], fdenv[64];
	snprintf(exe, sizeof(exe), "%s/hsa_dispatch", hsa_example_dir());
	snprintf(hsaco, sizeof(hsaco), "%s/k.hsaco", hsa_example_dir());
	snprintf(tool, sizeof(tool), "HSA_TOOLS_LIB=%s/libspmtap-tool.so", testenv_build_dir());
	snprintf(fdenv, sizeof(fdenv), "SPMTAP_KERNELS_FD=%d", fd);
	const int per = 250;
	char *argv[] = { exe, hsaco, "4", "250", "many", NULL };
	const char *env[] = { tool, fdenv, "SPMTAP_EMU_KERNEL_NS=add1=100000,saxpy=100000", NULL };
	unlink(truth);
	char *out = NULL;
	CU_ASSERT_EQUAL(run(argv, env, &out), 0);
	free(out);
	CU_ASSERT_EQUAL(spmtap_session_kernels(s, api_one, NULL), -EAGAIN);
	CU_ASSERT_EQUAL_FATAL(spmtap_session_stop(s), 0);

	struct api_seen a = { 0 };
	a.t = read_truth(&a.nt);
	CU_ASSERT_EQUAL(a.nt, (size_t)(THREADS * per));
	qsort(a.t, a.nt, sizeof(*a.t), cmp_ticks);
	CU_ASSERT_EQUAL(spmtap_session_kernels(s, api_one, &a), THREADS * per);
	CU_ASSERT_EQUAL(a.n, (size_t)(THREADS * per));
	CU_ASSERT_EQUAL(a.matched, (size_t)(THREADS * per));
	CU_ASSERT_EQUAL(a.bad, 0);
	int calls = 0;
	CU_ASSERT_EQUAL(spmtap_session_kernels(s, api_stop_early, &calls), THREADS * per);
	CU_ASSERT_EQUAL(calls, 3);
	spmtap_session_close(s);
	spmtap_devices_close(devs);
	CU_ASSERT_EQUAL(lines_in(testenv_path(dir, "run_kernels.csv")), (size_t)(THREADS * per + 1));
	fprintf(stderr, "  [API: %zu dispatches, %zu matched the truth, %zu not as expected]\n", a.n, a.matched,
		a.bad);
	free(a.t);
}

/* The metadata's spmtap GPU index of the device with this KFD gpu_id, else -1. */
static long long meta_gpu_index(const char *dir, long long gpu_id)
{
	json_t *m = json_load_file(testenv_path(dir, "run_meta.json"), 0, NULL);
	json_t *devs = json_object_get(json_object_get(m, "extra"), "devices"), *d;
	size_t i;
	long long idx = -1;
	if (!json_array_size(devs))
		fprintf(stderr, "  no extra.devices in the metadata\n");
	json_array_foreach(devs, i, d)
		if (jint(d, "gpu_id") == gpu_id)
			idx = jint(d, "gpu");
	json_decref(m);
	return idx;
}

/*
 * Two emulated GPUs, the app on the second (HSA_DISPATCH_AGENT=1): the tool
 * names the queue's GPU, so with both recorded every row says GPU 1 (the
 * truth's gpu_id is that device in the metadata) and is mapped through its
 * clock (the instants equal the emulated clock's model); with only GPU 0
 * recorded no row is mapped (its clock is not in the recording) and the
 * gpu column is empty, where GPU 0's timebase used to map them all.
 */
static void test_gpu(void)
{
	/* Perfetto: GPU 1's dispatches on queue tracks under GPU 1's track. */
	record_more = "--device=all";
	check_perfetto("gpu_pf", "HSA_DISPATCH_AGENT=1", 1);
	record_more = NULL;
	for (int all = 1; all >= 0; all--) {
		char dir[PATH_MAX], csv[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", testenv_path(testenv_tmpdir(), all ? "gpu_all" : "gpu_0"));
		snprintf(csv, sizeof(csv), "%s", testenv_path(dir, "run_kernels.csv"));
		struct timespec b, r;
		clock_gettime(CLOCK_BOOTTIME, &b);
		clock_gettime(CLOCK_MONOTONIC_RAW, &r);
		long long boot_minus_raw = ((long long)b.tv_sec - r.tv_sec) * 1000000000ll + (b.tv_nsec - r.tv_nsec);
		char *out = NULL;
		const int per = 50;
		CU_ASSERT_EQUAL_FATAL(record(dir, per, all ? "--device=all" : "--device=0", "HSA_DISPATCH_AGENT=1", &out),
				      0);
		size_t nt, nc;
		struct row *t = read_truth(&nt), *c = read_csv(csv, &nc);
		CU_ASSERT_PTR_NOT_NULL_FATAL(c);
		CU_ASSERT_EQUAL(nt, (size_t)(THREADS * per));
		CU_ASSERT_EQUAL(nc, (size_t)(THREADS * per));
		long long gid = nt ? t[0].gpu : -1, want = all ? meta_gpu_index(dir, gid) : -1;
		for (size_t i = 1; i < nt; i++)
			CU_ASSERT_EQUAL(t[i].gpu, gid);
		if (all)
			CU_ASSERT_EQUAL(want, 1); /* the second GPU agent is spmtap's GPU 1 */
		size_t bad = 0;
		for (size_t i = 0; i < nc; i++) {
			long long ea = llabs((long long)c[i].start_ns -
					     ((long long)(c[i].start - CLOCK_OFFSET) * TICK_NS + boot_minus_raw));
			bool b1 = c[i].gpu != want || c[i].mapped != (all == 1) || (all && ea >= 1000000);
			if (b1 && bad++ < 3)
				fprintf(stderr, "  row %zu: gpu %lld (want %lld), %s, start_ns %llu off the model by %lld ns\n", i,
					c[i].gpu, want, c[i].mapped ? "mapped" : "not mapped", c[i].start_ns, ea);
		}
		CU_ASSERT_EQUAL(bad, 0);
		fprintf(stderr, "  [--device %s, app on GPU 1 (gpu_id %lld): %zu rows, %zu not as expected]\n",
			all ? "all" : "0", gid, nc, bad);
		free(t);
		free(c);
		free(out);
	}
}

static const struct testenv_case cases[] = {
	{ "channel", test_channel, NULL },
	{ "many", test_many, need },
	{ "no_kernels", test_no_kernels, need },
	{ "overflow", test_overflow, need },
	{ "user_tool", test_user_tool, need },
	{ "perfetto", test_perfetto, need },
	{ "gpu", test_gpu, need },
	{ "killed", test_killed, need },
	{ "sqlite", test_sqlite, need_sqlite },
	{ "api", test_api, need },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return testenv_run_suite("kernels", cases, argc, argv);
	testenv_under_emu(argc, argv, "mi210,mi210", NULL); /* two GPUs: case gpu */
	truth = testenv_dispatch_truth();
	return testenv_run_suite("kernels", cases, argc, argv);
}
