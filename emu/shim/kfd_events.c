/* SPDX-License-Identifier: MIT */
/*
 * KFD events, enough for ROCr's hsa_init (SPM.md 11.2): signal events get ids
 * and slots below KFD_SIGNAL_EVENT_LIMIT like amdkfd; waits honour poll (0)
 * and forever (0xFFFFFFFF) timeouts.  Nothing on the SPM path uses them.
 */
#include "emu/shim/shim.h"
#include <linux/kfd_ioctl.h>

#include <errno.h>
#include <time.h>

#define EMU_MAX_EVENTS 8192

struct emu_event {
	bool used, auto_reset, signaled;
	uint32_t type;
};

static struct emu_event emu_events[EMU_MAX_EVENTS];
static pthread_cond_t emu_event_cv = PTHREAD_COND_INITIALIZER;

static int emu_ev_create(struct kfd_ioctl_create_event_args *a)
{
	bool sig = a->event_type == KFD_IOC_EVENT_SIGNAL;
	uint32_t lo = sig ? 1 : KFD_SIGNAL_EVENT_LIMIT, hi = sig ? KFD_SIGNAL_EVENT_LIMIT : EMU_MAX_EVENTS;
	uint32_t id;
	pthread_mutex_lock(&emu_p.lock);
	for (id = lo; id < hi && emu_events[id].used; id++)
		;
	if (id == hi) {
		pthread_mutex_unlock(&emu_p.lock);
		errno = ENOMEM;
		return -1;
	}
	emu_events[id] = (struct emu_event){ true, a->auto_reset != 0, false, a->event_type };
	pthread_mutex_unlock(&emu_p.lock);
	a->event_id = id;
	a->event_trigger_data = sig ? id : 0;
	a->event_slot_index = sig ? id : 0;
	a->event_page_offset = sig ? 1ull << 62 : 0; /* KFD_MMAP_TYPE_EVENTS cookie */
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
		if (a->event_id < EMU_MAX_EVENTS)
			emu_events[a->event_id].used = false;
		pthread_mutex_unlock(&emu_p.lock);
		return 0;
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
