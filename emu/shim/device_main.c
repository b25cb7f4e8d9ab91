/* SPDX-License-Identifier: MIT */
/*
 * The device process's side (spm_device.h): spmtap-emu-device enters here,
 * inside the preloaded shim, runs the engine of one GPU's SPM session on
 * its own clock tick and answers the owner's requests (device_shm.h).
 */
#include "emu/shim/spm_device.h"
#include "emu/shim/device_shm.h"
#include "emu/shim/rlc.h"
#include "emu/shim/shim.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

static pid_t emu_dev_parent;

/* PDEATHSIG comes when the spawning thread ends too: only a new parent means the owner is gone. */
static void emu_dev_on_pdeath(int sig)
{
	(void)sig;
	if (getppid() != emu_dev_parent)
		_exit(0);
}

static void emu_dev_snapshot(struct emu_dev_shm *m, const struct emu_spm *e)
{
	m->streaming = e->streaming;
	for (uint32_t k = 0; k < e->num_xcc; k++) {
		m->armed[k] = e->x[k].armed;
		m->full[k] = e->x[k].full;
		m->fill_ns[k] = e->x[k].fill_ns;
	}
}

/*
 * The caller's "now" was read before its request reached the device, whose
 * tick may have advanced past it meanwhile: time never goes back.
 */
static uint64_t emu_dev_now(uint64_t *last, uint64_t now)
{
	if (now > *last)
		*last = now;
	return *last;
}

/* Production up to `now`, bounded when the device is late (EMU_DEV_LAG_MAX_NS); *done: where it is. */
static void emu_dev_advance(struct emu_spm *e, uint64_t now, uint64_t *done)
{
	uint64_t skip_to = 0;
	if (*done && now > *done + EMU_DEV_LAG_MAX_NS) {
		skip_to = now - EMU_DEV_LAG_KEEP_NS;
		EMU_DBG("SPM device gpu 0x%x: %llu us behind real time, samples up to %llu us ago lost\n", e->gpu_id,
			(unsigned long long)(now - *done) / 1000, (unsigned long long)EMU_DEV_LAG_KEEP_NS / 1000);
	}
	emu_spm_advance_late(e, now, skip_to, skip_to && now > *done + EMU_DEV_LAG_UNTOLD_NS);
	if (now > *done)
		*done = now;
}

static void emu_dev_exec(struct emu_dev_shm *m, struct emu_spm *e, uint64_t *last, uint64_t *done)
{
	uint32_t b = 0, l = 0;
	m->rc = 0;
	switch ((enum emu_dev_op)m->op) {
	case EMU_DEV_ADVANCE:
		emu_dev_advance(e, emu_dev_now(last, m->a[0]), done);
		break;
	case EMU_DEV_PREDICT:
		m->val = emu_spm_predict_fill(e, m->a[0]);
		break;
	case EMU_DEV_FLUSH: {
		/* Copies the worker made before are its own to write; this one is the caller's. */
		emu_spm_commit(e);
		emu_spm_flush(e, emu_dev_now(last, m->a[0]));
		uint8_t *base = (uint8_t *)m + EMU_DEV_RING_OFF;
		for (uint32_t k = 0; k < e->num_xcc; k++)
			m->fl_len[k] = emu_spm_take_pending(e, k, base + (size_t)k * e->ring_bytes, &m->fl_from[k],
							    &m->fl_dest[k]);
		break;
	}
	case EMU_DEV_ROTATE:
		for (uint32_t k = 0; k < e->num_xcc; k++)
			emu_spm_short_copy(e, k, m->fl_short[k]);
		m->rc = emu_spm_rotate(e, m->a[0], (uint32_t)m->a[1], emu_dev_now(last, m->a[2]), &b, &l);
		m->bytes = b;
		m->loss = l;
		if (!m->a[0])
			emu_struth_flush();
		break;
	case EMU_DEV_RETIRE:
		m->rc = emu_spm_retire(e, &b, &l);
		m->bytes = b;
		m->loss = l;
		break;
	case EMU_DEV_ARM:
		emu_spm_arm(e, m->a[0], (uint32_t)m->a[1], emu_dev_now(last, m->a[2]));
		break;
	case EMU_DEV_STOP:
		emu_spm_stop(e);
		emu_struth_flush();
		break;
	case EMU_DEV_DISCARD:
		emu_spm_discard_all(e);
		break;
	case EMU_DEV_COMMIT:
		emu_spm_commit(e);
		break;
	case EMU_DEV_TRUTH:
		emu_truth_release(e);
		emu_struth_flush();
		break;
	case EMU_DEV_NONE:
	case EMU_DEV_QUIT:
		break;
	}
	emu_dev_snapshot(m, e);
}

/*
 * Can this process reach its owner's memory (not where ptrace is
 * restricted: Yama, seccomp), and is the owner still the image that
 * started it?  An exec replaces the image: the kernel then ends the KFD
 * process and SPM with it, and this device must not write into the new one.
 */
static int emu_dev_probe(const struct emu_dev_shm *m)
{
	uint64_t v = 0;
	struct iovec l = { &v, sizeof(v) }, r = { (void *)(uintptr_t)m->probe_addr, sizeof(v) };
	if (process_vm_readv(m->owner_pid, &l, 1, &r, 1, 0) != sizeof(v))
		return errno ? errno : EIO;
	return v == m->token ? 0 : ESRCH;
}

static struct emu_spm *emu_dev_engine(struct emu_dev_shm *m, char *why, size_t whylen)
{
	pthread_mutex_lock(&emu_p.lock);
	struct emu_gpu *g = emu_gpu_by_id(m->gpu_id);
	struct emu_gpu_regs *r = g ? emu_gpu_regs(g) : NULL;
	struct emu_gpu_state *gs = r ? g->gs : NULL;
	pthread_mutex_unlock(&emu_p.lock);
	if (!gs) {
		snprintf(why, whylen, "gpu_id 0x%x: no GPU state in this process", m->gpu_id);
		return NULL;
	}
	struct emu_spm *e = emu_spm_new((enum emu_gen)m->gen, m->num_xcc, m->gpu_id, m->rate, m->ring_bytes, m->inj,
					m->ninj);
	if (!e) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	e->gs = gs;
	e->src_ctx.gs = gs; /* the kernel activity log (kernel_activity.h) */
	for (uint32_t k = 0; k < m->num_xcc; k++)
		e->x[k].log_cursor = m->cursor[k];
	e->user_pid = m->owner_pid;
	e->layout_id_base = m->session << 20;
	e->in_device = true;
	return e;
}

EMU_EXPORT int spmtap_emu_device_main(int argc, char **argv)
{
	if (argc < 2 || !emu_p.active) {
		emu_log("spmtap-emu-device: started by the emulator's shim at SPM ACQUIRE, not by hand\n");
		return 2;
	}
	int fd = atoi(argv[1]);
	struct emu_dev_shm *m = emu_real_mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED || m->magic != EMU_DEV_MAGIC || m->version != EMU_DEV_VERSION)
		return 2;
	size_t map_bytes = emu_dev_map_bytes(m->num_xcc, m->ring_bytes);
	munmap(m, sizeof(*m));
	m = emu_real_mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return 2;
	emu_real_close(fd);
	/* Nothing else of the owner's: a pipe it inherited must not stay open here after the owner's end. */
	close_range(3, ~0u, 0);
	emu_dev_parent = m->owner_pid;
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, emu_dev_on_pdeath);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != emu_dev_parent)
		return 0; /* the owner died before PDEATHSIG was armed */
	char why[128] = "";
	int perr = emu_dev_probe(m);
	if (perr)
		snprintf(why, sizeof(why), "process_vm_readv of the owner: %s", strerror(perr));
	struct emu_spm *e = perr ? NULL : emu_dev_engine(m, why, sizeof(why));
	emu_struth_set_pid(m->owner_pid);
	emu_dev_lock(m);
	m->ready = e ? 1 : -1;
	snprintf(m->why, sizeof(m->why), "%s", why);
	if (e)
		emu_dev_snapshot(m, e);
	pthread_cond_broadcast(&m->rep);
	if (!e) {
		pthread_mutex_unlock(&m->mu);
		return 1;
	}
	/*
	 * The device's clock: production and the worker's copies up to now on
	 * every tick, the caller's requests as they come.  Everything runs under
	 * the page's lock, so a request sees the engine between two steps.
	 */
	uint64_t next_tick = emu_dev_mono_ns(), next_probe = next_tick + EMU_DEV_PROBE_NS, last = 0, done = 0;
	for (;;) {
		if (m->req_seq != m->rep_seq) {
			uint32_t op = m->op;
			emu_dev_exec(m, e, &last, &done);
			m->rep_seq = m->req_seq;
			pthread_cond_broadcast(&m->rep);
			if (op == EMU_DEV_QUIT)
				break;
			continue;
		}
		if (getppid() != emu_dev_parent)
			break;
		uint64_t mono = emu_dev_mono_ns();
		if (mono >= next_probe) {
			if (emu_dev_probe(m))
				break; /* the owner exec'ed */
			next_probe = mono + EMU_DEV_PROBE_NS;
		}
		if (mono >= next_tick && !m->hold && !__atomic_load_n(&m->want, __ATOMIC_SEQ_CST)) {
			emu_dev_advance(e, emu_dev_now(&last, emu_clock_raw_ns()), &done);
			emu_spm_commit(e);
			emu_dev_snapshot(m, e);
			/* From the end of the step: a device behind real time still leaves the lock free a while. */
			mono = emu_dev_mono_ns();
			/* Stopped, nothing is produced: the GPU's log is replayed, but a request starts the stream. */
			next_tick = mono + (e->streaming ? EMU_DEV_TICK_NS : EMU_DEV_IDLE_TICK_NS);
		}
		if (__atomic_load_n(&m->want, __ATOMIC_SEQ_CST) && m->req_seq == m->rep_seq) {
			/* The caller is at the lock: let it in and wait for its request. */
			emu_dev_timedwait(&m->req, m, mono + EMU_DEV_TICK_NS);
			continue;
		}
		/* Held: only a request (or the owner's death, looked at now and then) moves the device. */
		emu_dev_timedwait(&m->req, m, m->hold ? mono + 100000000ull : next_tick);
	}
	pthread_mutex_unlock(&m->mu);
	emu_struth_flush();
	emu_spm_free(e);
	return 0;
}
