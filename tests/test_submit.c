/* SPDX-License-Identifier: MIT */
/*
 * Submitters through the real Debian ROCr 5.2.3 and libhsakmt 5.2.3 on the
 * emulated CP: the planner's start program, carried by each queue path,
 * leaves exactly the planner's register values on every XCC (read back
 * from the emulator, which never saw the plan); the choice between
 * submitters and each reason (no ROCr, ROCr without gfx942, the user's
 * HSA_OVERRIDE_GFX_VERSION); errors a user can act on (queue creation
 * refused, no completion, a program the CP cannot run).
 *
 * Cases that need their own process environment (ROCr is loaded and
 * initialised once per process) run as children: the parent case re-runs
 * this binary on that one case with the environment set.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emu/common/emu.h"
#include "emu/common/readback.h"
#include "lib/testenv.h"
#include "spm/plan.h"
#include "spm/pm4.h"
#include "spm/spm.h"
#include "spm/submit.h"

#define SPEC "mi210,mi300a"

static struct spm_device *devs;
static size_t ndev;
static const char *self_exe;

static void discover(void)
{
	char err[SPM_ERRLEN];
	if (!devs)
		CU_ASSERT_EQUAL_FATAL(spm_discover(NULL, &devs, &ndev, err, sizeof(err)), 0);
	CU_ASSERT_FATAL(ndev == 2);
}

static const struct spm_device *dev_gfx(const char *gfx)
{
	discover();
	for (size_t i = 0; i < ndev; i++)
		if (!strcmp(devs[i].gfx, gfx))
			return &devs[i];
	CU_FAIL_FATAL("no such GPU in the emulated node");
	return NULL;
}

/* Re-runs this binary on `name` with extra "KEY=VALUE" settings; its exit status. */
static int run_child(const char *name, const char *const *env)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		setenv("SPMTAP_TEST_CHILD", "1", 1);
		for (size_t i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		execl(self_exe, self_exe, name, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static const char *only_in_child(void)
{
	return getenv("SPMTAP_TEST_CHILD") ? NULL : "runs in a child with its own environment";
}

static const char *only_in_parent(void)
{
	return getenv("SPMTAP_TEST_CHILD") ? "the parent's case" : NULL;
}

/* ---- register read-back --------------------------------------------------------------------------- */

static int kfd = -1;

static uint32_t rb(const struct spm_device *d, uint32_t xcc, uint32_t what, uint32_t addr, uint32_t se, uint32_t inst)
{
	if (kfd < 0)
		kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	struct emu_readback_args a = { d->gpu_id, xcc, what, addr, se, inst, 0xDEADBEEF, 0 };
	return ioctl(kfd, EMU_IOC_READBACK, &a) ? 0xDEADBEEF : a.value;
}

static struct spm_plan *plan_for(const struct spm_device *d, const char *const *names, size_t n)
{
	struct spm_geometry geo;
	enum spm_gfx gfx;
	char err[SPM_ERRLEN];
	CU_ASSERT_EQUAL_FATAL(spm_geometry_from_device(d, &geo, &gfx, err, sizeof(err)), 0);
	struct spm_plan_request req = { .gfx = d->gfx, .geo = geo, .counters = names, .ncounters = n,
					.interval = 4096 };
	struct spm_plan *p = NULL;
	CU_ASSERT_EQUAL_FATAL(spm_plan_create(&req, &p, err, sizeof(err)), 0);
	return p;
}

/*
 * Every value the planner decided, against what the emulated CP holds on
 * every XCC after running the program: the segment sizes, the interval,
 * both muxsel RAMs entry by entry, each select on each instance (and SE).
 * Returns the mismatches.
 */
static unsigned check_registers(const struct spm_device *d, const struct spm_plan *p)
{
	unsigned bad = 0, checked = 0;
	for (uint32_t x = 0; x < d->num_xcc; x++) {
#define EXPECT(got, want, ...)                                                         \
	do {                                                                           \
		uint32_t g_ = (got), w_ = (want);                                      \
		checked++;                                                             \
		if (g_ != w_ && bad++ < 8) {                                           \
			fprintf(stderr, "    XCC %u: ", x);                            \
			fprintf(stderr, __VA_ARGS__);                                  \
			fprintf(stderr, " = 0x%08x, planner 0x%08x\n", g_, w_);        \
		} else if (g_ != w_) {                                                 \
			bad++;                                                         \
		}                                                                      \
	} while (0)
		EXPECT(rb(d, x, EMU_RB_REG, 0xDC80, 0, 0), p->perfmon_cntl, "RLC_SPM_PERFMON_CNTL");
		EXPECT(rb(d, x, EMU_RB_REG, 0xDC84, 0, 0), p->segment_size, "SEGMENT_SIZE");
		if (p->has_core1)
			EXPECT(rb(d, x, EMU_RB_REG, 0xDCAF, 0, 0), p->segment_size_core1, "SEGMENT_SIZE_CORE1");
		for (size_t i = 0; i < p->global_ram_n; i++)
			EXPECT(rb(d, x, EMU_RB_GLOBAL_RAM, (uint32_t)i, 0, 0), p->global_ram[i], "global RAM[%zu]", i);
		for (uint32_t se = 0; se < p->geo.num_se; se++)
			for (size_t i = 0; i < p->se_ram_n; i++)
				EXPECT(rb(d, x, EMU_RB_SE_RAM, (uint32_t)i, se, 0), p->se_ram[i], "SE%u RAM[%zu]", se, i);
		for (size_t i = 0; i < p->nselects; i++) {
			const struct spm_plan_select *s = &p->selects[i];
			uint32_t inst = s->instance < 0 ? 0 : (uint32_t)s->instance;
			/* Global blocks ignore the SE; SE blocks were written to every SE. */
			uint32_t nse = spm_block_info(s->block)->segment == SPM_SEG_SE ? p->geo.num_se : 1;
			for (uint32_t se = 0; se < nse; se++)
				EXPECT(rb(d, x, EMU_RB_REG, s->reg, se, inst), s->value,
				       "select 0x%04x instance %u SE %u", s->reg, inst, se);
		}
		EXPECT(rb(d, x, EMU_RB_RLC, 1, 0, 0), p->sample_bytes, "RLC sample bytes");
		EXPECT(rb(d, x, EMU_RB_RLC, 2, 0, 0), p->interval, "RLC interval");
#undef EXPECT
	}
	printf("\n    %s on %s: %u register values compared over %u XCCs, %u differ ", "planner", d->gfx, checked,
	       d->num_xcc, bad);
	return bad;
}

/* The planner's start program through `ops`, then its stop program: registers equal the plan's. */
static void program_and_read_back(const struct spm_submitter_ops *ops, const struct spm_device *d)
{
	static const char *const names[] = { "SQ_WAVES", "SQ_INSTS_SALU", "TCC_HIT", "TA_TA_BUSY[3]", "TD_TD_BUSY",
					     "CPC_CPC_STAT_BUSY", "SPI_CSN_BUSY", "TCP_TOTAL_CACHE_ACCESSES" };
	struct spm_plan *p = plan_for(d, names, sizeof(names) / sizeof(names[0]));
	struct spm_pm4 start, stop;
	spm_pm4_init(&start);
	spm_pm4_init(&stop);
	CU_ASSERT_EQUAL_FATAL(spm_pm4_build_start(p, &start), 0);
	CU_ASSERT_EQUAL_FATAL(spm_pm4_build_stop(p, &stop), 0);
	char err[SPM_ERRLEN] = "", what[256];
	struct spm_submitter *s = NULL;
	int rc = ops->create(&s, d, err, sizeof(err));
	if (rc)
		fprintf(stderr, "\n    %s create: %s\n", ops->name, err);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	ops->describe(s, what, sizeof(what));
	printf("\n    %s: %s", ops->name, what);
	uint64_t t0 = spm_submit_now_ns();
	rc = ops->submit(s, start.dw, start.n, SPM_SUBMIT_TIMEOUT_MS, err, sizeof(err));
	double ms = (double)(spm_submit_now_ns() - t0) / 1e6;
	if (rc)
		fprintf(stderr, "\n    start: %s\n", err);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	printf("\n    start program: %zu dwords, completed in %.2f ms", start.n, ms);
	CU_ASSERT_EQUAL(check_registers(d, p), 0);
	for (uint32_t x = 0; x < d->num_xcc; x++)
		CU_ASSERT_EQUAL(rb(d, x, EMU_RB_RLC, 0, 0, 0), 1); /* COUNTING */
	CU_ASSERT_EQUAL(ops->submit(s, stop.dw, stop.n, SPM_SUBMIT_TIMEOUT_MS, err, sizeof(err)), 0);
	for (uint32_t x = 0; x < d->num_xcc; x++)
		CU_ASSERT_NOT_EQUAL(rb(d, x, EMU_RB_RLC, 0, 0, 0), 1); /* no longer counting */
	/* Reprogramming with another set on the same queue replaces every value. */
	static const char *const other[] = { "SQ_CYCLES", "TCC_MISS[1]" };
	struct spm_plan *p2 = plan_for(d, other, 2);
	struct spm_pm4 start2;
	spm_pm4_init(&start2);
	CU_ASSERT_EQUAL_FATAL(spm_pm4_build_start(p2, &start2), 0);
	CU_ASSERT_EQUAL(ops->submit(s, start2.dw, start2.n, SPM_SUBMIT_TIMEOUT_MS, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(rb(d, 0, EMU_RB_GLOBAL_RAM, 0, 0, 0), p2->global_ram[0]);
	CU_ASSERT_EQUAL(rb(d, 0, EMU_RB_RLC, 1, 0, 0), p2->sample_bytes);
	CU_ASSERT_EQUAL(ops->submit(s, stop.dw, stop.n, SPM_SUBMIT_TIMEOUT_MS, err, sizeof(err)), 0);
	ops->destroy(s);
	spm_pm4_fini(&start);
	spm_pm4_fini(&start2);
	spm_pm4_fini(&stop);
	spm_plan_free(p);
	spm_plan_free(p2);
}

static void test_rocr_mi210(void)
{
	program_and_read_back(&spm_submitter_rocr, dev_gfx("gfx90a"));
}

static void test_hsakmt_mi210(void)
{
	program_and_read_back(&spm_submitter_hsakmt, dev_gfx("gfx90a"));
}

static void test_hsakmt_mi300a(void)
{
	program_and_read_back(&spm_submitter_hsakmt, dev_gfx("gfx942"));
}

static void test_table(void)
{
	CU_ASSERT_PTR_EQUAL(spm_submitters()[0], &spm_submitter_rocr);
	CU_ASSERT_PTR_EQUAL(spm_submitters()[1], &spm_submitter_hsakmt);
	CU_ASSERT_PTR_NULL(spm_submitters()[2]);
	CU_ASSERT_PTR_EQUAL(spm_submitter_find("hsakmt"), &spm_submitter_hsakmt);
	CU_ASSERT_PTR_NULL(spm_submitter_find("emu"));
	CU_ASSERT_PTR_NULL(spm_submitter_find(NULL));
	const struct spm_submitter_ops *ops;
	struct spm_submitter *s;
	char err[SPM_ERRLEN];
	CU_ASSERT_EQUAL(spm_submitter_open(dev_gfx("gfx90a"), "aql", &ops, &s, NULL, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "rocr, hsakmt"));
}

/* gfx942 on ROCr 5.2.3: dropped with the reason, and the choice falls back to libhsakmt's queue. */
static void test_choice_gfx942(void)
{
	const struct spm_device *d = dev_gfx("gfx942");
	char err[SPM_ERRLEN] = "", note[SPM_ERRLEN] = "";
	struct spm_submitter *s = NULL;
	CU_ASSERT_EQUAL(spm_submitter_rocr.create(&s, d, err, sizeof(err)), -ENODEV);
	printf("\n    rocr on gfx942: %s ", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "does not know gfx942"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "5.7"));
	const struct spm_submitter_ops *ops = NULL;
	CU_ASSERT_EQUAL_FATAL(spm_submitter_open(d, NULL, &ops, &s, note, err, sizeof(err)), 0);
	CU_ASSERT_PTR_EQUAL(ops, &spm_submitter_hsakmt);
	CU_ASSERT_PTR_NOT_NULL(strstr(note, "rocr: "));
	CU_ASSERT_PTR_NOT_NULL(strstr(note, "gfx942"));
	ops->destroy(s);
	/* Asked for by name, no fallback: the reason is the error. */
	CU_ASSERT_EQUAL(spm_submitter_open(d, "rocr", &ops, &s, NULL, err, sizeof(err)), -ENODEV);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "rocr: "));
	CU_ASSERT_PTR_NULL(strstr(err, "hsakmt: "));
	/* On gfx90a ROCr is first and works. */
	CU_ASSERT_EQUAL_FATAL(spm_submitter_open(dev_gfx("gfx90a"), NULL, &ops, &s, note, err, sizeof(err)), 0);
	CU_ASSERT_PTR_EQUAL(ops, &spm_submitter_rocr);
	CU_ASSERT_STRING_EQUAL(note, "");
	ops->destroy(s);
}

/* ---- children: their own environment --------------------------------------------------------------- */

static void child_no_rocr(void)
{
	const struct spm_device *d = dev_gfx("gfx90a");
	char err[SPM_ERRLEN] = "", note[SPM_ERRLEN] = "";
	struct spm_submitter *s = NULL;
	CU_ASSERT_EQUAL(spm_submitter_rocr.create(&s, d, err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "dlopen(/nonexistent/libhsa-runtime64.so.1)"));
	const struct spm_submitter_ops *ops = NULL;
	CU_ASSERT_EQUAL_FATAL(spm_submitter_open(d, NULL, &ops, &s, note, err, sizeof(err)), 0);
	CU_ASSERT_PTR_EQUAL(ops, &spm_submitter_hsakmt);
	CU_ASSERT_PTR_NOT_NULL(strstr(note, "dlopen"));
	ops->destroy(s);
}

/* The user's override: ROCr then takes the MI300 as a gfx90a; spmtap plans for gfx942 from sysfs. */
static void child_override(void)
{
	const struct spm_device *d = dev_gfx("gfx942"); /* discovery reads sysfs, not libhsakmt */
	CU_ASSERT_STRING_EQUAL(d->gfx, "gfx942");
	char what[512] = "";
	struct spm_submitter *s = NULL;
	char err[SPM_ERRLEN] = "";
	int rc = spm_submitter_rocr.create(&s, d, err, sizeof(err));
	if (rc)
		fprintf(stderr, "\n    %s\n", err);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	spm_submitter_rocr.describe(s, what, sizeof(what));
	printf("\n    %s ", what);
	CU_ASSERT_PTR_NOT_NULL(strstr(what, "HSA_OVERRIDE_GFX_VERSION=9.0.10"));
	CU_ASSERT_PTR_NOT_NULL(strstr(what, "plans for gfx942"));
	spm_submitter_rocr.destroy(s);
	program_and_read_back(&spm_submitter_rocr, d); /* every XCC of the MI300A */
}

/*
 * The CP stops taking packets after the create's NOP: the next program
 * times out, and says where.  One submitter per child: a hung CP stays hung
 * for the process.
 */
static void child_timeout(void)
{
	static const char *const names[] = { "SQ_WAVES" };
	{
		const struct spm_submitter_ops *ops = spm_submitter_find(getenv("SPMTAP_TEST_SUBMITTER"));
		CU_ASSERT_PTR_NOT_NULL_FATAL(ops);
		const struct spm_device *d = dev_gfx("gfx90a");
		struct spm_plan *p = plan_for(d, names, 1);
		struct spm_pm4 start;
		spm_pm4_init(&start);
		CU_ASSERT_EQUAL_FATAL(spm_pm4_build_start(p, &start), 0);
		char err[SPM_ERRLEN] = "";
		struct spm_submitter *s = NULL;
		CU_ASSERT_EQUAL_FATAL(ops->create(&s, d, err, sizeof(err)), 0);
		uint64_t t0 = spm_submit_now_ns();
		CU_ASSERT_EQUAL(ops->submit(s, start.dw, start.n, 300, err, sizeof(err)), -ETIMEDOUT);
		double ms = (double)(spm_submit_now_ns() - t0) / 1e6;
		printf("\n    %s after %.0f ms: %s ", ops->name, ms, err);
		CU_ASSERT(ms >= 290 && ms < 3000);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "no completion within 300 ms"));
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "packet 1 ")); /* the NOP was packet 0 */
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "queue"));
		char numbuf[32];
		snprintf(numbuf, sizeof(numbuf), "%zu dwords", start.n);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, numbuf));
		/* The queue is abandoned: later programs say so at once. */
		CU_ASSERT_EQUAL(ops->submit(s, start.dw, start.n, 300, err, sizeof(err)), -EIO);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "abandoned"));
		ops->destroy(s);
		spm_pm4_fini(&start);
		spm_plan_free(p);
	}
}

/* KFD refuses the queue (the process is at its limit): each submitter names the call and the errno. */
static void child_no_queue(void)
{
	const struct spm_device *d = dev_gfx("gfx90a");
	char err[SPM_ERRLEN] = "";
	struct spm_submitter *s = NULL;
	int rc = spm_submitter_rocr.create(&s, d, err, sizeof(err));
	printf("\n    rocr: %s", err);
	CU_ASSERT_EQUAL(rc, -ENOSPC);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "hsa_queue_create"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "ENOSPC"));
	CU_ASSERT_EQUAL(spm_submitter_hsakmt.create(&s, d, err, sizeof(err)), -ENOSPC);
	printf("\n    hsakmt: %s ", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "hsaKmtCreateQueue"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "ENOSPC"));
}

static void test_no_rocr(void)
{
	static const char *const env[] = { "SPMTAP_HSA_RUNTIME=/nonexistent/libhsa-runtime64.so.1", NULL };
	CU_ASSERT_EQUAL(run_child("child_no_rocr", env), 0);
}

static void test_override(void)
{
	static const char *const env[] = { "HSA_OVERRIDE_GFX_VERSION=9.0.10", NULL };
	CU_ASSERT_EQUAL(run_child("child_override", env), 0);
}

static void test_timeout(void)
{
	static const char *const rocr[] = { "SPMTAP_EMU_CP_HANG=1", "SPMTAP_TEST_SUBMITTER=rocr", NULL };
	static const char *const kmt[] = { "SPMTAP_EMU_CP_HANG=1", "SPMTAP_TEST_SUBMITTER=hsakmt", NULL };
	CU_ASSERT_EQUAL(run_child("child_timeout", rocr), 0);
	CU_ASSERT_EQUAL(run_child("child_timeout", kmt), 0);
}

static void test_no_queue(void)
{
	static const char *const env[] = { "SPMTAP_EMU_MAX_QUEUES=0", NULL };
	CU_ASSERT_EQUAL(run_child("child_no_queue", env), 0);
}

/* A program the CP cannot run: the queue halts (the emulator says why on stderr), the submit times out. */
static void test_unknown_opcode(void)
{
	static const uint32_t bad[] = { 0xC0009900u, 0 }; /* opcode 0x99 */
	for (int k = 0; k < 2; k++) {
		const struct spm_submitter_ops *ops = k ? &spm_submitter_hsakmt : &spm_submitter_rocr;
		char err[SPM_ERRLEN] = "";
		struct spm_submitter *s = NULL;
		CU_ASSERT_EQUAL_FATAL(ops->create(&s, dev_gfx("gfx90a"), err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(ops->submit(s, bad, 2, 400, err, sizeof(err)), -ETIMEDOUT);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "no completion within 400 ms"));
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "2 dwords"));
		ops->destroy(s);
	}
}

int main(int argc, char **argv)
{
	testenv_under_emu(argc, argv, SPEC, NULL);
	static char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	self_exe = exe;
	static const struct testenv_case cases[] = {
		{ "table", test_table, only_in_parent },
		{ "rocr_mi210", test_rocr_mi210, only_in_parent },
		{ "hsakmt_mi210", test_hsakmt_mi210, only_in_parent },
		{ "hsakmt_mi300a", test_hsakmt_mi300a, only_in_parent },
		{ "choice_gfx942", test_choice_gfx942, only_in_parent },
		{ "unknown_opcode", test_unknown_opcode, only_in_parent },
		{ "no_rocr", test_no_rocr, only_in_parent },
		{ "override", test_override, only_in_parent },
		{ "timeout", test_timeout, only_in_parent },
		{ "no_queue", test_no_queue, only_in_parent },
		{ "child_no_rocr", child_no_rocr, only_in_child },
		{ "child_override", child_override, only_in_child },
		{ "child_timeout", child_timeout, only_in_child },
		{ "child_no_queue", child_no_queue, only_in_child },
		{ NULL, NULL, NULL },
	};
	int rc = testenv_run_suite("submit", cases, argc, argv);
	free(devs);
	return rc;
}
