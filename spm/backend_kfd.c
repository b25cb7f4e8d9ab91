/* SPDX-License-Identifier: MIT */
/* SPM through the raw KFD ioctls, for hosts without libhsakmt or to rule it out. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "log.h"
#include "spm/backend_priv.h"
#include "uapi/kfd_spm.h"

#define KFD_PATH "/dev/kfd"
/*
 * Gen B does not write the remaining time back, so a restarted wait starts
 * over; frequent signals could keep a call from ever returning (SPM.md 3.4).
 * libhsakmt retries forever; we give up after this many and report -EINTR.
 */
#define KFD_EINTR_RETRIES 8

struct kfd_backend {
	struct spm_backend base;
	int kfd_fd;
	size_t ndev;
	struct {
		uint32_t gpu_id;
		int drm_fd;
	} dev[];
};

static struct kfd_backend *to_kb(struct spm_backend *b)
{
	return spm_container_of(b, struct kfd_backend, base);
}

static int kfd_ioctl(int fd, unsigned long req, void *args)
{
	for (int i = 0;; i++) {
		if (ioctl(fd, req, args) == 0)
			return 0;
		int e = errno;
		if ((e != EINTR && e != EAGAIN) || i == KFD_EINTR_RETRIES)
			return -e;
	}
}

static int no_kfd(char *err, size_t errlen)
{
	return spmtap_seterr(err, errlen, ENODEV,
			     "no KFD device (no /dev/kfd); on a machine without an AMD GPU use "
			     "--emulate PROFILE");
}

static int kfd_probe(char *reason, size_t len)
{
	if (access(KFD_PATH, F_OK) != 0)
		return no_kfd(reason, len);
	if (access(KFD_PATH, R_OK | W_OK) != 0)
		return spmtap_seterr(reason, len, EACCES,
				     "/dev/kfd is not readable and writable by this user (add the "
				     "user to the video and render groups)");
	return 0;
}

/* A process has one KFD VM per GPU; ACQUIRE_VM gives it the render node's (SPM.md 8.6). */
static int acquire_vm(struct kfd_backend *kb, size_t i, const struct spm_device *d, char *err,
		      size_t errlen)
{
	char path[64];
	snprintf(path, sizeof(path), "/dev/dri/renderD%u", d->drm_render_minor);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		return spmtap_seterr(err, errlen, e, "cannot open %s for GPU %u (gpu_id 0x%x): %s%s",
				     path, d->index, d->gpu_id, strerror(e),
				     e == EACCES ? " (add the user to the render group)" : "");
	}
	kb->dev[i].drm_fd = fd;

	struct spmtap_kfd_acquire_vm_args vm = { .drm_fd = (uint32_t)fd, .gpu_id = d->gpu_id };
	int r = kfd_ioctl(kb->kfd_fd, SPMTAP_KFD_IOC_ACQUIRE_VM, &vm);
	/* EBUSY: this process already gave KFD a VM (libhsakmt did); SPM uses that one. */
	if (r == -EBUSY) {
		pr_debug("kfd", "ACQUIRE_VM(gpu_id 0x%x): VM already acquired in this process",
			 d->gpu_id);
		return 0;
	}
	if (r)
		return spmtap_seterr(err, errlen, -r, "ACQUIRE_VM(gpu_id 0x%x, %s) failed: %s",
				     d->gpu_id, path, strerror(-r));
	return 0;
}

static void kfd_close(struct spm_backend *b)
{
	if (!b)
		return;
	struct kfd_backend *kb = to_kb(b);
	for (size_t i = 0; i < kb->ndev; i++)
		if (kb->dev[i].drm_fd >= 0)
			close(kb->dev[i].drm_fd);
	if (kb->kfd_fd >= 0)
		close(kb->kfd_fd);
	free(kb);
}

static int kfd_open(struct spm_backend **out, const struct spm_device *devs, size_t ndev,
		    char *err, size_t errlen)
{
	struct kfd_backend *kb = calloc(1, sizeof(*kb) + ndev * sizeof(kb->dev[0]));
	if (!kb)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	kb->base.ops = &spm_backend_kfd;
	kb->ndev = ndev;
	for (size_t i = 0; i < ndev; i++) {
		kb->dev[i].gpu_id = devs[i].gpu_id;
		kb->dev[i].drm_fd = -1;
	}

	int r;
	kb->kfd_fd = open(KFD_PATH, O_RDWR | O_CLOEXEC);
	if (kb->kfd_fd < 0) {
		int e = errno;
		if (e == ENOENT || e == ENXIO || e == ENODEV)
			r = no_kfd(err, errlen);
		else if (e == EACCES || e == EPERM)
			r = spmtap_seterr(err, errlen, e,
					  "cannot open /dev/kfd: %s (add the user to the video and "
					  "render groups)", strerror(e));
		else
			r = spmtap_seterr(err, errlen, e, "cannot open /dev/kfd: %s", strerror(e));
		goto fail;
	}

	struct spmtap_kfd_get_version_args ver = { 0 };
	r = kfd_ioctl(kb->kfd_fd, SPMTAP_KFD_IOC_GET_VERSION, &ver);
	if (r) {
		spmtap_seterr(err, errlen, -r, "KFD GET_VERSION failed: %s", strerror(-r));
		goto fail;
	}
	pr_debug("kfd", "KFD ioctl interface %u.%u", ver.major_version, ver.minor_version);

	for (size_t i = 0; i < ndev; i++) {
		r = acquire_vm(kb, i, &devs[i], err, errlen);
		if (r)
			goto fail;
	}
	*out = &kb->base;
	return 0;
fail:
	kfd_close(&kb->base);
	return r;
}

static int spm_op(struct spm_backend *b, const struct spm_device *dev, uint32_t op)
{
	struct spmtap_kfd_spm_args a = { .op = op, .gpu_id = dev->gpu_id };
	return kfd_ioctl(to_kb(b)->kfd_fd, SPMTAP_KFD_IOC_RLC_SPM, &a);
}

static int kfd_acquire(struct spm_backend *b, const struct spm_device *dev)
{
	return spm_op(b, dev, SPMTAP_KFD_SPM_OP_ACQUIRE);
}

static int kfd_release(struct spm_backend *b, const struct spm_device *dev)
{
	return spm_op(b, dev, SPMTAP_KFD_SPM_OP_RELEASE);
}

static int kfd_set_dest(struct spm_backend *b, const struct spm_device *dev, void *buf,
			uint32_t size, uint32_t *timeout_ms, uint32_t *bytes_copied,
			uint32_t *data_loss)
{
	struct spmtap_kfd_spm_args a = {
		.dest_buf = (uint64_t)(uintptr_t)buf,
		.buf_size = size,
		.op = SPMTAP_KFD_SPM_OP_SET_DEST_BUF,
		.timeout = *timeout_ms,
		.gpu_id = dev->gpu_id,
	};
	/* The kernel copies the args back whatever the result (SPM.md 2.2). */
	int r = kfd_ioctl(to_kb(b)->kfd_fd, SPMTAP_KFD_IOC_RLC_SPM, &a);
	*timeout_ms = a.timeout;
	*bytes_copied = a.bytes_copied;
	*data_loss = a.has_data_loss;
	return r;
}

static int kfd_clock(struct spm_backend *b, const struct spm_device *dev,
		     struct spm_clock_pair *out)
{
	struct spmtap_kfd_clock_counters_args a = { .gpu_id = dev->gpu_id };
	int r = kfd_ioctl(to_kb(b)->kfd_fd, SPMTAP_KFD_IOC_GET_CLOCK_COUNTERS, &a);
	if (r)
		return r;
	out->gpu_ticks = a.gpu_clock_counter;
	out->cpu_raw_ns = a.cpu_clock_counter;
	out->boottime_ns = a.system_clock_counter;
	out->system_freq = a.system_clock_freq;
	return 0;
}

const struct spm_backend_ops spm_backend_kfd = {
	.name = "kfd",
	.summary = "raw KFD ioctls on /dev/kfd (no libhsakmt)",
	.probe = kfd_probe,
	.open = kfd_open,
	.acquire = kfd_acquire,
	.set_dest = kfd_set_dest,
	.release = kfd_release,
	.clock_counters = kfd_clock,
	.close = kfd_close,
};
