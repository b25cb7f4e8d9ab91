/* SPDX-License-Identifier: MIT */
/*
 * Test helper: AQL queues made with the real libhsakmt hsaKmtCreateQueue
 * (no ROCr) on the emulated GPU with the given gpu_id, packets written by
 * hand, completion polled on a hand-made amd_signal_t.
 * Usage: emu_queue_kmt GPU_ID MODE [ARG]
 *   basic        barrier-AND, PM4_IB whose register writes read back on every XCC, memory write
 *   bad          an unknown PM4 opcode in an IB, a kernel dispatch of memory that holds no kernel
 *                descriptor, a reserved packet type: not completed, errors readable and naming them
 *   blit         ROCr 5.2's blit kernels as ROCr 5.2.3 lays them out (legacy amd_kernel_code_t, kernarg):
 *                Fill, CopyAligned and CopyMisaligned change memory; a legacy header that is none
 *                of them is refused by name
 *   kernel       kernel dispatches of a hand-made code-object-v3 descriptor on two queues: each takes
 *                the modelled time, a queue runs in order, the two queues overlap; prints the ticks
 *   hold         print "ready", then submit barriers forever (killed by the test)
 *   wedge        submit a PM4 IB whose WAIT_REG_MEM never succeeds (the CP sits in it holding
 *                the GPU's shared lock; run with SPMTAP_EMU_CP_WAIT_MS large), print "ready",
 *                sleep (killed by the test)
 *   idle MS      one round trip, then MS ms idle: prints "idle_cpu_pct P"
 *   latency N    N barrier round trips: prints "p50_us A p99_us B"
 * Prints "ok" lines, "FAIL ..." lines and exits 1 on any failure.
 */
#include <fcntl.h>
#include <hsakmt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <time.h>

#include "kmt.h"
#include <unistd.h>

#include "emu/common/readback.h"

static int failures;
#define CHECK(c, ...)                               \
	do {                                        \
		if (c) {                            \
			printf("ok: " __VA_ARGS__); \
		} else {                            \
			failures++;                 \
			printf("FAIL: " __VA_ARGS__); \
		}                                   \
		printf("\n");                       \
	} while (0)

struct sig {
	int64_t kind;
	volatile int64_t value;
	uint64_t mailbox;
	uint32_t event_id, r1;
	uint64_t start_ts, end_ts, queue_ptr;
	uint32_t r3[2];
};

struct q {
	uint8_t *ring;
	volatile uint64_t *wptr, *rptr, *doorbell;
	uint32_t npkts;
	HsaQueueResource qr;
};

static uint32_t gpu_id, node;
static int kfd = -1;

static uint32_t rbq(uint32_t what, uint32_t addr, uint32_t xcc, uint32_t inst)
{
	struct emu_readback_args a = { gpu_id, xcc, what, addr, 0, inst, 0xDEADBEEF, 0 };
	if (ioctl(kfd, EMU_IOC_READBACK, &a))
		return 0xDEADBEEF;
	return a.value;
}

/* KFD's queue_id: libhsakmt 5.2.3's QueueId points at its struct queue, whose first field it is. */
static uint32_t kfd_qid(const struct q *q)
{
	return *(const uint32_t *)(uintptr_t)q->qr.QueueId;
}

static int make_queue(struct q *q, uint8_t *ctl)
{
	q->npkts = 64;
	q->ring = kmt_host_alloc(64 * 64);
	if (!q->ring)
		return -1;
	for (uint32_t i = 0; i < q->npkts; i++)
		*(uint16_t *)(q->ring + 64 * i) = 1; /* INVALID */
	q->wptr = (uint64_t *)(ctl + 0x38);
	q->rptr = (uint64_t *)(ctl + 0x80);
	memset(&q->qr, 0, sizeof(q->qr));
	q->qr.Queue_read_ptr_aql = (uint64_t *)q->rptr;
	q->qr.Queue_write_ptr_aql = (uint64_t *)q->wptr;
	HSAKMT_STATUS st = hsaKmtCreateQueue(node, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL, q->ring,
					     64 * 64, NULL, &q->qr);
	if (st)
		return -1;
	q->doorbell = (uint64_t *)q->qr.Queue_DoorBell;
	return 0;
}

/* Publishes one packet (body = bytes 4..63) with header dword0, rings the doorbell. */
static uint64_t submit(struct q *q, uint32_t dword0, const uint8_t *body)
{
	uint64_t idx = __atomic_fetch_add(q->wptr, 1, __ATOMIC_ACQ_REL);
	uint8_t *p = q->ring + (idx % q->npkts) * 64;
	memcpy(p + 4, body, 60);
	__atomic_store_n((uint32_t *)p, dword0, __ATOMIC_RELEASE);
	__atomic_store_n(q->doorbell, idx, __ATOMIC_RELEASE);
	return idx;
}

static void barrier_body(uint8_t *b, struct sig *s)
{
	memset(b, 0, 60);
	uint64_t h = (uint64_t)(uintptr_t)s;
	memcpy(b + 52, &h, 8);
}

static void pm4ib_body(uint8_t *b, const uint32_t *ib, uint32_t ndw, struct sig *s)
{
	memset(b, 0, 60);
	uint32_t j[4] = { 0xC0023F00u, (uint32_t)(uintptr_t)ib & ~3u, (uint32_t)((uintptr_t)ib >> 32) & 0xFFFF,
			  ndw | (1u << 23) };
	memcpy(b, j, 16);
	uint32_t remain = 0xA;
	memcpy(b + 16, &remain, 4);
	uint64_t h = (uint64_t)(uintptr_t)s;
	memcpy(b + 52, &h, 8);
}

static int wait_zero(struct sig *s, double secs)
{
	double t0 = kmt_now_s();
	/* Acquire: what the CP wrote before completing (a blit's bytes) is then visible (and TSan sees it). */
	while (__atomic_load_n(&s->value, __ATOMIC_ACQUIRE) != 0)
		if (kmt_now_s() - t0 > secs)
			return -1;
	return 0;
}

/* hsa_kernel_dispatch_packet_t from byte 4: 1-D, workgroup 64, grid `items`. */
static void kernel_body(uint8_t *b, uint64_t kobj, uint32_t items, struct sig *s)
{
	memset(b, 0, 60);
	uint16_t wg[3] = { 64, 1, 1 };
	uint32_t grid[3] = { items, 1, 1 };
	memcpy(b, wg, 6);
	memcpy(b + 8, grid, 12);
	memcpy(b + 28, &kobj, 8);
	uint64_t h = (uint64_t)(uintptr_t)s;
	memcpy(b + 52, &h, 8);
}

#define HDR_BARRIER_AND (3u | 1u << 8)
#define HDR_VENDOR_PM4 (0u | 1u << 8 | 1u << 16)

static int basic(void)
{
	uint8_t *ctl = kmt_host_alloc(8192);
	struct q q;
	CHECK(ctl && make_queue(&q, ctl) == 0, "hsaKmtCreateQueue on node %u (doorbell %p)", node,
	      (void *)q.doorbell);
	if (failures)
		return 1;
	struct sig *s = (struct sig *)(ctl + 0x100);
	uint8_t body[60];
	s->value = 1;
	barrier_body(body, s);
	uint64_t idx = submit(&q, HDR_BARRIER_AND, body);
	CHECK(wait_zero(s, 5) == 0 && *q.rptr == idx + 1, "barrier-AND completed, rptr %llu",
	      (unsigned long long)*q.rptr);
	CHECK(s->end_ts >= s->start_ts && s->start_ts > 0, "timestamps %llu..%llu", (unsigned long long)s->start_ts,
	      (unsigned long long)s->end_ts);
	CHECK(*(uint16_t *)(q.ring + (idx % q.npkts) * 64) == 1, "header reset to INVALID");

	/* PM4_IB: SET_UCONFIG_REG PERFMON_SEGMENT_SIZE and PERFMON_CNTL, then WRITE_DATA to memory. */
	uint32_t *ib = (uint32_t *)(ctl + 0x800);
	volatile uint32_t *marker = (uint32_t *)(ctl + 0xF00);
	uint32_t n = 0;
	ib[n++] = 0xC0017900u; /* SET_UCONFIG_REG, 2 body dwords */
	ib[n++] = 0xDC84 - 0xC000;
	ib[n++] = 0x0842100A;
	ib[n++] = 0xC0017900u;
	ib[n++] = 0xDC80 - 0xC000;
	ib[n++] = 0x20003000;
	ib[n++] = 0xC0033700u; /* WRITE_DATA to memory, 1 dword */
	ib[n++] = (5u << 8) | (1u << 20);
	ib[n++] = (uint32_t)(uintptr_t)marker;
	ib[n++] = (uint32_t)((uintptr_t)marker >> 32);
	ib[n++] = 0x600DF00Du;
	s->value = 1;
	pm4ib_body(body, ib, n, s);
	submit(&q, HDR_VENDOR_PM4, body);
	CHECK(wait_zero(s, 5) == 0, "PM4_IB completed");
	CHECK(*marker == 0x600DF00Du, "WRITE_DATA reached memory (0x%x)", *marker);
	HsaNodeProperties np;
	hsaKmtGetNodeProperties(node, &np);
	uint32_t nx = 1;
	for (uint32_t x = 1; x < 16; x++)
		if (rbq(EMU_RB_REG, 0xDC84, x, 0) != 0xDEADBEEF)
			nx = x + 1;
	for (uint32_t x = 0; x < nx; x++)
		CHECK(rbq(EMU_RB_REG, 0xDC84, x, 0) == 0x0842100A && rbq(EMU_RB_REG, 0xDC80, x, 0) == 0x20003000,
		      "XCC %u registers read back as the IB wrote them", x);
	printf("xccs %u\n", nx);
	CHECK(rbq(EMU_RB_QUEUE, EMU_RBQ_EXECUTED, 0, 0) == 2 && rbq(EMU_RB_QUEUE, EMU_RBQ_ERRORS, 0, 0) == 0,
	      "CP counters: executed %u errors %u", rbq(EMU_RB_QUEUE, EMU_RBQ_EXECUTED, 0, 0),
	      rbq(EMU_RB_QUEUE, EMU_RBQ_ERRORS, 0, 0));
	CHECK(hsaKmtDestroyQueue(q.qr.QueueId) == HSAKMT_STATUS_SUCCESS, "hsaKmtDestroyQueue");
	/* (A second hsaKmtDestroyQueue is libhsakmt's use-after-free; test_emu_queue checks the ioctl raw.) */
	return failures != 0;
}

static int bad(void)
{
	uint8_t *ctl = kmt_host_alloc(8192), *ctl2 = kmt_host_alloc(8192);
	struct q q, q2;
	CHECK(ctl && ctl2 && make_queue(&q, ctl) == 0 && make_queue(&q2, ctl2) == 0, "two queues");
	if (failures)
		return 1;
	struct sig *s = (struct sig *)(ctl + 0x100), *s2 = (struct sig *)(ctl2 + 0x100);
	uint32_t *ib = (uint32_t *)(ctl + 0x800);
	ib[0] = 0xC0009900u; /* opcode 0x99: not a packet the CP knows */
	ib[1] = 0;
	uint8_t body[60];
	s->value = 1;
	pm4ib_body(body, ib, 2, s);
	uint64_t idx = submit(&q, HDR_VENDOR_PM4, body);
	CHECK(wait_zero(s, 0.3) != 0 && s->value == 1, "IB with an unknown opcode not completed (signal %lld)",
	      (long long)s->value);
	CHECK(*q.rptr == idx, "read index not advanced (%llu)", (unsigned long long)*q.rptr);
	struct emu_queue_err_args e = { .queue_id = kfd_qid(&q) };
	CHECK(ioctl(kfd, EMU_IOC_QUEUE_ERR, &e) == 0 && e.errors == 1 && e.halted && e.packet_index == idx &&
		      strstr(e.err, "0x99"),
	      "error readable: [%s] at packet %llu", e.err, (unsigned long long)e.packet_index);
	/* A kernel dispatch of GPU-mapped memory that holds no kernel descriptor (all zero: no code entry)
	 * is refused, naming the kernel object; it is not completed as if it had run. */
	uint64_t kobj = (uint64_t)(uintptr_t)(ctl2 + 0x400);
	kernel_body(body, kobj, 64, s2);
	s2->value = 1;
	idx = submit(&q2, 2u | 1u << 8 | 1u << 16, body);
	CHECK(wait_zero(s2, 0.3) != 0 && s2->value == 1 && *q2.rptr == idx, "kernel dispatch not completed");
	char want[64];
	snprintf(want, sizeof(want), "kernel_object 0x%llx", (unsigned long long)kobj);
	e = (struct emu_queue_err_args){ .queue_id = kfd_qid(&q2) };
	CHECK(ioctl(kfd, EMU_IOC_QUEUE_ERR, &e) == 0 && e.halted && e.packet_index == idx && strstr(e.err, want) &&
		      strstr(e.err, "not a kernel descriptor"),
	      "error names the kernel: [%s]", e.err);
	/* A reserved packet type is refused by its number. */
	uint8_t *ctl3 = kmt_host_alloc(8192);
	struct q q3;
	CHECK(ctl3 && make_queue(&q3, ctl3) == 0, "third queue");
	if (failures)
		return 1;
	struct sig *s3 = (struct sig *)(ctl3 + 0x100);
	barrier_body(body, s3);
	s3->value = 1;
	idx = submit(&q3, 7u | 1u << 8, body);
	CHECK(wait_zero(s3, 0.3) != 0 && s3->value == 1, "reserved packet not completed");
	e = (struct emu_queue_err_args){ .queue_id = kfd_qid(&q3) };
	CHECK(ioctl(kfd, EMU_IOC_QUEUE_ERR, &e) == 0 && e.halted && e.packet_index == idx && strstr(e.err, "type 7"),
	      "error names the packet type: [%s]", e.err);
	CHECK(rbq(EMU_RB_QUEUE, EMU_RBQ_ERRORS, 0, 0) == 3, "GPU error counter %u",
	      rbq(EMU_RB_QUEUE, EMU_RBQ_ERRORS, 0, 0));
	CHECK(rbq(EMU_RB_QUEUE, EMU_RBQ_Q_HALTED, 0, kfd_qid(&q2)) == 1, "second queue halted");
	CHECK(hsaKmtDestroyQueue(q.qr.QueueId) == 0 && hsaKmtDestroyQueue(q2.qr.QueueId) == 0 &&
		      hsaKmtDestroyQueue(q3.qr.QueueId) == 0,
	      "destroyed");
	return failures != 0;
}

/*
 * Two queues, a kernel of `items` work-items: A0 and A1 on queue A, B0 on queue B, all published
 * before the CP looks.  The caller sets SPMTAP_EMU_KERNEL_BASE_NS (the modelled time) beforehand.
 */
static int kernel(uint64_t model_ns)
{
	uint8_t *ctl = kmt_host_alloc(8192), *ctl2 = kmt_host_alloc(8192);
	struct q qa, qb;
	CHECK(ctl && ctl2 && make_queue(&qa, ctl) == 0 && make_queue(&qb, ctl2) == 0, "two queues");
	if (failures)
		return 1;
	/* A code-object-v3 kernel descriptor: code entry 0x1000 past it (256 with zero first words would be
	 * ROCr 5.2's legacy blit header, blit.h). */
	uint8_t *kd = ctl + 0x400;
	int64_t entry = 0x1000;
	memcpy(kd + 16, &entry, 8);
	struct sig *a0 = (struct sig *)(ctl + 0x100), *a1 = (struct sig *)(ctl + 0x140), *b0 = (struct sig *)(ctl2 + 0x100);
	uint8_t body[3][60];
	kernel_body(body[0], (uint64_t)(uintptr_t)kd, 64, a0);
	kernel_body(body[1], (uint64_t)(uintptr_t)kd, 64, a1);
	kernel_body(body[2], (uint64_t)(uintptr_t)kd, 64, b0);
	a0->value = a1->value = b0->value = 1;
	submit(&qa, 2u | 1u << 8 | 1u << 16, body[0]);
	submit(&qa, 2u | 1u << 8 | 1u << 16, body[1]);
	submit(&qb, 2u | 1u << 8 | 1u << 16, body[2]);
	double secs = 5 + model_ns * 3e-9;
	CHECK(wait_zero(a0, secs) == 0 && wait_zero(a1, secs) == 0 && wait_zero(b0, secs) == 0,
	      "three dispatches completed");
	printf("ticks a0 %llu %llu a1 %llu %llu b0 %llu %llu\n", (unsigned long long)a0->start_ts,
	       (unsigned long long)a0->end_ts, (unsigned long long)a1->start_ts, (unsigned long long)a1->end_ts,
	       (unsigned long long)b0->start_ts, (unsigned long long)b0->end_ts);
	CHECK(*qa.rptr == 2 && *qb.rptr == 1, "read indexes %llu %llu", (unsigned long long)*qa.rptr,
	      (unsigned long long)*qb.rptr);
	return failures != 0;
}

/* A ROCr 5.2 blit kernel header at kd: amd_kernel_code_t, version words 0, code at +256, RSRC1's counts. */
static void blit_header(uint8_t *kd, uint32_t sgpr_gran, uint32_t vgpr_gran)
{
	memset(kd, 0, 256);
	int64_t entry = 256;
	uint32_t rsrc1 = vgpr_gran | sgpr_gran << 6;
	memcpy(kd + 16, &entry, 8);
	memcpy(kd + 48, &rsrc1, 4);
}

static int blit_run(struct q *q, struct sig *s, uint8_t *kd, uint8_t *kernarg, uint32_t grid, double secs)
{
	uint8_t body[60];
	kernel_body(body, (uint64_t)(uintptr_t)kd, grid, s);
	uint64_t ka = (uint64_t)(uintptr_t)kernarg;
	memcpy(body + 36, &ka, 8);
	s->value = 1;
	submit(q, 2u | 1u << 8 | 1u << 16, body);
	return wait_zero(s, secs);
}

static int blit(void)
{
	uint8_t *ctl = kmt_host_alloc(8192), *mem = kmt_host_alloc(65536);
	struct q q;
	CHECK(ctl && mem && make_queue(&q, ctl) == 0, "queue");
	if (failures)
		return 1;
	struct sig *s = (struct sig *)(ctl + 0x100);
	uint8_t *kd = ctl + 0x400, *ka = ctl + 0x600;
	uint64_t f[11] = { 0 };
	/* Fill: 0 dst, 8 phase-2 dst, 16 dst end, 24 value (u32), 28 work-items (u32). */
	uint32_t *dst = (uint32_t *)(mem + 0x1000);
	dst[1024] = 0x12345678; /* just past the end: untouched */
	blit_header(kd, 2, 1);
	f[0] = f[1] = (uint64_t)(uintptr_t)dst;
	f[2] = f[0] + 4096;
	memcpy(ka, f, 24);
	uint32_t v[2] = { 0xA5A55A5Au, 64 };
	memcpy(ka + 24, v, 8);
	int ok = blit_run(&q, s, kd, ka, 64, 5) == 0;
	for (int i = 0; i < 1024 && ok; i++)
		ok = dst[i] == 0xA5A55A5Au;
	CHECK(ok && dst[1024] == 0x12345678, "Fill wrote 4096 bytes and no more");
	/* CopyMisaligned: 0 src, 8 dst, 16/24 phase 2, 32 src end, 40 dst end, 48 work-items. */
	uint8_t *src = mem + 0x3000, *d2 = mem + 0x5001;
	for (int i = 0; i < 1000; i++)
		src[i] = (uint8_t)(i * 7 + 1);
	blit_header(kd, 2, 2);
	memset(f, 0, sizeof(f));
	f[0] = (uint64_t)(uintptr_t)src;
	f[1] = (uint64_t)(uintptr_t)d2;
	f[4] = f[0] + 1000;
	f[5] = f[1] + 1000;
	memcpy(ka, f, 56);
	CHECK(blit_run(&q, s, kd, ka, 256, 5) == 0 && !memcmp(d2, src, 1000) && d2[1000] == 0, "CopyMisaligned copied 1000 bytes");
	/* CopyAligned: 0 src, 8 dst, phases 2-4, 64 src end, 72 dst end, 80 work-items. */
	uint8_t *d3 = mem + 0x8000;
	blit_header(kd, 3, 2);
	memset(f, 0, sizeof(f));
	f[0] = (uint64_t)(uintptr_t)src;
	f[1] = (uint64_t)(uintptr_t)d3;
	f[8] = f[0] + 512;
	f[9] = f[1] + 512;
	memcpy(ka, f, 88);
	CHECK(blit_run(&q, s, kd, ka, 256, 5) == 0 && !memcmp(d3, src, 512) && d3[512] == 0, "CopyAligned copied 512 bytes");
	/* A copy whose source the GPU cannot reach (no BO there) is refused, not half done. */
	f[0] = 0x1000;
	f[8] = 0x1000 + 512;
	memcpy(ka, f, 88);
	CHECK(blit_run(&q, s, kd, ka, 256, 0.3) != 0 && s->value == 1, "CopyAligned from unmapped memory not completed");
	struct emu_queue_err_args e = { .queue_id = kfd_qid(&q) };
	CHECK(ioctl(kfd, EMU_IOC_QUEUE_ERR, &e) == 0 && e.halted && strstr(e.err, "CopyAligned") &&
		      strstr(e.err, "0x1000"),
	      "error names the blit: [%s]", e.err);
	/* A legacy header that none of ROCr 5.2's blits matches is refused by name. */
	uint8_t *ctl2 = kmt_host_alloc(8192);
	struct q q2;
	CHECK(ctl2 && make_queue(&q2, ctl2) == 0, "second queue");
	if (failures)
		return 1;
	blit_header(kd, 5, 5);
	CHECK(blit_run(&q2, (struct sig *)(ctl2 + 0x100), kd, ka, 256, 0.3) != 0, "unknown legacy kernel not completed");
	e = (struct emu_queue_err_args){ .queue_id = kfd_qid(&q2) };
	CHECK(ioctl(kfd, EMU_IOC_QUEUE_ERR, &e) == 0 && e.halted && strstr(e.err, "none of ROCr 5.2's blit kernels"),
	      "error names it: [%s]", e.err);
	CHECK(hsaKmtDestroyQueue(q.qr.QueueId) == 0 && hsaKmtDestroyQueue(q2.qr.QueueId) == 0, "destroyed");
	return failures != 0;
}

static int round_trip(struct q *q, struct sig *s)
{
	uint8_t body[60];
	s->value = 1;
	barrier_body(body, s);
	submit(q, HDR_BARRIER_AND, body);
	return wait_zero(s, 5);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s GPU_ID MODE [ARG]\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	gpu_id = (uint32_t)strtoul(argv[1], NULL, 0);
	const char *mode = argv[2];
	long arg = argc > 3 ? strtol(argv[3], NULL, 0) : 0;
	if (kmt_open(gpu_id, &kfd, &node))
		return 1;
	int rc;
	if (!strcmp(mode, "basic")) {
		rc = basic();
	} else if (!strcmp(mode, "bad")) {
		rc = bad();
	} else if (!strcmp(mode, "blit")) {
		rc = blit();
	} else if (!strcmp(mode, "kernel")) {
		rc = kernel(strtoull(getenv("SPMTAP_EMU_KERNEL_BASE_NS") ? getenv("SPMTAP_EMU_KERNEL_BASE_NS") : "5000",
				     NULL, 10));
	} else {
		uint8_t *ctl = kmt_host_alloc(8192);
		struct q q;
		if (!ctl || make_queue(&q, ctl)) {
			printf("FAIL: queue\n");
			return 1;
		}
		struct sig *s = (struct sig *)(ctl + 0x100);
		if (!strcmp(mode, "hold")) {
			printf("ready\n");
			for (;;)
				round_trip(&q, s);
		} else if (!strcmp(mode, "wedge")) {
			/* WAIT_REG_MEM: register RLC_SPM_PERFMON_CNTL == 0xFFFFFFFF, which nothing writes. */
			uint32_t *ib = (uint32_t *)(ctl + 0x800);
			static const uint32_t wait[] = { 0xC0053C00u, 3u, 0xDC80u, 0, 0xFFFFFFFFu, 0xFFFFFFFFu, 4 };
			memcpy(ib, wait, sizeof(wait));
			uint8_t body[60];
			s->value = 1;
			pm4ib_body(body, ib, 7, s);
			submit(&q, HDR_VENDOR_PM4, body);
			usleep(100000); /* the CP has taken it */
			printf("ready\n");
			for (;;)
				pause();
		} else if (!strcmp(mode, "idle")) {
			round_trip(&q, s);
			usleep(200000); /* past the fast-poll window */
			struct rusage r0, r1;
			double t0 = kmt_now_s();
			getrusage(RUSAGE_SELF, &r0);
			usleep((useconds_t)arg * 1000);
			getrusage(RUSAGE_SELF, &r1);
			double wall = kmt_now_s() - t0;
			double cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
				     (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
				     (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) * 1e-6 +
				     (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) * 1e-6;
			printf("idle_cpu_pct %.3f wakeups %u\n", 100.0 * cpu / wall,
			       rbq(EMU_RB_QUEUE, EMU_RBQ_CP_WAKEUPS, 0, 0));
		} else if (!strcmp(mode, "latency")) {
			long nrt = arg > 0 ? arg : 256;
			double *lat = calloc((size_t)nrt, sizeof(double));
			for (long i = 0; i < nrt && lat; i++) {
				double t0 = kmt_now_s();
				if (round_trip(&q, s)) {
					printf("FAIL: round trip %ld\n", i);
					return 1;
				}
				lat[i] = (kmt_now_s() - t0) * 1e6;
			}
			qsort(lat, (size_t)nrt, sizeof(double), cmp_d);
			printf("p50_us %.1f p99_us %.1f\n", lat[nrt / 2], lat[(nrt * 99) / 100]);
		}
		hsaKmtDestroyQueue(q.qr.QueueId);
		rc = 0;
	}
	hsaKmtCloseKFD();
	return rc;
}
