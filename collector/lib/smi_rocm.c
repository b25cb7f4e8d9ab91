// SPDX-License-Identifier: MIT
/*
 * ROCm SMI (Debian 12: librocm_smi64.so.1, 5.2.3) through dlopen.
 *
 * Three hazards of that library shape this file (SENSORS.md 3, 8):
 *  - it is a debug build: a gpu_metrics content revision >= 4 (every MI300)
 *    trips an assert in rsmi_dev_gpu_metrics_info_get and
 *    rsmi_dev_energy_count_get and ABORTS THE WHOLE PROCESS.  So the table
 *    header is read directly first, and an old library is never asked
 *    about a v1.4+ table;
 *  - a process that dies holding its /dev/shm card mutex leaves later
 *    rsmi_init calls waiting 5 s and failing.  So the first contact
 *    (init, enumeration, one read) happens in a forked child with a
 *    timeout; only if the child comes back clean does this process init;
 *  - for v1.2/v1.3 tables 5.2.3 returns firmware_timestamp x 10 (PMFW ns)
 *    as the energy timestamp, not BOOTTIME; newer versions return the
 *    driver's BOOTTIME.  The domain is set from the run-time version.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/lib/smi_source.h"
#include "log.h"

#define RSMI_TEMP_TYPE_EDGE 0
#define RSMI_TEMP_TYPE_JUNCTION 1
#define RSMI_TEMP_TYPE_MEMORY 2
#define RSMI_TEMP_CURRENT 0

struct rsmi_lib {
	void *dl;
	int (*init)(uint64_t);
	int (*shut_down)(void);
	int (*num_devices)(uint32_t *);
	int (*pci_id)(uint32_t, uint64_t *);
	int (*version)(void *);
	int (*energy)(uint32_t, uint64_t *, float *, uint64_t *);
	int (*power_ave)(uint32_t, uint32_t, uint64_t *);
	int (*temp)(uint32_t, uint32_t, uint32_t, int64_t *);
	int (*busy)(uint32_t, uint32_t *);
	int (*mem_busy)(uint32_t, uint32_t *);
	uint32_t major, minor;
};

struct smi_source {
	struct rsmi_lib lib;
	uint32_t dv;
	bool energy_ok;          /* table revision safe for energy_count_get */
	enum smi_ts_domain ts_domain;
};

static const char *lib_path(const struct smi_env *env)
{
	if (env && env->rocm_lib)
		return env->rocm_lib;
	const char *e = getenv("SPMTAP_ROCM_SMI_LIB");
	return e && *e ? e : "librocm_smi64.so.1";
}

static int bind(struct rsmi_lib *l, const char *path, char *why, size_t whylen)
{
	static const struct { const char *name; size_t off; bool req; } syms[] = {
		{ "rsmi_init", offsetof(struct rsmi_lib, init), true },
		{ "rsmi_shut_down", offsetof(struct rsmi_lib, shut_down), true },
		{ "rsmi_num_monitor_devices", offsetof(struct rsmi_lib, num_devices), true },
		{ "rsmi_dev_pci_id_get", offsetof(struct rsmi_lib, pci_id), true },
		{ "rsmi_version_get", offsetof(struct rsmi_lib, version), false },
		{ "rsmi_dev_energy_count_get", offsetof(struct rsmi_lib, energy), false },
		{ "rsmi_dev_power_ave_get", offsetof(struct rsmi_lib, power_ave), false },
		{ "rsmi_dev_temp_metric_get", offsetof(struct rsmi_lib, temp), false },
		{ "rsmi_dev_busy_percent_get", offsetof(struct rsmi_lib, busy), false },
		{ "rsmi_dev_memory_busy_percent_get", offsetof(struct rsmi_lib, mem_busy), false },
	};
	l->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!l->dl)
		return spmtap_seterr(why, whylen, ENOENT, "dlopen(%s): %s", path, dlerror());
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		dlerror();
		void *p = dlsym(l->dl, syms[i].name);
		if (!p && syms[i].req) {
			int rc = spmtap_seterr(why, whylen, ENOSYS, "%s: missing required symbol: %s (%s)", path,
					       syms[i].name, dlerror());
			dlclose(l->dl);
			l->dl = NULL;
			return rc;
		}
		memcpy((char *)l + syms[i].off, &p, sizeof(p));
	}
	uint32_t v[8] = { 0 };
	if (l->version && l->version(v) == 0) {
		l->major = v[0];
		l->minor = v[1];
	}
	return 0;
}

/* rsmi BDFID: domain << 32 | bus << 8 | dev << 3 | fn, the same as KFD's location_id. */
static int find_dv(struct rsmi_lib *l, const struct smi_dev *dev, uint32_t *dv, char *why, size_t whylen)
{
	uint32_t n = 0;
	int st = l->num_devices(&n);
	if (st)
		return spmtap_seterr(why, whylen, EIO, "rsmi_num_monitor_devices: status %d", st);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t bdf = 0;
		if (l->pci_id(i, &bdf))
			continue;
		if ((uint32_t)(bdf >> 32) == dev->domain && (uint32_t)(bdf & 0xffff) == dev->location_id) {
			*dv = i;
			return 0;
		}
	}
	return spmtap_seterr(why, whylen, ENODEV, "rocm_smi: none of its %u devices is at PCI %04x:%02x:%02x.%x",
			     n, dev->domain, dev->location_id >> 8, (dev->location_id >> 3) & 0x1f,
			     dev->location_id & 7);
}

static int rs_read_all(struct smi_source *s, struct smi_batch *b);

/*
 * The child's report: status and the reason text.  A child that is killed
 * by a signal (the assert's abort) or times out tells us enough by itself.
 */
struct child_msg {
	int rc;
	char why[160];
};

static int probe_in_child(const char *path, const struct smi_dev *dev, bool energy_ok, int timeout_ms,
			  char *why, size_t whylen)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC))
		return spmtap_seterr(why, whylen, errno, "pipe: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return spmtap_seterr(why, whylen, errno, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		struct child_msg m = { 0, "" };
		struct smi_source s;
		memset(&s, 0, sizeof(s));
		s.energy_ok = energy_ok;
		m.rc = bind(&s.lib, path, m.why, sizeof(m.why));
		if (!m.rc) {
			int st = s.lib.init(0);
			if (st)
				m.rc = spmtap_seterr(m.why, sizeof(m.why), EIO, "rsmi_init: status %d%s", st,
						     st == 8 ? " (a stale /dev/shm/rocm_smi_card* mutex?)" : "");
			else {
				m.rc = find_dv(&s.lib, dev, &s.dv, m.why, sizeof(m.why));
				struct smi_batch b;
				if (!m.rc)
					m.rc = rs_read_all(&s, &b);
				s.lib.shut_down();
			}
		}
		if (write(pfd[1], &m, sizeof(m)) < 0)
			_exit(2);
		_exit(0);
	}
	close(pfd[1]);
	struct pollfd p = { pfd[0], POLLIN, 0 };
	int pr = poll(&p, 1, timeout_ms);
	struct child_msg m = { -EIO, "" };
	ssize_t n = pr > 0 ? read(pfd[0], &m, sizeof(m)) : 0;
	close(pfd[0]);
	if (pr == 0) {
		/* stuck (mutex): nothing this process can do would go better */
		kill(pid, SIGKILL);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	if (pr == 0)
		return spmtap_seterr(why, whylen, ETIMEDOUT,
				     "probe child timed out after %d ms (rsmi_init stuck on a /dev/shm/rocm_smi_card* mutex left by a crashed process?)",
				     timeout_ms);
	if (WIFSIGNALED(status))
		return spmtap_seterr(why, whylen, EIO, "probe child killed by signal %d (%s) inside %s",
				     WTERMSIG(status), strsignal(WTERMSIG(status)), path);
	if (n != (ssize_t)sizeof(m))
		return spmtap_seterr(why, whylen, EIO, "probe child exited with status %d and no report",
				     WEXITSTATUS(status));
	if (m.rc)
		snprintf(why, whylen, "%s", m.why);
	return m.rc;
}

static int rs_open(const struct smi_dev *dev, const struct smi_env *env, struct smi_source **out,
		   char *why, size_t whylen)
{
	const char *path = lib_path(env);
	/* Before any library call: which table would the library parse? */
	char devdir[400];
	struct smi_gm_header h = { 0, 0, 0 };
	bool have_table = false;
	if (!smi_find_drm_device(env ? env->sysfs_root : NULL, dev->domain, dev->location_id, devdir,
				 sizeof(devdir), NULL, 0) &&
	    !smi_gm_read_header(devdir, &h, NULL, 0))
		have_table = true;

	struct smi_source *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	int rc = bind(&s->lib, path, why, whylen);
	if (rc) {
		free(s);
		return rc;
	}
	/*
	 * 5.2.3 knows content revisions up to 3; ROCm SMI >= 6 knows the MI300
	 * tables.  Without a version (no rsmi_version_get) assume the old one.
	 */
	bool old = s->lib.major < 6;
	if (have_table && h.format_revision == 1 && h.content_revision >= 4 && old) {
		rc = spmtap_seterr(why, whylen, EPROTO,
				   "skipped: this ROCm SMI (library version %u.%u, the Debian 5.2.3 series) aborts the process (assert) on gpu_metrics v%u.%u (MI300) tables; use gpu_metrics or amd_smi",
				   s->lib.major, s->lib.minor, h.format_revision, h.content_revision);
		dlclose(s->lib.dl);
		free(s);
		return rc;
	}
	s->energy_ok = true;
	s->ts_domain = (old && have_table && h.format_revision == 1 && h.content_revision >= 2)
			       ? SMI_TS_FW_NS
			       : SMI_TS_BOOTTIME_NS;
	int tmo = env && env->rocm_probe_timeout_ms > 0 ? env->rocm_probe_timeout_ms : 15000;
	rc = probe_in_child(path, dev, s->energy_ok, tmo, why, whylen);
	if (rc) {
		dlclose(s->lib.dl);
		free(s);
		return rc;
	}
	int st = s->lib.init(0);
	if (st) {
		rc = spmtap_seterr(why, whylen, EIO, "rsmi_init: status %d", st);
		goto fail;
	}
	rc = find_dv(&s->lib, dev, &s->dv, why, whylen);
	if (rc) {
		s->lib.shut_down();
		goto fail;
	}
	*out = s;
	return 0;
fail:
	dlclose(s->lib.dl);
	free(s);
	return rc;
}

static int rs_read_all(struct smi_source *s, struct smi_batch *b)
{
	struct rsmi_lib *l = &s->lib;
	smi_batch_reset(b);
	b->host_before_ns = smi_now_boot_ns();
	if (l->energy && s->energy_ok) {
		uint64_t e = 0, ts = 0;
		float res = 0;
		if (l->energy(s->dv, &e, &res, &ts) == 0) {
			/* raw ticks x 2^-16 J; the library's res (15.3 uJ) is 0.27 % high */
			b->energy_ticks = e;
			smi_batch_set(b, SMI_M_ENERGY, (double)e * SMI_ENERGY_TICK_J);
			b->ts_domain = s->ts_domain;
			b->sensor_ts = ts;
			if (s->ts_domain == SMI_TS_FW_NS)
				b->fw_ts_10ns = ts / 10;
			else
				b->sys_clock_ns = ts;
		}
	}
	uint64_t uw;
	if (l->power_ave && l->power_ave(s->dv, 0, &uw) == 0)
		smi_batch_set(b, SMI_M_POWER_AVG, (double)uw * 1e-6);
	if (l->temp) {
		static const struct { uint32_t t; enum smi_metric m; } temps[] = {
			{ RSMI_TEMP_TYPE_EDGE, SMI_M_TEMP_EDGE },
			{ RSMI_TEMP_TYPE_JUNCTION, SMI_M_TEMP_HOTSPOT },
			{ RSMI_TEMP_TYPE_MEMORY, SMI_M_TEMP_MEM },
		};
		for (size_t i = 0; i < sizeof(temps) / sizeof(temps[0]); i++) {
			int64_t mc;
			if (l->temp(s->dv, temps[i].t, RSMI_TEMP_CURRENT, &mc) == 0)
				smi_batch_set(b, temps[i].m, (double)mc * 1e-3); /* m°C */
		}
	}
	uint32_t pct;
	if (l->busy && l->busy(s->dv, &pct) == 0)
		smi_batch_set(b, SMI_M_GFX_ACTIVITY, pct);
	if (l->mem_busy && l->mem_busy(s->dv, &pct) == 0)
		smi_batch_set(b, SMI_M_UMC_ACTIVITY, pct);
	b->host_after_ns = smi_now_boot_ns();
	return b->present ? 0 : -EIO;
}

static void rs_close(struct smi_source *s)
{
	if (!s)
		return;
	s->lib.shut_down();
	dlclose(s->lib.dl);
	free(s);
}

const struct smi_source_ops smi_rocm_ops = {
	.name = "rocm_smi",
	.open = rs_open,
	.read_all = rs_read_all,
	.close = rs_close,
};
