/* SPDX-License-Identifier: MIT */
/*
 * spmtap record --raw without --spm: stream whatever the RLC produces into
 * the raw container, without programming counters, while the emulator's
 * test-pattern checker counts what went missing.  This is the acquisition
 * path's end-to-end check; counter recording is record-spm.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/cli/record.h"
#include "decoder/pattern.h"
#include "log.h"

static json_t *pattern_json(const struct dec_pat_stats *p)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:i}",
			 "good_lines", (json_int_t)p->good_lines, "lost_lines", (json_int_t)p->lost_lines,
			 "lost_bytes", (json_int_t)p->lost_bytes, "dup_lines", (json_int_t)p->dup_lines,
			 "corrupt_lines", (json_int_t)p->corrupt_lines,
			 "ts_backwards", (json_int_t)p->ts_backwards,
			 "dropped_partial_bytes", (json_int_t)p->dropped_partial,
			 "next_seq", (json_int_t)p->next_seq, "bytes_checked", (json_int_t)p->bytes_fed,
			 "trailing_partial_bytes", (int)p->carry);
}

static json_t *end_json(const struct rec_totals *t, const struct feeder_stats *fs,
			const struct dec_pat *pat, uint32_t nregions, double secs)
{
	json_t *x = json_array();
	uint64_t bytes = 0;
	for (uint32_t k = 0; k < nregions; k++) {
		bytes += t->bytes[k];
		json_array_append_new(
			x, json_pack("{s:i, s:I, s:I, s:I, s:I, s:o}", "xcc", (int)k, "bytes",
				     (json_int_t)t->bytes[k], "regions", (json_int_t)t->regions[k],
				     "loss_regions", (json_int_t)t->loss_regions[k], "bad_regions",
				     (json_int_t)t->bad_regions[k], "pattern",
				     pattern_json(dec_pat_stats(pat, k))));
	}
	struct dec_pat_stats tot;
	dec_pat_total(pat, &tot);
	return json_pack(
		"{s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:b, s:b, s:b, s:I, s:o, s:s?, s:s?,"
		" s:s?, s:f}",
		"duration_s", secs, "buffers", (json_int_t)t->buffers, "bytes", (json_int_t)bytes,
		"loss_buffers", (json_int_t)fs->loss_buffers, "bad_buffers", (json_int_t)fs->bad_buffers,
		"polls", (json_int_t)fs->polls, "overrun_polls", (json_int_t)fs->overrun_polls,
		"rotations", (json_int_t)fs->rotations, "drain_calls", (int)fs->drain_calls,
		"drain_capped", fs->drain_capped, "stall_injected", fs->stalled,
		"pattern_detected", dec_pat_detected(pat), "pattern_lost_bytes",
		(json_int_t)tot.lost_bytes, "xcc", x,
		"stopped_by", rec_stop_signal ? strsignal(rec_stop_signal) : NULL,
		"feeder_error", fs->error ? fs->errmsg : NULL,
		"write_error", t->write_error ? t->write_msg : NULL,
		"feeder_cpu_s", (double)fs->cpu_ns / 1e9);
}

/* One retired buffer: a record per region (with loss, even if empty), the checker fed. */
static void consume(struct feeder *f, struct feeder_buf *b, struct rawfile_writer *w,
		    struct dec_pat *pat, struct rec_totals *t)
{
	(void)f;
	for (uint32_t i = 0; i < b->nparts; i++) {
		const struct dec_part *p = &b->parts[i];
		const unsigned char *data = (const unsigned char *)b->data + p->offset;
		dec_pat_feed(pat, p->xcc, data, p->bytes);
		rec_raw_region(w, t, b, p, data);
	}
}

static void print_summary(const struct rec_opts *o, const struct rec_totals *t,
			  const struct feeder_stats *fs, const struct dec_pat *pat, uint32_t nregions,
			  double secs)
{
	uint64_t bytes = 0;
	for (uint32_t k = 0; k < nregions; k++)
		bytes += t->bytes[k];
	fprintf(stderr,
		"spmtap record: %.2f s, %" PRIu64 " bytes (%.1f MB/s), %" PRIu64
		" buffers, %u XCC region(s) -> %s\n",
		secs, bytes, secs > 0 ? (double)bytes / secs / 1e6 : 0.0, t->buffers, nregions, o->out);
	if (rec_stop_signal)
		fprintf(stderr, "spmtap record: stopped by %s; data drained and file closed\n",
			strsignal(rec_stop_signal));
	if (fs->overrun_polls)
		fprintf(stderr, "spmtap record: %" PRIu64 " of %" PRIu64
			" polls found no free buffer (consumer overrun): the kernel kept filling the armed buffer\n",
			fs->overrun_polls, fs->polls);
	/* Normal while the sampler runs until RELEASE; the end record keeps it. */
	if (fs->drain_capped)
		pr_info("record", "the stop drain ended after %u calls with data still arriving",
			fs->drain_calls);
	if (fs->loss_buffers || fs->bad_buffers)
		fprintf(stderr, "spmtap record: WARNING: DATA LOSS: %" PRIu64 " of %" PRIu64
			" buffers flagged loss by the kernel, %" PRIu64 " with untrusted framing\n",
			fs->loss_buffers, t->buffers, fs->bad_buffers);
	if (!dec_pat_detected(pat))
		return;
	struct dec_pat_stats s;
	dec_pat_total(pat, &s);
	if (s.lost_bytes)
		fprintf(stderr, "spmtap record: WARNING: DATA LOSS: the test pattern is missing %" PRIu64
			" lines = %" PRIu64 " bytes\n", s.lost_lines, s.lost_bytes);
	/* Sequence numbers say how much was produced up to the last line seen. */
	bool ok = true;
	for (uint32_t k = 0; k < nregions; k++) {
		const struct dec_pat_stats *x = dec_pat_stats(pat, k);
		uint64_t seen = x->bytes_fed + x->lost_bytes - x->carry;
		if (x->dup_lines || x->corrupt_lines || seen != x->next_seq * DEC_PAT_LINE)
			ok = false;
		fprintf(stderr, "spmtap record:   xcc %u: recorded %" PRIu64 " + lost %" PRIu64
			" = %" PRIu64 " bytes; produced through seq %" PRIu64 ": %" PRIu64
			"%s%s\n", k, x->bytes_fed, x->lost_bytes, x->bytes_fed + x->lost_bytes,
			x->next_seq ? x->next_seq - 1 : 0, x->next_seq * DEC_PAT_LINE,
			x->dup_lines ? " [duplicates]" : "", x->corrupt_lines ? " [corrupt lines]" : "");
	}
	fprintf(stderr, "spmtap record: test pattern %s: recorded + lost %s produced\n",
		ok ? "consistent" : "INCONSISTENT", ok ? "=" : "!=");
}

int record_raw(const struct rec_opts *op)
{
	struct rec_opts o = *op;
	int st;
	char err[SPM_ERRLEN + 128] = "", note[256];
	struct cli_target t;
	st = cli_target_devices(&t, "record");
	if (st != EXIT_OK)
		return st;
	int idx = spm_device_lookup(t.devs, t.ndev, o.device, err, sizeof(err));
	if (idx < 0) {
		fprintf(stderr, "spmtap record: %s\n", err);
		cli_target_free(&t);
		return t.ndev ? EXIT_USAGE : EXIT_FAIL;
	}
	t.dev = &t.devs[idx];
	spm_device_marketing_name(&t.devs[idx]);
	st = cli_target_backend(&t, "record", o.backend);
	if (st != EXIT_OK) {
		cli_target_free(&t);
		return st;
	}

	struct spm_backend *b = NULL;
	struct spm_stream *s = NULL;
	struct rawfile_writer *w = NULL;
	struct feeder *f = NULL;
	int rc = t.ops->open(&b, t.devs, t.ndev, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "spmtap record: %s\n", err[0] ? err : spmtap_strerror(rc));
		cli_target_free(&t);
		return EXIT_FAIL;
	}
	struct spm_stream_opts so = { .gen_override = o.gen };
	rc = spm_stream_open(&s, t.ops, b, t.dev, &so, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "spmtap record: %s\n", err[0] ? err : spmtap_strerror(rc));
		t.ops->close(b);
		cli_target_free(&t);
		return rc == -EBUSY ? EXIT_BUSY : EXIT_FAIL;
	}
	enum spm_gen gen = spm_stream_gen(s);
	uint32_t size = feeder_round_size(o.buffer_size, t.dev->num_xcc, note, sizeof(note));
	if (note[0] && o.size_given)
		fprintf(stderr, "spmtap record: %s\n", note);
	uint32_t nregions = spm_stream_shape(s)->nstreams;

	struct rawfile_header h;
	rec_raw_header(&h, t.dev, t.ops->name, gen, size, o.nbuffers);
	rc = rawfile_create(&w, o.out, &h, err, sizeof(err));
	if (rc == 0)
		rc = rec_append_json(w, RAWFILE_META, rec_meta_json(t.dev, t.ops->name, gen, &o, size, o.nbuffers),
				 err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "spmtap record: %s\n", err);
		rawfile_finish(w, NULL, 0);
		spm_stream_close(s);
		t.ops->close(b);
		cli_target_free(&t);
		return EXIT_FAIL;
	}

	struct dec_pat pat;
	dec_pat_init(&pat, nregions, t.dev->gpu_id);
	struct rec_totals tot = { 0 };

	/* Only this thread takes the stop signals: the feeder inherits them blocked. */
	rec_signals_install();
	sigset_t old;
	rec_signals_block(&old);
	struct feeder_opts fo = { .nbuffers = o.nbuffers, .buffer_size = size };
	rc = feeder_start(&f, s, t.dev, &fo, err, sizeof(err));
	rec_signals_restore(&old);
	if (rc < 0) {
		fprintf(stderr, "spmtap record: %s\n", err);
		rawfile_finish(w, NULL, 0);
		spm_stream_close(s);
		t.ops->close(b);
		cli_target_free(&t);
		return EXIT_FAIL;
	}

	uint64_t start = rec_now_ns(CLOCK_MONOTONIC);
	uint64_t deadline = o.duration > 0 ? start + (uint64_t)(o.duration * 1e9) : UINT64_MAX;
	bool stopping = false;
	for (;;) {
		if (!stopping && (rec_stop_signal || tot.write_error || rec_now_ns(CLOCK_MONOTONIC) >= deadline)) {
			feeder_request_stop(f);
			stopping = true;
		}
		struct feeder_buf *fb;
		int r = feeder_next(f, &fb, 20);
		if (r == -EAGAIN)
			continue;
		if (r < 0)
			break;
		consume(f, fb, w, &pat, &tot);
		feeder_put(f, fb);
	}
	double secs = (double)(rec_now_ns(CLOCK_MONOTONIC) - start) / 1e9;
	struct feeder_stats fs;
	int ferr = feeder_finish(f, &fs); /* also released SPM */
	t.ops->close(b);

	if (!tot.write_error) {
		rc = rec_append_json(w, RAWFILE_END, end_json(&tot, &fs, &pat, nregions, secs), tot.write_msg,
				 sizeof(tot.write_msg));
		if (rc < 0)
			tot.write_error = rc;
	}
	rc = rawfile_finish(w, tot.write_error ? NULL : tot.write_msg, sizeof(tot.write_msg));
	if (rc < 0 && !tot.write_error)
		tot.write_error = rc;

	print_summary(&o, &tot, &fs, &pat, nregions, secs);
	st = EXIT_OK;
	if (ferr) {
		fprintf(stderr, "spmtap record: %s\n", fs.errmsg);
		st = EXIT_FAIL;
	}
	if (tot.write_error) {
		fprintf(stderr, "spmtap record: %s\n", tot.write_msg);
		st = EXIT_FAIL;
	}
	cli_target_free(&t);
	return st;
}
