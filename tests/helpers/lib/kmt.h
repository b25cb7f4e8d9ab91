/* SPDX-License-Identifier: MIT */
/*
 * What the libhsakmt helper programs (tests/helpers/emu_*_kmt.c) share:
 * opening KFD and finding the node of a gpu_id, and host memory the GPU
 * can reach.  Linked into the helpers only (they link -lhsakmt; the
 * suites do not).
 */
#ifndef SPMTAP_TESTS_HELPERS_KMT_H
#define SPMTAP_TESTS_HELPERS_KMT_H

#include <stddef.h>
#include <stdint.h>

/*
 * hsaKmtOpenKFD, a descriptor of /dev/kfd for the emulator's own ioctls
 * (*kfd), and the topology node whose gpu_id is gpu_id (*node).  0, or -1
 * after printing a "FAIL: ..." line on stdout (the helpers' protocol).
 */
int kmt_open(uint32_t gpu_id, int *kfd, uint32_t *node);
/* Zeroed host memory mapped to the GPU (4 KiB pages, executable), or NULL. */
void *kmt_host_alloc(size_t size);
/* CLOCK_MONOTONIC in seconds. */
double kmt_now_s(void);

#endif
