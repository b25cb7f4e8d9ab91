/* SPDX-License-Identifier: MIT */
/* Arm a throwaway buffer, start the feeder, then program (prime.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/lib/prime.h"
#include "log.h"


int prime_start(struct prime *p, struct spm_stream *s, const struct spm_device *dev,
		const struct spm_submitter_ops *sops, struct spm_submitter *sub,
		const uint32_t *start, size_t ndw, const struct feeder_opts *fo, char *err,
		size_t errlen)
{
	memset(p, 0, sizeof(*p));
	/*
	 * Gen B regions that hold a whole kernel ring: the flush into it must take
	 * every pre-program byte, or the rest would reach the feeder's buffer 1.
	 * Only the pages the kernel writes are ever touched.
	 */
	uint64_t fsize = fo->buffer_size ? fo->buffer_size : feeder_default_size(dev->num_xcc);
	uint64_t want = (uint64_t)dev->num_xcc * (SPM_KERNEL_RING_BYTES + 64);
	uint32_t size = feeder_round_size(want > fsize ? want : fsize, dev->num_xcc, NULL, 0);
	p->junk = calloc(1, size);
	if (!p->junk)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	struct spm_retired r;
	int rc = spm_stream_rotate(s, p->junk, size, 0, &r, err, errlen);
	if (rc < 0) {
		prime_free(p);
		return rc;
	}
	rc = feeder_start(&p->f, s, dev, fo, err, errlen);
	if (rc < 0) {
		/* Stopped, not streaming into memory about to be freed. */
		spm_stream_rotate(s, NULL, size, 0, &r, NULL, 0);
		prime_free(p);
		return rc;
	}
	if (!sops)
		return 0; /* another process programs the counters */
	char e[SPM_ERRLEN] = "";
	rc = sops->submit(sub, start, ndw, SPM_SUBMIT_TIMEOUT_MS, e, sizeof(e));
	if (rc < 0)
		return spmtap_seterr(err, errlen, -rc, "the counter start program (%zu dwords) failed: %s",
				     ndw, e[0] ? e : spmtap_strerror(rc));
	return 0;
}

void prime_free(struct prime *p)
{
	free(p->junk);
	p->junk = NULL;
}
