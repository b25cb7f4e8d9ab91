/* SPDX-License-Identifier: MIT */
/*
 * The public C API (include/spmtap.h, docs/api.md): devices, counters,
 * sessions and chunks, on top of spm/ discovery and collector/lib/session.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "collector/lib/series.h"
#include "collector/lib/session.h"
#include "collector/lib/smi_source.h"
#include "log.h"
#include "spm/catalog.h"
#include "spm/spm.h"
#include "spmtap.h"

#define API_ERRLEN 1024

static _Thread_local char tls_err[API_ERRLEN];

static int fail(int err, char *buf, size_t len, const char *msg)
{
	if (buf && msg && buf != msg)
		snprintf(buf, len, "%s", msg);
	errno = err < 0 ? -err : err;
	return err < 0 ? err : -err;
}

/*
 * sz: at least the first version's size (min), and any bytes beyond what this
 * library knows (known) must be zero.
 */
static int opts_check(const void *opts, size_t min, size_t known)
{
	size_t sz = *(const size_t *)opts;
	if (sz < min)
		return -EINVAL;
	for (size_t i = known; i < sz; i++)
		if (((const unsigned char *)opts)[i])
			return -EINVAL;
	return 0;
}

/* ---- devices ---------------------------------------------------------------- */

struct spmtap_devices {
	struct spm_device *devs;
	size_t n;
	const struct spm_catalog **cat; /* [n], lazily; NULL: not loaded */
};

int spmtap_devices_open(struct spmtap_devices **out, const struct spmtap_discover_opts *o)
{
	if (!out)
		return fail(-EINVAL, NULL, 0, NULL);
	*out = NULL;
	if (o && opts_check(o, sizeof(size_t), sizeof(*o)) < 0)
		return fail(-EINVAL, tls_err, sizeof(tls_err), "spmtap_discover_opts: bad sz or non-zero unknown fields");
	struct spmtap_devices *L = calloc(1, sizeof(*L));
	if (!L)
		return fail(-ENOMEM, NULL, 0, NULL);
	char err[SPM_ERRLEN] = "";
	int rc = spm_discover(o ? o->sysfs_root : NULL, &L->devs, &L->n, err, sizeof(err));
	if (rc < 0) {
		free(L);
		return fail(rc, tls_err, sizeof(tls_err), err);
	}
	for (size_t i = 0; i < L->n; i++)
		spm_device_marketing_name(&L->devs[i]);
	L->cat = calloc(L->n ? L->n : 1, sizeof(*L->cat));
	if (!L->cat) {
		free(L->devs);
		free(L);
		return fail(-ENOMEM, NULL, 0, NULL);
	}
	*out = L;
	return 0;
}

void spmtap_devices_close(struct spmtap_devices *L)
{
	if (!L)
		return;
	free(L->devs);
	free(L->cat);
	free(L);
}

int spmtap_devices_count(const struct spmtap_devices *L)
{
	return L ? (int)L->n : fail(-EINVAL, NULL, 0, NULL);
}

static const struct spm_device *dev_at(const struct spmtap_devices *L, unsigned int i)
{
	if (!L || i >= L->n) {
		errno = EINVAL;
		return NULL;
	}
	return &L->devs[i];
}

const char *spmtap_device_name(const struct spmtap_devices *L, unsigned int i)
{
	const struct spm_device *d = dev_at(L, i);
	return d ? (d->marketing_name[0] ? d->marketing_name : d->name) : NULL;
}

const char *spmtap_device_gfx(const struct spmtap_devices *L, unsigned int i)
{
	const struct spm_device *d = dev_at(L, i);
	return d ? d->gfx : NULL;
}

uint32_t spmtap_device_gpu_id(const struct spmtap_devices *L, unsigned int i)
{
	const struct spm_device *d = dev_at(L, i);
	return d ? d->gpu_id : 0;
}

uint32_t spmtap_device_num_xcc(const struct spmtap_devices *L, unsigned int i)
{
	const struct spm_device *d = dev_at(L, i);
	return d ? d->num_xcc : 0;
}

uint32_t spmtap_device_num_se(const struct spmtap_devices *L, unsigned int i)
{
	const struct spm_device *d = dev_at(L, i);
	return d ? d->num_se : 0;
}

static const struct spm_catalog *catalog(const struct spmtap_devices *L, unsigned int i)
{
	const struct spm_device *d = dev_at(L, i);
	if (!d)
		return NULL;
	if (!L->cat[i]) {
		enum spm_gfx g;
		if (spm_gfx_parse(d->gfx, &g, tls_err, sizeof(tls_err)) < 0 ||
		    spm_catalog_get(g, &L->cat[i], tls_err, sizeof(tls_err)) < 0) {
			errno = EOPNOTSUPP;
			return NULL;
		}
	}
	return L->cat[i];
}

int spmtap_device_counter_count(const struct spmtap_devices *L, unsigned int i)
{
	const struct spm_catalog *c = catalog(L, i);
	return c ? (int)spm_catalog_count(c) : -errno;
}

static const struct spm_counter *counter_at(const struct spmtap_devices *L, unsigned int i,
					    unsigned int k)
{
	const struct spm_catalog *c = catalog(L, i);
	if (!c || k >= spm_catalog_count(c)) {
		errno = EINVAL;
		return NULL;
	}
	return spm_catalog_at(c, k);
}

const char *spmtap_device_counter_name(const struct spmtap_devices *L, unsigned int i, unsigned int k)
{
	const struct spm_counter *c = counter_at(L, i, k);
	return c ? c->name : NULL;
}

const char *spmtap_device_counter_description(const struct spmtap_devices *L, unsigned int i,
					      unsigned int k)
{
	const struct spm_counter *c = counter_at(L, i, k);
	return c ? (c->desc ? c->desc : "") : NULL;
}

int spmtap_device_counter_streamable(const struct spmtap_devices *L, unsigned int i, unsigned int k)
{
	const struct spm_counter *c = counter_at(L, i, k);
	return c ? spm_counter_streamable(c) : -EINVAL;
}

/* ---- chunks ----------------------------------------------------------------- */

#define SC(c) ((const struct series_chunk *)(const void *)(c))

const char *spmtap_chunk_source(const struct spmtap_chunk *c) { return SC(c)->stream->source; }
uint32_t spmtap_chunk_gpu(const struct spmtap_chunk *c) { return SC(c)->stream->gpu; }
uint32_t spmtap_chunk_gpu_id(const struct spmtap_chunk *c) { return SC(c)->stream->gpu_id; }
int32_t spmtap_chunk_xcc(const struct spmtap_chunk *c) { return SC(c)->stream->xcc; }
uint32_t spmtap_chunk_n(const struct spmtap_chunk *c) { return SC(c)->n; }
const int64_t *spmtap_chunk_host_ns(const struct spmtap_chunk *c) { return SC(c)->host_ns; }
const uint64_t *spmtap_chunk_ticks(const struct spmtap_chunk *c) { return SC(c)->ticks; }
uint32_t spmtap_chunk_ncols(const struct spmtap_chunk *c) { return SC(c)->stream->ncols; }

static const struct series_column *col_at(const struct spmtap_chunk *c, uint32_t col)
{
	if (!c || col >= SC(c)->stream->ncols) {
		errno = EINVAL;
		return NULL;
	}
	return &SC(c)->stream->cols[col];
}

const char *spmtap_chunk_col_name(const struct spmtap_chunk *c, uint32_t col)
{
	const struct series_column *k = col_at(c, col);
	return k ? k->name : NULL;
}

const char *spmtap_chunk_col_unit(const struct spmtap_chunk *c, uint32_t col)
{
	const struct series_column *k = col_at(c, col);
	return k ? k->unit : NULL;
}

enum spmtap_type spmtap_chunk_col_type(const struct spmtap_chunk *c, uint32_t col)
{
	const struct series_column *k = col_at(c, col);
	return k ? (k->type == SERIES_F64 ? SPMTAP_TYPE_F64 : SPMTAP_TYPE_U64) : 0;
}

const uint64_t *spmtap_chunk_u64(const struct spmtap_chunk *c, uint32_t col)
{
	const struct series_column *k = col_at(c, col);
	return k && k->type == SERIES_U64 ? (const uint64_t *)SC(c)->values[col] : NULL;
}

const double *spmtap_chunk_f64(const struct spmtap_chunk *c, uint32_t col)
{
	const struct series_column *k = col_at(c, col);
	return k && k->type == SERIES_F64 ? (const double *)SC(c)->values[col] : NULL;
}

const uint64_t *spmtap_chunk_missing(const struct spmtap_chunk *c, uint32_t col)
{
	return col_at(c, col) && SC(c)->missing ? SC(c)->missing[col] : NULL;
}

/* ---- sessions --------------------------------------------------------------- */

struct spmtap_session {
	struct session *S;
	spmtap_chunk_fn on_chunk;
	void *user;
	char **counters;
	uint32_t gpus[SESSION_MAX_GPUS];
	const struct writer_ops *fmts[SESSION_MAX_WRITERS];
	char err[API_ERRLEN];
	bool kernels, stopped;
	char *kernels_csv;
};

static int api_on_chunk(const struct series_chunk *c, void *user)
{
	struct spmtap_session *A = user;
	return A->on_chunk((const struct spmtap_chunk *)(const void *)c, A->user);
}

/* "power,energy,temp,activity,clock,all" or metric names -> SMI_M_BIT set (session.h). */
int session_parse_smi(const char *spec, uint32_t *mask, char *err, size_t errlen)
{
	static const struct { const char *name; uint32_t bits; } groups[] = {
		{ "power", SMI_M_BIT(SMI_M_POWER_AVG) | SMI_M_BIT(SMI_M_POWER_CUR) },
		{ "energy", SMI_M_BIT(SMI_M_ENERGY) },
		{ "temp", SMI_M_BIT(SMI_M_TEMP_EDGE) | SMI_M_BIT(SMI_M_TEMP_HOTSPOT) |
			  SMI_M_BIT(SMI_M_TEMP_MEM) | SMI_M_BIT(SMI_M_TEMP_VRSOC) },
		{ "activity", SMI_M_BIT(SMI_M_GFX_ACTIVITY) | SMI_M_BIT(SMI_M_UMC_ACTIVITY) |
			      SMI_M_BIT(SMI_M_MM_ACTIVITY) },
		{ "clock", SMI_M_BIT(SMI_M_GFXCLK) | SMI_M_BIT(SMI_M_SOCCLK) | SMI_M_BIT(SMI_M_UCLK) },
		{ "all", (1u << SMI_M_COUNT) - 1 },
	};
	char *dup = strdup(spec), *save = NULL;
	if (!dup)
		return -ENOMEM;
	*mask = 0;
	int rc = 0;
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		size_t g;
		for (g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
			if (!strcmp(groups[g].name, t))
				break;
		if (g < sizeof(groups) / sizeof(groups[0])) {
			*mask |= groups[g].bits;
			continue;
		}
		int m = smi_metric_lookup(t);
		if (m < 0) {
			rc = spmtap_seterr(err, errlen, EINVAL, "sensor %s: unknown (power, energy, temp, "
					   "activity, clock, all, or a name from `spmtap list --smi`)", t);
			break;
		}
		*mask |= SMI_M_BIT(m);
	}
	free(dup);
	return rc;
}

int session_make_dir(const char *dir, char *err, size_t errlen)
{
	char p[4096];
	if (snprintf(p, sizeof(p), "%s", dir) >= (int)sizeof(p))
		return spmtap_seterr(err, errlen, ENAMETOOLONG, "%s: %s", dir, strerror(ENAMETOOLONG));
	/* Each parent in turn; one we may not create but which exists is fine, the last must be made. */
	for (char *q = p + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = 0;
		if (mkdir(p, 0755) < 0 && errno != EEXIST && errno != EACCES && errno != EROFS) {
			int e = errno;
			return spmtap_seterr(err, errlen, e, "%s: %s", p, strerror(e));
		}
		*q = '/';
	}
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		return spmtap_seterr(err, errlen, errno, "%s: %s", dir, strerror(errno));
	return 0;
}

int session_parse_formats(const char *spec, const struct writer_ops **out, size_t *n, char *err,
			  size_t errlen)
{
	*n = 0;
	if (!spec || !*spec)
		return 0;
	char *dup = strdup(spec), *save = NULL;
	if (!dup)
		return -ENOMEM;
	int rc = 0;
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		const struct writer_ops *w = writer_lookup(t, err, errlen);
		if (!w) {
			rc = -EINVAL;
			break;
		}
		bool seen = false;
		for (size_t i = 0; i < *n; i++)
			seen |= out[i] == w;
		if (!seen && *n < SESSION_MAX_WRITERS)
			out[(*n)++] = w;
	}
	free(dup);
	return rc;
}

static void api_free(struct spmtap_session *A)
{
	if (!A)
		return;
	session_close(A->S);
	free(A->counters);
	free(A->kernels_csv);
	free(A);
}

int spmtap_session_open(struct spmtap_session **out, const struct spmtap_session_opts *o)
{
	tls_err[0] = 0;
	if (!out || !o)
		return fail(-EINVAL, tls_err, sizeof(tls_err), "spmtap_session_open: NULL argument");
	*out = NULL;
	if (opts_check(o, offsetof(struct spmtap_session_opts, user) + sizeof(void *), sizeof(*o)) < 0)
		return fail(-EINVAL, tls_err, sizeof(tls_err),
			    "spmtap_session_opts: sz is too small, or fields this library does not know are set");
	if (!o->devices)
		return fail(-EINVAL, tls_err, sizeof(tls_err), "spmtap_session_opts: devices is required");
	if (o->ngpus > SESSION_MAX_GPUS)
		return fail(-EINVAL, tls_err, sizeof(tls_err), "spmtap_session_opts: too many GPUs");
	struct spmtap_session *A = calloc(1, sizeof(*A));
	if (!A)
		return fail(-ENOMEM, tls_err, sizeof(tls_err), "out of memory");
	A->on_chunk = o->on_chunk;
	A->user = o->user;
	size_t ng = o->gpus ? o->ngpus : 1;
	for (size_t i = 0; i < ng; i++)
		A->gpus[i] = o->gpus ? o->gpus[i] : 0;
	uint32_t smi = 0;
	size_t nfmt = 0;
	int rc = 0;
	if (o->smi && *o->smi)
		rc = session_parse_smi(o->smi, &smi, A->err, sizeof(A->err));
	if (!rc)
		rc = session_parse_formats(o->formats, A->fmts, &nfmt, A->err, sizeof(A->err));
	if (!rc && o->dir && *o->dir)
		rc = session_make_dir(o->dir, A->err, sizeof(A->err));
	/* sz covers `kernels` (added after 0.1): dispatches, and NAME_kernels.csv with files as `record` does. */
	A->kernels = o->sz >= offsetof(struct spmtap_session_opts, kernels) + sizeof(int) && o->kernels;
	if (!rc && A->kernels && nfmt) {
		const char *dir = o->dir && *o->dir ? o->dir : ".", *name = o->name && *o->name ? o->name : "spmtap";
		size_t n = strlen(dir) + strlen(name) + 16;
		if (!(A->kernels_csv = malloc(n)))
			rc = -ENOMEM;
		else
			snprintf(A->kernels_csv, n, "%s/%s_kernels.csv", dir, name);
	}
	if (!rc) {
		struct session_opts so = {
			.devs = o->devices->devs, .ndev = o->devices->n, .gpus = A->gpus, .ngpus = ng,
			.counters = o->counters, .ncounters = o->counters ? o->ncounters : 0,
			.interval = o->interval, .smi_metrics = smi, .smi_interval_ns = o->smi_interval_ns,
			.dir = o->dir, .name = o->name, .formats = A->fmts, .nformats = nfmt,
			.command_line = "libspmtap", .on_chunk = o->on_chunk ? api_on_chunk : NULL,
			.user = A, .kernels = A->kernels, .kernels_csv = A->kernels_csv,
		};
		rc = session_open(&A->S, &so, A->err, sizeof(A->err));
	}
	if (rc < 0) {
		snprintf(tls_err, sizeof(tls_err), "%s", A->err[0] ? A->err : spmtap_strerror(rc));
		api_free(A);
		return fail(rc, NULL, 0, NULL);
	}
	*out = A;
	return 0;
}

int spmtap_session_start(struct spmtap_session *A)
{
	if (!A)
		return fail(-EINVAL, NULL, 0, NULL);
	int rc = session_start(A->S, A->err, sizeof(A->err));
	return rc < 0 ? fail(rc, NULL, 0, NULL) : 0;
}

int spmtap_session_stop(struct spmtap_session *A)
{
	if (!A)
		return fail(-EINVAL, NULL, 0, NULL);
	int rc = session_stop(A->S, A->err, sizeof(A->err));
	A->stopped = true;
	return rc < 0 ? fail(rc, NULL, 0, NULL) : 0;
}

int spmtap_session_kernels_fd(const struct spmtap_session *A)
{
	if (!A)
		return fail(-EINVAL, NULL, 0, NULL);
	int fd = session_kernels_fd(A->S);
	return fd < 0 ? fail(-ENOENT, NULL, 0, NULL) : fd;
}

int spmtap_session_kernels(const struct spmtap_session *A, spmtap_kernel_fn fn, void *user)
{
	if (!A)
		return fail(-EINVAL, NULL, 0, NULL);
	if (!A->kernels)
		return fail(-ENOENT, NULL, 0, NULL);
	if (!A->stopped)
		return fail(-EAGAIN, NULL, 0, NULL);
	size_t n;
	const struct series_dispatch *d = session_kernels(A->S, &n);
	for (size_t i = 0; fn && i < n; i++) {
		/* spmtap's GPU index is the device's position in opts.devices (spmtap_devices_open's order) */
		struct spmtap_kernel_dispatch k = {
			.corr_id = d[i].corr_id, .pid = d[i].pid, .tid = d[i].tid, .queue_id = d[i].queue_id,
			.packet_index = d[i].packet_index, .kernel = d[i].kernel ? d[i].kernel : "",
			.start_ns = d[i].start_ns, .end_ns = d[i].end_ns, .start_ticks = d[i].start_ticks,
			.end_ticks = d[i].end_ticks, .status = d[i].status, .gpu = d[i].gpu,
		};
		memcpy(k.grid, d[i].grid, sizeof(k.grid));
		memcpy(k.wg, d[i].wg, sizeof(k.wg));
		if (fn(&k, user))
			break;
	}
	return n > INT32_MAX ? INT32_MAX : (int)n;
}

void spmtap_session_close(struct spmtap_session *A)
{
	api_free(A);
}

const char *spmtap_session_errmsg(const struct spmtap_session *A)
{
	return A ? A->err : tls_err;
}
