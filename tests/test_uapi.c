/* SPDX-License-Identifier: MIT */
/*
 * uapi/kfd_spm.h against the facts: the ioctl numbers and layouts of
 * shared/ref/SPM.md, and the distribution's <linux/kfd_ioctl.h> for every
 * struct both headers carry (the SPM ioctl itself is ours alone).
 */
#include <linux/kfd_ioctl.h>
#include <stddef.h>
#include <string.h>

#include "testenv.h"
#include "uapi/kfd_spm.h"

#define SAME_FIELD(ours, theirs, fo, ft)                                               \
	do {                                                                           \
		CU_ASSERT_EQUAL(offsetof(struct ours, fo), offsetof(struct theirs, ft)); \
		CU_ASSERT_EQUAL(sizeof(((struct ours *)0)->fo), sizeof(((struct theirs *)0)->ft)); \
	} while (0)

static void test_spm_numbers(void)
{
	CU_ASSERT_EQUAL(SPMTAP_KFD_IOC_RLC_SPM, 0xC0204B84u);
	CU_ASSERT_EQUAL(_IOC_NR(SPMTAP_KFD_IOC_RLC_SPM), 0x84);
	CU_ASSERT_EQUAL(_IOC_TYPE(SPMTAP_KFD_IOC_RLC_SPM), 'K');
	CU_ASSERT_EQUAL(_IOC_DIR(SPMTAP_KFD_IOC_RLC_SPM), _IOC_READ | _IOC_WRITE);
	CU_ASSERT_EQUAL(SPMTAP_KFD_SPM_OP_ACQUIRE, 0);
	CU_ASSERT_EQUAL(SPMTAP_KFD_SPM_OP_RELEASE, 1);
	CU_ASSERT_EQUAL(SPMTAP_KFD_SPM_OP_SET_DEST_BUF, 2);
	/* The SPM nr sits in the ROCm-only range, beyond the upstream command end. */
	CU_ASSERT(0x84 >= AMDKFD_COMMAND_END);
}

static void test_spm_header(void)
{
	struct spmtap_kfd_spm_buffer_header h;
	unsigned char raw[32] = {0x04, 0, 0, 0, 0x40, 0x01, 0, 0, 1, 0, 0, 0};
	memcpy(&h, raw, sizeof(h));
	CU_ASSERT_EQUAL(h.version, SPMTAP_KFD_SPM_HEADER_VERSION_0_4);
	CU_ASSERT_EQUAL(SPMTAP_KFD_SPM_HEADER_VERSION_MAJOR(h.version), 0);
	CU_ASSERT_EQUAL(SPMTAP_KFD_SPM_HEADER_VERSION_MINOR(h.version), 4);
	CU_ASSERT_EQUAL(h.bytes_copied, 320);
	CU_ASSERT_EQUAL(h.has_data_loss, 1);
}

static void test_against_distro_header(void)
{
	CU_ASSERT_EQUAL(SPMTAP_KFD_IOC_GET_VERSION, AMDKFD_IOC_GET_VERSION);
	CU_ASSERT_EQUAL(SPMTAP_KFD_IOC_GET_CLOCK_COUNTERS, AMDKFD_IOC_GET_CLOCK_COUNTERS);
	CU_ASSERT_EQUAL(SPMTAP_KFD_IOC_ACQUIRE_VM, AMDKFD_IOC_ACQUIRE_VM);

	CU_ASSERT_EQUAL(sizeof(struct spmtap_kfd_get_version_args), sizeof(struct kfd_ioctl_get_version_args));
	SAME_FIELD(spmtap_kfd_get_version_args, kfd_ioctl_get_version_args, major_version, major_version);
	SAME_FIELD(spmtap_kfd_get_version_args, kfd_ioctl_get_version_args, minor_version, minor_version);

	CU_ASSERT_EQUAL(sizeof(struct spmtap_kfd_acquire_vm_args), sizeof(struct kfd_ioctl_acquire_vm_args));
	SAME_FIELD(spmtap_kfd_acquire_vm_args, kfd_ioctl_acquire_vm_args, drm_fd, drm_fd);
	SAME_FIELD(spmtap_kfd_acquire_vm_args, kfd_ioctl_acquire_vm_args, gpu_id, gpu_id);

	CU_ASSERT_EQUAL(sizeof(struct spmtap_kfd_clock_counters_args),
			sizeof(struct kfd_ioctl_get_clock_counters_args));
	SAME_FIELD(spmtap_kfd_clock_counters_args, kfd_ioctl_get_clock_counters_args, gpu_clock_counter, gpu_clock_counter);
	SAME_FIELD(spmtap_kfd_clock_counters_args, kfd_ioctl_get_clock_counters_args, cpu_clock_counter, cpu_clock_counter);
	SAME_FIELD(spmtap_kfd_clock_counters_args, kfd_ioctl_get_clock_counters_args, system_clock_counter, system_clock_counter);
	SAME_FIELD(spmtap_kfd_clock_counters_args, kfd_ioctl_get_clock_counters_args, system_clock_freq, system_clock_freq);
	SAME_FIELD(spmtap_kfd_clock_counters_args, kfd_ioctl_get_clock_counters_args, gpu_id, gpu_id);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{"uapi/spm_numbers", test_spm_numbers, NULL},
		{"uapi/spm_header", test_spm_header, NULL},
		{"uapi/against_distro_header", test_against_distro_header, NULL},
		{NULL, NULL, NULL},
	};
	return testenv_run_suite("uapi", cases, argc, argv);
}
