/* SPDX-License-Identifier: MIT */
/*
 * PM4 walker (see cp.h).  Strict on purpose: an opcode, field or register
 * the model does not know is an error naming it, because a permissive CP
 * would let a planner bug decode as plausible data.
 */
#include "emu/shim/cp.h"
#include "emu/shim/shim.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define SPMTAP_EMU_ERRMAX 256

enum {
	OP_NOP = 0x10, OP_PRED_EXEC = 0x23, OP_WRITE_DATA = 0x37, OP_WAIT_REG_MEM = 0x3C, OP_INDIRECT_BUFFER = 0x3F,
	OP_COPY_DATA = 0x40, OP_EVENT_WRITE = 0x46, OP_ACQUIRE_MEM = 0x58, OP_SET_SH_REG = 0x76,
	OP_SET_UCONFIG_REG = 0x79,
};

struct emu_cp {
	struct emu_gpu_regs *r;
	uint32_t xcc;
	char *err;
	size_t errlen;
	int depth;
};

static const char *emu_op_name(unsigned op)
{
	switch (op) {
	case OP_NOP: return "NOP";
	case OP_PRED_EXEC: return "PRED_EXEC";
	case OP_WRITE_DATA: return "WRITE_DATA";
	case OP_WAIT_REG_MEM: return "WAIT_REG_MEM";
	case OP_INDIRECT_BUFFER: return "INDIRECT_BUFFER";
	case OP_COPY_DATA: return "COPY_DATA";
	case OP_EVENT_WRITE: return "EVENT_WRITE";
	case OP_ACQUIRE_MEM: return "ACQUIRE_MEM";
	case OP_SET_SH_REG: return "SET_SH_REG";
	case OP_SET_UCONFIG_REG: return "SET_UCONFIG_REG";
	}
	return NULL;
}

/* User memory through the kernel's view, so a bad address is an error, not a crash. */
static int emu_mem_read(uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
	if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
		memcpy(buf, (const void *)(uintptr_t)addr, len);
		return 0;
	}
	return n == (ssize_t)len ? 0 : -1;
}

static int emu_mem_write(uint64_t addr, const void *buf, size_t len)
{
	struct iovec l = { (void *)buf, len }, r = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_writev(getpid(), &l, 1, &r, 1, 0);
	if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
		memcpy((void *)(uintptr_t)addr, buf, len);
		return 0;
	}
	return n == (ssize_t)len ? 0 : -1;
}

static int emu_fail(struct emu_cp *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int emu_fail(struct emu_cp *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, c->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static int emu_reg_w(struct emu_cp *c, const char *pkt, size_t at, uint32_t addr, uint32_t val)
{
	char why[SPMTAP_EMU_ERRMAX];
	if (emu_regs_write(c->r, c->xcc, addr, val, why, sizeof(why)))
		return emu_fail(c, "%s to %s (dword %zu)", pkt, why, at);
	return 0;
}

/* WAIT_REG_MEM compare functions (FUNCTION 2:0). */
static int emu_compare(unsigned fn, uint32_t v, uint32_t ref)
{
	switch (fn) {
	case 0: return 1;
	case 1: return v < ref;
	case 2: return v <= ref;
	case 3: return v == ref;
	case 4: return v != ref;
	case 5: return v >= ref;
	case 6: return v > ref;
	}
	return -1;
}

static uint64_t emu_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int emu_wait_reg_mem(struct emu_cp *c, const uint32_t *b, size_t at)
{
	unsigned fn = b[0] & 7, space = (b[0] >> 4) & 3;
	uint64_t addr = space ? ((uint64_t)b[2] << 32 | (b[1] & ~3u)) : b[1];
	uint32_t ref = b[3], mask = b[4];
	static const char *const fns[] = { "always", "<", "<=", "==", "!=", ">=", ">" };
	if (fn > 6)
		return emu_fail(c, "WAIT_REG_MEM FUNCTION %u not modelled (dword %zu)", fn, at);
	if (space > 1)
		return emu_fail(c, "WAIT_REG_MEM MEM_SPACE %u not modelled (dword %zu)", space, at);
	uint64_t limit_ms = emu_env_u64("SPMTAP_EMU_CP_WAIT_MS", 1000);
	uint64_t deadline = emu_mono_ns() + limit_ms * 1000000ull;
	uint32_t v = 0;
	char why[SPMTAP_EMU_ERRMAX];
	for (;;) {
		if (space == 0) {
			if (emu_regs_read(c->r, c->xcc, (uint32_t)addr, &v, why, sizeof(why)))
				return emu_fail(c, "WAIT_REG_MEM on %s (dword %zu)", why, at);
		} else if (emu_mem_read(addr, &v, 4)) {
			return emu_fail(c, "WAIT_REG_MEM: poll address 0x%llx is not readable (dword %zu)",
					(unsigned long long)addr, at);
		}
		if (emu_compare(fn, v & mask, ref))
			return 0;
		if (emu_mono_ns() >= deadline)
			return emu_fail(c,
					"WAIT_REG_MEM timed out after %llu ms: (%s 0x%04llX & 0x%08X) = 0x%08X, wanted %s "
					"0x%08X (dword %zu)",
					(unsigned long long)limit_ms, space ? "memory" : "register",
					(unsigned long long)addr, mask, v & mask, fns[fn], ref, at);
		struct timespec ts = { 0, 100000 };
		nanosleep(&ts, NULL);
	}
}

static int emu_run(struct emu_cp *c, const uint32_t *dw, size_t n, size_t *fail_at);

static int emu_indirect(struct emu_cp *c, const uint32_t *b, size_t at)
{
	uint64_t addr = (uint64_t)b[1] << 32 | (b[0] & ~3u);
	uint32_t ndw = b[2] & 0xFFFFF;
	if (b[2] & (1u << 20))
		return emu_fail(c, "INDIRECT_BUFFER with CHAIN set: not modelled (dword %zu)", at);
	if (c->depth >= EMU_CP_MAX_IB_DEPTH)
		return emu_fail(c, "INDIRECT_BUFFER nested deeper than %d (dword %zu)", EMU_CP_MAX_IB_DEPTH, at);
	uint32_t *ib = malloc((size_t)ndw * 4 + 4);
	if (!ib)
		return emu_fail(c, "INDIRECT_BUFFER of %u dwords: out of memory (dword %zu)", ndw, at);
	if (ndw && emu_mem_read(addr, ib, (size_t)ndw * 4)) {
		free(ib);
		return emu_fail(c, "INDIRECT_BUFFER at 0x%llx, %u dwords: not readable (dword %zu)",
				(unsigned long long)addr, ndw, at);
	}
	c->depth++;
	size_t inner;
	int rc = emu_run(c, ib, ndw, &inner);
	c->depth--;
	free(ib);
	if (rc && strncmp(c->err, "in INDIRECT_BUFFER", 18)) {
		/* Only the innermost IB names itself, so the cause survives the message length. */
		char inner_err[SPMTAP_EMU_ERRMAX];
		snprintf(inner_err, sizeof(inner_err), "%s", c->err);
		return emu_fail(c, "in INDIRECT_BUFFER at 0x%llx (depth %d): %s", (unsigned long long)addr, c->depth + 1,
				inner_err);
	}
	if (rc)
		return -1;
	return 0;
}

static int emu_copy_data(struct emu_cp *c, const uint32_t *b, size_t at)
{
	unsigned src = b[0] & 0xF, dst = (b[0] >> 8) & 0xF;
	bool wide = b[0] & (1u << 16);
	uint64_t v = 0;
	char why[SPMTAP_EMU_ERRMAX];
	if (src == 5) {
		v = b[1] | (wide ? (uint64_t)b[2] << 32 : 0);
	} else if (src == 0) {
		uint32_t r32;
		if (emu_regs_read(c->r, c->xcc, b[1], &r32, why, sizeof(why)))
			return emu_fail(c, "COPY_DATA from %s (dword %zu)", why, at);
		v = r32;
	} else if (src == 9) {
		v = emu_clock_ticks(emu_clock_raw_ns());
	} else {
		return emu_fail(c, "COPY_DATA SRC_SEL %u not modelled (dword %zu)", src, at);
	}
	if (dst == 0)
		return emu_reg_w(c, "COPY_DATA", at, b[3], (uint32_t)v);
	if (dst == 5) {
		uint64_t addr = (uint64_t)b[4] << 32 | (b[3] & ~3u);
		if (emu_mem_write(addr, &v, wide ? 8 : 4))
			return emu_fail(c, "COPY_DATA to memory 0x%llx: not writable (dword %zu)", (unsigned long long)addr,
					at);
		return 0;
	}
	return emu_fail(c, "COPY_DATA DST_SEL %u not modelled (dword %zu)", dst, at);
}

static int emu_write_data(struct emu_cp *c, const uint32_t *b, size_t nb, size_t at)
{
	unsigned dst = (b[0] >> 8) & 0xF;
	bool no_incr = b[0] & (1u << 16);
	size_t ndata = nb - 3;
	if (dst == 0) {
		uint32_t addr = b[1] & 0x3FFFF;
		for (size_t i = 0; i < ndata; i++)
			if (emu_reg_w(c, "WRITE_DATA", at, no_incr ? addr : addr + (uint32_t)i, b[3 + i]))
				return -1;
		return 0;
	}
	if (dst == 5 || dst == 2) {
		uint64_t addr = (uint64_t)b[2] << 32 | (b[1] & ~3u);
		if (no_incr && ndata > 1)
			return emu_fail(c, "WRITE_DATA to memory with ADDR_INCR off: not modelled (dword %zu)", at);
		if (ndata && emu_mem_write(addr, b + 3, ndata * 4))
			return emu_fail(c, "WRITE_DATA to memory 0x%llx, %zu dwords: not writable (dword %zu)",
					(unsigned long long)addr, ndata, at);
		return 0;
	}
	return emu_fail(c, "WRITE_DATA DST_SEL %u not modelled (dword %zu)", dst, at);
}

/* Minimum body dwords per opcode. */
static size_t emu_min_body(unsigned op)
{
	switch (op) {
	case OP_PRED_EXEC: return 1;
	case OP_WRITE_DATA: return 3;
	case OP_WAIT_REG_MEM: return 6;
	case OP_INDIRECT_BUFFER: return 3;
	case OP_COPY_DATA: return 5;
	case OP_EVENT_WRITE: return 1;
	case OP_SET_SH_REG:
	case OP_SET_UCONFIG_REG: return 2;
	}
	return 0;
}

static int emu_packet(struct emu_cp *c, unsigned op, const uint32_t *b, size_t nb, size_t at)
{
	switch (op) {
	case OP_NOP:
	case OP_ACQUIRE_MEM: /* caches are not modelled: nothing to flush */
		return 0;
	case OP_SET_UCONFIG_REG:
	case OP_SET_SH_REG: {
		uint32_t base = op == OP_SET_UCONFIG_REG ? 0xC000u : 0x2C00u;
		const char *name = emu_op_name(op);
		for (size_t i = 1; i < nb; i++)
			if (emu_reg_w(c, name, at, base + (b[0] & 0xFFFF) + (uint32_t)(i - 1), b[i]))
				return -1;
		return 0;
	}
	case OP_WRITE_DATA:
		return emu_write_data(c, b, nb, at);
	case OP_EVENT_WRITE: {
		unsigned ev = b[0] & 0x3F;
		/* CS_PARTIAL_FLUSH and the PERFCOUNTER events: the model is always idle and coherent. */
		if (ev == 0x07 || ev == 0x17 || ev == 0x18 || ev == 0x1B)
			return 0;
		return emu_fail(c, "EVENT_WRITE event type 0x%02X not modelled (dword %zu)", ev, at);
	}
	case OP_WAIT_REG_MEM:
		return emu_wait_reg_mem(c, b, at);
	case OP_INDIRECT_BUFFER:
		return emu_indirect(c, b, at);
	case OP_COPY_DATA:
		return emu_copy_data(c, b, at);
	}
	return emu_fail(c, "unknown PM4 opcode 0x%02X at dword %zu", op, at);
}

static int emu_run(struct emu_cp *c, const uint32_t *dw, size_t n, size_t *fail_at)
{
	size_t i = 0;
	while (i < n) {
		uint32_t h = dw[i];
		*fail_at = i;
		if (h == 0x80000000u) { /* type-2 filler */
			i++;
			continue;
		}
		if (h >> 30 != 3)
			return emu_fail(c, "type-%u PM4 header 0x%08X at dword %zu (only type 3 is modelled)", h >> 30, h, i);
		unsigned op = (h >> 8) & 0xFF, count = (h >> 16) & 0x3FFF;
		const char *name = emu_op_name(op);
		if (!name)
			return emu_fail(c, "unknown PM4 opcode 0x%02X at dword %zu", op, i);
		if (h & 1)
			return emu_fail(c, "%s with PREDICATE set: not modelled (dword %zu)", name, i);
		if (op == OP_NOP && count == 0x3FFF) { /* the 1-dword NOP, 0xFFFF1000 */
			i++;
			continue;
		}
		size_t nb = (size_t)count + 1;
		if (nb > n - i - 1)
			return emu_fail(c, "%s at dword %zu: body of %zu dwords runs past the end (%zu left)", name, i, nb,
					n - i - 1);
		if (nb < emu_min_body(op))
			return emu_fail(c, "%s at dword %zu: body of %zu dwords, needs %zu", name, i, nb, emu_min_body(op));
		const uint32_t *b = dw + i + 1;
		if (op == OP_PRED_EXEC) {
			/* 1.3: skip EXEC_COUNT dwords unless this XCC is in VIRTUAL_XCC_ID_SELECT. */
			uint32_t cnt = b[0] & 0x3FFF, sel = b[0] >> 24;
			size_t next = i + 1 + nb;
			if (cnt > n - next)
				return emu_fail(c, "PRED_EXEC at dword %zu: EXEC_COUNT %u runs past the end (%zu left)", i, cnt,
						n - next);
			i = (sel >> c->xcc) & 1 ? next : next + cnt;
			continue;
		}
		if (emu_packet(c, op, b, nb, i))
			return -1;
		i += 1 + nb;
	}
	*fail_at = n;
	return 0;
}

int emu_cp_execute(struct emu_gpu_regs *r, uint32_t xcc, const uint32_t *dw, size_t n, char *err, size_t errlen,
		   uint32_t *err_dw)
{
	struct emu_cp c = { r, xcc, err, errlen, 0 };
	size_t at = 0;
	if (errlen)
		err[0] = 0;
	int rc = emu_run(&c, dw, n, &at);
	if (err_dw)
		*err_dw = (uint32_t)at;
	if (!rc && (r->x[xcc].grbm_gfx_index & 0xE0000000u) != 0xE0000000u)
		EMU_DBG("CP: GRBM_GFX_INDEX left at 0x%08X (not broadcast) at the end of the stream\n",
			r->x[xcc].grbm_gfx_index);
	return rc;
}
