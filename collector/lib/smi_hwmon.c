// SPDX-License-Identifier: MIT
/*
 * hwmon text attributes (SENSORS.md 5): the last resort.  No energy and no
 * timestamp, and the values come through the kernel's SMU cache (at least
 * one jiffy old), so a batch is timed by the host read midpoint only.
 * Files are opened once and re-read with pread at offset 0, which is how
 * sysfs regenerates an attribute.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/lib/smi_source.h"
#include "log.h"

struct hw_file {
	int fd;
	enum smi_metric m;
	double scale; /* file unit -> normalised unit */
};

#define HW_MAX 12

struct smi_source {
	struct hw_file f[HW_MAX];
	int n;
};

static int read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static void add_file(struct smi_source *s, const char *path, enum smi_metric m, double scale)
{
	if (s->n >= HW_MAX)
		return;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	s->f[s->n++] = (struct hw_file){ fd, m, scale };
}

static int hw_open(const struct smi_dev *dev, const struct smi_env *env, struct smi_source **out,
		   char *why, size_t whylen)
{
	char devdir[400];
	int rc = smi_find_drm_device(env ? env->sysfs_root : NULL, dev->domain, dev->location_id,
				     devdir, sizeof(devdir), why, whylen);
	if (rc)
		return rc;
	char hwdir[480], hwm[600] = "";
	snprintf(hwdir, sizeof(hwdir), "%s/hwmon", devdir);
	DIR *d = opendir(hwdir);
	if (!d)
		return spmtap_seterr(why, whylen, errno, "opendir(%s): %s", hwdir, strerror(errno));
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "hwmon", 5))
			continue;
		char p[700], name[32];
		snprintf(p, sizeof(p), "%s/%s/name", hwdir, de->d_name);
		if (!read_text(p, name, sizeof(name)) && !strcmp(name, "amdgpu")) {
			snprintf(hwm, sizeof(hwm), "%s/%s", hwdir, de->d_name);
			break;
		}
	}
	closedir(d);
	if (!hwm[0])
		return spmtap_seterr(why, whylen, ENOENT, "%s: no hwmon named amdgpu", hwdir);

	struct smi_source *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	char p[800];
	/* power: uW; temperatures: m°C, named by their labels; clocks: Hz */
	snprintf(p, sizeof(p), "%s/power1_average", hwm);
	add_file(s, p, SMI_M_POWER_AVG, 1e-6);
	snprintf(p, sizeof(p), "%s/power1_input", hwm);
	add_file(s, p, SMI_M_POWER_CUR, 1e-6);
	for (int t = 1; t <= 3; t++) {
		char label[32] = "";
		snprintf(p, sizeof(p), "%s/temp%d_label", hwm, t);
		if (read_text(p, label, sizeof(label)))
			continue;
		enum smi_metric m = !strcmp(label, "edge")       ? SMI_M_TEMP_EDGE
				    : !strcmp(label, "junction") ? SMI_M_TEMP_HOTSPOT
				    : !strcmp(label, "mem")      ? SMI_M_TEMP_MEM
								 : SMI_M_COUNT;
		if (m == SMI_M_COUNT)
			continue;
		snprintf(p, sizeof(p), "%s/temp%d_input", hwm, t);
		add_file(s, p, m, 1e-3);
	}
	snprintf(p, sizeof(p), "%s/freq1_input", hwm);
	add_file(s, p, SMI_M_GFXCLK, 1e-6);
	snprintf(p, sizeof(p), "%s/freq2_input", hwm);
	add_file(s, p, SMI_M_UCLK, 1e-6);
	snprintf(p, sizeof(p), "%s/gpu_busy_percent", devdir);
	add_file(s, p, SMI_M_GFX_ACTIVITY, 1.0);
	snprintf(p, sizeof(p), "%s/mem_busy_percent", devdir);
	add_file(s, p, SMI_M_UMC_ACTIVITY, 1.0);
	if (!s->n) {
		free(s);
		return spmtap_seterr(why, whylen, ENOENT, "%s: no power, temperature or clock files", hwm);
	}
	*out = s;
	return 0;
}

static int hw_read_all(struct smi_source *s, struct smi_batch *b)
{
	smi_batch_reset(b);
	b->host_before_ns = smi_now_boot_ns();
	for (int i = 0; i < s->n; i++) {
		char buf[64];
		ssize_t n = pread(s->f[i].fd, buf, sizeof(buf) - 1, 0);
		if (n <= 0)
			continue; /* e.g. -ENODATA from a sensor the SMU does not have */
		buf[n] = 0;
		char *end;
		double v = strtod(buf, &end);
		if (end == buf)
			continue;
		smi_batch_set(b, s->f[i].m, v * s->f[i].scale);
	}
	b->host_after_ns = smi_now_boot_ns();
	b->ts_domain = SMI_TS_NONE;
	return 0;
}

static void hw_close(struct smi_source *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n; i++)
		close(s->f[i].fd);
	free(s);
}

const struct smi_source_ops smi_hwmon_ops = {
	.name = "hwmon",
	.open = hw_open,
	.read_all = hw_read_all,
	.close = hw_close,
};
