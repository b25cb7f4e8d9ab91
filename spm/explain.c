/* SPDX-License-Identifier: MIT */
/* Turning an errno from an SPM operation into something a user can act on. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "spm/spm.h"

const char *spm_gen_name(enum spm_gen gen)
{
	switch (gen) {
	case SPM_GEN_A: return "A";
	case SPM_GEN_B: return "B";
	default: return "unknown";
	}
}

static void busy(const char *gpu, char *out, size_t len)
{
	char holders[256];
	spm_kfd_holders(holders, sizeof(holders));
	if (holders[0])
		snprintf(out, len, "SPM on %s is held by another process; processes with the "
			 "KFD device open: %s", gpu, holders);
	else
		snprintf(out, len, "SPM on %s is held by another process (none visible to this "
			 "user has the KFD device open; try as root to see them)", gpu);
}

void spm_explain(int err, const char *op, const struct spm_device *dev, const char *backend,
		 char *out, size_t len)
{
	char gpu[64];
	if (!out || !len)
		return;
	if (err < 0)
		err = -err;
	if (!op)
		op = "SPM";
	if (!backend)
		backend = "?";
	/* The sentence form in the brief names the GPU without its gfx level. */
	if (dev)
		snprintf(gpu, sizeof(gpu), "GPU %u (gpu_id 0x%x)", dev->index, dev->gpu_id);
	else
		snprintf(gpu, sizeof(gpu), "the GPU");
	bool acquire = !strcmp(op, "acquire");

	switch (err) {
	case EBUSY:
		busy(gpu, out, len);
		return;
	case ENOTTY:
		snprintf(out, len, "the kernel rejected the SPM ioctl (%s on %s, ENOTTY): it needs "
			 "the ROCm amdgpu-dkms driver (upstream amdgpu has no AMDKFD_IOC_RLC_SPM), "
			 "or the GPU has no SPM", op, gpu);
		return;
	case EINVAL:
		if (acquire)
			snprintf(out, len, "the kernel rejected the SPM ioctl (%s on %s, EINVAL): it "
				 "needs the ROCm amdgpu-dkms driver (upstream amdgpu has no "
				 "AMDKFD_IOC_RLC_SPM), or the GPU has no SPM; EINVAL is ambiguous: it "
				 "also means an unknown gpu_id, a GPU this process has not opened, or "
				 "a reserved VMID another process holds", op, gpu);
		else
			snprintf(out, len, "%s on %s failed with EINVAL (backend %s): SPM is not "
				 "acquired by this process, or the buffer is too small (generation B "
				 "needs more than 32 bytes per XCC)", op, gpu, backend);
		return;
	case ENODEV:
	case ENOENT:
	case ENXIO:
		snprintf(out, len, "no KFD device (no /dev/kfd, or %s is gone); on a machine "
			 "without an AMD GPU use --emulate PROFILE", gpu);
		return;
	case EACCES:
	case EPERM:
		snprintf(out, len, "permission denied on /dev/kfd (%s on %s): add the user to the "
			 "video and render groups, or check the permissions of /dev/kfd and "
			 "/dev/dri/renderD*", op, gpu);
		return;
	case ETIMEDOUT:
		snprintf(out, len, "%s on %s timed out in the kernel (the KIQ did not answer); the "
			 "GPU may be hung or resetting", op, gpu);
		return;
	case ENOMEM:
		snprintf(out, len, "%s on %s: the kernel could not allocate the SPM ring", op, gpu);
		return;
	case EOPNOTSUPP:
		snprintf(out, len, "%s on %s is not supported by backend %s; try another with "
			 "--backend", op, gpu, backend);
		return;
	case EFAULT:
		snprintf(out, len, "%s on %s: the kernel could not write into the SPM buffer "
			 "(EFAULT); the data of the retired buffer is incomplete", op, gpu);
		return;
	default:
		snprintf(out, len, "%s on %s failed (backend %s): %s (%s)", op, gpu, backend,
			 strerror(err), strerrorname_np(err) ? strerrorname_np(err) : "?");
		return;
	}
}
