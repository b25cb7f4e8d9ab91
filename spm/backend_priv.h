/* SPDX-License-Identifier: MIT */
/*
 * What the backend files share: the common head of every backend object and
 * the libhsakmt loader (used by backend_hsakmt.c, and by backend_hsa.c for
 * clock counters, since ROCr has no SPM-independent way to read them).
 */
#ifndef SPMTAP_SPM_BACKEND_PRIV_H
#define SPMTAP_SPM_BACKEND_PRIV_H

#include <hsakmt.h>

#include "spm/spm.h"

/* Each backend embeds this first and recovers its own type with container_of. */
struct spm_backend {
	const struct spm_backend_ops *ops;
};

#define spm_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#define SPM_HSAKMT_SONAME "libhsakmt.so.1"

/* Function pointers into libhsakmt; typedefs come from the installed hsakmt.h. */
struct spm_hsakmt {
	HSAKMT_STATUS (*open_kfd)(void);
	HSAKMT_STATUS (*close_kfd)(void);
	HSAKMT_STATUS (*acquire_sysprops)(HsaSystemProperties *);
	HSAKMT_STATUS (*release_sysprops)(void);
	HSAKMT_STATUS (*spm_acquire)(HSAuint32);
	HSAKMT_STATUS (*spm_release)(HSAuint32);
	HSAKMT_STATUS (*spm_set_dest)(HSAuint32, HSAuint32, HSAuint32 *, HSAuint32 *, void *,
				      bool *);
	HSAKMT_STATUS (*clock_counters)(HSAuint32, HsaClockCounters *);
	/* User queues, memory and events, for the `hsakmt` PM4 submitter (has_queues). */
	bool has_queues;
	HSAKMT_STATUS (*alloc_memory)(HSAuint32, HSAuint64, HsaMemFlags, void **);
	HSAKMT_STATUS (*free_memory)(void *, HSAuint64);
	HSAKMT_STATUS (*map_memory_to_gpu)(void *, HSAuint64, HSAuint64 *);
	HSAKMT_STATUS (*unmap_memory_to_gpu)(void *);
	HSAKMT_STATUS (*create_queue)(HSAuint32, HSA_QUEUE_TYPE, HSAuint32, HSA_QUEUE_PRIORITY, void *, HSAuint64,
				      HsaEvent *, HsaQueueResource *);
	HSAKMT_STATUS (*destroy_queue)(HSA_QUEUEID);
	HSAKMT_STATUS (*create_event)(HsaEventDescriptor *, bool, bool, HsaEvent **);
	HSAKMT_STATUS (*destroy_event)(HsaEvent *);
	HSAKMT_STATUS (*wait_on_event)(HsaEvent *, HSAuint32);
};

/*
 * Resolve libhsakmt once per process (never unloaded: it keeps process-wide
 * KFD state).  -ENOENT with "dlopen(libhsakmt.so.1): <dlerror>" or -ENOSYS
 * with "missing required symbol: X" if it cannot be used.
 */
int spm_hsakmt_load(const struct spm_hsakmt **out, char *reason, size_t len);
/*
 * libhsakmt loaded, KFD opened (hsaKmtOpenKFD) and the topology snapshot
 * taken (hsaKmtAcquireSystemProperties), once per process, and kept until
 * exit.  Both are process-wide: the snapshot is shared by every user in the
 * process (ROCr included) with no count, so releasing it under them breaks
 * their next call; and libhsakmt 5.2.3 does not come back cleanly from a
 * close to zero (its events page outlives the close; ROCr re-initialised on
 * top of it hung in hsa_queue_destroy in our tests).  KFD itself keeps a
 * process's state until the process exits, whatever fds are closed.
 * On failure: -errno and why (no /dev/kfd, permissions, ...); not cached.
 *
 * rocr_first: ROCr 5.2.3's hsa_init fails (OUT_OF_RESOURCES, without a
 * single ioctl) when libhsakmt answers its hsaKmtOpenKFD with
 * KERNEL_ALREADY_OPENED, i.e. when anyone else opened KFD first.  So a
 * caller that may later want ROCr in this process (the submitters) lets
 * ROCr open KFD first, when it is installed.
 */
int spm_hsakmt_open(const struct spm_hsakmt **out, bool rocr_first, char *reason, size_t len);
/*
 * Only if something else (ROCr) already loaded it: RTLD_NOLOAD, so the hsa
 * backend never drags in a second copy of the thunk.
 */
const struct spm_hsakmt *spm_hsakmt_loaded(void);
/* HSAKMT_STATUS → negative errno; logs the mapping, since a status is not an errno. */
int spm_hsakmt_status_errno(HSAKMT_STATUS st, const char *call);
/* Name of a status ("INVALID_NODE_UNIT"), for messages. */
const char *spm_hsakmt_status_name(HSAKMT_STATUS st);
/* Clock counters of HsaClockCounters → struct spm_clock_pair. */
int spm_hsakmt_clock(const struct spm_hsakmt *k, uint32_t node, struct spm_clock_pair *out);

#endif
