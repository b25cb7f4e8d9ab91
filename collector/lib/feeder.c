/* SPDX-License-Identifier: MIT */
/*
 * Feeder thread (collector/lib/feeder.h).  Buffer life cycle:
 *
 *   free --(poison, SET_DEST_BUF arms it)--> armed --(next SET_DEST_BUF
 *   retires it)--> retired (queued, owned by the consumer) --feeder_put--> free
 *
 * Only the feeder thread calls into the stream, so the stream needs no lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "collector/lib/feeder_priv.h"
#include "log.h"

#define MIN_PERIOD_US 1000u
#define MAX_PERIOD_US 100000u
#define START_PERIOD_US 10000u
/* SPM.md 3.6 / aqlprofile: rotate until a call copies nothing, at most 5 more times. */
#define DRAIN_EXTRA_CALLS 5u
#define FEEDER_HUGE (2u << 20) /* a transparent huge page on x86-64 */

static struct feeder_buf *pool_add(struct feeder *f, bool touch);
/* How long the drain waits for the consumer to give a buffer back. */
#define DRAIN_WAIT_MS 2000


static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t feeder_default_size(uint32_t num_xcc)
{
	uint64_t v = (uint64_t)FEEDER_DEFAULT_PER_XCC * (num_xcc ? num_xcc : 1);
	return v > FEEDER_DEFAULT_SIZE ? v : FEEDER_DEFAULT_SIZE;
}

uint32_t feeder_round_size(uint64_t want, uint32_t num_xcc, char *note, size_t len)
{
	if (note && len)
		note[0] = 0;
	if (num_xcc == 0)
		num_xcc = 1;
	uint64_t unit = 32ull * num_xcc;
	uint64_t lo = FEEDER_MIN_SIZE > 64ull * num_xcc ? FEEDER_MIN_SIZE : 64ull * num_xcc;
	uint64_t hi = UINT32_MAX;
	uint64_t v = want ? want : feeder_default_size(num_xcc);
	const char *why = NULL;
	if (v > hi) {
		v = hi;
		why = "the ioctl takes a 32-bit size";
	} else if (v < lo) {
		v = lo;
		why = "smaller buffers cannot hold a region per XCC";
	}
	uint64_t r = v / unit * unit;
	if (r < lo)
		r = (lo + unit - 1) / unit * unit;
	if (!why && r != v)
		why = "sizes are whole 32-byte lines for each XCC region";
	if (why && note && len)
		snprintf(note, len, "buffer size %" PRIu64 " adjusted to %" PRIu64 " bytes: %s", want, r,
			 why);
	return (uint32_t)r;
}

static void set_error(struct feeder *f, int err, const char *what, const char *msg)
{
	if (f->st.error)
		return;
	f->st.error = err ? err : -EIO;
	snprintf(f->st.errmsg, sizeof(f->st.errmsg), "%s: %s", what,
		 msg && *msg ? msg : spmtap_strerror(err));
}

/* Sleep up to us, waking early when a stop is requested. */
static void nap(struct feeder *f, uint32_t us)
{
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_nsec += (long)(us % 1000000u) * 1000L;
	dl.tv_sec += us / 1000000u + dl.tv_nsec / 1000000000L;
	dl.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&f->ctl_lock);
	while (!atomic_load(&f->stop))
		if (pthread_cond_timedwait(&f->ctl_cond, &f->ctl_lock, &dl) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&f->ctl_lock);
}

/* Split a buffer the kernel just gave back into its parts: the only split it gets. */
static uint32_t frame_summary(struct feeder *f, struct feeder_buf *b, const struct spm_retired *r)
{
	uint32_t max_part = 0;
	b->args_bytes = r->args_bytes;
	b->args_loss = r->args_loss;
	b->bytes = b->loss_parts = b->bad_parts = 0;
	int n = dec_frame_split(f->shape.headers, f->shape.nstreams, b->data, b->size, r->args_bytes,
				r->args_loss, b->parts, DEC_MAX_XCC);
	b->nparts = n > 0 ? (uint32_t)n : 0;
	for (uint32_t i = 0; i < b->nparts; i++) {
		const struct dec_part *p = &b->parts[i];
		b->bytes += p->bytes;
		b->loss_parts += p->loss;
		b->bad_parts += p->bad;
		if (p->bytes > max_part)
			max_part = p->bytes;
	}
	return max_part;
}

static void hand_over(struct feeder *f, struct feeder_buf *b, const struct spm_retired *r)
{
	b->host_ns = now_ns(CLOCK_BOOTTIME);
	f->last_max_part = frame_summary(f, b, r);
	f->last_bytes = b->bytes;
	f->last_loss = b->loss_parts != 0;
	b->seq = f->st.retired++;
	f->st.bytes += b->bytes;
	f->st.loss_buffers += b->loss_parts != 0;
	f->st.bad_buffers += b->bad_parts != 0;
	/* Cannot be full: the queue holds every buffer there is. */
	if (spsc_push(&f->retired, b) < 0)
		set_error(f, -EOVERFLOW, "feeder", "retired-buffer queue overflow (bug)");
}

/*
 * Arm `next` and retire whatever was armed.  timeout 0: the kernel flushes
 * its ring into the retired buffer synchronously, which is what we want at
 * every poll.  A blocking timeout would park this thread inside the ioctl
 * until a region fills or the time runs out; on gen B an expiry does not
 * even flush (SPM.md 3.4), signals restart the full wait, and libhsakmt
 * retries EINTR forever, so a stop request could go unanswered.  Polling
 * with 0 keeps every call short and the period ours to choose.
 */
static int rotate(struct feeder *f, struct feeder_buf *armed, struct feeder_buf *next,
		  struct spm_retired *r)
{
	char msg[SPM_ERRLEN] = "";
	if (next)
		dec_frame_poison(f->shape.headers, f->shape.nstreams, next->data, next->size);
	memset(r, 0, sizeof(*r));
	int rc = spm_stream_rotate(f->s, next ? next->data : NULL, f->size, 0, r, msg, sizeof(msg));
	if (rc < 0) {
		set_error(f, rc, next ? "SET_DEST_BUF" : "SET_DEST_BUF (stop)", msg);
		return rc;
	}
	if (next)
		f->st.rotations++;
	if (armed)
		hand_over(f, armed, r);
	return 0;
}

static uint32_t next_period(struct feeder *f, uint32_t period, uint32_t max_part, uint64_t dt_ns,
			    bool loss)
{
	if (loss)
		return period / 2 > MIN_PERIOD_US ? period / 2 : MIN_PERIOD_US;
	uint32_t cap = f->size / f->shape.nstreams;
	uint32_t oh = spm_stream_overhead(f->s, f->size);
	cap = cap > oh ? cap - oh : cap;
	if (max_part == 0 || dt_ns == 0)
		return period * 2 < MAX_PERIOD_US ? period * 2 : MAX_PERIOD_US;
	/* Retire at about a quarter full: room for a late poll or a slow consumer. */
	double us = (double)cap / 4.0 / ((double)max_part / ((double)dt_ns / 1e3));
	if (us < MIN_PERIOD_US)
		us = MIN_PERIOD_US;
	if (us > MAX_PERIOD_US)
		us = MAX_PERIOD_US;
	/* Smooth: rates are bursty. */
	return (uint32_t)((period + us) / 2);
}

static void maybe_stall(struct feeder *f, uint64_t start_ns)
{
	if (f->stall_at_ms < 0 || f->st.stalled)
		return;
	if ((now_ns(CLOCK_MONOTONIC) - start_ns) / 1000000u < (uint64_t)f->stall_at_ms)
		return;
	f->st.stalled = true;
	pr_info("feeder", "SPMTAP_FEEDER_STALL: sleeping %" PRId64 " ms", f->stall_ms);
	struct timespec ts = { f->stall_ms / 1000, (f->stall_ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * Drain: rotate with timeout 0 until a flush leaves the ring empty.  AMD's
 * rule ("until a call copies nothing") assumes sample generation has been
 * stopped first; while the RLC still produces (no PM4 stop was sent, or the
 * ring filled during a stall) every call copies something.  A retired region
 * that is not full proves the flush emptied that XCC's ring, so that is the
 * end condition; the cap allows for a full kernel ring (SPM_KERNEL_RING_BYTES
 * per XCC) plus AMD's 5 extra calls.
 */
static void drain_and_stop(struct feeder *f, struct feeder_buf *armed)
{
	struct spm_retired r;
	uint32_t cap = f->size / f->shape.nstreams;
	uint32_t oh = spm_stream_overhead(f->s, f->size);
	cap = cap > oh ? cap - oh : cap;
	uint32_t max_calls = SPM_KERNEL_RING_BYTES / (cap ? cap : 1) + 1 + DRAIN_EXTRA_CALLS;
	for (uint32_t i = 0; armed && !f->st.error && i <= max_calls; i++) {
		void *item;
		if (spsc_pop(&f->free, &item, DRAIN_WAIT_MS) < 0) {
			pr_warn("feeder", "drain: the consumer kept every buffer for %d ms; stopping without a full drain",
				DRAIN_WAIT_MS);
			f->st.drain_capped = true;
			break;
		}
		struct feeder_buf *next = item;
		if (rotate(f, armed, next, &r) < 0)
			break;
		f->st.drain_calls++;
		armed = next;
		if (f->last_bytes == 0 || f->last_max_part < cap)
			goto stop;
	}
	if (!f->st.error)
		f->st.drain_capped = true;
stop:
	/* The stop retires the last buffer with a flush; gen B wants >= 64 bytes per XCC. */
	if (armed)
		rotate(f, armed, NULL, &r);
}

static void *feeder_main(void *arg)
{
	struct feeder *f = arg;
	pthread_setname_np(pthread_self(), "spmtap-feeder"); /* top -H, perf --sort comm */
	uint64_t start = now_ns(CLOCK_MONOTONIC);
	struct feeder_buf *armed = NULL;
	struct spm_retired r;
	void *item;
	uint32_t period = START_PERIOD_US;
	uint64_t last_retire = start;

	armed = f->first;
	while (armed && !f->st.error && !atomic_load(&f->stop)) {
		nap(f, period);
		maybe_stall(f, start);
		if (atomic_load(&f->stop))
			break;
		f->st.polls++;
		if (spsc_pop(&f->free, &item, 0) < 0) {
			/*
			 * The journal thread keeps spares while the pool may grow,
			 * but on a busy host it can run late: then the feeder adds
			 * the buffer itself (an allocation, never a wait), within
			 * the same bound the spill budget sets (maxbuf).
			 */
			item = f->sp ? spill_take_cold(f, false) : NULL;
			if (!item && f->sp)
				item = pool_add(f, false);
			if (!item) {
				f->st.overrun_polls++;
				continue;
			}
			f->st.self_grown++;
		}
		struct feeder_buf *next = item;
		uint64_t t_call = now_ns(CLOCK_MONOTONIC);
		if (rotate(f, armed, next, &r) < 0)
			break;
		uint64_t t = now_ns(CLOCK_MONOTONIC);
		if (t - t_call > f->st.rotate_max_ns)
			f->st.rotate_max_ns = t - t_call;
		if (t - last_retire > f->st.gap_max_ns)
			f->st.gap_max_ns = t - last_retire;
		period = next_period(f, period, f->last_max_part, t - last_retire, f->last_loss);
		f->st.period_us = period;
		last_retire = t;
		armed = next;
	}
	if (armed && !f->st.error)
		drain_and_stop(f, armed);
	else if (armed)
		rotate(f, NULL, NULL, &r); /* best effort; the error is already recorded */
	/* RELEASE before the consumer sees the end: after it the kernel can no
	 * longer write into any of our buffers. */
	spm_stream_close(f->s);
	f->s = NULL;
	struct timespec cpu;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
		f->st.cpu_ns = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
	spsc_close(&f->retired);
	return NULL;
}

static int parse_stall(struct feeder *f, char *err, size_t errlen)
{
	f->stall_at_ms = f->stall_ms = -1;
	const char *e = getenv("SPMTAP_FEEDER_STALL");
	if (!e || !*e)
		return 0;
	char *end;
	errno = 0;
	long long at = strtoll(e, &end, 10);
	if (end == e || *end != ':' || at < 0 || errno)
		goto bad;
	const char *d = end + 1;
	long long dur = strtoll(d, &end, 10);
	if (end == d || *end || dur < 0 || dur > 3600000 || errno)
		goto bad;
	f->stall_at_ms = at;
	f->stall_ms = dur;
	return 0;
bad:
	return spmtap_seterr(err, errlen, EINVAL,
			     "SPMTAP_FEEDER_STALL=%s: expected AT_MS:DUR_MS, e.g. 500:300", e);
}

/*
 * One more buffer of the pool, or NULL at maxbuf or out of memory.  The
 * journal thread (spill.c) and the feeder both add buffers, so the slot is
 * taken by compare-and-swap; bufs[] is read only after both have stopped.
 * `touch`: fault its pages in now, so the kernel's copy never does; the
 * feeder's own emergency growth skips it (the copy faults them, a few ms
 * later, instead of the rotation waiting for a memset).
 */
static struct feeder_buf *pool_add(struct feeder *f, bool touch)
{
	uint32_t n = atomic_load(&f->nbuf);
	do {
		if (n >= f->maxbuf)
			return NULL;
	} while (!atomic_compare_exchange_weak(&f->nbuf, &n, n + 1));
	struct feeder_buf *b = calloc(1, sizeof(*b));
	/*
	 * Aligned to 2 MiB and offered to transparent huge pages where the
	 * kernel takes them (THP "madvise" mode, Debian's default): a buffer
	 * the spill queue adds at 1 GB/s then costs 4 faults instead of 2048,
	 * and the kernel's copy and the decoder walk 512 times fewer page-table
	 * entries.
	 */
	size_t align = f->size >= FEEDER_HUGE ? FEEDER_HUGE : 4096;
	if (!b || posix_memalign(&b->data, align, f->size)) {
		free(b);
		b = NULL;
	} else {
		if (align == FEEDER_HUGE)
			(void)madvise(b->data, f->size, MADV_HUGEPAGE); /* advice only */
		if (touch)
			feeder_touch(b->data, f->size);
		b->size = f->size;
		b->index = n;
	}
	/* The slot is the pool's either way: an empty one is skipped when freeing. */
	f->bufs[n] = b;
	return b;
}

void feeder_touch(void *p, size_t n)
{
	volatile unsigned char *c = p;
	for (size_t off = 0; off < n; off += 4096)
		c[off] = 0;
	if (n)
		c[n - 1] = 0;
}

int feeder_grow(struct feeder *f)
{
	if (atomic_load(&f->nbuf) >= f->maxbuf)
		return -ENOSPC;
	struct feeder_buf *b = pool_add(f, true);
	if (!b)
		return atomic_load(&f->nbuf) >= f->maxbuf ? -ENOSPC : -ENOMEM;
	spsc_push(&f->free, b); /* room for maxbuf */
	return 0;
}

static void free_pool(struct feeder *f)
{
	if (!f->bufs)
		return;
	for (uint32_t i = 0; i < atomic_load(&f->nbuf); i++) {
		if (!f->bufs[i])
			continue;
		free(f->bufs[i]->data);
		free(f->bufs[i]);
	}
	free(f->bufs);
	f->bufs = NULL;
}

int feeder_start(struct feeder **out, struct spm_stream *s, const struct spm_device *dev,
		 const struct feeder_opts *opts, char *err, size_t errlen)
{
	struct feeder_opts o = opts ? *opts : (struct feeder_opts){ 0 };
	if (!s || !dev || dev->num_xcc == 0 || dev->num_xcc > DEC_MAX_XCC)
		return spmtap_seterr(err, errlen, EINVAL, "feeder: bad stream or device");
	if (o.nbuffers == 0)
		o.nbuffers = FEEDER_DEFAULT_BUFFERS;
	if (o.nbuffers < 2 || o.nbuffers > FEEDER_MAX_BUFFERS)
		return spmtap_seterr(err, errlen, EINVAL,
				     "%u buffers: need 2 to %u (one armed, one with the consumer)",
				     o.nbuffers, FEEDER_MAX_BUFFERS);
	struct feeder *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	int rc = parse_stall(f, err, errlen);
	if (rc < 0) {
		free(f);
		return rc;
	}
	f->s = s;
	f->shape = *spm_stream_shape(s);
	f->size = feeder_round_size(o.buffer_size, dev->num_xcc, NULL, 0);
	f->base = o.nbuffers;
	f->maxbuf = o.nbuffers;
	if (o.spill) {
		/* The budget in whole buffers, plus the base that keeps rotating meanwhile. */
		uint64_t extra = o.spill->mem_budget / f->size + 4; /* + spill.c's SPARE_BUSY */
		f->maxbuf = extra > FEEDER_MAX_POOL - f->base ? FEEDER_MAX_POOL : f->base + (uint32_t)extra;
	}
	f->bufs = calloc(f->maxbuf, sizeof(*f->bufs));
	atomic_init(&f->nbuf, 0);
	if (!f->bufs || spsc_init(&f->retired, f->maxbuf) < 0 || spsc_init(&f->free, f->maxbuf) < 0) {
		rc = spmtap_seterr(err, errlen, ENOMEM, "feeder: out of memory");
		goto fail;
	}
	for (uint32_t i = 0; i < f->base; i++)
		if (feeder_grow(f) < 0) {
			rc = spmtap_seterr(err, errlen, ENOMEM,
					   "feeder: cannot allocate %u buffers of %u bytes", f->base, f->size);
			goto fail;
		}
	if (o.spill && (rc = spill_start(f, o.spill, err, errlen)) < 0)
		goto fail;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&f->ctl_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&f->ctl_lock, NULL);
	atomic_init(&f->stop, false);
	/*
	 * The first rotation here, on the caller's thread, not in the feeder's:
	 * when this returns, whatever the ring held (prime.h: pre-program bytes)
	 * has gone into the buffer armed before, and buffer 0 is armed.  A feeder
	 * thread slow to be scheduled would otherwise let the caller's start
	 * program run first, and the first samples of the layout would land in
	 * the throwaway buffer, counted nowhere.
	 */
	void *item;
	struct spm_retired r;
	spsc_pop(&f->free, &item, 0);
	rc = rotate(f, NULL, item, &r);
	if (rc < 0) {
		rc = spmtap_seterr(err, errlen, -rc, "feeder: %s", f->st.errmsg);
		pthread_mutex_destroy(&f->ctl_lock);
		pthread_cond_destroy(&f->ctl_cond);
		goto fail;
	}
	f->first = item;
	rc = pthread_create(&f->thread, NULL, feeder_main, f);
	if (rc) {
		/* Stopped before buffer 0 is freed: the kernel must not flush into it later. */
		spm_stream_rotate(s, NULL, f->size, 0, &r, NULL, 0);
		pthread_mutex_destroy(&f->ctl_lock);
		pthread_cond_destroy(&f->ctl_cond);
		rc = spmtap_seterr(err, errlen, rc, "feeder: pthread_create: %s", spmtap_strerror(rc));
		goto fail;
	}
	f->started = true;
	*out = f;
	return 0;
fail:
	if (f->sp)
		spill_finish(f, NULL);
	free_pool(f);
	spsc_destroy(&f->retired);
	spsc_destroy(&f->free);
	free(f);
	return rc;
}

uint32_t feeder_buffer_size(const struct feeder *f) { return f->size; }
uint32_t feeder_nbuffers(const struct feeder *f) { return f->base; }

int feeder_next(struct feeder *f, struct feeder_buf **b, int timeout_ms)
{
	if (f->sp)
		return spill_next(f, b, timeout_ms);
	void *item;
	int rc = spsc_pop(&f->retired, &item, timeout_ms);
	if (rc == 0)
		*b = item;
	return rc;
}

const struct spm_stream_shape *feeder_shape(const struct feeder *f) { return &f->shape; }

void feeder_put(struct feeder *f, struct feeder_buf *b)
{
	if (b && f->sp)
		spill_put(f, b);
	else if (b)
		spsc_push(&f->free, b); /* cannot fail: room for every buffer */
}

void feeder_backlog(struct feeder *f, struct feeder_backlog *b)
{
	memset(b, 0, sizeof(*b));
	if (f->sp)
		spill_backlog(f, b);
}

void feeder_abandon(struct feeder *f)
{
	if (f->sp)
		spill_abandon(f);
}

void feeder_request_stop(struct feeder *f)
{
	pthread_mutex_lock(&f->ctl_lock);
	atomic_store(&f->stop, true);
	pthread_cond_broadcast(&f->ctl_cond);
	pthread_mutex_unlock(&f->ctl_lock);
}

int feeder_finish(struct feeder *f, struct feeder_stats *st)
{
	if (!f)
		return 0;
	feeder_request_stop(f);
	/* The drain may wait for buffers the consumer no longer returns; closing
	 * the free queue is not needed because the wait is bounded. */
	pthread_join(f->thread, NULL);
	int rc = f->st.error;
	if (f->sp)
		spill_finish(f, &f->st);
	if (st)
		*st = f->st;
	free_pool(f);
	spsc_destroy(&f->retired);
	spsc_destroy(&f->free);
	pthread_mutex_destroy(&f->ctl_lock);
	pthread_cond_destroy(&f->ctl_cond);
	free(f);
	return rc;
}
