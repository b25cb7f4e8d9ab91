/* SPDX-License-Identifier: MIT */
/*
 * Test helper: an SDMA queue made with the real libhsakmt hsaKmtCreateQueue
 * (HSA_QUEUE_SDMA, no ROCr) on the emulated GPU with the given gpu_id, SDMA
 * v4 packets written by hand in the layouts ROCr 5.2.x's BlitSdmaV4 uses
 * (byte ring, 64-bit monotonic byte read/write pointers, the write pointer
 * rung on the doorbell).  It checks what it can see itself (bytes, fences,
 * timestamps, the event); tests/test_emu_sdma.c checks the truth lines.
 * Usage: emu_sdma_kmt GPU_ID MODE
 *   copy     host->VRAM->host round trips: aligned, misaligned, and beyond one packet's limit
 *            (split as ROCr splits), each command as ROCr frames it (timestamps, HDP flush,
 *            copies, ATOMIC decrement, mailbox FENCE + TRAP); prints "copy BYTES START END" per command
 *   fill     CONST_FILL of VRAM read back through a copy
 *   poll     a POLL_REGMEM holds the queue until the CPU writes the value
 *   giveup   a POLL_REGMEM never met: retry_count 3 halts the queue; 0xfff waits, its queue still
 *            destroyed and the process still exits with one left waiting
 *   busy     a long copy on one queue (run with a low SPMTAP_EMU_SDMA_GBPS) and a fence on a second
 *   wrap     300 commands through a 4 KiB ring (packets straddle its end)
 *   bad      an unknown opcode: not run, the queue halted, the error names it; a copy from a GPU VA
 *            in no BO: a page fault, the queue halted
 * Prints "ok" lines, "FAIL ..." lines and exits 1 on any failure.
 */
#include <fcntl.h>
#include <hsakmt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "kmt.h"
#include <unistd.h>

#include "emu/common/readback.h"

static int failures;
#define CHECK(c, ...)                                 \
	do {                                          \
		if (c) {                              \
			printf("ok: " __VA_ARGS__);   \
		} else {                              \
			failures++;                   \
			printf("FAIL: " __VA_ARGS__); \
		}                                     \
		printf("\n");                         \
	} while (0)

/* SDMA v4 opcodes and fields (amdgpu vega10_sdma_pkt_open.h; ROCr amd_blit_sdma.h). */
#define OP_NOP 0u
#define OP_COPY 1u
#define OP_FENCE 5u
#define OP_TRAP 6u
#define OP_POLL_REGMEM 8u
#define OP_ATOMIC 10u
#define OP_CONST_FILL 11u
#define OP_TIMESTAMP 13u
#define MAX_COPY 0x3fffe0u /* ROCr's kMaxSingleCopySize */

struct sq {
	uint8_t *ring;
	uint64_t size;
	volatile uint64_t *rptr, *wptr, *doorbell;
	uint64_t wr; /* next byte index to write */
	HsaQueueResource qr;
};

static uint32_t gpu_id, node;
static int kfd = -1;

/* VRAM the CPU cannot touch (its mapping is PROT_NONE): only the SDMA engine reaches it. */
static void *vram_alloc(size_t size)
{
	HsaMemFlags f = { 0 };
	void *p = NULL;
	uint64_t va = 0;
	f.ui32.NonPaged = 1;
	f.ui32.HostAccess = 0;
	f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
	if (hsaKmtAllocMemory(node, size, f, &p) || hsaKmtMapMemoryToGPU(p, size, &va))
		return NULL;
	return p;
}

static int make_sq(struct sq *q, uint64_t size)
{
	q->size = size;
	q->ring = kmt_host_alloc(size);
	if (!q->ring)
		return -1;
	memset(&q->qr, 0, sizeof(q->qr));
	if (hsaKmtCreateQueue(node, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_MAXIMUM, q->ring, size, NULL, &q->qr))
		return -1;
	q->rptr = (uint64_t *)q->qr.Queue_read_ptr;
	q->wptr = (uint64_t *)q->qr.Queue_write_ptr;
	q->doorbell = (uint64_t *)q->qr.Queue_DoorBell;
	q->wr = *q->wptr;
	return 0;
}

static uint32_t kfd_qid(const struct sq *q)
{
	return *(const uint32_t *)(uintptr_t)q->qr.QueueId;
}

/* Appends dwords at the write index (wrapping at the ring's end, as the engine reads them). */
static void put(struct sq *q, const uint32_t *dw, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		memcpy(q->ring + ((q->wr + 4 * i) & (q->size - 1)), &dw[i], 4);
	}
	q->wr += 4ull * n;
}

/* Publishes: the write pointer, then the doorbell (ROCr's UpdateWriteAndDoorbellRegister). */
static void ring_bell(struct sq *q)
{
	__atomic_store_n(q->wptr, q->wr, __ATOMIC_RELEASE);
	__atomic_store_n(q->doorbell, q->wr, __ATOMIC_RELEASE);
}

static void copy_pkt(struct sq *q, uint64_t dst, uint64_t src, uint32_t n)
{
	uint32_t p[7] = { OP_COPY, n - 1, 0, (uint32_t)src, (uint32_t)(src >> 32), (uint32_t)dst, (uint32_t)(dst >> 32) };
	put(q, p, 7);
}

/* Split at ROCr's limit, as BuildCopyCommand does. */
static unsigned copy_cmd(struct sq *q, void *dst, const void *src, uint64_t n)
{
	unsigned k = 0;
	for (uint64_t done = 0; done < n; k++) {
		uint32_t c = (uint32_t)(n - done < MAX_COPY ? n - done : MAX_COPY);
		copy_pkt(q, (uint64_t)(uintptr_t)dst + done, (uint64_t)(uintptr_t)src + done, c);
		done += c;
	}
	return k;
}

static void fence_pkt(struct sq *q, volatile void *addr, uint32_t v)
{
	uint64_t a = (uint64_t)(uintptr_t)addr;
	uint32_t p[4] = { OP_FENCE, (uint32_t)a, (uint32_t)(a >> 32), v };
	put(q, p, 4);
}

static void ts_pkt(struct sq *q, volatile uint64_t *addr)
{
	uint64_t a = (uint64_t)(uintptr_t)addr;
	uint32_t p[3] = { OP_TIMESTAMP | 2u << 8, (uint32_t)a, (uint32_t)(a >> 32) };
	put(q, p, 3);
}

static void atomic_dec_pkt(struct sq *q, volatile int64_t *addr)
{
	uint64_t a = (uint64_t)(uintptr_t)addr;
	uint32_t p[8] = { OP_ATOMIC | 47u << 25, (uint32_t)a, (uint32_t)(a >> 32), 0xFFFFFFFFu, 0xFFFFFFFFu, 0, 0, 0 };
	put(q, p, 8);
}

/* retry: DW5's retry_count (27:16); ROCr's BuildPollCommand asks 0xfff. */
static void poll_pkt(struct sq *q, volatile uint32_t *addr, uint32_t ref, uint32_t retry)
{
	uint64_t a = (uint64_t)(uintptr_t)addr;
	/* mem_poll, func 3 (equal), mask all, interval 4 */
	uint32_t p[6] = { OP_POLL_REGMEM | 3u << 28 | 1u << 31, (uint32_t)a, (uint32_t)(a >> 32), ref, 0xFFFFFFFFu,
			  4u | (retry & 0xFFFu) << 16 };
	put(q, p, 6);
}

/* ROCr's HDP flush: the fixed SDMA_PKT_HDP_FLUSH (amd_blit_sdma.h), a POLL_REGMEM form without memory. */
static void hdp_flush_pkt(struct sq *q)
{
	static const uint32_t p[6] = { 0x8, 0x0, 0x80000000u, 0x0, 0x0, 0x0 };
	put(q, p, 6);
}

static void fill_pkt(struct sq *q, void *dst, uint32_t value, uint32_t bytes)
{
	uint64_t a = (uint64_t)(uintptr_t)dst;
	/* fillsize 2 (dwords); count as ROCr writes it: (dwords - 1) * 4 */
	uint32_t p[5] = { OP_CONST_FILL | 2u << 30, (uint32_t)a, (uint32_t)(a >> 32), value, bytes - 4 };
	put(q, p, 5);
}

static void trap_pkt(struct sq *q, uint32_t event_id)
{
	uint32_t p[2] = { OP_TRAP, event_id };
	put(q, p, 2);
}

static int wait_u32(volatile uint32_t *v, uint32_t want, double secs)
{
	double t0 = kmt_now_s();
	while (__atomic_load_n(v, __ATOMIC_ACQUIRE) != want)
		if (kmt_now_s() - t0 > secs)
			return -1;
	return 0;
}

/* amd_signal_t's first fields, in host memory. */
struct sig {
	int64_t kind;
	volatile int64_t value;
	uint64_t mailbox;
	uint32_t event_id, r1;
	volatile uint64_t start_ts, end_ts;
};

static void pattern(uint8_t *p, uint64_t n, uint32_t seed)
{
	for (uint64_t i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 2654435761u + seed) >> 13);
}

/* One host->VRAM->host round trip of n bytes at the given offsets, framed as ROCr frames a command. */
static void round_trip(struct sq *q, struct sig *s, HsaEvent *ev, uint8_t *h_src, uint8_t *h_dst, uint8_t *v,
		       uint64_t n, unsigned soff, unsigned voff, unsigned doff)
{
	pattern(h_src + soff, n, (uint32_t)n);
	memset(h_dst, 0xEE, n + doff + 64);
	/* Command 1: host -> VRAM, with timestamps, HDP flush, signal decrement and the event. */
	s->value = 1;
	s->start_ts = s->end_ts = 0;
	ts_pkt(q, &s->start_ts);
	hdp_flush_pkt(q);
	unsigned k1 = copy_cmd(q, v + voff, h_src + soff, n);
	ts_pkt(q, &s->end_ts);
	atomic_dec_pkt(q, &s->value);
	fence_pkt(q, (volatile uint32_t *)(uintptr_t)ev->EventData.HWData2, ev->EventId);
	trap_pkt(q, ev->EventId);
	ring_bell(q);
	HSAKMT_STATUS w = hsaKmtWaitOnEvent(ev, 5000);
	CHECK(w == HSAKMT_STATUS_SUCCESS && s->value == 0, "%llu bytes to VRAM+%u in %u packet(s): event fired, signal %lld",
	      (unsigned long long)n, voff, k1, (long long)s->value);
	CHECK(s->end_ts > s->start_ts && s->start_ts, "timestamps %llu..%llu", (unsigned long long)s->start_ts,
	      (unsigned long long)s->end_ts);
	printf("copy %llu %llu %llu\n", (unsigned long long)n, (unsigned long long)s->start_ts,
	       (unsigned long long)s->end_ts);
	/* Command 2: VRAM -> host, completion by FENCE (ROCr's no-atomics path). */
	static volatile uint32_t *done;
	if (!done)
		done = kmt_host_alloc(4096);
	*done = 0;
	unsigned k2 = copy_cmd(q, h_dst + doff, v + voff, n);
	fence_pkt(q, done, 0x2015);
	ring_bell(q);
	CHECK(wait_u32(done, 0x2015, 5) == 0, "%llu bytes back from VRAM in %u packet(s): fence written",
	      (unsigned long long)n, k2);
	CHECK(memcmp(h_dst + doff, h_src + soff, n) == 0, "%llu bytes came back equal", (unsigned long long)n);
	int guard = 1;
	for (unsigned i = 0; i < doff; i++)
		guard &= h_dst[i] == 0xEE;
	for (unsigned i = 0; i < 64; i++)
		guard &= h_dst[doff + n + i] == 0xEE;
	CHECK(guard, "no byte written outside [%u, %u+%llu)", doff, doff, (unsigned long long)n);
}

static HsaEvent *make_event(void)
{
	HsaEventDescriptor d = { 0 };
	d.EventType = HSA_EVENTTYPE_SIGNAL;
	d.NodeId = node;
	d.SyncVar.SyncVar.UserData = NULL;
	HsaEvent *ev = NULL;
	if (hsaKmtCreateEvent(&d, false, false, &ev))
		return NULL;
	return ev;
}

static int copy_mode(void)
{
	struct sq q;
	CHECK(make_sq(&q, 1 << 20) == 0, "hsaKmtCreateQueue(HSA_QUEUE_SDMA) on node %u, doorbell %p, rptr %llu",
	      node, (void *)q.doorbell, q.rptr ? (unsigned long long)*q.rptr : 0ull);
	HsaEvent *ev = make_event();
	CHECK(ev != NULL && ev->EventData.HWData2, "event %u, mailbox 0x%llx", ev ? ev->EventId : 0,
	      ev ? (unsigned long long)ev->EventData.HWData2 : 0ull);
	if (failures)
		return 1;
	const uint64_t big = 3ull * MAX_COPY + 12345; /* 4 packets, the last one odd-sized */
	const uint64_t bufsz = (big + 8191) & ~4095ull; /* libhsakmt wants whole pages */
	uint8_t *hs = kmt_host_alloc(bufsz), *hd = kmt_host_alloc(bufsz), *v = vram_alloc(bufsz);
	struct sig *s = kmt_host_alloc(4096);
	CHECK(hs && hd && v && s, "buffers: host %p %p, VRAM %p", (void *)hs, (void *)hd, (void *)v);
	if (failures)
		return 1;
	round_trip(&q, s, ev, hs, hd, v, 4096, 0, 0, 0);
	round_trip(&q, s, ev, hs, hd, v, 1000003, 3, 1, 7);
	round_trip(&q, s, ev, hs, hd, v, big, 1, 2, 3);
	CHECK(*q.rptr == q.wr, "read pointer %llu = write pointer %llu", (unsigned long long)*q.rptr,
	      (unsigned long long)q.wr);
	CHECK(hsaKmtDestroyQueue(q.qr.QueueId) == HSAKMT_STATUS_SUCCESS, "hsaKmtDestroyQueue");
	return failures != 0;
}

static int fill_mode(void)
{
	struct sq q;
	CHECK(make_sq(&q, 1 << 16) == 0, "SDMA queue");
	uint64_t n = 3ull << 20; /* 3 MiB: ROCr's fill limit is 0x3fffe0 per packet; one packet here */
	uint32_t *v = vram_alloc(n), *h = kmt_host_alloc(n + 4096);
	volatile uint32_t *done = kmt_host_alloc(4096);
	CHECK(v && h && done, "buffers");
	if (failures)
		return 1;
	memset(h, 0x11, n + 4096);
	fill_pkt(&q, v, 0xA5C3F00Du, (uint32_t)n);
	fill_pkt(&q, v + 1, 0x01020304u, 8); /* dwords 1 and 2 */
	copy_cmd(&q, h, v, n);
	fence_pkt(&q, done, 7);
	ring_bell(&q);
	CHECK(wait_u32(done, 7, 5) == 0, "fill + copy back done");
	int ok = h[0] == 0xA5C3F00Du && h[1] == 0x01020304u && h[2] == 0x01020304u && h[3] == 0xA5C3F00Du;
	for (uint64_t i = 4; i < n / 4; i++)
		ok &= h[i] == 0xA5C3F00Du;
	ok &= h[n / 4] == 0x11111111u;
	CHECK(ok, "VRAM holds the fills, host untouched past the end");
	hsaKmtDestroyQueue(q.qr.QueueId);
	return failures != 0;
}

static int poll_mode(void)
{
	struct sq q;
	CHECK(make_sq(&q, 1 << 16) == 0, "SDMA queue");
	volatile uint32_t *m = kmt_host_alloc(4096);
	if (failures || !m)
		return 1;
	m[0] = 1; /* the gate: the poll waits for 0 */
	poll_pkt(&q, &m[0], 0, 0xFFF);
	fence_pkt(&q, &m[1], 0xF00D);
	ring_bell(&q);
	usleep(200000);
	CHECK(m[1] == 0 && *q.rptr == q.wr - 40, "held at the POLL_REGMEM (fence %x, rptr %llu)", m[1],
	      (unsigned long long)*q.rptr);
	__atomic_store_n(&m[0], 0, __ATOMIC_RELEASE);
	CHECK(wait_u32(&m[1], 0xF00D, 5) == 0, "released by the memory write: the fence follows");
	hsaKmtDestroyQueue(q.qr.QueueId);
	return failures != 0;
}

/* The queue's error state (EMU_IOC_QUEUE_ERR) once halted, waiting up to secs; -1 when it never halts. */
static int wait_halted(const struct sq *q, struct emu_queue_err_args *e, double secs)
{
	double t0 = kmt_now_s();
	for (;;) {
		*e = (struct emu_queue_err_args){ .queue_id = kfd_qid(q) };
		if (ioctl(kfd, EMU_IOC_QUEUE_ERR, e) == 0 && e->halted)
			return 0;
		if (kmt_now_s() - t0 > secs)
			return -1;
		usleep(1000);
	}
}

/*
 * A POLL_REGMEM whose condition never holds: with retry_count 3 the queue halts at it with an error and
 * nothing after it runs; with 0xfff it waits on, and neither destroying its queue nor exiting with one
 * more such queue left (the emulator's teardown) is held up by it.
 */
static int giveup_mode(void)
{
	struct sq q, q2, q3;
	CHECK(make_sq(&q, 1 << 16) == 0 && make_sq(&q2, 1 << 16) == 0 && make_sq(&q3, 1 << 16) == 0, "SDMA queues");
	volatile uint32_t *m = kmt_host_alloc(4096);
	if (failures || !m)
		return 1;
	m[0] = 1; /* never 0: no poll below ever holds */
	poll_pkt(&q, &m[0], 0, 3);
	fence_pkt(&q, &m[1], 0xF00D);
	ring_bell(&q);
	struct emu_queue_err_args e;
	CHECK(wait_halted(&q, &e, 30) == 0 && e.packet_index == 0 && strstr(e.err, "POLL_REGMEM") &&
		      strstr(e.err, "after 3 retries"),
	      "retry_count 3: queue halted at the poll, error at byte %llu: [%s]", (unsigned long long)e.packet_index,
	      e.err);
	CHECK(m[1] == 0 && *q.rptr == 0, "nothing after the poll ran (fence %x, rptr %llu)", m[1],
	      (unsigned long long)*q.rptr);
	poll_pkt(&q2, &m[0], 0, 0xFFF);
	fence_pkt(&q2, &m[2], 0xF00D);
	ring_bell(&q2);
	poll_pkt(&q3, &m[0], 0, 0xFFF);
	ring_bell(&q3);
	usleep(200000);
	struct emu_queue_err_args e2 = { .queue_id = kfd_qid(&q2) };
	CHECK(ioctl(kfd, EMU_IOC_QUEUE_ERR, &e2) == 0 && !e2.halted && *q2.rptr == 0 && m[2] == 0,
	      "retry_count 0xfff: still waiting at the poll, not halted (rptr %llu) [%s]", (unsigned long long)*q2.rptr,
	      e2.err);
	CHECK(hsaKmtDestroyQueue(q2.qr.QueueId) == HSAKMT_STATUS_SUCCESS, "the waiting queue destroyed");
	CHECK(m[2] == 0, "its fence never ran");
	hsaKmtDestroyQueue(q.qr.QueueId);
	/* q3 is left waiting: the exit's teardown must end it. */
	return failures != 0;
}

/* Two queues: while the first one's long copy is in its modelled time, the second one's fence runs. */
static int busy_mode(void)
{
	struct sq q1, q2;
	CHECK(make_sq(&q1, 1 << 16) == 0 && make_sq(&q2, 1 << 16) == 0, "two SDMA queues");
	const uint64_t n = 3ull << 20; /* one packet */
	uint8_t *a = kmt_host_alloc(n), *v = vram_alloc(n);
	volatile uint32_t *m = kmt_host_alloc(4096);
	if (failures || !a || !v || !m)
		return 1;
	copy_cmd(&q1, v, a, n);
	fence_pkt(&q1, &m[0], 1);
	ring_bell(&q1);
	while (__atomic_load_n(q1.rptr, __ATOMIC_ACQUIRE) == 0) /* the copy has started */
		;
	fence_pkt(&q2, &m[1], 2);
	ring_bell(&q2);
	CHECK(wait_u32(&m[1], 2, 5) == 0, "the second queue's fence ran (first queue's fence %u)", m[0]);
	CHECK(wait_u32(&m[0], 1, 30) == 0, "the first queue's fence ran after its copy");
	hsaKmtDestroyQueue(q1.qr.QueueId);
	hsaKmtDestroyQueue(q2.qr.QueueId);
	return failures != 0;
}

static int wrap_mode(void)
{
	struct sq q;
	CHECK(make_sq(&q, 4096) == 0, "SDMA queue with a 4 KiB ring");
	uint8_t *a = kmt_host_alloc(4096), *b = kmt_host_alloc(4096);
	volatile uint32_t *done = kmt_host_alloc(4096);
	if (failures || !a || !b || !done)
		return 1;
	int ok = 1;
	for (uint32_t i = 1; i <= 300 && ok; i++) {
		a[i % 4096] = (uint8_t)i;
		copy_cmd(&q, b + (i * 7) % 4000, a + i % 4096, 1);
		fence_pkt(&q, done, i); /* 44 bytes a command: every ring pass ends inside a packet */
		ring_bell(&q);
		ok = wait_u32(done, i, 5) == 0 && b[(i * 7) % 4000] == (uint8_t)i;
	}
	CHECK(ok, "300 commands through the ring, %llu bytes (%llu wraps)", (unsigned long long)q.wr,
	      (unsigned long long)(q.wr / 4096));
	hsaKmtDestroyQueue(q.qr.QueueId);
	return failures != 0;
}

static int bad_mode(void)
{
	struct sq q;
	CHECK(make_sq(&q, 1 << 16) == 0, "SDMA queue");
	volatile uint32_t *m = kmt_host_alloc(4096);
	if (failures || !m)
		return 1;
	fence_pkt(&q, &m[0], 1);
	uint64_t at = q.wr;
	uint32_t unknown[2] = { 3u | 0x55u << 8, 0 }; /* opcode 3: no SDMA v4 packet */
	put(&q, unknown, 2);
	fence_pkt(&q, &m[1], 2);
	ring_bell(&q);
	CHECK(wait_u32(&m[0], 1, 5) == 0, "the packet before it ran");
	usleep(200000);
	CHECK(m[1] == 0 && *q.rptr == at, "the unknown opcode did not complete: rptr %llu, later fence %u",
	      (unsigned long long)*q.rptr, m[1]);
	struct emu_queue_err_args e = { .queue_id = kfd_qid(&q) };
	CHECK(ioctl(kfd, EMU_IOC_QUEUE_ERR, &e) == 0 && e.halted && e.packet_index == at && strstr(e.err, "opcode 3"),
	      "queue halted, error at byte %llu: [%s]", (unsigned long long)e.packet_index, e.err);
	/* A copy from a GPU VA that no BO holds: a page fault, not a copy of whatever is there. */
	struct sq q2;
	CHECK(make_sq(&q2, 1 << 16) == 0, "second SDMA queue");
	uint8_t *dst = kmt_host_alloc(4096);
	memset(dst, 0x5A, 64);
	copy_pkt(&q2, (uint64_t)(uintptr_t)dst, 0x10000, 64);
	fence_pkt(&q2, &m[2], 3);
	ring_bell(&q2);
	usleep(200000);
	struct emu_queue_err_args e2 = { .queue_id = kfd_qid(&q2) };
	CHECK(ioctl(kfd, EMU_IOC_QUEUE_ERR, &e2) == 0 && e2.halted && e2.packet_index == 0 &&
		      strstr(e2.err, "COPY_LINEAR") && strstr(e2.err, "0x10000 is not mapped"),
	      "unmapped source: queue halted [%s]", e2.err);
	CHECK(m[2] == 0 && *q2.rptr == 0 && dst[0] == 0x5A && dst[63] == 0x5A, "nothing after it ran, dst untouched");
	hsaKmtDestroyQueue(q2.qr.QueueId);
	hsaKmtDestroyQueue(q.qr.QueueId);
	return failures != 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s GPU_ID MODE\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	gpu_id = (uint32_t)strtoul(argv[1], NULL, 0);
	const char *mode = argv[2];
	if (kmt_open(gpu_id, &kfd, &node))
		return 1;
	int rc = 2;
	if (!strcmp(mode, "copy"))
		rc = copy_mode();
	else if (!strcmp(mode, "fill"))
		rc = fill_mode();
	else if (!strcmp(mode, "poll"))
		rc = poll_mode();
	else if (!strcmp(mode, "giveup"))
		rc = giveup_mode();
	else if (!strcmp(mode, "busy"))
		rc = busy_mode();
	else if (!strcmp(mode, "wrap"))
		rc = wrap_mode();
	else if (!strcmp(mode, "bad"))
		rc = bad_mode();
	else
		printf("FAIL: unknown mode %s\n", mode);
	hsaKmtCloseKFD();
	return rc;
}
