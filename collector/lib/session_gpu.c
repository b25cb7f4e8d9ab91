/* SPDX-License-Identifier: MIT */
/* One GPU of a session: plan, stream, decoder, streams, sensors; its statistics (session_priv.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/lib/decode_thread.h"
#include "collector/lib/session_priv.h"
#include "collector/lib/smi_source.h"
#include "collector/lib/timebase.h"
#include "collector/lib/window_loss.h"
#include "collector/lib/write_raw.h"
#include "decoder/layout.h"
#include "log.h"
#include "spm/plan.h"
#include "spm/submit.h"

/* Each warning line of spm_plan_warnings as its own log line. */
static void warn_lines(const char *label, char *text)
{
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		pr_warn("record", "%s: %s", label, l);
}

/*
 * Before touching SPM: counters this plan will saturate (per GPU), and, at
 * the last GPU, a data rate of all GPUs together above what the collector is
 * known to sustain with the chosen formats (spm/plan.h, docs/bench.md).
 */
static void plan_warnings(struct session *S, struct sgpu *g, enum spm_gfx gfx, const char *label)
{
	double sustained = SPM_SUSTAINED_MBS_CSV;
	for (size_t k = 0; k < S->o.nformats; k++)
		if (S->o.formats[k] && !strcmp(S->o.formats[k]->name, "sqlite"))
			sustained = SPM_SUSTAINED_MBS_SQLITE;
	char text[4096];
	/* Saturation only: the rate is judged for the machine below. */
	if (spm_plan_warnings(g->plan, spm_gfx_sclk_ghz(gfx), 1e300, text, sizeof(text)))
		warn_lines(label, text);
	if (g != &S->g[S->ng - 1])
		return;
	double mbs = 0;
	for (size_t i = 0; i < S->ng; i++) {
		enum spm_gfx f;
		if (S->g[i].plan && spm_gfx_parse(S->g[i].dev->gfx, &f, NULL, 0) == 0)
			mbs += spm_plan_mbs(S->g[i].plan, spm_gfx_sclk_ghz(f));
	}
	if (S->ng == 1) {
		/* One GPU: its own sentence names the interval that keeps under the estimate. */
		if (spm_plan_warnings(g->plan, spm_gfx_sclk_ghz(gfx), sustained, text, sizeof(text))) {
			char *rate = strstr(text, "the data rate");
			if (rate)
				warn_lines(label, rate);
		}
	} else if (mbs > sustained) {
		pr_warn("record", "the data rate of the %zu GPUs, %.1f MB/s at their assumed peak SCLK, "
			"exceeds the %.0f MB/s this collector is known to sustain on a 2-core host (docs/bench.md): "
			SPM_RATE_ABOVE_SUSTAINED "; a longer --interval or fewer counters lowers it", S->ng, mbs,
			sustained);
	}
}

/* The counters' plan, layout and PM4 programs: everything decided before touching SPM. */
static int gpu_plan(struct session *S, struct sgpu *g, const char *label, char *err, size_t errlen)
{
	const struct session_opts *o = &S->o;
	struct spm_geometry geo;
	enum spm_gfx gfx;
	char e[SES_ERRLEN] = "";
	int rc = spm_geometry_from_device(g->dev, &geo, &gfx, e, sizeof(e));
	if (rc < 0)
		return spmtap_seterr(err, errlen, -rc, "%s: %s", label, e);
	struct spm_plan_request req = { .gfx = g->dev->gfx, .geo = geo, .counters = o->counters,
					.ncounters = o->ncounters,
					.interval = o->interval ? o->interval : 32768u };
	rc = spm_plan_create(&req, &g->plan, e, sizeof(e));
	/* Everything the planner refuses is something the user asked for: EINVAL. */
	if (rc < 0)
		return spmtap_seterr(err, errlen, rc == -ENOMEM ? ENOMEM : EINVAL, "%s: %s", label,
				     e[0] ? e : spmtap_strerror(rc));
	plan_warnings(S, g, gfx, label);
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
	return 0;
}

int ses_gpu_prepare(struct session *S, struct sgpu *g, char *err, size_t errlen)
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
	if (!o->ncounters && !o->raw_path)
		return 0; /* sensors only */
	char e[SES_ERRLEN] = "";
	if (o->ncounters)
		rc = gpu_plan(S, g, label, err, errlen);
	if (rc < 0)
		return rc;
	struct spm_stream_opts so = { .gen_override = o->gen };
	rc = spm_stream_open(&g->st, S->bops, S->b, g->dev, &so, e, sizeof(e));
	/* The kernel's EINVAL (no SPM ioctl, spm_explain says) is the device's, not a bad request. */
	if (rc < 0)
		return spmtap_seterr(err, errlen, rc == -EINVAL ? ENODEV : -rc, "%s: %s", label,
				     e[0] ? e : spmtap_strerror(rc));
	g->gen = spm_stream_gen(g->st);
	const struct spm_stream_shape *shape = spm_stream_shape(g->st);
	g->nstreams = shape->nstreams;
	if (g->nstreams > DEC_MAX_XCC)
		return spmtap_seterr(err, errlen, ENOTSUP, "%s: %u XCC streams; at most %u", label,
				     g->nstreams, DEC_MAX_XCC);
	g->size = feeder_round_size(o->buffer_size ? o->buffer_size : feeder_default_size(g->dev->num_xcc),
				    g->dev->num_xcc, g->size_note, sizeof(g->size_note));
	if (o->raw_path && (rc = ses_open_raw(S, g, err, errlen)) < 0)
		return rc;
	struct dthr_opts dto = {
		.layout = g->layout, .shape = *shape, .per_se = o->per_se,
		.per_instance = o->per_instance, .requests = o->counters, .nreq = o->ncounters,
		.sink = ses_spm_sink, .sink_user = g,
		/* With counters the first buffer is from before the program (prime.h). */
		.skip_first = g->plan != NULL,
		.part = S->raw ? raw_writer_part : NULL, .part_user = S->raw,
	};
	rc = dthr_open(&g->dt, &dto, e, sizeof(e));
	if (rc < 0)
		return spmtap_seterr(err, errlen, -rc, "%s: %s", label, e);
	if (!g->plan)
		return 0; /* nothing decoded: no series */
	g->nseries = g->nstreams;
	uint32_t nc = dthr_ncols(g->dt);
	const struct dec_column *dc = dthr_columns(g->dt);
	g->cols = calloc(nc ? nc : 1, sizeof(*g->cols));
	g->after_end_sat = calloc((size_t)DEC_MAX_XCC * (nc ? nc : 1), sizeof(*g->after_end_sat));
	if (!g->cols || !g->after_end_sat)
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

/* "power_cur, energy" for the metrics in mask. */
static void smi_names(uint32_t mask, char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = 0;
	for (int m = 0; m < SMI_M_COUNT && off < len; m++)
		if (mask & SMI_M_BIT(m))
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? ", " : "",
						smi_metric_name((enum smi_metric)m));
}

/* What the GPU has of the same kind as each missing metric: power for power, and so on. */
static uint32_t smi_alternatives(uint32_t missing, uint32_t has)
{
	static const uint32_t kinds[] = {
		SMI_M_BIT(SMI_M_POWER_AVG) | SMI_M_BIT(SMI_M_POWER_CUR),
		SMI_M_BIT(SMI_M_TEMP_EDGE) | SMI_M_BIT(SMI_M_TEMP_HOTSPOT) | SMI_M_BIT(SMI_M_TEMP_MEM) |
			SMI_M_BIT(SMI_M_TEMP_VRSOC),
		SMI_M_BIT(SMI_M_GFX_ACTIVITY) | SMI_M_BIT(SMI_M_UMC_ACTIVITY) | SMI_M_BIT(SMI_M_MM_ACTIVITY),
		SMI_M_BIT(SMI_M_GFXCLK) | SMI_M_BIT(SMI_M_SOCCLK) | SMI_M_BIT(SMI_M_UCLK),
		SMI_M_BIT(SMI_M_ENERGY),
	};
	uint32_t out = 0;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (missing & kinds[k])
			out |= has & kinds[k];
	return out;
}

int ses_gpu_smi(struct session *S, struct sgpu *g)
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
	if (m != o->smi_metrics) {
		/* Name what is missing and what the GPU has instead, so the fix is one flag away. */
		char miss[256], has[256], try[256];
		smi_names(o->smi_metrics & ~g->probe.metrics, miss, sizeof(miss));
		smi_names(g->probe.metrics, has, sizeof(has));
		smi_names(smi_alternatives(o->smi_metrics & ~g->probe.metrics, g->probe.metrics), try,
			  sizeof(try));
		snprintf(g->smi_note, sizeof(g->smi_note), "GPU %u has no %s (%s); it has %s%s%s",
			 g->dev->index, miss, g->probe.ops->name, has[0] ? has : "no sensor",
			 try[0] ? ": try --smi " : "", try);
		/* Nothing at all would be recorded for this GPU: refuse (the note is the error). */
		if (!m && !o->ncounters)
			return -ENODATA;
		if (!m)
			pr_warn("record", "%s; recording its counters without sensors", g->smi_note);
		else
			pr_info("record", "%s", g->smi_note);
		if (!m)
			return 0;
	}
	uint64_t iv = o->smi_interval_ns ? o->smi_interval_ns : 1000000;
	struct smi_sampler_opts so = {
		.ops = g->probe.ops, .src = g->probe.inst, .metrics = m,
		.ts_domain = g->probe.src[g->probe.selected].ts_domain,
		.interval_ns = iv,
		/* By the GPU's place on the node, so that samplers of other ranks spread too. */
		.phase_ns = o->ndev ? iv * (g->dev->index % o->ndev) / o->ndev : 0,
		.offsets = o->smi_offsets, .stream_id = S->next_stream_id++, .gpu = g->dev->index,
		.gpu_id = g->dev->gpu_id, .device_name = g->devname, .on_chunk = ses_smi_sink, .arg = g,
	};
	return smi_sampler_create(&g->smi, &so);
}

int session_gpu_stats(const struct session *S, size_t i, struct session_gpu_stats *st)
{
	if (i >= S->ng)
		return -EINVAL;
	const struct sgpu *g = &S->g[i];
	memset(st, 0, sizeof(*st));
	st->gpu = g->dev->index;
	st->nxcc = g->nstreams;
	st->ncols = g->dt ? dthr_ncols(g->dt) : 0;
	st->sample_size = g->dt ? dthr_sample_bytes(g->dt) : 0;
	st->plan = g->plan;
	st->interval = g->plan ? g->plan->interval : 0;
	/* Rows every writer had flushed when last asked (the writer thread's count; read after it ended). */
	st->rows_known = S->nw > 0;
	for (size_t k = 0; k < S->nmst; k++)
		if (S->mst[k]->gpu == st->gpu && !strcmp(S->mst[k]->source, "spm"))
			st->rows_written += S->rows_flushed[k];
	uint64_t fed = 0;
	uint32_t sb = g->dt ? dthr_sample_bytes(g->dt) : 0;
	for (uint32_t x = 0; x < g->nstreams && x < 16; x++) {
		struct dthr_xcc s;
		if (dthr_stats(g->dt, x, &s) < 0)
			continue;
		struct session_xcc *a = &st->xcc[x];
		/* Without counters nothing is decoded: the bytes are the parts'. */
		a->bytes = g->layout ? s.dec.bytes_fed : s.bytes;
		/* Written: what was decoded up to the recording's end (session.h). */
		a->after_end = atomic_load(&((struct sgpu *)g)->after_end[x]);
		a->samples = s.dec.samples - a->after_end;
		a->sample_bytes = a->samples * sb;
		a->after_end_gap = atomic_load(&((struct sgpu *)g)->after_end_gap[x]);
		a->gap_samples = s.dec.lost_samples_est - a->after_end_gap;
		/*
		 * A stream whose last sample came before the end lost the samples
		 * due up to it: the counters ran until the stop program.  Known
		 * only once every byte was decoded (not after an abandoned catch-up).
		 */
		int64_t end = session_end_boottime(S);
		if (end != INT64_MAX && g->have_fs && !g->fs.journal_left_bytes && !g->fs.abandoned_bytes &&
		    !a->after_end)
			a->end_lost = wloss_tail(atomic_load(&((struct sgpu *)g)->last_host[x]),
						 atomic_load(&((struct sgpu *)g)->period_ps[x]), end);
		a->gap_samples += a->end_lost;
		a->loss_flags = s.loss_parts + s.bad_parts;
		/* a journal read-back failure flagged every stream once: the host's loss, not the kernel's */
		if (g->have_fs)
			a->loss_flags -= a->loss_flags < g->fs.journal_read_failed ? a->loss_flags
										  : g->fs.journal_read_failed;
		a->prestart_bytes = s.skipped_start;
		a->resync_bytes = s.dec.dropped_bytes - s.skipped_start;
		a->trailing_bytes = s.dec.partial_bytes;
		a->gaps = s.dec.gaps;
		a->resyncs = s.resyncs;
		a->regions = s.parts;
		st->sink_wait_ns += s.sink_wait_ns;
		fed += a->bytes;
	}
	if (g->have_fs) {
		/* What an abandoned catch-up left in the journal (or lost) was never fed either. */
		uint64_t unfed = fed + g->fs.journal_left_bytes + g->fs.abandoned_bytes +
				 g->fs.journal_read_lost_bytes;
		st->first_buffer_bytes = g->fs.bytes > unfed ? g->fs.bytes - unfed : 0;
		st->overrun_polls = g->fs.overrun_polls;
		st->polls = g->fs.polls;
		st->poll_gap_max_ns = g->fs.gap_max_ns;
		st->rotate_max_ns = g->fs.rotate_max_ns;
		st->buffers = g->fs.retired;
		st->loss_buffers = g->fs.loss_buffers;
		st->bad_buffers = g->fs.bad_buffers;
		st->drain_calls = g->fs.drain_calls;
		st->drain_capped = g->fs.drain_capped;
		const struct feeder_stats *fs = &g->fs;
		st->spill = g->spill.mem_budget > 0;
		st->spilled_bytes = fs->spilled_bytes;
		st->spill_mem_peak = fs->spill_mem_peak;
		st->spill_cooled = fs->spill_cooled;
		st->spill_packed = fs->spill_packed;
		st->journal_bytes = fs->journal_bytes;
		st->journal_cpu_ns = fs->journal_cpu_ns;
		st->abandoned_bytes = fs->abandoned_bytes;
		st->journal_left_bytes = fs->journal_left_bytes;
		st->journal_read_failed = fs->journal_read_failed;
		st->journal_read_lost_bytes = fs->journal_read_lost_bytes;
		snprintf(st->journal_io, sizeof(st->journal_io), "%s", fs->journal_io);
		/* The host lost data although it could spill: say which resource ran out. */
		if (st->spill && fs->overrun_polls)
			snprintf(st->loss_reason, sizeof(st->loss_reason), "%s%s",
				 fs->journal_error ? "journal write failed: "
				 : fs->spill_pool_full ? "memory full and the journal behind"
						       : "the journal thread fell behind (CPU)",
				 fs->journal_error ? fs->journal_errmsg : "");
		if (fs->journal_kept)
			snprintf(st->journal, sizeof(st->journal), "%s", g->journal);
	}
	if (g->smi) {
		struct smi_sampler_stats ss;
		smi_sampler_get_stats(g->smi, &ss);
		/* Written: the readings after the recording's end are left out (session.h). */
		st->smi_after_end = atomic_load(&((struct sgpu *)g)->smi_after_end);
		st->smi_samples = ss.samples - st->smi_after_end;
		st->smi_missed = ss.missed_deadlines;
		st->smi_missed_late = ss.missed_late;
		st->smi_max_late_ns = ss.max_late_ns;
		st->smi_max_read_ns = ss.max_read_ns;
	}
	/* the clock thread adds pairs while the meta is rewritten during the run; the lock
	 * is not part of the session's observable state, hence the cast */
	pthread_mutex_t *tbl = (pthread_mutex_t *)&g->tb_lock;
	pthread_mutex_lock(tbl);
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
	st->tb_rejected = (uint32_t)tb_nrejected(g->tb);
	st->tb_bound_ns = tb_bound(g->tb);
	double hz;
	tb_rate(g->tb, &hz, &st->tb_ppm);
	pthread_mutex_unlock(tbl);
	return 0;
}

const char *session_gpu_column(const struct session *S, size_t i, uint32_t col, uint32_t xcc,
			       uint64_t *saturated)
{
	*saturated = 0;
	if (i >= S->ng || !S->g[i].dt || col >= dthr_ncols(S->g[i].dt))
		return NULL;
	/* The decoder counts every cell; the outputs leave out those after the recording's end. */
	uint64_t n = dthr_saturated(S->g[i].dt, xcc, col);
	uint64_t after = S->g[i].after_end_sat && xcc < DEC_MAX_XCC
				 ? atomic_load(&S->g[i].after_end_sat[(size_t)xcc * dthr_ncols(S->g[i].dt) + col])
				 : 0;
	*saturated = n > after ? n - after : 0;
	return dthr_columns(S->g[i].dt)[col].name;
}

uint32_t session_gpu_saturation_interval(const struct session *S, size_t i, const char *counter)
{
	if (i >= S->ng || !S->g[i].dt || !S->g[i].plan)
		return 0;
	return dthr_saturation_interval(S->g[i].dt, counter, S->g[i].plan->interval);
}

void ses_gpu_free(struct sgpu *g)
{
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
	free(g->journal_meta);
	spm_plan_free(g->plan);
	free(g->cols);
	free(g->after_end_sat);
	tb_free(g->tb);
	pthread_mutex_destroy(&g->tb_lock);
}
