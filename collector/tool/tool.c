/* SPDX-License-Identifier: MIT */
/*
 * libspmtap-tool.so: every kernel dispatch of the application, timed by the
 * GPU, as records in the collector's channel (kernel_shm.h).
 * docs/architecture.md "Kernels".
 *
 * On the application's thread (the queue's intercept handler, at doorbell
 * time) a KERNEL_DISPATCH packet gets a tool completion signal in place of
 * the application's, and an async handler on it; nothing waits and no
 * packet is added, so dispatches run as they would have (never serialised).
 * On ROCr's async signal thread, when the GPU completes it: the raw
 * start/end ticks are copied into the application's signal (ROCr's
 * hsa_amd_profiling_get_dispatch_time on it reads exactly those, so the
 * app's own profiling keeps working), the application's signal is
 * decremented, and the record goes into the channel (dropped and counted
 * when the ring is full).  Tool signals are recycled through a free list,
 * reset on reuse: a signal must not be destroyed inside its own handler.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <hsa/amd_hsa_signal.h>

#include "collector/lib/kernel_shm.h"
#include "collector/lib/marker_job.h"
#include "collector/tool/tool.h"

struct tool_hsa tool_rt;

static struct kd_header *chan;

/* One dispatch in flight (or free, on the free list). */
struct pend {
	struct pend *next;
	hsa_signal_t sig; /* the tool's completion signal, reused */
	hsa_signal_t app; /* the application's completion signal (0: none) */
	struct kd_record r;
};

static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pend *free_list;
static uint64_t next_corr;

/* kernel_object -> name, open addressing; written at freeze, read on the async thread. */
#define NAMES 4096u
static pthread_mutex_t name_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint64_t kobj;
	char name[KD_NAME];
} names[NAMES];

static __thread struct kd_slot *my_slot;
static __thread struct kd_record *my_ring;
static __thread int my_refused;

/* getpid() is a system call in glibc (no cache since 2.25): once, and again in a forked child. */
static uint32_t my_pid;
static __thread uint32_t my_tid;

static void pid_after_fork(void)
{
	my_pid = (uint32_t)getpid();
	my_tid = 0; /* the forking thread is the child's only one, with a new id */
}

static uint32_t tid_now(void)
{
	if (!my_tid)
		my_tid = (uint32_t)syscall(SYS_gettid);
	return my_tid;
}

/*
 * The channel: SPMTAP_KERNELS_FD when the collector started the app
 * (`record -- app`), else, in a job's app step, the one its node's collector
 * published for SPMTAP_JOB (marker_job.h).  The fd stays open: the mapping
 * is all that is used, and an app step has no other reference to it.
 */
static long channel_fd(void)
{
	const char *e = getenv(KD_ENV_FD);
	char *end;
	if (e) {
		long fd = strtol(e, &end, 10);
		return *end || fd < 0 ? -1 : fd;
	}
	return mk_job_open_kind(MK_JOB_KERNELS);
}

bool tool_init(void)
{
	long fd = channel_fd();
	if (fd < 0)
		return false;
	struct kd_header *h = mmap(NULL, sizeof(*h), PROT_READ, MAP_SHARED, (int)fd, 0);
	if (h == MAP_FAILED)
		return false;
	bool ok = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) == KD_MAGIC && h->version == KD_VERSION &&
		  h->nslots == KD_SLOTS && h->record_bytes == sizeof(struct kd_record) && h->nevents &&
		  h->nevents <= KD_EVENTS_MAX && !(h->nevents & (h->nevents - 1));
	uint32_t nev = h->nevents;
	munmap(h, sizeof(*h));
	if (!ok)
		return false;
	void *p = mmap(NULL, kd_channel_bytes(nev), PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
	if (p == MAP_FAILED)
		return false;
	chan = p;
	my_pid = (uint32_t)getpid();
	pthread_atfork(NULL, NULL, pid_after_fork);
	return true;
}

/* Into this thread's ring; a full ring (or no slot) drops and counts, never waits. */
static void emit(const struct kd_record *r)
{
	if (!my_slot) {
		if (my_refused)
			return;
		uint32_t i = __atomic_fetch_add(&chan->next_slot, 1, __ATOMIC_RELAXED);
		if (i >= KD_SLOTS) {
			my_refused = 1;
			__atomic_fetch_add(&chan->threads_refused, 1, __ATOMIC_RELAXED);
			return;
		}
		struct kd_slot *s = &chan->slot[i];
		s->pid = (uint32_t)getpid();
		s->tid = tid_now();
		__atomic_store_n(&s->claimed, 1, __ATOMIC_RELEASE);
		my_ring = kd_ring(chan, i);
		my_slot = s;
	}
	struct kd_slot *s = my_slot;
	uint64_t head = s->head, tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
	if (head - tail >= chan->nevents) {
		__atomic_fetch_add(&s->dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	my_ring[head & (chan->nevents - 1)] = *r;
	__atomic_store_n(&s->head, head + 1, __ATOMIC_RELEASE);
}

static void name_of(uint64_t kobj, char *out)
{
	out[0] = 0;
	pthread_mutex_lock(&name_lock);
	for (uint32_t i = (uint32_t)(kobj >> 6) % NAMES, n = 0; n < NAMES && names[i].kobj; n++, i = (i + 1) % NAMES)
		if (names[i].kobj == kobj) {
			memcpy(out, names[i].name, KD_NAME);
			break;
		}
	pthread_mutex_unlock(&name_lock);
	if (!out[0])
		__atomic_fetch_add(&chan->unnamed, 1, __ATOMIC_RELAXED);
}

static void pend_put(struct pend *p)
{
	pthread_mutex_lock(&free_lock);
	p->next = free_list;
	free_list = p;
	pthread_mutex_unlock(&free_lock);
}

/* ROCr's async signal thread: the GPU completed the dispatch. */
static bool on_done(hsa_signal_value_t v, void *arg)
{
	(void)v;
	struct pend *p = arg;
	const amd_signal_t *t = (const amd_signal_t *)(uintptr_t)p->sig.handle;
	p->r.start_ticks = t->start_ts;
	p->r.end_ticks = t->end_ts;
	if (p->app.handle) {
		/*
		 * The app's own profiling: ROCr's get_dispatch_time reads these
		 * two from the signal it is given; rocprofiler v1 of ROCm 5.x
		 * does the same (src/core/tracker.h, Tracker::Complete: copy
		 * start_ts/end_ts into the original signal, then complete it).
		 */
		amd_signal_t *a = (amd_signal_t *)(uintptr_t)p->app.handle;
		a->start_ts = t->start_ts;
		a->end_ts = t->end_ts;
		tool_rt.signal_subtract_screlease(p->app, 1);
	}
	name_of(p->r.kernel_object, p->r.name);
	emit(&p->r);
	pend_put(p);
	return false; /* once */
}

static struct pend *pend_get(void)
{
	pthread_mutex_lock(&free_lock);
	struct pend *p = free_list;
	if (p)
		free_list = p->next;
	pthread_mutex_unlock(&free_lock);
	if (p) {
		/*
		 * Back to 1 by a plain store into the signal's memory, not
		 * hsa_signal_store_relaxed: for ROCr's interrupt signals that
		 * also sets the driver's event (an ioctl on the app's thread, per
		 * dispatch), and nothing waits on a free tool signal to be woken.
		 * Its handler has run and is gone (on_done returned false).
		 */
		amd_signal_t *a = (amd_signal_t *)(uintptr_t)p->sig.handle;
		__atomic_store_n(&a->value, 1, __ATOMIC_RELAXED);
		return p;
	}
	p = calloc(1, sizeof(*p));
	if (p && tool_rt.signal_create(1, 0, NULL, &p->sig) != HSA_STATUS_SUCCESS) {
		free(p);
		p = NULL;
	}
	return p;
}

/*
 * An intercepted queue and its GPU, found once at creation: the records say
 * which GPU ran them so the collector maps their ticks through that GPU's
 * clock.  Kept for the process's life (ROCr may call the handler until the
 * queue is gone, and the tool does not wrap hsa_queue_destroy).
 */
struct tqueue {
	const hsa_queue_t *q;
	uint16_t node;
};

/* The application's thread, at doorbell time: forward every packet, dispatches with the tool's signal. */
static void intercept(const void *pkts, uint64_t count, uint64_t user_index, void *data, tool_packet_writer writer)
{
	const struct tqueue *tq = data;
	const hsa_queue_t *q = tq->q;
	const hsa_kernel_dispatch_packet_t *in = pkts;
	for (uint64_t i = 0; i < count; i++) {
		hsa_kernel_dispatch_packet_t k = in[i];
		unsigned type = (k.header >> HSA_PACKET_HEADER_TYPE) & ((1u << HSA_PACKET_HEADER_WIDTH_TYPE) - 1);
		struct pend *p = type == HSA_PACKET_TYPE_KERNEL_DISPATCH ? pend_get() : NULL;
		if (type == HSA_PACKET_TYPE_KERNEL_DISPATCH && !p)
			__atomic_fetch_add(&chan->untimed, 1, __ATOMIC_RELAXED);
		if (p) {
			struct kd_record *r = &p->r;
			memset(r, 0, sizeof(*r));
			r->corr = __atomic_add_fetch(&next_corr, 1, __ATOMIC_RELAXED);
			r->queue_id = q->id;
			r->index = user_index + i;
			r->node = tq->node;
			r->kernel_object = k.kernel_object;
			r->pid = my_pid;
			r->tid = tid_now();
			r->grid[0] = k.grid_size_x, r->grid[1] = k.grid_size_y, r->grid[2] = k.grid_size_z;
			r->wg[0] = k.workgroup_size_x, r->wg[1] = k.workgroup_size_y, r->wg[2] = k.workgroup_size_z;
			p->app = k.completion_signal;
			k.completion_signal = p->sig;
			if (tool_rt.async_handler(p->sig, HSA_SIGNAL_CONDITION_LT, 1, on_done, p) != HSA_STATUS_SUCCESS) {
				/* Untimed: the packet keeps the app's own signal; the record says so. */
				k.completion_signal = p->app;
				r->status = -EIO;
				emit(r);
				pend_put(p);
			}
		}
		writer(&k, 1);
	}
}

hsa_status_t tool_queue_create(hsa_agent_t agent, uint32_t size, hsa_queue_type32_t type,
			       void (*cb)(hsa_status_t, hsa_queue_t *, void *), void *data, uint32_t priv,
			       uint32_t group, hsa_queue_t **queue)
{
	hsa_status_t st = tool_rt.intercept_create(agent, size, type, cb, data, priv, group, queue);
	if (st != HSA_STATUS_SUCCESS)
		return tool_rt.queue_create(agent, size, type, cb, data, priv, group, queue);
	/* The CP writes start/end into completion signals only with profiling on (real hardware). */
	tool_rt.profiler_enable(*queue, 1);
	struct tqueue *tq = calloc(1, sizeof(*tq));
	if (!tq)
		return HSA_STATUS_SUCCESS; /* not intercepted: its dispatches run unseen (the queue count says so) */
	uint32_t node = KD_NODE_UNKNOWN;
	tq->q = *queue;
	if (!tool_rt.agent_get_info ||
	    tool_rt.agent_get_info(agent, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_DRIVER_NODE_ID, &node) !=
		    HSA_STATUS_SUCCESS || node >= KD_NODE_UNKNOWN)
		node = KD_NODE_UNKNOWN;
	tq->node = (uint16_t)node;
	if (tool_rt.intercept_register(*queue, intercept, tq) == HSA_STATUS_SUCCESS)
		__atomic_fetch_add(&chan->queues, 1, __ATOMIC_RELAXED);
	else
		free(tq);
	return HSA_STATUS_SUCCESS;
}

static hsa_status_t sym(hsa_executable_t ex, hsa_executable_symbol_t s, void *d)
{
	(void)ex, (void)d;
	hsa_symbol_kind_t kind;
	uint32_t len = 0;
	uint64_t kobj = 0;
	if (tool_rt.symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, &kind) != HSA_STATUS_SUCCESS ||
	    kind != HSA_SYMBOL_KIND_KERNEL ||
	    tool_rt.symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH, &len) != HSA_STATUS_SUCCESS ||
	    tool_rt.symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &kobj) != HSA_STATUS_SUCCESS || !kobj)
		return HSA_STATUS_SUCCESS;
	char *n = calloc(1, (size_t)len + 1);
	if (!n || tool_rt.symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_NAME, n) != HSA_STATUS_SUCCESS) {
		free(n);
		return HSA_STATUS_SUCCESS;
	}
	size_t l = strlen(n);
	if (l > 3 && !strcmp(n + l - 3, ".kd"))
		n[l -= 3] = 0;
	pthread_mutex_lock(&name_lock);
	for (uint32_t i = (uint32_t)(kobj >> 6) % NAMES, k = 0; k < NAMES; k++, i = (i + 1) % NAMES)
		if (!names[i].kobj || names[i].kobj == kobj) {
			names[i].kobj = kobj;
			snprintf(names[i].name, KD_NAME, "%s", n);
			break;
		}
	pthread_mutex_unlock(&name_lock);
	free(n);
	return HSA_STATUS_SUCCESS;
}

void tool_fini(void)
{
	pthread_mutex_lock(&free_lock);
	struct pend *p = free_list;
	free_list = NULL;
	pthread_mutex_unlock(&free_lock);
	while (p) {
		struct pend *n = p->next;
		tool_rt.signal_destroy(p->sig);
		free(p);
		p = n;
	}
}

hsa_status_t tool_executable_freeze(hsa_executable_t ex, const char *opts)
{
	hsa_status_t st = tool_rt.executable_freeze(ex, opts);
	if (st == HSA_STATUS_SUCCESS)
		tool_rt.executable_iterate_symbols(ex, sym, NULL);
	return st;
}
