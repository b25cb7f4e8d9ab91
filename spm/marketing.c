/* SPDX-License-Identifier: MIT */
/* The product name ("AMD Instinct MI210") from libdrm_amdgpu, if it is there to ask. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "spm/spm.h"

#define DRM_AMDGPU_SONAME "libdrm_amdgpu.so.1"

typedef int (*dev_init_fn)(int fd, uint32_t *major, uint32_t *minor, void **handle);
typedef const char *(*marketing_fn)(void *handle);
typedef int (*dev_deinit_fn)(void *handle);

/*
 * Looked up in the global scope first, so an LD_PRELOAD interposer (the
 * emulator, a debugging shim) wins as it would for a linked call; dlsym on
 * the handle alone would bypass it.
 */
static void *sym(void *h, const char *name)
{
	void *p = dlsym(RTLD_DEFAULT, name);
	return p ? p : dlsym(h, name);
}

void spm_device_marketing_name(struct spm_device *dev)
{
	dev->marketing_name[0] = '\0';
	void *h = dlopen(DRM_AMDGPU_SONAME, RTLD_NOW);
	if (!h) {
		pr_debug("discover", "no marketing name: dlopen(%s): %s", DRM_AMDGPU_SONAME,
			 dlerror());
		return;
	}
	dev_init_fn init;
	marketing_fn get;
	dev_deinit_fn deinit;
	void *pi = sym(h, "amdgpu_device_initialize"), *pg = sym(h, "amdgpu_get_marketing_name");
	void *pd = sym(h, "amdgpu_device_deinitialize");
	if (!pi || !pg || !pd) {
		pr_debug("discover", "no marketing name: %s lacks amdgpu_get_marketing_name",
			 DRM_AMDGPU_SONAME);
		dlclose(h);
		return;
	}
	memcpy(&init, &pi, sizeof(pi));
	memcpy(&get, &pg, sizeof(pg));
	memcpy(&deinit, &pd, sizeof(pd));

	char path[64];
	snprintf(path, sizeof(path), "/dev/dri/renderD%u", dev->drm_render_minor);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		pr_debug("discover", "no marketing name: open(%s): %m", path);
		dlclose(h);
		return;
	}
	uint32_t major, minor;
	void *handle = NULL;
	if (init(fd, &major, &minor, &handle) == 0 && handle) {
		const char *name = get(handle);
		if (name)
			snprintf(dev->marketing_name, sizeof(dev->marketing_name), "%s", name);
		deinit(handle);
	} else {
		pr_debug("discover", "no marketing name: amdgpu_device_initialize(%s) failed", path);
	}
	close(fd);
	dlclose(h);
}
