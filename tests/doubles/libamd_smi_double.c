// SPDX-License-Identifier: MIT
/*
 * A test double of libamd_smi.so: just the calls spmtap's amd_smi source
 * makes, answered from the (emulated or synthetic) sysfs gpu_metrics table,
 * so that it reports the same values as spmtap's direct decoder and the
 * two paths can be compared sample for sample.
 *
 * Two builds, because what spmtap must survive is the difference:
 *   -DAMDSMI_V6: a 24.x (ROCm 6.x) library: amdsmi_version_t with a year,
 *     amdsmi_power_info_t with u32 current/average first.  It exports the
 *     OLDER name of every renamed pair spmtap binds with a fallback
 *     (amdsmi_get_device_handles, amdsmi_get_device_bdf,
 *     amdsmi_dev_get_energy_count, amdsmi_dev_get_temp_metric,
 *     amdsmi_get_engine_usage), so the fallback binding is exercised.
 *   -DAMDSMI_V7: a 26.x (ROCm 7.x) library: no year, power_info with a u64
 *     socket_power first and UINT32_MAX for unsupported members; primary
 *     names only.
 *
 * Environment: AMDSMI_DOUBLE_SYSFS (default "/sys") is the tree whose
 * class/drm/card* devices are enumerated.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if !defined(AMDSMI_V6) && !defined(AMDSMI_V7)
#error "build with -DAMDSMI_V6 or -DAMDSMI_V7"
#endif

#define API __attribute__((visibility("default")))

/* The exported calls (no vendor header: the double must not need one). */
struct version;
API int amdsmi_init(uint64_t flags);
API int amdsmi_shut_down(void);
API int amdsmi_get_lib_version(struct version *v);
API int amdsmi_get_socket_handles(uint32_t *count, void **h);
API int amdsmi_get_power_info(void *h, void *out);
#ifdef AMDSMI_V6
API int amdsmi_get_device_handles(void *s, uint32_t *c, void **h);
API int amdsmi_get_device_bdf(void *h, uint64_t *b);
API int amdsmi_dev_get_energy_count(void *h, uint64_t *e, float *r, uint64_t *ts);
API int amdsmi_dev_get_temp_metric(void *h, uint32_t ty, uint32_t m, int64_t *o);
API int amdsmi_get_engine_usage(void *h, uint32_t *u);
#else
API int amdsmi_get_processor_handles(void *s, uint32_t *c, void **h);
API int amdsmi_get_gpu_device_bdf(void *h, uint64_t *b);
API int amdsmi_get_energy_count(void *h, uint64_t *e, float *r, uint64_t *ts);
API int amdsmi_get_temp_metric(void *h, uint32_t ty, uint32_t m, int64_t *o);
API int amdsmi_get_gpu_activity(void *h, uint32_t *u);
#endif

enum { ST_OK = 0, ST_INVAL = 1, ST_NOT_SUPPORTED = 2, ST_IO = 12, ST_NOT_INIT = 32 };

#define MAXDEV 16

struct dev {
	char path[800]; /* .../gpu_metrics */
	uint64_t bdf;   /* amdsmi_bdf_t.as_uint: fn:3 dev:5 bus:8 domain:48 */
};

static struct dev devs[MAXDEV];
static unsigned ndev;
static int inited;

static int tree_scan(void)
{
	const char *root = getenv("AMDSMI_DOUBLE_SYSFS");
	char cls[512];
	snprintf(cls, sizeof(cls), "%s/class/drm", root && *root ? root : "/sys");
	DIR *d = opendir(cls);
	if (!d)
		return -1;
	struct dirent *de;
	ndev = 0;
	/* card order by number, as the library sorts them */
	for (int want = 0; want < 64 && ndev < MAXDEV; want++) {
		char link[700], tgt[PATH_MAX], gm[800];
		snprintf(link, sizeof(link), "%s/card%d/device", cls, want);
		if (!realpath(link, tgt))
			continue;
		const char *b = strrchr(tgt, '/');
		b = b ? b + 1 : tgt;
		unsigned dom, bus, dv, fn;
		if (sscanf(b, "%x:%x:%x.%x", &dom, &bus, &dv, &fn) != 4)
			continue;
		snprintf(gm, sizeof(gm), "%s/gpu_metrics", link);
		if (access(gm, R_OK))
			continue;
		snprintf(devs[ndev].path, sizeof(devs[ndev].path), "%s", gm);
		devs[ndev].bdf = (uint64_t)dom << 16 | bus << 8 | dv << 3 | fn;
		ndev++;
	}
	(void)de;
	closedir(d);
	return 0;
}

API int amdsmi_init(uint64_t flags)
{
	(void)flags;
	if (tree_scan())
		return ST_IO;
	inited++;
	return ST_OK;
}

API int amdsmi_shut_down(void)
{
	if (inited)
		inited--;
	return ST_OK;
}

#ifdef AMDSMI_V6
struct version { uint32_t year, major, minor, release; const char *build; };
API int amdsmi_get_lib_version(struct version *v)
{
	*v = (struct version){ 2024, 24, 7, 1, "double-v6" };
	return ST_OK;
}
#define NA32 0xffffu /* 24.x presets 0xFFFF */
#else
struct version { uint32_t major, minor, release; const char *build; };
API int amdsmi_get_lib_version(struct version *v)
{
	*v = (struct version){ 26, 5, 0, "double-v7" };
	return ST_OK;
}
#define NA32 UINT32_MAX
#endif

/* One socket per GPU; a handle is a pointer into devs[]. */
API int amdsmi_get_socket_handles(uint32_t *count, void **h)
{
	if (!inited)
		return ST_NOT_INIT;
	if (!count)
		return ST_INVAL;
	if (h)
		for (uint32_t i = 0; i < *count && i < ndev; i++)
			h[i] = &devs[i];
	*count = ndev;
	return ST_OK;
}

static int proc_handles(void *sock, uint32_t *count, void **h)
{
	if (!inited)
		return ST_NOT_INIT;
	if (h && *count >= 1)
		h[0] = sock;
	*count = 1;
	return ST_OK;
}

static int bdf(void *h, uint64_t *out)
{
	*out = ((struct dev *)h)->bdf;
	return ST_OK;
}

/* The table, decoded only as far as the double answers (SENSORS.md 4.3). */
struct tab {
	int crev;
	int temp_edge, temp_hot, temp_mem;
	uint32_t gfx, umc, mm, pavg, pcur;
	uint64_t energy, sysclock;
};

static uint16_t g16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint64_t g64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static int read_tab(void *h, struct tab *t)
{
	uint8_t b[4096];
	int fd = open(((struct dev *)h)->path, O_RDONLY);
	if (fd < 0)
		return ST_IO;
	ssize_t n = pread(fd, b, sizeof(b), 0);
	close(fd);
	if (n < 120 || b[2] != 1)
		return ST_NOT_SUPPORTED;
	memset(t, 0xff, sizeof(*t));
	t->crev = b[3];
	if (t->crev <= 3) {
		t->temp_edge = g16(b + 4);
		t->temp_hot = g16(b + 6);
		t->temp_mem = g16(b + 8);
		t->gfx = g16(b + 16);
		t->umc = g16(b + 18);
		t->mm = g16(b + 20);
		t->pavg = g16(b + 22);
		t->pcur = NA32;
		t->energy = g64(b + 24);
		t->sysclock = g64(b + 32);
	} else {
		int e = (t->crev == 5 || t->crev == 6) ? 88 : 24;
		t->temp_edge = 0xffff;
		t->temp_hot = g16(b + 4);
		t->temp_mem = g16(b + 6);
		t->pcur = g16(b + 10);
		t->pavg = NA32;
		t->gfx = g16(b + 12);
		t->umc = g16(b + 14);
		t->mm = NA32;
		t->energy = g64(b + e);
		t->sysclock = g64(b + e + 8);
	}
	if (t->pcur == 0xffff)
		t->pcur = NA32;
	if (t->pavg == 0xffff)
		t->pavg = NA32;
	return ST_OK;
}

static int energy(void *h, uint64_t *e, float *res, uint64_t *ts)
{
	struct tab t;
	int st = read_tab(h, &t);
	if (st)
		return st;
	*e = t.energy;
	*res = 15.3f; /* what the real library says (hard-coded) */
	*ts = t.sysclock;
	return ST_OK;
}

static int temp(void *h, uint32_t type, uint32_t metric, int64_t *out)
{
	struct tab t;
	int st = read_tab(h, &t);
	if (st)
		return st;
	if (metric != 0)
		return ST_NOT_SUPPORTED;
	int v = type == 0 ? t.temp_edge : type == 1 ? t.temp_hot : type == 2 ? t.temp_mem : 0xffff;
	if (v == 0xffff)
		return ST_NOT_SUPPORTED;
	*out = v; /* whole degC */
	return ST_OK;
}

static int activity(void *h, uint32_t *u)
{
	struct tab t;
	int st = read_tab(h, &t);
	if (st)
		return st;
	u[0] = t.gfx;
	u[1] = t.umc;
	u[2] = t.mm == 0xffff ? 0xffff : t.mm;
	return ST_OK;
}

API int amdsmi_get_power_info(void *h, void *out)
{
	struct tab t;
	int st = read_tab(h, &t);
	if (st)
		return st;
#ifdef AMDSMI_V6
	/* 6.0-6.3: u32 current, average, gfx/soc/mem voltage, power_limit; reserved[11] */
	uint32_t p[17];
	memset(p, 0xff, sizeof(p));
	p[0] = t.pcur;
	p[1] = t.pavg;
#else
	/* 26.x: u64 socket_power; u32 current, average; u64 voltages; u32 limit; u64 reserved[18] */
	struct {
		uint64_t socket_power;
		uint32_t cur, avg;
		uint64_t vgfx, vsoc, vmem;
		uint32_t limit;
		uint64_t reserved[18];
	} p;
	memset(&p, 0xff, sizeof(p));
	p.cur = t.pcur;
	p.avg = t.pavg;
	p.socket_power = t.pcur != NA32 ? t.pcur : t.pavg;
#endif
	memcpy(out, &p, sizeof(p));
	return ST_OK;
}

#ifdef AMDSMI_V6
API int amdsmi_get_device_handles(void *s, uint32_t *c, void **h) { return proc_handles(s, c, h); }
API int amdsmi_get_device_bdf(void *h, uint64_t *b) { return bdf(h, b); }
API int amdsmi_dev_get_energy_count(void *h, uint64_t *e, float *r, uint64_t *ts) { return energy(h, e, r, ts); }
API int amdsmi_dev_get_temp_metric(void *h, uint32_t ty, uint32_t m, int64_t *o) { return temp(h, ty, m, o); }
API int amdsmi_get_engine_usage(void *h, uint32_t *u) { return activity(h, u); }
#else
API int amdsmi_get_processor_handles(void *s, uint32_t *c, void **h) { return proc_handles(s, c, h); }
API int amdsmi_get_gpu_device_bdf(void *h, uint64_t *b) { return bdf(h, b); }
API int amdsmi_get_energy_count(void *h, uint64_t *e, float *r, uint64_t *ts) { return energy(h, e, r, ts); }
API int amdsmi_get_temp_metric(void *h, uint32_t ty, uint32_t m, int64_t *o) { return temp(h, ty, m, o); }
API int amdsmi_get_gpu_activity(void *h, uint32_t *u) { return activity(h, u); }
#endif
