/* SPDX-License-Identifier: MIT */
/*
 * spmtap_region_begin / spmtap_region_end: the application side of the
 * marker channel (marker_shm.h, docs/markers.md).
 *
 * The channel is process-wide by nature (like spmtap_set_print): one
 * mapping found once through SPMTAP_MARKERS_FD, and one slot per thread
 * held in thread-local storage.
 *
 * The two exported functions are the fast path, and tests/test_marker_code.c
 * disassembles them to hold it so:
 *   - outside `spmtap record -- app`: one load, one conditional branch, return;
 *   - under a recording that asked for TSC stamps: rdtsc and a store into the
 *     thread's ring, no call and no system call (so the TLS is initial-exec:
 *     a general-dynamic access would call __tls_get_addr, and the name is
 *     copied by a loop, not by strnlen/memcpy).
 * Everything else (a thread's first call, the channel's discovery, a thread
 * without a slot, the clock_gettime stamp where the TSC is not usable) is in
 * the mk_*_slow functions, reached by a tail jump.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collector/lib/marker_job.h"
#include "collector/lib/marker_shm.h"
#include "spmtap.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#define MK_HAVE_TSC 1
#else
#define MK_HAVE_TSC 0
#endif

#define MK_TLS __thread __attribute__((tls_model("initial-exec")))
#define MK_ALWAYS static inline __attribute__((always_inline))

static pthread_once_t mk_once = PTHREAD_ONCE_INIT;
static struct mk_header *mk_map; /* written once, under mk_once */
/*
 * 1 until the process has looked for the channel, then 1 with a channel and
 * 0 without: outside a recording every call is this one test.  Written once
 * under mk_once, read with relaxed atomics (a plain load).
 */
static int mk_live = 1;
static int mk_tsc; /* the recorder asked for TSC stamps and this CPU has rdtsc */

static MK_TLS struct mk_slot *mk_mine; /* this thread's slot, once claimed */
static MK_TLS struct mk_slot *mk_fast; /* = mk_mine where events are TSC-stamped, else NULL */
static MK_TLS uint32_t mk_depth;
static MK_TLS uint32_t mk_seq;
static MK_TLS uint8_t mk_refused; /* looked, and got no slot (or there is no channel) */

/* A forked child is another thread: it claims a slot of its own instead of sharing its parent's. */
static void mk_forked(void)
{
	mk_mine = mk_fast = NULL;
	mk_refused = 0;
	mk_depth = mk_seq = 0;
}

static void mk_attach(void)
{
	const char *e = getenv(MK_ENV_FD);
	struct mk_header *h = NULL;
	char *end;
	long fd = e && *e ? strtol(e, &end, 10) : -1;
	struct stat st;
	int own = -1; /* SPMTAP_JOB: the node's job recording (marker_job.h), when no recorder started us */
	if (fd < 0 && (own = mk_job_open()) >= 0) {
		fd = own;
		static char empty[1];
		end = empty;
	}
	if (fd >= 0 && !*end && !fstat((int)fd, &st) && (size_t)st.st_size >= sizeof(struct mk_header)) {
		void *p = mmap(NULL, sizeof(struct mk_header), PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
		if (p != MAP_FAILED) {
			h = p;
			if (h->magic != MK_MAGIC || h->version != MK_VERSION || h->nslots != MK_SLOTS ||
			    h->nevents != MK_EVENTS) {
				munmap(p, sizeof(struct mk_header));
				h = NULL;
			}
		}
	}
	if (own >= 0)
		close(own); /* the mapping stays */
	mk_map = h;
	mk_tsc = h && h->clock == MK_CLOCK_TSC && MK_HAVE_TSC;
	if (h)
		pthread_atfork(NULL, NULL, mk_forked);
	__atomic_store_n(&mk_live, h != NULL, __ATOMIC_RELEASE);
}

/* A thread's first call: find the channel (once per process), claim a slot. */
static struct mk_slot *mk_claim(void)
{
	pthread_once(&mk_once, mk_attach);
	mk_refused = 1;
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
	mk_fast = mk_tsc ? s : NULL;
	mk_refused = 0;
	return s;
}

MK_ALWAYS int64_t mk_tsc_now(void)
{
#if MK_HAVE_TSC
	return (int64_t)__rdtsc();
#else
	return 0;
#endif
}

/* The stamp the slow path takes: TSC when the channel asked for it, else the clock call. */
static int64_t mk_stamp(void)
{
	if (mk_fast)
		return mk_tsc_now();
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

MK_ALWAYS void mk_put(struct mk_slot *s, uint32_t kind, uint32_t depth, const char *name, int64_t t)
{
	uint64_t head = s->head; /* only this thread writes it */
	uint64_t tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
	uint32_t seq = mk_seq++;
	if (head - tail >= MK_EVENTS) {
		__atomic_store_n(&s->dropped, s->dropped + 1, __ATOMIC_RELAXED);
		return;
	}
	struct mk_event *e = &s->ev[head & (MK_EVENTS - 1)];
	e->t = t;
	e->kind = kind;
	e->depth = depth;
	e->seq = seq;
	/* A loop, not strnlen + memcpy: the fast path makes no call.  Names are short. */
	uint32_t n = 0;
	if (name)
		for (; n < MK_NAME - 1 && name[n]; n++)
			e->name[n] = name[n];
	e->name[n] = 0;
	__atomic_store_n(&s->head, head + 1, __ATOMIC_RELEASE);
}

/* Not inlined: the exported functions reach these by a tail jump and stay call-free. */
__attribute__((noinline, cold)) static void mk_begin_slow(const char *name)
{
	struct mk_slot *s = mk_mine;
	if (!s && !mk_refused)
		s = mk_claim();
	if (!__atomic_load_n(&mk_live, __ATOMIC_ACQUIRE))
		return; /* no channel: nothing to count either */
	uint32_t d = mk_depth++;
	if (s)
		mk_put(s, MK_BEGIN, d, name ? name : "", mk_stamp());
}

__attribute__((noinline, cold)) static void mk_end_slow(void)
{
	struct mk_slot *s = mk_mine;
	if (!s && !mk_refused)
		s = mk_claim();
	if (!__atomic_load_n(&mk_live, __ATOMIC_ACQUIRE) || mk_depth == 0)
		return; /* an end without a begin: nothing to close */
	uint32_t d = --mk_depth;
	if (s)
		mk_put(s, MK_END, d, NULL, mk_stamp());
}

SPMTAP_API void spmtap_region_begin(const char *name)
{
	if (!__atomic_load_n(&mk_live, __ATOMIC_RELAXED))
		return;
	struct mk_slot *s = mk_fast;
	if (__builtin_expect(!s || !name, 0)) {
		mk_begin_slow(name);
		return;
	}
	mk_put(s, MK_BEGIN, mk_depth++, name, mk_tsc_now());
}

SPMTAP_API void spmtap_region_end(void)
{
	if (!__atomic_load_n(&mk_live, __ATOMIC_RELAXED))
		return;
	struct mk_slot *s = mk_fast;
	if (__builtin_expect(!s || mk_depth == 0, 0)) {
		mk_end_slow();
		return;
	}
	mk_put(s, MK_END, --mk_depth, NULL, mk_tsc_now());
}
