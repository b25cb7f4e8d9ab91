/* SPDX-License-Identifier: MIT */
/*
 * Submitters: how a PM4 program (spm/pm4.h) reaches a GPU's command
 * processor.  As AMD's own tools do, the program goes into an indirect
 * buffer in host memory the GPU can read, and an AMD vendor-specific AQL
 * packet (AMD_AQL_FORMAT_PM4_IB) on a user-mode queue points the CP at it
 * (shared/ref/PROGRAMMING.md 5; docs/submission.md).
 *
 *   rocr    the HSA runtime's queue (hsa_queue_create), ROCr loaded with
 *           dlopen: what aqlprofile and rocprofiler do.
 *   hsakmt  the same packet on a queue made with libhsakmt's
 *           hsaKmtCreateQueue (own ring, read/write ids, doorbell, signal,
 *           event): for GPUs the installed ROCr does not know (Debian's
 *           5.2.3 and gfx942).
 *
 * On a GPU with several XCCs the unpredicated IB runs on every XCC (KFD
 * maps a user queue on all of them) and completes once.  Every function
 * returns 0 or -errno, with a sentence in err.
 */
#ifndef SPMTAP_SPM_SUBMIT_H
#define SPMTAP_SPM_SUBMIT_H

#include <stddef.h>
#include <stdint.h>

#include "spm/spm.h"

struct spm_submitter;

struct spm_submitter_ops {
	const char *name;
	const char *summary;
	/*
	 * A queue on dev, checked end to end with a one-dword NOP program, so a
	 * submitter that cannot reach the CP fails here with the reason.
	 */
	int (*create)(struct spm_submitter **out, const struct spm_device *dev, char *err, size_t errlen);
	/* Run dw[0..n) and wait up to timeout_ms for its completion. */
	int (*submit)(struct spm_submitter *s, const uint32_t *dw, size_t n, uint32_t timeout_ms, char *err,
		      size_t errlen);
	/* One line on what this queue is ("ROCr agent gfx90a, KFD node 2, queue 0 of 64 packets"). */
	void (*describe)(const struct spm_submitter *s, char *buf, size_t len);
	void (*destroy)(struct spm_submitter *s);
};

extern const struct spm_submitter_ops spm_submitter_rocr;
extern const struct spm_submitter_ops spm_submitter_hsakmt;

/* NULL-terminated, preferred first. */
const struct spm_submitter_ops *const *spm_submitters(void);
const struct spm_submitter_ops *spm_submitter_find(const char *name);
/* "rocr, hsakmt": for messages that list the choices. */
const char *spm_submitter_names(void);

#define SPM_SUBMIT_TIMEOUT_MS 5000u /* a start/stop program; the CP takes microseconds */
#define SPM_SUBMIT_NOP_TIMEOUT_MS 2000u

/*
 * The submitter for dev: `want` by name, or NULL for the first of the
 * table that works.  On failure err says, per submitter tried, why not
 * ("rocr: ...; hsakmt: ..."); on success with a fallback, *note (if not
 * NULL, SPM_ERRLEN bytes) says why the preferred ones were passed over.
 * Create submitters before the SPM backend acquires a KFD VM with a
 * render node of its own (the kfd backend): libhsakmt's own ACQUIRE_VM
 * would then get EBUSY.
 */
int spm_submitter_open(const struct spm_device *dev, const char *want, const struct spm_submitter_ops **ops,
		       struct spm_submitter **out, char *note, char *err, size_t errlen);

/* Shared by the implementations: wall-clock ms since a CLOCK_MONOTONIC start. */
uint64_t spm_submit_now_ns(void);

#endif
