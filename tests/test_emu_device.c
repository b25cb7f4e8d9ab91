/* SPDX-License-Identifier: MIT */
/*
 * The emulated SPM device in its own process (emu/shim/spm_device.h,
 * docs/emulator.md "The device process"): the truth says where the device
 * ran and what it cost; in process mode the device's worker writes the
 * armed buffer while the owner makes no call at all, the device is a
 * child of the owner that dies with it, and a kill -9 of the owner frees
 * the SPM lock with no truth written, as before.
 * Runs under the emulator with mi210 (gen A) and mi300a (gen B, 6 XCCs),
 * with the device process unless SPMTAP_EMU_DEVICE says "inline".
 */
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>

#include "emu/common/emu.h"
#include "test_emu_util.h"

#define SPEC "mi210,mi300a"

enum { OP_ACQ = SPMTAP_KFD_SPM_OP_ACQUIRE, OP_REL = SPMTAP_KFD_SPM_OP_RELEASE };

static int kfd = -1;
static uint32_t GA, GB;
static unsigned MA, MB;

static bool process_mode(void)
{
	const char *e = getenv("SPMTAP_EMU_DEVICE");
	return !e || strcmp(e, "inline");
}

static const char *need_process(void)
{
	return process_mode() ? NULL : "the device runs inline (SPMTAP_EMU_DEVICE=inline)";
}

/* Children of `parent` whose command is spmtap-emu-device, from /proc; up to n pids. */
static int device_children(pid_t parent, pid_t *out, int n)
{
	DIR *d = opendir("/proc");
	int found = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[300], buf[512];
		int pid = atoi(e->d_name);
		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t r = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[r] = 0;
		/* pid (comm) state ppid ... */
		char *rp = strrchr(buf, ')');
		char state = 0;
		int ppid = 0;
		if (!rp || sscanf(rp + 1, " %c %d", &state, &ppid) != 2)
			continue;
		if (ppid == parent && state != 'Z' && strstr(buf, "(spmtap-emu-dev") && found < n)
			out[found++] = pid;
	}
	if (d)
		closedir(d);
	return found;
}

/* Gone, or a zombie nobody has reaped yet. */
static bool gone(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return true;
	size_t r = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[r] = 0;
	char *rp = strrchr(buf, ')');
	return !rp || rp[2] == 'Z' || rp[2] == 'X';
}

/* Every release line of this process names where the device ran and its CPU, the same on each XCC. */
static void test_truth_names_device(void)
{
	static uint8_t a[256 * 1024];
	uint8_t *b = malloc(6u << 20);
	uint32_t copied;
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GA, OP_ACQ), 0);
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GB, OP_ACQ), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, a, sizeof(a), 0, NULL, NULL), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, b, 6u << 20, 0, NULL, NULL), 0);
	ms_sleep(20);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, NULL, 0, 0, &copied, NULL), 0);
	CU_ASSERT(copied > 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, NULL, 6 * 64, 0, &copied, NULL), 0);
	CU_ASSERT(copied > 0);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_REL), 0);
	CU_ASSERT_EQUAL(spm_op(kfd, GB, OP_REL), 0);
	const char *mode = process_mode() ? "process" : "inline";
	json_t *ja = truth_last(GA, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ja);
	CU_ASSERT(truth_consistent(ja));
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(ja, "device")), mode);
	CU_ASSERT(json_is_real(json_object_get(ja, "device_cpu_s")));
	/* The device did produce and copy: in its own process that is CPU time it had to spend. */
	if (process_mode())
		CU_ASSERT(json_real_value(json_object_get(ja, "device_cpu_s")) > 0);
	json_decref(ja);
	double cpu0 = -1;
	for (unsigned k = 0; k < 6; k++) {
		json_t *j = truth_last(GB, k);
		CU_ASSERT_PTR_NOT_NULL_FATAL(j);
		CU_ASSERT(truth_consistent(j));
		CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "device")), mode);
		double cpu = json_real_value(json_object_get(j, "device_cpu_s"));
		if (k == 0)
			cpu0 = cpu;
		CU_ASSERT_DOUBLE_EQUAL(cpu, cpu0, 1e-9);
		json_decref(j);
	}
	free(b);
}

/*
 * Gen A: the worker copies on every RLC interrupt, so the armed buffer
 * fills while the owner makes no call.  The lazy inline engine wrote it
 * only inside the owner's next ioctl.
 */
static void test_worker_writes_without_a_call(void)
{
	static uint8_t buf[256 * 1024];
	memset(buf, 0xEE, sizeof(buf));
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GA, OP_ACQ), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, GA, buf, sizeof(buf), 0, NULL, NULL), 0);
	/* 8192 B/ms: the first line exists after 4 us; wait for it without touching the ioctl. */
	bool landed = false;
	for (int i = 0; i < 2000 && !landed; i++) {
		ms_sleep(1);
		landed = le((const uint8_t *)buf + 16, 4) == 0x544D5053u;
	}
	CU_ASSERT_TRUE(landed);
	uint32_t copied, loss;
	CU_ASSERT_EQUAL(spm_set(kfd, GA, NULL, 0, 0, &copied, &loss), 0);
	struct stream s = { 0 };
	stream_add(&s, buf, copied);
	stream_check(&s, 0, GA);
	CU_ASSERT_EQUAL(s.bad, 0);
	CU_ASSERT_EQUAL(s.first_seq, 0);
	stream_free(&s);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_REL), 0);
}

/*
 * A device far behind real time (here: stopped 300 ms, as a starved host
 * would leave it) does not make up the time sample by sample, with the
 * owner's next request waiting behind it: it loses what is older than
 * 2 ms unmade, flags the loss and counts it in the truth (lost_late_bytes,
 * part of lost_overflow_bytes).  Before, it made every line of those
 * 300 ms, and under load fell further behind with each step for good.
 */
static void test_late_device_loses_unmade(void)
{
	uint8_t *b = malloc(6u << 20);
	pid_t dev;
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GB, OP_ACQ), 0);
	CU_ASSERT_EQUAL_FATAL(device_children(getpid(), &dev, 1), 1);
	CU_ASSERT_EQUAL(spm_set(kfd, GB, b, 6u << 20, 0, NULL, NULL), 0);
	ms_sleep(5);
	CU_ASSERT_EQUAL(kill(dev, SIGSTOP), 0);
	ms_sleep(300);
	CU_ASSERT_EQUAL(kill(dev, SIGCONT), 0);
	uint32_t copied, loss;
	CU_ASSERT_EQUAL(spm_set(kfd, GB, NULL, 6 * 64, 0, &copied, &loss), 0);
	CU_ASSERT(copied > 0);
	CU_ASSERT(loss > 0);
	CU_ASSERT_EQUAL(spm_op(kfd, GB, OP_REL), 0);
	for (unsigned k = 0; k < 6; k++) {
		json_t *j = truth_last(GB, k);
		CU_ASSERT_PTR_NOT_NULL_FATAL(j);
		CU_ASSERT(truth_consistent(j));
		long long late = tv(j, "lost_late_bytes");
		/* 8192 B/ms per XCC: at least the 200 ms beyond the 100 ms bound. */
		CU_ASSERT(late >= 200ll * 8192);
		CU_ASSERT(late <= tv(j, "lost_overflow_bytes"));
		json_decref(j);
	}
	free(b);
}

/* One device process per GPU's session, a child of the owner; RELEASE ends it. */
static void test_one_device_per_session(void)
{
	pid_t pids[8];
	CU_ASSERT_EQUAL(device_children(getpid(), pids, 8), 0);
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GA, OP_ACQ), 0);
	CU_ASSERT_EQUAL(device_children(getpid(), pids, 8), 1);
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, GB, OP_ACQ), 0);
	CU_ASSERT_EQUAL(device_children(getpid(), pids, 8), 2);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_REL), 0);
	CU_ASSERT_EQUAL(device_children(getpid(), pids, 8), 1);
	CU_ASSERT_EQUAL(spm_op(kfd, GB, OP_REL), 0);
	CU_ASSERT_EQUAL(device_children(getpid(), pids, 8), 0);
}

/*
 * kill -9 of the owner: its device dies with it, the SPM lock is free for
 * the next process and no truth is written for the dead owner (it never
 * released), as with the inline engine.
 */
static void test_kill9_owner(void)
{
	int ready[2];
	CU_ASSERT_EQUAL_FATAL(pipe(ready), 0);
	pid_t child = fork();
	if (child == 0) {
		close(ready[0]);
		static uint8_t b[1 << 20];
		int k = kfd_open_vm(&GA, &MA, 1);
		char ok = k >= 0 && spm_op(k, GA, OP_ACQ) == 0 && spm_set(k, GA, b, sizeof(b), 0, NULL, NULL) == 0;
		if (write(ready[1], &ok, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	char ok = 0;
	CU_ASSERT_EQUAL(read(ready[0], &ok, 1), 1);
	close(ready[0]);
	CU_ASSERT_TRUE(ok);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_ACQ), EBUSY); /* the owner holds it, not its device */
	pid_t dev[2];
	int ndev = device_children(child, dev, 2);
	CU_ASSERT_EQUAL(ndev, process_mode() ? 1 : 0);
	ms_sleep(20);
	kill(child, SIGKILL);
	int st;
	CU_ASSERT_EQUAL(waitpid(child, &st, 0), child);
	CU_ASSERT(WIFSIGNALED(st));
	bool dead = true;
	for (int i = 0; i < ndev; i++) {
		int tries = 0;
		while (!gone(dev[i]) && tries++ < 5000)
			ms_sleep(1);
		dead &= gone(dev[i]);
	}
	CU_ASSERT_TRUE(dead);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_ACQ), 0);
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_REL), 0);
	/* No release line of the killed owner. */
	const char *path = getenv("SPMTAP_EMU_TRUTH");
	FILE *f = path ? fopen(path, "r") : NULL;
	char line[2048];
	int of_child = 0;
	while (f && fgets(line, sizeof(line), f)) {
		json_t *j = json_loads(line, 0, NULL);
		of_child += j && json_integer_value(json_object_get(j, "pid")) == child;
		json_decref(j);
	}
	if (f)
		fclose(f);
	CU_ASSERT_EQUAL(of_child, 0);
}

/*
 * An exec replaces the owner's image: the kernel ends its KFD process and
 * SPM with it (the lock file goes with the close-on-exec descriptor), and
 * the device must end too rather than write into the new image.
 */
static void test_owner_exec(void)
{
	int ready[2];
	CU_ASSERT_EQUAL_FATAL(pipe(ready), 0);
	pid_t child = fork();
	if (child == 0) {
		close(ready[0]);
		static uint8_t b[1 << 20];
		int k = kfd_open_vm(&GA, &MA, 1);
		char ok = k >= 0 && spm_op(k, GA, OP_ACQ) == 0 && spm_set(k, GA, b, sizeof(b), 0, NULL, NULL) == 0;
		if (write(ready[1], &ok, 1) != 1)
			_exit(1);
		close(ready[1]);
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	close(ready[1]);
	char ok = 0;
	CU_ASSERT_EQUAL(read(ready[0], &ok, 1), 1);
	close(ready[0]);
	CU_ASSERT_TRUE(ok);
	pid_t dev[2];
	int ndev = device_children(child, dev, 2);
	CU_ASSERT_EQUAL(ndev, process_mode() ? 1 : 0);
	/* Until the child has exec'ed. */
	char comm_path[64], comm[32] = "";
	snprintf(comm_path, sizeof(comm_path), "/proc/%d/comm", (int)child);
	for (int i = 0; i < 5000 && strcmp(comm, "sleep\n"); i++) {
		FILE *f = fopen(comm_path, "r");
		if (!f || !fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		if (f)
			fclose(f);
		if (strcmp(comm, "sleep\n"))
			ms_sleep(1);
	}
	CU_ASSERT_STRING_EQUAL(comm, "sleep\n");
	int tries = 0;
	while (ndev && !gone(dev[0]) && tries++ < 5000)
		ms_sleep(1);
	CU_ASSERT(ndev == 0 || gone(dev[0]));
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_ACQ), 0); /* the exec freed the lock */
	CU_ASSERT_EQUAL(spm_op(kfd, GA, OP_REL), 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

static const struct testenv_case cases[] = {
	{ "truth_names_device", test_truth_names_device, NULL },
	{ "worker_writes_without_a_call", test_worker_writes_without_a_call, need_process },
	{ "one_device_per_session", test_one_device_per_session, need_process },
	{ "late_device_loses_unmade", test_late_device_loses_unmade, need_process },
	{ "kill9_owner", test_kill9_owner, NULL },
	{ "owner_exec", test_owner_exec, NULL },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	struct emu_gpu_desc g[2];
	char err[256];
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return testenv_run_suite("emu_device", cases, argc, argv);
	/* The device process (the emulator's default) unless the run asks for the inline engine. */
	testenv_under_emu(argc, argv, SPEC, NULL);
	if (emu_spec_parse(SPEC, g, 2, err, sizeof(err)) != 2)
		return 2;
	GA = g[0].gpu_id;
	GB = g[1].gpu_id;
	MA = g[0].render_minor;
	MB = g[1].render_minor;
	uint32_t ids[2] = { GA, GB };
	unsigned minors[2] = { MA, MB };
	kfd = kfd_open_vm(ids, minors, 2);
	if (kfd < 0) {
		fprintf(stderr, "cannot open the emulated KFD: %s\n", strerror(errno));
		return 2;
	}
	return testenv_run_suite("emu_device", cases, argc, argv);
}
