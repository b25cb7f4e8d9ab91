/* SPDX-License-Identifier: MIT */
/* The per-GPU state every process shares (see gpu_state.h). */
#include "emu/shim/gpu_state.h"
#include "emu/shim/rlc.h"
#include "emu/shim/shim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define EMU_GS_MAGIC 0x3174617453554D45ull /* "EMUState1" */
#define EMU_GS_VERSION 2u /* 2: the kernel activity log */

static uint64_t emu_align(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static void emu_gs_layout(struct emu_gpu_state *h, uint32_t gpu_id, enum emu_gfx gfx, uint32_t num_xcc,
			  uint32_t num_se, uint32_t sclk_mhz)
{
	h->gpu_id = gpu_id;
	h->gfx = gfx;
	h->num_xcc = num_xcc;
	h->num_se = num_se;
	h->sclk_mhz = sclk_mhz;
	h->regs_off = emu_align(sizeof(*h), 4096);
	h->slots_off = emu_align(h->regs_off + (uint64_t)num_xcc * sizeof(struct emu_xcc_regs), 4096);
	h->slot_bytes = emu_align(emu_rlc_layout_max_bytes(num_se), 64);
	h->klog_off = emu_align(h->slots_off + (uint64_t)num_xcc * EMU_GS_SLOTS * h->slot_bytes, 4096);
	h->bytes = emu_align(h->klog_off + sizeof(struct emu_gs_klog), 4096);
}

/* Power-on: broadcast GRBM, muxsel RAMs reading "unused", the lock made process-shared and robust. */
static void emu_gs_init(struct emu_gpu_state *gs, bool shared)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	if (shared) {
		pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
		pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	}
	pthread_mutex_init(&gs->lock, &a);
	pthread_mutexattr_destroy(&a);
	struct emu_xcc_regs *x = emu_gs_regs(gs);
	for (uint32_t k = 0; k < gs->num_xcc; k++)
		emu_regs_power_on(&x[k]);
	gs->version = EMU_GS_VERSION;
	__atomic_store_n(&gs->magic, EMU_GS_MAGIC, __ATOMIC_RELEASE);
}

static struct emu_gpu_state *emu_gs_private(const struct emu_gpu_state *want)
{
	struct emu_gpu_state *gs = mmap(NULL, want->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (gs == MAP_FAILED)
		return NULL;
	memcpy(gs, want, sizeof(*want));
	emu_gs_init(gs, false);
	return gs;
}

struct emu_gpu_state *emu_gs_open(uint32_t gpu_id, enum emu_gfx gfx, uint32_t num_xcc, uint32_t num_se,
				  uint32_t sclk_mhz)
{
	struct emu_gpu_state want;
	memset(&want, 0, sizeof(want));
	if (num_xcc > EMU_GS_MAX_XCC)
		num_xcc = EMU_GS_MAX_XCC;
	emu_gs_layout(&want, gpu_id, gfx, num_xcc, num_se, sclk_mhz);
	char dir[PATH_MAX + 16], path[PATH_MAX + 64];
	snprintf(dir, sizeof(dir), "%s/emu-state", emu_p.sysfs);
	snprintf(path, sizeof(path), "%s/gpu-%x.state", dir, gpu_id);
	if (mkdir(dir, 0700) && errno != EEXIST) {
		emu_log("cannot create %s (%s): GPU 0x%x's registers are private to this process\n", dir,
			strerror(errno), gpu_id);
		return emu_gs_private(&want);
	}
	int fd = emu_real_open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		emu_log("cannot open %s (%s): GPU 0x%x's registers are private to this process\n", path,
			strerror(errno), gpu_id);
		return emu_gs_private(&want);
	}
	/* The first process to get here initialises; flock orders it against the others. */
	flock(fd, LOCK_EX);
	struct stat st;
	struct emu_gpu_state *gs = MAP_FAILED;
	bool ok = fstat(fd, &st) == 0;
	bool fresh = ok && st.st_size == 0;
	if (ok && (fresh ? ftruncate(fd, (off_t)want.bytes) == 0 : (uint64_t)st.st_size == want.bytes))
		gs = mmap(NULL, want.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	/* magic 0: a process died between ftruncate and initialising; flock makes retrying safe. */
	if (gs != MAP_FAILED && (fresh || __atomic_load_n(&gs->magic, __ATOMIC_ACQUIRE) == 0)) {
		memcpy(gs, &want, sizeof(want));
		emu_gs_init(gs, true);
	} else if (gs != MAP_FAILED && (gs->magic != EMU_GS_MAGIC || gs->version != EMU_GS_VERSION ||
					gs->num_xcc != want.num_xcc || gs->num_se != want.num_se ||
					gs->bytes != want.bytes)) {
		munmap(gs, want.bytes);
		gs = MAP_FAILED;
	}
	flock(fd, LOCK_UN);
	emu_real_close(fd);
	if (gs == MAP_FAILED) {
		emu_log("%s does not describe GPU 0x%x as this process sees it: its registers are private to this "
			"process\n", path, gpu_id);
		return emu_gs_private(&want);
	}
	EMU_DBG("GPU 0x%x state: %s (%llu bytes)\n", gpu_id, path, (unsigned long long)want.bytes);
	return gs;
}

void emu_gs_lock(struct emu_gpu_state *gs)
{
	if (pthread_mutex_lock(&gs->lock) == EOWNERDEAD) {
		/* A process died inside the CP: what it wrote stays, as on a GPU whose submitter was killed. */
		gs->owner_died++;
		pthread_mutex_consistent(&gs->lock);
		EMU_DBG("GPU 0x%x state: recovered the lock from a dead process\n", gs->gpu_id);
	}
}

void emu_gs_unlock(struct emu_gpu_state *gs)
{
	pthread_mutex_unlock(&gs->lock);
}

struct emu_xcc_regs *emu_gs_regs(struct emu_gpu_state *gs)
{
	return (struct emu_xcc_regs *)((char *)gs + gs->regs_off);
}

struct emu_gs_klog *emu_gs_klog(struct emu_gpu_state *gs)
{
	return (struct emu_gs_klog *)((char *)gs + gs->klog_off);
}

static void *emu_gs_slot(struct emu_gpu_state *gs, uint32_t xcc, uint32_t slot)
{
	return (char *)gs + gs->slots_off + ((uint64_t)xcc * EMU_GS_SLOTS + slot) * gs->slot_bytes;
}

void emu_gs_append(struct emu_gpu_state *gs, uint32_t xcc, uint64_t t_ns, uint32_t state,
		   const struct emu_rlc_layout *L)
{
	if (xcc >= gs->num_xcc)
		return;
	struct emu_gs_xcc *lg = &gs->log[xcc];
	uint64_t seq = lg->head + 1;
	struct emu_gs_entry *e = &lg->e[(seq - 1) % EMU_GS_LOG];
	/* Times never go backwards within an XCC, even if two CPs raced for the lock. */
	uint64_t prev = lg->head ? lg->e[(lg->head - 1) % EMU_GS_LOG].t_ns : 0;
	*e = (struct emu_gs_entry){ seq, t_ns > prev ? t_ns : prev, state, UINT32_MAX };
	if (L) {
		e->slot = (uint32_t)(lg->starts++ % EMU_GS_SLOTS);
		emu_rlc_layout_store(L, emu_gs_slot(gs, xcc, e->slot), gs->slot_bytes);
		lg->slot_seq[e->slot] = seq;
	}
	lg->head = seq;
}

uint64_t emu_gs_head(const struct emu_gpu_state *gs, uint32_t xcc)
{
	return xcc < gs->num_xcc ? gs->log[xcc].head : 0;
}

bool emu_gs_next(struct emu_gpu_state *gs, uint32_t xcc, uint64_t *cursor, uint64_t until,
		 struct emu_gs_entry *out, struct emu_rlc_layout **L)
{
	*L = NULL;
	if (xcc >= gs->num_xcc)
		return false;
	struct emu_gs_xcc *lg = &gs->log[xcc];
	if (*cursor >= lg->head)
		return false;
	if (lg->head - *cursor > EMU_GS_LOG) {
		emu_log("GPU 0x%x XCC %u: %llu RLC state changes happened before the SPM owner looked; the oldest "
			"are skipped\n", gs->gpu_id, xcc, (unsigned long long)(lg->head - *cursor - EMU_GS_LOG));
		*cursor = lg->head - EMU_GS_LOG;
	}
	const struct emu_gs_entry *e = &lg->e[*cursor % EMU_GS_LOG];
	if (e->t_ns > until)
		return false;
	*out = *e;
	(*cursor)++;
	if (e->slot < EMU_GS_SLOTS) {
		if (lg->slot_seq[e->slot] == e->seq)
			*L = emu_rlc_layout_load(emu_gs_slot(gs, xcc, e->slot), gs->slot_bytes);
		else
			emu_log("GPU 0x%x XCC %u: the layout of START #%llu was overwritten before the SPM owner saw "
				"it; that period stays silent\n", gs->gpu_id, xcc, (unsigned long long)e->seq);
	}
	return true;
}
