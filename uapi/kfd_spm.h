/* SPDX-License-Identifier: MIT */
/*
 * The part of the amdkfd ABI that spmtap speaks, written from the facts in
 * shared/ref/SPM.md (sections 2, 3.5 and 10.1).  The RLC SPM ioctl exists only
 * in the ROCm DKMS amdgpu, so no distribution header carries it; the other
 * structs here are also in <linux/kfd_ioctl.h> and tests/test_uapi.c checks
 * that both agree byte for byte.
 *
 * Names carry a spmtap_ prefix so this header can sit beside the system one.
 */
#ifndef SPMTAP_UAPI_KFD_SPM_H
#define SPMTAP_UAPI_KFD_SPM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>

#define SPMTAP_KFD_IOCTL_BASE 'K'

/* ---- RLC SPM (nr 0x84, ROCm-only command range) ------------------------- */

enum spmtap_kfd_spm_op {
	SPMTAP_KFD_SPM_OP_ACQUIRE = 0,
	SPMTAP_KFD_SPM_OP_RELEASE = 1,
	SPMTAP_KFD_SPM_OP_SET_DEST_BUF = 2,
};

struct spmtap_kfd_spm_args {
	uint64_t dest_buf;      /* in: user VA of the next buffer; 0 = stop streaming */
	uint32_t buf_size;      /* in: bytes at dest_buf */
	uint32_t op;            /* in: enum spmtap_kfd_spm_op */
	uint32_t timeout;       /* in: ms to wait for the previous buffer; out (gen A only): ms left */
	uint32_t gpu_id;        /* in: topology gpu_id, not the node index */
	uint32_t bytes_copied;  /* out: bytes in the retired buffer (gen B: data only, all XCCs) */
	uint32_t has_data_loss; /* out: gen A 0/1; gen B number of XCC regions that lost data */
};

#define SPMTAP_KFD_IOC_RLC_SPM _IOWR(SPMTAP_KFD_IOCTL_BASE, 0x84, struct spmtap_kfd_spm_args)

/*
 * Generation B (SPM revision >= 0.2) writes this at the start of each XCC's
 * region of the retired buffer; data follows at +32.  Written only when the
 * region is retired, so the header of an armed region is stale memory.
 */
struct spmtap_kfd_spm_buffer_header {
	uint32_t version;       /* major << 24 | minor; 0x00000004 in SPM 0.4 */
	uint32_t bytes_copied;  /* data bytes after this header */
	uint32_t has_data_loss; /* 0/1 for this region */
	uint32_t reserved[5];   /* written as 0 */
};

#define SPMTAP_KFD_SPM_HEADER_VERSION_MAJOR(v) ((v) >> 24)
#define SPMTAP_KFD_SPM_HEADER_VERSION_MINOR(v) ((v) & 0xFFFFFFu)
#define SPMTAP_KFD_SPM_HEADER_VERSION_0_4      0x00000004u

/* ---- ioctls the direct backend needs besides SPM ----------------------- */

struct spmtap_kfd_get_version_args {
	uint32_t major_version;
	uint32_t minor_version;
};

struct spmtap_kfd_acquire_vm_args {
	uint32_t drm_fd; /* render node fd that owns the VM */
	uint32_t gpu_id;
};

struct spmtap_kfd_clock_counters_args {
	uint64_t gpu_clock_counter;    /* RLC GPU clock (100 MHz on MI300) */
	uint64_t cpu_clock_counter;    /* CLOCK_MONOTONIC_RAW ns */
	uint64_t system_clock_counter; /* CLOCK_BOOTTIME ns */
	uint64_t system_clock_freq;    /* always 1e9 */
	uint32_t gpu_id;
	uint32_t pad;
};

#define SPMTAP_KFD_IOC_GET_VERSION _IOR(SPMTAP_KFD_IOCTL_BASE, 0x01, struct spmtap_kfd_get_version_args)
#define SPMTAP_KFD_IOC_GET_CLOCK_COUNTERS \
	_IOWR(SPMTAP_KFD_IOCTL_BASE, 0x05, struct spmtap_kfd_clock_counters_args)
#define SPMTAP_KFD_IOC_ACQUIRE_VM _IOW(SPMTAP_KFD_IOCTL_BASE, 0x15, struct spmtap_kfd_acquire_vm_args)

/* ---- compile-time checks of every size and offset ----------------------- */

_Static_assert(sizeof(struct spmtap_kfd_spm_args) == 32, "spm args are 32 bytes");
_Static_assert(offsetof(struct spmtap_kfd_spm_args, dest_buf) == 0, "dest_buf");
_Static_assert(offsetof(struct spmtap_kfd_spm_args, buf_size) == 8, "buf_size");
_Static_assert(offsetof(struct spmtap_kfd_spm_args, op) == 12, "op");
_Static_assert(offsetof(struct spmtap_kfd_spm_args, timeout) == 16, "timeout");
_Static_assert(offsetof(struct spmtap_kfd_spm_args, gpu_id) == 20, "gpu_id");
_Static_assert(offsetof(struct spmtap_kfd_spm_args, bytes_copied) == 24, "bytes_copied");
_Static_assert(offsetof(struct spmtap_kfd_spm_args, has_data_loss) == 28, "has_data_loss");
_Static_assert(SPMTAP_KFD_IOC_RLC_SPM == 0xC0204B84u, "RLC_SPM ioctl number");

_Static_assert(sizeof(struct spmtap_kfd_spm_buffer_header) == 32, "spm header is 32 bytes");
_Static_assert(offsetof(struct spmtap_kfd_spm_buffer_header, version) == 0, "version");
_Static_assert(offsetof(struct spmtap_kfd_spm_buffer_header, bytes_copied) == 4, "bytes_copied");
_Static_assert(offsetof(struct spmtap_kfd_spm_buffer_header, has_data_loss) == 8, "has_data_loss");
_Static_assert(offsetof(struct spmtap_kfd_spm_buffer_header, reserved) == 12, "reserved");

_Static_assert(sizeof(struct spmtap_kfd_get_version_args) == 8, "get_version args");
_Static_assert(sizeof(struct spmtap_kfd_acquire_vm_args) == 8, "acquire_vm args");
_Static_assert(sizeof(struct spmtap_kfd_clock_counters_args) == 40, "clock counters args");
_Static_assert(offsetof(struct spmtap_kfd_clock_counters_args, gpu_id) == 32, "clock gpu_id");
_Static_assert(SPMTAP_KFD_IOC_GET_VERSION == 0x80084B01u, "GET_VERSION number");
_Static_assert(SPMTAP_KFD_IOC_GET_CLOCK_COUNTERS == 0xC0284B05u, "GET_CLOCK_COUNTERS number");
_Static_assert(SPMTAP_KFD_IOC_ACQUIRE_VM == 0x40084B15u, "ACQUIRE_VM number");

#endif
