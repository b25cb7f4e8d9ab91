/* SPDX-License-Identifier: MIT */
/*
 * KFD events as amdkfd (kfd_events.c): signal events get ids and slots below
 * KFD_SIGNAL_EVENT_LIMIT; the events page (the BO whose handle the first
 * CREATE_EVENT passes, or on an APU a KFD_MMAP_TYPE_EVENTS mmap) has every
 * slot set to UNSIGNALED_EVENT_SLOT; waits honour poll (0), finite and
 * forever (0xFFFFFFFF) timeouts and sleep on a condition variable that the
 * emulated CP's "interrupt" (emu_event_interrupt_locked) broadcasts.
 */
#include "emu/shim/shim.h"
#include <linux/kfd_ioctl.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EMU_MAX_EVENTS 8192

struct emu_event {
	bool used, auto_reset, signaled;
	uint32_t type;
};

#define EMU_UNSIGNALED_SLOT UINT64_MAX

static struct emu_event emu_events[EMU_MAX_EVENTS];
static pthread_cond_t emu_event_cv = PTHREAD_COND_INITIALIZER;

/*
 * A thread inside WAIT_EVENTS, as amdkfd's kfd_event_waiter: one flag per
 * event it waits on, set by whoever signals that event while it waits.
 * This is what makes an auto-reset event wake every thread already waiting
 * on it, while a signal nobody waits for stays pending for the next waiter
 * only.  (ROCr relies on it: queue destruction sets the inactive signal's
 * event, which its async-events thread is waiting on, and then waits on the
 * same event itself for the handler's answer.  With a plain "signaled"
 * flag, the destroying thread could take the first signal itself.)
 */
struct emu_waiter {
	struct emu_waiter *next;
	uint32_t n;
	uint32_t *ids;
	bool *act;
};
static struct emu_waiter *emu_waiters;
static uint64_t *emu_event_page; /* KFD_SIGNAL_EVENT_LIMIT slots */
uint64_t emu_ev_stat_sleeps, emu_ev_stat_irqs, emu_ev_stat_irq_set;

/* Under emu_p.lock. */
void emu_events_set_page(uint64_t *page)
{
	if (emu_event_page)
		return;
	emu_event_page = page;
	for (uint32_t i = 0; i < KFD_SIGNAL_EVENT_LIMIT; i++)
		emu_event_page[i] = EMU_UNSIGNALED_SLOT;
}

/* amdkfd's set_event: wake the waiters on it; stay signaled only if none took it. */
static void emu_event_set_locked(uint32_t id)
{
	bool taken = false;
	for (struct emu_waiter *w = emu_waiters; w; w = w->next)
		for (uint32_t i = 0; i < w->n; i++)
			if (w->ids[i] == id) {
				w->act[i] = true;
				taken = true;
			}
	emu_events[id].signaled = !emu_events[id].auto_reset || !taken;
	pthread_cond_broadcast(&emu_event_cv);
}

/*
 * The CP raised an interrupt for a signal event (amdkfd's
 * kfd_signal_event_interrupt -> set_event_from_interrupt): if the event's slot
 * was written, re-arm it and set the event, waking WAIT_EVENTS sleepers.
 * Without an events page, the id alone decides.  Under emu_p.lock.
 */
void emu_event_interrupt_locked(uint32_t id)
{
	emu_ev_stat_irqs++;
	if (id >= KFD_SIGNAL_EVENT_LIMIT || !emu_events[id].used)
		return;
	if (emu_event_page) {
		if (__atomic_load_n(&emu_event_page[id], __ATOMIC_ACQUIRE) == EMU_UNSIGNALED_SLOT)
			return;
		__atomic_store_n(&emu_event_page[id], EMU_UNSIGNALED_SLOT, __ATOMIC_RELEASE);
	}
	emu_event_set_locked(id);
	emu_ev_stat_irq_set++;
}

/* Under emu_p.lock: the process's KFD went away. */
void emu_events_teardown(void)
{
	memset(emu_events, 0, sizeof(emu_events));
	emu_event_page = NULL;
	pthread_cond_broadcast(&emu_event_cv);
}

void emu_events_after_fork(void)
{
	emu_waiters = NULL; /* the other threads' waits stayed in the parent */
	memset(emu_events, 0, sizeof(emu_events));
	emu_event_page = NULL;
	pthread_cond_init(&emu_event_cv, NULL);
}

static int emu_ev_create(struct kfd_ioctl_create_event_args *a)
{
	bool sig = a->event_type == KFD_IOC_EVENT_SIGNAL;
	uint32_t lo = sig ? 1 : KFD_SIGNAL_EVENT_LIMIT, hi = sig ? KFD_SIGNAL_EVENT_LIMIT : EMU_MAX_EVENTS;
	uint32_t id;
	pthread_mutex_lock(&emu_p.lock);
	if (sig && a->event_page_offset) {
		/* dGPU: the user's events-page BO.  A second page, an unknown handle or a small BO -> EINVAL. */
		uint64_t size = 0;
		uint64_t *page = emu_event_page ? NULL : emu_mem_cpu(a->event_page_offset, &size);
		if (!page || size < KFD_SIGNAL_EVENT_LIMIT * 8) {
			pthread_mutex_unlock(&emu_p.lock);
			errno = EINVAL;
			return -1;
		}
		emu_events_set_page(page);
		EMU_DBG("  events page = BO 0x%llx\n", (unsigned long long)a->event_page_offset);
	}
	for (id = lo; id < hi && emu_events[id].used; id++)
		;
	if (id == hi) {
		pthread_mutex_unlock(&emu_p.lock);
		errno = ENOMEM;
		return -1;
	}
	emu_events[id] = (struct emu_event){ true, a->auto_reset != 0, false, a->event_type };
	if (sig && emu_event_page)
		emu_event_page[id] = EMU_UNSIGNALED_SLOT;
	pthread_mutex_unlock(&emu_p.lock);
	a->event_id = id;
	a->event_trigger_data = sig ? id : 0;
	a->event_slot_index = sig ? id : 0;
	a->event_page_offset = sig ? EMU_MMAP_TYPE_EVENTS : 0; /* as amdkfd's kfd_event_create */
	EMU_DBG("  create_event type %u -> id %u\n", a->event_type, id);
	return 0;
}

static int emu_ev_set(uint32_t id, bool val)
{
	pthread_mutex_lock(&emu_p.lock);
	if (id >= EMU_MAX_EVENTS || !emu_events[id].used) {
		pthread_mutex_unlock(&emu_p.lock);
		errno = EINVAL;
		return -1;
	}
	if (val)
		emu_event_set_locked(id);
	else
		emu_events[id].signaled = false;
	pthread_mutex_unlock(&emu_p.lock);
	return 0;
}

static bool emu_ev_valid(const struct kfd_event_data *ev, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (ev[i].event_id >= EMU_MAX_EVENTS || !emu_events[ev[i].event_id].used)
			return false;
	return true;
}

static int emu_ev_wait(struct kfd_ioctl_wait_events_args *a)
{
	struct kfd_event_data *ev = (void *)(uintptr_t)a->events_ptr;
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	uint64_t t = (uint64_t)dl.tv_sec * 1000000000ull + (uint64_t)dl.tv_nsec +
		     (uint64_t)a->timeout * 1000000ull;
	dl.tv_sec = (time_t)(t / 1000000000ull);
	dl.tv_nsec = (long)(t % 1000000000ull);
	uint32_t n = a->num_events;
	struct emu_waiter w = { .n = n, .ids = calloc(n ? n : 1, sizeof(uint32_t)), .act = calloc(n ? n : 1, 1) };
	if (!w.ids || !w.act) {
		free(w.ids);
		free(w.act);
		errno = ENOMEM;
		return -1;
	}
	int rc = 0;
	pthread_mutex_lock(&emu_p.lock);
	if (!emu_ev_valid(ev, n)) {
		pthread_mutex_unlock(&emu_p.lock);
		free(w.ids);
		free(w.act);
		errno = EINVAL;
		return -1;
	}
	/* amdkfd's init_event_waiter: a pending signal is this waiter's, and an auto-reset event is consumed. */
	for (uint32_t i = 0; i < n; i++) {
		struct emu_event *e = &emu_events[ev[i].event_id];
		w.ids[i] = ev[i].event_id;
		w.act[i] = e->signaled;
		e->signaled = e->signaled && !e->auto_reset;
	}
	w.next = emu_waiters;
	emu_waiters = &w;
	for (;;) {
		uint32_t n_act = 0;
		for (uint32_t i = 0; i < n; i++)
			n_act += w.act[i];
		if (n && (a->wait_for_all ? n_act == n : n_act > 0)) {
			a->wait_result = KFD_IOC_WAIT_RESULT_COMPLETE;
			break;
		}
		if (!emu_ev_valid(ev, n)) { /* destroyed, or the process's KFD went away, while we slept */
			errno = EINVAL;
			rc = -1;
			break;
		}
		if (a->timeout == 0) {
			a->wait_result = KFD_IOC_WAIT_RESULT_TIMEOUT;
			break;
		}
		/* Someone waits on the GPU: the CP polls now rather than at its idle pace. */
		emu_queue_kick_all();
		emu_ev_stat_sleeps++;
		if (a->timeout == 0xFFFFFFFFu) {
			pthread_cond_wait(&emu_event_cv, &emu_p.lock);
		} else if (pthread_cond_timedwait(&emu_event_cv, &emu_p.lock, &dl) == ETIMEDOUT) {
			a->wait_result = KFD_IOC_WAIT_RESULT_TIMEOUT;
			break;
		}
	}
	for (struct emu_waiter **pp = &emu_waiters; *pp; pp = &(*pp)->next)
		if (*pp == &w) {
			*pp = w.next;
			break;
		}
	pthread_mutex_unlock(&emu_p.lock);
	free(w.ids);
	free(w.act);
	return rc;
}

int emu_event_ioctl(unsigned long req, void *arg, int *handled)
{
	*handled = 1;
	switch (req) {
	case AMDKFD_IOC_CREATE_EVENT:
		return emu_ev_create(arg);
	case AMDKFD_IOC_DESTROY_EVENT: {
		struct kfd_ioctl_destroy_event_args *a = arg;
		pthread_mutex_lock(&emu_p.lock);
		bool ok = a->event_id < EMU_MAX_EVENTS && emu_events[a->event_id].used;
		if (ok)
			emu_events[a->event_id].used = false;
		pthread_mutex_unlock(&emu_p.lock);
		if (!ok)
			errno = EINVAL;
		return ok ? 0 : -1;
	}
	case AMDKFD_IOC_SET_EVENT:
		return emu_ev_set(((struct kfd_ioctl_set_event_args *)arg)->event_id, true);
	case AMDKFD_IOC_RESET_EVENT:
		return emu_ev_set(((struct kfd_ioctl_reset_event_args *)arg)->event_id, false);
	case AMDKFD_IOC_WAIT_EVENTS:
		return emu_ev_wait(arg);
	default:
		*handled = 0;
		return -1;
	}
}
