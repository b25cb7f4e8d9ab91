/* SPDX-License-Identifier: MIT */
/*
 * The `rocr` submitter: ROCr's own AQL queue on the GPU's agent, as
 * aqlprofile and rocprofiler submit their PM4 (PROGRAMMING.md 5.3):
 *
 *   hsa_init; the agent matched to the KFD node (hsa_lib.h); a small
 *   single-producer queue; the IB in the fine-grained system pool (never
 *   VRAM: it is written by the CPU every submission and read once by the
 *   CP); per submission: IB <- program, signal <- 1, slot reserved, bytes
 *   4..63 then dword 0 with release order, doorbell <- packet index, wait
 *   for the signal to drop below 1 (ROCr sleeps in KFD's WAIT_EVENTS).
 *
 * A submission that does not complete in time leaves the packet in the
 * ring; the queue is then abandoned (every later submit says so), because
 * a CP stuck on a packet runs nothing behind it.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "spm/hsa_lib.h"
#include "spm/pm4.h"
#include "spm/submit.h"

#define ROCR_QUEUE_PACKETS 64u
#define ROCR_IB_GRANULE 4096u

struct spm_submitter {
	const struct spm_hsa_lib *h;
	struct spm_device dev;
	hsa_agent_t agent, cpu;
	hsa_amd_memory_pool_t pool;
	hsa_queue_t *q;
	hsa_signal_t sig;
	uint32_t *ib;
	size_t ib_bytes;
	uint64_t freq;              /* HSA timestamp ticks per second */
	char agent_name[64];
	bool broken;
	char broken_why[SPM_ERRLEN];
	_Atomic int queue_error;    /* hsa_status_t from ROCr's queue error callback */
};

struct pool_find {
	const struct spm_hsa_lib *h;
	bool found;
	hsa_amd_memory_pool_t pool;
};

/* The CPU agent's fine-grained, runtime-allocatable global pool: host memory every agent can read. */
static hsa_status_t find_pool(hsa_amd_memory_pool_t p, void *data)
{
	struct pool_find *f = data;
	hsa_amd_segment_t seg;
	uint32_t flags = 0;
	bool alloc = false;
	if (f->found || f->h->f.hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg) ||
	    seg != HSA_AMD_SEGMENT_GLOBAL ||
	    f->h->f.hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc) ||
	    !alloc || f->h->f.hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags) ||
	    !(flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED))
		return HSA_STATUS_SUCCESS;
	f->pool = p;
	f->found = true;
	return HSA_STATUS_SUCCESS;
}

struct cpu_find {
	const struct spm_hsa_lib *h;
	bool found;
	hsa_agent_t agent;
};

static hsa_status_t find_cpu(hsa_agent_t a, void *data)
{
	struct cpu_find *f = data;
	hsa_device_type_t t;
	if (!f->found && f->h->f.hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t) == HSA_STATUS_SUCCESS &&
	    t == HSA_DEVICE_TYPE_CPU) {
		f->agent = a;
		f->found = true;
	}
	return HSA_STATUS_SUCCESS;
}

static void queue_error(hsa_status_t st, hsa_queue_t *q, void *data)
{
	(void)q;
	struct spm_submitter *s = data;
	atomic_store(&s->queue_error, (int)st);
}

/* An IB of at least `bytes`, in the fine-grained pool, readable by the GPU agent. */
static int ib_reserve(struct spm_submitter *s, size_t bytes, char *err, size_t errlen)
{
	if (bytes <= s->ib_bytes)
		return 0;
	size_t want = (bytes + ROCR_IB_GRANULE - 1) / ROCR_IB_GRANULE * ROCR_IB_GRANULE;
	void *p = NULL;
	hsa_status_t st = s->h->f.hsa_amd_memory_pool_allocate(s->pool, want, 0, &p);
	if (st == HSA_STATUS_SUCCESS)
		st = s->h->f.hsa_amd_agents_allow_access(1, &s->agent, NULL, p);
	if (st != HSA_STATUS_SUCCESS) {
		if (p)
			s->h->f.hsa_amd_memory_pool_free(p);
		return spmtap_seterr(err, errlen, ENOMEM,
				     "cannot place a %zu-byte indirect buffer in ROCr's fine-grained system pool: %s",
				     want, spm_hsa_status(s->h, st));
	}
	if (s->ib)
		s->h->f.hsa_amd_memory_pool_free(s->ib);
	s->ib = p;
	s->ib_bytes = want;
	return 0;
}

static void rocr_destroy(struct spm_submitter *s)
{
	if (!s)
		return;
	if (s->q)
		s->h->f.hsa_queue_destroy(s->q);
	if (s->sig.handle)
		s->h->f.hsa_signal_destroy(s->sig);
	if (s->ib)
		s->h->f.hsa_amd_memory_pool_free(s->ib);
	free(s); /* ROCr stays initialised for the process (spm_hsa_open) */
}

static int rocr_submit(struct spm_submitter *s, const uint32_t *dw, size_t n, uint32_t timeout_ms, char *err,
		       size_t errlen);

static int rocr_create(struct spm_submitter **out, const struct spm_device *dev, char *err, size_t errlen)
{
	*out = NULL;
	const struct spm_hsa_lib *h;
	int rc = spm_hsa_open(&h, err, errlen);
	if (rc)
		return rc;
	struct spm_submitter *s = calloc(1, sizeof(*s));
	if (!s)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	s->h = h;
	s->dev = *dev;
	hsa_status_t st;
	rc = spm_hsa_agent_for(h, dev, &s->agent, err, errlen);
	if (rc)
		goto fail;
	h->f.hsa_agent_get_info(s->agent, HSA_AGENT_INFO_NAME, s->agent_name);
	struct cpu_find cf = { .h = h };
	struct pool_find pf = { .h = h };
	h->f.hsa_iterate_agents(find_cpu, &cf);
	if (cf.found)
		h->f.hsa_amd_agent_iterate_memory_pools(cf.agent, find_pool, &pf);
	if (!pf.found) {
		rc = spmtap_seterr(err, errlen, ENODEV,
				   "ROCr (%s) offers no fine-grained system memory pool for the indirect buffer",
				   h->version);
		goto fail;
	}
	s->cpu = cf.agent;
	s->pool = pf.pool;
	if (h->f.hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &s->freq) != HSA_STATUS_SUCCESS || !s->freq)
		s->freq = 1000000000ull;
	st = h->f.hsa_signal_create(1, 0, NULL, &s->sig);
	if (st != HSA_STATUS_SUCCESS) {
		rc = spmtap_seterr(err, errlen, ENOMEM, "hsa_signal_create: %s", spm_hsa_status(h, st));
		goto fail;
	}
	errno = 0;
	st = h->f.hsa_queue_create(s->agent, ROCR_QUEUE_PACKETS, HSA_QUEUE_TYPE_SINGLE, queue_error, s, UINT32_MAX,
				   UINT32_MAX, &s->q);
	if (st != HSA_STATUS_SUCCESS) {
		/* ROCr folds the ioctl's failure into its status; errno is the last word from KFD. */
		int e = errno;
		char label[96];
		rc = spmtap_seterr(err, errlen, e ? e : EIO,
				   "hsa_queue_create (%u packets) on %s failed: %s (errno %s: %s)", ROCR_QUEUE_PACKETS,
				   spm_device_label(dev, label, sizeof(label)), spm_hsa_status(h, st),
				   e ? strerrorname_np(e) : "0", e ? strerror(e) : "none reported");
		s->q = NULL;
		goto fail;
	}
	rc = ib_reserve(s, ROCR_IB_GRANULE, err, errlen);
	if (rc)
		goto fail;
	static const uint32_t nop = SPM_PM4_NOP1;
	rc = rocr_submit(s, &nop, 1, SPM_SUBMIT_NOP_TIMEOUT_MS, err, errlen);
	if (rc)
		goto fail;
	*out = s;
	return 0;
fail:
	rocr_destroy(s);
	return rc;
}

static int rocr_submit(struct spm_submitter *s, const uint32_t *dw, size_t n, uint32_t timeout_ms, char *err,
		       size_t errlen)
{
	if (!s || (!dw && n) || n > 0xFFFFF)
		return spmtap_seterr(err, errlen, EINVAL, "no submitter, or a program of %zu dwords (at most %u)", n,
				     0xFFFFFu);
	if (s->broken)
		return spmtap_seterr(err, errlen, EIO, "%s", s->broken_why);
	int rc = ib_reserve(s, n * 4, err, errlen);
	if (rc)
		return rc;
	memcpy(s->ib, dw, n * 4);
	const struct spm_hsa_lib *h = s->h;
	h->f.hsa_signal_store_relaxed(s->sig, 1);
	uint64_t t0 = spm_submit_now_ns(), limit = (uint64_t)timeout_ms * 1000000ull;
	uint64_t idx = h->f.hsa_queue_add_write_index_scacq_screl(s->q, 1);
	char label[96];
	spm_device_label(&s->dev, label, sizeof(label));
	/* A single-producer queue drained synchronously has room; a stuck one is reported, not spun on. */
	while (idx - h->f.hsa_queue_load_read_index_scacquire(s->q) >= s->q->size) {
		if (spm_submit_now_ns() - t0 > limit) {
			s->broken = true;
			snprintf(s->broken_why, sizeof(s->broken_why),
				 "ROCr queue %llu on %s is full and its command processor takes nothing (read index "
				 "%llu, packet %llu)",
				 (unsigned long long)s->q->id, label,
				 (unsigned long long)h->f.hsa_queue_load_read_index_scacquire(s->q),
				 (unsigned long long)idx);
			return spmtap_seterr(err, errlen, ETIMEDOUT, "%s", s->broken_why);
		}
	}
	uint32_t pkt[16];
	spm_pm4_aql_packet(pkt, (uint64_t)(uintptr_t)s->ib, (uint32_t)n, s->sig.handle);
	uint32_t *slot = (uint32_t *)((char *)s->q->base_address + (idx % s->q->size) * 64);
	memcpy(slot + 1, pkt + 1, 60);
	__atomic_store_n(slot, pkt[0], __ATOMIC_RELEASE);
	h->f.hsa_signal_store_screlease(s->q->doorbell_signal, (hsa_signal_value_t)idx);

	uint64_t ticks = (uint64_t)((double)timeout_ms * 1e-3 * (double)s->freq);
	hsa_signal_value_t v = h->f.hsa_signal_wait_scacquire(s->sig, HSA_SIGNAL_CONDITION_LT, 1, ticks,
							       HSA_WAIT_STATE_BLOCKED);
	int qerr = atomic_load(&s->queue_error);
	if (v < 1 && !qerr)
		return 0;
	s->broken = true;
	if (qerr)
		snprintf(s->broken_why, sizeof(s->broken_why),
			 "ROCr queue %llu on %s reported an error on packet %llu (PM4 IB of %zu dwords at %p): %s",
			 (unsigned long long)s->q->id, label, (unsigned long long)idx, n, (void *)s->ib,
			 spm_hsa_status(h, (hsa_status_t)qerr));
	else
		snprintf(s->broken_why, sizeof(s->broken_why),
			 "no completion within %u ms: ROCr queue %llu on %s, packet %llu (PM4 IB of %zu dwords at "
			 "%p), read index %llu; the command processor did not finish it, so the queue is abandoned",
			 timeout_ms, (unsigned long long)s->q->id, label, (unsigned long long)idx, n, (void *)s->ib,
			 (unsigned long long)h->f.hsa_queue_load_read_index_scacquire(s->q));
	return spmtap_seterr(err, errlen, qerr ? EIO : ETIMEDOUT, "%s", s->broken_why);
}

static void rocr_describe(const struct spm_submitter *s, char *buf, size_t len)
{
	const char *ovr = getenv("HSA_OVERRIDE_GFX_VERSION");
	char note[160] = "";
	if (ovr && *ovr && strcmp(s->agent_name, s->dev.gfx))
		snprintf(note, sizeof(note), "; ROCr sees a %s because HSA_OVERRIDE_GFX_VERSION=%.16s, spmtap plans "
			 "for %s from sysfs", s->agent_name, ovr, s->dev.gfx);
	snprintf(buf, len, "%s, agent %s (KFD node %u), queue %llu of %u packets%s", s->h->version, s->agent_name,
		 s->dev.node, (unsigned long long)s->q->id, s->q->size, note);
}

const struct spm_submitter_ops spm_submitter_rocr = {
	.name = "rocr",
	.summary = "ROCr AQL queue (hsa_queue_create), libhsa-runtime64 loaded at run time",
	.create = rocr_create,
	.submit = rocr_submit,
	.describe = rocr_describe,
	.destroy = rocr_destroy,
};
