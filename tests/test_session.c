/* SPDX-License-Identifier: MIT */
/*
 * The session path of `spmtap record` (collector/lib/session.c) on the
 * emulated mi300a,mi210: every format read back by its real reader
 * (sqlite3, protoc --decode, a CSV parse), the byte accounting under
 * injected decode/writer stalls, SIGINT, a full disk, and `-- app`.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testenv.h"

static char spmtap[4096];

static const char *need_emulator(void)
{
	static char shim[4096];
	snprintf(shim, sizeof(shim), "%s/libspmtap-emu.so", testenv_build_dir());
	snprintf(spmtap, sizeof(spmtap), "%s/spmtap", testenv_build_dir());
	if (access(shim, R_OK))
		return "libspmtap-emu.so not built";
	if (access("/usr/bin/sqlite3", X_OK) && access("/bin/sqlite3", X_OK))
		return "sqlite3 CLI not installed";
	return NULL;
}

static const char *path(const char *name)
{
	static char buf[8][4096];
	static int k;
	k = (k + 1) % 8;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", testenv_tmpdir(), name);
	return buf[k];
}

/* spmtap --emulate mi300a,mi210 ARGS, stderr to errfile; the pid. */
static pid_t spawn(const char *const *args, const char *const *env, const char *errfile, long fsize)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	unsetenv("SPMTAP_EMU_ACTIVE");
	unsetenv("LD_PRELOAD");
	setenv("SPMTAP_EMU_STATE_DIR", path("state"), 1);
	for (; env && *env; env++)
		putenv((char *)*env);
	if (fsize > 0) {
		struct rlimit rl = { (rlim_t)fsize, (rlim_t)fsize };
		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
	}
	int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		dup2(fd, 2);
		close(fd);
	}
	char *argv[48];
	int n = 0;
	argv[n++] = spmtap;
	argv[n++] = "--emulate";
	argv[n++] = "mi300a,mi210";
	for (; *args && n < 47; args++)
		argv[n++] = (char *)*args;
	argv[n] = NULL;
	execv(spmtap, argv);
	_exit(127);
}

static int wait_status(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *slurp(const char *p)
{
	FILE *f = fopen(p, "r");
	static char buf[1 << 16];
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	buf[n] = 0;
	if (f)
		fclose(f);
	return buf;
}

/* One line of a shell command's output. */
static char *sh1(const char *cmd)
{
	static char line[8192];
	line[0] = 0;
	FILE *p = popen(cmd, "r");
	if (!p)
		return line;
	if (!fgets(line, sizeof(line), p))
		line[0] = 0;
	pclose(p);
	line[strcspn(line, "\n")] = 0;
	return line;
}

/* Rows per stream and host_ns monotonic per (gpu,xcc) in NAME_spm.csv. */
static long csv_check(const char *file, long *bad_order)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return -1;
	char line[4096];
	long rows = 0;
	int64_t last[16][16];
	memset(last, 0, sizeof(last));
	*bad_order = 0;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned g, x;
		long long h;
		if (sscanf(line, "%u,%u,%lld,", &g, &x, &h) != 3 || g > 15 || x > 15) {
			rows = -2;
			break;
		}
		if (h <= last[g][x])
			(*bad_order)++;
		last[g][x] = h;
		rows++;
	}
	fclose(f);
	return rows;
}

static void test_formats(void)
{
	const char *dir = path("fmt");
	const char *args[] = { "record", "--spm", "SQ_WAVES,TCC_HIT", "--device", "all", "--smi",
			       "power,energy", "-d", dir, "-o", "run", "-f", "csv,perfetto,sqlite",
			       "--duration", "1", NULL };
	int st = wait_status(spawn(args, NULL, path("fmt.err"), 0));
	if (st)
		fprintf(stderr, "\n%s\n", slurp(path("fmt.err")));
	CU_ASSERT_EQUAL_FATAL(st, 0);
	char cmd[8192], db[4096], csv[4096];
	snprintf(db, sizeof(db), "%s/run.db", dir);
	snprintf(csv, sizeof(csv), "%s/run_spm.csv", dir);
	/* sqlite3: 7 SPM streams (6 XCCs of the MI300A, 1 of the MI210), 2 sensor streams */
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select count(*) from stream where source='spm'\"", db);
	CU_ASSERT_STRING_EQUAL(sh1(cmd), "7");
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select count(*) from stream where source='smi'\"", db);
	CU_ASSERT_STRING_EQUAL(sh1(cmd), "2");
	/* rows per counter: every SPM metric has as many rows as its stream has samples */
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select count(distinct n) from (select m.stream_id, "
		 "count(*) n from sample s join metric m on m.id = s.metric_id join stream t on "
		 "t.id = m.stream_id where t.source = 'spm' group by m.id) group by stream_id\" | sort -u", db);
	CU_ASSERT_STRING_EQUAL(sh1(cmd), "1");
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select count(*) from sample s join metric m on "
		 "m.id = s.metric_id where m.name = 'SQ_WAVES'\"", db);
	long sq = atol(sh1(cmd));
	long bad = 0, rows = csv_check(csv, &bad);
	fprintf(stderr, "\n    csv %ld SPM rows, sqlite %ld SQ_WAVES rows, %ld out of order ", rows, sq, bad);
	CU_ASSERT(rows > 1000);
	CU_ASSERT_EQUAL(rows, sq);
	CU_ASSERT_EQUAL(bad, 0);
	/* time range: within the run, about a second */
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select (max(host_ns) - min(host_ns)) / 1000000 from sample\"", db);
	long span = atol(sh1(cmd));
	CU_ASSERT(span > 500 && span < 2000);
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select value from meta where key='timebase'\"", db);
	CU_ASSERT_PTR_NOT_NULL(strstr(sh1(cmd), "residual_rms_ns"));
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select value from meta where key='spm_clock_hz'\"", db);
	CU_ASSERT_EQUAL(atof(sh1(cmd)), 1e8);
	/* Perfetto: protoc reads it; one track per counter per GPU/XCC */
	snprintf(cmd, sizeof(cmd), "protoc --decode=perfetto.protos.Trace -I collector/proto "
		 "collector/proto/perfetto_trace.proto < %s/run.pftrace | grep -c "
		 "'name: \"GPU[01] XCC[0-9] \\(SQ_WAVES\\|TCC_HIT\\)\"'", dir);
	if (!access("collector/proto/perfetto_trace.proto", R_OK))
		CU_ASSERT_STRING_EQUAL(sh1(cmd), "14");
	/* sensors in CSV */
	snprintf(cmd, sizeof(cmd), "head -1 %s/run_smi.csv", dir);
	CU_ASSERT_PTR_NOT_NULL(strstr(sh1(cmd), "gpu,host_ns,sensor_ts,"));
}

/* Every byte: decoded samples + resync drops + pre-start + trailing == bytes fed, per XCC. */
static void check_accounting(const char *db, const char *what)
{
	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select count(*) from json_each((select value from meta "
		 "where key='accounting')) g, json_each(g.value, '$.xcc') x where "
		 "json_extract(x.value,'$.bytes') != json_extract(x.value,'$.sample_bytes') + "
		 "json_extract(x.value,'$.resync_dropped_bytes') + json_extract(x.value,'$.prestart_bytes') + "
		 "json_extract(x.value,'$.trailing_bytes')\"", db);
	CU_ASSERT_STRING_EQUAL(sh1(cmd), "0");
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"select sum(json_extract(x.value,'$.lost_gap_samples')) || ' gap samples, ' || "
		 "sum(json_extract(x.value,'$.kernel_loss_flags')) || ' kernel flags, ' || "
		 "sum(json_extract(x.value,'$.resync_dropped_bytes')) || ' resync bytes, ' || "
		 "sum(json_extract(x.value,'$.bytes')) || ' bytes' from json_each((select value from meta "
		 "where key='accounting')) g, json_each(g.value, '$.xcc') x\"", db);
	fprintf(stderr, "\n    %s: %s ", what, sh1(cmd));
}

static void test_stalls(void)
{
	static const char *const envs[2][2] = { { "SPMTAP_WRITER_STALL=300:700", NULL },
						{ "SPMTAP_DECODE_STALL=300:700", NULL } };
	for (int k = 0; k < 2; k++) {
		const char *dir = path(k ? "dstall" : "wstall");
		const char *args[] = { "record", "--spm", "SQ_WAVES", "--device", "all", "-d", dir,
				       "-o", "run", "-f", "sqlite", "--buffers", "2", "--buffer-size",
				       "256k", "--duration", "1.5", NULL };
		int st = wait_status(spawn(args, envs[k], path("stall.err"), 0));
		if (st)
			fprintf(stderr, "\n%s\n", slurp(path("stall.err")));
		CU_ASSERT_EQUAL(st, 0);
		char db[4096];
		snprintf(db, sizeof(db), "%s/run.db", dir);
		check_accounting(db, k ? "decode stall 700 ms" : "writer stall 700 ms");
	}
}

static void test_sigint(void)
{
	const char *dir = path("sig");
	const char *args[] = { "record", "--spm", "SQ_WAVES", "--device", "all", "-d", dir, "-o",
			       "run", "-f", "csv,sqlite,perfetto", NULL };
	pid_t pid = spawn(args, NULL, path("sig.err"), 0);
	sleep(1);
	kill(pid, SIGINT);
	int st = wait_status(pid);
	CU_ASSERT_EQUAL(st, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(slurp(path("sig.err")), "stopped by"));
	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "sqlite3 %s/run.db 'pragma integrity_check'", dir);
	CU_ASSERT_STRING_EQUAL(sh1(cmd), "ok");
	snprintf(cmd, sizeof(cmd), "%s/run_spm.csv", dir);
	long bad, rows = csv_check(cmd, &bad);
	CU_ASSERT(rows > 0);
	snprintf(cmd, sizeof(cmd), "tail -c1 %s/run_spm.csv | od -An -c | tr -d ' '", dir);
	CU_ASSERT_STRING_EQUAL(sh1(cmd), "\\n");
}

static void test_full_disk(void)
{
	const char *dir = path("full");
	const char *args[] = { "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "run", "-f", "csv",
			       "--duration", "2", NULL };
	int st = wait_status(spawn(args, NULL, path("full.err"), 1 << 20));
	const char *e = slurp(path("full.err"));
	CU_ASSERT_EQUAL(st, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(e, "run_spm.csv"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e, "File too large"));
	char f[4096];
	snprintf(f, sizeof(f), "%s/run_spm.csv", dir);
	long bad;
	FILE *fp = fopen(f, "r");
	char line[256] = "";
	CU_ASSERT(fp && fgets(line, sizeof(line), fp));
	if (fp)
		fclose(fp);
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "gpu,xcc,host_ns,gpu_ticks,SQ_WAVES"));
	(void)bad;
}

static void test_app(void)
{
	const char *dir = path("app");
	const char *args[] = { "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "run", "--",
			       "/bin/sh", "-c", "sleep 1; exit 7", NULL };
	int st = wait_status(spawn(args, NULL, path("app.err"), 0));
	CU_ASSERT_EQUAL(st, 7);
	char f[4096];
	snprintf(f, sizeof(f), "%s/run_spm.csv", dir);
	long bad, rows = csv_check(f, &bad);
	CU_ASSERT(rows > 100);
	const char *args2[] = { "record", "--spm", "SQ_WAVES", "-d", dir, "-o", "run2", "--",
				"/bin/sleep", "1", NULL };
	CU_ASSERT_EQUAL(wait_status(spawn(args2, NULL, path("app.err"), 0)), 0);
}

int main(int argc, char **argv)
{
	testenv_under_emu(argc, argv, "mi300a,mi210", NULL);
	static const struct testenv_case cases[] = {
		{ "formats", test_formats, need_emulator },
		{ "stalls", test_stalls, need_emulator },
		{ "sigint", test_sigint, need_emulator },
		{ "full_disk", test_full_disk, need_emulator },
		{ "app", test_app, need_emulator },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("session", cases, argc, argv);
}
