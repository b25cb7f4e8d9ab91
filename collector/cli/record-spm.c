/* SPDX-License-Identifier: MIT */
/*
 * spmtap record --spm: plan the counters, acquire SPM, arm the first buffer
 * (KFD starts SPM), submit the start program, record, submit the stop
 * program, drain until the kernel copies nothing, release.  The order
 * against KFD is AMD's (shared/ref/PROGRAMMING.md 2.4): acquire and arm
 * first, program second.  The decoder thread turns retired buffers into
 * CSV rows, or the regions go to the raw container with the layout in its
 * metadata.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/cli/record.h"
#include "collector/lib/decode_thread.h"
#include "collector/lib/prime.h"
#include "collector/lib/write_csv.h"
#include "decoder/layout.h"
#include "log.h"
#include "spm/pm4.h"
#include "spm/submit.h"


struct session {
	const struct rec_opts *o;
	struct cli_target t;
	struct spm_plan *plan;
	char *layout_text;
	struct dec_layout *layout;
	struct spm_pm4 start, stop;
	const struct spm_submitter_ops *sops;
	struct spm_submitter *sub;
	struct spm_backend *b;
	struct spm_stream *s;
	struct prime prime;
	struct feeder *f;
	struct dthr *dt;
	int csv_fd;
	struct csv_writer *csv;
	struct rawfile_writer *raw;
	struct rec_totals tot;
	enum spm_gen gen;
	uint32_t nstreams, size;
	char err[SPM_ERRLEN + 256];
};

static void outerr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void outerr(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("spmtap record: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* x.csv -> x.layout.json; anything else gets .layout.json appended. */
static char *layout_path(const char *out)
{
	size_t n = strlen(out);
	if (n > 4 && !strcmp(out + n - 4, ".csv"))
		n -= 4;
	char *p = malloc(n + sizeof(".layout.json"));
	if (p) {
		memcpy(p, out, n);
		strcpy(p + n, ".layout.json");
	}
	return p;
}

static int write_text(const char *path, const char *text, char *err, size_t errlen)
{
	FILE *f = fopen(path, "we");
	if (!f)
		return spmtap_seterr(err, errlen, errno, "%s: %s", path, strerror(errno));
	int bad = fputs(text, f) < 0 || fputc('\n', f) < 0;
	if (fclose(f) || bad)
		return spmtap_seterr(err, errlen, EIO, "%s: write failed: %s", path, strerror(errno));
	return 0;
}

/* Device, geometry, plan, layout and programs: everything decided before touching SPM. */
static int prepare(struct session *x)
{
	const struct rec_opts *o = x->o;
	int st = cli_target_devices(&x->t, "record");
	if (st != EXIT_OK)
		return st;
	int idx = spm_device_lookup(x->t.devs, x->t.ndev, o->device, x->err, sizeof(x->err));
	if (idx < 0) {
		outerr("%s", x->err);
		return x->t.ndev ? EXIT_USAGE : EXIT_FAIL;
	}
	x->t.dev = &x->t.devs[idx];
	spm_device_marketing_name(&x->t.devs[idx]);

	struct spm_geometry geo;
	enum spm_gfx gfx;
	if (spm_geometry_from_device(x->t.dev, &geo, &gfx, x->err, sizeof(x->err)) < 0) {
		outerr("%s", x->err);
		return EXIT_FAIL;
	}
	st = cli_make_plan("record", x->t.dev->gfx, &geo, o->counters, o->ncounters,
			   o->interval ? o->interval : REC_INTERVAL_DEFAULT, &x->plan);
	if (st != EXIT_OK)
		return st;
	/* The decoder reads the descriptor, as `spmtap decode` will: one source of truth. */
	x->layout_text = spm_plan_layout_dumps(x->plan);
	if (!x->layout_text ||
	    dec_layout_parse(x->layout_text, strlen(x->layout_text), &x->layout, x->err,
			     sizeof(x->err)) < 0) {
		outerr("internal error: the planner's layout does not validate: %s",
		       x->layout_text ? x->err : "out of memory");
		return EXIT_FAIL;
	}
	spm_pm4_init(&x->start);
	spm_pm4_init(&x->stop);
	int rc = spm_pm4_build_start(x->plan, &x->start);
	if (!rc)
		rc = spm_pm4_build_stop(x->plan, &x->stop);
	if (rc) {
		outerr("cannot encode the PM4 programs: %s", spmtap_strerror(rc));
		return EXIT_FAIL;
	}
	st = cli_target_backend(&x->t, "record", o->backend);
	return st;
}

/*
 * The queue that carries the counter program: made before the backend
 * opens, because libhsakmt takes the KFD VM itself and a backend with a
 * render fd of its own (kfd) must come second (spm/submit.h).
 */
static int pick_submitter(struct session *x)
{
	if (spm_submitter_open(x->t.dev, x->o->submitter, &x->sops, &x->sub, NULL, x->err, sizeof(x->err)) < 0) {
		outerr("%s", x->err);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

static int open_stream(struct session *x)
{
	const struct rec_opts *o = x->o;
	char note[256];
	int rc = x->t.ops->open(&x->b, x->t.devs, x->t.ndev, x->err, sizeof(x->err));
	if (rc < 0) {
		outerr("%s", x->err[0] ? x->err : spmtap_strerror(rc));
		return EXIT_FAIL;
	}
	struct spm_stream_opts so = { .gen_override = o->gen };
	rc = spm_stream_open(&x->s, x->t.ops, x->b, x->t.dev, &so, x->err, sizeof(x->err));
	if (rc < 0) {
		outerr("%s", x->err[0] ? x->err : spmtap_strerror(rc));
		return rc == -EBUSY ? EXIT_BUSY : EXIT_FAIL;
	}
	x->gen = spm_stream_gen(x->s);
	x->nstreams = spm_stream_shape(x->s)->nstreams;
	x->size = feeder_round_size(o->buffer_size, x->t.dev->num_xcc, note, sizeof(note));
	if (note[0] && o->size_given)
		outerr("%s", note);
	return EXIT_OK;
}

static int raw_part(void *user, const struct feeder_buf *b, const struct dec_part *p,
		    const void *data)
{
	struct session *x = user;
	rec_raw_region(x->raw, &x->tot, b, p, data);
	return x->tot.write_error;
}

static json_t *spm_meta(const struct session *x)
{
	json_t *names = json_array();
	for (size_t i = 0; i < x->o->ncounters; i++)
		json_array_append_new(names, json_string(x->o->counters[i]));
	return json_pack("{s:o, s:i, s:i, s:b, s:b, s:i}", "counters", names, "interval",
			 (json_int_t)x->plan->interval, "interval_requested",
			 (json_int_t)x->plan->interval_requested, "per_se", x->o->per_se,
			 "per_instance", x->o->per_instance, "sample_bytes",
			 (json_int_t)x->plan->sample_bytes);
}

static int open_outputs(struct session *x)
{
	const struct rec_opts *o = x->o;
	if (o->raw) {
		struct rawfile_header h;
		rec_raw_header(&h, x->t.dev, x->t.ops->name, x->gen, x->size, o->nbuffers);
		int rc = rawfile_create(&x->raw, o->out, &h, x->err, sizeof(x->err));
		json_t *meta = rc ? NULL
				  : rec_meta_json(x->t.dev, x->t.ops->name, x->gen, o, x->size,
						  o->nbuffers);
		if (meta) {
			json_object_set_new(meta, "layout", json_loads(x->layout_text, 0, NULL));
			json_object_set_new(meta, "spm", spm_meta(x));
			json_object_set_new(meta, "submitter", json_string(x->sops->name));
		}
		if (rc == 0)
			rc = rec_append_json(x->raw, RAWFILE_META, meta, x->err, sizeof(x->err));
		if (rc < 0) {
			outerr("%s", x->err);
			return EXIT_FAIL;
		}
	} else {
		x->csv_fd = STDOUT_FILENO;
		if (o->out && strcmp(o->out, "-")) {
			char *lp = layout_path(o->out);
			int rc = lp ? write_text(lp, x->layout_text, x->err, sizeof(x->err)) : -ENOMEM;
			free(lp);
			if (rc < 0) {
				outerr("%s", lp ? x->err : "out of memory");
				return EXIT_FAIL;
			}
			x->csv_fd = open(o->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (x->csv_fd < 0) {
				outerr("%s: %s", o->out, strerror(errno));
				return EXIT_FAIL;
			}
		}
		if (csv_open_fd(x->csv_fd, CSV_XCC_COLUMN, &x->csv) < 0) {
			outerr("out of memory");
			return EXIT_FAIL;
		}
	}
	struct dthr_opts dto = {
		.layout = x->layout, .shape = *spm_stream_shape(x->s), .per_se = o->per_se,
		.per_instance = o->per_instance, .requests = o->counters, .nreq = o->ncounters,
		.sink = x->csv ? csv_sink : NULL, .sink_user = x->csv,
		.part = x->raw ? raw_part : NULL, .part_user = x, .skip_first = true,
	};
	if (dthr_open(&x->dt, &dto, x->err, sizeof(x->err)) < 0) {
		outerr("%s", x->err);
		return EXIT_FAIL;
	}
	if (x->csv && csv_begin(x->csv, dthr_columns(x->dt), dthr_ncols(x->dt)) < 0) {
		outerr("%s", csv_error(x->csv));
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

static int submit(struct session *x, const struct spm_pm4 *p, const char *what)
{
	char e[SPM_ERRLEN] = "";
	int rc = x->sops->submit(x->sub, p->dw, p->n, SPM_SUBMIT_TIMEOUT_MS, e, sizeof(e));
	if (rc < 0)
		outerr("the %s program (%zu dwords) failed: %s", what, p->n, e[0] ? e : spmtap_strerror(rc));
	return rc;
}

struct loss {
	uint64_t samples, lost, dropped, flagged, bytes;
};

static void sum_loss(struct session *x, struct loss *l)
{
	memset(l, 0, sizeof(*l));
	for (uint32_t k = 0; k < x->nstreams; k++) {
		struct dthr_xcc s;
		if (dthr_stats(x->dt, k, &s) < 0)
			continue;
		l->samples += s.dec.samples;
		l->lost += s.dec.lost_samples_est;
		l->dropped += s.dec.dropped_bytes - s.skipped_start;
		l->flagged += s.loss_parts + s.bad_parts;
		l->bytes += s.dec.bytes_fed;
	}
}

static json_t *end_json(struct session *x, const struct feeder_stats *fs, double secs)
{
	json_t *arr = json_array();
	uint32_t sb = dthr_sample_bytes(x->dt);
	for (uint32_t k = 0; k < x->nstreams; k++) {
		struct dthr_xcc s;
		dthr_stats(x->dt, k, &s);
		json_array_append_new(
			arr, json_pack("{s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
				       "xcc", (int)k, "bytes", (json_int_t)s.dec.bytes_fed, "regions",
				       (json_int_t)s.parts, "loss_regions", (json_int_t)s.loss_parts,
				       "bad_regions", (json_int_t)s.bad_parts, "samples",
				       (json_int_t)s.dec.samples, "lost_samples",
				       (json_int_t)s.dec.lost_samples_est, "lost_bytes",
				       (json_int_t)(s.dec.lost_samples_est * sb), "gaps",
				       (json_int_t)s.dec.gaps, "dropped_bytes",
				       (json_int_t)(s.dec.dropped_bytes - s.skipped_start), "resyncs",
				       (json_int_t)s.resyncs, "corrupt_events",
				       (json_int_t)s.dec.corrupt_events, "trailing_bytes",
				       (json_int_t)s.dec.partial_bytes));
	}
	struct loss l;
	sum_loss(x, &l);
	return json_pack(
		"{s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:b, s:b, s:o, s:s?, s:s?,"
		" s:s?, s:f}",
		"duration_s", secs, "buffers", (json_int_t)x->tot.buffers, "bytes",
		(json_int_t)l.bytes, "samples", (json_int_t)l.samples, "sample_bytes",
		(json_int_t)sb, "lost_samples", (json_int_t)l.lost, "loss_buffers",
		(json_int_t)fs->loss_buffers, "bad_buffers", (json_int_t)fs->bad_buffers, "polls",
		(json_int_t)fs->polls, "overrun_polls", (json_int_t)fs->overrun_polls, "drain_calls",
		(int)fs->drain_calls, "drain_capped", fs->drain_capped, "stall_injected", fs->stalled,
		"xcc", arr, "stopped_by", rec_stop_signal ? strsignal(rec_stop_signal) : NULL,
		"feeder_error", fs->error ? fs->errmsg : NULL, "write_error",
		dthr_error(x->dt)[0] ? dthr_error(x->dt) : x->tot.write_error ? x->tot.write_msg : NULL,
		"feeder_cpu_s", (double)fs->cpu_ns / 1e9);
}

static void summary(struct session *x, const struct feeder_stats *fs, double secs)
{
	struct loss l;
	sum_loss(x, &l);
	uint32_t sb = dthr_sample_bytes(x->dt);
	const char *dest = x->o->out && strcmp(x->o->out, "-") ? x->o->out : "standard output";
	fprintf(stderr,
		"spmtap record: %.2f s, %" PRIu64 " bytes (%.1f MB/s), %" PRIu64
		" samples of %u bytes from %u XCC stream(s), %u column(s) -> %s\n",
		secs, l.bytes, secs > 0 ? (double)l.bytes / secs / 1e6 : 0.0, l.samples, sb,
		x->nstreams, dthr_ncols(x->dt), dest);
	if (rec_stop_signal)
		outerr("stopped by %s; counters stopped, data drained and %s complete",
		       strsignal(rec_stop_signal), dest);
	if (fs->overrun_polls)
		outerr("%" PRIu64 " of %" PRIu64 " polls found no free buffer (consumer overrun): "
		       "the kernel kept filling the armed buffer", fs->overrun_polls, fs->polls);
	if (fs->drain_capped)
		pr_info("record", "the stop drain ended after %u calls with data still arriving",
			fs->drain_calls);
	if (!l.lost && !l.dropped) {
		/* Gen B flags a region that filled while its ring kept the data. */
		if (l.flagged)
			outerr("the kernel flagged %" PRIu64 " full buffer region(s); the timestamps show "
			       "no sample missing", l.flagged);
		return;
	}
	fprintf(stderr, "spmtap record: WARNING: DATA LOSS: ~%" PRIu64 " samples (%" PRIu64
		" bytes) lost, from timestamp gaps; %" PRIu64 " region(s) flagged by the kernel\n",
		l.lost, l.lost * sb, l.flagged);
	for (uint32_t k = 0; k < x->nstreams; k++) {
		struct dthr_xcc s;
		dthr_stats(x->dt, k, &s);
		uint64_t dropped = s.dec.dropped_bytes - s.skipped_start;
		if (!s.dec.lost_samples_est && !s.loss_parts && !s.bad_parts && !dropped)
			continue;
		fprintf(stderr, "spmtap record:   xcc %u: %" PRIu64 " samples written, ~%" PRIu64
			" lost in %" PRIu64 " gap(s), %" PRIu64 " partial bytes dropped, %" PRIu64
			" resync(s), %" PRIu64 " loss-flagged region(s)\n", k, s.dec.samples,
			s.dec.lost_samples_est, s.dec.gaps, dropped, s.resyncs,
			s.loss_parts + s.bad_parts);
	}
}

/* Record until the duration, a signal or a failing consumer; then stop in AMD's order. */
static int run(struct session *x)
{
	sigset_t old;
	rec_signals_install();
	rec_signals_block(&old);
	struct feeder_opts fo = { .nbuffers = x->o->nbuffers, .buffer_size = x->size };
	int rc = prime_start(&x->prime, x->s, x->t.dev, x->sops, x->sub, x->start.dw, x->start.n,
			     &fo, x->err, sizeof(x->err));
	if (rc < 0)
		outerr("%s", x->err);
	if (x->prime.f) {
		/* Also after a failed program: the thread takes buffers until the feeder stops. */
		x->f = x->prime.f;
		x->s = NULL; /* the feeder owns and releases it */
		int r2 = dthr_start(x->dt, x->f, x->err, sizeof(x->err));
		if (r2 < 0) {
			outerr("%s", x->err);
			rc = r2;
		}
	}
	rec_signals_restore(&old);
	if (rc < 0 && !x->f)
		return EXIT_FAIL;

	uint64_t start = rec_now_ns(CLOCK_MONOTONIC);
	int st = EXIT_OK;
	bool started = rc == 0;
	if (!started)
		st = EXIT_FAIL;
	uint64_t deadline = x->o->duration > 0 ? start + (uint64_t)(x->o->duration * 1e9) : UINT64_MAX;
	while (started && !rec_stop_signal && !dthr_failed(x->dt) &&
	       rec_now_ns(CLOCK_MONOTONIC) < deadline) {
		struct timespec ts = { 0, 20 * 1000000 };
		nanosleep(&ts, NULL); /* a signal ends it early */
	}
	/* Stop generation first, so the drain ends on a call that copies nothing (SPM.md 3.6). */
	if (started && submit(x, &x->stop, "counter stop") < 0)
		st = EXIT_FAIL;
	feeder_request_stop(x->f);
	int derr = dthr_finish(x->dt);
	double secs = (double)(rec_now_ns(CLOCK_MONOTONIC) - start) / 1e9;
	struct feeder_stats fs;
	int ferr = feeder_finish(x->f, &fs);
	x->f = NULL;
	prime_free(&x->prime);

	int werr = 0;
	if (x->csv) {
		werr = csv_end(x->csv);
		if (x->csv_fd != STDOUT_FILENO) {
			if (close(x->csv_fd) < 0 && !werr)
				werr = -errno;
			x->csv_fd = -1;
		}
	}
	if (x->raw) {
		if (!x->tot.write_error) {
			rc = rec_append_json(x->raw, RAWFILE_END, end_json(x, &fs, secs),
					     x->tot.write_msg, sizeof(x->tot.write_msg));
			if (rc < 0)
				x->tot.write_error = rc;
		}
		rc = rawfile_finish(x->raw, x->tot.write_error ? NULL : x->tot.write_msg,
				    sizeof(x->tot.write_msg));
		x->raw = NULL;
		if (rc < 0 && !x->tot.write_error)
			x->tot.write_error = rc;
	}
	summary(x, &fs, secs);
	if (ferr) {
		outerr("%s", fs.errmsg);
		st = EXIT_FAIL;
	}
	if (x->tot.write_error) {
		outerr("%s", x->tot.write_msg);
		st = EXIT_FAIL;
	} else if (derr) {
		outerr("%s", dthr_error(x->dt)[0] ? dthr_error(x->dt) : spmtap_strerror(derr));
		st = EXIT_FAIL;
	}
	if (werr) {
		outerr("%s: %s", x->o->out ? x->o->out : "standard output",
		       csv_error(x->csv)[0] ? csv_error(x->csv) : spmtap_strerror(werr));
		st = EXIT_FAIL;
	}
	return st;
}

static void cleanup(struct session *x)
{
	if (x->f) {
		feeder_request_stop(x->f);
		struct feeder_stats fs;
		feeder_finish(x->f, &fs);
	}
	prime_free(&x->prime);
	dthr_close(x->dt);
	spm_stream_close(x->s);
	if (x->sub)
		x->sops->destroy(x->sub);
	if (x->b)
		x->t.ops->close(x->b);
	if (x->raw)
		rawfile_finish(x->raw, NULL, 0);
	csv_close(x->csv);
	if (x->csv_fd > STDOUT_FILENO)
		close(x->csv_fd);
	spm_pm4_fini(&x->start);
	spm_pm4_fini(&x->stop);
	dec_layout_free(x->layout);
	free(x->layout_text);
	spm_plan_free(x->plan);
	cli_target_free(&x->t);
}

int record_spm(const struct rec_opts *o)
{
	struct session x = { .o = o, .csv_fd = -1 };
	int st = prepare(&x);
	if (st == EXIT_OK)
		st = pick_submitter(&x);
	if (st == EXIT_OK)
		st = open_stream(&x);
	if (st == EXIT_OK)
		st = open_outputs(&x);
	if (st == EXIT_OK)
		st = run(&x);
	cleanup(&x);
	return st;
}
