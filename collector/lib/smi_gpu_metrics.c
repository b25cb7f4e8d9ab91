// SPDX-License-Identifier: MIT
/*
 * The sysfs gpu_metrics table, read directly: one pread returns energy,
 * power, temperatures, activity, clocks and both timestamps (SENSORS.md 4).
 * Layouts are dispatched on (format, content) revision AND structure_size,
 * because upstream redefined v1_6 in place; anything else is refused with
 * the numbers so that a new kernel shows up as a clear message, not as
 * garbage values.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/lib/smi_source.h"
#include "le.h"
#include "log.h"

#define NA 0xffff /* offset not present in this layout */

/* Byte offsets of one layout (SENSORS.md 4.3, [D] from the kernel structs). */
struct gm_layout {
	uint8_t frev, crev;
	uint16_t size;
	uint16_t temp_edge, temp_hotspot, temp_mem, temp_vrsoc;
	uint16_t gfx_act, umc_act, mm_act;
	uint16_t power_avg, power_cur;
	uint16_t energy, sysclock, fw_ts;
	uint16_t gfxclk, socclk, uclk;
};

static const struct gm_layout layouts[] = {
	/* v1_1..v1_3: Navi, MI200 (aldebaran: v1_3).  Shared prefix. */
	{ 1, 1, 96, 4, 6, 8, 12, 16, 18, 20, 22, NA, 24, 32, NA, 54, 56, 58 },
	{ 1, 2, 104, 4, 6, 8, 12, 16, 18, 20, 22, NA, 24, 32, 96, 54, 56, 58 },
	{ 1, 3, 120, 4, 6, 8, 12, 16, 18, 20, 22, NA, 24, 32, 96, 54, 56, 58 },
	/* v1_4..v1_7: MI300 (smu 13.0.6); no edge temperature, current power only. */
	{ 1, 4, 288, NA, 4, 6, 8, 12, 14, NA, NA, 10, 24, 32, 232, 240, 256, 280 },
	{ 1, 5, 360, NA, 4, 6, 8, 12, 14, NA, NA, 10, 88, 96, 304, 312, 328, 352 },
	/* the old upstream v1_6 (vcn/jpeg arrays); the newer in-place one differs in size */
	{ 1, 6, 384, NA, 4, 6, 8, 12, 14, NA, NA, 10, 88, 96, 328, 336, 352, 376 },
	{ 1, 7, 2208, NA, 4, 6, 8, 12, 14, NA, NA, 10, 24, 32, 288, 296, 312, 336 },
};

static const struct gm_layout *find_layout(const struct smi_gm_header *h, char *why, size_t whylen)
{
	bool rev_known = false;
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		const struct gm_layout *l = &layouts[i];
		if (l->frev != h->format_revision || l->crev != h->content_revision)
			continue;
		rev_known = true;
		if (l->size == h->structure_size)
			return l;
	}
	if (rev_known)
		spmtap_seterr(why, whylen, EPROTO,
			      "gpu_metrics v%u.%u with structure_size %u: not a layout spmtap knows (redefined in a newer kernel?)",
			      h->format_revision, h->content_revision, h->structure_size);
	else if (h->format_revision == 1 && h->content_revision == 0)
		spmtap_seterr(why, whylen, EPROTO,
			      "gpu_metrics v1.0 (size %u): unaligned layout with a 32-bit energy counter, not supported",
			      h->structure_size);
	else if (h->format_revision >= 2)
		spmtap_seterr(why, whylen, EPROTO,
			      "gpu_metrics v%u.%u (size %u): an APU table, not supported for dGPUs",
			      h->format_revision, h->content_revision, h->structure_size);
	else
		spmtap_seterr(why, whylen, EPROTO, "gpu_metrics v%u.%u (size %u): unknown version",
			      h->format_revision, h->content_revision, h->structure_size);
	return NULL;
}

/* Unsupported fields are 0xFF-filled by the kernel: all-ones means absent. */
static void put_u16(struct smi_batch *b, enum smi_metric m, const uint8_t *p, uint16_t off)
{
	if (off == NA)
		return;
	uint16_t v = le_get16(p + off);
	if (v != 0xffff)
		smi_batch_set(b, m, (double)v);
}

int smi_gm_decode(const void *buf, size_t len, struct smi_batch *b, char *why, size_t whylen)
{
	const uint8_t *p = buf;
	if (len < 4)
		return spmtap_seterr(why, whylen, EMSGSIZE, "gpu_metrics: %zu bytes, shorter than its header", len);
	struct smi_gm_header h = { le_get16(p), p[2], p[3] };
	const struct gm_layout *l = find_layout(&h, why, whylen);
	if (!l)
		return -EPROTO;
	if (len < l->size)
		return spmtap_seterr(why, whylen, EMSGSIZE,
				     "gpu_metrics v%u.%u: read %zu of %u bytes (truncated table)",
				     h.format_revision, h.content_revision, len, l->size);

	put_u16(b, SMI_M_TEMP_EDGE, p, l->temp_edge);
	put_u16(b, SMI_M_TEMP_HOTSPOT, p, l->temp_hotspot);
	put_u16(b, SMI_M_TEMP_MEM, p, l->temp_mem);
	put_u16(b, SMI_M_TEMP_VRSOC, p, l->temp_vrsoc);
	put_u16(b, SMI_M_GFX_ACTIVITY, p, l->gfx_act);
	put_u16(b, SMI_M_UMC_ACTIVITY, p, l->umc_act);
	put_u16(b, SMI_M_MM_ACTIVITY, p, l->mm_act);
	put_u16(b, SMI_M_POWER_AVG, p, l->power_avg);
	put_u16(b, SMI_M_POWER_CUR, p, l->power_cur);
	put_u16(b, SMI_M_GFXCLK, p, l->gfxclk);
	put_u16(b, SMI_M_SOCCLK, p, l->socclk);
	put_u16(b, SMI_M_UCLK, p, l->uclk);

	uint64_t e = le_get64(p + l->energy);
	if (e != UINT64_MAX) {
		b->energy_ticks = e;
		smi_batch_set(b, SMI_M_ENERGY, (double)e * SMI_ENERGY_TICK_J);
	}
	uint64_t sc = le_get64(p + l->sysclock);
	b->sys_clock_ns = sc;
	b->fw_ts_10ns = l->fw_ts == NA ? SMI_TS_ABSENT : le_get64(p + l->fw_ts);
	/*
	 * The firmware timestamp is what the energy accumulator was sampled
	 * at, so it is the batch's sensor time (dE/dt divides by it); v1_1
	 * has only the driver's BOOTTIME.
	 */
	if (b->fw_ts_10ns != SMI_TS_ABSENT) {
		b->sensor_ts = b->fw_ts_10ns;
		b->ts_domain = SMI_TS_FW_10NS;
	} else if (sc != SMI_TS_ABSENT) {
		b->sensor_ts = sc;
		b->ts_domain = SMI_TS_BOOTTIME_NS;
	}
	return 0;
}

int smi_gm_read_header(const char *devdir, struct smi_gm_header *h, char *why, size_t whylen)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/gpu_metrics", devdir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return spmtap_seterr(why, whylen, errno, "open(%s): %s", path, strerror(errno));
	uint8_t hb[4];
	ssize_t n = pread(fd, hb, sizeof(hb), 0);
	int e = errno;
	close(fd);
	if (n < 0)
		return spmtap_seterr(why, whylen, e, "read(%s): %s", path, strerror(e));
	if (n < 4)
		return spmtap_seterr(why, whylen, EMSGSIZE, "%s: %zd bytes, shorter than its header", path, n);
	h->structure_size = le_get16(hb);
	h->format_revision = hb[2];
	h->content_revision = hb[3];
	return 0;
}

/* ---- the source ------------------------------------------------------ */

/* Larger than every known table; one pread gets the whole of it. */
#define GM_BUF 4096

struct smi_source {
	int fd;
	char path[512];
	uint8_t buf[GM_BUF];
};

static int gm_open(const struct smi_dev *dev, const struct smi_env *env, struct smi_source **out,
		   char *why, size_t whylen)
{
	char devdir[400];
	int rc = smi_find_drm_device(env ? env->sysfs_root : NULL, dev->domain, dev->location_id,
				     devdir, sizeof(devdir), why, whylen);
	if (rc)
		return rc;
	struct smi_source *s = calloc(1, sizeof(*s));
	if (!s)
		return spmtap_seterr(why, whylen, ENOMEM, "out of memory");
	snprintf(s->path, sizeof(s->path), "%s/gpu_metrics", devdir);
	s->fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0) {
		rc = spmtap_seterr(why, whylen, errno, "open(%s): %s", s->path, strerror(errno));
		free(s);
		return rc;
	}
	/* Refuse an unknown layout now, with its numbers, rather than at every read. */
	ssize_t n = pread(s->fd, s->buf, GM_BUF, 0);
	struct smi_batch b;
	smi_batch_reset(&b);
	if (n < 0)
		rc = spmtap_seterr(why, whylen, errno, "read(%s): %s", s->path, strerror(errno));
	else
		rc = smi_gm_decode(s->buf, (size_t)n, &b, why, whylen);
	if (rc) {
		close(s->fd);
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

static int gm_read_all(struct smi_source *s, struct smi_batch *b)
{
	smi_batch_reset(b);
	b->host_before_ns = smi_now_boot_ns();
	/* sysfs binary attributes regenerate on each read from offset 0 */
	ssize_t n = pread(s->fd, s->buf, GM_BUF, 0);
	b->host_after_ns = smi_now_boot_ns();
	if (n < 0)
		return -errno;
	return smi_gm_decode(s->buf, (size_t)n, b, NULL, 0);
}

static void gm_close(struct smi_source *s)
{
	if (!s)
		return;
	close(s->fd);
	free(s);
}

const struct smi_source_ops smi_gpu_metrics_ops = {
	.name = "gpu_metrics",
	.open = gm_open,
	.read_all = gm_read_all,
	.close = gm_close,
};
