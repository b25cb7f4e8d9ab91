/* SPDX-License-Identifier: MIT */
/*
 * What a session writes about itself (session_priv.h): the metadata every
 * output opens with, and the timebase, accounting and marker notes it ends
 * with.  The writers are opened here, every stream declared before the
 * first chunk.
 */
#include <errno.h>
#include <math.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/lib/marker_reader.h"
#include "collector/lib/outset.h"
#include "collector/lib/session_priv.h"
#include "collector/lib/timebase.h"
#include "log.h"
#include "spm/plan.h"
#include "spmtap.h"

json_t *ses_extra_json(struct session *S)
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
	/*
	 * Every stream with its columns' units and its tick domain, so readers of
	 * the CSV need no tables; and its rows written so far (ses_meta_update).
	 */
	json_t *streams = json_array();
	size_t idx = 0;
	for (size_t i = 0; i < S->ng; i++) {
		struct sgpu *g = &S->g[i];
		for (uint32_t x = 0; x <= g->nseries; x++) {
			const struct series_stream *st =
				x < g->nseries ? &g->streams[x] : g->smi ? smi_sampler_stream(g->smi) : NULL;
			if (!st)
				continue;
			json_t *cols = json_array();
			for (uint32_t c = 0; c < st->ncols; c++)
				json_array_append_new(cols, json_pack("{s:s, s:s}", "name", st->cols[c].name, "unit",
								      st->cols[c].unit ? st->cols[c].unit : ""));
			json_array_append_new(streams, json_pack("{s:s, s:i, s:i, s:s?, s:o, s:I}", "source",
				st->source, "gpu", (int)st->gpu, "xcc", (int)st->xcc, "tick_domain", st->tick_domain,
				"columns", cols, "rows", (json_int_t)(idx < S->nmst ? S->rows_flushed[idx] : 0)));
			idx++;
		}
	}
	for (size_t i = 0; i < S->o.ncounters; i++)
		json_array_append_new(ctrs, json_string(S->o.counters[i]));
	/* The -f formats asked for (the writers are not open yet when this is first written). */
	for (size_t i = 0; i < S->o.nformats; i++)
		json_array_append_new(fmts, json_string(S->o.formats[i]->name));
	json_t *x = json_pack("{s:o, s:o, s:o, s:o, s:f, s:s, s:I, s:o, s:b}", "devices", devs, "streams", streams,
			 "counters",
			 ctrs, "formats", fmts, "spm_clock_hz", S->spm_hz, "spm_clock_assumption",
			 "SPM timestamps count the GPU reference clock at spm_clock_hz "
			 "(--spm-clock-hz; docs/timebase.md)",
			 "smi_interval_ns",
			 (json_int_t)(S->o.smi_interval_ns ? S->o.smi_interval_ns : 1000000),
			 "notes", smi, "emulated", getenv("SPMTAP_EMU_ACTIVE") != NULL);
	json_t *cray = ses_cray_json(S);
	if (x && cray)
		json_object_set_new(x, "cray_pm", cray);
	else
		json_decref(cray);
	return x;
}

int ses_open_writers(struct session *S, char *err, size_t errlen)
{
	const struct session_opts *o = &S->o;
	const char *dir = o->dir && *o->dir ? o->dir : ".";
	const char *name = o->name && *o->name ? o->name : "spmtap";
	gethostname(S->host, sizeof(S->host) - 1);
	S->start_boot_ns = ses_now_ns(CLOCK_BOOTTIME);
	if (!S->files && out_set_new(&S->files) < 0)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	json_t *mj = ses_extra_json(S);
	char *extra = mj ? json_dumps(mj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(mj);
	struct writer_meta meta = {
		.spmtap_version = spmtap_version_string(), .command_line = o->command_line,
		.hostname = S->host, .start_boottime_ns = S->start_boot_ns,
		.spm_clock_hz = S->spm_hz, .extra_json = extra, .files = S->files,
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
	if (!rc && o->ticks_csv) {
		char *p = strdup(o->ticks_csv);
		rc = p ? writer_csv_ticks.open(&S->w[S->nw], p, &meta, err, errlen)
		       : spmtap_seterr(err, errlen, ENOMEM, "out of memory");
		if (rc < 0)
			free(p);
		else {
			S->paths[S->nw] = p;
			S->wops[S->nw++] = &writer_csv_ticks;
		}
	}
	/* Declare every stream before the first chunk (the CSV header needs them all). */
	for (size_t i = 0; i < S->ng && !rc; i++) {
		struct sgpu *g = &S->g[i];
		for (uint32_t x = 0; x <= g->nseries && !rc; x++) {
			const struct series_stream *s =
				x < g->nseries ? &g->streams[x] : g->smi ? smi_sampler_stream(g->smi) : NULL;
			if (!s)
				continue;
			for (size_t k = 0; k < S->nw && !rc; k++)
				rc = S->wops[k]->begin(S->w[k], s, err, errlen);
			if (!rc && o->on_stream)
				o->on_stream(s, o->user);
			if (S->nmst < sizeof(S->mst) / sizeof(S->mst[0]))
				S->mst[S->nmst++] = s;
		}
	}
	/* The metadata first, before any row: NAME_meta.json(.part) says "complete": false. */
	if (!rc && o->nformats) {
		size_t n = strlen(dir) + strlen(name) + sizeof("/_meta.json");
		if (!(S->meta_path = malloc(n)))
			return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
		snprintf(S->meta_path, n, "%s/%s_meta.json", dir, name);
		rc = ses_meta_update(S, false, err, errlen);
	}
	return rc;
}

json_t *ses_timebase_json(struct session *S)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < S->ng; i++) {
		struct sgpu *g = &S->g[i];
		struct session_gpu_stats st;
		session_gpu_stats(S, i, &st);
		double hz = 0, ppm = 0;
		tb_rate(g->tb, &hz, &ppm);
		/* the error bound of every segment (docs/timebase.md "Error bound"): the tick range of
		 * segment k is [pair k, pair k+1] */
		json_t *segs = json_array();
		pthread_mutex_lock(&g->tb_lock);
		const struct tb_segment *sg = tb_segments(g->tb);
		for (size_t k = 0; k < tb_nsegments(g->tb); k++)
			json_array_append_new(segs, json_real(round(sg[k].bound_ns)));
		pthread_mutex_unlock(&g->tb_lock);
		json_array_append_new(arr, json_pack("{s:i, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:o}",
			"gpu", (int)g->dev->index, "pairs", (int)st.tb_pairs, "pairs_rejected",
			(int)st.tb_rejected, "segments", (int)tb_nsegments(g->tb), "gpu_clock_hz", hz, "ppm",
			ppm, "residual_rms_ns", st.tb_rms_ns, "residual_max_ns", st.tb_max_ns, "spm_clock_hz",
			S->spm_hz, "bound_ns", round(st.tb_bound_ns), "segments_bound", segs));
	}
	return arr;
}

/* Add src's keys to dst (json_pack objects of more than a dozen keys read badly). */
static void merge(json_t *dst, json_t *src)
{
	json_object_update(dst, src);
	json_decref(src);
}

json_t *ses_accounting_json(struct session *S)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < S->ng; i++) {
		struct session_gpu_stats st;
		if (session_gpu_stats(S, i, &st) < 0)
			continue;
		json_t *xs = json_array();
		for (uint32_t x = 0; x < st.nxcc; x++) {
			const struct session_xcc *a = &st.xcc[x];
			json_array_append_new(xs, json_pack("{s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
				"xcc", (int)x, "bytes", (json_int_t)a->bytes, "samples",
				(json_int_t)a->samples, "sample_bytes", (json_int_t)a->sample_bytes,
				"lost_gap_samples", (json_int_t)a->gap_samples, "kernel_loss_flags",
				(json_int_t)a->loss_flags, "resync_dropped_bytes",
				(json_int_t)a->resync_bytes, "prestart_bytes", (json_int_t)a->prestart_bytes,
				"trailing_bytes", (json_int_t)a->trailing_bytes,
				/* decoded after the recording's end, left out: bytes balance with after_end_bytes */
				"after_end_samples", (json_int_t)a->after_end, "after_end_bytes",
				(json_int_t)(a->after_end * st.sample_size)));
			/* Of lost_gap_samples, those after the last sample; gap samples due after the end. */
			merge(json_array_get(xs, json_array_size(xs) - 1),
			      json_pack("{s:I, s:I, s:I}", "lost_at_end_samples", (json_int_t)a->end_lost,
					"after_end_gap_samples", (json_int_t)a->after_end_gap,
					/* each gap's count is rounded: lost_gap_samples is within one per gap */
					"gaps", (json_int_t)a->gaps));
			/* Saturated (empty) cells per output column: what analysis must not read as 0. */
			json_t *sat = json_object();
			uint64_t n;
			const char *name;
			for (uint32_t c = 0; (name = session_gpu_column(S, i, c, x, &n)); c++)
				json_object_set_new(sat, name, json_integer((json_int_t)n));
			json_object_set_new(json_array_get(xs, json_array_size(xs) - 1), "saturated", sat);
		}
		/* output_queue_wait_s: the decode thread blocked on a full output queue (the writer behind). */
		/* poll_gap_max_ms: the longest the kernel held the data between two polls; rotate_max_ms: of
		 * which the longest SET_DEST_BUF call took (the driver's, or the emulated device's, share). */
		json_array_append_new(arr, json_pack("{s:i, s:I, s:I, s:f, s:f, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:o}",
			"gpu", (int)st.gpu, "first_buffer_bytes", (json_int_t)st.first_buffer_bytes,
			"overrun_polls", (json_int_t)st.overrun_polls,
			"poll_gap_max_ms", (double)st.poll_gap_max_ns / 1e6,
			"rotate_max_ms", (double)st.rotate_max_ns / 1e6, "smi_samples",
			(json_int_t)st.smi_samples, "smi_missed_deadlines", (json_int_t)st.smi_missed,
			"smi_after_end_samples", (json_int_t)st.smi_after_end,
			"smi_missed_late", (json_int_t)st.smi_missed_late,
			"smi_max_late_ms", (double)st.smi_max_late_ns / 1e6,
			"smi_max_read_ms", (double)st.smi_max_read_ns / 1e6,
			"output_queue_wait_s", (double)st.sink_wait_ns / 1e9, "xcc", xs));
		json_t *sp = ses_spill_json(S, i);
		if (sp)
			json_object_set_new(json_array_get(arr, json_array_size(arr) - 1), "spill", sp);
	}
	return arr;
}


/*
 * The raw container's first record: the device, the stream, the options
 * and, with counters, the layout and the request, so that `spmtap decode`
 * needs nothing else (docs/raw-format.md).
 */
static json_t *raw_meta_json(struct session *S, struct sgpu *g)
{
	const struct session_opts *o = &S->o;
	const struct spm_device *d = g->dev;
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	const char *emu = getenv("SPMTAP_EMU_ACTIVE");
	json_t *m = json_pack(
		"{s:s, s:{s:i, s:i, s:i, s:s, s:i, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i}, s:s, s:s,"
		" s:{s:s, s:f, s:i, s:i, s:s}, s:s, s:b, s:s?}",
		"spmtap_version", spmtap_version_string(),
		"device",
		"index", (json_int_t)d->index, "gpu_id", (json_int_t)d->gpu_id, "node", (json_int_t)d->node,
		"gfx", d->gfx, "gfx_target_version", (json_int_t)d->gfx_target_version, "name", d->name,
		"marketing_name", d->marketing_name, "num_xcc", (json_int_t)d->num_xcc,
		"num_se", (json_int_t)d->num_se, "cu_count", (json_int_t)d->cu_count,
		"device_id", (json_int_t)d->device_id, "location_id", (json_int_t)d->location_id,
		"render_minor", (json_int_t)d->drm_render_minor,
		"backend", S->bops->name, "spm_gen", spm_gen_name(g->gen),
		"options", "device", o->device_spec ? o->device_spec : "0", "duration_s", o->duration_s,
		"buffer_size", (json_int_t)g->size, "buffers",
		(json_int_t)(o->nbuffers ? o->nbuffers : FEEDER_DEFAULT_BUFFERS),
		"spm_gen", o->gen == SPM_GEN_UNKNOWN ? "auto" : spm_gen_name(o->gen),
		"hostname", host, "emulated", emu && *emu, "command_line", o->command_line);
	if (!m || !g->plan)
		return m;
	json_t *names = json_array();
	for (size_t i = 0; i < o->ncounters; i++)
		json_array_append_new(names, json_string(o->counters[i]));
	json_object_set_new(m, "layout", json_loads(g->layout_text, 0, NULL));
	json_object_set_new(m, "spm", json_pack("{s:o, s:i, s:i, s:b, s:b, s:i}", "counters", names,
		"interval", (json_int_t)g->plan->interval, "interval_requested",
		(json_int_t)g->plan->interval_requested, "per_se", o->per_se, "per_instance",
		o->per_instance, "sample_bytes", (json_int_t)g->plan->sample_bytes));
	json_object_set_new(m, "submitter", json_string(g->sops->name));
	return m;
}

json_t *ses_raw_meta(struct session *S, struct sgpu *g) { return raw_meta_json(S, g); }

int ses_open_raw(struct session *S, struct sgpu *g, char *err, size_t errlen)
{
	/* FINAL.part while recording, renamed with the rest of the set (outset.h). */
	char *part = NULL;
	if ((!S->files && out_set_new(&S->files) < 0) || !(part = out_set_part(S->files, S->o.raw_path)))
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	struct raw_writer_opts ro = {
		.path = part, .dev = g->dev, .backend = S->bops->name,
		.shape = spm_stream_shape(g->st), .buffer_size = g->size,
		.nbuffers = S->o.nbuffers ? S->o.nbuffers : FEEDER_DEFAULT_BUFFERS,
	};
	int rc = raw_writer_open(&S->raw, &ro, raw_meta_json(S, g), err, errlen);
	free(part);
	return rc;
}

json_t *ses_raw_end_json(struct session *S)
{
	const struct sgpu *g = &S->g[0];
	struct session_gpu_stats st;
	session_gpu_stats(S, 0, &st);
	bool decoded = g->layout != NULL;
	json_t *arr = json_array();
	uint64_t bytes = 0, samples = 0, lost = 0;
	for (uint32_t k = 0; k < st.nxcc; k++) {
		struct dthr_xcc x;
		dthr_stats(g->dt, k, &x);
		bytes += x.bytes;
		json_t *j = json_pack("{s:i, s:I, s:I, s:I, s:I}", "xcc", (int)k, "bytes",
				      (json_int_t)x.bytes, "regions", (json_int_t)x.parts, "loss_regions",
				      (json_int_t)x.loss_parts, "bad_regions", (json_int_t)x.bad_parts);
		if (decoded) {
			const struct session_xcc *a = &st.xcc[k];
			samples += a->samples;
			lost += a->gap_samples;
			merge(j, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
				"samples", (json_int_t)a->samples, "lost_samples", (json_int_t)a->gap_samples,
				"lost_bytes", (json_int_t)(a->gap_samples * st.sample_size), "gaps",
				(json_int_t)a->gaps, "dropped_bytes", (json_int_t)a->resync_bytes, "resyncs",
				(json_int_t)a->resyncs, "corrupt_events", (json_int_t)x.dec.corrupt_events,
				"trailing_bytes", (json_int_t)a->trailing_bytes));
			merge(j, json_pack("{s:I, s:I, s:I}", "lost_at_end_samples", (json_int_t)a->end_lost,
				"after_end_samples", (json_int_t)a->after_end, "after_end_gap_samples",
				(json_int_t)a->after_end_gap));
		}
		json_array_append_new(arr, j);
	}
	const struct feeder_stats *fs = &g->fs;
	double secs = S->t0_mono ? (double)(S->stop_mono - S->t0_mono) / 1e9 : 0;
	json_t *end = json_pack(
		"{s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:b, s:b, s:o, s:s?, s:s?, s:f, s:b}",
		"duration_s", secs, "buffers", (json_int_t)raw_writer_buffers(S->raw), "bytes",
		(json_int_t)bytes, "loss_buffers", (json_int_t)fs->loss_buffers, "bad_buffers",
		(json_int_t)fs->bad_buffers, "polls", (json_int_t)fs->polls, "overrun_polls",
		(json_int_t)fs->overrun_polls, "rotations", (json_int_t)fs->rotations, "drain_calls",
		(int)fs->drain_calls, "drain_capped", fs->drain_capped, "stall_injected", fs->stalled,
		"xcc", arr, "stopped_by", S->stop_reason, "feeder_error", fs->error ? fs->errmsg : NULL,
		"feeder_cpu_s", (double)fs->cpu_ns / 1e9,
		/* Without a layout samples cannot be told: bytes and kernel flags only. */
		"decoded", decoded);
	if (decoded)
		merge(end, json_pack("{s:I, s:i, s:I}", "samples", (json_int_t)samples,
			"sample_bytes", (int)st.sample_size, "lost_samples", (json_int_t)lost));
	/* The recording's cost, as NAME_meta.json has it (docs/formats/meta-cost.md). */
	if (end)
		json_object_set_new(end, "cost", cost_json(ses_cost(S)));
	return end;
}

/*
 * The recording's cost per stage (cost.h, docs/formats/meta-cost.md):
 * every thread's CPU from its own clock, read when it ended; the writers'
 * from their calls (session_threads.c, session_outputs.c).  Gathered once,
 * after every thread has ended, with the memcpy reference timed then.
 */
const struct cost *ses_cost(struct session *S)
{
	struct cost *c = &S->cost;
	if (c->done)
		return c;
	uint64_t feeder = 0, decode = 0, raw = 0, journal = 0, sensors = 0;
	bool any_dt = false;
	for (size_t i = 0; i < S->ng; i++) {
		struct sgpu *g = &S->g[i];
		if (g->have_fs) {
			c->bytes += g->fs.bytes;
			feeder += g->fs.cpu_ns;
			journal += g->fs.journal_cpu_ns;
		}
		if (g->dt && g->have_fs) {
			uint64_t t, p;
			dthr_cpu(g->dt, &t, &p);
			decode += t > p ? t - p : 0;
			raw += p;
			any_dt = true;
		}
		if (g->smi) {
			struct smi_sampler_stats ss;
			smi_sampler_get_stats(g->smi, &ss);
			sensors += ss.cpu_ns;
		}
	}
	if (S->started) {
		cost_add(c, "feeder", feeder);
		if (any_dt)
			cost_add(c, "decode", decode);
		if (S->o.raw_path)
			cost_add(c, "writer:raw", raw);
		for (size_t k = 0; k < S->nw; k++) {
			char name[40];
			snprintf(name, sizeof(name), "writer:%s", S->wops[k]->name);
			cost_add(c, name, S->wcpu_ns[k]);
		}
		if (journal)
			cost_add(c, "journal", journal);
		for (size_t i = 0; i < S->ng; i++)
			if (S->g[i].smi) {
				cost_add(c, "sensors", sensors);
				break;
			}
		if (S->mk)
			cost_add(c, "markers", S->mk_cpu_ns);
		cost_add(c, "clock", S->clock_cpu_ns);
	}
	cost_finish(c);
	return c;
}

const struct cost *session_cost(struct session *S)
{
	return S->stopped ? ses_cost(S) : NULL;
}
