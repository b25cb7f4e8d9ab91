/* SPDX-License-Identifier: MIT */
/*
 * AMDKFD_IOC_RLC_SPM: per-op checks and error codes of generations A and B
 * (SPM.md 3.3-3.6), timeouts, and SPM ownership across processes.
 *
 * Cross-process exclusivity is our design choice (the real kernel returns
 * EINVAL from the old VMID code, or lets the second process steal SPM):
 * ACQUIRE takes flock on $SPMTAP_EMU_STATE_DIR/spm-<gpu_id hex>.lock, so
 * another process gets EBUSY and a crashed owner frees it automatically.
 */
#include "emu/shim/shim.h"
#include "emu/shim/gpu_state.h"
#include "emu/shim/regs.h"
#include "emu/shim/rlc.h"
#include "emu/shim/spm_engine.h"
#include "emu/shim/spm_device.h"
#include "uapi/kfd_spm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

/* A waiting SET_DEST_BUF looks at the GPU's transitions at least this often. */
#define EMU_WAIT_SLICE_NS 10000000ull

static int emu_spm_fail(int err)
{
	errno = err;
	return -1;
}

static enum emu_gen emu_gen_for(const struct emu_gpu *g)
{
	const char *e = getenv("SPMTAP_EMU_GEN");
	if (e && (!strcmp(e, "A") || !strcmp(e, "a")))
		return EMU_GEN_A;
	if (e && (!strcmp(e, "B") || !strcmp(e, "b")))
		return EMU_GEN_B;
	if (g->profile)
		return g->profile->default_gen;
	return g->num_xcc > 1 ? EMU_GEN_B : EMU_GEN_A;
}

/* SPMTAP_EMU_INJECT_DROP=AT_MS:BYTES[,AT_MS:BYTES...]; bytes round up to whole lines. */
static int emu_parse_inject(struct emu_spm_inj *inj)
{
	const char *e = getenv("SPMTAP_EMU_INJECT_DROP");
	int n = 0;
	while (e && *e && n < EMU_SPM_MAX_INJ) {
		char *end;
		double at = strtod(e, &end);
		if (*end != ':' || at < 0) {
			emu_log("ignoring malformed SPMTAP_EMU_INJECT_DROP at '%s'\n", e);
			break;
		}
		unsigned long long bytes = strtoull(end + 1, &end, 0);
		inj[n].at_ns = (uint64_t)(at * 1e6);
		inj[n].lines = (bytes + EMU_SPM_LINE - 1) / EMU_SPM_LINE;
		n++;
		if (*end != ',')
			break;
		e = end + 1;
	}
	return n;
}

/* The lock file holds "pid comm" so a user can see who has the device. */
static int emu_spm_lock(uint32_t gpu_id, int *fd_out)
{
	char dir[PATH_MAX], path[PATH_MAX + 32], comm[64] = "?", line[128];
	const char *e = getenv("SPMTAP_EMU_STATE_DIR");
	if (e && *e)
		snprintf(dir, sizeof(dir), "%s", e);
	else
		snprintf(dir, sizeof(dir), "/tmp/spmtap-emu-%u", (unsigned)getuid());
	if (mkdir(dir, 0700) && errno != EEXIST)
		return errno;
	snprintf(path, sizeof(path), "%s/spm-%x.lock", dir, gpu_id);
	int fd = emu_real_open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		emu_real_close(fd);
		EMU_DBG("SPM acquire gpu 0x%x: held by another process (%s)\n", gpu_id, path);
		return EBUSY;
	}
	FILE *f = emu_real_fopen("/proc/self/comm", "r");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	int n = snprintf(line, sizeof(line), "%d %s\n", (int)getpid(), comm);
	if (ftruncate(fd, 0) || write(fd, line, (size_t)n) != n)
		EMU_DBG("could not record the SPM owner in %s\n", path);
	*fd_out = fd;
	return 0;
}

static void emu_spm_drop(struct emu_gpu *g, bool unlock)
{
	struct emu_spm *s = g->spm;
	if (s->lock_fd >= 0) {
		/* After fork the description is shared with the parent: only the owner unlocks. */
		if (unlock)
			flock(s->lock_fd, LOCK_UN);
		emu_real_close(s->lock_fd);
	}
	emu_spm_free(s);
	g->spm = NULL;
}

static int emu_spm_acquire(struct emu_gpu *g)
{
	if (g->spm)
		return g->spm->gen == EMU_GEN_A ? EINVAL : EBUSY;
	enum emu_gen gen = emu_gen_for(g);
	if (gen == EMU_GEN_A && g->num_xcc > 1) {
		EMU_DBG("SPM acquire gpu 0x%x: generation A cannot drive %u XCCs -> EINVAL\n", g->gpu_id,
			g->num_xcc);
		return EINVAL;
	}
	struct emu_spm_inj inj[EMU_SPM_MAX_INJ];
	int ninj = emu_parse_inject(inj);
	uint64_t rate = emu_env_u64("SPMTAP_EMU_RATE", EMU_SPM_DEFAULT_RATE);
	uint64_t ring = emu_env_u64("SPMTAP_EMU_RING_SIZE", EMU_SPM_DEFAULT_RING) / EMU_SPM_LINE * EMU_SPM_LINE;
	if (ring < 2 * EMU_SPM_LINE)
		ring = 2 * EMU_SPM_LINE;
	int fd = -1, err = emu_spm_lock(g->gpu_id, &fd);
	if (err)
		return err;
	g->spm = NULL;
	if (emu_gpu_regs(g) && emu_dev_wanted()) {
		/* The device's own process (spm_device.h); the inline engine when it cannot start. */
		char why[256];
		g->spm = emu_dev_spawn(gen, g->num_xcc, g->gpu_id, rate, ring, inj, ninj, g->gs, why, sizeof(why));
		if (!g->spm)
			emu_log("SPM on gpu 0x%x: no device process (%s); the engine runs inline\n", g->gpu_id, why);
	}
	if (!g->spm && emu_gpu_regs(g)) {
		g->spm = emu_spm_new(gen, g->num_xcc, g->gpu_id, rate, ring, inj, ninj);
		if (g->spm)
			emu_spm_attach(g->spm, g->gs);
	}
	if (!g->spm) {
		flock(fd, LOCK_UN);
		emu_real_close(fd);
		return ENOMEM;
	}
	g->spm->lock_fd = fd;
	EMU_DBG("SPM acquire gpu 0x%x gen %c xcc %u rate %llu B/ms ring %llu B\n", g->gpu_id,
		gen == EMU_GEN_A ? 'A' : 'B', g->num_xcc, (unsigned long long)rate, (unsigned long long)ring);
	return 0;
}

/* KFD's own RLC writes at a streaming start (RING_MODE 3, DISABLE_AND_RESET) and stop (DISABLE_AND_RESET). */
static void emu_kfd_rlc(struct emu_gpu *g, bool start)
{
	struct emu_gpu_regs *r = emu_gpu_regs(g);
	if (!r)
		return;
	emu_gs_lock(g->gs);
	if (start)
		emu_regs_kfd_start(r);
	else
		emu_regs_kfd_stop(r);
	emu_gs_unlock(g->gs);
}

/* Release with the ground truth written: RELEASE, the last KFD close, or exit. */
static void emu_spm_release_locked(struct emu_gpu *g)
{
	emu_spm_hold(g->spm, true); /* the device ends with this call */
	emu_spm_advance(g->spm, emu_clock_raw_ns());
	emu_spm_discard_all(g->spm);
	emu_kfd_rlc(g, false);
	emu_truth_release(g->spm);
	emu_struth_flush();
	emu_spm_drop(g, true);
}

/* Sleeps until raw time `until`; 1 if a handled signal interrupted the wait. */
static int emu_sleep_until(uint64_t until)
{
	for (;;) {
		uint64_t now = emu_clock_raw_ns();
		if (now >= until)
			return 0;
		uint64_t d = until - now;
		struct timespec ts = { (time_t)(d / 1000000000ull), (long)(d % 1000000000ull) };
		if (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL) == EINTR)
			return 1;
	}
}

static int emu_spm_set_dest(struct emu_gpu *g, struct spmtap_kfd_spm_args *a)
{
	struct emu_spm *s = g->spm;
	if (!s)
		return EINVAL;
	uint32_t size = a->buf_size;
	if (s->gen == EMU_GEN_B) {
		/* Checked before dest_buf, so it refuses a stop request too (3.3 step 2). */
		size = a->buf_size / s->num_xcc / EMU_SPM_LINE * EMU_SPM_LINE;
		if (size <= EMU_SPM_LINE)
			return EINVAL;
	}
	uint64_t now = emu_clock_raw_ns();
	/* The kernel's SPM mutex: the device's worker waits until this call is done or sleeps. */
	emu_spm_hold(s, true);
	emu_spm_advance(s, now);

	uint32_t timeout = a->timeout;
	bool waited = false;
	uint32_t ms_left = 0;
	if (timeout && emu_spm_armed(s) && !emu_spm_prev_full(s)) {
		uint64_t deadline = now + (uint64_t)timeout * 1000000ull;
		uint64_t epoch = s->epoch;
		/*
		 * Sleep until the buffer is predicted to fill or the deadline, in
		 * slices: another process's CP may start or stop the RLC meanwhile,
		 * and the prediction only knows what has happened so far.
		 */
		for (;;) {
			emu_spm_hold(s, false); /* sleeping, the waiter lets the worker run */
			uint64_t fill = emu_spm_predict_fill(s, deadline);
			uint64_t wake = fill < deadline ? fill : deadline;
			if (wake > now + EMU_WAIT_SLICE_NS)
				wake = now + EMU_WAIT_SLICE_NS;
			pthread_mutex_unlock(&emu_p.lock);
			int intr = emu_sleep_until(wake);
			pthread_mutex_lock(&emu_p.lock);
			if (!g->spm || g->spm->epoch != epoch) {
				/* Released while we waited: the kernel wakes the waiter with nothing to report. */
				a->bytes_copied = 0;
				a->has_data_loss = 0;
				return 0;
			}
			now = emu_clock_raw_ns();
			if (intr) {
				/* ERESTARTSYS: gen A has already written back the ms left, gen B has not. */
				if (s->gen == EMU_GEN_A)
					a->timeout = now < deadline ? (uint32_t)((deadline - now) / 1000000ull) : 0;
				return EINTR;
			}
			emu_spm_hold(s, true);
			emu_spm_advance(s, now);
			uint64_t filled = emu_spm_fill_time(s);
			if (filled != UINT64_MAX || now >= deadline) {
				waited = true;
				ms_left = filled <= deadline ? (uint32_t)((deadline - filled) / 1000000ull) : 0;
				break;
			}
		}
	}
	if (timeout == 0 && emu_spm_armed(s))
		emu_spm_flush(s, now);
	/*
	 * KFD's start writes the RLC before the arm; no step of the rotation
	 * replays the GPU's transitions, so before the retire is the same.
	 */
	if (a->dest_buf && !s->streaming)
		emu_kfd_rlc(g, true);
	uint32_t bytes, loss;
	emu_spm_hold(s, false); /* with the rotation's end */
	int rc = emu_spm_rotate(s, a->dest_buf, size, now, &bytes, &loss);
	a->bytes_copied = bytes;
	a->has_data_loss = loss;
	if (!a->dest_buf) {
		emu_kfd_rlc(g, false);
		emu_struth_flush();
	}
	if (s->gen == EMU_GEN_A && waited)
		a->timeout = ms_left;
	EMU_DBG("SPM set_dest_buf gpu 0x%x dest %#llx size %u timeout %u -> copied %u loss %u rc %d\n",
		g->gpu_id, (unsigned long long)a->dest_buf, a->buf_size, timeout, bytes, loss, rc);
	return rc;
}

int emu_spm_ioctl(void *arg)
{
	struct spmtap_kfd_spm_args *a = arg;
	const char *nospm = getenv("SPMTAP_EMU_NO_SPM");
	if (nospm && *nospm) {
		/* A kernel without the ROCm SPM ioctl: upstream says EINVAL, the 2025 patch ENOTTY. */
		return emu_spm_fail(!strcmp(nospm, "enotty") ? ENOTTY : EINVAL);
	}
	int err;
	pthread_mutex_lock(&emu_p.lock);
	struct emu_gpu *g = emu_gpu_by_id(a->gpu_id);
	if (!g || !g->pdd) {
		err = EINVAL; /* unknown gpu_id, or no per-process device (no ACQUIRE_VM) */
	} else {
		switch (a->op) {
		case SPMTAP_KFD_SPM_OP_ACQUIRE:
			err = emu_spm_acquire(g);
			break;
		case SPMTAP_KFD_SPM_OP_RELEASE:
			err = g->spm ? 0 : EINVAL;
			if (!err)
				emu_spm_release_locked(g);
			break;
		case SPMTAP_KFD_SPM_OP_SET_DEST_BUF:
			err = emu_spm_set_dest(g, a);
			break;
		default:
			err = EINVAL;
		}
	}
	pthread_mutex_unlock(&emu_p.lock);
	EMU_DBG("RLC_SPM op %u gpu 0x%x -> %s\n", a->op, a->gpu_id, err ? strerror(err) : "0");
	return err ? emu_spm_fail(err) : 0;
}

void emu_spm_teardown_all(const char *why)
{
	pthread_mutex_lock(&emu_p.lock);
	for (int i = 0; i < emu_p.ngpus; i++) {
		if (emu_p.gpus[i].spm) {
			EMU_DBG("SPM on gpu 0x%x released by %s\n", emu_p.gpus[i].gpu_id, why);
			emu_spm_release_locked(&emu_p.gpus[i]);
		}
	}
	pthread_mutex_unlock(&emu_p.lock);
}

/*
 * In the child of a fork nothing is freed: another thread of the parent may
 * have held the allocator's lock at fork time (ASan's allocator has one; a
 * child of `record -- app` hung in free() here).  The child forgets the
 * state and closes its copy of the lock descriptor; the memory goes with
 * the exec or exit that follows.
 */
void emu_spm_forget_after_fork(void)
{
	for (int i = 0; i < emu_p.ngpus; i++) {
		struct emu_spm *s = emu_p.gpus[i].spm;
		if (!s)
			continue;
		if (s->lock_fd >= 0)
			emu_real_close(s->lock_fd); /* shared with the parent: only the owner unlocks */
		emu_p.gpus[i].spm = NULL;
	}
}
