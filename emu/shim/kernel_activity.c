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
