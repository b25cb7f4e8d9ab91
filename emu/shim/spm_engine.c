/* SPDX-License-Identifier: MIT */
/*
 * Rings, copy policy and loss of the emulated kfd_spm.c (SPM.md 4.2-4.4).
 * See spm_engine.h for the lazy, time-ordered simulation this implements.
 */
#include "emu/shim/spm_engine.h"
#include "emu/shim/shim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define EMU_NS_PER_MS 1000000ull

/* ---- production timing ---------------------------------------------------- */

/* Lines generated in the first `elapsed` ns of a streaming period. */
static uint64_t emu_lines_by(const struct emu_spm *s, uint64_t elapsed)
{
	return (uint64_t)((unsigned __int128)elapsed * s->rate / (EMU_SPM_LINE * EMU_NS_PER_MS));
}

/* Generation time of line j (0-based) of the current period: the first ns at which it exists. */
static uint64_t emu_line_time(const struct emu_spm *s, uint64_t j)
{
	unsigned __int128 num = (unsigned __int128)(j + 1) * EMU_SPM_LINE * EMU_NS_PER_MS;
	return s->start_ns + (uint64_t)((num + s->rate - 1) / s->rate);
}

static uint64_t emu_source_ticks(const struct emu_spm_source_ctx *ctx, uint32_t xcc, uint64_t seq)
{
	const struct emu_spm *s = ctx->engine;
	return emu_clock_ticks(emu_line_time(s, seq - s->x[xcc].period_first_seq));
}

/* ---- user memory ------------------------------------------------------------ */

/* copy_to_user: bytes actually written; a fault stops the copy as in the kernel. */
static size_t emu_user_write(uint64_t dst, const void *src, size_t len)
{
	size_t done = 0;
	while (done < len) {
		struct iovec l = { (void *)((const char *)src + done), len - done };
		struct iovec r = { (void *)(uintptr_t)(dst + done), len - done };
		ssize_t w = process_vm_writev(getpid(), &l, 1, &r, 1, 0);
		if (w < 0 && (errno == ENOSYS || errno == EPERM)) {
			memcpy(r.iov_base, l.iov_base, len - done); /* no way to probe: trust the caller */
			return len;
		}
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	return done;
}

static uint8_t emu_tmp[65536 + 2 * EMU_SPM_LINE];

static void emu_commit_xcc(struct emu_spm *s, uint32_t k)
{
	struct emu_spm_xcc *x = &s->x[k];
	while (x->pend_len) {
		uint32_t len = x->pend_len < 65536 ? x->pend_len : 65536;
		uint64_t b0 = x->pend_from, l0 = b0 / EMU_SPM_LINE;
		uint64_t l1 = (b0 + len + EMU_SPM_LINE - 1) / EMU_SPM_LINE;
		for (uint64_t l = l0; l < l1;) {
			uint64_t seq0 = x->slot_seq[l % s->ring_lines];
			uint32_t n = 1;
			while (l + n < l1 && x->slot_seq[(l + n) % s->ring_lines] == seq0 + n)
				n++;
			s->src->fill(&s->src_ctx, k, seq0, n, emu_tmp + (l - l0) * EMU_SPM_LINE);
			l += n;
		}
		size_t w = emu_user_write(x->dest + x->pend_off, emu_tmp + (b0 - l0 * EMU_SPM_LINE), len);
		if (w < len) {
			/* The kernel's worker swallows the EFAULT and flags loss. */
			x->c.lost_efault += len - w;
			x->copied -= (uint32_t)(len - w);
			x->loss = true;
		}
		x->pend_from += len;
		x->pend_off += len;
		x->pend_len -= len;
	}
}

void emu_spm_commit(struct emu_spm *s)
{
	for (uint32_t k = 0; k < s->num_xcc; k++)
		emu_commit_xcc(s, k);
}

/* ---- the copy worker --------------------------------------------------------- */

/* Copy primitive (4.2): as much of the ring as fits; exactly full marks the buffer full. */
static void emu_copy(struct emu_spm *s, uint32_t k, struct emu_spm_xcc *x, uint64_t t)
{
	uint64_t used = x->wptr - x->rptr;
	uint32_t space = x->cap - x->copied;
	uint32_t c = used < space ? (uint32_t)used : space;
	if (c) {
		if (x->pend_len && x->pend_from + x->pend_len != x->rptr && x->slot_seq)
			emu_commit_xcc(s, k);
		if (!x->pend_len) {
			x->pend_from = x->rptr;
			x->pend_off = x->copied;
		}
		x->pend_len += c;
		x->rptr += c;
		x->copied += c;
	}
	if (x->copied == x->cap && !x->full) {
		x->full = true;
		x->fill_ns = t;
	}
}

/*
 * One run of the worker (gen A, on every RLC interrupt) or one poll of the
 * kthread (gen B, acting only above half a ring unless forced).
 */
static void emu_worker(struct emu_spm *s, uint32_t k, struct emu_spm_xcc *x, uint64_t t, bool forced)
{
	if (s->gen == EMU_GEN_B && !forced && (x->wptr - x->rptr) * 2 <= s->ring_bytes)
		return;
	if (!x->armed || x->full) {
		x->loss = true;
		if (s->gen == EMU_GEN_A) {
			/* Gen A discards the ring so the RLC keeps running. */
			uint64_t gone = x->wptr - x->rptr;
			if (x->armed)
				x->c.lost_overflow += gone;
			else
				x->c.lost_no_buffer += gone;
			x->rptr = x->wptr;
		}
		return; /* gen B leaves the data in the ring; the RLC may stall */
	}
	emu_copy(s, k, x, t);
}

static bool emu_injected(const struct emu_spm *s, struct emu_spm_xcc *x, uint64_t t)
{
	for (int i = 0; i < s->ninj; i++)
		if (x->inj_left[i] && t >= s->first_start_ns + s->inj[i].at_ns) {
			x->inj_left[i]--;
			return true;
		}
	return false;
}

static void emu_produce(struct emu_spm *s, uint32_t k, struct emu_spm_xcc *x, uint64_t t)
{
	uint64_t seq = x->next_seq++;
	x->period_lines++;
	x->c.produced += EMU_SPM_LINE;
	if (emu_injected(s, x, t)) {
		x->c.lost_injected += EMU_SPM_LINE;
		x->loss = true; /* reported like a ring stall */
		return;
	}
	if (s->ring_bytes - (x->wptr - x->rptr) < EMU_SPM_LINE) {
		/* Ring full (gen B, buffer full): the RLC stalls and the line is lost. */
		x->c.lost_overflow += EMU_SPM_LINE;
		x->loss = true;
		return;
	}
	if (x->slot_seq) {
		uint64_t line = x->wptr / EMU_SPM_LINE;
		/* The slot is free for the RLC; write out pending bytes before reusing it. */
		if (x->pend_len && line >= s->ring_lines + x->pend_from / EMU_SPM_LINE)
			emu_commit_xcc(s, k);
		x->slot_seq[line % s->ring_lines] = seq;
	}
	x->wptr += EMU_SPM_LINE;
	emu_worker(s, k, x, t, false);
}

/* Generate and process every line of this XCC that exists at `now`. */
static void emu_advance_xcc(struct emu_spm *s, uint32_t k, struct emu_spm_xcc *x, uint64_t now, bool until_full)
{
	if (!s->streaming || !s->rate || now < s->start_ns)
		return;
	uint64_t target = emu_lines_by(s, now - s->start_ns);
	while (x->period_lines < target) {
		if (until_full && x->full)
			return;
		emu_produce(s, k, x, emu_line_time(s, x->period_lines));
	}
}

void emu_spm_advance(struct emu_spm *s, uint64_t now)
{
	for (uint32_t k = 0; k < s->num_xcc; k++)
		emu_advance_xcc(s, k, &s->x[k], now, false);
}

bool emu_spm_armed(const struct emu_spm *s)
{
	return s->x[0].armed;
}

bool emu_spm_prev_full(const struct emu_spm *s)
{
	for (uint32_t k = 0; k < s->num_xcc; k++)
		if (s->x[k].full)
			return true;
	return false;
}

uint64_t emu_spm_predict_fill(const struct emu_spm *s, uint64_t deadline)
{
	uint64_t best = UINT64_MAX;
	for (uint32_t k = 0; k < s->num_xcc; k++) {
		/* A dry run on a copy: no slot writes, no commits, nothing visible. */
		struct emu_spm_xcc dry = s->x[k];
		dry.slot_seq = NULL;
		dry.pend_len = 0;
		emu_advance_xcc((struct emu_spm *)s, k, &dry, deadline, true);
		if (dry.full && dry.fill_ns < best)
			best = dry.fill_ns;
	}
	return best;
}

void emu_spm_flush(struct emu_spm *s, uint64_t now)
{
	for (uint32_t k = 0; k < s->num_xcc; k++)
		emu_worker(s, k, &s->x[k], now, true);
}

static int emu_write_header(uint64_t addr, uint32_t bytes, uint32_t loss)
{
	uint32_t h[8] = { 0x00000004u, bytes, loss, 0, 0, 0, 0, 0 };
	return emu_user_write(addr, h, sizeof(h)) == sizeof(h) ? 0 : EFAULT;
}

int emu_spm_retire(struct emu_spm *s, uint32_t *bytes, uint32_t *loss)
{
	int rc = 0;
	*bytes = 0;
	*loss = 0;
	for (uint32_t k = 0; k < s->num_xcc; k++) {
		struct emu_spm_xcc *x = &s->x[k];
		if (!x->armed)
			continue;
		emu_commit_xcc(s, k);
		if (s->gen == EMU_GEN_B && emu_write_header(x->hdr, x->copied, x->loss)) {
			/* The caller gets EFAULT instead of a count: those bytes are not delivered. */
			x->c.lost_efault += x->copied;
			rc = EFAULT;
		} else {
			x->c.copied += x->copied;
			*bytes += x->copied;
			*loss += x->loss;
		}
		x->armed = false;
		x->full = false;
		x->copied = 0;
		x->cap = 0;
	}
	if (s->gen == EMU_GEN_A && *loss)
		*loss = 1;
	return rc;
}

void emu_spm_arm(struct emu_spm *s, uint64_t dest, uint32_t size, uint64_t now)
{
	bool start = !s->streaming;
	if (start) {
		/* First arm after ACQUIRE or a stop starts the RLC: wptr reset, rptr 0. */
		s->streaming = true;
		s->start_ns = now;
		if (!s->ever_started)
			s->first_start_ns = now;
		s->ever_started = true;
	}
	for (uint32_t k = 0; k < s->num_xcc; k++) {
		struct emu_spm_xcc *x = &s->x[k];
		if (start) {
			x->period_lines = 0;
			x->period_first_seq = x->next_seq;
			x->wptr = x->rptr = 0;
		}
		if (s->gen == EMU_GEN_B) {
			x->hdr = dest + (uint64_t)k * size;
			x->dest = x->hdr + 32;
			x->cap = size - 32;
		} else {
			x->hdr = 0;
			x->dest = dest;
			x->cap = size;
		}
		x->armed = true;
		x->copied = 0;
		x->loss = false;
		x->full = false;
		x->pend_len = 0;
		if (x->cap == 0) {
			x->full = true;
			x->fill_ns = now;
		}
		emu_worker(s, k, x, now, true); /* the asynchronous copy a (re-)arm schedules */
	}
}

void emu_spm_stop(struct emu_spm *s)
{
	for (uint32_t k = 0; k < s->num_xcc; k++) {
		struct emu_spm_xcc *x = &s->x[k];
		x->c.discarded_stop += x->wptr - x->rptr;
		x->rptr = x->wptr;
	}
	s->streaming = false;
}

void emu_spm_discard_all(struct emu_spm *s)
{
	emu_spm_commit(s);
	for (uint32_t k = 0; k < s->num_xcc; k++) {
		struct emu_spm_xcc *x = &s->x[k];
		x->c.discarded_release += (x->wptr - x->rptr) + (x->armed ? x->copied : 0);
		x->rptr = x->wptr;
		x->armed = false;
		x->copied = 0;
	}
	s->streaming = false;
}

struct emu_spm *emu_spm_new(enum emu_gen gen, uint32_t num_xcc, uint32_t gpu_id, uint64_t rate,
			    uint64_t ring_bytes, const struct emu_spm_inj *inj, int ninj)
{
	static uint64_t epoch;
	struct emu_spm *s = calloc(1, sizeof(*s) + num_xcc * sizeof(s->x[0]));
	if (!s)
		return NULL;
	s->gen = gen;
	s->num_xcc = num_xcc;
	s->gpu_id = gpu_id;
	s->epoch = ++epoch;
	s->lock_fd = -1;
	s->rate = rate;
	s->ring_bytes = ring_bytes;
	s->ring_lines = ring_bytes / EMU_SPM_LINE;
	s->ninj = ninj;
	memcpy(s->inj, inj, (size_t)ninj * sizeof(*inj));
	s->src = &emu_spm_source_pattern;
	s->src_ctx = (struct emu_spm_source_ctx){ gpu_id, num_xcc, emu_source_ticks, s };
	for (uint32_t k = 0; k < num_xcc; k++) {
		s->x[k].slot_seq = malloc(s->ring_lines * sizeof(uint64_t));
		if (!s->x[k].slot_seq) {
			emu_spm_free(s);
			return NULL;
		}
		for (int i = 0; i < ninj; i++)
			s->x[k].inj_left[i] = inj[i].lines;
	}
	return s;
}

void emu_spm_free(struct emu_spm *s)
{
	if (!s)
		return;
	for (uint32_t k = 0; k < s->num_xcc; k++)
		free(s->x[k].slot_seq);
	free(s);
}
