/* SPDX-License-Identifier: MIT */
/*
 * An application step joining its node's job recording (docs/howto-job.md
 * "The application"): the job script exports SPMTAP_JOB=<job id> (printed by
 * `spmtap job env DIR`), and the marker library of every app process finds
 * the marker channel of the collector on its own node by
 *
 *   /dev/shm/spmtap-job.<job id>.<host name>      "spmtap-job-markers 1\n<pid> <fd>\n"
 *
 * which the collector rank writes once its recording runs: the channel is
 * the collector's memfd, opened as /proc/<pid>/fd/<fd> (same user, same
 * node).  The host name is in the name because nodes emulated on one
 * machine share /dev/shm (each has its own UTS host name); the job id so
 * that two jobs on a node do not meet.
 *
 * The kernel dispatch channel (kernel_shm.h) is published the same way, as
 *
 *   /dev/shm/spmtap-job.<job id>.<host name>.kernels  "spmtap-job-kernels 1\n<pid> <fd>\n"
 *
 * for libspmtap-tool.so in an app step run with HSA_TOOLS_LIB and SPMTAP_JOB
 * (no SPMTAP_KERNELS_FD: the app was not started by the collector).
 */
#ifndef SPMTAP_COLLECTOR_MARKER_JOB_H
#define SPMTAP_COLLECTOR_MARKER_JOB_H

#include <stddef.h>

#define MK_ENV_JOB "SPMTAP_JOB"

/* The channels: the marker one (the name has no suffix) and the kernel dispatch one (".kernels"). */
enum mk_job_kind { MK_JOB_MARKERS, MK_JOB_KERNELS };

/* The file's path for job on host (characters other than [A-Za-z0-9._-] become '_'); 0 or -ENAMETOOLONG. */
int mk_job_path(char *buf, size_t n, const char *job, const char *host);
int mk_job_path_kind(char *buf, size_t n, const char *job, const char *host, enum mk_job_kind kind);
/* The collector: publish this process's channel fd for job on this host; the path written to path. 0 or -errno. */
int mk_job_publish(const char *job, int fd, char *path, size_t n);
int mk_job_publish_kind(const char *job, enum mk_job_kind kind, int fd, char *path, size_t n);
/* The application: the channel of SPMTAP_JOB on this host, opened read-write, or -1. */
int mk_job_open(void);
int mk_job_open_kind(enum mk_job_kind kind);

#endif
