/* SPDX-License-Identifier: MIT */
/*
 * The shared memory between libspmtap-tool.so (collector/tool/, loaded into
 * the application by ROCr through HSA_TOOLS_LIB) and the recording that reads
 * its kernel dispatch records (collector/lib/kernel_reader.c).
 * docs/formats/kernels-csv.md, docs/architecture.md "Kernels".
 *
 * Modelled on the markers' channel (marker_shm.h): `spmtap record -- app`
 * makes a memfd of this layout and hands the app its descriptor in
 * SPMTAP_KERNELS_FD.  Each thread of the tool that writes records (ROCr's
 * async signal thread, in practice one) claims one slot with one atomic add
 * and owns its single-producer ring: a 128-byte record, then a release store
 * of the head.  No lock, no system call, never a wait: a full ring drops the
 * record and counts it in the slot; a thread beyond the last slot counts
 * itself in the header.  The ring length is the recorder's choice
 * (SPMTAP_KERNELS_CHANNEL_EVENTS, a power of two), written in the header
 * before the magic; the rings follow the header, slot after slot.
 */
#ifndef SPMTAP_COLLECTOR_KERNEL_SHM_H
#define SPMTAP_COLLECTOR_KERNEL_SHM_H

#include <stddef.h>
#include <stdint.h>

#define KD_MAGIC 0x314E524B54504Dull /* "MPTKRN1" */
#define KD_VERSION 2u /* 2: the record says its GPU (node) */
#define KD_SLOTS 16u
#define KD_EVENTS_DEFAULT 4096u
#define KD_EVENTS_MAX 65536u
#define KD_NAME 48u /* bytes of a kernel name kept, NUL included */
#define KD_NODE_UNKNOWN 0xffffu
#define KD_ENV_FD "SPMTAP_KERNELS_FD"
#define KD_ENV_EVENTS "SPMTAP_KERNELS_CHANNEL_EVENTS"

/* One completed dispatch. */
struct kd_record {
	uint64_t corr;          /* the tool's correlation id: 1, 2, ... per process, in submission order */
	uint64_t queue_id;      /* hsa_queue_t.id */
	uint64_t index;         /* the packet's index in its queue */
	uint64_t kernel_object; /* the packet's kernel_object (code descriptor address) */
	uint64_t start_ticks;   /* GPU clock ticks the packet processor wrote into the completion signal */
	uint64_t end_ticks;
	uint32_t pid, tid;      /* the application thread that submitted (rang the doorbell) */
	uint32_t grid[3];       /* work-items */
	uint16_t wg[3];         /* work-items per workgroup */
	uint16_t node;          /* the queue's agent: KFD topology node (ROCr's DRIVER_NODE_ID); KD_NODE_UNKNOWN */
	int32_t status;         /* 0 completed; < 0 the tool could not time it (see kernels-csv.md) */
	char name[KD_NAME];     /* symbol name without ".kd", cut to KD_NAME - 1 bytes; "" unknown */
};
_Static_assert(sizeof(struct kd_record) == 128, "two cache lines per record");

struct kd_slot {
	uint32_t claimed;  /* 0 free, 1 taken (set once by its thread) */
	uint32_t pid, tid; /* the owner */
	uint32_t pad0;
	uint64_t head;     /* records written, advanced by the owner (release) */
	uint64_t dropped;  /* records the owner could not write: the ring was full */
	uint8_t pad1[32];
	uint64_t tail;     /* records consumed, advanced by the reader (release) */
	uint8_t pad2[56];
};

struct kd_header {
	uint64_t magic;
	uint32_t version, nslots, nevents, record_bytes;
	uint32_t next_slot;       /* slots handed out so far (may exceed nslots) */
	uint32_t pad0;
	uint64_t threads_refused; /* writer threads that found no free slot: their records are lost, counted */
	uint64_t queues;          /* application queues the tool intercepts */
	uint64_t unnamed;         /* dispatches whose kernel_object no frozen executable named */
	uint64_t untimed;         /* dispatches forwarded without a record: no tool signal could be made */
	struct kd_slot slot[KD_SLOTS];
};

static inline size_t kd_channel_bytes(uint32_t nevents)
{
	return sizeof(struct kd_header) + (size_t)KD_SLOTS * nevents * sizeof(struct kd_record);
}

static inline struct kd_record *kd_ring(struct kd_header *h, uint32_t slot)
{
	return (struct kd_record *)(h + 1) + (size_t)slot * h->nevents;
}

#endif
