/* SPDX-License-Identifier: MIT */
/*
 * <linux/kfd_ioctl.h> includes <drm/drm.h> only for the basic integer types
 * and _IOC macros; Debian ships drm.h under /usr/include/libdrm/ instead.
 * Building with -Iuapi/compat makes the distribution header usable as is.
 */
#include <linux/ioctl.h>
#include <linux/types.h>
