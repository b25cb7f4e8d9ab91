/* SPDX-License-Identifier: MIT */
/*
 * Streaming Perfetto trace writer (writer.h, docs/formats/perfetto.md).
 *
 * A Perfetto trace file is a Trace message, i.e. nothing but a sequence of
 * `packet` fields (field 1, length delimited), so each TracePacket is encoded
 * as soon as it is produced and appended to a fixed buffer that is written
 * out when full.  Memory depends on the number of streams and slice tracks,
 * never on the duration.
 *
 * Two kinds of packets.  The rare ones (tracks, metadata, slices, the start
 * of a counter sequence) go through protobuf-c (collector/proto/
 * perfetto_trace.proto) on sequence 1.  The samples, one TYPE_COUNTER event
 * per cell, are encoded by hand (pf_write): protobuf-c's size-then-pack walk
 * of its field descriptors cost ~200 ns per cell, most of the writer's CPU
 * (tests/bench/bench_writers.c, notes in docs/formats/perfetto.md).  Each
 * counter track has its own packet sequence whose first packet sets
 * TracePacketDefaults (the track, and an incremental clock that starts equal
 * to BOOTTIME), so a sample packet carries no track and only the time since
 * the previous sample of its track: ~17 bytes instead of ~24.
 *
 * The buffer only ever holds whole packets.  If the disk fills (or the file
 * size limit is hit) part way through a write, the file is cut back to the
 * last whole packet, so what is on disk stays a complete, parseable trace.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "collector/lib/outset.h"
#include "collector/lib/writebehind.h"
#include "collector/lib/writer.h"
#include "collector/proto/perfetto_trace.pb-c.h"

/* Big blocks: one write() per MiB of trace. */
#define PF_BUF_BYTES (1024u * 1024)
/* The sequence of tracks, metadata and slices; counter tracks count up from 2. */
#define PF_SEQ_ID 1u
/* Perfetto's BuiltinClock BOOTTIME, and the first sequence-scoped clock id. */
#define PF_CLOCK_BOOTTIME 6u
#define PF_CLOCK_INCREMENTAL 64u
/* The longest hand-encoded counter packet (pf_write), with room to spare. */
#define PF_CELL_MAX 64u
/* Track uuids are small so that their varints stay short (2 bytes). */
#define PF_UUID_ROOT 1u
#define PF_UUID_FIRST 16u
/* Sensor tracks sort above the XCC groups of their GPU. */
#define PF_RANK_SENSOR_BASE (-100000)

typedef Perfetto__Protos__TracePacket pf_packet;
typedef Perfetto__Protos__TrackDescriptor pf_track;
typedef Perfetto__Protos__CounterDescriptor pf_counter;
typedef Perfetto__Protos__TrackEvent pf_event;
typedef Perfetto__Protos__DebugAnnotation pf_arg;

/* A counter track and its packet sequence. */
struct pf_col {
	enum series_type type;
	uint32_t seq;     /* trusted_packet_sequence_id */
	bool started;     /* its first packet (defaults, clock) is written */
	uint64_t last_ns; /* the sequence's incremental clock: the last time written on it */
	uint8_t seqb[8];  /* put_cell_u64's constant run: 0x50, the id's varint, 0x5a */
	uint8_t nseqb;
};

struct pf_stream {
	uint32_t id;
	uint32_t ncols;
	uint64_t first_uuid; /* column c is on track first_uuid + c */
	struct pf_col *cols;
};

/* A parent track: a GPU (xcc == -1) or one XCC of a GPU. */
struct pf_group {
	uint32_t node;
	uint32_t gpu;
	int32_t xcc;
	uint64_t uuid;
};

/* One Perfetto track per source of phases: a marker thread (pid, tid), the phases file, the emulator. */
struct pf_slice_track {
	uint32_t node;
	uint32_t track, pid;
	char category[16];
	uint64_t uuid;
};

struct writer {
	int fd;
	int err;           /* sticky: the first write error, -errno */
	char msg[320];     /* its sentence, naming the file */
	char *path;
	off_t base;        /* bytes on disk, all whole packets */
	struct wbehind wb; /* the pages far behind base leave the page cache (writebehind.h) */
	size_t len;        /* bytes pending in buf, all whole packets */
	bool first;        /* the next packet is the sequence's first */
	uint64_t next_uuid;
	uint32_t next_seq; /* the next counter track's sequence id */
	int64_t meta_ns;   /* timestamp of the metadata instants */
	uint64_t skipped;  /* cells not written: negative time, non-finite value */

	struct pf_stream *streams;
	size_t nstreams, cap_streams;
	size_t last_stream; /* lookup cache */
	struct pf_group *groups;
	size_t ngroups, cap_groups;
	struct pf_slice_track *slice_tracks;
	size_t nslice_tracks, cap_slice_tracks;
	/* merged job recordings (pf_node): node key -> its process track */
	struct pf_node { uint32_t node; uint64_t uuid; } *nodes;
	size_t nnodes, cap_nodes;

	uint8_t buf[PF_BUF_BYTES];
};

static void fail(struct writer *w, int err, const char *what, char *msg, size_t len)
{
	const char *s = strerrordesc_np(-err);
	if (!s)
		s = "unknown error";
	if (what)
		snprintf(msg, len, "%s: %s: %s", w->path, what, s);
	else
		snprintf(msg, len, "%s: %s", w->path, s);
}

static int report(struct writer *w, char *err, size_t errlen)
{
	if (w->err && err && errlen)
		snprintf(err, errlen, "%s", w->msg);
	return w->err;
}

/* A failed emit: the sticky write error, or an allocation failure. */
static int failed(struct writer *w, int rc, char *err, size_t errlen)
{
	if (w->err)
		return report(w, err, errlen);
	if (err && errlen) {
		const char *d = strerrordesc_np(-rc);
		snprintf(err, errlen, "%s: %s", w->path, d ? d : "unknown error");
	}
	return rc;
}

static int invalid(struct writer *w, char *err, size_t errlen, const char *why)
{
	if (err && errlen)
		snprintf(err, errlen, "%s: %s", w->path, why);
	return -EINVAL;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/*
 * Length of the longest prefix of data[0..n) made of whole packets.  data
 * starts on a packet boundary and holds only packets this file wrote.
 */
static size_t whole_packets(const uint8_t *data, size_t n)
{
	size_t pos = 0, good = 0;
	while (pos < n) {
		size_t p = pos + 1; /* tag 0x0a */
		uint64_t len = 0;
		unsigned int shift = 0;
		while (p < n && shift < 64) {
			uint8_t b = data[p++];
			len |= (uint64_t)(b & 0x7f) << shift;
			shift += 7;
			if (!(b & 0x80))
				break;
		}
		if (p > n || (p == n && len) || len > n - p)
			break;
		pos = p + (size_t)len;
		good = pos;
	}
	return good;
}

/* Append whole packets data[0..n) to the file; on failure cut it back. */
static int write_out(struct writer *w, const uint8_t *data, size_t n)
{
	size_t off = 0;
	while (off < n) {
		ssize_t k = wb_write(&w->wb, w->fd, data + off, n - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			/* write() returning 0 for a regular file means no space. */
			int e = k < 0 ? -errno : -ENOSPC;
			size_t keep = whole_packets(data, off);
			w->err = e;
			if (keep < off && ftruncate(w->fd, w->base + (off_t)keep) != 0) {
				const char *d = strerrordesc_np(errno);
				char first[200];
				fail(w, e, NULL, first, sizeof(first));
				snprintf(w->msg, sizeof(w->msg),
					 "%s (and cutting the file back to its last whole packet failed: %s)",
					 first, d ? d : "unknown error");
			} else {
				fail(w, e, NULL, w->msg, sizeof(w->msg));
			}
			w->base += (off_t)keep;
			return e;
		}
		off += (size_t)k;
	}
	w->base += (off_t)n;
	return 0;
}

static int flush(struct writer *w)
{
	if (w->err)
		return w->err;
	size_t n = w->len;
	w->len = 0;
	return n ? write_out(w, w->buf, n) : 0;
}

/* Encode one TracePacket (its sequence already set) as a Trace.packet field and queue it. */
static int emit_packed(struct writer *w, pf_packet *p)
{
	if (w->err)
		return w->err;
	size_t body = perfetto__protos__trace_packet__get_packed_size(p);
	size_t need = 1 + varint_len(body) + body;
	int rc = 0;
	if (w->len + need > PF_BUF_BYTES && flush(w))
		rc = w->err;
	else if (need <= PF_BUF_BYTES) {
		uint8_t *o = w->buf + w->len;
		o[0] = 0x0a; /* Trace.packet: field 1, wire type 2 */
		size_t h = 1 + put_varint(o + 1, body);
		perfetto__protos__trace_packet__pack(p, o + h);
		w->len += need;
	} else {
		uint8_t *tmp = malloc(need); /* a packet larger than the buffer (long metadata) */
		if (!tmp) {
			rc = -ENOMEM;
		} else {
			tmp[0] = 0x0a;
			size_t h = 1 + put_varint(tmp + 1, body);
			perfetto__protos__trace_packet__pack(p, tmp + h);
			rc = write_out(w, tmp, need);
			free(tmp);
		}
	}
	return rc;
}

/* A packet of sequence 1, whose first packet clears its (empty) incremental state. */
static int emit(struct writer *w, pf_packet *p)
{
	if (w->err)
		return w->err;
	p->has_trusted_packet_sequence_id = 1;
	p->trusted_packet_sequence_id = PF_SEQ_ID;
	bool first = w->first;
	if (first) {
		p->has_sequence_flags = 1;
		p->sequence_flags = PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED;
		p->has_first_packet_on_sequence = 1;
		p->first_packet_on_sequence = 1;
		w->first = false;
	}
	int rc = emit_packed(w, p);
	if (first) {
		p->has_sequence_flags = 0;
		p->has_first_packet_on_sequence = 0;
		if (rc == -ENOMEM)
			w->first = true;
	}
	return rc;
}

static int emit_track(struct writer *w, pf_track *t)
{
	pf_packet p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	p.track_descriptor = t;
	return emit(w, &p);
}

static void track_init(pf_track *t, uint64_t uuid, uint64_t parent, const char *name)
{
	perfetto__protos__track_descriptor__init(t);
	t->has_uuid = 1;
	t->uuid = uuid;
	t->name = (char *)name;
	if (parent) {
		t->has_parent_uuid = 1;
		t->parent_uuid = parent;
	}
}

static void track_rank(pf_track *t, int32_t rank)
{
	t->has_sibling_order_rank = 1;
	t->sibling_order_rank = rank;
}

static void track_explicit_children(pf_track *t)
{
	t->has_child_ordering = 1;
	t->child_ordering = PERFETTO__PROTOS__TRACK_DESCRIPTOR__CHILD_TRACKS_ORDERING__EXPLICIT;
}

/* An instant event on the "spmtap" track carrying key/value arguments. */
static int emit_instant(struct writer *w, const char *name, pf_arg **args, size_t nargs)
{
	pf_event e = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	e.has_type = 1;
	e.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
	e.has_track_uuid = 1;
	e.track_uuid = PF_UUID_ROOT;
	e.name = (char *)name;
	e.n_debug_annotations = nargs;
	e.debug_annotations = args;
	pf_packet p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	p.has_timestamp = 1;
	p.timestamp = (uint64_t)w->meta_ns;
	p.track_event = &e;
	return emit(w, &p);
}

static void arg_str(pf_arg *a, const char *name, const char *v)
{
	perfetto__protos__debug_annotation__init(a);
	a->name = (char *)name;
	a->string_value = (char *)(v ? v : "");
}

static void arg_int(pf_arg *a, const char *name, int64_t v)
{
	perfetto__protos__debug_annotation__init(a);
	a->name = (char *)name;
	a->has_int_value = 1;
	a->int_value = v;
}

static void arg_double(pf_arg *a, const char *name, double v)
{
	perfetto__protos__debug_annotation__init(a);
	a->name = (char *)name;
	a->has_double_value = 1;
	a->double_value = v;
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 8;
	void *p = realloc(*arr, nc * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = nc;
	return 0;
}

static void free_writer(struct writer *w)
{
	for (size_t i = 0; i < w->nstreams; i++)
		free(w->streams[i].cols);
	free(w->streams);
	free(w->groups);
	free(w->slice_tracks);
	free(w->nodes);
	free(w->path);
	free(w);
}

static int pf_probe(char *reason, size_t len)
{
	(void)reason;
	(void)len;
	return 0; /* protobuf-c is linked in */
}

static int pf_open(struct writer **out, const char *path, const struct writer_meta *meta,
		   char *err, size_t errlen)
{
	*out = NULL;
	struct writer *w = calloc(1, sizeof(*w));
	/* FINAL.part while recording (outset.h): the session renames it at the end. */
	char *p = path ? out_set_part(meta ? meta->files : NULL, path) : NULL;
	if (!w || !p) {
		free(w);
		free(p);
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path ? path : "(null)", strerrordesc_np(ENOMEM));
		return -ENOMEM;
	}
	w->path = p;
	w->fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		int e = -errno;
		char m[320];
		fail(w, e, NULL, m, sizeof(m));
		if (err && errlen)
			snprintf(err, errlen, "%s", m);
		free_writer(w);
		return e;
	}
	w->first = true;
	w->next_uuid = PF_UUID_FIRST;
	w->next_seq = PF_SEQ_ID + 1;
	w->meta_ns = meta ? meta->start_boottime_ns : 0;
	if (w->meta_ns <= 0) {
		struct timespec ts;
		clock_gettime(CLOCK_BOOTTIME, &ts);
		w->meta_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	}

	/* The "spmtap" track: the recording's metadata, one instant per stream. */
	pf_track root;
	track_init(&root, PF_UUID_ROOT, 0, "spmtap");
	int rc = emit_track(w, &root);

	pf_arg a[8], *ap[8];
	size_t n = 0;
	arg_str(&a[n++], "spmtap_version", meta ? meta->spmtap_version : NULL);
	arg_str(&a[n++], "command_line", meta ? meta->command_line : NULL);
	arg_str(&a[n++], "hostname", meta ? meta->hostname : NULL);
	arg_int(&a[n++], "start_boottime_ns", w->meta_ns);
	arg_double(&a[n++], "spm_clock_hz", meta ? meta->spm_clock_hz : 0.0);
	arg_str(&a[n++], "clock", "CLOCK_BOOTTIME ns (Perfetto BUILTIN_CLOCK_BOOTTIME)");
	if (meta && meta->extra_json)
		arg_str(&a[n++], "metadata_json", meta->extra_json);
	for (size_t i = 0; i < n; i++)
		ap[i] = &a[i];
	if (!rc)
		rc = emit_instant(w, "spmtap recording", ap, n);
	if (rc) {
		rc = failed(w, rc, err, errlen);
		close(w->fd);
		free_writer(w);
		return rc;
	}
	*out = w;
	return 0;
}

static struct pf_stream *find_stream(struct writer *w, uint32_t id)
{
	if (w->last_stream < w->nstreams && w->streams[w->last_stream].id == id)
		return &w->streams[w->last_stream];
	for (size_t i = 0; i < w->nstreams; i++)
		if (w->streams[i].id == id) {
			w->last_stream = i;
			return &w->streams[i];
		}
	return NULL;
}

/* The process track of a merged recording's node (pf_node), or 0: the root. */
static uint64_t node_uuid(const struct writer *w, uint32_t node)
{
	for (size_t i = 0; i < w->nnodes; i++)
		if (w->nodes[i].node == node)
			return w->nodes[i].uuid;
	return 0;
}

/* A node-level stream (the Cray PM counters, source "cray_pm", merged by spmtap merge): no GPU of its own. */
#define PF_NODE_GROUP (-2)
static bool node_level(const struct series_stream *s)
{
	return s->source && !strcmp(s->source, "cray_pm");
}

/* The parent track of a GPU (xcc -1), of one of its XCCs, or of the node's own series (PF_NODE_GROUP), declared on first use. */
static int group(struct writer *w, const struct series_stream *s, int32_t xcc, uint64_t *uuid)
{
	for (size_t i = 0; i < w->ngroups; i++)
		if (w->groups[i].node == s->node && w->groups[i].gpu == s->gpu && w->groups[i].xcc == xcc) {
			*uuid = w->groups[i].uuid;
			return 0;
		}
	uint64_t parent = node_uuid(w, s->node);
	if (xcc >= 0) {
		int rc = group(w, s, -1, &parent);
		if (rc)
			return rc;
	}
	if (grow((void **)&w->groups, &w->cap_groups, w->ngroups, sizeof(*w->groups)))
		return -ENOMEM;
	char name[256];
	if (xcc == PF_NODE_GROUP)
		snprintf(name, sizeof(name), "Node power (Cray PM)");
	else if (xcc < 0 && s->device_name && *s->device_name)
		snprintf(name, sizeof(name), "GPU%u %s", s->gpu, s->device_name);
	else if (xcc < 0)
		snprintf(name, sizeof(name), "GPU%u", s->gpu);
	else
		snprintf(name, sizeof(name), "GPU%u XCC%d", s->gpu, xcc);
	pf_track t;
	track_init(&t, w->next_uuid, parent, name);
	track_explicit_children(&t);
	track_rank(&t, xcc < 0 ? (int32_t)s->gpu : xcc);
	int rc = emit_track(w, &t);
	if (rc)
		return rc;
	w->groups[w->ngroups++] = (struct pf_group){ .node = s->node, .gpu = s->gpu, .xcc = xcc, .uuid = w->next_uuid++ };
	*uuid = w->groups[w->ngroups - 1].uuid;
	return 0;
}

static int pf_begin(struct writer *w, const struct series_stream *s, char *err, size_t errlen)
{
	if (w->err)
		return report(w, err, errlen);
	if (!s || !s->ncols || !s->cols)
		return invalid(w, err, errlen, "a stream with no columns");
	if (find_stream(w, s->id)) {
		if (err && errlen)
			snprintf(err, errlen, "%s: stream %u declared twice", w->path, s->id);
		return -EEXIST;
	}
	for (uint32_t c = 0; c < s->ncols; c++)
		if (!s->cols[c].name ||
		    (s->cols[c].type != SERIES_U64 && s->cols[c].type != SERIES_F64))
			return invalid(w, err, errlen, "a column with no name or an unknown type");

	if (grow((void **)&w->streams, &w->cap_streams, w->nstreams, sizeof(*w->streams)))
		return -ENOMEM;
	struct pf_col *types = calloc(s->ncols, sizeof(*types));
	if (!types)
		return -ENOMEM;
	for (uint32_t c = 0; c < s->ncols; c++) {
		types[c] = (struct pf_col){ .type = s->cols[c].type, .seq = w->next_seq++ };
		types[c].seqb[0] = 0x50; /* trusted_packet_sequence_id (10), varint */
		types[c].nseqb = (uint8_t)(1 + put_varint(types[c].seqb + 1, types[c].seq));
		types[c].seqb[types[c].nseqb++] = 0x5a; /* track_event (11), length delimited */
	}

	uint64_t parent = 0;
	int rc = group(w, s, node_level(s) ? PF_NODE_GROUP : s->xcc, &parent);
	if (rc) {
		free(types);
		return failed(w, rc, err, errlen);
	}
	uint64_t first = w->next_uuid;
	w->next_uuid += s->ncols;
	for (uint32_t c = 0; c < s->ncols && !rc; c++) {
		const struct series_column *col = &s->cols[c];
		char name[256];
		bool count = !col->unit || !*col->unit || !strcmp(col->unit, "count");
		char xccs[16] = "";
		if (s->xcc >= 0)
			snprintf(xccs, sizeof(xccs), " XCC%d", s->xcc);
		if (node_level(s))
			snprintf(name, sizeof(name), "%s (%s)", col->name, col->unit ? col->unit : "");
		else if (count)
			snprintf(name, sizeof(name), "GPU%u%s %s", s->gpu, xccs, col->name);
		else
			snprintf(name, sizeof(name), "GPU%u%s %s (%s)", s->gpu, xccs, col->name, col->unit);
		pf_counter cd = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
		if (count) {
			cd.has_unit = 1;
			cd.unit = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__UNIT__UNIT_COUNT;
		} else {
			cd.unit_name = (char *)col->unit;
		}
		pf_track t;
		track_init(&t, first + c, parent, name);
		t.counter = &cd;
		track_rank(&t, s->xcc >= 0 ? (int32_t)c : PF_RANK_SENSOR_BASE + (int32_t)c);
		rc = emit_track(w, &t);
	}

	/* What the stream is, for the reader: an instant on the spmtap track. */
	char title[64];
	snprintf(title, sizeof(title), "stream %u", s->id);
	pf_arg a[8], *ap[8];
	size_t n = 0;
	arg_str(&a[n++], "source", s->source);
	arg_int(&a[n++], "gpu", s->gpu);
	arg_int(&a[n++], "gpu_id", s->gpu_id);
	arg_int(&a[n++], "xcc", s->xcc);
	arg_str(&a[n++], "device_name", s->device_name);
	arg_str(&a[n++], "tick_domain", s->tick_domain);
	arg_int(&a[n++], "columns", s->ncols);
	for (size_t i = 0; i < n; i++)
		ap[i] = &a[i];
	if (!rc)
		rc = emit_instant(w, title, ap, n);
	if (rc) {
		free(types);
		return failed(w, rc, err, errlen);
	}
	w->streams[w->nstreams++] = (struct pf_stream){
		.id = s->id, .ncols = s->ncols, .first_uuid = first, .cols = types,
	};
	return 0;
}

/*
 * The first packet of a counter track's sequence: clears its incremental
 * state and sets its defaults (the track; timestamps on clock 64) and clock
 * 64 = BOOTTIME t0, incremental, as Perfetto's own SDK starts a sequence.
 */
static int start_sequence(struct writer *w, struct pf_col *pc, uint64_t track, uint64_t t0)
{
	Perfetto__Protos__TrackEventDefaults ted = PERFETTO__PROTOS__TRACK_EVENT_DEFAULTS__INIT;
	ted.has_track_uuid = 1;
	ted.track_uuid = track;
	Perfetto__Protos__TracePacketDefaults d = PERFETTO__PROTOS__TRACE_PACKET_DEFAULTS__INIT;
	d.has_timestamp_clock_id = 1;
	d.timestamp_clock_id = PF_CLOCK_INCREMENTAL;
	d.track_event_defaults = &ted;
	Perfetto__Protos__ClockSnapshot__Clock boot = PERFETTO__PROTOS__CLOCK_SNAPSHOT__CLOCK__INIT;
	boot.has_clock_id = boot.has_timestamp = 1;
	boot.clock_id = PF_CLOCK_BOOTTIME;
	boot.timestamp = t0;
	Perfetto__Protos__ClockSnapshot__Clock inc = boot;
	inc.clock_id = PF_CLOCK_INCREMENTAL;
	inc.has_is_incremental = 1;
	inc.is_incremental = 1;
	Perfetto__Protos__ClockSnapshot__Clock *clocks[] = { &boot, &inc };
	Perfetto__Protos__ClockSnapshot cs = PERFETTO__PROTOS__CLOCK_SNAPSHOT__INIT;
	cs.n_clocks = 2;
	cs.clocks = clocks;
	pf_packet p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	p.has_trusted_packet_sequence_id = 1;
	p.trusted_packet_sequence_id = pc->seq;
	p.has_sequence_flags = 1;
	p.sequence_flags = PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED;
	p.has_first_packet_on_sequence = 1;
	p.first_packet_on_sequence = 1;
	/* The packet's own time on BOOTTIME, not on the clock it defines. */
	p.has_timestamp = p.has_timestamp_clock_id = 1;
	p.timestamp = t0;
	p.timestamp_clock_id = PF_CLOCK_BOOTTIME;
	p.trace_packet_defaults = &d;
	p.clock_snapshot = &cs;
	int rc = emit_packed(w, &p);
	if (!rc) {
		pc->started = true;
		pc->last_ns = t0;
	}
	return rc;
}

/*
 * One cell as a TracePacket, by hand (at most PF_CELL_MAX bytes at o):
 *   Trace.packet (1, len) {
 *     timestamp (8): ns since the sequence's previous sample (clock 64)
 *     trusted_packet_sequence_id (10)
 *     track_event (11, len) { type (9) = TYPE_COUNTER,
 *                             counter_value (30) | double_counter_value (44) }
 *     sequence_flags (13) = SEQ_NEEDS_INCREMENTAL_STATE
 *     [timestamp_clock_id (58) = 6, timestamp absolute: a time before it]
 *   }
 * in field number order, as protobuf-c packs the same message
 * (tests/test_write_perfetto.c compares them byte for byte).
 * The track is the sequence's default.  A time earlier than the previous
 * one (which a stream's chunks never have) is written on BOOTTIME and
 * leaves the incremental clock where it was.
 */
static size_t put_cell(uint8_t *o, struct pf_col *pc, uint64_t t, const struct series_chunk *c,
		       uint32_t col, uint32_t i)
{
	uint8_t te[16];
	size_t nte = 0;
	te[nte++] = 0x48; /* type (9), varint */
	te[nte++] = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
	if (pc->type == SERIES_U64) {
		uint64_t v = series_u64(c, col, i);
		te[nte++] = 0xf0; /* counter_value (30), varint: tag 240 */
		te[nte++] = 0x01;
		nte += put_varint(te + nte, v > INT64_MAX ? INT64_MAX : v);
	} else {
		double d = series_f64(c, col, i);
		uint64_t bits;
		memcpy(&bits, &d, sizeof(bits));
		te[nte++] = 0xe1; /* double_counter_value (44), fixed64: tag 353 */
		te[nte++] = 0x02;
		for (int b = 0; b < 8; b++)
			te[nte++] = (uint8_t)(bits >> (8 * b)); /* little endian on the wire */
	}
	uint8_t *b = o + 2; /* after the Trace.packet tag and a one-byte length */
	size_t n = 0;
	b[n++] = 0x40; /* timestamp (8), varint */
	bool back = t < pc->last_ns;
	if (!back) {
		n += put_varint(b + n, t - pc->last_ns);
		pc->last_ns = t;
	} else {
		n += put_varint(b + n, t);
	}
	b[n++] = 0x50; /* trusted_packet_sequence_id (10), varint */
	n += put_varint(b + n, pc->seq);
	b[n++] = 0x5a; /* track_event (11), length delimited */
	b[n++] = (uint8_t)nte;
	memcpy(b + n, te, nte);
	n += nte;
	b[n++] = 0x68; /* sequence_flags (13), varint */
	b[n++] = PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE;
	if (back) {
		b[n++] = 0xd0; /* timestamp_clock_id (58), varint: tag 464 */
		b[n++] = 0x03;
		b[n++] = PF_CLOCK_BOOTTIME;
	}
	o[0] = 0x0a; /* Trace.packet (1), length delimited */
	o[1] = (uint8_t)n; /* n < 128: at most 11 + 3 + 6 + 2 + 16 + 2 bytes */
	return 2 + n;
}

/*
 * put_cell for the common case, an integer value at or after the sequence's
 * previous time: the same bytes (test_write_perfetto compares the two), with
 * the run that only depends on the sequence copied whole and no staging of
 * the TrackEvent (its length is known from the value's varint length).
 */
static inline size_t put_cell_u64(uint8_t *o, struct pf_col *pc, uint64_t t, uint64_t v)
{
	uint8_t *b = o + 2;
	size_t n = 0;
	b[n++] = 0x40; /* timestamp (8), varint */
	n += put_varint(b + n, t - pc->last_ns);
	pc->last_ns = t;
	memcpy(b + n, pc->seqb, sizeof(pc->seqb));
	n += pc->nseqb;
	if (v > INT64_MAX)
		v = INT64_MAX;
	size_t vl = 1 + (size_t)(63 - __builtin_clzll(v | 1)) / 7;
	b[n++] = (uint8_t)(4 + vl);
	b[n++] = 0x48; /* type (9) = TYPE_COUNTER */
	b[n++] = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
	b[n++] = 0xf0; /* counter_value (30), varint: tag 240 */
	b[n++] = 0x01;
	n += put_varint(b + n, v);
	b[n++] = 0x68; /* sequence_flags (13), varint */
	b[n++] = PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE;
	o[0] = 0x0a;
	o[1] = (uint8_t)n;
	return 2 + n;
}

static int pf_write(struct writer *w, const struct series_chunk *c, char *err, size_t errlen)
{
	if (w->err)
		return report(w, err, errlen);
	if (!c || !c->stream)
		return invalid(w, err, errlen, "a chunk with no stream");
	struct pf_stream *st = find_stream(w, c->stream->id);
	if (!st) {
		if (err && errlen)
			snprintf(err, errlen, "%s: chunk for undeclared stream %u", w->path, c->stream->id);
		return -EINVAL;
	}
	if (!c->n)
		return 0;
	if (!c->host_ns || !c->values)
		return invalid(w, err, errlen, "a chunk with no times or no values");
	for (uint32_t col = 0; col < st->ncols; col++)
		if (!c->values[col])
			return invalid(w, err, errlen, "a chunk with a column of no values");

	for (uint32_t i = 0; i < c->n; i++) {
		int64_t t = c->host_ns[i];
		if (t < 0) {
			w->skipped += st->ncols;
			continue;
		}
		for (uint32_t col = 0; col < st->ncols; col++) {
			if (series_missing(c, col, i))
				continue;
			struct pf_col *pc = &st->cols[col];
			if (pc->type == SERIES_F64 && !isfinite(series_f64(c, col, i))) {
				w->skipped++;
				continue;
			}
			if (!pc->started) {
				int rc = start_sequence(w, pc, st->first_uuid + col, (uint64_t)t);
				if (rc)
					return failed(w, rc, err, errlen);
			}
			if (w->len + PF_CELL_MAX > PF_BUF_BYTES && flush(w))
				return report(w, err, errlen);
			if (pc->type == SERIES_U64 && (uint64_t)t >= pc->last_ns)
				w->len += put_cell_u64(w->buf + w->len, pc, (uint64_t)t, series_u64(c, col, i));
			else
				w->len += put_cell(w->buf + w->len, pc, (uint64_t)t, c, col, i);
		}
	}
	return 0;
}

static int slice_track(struct writer *w, const struct series_slice *s, uint64_t *uuid)
{
	const char *cat = s->category ? s->category : "phase";
	for (size_t i = 0; i < w->nslice_tracks; i++) {
		const struct pf_slice_track *t = &w->slice_tracks[i];
		if (t->node == s->node && t->track == s->track && t->pid == s->pid &&
		    !strncmp(t->category, cat, sizeof(t->category) - 1)) {
			*uuid = t->uuid;
			return 0;
		}
	}
	if (grow((void **)&w->slice_tracks, &w->cap_slice_tracks, w->nslice_tracks,
		 sizeof(*w->slice_tracks)))
		return -ENOMEM;
	char name[96];
	uint64_t parent = node_uuid(w, s->node);
	if (!strcmp(cat, "kernel")) {
		/* A queue of the app's kernel dispatches: under its GPU's track (else the first GPU's), when declared. */
		snprintf(name, sizeof(name), "kernels: queue %u (pid %u)", s->track, s->pid);
		/* its own GPU of its own node; else its node's first GPU; else the node (or the trace) */
		uint64_t g = 0;
		for (size_t i = 0; i < w->ngroups && !g; i++)
			if (w->groups[i].xcc < 0 && w->groups[i].node == s->node && w->groups[i].gpu == s->gpu)
				g = w->groups[i].uuid;
		for (size_t i = 0; i < w->ngroups && !g; i++)
			if (w->groups[i].xcc < 0 && w->groups[i].node == s->node)
				g = w->groups[i].uuid;
		if (g)
			parent = g;
	} else if (!strcmp(cat, "marker"))
		snprintf(name, sizeof(name), "markers: pid %u thread %u", s->pid, s->track);
	else if (!strcmp(cat, "emulator"))
		snprintf(name, sizeof(name), "phases: emulator workload");
	else if (s->track)
		snprintf(name, sizeof(name), "phases: %s %u", cat, s->track);
	else
		snprintf(name, sizeof(name), "phases: %s", cat);
	pf_track t;
	track_init(&t, w->next_uuid, parent, name);
	int rc = emit_track(w, &t);
	if (rc)
		return rc;
	struct pf_slice_track *n = &w->slice_tracks[w->nslice_tracks++];
	*n = (struct pf_slice_track){ .node = s->node, .track = s->track, .pid = s->pid, .uuid = w->next_uuid++ };
	snprintf(n->category, sizeof(n->category), "%s", cat);
	*uuid = n->uuid;
	return 0;
}

static int pf_slice(struct writer *w, const struct series_slice *s, char *err, size_t errlen)
{
	if (w->err)
		return report(w, err, errlen);
	if (!s || s->start_ns < 0 || s->end_ns < s->start_ns)
		return invalid(w, err, errlen, "a slice that ends before it starts");
	uint64_t uuid;
	int rc = slice_track(w, s, &uuid);
	if (rc)
		return failed(w, rc, err, errlen);

	pf_event e = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	e.has_type = 1;
	e.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
	e.has_track_uuid = 1;
	e.track_uuid = uuid;
	e.name = (char *)(s->name && *s->name ? s->name : "(unnamed)");
	pf_packet p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	p.has_timestamp = 1;
	p.timestamp = (uint64_t)s->start_ns;
	p.track_event = &e;
	rc = emit(w, &p);
	if (!rc) {
		e.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END;
		e.name = NULL;
		p.timestamp = (uint64_t)s->end_ns;
		rc = emit(w, &p);
	}
	return rc ? failed(w, rc, err, errlen) : 0;
}

/*
 * A node of a merged job recording: a process track ("node2 (rank 2)",
 * pid = key + 1, as Perfetto wants a pid above 0) that its GPUs, sensors
 * and phases go under, and an instant on the "spmtap" track with its clock.
 */
static int pf_node(struct writer *w, const struct series_node *n, char *err, size_t errlen)
{
	if (w->err)
		return report(w, err, errlen);
	if (!n)
		return invalid(w, err, errlen, "no node");
	if (node_uuid(w, n->node)) {
		if (err && errlen)
			snprintf(err, errlen, "%s: node %u declared twice", w->path, n->node);
		return -EEXIST;
	}
	if (grow((void **)&w->nodes, &w->cap_nodes, w->nnodes, sizeof(*w->nodes)))
		return failed(w, -ENOMEM, err, errlen);
	char name[160];
	const char *host = n->hostname && *n->hostname ? n->hostname : "node";
	if (n->rank >= 0)
		snprintf(name, sizeof(name), "%s (rank %d)", host, n->rank);
	else
		snprintf(name, sizeof(name), "%s (node %u, no job)", host, n->node);
	Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
	pd.has_pid = 1;
	pd.pid = (int32_t)n->node + 1;
	pd.process_name = name;
	pf_track t;
	track_init(&t, w->next_uuid, 0, name);
	t.process = &pd;
	int rc = emit_track(w, &t);
	if (rc)
		return failed(w, rc, err, errlen);
	w->nodes[w->nnodes++] = (struct pf_node){ .node = n->node, .uuid = w->next_uuid++ };

	char title[64];
	snprintf(title, sizeof(title), "node %u", n->node);
	pf_arg a[6], *ap[6];
	size_t k = 0;
	arg_str(&a[k++], "hostname", n->hostname);
	arg_int(&a[k++], "rank", n->rank);
	arg_str(&a[k++], "recording", n->recording);
	arg_str(&a[k++], "clock_method", n->clock_method);
	arg_int(&a[k++], "max_bound_ns", n->max_bound_ns);
	for (size_t i = 0; i < k; i++)
		ap[i] = &a[i];
	rc = emit_instant(w, title, ap, k);
	return rc ? failed(w, rc, err, errlen) : 0;
}

/* Metadata known at the end: an instant on the "spmtap" track with the JSON as its argument. */
static int pf_note(struct writer *w, const char *key, const char *json, char *err, size_t errlen)
{
	if (w->err)
		return report(w, err, errlen);
	pf_arg a, *ap = &a;
	arg_str(&a, key, json);
	int rc = emit_instant(w, "spmtap note", &ap, 1);
	return rc ? failed(w, rc, err, errlen) : 0;
}

/* The queued whole packets to the file: a killed recorder leaves a readable trace. */
static int pf_flush(struct writer *w, char *err, size_t errlen)
{
	return flush(w) ? report(w, err, errlen) : 0;
}

static int pf_end(struct writer *w, char *err, size_t errlen)
{
	if (!w)
		return 0;
	flush(w);
	wb_stop(&w->wb);
	if (close(w->fd) != 0 && !w->err) {
		w->err = -errno;
		fail(w, w->err, "close", w->msg, sizeof(w->msg));
	}
	int rc = report(w, err, errlen);
	free_writer(w);
	return rc;
}

const struct writer_ops writer_perfetto = {
	.name = "perfetto",
	.ext = ".pftrace",
	.probe = pf_probe,
	.open = pf_open,
	.begin = pf_begin,
	.write = pf_write,
	.slice = pf_slice,
	.end = pf_end,
	.note = pf_note,
	.flush = pf_flush,
	.node = pf_node,
};
