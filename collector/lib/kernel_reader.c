/* SPDX-License-Identifier: MIT */
/* Draining kernel dispatch records (kernel_reader.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collector/lib/kernel_reader.h"
#include "log.h"

/*
 * The application can write any byte of the shared segment (a bug, or on
 * purpose): the reader trusts none of it for its own bounds.  The ring
 * length is its own copy, the slot count a constant, each slot's read
 * position its own (written out for the writer, never read back), and a
 * head is cut to one ring ahead of it.
 */
struct kd_reader {
	int fd;
	size_t bytes;
	uint32_t nev;            /* the ring length it made the segment with */
	uint64_t tail[KD_SLOTS]; /* records consumed per slot: the reader's own count */
	struct kd_header *h;
	struct kd_record *rec; /* every record received, in arrival order */
	size_t n, cap;
	uint64_t bad;          /* records whose name was not NUL-terminated (fixed) */
};

static uint32_t kd_events_env(void)
{
	const char *e = getenv(KD_ENV_EVENTS);
	char *end;
	unsigned long v = e ? strtoul(e, &end, 10) : 0;
	if (!e || *end || v < 2 || v > KD_EVENTS_MAX || (v & (v - 1)))
		return KD_EVENTS_DEFAULT;
	return (uint32_t)v;
}

int kd_reader_create(struct kd_reader **out, int *fd, char *err, size_t errlen)
{
	*out = NULL;
	struct kd_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	uint32_t nev = kd_events_env();
	r->bytes = kd_channel_bytes(nev);
	/* Not close-on-exec: the application inherits it. */
	r->fd = memfd_create("spmtap-kernels", 0);
	if (r->fd < 0 || ftruncate(r->fd, (off_t)r->bytes)) {
		int e = errno;
		if (r->fd >= 0)
			close(r->fd);
		free(r);
		return spmtap_seterr(err, errlen, e, "cannot make the kernel dispatch channel: %s", strerror(e));
	}
	void *p = mmap(NULL, r->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (p == MAP_FAILED) {
		int e = errno;
		close(r->fd);
		free(r);
		return spmtap_seterr(err, errlen, e, "cannot map the kernel dispatch channel: %s", strerror(e));
	}
	r->h = p;
	r->nev = nev;
	r->h->version = KD_VERSION;
	r->h->nslots = KD_SLOTS;
	r->h->nevents = nev;
	r->h->record_bytes = sizeof(struct kd_record);
	__atomic_store_n(&r->h->magic, KD_MAGIC, __ATOMIC_RELEASE);
	*fd = r->fd;
	*out = r;
	return 0;
}

int kd_reader_poll(struct kd_reader *r)
{
	uint32_t n = __atomic_load_n(&r->h->next_slot, __ATOMIC_RELAXED), most = 0, nev = r->nev;
	if (n > KD_SLOTS)
		n = KD_SLOTS;
	for (uint32_t i = 0; i < n; i++) {
		struct kd_slot *s = &r->h->slot[i];
		if (!__atomic_load_n(&s->claimed, __ATOMIC_ACQUIRE))
			continue; /* its owner is still filling pid/tid */
		uint64_t head = __atomic_load_n(&s->head, __ATOMIC_ACQUIRE), tail = r->tail[i];
		/* A head the writer cannot have reached is not trusted: nothing read past the ring, nothing behind. */
		if ((int64_t)(head - tail) < 0)
			continue;
		if (head - tail > nev)
			head = tail + nev;
		if (head - tail > most)
			most = (uint32_t)(head - tail);
		const struct kd_record *ring = (const struct kd_record *)(r->h + 1) + (size_t)i * nev;
		for (; tail < head; tail++) {
			if (r->n == r->cap) {
				size_t c = r->cap ? 2 * r->cap : 4096;
				struct kd_record *g = realloc(r->rec, c * sizeof(*g));
				if (!g)
					return -ENOMEM;
				r->rec = g, r->cap = c;
			}
			struct kd_record *d = &r->rec[r->n++];
			*d = ring[tail & (nev - 1)];
			if (memchr(d->name, 0, KD_NAME) == NULL)
				r->bad++;
			d->name[KD_NAME - 1] = 0;
			r->tail[i] = tail + 1;
			__atomic_store_n(&s->tail, tail + 1, __ATOMIC_RELEASE);
		}
	}
	return (int)most;
}

const struct kd_record *kd_reader_records(const struct kd_reader *r, size_t *n)
{
	*n = r->n;
	return r->rec;
}

uint64_t kd_reader_dropped(const struct kd_reader *r)
{
	uint64_t d = 0;
	for (uint32_t i = 0; i < KD_SLOTS; i++)
		d += __atomic_load_n(&r->h->slot[i].dropped, __ATOMIC_RELAXED);
	return d;
}

json_t *kd_reader_json(const struct kd_reader *r)
{
	uint32_t th = __atomic_load_n(&r->h->next_slot, __ATOMIC_RELAXED);
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:i, s:I}", "received", (json_int_t)r->n,
			 "dropped_channel_full", (json_int_t)kd_reader_dropped(r), "threads_refused",
			 (json_int_t)__atomic_load_n(&r->h->threads_refused, __ATOMIC_RELAXED), "untimed",
			 (json_int_t)__atomic_load_n(&r->h->untimed, __ATOMIC_RELAXED), "unnamed",
			 (json_int_t)__atomic_load_n(&r->h->unnamed, __ATOMIC_RELAXED), "queues",
			 (json_int_t)__atomic_load_n(&r->h->queues, __ATOMIC_RELAXED), "writer_threads",
			 (int)(th < KD_SLOTS ? th : KD_SLOTS), "channel_events", (int)r->nev, "bad_names",
			 (json_int_t)r->bad);
}

void kd_reader_free(struct kd_reader *r)
{
	if (!r)
		return;
	munmap(r->h, r->bytes);
	close(r->fd);
	free(r->rec);
	free(r);
}
