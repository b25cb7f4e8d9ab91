// SPDX-License-Identifier: MIT
/* The sensor sampler thread (smi_sampler.h). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "collector/lib/cost.h"
#include "collector/lib/smi_sampler.h"
#include "collector/lib/timebase.h"
#include "log.h"

#define MAX_COLS (SMI_M_COUNT + 1)
/*
 * Firmware-time -> BOOTTIME pairs are taken at most this often, so that a
 * fit window spans seconds: over 32 pairs 1 ms apart, read jitter of
 * ~100 us would make the slope wrong by thousands of ppm.
 */
#define FWMAP_PAIR_NS 20000000ll

struct smi_sampler {
	struct smi_sampler_opts o;
	struct series_stream stream;
	struct series_column cols[MAX_COLS];
	enum smi_metric col_metric[MAX_COLS]; /* SMI_M_COUNT = power_dedt */
	uint32_t ncols, cap, nwords;
	int dedt_col;                          /* -1: none */
	/* the one chunk buffer */
	int64_t *host_ns;
	uint64_t *ticks;
	double *vals[MAX_COLS];
	uint64_t *miss[MAX_COLS];
	const void *vptr[MAX_COLS];
	const uint64_t *mptr[MAX_COLS];
	uint32_t n;
	int64_t last_flush_ns;

	struct dedt dedt;
	struct timebase *fwmap;
	int64_t fwmap_last_host;
	uint64_t fwmap_last_fw;
	uint64_t last_sensor_ts;

	struct smi_sampler_stats st;
	double late_sum;
	pthread_t thr;
	bool running;
	atomic_bool stop;
};

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int smi_sampler_create(struct smi_sampler **out, const struct smi_sampler_opts *o)
{
	if (!o || !o->ops || !o->src || !o->on_chunk || o->interval_ns < 1000000 || !o->metrics)
		return -EINVAL;
	struct smi_sampler *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *o;
	s->dedt_col = -1;
	for (int m = 0; m < SMI_M_COUNT; m++) {
		if (!(o->metrics & SMI_M_BIT(m)))
			continue;
		s->cols[s->ncols] = (struct series_column){ smi_metric_name((enum smi_metric)m),
							    smi_metric_unit((enum smi_metric)m), SERIES_F64 };
		s->col_metric[s->ncols++] = (enum smi_metric)m;
	}
	if ((o->metrics & SMI_M_BIT(SMI_M_ENERGY)) && o->ts_domain != SMI_TS_NONE) {
		s->dedt_col = (int)s->ncols;
		s->cols[s->ncols] = (struct series_column){ "power_dedt", "W", SERIES_F64 };
		s->col_metric[s->ncols++] = SMI_M_COUNT;
	}
	s->cap = o->chunk_samples ? o->chunk_samples : 256;
	s->nwords = (s->cap + 63) / 64;
	s->host_ns = calloc(s->cap, sizeof(*s->host_ns));
	s->ticks = calloc(s->cap, sizeof(*s->ticks));
	bool ok = s->host_ns && s->ticks;
	for (uint32_t c = 0; c < s->ncols && ok; c++) {
		s->vals[c] = calloc(s->cap, sizeof(double));
		s->miss[c] = calloc(s->nwords, sizeof(uint64_t));
		ok = s->vals[c] && s->miss[c];
		s->vptr[c] = s->vals[c];
		s->mptr[c] = s->miss[c];
	}
	struct tb_opts tbo = { .window = 64, .gpu_clock_hz = 1e8 }; /* firmware_timestamp: 10 ns ticks */
	if (!ok || tb_create(&s->fwmap, &tbo)) {
		smi_sampler_free(s);
		return -ENOMEM;
	}
	s->stream = (struct series_stream){
		.id = o->stream_id, .source = "smi", .gpu = o->gpu, .gpu_id = o->gpu_id, .xcc = -1,
		.device_name = o->device_name,
		.tick_domain = o->ts_domain == SMI_TS_NONE ? NULL : smi_ts_domain_name(o->ts_domain),
		.ncols = s->ncols, .cols = s->cols,
	};
	dedt_init(&s->dedt, o->dedt);
	s->last_sensor_ts = SMI_TS_ABSENT;
	*out = s;
	return 0;
}

const struct series_stream *smi_sampler_stream(const struct smi_sampler *s)
{
	return &s->stream;
}

static void flush(struct smi_sampler *s)
{
	if (!s->n)
		return;
	struct series_chunk c = {
		.stream = &s->stream, .n = s->n, .host_ns = s->host_ns,
		.ticks = s->o.ts_domain == SMI_TS_NONE ? NULL : s->ticks,
		.values = s->vptr, .missing = s->mptr,
	};
	s->o.on_chunk(&c, s->o.arg);
	s->st.samples += s->n;
	s->n = 0;
	for (uint32_t col = 0; col < s->ncols; col++)
		memset(s->miss[col], 0, s->nwords * sizeof(uint64_t));
}

/*
 * Host time of a batch: the driver's BOOTTIME stamp when the table has one
 * (it is taken when the table is built, inside the read); else the firmware
 * time through the fitted map; else the read midpoint.
 */
static int64_t batch_host_ns(struct smi_sampler *s, const struct smi_batch *b)
{
	int64_t mid = b->host_before_ns + (b->host_after_ns - b->host_before_ns) / 2;
	if (b->sys_clock_ns != SMI_TS_ABSENT && b->sys_clock_ns)
		return (int64_t)b->sys_clock_ns;
	if (b->fw_ts_10ns == SMI_TS_ABSENT)
		return mid;
	if (mid - s->fwmap_last_host >= FWMAP_PAIR_NS && b->fw_ts_10ns > s->fwmap_last_fw) {
		if (!tb_add_pair(s->fwmap, b->fw_ts_10ns, 0, mid)) {
			s->fwmap_last_host = mid;
			s->fwmap_last_fw = b->fw_ts_10ns;
		}
	}
	spmtap_host_ns h;
	return tb_map_gpu(s->fwmap, b->fw_ts_10ns, &h) ? mid : h;
}

static void append(struct smi_sampler *s, const struct smi_batch *b)
{
	uint32_t i = s->n;
	s->host_ns[i] = batch_host_ns(s, b);
	s->ticks[i] = b->sensor_ts;
	if (b->sensor_ts != s->last_sensor_ts && b->sensor_ts != SMI_TS_ABSENT) {
		s->st.distinct_sensor_ts++;
		s->last_sensor_ts = b->sensor_ts;
	}
	for (uint32_t c = 0; c < s->ncols; c++) {
		enum smi_metric m = s->col_metric[c];
		if (m == SMI_M_COUNT)
			continue;
		if (b->present & SMI_M_BIT(m)) {
			s->vals[c][i] = b->v[m] + (s->o.offsets ? s->o.offsets->add[m] : 0.0);
		} else {
			s->vals[c][i] = 0;
			s->miss[c][i >> 6] |= 1ull << (i & 63);
		}
	}
	if (s->dedt_col >= 0) {
		uint32_t c = (uint32_t)s->dedt_col;
		bool ok = false;
		if ((b->present & SMI_M_BIT(SMI_M_ENERGY)) && b->sensor_ts != SMI_TS_ABSENT) {
			/* sensor time in ns: firmware ticks are 10 ns */
			uint64_t t = b->ts_domain == SMI_TS_FW_10NS ? b->sensor_ts * 10 : b->sensor_ts;
			struct dedt_out d;
			if (dedt_push(&s->dedt, b->energy_ticks, t, &d) && d.valid) {
				s->vals[c][i] = d.watts + (s->o.offsets ? s->o.offsets->add_dedt : 0.0);
				ok = true;
			}
		}
		if (!ok) {
			s->vals[c][i] = 0;
			s->miss[c][i >> 6] |= 1ull << (i & 63);
		}
	}
	s->n++;
}

/* One read at a deadline; returns false when max_samples is reached. */
static bool sample(struct smi_sampler *s)
{
	struct smi_batch b;
	int rc = s->o.ops->read_all(s->o.src, &b);
	if (rc) {
		s->st.read_errors++;
		return true;
	}
	append(s, &b);
	int64_t now = b.host_after_ns;
	if (s->n == s->cap || now - s->last_flush_ns >= (int64_t)(s->o.flush_ns ? s->o.flush_ns : 100000000)) {
		flush(s);
		s->last_flush_ns = now;
	}
	return !s->o.max_samples || s->st.samples + s->n < s->o.max_samples;
}

#define STOP_SLICE_NS 20000000 /* 20 ms */

/*
 * A sampler thread wakes at its deadline and reads at once; what delays it
 * shows as jitter in the sample times, and a delay past the next deadline
 * as a missed one (docs/power.md, "Sampling interval and jitter").
 *  - Timer slack: Linux lets a sleeping thread's wake-up be late by its
 *    slack, 50 us by default, to batch timers; 1 ns asks for the deadline.
 *  - Priority: with SPM streaming, the decode, feeder and writer threads
 *    keep the cores busy, and a woken sampler waits its turn behind them
 *    (ms on a loaded node).  SCHED_FIFO at the lowest real-time priority
 *    lets it run when it wakes: it reads for tens of us per period and
 *    sleeps, so it takes a few % of one core, and the kernel's real-time
 *    throttling bounds even a runaway.  It needs CAP_SYS_NICE or an
 *    RLIMIT_RTPRIO; refused, the sampler runs as before and says so once.
 *    It is opt-in (SPMTAP_SMI_RT=1): measured on the emulated node it helps
 *    while SPM is light (4 GPUs at interval 32768: p99 64 us and 7 missed
 *    deadlines against 537 us and 37) and hurts when SPM is heavy (interval
 *    4096: 5.0 ms and 4703 missed against 1.6 ms and 1557, with 2.6x the
 *    samplers' CPU), where a real-time reader waits on work the ordinary
 *    threads it preempts must finish (docs/power.md).
 */
static void timing_setup(const struct smi_sampler *s)
{
	char name[16]; /* top -H and the bench see the samplers by name */
	snprintf(name, sizeof(name), "spmtap-smi%u", s->o.gpu);
	pthread_setname_np(pthread_self(), name);
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	const char *e = getenv("SPMTAP_SMI_RT");
	if (!e || strcmp(e, "1"))
		return;
	struct sched_param sp = { .sched_priority = sched_get_priority_min(SCHED_FIFO) };
	int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	if (rc)
		pr_info("smi", "GPU %u sensors: an ordinary thread, not SCHED_FIFO (%s): at short intervals a busy "
			"node delays its reads", s->o.gpu, strerror(rc));
}

static void *thread_main(void *arg)
{
	struct smi_sampler *s = arg;
	int64_t iv = (int64_t)s->o.interval_ns;
	timing_setup(s);
	/* The first point of the grid k * iv + phase after now (smi_sampler.h). */
	int64_t phase = (int64_t)(s->o.phase_ns % s->o.interval_ns);
	int64_t next = (mono_ns() - phase) / iv * iv + iv + phase;
	uint64_t wakes = 0;
	s->st.first_deadline_ns = next;
	s->last_flush_ns = smi_now_boot_ns();
	while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
		/*
		 * Sleep to the deadline in slices, so that a stop is seen within
		 * STOP_SLICE_NS however long the period (--smi-interval 10s must not
		 * hold a recording's stop for ten seconds).
		 */
		bool stopping = false;
		for (int64_t now = mono_ns(); now < next; now = mono_ns()) {
			if ((stopping = atomic_load_explicit(&s->stop, memory_order_relaxed)))
				break;
			int64_t until = next - now > STOP_SLICE_NS ? now + STOP_SLICE_NS : next;
			struct timespec ts = { until / 1000000000, until % 1000000000 };
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		}
		if (stopping)
			break;
		int64_t late = mono_ns() - next;
		s->st.last_deadline_ns = next;
		wakes++;
		s->late_sum += (double)late;
		if (late > s->st.max_late_ns)
			s->st.max_late_ns = late;
		int64_t woke = next + late;
		if (!sample(s))
			break;
		/*
		 * The next deadline is on the fixed grid k * interval + phase;
		 * if the sample overran it, skip to the first one still ahead
		 * and count the ones lost, rather than sample late (drift) or
		 * in a burst.  Those that had passed before the wake-up are
		 * the scheduler's, not the read's: the summary says which.
		 */
		next += iv;
		int64_t now = mono_ns();
		if (now - woke > s->st.max_read_ns)
			s->st.max_read_ns = now - woke;
		if (now >= next) {
			int64_t k = (now - next) / iv + 1;
			s->st.missed_deadlines += (uint64_t)k;
			if (woke >= next)
				s->st.missed_late += (uint64_t)((woke - next) / iv + 1);
			next += k * iv;
		}
	}
	s->st.mean_late_ns = wakes ? s->late_sum / (double)wakes : 0;
	flush(s);
	s->st.cpu_ns = cost_thread_cpu_ns();
	return NULL;
}

int smi_sampler_start(struct smi_sampler *s)
{
	if (s->running)
		return -EBUSY;
	atomic_store(&s->stop, false);
	int rc = pthread_create(&s->thr, NULL, thread_main, s);
	if (rc)
		return -rc;
	s->running = true;
	return 0;
}

int smi_sampler_wait(struct smi_sampler *s)
{
	if (!s->running)
		return 0;
	pthread_join(s->thr, NULL);
	s->running = false;
	return 0;
}

int smi_sampler_stop(struct smi_sampler *s)
{
	if (!s->running)
		return 0;
	atomic_store(&s->stop, true);
	return smi_sampler_wait(s);
}

void smi_sampler_get_stats(const struct smi_sampler *s, struct smi_sampler_stats *st)
{
	*st = s->st;
	st->dedt = s->dedt;
}

void smi_sampler_free(struct smi_sampler *s)
{
	if (!s)
		return;
	smi_sampler_stop(s);
	free(s->host_ns);
	free(s->ticks);
	for (uint32_t c = 0; c < MAX_COLS; c++) {
		free(s->vals[c]);
		free(s->miss[c]);
	}
	tb_free(s->fwmap);
	free(s);
}
