/* SPDX-License-Identifier: MIT */
/*
 * The emulator-only PM4 channel (uapi/spmtap_emu.h): the dwords go to the
 * emulated command processor through an ioctl on /dev/kfd.  A real kernel
 * has no such ioctl, so on hardware this submitter is unavailable and says
 * why; it never pretends to have programmed anything.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "log.h"
#include "spm/pm4.h"
#include "spm/submit.h"
#include "uapi/spmtap_emu.h"

#define KFD_PATH "/dev/kfd"

static const char no_channel[] =
	"counter programming needs a GPU-queue submitter; this build can only program the "
	"emulated device (the emulator-only PM4 channel is not a kernel ABI)";

struct spm_submitter {
	int fd;
	uint32_t gpu_id;
};

/*
 * One ioctl.  A kernel without the channel never copies the arguments back,
 * so an empty err after EINVAL/ENOTTY means "no channel", while a CP refusal
 * always carries the CP's sentence.
 */
static int submit_fd(int fd, uint32_t gpu_id, const uint32_t *dw, size_t n, char *err,
		     size_t errlen)
{
	struct spmtap_emu_pm4_args a;
	memset(&a, 0, sizeof(a));
	if (n > UINT32_MAX)
		return spmtap_seterr(err, errlen, E2BIG, "PM4 program of %zu dwords is too long", n);
	a.pm4 = (uint64_t)(uintptr_t)dw;
	a.ndw = (uint32_t)n;
	a.gpu_id = gpu_id;
	a.xcc_mask = 0; /* an unpredicated IB runs on every XCC */
	int rc;
	do
		rc = ioctl(fd, SPMTAP_EMU_IOC_SUBMIT_PM4, &a);
	while (rc < 0 && errno == EINTR);
	if (rc == 0)
		return 0;
	int e = errno;
	a.err[sizeof(a.err) - 1] = '\0';
	if ((e == EINVAL || e == ENOTTY) && !a.err[0])
		return spmtap_seterr(err, errlen, EOPNOTSUPP, "%s", no_channel);
	if (a.err[0])
		return spmtap_seterr(err, errlen, e,
				     "the command processor refused the PM4 program at dword %u of %zu "
				     "(0x%08x): %s",
				     a.err_dw, n, a.err_dw < n ? dw[a.err_dw] : 0, a.err);
	return spmtap_seterr(err, errlen, e, "PM4 submission failed: %s", strerror(e));
}

static int open_kfd(char *err, size_t errlen)
{
	int fd = open(KFD_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		return spmtap_seterr(err, errlen, e, "cannot open %s: %s", KFD_PATH, strerror(e));
	}
	return fd;
}

/* A 1-dword NOP: executes nothing, so probing has no side effect. */
static int emu_probe(const struct spm_device *dev, char *reason, size_t len)
{
	if (!dev)
		return spmtap_seterr(reason, len, EINVAL, "no GPU given");
	int fd = open_kfd(reason, len);
	if (fd < 0)
		return fd;
	static const uint32_t nop = SPM_PM4_NOP1;
	int rc = submit_fd(fd, dev->gpu_id, &nop, 1, reason, len);
	close(fd);
	return rc;
}

static int emu_create(struct spm_submitter **out, const struct spm_device *dev, char *err,
		      size_t errlen)
{
	*out = NULL;
	if (!dev)
		return spmtap_seterr(err, errlen, EINVAL, "no GPU given");
	struct spm_submitter *s = calloc(1, sizeof(*s));
	if (!s)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	s->fd = open_kfd(err, errlen);
	if (s->fd < 0) {
		int rc = s->fd;
		free(s);
		return rc;
	}
	s->gpu_id = dev->gpu_id;
	*out = s;
	return 0;
}

/* The emulated CP executes synchronously: completion is the ioctl's return. */
static int emu_submit(struct spm_submitter *s, const uint32_t *dw, size_t n, uint32_t timeout_ms,
		      char *err, size_t errlen)
{
	(void)timeout_ms;
	if (!s || (!dw && n))
		return spmtap_seterr(err, errlen, EINVAL, "no submitter or no program");
	return submit_fd(s->fd, s->gpu_id, dw, n, err, errlen);
}

static void emu_destroy(struct spm_submitter *s)
{
	if (!s)
		return;
	close(s->fd);
	free(s);
}

const struct spm_submitter_ops spm_submitter_emu = {
	.name = "emu",
	.summary = "the emulated command processor (emulator-only ioctl; not on real GPUs)",
	.probe = emu_probe,
	.create = emu_create,
	.submit = emu_submit,
	.destroy = emu_destroy,
};
