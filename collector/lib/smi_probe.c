// SPDX-License-Identifier: MIT
/*
 * Probe-based metric discovery (the PAPI AMD SMI approach): every source is
 * opened and read twice; a metric is exposed only if a read returned data
 * for it.  The first source in smi_sources[] that returns any metric is the
 * one spmtap samples, so one GPU is read through one path with one clock
 * domain; the others are still reported, with their reasons, for
 * `spmtap list --smi`.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/lib/smi_source.h"
#include "log.h"

/*
 * Order and why (docs/power.md): gpu_metrics first, since one pread gives
 * every metric plus both timestamps and costs one SMU transfer, no library;
 * amd_smi next, official but several calls (each re-reading sysfs) per
 * batch and only a driver timestamp; rocm_smi (Debian's 5.2.3) after it,
 * deprecated, aborts on MI300 tables, and its timestamp domain depends on
 * its version; hwmon last: no energy, no timestamp, cached values.
 */
const struct smi_source_ops *const smi_sources[SMI_NSOURCES] = {
	&smi_gpu_metrics_ops,
	&smi_amdsmi_ops,
	&smi_rocm_ops,
	&smi_hwmon_ops,
};

static const struct {
	const char *name, *unit;
} metric_info[SMI_M_COUNT] = {
	[SMI_M_ENERGY] = { "energy", "J" },
	[SMI_M_POWER_AVG] = { "power_avg", "W" },
	[SMI_M_POWER_CUR] = { "power_cur", "W" },
	[SMI_M_TEMP_EDGE] = { "temp_edge", "degC" },
	[SMI_M_TEMP_HOTSPOT] = { "temp_hotspot", "degC" },
	[SMI_M_TEMP_MEM] = { "temp_mem", "degC" },
	[SMI_M_TEMP_VRSOC] = { "temp_vrsoc", "degC" },
	[SMI_M_GFX_ACTIVITY] = { "gfx_activity", "%" },
	[SMI_M_UMC_ACTIVITY] = { "umc_activity", "%" },
	[SMI_M_MM_ACTIVITY] = { "mm_activity", "%" },
	[SMI_M_GFXCLK] = { "gfxclk", "MHz" },
	[SMI_M_SOCCLK] = { "socclk", "MHz" },
	[SMI_M_UCLK] = { "uclk", "MHz" },
};

const char *smi_metric_name(enum smi_metric m)
{
	return (unsigned)m < SMI_M_COUNT ? metric_info[m].name : "?";
}

const char *smi_metric_unit(enum smi_metric m)
{
	return (unsigned)m < SMI_M_COUNT ? metric_info[m].unit : "?";
}

int smi_metric_lookup(const char *name)
{
	for (int m = 0; m < SMI_M_COUNT; m++)
		if (!strcmp(metric_info[m].name, name))
			return m;
	return -1;
}

const char *smi_ts_domain_name(enum smi_ts_domain d)
{
	switch (d) {
	case SMI_TS_BOOTTIME_NS: return "boottime_ns";
	case SMI_TS_FW_10NS: return "smu_10ns";
	case SMI_TS_FW_NS: return "smu_ns";
	case SMI_TS_NONE: break;
	}
	return "none";
}

const char *smi_avail_name(enum smi_avail a)
{
	switch (a) {
	case SMI_OK: return "available";
	case SMI_PARTIAL: return "partial";
	case SMI_DISABLED: return "unavailable";
	case SMI_NOT_PROBED: break;
	}
	return "not probed";
}

int64_t smi_now_boot_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void smi_batch_reset(struct smi_batch *b)
{
	memset(b, 0, sizeof(*b));
	b->sensor_ts = SMI_TS_ABSENT;
	b->fw_ts_10ns = SMI_TS_ABSENT;
	b->sys_clock_ns = SMI_TS_ABSENT;
}

int smi_parse_bdf(const char *s, uint32_t *domain, uint32_t *location_id)
{
	unsigned d, bus, dev, fn;
	int end = -1;
	if (sscanf(s, "%x:%x:%x.%1x%n", &d, &bus, &dev, &fn, &end) != 4 || end < 0 || s[end] || bus > 0xff ||
	    dev > 0x1f || fn > 7)
		return -EINVAL;
	*domain = d;
	*location_id = bus << 8 | dev << 3 | fn;
	return 0;
}

/* "card0" but not "card0-DP-1" nor "renderD128". */
static bool is_card(const char *n)
{
	if (strncmp(n, "card", 4) || !n[4])
		return false;
	for (const char *c = n + 4; *c; c++)
		if (*c < '0' || *c > '9')
			return false;
	return true;
}

int smi_find_drm_device(const char *sysfs_root, uint32_t domain, uint32_t location_id,
			char *dir, size_t dirlen, char *why, size_t whylen)
{
	const char *root = sysfs_root ? sysfs_root : "/sys";
	char cls[320];
	snprintf(cls, sizeof(cls), "%s/class/drm", root);
	DIR *d = opendir(cls);
	if (!d)
		return spmtap_seterr(why, whylen, errno, "opendir(%s): %s", cls, strerror(errno));
	char seen[120] = "";
	int rc = -ENODEV;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!is_card(de->d_name))
			continue;
		char link[600], target[PATH_MAX];
		snprintf(link, sizeof(link), "%s/%s/device", cls, de->d_name);
		/*
		 * The device link's target may be relative and short ("../.."
		 * from drm/cardN): resolve it fully, the PCI dir's name is the BDF.
		 */
		if (!realpath(link, target))
			continue;
		const char *base = strrchr(target, '/');
		base = base ? base + 1 : target;
		uint32_t dom, loc;
		if (smi_parse_bdf(base, &dom, &loc))
			continue;
		size_t sl = strlen(seen);
		snprintf(seen + sl, sizeof(seen) - sl, "%s%s=%s", sl ? ", " : "", de->d_name, base);
		if (dom == domain && loc == location_id) {
			snprintf(dir, dirlen, "%s", link);
			rc = 0;
			break;
		}
	}
	closedir(d);
	if (rc)
		spmtap_seterr(why, whylen, ENODEV, "no DRM card at PCI %04x:%02x:%02x.%x (cards: %s)", domain,
			      location_id >> 8, (location_id >> 3) & 0x1f, location_id & 7, seen[0] ? seen : "none");
	return rc;
}

/* ---- probe ---------------------------------------------------------- */

static void probe_one(const struct smi_source_ops *ops, const struct smi_dev *dev,
		      const struct smi_env *env, struct smi_source_report *r, struct smi_source **keep,
		      bool *second_die)
{
	struct smi_source *s = NULL;
	memset(r, 0, sizeof(*r));
	r->source = ops->name;
	int rc = ops->open(dev, env, &s, r->reason, sizeof(r->reason));
	if (rc) {
		r->avail = SMI_DISABLED;
		r->err = rc;
		if (!r->reason[0])
			snprintf(r->reason, sizeof(r->reason), "open failed: %s", strerror(-rc));
		return;
	}
	/* Two reads: a metric must answer both times (a first read can be a stale cache). */
	struct smi_batch b[2];
	uint32_t got = ~0u;
	for (int i = 0; i < 2; i++) {
		rc = ops->read_all(s, &b[i]);
		if (rc) {
			r->avail = SMI_DISABLED;
			r->err = rc;
			snprintf(r->reason, sizeof(r->reason), "read failed: %s", strerror(-rc));
			ops->close(s);
			return;
		}
		got &= b[i].present;
	}
	r->ts_domain = b[1].ts_domain;
	/*
	 * MI200's secondary GCD reports energy 0 and power 0: the primary die
	 * reports the whole package (SENSORS.md 8).  Exposing them would put
	 * a bogus 0 W series next to the real one.
	 */
	if ((got & SMI_M_BIT(SMI_M_ENERGY)) && b[0].energy_ticks == 0 && b[1].energy_ticks == 0) {
		got &= ~(SMI_M_BIT(SMI_M_ENERGY) | SMI_M_BIT(SMI_M_POWER_AVG) | SMI_M_BIT(SMI_M_POWER_CUR));
		*second_die = true;
		snprintf(r->note, sizeof(r->note),
			 "second GCD reports no energy (the package is reported on the primary die)");
	}
	/*
	 * A socket power of exactly 0 W in both reads is the same secondary
	 * die through another path (hwmon, a library), never a running GPU.
	 */
	static const enum smi_metric pw[] = { SMI_M_POWER_AVG, SMI_M_POWER_CUR };
	for (size_t k = 0; k < 2; k++)
		if ((got & SMI_M_BIT(pw[k])) && b[0].v[pw[k]] == 0 && b[1].v[pw[k]] == 0) {
			got &= ~SMI_M_BIT(pw[k]);
			if (!r->note[0])
				snprintf(r->note, sizeof(r->note), "%s reads 0 W (second GCD?): not exposed",
					 smi_metric_name(pw[k]));
		}
	r->metrics = got;
	if (!got) {
		r->avail = SMI_DISABLED;
		r->err = -ENODATA;
		if (!r->reason[0])
			snprintf(r->reason, sizeof(r->reason), "no metric returned data");
		ops->close(s);
		return;
	}
	r->avail = (got & (SMI_M_BIT(SMI_M_ENERGY) | SMI_M_BIT(SMI_M_POWER_AVG) | SMI_M_BIT(SMI_M_POWER_CUR)))
			   ? SMI_OK
			   : SMI_PARTIAL;
	if (r->avail == SMI_PARTIAL && !r->note[0])
		snprintf(r->note, sizeof(r->note), "no power or energy");
	*keep = s;
}

int smi_probe_device(const struct smi_dev *dev, const struct smi_env *env, struct smi_probe *p)
{
	memset(p, 0, sizeof(*p));
	p->dev = *dev;
	p->selected = -1;
	for (int i = 0; i < SMI_NSOURCES; i++) {
		struct smi_source *keep = NULL;
		bool second_die = false;
		probe_one(smi_sources[i], dev, env, &p->src[i], &keep, &second_die);
		p->energy_second_die |= second_die;
		/*
		 * The first source with power or energy wins; one with only
		 * temperatures etc. is kept until such a source turns up.
		 */
		bool better = keep && (!p->inst || (p->src[p->selected].avail == SMI_PARTIAL &&
						    p->src[i].avail == SMI_OK));
		if (better) {
			if (p->inst)
				p->ops->close(p->inst);
			p->inst = keep;
			p->ops = smi_sources[i];
			p->selected = i;
			p->metrics = p->src[i].metrics;
		} else if (keep) {
			smi_sources[i]->close(keep);
		}
		pr_debug("smi", "GPU %u: %s %s%s%s", dev->index, smi_sources[i]->name,
			 smi_avail_name(p->src[i].avail), p->src[i].reason[0] ? ": " : "", p->src[i].reason);
	}
	return p->inst ? 0 : -ENODEV;
}

void smi_probe_release(struct smi_probe *p)
{
	if (p->inst)
		p->ops->close(p->inst);
	p->inst = NULL;
}
