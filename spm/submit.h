/* SPDX-License-Identifier: MIT */
/*
 * Submitters: how a PM4 program (spm/pm4.h) reaches a command processor.
 * On a real GPU that is a GPU queue (ROCr's vendor PM4-IB AQL packet, or a
 * libhsakmt queue); until those exist here, the only implementation is the
 * emulator-only channel (uapi/spmtap_emu.h), which a real kernel refuses.
 * Every function returns 0 or -errno, with a sentence in err.
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
	/* 0 if usable for dev here, else -errno and the reason. */
	int (*probe)(const struct spm_device *dev, char *reason, size_t len);
	int (*create)(struct spm_submitter **out, const struct spm_device *dev, char *err,
		      size_t errlen);
	/* Run dw[0..n) on every XCC of the GPU; wait up to timeout_ms for completion. */
	int (*submit)(struct spm_submitter *s, const uint32_t *dw, size_t n, uint32_t timeout_ms,
		      char *err, size_t errlen);
	void (*destroy)(struct spm_submitter *s);
};

/* The emulator-only channel (SPMTAP_EMU_IOC_SUBMIT_PM4 on /dev/kfd). */
extern const struct spm_submitter_ops spm_submitter_emu;

/* NULL-terminated, preferred first. */
const struct spm_submitter_ops *const *spm_submitters(void);
const struct spm_submitter_ops *spm_submitter_find(const char *name);

#endif
