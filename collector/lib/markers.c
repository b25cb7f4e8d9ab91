/* SPDX-License-Identifier: MIT */
/*
 * spmtap_region_begin / spmtap_region_end: the application side of the
 * marker channel (marker_shm.h, docs/markers.md).
 *
 * The channel is process-wide by nature (like spmtap_set_print): one
 * mapping found once through SPMTAP_MARKERS_FD, and one slot per thread
 * held in thread-local storage.  Outside `spmtap record -- app` there is no
 * descriptor and every call returns after one well-predicted branch.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collector/lib/marker_shm.h"
#include "spmtap.h"

static pthread_once_t mk_once = PTHREAD_ONCE_INIT;
static struct mk_header *mk_map; /* written once, under mk_once */

static __thread struct mk_slot *mk_mine;
static __thread uint32_t mk_depth;
static __thread uint32_t mk_seq;
static __thread uint8_t mk_state; /* 0 unknown, 1 has a slot, 2 no channel or no slot */

static void mk_attach(void)
{
	const char *e = getenv(MK_ENV_FD);
	if (!e || !*e)
		return;
	char *end;
	long fd = strtol(e, &end, 10);
	struct stat st;
	if (*end || fd < 0 || fstat((int)fd, &st) || (size_t)st.st_size < sizeof(struct mk_header))
		return;
	void *p = mmap(NULL, sizeof(struct mk_header), PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
	if (p == MAP_FAILED)
		return;
	struct mk_header *h = p;
	if (h->magic != MK_MAGIC || h->version != MK_VERSION || h->nslots != MK_SLOTS || h->nevents != MK_EVENTS) {
		munmap(p, sizeof(struct mk_header));
		return;
	}
	mk_map = h;
}

/* The first call of a thread: find the channel, claim a slot. */
static struct mk_slot *mk_slot_slow(void)
{
	pthread_once(&mk_once, mk_attach);
	mk_state = 2;
	if (!mk_map)
		return NULL;
	uint32_t i = __atomic_fetch_add(&mk_map->next_slot, 1, __ATOMIC_RELAXED);
	if (i >= MK_SLOTS) {
		__atomic_fetch_add(&mk_map->threads_refused, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	struct mk_slot *s = &mk_map->slot[i];
	s->pid = (uint32_t)getpid();
	s->tid = (uint32_t)syscall(SYS_gettid);
	__atomic_store_n(&s->claimed, 1, __ATOMIC_RELEASE);
	mk_mine = s;
	mk_state = 1;
	return s;
}

static inline struct mk_slot *mk_slot(void)
{
	if (__builtin_expect(mk_state == 1, 1))
		return mk_mine;
	if (mk_state == 2)
		return NULL;
	return mk_slot_slow();
}

static inline void mk_put(struct mk_slot *s, uint32_t kind, uint32_t depth, const char *name)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	uint64_t head = s->head; /* only this thread writes it */
	uint64_t tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
	uint32_t seq = mk_seq++;
	if (head - tail >= MK_EVENTS) {
		__atomic_store_n(&s->dropped, s->dropped + 1, __ATOMIC_RELAXED);
		return;
	}
	struct mk_event *e = &s->ev[head & (MK_EVENTS - 1)];
	e->t_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	e->kind = kind;
	e->depth = depth;
	e->seq = seq;
	if (name) {
		size_t n = strnlen(name, MK_NAME - 1);
		memcpy(e->name, name, n);
		e->name[n] = 0;
	} else {
		e->name[0] = 0;
	}
	__atomic_store_n(&s->head, head + 1, __ATOMIC_RELEASE);
}

SPMTAP_API void spmtap_region_begin(const char *name)
{
	struct mk_slot *s = mk_slot();
	uint32_t d = mk_depth++;
	if (s)
		mk_put(s, MK_BEGIN, d, name ? name : "");
}

SPMTAP_API void spmtap_region_end(void)
{
	struct mk_slot *s = mk_slot();
	if (mk_depth == 0)
		return; /* an end without a begin: nothing to close */
	uint32_t d = --mk_depth;
	if (s)
		mk_put(s, MK_END, d, NULL);
}
