/* SPDX-License-Identifier: MIT */
/* A recording session over several GPUs (session.h, docs/architecture.md "Session"). */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/lib/decode_thread.h"
#include "collector/lib/prime.h"
#include "collector/lib/session.h"
#include "collector/lib/smi_sampler.h"
#include "collector/lib/smi_source.h"
#include "collector/lib/timebase.h"
#include "decoder/layout.h"
#include "log.h"
#include "spm/plan.h"
#include "spm/pm4.h"
#include "collector/lib/marker_reader.h"
#include "collector/lib/marker_shm.h"
#include "spm/submit.h"
#include "spmtap.h"

#define ERRLEN (SPM_ERRLEN + 256)

/* ---- the bounded queue between producers and the writer thread --------- */

struct item {
	struct item *next;
	struct series_chunk c;
	struct series_slice *slice; /* a phase instead of a chunk (c unused) */
	const void *vals[];      /* [ncols] values, then [ncols] missing; data follows */
};

struct queue {
	pthread_mutex_t lock;
	pthread_cond_t nonempty, nonfull;
	struct item *head, *tail;
	uint32_t count, cap;
	bool closed;
	uint64_t blocked;        /* pushes that waited for room */
};

static void q_init(struct queue *q, uint32_t cap)
{
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->nonempty, NULL);
	pthread_cond_init(&q->nonfull, NULL);
	q->cap = cap;
}

/* Blocks while full: this is the back-pressure on the decode threads and samplers. */
static void q_push(struct queue *q, struct item *it)
{
	pthread_mutex_lock(&q->lock);
	if (q->count >= q->cap)
		q->blocked++;
	while (q->count >= q->cap && !q->closed)
		pthread_cond_wait(&q->nonfull, &q->lock);
	it->next = NULL;
	if (q->tail)
		q->tail->next = it;
	else
		q->head = it;
	q->tail = it;
	q->count++;
	pthread_cond_signal(&q->nonempty);
	pthread_mutex_unlock(&q->lock);
}

static struct item *q_pop(struct queue *q)
{
	pthread_mutex_lock(&q->lock);
	while (!q->head && !q->closed)
		pthread_cond_wait(&q->nonempty, &q->lock);
	struct item *it = q->head;
	if (it) {
		q->head = it->next;
		if (!q->head)
			q->tail = NULL;
		q->count--;
		pthread_cond_signal(&q->nonfull);
	}
	pthread_mutex_unlock(&q->lock);
	return it;
}

static void q_close(struct queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->closed = true;
	pthread_cond_broadcast(&q->nonempty);
	pthread_cond_broadcast(&q->nonfull);
	pthread_mutex_unlock(&q->lock);
}

static uint32_t q_depth(struct queue *q)
{
	pthread_mutex_lock(&q->lock);
	uint32_t n = q->count;
	pthread_mutex_unlock(&q->lock);
	return n;
}

/* One allocation: the chunk, its column pointers and its arrays. */
static struct item *item_alloc(const struct series_stream *s, uint32_t n, bool ticks)
{
	uint32_t nc = s->ncols, words = (n + 63) / 64;
	size_t sz = sizeof(struct item) + 2 * nc * sizeof(void *) + (size_t)n * 8 * (ticks ? 2 : 1) +
		    (size_t)nc * n * 8 + (size_t)nc * words * 8;
	struct item *it = malloc(sz);
	if (!it)
		return NULL;
	const void **vals = it->vals;
	const uint64_t **miss = (const uint64_t **)(it->vals + nc);
	uint8_t *p = (uint8_t *)(it->vals + 2 * nc);
	it->c.stream = s;
	it->c.n = n;
	it->c.host_ns = (int64_t *)p;
	p += (size_t)n * 8;
	it->c.ticks = NULL;
	if (ticks) {
		it->c.ticks = (uint64_t *)p;
		p += (size_t)n * 8;
	}
	for (uint32_t k = 0; k < nc; k++, p += (size_t)n * 8)
		vals[k] = p;
	for (uint32_t k = 0; k < nc; k++, p += (size_t)words * 8) {
		miss[k] = (const uint64_t *)p;
		memset(p, 0, (size_t)words * 8);
	}
	it->c.values = vals;
	it->c.missing = miss;
	it->slice = NULL;
	return it;
}

/* One allocation: the slice and its strings. */
static struct item *item_slice(const struct series_slice *ph)
{
	const char *name = ph->name ? ph->name : "", *cat = ph->category ? ph->category : "phase";
	size_t nl = strlen(name) + 1, cl = strlen(cat) + 1;
	struct item *it = calloc(1, sizeof(*it) + sizeof(struct series_slice) + nl + cl);
	if (!it)
		return NULL;
	struct series_slice *sl = (struct series_slice *)(void *)(it->vals);
	char *p = (char *)(sl + 1);
	*sl = *ph;
	sl->name = memcpy(p, name, nl);
	sl->category = memcpy(p + nl, cat, cl);
	it->slice = sl;
	return it;
}

/* ---- per GPU ------------------------------------------------------------ */

struct sgpu {
	struct session *S;
	const struct spm_device *dev;
	char devname[96];
	struct spm_plan *plan;
	char *layout_text;
	struct dec_layout *layout;
	struct spm_pm4 start, stop;
	bool pm4_init;
	const struct spm_submitter_ops *sops;
	struct spm_submitter *sub;
	char sub_note[SPM_ERRLEN];      /* why a preferred submitter was passed over */
	struct spm_stream *st;
	struct prime prime;
	struct feeder *f;
	struct dthr *dt;
	enum spm_gen gen;
	uint32_t nstreams, size;
	struct series_stream streams[DEC_MAX_XCC];
	struct series_column *cols;
	/* the timebase: pairs added by the clock thread, mapped by the decode thread */
	struct timebase *tb;
	pthread_mutex_t tb_lock;
	bool stall_done;
	/* sensors */
	struct smi_probe probe;
	bool probed;
	struct smi_sampler *smi;
	char smi_note[200];
	/* after stop */
	struct feeder_stats fs;
	bool have_fs, started;
};

struct session {
	struct session_opts o;
	const struct spm_backend_ops *bops;
	struct spm_backend *b;
	struct sgpu g[SESSION_MAX_GPUS];
	size_t ng;
	struct writer *w[SESSION_MAX_WRITERS];
	const struct writer_ops *wops[SESSION_MAX_WRITERS];
	char *paths[SESSION_MAX_WRITERS + 1];
	size_t nw;
	struct queue q;
	pthread_t writer_thr, clock_thr;
	bool writer_running, clock_running, started, stopped;
	pthread_mutex_t lock;     /* err, clock stop */
	pthread_cond_t clock_cv;
	bool clock_stop;
	char err[ERRLEN];
	int error;
	atomic_bool failed;
	atomic_uint_least64_t samples, smi_samples, chunks, phases;
	/* the marker channel (o.markers) and its thread */
	struct mk_reader *mk;
	int mk_fd;
	pthread_t mk_thr;
	bool mk_running;
	atomic_bool mk_stop;
	int64_t t0_mono;
	int64_t decode_stall_at, decode_stall_dur, writer_stall_at, writer_stall_dur;
	double spm_hz;
	uint32_t next_stream_id;
};

static int64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* The first error wins; later ones are logged only. */
static void set_error(struct session *S, int rc, const char *msg)
{
	pthread_mutex_lock(&S->lock);
	if (!S->error) {
		S->error = rc < 0 ? rc : -EIO;
		snprintf(S->err, sizeof(S->err), "%s", msg);
	}
	pthread_mutex_unlock(&S->lock);
	atomic_store(&S->failed, true);
}

static void parse_stall(const char *name, int64_t *at, int64_t *dur)
{
	*at = *dur = -1;
	const char *v = getenv(name);
	long long a, d;
	if (v && sscanf(v, "%lld:%lld", &a, &d) == 2 && a >= 0 && d > 0) {
		*at = a;
		*dur = d;
	}
}

/* ---- producers ---------------------------------------------------------- */

static int spm_sink(void *user, const struct dec_chunk *c)
{
	struct sgpu *g = user;
	struct session *S = g->S;
	if (c->xcc >= g->nstreams || !c->nsamples)
		return 0;
	if (S->decode_stall_at >= 0 && !g->stall_done &&
	    now_ns(CLOCK_MONOTONIC) - S->t0_mono >= S->decode_stall_at * 1000000) {
		g->stall_done = true;
		sleep_ms(S->decode_stall_dur);
	}
	const struct series_stream *s = &g->streams[c->xcc];
	struct item *it = item_alloc(s, c->nsamples, true);
	if (!it)
		return -ENOMEM;
	int64_t *host = (int64_t *)it->c.host_ns;
	uint64_t *ticks = (uint64_t *)it->c.ticks;
	memcpy(ticks, c->timestamp, (size_t)c->nsamples * 8);
	pthread_mutex_lock(&g->tb_lock);
	for (uint32_t i = 0; i < c->nsamples; i++)
		if (tb_map_spm(g->tb, c->timestamp[i], &host[i]) < 0)
			host[i] = 0;
	pthread_mutex_unlock(&g->tb_lock);
	uint32_t words = (c->nsamples + 63) / 64;
	for (uint32_t k = 0; k < s->ncols && k < c->ncols; k++) {
		memcpy((void *)it->c.values[k], c->values[k], (size_t)c->nsamples * 8);
		if (c->saturated && c->saturated[k])
			memcpy((void *)it->c.missing[k], c->saturated[k], (size_t)words * 8);
	}
	atomic_fetch_add(&S->samples, c->nsamples);
	q_push(&S->q, it);
	return 0;
}

static void smi_sink(const struct series_chunk *c, void *arg)
{
	struct sgpu *g = arg;
	struct item *it = item_alloc(c->stream, c->n, c->ticks != NULL);
	if (!it) {
		set_error(g->S, -ENOMEM, "out of memory");
		return;
	}
	uint32_t words = (c->n + 63) / 64;
	memcpy((void *)it->c.host_ns, c->host_ns, (size_t)c->n * 8);
	if (c->ticks)
		memcpy((void *)it->c.ticks, c->ticks, (size_t)c->n * 8);
	for (uint32_t k = 0; k < c->stream->ncols; k++) {
		memcpy((void *)it->c.values[k], c->values[k], (size_t)c->n * 8);
		if (c->missing && c->missing[k])
			memcpy((void *)it->c.missing[k], c->missing[k], (size_t)words * 8);
	}
	atomic_fetch_add(&g->S->smi_samples, c->n);
	q_push(&g->S->q, it);
}

/* ---- the writer thread -------------------------------------------------- */

static void *writer_main(void *arg)
{
	struct session *S = arg;
	bool stalled = false;
	struct item *it;
	char e[ERRLEN];
	while ((it = q_pop(&S->q))) {
		if (S->writer_stall_at >= 0 && !stalled &&
		    now_ns(CLOCK_MONOTONIC) - S->t0_mono >= S->writer_stall_at * 1000000) {
			stalled = true;
			sleep_ms(S->writer_stall_dur);
		}
		if (it->slice) {
			for (size_t k = 0; k < S->nw && !atomic_load(&S->failed); k++) {
				e[0] = 0;
				int rc = S->wops[k]->slice ? S->wops[k]->slice(S->w[k], it->slice, e, sizeof(e)) : 0;
				if (rc < 0)
					set_error(S, rc, e[0] ? e : spmtap_strerror(rc));
			}
			atomic_fetch_add(&S->phases, 1);
			free(it);
			continue;
		}
		if (!atomic_load(&S->failed)) {
			for (size_t k = 0; k < S->nw; k++) {
				e[0] = 0;
				int rc = S->wops[k]->write(S->w[k], &it->c, e, sizeof(e));
				if (rc < 0) {
					set_error(S, rc, e[0] ? e : spmtap_strerror(rc));
					break;
				}
			}
			if (S->o.on_chunk && !atomic_load(&S->failed)) {
				int rc = S->o.on_chunk(&it->c, S->o.user);
				if (rc)
					set_error(S, rc < 0 ? rc : -ECANCELED, "the chunk callback failed");
			}
		}
		atomic_fetch_add(&S->chunks, 1);
		free(it);
	}
	return NULL;
}

/* ---- phases and the marker channel --------------------------------------- */

int session_add_phase(struct session *S, const struct series_slice *ph)
{
	if (!ph || ph->end_ns < ph->start_ns)
		return -EINVAL;
	struct item *it = item_slice(ph);
	if (!it)
		return -ENOMEM;
	q_push(&S->q, it);
	return 0;
}

static int marker_emit(const struct mk_region *r, void *user)
{
	struct series_slice sl = { .start_ns = r->start_ns, .end_ns = r->end_ns, .name = r->name,
				   .track = r->tid, .category = "marker", .depth = r->depth, .pid = r->pid };
	return session_add_phase(user, &sl);
}

/*
 * Every 5 ms, the rings (4096 events each) take 800 k events/s per thread;
 * a ring found a quarter full is read again at once instead.
 */
#define MARKER_POLL_MS 5

static void *marker_main(void *arg)
{
	struct session *S = arg;
	while (!atomic_load(&S->mk_stop)) {
		int most = mk_reader_poll(S->mk, marker_emit, S);
		if (most < (int)(MK_EVENTS / 4))
			sleep_ms(MARKER_POLL_MS);
	}
	return NULL;
}

int session_markers_fd(const struct session *S)
{
	return S->mk ? S->mk_fd : -1;
}

int session_marker_stats(const struct session *S, struct mk_stats *st)
{
	if (!S->mk)
		return -ENOENT;
	mk_reader_stats(S->mk, st);
	return 0;
}

/* ---- the clock thread --------------------------------------------------- */

static void add_pair(struct session *S, struct sgpu *g)
{
	struct spm_clock_pair p;
	if (!S->bops->clock_counters || S->bops->clock_counters(S->b, g->dev, &p) < 0)
		return;
	pthread_mutex_lock(&g->tb_lock);
	tb_add_pair(g->tb, p.gpu_ticks, (int64_t)p.cpu_raw_ns, (int64_t)p.boottime_ns);
	pthread_mutex_unlock(&g->tb_lock);
}

static void *clock_main(void *arg)
{
	struct session *S = arg;
	pthread_mutex_lock(&S->lock);
	while (!S->clock_stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += SESSION_CLOCK_PERIOD_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&S->clock_cv, &S->lock, &ts);
		if (S->clock_stop)
			break;
		pthread_mutex_unlock(&S->lock);
		for (size_t i = 0; i < S->ng; i++)
			add_pair(S, &S->g[i]);
		pthread_mutex_lock(&S->lock);
	}
	pthread_mutex_unlock(&S->lock);
	return NULL;
}

/* ---- open --------------------------------------------------------------- */

static int gpu_prepare(struct session *S, struct sgpu *g, char *err, size_t errlen)
{
	const struct session_opts *o = &S->o;
	char label[96];
	spm_device_label(g->dev, label, sizeof(label));
	snprintf(g->devname, sizeof(g->devname), "%s",
		 g->dev->marketing_name[0] ? g->dev->marketing_name : g->dev->name);
	pthread_mutex_init(&g->tb_lock, NULL);
	struct tb_opts to = { .spm_clock_hz = S->spm_hz };
	int rc = tb_create(&g->tb, &to);
	if (rc < 0)
		return spmtap_seterr(err, errlen, -rc, "out of memory");
	if (!o->ncounters)
		return 0;
	struct spm_geometry geo;
	enum spm_gfx gfx;
	char e[ERRLEN] = "";
	rc = spm_geometry_from_device(g->dev, &geo, &gfx, e, sizeof(e));
	if (rc < 0)
		return spmtap_seterr(err, errlen, -rc, "%s: %s", label, e);
	struct spm_plan_request req = { .gfx = g->dev->gfx, .geo = geo, .counters = o->counters,
					.ncounters = o->ncounters,
					.interval = o->interval ? o->interval : 32768u };
	rc = spm_plan_create(&req, &g->plan, e, sizeof(e));
	if (rc < 0)
		return spmtap_seterr(err, errlen, -rc, "%s: %s", label, e[0] ? e : spmtap_strerror(rc));
	g->layout_text = spm_plan_layout_dumps(g->plan);
	if (!g->layout_text)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	rc = dec_layout_parse(g->layout_text, strlen(g->layout_text), &g->layout, e, sizeof(e));
	if (rc < 0)
		return spmtap_seterr(err, errlen, -rc, "internal error: the planner's layout: %s", e);
	spm_pm4_init(&g->start);
	spm_pm4_init(&g->stop);
	g->pm4_init = true;
	rc = spm_pm4_build_start(g->plan, &g->start);
	if (!rc)
		rc = spm_pm4_build_stop(g->plan, &g->stop);
	if (rc)
		return spmtap_seterr(err, errlen, rc < 0 ? -rc : EINVAL, "cannot encode the PM4 programs: %s",
				     spmtap_strerror(rc));
	struct spm_stream_opts so = { .gen_override = o->gen };
	rc = spm_stream_open(&g->st, S->bops, S->b, g->dev, &so, e, sizeof(e));
	if (rc < 0)
		return spmtap_seterr(err, errlen, -rc, "%s: %s", label, e[0] ? e : spmtap_strerror(rc));
	g->gen = spm_stream_gen(g->st);
	const struct spm_stream_shape *shape = spm_stream_shape(g->st);
	g->nstreams = shape->nstreams;
	if (g->nstreams > DEC_MAX_XCC)
		return spmtap_seterr(err, errlen, ENOTSUP, "%s: %u XCC streams; at most %u", label,
				     g->nstreams, DEC_MAX_XCC);
	char note[256];
	g->size = feeder_round_size(o->buffer_size ? o->buffer_size : FEEDER_DEFAULT_SIZE,
				    g->dev->num_xcc, note, sizeof(note));
	struct dthr_opts dto = {
		.layout = g->layout, .shape = *shape, .per_se = o->per_se,
		.per_instance = o->per_instance, .requests = o->counters, .nreq = o->ncounters,
		.sink = spm_sink, .sink_user = g, .skip_first = true,
	};
	rc = dthr_open(&g->dt, &dto, e, sizeof(e));
	if (rc < 0)
		return spmtap_seterr(err, errlen, -rc, "%s: %s", label, e);
	uint32_t nc = dthr_ncols(g->dt);
	const struct dec_column *dc = dthr_columns(g->dt);
	g->cols = calloc(nc ? nc : 1, sizeof(*g->cols));
	if (!g->cols)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	for (uint32_t k = 0; k < nc; k++)
		g->cols[k] = (struct series_column){ .name = dc[k].name, .unit = "count",
						     .type = SERIES_U64 };
	for (uint32_t x = 0; x < g->nstreams; x++)
		g->streams[x] = (struct series_stream){
			.id = S->next_stream_id++, .source = "spm", .gpu = g->dev->index,
			.gpu_id = g->dev->gpu_id, .xcc = (int32_t)x, .device_name = g->devname,
			.tick_domain = "spm_ticks", .ncols = nc, .cols = g->cols,
		};
	return 0;
}

static int gpu_smi(struct session *S, struct sgpu *g)
{
	const struct session_opts *o = &S->o;
	struct smi_dev d = { .index = g->dev->index, .domain = g->dev->domain,
			     .location_id = g->dev->location_id };
	snprintf(d.name, sizeof(d.name), "%s", g->devname);
	smi_probe_device(&d, NULL, &g->probe);
	g->probed = true;
	if (g->probe.selected < 0 || !g->probe.ops) {
		snprintf(g->smi_note, sizeof(g->smi_note), "no sensor source for GPU %u",
			 g->dev->index);
		pr_warn("session", "%s: recording without sensors for it", g->smi_note);
		return 0;
	}
	uint32_t m = o->smi_metrics & g->probe.metrics;
	if (!m) {
		snprintf(g->smi_note, sizeof(g->smi_note),
			 "GPU %u: %s exposes none of the requested sensors", g->dev->index,
			 g->probe.ops->name);
		pr_warn("session", "%s", g->smi_note);
		return 0;
	}
	if (m != o->smi_metrics)
		snprintf(g->smi_note, sizeof(g->smi_note), "GPU %u: some requested sensors are not exposed by %s",
			 g->dev->index, g->probe.ops->name);
	struct smi_sampler_opts so = {
		.ops = g->probe.ops, .src = g->probe.inst, .metrics = m,
		.ts_domain = g->probe.src[g->probe.selected].ts_domain,
		.interval_ns = o->smi_interval_ns ? o->smi_interval_ns : 1000000,
		.offsets = o->smi_offsets, .stream_id = S->next_stream_id++, .gpu = g->dev->index,
		.gpu_id = g->dev->gpu_id, .device_name = g->devname, .on_chunk = smi_sink, .arg = g,
	};
	return smi_sampler_create(&g->smi, &so);
}

static json_t *meta_json(struct session *S)
{
	json_t *devs = json_array(), *ctrs = json_array(), *fmts = json_array(), *smi = json_array();
	for (size_t i = 0; i < S->ng; i++) {
		struct sgpu *g = &S->g[i];
		json_array_append_new(devs, json_pack("{s:i, s:i, s:s, s:s, s:i, s:s, s:i, s:s?}",
			"gpu", (int)g->dev->index, "gpu_id", (int)g->dev->gpu_id, "gfx", g->dev->gfx,
			"name", g->devname, "num_xcc", (int)g->dev->num_xcc,
			"spm_gen", spm_gen_name(g->gen), "interval",
			(int)(g->plan ? g->plan->interval : 0), "smi_source",
			g->smi && g->probe.ops ? g->probe.ops->name : NULL));
		{
			/* The geometry derived metrics need (docs/metrics.md: inst(), ncu). */
			json_t *d = json_array_get(devs, json_array_size(devs) - 1);
			json_object_set_new(d, "num_se", json_integer(g->dev->num_se));
			json_object_set_new(d, "cu_count", json_integer(g->dev->cu_count));
			if (g->plan)
				json_object_set_new(d, "cus_per_se", json_integer(g->plan->geo.cus_per_se));
		}
		if (g->sops) {
			json_t *d = json_array_get(devs, json_array_size(devs) - 1);
			json_object_set_new(d, "submitter", json_string(g->sops->name));
			if (g->sub_note[0])
				json_object_set_new(d, "submitter_note", json_string(g->sub_note));
		}
		if (g->smi_note[0])
			json_array_append_new(smi, json_string(g->smi_note));
	}
	/* Every stream with its columns' units and its tick domain, so readers of the CSV need no tables. */
	json_t *streams = json_array();
	for (size_t i = 0; i < S->ng; i++) {
		struct sgpu *g = &S->g[i];
		for (uint32_t x = 0; x <= g->nstreams; x++) {
			const struct series_stream *st =
				x < g->nstreams ? &g->streams[x] : g->smi ? smi_sampler_stream(g->smi) : NULL;
			if (!st)
				continue;
			json_t *cols = json_array();
			for (uint32_t c = 0; c < st->ncols; c++)
				json_array_append_new(cols, json_pack("{s:s, s:s}", "name", st->cols[c].name, "unit",
								      st->cols[c].unit ? st->cols[c].unit : ""));
			json_array_append_new(streams, json_pack("{s:s, s:i, s:i, s:s?, s:o}", "source", st->source,
								 "gpu", (int)st->gpu, "xcc", (int)st->xcc,
								 "tick_domain", st->tick_domain, "columns", cols));
		}
	}
	for (size_t i = 0; i < S->o.ncounters; i++)
		json_array_append_new(ctrs, json_string(S->o.counters[i]));
	for (size_t i = 0; i < S->nw; i++)
		json_array_append_new(fmts, json_string(S->wops[i]->name));
	return json_pack("{s:o, s:o, s:o, s:o, s:f, s:s, s:I, s:o, s:b}", "devices", devs, "streams", streams,
			 "counters",
			 ctrs, "formats", fmts, "spm_clock_hz", S->spm_hz, "spm_clock_assumption",
			 "SPM timestamps count the GPU reference clock at spm_clock_hz "
			 "(--spm-clock-hz; docs/timebase.md)",
			 "smi_interval_ns",
			 (json_int_t)(S->o.smi_interval_ns ? S->o.smi_interval_ns : 1000000),
			 "notes", smi, "emulated", getenv("SPMTAP_EMU_ACTIVE") != NULL);
}

static int open_writers(struct session *S, char *err, size_t errlen)
{
	const struct session_opts *o = &S->o;
	const char *dir = o->dir && *o->dir ? o->dir : ".";
	const char *name = o->name && *o->name ? o->name : "spmtap";
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	json_t *mj = meta_json(S);
	char *extra = mj ? json_dumps(mj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(mj);
	struct writer_meta meta = {
		.spmtap_version = spmtap_version_string(), .command_line = o->command_line,
		.hostname = host, .start_boottime_ns = now_ns(CLOCK_BOOTTIME),
		.spm_clock_hz = S->spm_hz, .extra_json = extra,
	};
	int rc = 0;
	for (size_t k = 0; k < o->nformats && !rc; k++) {
		const struct writer_ops *w = o->formats[k];
		char reason[256] = "";
		if (w->probe && w->probe(reason, sizeof(reason)) < 0) {
			rc = spmtap_seterr(err, errlen, ENOTSUP, "-f %s is not usable here: %s", w->name,
					   reason);
			break;
		}
		size_t n = strlen(dir) + strlen(name) + strlen(w->ext) + 2;
		char *p = malloc(n);
		if (!p) {
			rc = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
			break;
		}
		snprintf(p, n, "%s/%s%s", dir, name, w->ext);
		S->paths[S->nw] = p;
		rc = w->open(&S->w[S->nw], p, &meta, err, errlen);
		if (rc < 0) {
			free(p);
			S->paths[S->nw] = NULL;
			break;
		}
		S->wops[S->nw++] = w;
	}
	free(extra);
	/* Declare every stream before the first chunk (the CSV header needs them all). */
	for (size_t i = 0; i < S->ng && !rc; i++) {
		struct sgpu *g = &S->g[i];
		for (uint32_t x = 0; x <= g->nstreams && !rc; x++) {
			const struct series_stream *s =
				x < g->nstreams ? &g->streams[x] : g->smi ? smi_sampler_stream(g->smi) : NULL;
			if (!s)
				continue;
			for (size_t k = 0; k < S->nw && !rc; k++)
				rc = S->wops[k]->begin(S->w[k], s, err, errlen);
			if (!rc && o->on_stream)
				o->on_stream(s, o->user);
		}
	}
	return rc;
}

int session_open(struct session **out, const struct session_opts *o, char *err, size_t errlen)
{
	*out = NULL;
	if (!o || !o->ngpus || o->ngpus > SESSION_MAX_GPUS || o->nformats > SESSION_MAX_WRITERS ||
	    (!o->ncounters && !o->smi_metrics))
		return spmtap_seterr(err, errlen, EINVAL,
				     "a session needs 1..%u GPUs, at most %u formats, and counters or sensors",
				     SESSION_MAX_GPUS, SESSION_MAX_WRITERS);
	struct session *S = calloc(1, sizeof(*S));
	if (!S)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	S->o = *o;
	S->spm_hz = o->spm_clock_hz > 0 ? o->spm_clock_hz : TB_DEFAULT_GPU_HZ;
	pthread_mutex_init(&S->lock, NULL);
	pthread_cond_init(&S->clock_cv, NULL);
	q_init(&S->q, o->queue_chunks ? o->queue_chunks : SESSION_QUEUE_DEFAULT);
	S->mk_fd = -1;
	*out = S;
	if (o->markers) {
		int rc = mk_reader_create(&S->mk, &S->mk_fd, err, errlen);
		if (rc < 0)
			return rc;
	}
	char reason[SPM_ERRLEN] = "";
	S->bops = o->backend;
	if (!S->bops) {
		for (const struct spm_backend_ops *const *b = spm_backends(); *b; b++) {
			reason[0] = 0;
			if ((*b)->probe(reason, sizeof(reason)) == 0) {
				S->bops = *b;
				break;
			}
		}
		if (!S->bops)
			return spmtap_seterr(err, errlen, ENODEV, "no SPM backend is usable: %s", reason);
	}
	for (size_t i = 0; i < o->ngpus; i++) {
		if (o->gpus[i] >= o->ndev)
			return spmtap_seterr(err, errlen, ENODEV, "no GPU %u", o->gpus[i]);
		for (size_t j = 0; j < i; j++)
			if (o->gpus[j] == o->gpus[i])
				return spmtap_seterr(err, errlen, EINVAL, "GPU %u given twice", o->gpus[i]);
		struct sgpu *g = &S->g[S->ng++];
		g->S = S;
		g->dev = &o->devs[o->gpus[i]];
		/* Queues first: libhsakmt must take the KFD VM before a backend with its own render fd. */
		if (o->ncounters) {
			int r = spm_submitter_open(g->dev, o->submitter, &g->sops, &g->sub, g->sub_note, err, errlen);
			if (r < 0)
				return r;
		}
	}
	int rc = S->bops->open(&S->b, o->devs, o->ndev, err, errlen);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < S->ng; i++) {
		struct sgpu *g = &S->g[i];
		rc = gpu_prepare(S, g, err, errlen);
		if (!rc && o->smi_metrics) {
			rc = gpu_smi(S, g);
			if (rc < 0)
				spmtap_seterr(err, errlen, -rc, "GPU %u: cannot start the sensor sampler",
					      g->dev->index);
		}
		if (rc < 0)
			return rc;
	}
	return open_writers(S, err, errlen);
}

/* ---- start / stop ------------------------------------------------------- */

int session_start(struct session *S, char *err, size_t errlen)
{
	if (S->started)
		return spmtap_seterr(err, errlen, EALREADY, "the session was started already");
	S->started = true;
	parse_stall("SPMTAP_DECODE_STALL", &S->decode_stall_at, &S->decode_stall_dur);
	parse_stall("SPMTAP_WRITER_STALL", &S->writer_stall_at, &S->writer_stall_dur);
	/* Threads of the library never take the application's signals. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int rc = 0;
	S->t0_mono = now_ns(CLOCK_MONOTONIC);
	if (pthread_create(&S->writer_thr, NULL, writer_main, S)) {
		rc = spmtap_seterr(err, errlen, EAGAIN, "cannot start the writer thread");
		goto out;
	}
	S->writer_running = true;
	/* Timebase pairs before the run: the fit exists before the first chunk. */
	for (int k = 0; k < 4; k++) {
		for (size_t i = 0; i < S->ng; i++)
			add_pair(S, &S->g[i]);
		sleep_ms(2);
	}
	if (pthread_create(&S->clock_thr, NULL, clock_main, S)) {
		rc = spmtap_seterr(err, errlen, EAGAIN, "cannot start the clock thread");
		goto out;
	}
	S->clock_running = true;
	if (S->mk) {
		if (pthread_create(&S->mk_thr, NULL, marker_main, S)) {
			rc = spmtap_seterr(err, errlen, EAGAIN, "cannot start the marker thread");
			goto out;
		}
		S->mk_running = true;
	}
	for (size_t i = 0; i < S->ng && !rc; i++) {
		struct sgpu *g = &S->g[i];
		if (!g->st)
			continue;
		struct feeder_opts fo = { .nbuffers = S->o.nbuffers, .buffer_size = g->size };
		char e[ERRLEN] = "";
		rc = prime_start(&g->prime, g->st, g->dev, g->sops, g->sub, g->start.dw, g->start.n,
				 &fo, e, sizeof(e));
		if (g->prime.f) {
			g->f = g->prime.f;
			g->st = NULL;
			int r2 = dthr_start(g->dt, g->f, e, sizeof(e));
			if (r2 < 0 && !rc)
				rc = r2;
		}
		if (rc < 0)
			spmtap_seterr(err, errlen, -rc, "GPU %u: %s", g->dev->index, e);
		else
			g->started = true;
	}
	for (size_t i = 0; i < S->ng && !rc; i++)
		if (S->g[i].smi) {
			rc = smi_sampler_start(S->g[i].smi);
			if (rc < 0)
				spmtap_seterr(err, errlen, -rc, "GPU %u: cannot start the sensor sampler",
					      S->g[i].dev->index);
		}
out:
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

void session_progress(struct session *S, struct session_progress *p)
{
	memset(p, 0, sizeof(*p));
	p->seconds = S->t0_mono ? (double)(now_ns(CLOCK_MONOTONIC) - S->t0_mono) / 1e9 : 0;
	p->samples = atomic_load(&S->samples);
	p->smi_samples = atomic_load(&S->smi_samples);
	p->chunks_written = atomic_load(&S->chunks);
	for (size_t i = 0; i < S->ng; i++)
		if (S->g[i].dt)
			p->lost_samples += dthr_lost_live(S->g[i].dt);
	uint64_t sb = 0;
	for (size_t i = 0; i < S->ng; i++)
		if (S->g[i].dt) {
			sb = dthr_sample_bytes(S->g[i].dt);
			break;
		}
	p->bytes = p->samples * sb;
	p->queue_depth = q_depth(&S->q);
}

bool session_failed(struct session *S) { return atomic_load(&S->failed); }

static json_t *timebase_json(struct session *S)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < S->ng; i++) {
		struct sgpu *g = &S->g[i];
		struct session_gpu_stats st;
		session_gpu_stats(S, i, &st);
		double hz = 0, ppm = 0;
		tb_rate(g->tb, &hz, &ppm);
		json_array_append_new(arr, json_pack("{s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f}",
			"gpu", (int)g->dev->index, "pairs", (int)tb_npairs(g->tb), "segments",
			(int)tb_nsegments(g->tb), "gpu_clock_hz", hz, "ppm", ppm, "residual_rms_ns",
			st.tb_rms_ns, "residual_max_ns", st.tb_max_ns, "spm_clock_hz", S->spm_hz));
	}
	return arr;
}

static json_t *accounting_json(struct session *S)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < S->ng; i++) {
		struct session_gpu_stats st;
		if (session_gpu_stats(S, i, &st) < 0)
			continue;
		json_t *xs = json_array();
		for (uint32_t x = 0; x < st.nxcc; x++) {
			const struct session_xcc *a = &st.xcc[x];
			json_array_append_new(xs, json_pack("{s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
				"xcc", (int)x, "bytes", (json_int_t)a->bytes, "samples",
				(json_int_t)a->samples, "sample_bytes", (json_int_t)a->sample_bytes,
				"lost_gap_samples", (json_int_t)a->gap_samples, "kernel_loss_flags",
				(json_int_t)a->loss_flags, "resync_dropped_bytes",
				(json_int_t)a->resync_bytes, "prestart_bytes", (json_int_t)a->prestart_bytes,
				"trailing_bytes", (json_int_t)a->trailing_bytes));
		}
		json_array_append_new(arr, json_pack("{s:i, s:I, s:I, s:I, s:I, s:o}", "gpu",
			(int)st.gpu, "first_buffer_bytes", (json_int_t)st.first_buffer_bytes,
			"overrun_polls", (json_int_t)st.overrun_polls, "smi_samples",
			(json_int_t)st.smi_samples, "smi_missed_deadlines", (json_int_t)st.smi_missed,
			"xcc", xs));
	}
	return arr;
}

int session_stop(struct session *S, char *err, size_t errlen)
{
	if (S->stopped)
		return S->error;
	S->stopped = true;
	char e[ERRLEN];
	/* Stop generation first, so each drain ends on a call that copies nothing. */
	for (size_t i = 0; i < S->ng; i++) {
		struct sgpu *g = &S->g[i];
		if (g->started) {
			e[0] = 0;
			int rc = g->sops->submit(g->sub, g->stop.dw, g->stop.n, SPM_SUBMIT_TIMEOUT_MS, e, sizeof(e));
			if (rc < 0) {
				char m[ERRLEN + 64];
				snprintf(m, sizeof(m), "GPU %u: the counter stop program failed: %s",
					 g->dev->index, e[0] ? e : spmtap_strerror(rc));
				set_error(S, rc, m);
			}
		}
		if (g->f)
			feeder_request_stop(g->f);
		/*
		 * Sensors end with the counters, not after the drain: a drain that
		 * takes seconds (a slow disk, a sanitized build) would otherwise
		 * leave a tail of power readings the counters have no part in.
		 */
		if (g->smi)
			smi_sampler_stop(g->smi);
	}
	for (size_t i = 0; i < S->ng; i++) {
		struct sgpu *g = &S->g[i];
		if (g->dt && g->f) {
			int rc = dthr_finish(g->dt);
			if (rc < 0)
				set_error(S, rc, dthr_error(g->dt)[0] ? dthr_error(g->dt) : spmtap_strerror(rc));
		}
		if (g->f) {
			int rc = feeder_finish(g->f, &g->fs);
			g->have_fs = true;
			g->f = NULL;
			if (rc < 0)
				set_error(S, rc, g->fs.errmsg);
		}
		prime_free(&g->prime);
	}
	if (S->clock_running) {
		pthread_mutex_lock(&S->lock);
		S->clock_stop = true;
		pthread_cond_broadcast(&S->clock_cv);
		pthread_mutex_unlock(&S->lock);
		pthread_join(S->clock_thr, NULL);
		S->clock_running = false;
	}
	/* Regions still open at the end are closed now, and counted. */
	if (S->mk_running) {
		atomic_store(&S->mk_stop, true);
		pthread_join(S->mk_thr, NULL);
		S->mk_running = false;
		mk_reader_finish(S->mk, now_ns(CLOCK_BOOTTIME), marker_emit, S);
	}
	/* Pairs after the run close the last segment. */
	for (int k = 0; k < 2 && S->started; k++) {
		for (size_t i = 0; i < S->ng; i++)
			add_pair(S, &S->g[i]);
		sleep_ms(1);
	}
	q_close(&S->q);
	if (S->writer_running) {
		pthread_join(S->writer_thr, NULL);
		S->writer_running = false;
	}
	json_t *tb = timebase_json(S), *acc = accounting_json(S);
	char *tbs = json_dumps(tb, JSON_COMPACT), *accs = json_dumps(acc, JSON_COMPACT);
	json_decref(tb);
	json_decref(acc);
	char *mks = NULL;
	if (S->mk) {
		struct mk_stats ms;
		mk_reader_stats(S->mk, &ms);
		json_t *m = json_pack("{s:i, s:I, s:I, s:I, s:I, s:I, s:I}", "threads", (int)ms.threads,
				      "threads_refused", (json_int_t)ms.threads_refused, "events", (json_int_t)ms.events,
				      "regions", (json_int_t)ms.regions, "dropped_events", (json_int_t)ms.dropped,
				      "unmatched", (json_int_t)ms.unmatched, "unterminated",
				      (json_int_t)ms.unterminated);
		mks = json_dumps(m, JSON_COMPACT);
		json_decref(m);
	}
	for (size_t k = 0; k < S->nw; k++) {
		e[0] = 0;
		int rc = 0;
		if (!S->error && S->wops[k]->note) {
			rc = S->wops[k]->note(S->w[k], "timebase", tbs ? tbs : "[]", e, sizeof(e));
			if (!rc)
				rc = S->wops[k]->note(S->w[k], "accounting", accs ? accs : "[]", e, sizeof(e));
			if (!rc && mks)
				rc = S->wops[k]->note(S->w[k], "markers", mks, e, sizeof(e));
			if (rc < 0)
				set_error(S, rc, e);
		}
		e[0] = 0;
		rc = S->wops[k]->end(S->w[k], e, sizeof(e));
		S->w[k] = NULL;
		if (rc < 0)
			set_error(S, rc, e[0] ? e : spmtap_strerror(rc));
	}
	free(tbs);
	free(accs);
	free(mks);
	if (S->error)
		spmtap_seterr(err, errlen, -S->error, "%s", S->err);
	return S->error;
}

size_t session_ngpus(const struct session *S) { return S->ng; }

int session_gpu_stats(const struct session *S, size_t i, struct session_gpu_stats *st)
{
	if (i >= S->ng)
		return -EINVAL;
	const struct sgpu *g = &S->g[i];
	memset(st, 0, sizeof(*st));
	st->gpu = g->dev->index;
	st->nxcc = g->nstreams;
	uint64_t fed = 0;
	uint32_t sb = g->dt ? dthr_sample_bytes(g->dt) : 0;
	for (uint32_t x = 0; x < g->nstreams && x < 16; x++) {
		struct dthr_xcc s;
		if (dthr_stats(g->dt, x, &s) < 0)
			continue;
		struct session_xcc *a = &st->xcc[x];
		a->bytes = s.dec.bytes_fed;
		a->samples = s.dec.samples;
		a->sample_bytes = s.dec.samples * sb;
		a->gap_samples = s.dec.lost_samples_est;
		a->loss_flags = s.loss_parts + s.bad_parts;
		a->prestart_bytes = s.skipped_start;
		a->resync_bytes = s.dec.dropped_bytes - s.skipped_start;
		a->trailing_bytes = s.dec.partial_bytes;
		fed += s.dec.bytes_fed;
	}
	if (g->have_fs) {
		st->first_buffer_bytes = g->fs.bytes > fed ? g->fs.bytes - fed : 0;
		st->overrun_polls = g->fs.overrun_polls;
	}
	if (g->smi) {
		struct smi_sampler_stats ss;
		smi_sampler_get_stats(g->smi, &ss);
		st->smi_samples = ss.samples;
		st->smi_missed = ss.missed_deadlines;
	}
	size_t np = tb_npairs(g->tb);
	st->tb_pairs = (uint32_t)np;
	double sum = 0, mx = 0;
	for (size_t k = 0; k < np; k++) {
		double r = tb_residual(g->tb, k);
		sum += r * r;
		if (fabs(r) > mx)
			mx = fabs(r);
	}
	st->tb_rms_ns = np ? sqrt(sum / (double)np) : 0;
	st->tb_max_ns = mx;
	double hz;
	tb_rate(g->tb, &hz, &st->tb_ppm);
	return 0;
}

const struct timebase *session_timebase(const struct session *S, size_t i)
{
	return i < S->ng ? S->g[i].tb : NULL;
}

const char *const *session_outputs(const struct session *S) { return (const char *const *)S->paths; }

void session_close(struct session *S)
{
	if (!S)
		return;
	if (S->started && !S->stopped)
		session_stop(S, NULL, 0);
	for (size_t k = 0; k < S->nw; k++)
		if (S->w[k])
			S->wops[k]->end(S->w[k], NULL, 0);
	q_close(&S->q);
	if (S->writer_running)
		pthread_join(S->writer_thr, NULL);
	for (struct item *it = S->q.head, *n; it; it = n) {
		n = it->next;
		free(it);
	}
	for (size_t i = 0; i < S->ng; i++) {
		struct sgpu *g = &S->g[i];
		if (g->f) {
			feeder_request_stop(g->f);
			feeder_finish(g->f, &g->fs);
		}
		prime_free(&g->prime);
		dthr_close(g->dt);
		spm_stream_close(g->st);
		if (g->sub)
			g->sops->destroy(g->sub);
		smi_sampler_free(g->smi);
		if (g->probed)
			smi_probe_release(&g->probe);
		if (g->pm4_init) {
			spm_pm4_fini(&g->start);
			spm_pm4_fini(&g->stop);
		}
		dec_layout_free(g->layout);
		free(g->layout_text);
		spm_plan_free(g->plan);
		free(g->cols);
		tb_free(g->tb);
		pthread_mutex_destroy(&g->tb_lock);
	}
	if (S->b)
		S->bops->close(S->b);
	mk_reader_free(S->mk);
	for (size_t k = 0; k < S->nw; k++)
		free(S->paths[k]);
	free(S);
}
