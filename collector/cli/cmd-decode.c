/* SPDX-License-Identifier: MIT */
/*
 * spmtap decode: one XCC's raw sample stream (no headers) + a layout
 * descriptor -> CSV.  The same decoder and writer as `spmtap record`; this
 * file only wires a file to them and turns their reports into an exit status.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/cli/cmd-decode.h"
#include "collector/lib/write_csv.h"
#include "decoder/decode.h"
#include "decoder/layout.h"

#define READ_BYTES (1u << 20)

static void usage(FILE *f)
{
	fprintf(f, "usage: spmtap decode --layout L.json [--per-se] [-o out.csv] raw.bin\n"
		   "  Decode one XCC's raw SPM sample stream into CSV (docs/cli/spmtap-decode.md).\n"
		   "  -l, --layout FILE  layout descriptor (spmtap-layout v1)\n"
		   "      --per-se       one column per SE for se counters instead of the sum\n"
		   "  -o, --output FILE  write CSV to FILE instead of standard output\n"
		   "  raw.bin            the stream; - for standard input\n");
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

int cmd_decode(int argc, char **argv)
{
	static const struct option opts[] = {
		{"layout", required_argument, NULL, 'l'},
		{"per-se", no_argument, NULL, 'p'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *layout_path = NULL, *out_path = NULL;
	bool per_se = false;
	int c;
	/* 0, not 1: GNU getopt then re-initialises, so tests can call us repeatedly. */
	optind = 0;
	while ((c = getopt_long(argc, argv, "l:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'l': layout_path = optarg; break;
		case 'p': per_se = true; break;
		case 'o': out_path = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!layout_path || optind != argc - 1) {
		fprintf(stderr, "spmtap decode: %s\n",
			!layout_path ? "--layout is required" : "exactly one raw stream file is needed");
		usage(stderr);
		return 2;
	}
	const char *inname = argv[optind];

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
