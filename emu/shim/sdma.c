/* SPDX-License-Identifier: MIT */
/*
 * The emulated SDMA engine: the packets of an SDMA v4.4 user queue (gfx90a)
 * that ROCr 5.2.x's BlitSdmaV4 (BlitSdma<uint64_t, true, -1, false>) writes
 * for host<->device copies and fills (docs/emulator.md "SDMA engine").
 *
 * The ring: byte-addressed, read and write pointers 64-bit monotonic byte
 * indices (the ring offset is the index modulo the size); the producer
 * writes the new write pointer to its write-pointer word and then to the
 * queue's doorbell, and the engine writes its read pointer back after each
 * packet.  Packets are dword streams whose first dword holds op (7:0) and
 * sub_op (15:8); their layouts are amdgpu's sdma_v4_4 / vega10_sdma_pkt_open.h.
 *
 * Copies and fills change memory at once but take a modelled time: the
 * queue's next packet waits until it has passed (SPMTAP_EMU_SDMA_GBPS), so a
 * fence or signal decrement after a copy comes after its modelled end.  The
 * engine never sleeps: a busy or polling queue is left and retried by the CP
 * thread's next pass, so other queues go on.
 */
#include "emu/shim/sdma.h"
#include "emu/shim/dispatch_truth.h"
#include "emu/shim/shim.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

enum {
	SDMA_OP_NOP = 0,
	SDMA_OP_COPY = 1,
	SDMA_OP_WRITE = 2,
	SDMA_OP_INDIRECT = 4,
	SDMA_OP_FENCE = 5,
	SDMA_OP_TRAP = 6,
	SDMA_OP_SEM = 7,
	SDMA_OP_POLL_REGMEM = 8,
	SDMA_OP_COND_EXE = 9,
	SDMA_OP_ATOMIC = 10,
	SDMA_OP_CONST_FILL = 11,
	SDMA_OP_PTEPDE = 12,
	SDMA_OP_TIMESTAMP = 13,
	SDMA_OP_SRBM_WRITE = 14,
	SDMA_OP_PRE_EXE = 15,
	SDMA_OP_GCR = 17,
	SDMA_OP_DUMMY_TRAP = 32,
};
#define SDMA_SUBOP_COPY_LINEAR 0
#define SDMA_SUBOP_COPY_LINEAR_RECT 4
#define SDMA_SUBOP_TIMESTAMP_GET_GLOBAL 2
#define SDMA_ATOMIC_ADD64 47           /* TC atomic op code ROCr uses to decrement a signal */
#define SDMA_COPY_COUNT_MASK 0x3FFFFFu /* 22 bits on SDMA v4: bytes - 1 (max 4 MiB) */
#define SDMA_FILL_COUNT_MASK 0x3FFFFFu
/* POLL_REGMEM DW5: interval 15:0, retry_count 27:16; 0xfff (what ROCr and amdgpu always ask) is unbounded. */
#define SDMA_POLL_RETRY(dw5) (((dw5) >> 16) & 0xFFFu)
#define SDMA_POLL_RETRY_FOREVER 0xFFFu

static const char *sdma_op_name(uint32_t op)
{
	switch (op) {
	case SDMA_OP_NOP: return "NOP";
	case SDMA_OP_COPY: return "COPY";
	case SDMA_OP_WRITE: return "WRITE";
	case SDMA_OP_INDIRECT: return "INDIRECT";
	case SDMA_OP_FENCE: return "FENCE";
	case SDMA_OP_TRAP: return "TRAP";
	case SDMA_OP_SEM: return "SEM";
	case SDMA_OP_POLL_REGMEM: return "POLL_REGMEM";
	case SDMA_OP_COND_EXE: return "COND_EXE";
	case SDMA_OP_ATOMIC: return "ATOMIC";
	case SDMA_OP_CONST_FILL: return "CONST_FILL";
	case SDMA_OP_PTEPDE: return "PTEPDE";
	case SDMA_OP_TIMESTAMP: return "TIMESTAMP";
	case SDMA_OP_SRBM_WRITE: return "SRBM_WRITE";
	case SDMA_OP_PRE_EXE: return "PRE_EXE";
	case SDMA_OP_GCR: return "GCR";
	case SDMA_OP_DUMMY_TRAP: return "DUMMY_TRAP";
	default: return "unknown";
	}
}

static uint64_t sdma_bytes_per_s;

/* Modelled engine time of a copy or fill: bytes at SPMTAP_EMU_SDMA_GBPS (decimal GB/s). */
static uint64_t sdma_duration_ns(uint64_t bytes)
{
	if (!sdma_bytes_per_s) {
		double gbps = emu_env_double("SPMTAP_EMU_SDMA_GBPS", 25.0);
		sdma_bytes_per_s = gbps > 0.001 ? (uint64_t)(gbps * 1e9) : 25000000000ull;
	}
	return (uint64_t)((unsigned __int128)bytes * 1000000000u / sdma_bytes_per_s);
}

static void sdma_fail(struct emu_sdma_result *r, uint64_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void sdma_fail(struct emu_sdma_result *r, uint64_t at, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	r->error = true;
	r->err_at = at;
}

/* ---- memory: GPU VAs through the process's BOs ---------------------------------------------- */

/* Copies n bytes between two CPU pointers without faulting on user memory; false on EFAULT. */
static bool sdma_move(void *dst, const void *src, uint64_t n, bool user)
{
	if (!user) {
		memmove(dst, src, n);
		return true;
	}
	/* process_vm_readv on ourselves: an unmapped user page is EFAULT, not SIGSEGV in the app. */
	while (n) {
		struct iovec l = { dst, n }, rm = { (void *)(uintptr_t)src, n };
		ssize_t k = process_vm_readv(getpid(), &l, 1, &rm, 1, 0);
		if (k < 0 && (errno == ENOSYS || errno == EPERM)) {
			memmove(dst, src, n); /* no process_vm_*: trust the address, as the AQL CP does */
			return true;
		}
		if (k <= 0)
			return false;
		dst = (char *)dst + k;
		src = (const char *)src + k;
		n -= (uint64_t)k;
	}
	return true;
}

/* A CPU pointer to the 1..8 bytes at va, if they are in one BO and (user memory) readable. */
static void *sdma_word(uint64_t va, unsigned len)
{
	uint64_t avail;
	bool user;
	void *p = emu_mem_gpu_va(va, &avail, &user);
	if (!p || avail < len)
		return NULL;
	uint64_t probe;
	return (!user || sdma_move(&probe, p, len, true)) ? p : NULL;
}

/* dst/src GPU VAs; NULL fill: copy.  Walks BO by BO; false with *bad the VA that faulted. */
static bool sdma_xfer(uint64_t dst, uint64_t src, uint64_t n, const uint32_t *fill, uint64_t *bad)
{
	static uint32_t pattern[1024];
	while (n) {
		uint64_t da, sa = UINT64_MAX;
		bool du, su = false;
		char *d = emu_mem_gpu_va(dst, &da, &du);
		const char *s = fill ? (const char *)pattern : emu_mem_gpu_va(src, &sa, &su);
		if (!d || !s) {
			*bad = !d ? dst : src;
			return false;
		}
		uint64_t k = n < da ? n : da;
		if (k > sa)
			k = sa;
		if (fill) {
			if (pattern[0] != *fill || pattern[1023] != *fill)
				for (unsigned i = 0; i < 1024; i++)
					pattern[i] = *fill;
			if (k > sizeof(pattern))
				k = sizeof(pattern);
		}
		bool ok;
		if (du) {
			/* Into user memory: process_vm_writev, fault-safe on the destination too. */
			char bounce[4096];
			const char *from = s;
			if (su) {
				if (k > sizeof(bounce))
					k = sizeof(bounce);
				ok = sdma_move(bounce, s, k, true);
				from = bounce;
				if (!ok) {
					*bad = src;
					return false;
				}
			}
			struct iovec l = { (void *)from, k }, rm = { d, k };
			ssize_t w = process_vm_writev(getpid(), &l, 1, &rm, 1, 0);
			if (w < 0 && (errno == ENOSYS || errno == EPERM)) {
				memmove(d, from, k);
				w = (ssize_t)k;
			}
			if (w <= 0) {
				*bad = dst;
				return false;
			}
			k = (uint64_t)w;
		} else if (!sdma_move(d, s, k, su)) {
			*bad = src;
			return false;
		}
		dst += k;
		if (!fill)
			src += k;
		n -= k;
	}
	return true;
}

/* ---- packets --------------------------------------------------------------------------------- */

static uint64_t sdma_u64(const uint32_t *lo)
{
	return (uint64_t)lo[0] | ((uint64_t)lo[1] << 32);
}

static void sdma_truth(const struct emu_sdma_q *q, uint64_t at, const char *op, uint64_t bytes, uint64_t src,
		       uint64_t dst, uint64_t start_ns, uint64_t end_ns)
{
	if (!emu_dtruth_enabled())
		return;
	char f[400];
	snprintf(f, sizeof(f),
		 "\"queue\":%u,\"ring_offset\":%" PRIu64 ",\"op\":\"%s\",\"bytes\":%" PRIu64 ",\"src\":\"0x%" PRIx64
		 "\",\"dst\":\"0x%" PRIx64 "\",\"start\":%" PRIu64 ",\"end\":%" PRIu64,
		 q->queue_id, at & (q->ring_size - 1), op, bytes, src, dst, emu_clock_ticks(start_ns),
		 emu_clock_ticks(end_ns));
	emu_dtruth_line(q->gpu_id, "sdma", f);
}

/* POLL_REGMEM's compare functions (header bits 30:28). */
static bool sdma_poll_ok(uint32_t func, uint32_t v, uint32_t ref)
{
	switch (func) {
	case 0: return true;
	case 1: return v < ref;
	case 2: return v <= ref;
	case 3: return v == ref;
	case 4: return v != ref;
	case 5: return v >= ref;
	default: return v > ref; /* 6; 7 is refused before */
	}
}

/* The packet's length in dwords (0: not a packet this engine runs; r has why). */
static uint32_t sdma_len(const uint32_t *p, uint64_t at, struct emu_sdma_result *r)
{
	uint32_t op = p[0] & 0xFF, sub = (p[0] >> 8) & 0xFF;
	switch (op) {
	case SDMA_OP_NOP: return 1 + ((p[0] >> 16) & 0x3FFF); /* count: dwords that follow */
	case SDMA_OP_COPY:
		if (sub == SDMA_SUBOP_COPY_LINEAR)
			return 7;
		sdma_fail(r, at, "SDMA COPY packet sub-op %u%s (header 0x%08x): not emulated", sub,
			  sub == SDMA_SUBOP_COPY_LINEAR_RECT ? " (LINEAR_RECT)" : "", p[0]);
		return 0;
	case SDMA_OP_FENCE: return 4;
	case SDMA_OP_TRAP: return 2;
	case SDMA_OP_POLL_REGMEM: return 6;
	case SDMA_OP_ATOMIC: return 8;
	case SDMA_OP_CONST_FILL: return 5;
	case SDMA_OP_TIMESTAMP:
		if (sub == SDMA_SUBOP_TIMESTAMP_GET_GLOBAL)
			return 3;
		sdma_fail(r, at, "SDMA TIMESTAMP packet sub-op %u (header 0x%08x): only GET_GLOBAL is emulated", sub,
			  p[0]);
		return 0;
	default:
		sdma_fail(r, at, "SDMA opcode %u (%s, header 0x%08x): not emulated", op, sdma_op_name(op), p[0]);
		return 0;
	}
}

/* 1 done, 0 must wait (poll or modelled time), -1 error (r set). */
static int sdma_exec(struct emu_sdma_q *q, const uint32_t *p, uint64_t at, struct emu_sdma_result *r)
{
	uint32_t op = p[0] & 0xFF;
	uint64_t now = emu_clock_raw_ns(), bad = 0;
	switch (op) {
	case SDMA_OP_NOP:
		return 1;
	case SDMA_OP_COPY: {
		if (p[0] & (1u << 27)) {
			sdma_fail(r, at, "SDMA COPY_LINEAR with broadcast (header 0x%08x): not emulated", p[0]);
			return -1;
		}
		uint64_t n = (uint64_t)(p[1] & SDMA_COPY_COUNT_MASK) + 1, src = sdma_u64(p + 3), dst = sdma_u64(p + 5);
		if (!sdma_xfer(dst, src, n, NULL, &bad)) {
			sdma_fail(r, at, "SDMA COPY_LINEAR of %" PRIu64 " bytes 0x%" PRIx64 " -> 0x%" PRIx64
				  ": GPU VA 0x%" PRIx64 " is not mapped (a page fault)", n, src, dst, bad);
			return -1;
		}
		q->busy_until_ns = now + sdma_duration_ns(n);
		sdma_truth(q, at, "COPY_LINEAR", n, src, dst, now, q->busy_until_ns);
		return 1;
	}
	case SDMA_OP_CONST_FILL: {
		uint32_t size = p[0] >> 30, data = p[3];
		if (size != 2) {
			sdma_fail(r, at, "SDMA CONST_FILL with fill size %u (header 0x%08x): only dword fills are emulated",
				  size, p[0]);
			return -1;
		}
		/* count: bytes - 1 (amdgpu) or bytes - 4 (ROCr); the low two bits are ignored for dword fills. */
		uint64_t n = (uint64_t)((p[4] & SDMA_FILL_COUNT_MASK) | 3) + 1, dst = sdma_u64(p + 1);
		if (dst & 3) {
			sdma_fail(r, at, "SDMA CONST_FILL at 0x%" PRIx64 ": not dword aligned", dst);
			return -1;
		}
		if (!sdma_xfer(dst, 0, n, &data, &bad)) {
			sdma_fail(r, at, "SDMA CONST_FILL of %" PRIu64 " bytes at 0x%" PRIx64 ": GPU VA 0x%" PRIx64
				  " is not mapped (a page fault)", n, dst, bad);
			return -1;
		}
		q->busy_until_ns = now + sdma_duration_ns(n);
		sdma_truth(q, at, "CONST_FILL", n, 0, dst, now, q->busy_until_ns);
		return 1;
	}
	case SDMA_OP_FENCE: {
		uint64_t a = sdma_u64(p + 1) & ~3ull;
		uint32_t *w = sdma_word(a, 4);
		if (!w) {
			sdma_fail(r, at, "SDMA FENCE to 0x%" PRIx64 ": not mapped (a page fault)", a);
			return -1;
		}
		__atomic_store_n(w, p[3], __ATOMIC_RELEASE);
		sdma_truth(q, at, "FENCE", 4, 0, a, now, now);
		return 1;
	}
	case SDMA_OP_ATOMIC: {
		uint32_t aop = p[0] >> 25;
		uint64_t a = sdma_u64(p + 1);
		if (aop != SDMA_ATOMIC_ADD64) {
			sdma_fail(r, at, "SDMA ATOMIC operation %u (header 0x%08x): only ADD64 (47) is emulated", aop, p[0]);
			return -1;
		}
		uint64_t *w = (a & 7) ? NULL : sdma_word(a, 8);
		if (!w) {
			sdma_fail(r, at, "SDMA ATOMIC ADD64 at 0x%" PRIx64 ": %s", a,
				  (a & 7) ? "not 8-byte aligned" : "not mapped (a page fault)");
			return -1;
		}
		__atomic_fetch_add(w, sdma_u64(p + 3), __ATOMIC_ACQ_REL);
		sdma_truth(q, at, "ATOMIC_ADD64", 8, 0, a, now, now);
		return 1;
	}
	case SDMA_OP_POLL_REGMEM: {
		uint32_t func = (p[0] >> 28) & 7;
		bool hdp = p[0] & (1u << 26), mem = p[0] >> 31;
		/*
		 * HDP flush: ROCr's fixed SDMA_PKT_HDP_FLUSH {0x8, 0, 0x80000000, 0, 0, 0} (gfx9 microcode
		 * >= 0x1A5), or amdgpu's register form with the hdp_flush bit.  It only orders host-path
		 * writes, which the emulator makes at once: a no-op.
		 */
		bool rocr_hdp = p[0] == SDMA_OP_POLL_REGMEM && p[1] == 0 && p[2] == 0x80000000u && !p[3] && !p[4] && !p[5];
		if ((hdp && !mem) || rocr_hdp)
			return 1;
		if (!mem || func == 7) {
			sdma_fail(r, at, "SDMA POLL_REGMEM %s (header 0x%08x): not emulated",
				  mem ? "with function 7" : "on a register", p[0]);
			return -1;
		}
		uint64_t a = sdma_u64(p + 1) & ~3ull;
		const uint32_t *w = sdma_word(a, 4);
		if (!w) {
			sdma_fail(r, at, "SDMA POLL_REGMEM on 0x%" PRIx64 ": not mapped (a page fault)", a);
			return -1;
		}
		/*
		 * Retried on every CP pass until it holds.  retry_count 0xfff is unbounded: the queue stays
		 * here until the memory changes or the queue is destroyed (queue destroy and process exit end
		 * the CP thread's service of it, so a stop is never held up).  A smaller count bounds the
		 * failed tries: past it the queue halts with an error, as on a fault (one try per pass; the
		 * interval field is not modelled, the pass rate stands in for it).
		 */
		if (!sdma_poll_ok(func, __atomic_load_n(w, __ATOMIC_ACQUIRE) & p[4], p[3] & p[4])) {
			uint32_t retry = SDMA_POLL_RETRY(p[5]);
			if (q->poll_at != at + 1) {
				q->poll_at = at + 1; /* +1: 0 means no poll in progress */
				q->polls = 0;
			}
			if (retry != SDMA_POLL_RETRY_FOREVER && q->polls++ >= retry) {
				sdma_fail(r, at, "SDMA POLL_REGMEM on 0x%" PRIx64 ": condition not met after %u retries "
					  "(retry_count %u)", a, retry, retry);
				q->poll_at = 0;
				return -1;
			}
			return 0;
		}
		q->poll_at = 0;
		sdma_truth(q, at, "POLL_REGMEM", 4, a, 0, now, now);
		return 1;
	}
	case SDMA_OP_TIMESTAMP: {
		uint64_t a = sdma_u64(p + 1);
		uint64_t *w = (a & 7) ? NULL : sdma_word(a, 8);
		if (!w) {
			sdma_fail(r, at, "SDMA TIMESTAMP GET_GLOBAL to 0x%" PRIx64 ": %s", a,
				  (a & 7) ? "not 8-byte aligned" : "not mapped (a page fault)");
			return -1;
		}
		__atomic_store_n(w, emu_clock_ticks(now), __ATOMIC_RELEASE);
		sdma_truth(q, at, "TIMESTAMP", 8, 0, a, now, now);
		return 1;
	}
	case SDMA_OP_TRAP: {
		/* amdkfd: an SDMA trap's 28-bit context is the event id (event_interrupt_isr_v9). */
		uint32_t id = p[1] & 0x0FFFFFFFu;
		emu_event_interrupt_locked(id);
		sdma_truth(q, at, "TRAP", 0, 0, id, now, now);
		return 1;
	}
	default:
		sdma_fail(r, at, "SDMA opcode %u (%s): not emulated", op, sdma_op_name(op));
		return -1;
	}
}

void emu_sdma_service(struct emu_sdma_q *q, struct emu_sdma_result *r)
{
	memset(r, 0, sizeof(*r));
	uint64_t *rptr = (uint64_t *)(uintptr_t)q->rptr_addr;
	uint64_t rd = __atomic_load_n(rptr, __ATOMIC_ACQUIRE);
	const uint8_t *ring = (const uint8_t *)(uintptr_t)q->ring;
	uint64_t mask = q->ring_size - 1;
	while (rd < q->wptr) {
		if (emu_clock_raw_ns() < q->busy_until_ns) {
			r->busy = true; /* the last copy's modelled time goes on */
			return;
		}
		if (rd & 3) {
			sdma_fail(r, rd, "SDMA read pointer %" PRIu64 " not dword aligned", rd);
			return;
		}
		/* A packet may wrap past the ring's end (ROCr pads with NOPs, but the engine does not care). */
		uint32_t p[8];
		for (unsigned i = 0; i < 8; i++)
			memcpy(&p[i], ring + ((rd + 4 * i) & mask), 4);
		uint32_t n = sdma_len(p, rd, r);
		if (!n)
			return;
		if (rd + 4ull * n > q->wptr) {
			sdma_fail(r, rd, "SDMA %s packet of %u dwords runs past the write pointer %" PRIu64,
				  sdma_op_name(p[0] & 0xFF), n, q->wptr);
			return;
		}
		int rc = sdma_exec(q, p, rd, r);
		if (rc < 0)
			return;
		if (rc == 0) {
			r->waiting = true;
			return;
		}
		rd += 4ull * n;
		__atomic_store_n(rptr, rd, __ATOMIC_RELEASE);
		r->executed++;
	}
}
