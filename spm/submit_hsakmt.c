/* SPDX-License-Identifier: MIT */
/*
 * The `hsakmt` submitter: the same AMD_AQL_FORMAT_PM4_IB packet as `rocr`,
 * on an AQL queue made with libhsakmt directly (shared/ref/ROCR-QUEUE.md
 * Q4).  It exists for GPUs the installed ROCr does not know: Debian's ROCr
 * 5.2.3 drops gfx942 (MI300), libhsakmt validates no ISA.
 *
 * What ROCr would own, this file owns, in host memory the GPU can read
 * (hsaKmtAllocMemory on the system node, mapped to the GPU):
 *   page 0    the ring, 64 packets of 64 bytes, headers INVALID;
 *   page 1    read and write dispatch ids at amd_queue_t's offsets (0x80,
 *             0x38), handed to KFD as the queue's read/write pointers;
 *   page 2    an amd_signal_t whose mailbox is a KFD signal event's slot,
 *             so completion raises the event and the waiter sleeps in
 *             hsaKmtWaitOnEvent (WAIT_EVENTS) instead of spinning;
 *   and the indirect buffer, grown as programs need.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "spm/backend_priv.h"
#include "spm/pm4.h"
#include "spm/submit.h"

#define KMT_PACKETS 64u
#define KMT_PAGE 4096u
#define KMT_CTL_BYTES (3 * KMT_PAGE)
#define KMT_WPTR_OFF (KMT_PAGE + 0x38)
#define KMT_RPTR_OFF (KMT_PAGE + 0x80)
#define KMT_SIGNAL_OFF (2 * KMT_PAGE)
#define AQL_HEADER_INVALID 1u

/* amd_signal_t (hsa/amd_hsa_signal.h) as the CP reads it. */
struct kmt_signal {
	int64_t kind;
	int64_t value;
	uint64_t event_mailbox_ptr;
	uint32_t event_id, reserved1;
	uint64_t start_ts, end_ts;
	uint64_t queue_ptr;
	uint32_t reserved3[2];
};
_Static_assert(sizeof(struct kmt_signal) == 64, "amd_signal_t is 64 bytes");

struct spm_submitter {
	const struct spm_hsakmt *k;
	struct spm_device dev;
	bool queued;
	uint8_t *ctl;               /* ring, ids, signal */
	uint32_t *ib;
	size_t ib_bytes;
	HsaEvent *ev;
	HsaQueueResource qr;
	uint64_t next;              /* our write index */
	bool broken;
	char broken_why[SPM_ERRLEN];
};

static uint64_t *wptr(struct spm_submitter *s)
{
	return (uint64_t *)(s->ctl + KMT_WPTR_OFF);
}

static uint64_t *rptr(struct spm_submitter *s)
{
	return (uint64_t *)(s->ctl + KMT_RPTR_OFF);
}

static struct kmt_signal *signal_of(struct spm_submitter *s)
{
	return (struct kmt_signal *)(s->ctl + KMT_SIGNAL_OFF);
}

/* Host memory on the system node, mapped to the GPUs: what the CP reads and writes. */
static int host_alloc(struct spm_submitter *s, size_t bytes, void **out, char *err, size_t errlen)
{
	HsaMemFlags f;
	memset(&f, 0, sizeof(f));
	f.ui32.HostAccess = 1;
	f.ui32.ExecuteAccess = 1;
	f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
	f.ui32.NoNUMABind = 1;
	void *p = NULL;
	HSAuint64 va = 0;
	HSAKMT_STATUS st = s->k->alloc_memory(0, bytes, f, &p);
	if (st == HSAKMT_STATUS_SUCCESS && (st = s->k->map_memory_to_gpu(p, bytes, &va)) != HSAKMT_STATUS_SUCCESS)
		s->k->free_memory(p, bytes);
	if (st != HSAKMT_STATUS_SUCCESS)
		return spmtap_seterr(err, errlen, ENOMEM, "hsaKmtAllocMemory/MapMemoryToGPU of %zu bytes: %s", bytes,
				     spm_hsakmt_status_name(st));
	memset(p, 0, bytes);
	*out = p;
	return 0;
}

static void host_free(struct spm_submitter *s, void *p, size_t bytes)
{
	if (!p)
		return;
	s->k->unmap_memory_to_gpu(p);
	s->k->free_memory(p, bytes);
}

static int ib_reserve(struct spm_submitter *s, size_t bytes, char *err, size_t errlen)
{
	if (bytes <= s->ib_bytes)
		return 0;
	size_t want = (bytes + KMT_PAGE - 1) / KMT_PAGE * KMT_PAGE;
	void *p;
	int rc = host_alloc(s, want, &p, err, errlen);
	if (rc)
		return rc;
	host_free(s, s->ib, s->ib_bytes);
	s->ib = p;
	s->ib_bytes = want;
	return 0;
}

static void kmt_destroy(struct spm_submitter *s)
{
	if (!s)
		return;
	if (s->queued)
		s->k->destroy_queue(s->qr.QueueId);
	if (s->ev)
		s->k->destroy_event(s->ev);
	host_free(s, s->ib, s->ib_bytes);
	host_free(s, s->ctl, KMT_CTL_BYTES);
	free(s); /* KFD stays open for the process (spm_hsakmt_open) */
}

static int kmt_submit(struct spm_submitter *s, const uint32_t *dw, size_t n, uint32_t timeout_ms, char *err,
		      size_t errlen);

static int kmt_create(struct spm_submitter **out, const struct spm_device *dev, char *err, size_t errlen)
{
	*out = NULL;
	const struct spm_hsakmt *k;
	int rc = spm_hsakmt_open(&k, true, err, errlen);
	if (rc)
		return rc;
	if (!k->has_queues)
		return spmtap_seterr(err, errlen, ENOSYS, "%s has no user-queue API (hsaKmtCreateQueue and friends)",
				     SPM_HSAKMT_SONAME);
	struct spm_submitter *s = calloc(1, sizeof(*s));
	if (!s)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	s->k = k;
	s->dev = *dev;
	HSAKMT_STATUS st;
	void *ctl;
	rc = host_alloc(s, KMT_CTL_BYTES, &ctl, err, errlen);
	if (rc)
		goto fail;
	s->ctl = ctl;
	for (uint32_t i = 0; i < KMT_PACKETS; i++)
		*(uint16_t *)(s->ctl + 64 * i) = AQL_HEADER_INVALID;
	HsaEventDescriptor ed;
	memset(&ed, 0, sizeof(ed));
	ed.EventType = HSA_EVENTTYPE_SIGNAL;
	ed.NodeId = dev->node;
	st = k->create_event(&ed, false, false, &s->ev);
	if (st != HSAKMT_STATUS_SUCCESS) {
		s->ev = NULL;
		rc = spmtap_seterr(err, errlen, ENOMEM, "hsaKmtCreateEvent: %s", spm_hsakmt_status_name(st));
		goto fail;
	}
	/* As ROCr's interrupt signals: the event's slot is the mailbox, its id what the CP writes there. */
	struct kmt_signal *sig = signal_of(s);
	sig->kind = 1;
	sig->event_mailbox_ptr = s->ev->EventData.HWData2;
	sig->event_id = s->ev->EventId;
	s->qr.Queue_read_ptr_aql = rptr(s);
	s->qr.Queue_write_ptr_aql = wptr(s);
	errno = 0;
	st = k->create_queue(dev->node, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL, s->ctl,
			     KMT_PACKETS * 64, NULL, &s->qr);
	if (st != HSAKMT_STATUS_SUCCESS) {
		int e = errno;
		char label[96];
		rc = spmtap_seterr(err, errlen, e ? e : EIO,
				   "hsaKmtCreateQueue (AQL, %u packets) on %s failed: %s (errno %s: %s)", KMT_PACKETS,
				   spm_device_label(dev, label, sizeof(label)), spm_hsakmt_status_name(st),
				   e ? strerrorname_np(e) : "0", e ? strerror(e) : "none reported");
		goto fail;
	}
	s->queued = true;
	rc = ib_reserve(s, KMT_PAGE, err, errlen);
	if (rc)
		goto fail;
	static const uint32_t nop = SPM_PM4_NOP1;
	rc = kmt_submit(s, &nop, 1, SPM_SUBMIT_NOP_TIMEOUT_MS, err, errlen);
	if (rc)
		goto fail;
	*out = s;
	return 0;
fail:
	kmt_destroy(s);
	return rc;
}

static int kmt_submit(struct spm_submitter *s, const uint32_t *dw, size_t n, uint32_t timeout_ms, char *err,
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
	struct kmt_signal *sig = signal_of(s);
	__atomic_store_n(&sig->value, 1, __ATOMIC_RELEASE);
	/* Synchronous submission: the previous packet completed, so the ring has room. */
	uint64_t idx = s->next++;
	__atomic_store_n(wptr(s), s->next, __ATOMIC_RELEASE);
	uint32_t pkt[16];
	spm_pm4_aql_packet(pkt, (uint64_t)(uintptr_t)s->ib, (uint32_t)n, (uint64_t)(uintptr_t)sig);
	uint32_t *slot = (uint32_t *)(s->ctl + (idx % KMT_PACKETS) * 64);
	memcpy(slot + 1, pkt + 1, 60);
	__atomic_store_n(slot, pkt[0], __ATOMIC_RELEASE);
	__atomic_store_n((uint64_t *)s->qr.Queue_DoorBell, idx, __ATOMIC_RELEASE);

	uint64_t deadline = spm_submit_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	while (__atomic_load_n(&sig->value, __ATOMIC_ACQUIRE) > 0) {
		uint64_t now = spm_submit_now_ns();
		if (now >= deadline) {
			char label[96];
			s->broken = true;
			snprintf(s->broken_why, sizeof(s->broken_why),
				 "no completion within %u ms: libhsakmt AQL queue on %s (KFD node %u), packet %llu (PM4 "
				 "IB of %zu dwords at %p), read index %llu; the command processor did not finish it, "
				 "so the queue is abandoned",
				 timeout_ms, spm_device_label(&s->dev, label, sizeof(label)), s->dev.node,
				 (unsigned long long)idx, n, (void *)s->ib,
				 (unsigned long long)__atomic_load_n(rptr(s), __ATOMIC_ACQUIRE));
			return spmtap_seterr(err, errlen, ETIMEDOUT, "%s", s->broken_why);
		}
		uint64_t left_ms = (deadline - now + 999999) / 1000000;
		/* Any outcome re-reads the signal: a timeout, a wake-up, or an event set earlier. */
		s->k->wait_on_event(s->ev, (HSAuint32)(left_ms < 1000 ? left_ms : 1000));
	}
	return 0;
}

static void kmt_describe(const struct spm_submitter *s, char *buf, size_t len)
{
	snprintf(buf, len, "libhsakmt AQL queue on KFD node %u, %u packets, completion event %u", s->dev.node,
		 KMT_PACKETS, s->ev ? s->ev->EventId : 0);
}

const struct spm_submitter_ops spm_submitter_hsakmt = {
	.name = "hsakmt",
	.summary = "libhsakmt AQL queue (hsaKmtCreateQueue), for GPUs the installed ROCr does not know",
	.create = kmt_create,
	.submit = kmt_submit,
	.describe = kmt_describe,
	.destroy = kmt_destroy,
};
