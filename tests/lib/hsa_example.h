/* SPDX-License-Identifier: MIT */
/*
 * examples/hsa (an HSA C program and its OpenCL C kernels) built for a
 * suite with Debian's clang/lld and ROCr's headers, once per process, into
 * the suite's temporary directory: test_emu_dispatch, test_emu_activity.
 */
#ifndef SPMTAP_TESTS_HSA_EXAMPLE_H
#define SPMTAP_TESTS_HSA_EXAMPLE_H

/* NULL when built (hsa_dispatch and k.hsaco in hsa_example_dir()), else why it cannot be: a skip reason. */
const char *hsa_example_need(void);
const char *hsa_example_dir(void);

#endif
