/* SPDX-License-Identifier: MIT */
/*
 * The CP's execution of PM4 on a GPU (from a queue, or from the test-only
 * channel of emu/common/test_pm4.h), the test-only register read-back
 * (emu/common/readback.h), and the link between the register file and the
 * SPM engine: a START_COUNTING, STOP_COUNTING or DISABLE_AND_RESET written
 * by PM4 goes into the GPU's transition log (gpu_state.h) with the moment
 * it executed, and the process holding SPM, this one or another, replays it.
 *
 * The CP runs under emu_p.lock and the GPU's shared lock, so a
 * WAIT_REG_MEM blocks this process's other emulated ioctls, and every
 * process's CP and SPM on that GPU, for at most SPMTAP_EMU_CP_WAIT_MS.
 */
#include "emu/shim/cp.h"
#include "emu/common/readback.h"
#include "emu/common/test_pm4.h"
#include "emu/shim/gpu_state.h"
#include "emu/shim/rlc.h"
#include "emu/shim/shim.h"
#include "emu/shim/spm_engine.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* Under the GPU's lock (the CP holds it while it executes). */
static void emu_spm_state_changed(struct emu_gpu_regs *r, uint32_t xcc, unsigned old_state, unsigned new_state,
				  const struct emu_rlc_layout *L)
{
	struct emu_gpu *g = r->owner;
	EMU_DBG("CP: gpu 0x%x xcc %u SPM_PERFMON_STATE %u -> %u\n", g->gpu_id, xcc, old_state, new_state);
	emu_gs_append(g->gs, xcc, emu_clock_raw_ns(), new_state, L);
}

/* The GPU's layout as its state file records it. */
static void emu_gpu_layout(const struct emu_gpu *g, enum emu_gfx *gfx, uint32_t *num_se, uint32_t *sclk)
{
	const struct emu_profile *p = g->profile;
	if (p) {
		*gfx = !strcmp(p->gfx_name, "gfx90a") ? EMU_GFX90A : EMU_GFX942;
		*num_se = p->array_count / p->simd_arrays_per_engine / (p->num_xcc ? p->num_xcc : 1);
		*sclk = p->sclk_mhz;
	} else {
		/* A tree not written by emu_tree_write: guess the family from the XCC count. */
		*gfx = g->num_xcc > 1 ? EMU_GFX942 : EMU_GFX90A;
		*num_se = g->num_xcc > 1 ? 4 : 8;
		*sclk = g->num_xcc > 1 ? 2100 : 1700;
	}
	if (*num_se > EMU_MAX_SE)
		*num_se = EMU_MAX_SE;
}

struct emu_gpu_state *emu_gpu_state_map(const struct emu_gpu *g)
{
	enum emu_gfx gfx;
	uint32_t num_se, sclk;
	emu_gpu_layout(g, &gfx, &num_se, &sclk);
	return emu_gs_open(g->gpu_id, gfx, g->num_xcc, num_se, sclk);
}

struct emu_gpu_regs *emu_gpu_regs(struct emu_gpu *g)
{
	if (g->regs)
		return g->regs;
	enum emu_gfx gfx;
	uint32_t num_se, sclk;
	emu_gpu_layout(g, &gfx, &num_se, &sclk);
	if (!g->gs)
		g->gs = emu_gs_open(g->gpu_id, gfx, g->num_xcc, num_se, sclk);
	struct emu_gpu_regs *r = g->gs ? calloc(1, sizeof(*r)) : NULL;
	if (!r)
		return NULL;
	*r = (struct emu_gpu_regs){ .gpu_id = g->gpu_id, .gfx = gfx, .num_xcc = g->gs->num_xcc, .num_se = num_se,
				    .sclk_mhz = sclk, .hook = emu_spm_state_changed, .owner = g,
				    .x = emu_gs_regs(g->gs) };
	g->regs = r;
	return r;
}

static int emu_fail_errno(int e)
{
	errno = e;
	return -1;
}

static void emu_pm4_err(struct emu_test_pm4_args *a, uint32_t at, const char *msg)
{
	a->err_dw = at;
	a->done_dw = at;
	snprintf(a->err, sizeof(a->err), "%s", msg);
	EMU_DBG("TEST_PM4 gpu 0x%x: %s\n", a->gpu_id, a->err);
}

int emu_cp_run_locked(struct emu_gpu *g, const uint32_t *dw, size_t n, uint32_t mask, char *err, size_t errlen,
		      uint32_t *err_dw)
{
	struct emu_gpu_regs *r = emu_gpu_regs(g);
	if (!r) {
		snprintf(err, errlen, "out of memory for the register file");
		*err_dw = 0;
		return -1;
	}
	if (!mask)
		mask = (uint32_t)((1ull << r->num_xcc) - 1);
	int rc = 0;
	emu_gs_lock(g->gs);
	/* XCCs run one after another; on an error the XCCs before it have run the whole stream. */
	for (uint32_t k = 0; k < r->num_xcc; k++) {
		if (!(mask & (1u << k)))
			continue;
		char msg[EMU_TEST_PM4_ERRLEN];
		if (emu_cp_execute(r, k, dw, n, msg, sizeof(msg), err_dw)) {
			snprintf(err, errlen, "XCC %u: %s", k, msg);
			rc = -1;
			break;
		}
	}
	if (!rc)
		g->gs->pm4_seen = 1;
	emu_gs_unlock(g->gs);
	/* The SPM owner replays the transitions; when that is this process, at once. */
	if (g->spm) {
		emu_spm_advance(g->spm, emu_clock_raw_ns());
		emu_spm_commit(g->spm);
	}
	return rc;
}

int emu_test_pm4_ioctl(void *arg)
{
	struct emu_test_pm4_args *a = arg;
	a->done_dw = 0;
	a->err_dw = 0;
	a->err[0] = 0;
	pthread_mutex_lock(&emu_p.lock);
	struct emu_gpu *g = emu_gpu_by_id(a->gpu_id);
	int rc = 0;
	uint32_t *dw = NULL;
	char msg[EMU_TEST_PM4_ERRLEN];
	if (!g) {
		emu_pm4_err(a, 0, "unknown gpu_id");
		rc = EINVAL;
		goto out;
	}
	if (a->reserved || a->ndw > (1u << 20) || (a->ndw && !a->pm4) ||
	    (a->xcc_mask && (a->xcc_mask >> g->num_xcc))) {
		snprintf(msg, sizeof(msg), "bad arguments: ndw %u, xcc_mask 0x%x for %u XCCs, reserved %u", a->ndw,
			 a->xcc_mask, g->num_xcc, a->reserved);
		emu_pm4_err(a, 0, msg);
		rc = EINVAL;
		goto out;
	}
	dw = malloc((size_t)a->ndw * 4 + 4);
	if (!dw) {
		rc = ENOMEM;
		goto out;
	}
	struct iovec l = { dw, (size_t)a->ndw * 4 }, rv = { (void *)(uintptr_t)a->pm4, (size_t)a->ndw * 4 };
	if (a->ndw && process_vm_readv(getpid(), &l, 1, &rv, 1, 0) != (ssize_t)l.iov_len) {
		if (errno == ENOSYS || errno == EPERM) {
			memcpy(dw, rv.iov_base, l.iov_len);
		} else {
			emu_pm4_err(a, 0, "the PM4 dwords are not readable");
			rc = EFAULT;
			goto out;
		}
	}
	uint32_t at = 0;
	if (emu_cp_run_locked(g, dw, a->ndw, a->xcc_mask, msg, sizeof(msg), &at)) {
		emu_pm4_err(a, at, msg);
		rc = EINVAL;
		goto out;
	}
	a->done_dw = a->ndw;
	EMU_DBG("TEST_PM4 gpu 0x%x: %u dwords on XCC mask 0x%x\n", a->gpu_id, a->ndw, a->xcc_mask);
out:
	pthread_mutex_unlock(&emu_p.lock);
	free(dw);
	return rc ? emu_fail_errno(rc) : 0;
}

int emu_readback_ioctl(void *arg)
{
	struct emu_readback_args *a = arg;
	pthread_mutex_lock(&emu_p.lock);
	struct emu_gpu *g = emu_gpu_by_id(a->gpu_id);
	if (g && a->what == EMU_RB_QUEUE) {
		int qrc = emu_queue_readback(a->gpu_id, a->addr, a->instance, &a->value);
		pthread_mutex_unlock(&emu_p.lock);
		return qrc ? emu_fail_errno(qrc) : 0;
	}
	struct emu_gpu_regs *r = g ? emu_gpu_regs(g) : NULL;
	int rc = EINVAL;
	if (r) {
		emu_gs_lock(g->gs);
		rc = emu_regs_peek(r, a->xcc, a->what, a->addr, a->se, a->instance, &a->value);
		emu_gs_unlock(g->gs);
	}
	pthread_mutex_unlock(&emu_p.lock);
	return rc ? emu_fail_errno(rc) : 0;
}
