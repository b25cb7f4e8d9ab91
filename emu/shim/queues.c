/* SPDX-License-Identifier: MIT */
/*
 * User queues (CREATE/DESTROY/UPDATE_QUEUE with amdkfd's validation,
 * doorbell ids and offsets) and the emulated command processor that takes
 * AQL packets off them (docs/emulator.md "Queues and the command processor";
 * shared/ref/PROGRAMMING.md 5, 6).
 *
 * One CP thread per emulated GPU, started by the GPU's first queue and ending
 * by itself when the GPU has none.  It runs under emu_p.lock (the register
 * file and the SPM engine are guarded by it) and sleeps on a condition
 * variable with that lock, so a kick (a new queue, a WAIT_EVENTS going to
 * sleep) wakes it at once.  Doorbells cannot be trapped: the CP polls them,
 * fast after activity and at an idle pace otherwise.
 *
 * State is per process today (the register file is one struct per GPU, so a
 * later step can move it to shared memory keyed by gpu_id).
 */
#include "emu/common/readback.h"
#include "emu/shim/dispatch.h"
#include "emu/shim/gpu_state.h"
#include "emu/shim/sdma.h"
#include "emu/shim/shim.h"
#include <linux/kfd_ioctl.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define EMU_MAX_QUEUES 1024 /* amdkfd: KFD_MAX_NUM_OF_QUEUES_PER_PROCESS */
#define EMU_DB_IDLE UINT64_MAX
#define EMU_DB_SLOTS (EMU_DOORBELL_SLICE / 8)
#define EMU_Q_ERRLEN 200

enum { AQL_VENDOR = 0, AQL_INVALID = 1, AQL_KERNEL = 2, AQL_BARRIER_AND = 3, AQL_AGENT = 4, AQL_BARRIER_OR = 5 };
#define AMD_AQL_FORMAT_PM4_IB 1

struct emu_queue {
	bool used, halted;
	uint32_t id, gpu_id, type, doorbell_id, pct, prio;
	uint64_t ring, ring_size, rptr, wptr;
	uint64_t limit; /* AQL: highest packet index rung + 1; SDMA: the highest write pointer rung (bytes) */
	uint64_t sdma_busy_until_ns; /* SDMA: sdma.h emu_sdma_q.busy_until_ns */
	uint64_t sdma_poll_at;       /* SDMA: sdma.h emu_sdma_q.poll_at */
	uint32_t sdma_polls;         /* SDMA: sdma.h emu_sdma_q.polls */
	uint64_t executed, errors, err_index;
	char err[EMU_Q_ERRLEN];
	struct emu_kslot kernel; /* the KERNEL_DISPATCH in flight (dispatch.h) */
};

struct emu_cp_state {
	bool running;
	uint32_t live;                  /* queues of this GPU */
	uint64_t executed, errors, wakeups;
	uint64_t run;                   /* packets since this CP thread started (SPMTAP_EMU_CP_HANG) */
	uint64_t due_raw;               /* earliest end (CLOCK_MONOTONIC_RAW) of a kernel running on this pass */
	pthread_cond_t kick;
	bool kicked;
};

static struct emu_queue *emu_q;     /* EMU_MAX_QUEUES, made on first use */
static struct emu_cp_state emu_cps[EMU_MAX_GPUS];
static uint64_t emu_poll_fast_ns, emu_poll_idle_ns, emu_fast_window_ns;
static uint64_t emu_hang_after = UINT64_MAX; /* SPMTAP_EMU_CP_HANG: packets a CP runs before it hangs */

static int emu_qfail(int e)
{
	errno = e;
	return -1;
}

static bool emu_q_is_sdma(const struct emu_queue *q)
{
	return q->type == KFD_IOC_QUEUE_TYPE_SDMA || q->type == KFD_IOC_QUEUE_TYPE_SDMA_XGMI;
}

static struct emu_cp_state *emu_cp_of(struct emu_gpu *g)
{
	struct emu_cp_state *c = &emu_cps[g - emu_p.gpus];
	if (!g->cp) {
		pthread_condattr_t at;
		pthread_condattr_init(&at);
		pthread_condattr_setclock(&at, CLOCK_MONOTONIC);
		pthread_cond_init(&c->kick, &at);
		pthread_condattr_destroy(&at);
		g->cp = c;
	}
	return c;
}

/* Readable user memory (amdkfd's access_ok is weaker; the CP would fault on these). */
static bool emu_user_ok(uint64_t addr, size_t len)
{
	if (!addr)
		return false;
	char buf[64];
	struct iovec l = { buf, len < sizeof(buf) ? len : sizeof(buf) }, r = { (void *)(uintptr_t)addr, l.iov_len };
	ssize_t n = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
	return n == (ssize_t)l.iov_len || (n < 0 && (errno == ENOSYS || errno == EPERM));
}

/* amdkfd reserves doorbell ids 0x0E0-0x0FF and 0x1E0-0x1FF (mirrored every 0x200) on SOC15 for SDMA/IH. */
static bool emu_db_reserved(uint32_t id)
{
	return (id & 0x1E0) == 0x0E0;
}

static void *emu_cp_main(void *arg);

static int emu_q_create(struct kfd_ioctl_create_queue_args *a)
{
	struct emu_gpu *g = emu_gpu_by_id(a->gpu_id);
	if (!g)
		return emu_qfail(EINVAL);
	/* set_queue_properties_from_user() */
	if (a->queue_percentage > KFD_MAX_QUEUE_PERCENTAGE || a->queue_priority > KFD_MAX_QUEUE_PRIORITY)
		return emu_qfail(EINVAL);
	if (a->ring_size && (a->ring_size & (a->ring_size - 1)))
		return emu_qfail(EINVAL);
	if (a->queue_type != KFD_IOC_QUEUE_TYPE_COMPUTE && a->queue_type != KFD_IOC_QUEUE_TYPE_SDMA &&
	    a->queue_type != KFD_IOC_QUEUE_TYPE_COMPUTE_AQL && a->queue_type != KFD_IOC_QUEUE_TYPE_SDMA_XGMI)
		return emu_qfail(EINVAL);
	if (a->queue_type == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL && a->ring_size && a->ring_size < 64)
		return emu_qfail(EINVAL);
	if ((a->ring_size && !emu_user_ok(a->ring_base_address, 64)) || !emu_user_ok(a->read_pointer_address, 8) ||
	    !emu_user_ok(a->write_pointer_address, 8))
		return emu_qfail(EFAULT);
	pthread_mutex_lock(&emu_p.lock);
	if (!emu_q)
		emu_q = calloc(EMU_MAX_QUEUES, sizeof(*emu_q));
	uint64_t *db = emu_doorbells(g, NULL);
	if (!emu_q || !db) {
		pthread_mutex_unlock(&emu_p.lock);
		return emu_qfail(ENOMEM);
	}
	uint32_t qid, dbid, live = 0;
	for (qid = 0; qid < EMU_MAX_QUEUES; qid++)
		live += emu_q[qid].used;
	/* pqm_create_queue: a process at its queue limit gets ENOSPC (SPMTAP_EMU_MAX_QUEUES lowers it). */
	if (live >= emu_env_u64("SPMTAP_EMU_MAX_QUEUES", EMU_MAX_QUEUES)) {
		pthread_mutex_unlock(&emu_p.lock);
		EMU_DBG("  CREATE_QUEUE gpu 0x%x: %u queues live, at the limit -> ENOSPC\n", a->gpu_id, live);
		return emu_qfail(ENOSPC);
	}
	for (qid = 0; qid < EMU_MAX_QUEUES && emu_q[qid].used; qid++)
		;
	/* The lowest free, non-reserved doorbell of this process on this GPU. */
	for (dbid = 0; dbid < EMU_DB_SLOTS; dbid++) {
		if (emu_db_reserved(dbid))
			continue;
		bool taken = false;
		for (uint32_t j = 0; j < EMU_MAX_QUEUES && !taken; j++)
			taken = emu_q[j].used && emu_q[j].gpu_id == a->gpu_id && emu_q[j].doorbell_id == dbid;
		if (!taken)
			break;
	}
	if (qid == EMU_MAX_QUEUES || dbid == EMU_DB_SLOTS) {
		pthread_mutex_unlock(&emu_p.lock);
		return emu_qfail(ENOSPC);
	}
	struct emu_queue *q = &emu_q[qid];
	*q = (struct emu_queue){ .used = true, .id = qid, .gpu_id = a->gpu_id, .type = a->queue_type,
				 .doorbell_id = dbid, .pct = a->queue_percentage, .prio = a->queue_priority,
				 .ring = a->ring_base_address, .ring_size = a->ring_size,
				 .rptr = a->read_pointer_address, .wptr = a->write_pointer_address };
	q->limit = __atomic_load_n((uint64_t *)(uintptr_t)q->rptr, __ATOMIC_ACQUIRE);
	__atomic_store_n(&db[dbid], EMU_DB_IDLE, __ATOMIC_RELEASE);
	struct emu_cp_state *c = emu_cp_of(g);
	c->live++;
	if (!c->running) {
		if (!emu_poll_fast_ns) {
			emu_poll_fast_ns = emu_env_u64("SPMTAP_EMU_CP_POLL_FAST_US", 20) * 1000;
			emu_poll_idle_ns = emu_env_u64("SPMTAP_EMU_CP_POLL_IDLE_US", 2000) * 1000;
			emu_fast_window_ns = emu_env_u64("SPMTAP_EMU_CP_FAST_MS", 5) * 1000000;
			if (!emu_poll_fast_ns)
				emu_poll_fast_ns = 1000;
			if (emu_poll_idle_ns < emu_poll_fast_ns)
				emu_poll_idle_ns = emu_poll_fast_ns;
			emu_hang_after = emu_env_u64("SPMTAP_EMU_CP_HANG", UINT64_MAX);
		}
		pthread_t th;
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&th, &at, emu_cp_main, g) == 0)
			c->running = true;
		pthread_attr_destroy(&at);
		if (!c->running) {
			q->used = false;
			c->live--;
			pthread_mutex_unlock(&emu_p.lock);
			return emu_qfail(ENOMEM);
		}
	}
	c->kicked = true;
	pthread_cond_signal(&c->kick);
	pthread_mutex_unlock(&emu_p.lock);
	a->queue_id = qid;
	a->doorbell_offset = EMU_MMAP_TYPE_DOORBELL | EMU_MMAP_GPU_ID(a->gpu_id) | ((uint64_t)dbid * 8);
	EMU_DBG("  CREATE_QUEUE gpu 0x%x type %u ring 0x%llx size %u rptr 0x%llx wptr 0x%llx -> qid %u doorbell %u\n",
		a->gpu_id, a->queue_type, (unsigned long long)a->ring_base_address, a->ring_size,
		(unsigned long long)a->read_pointer_address, (unsigned long long)a->write_pointer_address, qid, dbid);
	return 0;
}

static struct emu_queue *emu_q_get(uint32_t id)
{
	return (emu_q && id < EMU_MAX_QUEUES && emu_q[id].used) ? &emu_q[id] : NULL;
}

/* Under emu_p.lock. */
static void emu_q_remove(struct emu_queue *q)
{
	struct emu_gpu *g = emu_gpu_by_id(q->gpu_id);
	EMU_DBG("  queue %u removed (%llu packets, %llu errors)\n", q->id, (unsigned long long)q->executed,
		(unsigned long long)q->errors);
	q->used = false;
	if (g && g->cp) {
		g->cp->live--;
		g->cp->kicked = true;
		pthread_cond_signal(&g->cp->kick);
	}
}

int emu_queue_ioctl(unsigned long req, void *arg, int *handled)
{
	*handled = 1;
	switch (req) {
	case AMDKFD_IOC_CREATE_QUEUE:
		return emu_q_create(arg);
	case AMDKFD_IOC_DESTROY_QUEUE: {
		struct kfd_ioctl_destroy_queue_args *a = arg;
		pthread_mutex_lock(&emu_p.lock);
		struct emu_queue *q = emu_q_get(a->queue_id);
		if (q)
			emu_q_remove(q);
		pthread_mutex_unlock(&emu_p.lock);
		return q ? 0 : emu_qfail(EINVAL); /* pqm_destroy_queue: unknown id -> EINVAL */
	}
	case AMDKFD_IOC_UPDATE_QUEUE: {
		struct kfd_ioctl_update_queue_args *a = arg;
		if (a->queue_percentage > KFD_MAX_QUEUE_PERCENTAGE || a->queue_priority > KFD_MAX_QUEUE_PRIORITY ||
		    (a->ring_size && (a->ring_size & (a->ring_size - 1))))
			return emu_qfail(EINVAL);
		if (a->ring_base_address && !emu_user_ok(a->ring_base_address, 64))
			return emu_qfail(EFAULT);
		pthread_mutex_lock(&emu_p.lock);
		struct emu_queue *q = emu_q_get(a->queue_id);
		if (q) {
			q->ring = a->ring_base_address;
			q->ring_size = a->ring_size;
			q->pct = a->queue_percentage;
			q->prio = a->queue_priority;
		}
		pthread_mutex_unlock(&emu_p.lock);
		return q ? 0 : emu_qfail(EFAULT); /* pqm_update_queue_properties: unknown id -> EFAULT */
	}
	default:
		*handled = 0;
		return -1;
	}
}

/* ---- the CP: AQL ---------------------------------------------------------------------------- */

/* amd_signal_t (hsa/amd_hsa_signal.h) as the CP firmware sees it. */
struct emu_signal {
	int64_t kind;
	int64_t value;
	uint64_t event_mailbox_ptr;
	uint32_t event_id, reserved1;
	uint64_t start_ts, end_ts;
	uint64_t queue_ptr;
	uint32_t reserved3[2];
};
_Static_assert(sizeof(struct emu_signal) == 64, "amd_signal_t is 64 bytes");

static int64_t emu_sig_value(uint64_t h)
{
	return __atomic_load_n(&((struct emu_signal *)(uintptr_t)h)->value, __ATOMIC_ACQUIRE);
}

/* end_ts 0: now (a packet that took no modelled time). */
static void emu_sig_complete(uint64_t h, uint64_t start_ts, uint64_t end_ts)
{
	if (!h)
		return;
	struct emu_signal *s = (struct emu_signal *)(uintptr_t)h;
	s->start_ts = start_ts;
	s->end_ts = end_ts ? end_ts : emu_clock_ticks(emu_clock_raw_ns());
	__atomic_fetch_sub(&s->value, 1, __ATOMIC_ACQ_REL);
	if (s->event_mailbox_ptr) {
		/* The end-of-pipe write of event_id into the mailbox slot, then the interrupt. */
		__atomic_store_n((uint64_t *)(uintptr_t)s->event_mailbox_ptr, (uint64_t)s->event_id, __ATOMIC_RELEASE);
		emu_event_interrupt_locked(s->event_id);
	}
}

static void emu_q_error(struct emu_queue *q, struct emu_cp_state *c, uint64_t idx, const char *msg)
{
	q->errors++;
	c->errors++;
	if (!q->halted) {
		q->halted = true;
		q->err_index = idx;
		snprintf(q->err, sizeof(q->err), "%s", msg);
		emu_log("CP gpu 0x%x queue %u packet %llu: %s; not completed, queue halted\n", q->gpu_id, q->id,
			(unsigned long long)idx, msg);
	}
}

static const char *emu_aql_name(uint32_t t)
{
	switch (t) {
	case AQL_KERNEL: return "KERNEL_DISPATCH";
	case AQL_AGENT: return "AGENT_DISPATCH";
	case AQL_INVALID: return "INVALID";
	default: return "reserved";
	}
}

/*
 * 1 executed, 0 must wait (a barrier, a kernel still running), -1 cannot execute (already reported).
 * start and end: the completion signal's ticks, when the packet took modelled time.
 */
static int emu_aql_exec(struct emu_gpu *g, struct emu_queue *q, struct emu_cp_state *c, const uint8_t *pkt,
			uint16_t hdr, uint64_t idx, uint64_t *start, uint64_t *end)
{
	uint32_t type = hdr & 0xFF;
	char msg[EMU_Q_ERRLEN];
	switch (type) {
	case AQL_BARRIER_AND:
	case AQL_BARRIER_OR: {
		uint64_t dep[5];
		memcpy(dep, pkt + 8, sizeof(dep));
		int n = 0, zero = 0;
		for (int i = 0; i < 5; i++)
			if (dep[i]) {
				n++;
				zero += emu_sig_value(dep[i]) == 0;
			}
		bool ok = type == AQL_BARRIER_AND ? zero == n : (n == 0 || zero > 0);
		return ok ? 1 : 0;
	}
	case AQL_VENDOR: {
		uint16_t fmt;
		memcpy(&fmt, pkt + 2, 2);
		if ((fmt & 0xFF) != AMD_AQL_FORMAT_PM4_IB) {
			snprintf(msg, sizeof(msg), "vendor-specific packet of AMD format %u: not emulated", fmt & 0xFF);
			emu_q_error(q, c, idx, msg);
			return -1;
		}
		uint32_t dw[4], at = 0;
		memcpy(dw, pkt + 4, sizeof(dw));
		/* An unpredicated IB runs on every XCC (PROGRAMMING.md 6.1). */
		if (emu_cp_run_locked(g, dw, 4, 0, msg, sizeof(msg), &at)) {
			emu_q_error(q, c, idx, msg);
			return -1;
		}
		return 1;
	}
	case AQL_KERNEL: {
		int rc = emu_dispatch_step(g, q->id, &q->kernel, pkt, idx, start, end, msg, sizeof(msg));
		if (rc < 0)
			emu_q_error(q, c, idx, msg);
		if (rc == 0 && q->kernel.end_raw < c->due_raw)
			c->due_raw = q->kernel.end_raw; /* the CP wakes for it, whatever its idle pace */
		return rc;
	}
	default:
		snprintf(msg, sizeof(msg), "%s packet (type %u): not executed by the emulated CP", emu_aql_name(type), type);
		emu_q_error(q, c, idx, msg);
		return -1;
	}
}

/* Returns the number of things done (doorbells seen, packets executed); *blocked when a barrier waits. */
static int emu_q_service(struct emu_gpu *g, struct emu_queue *q, struct emu_cp_state *c, uint64_t *db, bool *blocked)
{
	int work = 0;
	uint64_t v = __atomic_load_n(&db[q->doorbell_id], __ATOMIC_ACQUIRE);
	while (v != EMU_DB_IDLE) {
		/* Consume the write; a CAS miss means another write arrived (v is reloaded). */
		if (__atomic_compare_exchange_n(&db[q->doorbell_id], &v, EMU_DB_IDLE, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			/* An AQL doorbell carries a packet index; an SDMA one the write pointer in bytes. */
			uint64_t lim = emu_q_is_sdma(q) ? v : v + 1;
			if (lim > q->limit)
				q->limit = lim;
			work++;
			break;
		}
	}
	if (q->halted || !q->ring_size || !q->ring || !q->pct)
		return work;
	uint64_t *rptr = (uint64_t *)(uintptr_t)q->rptr;
	uint64_t rd = __atomic_load_n(rptr, __ATOMIC_ACQUIRE);
	if (emu_q_is_sdma(q)) {
		/* The queue's SDMA engine (sdma.c); its errors halt the queue as the CP's do. */
		struct emu_sdma_q sq = { .gpu_id = q->gpu_id, .queue_id = q->id, .ring = q->ring,
					 .ring_size = q->ring_size, .rptr_addr = q->rptr, .wptr = q->limit,
					 .busy_until_ns = q->sdma_busy_until_ns, .poll_at = q->sdma_poll_at,
					 .polls = q->sdma_polls };
		struct emu_sdma_result r;
		emu_sdma_service(&sq, &r);
		q->sdma_busy_until_ns = sq.busy_until_ns;
		q->sdma_poll_at = sq.poll_at;
		q->sdma_polls = sq.polls;
		q->executed += r.executed;
		c->executed += r.executed;
		if (r.error)
			emu_q_error(q, c, r.err_at, r.err);
		if (r.waiting)
			*blocked = true;
		/* A copy's modelled time counts as activity: the fast poll picks up its end. */
		return work + (int)r.executed + (r.busy || r.error);
	}
	if (q->type != KFD_IOC_QUEUE_TYPE_COMPUTE_AQL) {
		if (rd < q->limit)
			emu_q_error(q, c, rd, "PM4 ring queue: not emulated");
		return work;
	}
	uint64_t npkts = q->ring_size / 64;
	while (rd < q->limit && c->run < emu_hang_after) {
		uint8_t *pkt = (uint8_t *)(uintptr_t)(q->ring + (rd & (npkts - 1)) * 64);
		uint16_t hdr = __atomic_load_n((uint16_t *)pkt, __ATOMIC_ACQUIRE);
		if ((hdr & 0xFF) == AQL_INVALID)
			break; /* not published yet */
		uint64_t start = emu_clock_ticks(emu_clock_raw_ns()), end = 0;
		int rc = emu_aql_exec(g, q, c, pkt, hdr, rd, &start, &end);
		if (rc < 0)
			return work + 1;
		if (rc == 0) {
			*blocked = true;
			break;
		}
		uint64_t sig;
		memcpy(&sig, pkt + 56, 8);
		/* Launch before completion: header back to INVALID, read index, then the signal. */
		__atomic_store_n((uint16_t *)pkt, (uint16_t)AQL_INVALID, __ATOMIC_RELEASE);
		rd++;
		__atomic_store_n(rptr, rd, __ATOMIC_RELEASE);
		emu_sig_complete(sig, start, end);
		q->executed++;
		c->executed++;
		c->run++;
		if (g->gs)
			__atomic_fetch_add(&g->gs->cp_packets, 1, __ATOMIC_RELAXED);
		if (c->run == emu_hang_after)
			emu_log("CP gpu 0x%x: hangs after %llu packets (SPMTAP_EMU_CP_HANG); queue %u's packet %llu and "
				"later ones stay unexecuted\n", q->gpu_id, (unsigned long long)c->run, q->id,
				(unsigned long long)rd);
		work++;
	}
	return work;
}

static uint64_t emu_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *emu_cp_main(void *arg)
{
	struct emu_gpu *g = arg;
	prctl(PR_SET_TIMERSLACK, 1000UL); /* 1 us: keep the fast poll honest */
	pthread_mutex_lock(&emu_p.lock);
	struct emu_cp_state *c = g->cp;
	uint64_t last = emu_mono_ns();
	c->run = 0;
	EMU_DBG("CP gpu 0x%x: thread started\n", g->gpu_id);
	while (c->running && c->live) {
		c->wakeups++;
		c->kicked = false;
		uint64_t *db = emu_doorbells(g, NULL);
		int work = 0;
		bool blocked = false;
		c->due_raw = UINT64_MAX;
		for (uint32_t i = 0; db && emu_q && i < EMU_MAX_QUEUES; i++)
			if (emu_q[i].used && emu_q[i].gpu_id == g->gpu_id)
				work += emu_q_service(g, &emu_q[i], c, db, &blocked);
		uint64_t now = emu_mono_ns();
		if (work)
			last = now;
		if (c->kicked)
			continue;
		/* Adaptive: the fast period right after activity, then the interval grows to the idle one. */
		uint64_t idle = now - last, wait = emu_poll_fast_ns;
		if (idle > emu_fast_window_ns) {
			wait = (idle - emu_fast_window_ns) / 4;
			if (wait < emu_poll_fast_ns)
				wait = emu_poll_fast_ns;
			if (wait > emu_poll_idle_ns)
				wait = emu_poll_idle_ns;
		}
		(void)blocked; /* a waiting barrier is retried at the next poll, at the same adaptive pace */
		if (c->due_raw != UINT64_MAX) {
			uint64_t raw = emu_clock_raw_ns();
			uint64_t left = c->due_raw > raw ? c->due_raw - raw : 0;
			if (left < wait)
				wait = left;
		}
		struct timespec dl;
		clock_gettime(CLOCK_MONOTONIC, &dl);
		uint64_t t = (uint64_t)dl.tv_sec * 1000000000ull + (uint64_t)dl.tv_nsec + wait;
		dl.tv_sec = (time_t)(t / 1000000000ull);
		dl.tv_nsec = (long)(t % 1000000000ull);
		while (!c->kicked && c->running && c->live &&
		       pthread_cond_timedwait(&c->kick, &emu_p.lock, &dl) != ETIMEDOUT)
			;
	}
	c->running = false;
	EMU_DBG("CP gpu 0x%x: thread ends (no queues)\n", g->gpu_id);
	pthread_mutex_unlock(&emu_p.lock);
	return NULL;
}

/* Under emu_p.lock. */
void emu_queue_kick_all(void)
{
	for (int i = 0; i < emu_p.ngpus; i++) {
		struct emu_cp_state *c = emu_p.gpus[i].cp;
		if (c && c->running) {
			c->kicked = true;
			pthread_cond_signal(&c->kick);
		}
	}
}

void emu_queue_teardown(void)
{
	pthread_mutex_lock(&emu_p.lock);
	for (uint32_t i = 0; emu_q && i < EMU_MAX_QUEUES; i++)
		if (emu_q[i].used)
			emu_q_remove(&emu_q[i]);
	pthread_mutex_unlock(&emu_p.lock);
}

void emu_queue_after_fork(void)
{
	/* Only the forking thread exists in the child: no CP threads, and the queues were the parent's. */
	if (emu_q)
		memset(emu_q, 0, EMU_MAX_QUEUES * sizeof(*emu_q));
	for (int i = 0; i < EMU_MAX_GPUS; i++) {
		emu_cps[i] = (struct emu_cp_state){ 0 };
		emu_p.gpus[i].cp = NULL;
	}
}

int emu_queue_readback(uint32_t gpu_id, uint32_t addr, uint32_t instance, uint32_t *value)
{
	struct emu_gpu *g = emu_gpu_by_id(gpu_id);
	struct emu_cp_state *c = g ? g->cp : NULL;
	struct emu_queue *q = emu_q_get(instance);
	switch (addr) {
	case EMU_RBQ_LIVE: *value = c ? c->live : 0; return 0;
	case EMU_RBQ_EXECUTED: *value = c ? (uint32_t)c->executed : 0; return 0;
	case EMU_RBQ_ERRORS: *value = c ? (uint32_t)c->errors : 0; return 0;
	case EMU_RBQ_CP_RUNNING: *value = c ? c->running : 0; return 0;
	case EMU_RBQ_CP_WAKEUPS: *value = c ? (uint32_t)c->wakeups : 0; return 0;
	case EMU_RBQ_WAIT_SLEEPS: *value = (uint32_t)emu_ev_stat_sleeps; return 0;
	case EMU_RBQ_IRQS: *value = (uint32_t)emu_ev_stat_irq_set; return 0;
	case EMU_RBQ_LOCK_RECOVERED:
	case EMU_RBQ_GPU_PACKETS:
		if (!g || !emu_gpu_regs(g))
			return EINVAL;
		*value = addr == EMU_RBQ_LOCK_RECOVERED ? g->gs->owner_died : (uint32_t)g->gs->cp_packets;
		return 0;
	case EMU_RBQ_Q_EXECUTED:
	case EMU_RBQ_Q_ERRORS:
	case EMU_RBQ_Q_HALTED:
		if (!q || q->gpu_id != gpu_id)
			return EINVAL;
		*value = addr == EMU_RBQ_Q_EXECUTED ? (uint32_t)q->executed
			 : addr == EMU_RBQ_Q_ERRORS ? (uint32_t)q->errors
						      : q->halted;
		return 0;
	default:
		return EINVAL;
	}
}

int emu_queue_err_ioctl(void *arg)
{
	struct emu_queue_err_args *a = arg;
	pthread_mutex_lock(&emu_p.lock);
	struct emu_queue *q = emu_q_get(a->queue_id);
	if (q) {
		a->gpu_id = q->gpu_id;
		a->packet_index = q->err_index;
		a->errors = (uint32_t)q->errors;
		a->halted = q->halted;
		snprintf(a->err, sizeof(a->err), "%s", q->err);
	}
	pthread_mutex_unlock(&emu_p.lock);
	return q ? 0 : emu_qfail(EINVAL);
}
