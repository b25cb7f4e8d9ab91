/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the SMI tests: synthetic gpu_metrics tables (offsets restated
 * from SENSORS.md 4.3, independently of the decoder) and a minimal sysfs tree
 * in a temp dir (class/drm/cardN -> devices/.../BDF with gpu_metrics and an
 * amdgpu hwmon), used until/unless the emulator provides the sensors.
 */
#ifndef SPMTAP_TEST_SMI_UTIL_H
#define SPMTAP_TEST_SMI_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct tgm_off {
	uint8_t crev;
	uint16_t size, energy, sysclock, fw_ts, power, temp_hot, gfx_act;
	int power_is_avg;
};

/* v1.1 .. v1.7 (v1.6 the old upstream layout) */
static const struct tgm_off tgm_offs[] = {
	{ 1, 96, 24, 32, 0, 22, 6, 16, 1 },
	{ 2, 104, 24, 32, 96, 22, 6, 16, 1 },
	{ 3, 120, 24, 32, 96, 22, 6, 16, 1 },
	{ 4, 288, 24, 32, 232, 10, 4, 12, 0 },
	{ 5, 360, 88, 96, 304, 10, 4, 12, 0 },
	{ 6, 384, 88, 96, 328, 10, 4, 12, 0 },
	{ 7, 2208, 24, 32, 288, 10, 4, 12, 0 },
};

static inline const struct tgm_off *tgm_find(int crev)
{
	for (size_t i = 0; i < sizeof(tgm_offs) / sizeof(tgm_offs[0]); i++)
		if (tgm_offs[i].crev == crev)
			return &tgm_offs[i];
	return NULL;
}

static inline void tgm_put16(uint8_t *b, unsigned off, uint16_t v)
{
	b[off] = (uint8_t)v;
	b[off + 1] = (uint8_t)(v >> 8);
}

static inline void tgm_put64(uint8_t *b, unsigned off, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[off + i] = (uint8_t)(v >> (8 * i));
}

/* A table of content revision crev (0xFF-filled like the kernel's); returns its size. */
static inline size_t tgm_build(uint8_t *b, int crev, uint64_t energy, uint64_t sysclock, uint64_t fw,
			       uint16_t power, uint16_t temp_hot, uint16_t gfx)
{
	const struct tgm_off *o = tgm_find(crev);
	memset(b, 0xff, o->size);
	tgm_put16(b, 0, o->size);
	b[2] = 1;
	b[3] = (uint8_t)crev;
	tgm_put64(b, o->energy, energy);
	tgm_put64(b, o->sysclock, sysclock);
	if (o->fw_ts)
		tgm_put64(b, o->fw_ts, fw);
	tgm_put16(b, o->power, power);
	tgm_put16(b, o->temp_hot, temp_hot);
	tgm_put16(b, o->gfx_act, gfx);
	return o->size;
}

static inline void tsmi_write(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f) {
		perror(path);
		abort();
	}
	fwrite(data, 1, len, f);
	fclose(f);
}

static inline void tsmi_writes(const char *dir, const char *name, const char *text)
{
	char p[600];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	tsmi_write(p, text, strlen(text));
}

/*
 * root/devices/pci0000:00/<bdf>/{gpu_metrics,hwmon/hwmon<card>/...}
 * root/class/drm/card<card>/device -> ../../../devices/pci0000:00/<bdf>
 * Writes devdir (the device dir) for the caller to put tables into.
 */
static inline void tsmi_add_card(const char *root, int card, const char *bdf, char *devdir, size_t len)
{
	char p[600], q[600];
	snprintf(devdir, len, "%s/devices/pci0000:00/%s", root, bdf);
	snprintf(p, sizeof(p), "mkdir -p '%s/hwmon/hwmon%d' '%s/class/drm/card%d'", devdir, card, root, card);
	if (system(p))
		abort();
	snprintf(p, sizeof(p), "%s/class/drm/card%d/device", root, card);
	snprintf(q, sizeof(q), "../../../devices/pci0000:00/%s", bdf);
	if (symlink(q, p))
		abort();
	snprintf(p, sizeof(p), "%s/hwmon/hwmon%d", devdir, card);
	tsmi_writes(p, "name", "amdgpu\n");
	tsmi_writes(p, "power1_average", "250000000\n");
	tsmi_writes(p, "temp1_label", "edge\n");
	tsmi_writes(p, "temp1_input", "45000\n");
	tsmi_writes(p, "temp2_label", "junction\n");
	tsmi_writes(p, "temp2_input", "51000\n");
	tsmi_writes(p, "in0_label", "vddgfx\n");
	tsmi_writes(p, "freq1_input", "1700000000\n");
	tsmi_writes(devdir, "gpu_busy_percent", "37\n");
}

/* mkdtemp under $TMPDIR; the caller removes it with tsmi_rmtree. */
static inline char *tsmi_mktree(void)
{
	const char *t = getenv("TMPDIR");
	char *p = malloc(512);
	snprintf(p, 512, "%s/spmtap-smi-XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(p))
		abort();
	return p;
}

static inline void tsmi_rmtree(char *p)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p);
	if (system(cmd)) {
	}
	free(p);
}

#endif
