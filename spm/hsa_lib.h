/* SPDX-License-Identifier: MIT */
/*
 * The HSA runtime (ROCr), resolved at run time and shared by the `hsa` SPM
 * backend (hsa_amd_spm_*, ROCm >= 5.5) and the `rocr` PM4 submitter (AQL
 * queues, every ROCr).  spmtap must start, and say why, where ROCr is
 * absent, too old or does not know the GPU.
 */
#ifndef SPMTAP_SPM_HSA_LIB_H
#define SPMTAP_SPM_HSA_LIB_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include "spm/spm.h"

#define SPM_HSA_SONAME "libhsa-runtime64.so.1"

/* Every symbol a usable ROCr has, with the types of the installed headers. */
#define SPM_HSA_REQUIRED(X)                                                                              \
	X(hsa_init) X(hsa_shut_down) X(hsa_iterate_agents) X(hsa_agent_get_info) X(hsa_status_string)    \
	X(hsa_system_get_info) X(hsa_isa_from_name) X(hsa_queue_create) X(hsa_queue_destroy)            \
	X(hsa_queue_add_write_index_scacq_screl) X(hsa_queue_load_read_index_scacquire)                 \
	X(hsa_signal_create) X(hsa_signal_destroy) X(hsa_signal_store_relaxed)                          \
	X(hsa_signal_store_screlease) X(hsa_signal_load_relaxed) X(hsa_signal_wait_scacquire)           \
	X(hsa_amd_agent_iterate_memory_pools) X(hsa_amd_memory_pool_get_info)                           \
	X(hsa_amd_memory_pool_allocate) X(hsa_amd_memory_pool_free) X(hsa_amd_agents_allow_access)

#define SPM_HSA_DECL(f) __typeof__(f) *f;

struct spm_hsa_lib {
	struct {
		SPM_HSA_REQUIRED(SPM_HSA_DECL)
	} f;
	/* ROCm >= 5.5 only (has_spm); declared here: 5.2.3's hsa_ext_amd.h has no prototypes. */
	hsa_status_t (*spm_acquire)(hsa_agent_t);
	hsa_status_t (*spm_release)(hsa_agent_t);
	hsa_status_t (*spm_set_dest)(hsa_agent_t, size_t, uint32_t *, uint32_t *, void *, bool *);
	bool has_spm;
	char file[PATH_MAX]; /* the file dlopen found, resolved ("/usr/lib/.../libhsa-runtime64.so.1.5.0") */
	char version[64];    /* "ROCr 5.2.3?" for Debian's file, else the file name: a hint, not a fact */
};

/*
 * Resolve ROCr once per process ($SPMTAP_HSA_RUNTIME names another file,
 * for tests).  -ENOENT "dlopen(...): ..." or -ENOSYS "missing required
 * symbol" when it cannot be used at all.
 */
int spm_hsa_load(const struct spm_hsa_lib **out, char *reason, size_t len);
/*
 * spm_hsa_load, then hsa_init once per process, kept until exit: ROCr is
 * process-wide, and a process that shuts it down and initialises it again
 * is on a path ROCr 5.2.3 does not walk reliably (hsa_queue_destroy hung
 * after a re-init in our tests).  Profilers keep the runtime for the
 * process's life for the same reason.  Failures are not cached.
 */
int spm_hsa_open(const struct spm_hsa_lib **out, char *reason, size_t len);
/*
 * Whether hsa_init's own stderr is captured (the CLI sets it; a library in
 * someone's app leaves the app's stderr alone).  ROCr prints "Warning: Agent
 * creation failed." for every GPU it does not know, which on a node it does
 * not serve is noise beside our own explanation: captured, it is logged at
 * info level (`spmtap -v`) and added to the reason when hsa_init fails.
 */
void spm_hsa_capture_init_stderr(bool on);
/* hsa_status_string, or "unknown HSA status". */
const char *spm_hsa_status(const struct spm_hsa_lib *h, hsa_status_t st);
/*
 * After hsa_init: ROCr's GPU agent for dev, matched by the KFD node ROCr
 * reports (HSA_AMD_AGENT_INFO_DRIVER_NODE_ID) and checked against the PCI
 * location, never guessed.  0, or -ENODEV with why ROCr has none (for
 * example, a gfx target its ISA registry does not know) or -EIO.
 */
int spm_hsa_agent_for(const struct spm_hsa_lib *h, const struct spm_device *dev, hsa_agent_t *agent, char *why,
		      size_t len);

#endif
