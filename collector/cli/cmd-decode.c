/* SPDX-License-Identifier: MIT */
/*
 * spmtap decode: a raw container from `spmtap record --raw` (every XCC, the
 * layout from its metadata) or one XCC's raw sample stream (no headers) + a
 * layout descriptor -> CSV.  The same decoder, aggregation and writer as
 * `spmtap record`; this file only wires a file to them and turns their
 * reports into an exit status.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/cli/cli.h"
#include "collector/cli/cmd-decode.h"
#include "collector/lib/decode_thread.h"
#include "collector/lib/rawfile.h"
#include "collector/lib/write_csv.h"
#include "decoder/decode.h"
#include "decoder/layout.h"
#include "log.h"

#define READ_BYTES (1u << 20)

static void usage(FILE *f)
{
	fprintf(f, "usage: spmtap decode [--layout L.json] [--per-se] [--per-instance] [-o out.csv] FILE\n"
		   "  Decode SPM samples into CSV (docs/cli/spmtap-decode.md).  FILE is a raw\n"
		   "  container from `spmtap record --raw` (every XCC; CSV with an xcc column),\n"
		   "  or one XCC's headerless sample stream (needs --layout).\n"
		   "  -l, --layout FILE  layout descriptor (spmtap-layout v1); for a container,\n"
		   "                     replaces the one in its metadata\n"
		   "      --per-se       one column per SE for se counters instead of the sum\n"
		   "      --per-instance container: one column per block instance, no sums\n"
		   "  -o, --output FILE  write CSV to FILE instead of standard output\n"
		   "  FILE               the input; - for standard input (headerless stream only)\n");
}

static int decode_fd(int in, const char *inname, struct dec *d)
{
	char *buf = malloc(READ_BYTES);
	if (!buf) {
		fprintf(stderr, "spmtap decode: out of memory\n");
		return 1;
	}
	int rc = 0;
	for (;;) {
		ssize_t n = read(in, buf, READ_BYTES);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "spmtap decode: %s: read failed: %s\n", inname,
				strerror(errno));
			rc = 1;
			break;
		}
		if (n == 0)
			break;
		int r = dec_feed(d, 0, buf, (size_t)n, false);
		if (r < 0) {
			rc = -1; /* the writer's error, reported by the caller */
			break;
		}
	}
	free(buf);
	if (!rc && dec_flush(d) < 0)
		rc = -1;
	return rc;
}

static bool is_container(const char *path)
{
	char magic[8] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool yes = read(fd, magic, sizeof(magic)) == (ssize_t)sizeof(magic) &&
		   !memcmp(magic, RAWFILE_MAGIC, sizeof(magic));
	close(fd);
	return yes;
}

/* The metadata's layout (or --layout's) and the request names record used. */
struct cont_meta {
	struct dec_layout *layout;
	json_t *meta;
	const char *names[256];
	size_t nnames;
	bool have_names, per_se, per_instance;
};

static int read_meta(const char *inname, const struct rawfile_record *rec, const char *layout_path,
		     struct cont_meta *m, char *err, size_t errlen)
{
	json_error_t je;
	m->meta = json_loadb(rec->data, rec->length, 0, &je);
	if (!m->meta)
		return spmtap_seterr(err, errlen, EBADMSG, "%s: metadata is not JSON: %s", inname,
				     je.text);
	json_t *spm = json_object_get(m->meta, "spm");
	json_t *names = json_object_get(spm, "counters");
	for (size_t i = 0; json_is_array(names) && i < json_array_size(names) && i < 256; i++) {
		const char *n = json_string_value(json_array_get(names, i));
		if (n)
			m->names[m->nnames++] = n;
	}
	m->have_names = json_is_array(names);
	m->per_se = json_is_true(json_object_get(spm, "per_se"));
	m->per_instance = json_is_true(json_object_get(spm, "per_instance"));
	if (layout_path)
		return dec_layout_load(layout_path, &m->layout, err, errlen);
	json_t *lay = json_object_get(m->meta, "layout");
	if (!json_is_object(lay))
		return spmtap_seterr(err, errlen, ENOENT,
				     "%s: the container's metadata has no layout (recorded without "
				     "--spm); give the descriptor with --layout", inname);
	char *text = json_dumps(lay, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!text)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	char e[400];
	int rc = dec_layout_parse(text, strlen(text), &m->layout, e, sizeof(e));
	free(text);
	if (rc < 0)
		return spmtap_seterr(err, errlen, -rc, "%s: invalid layout in the metadata: %s",
				     inname, e);
	return 0;
}

static void container_report(const char *inname, struct dthr *t, uint32_t n)
{
	uint64_t lost = 0, flagged = 0;
	for (uint32_t k = 0; k < n; k++) {
		struct dthr_xcc x;
		if (dthr_stats(t, k, &x) < 0)
			continue;
		lost += x.dec.lost_samples_est;
		flagged += x.loss_parts + x.bad_parts;
		if (x.dec.corrupt_events || x.resyncs || x.dec.lost_samples_est || x.loss_parts || x.bad_parts)
			fprintf(stderr, "spmtap decode: %s: xcc %u: %" PRIu64 " loss-flagged regions, %"
				PRIu64 " non-increasing timestamps, %" PRIu64 " resyncs (%" PRIu64
				" bytes skipped), %" PRIu64 " timestamp gaps (~%" PRIu64
				" samples lost)\n", inname, k, x.loss_parts + x.bad_parts,
				x.dec.corrupt_events, x.resyncs, x.dec.dropped_bytes - x.skipped_start, x.dec.gaps,
				x.dec.lost_samples_est);
	}
	if (lost || flagged)
		fprintf(stderr, "spmtap decode: %s: ~%" PRIu64 " samples lost in total (%" PRIu64
			" bytes)\n", inname, lost, lost * dthr_sample_bytes(t));
}

/* A raw container: every XCC's regions in file order, loss flags as loss_before. */
static int decode_container(const char *inname, const char *layout_path, const char *out_path,
			    bool per_se, bool per_instance)
{
	char err[1024] = "";
	struct rawfile_reader *r = NULL;
	struct rawfile_record rec;
	struct cont_meta m = { 0 };
	struct dthr *t = NULL;
	struct csv_writer *w = NULL;
	int out = -1, rc = 1, n;
	if (rawfile_open(&r, inname, err, sizeof(err)) < 0) {
		fprintf(stderr, "spmtap decode: %s\n", err);
		return 1;
	}
	const struct rawfile_header *h = rawfile_header(r);
	/* The container keeps the kernel generation; spm/ says what that stream is. */
	struct spm_stream_shape shape;
	if (spm_stream_shape_of((enum spm_gen)h->gen, h->num_xcc, &shape) < 0 ||
	    shape.nstreams > DEC_MAX_XCC) {
		fprintf(stderr, "spmtap decode: %s: unknown kernel generation %u or %u XCCs\n", inname,
			h->gen, h->num_xcc);
		goto done;
	}
	uint32_t nstreams = shape.nstreams;
	n = rawfile_next(r, &rec, err, sizeof(err));
	if (n <= 0 || rec.type != RAWFILE_META) {
		fprintf(stderr, "spmtap decode: %s: %s\n", inname,
			n < 0 ? err : "no metadata record at the start");
		goto done;
	}
	if (read_meta(inname, &rec, layout_path, &m, err, sizeof(err)) < 0) {
		fprintf(stderr, "spmtap decode: %s\n", err);
		goto done;
	}
	out = out_path ? open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)
		       : STDOUT_FILENO;
	if (out < 0) {
		fprintf(stderr, "spmtap decode: %s: %s\n", out_path, strerror(errno));
		goto done;
	}
	if (csv_open_fd(out, CSV_XCC_COLUMN, &w) < 0) {
		fprintf(stderr, "spmtap decode: out of memory\n");
		goto done;
	}
	struct dthr_opts o = {
		.layout = m.layout, .shape = shape, .per_se = per_se || m.per_se,
		.per_instance = per_instance || m.per_instance,
		.requests = m.have_names ? m.names : NULL, .nreq = m.nnames,
		.sink = csv_sink, .sink_user = w,
	};
	if (dthr_open(&t, &o, err, sizeof(err)) < 0) {
		fprintf(stderr, "spmtap decode: %s\n", err);
		goto done;
	}
	int wr = csv_begin(w, dthr_columns(t), dthr_ncols(t));
	int bad = 0;
	while (!wr && (n = rawfile_next(r, &rec, err, sizeof(err))) > 0) {
		if (rec.type != RAWFILE_SPM)
			continue;
		if (rec.xcc >= nstreams) {
			fprintf(stderr, "spmtap decode: %s: record at offset %" PRIu64 " names xcc %u; "
				"the header says %u stream(s); skipped\n", inname, rec.offset, rec.xcc,
				nstreams);
			continue;
		}
		wr = dthr_feed(t, rec.xcc, rec.data, rec.length, rec.flags & RAWFILE_F_LOSS,
			       rec.flags & RAWFILE_F_BAD);
	}
	if (!wr && n < 0) {
		/* Everything before the bad record is decoded and written. */
		fprintf(stderr, "spmtap decode: %s\n", err);
		bad = 1;
	}
	if (!wr)
		wr = dthr_finish(t);
	int we = csv_end(w);
	if (wr || we) {
		fprintf(stderr, "spmtap decode: %s: %s\n", out_path ? out_path : "standard output",
			csv_error(w)[0] ? csv_error(w) : dthr_error(t));
		goto done;
	}
	if (out_path) {
		int e = close(out);
		out = -1;
		if (e < 0) {
			fprintf(stderr, "spmtap decode: %s: close: %s\n", out_path, strerror(errno));
			goto done;
		}
	}
	container_report(inname, t, nstreams);
	if (rawfile_trailing(r)) {
		fprintf(stderr, "spmtap decode: %s: %" PRIu64 " trailing bytes after the last complete "
			"record (the recording was cut); everything before is decoded\n", inname,
			rawfile_trailing(r));
		bad = 1;
	}
	rc = bad;
done:
	dthr_close(t);
	csv_close(w);
	if (out_path && out >= 0)
		close(out);
	dec_layout_free(m.layout);
	json_decref(m.meta);
	rawfile_close(r);
	return rc;
}

int cmd_decode(int argc, char **argv)
{
	static const struct option opts[] = {
		{"layout", required_argument, NULL, 'l'},
		{"per-se", no_argument, NULL, 'p'},
		{"per-instance", no_argument, NULL, 'i'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *layout_path = NULL, *out_path = NULL;
	bool per_se = false, per_instance = false;
	int c;
	/* 0, not 1: GNU getopt then re-initialises, so tests can call us repeatedly. */
	optind = 0;
	while ((c = getopt_long(argc, argv, "l:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'l': layout_path = optarg; break;
		case 'p': per_se = true; break;
		case 'i': per_instance = true; break;
		case 'o': out_path = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "spmtap decode: exactly one input file is needed\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *inname = argv[optind];
	/* A file that is not there is that, not a stream without its layout. */
	if (strcmp(inname, "-") && access(inname, R_OK) < 0) {
		fprintf(stderr, "spmtap decode: %s: %s\n", inname, strerror(errno));
		return 1;
	}
	if (strcmp(inname, "-") && is_container(inname))
		return decode_container(inname, layout_path, out_path, per_se, per_instance);
	if (!layout_path) {
		fprintf(stderr, "spmtap decode: --layout is required for a headerless stream "
				"(only a raw container carries its layout)\n");
		usage(stderr);
		return EXIT_USAGE;
	}

	char err[512];
	struct dec_layout *lay;
	if (dec_layout_load(layout_path, &lay, err, sizeof(err)) < 0) {
		fprintf(stderr, "spmtap decode: invalid layout: %s\n", err);
		return 1;
	}
	int in = strcmp(inname, "-") ? open(inname, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
	if (in < 0) {
		fprintf(stderr, "spmtap decode: %s: %s\n", inname, strerror(errno));
		dec_layout_free(lay);
		return 1;
	}
	int out = STDOUT_FILENO;
	const char *outname = out_path ? out_path : "standard output";
	if (out_path) {
		out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (out < 0) {
			fprintf(stderr, "spmtap decode: %s: %s\n", out_path, strerror(errno));
			if (in != STDIN_FILENO)
				close(in);
			dec_layout_free(lay);
			return 1;
		}
	}

	int rc = 1;
	struct csv_writer *w = NULL;
	struct dec *d = NULL;
	struct dec_opts o = {.sz = sizeof(o), .per_se = per_se};
	if (csv_open_fd(out, 0, &w) < 0) {
		fprintf(stderr, "spmtap decode: out of memory\n");
		goto done;
	}
	if (dec_open(lay, 1, &o, csv_sink, w, &d, err, sizeof(err)) < 0) {
		fprintf(stderr, "spmtap decode: %s\n", err);
		goto done;
	}
	int r = csv_begin(w, dec_columns(d), dec_ncols(d));
	if (!r)
		r = decode_fd(in, inname, d);
	if (r > 0)
		goto done;
	/* Also on r < 0: whatever was decoded before a failure is flushed out. */
	int we = csv_end(w);
	if (out_path && close(out) < 0 && !we) {
		snprintf(err, sizeof(err), "close: %s", strerror(errno));
		we = -errno;
	} else {
		snprintf(err, sizeof(err), "%s", csv_error(w));
	}
	if (out_path)
		out = -1;
	if (r < 0 || we < 0) {
		fprintf(stderr, "spmtap decode: %s: %s\n", outname, err[0] ? err : "write failed");
		goto done;
	}

	struct dec_stats st;
	dec_stats(d, 0, &st);
	rc = 0;
	if (st.corrupt_events || st.resyncs || st.gaps)
		fprintf(stderr, "spmtap decode: %s: %" PRIu64 " non-increasing timestamps, %" PRIu64
			" resyncs (%" PRIu64 " bytes skipped), %" PRIu64 " timestamp gaps "
			"(~%" PRIu64 " samples lost)\n", inname, st.corrupt_events, st.resyncs,
			st.dropped_bytes, st.gaps, st.lost_samples_est);
	if (st.partial_bytes) {
		if (st.hunting)
			fprintf(stderr, "spmtap decode: %s: %" PRIu64 " trailing bytes could not be "
				"aligned to a sample; %" PRIu64 " samples written\n", inname,
				st.partial_bytes, st.samples);
		else
			fprintf(stderr, "spmtap decode: %s: %" PRIu64 " trailing bytes do not make a "
				"complete %u-byte sample; %" PRIu64 " complete samples written\n",
				inname, st.partial_bytes, lay->sample_bytes, st.samples);
		rc = 1;
	}
done:
	dec_close(d);
	csv_close(w);
	if (out_path && out >= 0)
		close(out);
	if (in != STDIN_FILENO)
		close(in);
	dec_layout_free(lay);
	return rc;
}
