/* SPDX-License-Identifier: MIT */
/*
 * What `spmtap record` says before and after a run tells the truth (issue 14
 * items 6 and 7), checked end to end on the emulator against its ground
 * truth and the recording's own accounting:
 *
 *  - saturation_tight_*: the interval the planner says avoids TCC_HIT's
 *    saturation gives no saturated value in the emulator's per-sample truth
 *    and no empty cell, and one step longer (the default 32768) gives some;
 *    the warning comes before the run, the count after it, and
 *    accounting[g].xcc[x].saturated equals the empty cells of the CSV;
 *  - verdict_lossless / verdict_writer_stall / verdict_kernel_drop:
 *    "lossless" and no DATA LOSS
 *    when the timestamps show nothing missing (kernel flags or not), and
 *    "lost N of M samples (x.y %) because the writer fell behind; try ..."
 *    with N and M from the meta's accounting when the writer stalls;
 *  - smi_missing: a sensor the GPU does not have is named with what it has
 *    and the --smi to use; a run that would record nothing is refused;
 *  - smi_deadlines: missed sensor deadlines are in the summary, equal to
 *    the meta's, with a slow emulated sensor read that forces misses, and
 *    blamed on the read; smi_deadlines_stopped: a recorder stopped
 *    (SIGSTOP) for 100 ms while its sampler sleeps misses them before it
 *    wakes, and the summary blames the scheduling, not the read;
 *  - rate_warning_cli: a data rate above the documented estimate is warned
 *    about (docs/bench.md "Data-rate estimate");
 *  - observed_estimate: for a counter without a catalog peak, the interval
 *    estimated from the observed values against a synthetic truth.
 *
 * No wall-clock bound: runs are short (--duration 0.5..2.5) and the only
 * timing-dependent outcome (loss on a loaded machine) is checked for
 * consistency in both directions rather than assumed.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/lib/decode_thread.h"
#include "files.h"
#include "proc.h"
#include "testenv.h"

#define HAS(s, sub) CU_ASSERT_PTR_NOT_NULL(strstr((s), (sub)))
#define HASNT(s, sub) CU_ASSERT_PTR_NULL(strstr((s), (sub)))

static const char *path(const char *name)
{
	return testenv_path(testenv_tmpdir(), name);
}

/* spmtap --emulate PROFILE ARGS, stdout/stderr into DIR.out/.err; the exit status and stderr's text. */
static int record(const char *profile, const char *dir, const char *const *args, const char *const *env,
		  char **err)
{
	const char *pre[] = { "--emulate", profile, NULL };
	char errf[4096], outf[4096], state[4096];
	snprintf(errf, sizeof(errf), "%s.err", path(dir));
	snprintf(outf, sizeof(outf), "%s.out", path(dir));
	snprintf(state, sizeof(state), "%s.state", path(dir));
	int st = tp_wait(tp_spawn_spmtap(pre, args, state,
					 &(struct tp_opts){ .env = env, .err = errf, .out = outf }));
	*err = tf_text(errf);
	if (!*err)
		*err = strdup("");
	return st;
}

static json_t *meta_of(const char *dir)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/spmtap_meta.json", path(dir));
	json_t *m = json_load_file(p, 0, NULL);
	CU_ASSERT_PTR_NOT_NULL(m);
	return m;
}

/* Sum of an integer field over accounting[0].xcc[]. */
static uint64_t acc_sum(json_t *meta, const char *field)
{
	json_t *xs = json_object_get(json_array_get(json_object_get(meta, "accounting"), 0), "xcc");
	uint64_t n = 0;
	size_t i;
	json_t *x;
	json_array_foreach(xs, i, x)
		n += (uint64_t)json_integer_value(json_object_get(x, field));
	return n;
}

/* accounting[0].xcc[x].saturated[col] per XCC, into out[]; the number of XCCs. */
static size_t acc_saturated(json_t *meta, const char *col, uint64_t *out, size_t max)
{
	json_t *xs = json_object_get(json_array_get(json_object_get(meta, "accounting"), 0), "xcc");
	size_t i, n = 0;
	json_t *x;
	json_array_foreach(xs, i, x) {
		json_t *s = json_object_get(json_object_get(x, "saturated"), col);
		CU_ASSERT_PTR_NOT_NULL(s);
		if (n < max)
			out[n++] = (uint64_t)json_integer_value(s);
	}
	return n;
}

/* Empty cells of the last column per XCC of DIR/spmtap_spm.csv (gpu,xcc,host_ns,gpu_ticks,COL). */
static void csv_empty(const char *dir, uint64_t *empty, uint64_t *rows, size_t max)
{
	char p[4096], line[512];
	snprintf(p, sizeof(p), "%s/spmtap_spm.csv", path(dir));
	FILE *f = fopen(p, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	memset(empty, 0, max * sizeof(*empty));
	memset(rows, 0, max * sizeof(*rows));
	CU_ASSERT_PTR_NOT_NULL(fgets(line, sizeof(line), f));
	while (fgets(line, sizeof(line), f)) {
		unsigned g, x;
		if (sscanf(line, "%u,%u,", &g, &x) != 2 || x >= max)
			continue;
		size_t l = strlen(line);
		rows[x]++;
		empty[x] += l >= 2 && line[l - 2] == ',';
	}
	fclose(f);
}

/*
 * The emulator's per-sample truth (docs/emulator.md): records whose values
 * (every slot is TCC_HIT here) reach 0xFFFF, i.e. samples in which some
 * instance saturated, and all records.
 */
static void truth_saturated(const char *file, uint64_t *sat, uint64_t *all)
{
	size_t len = 0;
	char *b = tf_slurp(file, &len);
	*sat = *all = 0;
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	size_t i = 0;
	while (i < len) {
		if (b[i] == '{') {
			char *nl = memchr(b + i, '\n', len - i);
			if (!nl)
				break;
			i = (size_t)(nl - b) + 1;
			continue;
		}
		uint32_t hd[6];
		if (i + 40 > len)
			break;
		memcpy(hd, b + i, sizeof(hd));
		CU_ASSERT_EQUAL_FATAL(hd[0], 0x52545053u);
		size_t nv = hd[5];
		if (i + 40 + 8 * nv > len)
			break;
		bool any = false;
		for (size_t k = 0; k < nv; k++) {
			uint64_t v;
			memcpy(&v, b + i + 40 + 8 * k, 8);
			any |= v >= 0xFFFF;
		}
		*sat += any;
		(*all)++;
		i += 40 + 8 * nv;
	}
	free(b);
}

static void saturation_case(const char *profile)
{
	/* The interval the planner names for TCC_HIT (tests/test_plan.c: 32736) and one step longer. */
	static const uint32_t iv[2] = { 32736, 32768 };
	for (int k = 0; k < 2; k++) {
		char dir[64], ivs[16], truth[4096], env_truth[4200];
		snprintf(dir, sizeof(dir), "sat-%s-%u", profile, iv[k]);
		snprintf(ivs, sizeof(ivs), "%u", iv[k]);
		snprintf(truth, sizeof(truth), "%s.truth", path(dir));
		snprintf(env_truth, sizeof(env_truth), "SPMTAP_EMU_SAMPLE_TRUTH=%s", truth);
		const char *args[] = { "record", "--spm", "TCC_HIT", "--interval", ivs, "--duration", "0.5",
				       "-d", path(dir), NULL };
		const char *env[] = { env_truth, NULL };
		char *err;
		int st = record(profile, dir, args, env, &err);
		CU_ASSERT_EQUAL(st, 0);
		uint64_t tsat, tall;
		truth_saturated(truth, &tsat, &tall);
		json_t *m = meta_of(dir);
		uint64_t sat[16], empty[16], rows[16];
		size_t nx = acc_saturated(m, "TCC_HIT", sat, 16);
		csv_empty(dir, empty, rows, 16);
		uint64_t cells = 0;
		for (size_t x = 0; x < nx; x++) {
			CU_ASSERT_EQUAL(sat[x], empty[x]); /* the accounting is what the file shows */
			cells += sat[x];
		}
		printf("\n    %s interval %u: truth %" PRIu64 " of %" PRIu64 " samples saturated, %" PRIu64
		       " empty cells ", profile, iv[k], tsat, tall, cells);
		CU_ASSERT(tall > 1000);
		if (k == 0) {
			CU_ASSERT_EQUAL(tsat, 0);
			CU_ASSERT_EQUAL(cells, 0);
			HASNT(err, "will saturate");
			HASNT(err, "saturated in");
		} else {
			CU_ASSERT(tsat > 0);
			CU_ASSERT(cells > 0);
			HAS(err, "TCC_HIT will saturate at interval 32768");
			HAS(err, "--interval 32736 or shorter avoids it");
			HAS(err, "TCC_HIT saturated in");
		}
		if (CU_get_number_of_failures())
			fprintf(stderr, "\n%s\n", err);
		json_decref(m);
		free(err);
	}
}

static void test_saturation_tight_mi300a(void) { saturation_case("mi300a"); }
static void test_saturation_tight_mi250x(void) { saturation_case("mi250x"); }

/* The verdict line agrees with the meta's accounting, whichever way the run went. */
static void check_verdict(const char *err, json_t *m)
{
	uint64_t lost = acc_sum(m, "lost_gap_samples"), samples = acc_sum(m, "samples");
	uint64_t resync = acc_sum(m, "resync_dropped_bytes");
	if (!lost && !resync) {
		HAS(err, "lossless");
		HASNT(err, "DATA LOSS");
		return;
	}
	char want[128];
	snprintf(want, sizeof(want), "DATA LOSS: lost %" PRIu64 " of %" PRIu64 " samples (%.1f %%) because",
		 lost, lost + samples, 100.0 * (double)lost / (double)(lost + samples));
	HAS(err, want);
	HAS(err, "; try ");
}

/*
 * Small buffers make the gen B kernel flag regions that filled while its
 * ring kept the data (before: "DATA LOSS: ~0 samples lost").
 */
static void test_verdict_lossless(void)
{
	const char *args[] = { "record", "--spm", "SQ_WAVES", "--buffer-size", "384k", "--duration", "1",
			       "-d", path("flagged"), NULL };
	char *err;
	CU_ASSERT_EQUAL(record("mi300a", "flagged", args, NULL, &err), 0);
	json_t *m = meta_of("flagged");
	printf("\n    kernel flags %" PRIu64 ", lost %" PRIu64 " ", acc_sum(m, "kernel_loss_flags"),
	       acc_sum(m, "lost_gap_samples"));
	HASNT(err, "~0 samples");
	check_verdict(err, m);
	json_decref(m);
	free(err);
}

/*
 * The reason follows the accounting: the writer when the decode thread waited
 * on the full output queue (output_queue_wait_s, at least 5 % of the run and
 * 0.1 s) and polls found no free buffer.  Since the spill queue (issue 15
 * item 3) a 2.5 s writer stall no longer makes it so: the data waits in
 * memory, so the verdict must not blame the writer; loss on a loaded host
 * is the poll thread's (kernel-flagged with a free buffer ready).
 */
static void test_verdict_writer_stall(void)
{
	const char *args[] = { "record", "--spm", "SQ_WAVES", "--duration", "3", "-d", path("stall"), NULL };
	const char *env[] = { "SPMTAP_WRITER_STALL=200:2500", NULL };
	char *err;
	CU_ASSERT_EQUAL(record("mi300a", "stall", args, env, &err), 0);
	json_t *m = meta_of("stall");
	json_t *a = json_array_get(json_object_get(m, "accounting"), 0);
	double wait = json_real_value(json_object_get(a, "output_queue_wait_s"));
	uint64_t overrun = (uint64_t)json_integer_value(json_object_get(a, "overrun_polls"));
	uint64_t samples = acc_sum(m, "samples"), lost = acc_sum(m, "lost_gap_samples");
	printf("\n    output queue full %.2f s, %" PRIu64 " overrun polls, %" PRIu64 " samples, %" PRIu64 " lost ",
	       wait, overrun, samples, lost);
	/*
	 * The premise: the stall blocked the decode thread (2.5 s of data is
	 * several times the queue).  It mostly does (1.8-2.5 s, alone and under
	 * two CPU hogs), but not always: 0.18 and 0.33 s in single runs here,
	 * and 0.03 and 0.06 s beside another suite (make test, CI's ASan run),
	 * each time with nothing lost.  So a miss is said, not failed: the
	 * checks below are the verdict's, and they must hold either way.
	 */
	if (wait <= 0.1)
		printf("(the stall barely blocked the decode thread on this loaded host: the verdict is "
		       "checked, the premise was not met) ");
	/*
	 * The spill queue absorbs a stalled writer (docs/architecture.md
	 * "Back-pressure policy"): no poll finds every buffer taken unless the
	 * spill queue says why (accounting[g].spill.loss_reason), and a loss
	 * without overrun polls is not blamed on the writer.
	 */
	const char *why = json_string_value(json_object_get(json_object_get(a, "spill"), "loss_reason"));
	CU_ASSERT(overrun == 0 || why != NULL);
	if (!overrun)
		CU_ASSERT_PTR_NULL(strstr(err, "because the writer fell behind"));
	check_verdict(err, m);
	if (overrun && wait >= 0.15) {
		HAS(err, "because the writer fell behind");
		HAS(err, "try a faster disk");
	} else if (overrun) {
		HAS(err, "because the decoder fell behind");
	}
	json_decref(m);
	free(err);
}

/* Lines dropped inside the emulated kernel (flagged as a ring stall would be): the kernel-side reason. */
static void test_verdict_kernel_drop(void)
{
	const char *args[] = { "record", "--spm", "SQ_WAVES", "--duration", "1", "-d", path("drop"), NULL };
	const char *env[] = { "SPMTAP_EMU_INJECT_DROP=300:1000000", NULL };
	char *err;
	CU_ASSERT_EQUAL(record("mi300a", "drop", args, env, &err), 0);
	json_t *m = meta_of("drop");
	json_t *a = json_array_get(json_object_get(m, "accounting"), 0);
	uint64_t overrun = (uint64_t)json_integer_value(json_object_get(a, "overrun_polls"));
	CU_ASSERT(acc_sum(m, "lost_gap_samples") > 0);
	check_verdict(err, m);
	if (!overrun)
		HAS(err, "because the kernel could not hold the data between two polls");
	json_decref(m);
	free(err);
}

/* Before: "gpu_metrics exposes none of the requested sensors", nothing recorded, exit 0. */
static void test_smi_missing(void)
{
	const char *only[] = { "record", "--smi", "power_avg", "--duration", "0.3", "-d", path("smi-only"),
			       NULL };
	char *err;
	int st = record("mi300a", "smi-only", only, NULL, &err);
	CU_ASSERT_NOT_EQUAL(st, 0);
	HAS(err, "GPU 0 has no power_avg");
	HAS(err, "it has energy, power_cur");
	HAS(err, "try --smi power_cur");
	free(err);
	const char *with[] = { "record", "--spm", "SQ_WAVES", "--smi", "power_avg", "--duration", "0.3", "-d",
			       path("smi-spm"), NULL };
	st = record("mi300a", "smi-spm", with, NULL, &err);
	CU_ASSERT_EQUAL(st, 0);
	HAS(err, "GPU 0 has no power_avg");
	HAS(err, "try --smi power_cur");
	free(err);
}

/* A 3 ms sensor read against a 1 ms period: most deadlines are missed, and the summary says how many. */
static void test_smi_deadlines(void)
{
	const char *args[] = { "record", "--smi", "power_cur", "--duration", "0.5", "-d", path("late"), NULL };
	const char *env[] = { "SPMTAP_EMU_SENSOR_READ_LATENCY_US=3000", NULL };
	char *err;
	CU_ASSERT_EQUAL(record("mi300a", "late", args, env, &err), 0);
	json_t *m = meta_of("late");
	json_t *a = json_array_get(json_object_get(m, "accounting"), 0);
	uint64_t missed = (uint64_t)json_integer_value(json_object_get(a, "smi_missed_deadlines"));
	uint64_t got = (uint64_t)json_integer_value(json_object_get(a, "smi_samples"));
	CU_ASSERT(missed > 0);
	char want[128];
	snprintf(want, sizeof(want), "%" PRIu64 " of %" PRIu64 " sensor deadlines missed (%.1f %%)", missed,
		 missed + got, 100.0 * (double)missed / (double)(missed + got));
	HAS(err, want);
	if (!strstr(err, want))
		fprintf(stderr, "\nwanted \"%s\" in:\n%s\n", want, err);
	/* The read is the cause: a sample took at least its 3 ms, and the summary says so. */
	CU_ASSERT(json_real_value(json_object_get(a, "smi_max_read_ms")) >= 3.0);
	CU_ASSERT((uint64_t)json_integer_value(json_object_get(a, "smi_missed_late")) < missed);
	HAS(err, "a sample took up to");
	json_decref(m);
	free(err);
}

/*
 * The pid of the recorder whose command line names dir; 0: none.  The
 * recorder is `spmtap record ...`; its --emulate wrappers are `spmtap
 * --emulate ... record ...` until they rename themselves spmtap-emu.
 */
static pid_t recorder_of(const char *dir)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = 0;
	while (d && !found && (e = readdir(d))) {
		char p[300], buf[4096];
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(p, sizeof(p), "/proc/%s/comm", e->d_name);
		if (tf_slurp_into(p, buf, sizeof(buf)) <= 0 || strcmp(buf, "spmtap\n"))
			continue;
		snprintf(p, sizeof(p), "/proc/%s/cmdline", e->d_name);
		ssize_t n = tf_slurp_into(p, buf, sizeof(buf));
		size_t a0 = strnlen(buf, sizeof(buf));
		bool record = n > 0 && (ssize_t)a0 + 1 < n && !strcmp(buf + a0 + 1, "record");
		for (ssize_t i = 0; i + 1 < n; i++)
			if (!buf[i])
				buf[i] = ' ';
		if (record && strstr(buf, dir))
			found = (pid_t)atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

/* The state letter of pid's thread named comm ("R", "S", ...), or 0 when there is none. */
static char thread_state(pid_t pid, const char *comm)
{
	char p[300], buf[512];
	snprintf(p, sizeof(p), "/proc/%d/task", (int)pid);
	DIR *d = opendir(p);
	struct dirent *e;
	char state = 0;
	while (d && !state && (e = readdir(d))) {
		snprintf(p, sizeof(p), "/proc/%d/task/%s/comm", (int)pid, e->d_name);
		if (tf_slurp_into(p, buf, sizeof(buf)) <= 0 || strncmp(buf, comm, strlen(comm)) ||
		    buf[strlen(comm)] != '\n')
			continue;
		snprintf(p, sizeof(p), "/proc/%d/task/%s/stat", (int)pid, e->d_name);
		const char *paren = tf_slurp_into(p, buf, sizeof(buf)) > 0 ? strrchr(buf, ')') : NULL;
		if (paren && paren[1] == ' ')
			state = paren[2];
	}
	if (d)
		closedir(d);
	return state;
}

/*
 * Deadlines that pass while the recorder cannot run (here SIGSTOP for
 * 100 ms, three times, once it has sampled; on a node, a busy or preempted
 * CPU) are the scheduler's: the summary must not send the user to a longer
 * interval.  A stop that lands while the sampler reads makes that sample
 * long instead (the summary then says "a sample took ..."), so each stop
 * waits until the sampler sleeps; it sleeps about 0.97 of each period, and
 * three stops leave no real chance that none lands in a sleep.
 */
static void test_smi_deadlines_stopped(void)
{
	const char *pre[] = { "--emulate", "mi300a", NULL };
	const char *args[] = { "record", "--smi", "power_cur", "--duration", "4", "-d", path("stopped"), NULL };
	char errf[4096], state[4096], part[4096];
	snprintf(errf, sizeof(errf), "%s.err", path("stopped"));
	snprintf(state, sizeof(state), "%s.state", path("stopped"));
	snprintf(part, sizeof(part), "%s/spmtap_smi.csv.part", path("stopped"));
	pid_t top = tp_spawn_spmtap(pre, args, state, &(struct tp_opts){ .err = errf });
	CU_ASSERT_FATAL(top > 0);
	/* Once rows are on disk the sampler runs (no wall-clock guess at start-up). */
	struct stat st;
	for (int i = 0; i < 3000 && !(stat(part, &st) == 0 && st.st_size > 0); i++)
		usleep(10000);
	pid_t rec = recorder_of(path("stopped"));
	CU_ASSERT_FATAL(rec > 0);
	for (int stop = 0; stop < 3; stop++) {
		for (int i = 0; i < 100000 && thread_state(rec, "spmtap-smi0") != 'S'; i++)
			;
		CU_ASSERT_EQUAL(kill(rec, SIGSTOP), 0);
		usleep(100000);
		CU_ASSERT_EQUAL(kill(rec, SIGCONT), 0);
		usleep(100000);
	}
	CU_ASSERT_EQUAL(tp_wait(top), 0);
	char *err = tf_text(errf);
	CU_ASSERT_PTR_NOT_NULL_FATAL(err);
	json_t *m = meta_of("stopped");
	json_t *a = json_array_get(json_object_get(m, "accounting"), 0);
	uint64_t late = (uint64_t)json_integer_value(json_object_get(a, "smi_missed_late"));
	/* 100 periods of 1 ms passed during a stop that found it asleep; slack for the signals' own delay. */
	CU_ASSERT(late >= 75);
	CU_ASSERT(json_real_value(json_object_get(a, "smi_max_late_ms")) >= 75.0);
	HAS(err, "the sampler woke up to");
	if (late < 75 || !strstr(err, "the sampler woke up to"))
		fprintf(stderr, "\n  smi_missed_late %" PRIu64 "; stderr:\n%s\n", late, err);
	json_decref(m);
	free(err);
}

/*
 * `plan --interval 32` on an MI300X promised 201,600 MB/s without a word;
 * now plan warns (exit 0) and names the estimate and a longer interval, and
 * record says the same before it starts (the same spm_plan_warnings).
 */
static void test_rate_warning_cli(void)
{
	const char *args[] = { "plan", "--spm", "SQ_WAVES,SQ_CYCLES,TCC_HIT", "--interval", "32", NULL };
	char *err;
	CU_ASSERT_EQUAL(record("mi300x", "plan32", args, NULL, &err), 0);
	HAS(err, "spmtap plan: warning: the data rate, 201600.0 MB/s");
	HAS(err, "exceeds the 800 MB/s this collector is known to sustain");
	HAS(err, "--interval 8064 or longer");
	free(err);
	const char *ok[] = { "plan", "--spm", "SQ_WAVES,SQ_CYCLES,TCC_HIT", "--interval", "32736", NULL };
	CU_ASSERT_EQUAL(record("mi300x", "plan32736", ok, NULL, &err), 0);
	HASNT(err, "warning");
	free(err);
}

/*
 * The estimate for counters without a catalog peak, against a known truth:
 * per-sample counts uniform in [0.8, 1.2] x 65535 at interval 32768 (the
 * top 50 % saturate).  The estimate mirrors the observed top above the
 * limit, so it finds the true peak (1.2 x 65535) within one histogram bin and
 * only ever above it: the interval it names would have avoided every
 * saturated value, and is within 2 % of the longest one that would.
 */
static void test_observed_estimate(void)
{
	enum { BINS = 64, N = 100000 };
	uint64_t hist[BINS] = { 0 }, sat = 0;
	const double L = 65535.0, lo = 0.8 * L, hi = 1.2 * L;
	for (int k = 0; k < N; k++) {
		double v = lo + (hi - lo) * (k + 0.5) / N;
		if (v >= L)
			sat++;
		else
			hist[(int)(v * BINS / L)]++;
	}
	uint32_t iv = dthr_saturation_interval_of(hist, BINS, sat, 32768);
	double exact = 32768 * 65534.0 / hi; /* the longest interval keeping the peak below the limit */
	printf("\n    uniform 0.8..1.2 x limit at 32768: estimate %u, exact %.0f ", iv, exact);
	CU_ASSERT_EQUAL(iv % 32, 0);
	CU_ASSERT(iv <= exact);              /* would have avoided it */
	CU_ASSERT(iv >= 0.98 * exact - 32);  /* and is not needlessly short */
	/* no saturation: nothing to say; more saturated than not: at least halve */
	CU_ASSERT_EQUAL(dthr_saturation_interval_of(hist, BINS, 0, 32768), 0);
	uint64_t few[BINS] = { [BINS - 1] = 10 };
	CU_ASSERT(dthr_saturation_interval_of(few, BINS, 1000, 32768) <= 16384);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "summary/saturation_tight_mi300a", test_saturation_tight_mi300a, testenv_need_emu_shim },
		{ "summary/saturation_tight_mi250x", test_saturation_tight_mi250x, testenv_need_emu_shim },
		{ "summary/verdict_lossless", test_verdict_lossless, testenv_need_emu_shim },
		{ "summary/verdict_writer_stall", test_verdict_writer_stall, testenv_need_emu_shim },
		{ "summary/verdict_kernel_drop", test_verdict_kernel_drop, testenv_need_emu_shim },
		{ "summary/smi_missing", test_smi_missing, testenv_need_emu_shim },
		{ "summary/smi_deadlines", test_smi_deadlines, testenv_need_emu_shim },
		{ "summary/smi_deadlines_stopped", test_smi_deadlines_stopped, testenv_need_emu_shim },
		{ "summary/rate_warning_cli", test_rate_warning_cli, testenv_need_emu_shim },
		{ "summary/observed_estimate", test_observed_estimate, NULL },
		{ NULL, NULL, NULL },
	};
	/* Only for testenv_tmpdir(): every spmtap run sets up its own emulator with --emulate. */
	testenv_under_emu(argc, argv, "mi300a", NULL);
	return testenv_run_suite("summary", cases, argc, argv);
}
