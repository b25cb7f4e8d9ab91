/* SPDX-License-Identifier: MIT */
/*
 * collector/lib/write_perfetto.c: a small trace read back by protoc (Debian's
 * protobuf tooling, as a child process) and by protobuf-c, packet by packet,
 * each sample's time and track resolved as trace_processor does (sequence
 * defaults, the incremental clock; tests/lib/pftrace.c) and compared with what
 * was written; a 2-million-sample stream in bounded memory; a full disk
 * (RLIMIT_FSIZE) and /dev/full leave an error naming the file and a trace
 * that parses.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/lib/writer.h"
#include "collector/proto/perfetto_trace.pb-c.h"
#include "lib/files.h"
#include "lib/pftrace.h"
#include "lib/testenv.h"

typedef Perfetto__Protos__Trace pf_trace;
typedef Perfetto__Protos__TracePacket pf_packet;
typedef Perfetto__Protos__TrackEvent pf_event;

#define T0 1000000000LL /* host ns of the first sample */

static char dir[] = "/tmp/spmtap-perfetto-XXXXXX";

static const char *path(const char *name)
{
	static char p[4][256];
	static unsigned i;
	char *r = p[i++ % 4];
	snprintf(r, sizeof(p[0]), "%s/%s", dir, name);
	return r;
}

static const struct writer_meta meta = {
	.spmtap_version = "0.1.0",
	.command_line = "spmtap record -f perfetto -o x.pftrace -- ./app",
	.hostname = "testhost",
	.start_boottime_ns = T0 - 500,
	.spm_clock_hz = 100e6,
	.extra_json = "{\"devices\":1}",
};

/* An SPM stream (GPU0 XCC3, two U64 counters) and a sensor stream (GPU0, two F64). */
static const struct series_column spm_cols[] = {
	{ "SQ_WAVES", "count", SERIES_U64 },
	{ "GRBM_GUI_ACTIVE", "count", SERIES_U64 },
};
static const struct series_stream spm = {
	.id = 7, .source = "spm", .gpu = 0, .gpu_id = 0x1001, .xcc = 3,
	.device_name = "AMD Instinct MI300A", .tick_domain = "gpu_ref_100MHz",
	.ncols = 2, .cols = spm_cols,
};
static const struct series_column smi_cols[] = {
	{ "power_avg", "W", SERIES_F64 },
	{ "temp_edge", "degC", SERIES_F64 },
};
static const struct series_stream smi = {
	.id = 9, .source = "smi", .gpu = 0, .gpu_id = 0x1001, .xcc = -1,
	.device_name = "AMD Instinct MI300A", .tick_domain = "smu_10ns",
	.ncols = 2, .cols = smi_cols,
};

/* Expected counter events of the small trace, in file order. */
struct expect {
	const char *track;
	int64_t ts;
	int is_double;
	int64_t i;
	double d;
};
static const struct expect small_events[] = {
	{ "GPU0 XCC3 SQ_WAVES", T0 + 0, 0, 11, 0 },
	{ "GPU0 XCC3 GRBM_GUI_ACTIVE", T0 + 0, 0, 100, 0 },
	/* sample 1: SQ_WAVES missing */
	{ "GPU0 XCC3 GRBM_GUI_ACTIVE", T0 + 100, 0, 200, 0 },
	{ "GPU0 XCC3 SQ_WAVES", T0 + 200, 0, 13, 0 },
	{ "GPU0 XCC3 GRBM_GUI_ACTIVE", T0 + 200, 0, 300, 0 },
	{ "GPU0 power_avg (W)", T0 + 50, 1, 0, 123.5 },
	{ "GPU0 temp_edge (degC)", T0 + 50, 1, 0, 45.25 },
	{ "GPU0 power_avg (W)", T0 + 1050, 1, 0, 130.0 },
	{ "GPU0 temp_edge (degC)", T0 + 1050, 1, 0, 46.0 },
};
#define N_SMALL (sizeof(small_events) / sizeof(small_events[0]))

static int write_small(const char *p, char *err, size_t errlen)
{
	const struct writer_ops *o = &writer_perfetto;
	struct writer *w;
	int rc = o->open(&w, p, &meta, err, errlen);
	if (rc)
		return rc;
	if ((rc = o->begin(w, &spm, err, errlen)) || (rc = o->begin(w, &smi, err, errlen))) {
		o->end(w, NULL, 0);
		return rc;
	}
	int64_t t1[] = { T0, T0 + 100, T0 + 200 };
	uint64_t tk1[] = { 10, 20, 30 };
	uint64_t waves[] = { 11, 12, 13 }, gui[] = { 100, 200, 300 };
	const void *v1[] = { waves, gui };
	uint64_t miss_waves[] = { 1u << 1 };
	const uint64_t *m1[] = { miss_waves, NULL };
	struct series_chunk c1 = { &spm, 3, t1, tk1, v1, m1 };
	int64_t t2[] = { T0 + 50, T0 + 1050 };
	double pw[] = { 123.5, 130.0 }, te[] = { 45.25, 46.0 };
	const void *v2[] = { pw, te };
	struct series_chunk c2 = { &smi, 2, t2, NULL, v2, NULL };
	struct series_slice sl = { .start_ns = T0 + 10, .end_ns = T0 + 900, .name = "warmup" };
	if (!rc)
		rc = o->write(w, &c1, err, errlen);
	if (!rc)
		rc = o->write(w, &c2, err, errlen);
	if (!rc)
		rc = o->slice(w, &sl, err, errlen);
	int rc2 = o->end(w, err, errlen);
	return rc ? rc : rc2;
}

static pf_trace *unpack_file(const char *p)
{
	size_t n;
	uint8_t *b = (uint8_t *)tf_slurp(p, &n);
	if (!b)
		return NULL;
	pf_trace *t = perfetto__protos__trace__unpack(NULL, n, b);
	free(b);
	return t;
}

/* ---- a packet's time and track, by Perfetto's rules (tests/lib/pftrace.c) ---- */

static struct pft_state rs;

static int resolve(const pf_packet *p, uint64_t *ts, uint64_t *track)
{
	return pft_resolve(&rs, p, ts, track);
}

static void resolve_reset(void)
{
	memset(&rs, 0, sizeof(rs));
}

/* ---- protoc, as a child process ---- */

static const char *protoc_path(void)
{
	static char found[PATH_MAX];
	const char *pathenv = getenv("PATH");
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", pathenv ? pathenv : "/usr/bin:/bin");
	for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(found, sizeof(found), "%s/protoc", d);
		if (access(found, X_OK) == 0)
			return found;
	}
	return NULL;
}

static const char *need_protoc(void)
{
	return protoc_path() ? NULL : "protoc not installed (apt-get install protobuf-compiler)";
}

/* The source tree: the parent of the build directory, else the current directory. */
static const char *srcdir(void)
{
	static char d[PATH_MAX];
	char b[PATH_MAX], probe[PATH_MAX + 64];
	snprintf(b, sizeof(b), "%s", testenv_build_dir());
	snprintf(d, sizeof(d), "%s", dirname(b));
	snprintf(probe, sizeof(probe), "%s/collector/proto/perfetto_trace.proto", d);
	if (access(probe, R_OK) != 0 && !getcwd(d, sizeof(d)))
		snprintf(d, sizeof(d), ".");
	return d;
}

/* protoc --decode=perfetto.protos.Trace < in > out; returns its exit status. */
static int protoc_decode(const char *in, const char *out)
{
	pid_t pid = fork();
	if (pid == 0) {
		int fi = open(in, O_RDONLY), fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fi < 0 || fo < 0 || dup2(fi, 0) < 0 || dup2(fo, 1) < 0)
			_exit(126);
		if (chdir(srcdir()) != 0)
			_exit(126);
		execl(protoc_path(), "protoc", "-I.", "--decode=perfetto.protos.Trace",
		      "collector/proto/perfetto_trace.proto", (char *)NULL);
		_exit(127);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void test_protoc_decode(void)
{
	char err[512] = "";
	int rc = write_small(path("small.pftrace"), err, sizeof(err));
	if (rc)
		fprintf(stderr, "write_small: %s\n", err);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_EQUAL_FATAL(protoc_decode(path("small.pftrace"), path("small.txt")), 0);
	size_t n;
	char *txt = tf_slurp(path("small.txt"), &n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(txt);
	txt = realloc(txt, n + 1);
	txt[n] = 0;
	/* protoc prints unknown fields as bare numbers: there must be none. */
	CU_ASSERT_PTR_NULL(strstr(txt, "\n  1: "));
	CU_ASSERT_EQUAL(count(txt, "packet {"), count(txt, "trusted_packet_sequence_id: "));
	/* Sequence 1 and one per counter track (4), each cleared once, by its first packet. */
	CU_ASSERT_EQUAL(count(txt, "sequence_flags: 1\n"), 5);
	CU_ASSERT_EQUAL(count(txt, "first_packet_on_sequence: true"), 5);
	CU_ASSERT_EQUAL(count(txt, "sequence_flags: 2\n"), N_SMALL); /* every sample */
	CU_ASSERT_EQUAL(count(txt, "trace_packet_defaults {"), 4);
	CU_ASSERT_EQUAL(count(txt, "is_incremental: true"), 4);
	CU_ASSERT_EQUAL(count(txt, "timestamp_clock_id: 64\n"), 4);
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "name: \"spmtap\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "name: \"GPU0 AMD Instinct MI300A\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "name: \"GPU0 XCC3\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "name: \"GPU0 XCC3 SQ_WAVES\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "name: \"GPU0 XCC3 GRBM_GUI_ACTIVE\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "name: \"GPU0 power_avg (W)\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "name: \"GPU0 temp_edge (degC)\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "unit: UNIT_COUNT"));
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "unit_name: \"W\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "child_ordering: EXPLICIT"));
	CU_ASSERT_EQUAL(count(txt, "type: TYPE_COUNTER"), N_SMALL);
	CU_ASSERT_EQUAL(count(txt, "type: TYPE_SLICE_BEGIN"), 1);
	CU_ASSERT_EQUAL(count(txt, "type: TYPE_SLICE_END"), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "name: \"warmup\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "name: \"phases: phase\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "counter_value: 11\n"));
	CU_ASSERT_PTR_NULL(strstr(txt, "counter_value: 12\n")); /* the missing cell */
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "counter_value: 300\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "double_counter_value: 123.5\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "double_counter_value: 45.25\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "timestamp: 1000000000\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "timestamp: 1000\n")); /* 1050 - 50: a delta */
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "timestamp: 1000000900\n")); /* slice end */
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "string_value: \"spmtap record -f perfetto"));
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "double_value: 100000000\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(txt, "string_value: \"gpu_ref_100MHz\""));
	free(txt);
}

/* ---- protobuf-c, every packet ---- */

struct track_info {
	uint64_t uuid;
	const char *name;
	int counter;
};

static const struct track_info *track(const struct track_info *t, size_t n, uint64_t uuid)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].uuid == uuid)
			return &t[i];
	return NULL;
}

static const char *arg(const pf_event *e, const char *name)
{
	for (size_t i = 0; i < e->n_debug_annotations; i++)
		if (!strcmp(e->debug_annotations[i]->name, name))
			return e->debug_annotations[i]->string_value ? e->debug_annotations[i]->string_value : "";
	return NULL;
}

static void test_protobuf_c_every_packet(void)
{
	char err[512] = "";
	CU_ASSERT_EQUAL_FATAL(write_small(path("small2.pftrace"), err, sizeof(err)), 0);
	pf_trace *t = unpack_file(path("small2.pftrace"));
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	struct track_info tracks[64];
	size_t ntracks = 0, nev = 0, nslice = 0, ninstant = 0, nstart = 0;
	int64_t last_begin = -1;
	resolve_reset();
	for (size_t i = 0; i < t->n_packet; i++) {
		const pf_packet *p = t->packet[i];
		uint64_t ts, track_uuid;
		CU_ASSERT_EQUAL_FATAL(resolve(p, &ts, &track_uuid), 0);
		if (i == 0) {
			CU_ASSERT(p->has_sequence_flags && p->sequence_flags == 1);
			CU_ASSERT(p->has_first_packet_on_sequence && p->first_packet_on_sequence);
		}
		if (p->trusted_packet_sequence_id == 1) {
			CU_ASSERT_EQUAL(p->has_sequence_flags, i == 0);
			CU_ASSERT_FALSE(p->has_timestamp_clock_id); /* the default: BOOTTIME */
			CU_ASSERT((p->track_event != NULL) != (p->track_descriptor != NULL));
		}
		if (p->trace_packet_defaults) {
			/* A counter sequence's start: cleared, first, its track declared before. */
			CU_ASSERT(p->has_sequence_flags && p->sequence_flags == 1 && p->first_packet_on_sequence);
			CU_ASSERT(p->trusted_packet_sequence_id > 1);
			CU_ASSERT_PTR_NULL(p->track_event);
			const struct track_info *tr = track(tracks, ntracks, track_uuid);
			CU_ASSERT(tr && tr->counter);
			nstart++;
			continue;
		}
		if (p->trusted_packet_sequence_id > 1) /* a sample: needs the sequence's state */
			CU_ASSERT(p->has_sequence_flags && p->sequence_flags == 2);
		if (p->track_descriptor) {
			const Perfetto__Protos__TrackDescriptor *d = p->track_descriptor;
			CU_ASSERT_FATAL(d->has_uuid && d->name && ntracks < 64);
			CU_ASSERT_PTR_NULL(track(tracks, ntracks, d->uuid)); /* unique */
			if (d->has_parent_uuid) {
				const struct track_info *par = track(tracks, ntracks, d->parent_uuid);
				CU_ASSERT(par && !par->counter); /* declared first, a group */
			}
			tracks[ntracks++] = (struct track_info){ d->uuid, d->name, d->counter != NULL };
			continue;
		}
		const pf_event *e = p->track_event;
		CU_ASSERT_FATAL(e && e->has_type);
		CU_ASSERT(p->has_timestamp);
		const struct track_info *tr = track(tracks, ntracks, track_uuid);
		CU_ASSERT_PTR_NOT_NULL_FATAL(tr);
		switch (e->type) {
		case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER: {
			CU_ASSERT_FATAL(nev < N_SMALL);
			const struct expect *x = &small_events[nev++];
			CU_ASSERT(tr->counter);
			CU_ASSERT_STRING_EQUAL(tr->name, x->track);
			CU_ASSERT_EQUAL(ts, (uint64_t)x->ts);
			CU_ASSERT_EQUAL(e->has_counter_value, !x->is_double);
			CU_ASSERT_EQUAL(e->has_double_counter_value, x->is_double);
			if (x->is_double) {
				CU_ASSERT_DOUBLE_EQUAL(e->double_counter_value, x->d, 0);
			} else {
				CU_ASSERT_EQUAL(e->counter_value, x->i);
			}
			break;
		}
		case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN:
			CU_ASSERT_STRING_EQUAL(tr->name, "phases: phase");
			CU_ASSERT_STRING_EQUAL(e->name, "warmup");
			CU_ASSERT_EQUAL(p->timestamp, T0 + 10);
			last_begin = (int64_t)p->timestamp;
			nslice++;
			break;
		case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END:
			CU_ASSERT_STRING_EQUAL(tr->name, "phases: phase");
			CU_ASSERT_EQUAL(last_begin, T0 + 10);
			CU_ASSERT_EQUAL(p->timestamp, T0 + 900);
			nslice++;
			break;
		case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT:
			CU_ASSERT_STRING_EQUAL(tr->name, "spmtap");
			CU_ASSERT_EQUAL(p->timestamp, (uint64_t)meta.start_boottime_ns);
			if (!strcmp(e->name, "spmtap recording")) {
				CU_ASSERT_STRING_EQUAL(arg(e, "spmtap_version"), "0.1.0");
				CU_ASSERT_STRING_EQUAL(arg(e, "command_line"), meta.command_line);
				CU_ASSERT_STRING_EQUAL(arg(e, "hostname"), "testhost");
				CU_ASSERT_STRING_EQUAL(arg(e, "metadata_json"), meta.extra_json);
			} else if (!strcmp(e->name, "stream 7")) {
				CU_ASSERT_STRING_EQUAL(arg(e, "tick_domain"), "gpu_ref_100MHz");
				CU_ASSERT_STRING_EQUAL(arg(e, "source"), "spm");
			} else {
				CU_ASSERT_STRING_EQUAL(e->name, "stream 9");
			}
			ninstant++;
			break;
		default:
			CU_FAIL("unexpected event type");
		}
	}
	CU_ASSERT_EQUAL(nev, N_SMALL);
	CU_ASSERT_EQUAL(nslice, 2);
	CU_ASSERT_EQUAL(ninstant, 3);
	CU_ASSERT_EQUAL(nstart, 4); /* one sequence per counter track */
	/* root, GPU group, XCC group, 2 SPM + 2 sensor counters, phases */
	CU_ASSERT_EQUAL(ntracks, 8);
	perfetto__protos__trace__free_unpacked(t, NULL);
}

/*
 * The hand-encoded sample packets: each is exactly what protobuf-c packs for
 * the message it decodes to, and resolves to the time and value written,
 * at the varint edges, INT64_MAX clamping, doubles, missing and skipped
 * cells, and a time that goes back (written on BOOTTIME, absolute).
 */
static void test_hand_encoding(void)
{
	static const struct series_column cols[] = {
		{ "A", "count", SERIES_U64 },
		{ "P", "W", SERIES_F64 },
	};
	const struct series_stream s = {
		.id = 3, .source = "spm", .gpu = 2, .xcc = 1, .ncols = 2, .cols = cols,
	};
	enum { N = 12 };
	int64_t ts[N] = { T0, T0, T0 + 1, T0 + 128, T0 + 16511, T0 + 16511, T0 + 5, -1,
			  T0 + 20000, T0 + 1000000000000LL, T0 + 1000000000000LL + 127, INT64_MAX };
	uint64_t a[N] = { 0, 127, 128, 16383, 16384, UINT64_MAX, (uint64_t)INT64_MAX, 1, 2, 3, 4, 5 };
	double pw[N] = { 0.0, -0.0, 1e-300, 123.456, NAN, INFINITY, -1.5, 2, 3, 4, 5, 6 };
	uint64_t miss_a[] = { 1u << 3 }; /* a[3] missing */
	const void *vals[] = { a, pw };
	const uint64_t *miss[] = { miss_a, NULL };
	struct series_chunk c = { &s, N, ts, NULL, vals, miss };
	struct writer *w;
	char err[512];
	CU_ASSERT_EQUAL_FATAL(writer_perfetto.open(&w, path("hand.pftrace"), &meta, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(writer_perfetto.begin(w, &s, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(writer_perfetto.write(w, &c, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(writer_perfetto.end(w, err, sizeof(err)), 0);

	size_t n;
	uint8_t *b = (uint8_t *)tf_slurp(path("hand.pftrace"), &n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	size_t pos = 0, nsample = 0;
	uint64_t seen_a = 0, seen_p = 0; /* bit i: sample i's cell was found */
	resolve_reset();
	while (pos < n) {
		CU_ASSERT_EQUAL_FATAL(b[pos], 0x0a);
		size_t p = pos + 1;
		uint64_t len = 0;
		unsigned shift = 0;
		for (;;) {
			uint8_t x = b[p++];
			len |= (uint64_t)(x & 0x7f) << shift;
			shift += 7;
			if (!(x & 0x80))
				break;
		}
		pf_packet *pk = perfetto__protos__trace_packet__unpack(NULL, len, b + p);
		CU_ASSERT_PTR_NOT_NULL_FATAL(pk);
		uint64_t t, tr;
		CU_ASSERT_EQUAL_FATAL(resolve(pk, &t, &tr), 0);
		if (pk->track_event && pk->track_event->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER) {
			uint8_t again[128];
			size_t m = perfetto__protos__trace_packet__get_packed_size(pk);
			CU_ASSERT_FATAL(m <= sizeof(again));
			perfetto__protos__trace_packet__pack(pk, again);
			CU_ASSERT(m == len && !memcmp(again, b + p, m));
			/* which sample: the first of that time not yet seen on this track */
			int dbl = pk->track_event->has_double_counter_value;
			int found = 0;
			for (int i = 0; i < N && !found; i++) {
				uint64_t *seen = dbl ? &seen_p : &seen_a;
				if (ts[i] < 0 || (uint64_t)ts[i] != t || (*seen >> i & 1))
					continue;
				if (dbl ? memcmp(&pk->track_event->double_counter_value, &pw[i], 8)
					: pk->track_event->counter_value !=
						  (int64_t)(a[i] > INT64_MAX ? INT64_MAX : a[i]))
					continue;
				*seen |= 1ull << i;
				found = 1;
			}
			CU_ASSERT(found);
			nsample++;
		}
		perfetto__protos__trace_packet__free_unpacked(pk, NULL);
		pos = p + len;
	}
	free(b);
	/* all but: a[3] missing, sample 7's time negative, P's NaN and inf */
	CU_ASSERT_EQUAL(seen_a, 0xfffu & ~(1u << 3) & ~(1u << 7));
	CU_ASSERT_EQUAL(seen_p, 0xfffu & ~(1u << 4) & ~(1u << 5) & ~(1u << 7));
	CU_ASSERT_EQUAL(nsample, 2 * N - 5);
}

/* Metadata larger than the writer's buffer goes out whole. */
static void test_big_metadata(void)
{
	size_t n = 300 * 1024;
	char *json = malloc(n + 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(json);
	memset(json, 'x', n);
	json[0] = '"';
	json[n - 1] = '"';
	json[n] = 0;
	struct writer_meta m = meta;
	m.extra_json = json;
	struct writer *w;
	char err[512];
	CU_ASSERT_EQUAL_FATAL(writer_perfetto.open(&w, path("big_meta.pftrace"), &m, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(writer_perfetto.begin(w, &spm, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(writer_perfetto.end(w, err, sizeof(err)), 0);
	pf_trace *t = unpack_file(path("big_meta.pftrace"));
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	int found = 0;
	for (size_t i = 0; i < t->n_packet; i++) {
		const pf_event *e = t->packet[i]->track_event;
		const char *v = e ? arg(e, "metadata_json") : NULL;
		if (v && !strcmp(v, json))
			found++;
	}
	CU_ASSERT_EQUAL(found, 1);
	CU_ASSERT_PTR_NOT_NULL(t->packet[0]->track_descriptor);
	CU_ASSERT(t->packet[0]->has_sequence_flags);
	perfetto__protos__trace__free_unpacked(t, NULL);
	free(json);
}

/* ---- bounded memory ---- */

static long vm_rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

/* Counts whole Trace.packet fields; returns the bytes they span. */
static size_t walk_packets(const uint8_t *b, size_t n, size_t *npackets)
{
	size_t pos = 0;
	*npackets = 0;
	while (pos < n && b[pos] == 0x0a) {
		size_t p = pos + 1;
		uint64_t len = 0;
		unsigned shift = 0;
		while (p < n) {
			uint8_t c = b[p++];
			len |= (uint64_t)(c & 0x7f) << shift;
			shift += 7;
			if (!(c & 0x80))
				break;
		}
		if (len > n - p)
			break;
		pos = p + len;
		(*npackets)++;
	}
	return pos;
}

#define BIG_SAMPLES 2000000u
#define CHUNK 4096u

static void test_big_stream_bounded_memory(void)
{
	static const struct series_column col[] = { { "SQ_BUSY_CYCLES", "count", SERIES_U64 } };
	const struct series_stream s = {
		.id = 1, .source = "spm", .gpu = 1, .xcc = 0, .device_name = "MI300A",
		.tick_domain = "gpu_ref_100MHz", .ncols = 1, .cols = col,
	};
	static int64_t ts[CHUNK];
	static uint64_t v[CHUNK];
	const void *vals[] = { v };
	struct writer *w;
	char err[512];
	CU_ASSERT_EQUAL_FATAL(writer_perfetto.open(&w, path("big.pftrace"), &meta, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(writer_perfetto.begin(w, &s, err, sizeof(err)), 0);
	long rss0 = -1;
	int rc = 0;
	for (uint32_t done = 0; done < BIG_SAMPLES && !rc; done += CHUNK) {
		uint32_t n = BIG_SAMPLES - done < CHUNK ? BIG_SAMPLES - done : CHUNK;
		for (uint32_t i = 0; i < n; i++) {
			ts[i] = T0 + (int64_t)(done + i) * 10000;
			v[i] = (uint64_t)(done + i) * 3;
		}
		struct series_chunk c = { &s, n, ts, NULL, vals, NULL };
		rc = writer_perfetto.write(w, &c, err, sizeof(err));
		if (done == 16 * CHUNK)
			rss0 = vm_rss_kib();
	}
	CU_ASSERT_EQUAL(rc, 0);
	long rss1 = vm_rss_kib();
	CU_ASSERT_EQUAL(writer_perfetto.end(w, err, sizeof(err)), 0);
	fprintf(stderr, "  [VmRSS %ld kB after 64k samples, %ld kB after %u]\n", rss0, rss1, BIG_SAMPLES);
	CU_ASSERT(rss0 > 0 && rss1 > 0);
	CU_ASSERT(rss1 - rss0 < 2048); /* the file is ~50 MB; memory must not follow it */

	size_t n;
	uint8_t *b = (uint8_t *)tf_slurp(path("big.pftrace"), &n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	size_t np;
	CU_ASSERT_EQUAL(walk_packets(b, n, &np), n);
	/* root, instant, GPU1, GPU1 XCC0, the counter track, stream instant, its sequence's start, samples */
	CU_ASSERT_EQUAL(np, 7 + BIG_SAMPLES);
	/* The last packet is the last sample. */
	size_t pos = 0, last = 0;
	for (size_t k = 0; k < np; k++) {
		last = pos;
		size_t p = pos + 1;
		uint64_t len = 0;
		unsigned shift = 0;
		for (;;) {
			uint8_t c = b[p++];
			len |= (uint64_t)(c & 0x7f) << shift;
			shift += 7;
			if (!(c & 0x80))
				break;
		}
		pos = p + len;
	}
	size_t hl = 1;
	while (b[last + hl] & 0x80)
		hl++;
	hl++;
	pf_packet *p = perfetto__protos__trace_packet__unpack(NULL, n - last - hl, b + last + hl);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p->track_event);
	CU_ASSERT_EQUAL(p->timestamp, 10000); /* the time since the sample before */
	CU_ASSERT_EQUAL(p->track_event->counter_value, (int64_t)(BIG_SAMPLES - 1) * 3);
	perfetto__protos__trace_packet__free_unpacked(p, NULL);
	free(b);
	unlink(path("big.pftrace"));
}

/* ---- full disks ---- */

#define FSIZE_LIMIT 150001 /* not on a packet boundary */

static void test_efbig_leaves_whole_packets(void)
{
	const char *p = path("efbig.pftrace");
	int pfd[2];
	CU_ASSERT_EQUAL_FATAL(pipe(pfd), 0);
	pid_t pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		signal(SIGXFSZ, SIG_IGN);
		struct rlimit rl = { FSIZE_LIMIT, FSIZE_LIMIT };
		if (setrlimit(RLIMIT_FSIZE, &rl))
			_exit(3);
		char err[512] = "";
		struct writer *w;
		if (writer_perfetto.open(&w, p, &meta, err, sizeof(err)) ||
		    writer_perfetto.begin(w, &spm, err, sizeof(err)))
			_exit(4);
		static int64_t ts[1000];
		static uint64_t a[1000], b[1000];
		const void *vals[] = { a, b };
		int rc = 0;
		uint64_t k = 0;
		for (int round = 0; round < 100 && !rc; round++) {
			for (int i = 0; i < 1000; i++, k++) {
				ts[i] = T0 + (int64_t)k * 1000;
				a[i] = k;
				b[i] = k + 1;
			}
			struct series_chunk c = { &spm, 1000, ts, NULL, vals, NULL };
			rc = writer_perfetto.write(w, &c, err, sizeof(err));
		}
		char err2[512] = "";
		int rc2 = writer_perfetto.end(w, err2, sizeof(err2));
		dprintf(pfd[1], "%d\n%d\n%s\n%s\n", rc, rc2, err, err2);
		_exit(0);
	}
	close(pfd[1]);
	char out[2048] = "";
	ssize_t got = 0, k;
	while ((k = read(pfd[0], out + got, sizeof(out) - 1 - (size_t)got)) > 0)
		got += k;
	close(pfd[0]);
	int st;
	CU_ASSERT_EQUAL_FATAL(waitpid(pid, &st, 0), pid);
	CU_ASSERT_FATAL(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	int rc, rc2;
	char e1[512] = "", e2[512] = "";
	CU_ASSERT_EQUAL_FATAL(sscanf(out, "%d\n%d\n%511[^\n]\n%511[^\n]", &rc, &rc2, e1, e2), 4);
	CU_ASSERT_EQUAL(rc, -EFBIG);
	CU_ASSERT_EQUAL(rc2, -EFBIG); /* end() reports it too */
	char want[600];
	snprintf(want, sizeof(want), "%s: File too large", p);
	CU_ASSERT_STRING_EQUAL(e1, want);
	CU_ASSERT_STRING_EQUAL(e2, want);

	/* What is on disk is whole packets and parses completely. */
	size_t n;
	uint8_t *b = (uint8_t *)tf_slurp(p, &n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT(n > FSIZE_LIMIT - 70 * 1024 && n <= FSIZE_LIMIT);
	size_t np;
	CU_ASSERT_EQUAL(walk_packets(b, n, &np), n);
	free(b);
	pf_trace *t = unpack_file(p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_EQUAL(t->n_packet, np);
	/* The samples that made it are a gap-free prefix of those written. */
	uint64_t want_a = 0, want_b = 1;
	size_t ncounter = 0;
	resolve_reset();
	for (size_t i = 0; i < t->n_packet; i++) {
		uint64_t ts, tr;
		CU_ASSERT_EQUAL_FATAL(resolve(t->packet[i], &ts, &tr), 0);
		const pf_event *e = t->packet[i]->track_event;
		if (!e || e->type != PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER)
			continue;
		if (ncounter++ % 2 == 0) {
			CU_ASSERT_EQUAL(e->counter_value, (int64_t)want_a);
			CU_ASSERT_EQUAL(ts, (uint64_t)(T0 + (int64_t)want_a * 1000));
			want_a++;
		} else {
			CU_ASSERT_EQUAL(e->counter_value, (int64_t)want_b);
			want_b++;
		}
	}
	CU_ASSERT(ncounter > 1000);
	perfetto__protos__trace__free_unpacked(t, NULL);
	if (!need_protoc())
		CU_ASSERT_EQUAL(protoc_decode(p, path("efbig.txt")), 0);
}

static const char *need_dev_full(void)
{
	return access("/dev/full", W_OK) ? "no writable /dev/full" : NULL;
}

static void test_enospc_names_file(void)
{
	struct writer *w;
	char err[512] = "";
	CU_ASSERT_EQUAL_FATAL(writer_perfetto.open(&w, "/dev/full", &meta, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(writer_perfetto.begin(w, &spm, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(writer_perfetto.end(w, err, sizeof(err)), -ENOSPC);
	CU_ASSERT_STRING_EQUAL(err, "/dev/full: No space left on device");
}

/* ---- misuse ---- */

static void test_errors(void)
{
	struct writer *w;
	char err[512] = "";
	char bad[300];
	snprintf(bad, sizeof(bad), "%s/no/such/dir/x.pftrace", dir);
	CU_ASSERT_EQUAL(writer_perfetto.open(&w, bad, &meta, err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, bad));

	CU_ASSERT_EQUAL_FATAL(writer_perfetto.open(&w, path("errs.pftrace"), NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(writer_perfetto.begin(w, &spm, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(writer_perfetto.begin(w, &spm, err, sizeof(err)), -EEXIST);
	int64_t ts[] = { T0 };
	uint64_t v[] = { 1 };
	const void *vals[] = { v, v };
	struct series_chunk c = { &smi, 1, ts, NULL, vals, NULL }; /* smi not declared */
	CU_ASSERT_EQUAL(writer_perfetto.write(w, &c, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "undeclared stream 9"));
	struct series_slice s = { .start_ns = T0 + 10, .end_ns = T0, .name = "backwards" };
	CU_ASSERT_EQUAL(writer_perfetto.slice(w, &s, err, sizeof(err)), -EINVAL);
	/* Errors of use are not sticky: the file is still fine. */
	c.stream = &spm;
	CU_ASSERT_EQUAL(writer_perfetto.write(w, &c, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(writer_perfetto.end(w, err, sizeof(err)), 0);
	pf_trace *t = unpack_file(path("errs.pftrace"));
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	perfetto__protos__trace__free_unpacked(t, NULL);

	char reason[128];
	CU_ASSERT_EQUAL(writer_perfetto.probe(reason, sizeof(reason)), 0);
	CU_ASSERT_STRING_EQUAL(writer_perfetto.name, "perfetto");
	CU_ASSERT_STRING_EQUAL(writer_perfetto.ext, ".pftrace");
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "protoc_decode", test_protoc_decode, need_protoc },
		{ "protobuf_c_every_packet", test_protobuf_c_every_packet, NULL },
		{ "hand_encoding", test_hand_encoding, NULL },
		{ "big_metadata", test_big_metadata, NULL },
		{ "big_stream_bounded_memory", test_big_stream_bounded_memory, NULL },
		{ "efbig_leaves_whole_packets", test_efbig_leaves_whole_packets, NULL },
		{ "enospc_names_file", test_enospc_names_file, need_dev_full },
		{ "errors", test_errors, NULL },
		{ NULL, NULL, NULL },
	};
	if (!mkdtemp(dir))
		return 1;
	int rc = testenv_run_suite("write_perfetto", cases, argc, argv);
	char cmd[300]; /* KEEP=1 leaves the files (small.pftrace, small.txt) to look at */
	snprintf(cmd, sizeof(cmd), getenv("KEEP") ? "true %s" : "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		rc = rc ? rc : 1;
	return rc;
}
