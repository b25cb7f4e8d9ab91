/* SPDX-License-Identifier: MIT */
/*
 * No loss because an output is slow (issue 15 item 3; docs/architecture.md
 * "Back-pressure policy"): the feeder never waits for a writer.  Retired
 * buffers wait in memory (--spill-mem) and then in the raw journal
 * DIR/NAME_journal.raw; decoding and the writers catch up after the stop.
 *
 * Checked against the emulator's per-sample truth ($SPMTAP_EMU_SAMPLE_TRUTH),
 * not against our own decoder:
 *  - writer_stall: a writer stalled for seconds (SPMTAP_WRITER_STALL) loses
 *    nothing, in memory and through the journal (O_DIRECT and, with
 *    SPMTAP_JOURNAL_DIRECT=0, the page cache), and every row equals the
 *    truth; the journal is gone afterwards;
 *  - sigint_catchup: SIGINT while catching up ends it; the outputs say
 *    "complete": false and the journal, decoded by `spmtap decode`, holds the
 *    rest of the rows (the one sample per XCC the cut splits aside);
 *  - journal_full: a journal that cannot be written (EFBIG under
 *    RLIMIT_FSIZE, as ENOSPC on a full disk) ends spilling: loss is flagged
 *    as before and the summary and accounting say "journal write failed";
 *  - kill9_journal: kill -9 while catching up leaves .part outputs and a
 *    journal `spmtap decode` reads;
 *  - journal_damaged: a journal cut while catching up: what cannot be read
 *    back is counted as the host's loss and named, the rest is written.
 *
 * The CSV loader and the truth matcher are tests/lib/csv_truth.c, shared
 * with test_record_spm.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "decoder/frame.h"
#include "lib/csv_truth.h"
#include "lib/files.h"
#include "lib/proc.h"
#include "lib/spm_truth.h"
#include "lib/testenv.h"
#include "spm/catalog.h"
#include "spm/spm.h"

/* ---- running the CLI ---------------------------------------------------- */

static char spmtap[4096];

static const char *need_emulator(void)
{
	snprintf(spmtap, sizeof(spmtap), "%s/spmtap", testenv_build_dir());
	if (access(spmtap, X_OK))
		return "build/spmtap not built";
	return testenv_need_emu_shim();
}

static char tmpdir[] = "/tmp/spmtap-test-journal-XXXXXX";

static const char *path(const char *name) { return testenv_path(tmpdir, name); }

/*
 * MI210 (gen A: the kernel discards what does not fit, so a writer stall
 * that outlasts the 64-chunk output queue loses samples), SCLK lowered to
 * 200 MHz, interval 1024: about 100 MB/s of SPM (190k samples/s) and 32 MB of
 * truth a second.  At a longer interval the emulated gen A device, which
 * produces when it is polled, stops producing while the old feeder overran,
 * and the old code's loss does not show.
 */
#define GPU_ID 0x4001u
#define NXCC 1u

static pid_t spawn(const char *const *args, const char *const *env, const char *errfile)
{
	static const char *const pre[] = { "--emulate", "mi210", NULL };
	return tp_spawn_spmtap(pre, args, path("state"), &(struct tp_opts){ .env = env, .err = errfile });
}

static const struct spm_catalog *catalog(void)
{
	enum spm_gfx g;
	const struct spm_catalog *cat = NULL;
	if (spm_gfx_parse("gfx90a", &g, NULL, 0) == 0)
		spm_catalog_get(g, &cat, NULL, 0);
	return cat;
}

static bool file_exists(const char *p)
{
	struct stat sb;
	return stat(p, &sb) == 0;
}

/* "complete" of DIR/run_meta.json: 1, 0, or -1 when unreadable. */
static int meta_complete(const char *dir, json_t **meta)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/run_meta.json", dir);
	json_t *m = json_load_file(p, 0, NULL);
	*meta = m;
	json_t *c = m ? json_object_get(m, "complete") : NULL;
	return json_is_boolean(c) ? json_is_true(c) : -1;
}

/* accounting[0].spill.KEY of the metadata, or -1. */
static json_int_t spill_int(json_t *meta, const char *key)
{
	json_t *a = json_array_get(json_object_get(meta, "accounting"), 0);
	json_t *v = json_object_get(json_object_get(a, "spill"), key);
	return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* accounting[0].KEY (xcc: of accounting[0].xcc[0]), or -1. */
static json_int_t acct_int(json_t *meta, bool xcc, const char *key)
{
	json_t *a = json_array_get(json_object_get(meta, "accounting"), 0);
	if (xcc)
		a = json_array_get(json_object_get(a, "xcc"), 0);
	json_t *v = json_object_get(a, key);
	return json_is_integer(v) ? json_integer_value(v) : -1;
}

/*
 * A writer stalled for 4 s while the recording runs 2.5 s (the 64-chunk output
 * queue of 4096-sample chunks and the default buffers hold about 1.6 s of it): with the spill
 * queue in memory (default budget) and with a 16 MiB budget (two buffers),
 * which puts nearly everything through the journal.  Before this item the kernel
 * dropped the stall's samples (the feeder found no free buffer).
 */
static char last_io[256]; /* accounting[0].spill.journal_io of stall_case's run, "" when null */

static void stall_case(const char *tag, const char *spill, const char *extra_env, const char *extra_env2)
{
	char dir[4096], err[4096], truth[4096], tenv[4200], csv[4200], journal[4200];
	snprintf(dir, sizeof(dir), "%s", path(tag));
	snprintf(err, sizeof(err), "%s.err", dir);
	snprintf(truth, sizeof(truth), "%s.truth", dir);
	snprintf(tenv, sizeof(tenv), "SPMTAP_EMU_SAMPLE_TRUTH=%s", truth);
	snprintf(csv, sizeof(csv), "%s/run_spm.csv", dir);
	snprintf(journal, sizeof(journal), "%s/run_journal.raw", dir);
	const char *env[] = { tenv, "SPMTAP_EMU_SCLK_MHZ=200", "SPMTAP_WRITER_STALL=200:4000", extra_env, extra_env2,
			      NULL };
	const char *args[24] = { "record", "--spm", "SQ_WAVES", "--interval", "1024", "-d", dir, "-o", "run", "-f",
				 "csv", "--duration", "2.5" };
	int n = 13;
	if (spill) {
		args[n++] = "--spill-mem";
		args[n++] = spill;
	}
	args[n] = NULL;
	int st = tp_wait(spawn(args, env, err));
	const char *msg = tf_peek(err);
	struct csv c = { 0 };
	struct truth t = { 0 };
	struct match m = { 0 };
	bool ok = st == 0 && csv_load(csv, &c) && truth_load(truth, &t);
	if (ok)
		match_csv(&c, &t, GPU_ID, catalog(), &m);
	json_t *meta = NULL;
	int complete = meta_complete(dir, &meta);
	if (!ok || m.first[0] || m.unmatched_rows || acct_int(meta, false, "overrun_polls"))
		fprintf(stderr, "\n  %s: status %d\n%s\n  %s\n  rows %zu matched %zu truth %zu missing %zu "
			"leading %zu trailing %zu\n", tag, st, msg, m.first, m.rows, m.matched,
			m.truth_samples, m.missing, m.leading, m.trailing);
	CU_ASSERT_EQUAL(st, 0);
	CU_ASSERT(ok);
	CU_ASSERT(c.whole);
	CU_ASSERT(m.rows > 50000);
	CU_ASSERT_EQUAL(m.matched, m.rows);
	CU_ASSERT_EQUAL(m.duplicates, 0);
	/*
	 * The feeder always found a free buffer: nothing waited on the writer.
	 * With a budget of two buffers (the journal case) a journal thread
	 * starved of CPU (a sanitizer on a busy box) can leave the pool at its
	 * budget for one poll: the documented loss path, said by its reason,
	 * and the kernel still held the data (missing is checked below).
	 */
	/* Every journalled buffer came back: a failed read is the host's loss, never excused below. */
	CU_ASSERT_EQUAL(spill_int(meta, "read_failed_buffers"), 0);
	CU_ASSERT_EQUAL(spill_int(meta, "read_lost_bytes"), 0);
	json_int_t overruns = acct_int(meta, false, "overrun_polls");
	if (spill && overruns) {
		json_t *a0 = json_array_get(json_object_get(meta, "accounting"), 0);
		const char *why = json_string_value(json_object_get(json_object_get(a0, "spill"), "loss_reason"));
		fprintf(stderr, "\n  %s: %lld overrun poll(s) at the %s budget: %s ", tag, (long long)overruns, spill,
			why ? why : "(no reason!)");
		CU_ASSERT(why && !strcmp(why, "memory full and the journal behind"));
	} else {
		CU_ASSERT_EQUAL(overruns, 0);
	}
	/*
	 * Nothing lost.  The one loss the spill queue cannot prevent is the
	 * kernel's when the poll thread itself runs late (the emulated device
	 * produces inside the feeder's ioctl, here with a truth record per
	 * sample, on a shared 2-core host): flagged regions with a free buffer
	 * ready.  That is the CPU's, not the writer's, and is said, not failed.
	 */
	json_int_t flags = acct_int(meta, true, "kernel_loss_flags");
	if (flags > 0 && m.missing)
		fprintf(stderr, "\n  %s: %zu samples lost while %lld region(s) were flagged with a free buffer "
			"ready (the poll thread ran late: host CPU, not the writer)\n", tag, m.missing,
			(long long)flags);
	else
		CU_ASSERT_EQUAL(m.missing, 0);
	CU_ASSERT(flags > 0 || !strstr(msg, "DATA LOSS"));
	CU_ASSERT_EQUAL(complete, 1);
	/* (The progress of a catch-up after the stop is sigint_catchup's: here the CPU may
	 * lose so much that the output queue alone holds the rest.) */
	CU_ASSERT(spill_int(meta, "mem_peak_bytes") > 0);
	if (spill)
		CU_ASSERT(spill_int(meta, "journal_bytes") > 0);
	/*
	 * Once the backlog drained, its memory went back: buffers the pool grew
	 * to were cooled, or the packed copies freed.  What waited was mostly
	 * data: buffers waiting at most half full wait as packed copies, so the
	 * memory held is not four times the bytes, as whole quarter-full 8 MiB
	 * buffers made it (spill.c "pack").
	 */
	json_int_t cooled = spill_int(meta, "cooled_buffers"), packed = spill_int(meta, "packed_buffers");
	json_int_t peak = spill_int(meta, "mem_peak_bytes"), waited = spill_int(meta, "spilled_bytes");
	if (!spill && (cooled <= 0 && packed <= 0))
		fprintf(stderr, "\n  %s: no buffer cooled or packed after a backlog of %lld bytes ", tag,
			(long long)peak);
	if (!spill)
		CU_ASSERT(cooled > 0 || packed > 0);
	if (!spill && packed > 0 && peak > 2 * waited + (32 << 20))
		fprintf(stderr, "\n  %s: %lld bytes held in memory for %lld that waited (%lld packed) ", tag,
			(long long)peak, (long long)waited, (long long)packed);
	if (!spill)
		CU_ASSERT(peak <= 2 * waited + (32 << 20));
	CU_ASSERT_FALSE(file_exists(journal)); /* deleted once caught up */
	json_t *a0 = json_array_get(json_object_get(meta, "accounting"), 0);
	const char *io = json_string_value(json_object_get(json_object_get(a0, "spill"), "journal_io"));
	snprintf(last_io, sizeof(last_io), "%s", io ? io : "");
	/* A journal was made exactly when the run spilled to disk, and it says how it was written. */
	CU_ASSERT_EQUAL(last_io[0] != 0, spill_int(meta, "journal_bytes") > 0);
	json_decref(meta);
	csv_free(&c);
	truth_free(&t);
	unlink(truth);
}

static void test_writer_stall(void)
{
	stall_case("mem", NULL, NULL, NULL);
	stall_case("journal", "16M", NULL, NULL); /* O_DIRECT where /tmp takes it */
	CU_ASSERT(!strcmp(last_io, "direct") || !strncmp(last_io, "page cache: no direct I/O (", 27));
	fprintf(stderr, "\n  journal written: %s ", last_io);
	stall_case("journal-buffered", "16M", "SPMTAP_JOURNAL_DIRECT=0", NULL);
	CU_ASSERT_STRING_EQUAL(last_io, "page cache: SPMTAP_JOURNAL_DIRECT=0");
}

/*
 * A file system that opens the journal with O_DIRECT but refuses the writes
 * (tests/doubles/nodirect.c, preloaded): the first direct write fails with
 * EINVAL, the journal says so once and goes on through the page cache, and
 * the stall still loses nothing (stall_case's checks).
 */
static void test_direct_refused(void)
{
	char so[4200], count[4200], preload[4300], cenv[4300];
	snprintf(so, sizeof(so), "%s/doubles/libnodirect.so", testenv_build_dir());
	snprintf(count, sizeof(count), "%s", path("nodirect.count"));
	unlink(count);
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", so);
	snprintf(cenv, sizeof(cenv), "NODIRECT_COUNT=%s", count);
	CU_ASSERT_FATAL(file_exists(so));
	stall_case("direct-refused", "16M", preload, cenv);
	struct stat sb;
	if (!strncmp(last_io, "page cache: no direct I/O (", 27)) {
		/* The file system refused O_DIRECT at the open already (a tmpfs before Linux 6.6). */
		fprintf(stderr, "\n  %s: the write-time refusal was not reached ", last_io);
		CU_ASSERT(stat(count, &sb) < 0);
		return;
	}
	/* One refusal: after it the journal never tries direct I/O again, and says why. */
	CU_ASSERT(stat(count, &sb) == 0 && sb.st_size == 1);
	CU_ASSERT_STRING_EQUAL(last_io, "page cache: direct I/O refused");
	unlink(count);
}

/*
 * The journal cannot be written (RLIMIT_FSIZE 24 MiB: the CSV of 2.5 s stays
 * under it, the journal of a 4 s stall at ~100 MB/s does not; EFBIG, as a
 * full disk gives ENOSPC): spilling ends, the recording goes on as before
 * the journal existed, the kernel flags the loss, and the summary and the
 * accounting say why.
 */
static void test_journal_full(void)
{
	char dir[4096], err[4096], journal[4200];
	snprintf(dir, sizeof(dir), "%s", path("full"));
	snprintf(err, sizeof(err), "%s.err", dir);
	snprintf(journal, sizeof(journal), "%s/run_journal.raw", dir);
	const char *env[] = { "SPMTAP_EMU_SCLK_MHZ=200", "SPMTAP_WRITER_STALL=200:4000", NULL };
	const char *args[] = { "record", "--spm", "SQ_WAVES", "--interval", "1024", "-d", dir, "-o", "run", "-f", "csv",
			       "--duration", "2.5", "--spill-mem", "1M", NULL };
	static const char *const pre[] = { "--emulate", "mi210", NULL };
	int st = tp_wait(tp_spawn_spmtap(pre, args, path("state"),
					 &(struct tp_opts){ .env = env, .err = err, .fsize = 24l << 20 }));
	const char *msg = tf_peek(err);
	json_t *meta = NULL;
	int complete = meta_complete(dir, &meta);
	json_t *a = json_array_get(json_object_get(meta, "accounting"), 0);
	const char *why = json_string_value(json_object_get(json_object_get(a, "spill"), "loss_reason"));
	if (st || !why)
		fprintf(stderr, "\n  status %d\n%s\n", st, msg);
	CU_ASSERT_EQUAL(st, 0);
	CU_ASSERT_EQUAL(complete, 1);
	CU_ASSERT(acct_int(meta, false, "overrun_polls") > 0);
	CU_ASSERT_PTR_NOT_NULL(why);
	CU_ASSERT(why && !strncmp(why, "journal write failed: ", 22) && strstr(why, "File too large"));
	/* (Whether samples then go missing is the emulated device's: gen A produces
	 * when it is polled, so overrun polls may cost nothing; the feeder's side,
	 * no free buffer at a poll, is what this asserts.) */
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "not absorbed by the spill queue: journal write failed"));
	CU_ASSERT_FALSE(file_exists(journal)); /* cut back and removed: nothing waits in it */
	json_decref(meta);
}

/* The first child of pid (the recorder under the --emulate launcher), or -1. */
static pid_t child_of(pid_t pid)
{
	char p[64], buf[256] = "";
	snprintf(p, sizeof(p), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	FILE *f = fopen(p, "r");
	if (!f)
		return -1;
	bool ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	return ok && atoi(buf) > 0 ? (pid_t)atoi(buf) : -1;
}

/*
 * `spmtap record` of 3 s on the gen A device at 200 MHz with the writer
 * stalled for stall_ms from 0.2 s and a 16 MiB budget, so nearly everything
 * goes to the journal; returns once it prints "catching up" (*seen), while
 * the writer is still stalled and nothing has been read back.
 */
static pid_t spawn_catching_up(const char *dir, const char *err, const char *stall, bool *seen)
{
	const char *env[] = { "SPMTAP_EMU_SCLK_MHZ=200", stall, NULL };
	const char *args[] = { "record", "--spm", "SQ_WAVES", "--interval", "1024", "-d", dir, "-o", "run", "-f", "csv",
			       "--duration", "3", "--spill-mem", "16M", NULL };
	pid_t pid = spawn(args, env, err);
	*seen = false;
	for (int i = 0; i < 600 && !*seen; i++) {
		struct timespec ts = { 0, 100 * 1000000L };
		nanosleep(&ts, NULL);
		*seen = strstr(tf_peek(err), "catching up") != NULL;
	}
	return pid;
}

/*
 * kill -9 of the recorder while it catches up: the outputs stay .part files
 * (test_outputs' guarantee) and the journal, which holds what was not decoded
 * yet, is decodable.
 */
static void test_kill9_journal(void)
{
	char dir[4096], err[4096], journal[4200], jcsv[4200], derr[4200];
	snprintf(dir, sizeof(dir), "%s", path("k9"));
	snprintf(err, sizeof(err), "%s.err", dir);
	snprintf(journal, sizeof(journal), "%s/run_journal.raw", dir);
	snprintf(jcsv, sizeof(jcsv), "%s/journal.csv", dir);
	snprintf(derr, sizeof(derr), "%s/decode.err", dir);
	bool seen;
	pid_t pid = spawn_catching_up(dir, err, "SPMTAP_WRITER_STALL=200:8000", &seen);
	CU_ASSERT(seen);
	pid_t rec = child_of(pid);
	CU_ASSERT(rec > 0);
	if (rec > 0)
		kill(rec, SIGKILL);
	tp_wait(pid);
	CU_ASSERT(file_exists(journal));
	char part[4200];
	snprintf(part, sizeof(part), "%s/run_spm.csv.part", dir);
	CU_ASSERT(file_exists(part));
	const char *dargs[] = { spmtap, "decode", "-o", jcsv, journal, NULL };
	int dst = tp_run(dargs, &(struct tp_opts){ .err = derr });
	if (dst)
		fprintf(stderr, "\n  spmtap decode: %d\n%s\n", dst, tf_peek(derr));
	CU_ASSERT_EQUAL(dst, 0);
	struct csv c = { 0 };
	CU_ASSERT(csv_load(jcsv, &c) && c.whole && c.nrows > 0);
	csv_free(&c);
}

/*
 * The journal damaged while the outputs catch up from it (cut to half, as a
 * failing disk or a careless `truncate` would): the buffers that cannot be
 * read back are the host's loss, counted in spill.read_failed_buffers and
 * named by the verdict, and the recording still ends complete with every
 * other row.
 */
static void test_journal_damaged(void)
{
	char dir[4096], err[4096], journal[4200];
	snprintf(dir, sizeof(dir), "%s", path("damaged"));
	snprintf(err, sizeof(err), "%s.err", dir);
	snprintf(journal, sizeof(journal), "%s/run_journal.raw", dir);
	bool seen;
	pid_t pid = spawn_catching_up(dir, err, "SPMTAP_WRITER_STALL=200:6000", &seen);
	CU_ASSERT(seen);
	/* The writer is still stalled (6 s from 0.2 s): nothing has been read back yet. */
	struct stat sb;
	CU_ASSERT_EQUAL_FATAL(stat(journal, &sb), 0);
	CU_ASSERT(sb.st_size > (4 << 20));
	CU_ASSERT_EQUAL(truncate(journal, sb.st_size / 2 / 4096 * 4096), 0);
	int st = tp_wait(pid);
	const char *msg = tf_peek(err);
	json_t *meta = NULL;
	int complete = meta_complete(dir, &meta);
	json_int_t failed = spill_int(meta, "read_failed_buffers"), lostb = spill_int(meta, "read_lost_bytes");
	fprintf(stderr, "\n  journal of %lld bytes cut to half: %lld buffer(s), %lld bytes not read back ",
		(long long)sb.st_size, (long long)failed, (long long)lostb);
	CU_ASSERT_EQUAL(st, 0);
	CU_ASSERT_EQUAL(complete, 1);
	CU_ASSERT(failed > 0);
	CU_ASSERT(lostb > 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "could not be read back"));
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "reading buffer"));
	CU_ASSERT(acct_int(meta, true, "lost_gap_samples") > 0);
	json_decref(meta);
}

/* "N loss-flagged regions" in `spmtap decode`'s report, or 0. */
static long long decode_flags(const char *err)
{
	const char *p = strstr(err, " loss-flagged regions");
	if (!p)
		return 0;
	const char *q = p;
	while (q > err && q[-1] >= '0' && q[-1] <= '9')
		q--;
	return strtoll(q, NULL, 10);
}

/*
 * SIGINT while catching up: the outputs end now, marked incomplete, and the
 * journal holds the rest: recorded rows + `spmtap decode` of the journal =
 * the truth, nothing twice, nothing missing but the one sample per XCC the
 * cut splits between the two.
 */
static void test_sigint_catchup(void)
{
	char dir[4096], err[4096], truth[4096], tenv[4200], csv[4200], journal[4200], jcsv[4200];
	snprintf(dir, sizeof(dir), "%s", path("sig"));
	snprintf(err, sizeof(err), "%s.err", dir);
	snprintf(truth, sizeof(truth), "%s.truth", dir);
	snprintf(tenv, sizeof(tenv), "SPMTAP_EMU_SAMPLE_TRUTH=%s", truth);
	snprintf(csv, sizeof(csv), "%s/run_spm.csv", dir);
	snprintf(journal, sizeof(journal), "%s/run_journal.raw", dir);
	snprintf(jcsv, sizeof(jcsv), "%s/journal.csv", dir);
	const char *env[] = { tenv, "SPMTAP_EMU_SCLK_MHZ=200", "SPMTAP_WRITER_STALL=300:10000", NULL };
	const char *args[] = { "record", "--spm", "SQ_WAVES", "--interval", "1024", "-d", dir, "-o", "run", "-f", "csv",
			       "--duration", "3", "--spill-mem", "64M", NULL };
	pid_t pid = spawn(args, env, err);
	/* Until the progress line shows (bounded: the stall alone lasts 10 s; the output
	 * queue takes the first ~1.5 s of data, the spill queue the rest: 64 MiB in
	 * memory, then the journal; the abandon appends the memory part to it). */
	bool seen = false;
	for (int i = 0; i < 600 && !seen; i++) {
		struct timespec ts = { 0, 100 * 1000000L };
		nanosleep(&ts, NULL);
		seen = strstr(tf_peek(err), "catching up") != NULL;
	}
	CU_ASSERT(seen);
	kill(pid, SIGINT);
	int st = tp_wait(pid);
	const char *msg = tf_peek(err);
	if (st != 130)
		fprintf(stderr, "\n  status %d\n%s\n", st, msg);
	CU_ASSERT_EQUAL(st, 130);
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "run_journal.raw"));
	json_t *meta = NULL;
	CU_ASSERT_EQUAL(meta_complete(dir, &meta), 0);
	/* The GPU's line says what was decoded and what the journal holds, the metadata's figure. */
	json_t *sp0 = json_object_get(json_array_get(json_object_get(meta, "accounting"), 0), "spill");
	char left[96];
	snprintf(left, sizeof(left), " decoded, %lld more left in the journal (",
		 (long long)json_integer_value(json_object_get(sp0, "journal_left_bytes")));
	CU_ASSERT(json_integer_value(json_object_get(sp0, "journal_left_bytes")) > 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, left));
	json_decref(meta);
	CU_ASSERT(file_exists(journal));
	const char *dargs[] = { spmtap, "decode", "-o", jcsv, journal, NULL };
	char derr[4200];
	snprintf(derr, sizeof(derr), "%s/decode.err", dir);
	int dst = tp_run(dargs, &(struct tp_opts){ .err = derr });
	if (dst)
		fprintf(stderr, "\n  spmtap decode: %d\n%s\n", dst, tf_peek(derr));
	CU_ASSERT_EQUAL(dst, 0);
	struct csv c = { 0 };
	struct truth t = { 0 };
	struct match m = { 0 };
	bool ok = csv_load(csv, &c);
	size_t recorded = c.nrows;
	ok = ok && csv_load(jcsv, &c) && truth_load(truth, &t);
	if (ok)
		match_csv(&c, &t, GPU_ID, catalog(), &m);
	if (!ok || m.first[0] || m.missing > NXCC || m.duplicates)
		fprintf(stderr, "\n  %s\n  rows %zu (%zu recorded) matched %zu truth %zu missing %zu dup %zu "
			"leading %zu trailing %zu\n", m.first, m.rows, recorded, m.matched, m.truth_samples,
			m.missing, m.duplicates, m.leading, m.trailing);
	CU_ASSERT(ok);
	CU_ASSERT(c.whole);
	CU_ASSERT(recorded > 0);
	CU_ASSERT(m.rows > recorded); /* the journal held rows */
	CU_ASSERT_EQUAL(m.matched, m.rows);
	CU_ASSERT_EQUAL(m.duplicates, 0);
	/*
	 * As in stall_case: with regions the kernel flagged while a free buffer
	 * was ready (the poll thread late on a loaded host; in the recording's
	 * accounting or in the journal, where `spmtap decode` says so) samples
	 * are missing for the CPU's sake, which is said, not failed.
	 */
	json_t *meta2 = NULL;
	meta_complete(dir, &meta2);
	json_int_t flags = acct_int(meta2, true, "kernel_loss_flags");
	/* A disk slower than the ~100 MB/s here (the box's is shared) may fill the pool: then it says so. */
	json_int_t overruns = acct_int(meta2, false, "overrun_polls");
	json_t *a2 = json_array_get(json_object_get(meta2, "accounting"), 0);
	const char *why = json_string_value(json_object_get(json_object_get(a2, "spill"), "loss_reason"));
	if (overruns)
		fprintf(stderr, "\n  sigint: %lld overrun polls: %s\n", (long long)overruns, why ? why : "(no reason!)");
	CU_ASSERT(overruns == 0 || (why && !strcmp(why, "memory full and the journal behind")));
	CU_ASSERT(spill_int(meta2, "journal_left_bytes") > 0);
	json_decref(meta2);
	long long jflags = decode_flags(tf_peek(derr));
	if ((flags > 0 || jflags > 0) && m.missing > NXCC)
		fprintf(stderr, "\n  sigint: %zu samples missing with kernel-flagged regions (%lld recorded, %lld in "
			"the journal): the poll thread ran late (host CPU)\n", m.missing, (long long)flags, jflags);
	else
		CU_ASSERT(m.missing <= NXCC); /* the sample the cut splits between outputs and journal */
	csv_free(&c);
	truth_free(&t);
	unlink(truth);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "writer_stall", test_writer_stall, need_emulator },
		{ "direct_refused", test_direct_refused, need_emulator },
		{ "sigint_catchup", test_sigint_catchup, need_emulator },
		{ "journal_full", test_journal_full, need_emulator },
		{ "kill9_journal", test_kill9_journal, need_emulator },
		{ "journal_damaged", test_journal_damaged, need_emulator },
		{ NULL, NULL, NULL },
	};
	if (!mkdtemp(tmpdir))
		return 1;
	mkdir(path("state"), 0700);
	return testenv_remove_tmp(tmpdir, testenv_run_suite("journal", cases, argc, argv));
}
