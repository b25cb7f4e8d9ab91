/* SPDX-License-Identifier: MIT */
/*
 * SPM through the HSA runtime's hsa_amd_spm_* (ROCm >= 5.5), resolved at run
 * time: Debian's ROCr 5.2.3 lacks them (SPM.md 8.4), and spmtap must still
 * start there and say why this backend is off.
 */
#include <errno.h>
#include <stdlib.h>

#include "log.h"
#include "spm/backend_priv.h"
#include "spm/hsa_lib.h"

static int hsa_probe(char *reason, size_t len)
{
	const struct spm_hsa_lib *h;
	int r = spm_hsa_load(&h, reason, len);
	if (r)
		return r;
	if (!h->has_spm)
		return spmtap_seterr(reason, len, EOPNOTSUPP, "%s (%s) has no hsa_amd_spm_* (added in ROCm 5.5)",
				     SPM_HSA_SONAME, h->version);
	return 0;
}

struct hsa_backend {
	struct spm_backend base;
	const struct spm_hsa_lib *h;
	size_t ndev;
	struct {
		uint32_t node;
		bool found;
		hsa_agent_t agent;
	} dev[];
};

static struct hsa_backend *to_ab(struct spm_backend *b)
{
	return spm_container_of(b, struct hsa_backend, base);
}

/*
 * ROCr folds every thunk failure into HSA_STATUS_ERROR; whether errno
 * survives is unverified (SPM.md 8.4), so no errno is guessed here.
 */
static int hsa_result(const struct spm_hsa_lib *h, hsa_status_t st, const char *call)
{
	if (st == HSA_STATUS_SUCCESS)
		return 0;
	pr_warn("hsa", "%s: %s (status 0x%x); reporting it as -EIO", call, spm_hsa_status(h, st), (unsigned)st);
	return -EIO;
}

static int hsa_open(struct spm_backend **out, const struct spm_device *devs, size_t ndev,
		    char *err, size_t errlen)
{
	int r = hsa_probe(err, errlen);
	if (r)
		return r;
	const struct spm_hsa_lib *h;
	r = spm_hsa_open(&h, err, errlen);
	if (r)
		return r;
	struct hsa_backend *ab = calloc(1, sizeof(*ab) + ndev * sizeof(ab->dev[0]));
	if (!ab)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	ab->base.ops = &spm_backend_hsa;
	ab->h = h;
	ab->ndev = ndev;
	for (size_t i = 0; i < ndev; i++) {
		ab->dev[i].node = devs[i].node;
		r = spm_hsa_agent_for(h, &devs[i], &ab->dev[i].agent, err, errlen);
		if (r) {
			free(ab);
			return r;
		}
		ab->dev[i].found = true;
	}
	*out = &ab->base;
	return 0;
}

static int agent_of(struct hsa_backend *ab, const struct spm_device *dev, hsa_agent_t *agent)
{
	for (size_t i = 0; i < ab->ndev; i++) {
		if (ab->dev[i].node == dev->node) {
			*agent = ab->dev[i].agent;
			return 0;
		}
	}
	return -ENODEV;
}

static int hsa_acquire(struct spm_backend *b, const struct spm_device *dev)
{
	hsa_agent_t agent;
	int r = agent_of(to_ab(b), dev, &agent);
	return r ? r : hsa_result(to_ab(b)->h, to_ab(b)->h->spm_acquire(agent), "hsa_amd_spm_acquire");
}

static int hsa_release(struct spm_backend *b, const struct spm_device *dev)
{
	hsa_agent_t agent;
	int r = agent_of(to_ab(b), dev, &agent);
	return r ? r : hsa_result(to_ab(b)->h, to_ab(b)->h->spm_release(agent), "hsa_amd_spm_release");
}

static int hsa_set_dest(struct spm_backend *b, const struct spm_device *dev, void *buf,
			uint32_t size, uint32_t *timeout_ms, uint32_t *bytes_copied,
			uint32_t *data_loss)
{
	hsa_agent_t agent;
	int r = agent_of(to_ab(b), dev, &agent);
	if (r)
		return r;
	uint32_t t = *timeout_ms, copied = 0;
	bool loss = false;
	const struct spm_hsa_lib *h = to_ab(b)->h;
	r = hsa_result(h, h->spm_set_dest(agent, size, &t, &copied, buf, &loss), "hsa_amd_spm_set_dest_buffer");
	*timeout_ms = t;
	*bytes_copied = copied;
	*data_loss = loss;
	return r;
}

/* ROCr loaded libhsakmt and opened KFD in hsa_init, so its clock counters work here. */
static int hsa_clock(struct spm_backend *b, const struct spm_device *dev,
		     struct spm_clock_pair *out)
{
	(void)b;
	const struct spm_hsakmt *k = spm_hsakmt_loaded();
	if (!k)
		return -EOPNOTSUPP;
	return spm_hsakmt_clock(k, dev->node, out);
}

static void hsa_close(struct spm_backend *b)
{
	if (!b)
		return;
	free(to_ab(b)); /* ROCr stays initialised for the process (spm_hsa_open) */
}

const struct spm_backend_ops spm_backend_hsa = {
	.name = "hsa",
	.summary = "HSA runtime hsa_amd_spm_* (ROCm >= 5.5), loaded at run time",
	.probe = hsa_probe,
	.open = hsa_open,
	.acquire = hsa_acquire,
	.set_dest = hsa_set_dest,
	.release = hsa_release,
	.clock_counters = hsa_clock,
	.close = hsa_close,
};
