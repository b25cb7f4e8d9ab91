/* SPDX-License-Identifier: MIT */
/*
 * What a session writes about itself (session_priv.h): the metadata every
 * output opens with, and the timebase, accounting and marker notes it ends
 * with.  The writers are opened here, every stream declared before the
 * first chunk.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/lib/marker_reader.h"
#include "collector/lib/session_priv.h"
#include "collector/lib/timebase.h"
#include "log.h"
#include "spm/plan.h"
#include "spmtap.h"

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

int ses_open_writers(struct session *S, char *err, size_t errlen)
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
		.hostname = host, .start_boottime_ns = ses_now_ns(CLOCK_BOOTTIME),
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

json_t *ses_timebase_json(struct session *S)
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

