// SPDX-License-Identifier: MIT
/*
 * AMD SMI (libamd_smi.so, ROCm >= 6.0; not in Debian 12) through dlopen.
 *
 * Symbols are bound at run time, 5.7+/7.x name first, then the older name
 * of each renamed pair (SENSORS.md 2.7), and structs whose layout changed
 * (amdsmi_version_t, amdsmi_power_info_t) are interpreted by the library's
 * run-time version, never by a compile-time header: spmtap has none.
 * RTLD_LOCAL because libamd_smi's C++ symbols collide with an older
 * librocm_smi64 that rocm_smi may load into the same process.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/lib/smi_source.h"
#include "log.h"

#define AMDSMI_INIT_AMD_GPUS 2u
#define AMDSMI_STATUS_SUCCESS 0
#define AMDSMI_TEMP_EDGE 0
#define AMDSMI_TEMP_HOTSPOT 1
#define AMDSMI_TEMP_VRAM 2
#define AMDSMI_TEMP_CURRENT 0

typedef void *handle_t;

struct amdsmi_lib {
	void *dl;
	int (*init)(uint64_t);
	int (*shut_down)(void);
	int (*get_lib_version)(void *);
	int (*get_socket_handles)(uint32_t *, handle_t *);
	int (*get_processor_handles)(handle_t, uint32_t *, handle_t *);
	int (*get_bdf)(handle_t, uint64_t *);
	int (*get_energy_count)(handle_t, uint64_t *, float *, uint64_t *);
	int (*get_power_info)(handle_t, void *);
	int (*get_power_info_v2)(handle_t, uint32_t, void *); /* 25.x only; different signature */
	int (*get_temp_metric)(handle_t, uint32_t, uint32_t, int64_t *);
	int (*get_gpu_activity)(handle_t, void *);
	uint32_t major, minor; /* run-time library version */
};

struct smi_source {
	struct amdsmi_lib lib;
	handle_t h;
};

struct sym {
	const char *name, *fallback; /* fallback: the name before a rename, or NULL */
	size_t off;
	bool required;
};

#define S(field, name, fb, req) { name, fb, offsetof(struct amdsmi_lib, field), req }
static const struct sym syms[] = {
	S(init, "amdsmi_init", NULL, true),
	S(shut_down, "amdsmi_shut_down", NULL, true),
	S(get_lib_version, "amdsmi_get_lib_version", NULL, false),
	S(get_socket_handles, "amdsmi_get_socket_handles", NULL, true),
	S(get_processor_handles, "amdsmi_get_processor_handles", "amdsmi_get_device_handles", true),
	S(get_bdf, "amdsmi_get_gpu_device_bdf", "amdsmi_get_device_bdf", true),
	S(get_energy_count, "amdsmi_get_energy_count", "amdsmi_dev_get_energy_count", false),
	S(get_power_info, "amdsmi_get_power_info", NULL, false),
	S(get_power_info_v2, "amdsmi_get_power_info_v2", NULL, false),
	S(get_temp_metric, "amdsmi_get_temp_metric", "amdsmi_dev_get_temp_metric", false),
	S(get_gpu_activity, "amdsmi_get_gpu_activity", "amdsmi_get_engine_usage", false),
};
#undef S

static const char *lib_path(const struct smi_env *env)
{
	if (env && env->amdsmi_lib)
		return env->amdsmi_lib;
	const char *e = getenv("SPMTAP_AMDSMI_LIB");
	return e && *e ? e : "libamd_smi.so";
}

static int bind(struct amdsmi_lib *l, const char *path, char *why, size_t whylen)
{
	l->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!l->dl)
		return spmtap_seterr(why, whylen, ENOENT, "dlopen(%s): %s", path, dlerror());
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		dlerror();
		void *p = dlsym(l->dl, syms[i].name);
		if (!p && syms[i].fallback)
			p = dlsym(l->dl, syms[i].fallback);
		if (!p && syms[i].required) {
			const char *e = dlerror();
			int rc = spmtap_seterr(why, whylen, ENOSYS, "%s: missing required symbol: %s%s%s%s (%s)", path,
					       syms[i].name, syms[i].fallback ? " (or " : "",
					       syms[i].fallback ? syms[i].fallback : "", syms[i].fallback ? ")" : "",
					       e ? e : "not found");
			dlclose(l->dl);
			l->dl = NULL;
			return rc;
		}
		memcpy((char *)l + syms[i].off, &p, sizeof(p));
	}
	if (!l->get_energy_count && !l->get_power_info && !l->get_power_info_v2) {
		dlclose(l->dl);
		l->dl = NULL;
		return spmtap_seterr(why, whylen, ENOSYS,
				     "%s: missing required symbol: amdsmi_get_energy_count or amdsmi_get_power_info",
				     path);
	}
	return 0;
}

/*
 * amdsmi_version_t: 24.x {u32 year, major, minor, release; build},
 * 25.2+/26.x {u32 major, minor, release; build}.  A year >= 2000 in the first
 * word tells them apart without knowing the version first.
 */
static void read_version(struct amdsmi_lib *l)
{
	uint32_t v[16] = { 0 };
	if (!l->get_lib_version || l->get_lib_version(v) != AMDSMI_STATUS_SUCCESS)
		return;
	if (v[0] >= 2000) {
		l->major = v[1];
		l->minor = v[2];
	} else {
		l->major = v[0];
		l->minor = v[1];
	}
}

static int am_open(const struct smi_dev *dev, const struct smi_env *env, struct smi_source **out,
		   char *why, size_t whylen)
{
	struct smi_source *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	const char *path = lib_path(env);
	int rc = bind(&s->lib, path, why, whylen);
	if (rc) {
		free(s);
		return rc;
	}
	int st = s->lib.init(AMDSMI_INIT_AMD_GPUS);
	if (st != AMDSMI_STATUS_SUCCESS) {
		rc = spmtap_seterr(why, whylen, EIO, "amdsmi_init: status %d", st);
		goto fail_dl;
	}
	read_version(&s->lib);
	uint32_t ns = 0;
	if (s->lib.get_socket_handles(&ns, NULL) || !ns) {
		rc = spmtap_seterr(why, whylen, ENODEV, "amdsmi: no sockets");
		goto fail;
	}
	handle_t socks[64];
	if (ns > 64)
		ns = 64;
	s->lib.get_socket_handles(&ns, socks);
	char seen[120] = "";
	for (uint32_t i = 0; i < ns && !s->h; i++) {
		uint32_t np = 0;
		if (s->lib.get_processor_handles(socks[i], &np, NULL) || !np)
			continue;
		handle_t procs[64];
		if (np > 64)
			np = 64;
		if (s->lib.get_processor_handles(socks[i], &np, procs))
			continue;
		for (uint32_t k = 0; k < np; k++) {
			uint64_t bdf = 0;
			if (s->lib.get_bdf(procs[k], &bdf))
				continue;
			/* amdsmi_bdf_t: function:3, device:5, bus:8, domain:48 (LSB first) */
			uint32_t loc = (uint32_t)(bdf & 0xffff), dom = (uint32_t)(bdf >> 16);
			size_t sl = strlen(seen);
			snprintf(seen + sl, sizeof(seen) - sl, "%s%04x:%02x:%02x.%x", sl ? ", " : "", dom, loc >> 8,
				 (loc >> 3) & 0x1f, loc & 7);
			if (dom == dev->domain && loc == dev->location_id) {
				s->h = procs[k];
				break;
			}
		}
	}
	if (!s->h) {
		rc = spmtap_seterr(why, whylen, ENODEV, "amdsmi: no GPU at PCI %04x:%02x:%02x.%x (has: %s)",
				   dev->domain, dev->location_id >> 8, (dev->location_id >> 3) & 0x1f,
				   dev->location_id & 7, seen[0] ? seen : "none");
		goto fail;
	}
	*out = s;
	return 0;
fail:
	s->lib.shut_down();
fail_dl:
	dlclose(s->lib.dl);
	free(s);
	return rc;
}

/* 0xFFFF (24.x preset), UINT32_MAX (26.x preset) and 65535 mean "not supported". */
static bool valid_u32(uint32_t v)
{
	return v != 0xffff && v != UINT32_MAX;
}

static int am_read_all(struct smi_source *s, struct smi_batch *b)
{
	struct amdsmi_lib *l = &s->lib;
	smi_batch_reset(b);
	b->host_before_ns = smi_now_boot_ns();
	int ok = 0;
	if (l->get_energy_count) {
		uint64_t e = 0, ts = 0;
		float res = 0;
		if (l->get_energy_count(s->h, &e, &res, &ts) == AMDSMI_STATUS_SUCCESS) {
			/* raw ticks; res is the library's 15.3 uJ, spmtap uses 2^-16 J */
			b->energy_ticks = e;
			smi_batch_set(b, SMI_M_ENERGY, (double)e * SMI_ENERGY_TICK_J);
			/*
			 * AMD SMI >= 6.0 sits on rsmi >= 6, which returns the
			 * driver's system_clock_counter: BOOTTIME ns at the read.
			 */
			b->sys_clock_ns = ts;
			b->sensor_ts = ts;
			b->ts_domain = SMI_TS_BOOTTIME_NS;
			ok++;
		}
	}
	uint8_t pi[512];
	memset(pi, 0, sizeof(pi));
	int st = -1;
	if (l->get_power_info)
		st = l->get_power_info(s->h, pi);
	else if (l->get_power_info_v2)
		st = l->get_power_info_v2(s->h, 0, pi);
	if (st == AMDSMI_STATUS_SUCCESS) {
		/*
		 * 6.0-6.3 (lib <= 24): u32 current, average first.  25.x and
		 * 26.x put a u64 socket_power first: current at 8, average at 12.
		 */
		size_t off = l->major >= 25 ? 8 : 0;
		uint32_t cur, avg;
		memcpy(&cur, pi + off, 4);
		memcpy(&avg, pi + off + 4, 4);
		if (valid_u32(cur))
			smi_batch_set(b, SMI_M_POWER_CUR, cur);
		if (valid_u32(avg))
			smi_batch_set(b, SMI_M_POWER_AVG, avg);
		ok++;
	}
	if (l->get_temp_metric) {
		static const struct { uint32_t type; enum smi_metric m; } temps[] = {
			{ AMDSMI_TEMP_EDGE, SMI_M_TEMP_EDGE },
			{ AMDSMI_TEMP_HOTSPOT, SMI_M_TEMP_HOTSPOT },
			{ AMDSMI_TEMP_VRAM, SMI_M_TEMP_MEM },
		};
		for (size_t i = 0; i < sizeof(temps) / sizeof(temps[0]); i++) {
			int64_t t = 0;
			/* whole degC (the code divides rsmi's m°C; the 6.x comment is wrong) */
			if (l->get_temp_metric(s->h, temps[i].type, AMDSMI_TEMP_CURRENT, &t) == AMDSMI_STATUS_SUCCESS &&
			    t != 0xffff && t != UINT32_MAX && t >= 0) {
				smi_batch_set(b, temps[i].m, (double)t);
				ok++;
			}
		}
	}
	if (l->get_gpu_activity) {
		uint32_t u[16] = { 0 };
		if (l->get_gpu_activity(s->h, u) == AMDSMI_STATUS_SUCCESS) {
			if (valid_u32(u[0]))
				smi_batch_set(b, SMI_M_GFX_ACTIVITY, u[0]);
			if (valid_u32(u[1]))
				smi_batch_set(b, SMI_M_UMC_ACTIVITY, u[1]);
			if (valid_u32(u[2]))
				smi_batch_set(b, SMI_M_MM_ACTIVITY, u[2]);
			ok++;
		}
	}
	b->host_after_ns = smi_now_boot_ns();
	return ok ? 0 : -EIO;
}

static void am_close(struct smi_source *s)
{
	if (!s)
		return;
	s->lib.shut_down();
	dlclose(s->lib.dl);
	free(s);
}

const struct smi_source_ops smi_amdsmi_ops = {
	.name = "amd_smi",
	.open = am_open,
	.read_all = am_read_all,
	.close = am_close,
};
