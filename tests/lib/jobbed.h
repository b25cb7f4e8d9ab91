/* SPDX-License-Identifier: MIT */
/*
 * The emulated multi-node test bed (tests/job/node.sh): what test_job and
 * test_job_merge share.
 */
#ifndef SPMTAP_TESTS_JOBBED_H
#define SPMTAP_TESTS_JOBBED_H

/* printf into one of 8 rotating static buffers (1 KiB): paths and shell lines built inline. */
char *jb_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* NULL when the bed can run here, else why not (a testenv_case need function). */
const char *jb_need_bed(void);

#endif
