// SPDX-License-Identifier: MIT
/*
 * The session's Cray EX node power (session_opts.cray; smi_cray_pm.h,
 * docs/power.md "Cray EX node power"): one thread polls
 * /sys/cray/pm_counters every cray_interval_ns and writes each new
 * snapshot as a row of DIR/NAME_craypm.csv, a spmtap-sensor-trace v1 file
 * (docs/formats/sensor-trace.md) in the recording's set (written as .part,
 * renamed with the others):
 *
 *   time_ns,pm.power[W],pm.power[ts_ns],pm.energy[J],pm.energy[ts_ns],...
 *
 * time_ns and every ts_ns are the snapshot's own timestamp (REALTIME us)
 * moved onto CLOCK_BOOTTIME by REALTIME - BOOTTIME as measured at the first
 * read, so the file keeps one clock (a REALTIME step shows as a jump, not
 * as a changing offset).  As the GPU sampler does with the driver's
 * BOOTTIME stamp, the row's time is the sensor's, not the read's: the read
 * completes up to a poll period after the snapshot, and the trace's lower
 * envelope (which would take the smallest such lag as the offset) would
 * shift every PM reading late by it.  How late the reads were is kept in
 * the metadata (read_lag_ns_min/_max), the check that the timestamps are
 * the node's REALTIME (JOB.md 6 [R]: not seen on hardware).
 * Node-level: the rows belong to no GPU; the accelN to GPU map the user
 * gave goes into the metadata ("cray_pm").
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "collector/lib/cost.h"
#include "collector/lib/outset.h"
#include "collector/lib/session_priv.h"
#include "collector/lib/smi_cray_pm.h"
#include "log.h"

#define CRAY_DEFAULT_INTERVAL_NS 50000000ll

struct ses_cray {
	struct cray_pm *pm;
	FILE *f;
	char *final;          /* DIR/NAME_craypm.csv */
	int64_t interval_ns;
	/* read by the metadata's writer while the thread runs: atomics */
	_Atomic int64_t real_minus_boot; /* from the first read; INT64_MIN before it */
	atomic_uint_least64_t reads, snapshots, torn, failed, missed;
	_Atomic uint64_t cpu_ns;
	_Atomic int64_t lag_min, lag_max; /* read completion - snapshot time */
	uint64_t last_fresh;
	bool have_fresh, write_failed;
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

static void write_row(struct ses_cray *c, const struct cray_pm_snap *s)
{
	if (atomic_load(&c->real_minus_boot) == INT64_MIN)
		atomic_store(&c->real_minus_boot, s->real_minus_boot_ns);
	int64_t rmb = atomic_load(&c->real_minus_boot);
	int64_t t = s->ts_us ? (int64_t)s->ts_us * 1000 - rmb : s->host_after_ns;
	int64_t lag = s->host_after_ns - t;
	if (atomic_load(&c->snapshots) == 1 || lag < atomic_load(&c->lag_min))
		atomic_store(&c->lag_min, lag);
	if (atomic_load(&c->snapshots) == 1 || lag > atomic_load(&c->lag_max))
		atomic_store(&c->lag_max, lag);
	fprintf(c->f, "%" PRId64, t);
	for (unsigned i = 0; i < cray_pm_nseries(c->pm); i++) {
		const struct cray_pm_value *v = &s->val[i];
		if (v->present && v->ts_us)
			fprintf(c->f, ",%" PRId64 ",%" PRId64, v->v, (int64_t)v->ts_us * 1000 - rmb);
		else
			fputs(",,", c->f);
	}
	if (fputc('\n', c->f) == EOF)
		c->write_failed = true;
}

static void poll_once(struct ses_cray *c)
{
	struct cray_pm_snap s;
	uint64_t torn = 0;
	atomic_fetch_add(&c->reads, 1);
	int rc = cray_pm_read(c->pm, &s, &torn);
	atomic_fetch_add(&c->torn, torn);
	if (rc) {
		atomic_fetch_add(&c->failed, 1);
		return;
	}
	if (c->have_fresh && s.freshness == c->last_fresh)
		return; /* the same snapshot: nothing new */
	if (c->have_fresh && s.freshness > c->last_fresh + 1)
		atomic_fetch_add(&c->missed, s.freshness - c->last_fresh - 1);
	c->have_fresh = true;
	c->last_fresh = s.freshness;
	atomic_fetch_add(&c->snapshots, 1);
	write_row(c, &s);
}

static void *cray_main(void *arg)
{
	struct ses_cray *c = arg;
	pthread_setname_np(pthread_self(), "spmtap-craypm");
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	int64_t next = mono_ns();
	while (!atomic_load(&c->stop)) {
		poll_once(c);
		next += c->interval_ns;
		/* Sleep in slices of at most 20 ms so that a stop is seen promptly. */
		for (int64_t now = mono_ns(); now < next && !atomic_load(&c->stop); now = mono_ns()) {
			int64_t until = next - now > 20000000 ? now + 20000000 : next;
			struct timespec ts = { until / 1000000000, until % 1000000000 };
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		}
		int64_t now = mono_ns();
		if (now > next + c->interval_ns)
			next = now; /* overran: read again now rather than in a burst */
	}
	atomic_store(&c->cpu_ns, cost_thread_cpu_ns());
	return NULL;
}

int ses_cray_open(struct session *S, char *err, size_t errlen)
{
	const struct session_opts *o = &S->o;
	struct ses_cray *c = calloc(1, sizeof(*c));
	if (!c)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	S->cray = c;
	atomic_store(&c->real_minus_boot, INT64_MIN);
	c->interval_ns = o->cray_interval_ns ? (int64_t)o->cray_interval_ns : CRAY_DEFAULT_INTERVAL_NS;
	char why[320];
	int rc = cray_pm_open(NULL, &c->pm, why, sizeof(why));
	if (rc)
		return spmtap_seterr(err, errlen, -rc, "--cray: %s", why);
	if (o->cray_accel_map)
		for (unsigned a = cray_pm_naccel(c->pm); a < CRAY_PM_MAX_ACCEL; a++)
			if (o->cray_accel_map[a] >= 0)
				return spmtap_seterr(err, errlen, EINVAL,
						     "--cray-accel-map names accel%u, but this node has %u accel files",
						     a, cray_pm_naccel(c->pm));
	const char *dir = o->dir && *o->dir ? o->dir : ".";
	const char *name = o->name && *o->name ? o->name : "spmtap";
	size_t n = strlen(dir) + strlen(name) + 16;
	c->final = malloc(n);
	if (!c->final)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	snprintf(c->final, n, "%s/%s_craypm.csv", dir, name);
	char *part = out_set_part(S->files, c->final);
	if (!part)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	c->f = fopen(part, "we");
	if (!c->f) {
		int e = errno;
		spmtap_seterr(err, errlen, e, "%s: %s", part, strerror(e));
		free(part);
		return -e;
	}
	free(part);
	fputs("time_ns", c->f);
	for (unsigned i = 0; i < cray_pm_nseries(c->pm); i++)
		fprintf(c->f, ",pm.%s[%c],pm.%s[ts_ns]", cray_pm_series_name(c->pm, i),
			cray_pm_series_unit(c->pm, i), cray_pm_series_name(c->pm, i));
	fputc('\n', c->f);
	return 0;
}

int ses_cray_start(struct session *S, char *err, size_t errlen)
{
	struct ses_cray *c = S->cray;
	if (!c || c->running)
		return 0;
	int rc = pthread_create(&c->thr, NULL, cray_main, c);
	if (rc)
		return spmtap_seterr(err, errlen, rc, "cannot start the Cray PM thread: %s", strerror(rc));
	c->running = true;
	return 0;
}

void ses_cray_stop(struct session *S)
{
	struct ses_cray *c = S->cray;
	if (!c)
		return;
	if (c->running) {
		atomic_store(&c->stop, true);
		pthread_join(c->thr, NULL);
		c->running = false;
	}
	if (c->f) {
		if (fclose(c->f) || c->write_failed)
			ses_set_error(S, -EIO, "the Cray PM file could not be written");
		c->f = NULL;
	}
}

json_t *ses_cray_json(const struct session *S)
{
	struct ses_cray *c = S->cray;
	if (!c || !c->pm)
		return NULL;
	json_t *series = json_array(), *map = json_object();
	for (unsigned i = 0; i < cray_pm_nseries(c->pm); i++) {
		char nm[40];
		snprintf(nm, sizeof(nm), "pm.%s", cray_pm_series_name(c->pm, i));
		char unit[2] = { cray_pm_series_unit(c->pm, i), 0 };
		int a = cray_pm_series_accel(c->pm, i);
		json_array_append_new(series, json_pack("{s:s, s:s, s:o}", "name", nm, "unit", unit, "accel",
							a >= 0 ? json_integer(a) : json_null()));
	}
	bool mapped = false;
	for (unsigned a = 0; a < cray_pm_naccel(c->pm); a++) {
		int32_t g = S->o.cray_accel_map ? S->o.cray_accel_map[a] : -1;
		char k[16];
		snprintf(k, sizeof(k), "accel%u", a);
		json_object_set_new(map, k, g >= 0 ? json_integer(g) : json_null());
		mapped |= g >= 0;
	}
	const char *slash = c->final ? strrchr(c->final, '/') : NULL;
	int64_t rmb = atomic_load(&c->real_minus_boot);
	json_t *x = json_pack("{s:s, s:s?, s:I, s:I, s:s, s:i, s:o, s:o, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:o, s:I}",
		"path", "/sys/cray/pm_counters", "file", slash ? slash + 1 : c->final,
		"interval_ns", (json_int_t)c->interval_ns, "raw_scan_hz", (json_int_t)cray_pm_raw_scan_hz(c->pm),
		"version", cray_pm_version(c->pm), "naccel", (int)cray_pm_naccel(c->pm), "series", series,
		"accel_map", map, "accel_map_source", mapped ? "--cray-accel-map" : "none",
		"accel_map_note",
		"which accelN is which GPU is not documented publicly (HPE); accelN are node-level series "
		"unless --cray-accel-map pairs them with GPUs",
		"reads", (json_int_t)atomic_load(&c->reads), "snapshots", (json_int_t)atomic_load(&c->snapshots),
		"torn_reads", (json_int_t)atomic_load(&c->torn), "failed_reads", (json_int_t)atomic_load(&c->failed),
		"missed_snapshots", (json_int_t)atomic_load(&c->missed), "real_minus_boot_ns",
		rmb == INT64_MIN ? json_null() : json_integer(rmb), "cpu_ns", (json_int_t)atomic_load(&c->cpu_ns));
	if (x && atomic_load(&c->snapshots)) {
		json_object_set_new(x, "read_lag_ns_min", json_integer(atomic_load(&c->lag_min)));
		json_object_set_new(x, "read_lag_ns_max", json_integer(atomic_load(&c->lag_max)));
	}
	return x;
}

void ses_cray_free(struct session *S)
{
	struct ses_cray *c = S->cray;
	if (!c)
		return;
	ses_cray_stop(S);
	cray_pm_close(c->pm);
	free(c->final);
	free(c);
	S->cray = NULL;
}

bool session_cray_summary(struct session *S, char *buf, size_t len)
{
	struct ses_cray *c = S->cray;
	if (!c || !c->pm)
		return false;
	char map[160] = "";
	size_t n = 0;
	for (unsigned a = 0; a < cray_pm_naccel(c->pm) && n < sizeof(map); a++) {
		int32_t g = S->o.cray_accel_map ? S->o.cray_accel_map[a] : -1;
		if (g >= 0)
			n += (size_t)snprintf(map + n, sizeof(map) - n, "%saccel%u=gpu%d", n ? "," : "", a, g);
	}
	snprintf(buf, len,
		 "Cray PM: %" PRIu64 " snapshots (%" PRIu64 " missed), %" PRIu64 " torn reads retried, %" PRIu64
		 " polls failed; %u accel, %s%s",
		 (uint64_t)atomic_load(&c->snapshots), (uint64_t)atomic_load(&c->missed),
		 (uint64_t)atomic_load(&c->torn), (uint64_t)atomic_load(&c->failed), cray_pm_naccel(c->pm),
		 map[0] ? "mapped " : "unmapped (which accelN is which GPU is not documented publicly: "
				      "--cray-accel-map)",
		 map);
	return true;
}
