/* SPDX-License-Identifier: MIT */
/* Resolving libhsakmt at run time, so spmtap runs (with a reason) where it is absent. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "spm/backend_priv.h"
#include "spm/hsa_lib.h"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static struct spm_hsakmt lib;
static bool lib_ok;
static int lib_err = ENOENT;
static char lib_reason[256];

static bool resolve(void *h, const char *name, void *slot)
{
	dlerror();
	void *p = dlsym(h, name);
	if (!p) {
		snprintf(lib_reason, sizeof(lib_reason), "%s: missing required symbol: %s",
			 SPM_HSAKMT_SONAME, name);
		lib_err = ENOSYS;
		return false;
	}
	/* POSIX guarantees object and function pointers convert through void *. */
	memcpy(slot, &p, sizeof(p));
	return true;
}

static void load(void)
{
	void *h = dlopen(SPM_HSAKMT_SONAME, RTLD_NOW);
	if (!h) {
		snprintf(lib_reason, sizeof(lib_reason), "dlopen(%s): %s", SPM_HSAKMT_SONAME,
			 dlerror());
		return;
	}
	if (!resolve(h, "hsaKmtOpenKFD", &lib.open_kfd) ||
	    !resolve(h, "hsaKmtCloseKFD", &lib.close_kfd) ||
	    !resolve(h, "hsaKmtAcquireSystemProperties", &lib.acquire_sysprops) ||
	    !resolve(h, "hsaKmtReleaseSystemProperties", &lib.release_sysprops) ||
	    !resolve(h, "hsaKmtSPMAcquire", &lib.spm_acquire) ||
	    !resolve(h, "hsaKmtSPMRelease", &lib.spm_release) ||
	    !resolve(h, "hsaKmtSPMSetDestBuffer", &lib.spm_set_dest) ||
	    !resolve(h, "hsaKmtGetClockCounters", &lib.clock_counters)) {
		/* Keep h loaded: unloading a half-used thunk buys nothing. */
		return;
	}
	lib_ok = true;
	/* Every libhsakmt has these; resolved apart so that their absence costs the submitter only. */
	lib.has_queues = resolve(h, "hsaKmtAllocMemory", &lib.alloc_memory) &&
			 resolve(h, "hsaKmtFreeMemory", &lib.free_memory) &&
			 resolve(h, "hsaKmtMapMemoryToGPU", &lib.map_memory_to_gpu) &&
			 resolve(h, "hsaKmtUnmapMemoryToGPU", &lib.unmap_memory_to_gpu) &&
			 resolve(h, "hsaKmtCreateQueue", &lib.create_queue) &&
			 resolve(h, "hsaKmtDestroyQueue", &lib.destroy_queue) &&
			 resolve(h, "hsaKmtCreateEvent", &lib.create_event) &&
			 resolve(h, "hsaKmtDestroyEvent", &lib.destroy_event) &&
			 resolve(h, "hsaKmtWaitOnEvent", &lib.wait_on_event);
}

int spm_hsakmt_load(const struct spm_hsakmt **out, char *reason, size_t len)
{
	pthread_once(&load_once, load);
	if (!lib_ok) {
		*out = NULL;
		return spmtap_seterr(reason, len, lib_err, "%s", lib_reason);
	}
	*out = &lib;
	return 0;
}

/* hsaKmtOpenKFD only says "failed"; the device node says why. */
static int open_failure(HSAKMT_STATUS st, char *err, size_t errlen)
{
	if (access("/dev/kfd", F_OK) != 0)
		return spmtap_seterr(err, errlen, ENODEV,
				     "no KFD device (no /dev/kfd); on a machine without an AMD GPU "
				     "use --emulate PROFILE");
	if (access("/dev/kfd", R_OK | W_OK) != 0)
		return spmtap_seterr(err, errlen, EACCES,
				     "hsaKmtOpenKFD failed: /dev/kfd is not readable and writable "
				     "by this user (add the user to the video and render groups)");
	int e = -spm_hsakmt_status_errno(st, "hsaKmtOpenKFD");
	return spmtap_seterr(err, errlen, e, "hsaKmtOpenKFD failed with HSAKMT_STATUS %d (%s)",
			     (int)st, spm_hsakmt_status_name(st));
}

static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static bool kfd_opened;

int spm_hsakmt_open(const struct spm_hsakmt **out, bool rocr_first, char *reason, size_t len)
{
	int r = spm_hsakmt_load(out, reason, len);
	if (r)
		return r;
	pthread_mutex_lock(&open_lock);
	const struct spm_hsa_lib *h;
	if (rocr_first && !kfd_opened && spm_hsa_load(&h, NULL, 0) == 0)
		spm_hsa_open(&h, NULL, 0); /* its failure is the rocr submitter's to report */
	if (!kfd_opened) {
		/* ALREADY_OPENED: another user in this process (ROCr) opened it; the count went up all the same. */
		HSAKMT_STATUS st = lib.open_kfd();
		if (st != HSAKMT_STATUS_SUCCESS && st != HSAKMT_STATUS_KERNEL_ALREADY_OPENED) {
			r = open_failure(st, reason, len);
		} else {
			HsaSystemProperties sp;
			st = lib.acquire_sysprops(&sp);
			if (st != HSAKMT_STATUS_SUCCESS)
				r = spmtap_seterr(reason, len, -spm_hsakmt_status_errno(st, "hsaKmtAcquireSystemProperties"),
						  "hsaKmtAcquireSystemProperties failed with HSAKMT_STATUS %d (%s)",
						  (int)st, spm_hsakmt_status_name(st));
			kfd_opened = r == 0;
		}
	}
	pthread_mutex_unlock(&open_lock);
	if (r)
		*out = NULL;
	return r;
}

const struct spm_hsakmt *spm_hsakmt_loaded(void)
{
	void *h = dlopen(SPM_HSAKMT_SONAME, RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return NULL;
	dlclose(h); /* drops only the reference RTLD_NOLOAD just took */
	const struct spm_hsakmt *k;
	return spm_hsakmt_load(&k, NULL, 0) ? NULL : k;
}

const char *spm_hsakmt_status_name(HSAKMT_STATUS st)
{
	switch (st) {
	case HSAKMT_STATUS_SUCCESS: return "SUCCESS";
	case HSAKMT_STATUS_ERROR: return "ERROR";
	case HSAKMT_STATUS_DRIVER_MISMATCH: return "DRIVER_MISMATCH";
	case HSAKMT_STATUS_INVALID_PARAMETER: return "INVALID_PARAMETER";
	case HSAKMT_STATUS_INVALID_HANDLE: return "INVALID_HANDLE";
	case HSAKMT_STATUS_INVALID_NODE_UNIT: return "INVALID_NODE_UNIT";
	case HSAKMT_STATUS_NO_MEMORY: return "NO_MEMORY";
	case HSAKMT_STATUS_BUFFER_TOO_SMALL: return "BUFFER_TOO_SMALL";
	case HSAKMT_STATUS_NOT_IMPLEMENTED: return "NOT_IMPLEMENTED";
	case HSAKMT_STATUS_NOT_SUPPORTED: return "NOT_SUPPORTED";
	case HSAKMT_STATUS_UNAVAILABLE: return "UNAVAILABLE";
	case HSAKMT_STATUS_OUT_OF_RESOURCES: return "OUT_OF_RESOURCES";
	case HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED: return "KERNEL_IO_CHANNEL_NOT_OPENED";
	case HSAKMT_STATUS_KERNEL_COMMUNICATION_ERROR: return "KERNEL_COMMUNICATION_ERROR";
	case HSAKMT_STATUS_KERNEL_ALREADY_OPENED: return "KERNEL_ALREADY_OPENED";
	default: return "unknown status";
	}
}

int spm_hsakmt_status_errno(HSAKMT_STATUS st, const char *call)
{
	int err;

	switch (st) {
	case HSAKMT_STATUS_SUCCESS: return 0;
	case HSAKMT_STATUS_INVALID_PARAMETER: err = EINVAL; break;
	case HSAKMT_STATUS_INVALID_NODE_UNIT: err = ENODEV; break;
	case HSAKMT_STATUS_INVALID_HANDLE: err = EBADF; break;
	case HSAKMT_STATUS_NO_MEMORY:
	case HSAKMT_STATUS_OUT_OF_RESOURCES: err = ENOMEM; break;
	case HSAKMT_STATUS_NOT_IMPLEMENTED:
	case HSAKMT_STATUS_NOT_SUPPORTED: err = EOPNOTSUPP; break;
	case HSAKMT_STATUS_UNAVAILABLE: err = EBUSY; break;
	case HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED: err = ENODEV; break;
	case HSAKMT_STATUS_DRIVER_MISMATCH: err = EPROTO; break;
	default: err = EIO; break;
	}
	pr_warn("hsakmt", "%s returned HSAKMT_STATUS %d (%s); reporting it as -%s", call, (int)st,
		spm_hsakmt_status_name(st), strerrorname_np(err));
	return -err;
}

int spm_hsakmt_clock(const struct spm_hsakmt *k, uint32_t node, struct spm_clock_pair *out)
{
	HsaClockCounters cc;
	HSAKMT_STATUS st = k->clock_counters(node, &cc);
	if (st != HSAKMT_STATUS_SUCCESS)
		return spm_hsakmt_status_errno(st, "hsaKmtGetClockCounters");
	out->gpu_ticks = cc.GPUClockCounter;
	out->cpu_raw_ns = cc.CPUClockCounter;
	out->boottime_ns = cc.SystemClockCounter;
	out->system_freq = cc.SystemClockFrequencyHz;
	return 0;
}
