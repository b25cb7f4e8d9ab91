/* SPDX-License-Identifier: MIT */
/*
 * The KFD ioctls libhsakmt and ROCr issue (SPM.md 11.2), answered like a
 * gfx9 dGPU kernel would.  ACQUIRE_VM creates the per-process device ("pdd")
 * that the SPM ioctl requires, as in amdkfd.
 */
#include "emu/shim/shim.h"
#include <linux/kfd_ioctl.h>
#include "uapi/kfd_spm.h"
#include "emu/common/test_pm4.h"
#include "emu/common/readback.h"

#include <errno.h>
#include <string.h>

static int emu_fail(int err)
{
	errno = err;
	return -1;
}

static void emu_fill_apertures(struct kfd_process_device_apertures *ap, const struct emu_gpu *g)
{
	memset(ap, 0, sizeof(*ap));
	/* gfx9 dGPU values from amdkfd's kfd_flat_memory.c */
	ap->lds_base = 1ull << 48;
	ap->lds_limit = ap->lds_base | 0xFFFFFFFFull;
	ap->scratch_base = 2ull << 48;
	ap->scratch_limit = ap->scratch_base | 0xFFFFFFFFull;
	ap->gpuvm_base = 0x1000000ull;
	ap->gpuvm_limit = 0x7FFFFFFFFFFFull;
	ap->gpu_id = g->gpu_id;
}

static int emu_acquire_vm(const struct kfd_ioctl_acquire_vm_args *a)
{
	struct emu_gpu *g = emu_gpu_by_id(a->gpu_id);
	if (!g)
		return emu_fail(EINVAL);
	int fd = (int)a->drm_fd;
	/* amdkfd takes the VM from the render node's file: it must be that GPU's node. */
	if (fd < 0 || fd >= EMU_MAX_FDS || emu_p.fdkind[fd] != EMU_FD_RENDER ||
	    emu_p.fdminor[fd] != g->render_minor)
		return emu_fail(EINVAL);
	/*
	 * One VM per process and GPU, bound to the render-node file that gave it
	 * (kfd_ioctl_acquire_vm: pdd->drm_file set -> 0 for the same file, else
	 * EBUSY).  A file is an open description: a dup shares it, a second open
	 * of the node does not.
	 */
	struct stat st;
	if (fstat(fd, &st))
		return emu_fail(EINVAL);
	int rc = 0;
	pthread_mutex_lock(&emu_p.lock);
	if (g->pdd && g->pdd_file != (uint64_t)st.st_ino)
		rc = EBUSY;
	g->pdd = true;
	if (!rc)
		g->pdd_file = (uint64_t)st.st_ino;
	pthread_mutex_unlock(&emu_p.lock);
	EMU_DBG("ACQUIRE_VM gpu 0x%x drm fd %d -> %s\n", g->gpu_id, fd, rc ? "EBUSY (another file holds the VM)" : "0");
	return rc ? emu_fail(rc) : 0;
}

/*
 * SPMTAP_EMU_CLOCK_PAIR_DELAY_*: is this call one of the disturbed ones?
 * Calls are counted from 1 in the process; with EVERY = K and RUN = R, calls
 * K..K+R-1, 2K..2K+R-1, ... are (K 1: every call).
 */
static bool emu_clock_pair_disturbed(void)
{
	uint64_t n = __atomic_add_fetch(&emu_p.clock_pair_calls, 1, __ATOMIC_RELAXED);
	uint64_t every = emu_p.clock_pair_delay_every ? emu_p.clock_pair_delay_every : 1;
	uint64_t run = emu_p.clock_pair_delay_run ? emu_p.clock_pair_delay_run : 1;
	return emu_p.clock_pair_delay_ns && n >= every && (n % every) < run;
}

/* A thread preempted between two reads: spun, since a sleep would overshoot by tens of us. */
static void emu_clock_pair_spin(void)
{
	uint64_t until = emu_clock_raw_ns() + emu_p.clock_pair_delay_ns;
	while (emu_clock_raw_ns() < until)
		;
}

static int emu_clock_counters(struct kfd_ioctl_get_clock_counters_args *a)
{
	/* Both host clocks back to back, as kfd_ioctl_get_clock_counters reads them;
	 * the GPU counter is a function of RAW, so it is computed afterwards. */
	bool disturbed = emu_clock_pair_disturbed();
	uint64_t latch = emu_clock_raw_ns(); /* the GPU counter's latch */
	if (disturbed && emu_p.clock_pair_delay_at_raw)
		emu_clock_pair_spin();
	uint64_t raw = disturbed && emu_p.clock_pair_delay_at_raw ? emu_clock_raw_ns() : latch;
	if (disturbed && !emu_p.clock_pair_delay_at_raw)
		emu_clock_pair_spin();
	uint64_t boot = emu_clock_boottime_ns();
	/* amdkfd: a gpu_id without a GPU (the CPU node) gives GPU counter 0 and success. */
	a->gpu_clock_counter = emu_gpu_by_id(a->gpu_id) ? emu_clock_ticks(latch) : 0;
	a->cpu_clock_counter = raw;
	a->system_clock_counter = boot;
	a->system_clock_freq = 1000000000ull;
	return 0;
}

int emu_kfd_ioctl(int fd, unsigned long req, void *arg)
{
	EMU_DBG("ioctl(kfd fd %d, 0x%lx nr=0x%x)\n", fd, req, (unsigned)_IOC_NR(req));
	switch (req) {
	case AMDKFD_IOC_GET_VERSION: {
		struct kfd_ioctl_get_version_args *a = arg;
		a->major_version = 1;
		a->minor_version = emu_p.kfd_minor;
		return 0;
	}
	case AMDKFD_IOC_GET_PROCESS_APERTURES_NEW: {
		struct kfd_ioctl_get_process_apertures_new_args *a = arg;
		if (!a->kfd_process_device_apertures_ptr) {
			a->num_of_nodes = (uint32_t)emu_p.ngpus;
			return 0;
		}
		uint32_t n = a->num_of_nodes < (uint32_t)emu_p.ngpus ? a->num_of_nodes : (uint32_t)emu_p.ngpus;
		struct kfd_process_device_apertures *ap = (void *)(uintptr_t)a->kfd_process_device_apertures_ptr;
		for (uint32_t i = 0; i < n; i++)
			emu_fill_apertures(&ap[i], &emu_p.gpus[i]);
		a->num_of_nodes = n;
		return 0;
	}
	case AMDKFD_IOC_GET_PROCESS_APERTURES: {
		struct kfd_ioctl_get_process_apertures_args *a = arg;
		uint32_t n = (uint32_t)emu_p.ngpus < NUM_OF_SUPPORTED_GPUS ? (uint32_t)emu_p.ngpus
									    : NUM_OF_SUPPORTED_GPUS;
		for (uint32_t i = 0; i < n; i++)
			emu_fill_apertures(&a->process_apertures[i], &emu_p.gpus[i]);
		a->num_of_nodes = n;
		return 0;
	}
	case AMDKFD_IOC_ACQUIRE_VM:
		return emu_acquire_vm(arg);
	case AMDKFD_IOC_SET_MEMORY_POLICY: {
		struct kfd_ioctl_set_memory_policy_args *a = arg;
		return emu_gpu_by_id(a->gpu_id) ? 0 : emu_fail(EINVAL);
	}
	case AMDKFD_IOC_GET_CLOCK_COUNTERS:
		return emu_clock_counters(arg);
	case AMDKFD_IOC_SET_SCRATCH_BACKING_VA:
	case AMDKFD_IOC_SET_TRAP_HANDLER:
		return 0;
	case AMDKFD_IOC_GET_TILE_CONFIG: {
		/* gfx9 has no tile-mode tables (kfd_ioctl_get_tile_config: all zero); ROCr's image code asks at
		 * HIP init and asserts on failure (DISPATCH.md 6). */
		struct kfd_ioctl_get_tile_config_args *a = arg;
		if (!emu_gpu_by_id(a->gpu_id)) {
			errno = EINVAL;
			return -1;
		}
		if (a->num_tile_configs > 32)
			a->num_tile_configs = 32;
		if (a->num_macro_tile_configs > 16)
			a->num_macro_tile_configs = 16;
		if (a->tile_config_ptr && a->num_tile_configs)
			memset((void *)(uintptr_t)a->tile_config_ptr, 0, a->num_tile_configs * 4u);
		if (a->macro_tile_config_ptr && a->num_macro_tile_configs)
			memset((void *)(uintptr_t)a->macro_tile_config_ptr, 0, a->num_macro_tile_configs * 4u);
		a->gb_addr_config = 0x2a114042; /* Aldebaran's golden GB_ADDR_CONFIG */
		a->num_banks = 0;
		a->num_ranks = 0;
		return 0;
	}
	case AMDKFD_IOC_SET_XNACK_MODE: {
		struct kfd_ioctl_set_xnack_mode_args *a = arg;
		if (a->xnack_enabled < 0)
			a->xnack_enabled = 0; /* query */
		else if (a->xnack_enabled)
			return emu_fail(EPERM);
		return 0;
	}
	case SPMTAP_KFD_IOC_RLC_SPM:
		return emu_spm_ioctl(arg);
	case EMU_IOC_TEST_PM4:
		return emu_test_pm4_ioctl(arg);
	case EMU_IOC_READBACK:
		return emu_readback_ioctl(arg);
	case EMU_IOC_QUEUE_ERR:
		return emu_queue_err_ioctl(arg);
	default: {
		int handled;
		int rc = emu_event_ioctl(req, arg, &handled);
		if (handled)
			return rc;
		rc = emu_mem_ioctl(req, arg, &handled);
		if (handled)
			return rc;
		rc = emu_queue_ioctl(req, arg, &handled);
		if (handled)
			return rc;
		/* The debugger: DBG_TRAP (nr 0x82 in ROCm 5.x kernels, 0x26 upstream) and RUNTIME_ENABLE (0x25)
		 * are unsupported here; ROCr and libhsakmt 5.2.3 take ENOTTY as "no debugger support". */
		if (_IOC_NR(req) == 0x82 || _IOC_NR(req) == 0x26 || _IOC_NR(req) == 0x25) {
			EMU_DBG("  debug-trap ioctl nr 0x%x: unsupported -> ENOTTY\n", (unsigned)_IOC_NR(req));
			return emu_fail(ENOTTY);
		}
		EMU_DBG("  unhandled KFD ioctl nr 0x%x -> ENOTTY\n", (unsigned)_IOC_NR(req));
		return emu_fail(ENOTTY);
	}
	}
}
