/* SPDX-License-Identifier: MIT */
/*
 * emu/launcher (spmtap-emu) and what execs it, `spmtap --emulate`: the
 * emulated session ends with the process the user started, whatever kills
 * it, and every process below it ends too; SPM is free at once; trees of
 * dead sessions are swept, live ones never.  Runs without the shim itself:
 * every emulated process here is started through the launcher.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "emu/common/schedule.h"
#include "emu/common/sensors.h"
#include "emu/common/workload.h"
#include "testenv.h"

static char base[PATH_MAX];

static const char *path(const char *name)
{
	static char buf[8][PATH_MAX + 64];
	static int k;
	k = (k + 1) % 8;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", base, name);
	return buf[k];
}

static const char *bin(const char *name)
{
	static char buf[4][PATH_MAX + 64];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", testenv_build_dir(), name);
	return buf[k];
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* argv with stdout to out and stderr to err (NULL: inherited), outside any emulated session. */
static pid_t spawn(const char *const *argv, const char *out, const char *err, const char *const *env)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	unsetenv("SPMTAP_EMU_ACTIVE");
	unsetenv("SPMTAP_EMU_SYSFS");
	unsetenv("LD_PRELOAD");
	for (; env && *env; env++)
		putenv((char *)*env);
	if (out && !freopen(out, "w", stdout))
		_exit(126);
	if (err && !freopen(err, "w", stderr))
		_exit(126);
	execv(argv[0], (char *const *)argv);
	_exit(127);
}

static int wait_code(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int run(const char *const *argv, const char *out, const char *err, const char *const *env)
{
	return wait_code(spawn(argv, out, err, env));
}

static char *slurp(const char *p)
{
	static char buf[1 << 16];
	FILE *f = fopen(p, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	buf[n] = 0;
	if (f)
		fclose(f);
	return buf;
}

static int count_lines(const char *p)
{
	int n = 0;
	for (const char *s = slurp(p); *s; s++)
		n += *s == '\n';
	return n;
}

/* Waits up to ms for a file to have `lines` lines (written by a process of the session). */
static bool wait_lines(const char *p, int lines, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		if (count_lines(p) >= lines)
			return true;
		usleep(10000);
	}
	return false;
}

/* Children of pid (one level, from /proc/PID/stat parent links). */
static size_t children(pid_t pid, pid_t *out, size_t max)
{
	size_t n = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d)) && n < max) {
		char p[300], buf[1024];
		int ppid;
		snprintf(p, sizeof(p), "/proc/%s/stat", e->d_name);
		FILE *f = fopen(p, "r");
		if (!f)
			continue;
		size_t k = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[k] = 0;
		char *s = strrchr(buf, ')');
		if (s && sscanf(s + 1, " %*c %d", &ppid) == 1 && ppid == pid)
			out[n++] = (pid_t)atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return n;
}

/* Every descendant of pid, depth first. */
static size_t descendants(pid_t pid, pid_t *out, size_t max)
{
	size_t n = children(pid, out, max);
	for (size_t i = 0; i < n && n < max; i++)
		n += children(out[i], out + n, max - n);
	return n;
}

static int pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Waits until every pidfd says its process ended; the milliseconds that took, or -1 after bound_ms. */
static double wait_pidfds(const int *fds, size_t n, int bound_ms)
{
	double t0 = now_ms();
	for (size_t i = 0; i < n; i++) {
		if (fds[i] < 0)
			continue;
		struct pollfd p = { .fd = fds[i], .events = POLLIN };
		int left = bound_ms - (int)(now_ms() - t0);
		if (left <= 0 || poll(&p, 1, left) != 1)
			return -1;
	}
	return now_ms() - t0;
}

static void close_all(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* Temporary emulated trees left in this suite's TMPDIR. */
static int trees_left(void)
{
	int n = 0;
	DIR *d = opendir(path("tmp"));
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += !strncmp(e->d_name, "spmtap-emu-", 11);
	if (d)
		closedir(d);
	return n;
}

static bool exists(const char *p)
{
	struct stat st;
	return lstat(p, &st) == 0;
}

/* One ACQUIRE on gpu_id through the real libhsakmt on a fresh emulated node: "acquired" or "failed N". */
static const char *acquire(const char *profile, const char *gpu_id)
{
	const char *argv[] = { bin("spmtap-emu"), profile, "--", bin("tests/helpers/emu_spm_hold"), gpu_id, "0", NULL };
	run(argv, path("hold.out"), path("hold.err"), NULL);
	char *s = slurp(path("hold.out"));
	s[strcspn(s, "\n")] = 0;
	return s;
}

static off_t file_size(const char *p)
{
	struct stat st;
	return stat(p, &st) ? -1 : st.st_size;
}

/*
 * SIGKILL of `spmtap --emulate mi300a record` (no duration): the re-executed recorder and the supervisor
 * end, bounded; the next ACQUIRE on that GPU succeeds; no tree is left.
 */
static void test_kill_parent(void)
{
	const char *argv[] = { bin("spmtap"), "--emulate", "mi300a", "record", "--raw", "-o", path("k.raw"), NULL };
	pid_t p = spawn(argv, NULL, path("k.err"), NULL);
	CU_ASSERT_FATAL(p > 0);
	double t0 = now_ms();
	/*
	 * SPM bytes in the file: the recorder holds SPM (a header alone might be written before the ACQUIRE).
	 * It is written under its temporary name until the run ends (docs/cli/spmtap-record.md).
	 */
	while (file_size(path("k.raw.part")) < (1 << 20) && now_ms() - t0 < 30000)
		usleep(20000);
	if (file_size(path("k.raw.part")) < (1 << 20)) {
		/* No duration: a recorder left behind would run (and load the machine) for ever. */
		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
	}
	CU_ASSERT_FATAL(file_size(path("k.raw.part")) >= (1 << 20));
	CU_ASSERT_PTR_NOT_NULL(strstr(acquire("mi300a", "0x1001"), "failed")); /* the recorder holds SPM */

	pid_t d[16];
	int fds[16];
	size_t n = descendants(p, d, 16);
	CU_ASSERT_FATAL(n >= 2); /* the supervisor and the recorder */
	for (size_t i = 0; i < n; i++) {
		fds[i] = pidfd_open(d[i]);
		CU_ASSERT(fds[i] >= 0);
	}
	CU_ASSERT_EQUAL(trees_left(), 1);
	double k0 = now_ms();
	kill(p, SIGKILL);
	CU_ASSERT_EQUAL(wait_code(p), 128 + SIGKILL);
	double gone = wait_pidfds(fds, n, 30000);
	CU_ASSERT(gone >= 0);
	const char *a = acquire("mi300a", "0x1001");
	double free_ms = now_ms() - k0;
	CU_ASSERT_STRING_EQUAL(a, "acquired");
	CU_ASSERT_EQUAL(trees_left(), 0);
	/* It stopped as on SIGTERM: the raw file is complete. */
	CU_ASSERT_PTR_NOT_NULL(strstr(slurp(path("k.err")), "data drained and file closed"));
	printf("\n      SIGKILL of the parent: session gone after %.0f ms, the next ACQUIRE succeeded %.0f ms after "
	       "the kill ",
	       gone, free_ms);
	close_all(fds, n);
}

/*
 * SIGKILL of `spmtap emulate mi210 -- sh ...`: shell jobs in groups and sessions of their own, an orphan,
 * one that ignores SIGTERM: all end.
 */
static void test_kill_parent_jobs(void)
{
	char script[2048];
	const char *f = path("jobs.pids");
	unlink(f);
	snprintf(script, sizeof(script),
		 "sleep 300 & echo $! >> %s; "
		 "setsid sh -c 'echo $$ >> %s; exec sleep 301' & "
		 "(sh -c 'echo $$ >> %s; exec sleep 302' &) ; "
		 "sh -c 'trap \"\" TERM; echo $$ >> %s; exec sleep 303' & "
		 "wait",
		 f, f, f, f);
	const char *argv[] = { bin("spmtap"), "emulate", "mi210", "--", "/bin/sh", "-c", script, NULL };
	const char *env[] = { "SPMTAP_EMU_KILL_GRACE_MS=300", NULL };
	pid_t p = spawn(argv, NULL, NULL, env);
	CU_ASSERT_FATAL(wait_lines(f, 4, 20000));
	int fds[24];
	size_t n = 0;
	pid_t d[16];
	size_t nd = descendants(p, d, 16);
	for (size_t i = 0; i < nd; i++)
		fds[n++] = pidfd_open(d[i]);
	/* the orphan is below the supervisor now, the setsid one in a session of its own: by pid, to be sure */
	for (char *s = slurp(f); *s; s = strchr(s, '\n') + 1)
		fds[n++] = pidfd_open((pid_t)atoi(s));
	for (size_t i = 0; i < n; i++)
		CU_ASSERT(fds[i] >= 0);
	kill(p, SIGKILL);
	wait_code(p);
	double gone = wait_pidfds(fds, n, 30000);
	CU_ASSERT(gone >= 0);
	CU_ASSERT(gone >= 250); /* the TERM-ignoring job waited for SIGKILL */
	CU_ASSERT_EQUAL(trees_left(), 0);
	printf("\n      supervisor, shell and 4 jobs (%zu pidfds) gone %.0f ms after the kill (grace 300 ms) ", n, gone);
	close_all(fds, n);
}

/* When the command ends, so does its session: an orphan it left is ended, the tree removed. */
static void test_command_ends_session(void)
{
	const char *f = path("orphan.pid");
	unlink(f);
	char script[512];
	snprintf(script, sizeof(script), "(sh -c 'echo $$ > %s; exec sleep 300' &); while [ ! -s %s ]; do sleep 0.01; done; exit 5", f, f);
	const char *argv[] = { bin("spmtap-emu"), "mi210", "--", "/bin/sh", "-c", script, NULL };
	CU_ASSERT_EQUAL(run(argv, NULL, NULL, NULL), 5);
	pid_t orphan = (pid_t)atoi(slurp(f));
	CU_ASSERT(orphan > 0);
	CU_ASSERT(kill(orphan, 0) == -1 && errno == ESRCH);
	CU_ASSERT_EQUAL(trees_left(), 0);
}

/* Exit status, signals passed on, refusals. */
static void test_status_and_signals(void)
{
	const char *ex[] = { bin("spmtap-emu"), "mi210", "--", "/bin/sh", "-c", "exit 7", NULL };
	CU_ASSERT_EQUAL(run(ex, NULL, NULL, NULL), 7);
	const char *sig[] = { bin("spmtap-emu"), "mi210", "/bin/sh", "-c", "kill -TERM $$", NULL };
	CU_ASSERT_EQUAL(run(sig, NULL, NULL, NULL), 128 + SIGTERM);
	const char *bad[] = { bin("spmtap-emu"), "mi999", "--", "/bin/true", NULL };
	CU_ASSERT_EQUAL(run(bad, NULL, path("bad.err"), NULL), 64);
	CU_ASSERT_PTR_NOT_NULL(strstr(slurp(path("bad.err")), "mi999"));
	const char *nocmd[] = { bin("spmtap-emu"), "mi210", "--", "/nonexistent/cmd", NULL };
	CU_ASSERT_EQUAL(run(nocmd, NULL, path("nocmd.err"), NULL), 127);
	CU_ASSERT_PTR_NOT_NULL(strstr(slurp(path("nocmd.err")), "/nonexistent/cmd"));
	const char *nested[] = { bin("spmtap-emu"), "mi210", "--", "/bin/true", NULL };
	const char *active[] = { "SPMTAP_EMU_ACTIVE=1", NULL };
	CU_ASSERT_EQUAL(run(nested, NULL, path("nested.err"), active), 64);
	CU_ASSERT_PTR_NOT_NULL(strstr(slurp(path("nested.err")), "already"));
	const char *gen[] = { bin("spmtap-emu"), "--gen", "B", "mi210", "--", "/bin/sh", "-c",
			      "[ \"$SPMTAP_EMU_GEN\" = B ] && [ -n \"$SPMTAP_EMU_SYSFS\" ]", NULL };
	CU_ASSERT_EQUAL(run(gen, NULL, NULL, NULL), 0);

	/* SIGTERM sent to the front (not by a terminal) reaches the command, which may end as it likes. */
	const char *f = path("trap.ready");
	unlink(f);
	char script[256];
	snprintf(script, sizeof(script), "trap 'exit 9' TERM; echo > %s; while :; do sleep 0.05; done", f);
	const char *trap[] = { bin("spmtap-emu"), "mi210", "--", "/bin/sh", "-c", script, NULL };
	pid_t p = spawn(trap, NULL, NULL, NULL);
	CU_ASSERT_FATAL(wait_lines(f, 1, 20000));
	kill(p, SIGTERM);
	CU_ASSERT_EQUAL(wait_code(p), 9);
	CU_ASSERT_EQUAL(trees_left(), 0);
}

/* `spmtap emulate`: the command's status, and what it refuses. */
static void test_emulate_verb(void)
{
	const char *ok[] = { bin("spmtap"), "emulate", "mi210", "--gen", "A", "--", "/bin/sh", "-c",
			     "[ \"$SPMTAP_EMU_GEN\" = A ] && [ \"$SPMTAP_EMU_PROFILE\" = mi210 ] && exit 3", NULL };
	CU_ASSERT_EQUAL(run(ok, NULL, NULL, NULL), 3);
	const char *nodash[] = { bin("spmtap"), "emulate", "mi210", "/bin/true", NULL };
	CU_ASSERT_EQUAL(run(nodash, NULL, path("v1.err"), NULL), 64);
	CU_ASSERT_PTR_NOT_NULL(strstr(slurp(path("v1.err")), "after '--'"));
	const char *badgen[] = { bin("spmtap"), "emulate", "--gen", "C", "mi210", "--", "/bin/true", NULL };
	CU_ASSERT_EQUAL(run(badgen, NULL, path("v2.err"), NULL), 64);
	CU_ASSERT_PTR_NOT_NULL(strstr(slurp(path("v2.err")), "A or B"));
	const char *bad[] = { bin("spmtap"), "emulate", "mi999", "--", "/bin/true", NULL };
	CU_ASSERT_EQUAL(run(bad, NULL, path("v3.err"), NULL), 64);
	CU_ASSERT_PTR_NOT_NULL(strstr(slurp(path("v3.err")), "mi999"));
	const char *nested[] = { bin("spmtap"), "--emulate", "mi210", "emulate", "mi300a", "--", "/bin/true", NULL };
	CU_ASSERT_EQUAL(run(nested, NULL, path("v4.err"), NULL), 64);
	CU_ASSERT_PTR_NOT_NULL(strstr(slurp(path("v4.err")), "drop --emulate"));
	const char *nolauncher[] = { "SPMTAP_EMU_LAUNCHER=/nonexistent/spmtap-emu", NULL };
	CU_ASSERT_EQUAL(run(ok, NULL, path("v5.err"), nolauncher), 64);
	CU_ASSERT_PTR_NOT_NULL(strstr(slurp(path("v5.err")), "SPMTAP_EMU_LAUNCHER"));
	CU_ASSERT_EQUAL(trees_left(), 0);
}

/* The tree of a session whose supervisor was killed is swept by the next start; a live one's is not. */
static void test_sweep_dead_sessions(void)
{
	const char *fa = path("a.tree"), *fb = path("b.tree");
	unlink(fa);
	unlink(fb);
	char sa[256], sb[256];
	snprintf(sa, sizeof(sa), "echo $SPMTAP_EMU_SYSFS > %s; exec sleep 300", fa);
	snprintf(sb, sizeof(sb), "echo $SPMTAP_EMU_SYSFS > %s; exec sleep 300", fb);
	const char *a[] = { bin("spmtap-emu"), "mi210", "--", "/bin/sh", "-c", sa, NULL };
	const char *b[] = { bin("spmtap-emu"), "mi210", "--", "/bin/sh", "-c", sb, NULL };
	/* A live session first: the start of A below sweeps, and must leave it alone. */
	pid_t pb = spawn(b, NULL, NULL, NULL);
	CU_ASSERT_FATAL(wait_lines(fb, 1, 20000));
	char tb[PATH_MAX];
	snprintf(tb, sizeof(tb), "%s", slurp(fb));
	tb[strcspn(tb, "\n")] = 0;
	pid_t pa = spawn(a, NULL, NULL, NULL);
	CU_ASSERT_FATAL(wait_lines(fa, 1, 20000));
	pid_t sup[4];
	CU_ASSERT_EQUAL_FATAL(children(pa, sup, 4), 1);
	/* Killed with the supervisor, the session cannot clean up: its command goes (parent-death signal). */
	pid_t cmd[4];
	CU_ASSERT_EQUAL_FATAL(children(sup[0], cmd, 4), 1);
	int cfd = pidfd_open(cmd[0]);
	kill(sup[0], SIGKILL);
	CU_ASSERT(wait_code(pa) == 128 + SIGKILL);
	CU_ASSERT(wait_pidfds(&cfd, 1, 30000) >= 0);
	close(cfd);
	char ta[PATH_MAX];
	snprintf(ta, sizeof(ta), "%s", slurp(fa));
	ta[strcspn(ta, "\n")] = 0;
	*strrchr(ta, '/') = 0; /* <tmp>/kfd -> <tmp> */
	CU_ASSERT_FATAL(exists(ta));
	CU_ASSERT(exists(tb));
	CU_ASSERT_EQUAL(trees_left(), 2);
	const char *t[] = { bin("spmtap-emu"), "mi210", "--", "/bin/true", NULL };
	CU_ASSERT_EQUAL(run(t, NULL, NULL, NULL), 0);
	CU_ASSERT(!exists(ta));
	CU_ASSERT(exists(tb));
	CU_ASSERT_EQUAL(trees_left(), 1);
	kill(pb, SIGTERM);
	CU_ASSERT_EQUAL(wait_code(pb), 128 + SIGTERM);
	CU_ASSERT_EQUAL(trees_left(), 0);
}

/* A Debian tool in PATH, or the reason a case is skipped (CI installs them: .ci/install-deps). */
static const char *need_tool(const char *tool, const char *pkg)
{
	static char why[128];
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	if (system(cmd) == 0)
		return NULL;
	snprintf(why, sizeof(why), "%s not installed (apt-get install %s)", tool, pkg);
	return why;
}

static const char *need_rocminfo(void)
{
	return need_tool("rocminfo", "rocminfo");
}

static const char *need_rocm_smi(void)
{
	return need_tool("rocm-smi", "rocm-smi");
}

/* Debian's rocminfo (ROCr 5.2.3) lists the emulated MI210 as a gfx90a GPU agent. */
static void test_rocminfo(void)
{
	const char *argv[] = { bin("spmtap"), "emulate", "mi210", "--", "rocminfo", NULL };
	int rc = run(argv, path("rocminfo.out"), path("rocminfo.err"), NULL);
	const char *out = slurp(path("rocminfo.out"));
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "ROCk module is loaded"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "gfx90a"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "AMD Instinct MI210"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "amdgcn-amd-amdhsa--gfx90a"));
	const char *gpu = strstr(out, "Device Type:             GPU");
	CU_ASSERT_PTR_NOT_NULL(gpu);
	if (rc || !gpu)
		fprintf(stderr, "\n%s\n%s", out, slurp(path("rocminfo.err")));
	CU_ASSERT_EQUAL(trees_left(), 0);
}

static double json_num(json_t *card, const char *key)
{
	const char *v = json_string_value(json_object_get(card, key));
	if (!v)
		fprintf(stderr, "\n      rocm-smi JSON lacks \"%s\" ", key);
	return v ? atof(v) : -1;
}

/* Debian's rocm-smi reads the emulated MI210's power and temperatures: what the sensor model states. */
static void test_rocm_smi(void)
{
	const char *argv[] = { bin("spmtap"), "emulate", "mi210", "--", "rocm-smi", "--showpower", "--showtemp", "--json",
			       NULL };
	const char *env[] = { "SPMTAP_EMU_WORKLOAD=constant:0.5", "SPMTAP_EMU_SHM_TAG=test-emu-launch", NULL };
	int rc = run(argv, path("smi.out"), path("smi.err"), env);
	CU_ASSERT_EQUAL(rc, 0);
	/* The JSON is the last line (rocm-smi prints banners before it). */
	char *out = slurp(path("smi.out"));
	char *j = strstr(out, "{\"card0\"");
	json_error_t e;
	json_t *root = j ? json_loads(j, 0, &e) : NULL;
	CU_ASSERT_PTR_NOT_NULL_FATAL(root);
	json_t *card = json_object_get(root, "card0");

	/* The model: a constant load is a settled steady state, the same at any instant. */
	struct emu_sensor_model m;
	struct emu_workload w;
	struct emu_sensor_reading r;
	char err[256];
	CU_ASSERT_EQUAL_FATAL(emu_sensor_model_init("mi210", 0, 0, &m, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(emu_workload_parse("constant:0.5", &w, err, sizeof(err)), 0);
	struct timespec raw, boot;
	clock_gettime(CLOCK_MONOTONIC_RAW, &raw);
	clock_gettime(CLOCK_BOOTTIME, &boot);
	emu_sensor_read(&m, &w, (uint64_t)raw.tv_sec * 1000000000u + (uint64_t)raw.tv_nsec,
			(uint64_t)boot.tv_sec * 1000000000u + (uint64_t)boot.tv_nsec, &r);
	double pw = json_num(card, "Average Graphics Package Power (W)");
	double edge = json_num(card, "Temperature (Sensor edge) (C)");
	double hot = json_num(card, "Temperature (Sensor junction) (C)");
	double mem = json_num(card, "Temperature (Sensor memory) (C)");
	double hbm3 = json_num(card, "Temperature (Sensor HBM 3) (C)");
	/* hwmon carries whole watts and whole degrees (docs/emulator.md, "Sensors") */
	CU_ASSERT_DOUBLE_EQUAL(pw, (double)(long)(r.avg_power_w + 0.5), 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(edge, (double)(long)(r.temp_edge_c + 0.5), 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(hot, (double)(long)(r.temp_hotspot_c + 0.5), 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(mem, (double)(long)(r.temp_mem_c + 0.5), 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(hbm3, mem + 3, 1e-9);
	CU_ASSERT(pw > 0 && pw < m.tdp_w); /* half load: below the cap, above idle */
	printf("\n      rocm-smi: %.1f W, edge %.1f C, junction %.1f C, memory %.1f C; the model: %.2f W, %.2f, %.2f, "
	       "%.2f C ",
	       pw, edge, hot, mem, r.avg_power_w, r.temp_edge_c, r.temp_hotspot_c, r.temp_mem_c);
	json_decref(root);
	unlink("/dev/shm/spmtap-emu-test-emu-launch-rocm_smi_card0"); /* rocm_smi's mutex, under our tag */
	CU_ASSERT_EQUAL(trees_left(), 0);
}

/* Symbols nm lists for file that are the emulator's (emu_*), and whether nm listed anything. */
static int emu_symbols(const char *file, const char *opts, const char *expect, bool *listed)
{
	char cmd[PATH_MAX + 64], line[1024];
	snprintf(cmd, sizeof(cmd), "nm %s '%s' 2>&1", opts, file);
	FILE *p = popen(cmd, "r");
	int n = 0;
	*listed = false;
	while (p && fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = 0;
		const char *sym = strrchr(line, ' ');
		sym = sym ? sym + 1 : line;
		size_t el = strlen(expect);
		if (!strncmp(sym, expect, el) && (sym[el] == 0 || sym[el] == '@')) /* -D: name@@VERSION */
			*listed = true;
		if (!strncmp(sym, "emu_", 4)) {
			if (n < 5 && strcmp(expect, "emu_env_setup"))
				fprintf(stderr, "\n      %s: %s ", file, line);
			n++;
		}
	}
	if (p)
		pclose(p);
	return n;
}

/* spmtap and libspmtap link no emulator code: --emulate and `spmtap emulate` exec spmtap-emu. */
static void test_no_emulator_code(void)
{
	bool listed;
	CU_ASSERT_EQUAL(emu_symbols(bin("spmtap"), "", "main", &listed), 0);
	CU_ASSERT(listed); /* nm read it: the check is not vacuous */
	CU_ASSERT_EQUAL(emu_symbols(bin("libspmtap.so"), "", "spmtap_version_string", &listed), 0);
	CU_ASSERT(listed);
	CU_ASSERT_EQUAL(emu_symbols(bin("libspmtap.so"), "-D", "spmtap_version_string", &listed), 0);
	CU_ASSERT(listed);
	CU_ASSERT_EQUAL(emu_symbols(bin("libspmtap.a"), "", "spmtap_version_string", &listed), 0);
	CU_ASSERT(listed);
	/* and the launcher does carry it (the test would catch a renamed prefix) */
	CU_ASSERT(emu_symbols(bin("spmtap-emu"), "", "emu_env_setup", &listed) > 0);
}

/* <tree>/emu-schedule: each process's own workload's steps, as emu/common/schedule.c derives them. */
static void test_schedule_file(void)
{
	static const char *const specs[] = { "square:period_ms=20,duty=0.25", "bursts:every_ms=7.5,len_ms=1.3",
					     "square:period_ms=10,duty=0.5,high=0.2,low=0.9", "constant:0.5", "bogus" };
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		char env0[128];
		snprintf(env0, sizeof(env0), "SPMTAP_EMU_WORKLOAD=%s", specs[i]);
		const char *env[] = { env0, NULL };
		const char *argv[] = { bin("spmtap"), "emulate", "mi210", "--", "/bin/sh", "-c",
				       "cat \"$SPMTAP_EMU_SYSFS/emu-schedule\"", NULL };
		CU_ASSERT_EQUAL(run(argv, path("sched.out"), NULL, env), 0);
		char want[512], err[160];
		struct emu_workload w;
		int bad = emu_workload_parse(specs[i], &w, err, sizeof(err));
		uint64_t period = 0, on = 0;
		const char *n1 = NULL, *n2 = NULL;
		if (bad)
			snprintf(want, sizeof(want), "spmtap-emu-schedule 1\nworkload %s\nerror %s\n", specs[i], err);
		else if (emu_workload_steps(&w, &period, &on, &n1, &n2))
			snprintf(want, sizeof(want),
				 "spmtap-emu-schedule 1\nworkload %s\nperiod_ns %llu\nstep 0 %s\nstep %llu %s\n", specs[i],
				 (unsigned long long)period, n1, (unsigned long long)on, n2);
		else
			snprintf(want, sizeof(want), "spmtap-emu-schedule 1\nworkload %s\nperiod_ns 0\n", specs[i]);
		CU_ASSERT_STRING_EQUAL(slurp(path("sched.out")), want);
	}
	/* read-only, as a sysfs attribute */
	const char *wr[] = { bin("spmtap"), "emulate", "mi210", "--", "/bin/sh", "-c",
			     "echo x > \"$SPMTAP_EMU_SYSFS/emu-schedule\"", NULL };
	CU_ASSERT_NOT_EQUAL(run(wr, NULL, path("sched.err"), NULL), 0);
	CU_ASSERT_EQUAL(trees_left(), 0);
}

static const struct testenv_case cases[] = {
	{ "kill_parent", test_kill_parent, NULL },
	{ "kill_parent_jobs", test_kill_parent_jobs, NULL },
	{ "command_ends_session", test_command_ends_session, NULL },
	{ "status_and_signals", test_status_and_signals, NULL },
	{ "sweep_dead_sessions", test_sweep_dead_sessions, NULL },
	{ "emulate_verb", test_emulate_verb, NULL },
	{ "no_emulator_code", test_no_emulator_code, NULL },
	{ "schedule_file", test_schedule_file, NULL },
	{ "rocminfo", test_rocminfo, need_rocminfo },
	{ "rocm_smi", test_rocm_smi, need_rocm_smi },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	char tmpl[] = "/tmp/spmtap-test-launch-XXXXXX";
	if (!mkdtemp(tmpl))
		return 2;
	snprintf(base, sizeof(base), "%s", tmpl);
	mkdir(path("tmp"), 0700);
	mkdir(path("state"), 0700);
	/* Private: the launchers sweep TMPDIR, and lock SPM in the state directory. */
	setenv("TMPDIR", path("tmp"), 1);
	setenv("SPMTAP_EMU_STATE_DIR", path("state"), 1);
	int rc = testenv_run_suite("emu_launch", cases, argc, argv);
	if (!getenv("SPMTAP_KEEP_TMP")) {
		char cmd[PATH_MAX + 16];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
		if (system(cmd))
			rc = rc ? rc : 1;
	}
	return rc;
}
