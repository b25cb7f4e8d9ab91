/* SPDX-License-Identifier: MIT */
/* One OTF2 archive, one or more nodes (otf2w.h, docs/formats/otf2.md). */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "collector/lib/otf2_lib.h"
#include "collector/lib/otf2w.h"
#include "collector/lib/outset.h"
#include "log.h"

/* OTF2 chunk sizes: a location's buffer holds one event chunk before it is flushed to its file. */
#define OTF2W_EVT_CHUNK (1024u * 1024u)
#define OTF2W_DEF_CHUNK (4u * 1024u * 1024u)
/* A metric class has at most 255 members (uint8_t in OTF2): wider streams get several. */
#define OTF2W_CLASS_MAX 255u

/* Interned strings; a string's index is its OTF2 StringRef. */
struct strtab {
	char **s;
	size_t n, cap;
	uint32_t *slot; /* open addressing: index + 1, 0 = empty */
	size_t nslot;
};

struct member {
	uint32_t name, unit, descr;
	OTF2_Type type;
	OTF2_MetricMode mode;
	int64_t exponent;
};

struct mclass {
	uint32_t n;
	uint32_t *members;
	uint32_t ref; /* MetricRef */
};

struct instance {
	uint32_t ref, klass;
	uint64_t loc;
	uint32_t group;
};

struct region {
	uint32_t name, cat;
	bool kernel;
};

/* A slice kept until close. */
struct oslice {
	int64_t start, end;
	uint32_t name, cat; /* string refs */
	uint32_t track, pid;
	uint16_t node;
	uint16_t kind; /* 0 phase, 1 marker, 2 kernel */
	uint32_t lane;
};

struct ostream {
	const struct series_stream *ptr;
	uint32_t id;
	uint64_t loc;
	OTF2_EvtWriter *ew;
	uint32_t name; /* location name */
	uint32_t ncols;
	enum series_type *types;
	uint32_t ngroups;
	uint32_t *inst;   /* [ngroups] MetricRef of the instance of each group's class */
	uint32_t *member; /* [ncols] */
	uint32_t *single; /* [ncols] instance of a one-member class, 0 = not yet */
	OTF2_Type *tids;
	OTF2_MetricValue *vals;
	int64_t last_t;
};

struct gpu {
	uint32_t index;
	uint32_t name;
	uint64_t tree;
};

struct otf2w_node {
	struct otf2w *a;
	uint16_t index;
	char *hostname;
	int64_t rank;
	struct otf2w_offset *offs;
	size_t noffs;
	bool have_rt;
	int64_t rt_boot, rt_real;
	struct ostream *st;
	size_t nst, cst;
	size_t last;
	struct gpu *gpus;
	size_t ngpus;
	bool tany;
	int64_t tmin, tmax;
	uint64_t tree, group;
	uint64_t first_loc; /* locations of this node: its streams' and its lanes' */
};

struct location {
	uint64_t ref;
	uint32_t name;
	OTF2_LocationType type;
	uint64_t group;
	uint16_t node;
	uint64_t nevents;
};

struct otf2w {
	struct otf2_lib lib;
	OTF2_Archive *ar;
	char *dir;
	bool evt_open;
	struct strtab str, regkeys;
	struct member *mem;
	size_t nmem, cmem;
	struct mclass *cls;
	size_t ncls, ccls;
	struct instance *inst;
	size_t ninst, cinst;
	uint32_t next_metric;
	struct region *reg;
	size_t nreg, creg;
	struct oslice *sl;
	size_t nsl, csl;
	struct otf2w_node **nodes;
	size_t nnodes;
	struct location *locs;
	size_t nlocs, clocs;
	uint64_t dropped, clamped;
	int error;
	char errmsg[512];
	/*
	 * OTF2's own report of its first failure (otf2_error_cb): it names the
	 * file, and some failures (a buffer's last flush when its writer closes)
	 * reach no return value of ours.
	 */
	OTF2_ErrorCode otf2_code;
	char otf2_msg[384];
	bool otf2_broken; /* failed while event writers were open: OTF2 must not flush them again */
};

static int fail(struct otf2w *a, int e, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int fail(struct otf2w *a, int e, char *err, size_t errlen, const char *fmt, ...)
{
	if (!a->error) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(a->errmsg, sizeof(a->errmsg), fmt, ap);
		va_end(ap);
		a->error = -e;
	}
	return spmtap_seterr(err, errlen, -a->error, "%s", a->errmsg);
}

static int oom(struct otf2w *a, char *err, size_t errlen)
{
	return fail(a, ENOMEM, err, errlen, "%s: out of memory", a->dir);
}

/* errno for an OTF2 error code (OTF2 mirrors the POSIX ones it met). */
static int otf2_errno(OTF2_ErrorCode c)
{
	switch (c) {
	case OTF2_ERROR_ENOSPC: return ENOSPC;
	case OTF2_ERROR_EDQUOT: return EDQUOT;
	case OTF2_ERROR_EACCES: return EACCES;
	case OTF2_ERROR_ENOENT: return ENOENT;
	case OTF2_ERROR_EEXIST: return EEXIST;
	case OTF2_ERROR_EFBIG: return EFBIG;
	case OTF2_ERROR_EROFS: return EROFS;
	case OTF2_ERROR_ENOTDIR: return ENOTDIR;
	case OTF2_ERROR_EISDIR: return EISDIR;
	case OTF2_ERROR_ENOMEM:
	case OTF2_ERROR_MEM_FAULT: return ENOMEM;
	default: return EIO;
	}
}

/*
 * A failed OTF2 call: "<dir>: <strerror> (OTF2: <what OTF2 said>, while <what>)",
 * OTF2's words being its first error report (with the file) or else the code's description.
 */
static int fail_otf2(struct otf2w *a, OTF2_ErrorCode c, const char *what, char *err, size_t errlen)
{
	if (a->otf2_code != OTF2_SUCCESS)
		c = a->otf2_code;
	int e = otf2_errno(c);
	const char *d = a->lib.OTF2_Error_GetDescription ? a->lib.OTF2_Error_GetDescription(c) : NULL;
	return fail(a, e, err, errlen, "%s: %s (OTF2: %s, while %s)", a->dir, spmtap_strerror(e),
		    a->otf2_msg[0] ? a->otf2_msg : d ? d : "?", what);
}

/*
 * OTF2 reports every failure here (instead of printing it): the first one is
 * kept for the message, and marks the archive failed even where OTF2 then
 * goes on without telling its caller.
 */
static OTF2_ErrorCode otf2_error_cb(void *user, const char *file, uint64_t line, const char *function,
				    OTF2_ErrorCode code, const char *fmt, va_list va)
{
	(void)file;
	(void)line;
	(void)function;
	struct otf2w *a = user;
	if (a && a->otf2_code == OTF2_SUCCESS && code != OTF2_SUCCESS) {
		a->otf2_code = code;
		const char *d = a->lib.OTF2_Error_GetDescription(code);
		size_t n = (size_t)snprintf(a->otf2_msg, sizeof(a->otf2_msg), "%s: ", d ? d : "error");
		if (n < sizeof(a->otf2_msg) && fmt)
			vsnprintf(a->otf2_msg + n, sizeof(a->otf2_msg) - n, fmt, va);
		a->otf2_broken = a->evt_open;
	}
	return code;
}

#define CHECK(call, what)                                                                          \
	do {                                                                                       \
		OTF2_ErrorCode c_ = (call);                                                        \
		if (c_ != OTF2_SUCCESS)                                                            \
			return fail_otf2(a, c_, what, err, errlen);                                \
	} while (0)

static bool grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return true;
	size_t n = *cap ? *cap : 16;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * size);
	if (!q)
		return false;
	*p = q;
	*cap = n;
	return true;
}
#define GROW(arr, cap, need) grow((void **)&(arr), &(cap), (need), sizeof(*(arr)))

static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The ref of s, added if new; UINT32_MAX when out of memory. */
static uint32_t intern(struct strtab *t, const char *s)
{
	if (!s)
		s = "";
	if (t->n * 2 >= t->nslot) {
		size_t ns = t->nslot ? t->nslot * 2 : 256;
		uint32_t *slot = calloc(ns, sizeof(*slot));
		if (!slot)
			return UINT32_MAX;
		for (size_t i = 0; i < t->n; i++) {
			size_t h = fnv(t->s[i]) & (ns - 1);
			while (slot[h])
				h = (h + 1) & (ns - 1);
			slot[h] = (uint32_t)i + 1;
		}
		free(t->slot);
		t->slot = slot;
		t->nslot = ns;
	}
	size_t h = fnv(s) & (t->nslot - 1);
	while (t->slot[h]) {
		if (!strcmp(t->s[t->slot[h] - 1], s))
			return t->slot[h] - 1;
		h = (h + 1) & (t->nslot - 1);
	}
	if (!GROW(t->s, t->cap, t->n + 1))
		return UINT32_MAX;
	if (!(t->s[t->n] = strdup(s)))
		return UINT32_MAX;
	t->slot[h] = (uint32_t)t->n + 1;
	return (uint32_t)t->n++;
}

static void strtab_free(struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

int otf2w_probe(char *reason, size_t len)
{
	struct otf2_lib l;
	int rc = otf2_lib_open(&l, reason, len);
	if (rc)
		return rc;
	otf2_lib_close(&l);
	if (reason && len)
		reason[0] = 0;
	return 0;
}

/*
 * OTF2 asks before it writes a full buffer out: always yes, so a location
 * holds one chunk in memory.  No post-flush callback: OTF2 would record a
 * BufferFlush event stamped with its return value, a time in no clock of ours.
 */
static OTF2_FlushType pre_flush(void *user, OTF2_FileType type, OTF2_LocationRef loc, void *caller, bool final)
{
	(void)user;
	(void)type;
	(void)loc;
	(void)caller;
	(void)final;
	return OTF2_FLUSH;
}

static const OTF2_FlushCallbacks flush_cbs = { .otf2_pre_flush = pre_flush, .otf2_post_flush = NULL };

/*
 * OTF2 flushes a buffer only when a chunk cannot be had (otherwise it
 * mallocs chunks until the archive closes: the whole trace in memory).  So
 * chunks come from here, and an event buffer that holds OTF2W_EVT_CHUNKS
 * gets none: OTF2 writes it out, frees them all and asks again.  Each
 * buffer's chunks are listed in its perBufferData.
 */
#define OTF2W_EVT_CHUNKS 1u
struct chunks {
	void **p;
	size_t n, cap;
};

static void *chunk_alloc(void *user, OTF2_FileType type, OTF2_LocationRef loc, void **per, uint64_t size)
{
	(void)user;
	(void)loc;
	struct chunks *c = *per;
	if (!c && !(c = *per = calloc(1, sizeof(*c))))
		return NULL;
	if (type == OTF2_FILETYPE_EVENTS && c->n >= OTF2W_EVT_CHUNKS)
		return NULL; /* flush first */
	if (c->n == c->cap) {
		size_t ncap = c->cap ? 2 * c->cap : 4;
		void **np = realloc(c->p, ncap * sizeof(*np));
		if (!np)
			return NULL;
		c->p = np;
		c->cap = ncap;
	}
	void *m = malloc(size);
	if (m)
		c->p[c->n++] = m;
	return m;
}

static void chunk_free_all(void *user, OTF2_FileType type, OTF2_LocationRef loc, void **per, bool final)
{
	(void)user;
	(void)type;
	(void)loc;
	struct chunks *c = *per;
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		free(c->p[i]);
	c->n = 0;
	if (final) {
		free(c->p);
		free(c);
		*per = NULL;
	}
}

static const OTF2_MemoryCallbacks mem_cbs = { .otf2_allocate = chunk_alloc, .otf2_free_all = chunk_free_all };

int otf2w_open(struct otf2w **out, const char *dir, const char *creator, char *err, size_t errlen)
{
	*out = NULL;
	if (!dir || !*dir)
		return spmtap_seterr(err, errlen, EINVAL, "otf2: no archive directory");
	struct otf2w *a = calloc(1, sizeof(*a));
	if (!a || !(a->dir = strdup(dir))) {
		free(a);
		return spmtap_seterr(err, errlen, ENOMEM, "%s: out of memory", dir);
	}
	int rc = otf2_lib_open(&a->lib, err, errlen);
	if (rc) {
		free(a->dir);
		free(a);
		return rc;
	}
	(void)a->lib.OTF2_Error_RegisterCallback(otf2_error_cb, a);
	/* An earlier archive under this name goes; a directory with anything else in it stays. */
	rc = out_set_remove_archive(dir);
	if (rc) {
		rc = fail(a, -rc, err, errlen,
			  rc == -ENOTEMPTY || rc == -EEXIST
				  ? "%s: exists and is not an OTF2 archive spmtap wrote (%s): not replaced"
				  : "%s: cannot replace: %s",
			  dir, spmtap_strerror(-rc));
		otf2w_abort(a);
		return rc;
	}
	if (mkdir(dir, 0777) && errno != EEXIST) {
		rc = fail(a, errno, err, errlen, "%s: %s", dir, spmtap_strerror(errno));
		otf2w_abort(a);
		return rc;
	}
	a->evt_open = true; /* from here until the event files are closed */
	a->ar = a->lib.OTF2_Archive_Open(dir, "traces", OTF2_FILEMODE_WRITE, OTF2W_EVT_CHUNK, OTF2W_DEF_CHUNK,
					 OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
	if (!a->ar) {
		rc = fail(a, EIO, err, errlen, "%s: OTF2 could not create the archive", dir);
		otf2w_abort(a);
		return rc;
	}
	OTF2_ErrorCode c = a->lib.OTF2_Archive_SetFlushCallbacks(a->ar, &flush_cbs, NULL);
	if (c == OTF2_SUCCESS)
		c = a->lib.OTF2_Archive_SetMemoryCallbacks(a->ar, &mem_cbs, NULL);
	if (c == OTF2_SUCCESS)
		c = a->lib.OTF2_Archive_SetSerialCollectiveCallbacks(a->ar);
	if (c == OTF2_SUCCESS && creator)
		c = a->lib.OTF2_Archive_SetCreator(a->ar, creator);
	if (c == OTF2_SUCCESS)
		c = a->lib.OTF2_Archive_SetDescription(
			a->ar, "spmtap: AMD GPU SPM counters and power on one timebase (docs/formats/otf2.md)");
	if (c == OTF2_SUCCESS)
		c = a->lib.OTF2_Archive_OpenEvtFiles(a->ar);
	if (c != OTF2_SUCCESS) {
		rc = fail_otf2(a, c, "creating the archive", err, errlen);
		otf2w_abort(a);
		return rc;
	}
	*out = a;
	return 0;
}

int otf2w_node(struct otf2w *a, struct otf2w_node **out, const char *hostname, int64_t rank, char *err,
	       size_t errlen)
{
	*out = NULL;
	if (a->error)
		return spmtap_seterr(err, errlen, -a->error, "%s", a->errmsg);
	if (a->nnodes >= UINT16_MAX)
		return fail(a, E2BIG, err, errlen, "%s: more than %u nodes", a->dir, UINT16_MAX - 1);
	struct otf2w_node **nv = realloc(a->nodes, (a->nnodes + 1) * sizeof(*nv));
	if (!nv)
		return oom(a, err, errlen);
	a->nodes = nv;
	struct otf2w_node *n = calloc(1, sizeof(*n));
	if (!n || !(n->hostname = strdup(hostname && *hostname ? hostname : "localhost"))) {
		free(n);
		return oom(a, err, errlen);
	}
	n->a = a;
	n->index = (uint16_t)a->nnodes;
	n->rank = rank;
	a->nodes[a->nnodes++] = n;
	*out = n;
	return 0;
}

int otf2w_node_offsets(struct otf2w_node *n, const struct otf2w_offset *o, size_t count, char *err,
		       size_t errlen)
{
	struct otf2w *a = n->a;
	struct otf2w_offset *c = NULL;
	if (count) {
		c = malloc(count * sizeof(*c));
		if (!c)
			return oom(a, err, errlen);
		memcpy(c, o, count * sizeof(*c));
	}
	free(n->offs);
	n->offs = c;
	n->noffs = count;
	return 0;
}

void otf2w_node_realtime(struct otf2w_node *n, int64_t boottime_ns, int64_t realtime_ns)
{
	n->have_rt = true;
	n->rt_boot = boottime_ns;
	n->rt_real = realtime_ns;
}

static bool json_i64(json_t *o, const char *key, int64_t *v)
{
	json_t *x = json_object_get(o, key);
	if (json_is_integer(x)) {
		*v = json_integer_value(x);
		return true;
	}
	if (json_is_real(x)) {
		*v = (int64_t)llround(json_real_value(x));
		return true;
	}
	return false;
}

int otf2w_node_meta(struct otf2w_node *n, const char *text, char *err, size_t errlen)
{
	struct otf2w *a = n->a;
	json_t *m = text ? json_loads(text, 0, NULL) : NULL;
	if (!json_is_object(m)) {
		json_decref(m);
		return spmtap_seterr(err, errlen, EINVAL, "%s: node %s: the metadata is no JSON object", a->dir,
				     n->hostname);
	}
	json_t *job = json_object_get(m, "job");
	const char *host = json_string_value(json_object_get(job, "hostname"));
	if (!host)
		host = json_string_value(json_object_get(m, "hostname"));
	int rc = 0;
	if (host && strcmp(host, n->hostname)) {
		char *h = strdup(host);
		if (!h)
			rc = oom(a, err, errlen);
		else {
			free(n->hostname);
			n->hostname = h;
		}
	}
	int64_t rank;
	if (json_i64(job, "rank", &rank))
		n->rank = rank;
	json_t *clock = json_object_get(job, "clock");
	json_t *offs = json_object_get(clock, "offsets");
	if (!rc && json_is_array(offs)) {
		size_t k = json_array_size(offs), m2 = 0;
		struct otf2w_offset *v = calloc(k ? k : 1, sizeof(*v));
		if (!v)
			rc = oom(a, err, errlen);
		for (size_t i = 0; v && i < k; i++) {
			json_t *e = json_array_get(offs, i);
			struct otf2w_offset o = { .bound_ns = -1 };
			if (!json_i64(e, "local_ns", &o.local_ns) || !json_i64(e, "offset_ns", &o.offset_ns))
				continue;
			(void)json_i64(e, "bound_ns", &o.bound_ns);
			v[m2++] = o;
		}
		if (v)
			rc = otf2w_node_offsets(n, v, m2, err, errlen);
		free(v);
	}
	/* spmtap-job's anchors (docs/formats/meta-job.md): the first, taken at the job's start */
	json_t *rt = json_array_get(json_object_get(job, "realtime_anchors"), 0);
	if (!json_is_object(rt))
		rt = json_object_get(clock, "realtime");
	if (!json_is_object(rt))
		rt = json_object_get(m, "realtime_anchor");
	int64_t b, r;
	if (json_is_object(rt) && json_i64(rt, "boottime_ns", &b) && json_i64(rt, "realtime_ns", &r))
		otf2w_node_realtime(n, b, r);
	json_decref(m);
	return rc;
}

static uint64_t add_location(struct otf2w *a, struct otf2w_node *n, uint32_t name, OTF2_LocationType type)
{
	if (!GROW(a->locs, a->clocs, a->nlocs + 1))
		return UINT64_MAX;
	struct location *l = &a->locs[a->nlocs];
	memset(l, 0, sizeof(*l));
	l->ref = a->nlocs;
	l->name = name;
	l->type = type;
	l->node = n->index;
	return a->locs[a->nlocs++].ref;
}

static uint32_t find_member(struct otf2w *a, const struct series_column *col, uint32_t descr)
{
	const char *u = col->unit && *col->unit ? col->unit : "count";
	struct member m = { .descr = descr, .exponent = 0 };
	m.type = col->type == SERIES_U64 ? OTF2_TYPE_UINT64 : OTF2_TYPE_DOUBLE;
	/*
	 * SPM counters count events in their sample's interval: a delta over the
	 * time since the stream's previous sample (RELATIVE_LAST).  Energy is a
	 * running total (ACCUMULATED_START; its origin is the device's).  Every
	 * other reading is a value at its time (ABSOLUTE_POINT).  OTF2 units have
	 * no prefix: MHz is Hz with exponent 6.
	 */
	if (!strcmp(u, "count")) {
		m.mode = OTF2_METRIC_RELATIVE_LAST;
		u = "#";
	} else if (!strcmp(u, "J"))
		m.mode = OTF2_METRIC_ACCUMULATED_START;
	else
		m.mode = OTF2_METRIC_ABSOLUTE_POINT;
	if (!strcmp(u, "MHz")) {
		u = "Hz";
		m.exponent = 6;
	}
	m.name = intern(&a->str, col->name ? col->name : "");
	m.unit = intern(&a->str, u);
	if (m.name == UINT32_MAX || m.unit == UINT32_MAX)
		return UINT32_MAX;
	for (size_t i = 0; i < a->nmem; i++) {
		const struct member *x = &a->mem[i];
		if (x->name == m.name && x->unit == m.unit && x->type == m.type && x->mode == m.mode &&
		    x->exponent == m.exponent)
			return (uint32_t)i;
	}
	if (!GROW(a->mem, a->cmem, a->nmem + 1))
		return UINT32_MAX;
	a->mem[a->nmem] = m;
	return (uint32_t)a->nmem++;
}

/* The class with exactly these members (shared by every stream with the same columns). */
static uint32_t find_class(struct otf2w *a, const uint32_t *members, uint32_t n)
{
	for (size_t i = 0; i < a->ncls; i++)
		if (a->cls[i].n == n && !memcmp(a->cls[i].members, members, n * sizeof(*members)))
			return (uint32_t)i;
	if (!GROW(a->cls, a->ccls, a->ncls + 1))
		return UINT32_MAX;
	struct mclass *c = &a->cls[a->ncls];
	c->members = malloc(n * sizeof(*members));
	if (!c->members)
		return UINT32_MAX;
	memcpy(c->members, members, n * sizeof(*members));
	c->n = n;
	c->ref = a->next_metric++;
	return (uint32_t)a->ncls++;
}

/* An instance of class k recorded on location loc of node n: the MetricRef its events carry. */
static uint32_t add_instance(struct otf2w *a, struct otf2w_node *n, uint32_t k, uint64_t loc)
{
	if (!GROW(a->inst, a->cinst, a->ninst + 1))
		return UINT32_MAX;
	struct instance *in = &a->inst[a->ninst++];
	in->klass = k;
	in->loc = loc;
	in->group = n->index;
	in->ref = a->next_metric++;
	return in->ref;
}

static void note_time(struct otf2w_node *n, int64_t t)
{
	if (!n->tany || t < n->tmin)
		n->tmin = t;
	if (!n->tany || t > n->tmax)
		n->tmax = t;
	n->tany = true;
}

int otf2w_begin(struct otf2w_node *n, const struct series_stream *s, char *err, size_t errlen)
{
	struct otf2w *a = n->a;
	if (a->error)
		return spmtap_seterr(err, errlen, -a->error, "%s", a->errmsg);
	if (!s || (s->ncols && !s->cols))
		return spmtap_seterr(err, errlen, EINVAL, "%s: begin without a stream", a->dir);
	for (size_t i = 0; i < n->nst; i++)
		if (n->st[i].id == s->id)
			return spmtap_seterr(err, errlen, EEXIST, "%s: stream %u declared twice", a->dir, s->id);
	for (uint32_t c = 0; c < s->ncols; c++)
		if (s->cols[c].type != SERIES_U64 && s->cols[c].type != SERIES_F64)
			return spmtap_seterr(err, errlen, EINVAL, "%s: stream %u column %u: unknown type %d",
					     a->dir, s->id, c, (int)s->cols[c].type);
	if (!GROW(n->st, n->cst, n->nst + 1))
		return oom(a, err, errlen);
	struct ostream *os = &n->st[n->nst];
	memset(os, 0, sizeof(*os));
	n->nst++; /* owned from here (freed with the node) */
	os->ptr = s;
	os->id = s->id;
	os->ncols = s->ncols;
	os->last_t = INT64_MIN;
	uint32_t nc = s->ncols ? s->ncols : 1;
	os->types = calloc(nc, sizeof(*os->types));
	os->member = calloc(nc, sizeof(*os->member));
	os->single = calloc(nc, sizeof(*os->single));
	os->tids = calloc(nc, sizeof(*os->tids));
	os->vals = calloc(nc, sizeof(*os->vals));
	os->ngroups = (s->ncols + OTF2W_CLASS_MAX - 1) / OTF2W_CLASS_MAX;
	os->inst = calloc(os->ngroups ? os->ngroups : 1, sizeof(*os->inst));
	if (!os->types || !os->member || !os->single || !os->tids || !os->vals || !os->inst)
		return oom(a, err, errlen);

	/* The GPU in the system tree, once per node. */
	bool known = false;
	for (size_t i = 0; i < n->ngpus && !known; i++)
		known = n->gpus[i].index == s->gpu;
	if (!known) {
		struct gpu *g = realloc(n->gpus, (n->ngpus + 1) * sizeof(*g));
		if (!g)
			return oom(a, err, errlen);
		n->gpus = g;
		char name[256];
		snprintf(name, sizeof(name), "GPU %u (%s)", s->gpu, s->device_name ? s->device_name : "AMD GPU");
		g[n->ngpus].index = s->gpu;
		g[n->ngpus].name = intern(&a->str, name);
		if (g[n->ngpus].name == UINT32_MAX)
			return oom(a, err, errlen);
		n->ngpus++;
	}

	char lname[256];
	bool spm = s->source && !strcmp(s->source, "spm");
	if (s->xcc >= 0)
		snprintf(lname, sizeof(lname), "GPU %u XCC %d %s", s->gpu, s->xcc, spm ? "SPM" : s->source ? s->source : "");
	else
		snprintf(lname, sizeof(lname), "GPU %u %s", s->gpu,
			 s->source && !strcmp(s->source, "smi") ? "sensors" : s->source ? s->source : "");
	os->name = intern(&a->str, lname);
	if (os->name == UINT32_MAX)
		return oom(a, err, errlen);
	os->loc = add_location(a, n, os->name, OTF2_LOCATION_TYPE_METRIC);
	if (os->loc == UINT64_MAX)
		return oom(a, err, errlen);
	for (uint32_t c = 0; c < s->ncols; c++) {
		/* Members are shared by every stream with the column: the description names no GPU. */
		char d[384];
		snprintf(d, sizeof(d), "%s (%s)", s->cols[c].name ? s->cols[c].name : "",
			 spm ? "SPM: events in the sample's interval"
			     : s->cols[c].unit && !strcmp(s->cols[c].unit, "J") ? "sensor: running total"
										: "sensor: value at the sample's time");
		uint32_t descr = intern(&a->str, d);
		os->types[c] = s->cols[c].type;
		os->tids[c] = s->cols[c].type == SERIES_U64 ? OTF2_TYPE_UINT64 : OTF2_TYPE_DOUBLE;
		os->member[c] = descr == UINT32_MAX ? UINT32_MAX : find_member(a, &s->cols[c], descr);
		if (os->member[c] == UINT32_MAX)
			return oom(a, err, errlen);
	}
	for (uint32_t g = 0; g < os->ngroups; g++) {
		uint32_t c0 = g * OTF2W_CLASS_MAX, k = s->ncols - c0 < OTF2W_CLASS_MAX ? s->ncols - c0 : OTF2W_CLASS_MAX;
		uint32_t cls = find_class(a, os->member + c0, k);
		os->inst[g] = cls == UINT32_MAX ? UINT32_MAX : add_instance(a, n, cls, os->loc);
		if (os->inst[g] == UINT32_MAX)
			return oom(a, err, errlen);
	}
	os->ew = a->lib.OTF2_Archive_GetEvtWriter(a->ar, os->loc);
	if (!os->ew)
		return fail(a, EIO, err, errlen, "%s: OTF2 gave no event writer for location %" PRIu64, a->dir,
			    os->loc);
	return 0;
}

static struct ostream *find_stream(struct otf2w_node *n, const struct series_stream *s)
{
	if (n->last < n->nst && n->st[n->last].ptr == s)
		return &n->st[n->last];
	for (size_t i = 0; i < n->nst; i++)
		if (n->st[i].ptr == s || n->st[i].id == s->id) {
			n->last = i;
			return &n->st[i];
		}
	return NULL;
}

/* One value of a chunk as OTF2 holds it. */
static OTF2_MetricValue value_of(const struct series_chunk *c, const struct ostream *os, uint32_t col, uint32_t i)
{
	OTF2_MetricValue v;
	if (os->types[col] == SERIES_U64)
		v.unsigned_int = series_u64(c, col, i);
	else
		v.floating_point = series_f64(c, col, i);
	return v;
}

int otf2w_write(struct otf2w_node *n, const struct series_chunk *c, char *err, size_t errlen)
{
	struct otf2w *a = n->a;
	if (a->error)
		return spmtap_seterr(err, errlen, -a->error, "%s", a->errmsg);
	if (!c || !c->stream)
		return spmtap_seterr(err, errlen, EINVAL, "%s: chunk without a stream", a->dir);
	struct ostream *os = find_stream(n, c->stream);
	if (!os)
		return spmtap_seterr(err, errlen, EINVAL, "%s: chunk of stream %u, which was never begun", a->dir,
				     c->stream->id);
	if (!c->n || !os->ncols)
		return 0;
	if (!c->host_ns || !c->values)
		return spmtap_seterr(err, errlen, EINVAL, "%s: stream %u: chunk without data", a->dir, os->id);
	for (uint32_t col = 0; col < os->ncols; col++)
		if (!c->values[col])
			return spmtap_seterr(err, errlen, EINVAL, "%s: stream %u: column %u has no values", a->dir,
					     os->id, col);
	for (uint32_t i = 0; i < c->n; i++) {
		int64_t t = c->host_ns[i];
		if (t < 0)
			return fail(a, EINVAL, err, errlen, "%s: stream %u: negative time %" PRId64, a->dir,
				    os->id, t);
		/* A location's times never decrease (OTF2's rule): a step back is held at the last time. */
		if (t < os->last_t) {
			t = os->last_t;
			a->clamped++;
		}
		os->last_t = t;
		note_time(n, t);
		for (uint32_t g = 0; g < os->ngroups; g++) {
			uint32_t c0 = g * OTF2W_CLASS_MAX;
			uint32_t k = os->ncols - c0 < OTF2W_CLASS_MAX ? os->ncols - c0 : OTF2W_CLASS_MAX;
			bool gap = false;
			for (uint32_t j = 0; j < k && !gap; j++)
				gap = series_missing(c, c0 + j, i);
			if (!gap) {
				for (uint32_t j = 0; j < k; j++)
					os->vals[j] = value_of(c, os, c0 + j, i);
				CHECK(a->lib.OTF2_EvtWriter_Metric(os->ew, NULL, (OTF2_TimeStamp)t, os->inst[g],
								   (uint8_t)k, os->tids + c0, os->vals),
				      "writing samples");
				continue;
			}
			/*
			 * A missing cell (a saturated counter, a sensor that did not
			 * answer): the sample's other values each as a one-member
			 * metric of the same member, so nothing is invented.
			 */
			for (uint32_t j = 0; j < k; j++) {
				uint32_t col = c0 + j;
				if (series_missing(c, col, i))
					continue;
				if (!os->single[col]) {
					uint32_t cls = find_class(a, &os->member[col], 1);
					uint32_t in = cls == UINT32_MAX ? UINT32_MAX : add_instance(a, n, cls, os->loc);
					if (in == UINT32_MAX)
						return oom(a, err, errlen);
					os->single[col] = in + 1;
				}
				OTF2_MetricValue v = value_of(c, os, col, i);
				CHECK(a->lib.OTF2_EvtWriter_Metric(os->ew, NULL, (OTF2_TimeStamp)t, os->single[col] - 1,
								   1, &os->tids[col], &v),
				      "writing samples");
			}
		}
	}
	return 0;
}

int otf2w_slice(struct otf2w_node *n, const struct series_slice *s, char *err, size_t errlen)
{
	struct otf2w *a = n->a;
	if (a->error)
		return spmtap_seterr(err, errlen, -a->error, "%s", a->errmsg);
	if (!s)
		return spmtap_seterr(err, errlen, EINVAL, "%s: no slice", a->dir);
	/* A range that ends before it starts cannot be an Enter/Leave pair: left out and counted, not fatal. */
	if (s->start_ns < 0 || s->end_ns < s->start_ns || a->nsl >= OTF2W_MAX_SLICES) {
		a->dropped++;
		return 0;
	}
	if (!GROW(a->sl, a->csl, a->nsl + 1))
		return oom(a, err, errlen);
	const char *cat = s->category ? s->category : "phase";
	struct oslice *o = &a->sl[a->nsl];
	o->start = s->start_ns;
	o->end = s->end_ns;
	o->name = intern(&a->str, s->name ? s->name : "");
	o->cat = intern(&a->str, cat);
	if (o->name == UINT32_MAX || o->cat == UINT32_MAX)
		return oom(a, err, errlen);
	o->kind = !strcmp(cat, "kernel") ? 2 : !strcmp(cat, "marker") ? 1 : 0;
	/* Phases of one kind share a track whatever the source said; markers go by thread, kernels by queue. */
	o->track = o->kind ? s->track : 0;
	o->pid = o->kind == 1 ? s->pid : 0;
	o->node = n->index;
	o->lane = 0;
	a->nsl++;
	note_time(n, s->start_ns);
	note_time(n, s->end_ns);
	return 0;
}

uint64_t otf2w_dropped_slices(const struct otf2w *a) { return a ? a->dropped : 0; }
uint64_t otf2w_clamped_times(const struct otf2w *a) { return a ? a->clamped : 0; }

/* Node, kind, category, pid, track; then start ascending, end descending (outer before inner). */
static int cmp_slice(const void *x, const void *y)
{
	const struct oslice *p = x, *q = y;
#define CMP(f)                                                                                     \
	if (p->f != q->f)                                                                          \
		return p->f < q->f ? -1 : 1;
	CMP(node)
	CMP(kind)
	CMP(cat)
	CMP(pid)
	CMP(track)
	CMP(start)
#undef CMP
	if (p->end != q->end)
		return p->end > q->end ? -1 : 1;
	return p->name < q->name ? -1 : p->name > q->name;
}

static bool same_track(const struct oslice *p, const struct oslice *q)
{
	return p->node == q->node && p->kind == q->kind && p->cat == q->cat && p->pid == q->pid &&
	       p->track == q->track;
}

/* The region of a slice: one per (category, name). */
static uint32_t region_of(struct otf2w *a, const struct oslice *s)
{
	char key[32];
	snprintf(key, sizeof(key), "%u/%u", s->cat, s->name);
	uint32_t k = intern(&a->regkeys, key);
	if (k == UINT32_MAX)
		return UINT32_MAX;
	if (k == a->nreg) {
		if (!GROW(a->reg, a->creg, a->nreg + 1))
			return UINT32_MAX;
		a->reg[a->nreg++] = (struct region){ .name = s->name, .cat = s->cat, .kernel = s->kind == 2 };
	}
	return k;
}

struct stack {
	int64_t *end;
	uint32_t *reg;
	size_t n, cap;
};

static bool push(struct stack *st, int64_t end, uint32_t reg)
{
	if (st->n == st->cap) {
		size_t nc = st->cap ? st->cap * 2 : 16;
		int64_t *e = realloc(st->end, nc * sizeof(*e));
		if (!e)
			return false;
		st->end = e;
		uint32_t *r = realloc(st->reg, nc * sizeof(*r));
		if (!r)
			return false;
		st->reg = r;
		st->cap = nc;
	}
	st->end[st->n] = end;
	st->reg[st->n++] = reg;
	return true;
}

/*
 * One track's slices [i0, i1) (sorted) onto lanes: a slice joins the first
 * lane where, once the ranges that ended by its start are closed, it lies
 * within the innermost open one (or none is open).  Each lane then nests
 * properly; ranges that overlap without nesting land on different lanes.
 */
static int assign_lanes(struct otf2w *a, size_t i0, size_t i1, uint32_t *nlanes)
{
	struct stack *lanes = NULL;
	size_t nl = 0;
	int rc = 0;
	for (size_t i = i0; i < i1 && !rc; i++) {
		struct oslice *s = &a->sl[i];
		size_t l = 0;
		for (; l < nl; l++) {
			struct stack *st = &lanes[l];
			while (st->n && st->end[st->n - 1] <= s->start)
				st->n--;
			if (!st->n || st->end[st->n - 1] >= s->end)
				break;
		}
		if (l == nl) {
			struct stack *nv = realloc(lanes, (nl + 1) * sizeof(*nv));
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			lanes = nv;
			memset(&lanes[nl++], 0, sizeof(*lanes));
		}
		if (!push(&lanes[l], s->end, 0))
			rc = -ENOMEM;
		s->lane = (uint32_t)l;
	}
	for (size_t l = 0; l < nl; l++) {
		free(lanes[l].end);
		free(lanes[l].reg);
	}
	free(lanes);
	*nlanes = (uint32_t)nl;
	return rc;
}

static int emit_lane(struct otf2w *a, size_t i0, size_t i1, uint32_t lane, uint64_t loc, char *err, size_t errlen)
{
	OTF2_EvtWriter *ew = a->lib.OTF2_Archive_GetEvtWriter(a->ar, loc);
	if (!ew)
		return fail(a, EIO, err, errlen, "%s: OTF2 gave no event writer for location %" PRIu64, a->dir, loc);
	struct stack st = { 0 };
	int rc = 0;
	for (size_t i = i0; i <= i1 && !rc; i++) {
		const struct oslice *s = i < i1 ? &a->sl[i] : NULL;
		if (s && s->lane != lane)
			continue;
		/* Close what ended by this start (or everything, at the end): innermost first. */
		while (st.n && (!s || st.end[st.n - 1] <= s->start) && !rc) {
			st.n--;
			OTF2_ErrorCode c = a->lib.OTF2_EvtWriter_Leave(ew, NULL, (OTF2_TimeStamp)st.end[st.n],
								       st.reg[st.n]);
			if (c != OTF2_SUCCESS)
				rc = fail_otf2(a, c, "writing phases", err, errlen);
		}
		if (!s || rc)
			continue;
		uint32_t reg = region_of(a, s);
		if (reg == UINT32_MAX || !push(&st, s->end, reg)) {
			rc = oom(a, err, errlen);
			break;
		}
		OTF2_ErrorCode c = a->lib.OTF2_EvtWriter_Enter(ew, NULL, (OTF2_TimeStamp)s->start, reg);
		if (c != OTF2_SUCCESS)
			rc = fail_otf2(a, c, "writing phases", err, errlen);
	}
	free(st.end);
	free(st.reg);
	return rc;
}

/* Every node's slices onto CPU_THREAD locations of their own, in time order per location. */
static int write_slices(struct otf2w *a, char *err, size_t errlen)
{
	if (a->nsl)
		qsort(a->sl, a->nsl, sizeof(*a->sl), cmp_slice);
	for (size_t i0 = 0; i0 < a->nsl;) {
		size_t i1 = i0 + 1;
		while (i1 < a->nsl && same_track(&a->sl[i0], &a->sl[i1]))
			i1++;
		const struct oslice *s = &a->sl[i0];
		struct otf2w_node *n = a->nodes[s->node];
		uint32_t nl = 0;
		if (assign_lanes(a, i0, i1, &nl))
			return oom(a, err, errlen);
		for (uint32_t l = 0; l < nl; l++) {
			char name[256], extra[48] = "";
			if (l)
				snprintf(extra, sizeof(extra), " (overlap %u)", l);
			if (s->kind == 2)
				snprintf(name, sizeof(name), "kernels queue %u%s", s->track, extra);
			else if (s->kind == 1)
				snprintf(name, sizeof(name), "markers pid %u tid %u%s", s->pid, s->track, extra);
			else
				snprintf(name, sizeof(name), "phases (%s)%s", a->str.s[s->cat], extra);
			uint32_t ns = intern(&a->str, name);
			uint64_t loc = ns == UINT32_MAX ? UINT64_MAX : add_location(a, n, ns, OTF2_LOCATION_TYPE_CPU_THREAD);
			if (loc == UINT64_MAX)
				return oom(a, err, errlen);
			int rc = emit_lane(a, i0, i1, l, loc, err, errlen);
			if (rc)
				return rc;
		}
		i0 = i1;
	}
	/* A PROCESS group needs a CPU_THREAD location: a node without slices gets an empty one. */
	for (size_t k = 0; k < a->nnodes; k++) {
		bool has = false;
		for (size_t i = 0; i < a->nlocs && !has; i++)
			has = a->locs[i].node == k && a->locs[i].type == OTF2_LOCATION_TYPE_CPU_THREAD;
		uint32_t ns = intern(&a->str, "spmtap");
		if (!has && (ns == UINT32_MAX ||
			     add_location(a, a->nodes[k], ns, OTF2_LOCATION_TYPE_CPU_THREAD) == UINT64_MAX))
			return oom(a, err, errlen);
	}
	return 0;
}

/* The node's offset at local time t: linear between entries, held outside (docs/formats/otf2.md). */
static int64_t offset_at(const struct otf2w_node *n, int64_t t)
{
	if (!n->noffs)
		return 0;
	if (t <= n->offs[0].local_ns)
		return n->offs[0].offset_ns;
	for (size_t i = 1; i < n->noffs; i++)
		if (t <= n->offs[i].local_ns) {
			const struct otf2w_offset *p = &n->offs[i - 1], *q = &n->offs[i];
			if (q->local_ns == p->local_ns)
				return q->offset_ns;
			double f = (double)(t - p->local_ns) / (double)(q->local_ns - p->local_ns);
			return p->offset_ns + (int64_t)llround(f * (double)(q->offset_ns - p->offset_ns));
		}
	return n->offs[n->noffs - 1].offset_ns;
}

/* Close every event writer, counting its events; write every location's local definitions. */
static int close_locations(struct otf2w *a, char *err, size_t errlen)
{
	for (size_t i = 0; i < a->nlocs; i++) {
		struct location *l = &a->locs[i];
		OTF2_EvtWriter *ew = a->lib.OTF2_Archive_GetEvtWriter(a->ar, l->ref);
		if (!ew)
			return fail(a, EIO, err, errlen, "%s: OTF2 gave no event writer for location %" PRIu64,
				    a->dir, l->ref);
		CHECK(a->lib.OTF2_EvtWriter_GetNumberOfEvents(ew, &l->nevents), "counting events");
		CHECK(a->lib.OTF2_Archive_CloseEvtWriter(a->ar, ew), "closing a location's events");
	}
	CHECK(a->lib.OTF2_Archive_CloseEvtFiles(a->ar), "closing the event files");
	a->evt_open = false;
	/* a buffer's last flush (in CloseEvtWriter) can fail with nothing returned but our callback */
	if (a->otf2_code != OTF2_SUCCESS)
		return fail_otf2(a, a->otf2_code, "writing the last events", err, errlen);
	CHECK(a->lib.OTF2_Archive_OpenDefFiles(a->ar), "opening the definition files");
	for (size_t i = 0; i < a->nlocs; i++) {
		const struct location *l = &a->locs[i];
		const struct otf2w_node *n = a->nodes[l->node];
		OTF2_DefWriter *dw = a->lib.OTF2_Archive_GetDefWriter(a->ar, l->ref);
		if (!dw)
			return fail(a, EIO, err, errlen, "%s: OTF2 gave no definition writer for location %" PRIu64,
				    a->dir, l->ref);
		/* stddev holds the offset's hard bound (half the round trip), not a standard deviation. */
		for (size_t k = 0; k < n->noffs; k++)
			CHECK(a->lib.OTF2_DefWriter_WriteClockOffset(
				      dw, (OTF2_TimeStamp)(n->offs[k].local_ns < 0 ? 0 : n->offs[k].local_ns),
				      n->offs[k].offset_ns,
				      n->offs[k].bound_ns < 0 ? NAN : (double)n->offs[k].bound_ns),
			      "writing clock offsets");
		CHECK(a->lib.OTF2_Archive_CloseDefWriter(a->ar, dw), "closing a location's definitions");
	}
	CHECK(a->lib.OTF2_Archive_CloseDefFiles(a->ar), "closing the definition files");
	return 0;
}

static int write_global(struct otf2w *a, char *err, size_t errlen)
{
	/* The trace's extent in reference time: every node's range moved by its offsets' extremes. */
	bool any = false;
	int64_t lo = 0, hi = 0;
	const struct otf2w_node *anchor = NULL;
	for (size_t k = 0; k < a->nnodes; k++) {
		const struct otf2w_node *n = a->nodes[k];
		if (n->have_rt && (!anchor || (n->rank >= 0 && (anchor->rank < 0 || n->rank < anchor->rank))))
			anchor = n;
		if (!n->tany)
			continue;
		int64_t omin = 0, omax = 0;
		for (size_t i = 0; i < n->noffs; i++) {
			if (!i || n->offs[i].offset_ns < omin)
				omin = n->offs[i].offset_ns;
			if (!i || n->offs[i].offset_ns > omax)
				omax = n->offs[i].offset_ns;
		}
		int64_t l = n->tmin + omin, h = n->tmax + omax;
		if (!any || l < lo)
			lo = l;
		if (!any || h > hi)
			hi = h;
		any = true;
	}
	if (lo < 0)
		lo = 0;
	if (hi < lo)
		hi = lo;
	uint64_t rt = OTF2_UNDEFINED_TIMESTAMP;
	if (anchor) {
		int64_t g = anchor->rt_boot + offset_at(anchor, anchor->rt_boot);
		int64_t v = anchor->rt_real - (g - lo);
		if (v >= 0)
			rt = (uint64_t)v;
	}
	OTF2_GlobalDefWriter *g = a->lib.OTF2_Archive_GetGlobalDefWriter(a->ar);
	if (!g)
		return fail(a, EIO, err, errlen, "%s: OTF2 gave no global definition writer", a->dir);
	CHECK(a->lib.OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000ull, (uint64_t)lo,
								 (uint64_t)(hi - lo + 1), rt),
	      "writing the clock properties");

	/* Every name used below first: OTF2 readers resolve references as they read. */
	uint32_t s_machine = intern(&a->str, "spmtap job"), s_cm = intern(&a->str, "machine"),
		 s_cn = intern(&a->str, "node"), s_cg = intern(&a->str, "accelerator"),
		 s_empty = intern(&a->str, "");
	uint32_t *gname = calloc(a->nnodes ? a->nnodes : 1, sizeof(*gname));
	uint32_t *hname = calloc(a->nnodes ? a->nnodes : 1, sizeof(*hname));
	if (!gname || !hname || s_machine == UINT32_MAX || s_cm == UINT32_MAX || s_cn == UINT32_MAX ||
	    s_cg == UINT32_MAX || s_empty == UINT32_MAX) {
		free(gname);
		free(hname);
		return oom(a, err, errlen);
	}
	bool bad = false;
	for (size_t k = 0; k < a->nnodes && !bad; k++) {
		const struct otf2w_node *n = a->nodes[k];
		char nm[320];
		if (n->rank >= 0)
			snprintf(nm, sizeof(nm), "%s (rank %" PRId64 ")", n->hostname, n->rank);
		else
			snprintf(nm, sizeof(nm), "%s", n->hostname);
		gname[k] = intern(&a->str, nm);
		hname[k] = intern(&a->str, n->hostname);
		bad = gname[k] == UINT32_MAX || hname[k] == UINT32_MAX;
	}
	for (size_t r = 0; r < a->nreg && !bad; r++) {
		char d[320];
		snprintf(d, sizeof(d), "spmtap %s", a->str.s[a->reg[r].cat]);
		bad = intern(&a->str, d) == UINT32_MAX;
	}
	if (bad) {
		free(gname);
		free(hname);
		return oom(a, err, errlen);
	}
	OTF2_ErrorCode c = OTF2_SUCCESS;
	for (size_t i = 0; i < a->str.n && c == OTF2_SUCCESS; i++)
		c = a->lib.OTF2_GlobalDefWriter_WriteString(g, (OTF2_StringRef)i, a->str.s[i]);

	/* System tree: the machine, a node per host, a child per GPU. */
	uint64_t tree = 0;
	if (c == OTF2_SUCCESS)
		c = a->lib.OTF2_GlobalDefWriter_WriteSystemTreeNode(g, (OTF2_SystemTreeNodeRef)tree++, s_machine, s_cm,
								    OTF2_UNDEFINED_SYSTEM_TREE_NODE);
	for (size_t k = 0; k < a->nnodes && c == OTF2_SUCCESS; k++) {
		struct otf2w_node *n = a->nodes[k];
		n->tree = tree++;
		c = a->lib.OTF2_GlobalDefWriter_WriteSystemTreeNode(g, (OTF2_SystemTreeNodeRef)n->tree, hname[k], s_cn, 0);
		for (size_t i = 0; i < n->ngpus && c == OTF2_SUCCESS; i++) {
			n->gpus[i].tree = tree++;
			c = a->lib.OTF2_GlobalDefWriter_WriteSystemTreeNode(
				g, (OTF2_SystemTreeNodeRef)n->gpus[i].tree, n->gpus[i].name, s_cg,
				(OTF2_SystemTreeNodeRef)n->tree);
		}
	}
	for (size_t k = 0; k < a->nnodes && c == OTF2_SUCCESS; k++)
		c = a->lib.OTF2_GlobalDefWriter_WriteLocationGroup(g, (OTF2_LocationGroupRef)k, gname[k],
								   OTF2_LOCATION_GROUP_TYPE_PROCESS,
								   (OTF2_SystemTreeNodeRef)a->nodes[k]->tree,
								   OTF2_UNDEFINED_LOCATION_GROUP);
	free(gname);
	free(hname);
	for (size_t i = 0; i < a->nlocs && c == OTF2_SUCCESS; i++) {
		const struct location *l = &a->locs[i];
		c = a->lib.OTF2_GlobalDefWriter_WriteLocation(g, l->ref, l->name, l->type, l->nevents,
							      (OTF2_LocationGroupRef)l->node);
	}
	for (size_t r = 0; r < a->nreg && c == OTF2_SUCCESS; r++) {
		char d[320];
		snprintf(d, sizeof(d), "spmtap %s", a->str.s[a->reg[r].cat]);
		uint32_t dref = intern(&a->str, d); /* interned above: found, not added */
		c = a->lib.OTF2_GlobalDefWriter_WriteRegion(
			g, (OTF2_RegionRef)r, a->reg[r].name, a->reg[r].name, dref,
			a->reg[r].kernel ? OTF2_REGION_ROLE_FUNCTION : OTF2_REGION_ROLE_ARTIFICIAL,
			a->reg[r].kernel ? OTF2_PARADIGM_HIP : OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE, s_empty,
			0, 0);
	}
	for (size_t m = 0; m < a->nmem && c == OTF2_SUCCESS; m++) {
		const struct member *x = &a->mem[m];
		c = a->lib.OTF2_GlobalDefWriter_WriteMetricMember(g, (OTF2_MetricMemberRef)m, x->name, x->descr,
								  OTF2_METRIC_TYPE_OTHER, x->mode, x->type,
								  OTF2_BASE_DECIMAL, x->exponent, x->unit);
	}
	/* Classes and instances share MetricRefs, handed out as they were made: written in that order. */
	for (size_t k = 0, i = 0; (k < a->ncls || i < a->ninst) && c == OTF2_SUCCESS;) {
		if (k < a->ncls && (i == a->ninst || a->cls[k].ref < a->inst[i].ref)) {
			c = a->lib.OTF2_GlobalDefWriter_WriteMetricClass(g, a->cls[k].ref, (uint8_t)a->cls[k].n,
									 a->cls[k].members, OTF2_METRIC_ASYNCHRONOUS,
									 OTF2_RECORDER_KIND_ABSTRACT);
			k++;
			continue;
		}
		const struct instance *in = &a->inst[i++];
		c = a->lib.OTF2_GlobalDefWriter_WriteMetricInstance(g, in->ref, a->cls[in->klass].ref, in->loc,
								    OTF2_SCOPE_LOCATION_GROUP, in->group);
	}
	if (c != OTF2_SUCCESS)
		return fail_otf2(a, c, "writing the global definitions", err, errlen);
	CHECK(a->lib.OTF2_Archive_CloseGlobalDefWriter(a->ar, g), "closing the global definitions");
	return 0;
}

/*
 * OTF2_Archive_Close flushes every event writer still open; one whose flush
 * already failed has no chunk left and OTF2 crashes on it (3.0.2: a memcpy
 * from NULL in OTF2_File_Write).  Such an archive is left unclosed: its
 * memory and open files are lost (a failed recording ends the process soon
 * after), and what was flushed stays on disk as an unreadable archive.
 */
static void close_archive(struct otf2w *a)
{
	if (a->ar && !a->otf2_broken)
		(void)a->lib.OTF2_Archive_Close(a->ar);
	a->ar = NULL;
	if (a->lib.OTF2_Error_RegisterCallback)
		(void)a->lib.OTF2_Error_RegisterCallback(NULL, NULL);
}

static void free_all(struct otf2w *a)
{
	for (size_t k = 0; k < a->nnodes; k++) {
		struct otf2w_node *n = a->nodes[k];
		for (size_t i = 0; i < n->nst; i++) {
			struct ostream *s = &n->st[i];
			free(s->types);
			free(s->inst);
			free(s->member);
			free(s->single);
			free(s->tids);
			free(s->vals);
		}
		free(n->st);
		free(n->gpus);
		free(n->offs);
		free(n->hostname);
		free(n);
	}
	free(a->nodes);
	for (size_t k = 0; k < a->ncls; k++)
		free(a->cls[k].members);
	free(a->cls);
	free(a->mem);
	free(a->inst);
	free(a->reg);
	free(a->sl);
	free(a->locs);
	strtab_free(&a->str);
	strtab_free(&a->regkeys);
	otf2_lib_close(&a->lib);
	free(a->dir);
	free(a);
}

int otf2w_close(struct otf2w *a, char *err, size_t errlen)
{
	if (!a)
		return 0;
	int rc = a->error ? spmtap_seterr(err, errlen, -a->error, "%s", a->errmsg) : 0;
	if (!rc)
		rc = write_slices(a, err, errlen);
	if (!rc)
		rc = close_locations(a, err, errlen);
	if (!rc)
		rc = write_global(a, err, errlen);
	close_archive(a);
	if (!rc && a->otf2_code != OTF2_SUCCESS)
		rc = fail_otf2(a, a->otf2_code, "closing the archive", err, errlen);
	if (a->dropped)
		pr_warn("otf2", "%s: %" PRIu64 " phases/markers/kernels left out (past the first %u, or ending before they start)",
			a->dir, a->dropped, OTF2W_MAX_SLICES);
	if (a->clamped)
		pr_warn("otf2", "%s: %" PRIu64 " sample times that went back were held at the previous time",
			a->dir, a->clamped);
	free_all(a);
	return rc;
}

void otf2w_abort(struct otf2w *a)
{
	if (!a)
		return;
	close_archive(a);
	free_all(a);
}
