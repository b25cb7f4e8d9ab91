/* SPDX-License-Identifier: MIT */
/*
 * libdrm_amdgpu interposition: libhsakmt asks amdgpu_get_marketing_name()
 * for each render node; a fake node gets a handle of ours that answers with
 * its profile's marketing name.  Real devices go to the real libdrm_amdgpu.
 */
#include "emu/shim/shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

struct emu_drm_dev {
	uint32_t magic;
	int gpu_index;
};

#define EMU_DRM_MAGIC 0x53504d54u /* "SPMT" */

static struct emu_drm_dev emu_drm_devs[EMU_MAX_GPUS];

static void *emu_next_drm(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

static struct emu_drm_dev *emu_drm_dev_of(void *handle)
{
	uintptr_t h = (uintptr_t)handle, lo = (uintptr_t)&emu_drm_devs[0];
	uintptr_t hi = (uintptr_t)&emu_drm_devs[EMU_MAX_GPUS];
	return (h >= lo && h < hi) ? handle : NULL;
}

EMU_EXPORT int amdgpu_device_initialize(int fd, uint32_t *major, uint32_t *minor, void **handle);
EMU_EXPORT int amdgpu_device_initialize(int fd, uint32_t *major, uint32_t *minor, void **handle)
{
	if (fd >= 0 && fd < EMU_MAX_FDS && emu_p.fdkind[fd] == EMU_FD_RENDER) {
		struct emu_gpu *g = emu_gpu_by_minor(emu_p.fdminor[fd]);
		if (!g)
			return -ENODEV;
		int i = (int)(g - emu_p.gpus);
		emu_drm_devs[i].magic = EMU_DRM_MAGIC;
		emu_drm_devs[i].gpu_index = i;
		*major = 3;
		*minor = 46; /* DRM interface version of a 5.x-era amdgpu */
		*handle = &emu_drm_devs[i];
		EMU_DBG("amdgpu_device_initialize(fake fd %d) -> gpu 0x%x\n", fd, g->gpu_id);
		return 0;
	}
	int (*real)(int, uint32_t *, uint32_t *, void **);
	void *sym = emu_next_drm("amdgpu_device_initialize");
	if (!sym)
		return -ENOSYS;
	memcpy(&real, &sym, sizeof(sym));
	return real(fd, major, minor, handle);
}

EMU_EXPORT const char *amdgpu_get_marketing_name(void *handle);
EMU_EXPORT const char *amdgpu_get_marketing_name(void *handle)
{
	struct emu_drm_dev *d = emu_drm_dev_of(handle);
	if (d) {
		const struct emu_profile *p = emu_p.gpus[d->gpu_index].profile;
		EMU_DBG("amdgpu_get_marketing_name(gpu 0x%x)\n", emu_p.gpus[d->gpu_index].gpu_id);
		return p ? p->marketing_name : "AMD Instinct (spmtap emulator)";
	}
	const char *(*real)(void *);
	void *sym = emu_next_drm("amdgpu_get_marketing_name");
	if (!sym)
		return NULL;
	memcpy(&real, &sym, sizeof(sym));
	return real(handle);
}

EMU_EXPORT int amdgpu_device_deinitialize(void *handle);
EMU_EXPORT int amdgpu_device_deinitialize(void *handle)
{
	if (emu_drm_dev_of(handle))
		return 0;
	int (*real)(void *);
	void *sym = emu_next_drm("amdgpu_device_deinitialize");
	if (!sym)
		return -ENOSYS;
	memcpy(&real, &sym, sizeof(sym));
	return real(handle);
}
