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
	emu_events[id].signaled = true;
	emu_ev_stat_irq_set++;
	pthread_cond_broadcast(&emu_event_cv);
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
	emu_events[id].signaled = val;
	pthread_cond_broadcast(&emu_event_cv);
	pthread_mutex_unlock(&emu_p.lock);
	return 0;
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
	pthread_mutex_lock(&emu_p.lock);
	for (;;) {
		uint32_t n_sig = 0;
		for (uint32_t i = 0; i < a->num_events; i++) {
			uint32_t id = ev[i].event_id;
			if (id >= EMU_MAX_EVENTS || !emu_events[id].used) {
				pthread_mutex_unlock(&emu_p.lock);
				errno = EINVAL;
				return -1;
			}
			n_sig += emu_events[id].signaled;
		}
		if (a->num_events && (a->wait_for_all ? n_sig == a->num_events : n_sig > 0)) {
			for (uint32_t i = 0; i < a->num_events; i++)
				if (emu_events[ev[i].event_id].auto_reset)
					emu_events[ev[i].event_id].signaled = false;
			a->wait_result = KFD_IOC_WAIT_RESULT_COMPLETE;
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
	pthread_mutex_unlock(&emu_p.lock);
	return 0;
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
