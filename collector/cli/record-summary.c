/* SPDX-License-Identifier: MIT */
/*
 * What `spmtap record` says at the end of one GPU's stream written as a
 * tick CSV or a raw container (record.h): the figures come from the
 * session's accounting, the lost samples from the decoder's one rule.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "collector/cli/record.h"
#include "log.h"

/* No counters, no layout: what the raw container alone can say. */
static void summary_bytes(const struct session_gpu_stats *st, const char *dest, double secs)
{
	uint64_t bytes = 0;
	for (uint32_t k = 0; k < st->nxcc; k++)
		bytes += st->xcc[k].bytes;
	fprintf(stderr,
		"spmtap record: %.2f s, %" PRIu64 " bytes (%.1f MB/s), %" PRIu64
		" buffers, %u XCC region(s) -> %s\n",
		secs, bytes, secs > 0 ? (double)bytes / secs / 1e6 : 0.0, st->buffers, st->nxcc, dest);
	fprintf(stderr, "spmtap record: no counters (--spm), so no layout: bytes and the kernel's loss "
			"flags are accounted, samples are not; `spmtap record --spm NAMES --raw` "
			"records a layout\n");
	if (rec_stop_signal)
		fprintf(stderr, "spmtap record: stopped by %s; data drained and file closed\n",
			strsignal(rec_stop_signal));
	if (st->loss_buffers || st->bad_buffers)
		fprintf(stderr, "spmtap record: WARNING: DATA LOSS: %" PRIu64 " of %" PRIu64
			" buffers flagged loss by the kernel, %" PRIu64 " with untrusted framing\n",
			st->loss_buffers, st->buffers, st->bad_buffers);
}

static void summary_samples(const struct session_gpu_stats *st, const char *dest, double secs)
{
	uint64_t bytes = 0, samples = 0, lost = 0, dropped = 0, flagged = 0, after = 0;
	for (uint32_t k = 0; k < st->nxcc; k++) {
		const struct session_xcc *a = &st->xcc[k];
		bytes += a->bytes;
		samples += a->samples;
		after += a->after_end;
		lost += a->gap_samples;
		dropped += a->resync_bytes;
		flagged += a->loss_flags;
	}
	uint32_t sb = st->sample_size;
	fprintf(stderr,
		"spmtap record: %.2f s, %" PRIu64 " bytes (%.1f MB/s), %" PRIu64
		" samples of %u bytes from %u XCC stream(s), %u column(s) -> %s\n",
		secs, bytes, secs > 0 ? (double)bytes / secs / 1e6 : 0.0, samples, sb, st->nxcc,
		st->ncols, dest);
	if (rec_stop_signal)
		fprintf(stderr, "spmtap record: stopped by %s; counters stopped, data drained and %s "
			"complete\n", strsignal(rec_stop_signal), dest);
	if (after)
		fprintf(stderr, "spmtap record: %" PRIu64 " samples after the end left out (the counters ran "
			"until the stop program reached the GPU)\n", after);
	if (!lost && !dropped) {
		/* Gen B flags a region that filled while its ring kept the data. */
		if (flagged)
			fprintf(stderr, "spmtap record: the kernel flagged %" PRIu64 " full buffer region(s); "
				"the timestamps show no sample missing\n", flagged);
		return;
	}
	fprintf(stderr, "spmtap record: WARNING: DATA LOSS: ~%" PRIu64 " samples (%" PRIu64
		" bytes) lost, from timestamp gaps; %" PRIu64 " region(s) flagged by the kernel\n",
		lost, lost * sb, flagged);
	for (uint32_t k = 0; k < st->nxcc; k++) {
		const struct session_xcc *a = &st->xcc[k];
		if (!a->gap_samples && !a->loss_flags && !a->resync_bytes)
			continue;
		fprintf(stderr, "spmtap record:   xcc %u: %" PRIu64 " samples written, ~%" PRIu64
			" lost in %" PRIu64 " gap(s), %" PRIu64 " partial bytes dropped, %" PRIu64
			" resync(s), %" PRIu64 " loss-flagged region(s)\n", k, a->samples, a->gap_samples,
			a->gaps, a->resync_bytes, a->resyncs, a->loss_flags);
	}
}

void rec_summary_stream(struct session *S, const struct rec_opts *o, double secs)
{
	struct session_gpu_stats st;
	if (session_gpu_stats(S, 0, &st) < 0)
		return;
	const char *dest = o->out && strcmp(o->out, "-") ? o->out : "standard output";
	if (st.sample_size)
		summary_samples(&st, dest, secs);
	else
		summary_bytes(&st, dest, secs);
	if (st.overrun_polls)
		fprintf(stderr, "spmtap record: %" PRIu64 " of %" PRIu64 " polls found no free buffer "
			"(consumer overrun): the kernel kept filling the armed buffer\n", st.overrun_polls,
			st.polls);
	/* Normal while the sampler runs until RELEASE; the end record keeps it. */
	if (st.drain_capped)
		pr_info("record", "the stop drain ended after %u calls with data still arriving",
			st.drain_calls);
}
