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
#include "collector/lib/cost.h"
#include "log.h"
#include "spm/plan.h"

/* A full output queue for 5 % of the run (at least 0.1 s) means the writer was the bottleneck. */
static uint64_t writer_behind_ns(double secs)
{
	uint64_t share = (uint64_t)(secs * 0.05e9);
	return share > 100000000u ? share : 100000000u;
}

/*
 * The one-line verdict: "lossless", or how many samples were lost, why
 * (the kind of loss the accounting shows), and what to change.  The count
 * is the decoder's (timestamp gaps), the same rule as the live line.
 */
static void verdict(const char *who, const struct session_gpu_stats *st, double secs, bool cut, bool meta)
{
	uint64_t samples = 0, lost = 0, flags = 0, resync = 0;
	for (uint32_t k = 0; k < st->nxcc; k++) {
		samples += st->xcc[k].samples;
		lost += st->xcc[k].gap_samples;
		flags += st->xcc[k].loss_flags;
		resync += st->xcc[k].resync_bytes;
	}
	if (!samples && !lost) {
		/* Nothing decoded is no proof of nothing lost: say what is known. */
		fprintf(stderr, "spmtap record: WARNING: %sno SPM sample was recorded\n", who);
		return;
	}
	/* The counts below are the stream's; an output that failed holds fewer, so "lossless" alone would lie. */
	if (st->rows_known && st->rows_written < samples) {
		/* What the last flush that succeeded put in the files; the rest may be partly there. */
		char held[96];
		if (st->rows_written)
			snprintf(held, sizeof(held), "every output holds at least %" PRIu64 " of the", st->rows_written);
		else
			snprintf(held, sizeof(held), "the outputs hold only part of the");
		fprintf(stderr, "spmtap record: WARNING: %s%s %" PRIu64 " samples%s: %s. The stream itself:\n", who,
			held, samples, meta ? " (the metadata's extra.streams[].rows counts the rows known to be "
			"written)" : "", cut ? "the recording failed (the error below), and what was decoded after "
			"that is not in them" : "some were decoded but not written");
	}
	else if (cut && !st->rows_known)
		fprintf(stderr, "spmtap record: WARNING: %sthe output may end before the stream: the recording "
			"failed (the error below). The stream itself:\n", who);
	if (!lost && !resync) {
		fprintf(stderr, "spmtap record: %slossless: %" PRIu64 " samples, none missing\n", who, samples);
		/* Gen B flags a region that filled while its ring kept the data: not a loss. */
		if (flags)
			pr_info("record", "%skernel flagged %" PRIu64 " region(s), nothing missing", who, flags);
		return;
	}
	double pct = samples + lost ? 100.0 * (double)lost / (double)(samples + lost) : 0.0;
	char why[320], fix[256];
	if (st->journal_read_failed) {
		/* First: it is the host's loss, and the other signs (overrun polls) follow from it. */
		snprintf(why, sizeof(why), "%" PRIu64 " buffer(s) of the journal (%.1f MB) could not be read back: "
			 "the host's disk or file system, not the kernel (the journal's warnings say why; %" PRIu64
			 " poll(s) also found no free buffer)", st->journal_read_failed,
			 (double)st->journal_read_lost_bytes / 1e6, st->overrun_polls);
		snprintf(fix, sizeof(fix), "checking the disk of the output directory (dmesg), or a --spill-mem "
			 "that keeps the backlog in memory");
	} else if (st->overrun_polls && st->sink_wait_ns >= writer_behind_ns(secs)) {
		snprintf(why, sizeof(why), "the writer fell behind (output queue full for %.1f s, %" PRIu64
			 " poll(s) found no free buffer, so the kernel dropped what it could not hold)",
			 (double)st->sink_wait_ns / 1e9, st->overrun_polls);
		snprintf(fix, sizeof(fix), "a faster disk, fewer -f formats (csv alone is the cheapest, "
			 "sqlite the dearest), a longer --interval or fewer counters");
	} else if (st->overrun_polls) {
		snprintf(why, sizeof(why), "the decoder fell behind (%" PRIu64 " of %" PRIu64 " polls found no "
			 "free buffer, so the kernel dropped what it could not hold)", st->overrun_polls,
			 st->polls);
		snprintf(fix, sizeof(fix), "a longer --interval, fewer counters, or more --buffers");
	} else if (lost) {
		snprintf(why, sizeof(why), "the kernel could not hold the data between two polls (%" PRIu64
			 " region(s) flagged; a free buffer was always ready; polls up to %.1f ms apart, the "
			 "longest SET_DEST_BUF call %.1f ms)", flags, (double)st->poll_gap_max_ns / 1e6,
			 (double)st->rotate_max_ns / 1e6);
		snprintf(fix, sizeof(fix), "a longer --interval or fewer counters (a lower data rate), "
			 "a larger --buffer-size, or a less loaded CPU (the poll thread ran late)");
	} else {
		snprintf(why, sizeof(why), "%" PRIu64 " bytes of cut samples were dropped at resync", resync);
		snprintf(fix, sizeof(fix), "a longer --interval or fewer counters");
	}
	fprintf(stderr, "spmtap record: WARNING: %sDATA LOSS: lost %" PRIu64 " of %" PRIu64
		" samples (%.1f %%) because %s; try %s\n", who, lost, samples + lost, pct, why, fix);
}

/* "TCC_HIT[3]" and "SQ_WAVES[se1]" are cells of TCC_HIT and SQ_WAVES. */
static const struct spm_counter *column_counter(const struct spm_plan *p, const char *col)
{
	char base[96];
	snprintf(base, sizeof(base), "%s", col);
	base[strcspn(base, "[")] = 0;
	const struct spm_counter *c = NULL;
	if (p && spm_catalog_lookup(p->cat, base, &c, NULL, 0) < 0)
		return NULL;
	return c;
}

/*
 * Saturated cells per counter, and the interval that would have avoided
 * them: the catalog's peak where it has one; otherwise estimated from the
 * observed values (decode_thread.c, dthr_saturation_interval).
 */
static void saturation(struct session *S, size_t i, const char *who, const struct session_gpu_stats *st)
{
	uint64_t rows = 0;
	for (uint32_t x = 0; x < st->nxcc; x++)
		rows += st->xcc[x].samples;
	uint64_t n;
	const char *name;
	for (uint32_t c = 0; (name = session_gpu_column(S, i, c, 0, &n)); c++) {
		uint64_t cells = n;
		for (uint32_t x = 1; x < st->nxcc; x++) {
			session_gpu_column(S, i, c, x, &n);
			cells += n;
		}
		if (!cells)
			continue;
		const struct spm_counter *ctr = column_counter(st->plan, name);
		unsigned int width = ctr ? spm_counter_width(ctr) : 16;
		const char *pwhy = NULL;
		double peak = ctr ? spm_counter_peak(ctr, &pwhy) : 0;
		uint32_t iv = st->interval, safe;
		char advice[320];
		if (peak > 0) {
			safe = spm_saturation_safe_interval(peak, width, SPM_INTERVAL_STEP, SPM_INTERVAL_MAX);
			snprintf(advice, sizeof(advice), "%s; --interval %u or shorter avoids it", pwhy, safe);
		} else {
			char base[96];
			snprintf(base, sizeof(base), "%s", name);
			base[strcspn(base, "[")] = 0;
			double limit = width >= 32 ? 4294967295.0 : (double)((1u << width) - 1u);
			safe = session_gpu_saturation_interval(S, i, base);
			const char *how = "from the observed values: the top of their distribution mirrored "
					  "above the limit";
			if (!safe) {
				/* Not observed (a 32-bit counter): 25 % headroom over the limit reached. */
				safe = (uint32_t)((double)iv / 1.25);
				safe -= safe % SPM_INTERVAL_STEP;
				how = "25 % headroom over the limit reached";
			}
			if (safe < SPM_INTERVAL_MIN)
				safe = SPM_INTERVAL_MIN;
			snprintf(advice, sizeof(advice), "a %u-bit slot reached %.0f per sample at interval %u "
				 "(%.2f or more per cycle, the true count unknown); --interval %u or shorter "
				 "should avoid it (%s)", width, limit, iv, limit / iv, safe, how);
		}
		fprintf(stderr, "spmtap record: WARNING: %s%s saturated in %" PRIu64 " of %" PRIu64
			" cells (%.1f %%, empty in the outputs): %s\n", who, name, cells, rows,
			rows ? 100.0 * (double)cells / (double)rows : 0.0, advice);
	}
}

/*
 * Missed sensor deadlines, by cause: a deadline that passed before the
 * sampler woke is the scheduler's (a busy or preempted CPU), and a longer
 * interval would not help; one that passed during a sample is the read's.
 */
static void smi_missed(const char *who, const struct session_gpu_stats *st)
{
	if (!st->smi_missed)
		return;
	uint64_t deadlines = st->smi_samples + st->smi_missed, late = st->smi_missed_late;
	uint64_t read = st->smi_missed - late;
	char why[480], a[200], b[200];
	snprintf(a, sizeof(a), "the sampler woke up to %.1f ms late (a busy or preempted CPU; SPMTAP_SMI_RT=1 "
		 "gives it real-time priority where allowed, docs/power.md)", (double)st->smi_max_late_ns / 1e6);
	snprintf(b, sizeof(b), "a sample took up to %.1f ms, past the next deadline (a slow read, or the CPU "
		 "taken away during it); if the read is slow, a longer --smi-interval or fewer sensors keeps up",
		 (double)st->smi_max_read_ns / 1e6);
	if (!read)
		snprintf(why, sizeof(why), "%s", a);
	else if (!late)
		snprintf(why, sizeof(why), "%s", b);
	else
		snprintf(why, sizeof(why), "%" PRIu64 " because %s, %" PRIu64 " because %s", late, a, read, b);
	fprintf(stderr, "spmtap record: %s%" PRIu64 " of %" PRIu64 " sensor deadlines missed (%.1f %%): %s\n", who,
		st->smi_missed, deadlines, 100.0 * (double)st->smi_missed / (double)deadlines, why);
}

void rec_summary_gpu(struct session *S, size_t i, double secs, bool cut)
{
	struct session_gpu_stats st;
	if (session_gpu_stats(S, i, &st) < 0)
		return;
	char who[32];
	snprintf(who, sizeof(who), "GPU %u: ", st.gpu);
	if (st.sample_size)
		verdict(who, &st, secs, cut, true);
	saturation(S, i, who, &st);
	smi_missed(who, &st);
}

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

static void summary_samples(const struct session_gpu_stats *st, const char *dest, double secs, bool cut)
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
	if (rec_stop_signal && !cut)
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
		verdict("", st, secs, cut, false);
		return;
	}
	fprintf(stderr, "spmtap record: WARNING: DATA LOSS: ~%" PRIu64 " samples (%" PRIu64
		" bytes) lost, from the timestamps; %" PRIu64 " region(s) flagged by the kernel\n",
		lost, lost * sb, flagged);
	for (uint32_t k = 0; k < st->nxcc; k++) {
		const struct session_xcc *a = &st->xcc[k];
		if (!a->gap_samples && !a->loss_flags && !a->resync_bytes)
			continue;
		char how[200];
		if (a->end_lost)
			snprintf(how, sizeof(how), ": ~%" PRIu64 " in %" PRIu64 " gap(s) and ~%" PRIu64 " after its "
				 "last sample (the stream stopped short of the end)", a->gap_samples - a->end_lost,
				 a->gaps, a->end_lost);
		else
			snprintf(how, sizeof(how), " in %" PRIu64 " gap(s)", a->gaps);
		fprintf(stderr, "spmtap record:   xcc %u: %" PRIu64 " samples written, ~%" PRIu64 " lost%s, %" PRIu64
			" partial bytes dropped, %" PRIu64 " resync(s), %" PRIu64 " loss-flagged region(s)\n", k,
			a->samples, a->gap_samples, how, a->resync_bytes, a->resyncs, a->loss_flags);
	}
	verdict("", st, secs, cut, false);
}

void rec_summary_stream(struct session *S, const struct rec_opts *o, double secs, bool cut)
{
	struct session_gpu_stats st;
	if (session_gpu_stats(S, 0, &st) < 0)
		return;
	const char *dest = o->out && strcmp(o->out, "-") ? o->out : "standard output";
	if (st.sample_size) {
		summary_samples(&st, dest, secs, cut);
		saturation(S, 0, "", &st);
	} else {
		summary_bytes(&st, dest, secs);
	}
	if (st.overrun_polls)
		fprintf(stderr, "spmtap record: %" PRIu64 " of %" PRIu64 " polls found no free buffer "
			"(consumer overrun): the kernel kept filling the armed buffer\n", st.overrun_polls,
			st.polls);
	/* Normal while the sampler runs until RELEASE; the end record keeps it. */
	if (st.drain_capped)
		pr_info("record", "the stop drain ended after %u calls with data still arriving",
			st.drain_calls);
	rec_summary_cost(S);
}

void rec_summary_cost(struct session *S)
{
	const struct cost *c = session_cost(S);
	char line[512];
	if (!c)
		return;
	cost_line(c, line, sizeof(line));
	if (line[0])
		fprintf(stderr, "spmtap record: cost: %s\n", line);
}
