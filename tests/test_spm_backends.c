/* SPDX-License-Identifier: MIT */
/*
 * The acquisition backends against the emulated device (profile
 * "mi300a,mi210": a gen B GPU with 6 XCCs and a gen A GPU), through the real
 * Debian libhsakmt 5.2.3 and through the raw ioctls.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "emu/common/emu.h"
#include "spm/spm.h"
#include "testenv.h"
#include "uapi/kfd_spm.h"

#define PROFILE "mi300a,mi210"
#define BUF_SIZE (256u * 1024)

static struct spm_device *devs;
static size_t ndev;
static int discover_rc = -ENODEV;
static char discover_err[SPM_ERRLEN];

#define HAS(s, sub) CU_ASSERT_PTR_NOT_NULL(strstr((s), (sub)))

static const char *need_emu(void)
{
	return getenv("SPMTAP_EMU_ACTIVE") ? NULL : "not running under the emulator";
}

static const char *need_devs(void)
{
	const char *why = need_emu();
	if (why)
		return why;
	/* Registration asks before any case runs, so main() discovers first. */
	return ndev == 2 ? NULL : "discovery did not find the two emulated GPUs";
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static void test_discover(void)
{
	struct emu_gpu_desc want[4];
	char err[SPM_ERRLEN] = "";
	CU_ASSERT_EQUAL_FATAL(emu_spec_parse(PROFILE, want, 4, err, sizeof(err)), 2);
	if (discover_rc)
		fprintf(stderr, "spm_discover: %s\n", discover_err);
	CU_ASSERT_EQUAL_FATAL(discover_rc, 0);
	CU_ASSERT_EQUAL_FATAL(ndev, 2);
	for (size_t i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL(devs[i].gpu_id, want[i].gpu_id);
		CU_ASSERT_EQUAL(devs[i].node, want[i].node);
		CU_ASSERT_EQUAL(devs[i].drm_render_minor, want[i].render_minor);
		CU_ASSERT_STRING_EQUAL(devs[i].gfx, want[i].profile->gfx_name);
		CU_ASSERT_EQUAL(devs[i].num_xcc, want[i].profile->num_xcc);
		CU_ASSERT_EQUAL(devs[i].cu_count, want[i].profile->cu_count);
		spm_device_marketing_name(&devs[i]);
		CU_ASSERT_STRING_EQUAL(devs[i].marketing_name, want[i].profile->marketing_name);
	}
	CU_ASSERT_EQUAL(devs[0].num_xcc, 6);
	CU_ASSERT_EQUAL(devs[0].num_se, 4);
	CU_ASSERT_EQUAL(devs[1].num_xcc, 1);
}

static void test_probes(void)
{
	char reason[256] = "";
	CU_ASSERT_EQUAL(spm_backend_hsakmt.probe(reason, sizeof(reason)), 0);
	CU_ASSERT_EQUAL(spm_backend_kfd.probe(reason, sizeof(reason)), 0);
	CU_ASSERT_EQUAL(spm_backend_hsa.probe(reason, sizeof(reason)), -EOPNOTSUPP);
	HAS(reason, "libhsa-runtime64.so.1 (ROCr 5.2.3?) has no hsa_amd_spm_* (added in ROCm 5.5)");

	struct spm_backend *b = NULL;
	char err[SPM_ERRLEN] = "";
	CU_ASSERT_EQUAL(spm_backend_hsa.open(&b, devs, ndev, err, sizeof(err)), -EOPNOTSUPP);
	HAS(err, "has no hsa_amd_spm_*");
}

/* Acquire, probe, rotate three buffers, stop, release: one GPU through one backend. */
static void session(const struct spm_backend_ops *ops, struct spm_backend *b,
		    const struct spm_device *dev, enum spm_gen want)
{
	char err[SPM_ERRLEN] = "";
	struct spm_stream *s = NULL;
	int r = spm_stream_open(&s, ops, b, dev, NULL, err, sizeof(err));
	CU_ASSERT_EQUAL_FATAL(r, 0);
	if (r) {
		fprintf(stderr, "%s: %s\n", ops->name, err);
		return;
	}
	CU_ASSERT_EQUAL(spm_stream_gen(s), want);
	CU_ASSERT_EQUAL(spm_stream_overhead(s, BUF_SIZE), want == SPM_GEN_B ? 32 : 0);

	char *bufs[3];
	for (int i = 0; i < 3; i++) {
		bufs[i] = malloc(BUF_SIZE);
		CU_ASSERT_PTR_NOT_NULL_FATAL(bufs[i]);
		memset(bufs[i], 0xA5, BUF_SIZE);
	}
	struct spm_retired ret;
	CU_ASSERT_EQUAL(spm_stream_rotate(s, bufs[0], BUF_SIZE, 0, &ret, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NULL(ret.buf);
	uint64_t total = 0;
	for (int i = 1; i <= 3; i++) {
		sleep_ms(20);
		r = spm_stream_rotate(s, bufs[i % 3], BUF_SIZE, 0, &ret, err, sizeof(err));
		CU_ASSERT_EQUAL(r, 0);
		CU_ASSERT_PTR_EQUAL(ret.buf, bufs[(i - 1) % 3]);
		CU_ASSERT_EQUAL(ret.size, BUF_SIZE);
		CU_ASSERT(ret.args_bytes <= BUF_SIZE - dev->num_xcc * spm_stream_overhead(s, BUF_SIZE));
		total += ret.args_bytes;
		if (want == SPM_GEN_B) {
			/* Every region of a retired gen B buffer starts with a header. */
			uint32_t region = (BUF_SIZE / dev->num_xcc) & ~31u;
			for (uint32_t x = 0; x < dev->num_xcc; x++) {
				const struct spmtap_kfd_spm_buffer_header *h =
					(const void *)((char *)ret.buf + (size_t)x * region);
				CU_ASSERT_EQUAL(h->version, SPMTAP_KFD_SPM_HEADER_VERSION_0_4);
			}
		}
		memset(ret.buf, 0xA5, BUF_SIZE);
	}
	CU_ASSERT(total > 0); /* 60 ms of streaming delivered something */

	/* Stop with size 0: the stream substitutes what gen B requires. */
	CU_ASSERT_EQUAL(spm_stream_rotate(s, NULL, 0, 0, &ret, err, sizeof(err)), 0);
	CU_ASSERT_PTR_EQUAL(ret.buf, bufs[0]);

	struct spm_clock_pair cp = { 0 };
	CU_ASSERT_EQUAL(ops->clock_counters(b, dev, &cp), 0);
	CU_ASSERT_EQUAL(cp.system_freq, 1000000000ull);
	CU_ASSERT(cp.gpu_ticks > 0);
	CU_ASSERT(cp.boottime_ns > 0);

	CU_ASSERT_EQUAL(spm_stream_close(s), 0);
	for (int i = 0; i < 3; i++)
		free(bufs[i]);
}

static void run_backend(const struct spm_backend_ops *ops)
{
	struct spm_backend *b = NULL;
	char err[SPM_ERRLEN] = "";
	int r = ops->open(&b, devs, ndev, err, sizeof(err));
	if (r)
		fprintf(stderr, "%s open: %s\n", ops->name, err);
	CU_ASSERT_EQUAL_FATAL(r, 0);
	session(ops, b, &devs[0], SPM_GEN_B);
	session(ops, b, &devs[1], SPM_GEN_A);
	/* Acquire is repeatable after a release. */
	session(ops, b, &devs[0], SPM_GEN_B);
	ops->close(b);
}

static void test_hsakmt(void)
{
	run_backend(&spm_backend_hsakmt);
}

static void test_kfd(void)
{
	run_backend(&spm_backend_kfd);
}

/* Another process holds GPU 0's SPM: the parent's acquire must say so, naming it. */
static void test_busy(void)
{
	int p[2];
	CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
	pid_t pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		struct spm_backend *b = NULL;
		char c = 'n';
		if (spm_backend_kfd.open(&b, devs, ndev, NULL, 0) == 0 &&
		    spm_backend_kfd.acquire(b, &devs[0]) == 0)
			c = 'y';
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	char c = 0;
	CU_ASSERT_EQUAL(read(p[0], &c, 1), 1);
	close(p[0]);
	CU_ASSERT_EQUAL(c, 'y');

	struct spm_backend *b = NULL;
	char err[SPM_ERRLEN] = "", want[32];
	CU_ASSERT_EQUAL_FATAL(spm_backend_hsakmt.open(&b, devs, ndev, err, sizeof(err)), 0);
	struct spm_stream *s = NULL;
	CU_ASSERT_EQUAL(spm_stream_open(&s, &spm_backend_hsakmt, b, &devs[0], NULL, err,
					sizeof(err)), -EBUSY);
	CU_ASSERT_PTR_NULL(s);
	char gpu[64];
	snprintf(gpu, sizeof(gpu), "SPM on GPU 0 (gpu_id 0x%x) is held by another process",
		 devs[0].gpu_id);
	HAS(err, gpu);
	snprintf(want, sizeof(want), "%d (", (int)pid);
	HAS(err, want);

	/* The other GPU is free. */
	CU_ASSERT_EQUAL(spm_stream_open(&s, &spm_backend_hsakmt, b, &devs[1], NULL, err,
					sizeof(err)), 0);
	spm_stream_close(s);
	spm_backend_hsakmt.close(b);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

/* Errors a backend can produce here, and the sentences they become. */
static void test_errors(void)
{
	struct spm_backend *b = NULL;
	char err[SPM_ERRLEN] = "";
	CU_ASSERT_EQUAL_FATAL(spm_backend_kfd.open(&b, devs, ndev, err, sizeof(err)), 0);
	/* RELEASE without ACQUIRE: EINVAL on both generations (SPM.md 3.3). */
	int r = spm_backend_kfd.release(b, &devs[1]);
	CU_ASSERT_EQUAL(r, -EINVAL);
	spm_explain(r, "release", &devs[1], "kfd", err, sizeof(err));
	HAS(err, "not acquired");

	/* An unknown gpu_id is EINVAL from the kernel too. */
	struct spm_device bogus = devs[1];
	bogus.gpu_id = 0xdead;
	r = spm_backend_kfd.acquire(b, &bogus);
	CU_ASSERT_EQUAL(r, -EINVAL);
	spm_explain(r, "acquire", &bogus, "kfd", err, sizeof(err));
	HAS(err, "the kernel rejected the SPM ioctl");
	HAS(err, "EINVAL is ambiguous");
	spm_backend_kfd.close(b);

	spm_explain(-ENOTTY, "acquire", &devs[0], "kfd", err, sizeof(err));
	HAS(err, "amdgpu-dkms");
	spm_explain(-ENODEV, "open", NULL, "kfd", err, sizeof(err));
	HAS(err, "use --emulate PROFILE");

	/* libhsakmt's positive status for a bad node index becomes -ENODEV. */
	CU_ASSERT_EQUAL_FATAL(spm_backend_hsakmt.open(&b, devs, ndev, err, sizeof(err)), 0);
	struct spm_device far = devs[1];
	far.node = 63;
	CU_ASSERT_EQUAL(spm_backend_hsakmt.acquire(b, &far), -ENODEV);
	spm_backend_hsakmt.close(b);
}

int main(int argc, char **argv)
{
	testenv_under_emu(argc, argv, PROFILE, NULL);
	if (getenv("SPMTAP_EMU_ACTIVE"))
		discover_rc = spm_discover(NULL, &devs, &ndev, discover_err, sizeof(discover_err));
	static const struct testenv_case cases[] = {
		{ "backends/discover", test_discover, need_emu },
		{ "backends/probes", test_probes, need_devs },
		{ "backends/hsakmt", test_hsakmt, need_devs },
		{ "backends/kfd", test_kfd, need_devs },
		{ "backends/busy", test_busy, need_devs },
		{ "backends/errors", test_errors, need_devs },
		{ NULL, NULL, NULL },
	};
	int rc = testenv_run_suite("spm_backends", cases, argc, argv);
	free(devs);
	return rc;
}
