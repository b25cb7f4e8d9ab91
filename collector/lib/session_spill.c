/* SPDX-License-Identifier: MIT */
/*
 * The session's side of the spill queue (feeder.h, collector/lib/spill.c;
 * docs/architecture.md "Back-pressure policy"): each GPU's budget and
 * journal, the catch-up after the stop, and accounting[g].spill.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/lib/session_priv.h"

const struct feeder_spill *ses_spill_opts(struct session *S, struct sgpu *g)
{
	const struct session_opts *o = &S->o;
	if (!o->spill_mem || !g->st)
		return NULL;
	size_t nspm = 0;
	for (size_t i = 0; i < S->ng; i++)
		nspm += S->g[i].st != NULL || S->g[i].f != NULL;
	struct feeder_spill *sp = &g->spill;
	memset(sp, 0, sizeof(*sp));
	/* One budget for the recording, shared by its GPUs. */
	sp->mem_budget = o->spill_mem / (nspm ? nspm : 1);
	if (o->journal_base) {
		if (S->ng > 1)
			snprintf(g->journal, sizeof(g->journal), "%s_gpu%u_journal.raw", o->journal_base,
				 g->dev->index);
		else
			snprintf(g->journal, sizeof(g->journal), "%s_journal.raw", o->journal_base);
		sp->journal = g->journal;
		const struct spm_stream_shape *shape = spm_stream_shape(g->st);
		const struct spm_device *d = g->dev;
		sp->hdr = (struct rawfile_header){
			.gpu_id = d->gpu_id, .node = d->node, .gfx_target_version = d->gfx_target_version,
			.num_xcc = d->num_xcc, .num_se = d->num_se, .gen = (uint32_t)shape->gen,
			.buffer_size = g->size,
			.nbuffers = o->nbuffers ? o->nbuffers : FEEDER_DEFAULT_BUFFERS,
			.start_boottime_ns = (uint64_t)ses_now_ns(CLOCK_BOOTTIME),
		};
		snprintf(sp->hdr.backend, sizeof(sp->hdr.backend), "%.8s", S->bops->name);
		json_t *m = ses_raw_meta(S, g);
		if (m)
			json_object_set_new(m, "journal", json_true());
		free(g->journal_meta);
		g->journal_meta = m ? json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		json_decref(m);
		sp->meta_json = g->journal_meta;
		sp->keep = o->keep_raw;
		/* An escape hatch for a file system whose O_DIRECT takes the writes but misbehaves. */
		const char *dio = getenv("SPMTAP_JOURNAL_DIRECT");
		sp->buffered = dio && !strcmp(dio, "0");
	}
	/* The pre-program buffer is dropped by the decode thread (prime.h): never journalled. */
	sp->skip_seq0 = g->plan != NULL;
	return sp;
}

void ses_catch_up(struct session *S)
{
	if (!S->o.spill_mem)
		return;
	int64_t t0 = ses_now_ns(CLOCK_MONOTONIC);
	uint64_t taken0 = 0;
	bool first = true;
	for (;;) {
		struct session_catchup c = { 0 };
		bool done = true;
		uint64_t taken = 0;
		for (size_t i = 0; i < S->ng; i++) {
			struct sgpu *g = &S->g[i];
			if (!g->f || !g->dt)
				continue;
			struct feeder_backlog b;
			feeder_backlog(g->f, &b);
			if (!g->spill.mem_budget)
				continue;
			done = done && b.done;
			c.left_bytes += b.queued_bytes;
			c.journal_bytes += b.journal_bytes;
			taken += b.taken_bytes;
		}
		if (first)
			taken0 = taken;
		first = false;
		if (done)
			return;
		c.seconds = (double)(ses_now_ns(CLOCK_MONOTONIC) - t0) / 1e9;
		c.decoded_bytes = taken - taken0;
		if (S->o.on_catchup && S->o.on_catchup(&c, S->o.user)) {
			S->abandoned = true;
			for (size_t i = 0; i < S->ng; i++)
				if (S->g[i].f)
					feeder_abandon(S->g[i].f);
			return;
		}
		ses_sleep_ms(200);
	}
}

void ses_spill_settle(struct session *S)
{
	if (!S->abandoned)
		return;
	/* An abandon that found nothing left (the decoders had just caught up) cost nothing. */
	bool left = false;
	for (size_t i = 0; i < S->ng; i++) {
		const struct feeder_stats *fs = &S->g[i].fs;
		if (S->g[i].have_fs && (fs->journal_left_bytes || fs->abandoned_bytes))
			left = true;
	}
	S->abandoned = left;
}

json_t *ses_spill_json(struct session *S, size_t i)
{
	struct session_gpu_stats st;
	if (session_gpu_stats(S, i, &st) < 0 || !st.spill)
		return NULL;
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s?, s:s?, s:s?}", "mem_peak_bytes",
			 (json_int_t)st.spill_mem_peak, "cooled_buffers", (json_int_t)st.spill_cooled,
			 "packed_buffers", (json_int_t)st.spill_packed,
			 "journal_bytes", (json_int_t)st.journal_bytes, "spilled_bytes",
			 (json_int_t)st.spilled_bytes, "abandoned_bytes", (json_int_t)st.abandoned_bytes,
			 "journal_left_bytes", (json_int_t)st.journal_left_bytes,
			 "read_failed_buffers", (json_int_t)st.journal_read_failed,
			 "read_lost_bytes", (json_int_t)st.journal_read_lost_bytes,
			 "journal", st.journal[0] ? st.journal : NULL, "journal_io",
			 st.journal_io[0] ? st.journal_io : NULL, "loss_reason",
			 st.loss_reason[0] ? st.loss_reason : NULL);
}
