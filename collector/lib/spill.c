/* SPDX-License-Identifier: MIT */
/*
 * The spill queue between the feeder and its consumer (feeder.h,
 * docs/architecture.md "Back-pressure policy").
 *
 * The feeder pushes every retired buffer onto its retired queue and never
 * waits.  The journal thread moves them, in order, onto one list the
 * consumer takes from:
 *
 *     head -> [in the journal ...] [in memory ...] <- tail
 *
 * A buffer stays in memory while the buffers held there fit the budget;
 * past it the journal thread writes the OLDEST one held in memory to the
 * journal and gives its memory back to the feeder's free list.  So the
 * journal part is always a prefix of the list and the journal file holds
 * its buffers in order: the consumer sees exactly the sequence it would
 * have seen without spilling, and on an abandon the memory part is simply
 * appended behind it.  Disk I/O happens only here and in the consumer
 * (reading back, marking read records), never in the feeder thread, so a
 * slow disk cannot delay a rotation.
 *
 * The journal is a raw container (docs/raw-format.md): header, the meta
 * record (with the layout, so `spmtap decode` reads it), then one SPM
 * record per part of every journalled buffer, empty ones included so the
 * decoder is fed exactly what it would have been fed.  When the consumer
 * has taken a buffer from the journal, the first of its records becomes a
 * RAWFILE_SKIP spanning all of them (one 32-byte pwrite): the file holds
 * only what is still to decode, so a kill -9 or an abandon leaves the rest
 * of the rows and nothing twice.  With `keep` the records stay (the file
 * is the raw record of everything spilled) until an abandon marks them.
 * The file is cut back to its meta record whenever the consumer has taken
 * every journalled buffer, and removed at the end unless kept.
 *
 * Loss: when the journal cannot be written (ENOSPC, EIO ...) spilling
 * stops for good and the queue behaves as without it: the pool stops
 * growing at the budget, the feeder finds no free buffer, the kernel flags
 * loss, and journal_error says why.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "collector/lib/feeder_priv.h"
#include "collector/lib/rawfile.h"
#include "le.h"
#include "log.h"

/*
 * Free buffers the journal thread keeps for the feeder while the pool may
 * grow: more while buffers are waiting (the pool is growing then, and this
 * thread, on a loaded host, may not run before the feeder's next polls).
 */
#define SPARE_IDLE 2u
#define SPARE_BUSY 4u

/*
 * The journal is written and read back with O_DIRECT where the file system
 * takes it.  Through the page cache every journalled byte is copied into a
 * page the kernel allocates first: on this project's VM (free pages go back
 * to the host) that cost 0.5-2.4 s of CPU per GB, one thread writing 4 GB
 * from 8 MiB buffers, against 0.01 s direct; in a recording the journal
 * thread then took a core from the writer it was there to relieve, and an
 * SQLite recording at 390 MB/s lost 2-3 % of its samples in 2 runs of 3.  It
 * would also push the application's files out of the page cache for bytes
 * read back once.  So a buffer's records are copied into an aligned staging
 * block (one memcpy), padded to JOURNAL_ALIGN by a skip record, and written
 * and read back directly.  Where O_DIRECT is refused (EINVAL: a file system
 * without it), the journal stays buffered from there on.  4 KiB covers
 * 512-byte and 4 KiB logical blocks.
 */
#define JOURNAL_ALIGN 4096u

struct entry {
	struct entry *next;
	struct feeder_buf *buf; /* NULL: in the journal at off, len bytes (len 0: dropped buffer 0) */
	uint64_t off;
	uint32_t len;
	uint32_t bytes;         /* data bytes */
	uint64_t mem;           /* memory it holds while buf is set: the buffer's size, or its packed copy's */
	uint64_t seq, host_ns;
	bool writing;           /* the journal thread is writing it: the consumer waits */
};

/*
 * A retired buffer that has to wait is mostly empty: the feeder retires at
 * about a quarter full (feeder.c next_period), so held whole, the budget
 * kept about a quarter of its bytes in data and the pool grew (every page
 * zeroed by the kernel on its first touch) four times as far as the backlog
 * needed.  One that waits at most half full is copied, its parts packed
 * (PACK_ALIGN each), into a buffer of its own (index PACKED) and the pool's
 * buffer goes straight back to the feeder.  Measured on the 2-vCPU VM with
 * a writer held up by another process's writes: the journal thread spent
 * 2.6 s of CPU, 93 % of it in the kernel zeroing pages for the pool, for
 * 0.37 GB recorded, and 1 GiB of budget held 0.34 GB of data.
 */
#define PACKED UINT32_MAX
#define PACK_ALIGN 64u

struct spill {
	struct feeder_spill o;
	char *path, *meta;
	pthread_t thr;
	bool running;
	pthread_mutex_t lock;
	pthread_cond_t cv;       /* the list changed, abandon, end */
	struct entry *head, *tail;
	struct entry *first_mem; /* the oldest entry still in memory (NULL: none) */
	uint64_t mem_bytes;      /* buffer bytes held in memory by the list */
	uint64_t queued, queued_disk; /* data bytes on the list; of them in the journal */
	uint64_t taken;          /* data bytes the consumer took */
	uint32_t disk_n;         /* entries in the journal on the list */
	bool producer_done;      /* the feeder ended and every retired buffer is on the list */
	bool abandon, finishing;
	/* the journal file */
	int fd;                  /* -1 until the first spill */
	int dfd;                 /* the same file with O_DIRECT; -1 when buffered */
	char io[SPILL_IO_LEN];   /* how it is written: "direct", "page cache: why"; "" before it exists */
	unsigned char *stage;    /* aligned: one buffer's records, padded, for dfd */
	size_t stage_size;
	uint64_t data_start, end;
	int jerr;
	char jmsg[SPM_ERRLEN];
	/* the consumer's read-back buffer, and what it holds */
	struct feeder_buf rb;
	bool rb_busy;
	uint64_t rb_off;
	uint32_t rb_len;
	uint64_t *done_off;      /* keep: journal offsets of taken buffers, marked on an abandon */
	size_t ndone, capdone;
	/*
	 * Cold buffers: free ones the pool grew to for a backlog that has
	 * drained, their pages given back (MADV_DONTNEED) and kept off the free
	 * queue, which is FIFO: there the feeder would cycle through them all
	 * and fault every page back in.  Taken again (spill_take_cold) before
	 * the pool grows.  Under lock.
	 */
	struct feeder_buf **cold;
	uint32_t ncold;
	/* statistics */
	uint64_t spilled, journalled, peak, abandoned, cpu_ns;
	uint64_t cooled; /* buffers whose pages were given back */
	uint64_t packed; /* buffers that waited as packed copies (the journal thread's) */
	_Atomic uint32_t packed_live; /* packed copies not yet freed */
	bool trim;       /* copies were made since the heap was last trimmed (the journal thread's) */
	uint64_t read_failed, read_lost; /* journalled buffers not read back; their data bytes */
};

static uint32_t pad8(uint32_t n) { return (8u - (n & 7u)) & 7u; }

static uint64_t align_up(uint64_t n) { return (n + JOURNAL_ALIGN - 1) / JOURNAL_ALIGN * JOURNAL_ALIGN; }

/* The largest group of records one buffer makes: its data plus a header and padding per part. */
static size_t group_bytes(const struct feeder *f)
{
	return f->size + DEC_MAX_XCC * (RAWFILE_REC_HEADER_SIZE + 8);
}

/* The same padded for direct I/O (the skip record may need a block more). */
static size_t group_max(const struct feeder *f)
{
	return (size_t)align_up(group_bytes(f) + RAWFILE_REC_HEADER_SIZE);
}

/* The journal goes through the page cache from here on, and says why (metadata spill.journal_io). */
__attribute__((format(printf, 2, 3))) static void buffered_io(struct spill *sp, const char *fmt, ...)
{
	char why[SPILL_IO_LEN - 16];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(sp->io, sizeof(sp->io), "page cache: %s", why);
	pr_info("journal", "%s: %s; writing it through the page cache", sp->path, why);
}

static void direct_off(struct spill *sp, const char *why)
{
	if (sp->dfd < 0)
		return;
	close(sp->dfd);
	sp->dfd = -1;
	buffered_io(sp, "%s", why);
}

static void set_jerr(struct spill *sp, int err, const char *what)
{
	if (sp->jerr)
		return;
	sp->jerr = err ? err : -EIO;
	snprintf(sp->jmsg, sizeof(sp->jmsg), "%s: %s: %s", sp->path, what, spmtap_strerror(sp->jerr));
	pr_warn("journal", "%s; no more spilling: a slow output now loses samples again", sp->jmsg);
}

/*
 * Direct I/O from here on, if the file system takes it: the file padded to
 * a block by a skip record (buffered, before any direct write), the staging
 * block, and a second descriptor with O_DIRECT.  Anything refused leaves the
 * journal buffered, which works the same, only dearer.
 */
static void journal_direct(struct spill *sp)
{
	if (sp->o.buffered) {
		snprintf(sp->io, sizeof(sp->io), "page cache: SPMTAP_JOURNAL_DIRECT=0");
		return;
	}
	uint64_t at = sp->end, pad = align_up(at + RAWFILE_REC_HEADER_SIZE) - at;
	if (posix_memalign((void **)&sp->stage, JOURNAL_ALIGN, sp->stage_size)) {
		sp->stage = NULL;
		buffered_io(sp, "no memory for the direct I/O block");
		return;
	}
	memset(sp->stage, 0, pad);
	rawfile_rec_header(sp->stage, RAWFILE_SKIP, 0, 0, (uint32_t)(pad - RAWFILE_REC_HEADER_SIZE), 0, 0);
	if (pwrite(sp->fd, sp->stage, pad, (off_t)at) != (ssize_t)pad) {
		int e = errno;
		if (ftruncate(sp->fd, (off_t)at) < 0) {
			/* the next append overwrites it anyway */
		}
		buffered_io(sp, "padding to a block: %s", spmtap_strerror(-e));
		return;
	}
	sp->data_start = sp->end = at + pad;
	sp->dfd = open(sp->path, O_RDWR | O_CLOEXEC | O_DIRECT);
	if (sp->dfd < 0)
		buffered_io(sp, "no direct I/O (%s)", spmtap_strerror(-errno));
	else
		snprintf(sp->io, sizeof(sp->io), "direct");
}

/* Header and meta record through rawfile.c, then our own descriptor for appends. */
static int journal_open(struct spill *sp)
{
	char e[SPM_ERRLEN];
	struct rawfile_writer *w;
	int rc = rawfile_create(&w, sp->path, &sp->o.hdr, e, sizeof(e));
	if (rc == 0) {
		const char *m = sp->meta ? sp->meta : "{}";
		rc = rawfile_append(w, RAWFILE_META, 0, 0, 0, sp->o.hdr.start_boottime_ns, m,
				    (uint32_t)strlen(m), e, sizeof(e));
		int r2 = rawfile_finish(w, NULL, 0);
		if (!rc)
			rc = r2;
	}
	if (rc == 0) {
		sp->fd = open(sp->path, O_RDWR | O_CLOEXEC);
		if (sp->fd < 0)
			rc = -errno;
	}
	if (rc < 0) {
		set_jerr(sp, rc, "cannot create the journal");
		return rc;
	}
	off_t end = lseek(sp->fd, 0, SEEK_END);
	sp->data_start = sp->end = end > 0 ? (uint64_t)end : 0;
	journal_direct(sp);
	return 0;
}

/*
 * journal_write through dfd: the records gathered into the staging block, a
 * skip record up to the next block, one write.  1 when the file system
 * refused direct I/O (then nothing was written and dfd is closed).
 */
static int journal_write_direct(struct spill *sp, const struct feeder_buf *b, const struct iovec *iov, int n,
				uint64_t total, uint64_t *off)
{
	unsigned char *s = sp->stage;
	size_t pos = 0;
	for (int k = 0; k < n; pos += iov[k].iov_len, k++)
		memcpy(s + pos, iov[k].iov_base, iov[k].iov_len);
	uint64_t padded = align_up(total + RAWFILE_REC_HEADER_SIZE), at = sp->end, done = 0;
	rawfile_rec_header(s + total, RAWFILE_SKIP, 0, 0, (uint32_t)(padded - total - RAWFILE_REC_HEADER_SIZE),
			   b->seq, b->host_ns);
	memset(s + total + RAWFILE_REC_HEADER_SIZE, 0, padded - total - RAWFILE_REC_HEADER_SIZE);
	while (done < padded) {
		ssize_t w = pwrite(sp->dfd, s + done, padded - done, (off_t)(at + done));
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EINVAL && done == 0) {
			direct_off(sp, "direct I/O refused");
			return 1;
		}
		if (w <= 0) {
			int rc = w < 0 ? -errno : -EIO;
			if (ftruncate(sp->fd, (off_t)at) < 0) {
				/* nothing more to do: the error stops the journal */
			}
			return rc;
		}
		done += (uint64_t)w;
	}
	sp->end = at + padded;
	*off = at;
	return 0;
}

/* Every part of b as records at sp->end (empty parts too: the decoder is fed them). */
static int journal_write(struct spill *sp, const struct feeder_buf *b, uint64_t *off, uint32_t *len)
{
	static const unsigned char zeros[8];
	unsigned char hdr[DEC_MAX_XCC][RAWFILE_REC_HEADER_SIZE];
	struct iovec iov[DEC_MAX_XCC * 3];
	int n = 0;
	uint64_t total = 0;
	for (uint32_t i = 0; i < b->nparts; i++) {
		const struct dec_part *p = &b->parts[i];
		uint32_t flags = (p->loss ? RAWFILE_F_LOSS : 0) | (p->bad ? RAWFILE_F_BAD : 0);
		rawfile_rec_header(hdr[i], RAWFILE_SPM, (uint16_t)p->xcc, flags, p->bytes, b->seq, b->host_ns);
		iov[n++] = (struct iovec){ hdr[i], RAWFILE_REC_HEADER_SIZE };
		if (p->bytes)
			iov[n++] = (struct iovec){ (char *)b->data + p->offset, p->bytes };
		if (pad8(p->bytes))
			iov[n++] = (struct iovec){ (void *)zeros, pad8(p->bytes) };
		total += RAWFILE_REC_HEADER_SIZE + p->bytes + pad8(p->bytes);
	}
	*len = (uint32_t)total;
	if (sp->dfd >= 0) {
		int rc = journal_write_direct(sp, b, iov, n, total, off);
		if (rc <= 0)
			return rc;
	}
	uint64_t at = sp->end, done = 0;
	int k = 0;
	while (k < n) {
		ssize_t w = pwritev(sp->fd, iov + k, n - k, (off_t)(at + done));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int rc = w < 0 ? -errno : -EIO;
			/* Cut back to the last whole buffer: what is before stays readable. */
			if (ftruncate(sp->fd, (off_t)at) < 0) {
				/* nothing more to do: the error below stops the journal */
			}
			return rc;
		}
		done += (uint64_t)w;
		while (k < n && (size_t)w >= iov[k].iov_len) {
			w -= (ssize_t)iov[k].iov_len;
			k++;
		}
		if (k < n) {
			iov[k].iov_base = (char *)iov[k].iov_base + w;
			iov[k].iov_len -= (size_t)w;
		}
	}
	sp->end = at + total;
	*off = at;
	return 0;
}

/* The records of a buffer the consumer has: one skip record over all of them. */
static void mark_taken(struct spill *sp, uint64_t off, uint32_t len, uint64_t seq, uint64_t host_ns)
{
	if (len < RAWFILE_REC_HEADER_SIZE || sp->fd < 0)
		return;
	unsigned char h[RAWFILE_REC_HEADER_SIZE];
	rawfile_rec_header(h, RAWFILE_SKIP, 0, 0, len - RAWFILE_REC_HEADER_SIZE, seq, host_ns);
	if (sp->dfd >= 0 && off % JOURNAL_ALIGN == 0) {
		/* Its block read, patched and written back: no page-cache page over direct writes. */
		_Alignas(JOURNAL_ALIGN) unsigned char blk[JOURNAL_ALIGN];
		if (pread(sp->dfd, blk, sizeof(blk), (off_t)off) == (ssize_t)sizeof(blk)) {
			memcpy(blk, h, sizeof(h));
			if (pwrite(sp->dfd, blk, sizeof(blk), (off_t)off) == (ssize_t)sizeof(blk))
				return;
		}
	}
	if (pwrite(sp->fd, h, sizeof(h), (off_t)off) != (ssize_t)sizeof(h))
		pr_warn("journal", "%s: cannot mark a decoded buffer: %s (a decode of the journal repeats it)",
			sp->path, spmtap_strerror(-errno));
}

/* A packed copy is freed; a buffer of the pool goes back to the feeder. */
static void give_back(struct feeder *f, struct feeder_buf *b)
{
	if (b->index == PACKED) {
		free(b->data);
		free(b);
		atomic_fetch_sub(&f->sp->packed_live, 1);
		return;
	}
	spsc_push(&f->free, b);
}

/*
 * b's parts copied into a buffer of their own, or NULL (the copy would not
 * save half, or no memory): what waits in memory is then only data.
 */
static struct feeder_buf *pack(const struct feeder *f, const struct feeder_buf *b)
{
	uint64_t need = 0;
	for (uint32_t i = 0; i < b->nparts; i++)
		need += (b->parts[i].bytes + PACK_ALIGN - 1) / PACK_ALIGN * PACK_ALIGN;
	if (need > f->size / 2)
		return NULL;
	struct feeder_buf *c = malloc(sizeof(*c));
	void *data = malloc(need ? need : PACK_ALIGN);
	if (!c || !data) {
		free(c);
		free(data);
		return NULL;
	}
	*c = *b;
	c->data = data;
	c->size = (uint32_t)(need ? need : PACK_ALIGN);
	c->index = PACKED;
	uint32_t at = 0;
	for (uint32_t i = 0; i < b->nparts; i++) {
		const struct dec_part *p = &b->parts[i];
		memcpy((char *)data + at, (const char *)b->data + p->offset, p->bytes);
		c->parts[i].offset = at;
		at += (p->bytes + PACK_ALIGN - 1) / PACK_ALIGN * PACK_ALIGN;
	}
	return c;
}

/*
 * Write the oldest buffer held in memory to the journal and free its memory.
 * 1 when one went, 0 when none is in memory, < 0 when the journal failed.
 */
static int spill_one(struct feeder *f)
{
	struct spill *sp = f->sp;
	pthread_mutex_lock(&sp->lock);
	struct entry *e = sp->first_mem;
	if (!e || sp->jerr) {
		pthread_mutex_unlock(&sp->lock);
		return e ? sp->jerr : 0;
	}
	/* Nothing of the journal is left to read: start it over, so it holds only what waits. */
	if (sp->disk_n == 0 && !sp->rb_busy && !sp->o.keep && sp->fd >= 0 && sp->end > sp->data_start) {
		if (ftruncate(sp->fd, (off_t)sp->data_start) == 0)
			sp->end = sp->data_start;
	}
	e->writing = true;
	pthread_mutex_unlock(&sp->lock);
	struct feeder_buf *b = e->buf;
	int rc = 0;
	uint64_t off = 0;
	uint32_t len = 0;
	if (!(sp->o.skip_seq0 && b->seq == 0)) { /* buffer 0 is dropped by the consumer anyway */
		if (sp->fd < 0)
			rc = journal_open(sp);
		if (rc == 0 && (rc = journal_write(sp, b, &off, &len)) < 0)
			set_jerr(sp, rc, "write failed");
	}
	pthread_mutex_lock(&sp->lock);
	e->writing = false;
	if (rc == 0) {
		e->off = off;
		e->len = len;
		e->buf = NULL;
		sp->first_mem = e->next;
		sp->mem_bytes -= e->mem;
		sp->disk_n++;
		sp->queued_disk += e->bytes;
		sp->journalled += e->bytes;
	}
	pthread_cond_broadcast(&sp->cv);
	pthread_mutex_unlock(&sp->lock);
	if (rc < 0)
		return rc;
	give_back(f, b);
	return 1;
}

static void append(struct feeder *f, struct feeder_buf *b)
{
	struct spill *sp = f->sp;
	struct entry *e = calloc(1, sizeof(*e));
	/* Only this thread appends: a buffer behind another waits (the consumer may catch up meanwhile). */
	pthread_mutex_lock(&sp->lock);
	bool waits = sp->head != NULL;
	/*
	 * Without a journal to move the oldest to (none, or it failed), a copy
	 * must fit the budget: a buffer of the pool held instead keeps the
	 * pool's limit, and the loss at a full pool is said as before.
	 */
	bool fits = !sp->jerr || sp->mem_bytes + f->size / 2 <= sp->o.mem_budget;
	pthread_mutex_unlock(&sp->lock);
	struct feeder_buf *c = e && waits && fits ? pack(f, b) : NULL;
	if (c) {
		spsc_push(&f->free, b);
		b = c;
		atomic_fetch_add(&sp->packed_live, 1);
		sp->packed++;
		sp->trim = true;
	}
	pthread_mutex_lock(&sp->lock);
	if (!e) {
		/* Cannot queue it: it is lost here, and said so (never silently). */
		pthread_mutex_unlock(&sp->lock);
		sp->abandoned += b->bytes;
		pr_warn("journal", "out of memory: a retired buffer of %u bytes dropped", b->bytes);
		spsc_push(&f->free, b);
		return;
	}
	e->buf = b;
	e->mem = b->index == PACKED ? b->size : f->size;
	e->bytes = b->bytes;
	e->seq = b->seq;
	e->host_ns = b->host_ns;
	if (sp->head)
		sp->spilled += b->bytes; /* the consumer had not taken the one before: this one waits */
	if (sp->tail)
		sp->tail->next = e;
	else
		sp->head = e;
	sp->tail = e;
	if (!sp->first_mem)
		sp->first_mem = e;
	sp->mem_bytes += e->mem;
	if (sp->mem_bytes > sp->peak)
		sp->peak = sp->mem_bytes;
	sp->queued += b->bytes;
	pthread_cond_broadcast(&sp->cv);
	pthread_mutex_unlock(&sp->lock);
}

static bool over_budget(struct feeder *f)
{
	struct spill *sp = f->sp;
	pthread_mutex_lock(&sp->lock);
	bool over = sp->first_mem && (sp->abandon || sp->mem_bytes > sp->o.mem_budget);
	pthread_mutex_unlock(&sp->lock);
	return over;
}

/* On an abandon: the taken records of a kept journal are marked too, so it holds only the rest. */
static void mark_kept_taken(struct spill *sp)
{
	pthread_mutex_lock(&sp->lock);
	uint64_t *offs = sp->done_off;
	size_t n = sp->ndone;
	sp->done_off = NULL;
	sp->ndone = sp->capdone = 0;
	pthread_mutex_unlock(&sp->lock);
	for (size_t i = 0; i < n; i++) {
		unsigned char h[RAWFILE_REC_HEADER_SIZE];
		/* Its first record's header says the length of each record: walk them. */
		uint64_t off = offs[i], end = off;
		uint64_t seq = 0, host = 0;
		bool first = true;
		while (pread(sp->fd, h, sizeof(h), (off_t)end) == (ssize_t)sizeof(h) &&
		       le_get32(h) == RAWFILE_REC_MAGIC && le_get16(h + 4) == RAWFILE_SPM) {
			uint64_t s = le_get64(h + 16);
			if (first) {
				seq = s;
				host = le_get64(h + 24);
				first = false;
			} else if (s != seq) {
				break;
			}
			uint32_t l = le_get32(h + 12);
			end += RAWFILE_REC_HEADER_SIZE + l + pad8(l);
		}
		if (end > off)
			mark_taken(sp, off, (uint32_t)(end - off), seq, host);
	}
	free(offs);
}

static void *journal_main(void *arg)
{
	struct feeder *f = arg;
	pthread_setname_np(pthread_self(), "spmtap-journal");
	struct spill *sp = f->sp;
	bool marked = false;
	for (;;) {
		void *item;
		int r = spsc_pop(&f->retired, &item, 50);
		/* Every buffer retired so far, before anything else: a packed one gives its buffer back. */
		while (r == 0) {
			append(f, item);
			r = spsc_pop(&f->retired, &item, 0);
		}
		/* Spill while over the budget (everything after an abandon). */
		while (over_budget(f) && spill_one(f) > 0)
			;
		/*
		 * Keep the feeder supplied while the pool may grow: it must never find
		 * none free.  One buffer at a time, the retired ones appended between:
		 * a new buffer costs its pages' zeroing (tens of ms for 24 MiB on a
		 * busy host), and growing to the spare while the retired queue waited
		 * left the feeder short again, so the pool grew to its limit (measured:
		 * 49 buffers of 24 MiB for 140 MB that waited, 90 % of this thread's
		 * CPU in the kernel's clear_page).
		 */
		for (;;) {
			pthread_mutex_lock(&sp->lock);
			bool room = !sp->jerr || sp->mem_bytes < sp->o.mem_budget;
			bool ab = sp->abandon;
			uint32_t spare = sp->head ? SPARE_BUSY : SPARE_IDLE;
			pthread_mutex_unlock(&sp->lock);
			if (!room || ab || spsc_count(&f->free) >= spare)
				break;
			struct feeder_buf *c = spill_take_cold(f, true);
			if (c)
				spsc_push(&f->free, c);
			else if (feeder_grow(f) != 0)
				break;
			int r2;
			while ((r2 = spsc_pop(&f->retired, &item, 0)) == 0)
				append(f, item);
			if (r2 == -ENODATA)
				r = r2;
		}
		/*
		 * The backlog drained and every copy is freed: their pages back to the
		 * system (malloc_trim returns free heap pages anywhere, not only at the
		 * top), as cold buffers give theirs (put_free).
		 */
		if (sp->trim && atomic_load(&sp->packed_live) == 0) {
			malloc_trim(0);
			sp->trim = false;
		}
		pthread_mutex_lock(&sp->lock);
		bool ab = sp->abandon;
		pthread_mutex_unlock(&sp->lock);
		if (ab && !marked && sp->o.keep && sp->fd >= 0) {
			mark_kept_taken(sp);
			marked = true;
		}
		if (r == -ENODATA)
			break;
	}
	pthread_mutex_lock(&sp->lock);
	sp->producer_done = true;
	pthread_cond_broadcast(&sp->cv);
	/* The consumer catches up from memory and the journal; wait for it, or an abandon. */
	while (!sp->abandon && !sp->finishing && (sp->head || sp->rb_busy))
		pthread_cond_wait(&sp->cv, &sp->lock);
	bool left = sp->head != NULL;
	if (left && !sp->abandon) /* finished without the consumer taking everything */
		sp->abandon = true;
	pthread_mutex_unlock(&sp->lock);
	if (left) {
		while (spill_one(f) > 0)
			;
		if (sp->o.keep && !marked && sp->fd >= 0)
			mark_kept_taken(sp);
	}
	struct timespec cpu;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
		sp->cpu_ns = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
	return NULL;
}

int spill_start(struct feeder *f, const struct feeder_spill *o, char *err, size_t errlen)
{
	struct spill *sp = calloc(1, sizeof(*sp));
	if (!sp)
		return spmtap_seterr(err, errlen, ENOMEM, "feeder: out of memory");
	sp->o = *o;
	sp->fd = sp->dfd = -1;
	sp->path = o->journal ? strdup(o->journal) : NULL;
	sp->meta = o->meta_json ? strdup(o->meta_json) : NULL;
	sp->rb.size = group_bytes(f);
	sp->rb.index = UINT32_MAX;
	/* aligned and whole blocks long: a direct read fills it (journal_direct) */
	sp->stage_size = group_max(f);
	if (posix_memalign(&sp->rb.data, JOURNAL_ALIGN, sp->stage_size))
		sp->rb.data = NULL;
	sp->cold = calloc(f->maxbuf, sizeof(*sp->cold));
	if ((o->journal && !sp->path) || (o->meta_json && !sp->meta) || !sp->rb.data || !sp->cold) {
		free(sp->cold);
		free(sp->path);
		free(sp->meta);
		free(sp->rb.data);
		free(sp);
		return spmtap_seterr(err, errlen, ENOMEM, "feeder: out of memory");
	}
	/*
	 * A journal of this NAME left by a killed run goes with that run's .part
	 * files, which the outputs of a new run under the same NAME replace
	 * (outset.c): a stale one beside new outputs would be read as theirs.
	 */
	if (sp->path)
		(void)unlink(sp->path);
	if (!sp->path)
		sp->jerr = -ENOENT; /* memory only */
	pthread_mutex_init(&sp->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sp->cv, &ca);
	pthread_condattr_destroy(&ca);
	f->sp = sp;
	int rc = pthread_create(&sp->thr, NULL, journal_main, f);
	if (rc) {
		f->sp = NULL;
		pthread_mutex_destroy(&sp->lock);
		pthread_cond_destroy(&sp->cv);
		free(sp->path);
		free(sp->meta);
		free(sp->rb.data);
		free(sp->cold);
		free(sp);
		return spmtap_seterr(err, errlen, rc, "feeder: cannot start the journal thread: %s",
				     spmtap_strerror(rc));
	}
	sp->running = true;
	return 0;
}

/* Read a journalled buffer back into rb, split into its parts as the feeder had it. */
static void read_back(struct spill *sp, const struct entry *e, uint32_t nstreams)
{
	struct feeder_buf *b = &sp->rb;
	b->seq = e->seq;
	b->host_ns = e->host_ns;
	b->nparts = b->bytes = b->loss_parts = b->bad_parts = 0;
	b->args_bytes = b->args_loss = 0;
	uint64_t done = 0;
	int rc = 0;
	if (sp->dfd >= 0 && e->off % JOURNAL_ALIGN == 0) {
		/* whole blocks: the group was padded to them when written */
		uint64_t want = align_up(e->len);
		while (done < want) {
			ssize_t n = pread(sp->dfd, (char *)b->data + done, want - done, (off_t)(e->off + done));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			done += (uint64_t)n;
		}
		done = done >= e->len ? e->len : 0; /* short or refused: read it through the page cache */
	}
	while (done < e->len) {
		ssize_t n = pread(sp->fd, (char *)b->data + done, e->len - done, (off_t)(e->off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -ENODATA;
			break;
		}
		done += (uint64_t)n;
	}
	for (uint32_t pos = 0; rc == 0 && pos + RAWFILE_REC_HEADER_SIZE <= e->len && b->nparts < DEC_MAX_XCC;) {
		const unsigned char *h = (const unsigned char *)b->data + pos;
		uint32_t len = le_get32(h + 12), flags = le_get32(h + 8);
		if (le_get32(h) != RAWFILE_REC_MAGIC || le_get16(h + 4) != RAWFILE_SPM ||
		    pos + RAWFILE_REC_HEADER_SIZE + len > e->len) {
			rc = -EBADMSG;
			break;
		}
		struct dec_part *p = &b->parts[b->nparts++];
		*p = (struct dec_part){ .xcc = le_get16(h + 6), .offset = pos + RAWFILE_REC_HEADER_SIZE,
					.bytes = len, .loss = flags & RAWFILE_F_LOSS, .bad = flags & RAWFILE_F_BAD };
		b->bytes += len;
		b->loss_parts += p->loss;
		b->bad_parts += p->bad;
		pos += RAWFILE_REC_HEADER_SIZE + len + pad8(len);
	}
	if (rc < 0) {
		/* The bytes are gone: every stream is told of loss here, so the gap is counted. */
		pthread_mutex_lock(&sp->lock);
		uint64_t nth = ++sp->read_failed;
		sp->read_lost += e->bytes;
		pthread_mutex_unlock(&sp->lock);
		/* A failing disk fails every read: the first few, then one in 1024 (the total is in the summary). */
		if (nth <= 5 || nth % 1024 == 0)
			pr_warn("journal", "%s: reading buffer %" PRIu64 " back failed: %s; counted as lost (%" PRIu64
				" so far)%s", sp->path, e->seq, spmtap_strerror(rc), nth,
				nth == 5 ? "; further warnings: one in 1024" : "");
		b->nparts = nstreams;
		b->bytes = 0;
		b->loss_parts = nstreams;
		for (uint32_t i = 0; i < nstreams; i++)
			b->parts[i] = (struct dec_part){ .xcc = i, .loss = true };
	}
}

int spill_next(struct feeder *f, struct feeder_buf **out, int timeout_ms)
{
	struct spill *sp = f->sp;
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&sp->lock);
	for (;;) {
		if (sp->abandon) {
			pthread_mutex_unlock(&sp->lock);
			return -ENODATA;
		}
		if (sp->head && !sp->head->writing)
			break;
		if (!sp->head && sp->producer_done) {
			pthread_mutex_unlock(&sp->lock);
			return -ENODATA;
		}
		if (timeout_ms == 0 ||
		    (timeout_ms > 0 && pthread_cond_timedwait(&sp->cv, &sp->lock, &dl) == ETIMEDOUT)) {
			pthread_mutex_unlock(&sp->lock);
			return -EAGAIN;
		}
		if (timeout_ms < 0)
			pthread_cond_wait(&sp->cv, &sp->lock);
	}
	struct entry *e = sp->head;
	sp->head = e->next;
	if (!sp->head)
		sp->tail = NULL;
	if (sp->first_mem == e)
		sp->first_mem = e->next;
	sp->queued -= e->bytes;
	sp->taken += e->bytes;
	if (e->buf) {
		sp->mem_bytes -= e->mem;
		pthread_cond_broadcast(&sp->cv);
		pthread_mutex_unlock(&sp->lock);
		*out = e->buf;
		free(e);
		return 0;
	}
	sp->disk_n--;
	sp->queued_disk -= e->bytes;
	sp->rb_busy = true;
	sp->rb_off = e->off;
	sp->rb_len = e->len;
	pthread_mutex_unlock(&sp->lock);
	read_back(sp, e, f->shape.nstreams);
	free(e);
	*out = &sp->rb;
	return 0;
}

/*
 * A buffer the consumer is done with: back on the free queue, or cold when
 * the free queue already holds what the rotation and the journal's spares
 * use (the pool grew for a backlog that is gone).  madvise is advice: where
 * it fails the pages stay, and the buffer is cold all the same.
 */
static void put_free(struct feeder *f, struct feeder_buf *b)
{
	struct spill *sp = f->sp;
	if (b->index == PACKED) {
		give_back(f, b);
		return;
	}
	if (sp->cold && spsc_count(&f->free) >= f->base + SPARE_BUSY) {
		/*
		 * Whole pages only: the kernel rounds the length up, and the page the
		 * buffer ends in may hold the start of another allocation, which
		 * MADV_DONTNEED would zero; and a start not on a page is left alone.
		 */
		long pg = sysconf(_SC_PAGESIZE);
		size_t page = pg > 0 ? (size_t)pg : 4096, len = f->size / page * page;
		if (len && (uintptr_t)b->data % page == 0)
			(void)madvise(b->data, len, MADV_DONTNEED);
		pthread_mutex_lock(&sp->lock);
		sp->cold[sp->ncold++] = b; /* room for every buffer of the pool */
		sp->cooled++;
		pthread_mutex_unlock(&sp->lock);
		return;
	}
	spsc_push(&f->free, b);
}

struct feeder_buf *spill_take_cold(struct feeder *f, bool touch)
{
	struct spill *sp = f->sp;
	struct feeder_buf *b = NULL;
	pthread_mutex_lock(&sp->lock);
	if (sp->ncold)
		b = sp->cold[--sp->ncold];
	pthread_mutex_unlock(&sp->lock);
	if (b && touch)
		feeder_touch(b->data, f->size); /* as feeder_grow: the kernel's copy should not fault */
	return b;
}

void spill_put(struct feeder *f, struct feeder_buf *b)
{
	struct spill *sp = f->sp;
	if (b != &sp->rb) {
		put_free(f, b);
		return;
	}
	pthread_mutex_lock(&sp->lock);
	bool mark = !sp->o.keep || sp->abandon;
	if (!mark && sp->rb_len) {
		if (sp->ndone == sp->capdone) {
			size_t cap = sp->capdone ? sp->capdone * 2 : 1024;
			uint64_t *n = realloc(sp->done_off, cap * sizeof(*n));
			if (n) {
				sp->done_off = n;
				sp->capdone = cap;
			}
		}
		if (sp->ndone < sp->capdone)
			sp->done_off[sp->ndone++] = sp->rb_off;
	}
	pthread_mutex_unlock(&sp->lock);
	if (mark)
		mark_taken(sp, sp->rb_off, sp->rb_len, b->seq, b->host_ns);
	pthread_mutex_lock(&sp->lock);
	sp->rb_busy = false;
	pthread_cond_broadcast(&sp->cv);
	pthread_mutex_unlock(&sp->lock);
}

void spill_backlog(struct feeder *f, struct feeder_backlog *b)
{
	struct spill *sp = f->sp;
	pthread_mutex_lock(&sp->lock);
	b->queued_bytes = sp->queued;
	b->journal_bytes = sp->queued_disk;
	b->taken_bytes = sp->taken;
	b->done = sp->producer_done && !sp->head && !sp->rb_busy;
	pthread_mutex_unlock(&sp->lock);
}

void spill_abandon(struct feeder *f)
{
	struct spill *sp = f->sp;
	pthread_mutex_lock(&sp->lock);
	sp->abandon = true;
	pthread_cond_broadcast(&sp->cv);
	pthread_mutex_unlock(&sp->lock);
}

void spill_finish(struct feeder *f, struct feeder_stats *st)
{
	struct spill *sp = f->sp;
	if (!sp)
		return;
	if (sp->running) {
		/* Normally the feeder closed it already; on a failed start nobody did. */
		spsc_close(&f->retired);
		pthread_mutex_lock(&sp->lock);
		sp->finishing = true;
		pthread_cond_broadcast(&sp->cv);
		pthread_mutex_unlock(&sp->lock);
		pthread_join(sp->thr, NULL);
	}
	/* What neither the consumer took nor the journal holds (no journal, or it failed). */
	uint64_t lost = sp->abandoned, left = 0;
	for (struct entry *e = sp->head, *n; e; e = n) {
		n = e->next;
		if (e->buf)
			lost += e->bytes;
		else
			left += e->bytes;
		if (e->buf && e->buf->index == PACKED)
			give_back(f, e->buf); /* the pool's own are freed with it */
		free(e);
	}
	bool kept = sp->fd >= 0 && (sp->o.keep || (sp->abandon && left > 0));
	if (sp->dfd >= 0)
		close(sp->dfd);
	if (sp->fd >= 0) {
		if (kept)
			fdatasync(sp->fd);
		close(sp->fd);
		if (!kept)
			unlink(sp->path);
	}
	if (st) {
		st->journal_cpu_ns = sp->cpu_ns;
		st->spilled_bytes = sp->spilled;
		st->journal_bytes = sp->journalled;
		st->spill_mem_peak = sp->peak;
		st->spill_buffers = atomic_load(&f->nbuf);
		st->spill_cooled = sp->cooled;
		st->spill_packed = sp->packed;
		st->spill_pool_full = st->spill_buffers >= f->maxbuf;
		st->abandoned_bytes = lost;
		st->journal_left_bytes = left;
		st->journal_read_failed = sp->read_failed;
		st->journal_read_lost_bytes = sp->read_lost;
		st->abandoned = sp->abandon;
		st->journal_kept = kept;
		snprintf(st->journal_io, sizeof(st->journal_io), "%s", sp->io);
		if (sp->jerr && sp->jerr != -ENOENT) {
			st->journal_error = sp->jerr;
			snprintf(st->journal_errmsg, sizeof(st->journal_errmsg), "%s", sp->jmsg);
		}
	}
	pthread_mutex_destroy(&sp->lock);
	pthread_cond_destroy(&sp->cv);
	free(sp->done_off);
	free(sp->path);
	free(sp->meta);
	free(sp->rb.data);
	free(sp->stage);
	free(sp->cold); /* the buffers are the pool's, freed with it */
	free(sp);
	f->sp = NULL;
}
