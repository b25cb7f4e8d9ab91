/* SPDX-License-Identifier: MIT */
/* The default backend: SPM through libhsakmt (dlopen'd), as AMD's own stack does it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "spm/backend_priv.h"

struct hsakmt_backend {
	struct spm_backend base;
	const struct spm_hsakmt *k;
	uint32_t num_nodes;
};

static struct hsakmt_backend *to_hb(struct spm_backend *b)
{
	return spm_container_of(b, struct hsakmt_backend, base);
}

static int hsakmt_probe(char *reason, size_t len)
{
	const struct spm_hsakmt *k;
	return spm_hsakmt_load(&k, reason, len);
}

/*
 * The SPM entry points hand back the raw ioctl result (0, or -1 with errno),
 * not an HSAKMT_STATUS (SPM.md 8.2); only node validation answers with a
 * positive status.  Both shapes arrive here.
 */
static int spm_result(HSAKMT_STATUS st, int saved_errno, const char *call)
{
	if (st == HSAKMT_STATUS_SUCCESS)
		return 0;
	if ((int)st == -1)
		return saved_errno ? -saved_errno : -EIO;
	return spm_hsakmt_status_errno(st, call);
}

static int hsakmt_open(struct spm_backend **out, const struct spm_device *devs, size_t ndev,
		       char *err, size_t errlen)
{
	const struct spm_hsakmt *k;
	int r = spm_hsakmt_open(&k, false, err, errlen);
	if (r)
		return r;
	/* Node validation and libhsakmt's node → gpu_id map need the snapshot (SPM.md 8.3). */
	HsaSystemProperties sp;
	HSAKMT_STATUS st = k->acquire_sysprops(&sp);
	if (st != HSAKMT_STATUS_SUCCESS)
		return spmtap_seterr(err, errlen, -spm_hsakmt_status_errno(st, "hsaKmtAcquireSystemProperties"),
				     "hsaKmtAcquireSystemProperties failed with HSAKMT_STATUS %d (%s)", (int)st,
				     spm_hsakmt_status_name(st));
	for (size_t i = 0; i < ndev; i++) {
		if (devs[i].node >= sp.NumNodes)
			return spmtap_seterr(err, errlen, ENODEV,
					     "libhsakmt sees %u topology nodes but GPU %u is node %u; "
					     "the topology changed since discovery",
					     sp.NumNodes, devs[i].index, devs[i].node);
	}

	struct hsakmt_backend *hb = calloc(1, sizeof(*hb));
	if (!hb)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	hb->base.ops = &spm_backend_hsakmt;
	hb->k = k;
	hb->num_nodes = sp.NumNodes;
	*out = &hb->base;
	return 0;
}

static int hsakmt_acquire(struct spm_backend *b, const struct spm_device *dev)
{
	struct hsakmt_backend *hb = to_hb(b);
	errno = 0;
	HSAKMT_STATUS st = hb->k->spm_acquire(dev->node);
	return spm_result(st, errno, "hsaKmtSPMAcquire");
}

static int hsakmt_release(struct spm_backend *b, const struct spm_device *dev)
{
	struct hsakmt_backend *hb = to_hb(b);
	errno = 0;
	HSAKMT_STATUS st = hb->k->spm_release(dev->node);
	return spm_result(st, errno, "hsaKmtSPMRelease");
}

/*
 * libhsakmt retries EINTR without limit on the same args (SPM.md 3.4); the
 * stream keeps that harmless by polling with timeout 0.  Its data-loss output
 * is a bool, so gen B's per-region count arrives as 0/1: read the headers.
 */
static int hsakmt_set_dest(struct spm_backend *b, const struct spm_device *dev, void *buf,
			   uint32_t size, uint32_t *timeout_ms, uint32_t *bytes_copied,
			   uint32_t *data_loss)
{
	struct hsakmt_backend *hb = to_hb(b);
	HSAuint32 t = *timeout_ms, copied = 0;
	bool loss = false;

	errno = 0;
	HSAKMT_STATUS st = hb->k->spm_set_dest(dev->node, size, &t, &copied, buf, &loss);
	int r = spm_result(st, errno, "hsaKmtSPMSetDestBuffer");
	*timeout_ms = t;
	*bytes_copied = copied;
	*data_loss = loss;
	return r;
}

static int hsakmt_clock(struct spm_backend *b, const struct spm_device *dev,
			struct spm_clock_pair *out)
{
	return spm_hsakmt_clock(to_hb(b)->k, dev->node, out);
}

static void hsakmt_close(struct spm_backend *b)
{
	if (!b)
		return;
	/* KFD and the snapshot stay open for the process (spm_hsakmt_open). */
	free(to_hb(b));
}

const struct spm_backend_ops spm_backend_hsakmt = {
	.name = "hsakmt",
	.summary = "libhsakmt (ROCt thunk), loaded at run time",
	.probe = hsakmt_probe,
	.open = hsakmt_open,
	.acquire = hsakmt_acquire,
	.set_dest = hsakmt_set_dest,
	.release = hsakmt_release,
	.clock_counters = hsakmt_clock,
	.close = hsakmt_close,
};
