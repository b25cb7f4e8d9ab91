/* SPDX-License-Identifier: MIT */
/*
 * spmtap record: acquire SPM on one GPU, let the feeder thread rotate
 * buffers, and write every retired region to the raw container while the
 * test-pattern checker counts what went missing.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/cli/cli.h"
#include "collector/lib/feeder.h"
#include "collector/lib/rawfile.h"
#include "decoder/pattern.h"
#include "log.h"

const char cmd_record_usage[] =
	"usage: spmtap record --raw -o FILE [options]\n"
	"\n"
	"Stream SPM data from one GPU into FILE until --duration ends or until\n"
	"Ctrl-C / SIGTERM; either way the data is drained and FILE is complete.\n"
	"\n"
	"  --raw                  write the raw container (docs/raw-format.md)\n"
	"  -o, --output FILE      output file (replaced if it exists)\n"
	"  -d, --duration SEC     stop after SEC seconds (default: until a signal)\n"
	"  --device D             GPU: index (0), gpu_id (0x1234) or gpu_id:0x1234\n"
	"  --spm-backend NAME     hsakmt, kfd or hsa (default: the first usable)\n"
	"  --spm-gen A|B|auto     kernel generation; auto probes it (default)\n"
	"  --buffers N            destination buffers, 2..64 (default 3)\n"
	"  --buffer-size BYTES    per buffer, k/M/G suffixes (default 8M); rounded to\n"
	"                         whole 32-byte lines per XCC region\n"
	"\n"
	"Back-pressure: a buffer the writer still holds is never handed back to the\n"
	"kernel.  If no buffer is free at a poll, the armed one stays armed and the\n"
	"kernel keeps filling it; when it is full the kernel flags loss, which the\n"
	"summary reports (\"consumer overrun polls\").\n"
	"\n"
	"Exit status: 0 recording complete (also after Ctrl-C, and also with data\n"
	"loss, which is printed as a warning); 1 device, stream or output error\n"
	"(what was written stays readable); 2 SPM is held by another process;\n"
	"64 bad command line.\n";

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

struct rec_opts {
	const char *out;
	double duration;
	const char *device;
	const char *backend;
	enum spm_gen gen;
	uint32_t nbuffers;
	uint64_t buffer_size;
	bool raw;
	bool size_given;
};

struct rec_totals {
	uint64_t bytes[DEC_MAX_XCC];
	uint64_t regions[DEC_MAX_XCC];
	uint64_t loss_regions[DEC_MAX_XCC];
	uint64_t bad_regions[DEC_MAX_XCC];
	uint64_t buffers;
	int write_error;
	char write_msg[600];
};

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int parse_opts(int argc, char **argv, struct rec_opts *o)
{
	enum { O_RAW = 256, O_DEVICE, O_BACKEND, O_GEN, O_BUFFERS, O_BUFSIZE };
	static const struct option opts[] = {
		{ "raw", no_argument, NULL, O_RAW },
		{ "output", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "device", required_argument, NULL, O_DEVICE },
		{ "spm-backend", required_argument, NULL, O_BACKEND },
		{ "spm-gen", required_argument, NULL, O_GEN },
		{ "buffers", required_argument, NULL, O_BUFFERS },
		{ "buffer-size", required_argument, NULL, O_BUFSIZE },
		{ NULL, 0, NULL, 0 },
	};
	*o = (struct rec_opts){ .device = "0", .nbuffers = FEEDER_DEFAULT_BUFFERS,
				.buffer_size = FEEDER_DEFAULT_SIZE };
	int c;
	char *end;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:d:", opts, NULL)) != -1) {
		switch (c) {
		case O_RAW: o->raw = true; break;
		case 'o': o->out = optarg; break;
		case 'd':
			o->duration = strtod(optarg, &end);
			if (end == optarg || *end || !isfinite(o->duration) || o->duration <= 0) {
				fprintf(stderr, "spmtap record: --duration %s: expected seconds > 0\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case O_DEVICE: o->device = optarg; break;
		case O_BACKEND: o->backend = optarg; break;
		case O_GEN:
			if (!strcasecmp(optarg, "A"))
				o->gen = SPM_GEN_A;
			else if (!strcasecmp(optarg, "B"))
				o->gen = SPM_GEN_B;
			else if (!strcasecmp(optarg, "auto"))
				o->gen = SPM_GEN_UNKNOWN;
			else {
				fprintf(stderr, "spmtap record: --spm-gen %s: expected A, B or auto\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case O_BUFFERS: {
			unsigned long n = strtoul(optarg, &end, 10);
			if (end == optarg || *end || n < 2 || n > FEEDER_MAX_BUFFERS) {
				fprintf(stderr, "spmtap record: --buffers %s: expected 2..%u\n", optarg,
					FEEDER_MAX_BUFFERS);
				return EXIT_USAGE;
			}
			o->nbuffers = (uint32_t)n;
			break;
		}
		case O_BUFSIZE:
			o->size_given = true;
			if (cli_parse_size(optarg, &o->buffer_size) < 0 || !o->buffer_size) {
				fprintf(stderr, "spmtap record: --buffer-size %s: expected bytes, e.g. 8M or 512k\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		default:
			fputs(cmd_record_usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "spmtap record: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (!o->raw) {
		fprintf(stderr, "spmtap record: only --raw output exists so far; add --raw\n");
		return EXIT_USAGE;
	}
	if (!o->out) {
		fprintf(stderr, "spmtap record: -o FILE is required\n");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

static int append_json(struct rawfile_writer *w, uint16_t type, json_t *j, char *err, size_t errlen)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(j);
	if (!s)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	int rc = rawfile_append(w, type, 0, 0, 0, now_ns(CLOCK_BOOTTIME), s, (uint32_t)strlen(s), err,
				errlen);
	free(s);
	return rc;
}

static json_t *meta_json(const struct spm_device *d, const char *backend, enum spm_gen gen,
			 const struct rec_opts *o, uint32_t size, uint32_t nbuf)
{
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	const char *emu = getenv("SPMTAP_EMU_ACTIVE");
	return json_pack(
		"{s:s, s:{s:i, s:i, s:i, s:s, s:i, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i}, s:s, s:s,"
		" s:{s:s, s:f, s:i, s:i, s:s}, s:s, s:b}",
		"spmtap_version", spmtap_version_string(),
		"device",
		"index", (json_int_t)d->index, "gpu_id", (json_int_t)d->gpu_id, "node", (json_int_t)d->node,
		"gfx", d->gfx, "gfx_target_version", (json_int_t)d->gfx_target_version, "name", d->name,
		"marketing_name", d->marketing_name, "num_xcc", (json_int_t)d->num_xcc,
		"num_se", (json_int_t)d->num_se, "cu_count", (json_int_t)d->cu_count,
		"device_id", (json_int_t)d->device_id, "location_id", (json_int_t)d->location_id,
		"render_minor", (json_int_t)d->drm_render_minor,
		"backend", backend, "spm_gen", spm_gen_name(gen),
		"options", "device", o->device, "duration_s", o->duration,
		"buffer_size", (json_int_t)size, "buffers", (json_int_t)nbuf,
		"spm_gen", o->gen == SPM_GEN_UNKNOWN ? "auto" : spm_gen_name(o->gen),
		"hostname", host, "emulated", emu && *emu);
}

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
		"stopped_by", stop_signal ? strsignal(stop_signal) : NULL,
		"feeder_error", fs->error ? fs->errmsg : NULL,
		"write_error", t->write_error ? t->write_msg : NULL,
		"feeder_cpu_s", (double)fs->cpu_ns / 1e9);
}

/* One retired buffer: a record per region (with loss, even if empty), the checker fed. */
static void consume(struct feeder *f, struct feeder_buf *b, struct rawfile_writer *w,
		    struct dec_pat *pat, struct rec_totals *t)
{
	struct dec_part parts[DEC_MAX_XCC];
	int n = feeder_split(f, b, parts, DEC_MAX_XCC);
	t->buffers++;
	for (int i = 0; i < n; i++) {
		const struct dec_part *p = &parts[i];
		const unsigned char *data = (const unsigned char *)b->data + p->offset;
		uint32_t flags = (p->loss ? RAWFILE_F_LOSS : 0) | (p->bad ? RAWFILE_F_BAD : 0);
		t->regions[p->xcc]++;
		t->loss_regions[p->xcc] += p->loss;
		t->bad_regions[p->xcc] += p->bad;
		t->bytes[p->xcc] += p->bytes;
		dec_pat_feed(pat, p->xcc, data, p->bytes);
		if ((p->bytes || flags) && !t->write_error) {
			int rc = rawfile_append(w, RAWFILE_SPM, (uint16_t)p->xcc, flags, b->seq, b->host_ns,
						data, p->bytes, t->write_msg, sizeof(t->write_msg));
			if (rc < 0)
				t->write_error = rc;
		}
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
	if (stop_signal)
		fprintf(stderr, "spmtap record: stopped by %s; data drained and file closed\n",
			strsignal(stop_signal));
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

int cmd_record(int argc, char **argv)
{
	struct rec_opts o;
	int st = parse_opts(argc, argv, &o);
	if (st != EXIT_OK)
		return st;

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
	uint32_t nregions = gen == SPM_GEN_B ? t.dev->num_xcc : 1;

	struct rawfile_header h = {
		.gpu_id = t.dev->gpu_id, .node = t.dev->node,
		.gfx_target_version = t.dev->gfx_target_version, .num_xcc = t.dev->num_xcc,
		.num_se = t.dev->num_se, .gen = gen == SPM_GEN_B ? RAWFILE_GEN_B : RAWFILE_GEN_A,
		.buffer_size = size, .nbuffers = o.nbuffers,
		.start_boottime_ns = now_ns(CLOCK_BOOTTIME),
	};
	snprintf(h.backend, sizeof(h.backend), "%.8s", t.ops->name);
	rc = rawfile_create(&w, o.out, &h, err, sizeof(err));
	if (rc == 0)
		rc = append_json(w, RAWFILE_META, meta_json(t.dev, t.ops->name, gen, &o, size, o.nbuffers),
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
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	struct feeder_opts fo = { .nbuffers = o.nbuffers, .buffer_size = size };
	rc = feeder_start(&f, s, t.dev, &fo, err, sizeof(err));
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0) {
		fprintf(stderr, "spmtap record: %s\n", err);
		rawfile_finish(w, NULL, 0);
		spm_stream_close(s);
		t.ops->close(b);
		cli_target_free(&t);
		return EXIT_FAIL;
	}

	uint64_t start = now_ns(CLOCK_MONOTONIC);
	uint64_t deadline = o.duration > 0 ? start + (uint64_t)(o.duration * 1e9) : UINT64_MAX;
	bool stopping = false;
	for (;;) {
		if (!stopping && (stop_signal || tot.write_error || now_ns(CLOCK_MONOTONIC) >= deadline)) {
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
	double secs = (double)(now_ns(CLOCK_MONOTONIC) - start) / 1e9;
	struct feeder_stats fs;
	int ferr = feeder_finish(f, &fs); /* also released SPM */
	t.ops->close(b);

	if (!tot.write_error) {
		rc = append_json(w, RAWFILE_END, end_json(&tot, &fs, &pat, nregions, secs), tot.write_msg,
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
