/* SPDX-License-Identifier: MIT */
/* spm/explain.c and spm/holders.c: the sentences users see, and who holds the KFD. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spm/spm.h"
#include "testenv.h"

static const struct spm_device gpu1 = { .index = 1, .gpu_id = 0x1234, .gfx = "gfx90a", .num_xcc = 1 };

#define HAS(s, sub) CU_ASSERT_PTR_NOT_NULL(strstr((s), (sub)))
#define HASNT(s, sub) CU_ASSERT_PTR_NULL(strstr((s), (sub)))

/* A child holding a memfd named like the emulator's /dev/kfd stands in for another collector. */
static pid_t spawn_holder(void)
{
	int p[2];
	CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
	pid_t pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		int fd = memfd_create("spmtap-emu-kfd-test", 0);
		if (write(p[1], fd >= 0 ? "y" : "n", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	char c = 0;
	CU_ASSERT_EQUAL(read(p[0], &c, 1), 1);
	close(p[0]);
	CU_ASSERT_EQUAL(c, 'y');
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

static void test_holders(void)
{
	char out[512], want[32];
	pid_t pid = spawn_holder();
	spm_kfd_holders(out, sizeof(out));
	snprintf(want, sizeof(want), "%d (", (int)pid);
	HAS(out, want);
	snprintf(want, sizeof(want), "%d (", (int)getpid());
	HASNT(out, want); /* never ourselves */
	reap(pid);
	spm_kfd_holders(out, sizeof(out));
	snprintf(want, sizeof(want), "%d (", (int)pid);
	HASNT(out, want);
}

static void test_ebusy(void)
{
	char out[SPM_ERRLEN], want[64];
	pid_t pid = spawn_holder();
	spm_explain(-EBUSY, "acquire", &gpu1, "kfd", out, sizeof(out));
	HAS(out, "SPM on GPU 1 (gpu_id 0x1234) is held by another process");
	HAS(out, "processes with the KFD device open: ");
	snprintf(want, sizeof(want), "%d (", (int)pid);
	HAS(out, want);
	reap(pid);
}

static void test_einval_enotty(void)
{
	char out[SPM_ERRLEN];
	spm_explain(-EINVAL, "acquire", &gpu1, "hsakmt", out, sizeof(out));
	HAS(out, "the kernel rejected the SPM ioctl");
	HAS(out, "ROCm amdgpu-dkms driver (upstream amdgpu has no AMDKFD_IOC_RLC_SPM)");
	HAS(out, "or the GPU has no SPM");
	HAS(out, "EINVAL is ambiguous");

	spm_explain(ENOTTY, "acquire", &gpu1, "kfd", out, sizeof(out));
	HAS(out, "the kernel rejected the SPM ioctl");
	HAS(out, "amdgpu-dkms");
	HASNT(out, "ambiguous"); /* ENOTTY only ever means "no such ioctl" */

	spm_explain(-EINVAL, "set_dest", &gpu1, "kfd", out, sizeof(out));
	HAS(out, "not acquired");
	HAS(out, "32 bytes per XCC");
}

static void test_others(void)
{
	char out[SPM_ERRLEN];
	spm_explain(-ENODEV, "open", NULL, "kfd", out, sizeof(out));
	HAS(out, "no KFD device");
	HAS(out, "use --emulate PROFILE");
	spm_explain(-ENOENT, "open", &gpu1, "kfd", out, sizeof(out));
	HAS(out, "use --emulate PROFILE");
	spm_explain(-EACCES, "acquire", &gpu1, "kfd", out, sizeof(out));
	HAS(out, "/dev/kfd");
	HAS(out, "video and render groups");
	spm_explain(-EPERM, "acquire", &gpu1, "kfd", out, sizeof(out));
	HAS(out, "video and render groups");
	spm_explain(-ERANGE, "set_dest", &gpu1, "kfd", out, sizeof(out));
	HAS(out, "GPU 1 (gpu_id 0x1234)");
	HAS(out, "ERANGE");
	/* A short buffer is truncated, never overrun. */
	char tiny[8];
	spm_explain(-EBUSY, "acquire", &gpu1, "kfd", tiny, sizeof(tiny));
	CU_ASSERT_EQUAL(strlen(tiny), sizeof(tiny) - 1);
}

static void test_gen_names_and_table(void)
{
	CU_ASSERT_STRING_EQUAL(spm_gen_name(SPM_GEN_A), "A");
	CU_ASSERT_STRING_EQUAL(spm_gen_name(SPM_GEN_B), "B");
	CU_ASSERT_STRING_EQUAL(spm_gen_name(SPM_GEN_UNKNOWN), "unknown");

	const struct spm_backend_ops *const *t = spm_backends();
	CU_ASSERT_PTR_EQUAL(t[0], &spm_backend_hsakmt); /* the default */
	CU_ASSERT_PTR_EQUAL(t[1], &spm_backend_kfd);
	CU_ASSERT_PTR_EQUAL(t[2], &spm_backend_hsa);
	CU_ASSERT_PTR_NULL(t[3]);
	CU_ASSERT_PTR_EQUAL(spm_backend_find("kfd"), &spm_backend_kfd);
	CU_ASSERT_PTR_EQUAL(spm_backend_find("hsa"), &spm_backend_hsa);
	CU_ASSERT_PTR_NULL(spm_backend_find("rocprof"));
	CU_ASSERT_PTR_NULL(spm_backend_find(NULL));
	for (size_t i = 0; t[i]; i++) {
		CU_ASSERT_PTR_NOT_NULL(t[i]->summary);
		CU_ASSERT_PTR_NOT_NULL(t[i]->probe);
		CU_ASSERT_PTR_NOT_NULL(t[i]->close);
	}
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "explain/holders", test_holders, NULL },
		{ "explain/ebusy", test_ebusy, NULL },
		{ "explain/einval_enotty", test_einval_enotty, NULL },
		{ "explain/others", test_others, NULL },
		{ "explain/gen_names_and_table", test_gen_names_and_table, NULL },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("spm_explain", cases, argc, argv);
}
