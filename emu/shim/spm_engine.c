/* SPDX-License-Identifier: MIT */
/*
 * Rings, copy policy and loss of the emulated kfd_spm.c (SPM.md 4.2-4.4).
 * See spm_engine.h for the lazy, time-ordered simulation this implements.
 */
#include "emu/shim/spm_engine.h"
#include "emu/shim/spm_device.h"
#include "emu/shim/gpu_state.h"
#include "emu/shim/rlc.h"
#include "emu/shim/shim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define EMU_NS_PER_MS 1000000ull

/* ---- production timing ---------------------------------------------------- */

static struct emu_spm_period *emu_cur(const struct emu_spm_xcc *x)
{
	return &x->per[x->nper - 1];
}

/* Lines generated in the first `elapsed` ns of period p: whole units only. */
static uint64_t emu_lines_by(const struct emu_spm_period *p, uint64_t elapsed)
{
	return (uint64_t)((unsigned __int128)elapsed * p->t_den / p->t_num) * p->unit_lines;
}

/* Generation time of line j (0-based) of period p: the time its unit is complete. */
static uint64_t emu_line_time(const struct emu_spm_period *p, uint64_t j)
{
	return emu_period_unit_ns(p, j / p->unit_lines);
}

/* The period that produced line `seq` (periods are in seq order). */
static const struct emu_spm_period *emu_period_of(const struct emu_spm_xcc *x, uint64_t seq)
{
	uint32_t lo = 0, hi = x->nper;
	while (hi - lo > 1) {
		uint32_t mid = (lo + hi) / 2;
		if (x->per[mid].first_seq <= seq)
			lo = mid;
		else
			hi = mid;
	}
	return &x->per[lo];
}

static uint64_t emu_source_ticks(const struct emu_spm_source_ctx *ctx, uint32_t xcc, uint64_t seq)
{
	const struct emu_spm *s = ctx->engine;
	const struct emu_spm_period *p = emu_period_of(&s->x[xcc], seq);
	return emu_clock_ticks(emu_line_time(p, seq - p->first_seq));
}

/* Close XCC k's current period: nothing more is generated in it. */
static void emu_period_end(struct emu_spm_xcc *x)
{
	if (x->nper && x->producing) {
		const struct emu_spm_period *p = emu_cur(x);
		if (p->layout)
			x->next_sample = p->first_sample + (x->period_lines + p->unit_lines - 1) / p->unit_lines;
	}
	x->producing = false;
	x->stall_left = 0;
}

static void emu_period_begin(struct emu_spm_xcc *x, uint64_t now, uint64_t t_num, uint64_t t_den,
			     uint32_t unit_lines, const struct emu_spm_source *src, struct emu_rlc_layout *L)
{
	emu_period_end(x);
	if (x->nper && x->per[x->nper - 1].layout)
		emu_rlc_tpl_drop(x->per[x->nper - 1].layout); /* its sample templates: a late fill rebuilds them */
	if (x->nper == x->per_cap) {
		uint32_t cap = x->per_cap ? x->per_cap * 2 : 4;
		struct emu_spm_period *np = realloc(x->per, cap * sizeof(*np));
		if (!np)
			return; /* out of memory: this XCC stays silent */
		x->per = np;
		x->per_cap = cap;
	}
	x->per[x->nper++] = (struct emu_spm_period){ x->next_seq, now, t_num, t_den, unit_lines, x->next_sample, src,
						      emu_rlc_get(L) };
	x->period_lines = 0;
	x->producing = t_den != 0;
}

/* ---- user memory ------------------------------------------------------------ */

/*
 * copy_to_user: bytes actually written; a fault stops the copy as in the kernel.
 * At most 256 KiB a call: a call over a buffer of MiBs stays in the kernel for
 * ms, and on a kernel without preemption (PREEMPT_NONE) a real-time thread
 * woken on that CPU waits for it (a sched trace showed a sensor sampler
 * woken 5.5 ms before it ran, behind the device process).
 * The emulated device's time must not show up as the collector's jitter.
 */
#define EMU_USER_WRITE_MAX (256u << 10)
static size_t emu_user_write(int pid, uint64_t dst, const void *src, size_t len)
{
	size_t done = 0;
	while (done < len) {
		size_t n = len - done < EMU_USER_WRITE_MAX ? len - done : EMU_USER_WRITE_MAX;
		struct iovec l = { (void *)((const char *)src + done), n };
		struct iovec r = { (void *)(uintptr_t)(dst + done), n };
		ssize_t w = process_vm_writev(pid ? pid : getpid(), &l, 1, &r, 1, 0);
		if (w < 0 && !pid && (errno == ENOSYS || errno == EPERM)) {
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

/*
 * Synthesise the ring lines l0 .. l1-1 of XCC k, runs of one period at a
 * time.  ring: each line goes to its ring slot in a ring of s->ring_lines
 * lines (the device's shared ring); else line l0 goes to dst[0] on.
 */
static void emu_fill_lines(struct emu_spm *s, uint32_t k, uint64_t l0, uint64_t l1, uint8_t *dst, bool ring)
{
	struct emu_spm_xcc *x = &s->x[k];
	const uint64_t R = s->ring_lines;
	for (uint64_t l = l0; l < l1;) {
		const uint64_t slot = l % R;
		uint64_t seq0 = x->slot_seq[slot];
		const struct emu_spm_period *p = emu_period_of(x, seq0);
		uint64_t pend = p + 1 < x->per + x->nper ? p[1].first_seq : UINT64_MAX;
		/*
		 * The run: lines l, l + 1, ... whose slots hold seq0, seq0 + 1, ...
		 * The lines asked for are written ones, in order, so their seqs
		 * strictly increase (a lost line takes a seq and no slot): "slot of
		 * line l + j holds seq0 + j" holds for a prefix of j, and a binary
		 * search finds its end.  Reading every slot (with a division per
		 * line) was 17 % of the device's CPU.  A ring run ends at the ring's
		 * end; a linear one may wrap.
		 */
		uint64_t lim = l1 - l;
		if (pend - seq0 < lim)
			lim = pend - seq0;
		if (ring && R - slot < lim)
			lim = R - slot;
		uint64_t n = 1, hi = lim; /* the prefix is at least n long, at most hi */
		while (n < hi) {
			uint64_t mid = n + (hi - n + 1) / 2, sl = slot + mid - 1;
			if (sl >= R)
				sl %= R;
			if (x->slot_seq[sl] == seq0 + mid - 1)
				n = mid;
			else
				hi = mid - 1;
		}
		uint8_t *out = ring ? dst + slot * EMU_SPM_LINE : dst + (l - l0) * EMU_SPM_LINE;
		p->src->fill(&s->src_ctx, p, k, seq0, (uint32_t)n, out);
		l += n;
	}
}

/* The worker's copy_to_user swallows an EFAULT and flags loss (SPM.md 4.2). */
static void emu_short_copy(struct emu_spm_xcc *x, uint32_t short_bytes)
{
	x->c.lost_efault += short_bytes;
	x->copied -= short_bytes;
	x->loss = true;
}

static void emu_commit_xcc(struct emu_spm *s, uint32_t k)
{
	struct emu_spm_xcc *x = &s->x[k];
	while (x->pend_len) {
		uint32_t len = x->pend_len < 65536 ? x->pend_len : 65536;
		uint64_t b0 = x->pend_from, l0 = b0 / EMU_SPM_LINE;
		uint64_t l1 = (b0 + len + EMU_SPM_LINE - 1) / EMU_SPM_LINE;
		emu_fill_lines(s, k, l0, l1, emu_tmp, false);
		size_t w = emu_user_write(s->user_pid, x->dest + x->pend_off, emu_tmp + (b0 - l0 * EMU_SPM_LINE), len);
		if (w < len)
			emu_short_copy(x, (uint32_t)(len - w));
		x->pend_from += len;
		x->pend_off += len;
		x->pend_len -= len;
	}
}

size_t emu_spm_user_write(uint64_t dst, const void *src, size_t len)
{
	return emu_user_write(0, dst, src, len);
}

uint32_t emu_spm_take_pending(struct emu_spm *s, uint32_t k, uint8_t *ring, uint64_t *from, uint64_t *dest)
{
	struct emu_spm_xcc *x = &s->x[k];
	uint32_t len = x->pend_len;
	if (!len || !x->slot_seq)
		return 0;
	uint64_t b0 = x->pend_from;
	emu_fill_lines(s, k, b0 / EMU_SPM_LINE, (b0 + len + EMU_SPM_LINE - 1) / EMU_SPM_LINE, ring, true);
	*from = b0;
	*dest = x->dest + x->pend_off;
	x->pend_from += len;
	x->pend_off += len;
	x->pend_len = 0;
	return len;
}

void emu_spm_short_copy(struct emu_spm *s, uint32_t k, uint32_t short_bytes)
{
	if (short_bytes)
		emu_short_copy(&s->x[k], short_bytes);
}

static void emu_spm_commit_local(struct emu_spm *s)
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
	const struct emu_spm_period *p = emu_cur(x);
	uint64_t j = x->period_lines++;
	x->next_seq++;
	x->c.produced += EMU_SPM_LINE;
	if (j % p->unit_lines == 0 && p->unit_lines > 1) {
		/* Gen B's RLC stalls for a whole sample when the ring cannot take it (ring mode 3). */
		bool stall = s->gen == EMU_GEN_B &&
			     s->ring_bytes - (x->wptr - x->rptr) < (uint64_t)p->unit_lines * EMU_SPM_LINE;
		x->stall_left = stall ? p->unit_lines : 0;
		/*
		 * Gen A's worker runs after every line (emu_worker below) and discards
		 * the ring while the armed buffer is full; no re-arm comes between the
		 * lines of one unit, so a unit that starts on a full buffer is lost
		 * whole.  One that fills the buffer part way is cut, not flagged here.
		 */
		bool discard = s->gen == EMU_GEN_A && (!x->armed || x->full);
		if (x->slot_seq && p->src->produced)
			p->src->produced(&s->src_ctx, p, k, j / p->unit_lines, t,
					 (stall ? EMU_UNIT_STALLED : 0u) | (discard ? EMU_UNIT_DISCARDED : 0u));
	}
	if (x->stall_left) {
		x->stall_left--;
		x->c.lost_overflow += EMU_SPM_LINE;
		x->loss = true;
		return;
	}
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
		x->slot_seq[line % s->ring_lines] = x->next_seq - 1;
	}
	x->wptr += EMU_SPM_LINE;
	emu_worker(s, k, x, t, false);
}

/*
 * The lines from here up to `target` that the kernel loses whole, without
 * anything else changing until the next ioctl: gen B at a unit boundary
 * with no room in the ring for a unit (the RLC stalls over every later one:
 * only a copy frees the ring, and the worker runs only after a line that
 * landed), gen A at a unit boundary with no buffer armed or a full one (the
 * worker discards each line as it lands).  Gen A's injected drops and gen B's
 * single-line units consult the injections first, so those lines stop short
 * of a pending injection and go line by line through it.
 *
 * Accounted in one step, exactly as line by line would (the tests of
 * test_emu_loss compare both against the ground truth), so emulated time
 * costs work only for the lines that reach the ring or a buffer: bounded
 * per ioctl by the ring and the armed buffer, however short the interval.
 * Line by line, interval 32 on a six-XCC MI300A was 400 M lines per second
 * of emulated time, more than the host could simulate, and each ioctl,
 * holding the emulator lock, fell further behind (issue 14 item 4).  The
 * per-sample truth, when asked for, still gets one record per unit.
 */
static void emu_skip_lost(struct emu_spm *s, uint32_t k, struct emu_spm_xcc *x, const struct emu_spm_period *p,
			  uint64_t target)
{
	uint32_t u = p->unit_lines;
	if (x->period_lines % u || x->stall_left || x->period_lines >= target)
		return;
	bool gen_b = s->gen == EMU_GEN_B;
	if (gen_b ? s->ring_bytes - (x->wptr - x->rptr) >= (uint64_t)u * EMU_SPM_LINE : x->armed && !x->full)
		return;
	uint64_t limit = target;
	if (!gen_b || u == 1) {
		for (int i = 0; i < s->ninj; i++) {
			uint64_t at = s->first_start_ns + s->inj[i].at_ns;
			if (!x->inj_left[i])
				continue;
			uint64_t by = at > p->start_ns ? emu_lines_by(p, at - 1 - p->start_ns) : 0;
			if (by < limit)
				limit = by;
		}
	}
	if (limit <= x->period_lines)
		return;
	uint64_t n = limit - x->period_lines;
	if (x->slot_seq && p->src->produced && u > 1 && emu_struth_enabled()) {
		uint32_t fate = gen_b ? EMU_UNIT_STALLED : EMU_UNIT_DISCARDED;
		for (uint64_t j = x->period_lines; j < limit; j += u)
			p->src->produced(&s->src_ctx, p, k, j / u, emu_line_time(p, j), fate);
	}
	x->period_lines += n;
	x->next_seq += n;
	x->c.produced += n * EMU_SPM_LINE;
	x->loss = true;
	if (gen_b) {
		x->c.lost_overflow += n * EMU_SPM_LINE;
		/*
		 * Stopped inside a unit (at this ioctl's `target`): the stalled RLC
		 * drops the rest of that sample too, as emu_produce's stall_left does
		 * line by line.  Without it the rest landed in the ring, a torn sample
		 * no hardware writes, and the decoder (which trusts gen B's samples
		 * to stay whole across a loss flag) read garbage rows after it.
		 */
		if (u > 1 && x->period_lines % u)
			x->stall_left = u - (uint32_t)(x->period_lines % u);
		return;
	}
	/* Gen A: each line lands and the worker discards the ring, with whatever an arm left in it. */
	uint64_t gone = x->wptr - x->rptr + n * EMU_SPM_LINE;
	if (x->armed)
		x->c.lost_overflow += gone;
	else
		x->c.lost_no_buffer += gone;
	x->wptr += n * EMU_SPM_LINE;
	x->rptr = x->wptr;
}

/*
 * How many lines from here up to `target` go through emu_produce with
 * nothing but bookkeeping: no stall (gen B's ring has room for every unit
 * and stays at or below half, so its kthread does not act), no pending
 * injection due, no slot of pending bytes reused, and gen A's armed buffer
 * takes every line without filling (the line that fills it, and fill_ns,
 * go line by line).  Gen B without a buffer to copy to: the kthread above
 * half a ring only flags loss, so the run goes on up to the last line that
 * cannot stall.  0: the next line must go through emu_produce.
 */
static uint64_t emu_run_len(const struct emu_spm *s, const struct emu_spm_xcc *x, const struct emu_spm_period *p,
			    uint64_t target)
{
	if (x->stall_left || x->period_lines >= target)
		return 0;
	uint64_t n = target - x->period_lines, used = x->wptr - x->rptr;
	for (int i = 0; i < s->ninj; i++) {
		if (!x->inj_left[i])
			continue;
		uint64_t at = s->first_start_ns + s->inj[i].at_ns;
		uint64_t by = at > p->start_ns ? emu_lines_by(p, at - 1 - p->start_ns) : 0;
		if (by <= x->period_lines)
			return 0;
		if (by - x->period_lines < n)
			n = by - x->period_lines;
	}
	if (s->gen == EMU_GEN_A) {
		if (!x->armed || x->full || used)
			return 0;
		uint32_t space = x->cap - x->copied;
		uint64_t fit = space ? (space - 1) / EMU_SPM_LINE : 0;
		if (fit < n)
			n = fit;
	} else {
		uint64_t room = (uint64_t)p->unit_lines * EMU_SPM_LINE + used;
		uint64_t half = s->ring_bytes / 2;
		uint64_t nostall = room > s->ring_bytes ? 0 : (s->ring_bytes - room) / EMU_SPM_LINE;
		uint64_t fit = nostall;
		/* With a buffer to copy into, the kthread acts on the line that crosses half a ring. */
		if (x->armed && !x->full)
			fit = used > half ? 0 : (half - used) / EMU_SPM_LINE;
		if (nostall < fit)
			fit = nostall;
		if (fit < n)
			n = fit;
	}
	/*
	 * A line's bytes are made from its slot's seq when they are written out
	 * (emu_fill_lines), so no line may take the slot of one not yet written:
	 * not a pending copy's, not one still in the ring, and not one of this
	 * run.  Without the last, a gen A run that lapped the ring (a step longer
	 * than a ring's worth of lines into a larger buffer) wrote the later
	 * lap's samples where the earlier lap's belonged, out of order, mid-sample.
	 */
	if (x->slot_seq) {
		uint64_t from = x->pend_len ? x->pend_from : x->rptr;
		uint64_t line = x->wptr / EMU_SPM_LINE, free_to = s->ring_lines + from / EMU_SPM_LINE;
		uint64_t fit = free_to > line ? free_to - line : 0;
		if (fit < n)
			n = fit;
	}
	return n;
}

/*
 * n lines as emu_produce makes them one by one, under emu_run_len's
 * conditions: each lands, gen A's worker copies each (one copy of all of
 * them here), gen B's does nothing; every unit that starts among them is
 * reported to the sample truth with no fate.
 */
static void emu_produce_run(struct emu_spm *s, uint32_t k, struct emu_spm_xcc *x, const struct emu_spm_period *p,
			    uint64_t n)
{
	uint64_t j0 = x->period_lines, u = p->unit_lines;
	if (x->slot_seq && p->src->produced && u > 1)
		for (uint64_t j = (j0 + u - 1) / u * u; j < j0 + n; j += u)
			p->src->produced(&s->src_ctx, p, k, j / u, emu_line_time(p, j), 0);
	if (x->slot_seq) {
		/* Up to the ring's end, then from slot 0: no division per line. */
		uint64_t slot = x->wptr / EMU_SPM_LINE % s->ring_lines, seq = x->next_seq;
		for (uint64_t left = n; left;) {
			uint64_t run = s->ring_lines - slot < left ? s->ring_lines - slot : left;
			uint64_t *d = x->slot_seq + slot;
			for (uint64_t i = 0; i < run; i++)
				d[i] = seq + i;
			seq += run;
			left -= run;
			slot = 0;
		}
	}
	x->period_lines += n;
	x->next_seq += n;
	x->c.produced += n * EMU_SPM_LINE;
	x->wptr += n * EMU_SPM_LINE;
	if (s->gen == EMU_GEN_A)
		emu_copy(s, k, x, emu_line_time(p, x->period_lines - 1));
	else if ((x->wptr - x->rptr) * 2 > s->ring_bytes)
		x->loss = true; /* the kthread found more than half a ring and no buffer to copy to */
}

/* Generate and process every line of this XCC that exists at `now`. */
static void emu_advance_xcc(struct emu_spm *s, uint32_t k, struct emu_spm_xcc *x, uint64_t now, bool until_full)
{
	if (!s->streaming || !x->producing)
		return;
	const struct emu_spm_period *p = emu_cur(x);
	if (now < p->start_ns)
		return;
	uint64_t target = emu_lines_by(p, now - p->start_ns);
	while (x->period_lines < target) {
		if (until_full && x->full)
			return;
		emu_skip_lost(s, k, x, p, target);
		uint64_t n = emu_run_len(s, x, p, target);
		if (n > 1)
			emu_produce_run(s, k, x, p, n);
		else if (x->period_lines < target)
			emu_produce(s, k, x, emu_line_time(p, x->period_lines));
	}
}

/*
 * emu_spm_advance_late: the whole units of XCC k made before t, lost
 * unmade.  The per-sample truth still gets one record per unit (its values
 * zeros) unless `untold`: a few stores per sample, where making it is the
 * cost that made the device late.
 */
static void emu_skip_late(struct emu_spm *s, uint32_t k, struct emu_spm_xcc *x, uint64_t t, bool untold)
{
	if (!s->streaming || !x->producing)
		return;
	const struct emu_spm_period *p = emu_cur(x);
	if (t <= p->start_ns)
		return;
	uint64_t target = emu_lines_by(p, t - p->start_ns);
	if (x->period_lines >= target)
		return;
	if (x->period_lines % p->unit_lines || x->stall_left)
		emu_advance_xcc(s, k, x, emu_line_time(p, x->period_lines), false);
	if (x->period_lines >= target || x->stall_left)
		return;
	uint64_t n = target - x->period_lines, u = p->unit_lines;
	if (!untold && x->slot_seq && p->src->produced && u > 1 && emu_struth_enabled()) {
		uint32_t fate = EMU_UNIT_LATE | (s->gen == EMU_GEN_B ? EMU_UNIT_STALLED : EMU_UNIT_DISCARDED);
		for (uint64_t j = x->period_lines; j < target; j += u)
			p->src->produced(&s->src_ctx, p, k, j / u, emu_line_time(p, j), fate);
	}
	x->period_lines += n;
	x->next_seq += n;
	x->c.produced += n * EMU_SPM_LINE;
	x->c.lost_overflow += n * EMU_SPM_LINE;
	x->c.lost_late += n * EMU_SPM_LINE;
	x->loss = true;
}

/*
 * The RLC of XCC k starts (START_COUNTING) or stops producing (STOP or
 * DISABLE_AND_RESET from PM4) at `t`; the caller has advanced to t.  Only
 * while streaming: otherwise KFD's next start resets the RLC anyway.
 */
static void emu_rlc_transition(struct emu_spm *s, uint32_t k, const struct emu_gs_entry *e, struct emu_rlc_layout *L)
{
	struct emu_spm_xcc *x = &s->x[k];
	if (e->state != EMU_SPM_COUNTING || !L) {
		emu_period_end(x);
		return;
	}
	if (!s->streaming) {
		EMU_DBG("RLC gpu 0x%x xcc %u: START_COUNTING before SET_DEST_BUF started streaming; KFD's start "
			"resets it\n", s->gpu_id, k);
		return;
	}
	/* One sample every interval / f_SCLK: interval * 1000 / MHz ns. */
	emu_period_begin(x, e->t_ns, (uint64_t)L->interval * 1000u, L->sclk_mhz, L->lines, &emu_spm_source_rlc, L);
}

void emu_spm_attach(struct emu_spm *s, struct emu_gpu_state *gs)
{
	s->gs = gs;
	s->src_ctx.gs = gs;
	emu_gs_lock(gs);
	for (uint32_t k = 0; k < s->num_xcc; k++)
		s->x[k].log_cursor = emu_gs_head(gs, k);
	emu_gs_unlock(gs);
}

static void emu_spm_advance_local(struct emu_spm *s, uint64_t now, uint64_t skip_to, bool untold)
{
	bool halted = false;
	for (uint32_t k = 0; k < s->num_xcc; k++) {
		struct emu_spm_xcc *x = &s->x[k];
		struct emu_gs_entry e;
		struct emu_rlc_layout *L;
		for (;;) {
			if (!s->gs)
				break;
			emu_gs_lock(s->gs);
			bool got = emu_gs_next(s->gs, k, &x->log_cursor, now, &e, &L);
			emu_gs_unlock(s->gs);
			if (!got)
				break;
			/*
			 * Layout ids count per process; the owner's sample truth outlives one
			 * device process, so a device numbers its layouts apart from the others.
			 */
			if (L && s->layout_id_base)
				L->id += s->layout_id_base;
			emu_skip_late(s, k, x, e.t_ns < skip_to ? e.t_ns : skip_to, untold);
			emu_advance_xcc(s, k, x, e.t_ns, false);
			EMU_DBG("RLC gpu 0x%x xcc %u: state %u at %llu replayed at %llu (log #%llu)\n", s->gpu_id, k, e.state,
				(unsigned long long)e.t_ns, (unsigned long long)now, (unsigned long long)e.seq);
			emu_rlc_transition(s, k, &e, L);
			halted |= e.state != EMU_SPM_COUNTING;
			emu_rlc_put(L);
		}
		emu_skip_late(s, k, x, now < skip_to ? now : skip_to, untold);
		emu_advance_xcc(s, k, x, now, false);
	}
	if (halted)
		emu_struth_flush();
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

uint64_t emu_spm_fill_time(const struct emu_spm *s)
{
	uint64_t best = UINT64_MAX;
	for (uint32_t k = 0; k < s->num_xcc; k++)
		if (s->x[k].full && s->x[k].fill_ns < best)
			best = s->x[k].fill_ns;
	return best;
}

static uint64_t emu_spm_predict_fill_local(const struct emu_spm *s, uint64_t deadline)
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

static void emu_spm_flush_local(struct emu_spm *s, uint64_t now)
{
	for (uint32_t k = 0; k < s->num_xcc; k++)
		emu_worker(s, k, &s->x[k], now, true);
}

static int emu_write_header(int pid, uint64_t addr, uint32_t bytes, uint32_t loss)
{
	uint32_t h[8] = { 0x00000004u, bytes, loss, 0, 0, 0, 0, 0 };
	return emu_user_write(pid, addr, h, sizeof(h)) == sizeof(h) ? 0 : EFAULT;
}

static int emu_spm_retire_local(struct emu_spm *s, uint32_t *bytes, uint32_t *loss)
{
	int rc = 0;
	*bytes = 0;
	*loss = 0;
	for (uint32_t k = 0; k < s->num_xcc; k++) {
		struct emu_spm_xcc *x = &s->x[k];
		if (!x->armed)
			continue;
		emu_commit_xcc(s, k);
		if (s->gen == EMU_GEN_B && emu_write_header(s->user_pid, x->hdr, x->copied, x->loss)) {
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

static void emu_spm_arm_local(struct emu_spm *s, uint64_t dest, uint32_t size, uint64_t now)
{
	bool start = !s->streaming;
	if (start) {
		/* First arm after ACQUIRE or a stop starts the RLC: wptr reset, rptr 0. */
		s->streaming = true;
		if (!s->ever_started)
			s->first_start_ns = now;
		s->ever_started = true;
	}
	for (uint32_t k = 0; k < s->num_xcc; k++) {
		struct emu_spm_xcc *x = &s->x[k];
		if (start) {
			/*
			 * KFD's start resets the RLC (DISABLE_AND_RESET): real hardware
			 * writes nothing until a PM4 START.  On a GPU no process has ever
			 * run PM4 on (transport-only use) the emulator streams the
			 * self-checking pattern instead; once one has, silence.
			 */
			bool programmed = s->gs && __atomic_load_n(&s->gs->pm4_seen, __ATOMIC_ACQUIRE);
			emu_period_begin(x, now, EMU_SPM_LINE * EMU_NS_PER_MS, programmed ? 0 : s->rate, 1,
					 &emu_spm_source_pattern, NULL);
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

static void emu_spm_stop_local(struct emu_spm *s)
{
	for (uint32_t k = 0; k < s->num_xcc; k++) {
		struct emu_spm_xcc *x = &s->x[k];
		x->c.discarded_stop += x->wptr - x->rptr;
		x->rptr = x->wptr;
		emu_period_end(x);
	}
	s->streaming = false;
}

static void emu_spm_discard_all_local(struct emu_spm *s)
{
	emu_spm_commit_local(s);
	for (uint32_t k = 0; k < s->num_xcc; k++) {
		struct emu_spm_xcc *x = &s->x[k];
		x->c.discarded_release += (x->wptr - x->rptr) + (x->armed ? x->copied : 0);
		x->rptr = x->wptr;
		x->armed = false;
		x->copied = 0;
		emu_period_end(x);
	}
	s->streaming = false;
}

const struct emu_rlc_layout *emu_spm_last_layout(const struct emu_spm *s, uint32_t k)
{
	const struct emu_spm_xcc *x = &s->x[k];
	for (uint32_t i = x->nper; i-- > 0;)
		if (x->per[i].layout)
			return x->per[i].layout;
	return NULL;
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
	s->src_ctx = (struct emu_spm_source_ctx){ gpu_id, num_xcc, emu_source_ticks, s, NULL };
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
	if (s->dev)
		emu_dev_close(s);
	for (uint32_t k = 0; k < s->num_xcc; k++) {
		for (uint32_t i = 0; i < s->x[k].nper; i++)
			emu_rlc_put(s->x[k].per[i].layout);
		free(s->x[k].per);
		free(s->x[k].slot_seq);
	}
	free(s);
}

/* ---- the public calls: the device process's, or this process's (timed) ----- */

static uint64_t emu_thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Inline, the device's work runs on the caller's threads: its CPU is
 * measured around each call so the truth can report it ("device_cpu_s").
 * In the device process the whole process's CPU is the device's.
 */
#define EMU_INLINE_TIMED(s, call)                                        \
	do {                                                             \
		bool timed_ = !(s)->in_device;                           \
		uint64_t t0_ = timed_ ? emu_thread_cpu_ns() : 0;         \
		call;                                                    \
		if (timed_)                                              \
			((struct emu_spm *)(s))->cpu_ns += emu_thread_cpu_ns() - t0_; \
	} while (0)

void emu_spm_advance(struct emu_spm *s, uint64_t now)
{
	if (s->dev) {
		emu_dev_call(s, EMU_DEV_ADVANCE, now, 0, 0);
		return;
	}
	EMU_INLINE_TIMED(s, emu_spm_advance_local(s, now, 0, false));
}

void emu_spm_advance_late(struct emu_spm *s, uint64_t now, uint64_t skip_to, bool untold)
{
	if (s->dev) {
		emu_dev_call(s, EMU_DEV_ADVANCE, now, 0, 0); /* the device decides when it is late */
		return;
	}
	EMU_INLINE_TIMED(s, emu_spm_advance_local(s, now, skip_to, untold));
}

uint64_t emu_spm_predict_fill(const struct emu_spm *s, uint64_t deadline)
{
	uint64_t r;
	if (s->dev) {
		struct emu_spm *m = (struct emu_spm *)s; /* the mirror, not the engine, changes */
		return emu_dev_call(m, EMU_DEV_PREDICT, deadline, 0, 0) ? UINT64_MAX : m->dev_val;
	}
	EMU_INLINE_TIMED(s, r = emu_spm_predict_fill_local(s, deadline));
	return r;
}

void emu_spm_hold(struct emu_spm *s, bool on)
{
	if (s->dev)
		emu_dev_hold(s, on);
}

void emu_spm_flush(struct emu_spm *s, uint64_t now)
{
	if (s->dev) {
		emu_dev_flush(s, now); /* in this thread, as the kernel's is in the caller's syscall */
		return;
	}
	EMU_INLINE_TIMED(s, emu_spm_flush_local(s, now));
}

int emu_spm_retire(struct emu_spm *s, uint32_t *bytes, uint32_t *loss)
{
	int rc;
	if (s->dev) {
		if (emu_dev_call(s, EMU_DEV_RETIRE, 0, 0, 0)) {
			*bytes = *loss = 0;
			return 0;
		}
		*bytes = s->dev_bytes;
		*loss = s->dev_loss;
		return s->dev_rc;
	}
	EMU_INLINE_TIMED(s, rc = emu_spm_retire_local(s, bytes, loss));
	return rc;
}

void emu_spm_arm(struct emu_spm *s, uint64_t dest, uint32_t size, uint64_t now)
{
	if (s->dev) {
		emu_dev_call(s, EMU_DEV_ARM, dest, size, now);
		return;
	}
	EMU_INLINE_TIMED(s, emu_spm_arm_local(s, dest, size, now));
}

int emu_spm_rotate(struct emu_spm *s, uint64_t dest, uint32_t size, uint64_t now, uint32_t *bytes, uint32_t *loss)
{
	if (s->dev) {
		/* One request, not three: each is a round trip the collector pays for. */
		if (emu_dev_call(s, EMU_DEV_ROTATE, dest, size, now)) {
			*bytes = *loss = 0;
			return 0;
		}
		*bytes = s->dev_bytes;
		*loss = s->dev_loss;
		return s->dev_rc;
	}
	int rc = emu_spm_retire(s, bytes, loss);
	if (dest)
		emu_spm_arm(s, dest, size, now);
	else
		emu_spm_stop(s);
	emu_spm_commit(s);
	return rc;
}

void emu_spm_stop(struct emu_spm *s)
{
	if (s->dev) {
		emu_dev_call(s, EMU_DEV_STOP, 0, 0, 0);
		return;
	}
	EMU_INLINE_TIMED(s, emu_spm_stop_local(s));
}

void emu_spm_discard_all(struct emu_spm *s)
{
	if (s->dev) {
		emu_dev_call(s, EMU_DEV_DISCARD, 0, 0, 0);
		return;
	}
	EMU_INLINE_TIMED(s, emu_spm_discard_all_local(s));
}

void emu_spm_commit(struct emu_spm *s)
{
	if (s->dev) {
		emu_dev_call(s, EMU_DEV_COMMIT, 0, 0, 0);
		return;
	}
	EMU_INLINE_TIMED(s, emu_spm_commit_local(s));
}
