/* SPDX-License-Identifier: MIT */
/* Finding GPUs in the KFD sysfs topology, and naming them for people. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "spm/spm.h"

#define KFD_SYSFS_DEFAULT "/sys/devices/virtual/kfd/kfd"
#define PROPS_MAX 8192

/* Whole small sysfs file into buf (NUL-terminated); -errno if absent. */
static int read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = 0;
	while (n + 1 < len) {
		ssize_t r = read(fd, buf + n, len - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	return 0;
}

/* "key value\n" lines, as kfd_topology.c prints them. */
static bool prop_get(const char *props, const char *key, uint64_t *val)
{
	size_t klen = strlen(key);
	for (const char *p = props; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (!strncmp(p, key, klen) && p[klen] == ' ') {
			*val = strtoull(p + klen + 1, NULL, 0);
			return true;
		}
	}
	return false;
}

static uint32_t prop_u32(const char *props, const char *key, uint32_t def)
{
	uint64_t v;
	return prop_get(props, key, &v) ? (uint32_t)v : def;
}

/* gfx_target_version is major*10000 + minor*100 + stepping; LLVM spells minor and stepping in hex. */
static void gfx_name(uint32_t v, char *buf, size_t len)
{
	snprintf(buf, len, "gfx%u%x%x", v / 10000, (v / 100) % 100, v % 100);
}

static void fill_device(struct spm_device *d, uint32_t node, uint32_t gpu_id, const char *props,
			const char *name)
{
	memset(d, 0, sizeof(*d));
	d->node = node;
	d->gpu_id = gpu_id;
	d->gfx_target_version = prop_u32(props, "gfx_target_version", 0);
	gfx_name(d->gfx_target_version, d->gfx, sizeof(d->gfx));
	/* Only newer kernels print num_xcc (MI300); every older GPU has one. */
	d->num_xcc = prop_u32(props, "num_xcc", 1);
	if (!d->num_xcc)
		d->num_xcc = 1;
	uint32_t arrays = prop_u32(props, "array_count", 0);
	uint32_t per_se = prop_u32(props, "simd_arrays_per_engine", 0);
	/* array_count counts shader arrays across all XCCs of the partition. */
	d->num_se = per_se ? arrays / per_se / d->num_xcc : 0;
	uint32_t simds = prop_u32(props, "simd_count", 0);
	uint32_t simd_per_cu = prop_u32(props, "simd_per_cu", 0);
	d->cu_count = simd_per_cu ? simds / simd_per_cu : 0;
	d->device_id = prop_u32(props, "device_id", 0);
	d->vendor_id = prop_u32(props, "vendor_id", 0);
	d->domain = prop_u32(props, "domain", 0);
	d->location_id = prop_u32(props, "location_id", 0);
	d->drm_render_minor = prop_u32(props, "drm_render_minor", 0);
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->name[strcspn(d->name, "\n")] = '\0';
}

int spm_discover(const char *sysfs_root, struct spm_device **out, size_t *count, char *err,
		 size_t errlen)
{
	const char *root = sysfs_root ? sysfs_root : KFD_SYSFS_DEFAULT;
	char path[512], buf[64], name[64], *props = NULL;
	struct spm_device *devs = NULL;
	size_t n = 0;
	struct stat st;
	int r = 0;

	*out = NULL;
	*count = 0;
	if (stat(root, &st) != 0)
		return spmtap_seterr(err, errlen, ENODEV,
				     "no KFD device (no %s); on a machine without an AMD GPU use "
				     "--emulate PROFILE", root);
	props = malloc(PROPS_MAX);
	if (!props)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");

	for (uint32_t node = 0;; node++) {
		snprintf(path, sizeof(path), "%s/topology/nodes/%u/gpu_id", root, node);
		/* The kernel numbers nodes densely: the first gap is the end. */
		if (read_small(path, buf, sizeof(buf)) < 0)
			break;
		uint32_t gpu_id = (uint32_t)strtoul(buf, NULL, 10);

		snprintf(path, sizeof(path), "%s/topology/nodes/%u/properties", root, node);
		if (read_small(path, props, PROPS_MAX) < 0) {
			r = spmtap_seterr(err, errlen, EIO, "cannot read %s: %s", path,
					  strerror(errno));
			goto out;
		}
		if (!gpu_id || !prop_u32(props, "simd_count", 0))
			continue; /* a CPU node */

		snprintf(path, sizeof(path), "%s/topology/nodes/%u/name", root, node);
		if (read_small(path, name, sizeof(name)) < 0)
			name[0] = '\0';

		struct spm_device *grown = realloc(devs, (n + 1) * sizeof(*devs));
		if (!grown) {
			r = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
			goto out;
		}
		devs = grown;
		fill_device(&devs[n], node, gpu_id, props, name);
		devs[n].index = (uint32_t)n;
		n++;
	}
	if (!n) {
		r = spmtap_seterr(err, errlen, ENODEV,
				  "no GPU in the KFD topology at %s (only CPU nodes); on a "
				  "machine without an AMD GPU use --emulate PROFILE", root);
		goto out;
	}
	*out = devs;
	*count = n;
	devs = NULL;
out:
	free(devs);
	free(props);
	return r;
}

const char *spm_device_label(const struct spm_device *dev, char *buf, size_t len)
{
	if (!dev)
		snprintf(buf, len, "the GPU");
	else
		snprintf(buf, len, "GPU %u (gpu_id 0x%x, %s)", dev->index, dev->gpu_id, dev->gfx);
	return buf;
}

static int no_match(const struct spm_device *devs, size_t n, const char *spec, int e, char *err,
		    size_t errlen)
{
	char list[384] = "";
	size_t off = 0;
	for (size_t i = 0; i < n && off < sizeof(list); i++) {
		int w = snprintf(list + off, sizeof(list) - off, "%s%u or gpu_id:0x%x (%s)",
				 i ? ", " : "", devs[i].index, devs[i].gpu_id, devs[i].gfx);
		if (w < 0)
			break;
		off += (size_t)w;
	}
	return spmtap_seterr(err, errlen, e, "no GPU \"%s\"; choose one of: %s",
			     spec ? spec : "", n ? list : "(none found)");
}

int spm_device_lookup(const struct spm_device *devs, size_t n, const char *spec, char *err,
		      size_t errlen)
{
	if (!spec || !*spec)
		return no_match(devs, n, spec, EINVAL, err, errlen);

	bool by_id = false;
	const char *num = spec;
	if (!strncmp(spec, "gpu_id:", 7)) {
		by_id = true;
		num += 7;
	} else if (!strncmp(spec, "0x", 2) || !strncmp(spec, "0X", 2)) {
		by_id = true;
	}
	char *end;
	errno = 0;
	unsigned long v = strtoul(num, &end, by_id ? 0 : 10);
	if (errno || end == num || *end || *num == '-')
		return no_match(devs, n, spec, EINVAL, err, errlen);

	for (size_t i = 0; i < n; i++)
		if (by_id ? devs[i].gpu_id == v : devs[i].index == v)
			return (int)i;
	return no_match(devs, n, spec, ENODEV, err, errlen);
}
