/* SPDX-License-Identifier: MIT */
/* The kernel activity log and per-kernel levels (kernel_activity.h). */
#include "emu/shim/kernel_activity.h"
#include "emu/common/emu.h"
#include "emu/shim/dispatch.h"
#include "emu/shim/shim.h"

#include <stdlib.h>
#include <string.h>

static double emu_level_clamp(double v)
{
	return v > 1.0 ? 1.0 : v >= 0.0 ? v : 0.0; /* NaN -> 0 too */
}

double emu_kact_level(const char *name)
{
	const char *v = emu_kernel_knob("SPMTAP_EMU_KERNEL_PROFILE", name);
	if (v)
		return emu_level_clamp(strtod(v, NULL));
	const char *d = getenv("SPMTAP_EMU_KERNEL_LEVEL");
	return emu_level_clamp(d && *d ? strtod(d, NULL) : EMU_KERNEL_LEVEL_DEFAULT);
}

void emu_kact_block_fractions(double f[EMU_NBLK])
{
	static const double def[EMU_NBLK] = {
		[EMU_BLK_CPC] = 0.1, [EMU_BLK_CPF] = 0.1, [EMU_BLK_TCC] = 0.3, [EMU_BLK_TCA] = 0.3, [EMU_BLK_TA] = 0.5,
		[EMU_BLK_TD] = 0.5,  [EMU_BLK_TCP] = 0.5, [EMU_BLK_SPI] = 1.0, [EMU_BLK_SQ] = 1.0,
	};
	memcpy(f, def, sizeof(def));
	const char *e = getenv("SPMTAP_EMU_KERNEL_BLOCKS");
	for (const char *p = e ? e : ""; *p;) {
		const char *eq = strchr(p, '='), *end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		bool known = false;
		for (int b = 0; eq && eq < end && b < EMU_NBLK; b++) {
			const char *nm = emu_blk((enum emu_blk)b)->name;
			if (strlen(nm) == (size_t)(eq - p) && !strncmp(p, nm, (size_t)(eq - p))) {
				f[b] = emu_level_clamp(strtod(eq + 1, NULL));
				known = true;
			}
		}
		if (!known)
			emu_log("SPMTAP_EMU_KERNEL_BLOCKS: \"%.*s\" is not BLOCK=FRACTION of a modelled block; "
				"ignored\n", (int)(end - p), p);
		p = *end ? end + 1 : end;
	}
}

uint64_t emu_kact_append(struct emu_gpu_state *gs, uint64_t start_ns, uint64_t end_ns, uint32_t pid, uint32_t queue,
			 uint64_t index, double level)
{
	struct emu_gs_klog *kl = emu_gs_klog(gs);
	uint64_t seq = kl->head + 1;
	struct emu_gs_kernel *e = &kl->e[(seq - 1) % EMU_GS_KLOG];
	const struct emu_gs_kernel *prev = kl->head ? &kl->e[(kl->head - 1) % EMU_GS_KLOG] : NULL;
	/* Starts never go backwards along the log (the reader's scan relies on it), as emu_gs_append's times. */
	if (prev && start_ns < prev->start_ns) {
		end_ns += prev->start_ns - start_ns;
		start_ns = prev->start_ns;
	}
	if (seq > EMU_GS_KLOG && e->end_ns > start_ns)
		kl->dropped++;
	if (seq == 1)
		kl->first_start_ns = start_ns;
	uint64_t mx = prev && prev->max_end_ns > end_ns ? prev->max_end_ns : end_ns;
	*e = (struct emu_gs_kernel){ seq, start_ns, end_ns, mx, index, pid, queue, level };
	/* Release: a reader's lock-free look at head (emu_kact_at) then finds a whole entry under the lock. */
	__atomic_store_n(&kl->head, seq, __ATOMIC_RELEASE);
	return seq;
}

bool emu_kact_at(struct emu_gpu_state *gs, uint64_t t_ns, struct emu_kact *k)
{
	memset(k, 0, sizeof(*k));
	struct emu_gs_klog *kl = emu_gs_klog(gs);
	if (!__atomic_load_n(&kl->head, __ATOMIC_ACQUIRE))
		return false;
	emu_gs_lock(gs);
	k->first_start_ns = kl->first_start_ns;
	uint64_t head = kl->head, oldest = head > EMU_GS_KLOG ? head - EMU_GS_KLOG + 1 : 1;
	/*
	 * Newest first: entries that start after t are skipped; once no entry at
	 * or before this one ends after t (max_end_ns), none further back can run at t.
	 */
	for (uint64_t s = head; s >= oldest; s--) {
		const struct emu_gs_kernel *e = &kl->e[(s - 1) % EMU_GS_KLOG];
		if (e->max_end_ns <= t_ns)
			break;
		if (e->start_ns <= t_ns && t_ns < e->end_ns) {
			k->level += e->level;
			if (!k->count++)
				k->newest = e->seq;
		}
	}
	emu_gs_unlock(gs);
	return true;
}

/* ---- power follows kernels ------------------------------------------------------ */

double emu_kact_power_activity(struct emu_kact_power *p, uint64_t t_ns)
{
	double a = emu_workload_activity(p->w, t_ns);
	struct emu_kact k;
	if (!p->gs || !emu_kact_at(p->gs, t_ns, &k))
		return a;
	return emu_kact_block(emu_kact_background(a, p->wl_given, &k, t_ns), k.level, 1.0);
}

/* One piece [x, y) (ns) where `n` dispatches with levels summing to L run: the integral of p there (s). */
static double emu_kact_piece(const struct emu_kact_power *p, uint64_t first, uint64_t x, uint64_t y, uint32_t n,
			     double L)
{
	double dt = (double)(y - x) * 1e-9;
	if (!p->wl_given && x >= first)
		return (n ? (L < 1.0 ? L : 1.0) : 0.0) * dt; /* on the idle background */
	double dA = emu_workload_integral(p->w, y) - emu_workload_integral(p->w, x);
	if (!n)
		return dA;
	double v = dA + L * dt;
	return v < dt ? v : dt; /* exact unless the cap bites under a varying workload */
}

struct emu_kact_ev {
	uint64_t t;
	int dn;
	double dl;
};

static int emu_kact_ev_cmp(const void *a, const void *b)
{
	const struct emu_kact_ev *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t;
}

/*
 * Under the lock: the integral of p over [t0, t1) (s), t0 < t1, t0 >= the
 * first start: the log's entries that overlap it cut it into pieces of
 * constant running levels.
 */
static double emu_kact_range(const struct emu_kact_power *p, const struct emu_gs_klog *kl, uint64_t t0, uint64_t t1)
{
	uint64_t head = kl->head, oldest = head > EMU_GS_KLOG ? head - EMU_GS_KLOG + 1 : 1, s;
	/* The scan's reach first: a read at the present touches the few dispatches around it, on the stack. */
	for (s = head; s >= oldest && kl->e[(s - 1) % EMU_GS_KLOG].max_end_ns > t0; s--)
		;
	size_t reach = (size_t)(head - s);
	struct emu_kact_ev stack_ev[64], *ev = reach <= 32 ? stack_ev : malloc(2 * reach * sizeof(*ev));
	if (!ev)
		return emu_workload_integral(p->w, t1) - emu_workload_integral(p->w, t0); /* out of memory: no kernels */
	size_t nev = 0;
	uint32_t n = 0;
	double L = 0;
	for (s = head; s >= oldest; s--) {
		const struct emu_gs_kernel *e = &kl->e[(s - 1) % EMU_GS_KLOG];
		if (e->max_end_ns <= t0)
			break; /* as emu_kact_at: nothing further back runs after t0 */
		if (e->start_ns >= t1 || e->end_ns <= t0 || e->end_ns <= e->start_ns)
			continue;
		if (e->start_ns <= t0) {
			n++;
			L += e->level;
		} else {
			ev[nev++] = (struct emu_kact_ev){ e->start_ns, 1, e->level };
		}
		if (e->end_ns < t1)
			ev[nev++] = (struct emu_kact_ev){ e->end_ns, -1, -e->level };
	}
	qsort(ev, nev, sizeof(*ev), emu_kact_ev_cmp);
	double sum = 0;
	uint64_t x = t0;
	for (size_t i = 0; i < nev; i++) {
		if (ev[i].t > x) {
			sum += emu_kact_piece(p, kl->first_start_ns, x, ev[i].t, n, n ? L : 0.0);
			x = ev[i].t;
		}
		n = (uint32_t)((int)n + ev[i].dn);
		L = n ? L + ev[i].dl : 0.0; /* no residue once nothing runs */
	}
	if (ev != stack_ev)
		free(ev);
	return sum + emu_kact_piece(p, kl->first_start_ns, x, t1, n, n ? L : 0.0);
}

double emu_kact_power_integral(struct emu_kact_power *p, uint64_t t_ns)
{
	struct emu_gs_klog *kl = p->gs ? emu_gs_klog(p->gs) : NULL;
	if (!kl || !__atomic_load_n(&kl->head, __ATOMIC_ACQUIRE))
		return emu_workload_integral(p->w, t_ns);
	emu_gs_lock(p->gs);
	uint64_t first = kl->first_start_ns, now = emu_clock_raw_ns();
	double r;
	if (t_ns <= first) {
		r = emu_workload_integral(p->w, t_ns); /* before any dispatch: the workload alone */
	} else {
		/* From the running integral (either side of t), else from the first start. */
		bool have = p->c && p->c->cached;
		uint64_t c = have ? p->c->t : first;
		double ic = have ? p->c->i : emu_workload_integral(p->w, first);
		r = t_ns >= c ? ic + (t_ns > c ? emu_kact_range(p, kl, c, t_ns) : 0.0) : ic - emu_kact_range(p, kl, t_ns, c);
		/* Cache only the past: a dispatch appended later starts at or after `now` (read under the lock). */
		if (p->c && t_ns <= now && (!have || t_ns > p->c->t))
			*p->c = (struct emu_kact_power_cache){ true, t_ns, r };
	}
	emu_gs_unlock(p->gs);
	return r;
}
