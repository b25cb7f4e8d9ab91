/* SPDX-License-Identifier: MIT */
/* Draining and pairing marker events (marker_reader.h). */
#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collector/lib/marker_reader.h"
#include "collector/lib/marker_shm.h"
#include "collector/lib/marker_tsc.h"
#include "log.h"

#define MK_MAX_DEPTH 64u

struct mk_open {
	int64_t t_ns; /* BOOTTIME */
	char name[MK_NAME];
};

/* What the reader knows of one slot's thread: its open regions and the next expected event. */
struct mk_track {
	uint32_t depth;                 /* open regions on the stack */
	struct mk_open stack[MK_MAX_DEPTH];
};

struct mk_reader {
	int fd;
	struct mk_header *h;
	struct mk_track tr[MK_SLOTS];
	struct mk_stats st;
	struct mk_tsc *tsc; /* the channel's clock is the TSC: its map to BOOTTIME */
	char clock_why[160];
};

int mk_reader_create(struct mk_reader **out, int *fd, char *err, size_t errlen)
{
	*out = NULL;
	struct mk_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	/* Not close-on-exec: the application inherits it. */
	r->fd = memfd_create("spmtap-markers", 0);
	if (r->fd < 0 || ftruncate(r->fd, (off_t)sizeof(struct mk_header))) {
		int e = errno;
		if (r->fd >= 0)
			close(r->fd);
		free(r);
		return spmtap_seterr(err, errlen, e, "cannot make the marker channel (memfd of %zu MiB): %s",
				     sizeof(struct mk_header) >> 20, strerror(e));
	}
	void *p = mmap(NULL, sizeof(struct mk_header), PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (p == MAP_FAILED) {
		int e = errno;
		close(r->fd);
		free(r);
		return spmtap_seterr(err, errlen, e, "cannot map the marker channel: %s", strerror(e));
	}
	r->h = p;
	/* TSC stamps where the TSC is constant and non-stop; the first pair before the app can write. */
	if (mk_tsc_usable(r->clock_why, sizeof(r->clock_why)) && mk_tsc_create(&r->tsc)) {
		munmap(p, sizeof(struct mk_header));
		close(r->fd);
		free(r);
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	}
	r->h->clock = r->tsc ? MK_CLOCK_TSC : MK_CLOCK_BOOTTIME;
	r->h->version = MK_VERSION;
	r->h->nslots = MK_SLOTS;
	r->h->nevents = MK_EVENTS;
	r->h->event_bytes = sizeof(struct mk_event);
	__atomic_store_n(&r->h->magic, MK_MAGIC, __ATOMIC_RELEASE);
	*fd = r->fd;
	*out = r;
	return 0;
}

static int mk_emit_open(struct mk_reader *r, const struct mk_slot *s, uint32_t depth, int64_t end_ns,
			int unterminated, mk_emit_fn emit, void *user)
{
	const struct mk_open *o = &r->tr[s - r->h->slot].stack[depth];
	struct mk_region g = { o->t_ns, end_ns, o->name, s->pid, s->tid, depth, unterminated };
	r->st.regions++;
	return emit ? emit(&g, user) : 0;
}

/*
 * One event.  The depth the writer recorded resynchronises the stack after
 * events were lost: a begin at depth d means d regions are open; an end at
 * depth d closes the region opened at depth d.
 */
static int mk_event(struct mk_reader *r, const struct mk_slot *s, const struct mk_event *e, mk_emit_fn emit,
		    void *user)
{
	struct mk_track *t = &r->tr[s - r->h->slot];
	r->st.events++;
	uint32_t d = e->depth;
	if (d >= MK_MAX_DEPTH) {
		r->st.unmatched++;
		return 0;
	}
	if (e->kind == MK_BEGIN) {
		if (t->depth > d)
			r->st.unmatched += t->depth - d; /* their ends were lost */
		t->depth = d;
		t->stack[d].t_ns = e->t;
		memcpy(t->stack[d].name, e->name, MK_NAME);
		t->stack[d].name[MK_NAME - 1] = 0;
		t->depth = d + 1;
		return 0;
	}
	if (t->depth != d + 1) {
		/* Its begin was lost (or an end above it was): nothing to pair with. */
		r->st.unmatched++;
		if (t->depth > d)
			t->depth = d;
		return 0;
	}
	t->depth = d;
	return mk_emit_open(r, s, d, e->t, 0, emit, user);
}

int mk_reader_poll(struct mk_reader *r, mk_emit_fn emit, void *user)
{
	uint32_t n = __atomic_load_n(&r->h->next_slot, __ATOMIC_RELAXED), most = 0;
	if (n > MK_SLOTS)
		n = MK_SLOTS;
	/*
	 * Every head first, then a (tsc, boottime) pair: each event up to these
	 * heads took its stamp before its head was published, so before the
	 * pair, and maps between two pairs, not beyond the last.
	 */
	uint64_t heads[MK_SLOTS];
	for (uint32_t i = 0; i < n; i++) {
		struct mk_slot *s = &r->h->slot[i];
		heads[i] = __atomic_load_n(&s->claimed, __ATOMIC_ACQUIRE) ? __atomic_load_n(&s->head, __ATOMIC_ACQUIRE)
									   : s->tail;
	}
	if (r->tsc)
		mk_tsc_sample(r->tsc);
	for (uint32_t i = 0; i < n; i++) {
		struct mk_slot *s = &r->h->slot[i];
		uint64_t head = heads[i]; /* unclaimed a moment ago: its owner was still filling pid/tid */
		if (head - s->tail > most)
			most = (uint32_t)(head - s->tail);
		for (uint64_t tail = s->tail; tail < head; tail++) {
			struct mk_event e = s->ev[tail & (MK_EVENTS - 1)];
			__atomic_store_n(&s->tail, tail + 1, __ATOMIC_RELEASE);
			if (r->tsc)
				e.t = mk_tsc_to_ns(r->tsc, (uint64_t)e.t, NULL);
			int rc = mk_event(r, s, &e, emit, user);
			if (rc)
				return rc < 0 ? rc : -ECANCELED;
		}
	}
	return (int)most;
}

int mk_reader_finish(struct mk_reader *r, int64_t end_ns, mk_emit_fn emit, void *user)
{
	int rc = mk_reader_poll(r, emit, user);
	if (rc > 0)
		rc = 0;
	for (uint32_t i = 0; !rc && i < MK_SLOTS; i++) {
		struct mk_track *t = &r->tr[i];
		/* Innermost first, as they would have ended. */
		while (!rc && t->depth > 0) {
			t->depth--;
			r->st.unterminated++;
			rc = mk_emit_open(r, &r->h->slot[i], t->depth, end_ns, 1, emit, user);
		}
	}
	return rc;
}

void mk_reader_stats(const struct mk_reader *r, struct mk_stats *st)
{
	*st = r->st;
	uint32_t n = __atomic_load_n(&r->h->next_slot, __ATOMIC_RELAXED);
	st->threads = n < MK_SLOTS ? n : MK_SLOTS;
	st->threads_refused = __atomic_load_n(&r->h->threads_refused, __ATOMIC_RELAXED);
	st->dropped = 0;
	for (uint32_t i = 0; i < st->threads; i++)
		st->dropped += __atomic_load_n(&r->h->slot[i].dropped, __ATOMIC_RELAXED);
	st->clock_tsc = r->tsc != NULL;
	snprintf(st->clock_why, sizeof(st->clock_why), "%s", r->clock_why);
	if (r->tsc) {
		struct mk_tsc_stats ts;
		mk_tsc_stats(r->tsc, &ts);
		st->clock_error_ns = ts.max_err_ns;
		st->clock_pairs = ts.pairs;
		st->tsc_hz = ts.hz;
	}
}

json_t *mk_reader_json(const struct mk_reader *r)
{
	struct mk_stats ms;
	mk_reader_stats(r, &ms);
	json_t *m = json_pack("{s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:I}", "threads", (int)ms.threads,
			      "threads_refused", (json_int_t)ms.threads_refused, "events", (json_int_t)ms.events,
			      "regions", (json_int_t)ms.regions, "dropped_events", (json_int_t)ms.dropped,
			      "unmatched", (json_int_t)ms.unmatched, "unterminated", (json_int_t)ms.unterminated,
			      "clock", ms.clock_tsc ? "tsc" : "CLOCK_BOOTTIME", "clock_why", ms.clock_why,
			      "clock_error_ns", (json_int_t)ms.clock_error_ns);
	if (m && ms.clock_tsc) {
		json_object_set_new(m, "tsc_pairs", json_integer((json_int_t)ms.clock_pairs));
		json_object_set_new(m, "tsc_hz", json_real(ms.tsc_hz));
	}
	return m;
}

void mk_reader_free(struct mk_reader *r)
{
	if (!r)
		return;
	munmap(r->h, sizeof(struct mk_header));
	close(r->fd);
	mk_tsc_free(r->tsc);
	free(r);
}
