/* SPDX-License-Identifier: MIT */
/*
 * GPU profiles as data, and the profile-spec parser.  Values follow what the
 * kernel's topology prints for these parts; where the part is harvested
 * (MI300: 228/304 CUs over 24/32 shader arrays) cu_per_simd_array is the
 * physical maximum, as KFD reports it.
 */
#include "emu/common/emu.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GiB (1024ull * 1024 * 1024)

/*
 * gfx942 parts are IP-discovery ASICs: the kernel's amdgpu_asic_name[] entry
 * for CHIP_IP_DISCOVERY is "ip discovery", which is what nodes/N/name shows.
 */
static const struct emu_profile emu_profiles[] = {
	{ "mi300a", "gfx942", "ip discovery", "AMD Instinct MI300A", 90402, 0x74A0,
	  6, 1, 228, 24, 1, 10, 128 * GiB, EMU_GEN_B, 2100 },
	{ "mi300x", "gfx942", "ip discovery", "AMD Instinct MI300X", 90402, 0x74A1,
	  8, 1, 304, 32, 1, 10, 192 * GiB, EMU_GEN_B, 2100 },
	{ "mi250x", "gfx90a", "aldebaran", "AMD Instinct MI250X", 90010, 0x740C,
	  1, 2, 110, 8, 1, 14, 64 * GiB, EMU_GEN_A, 1700 },
	{ "mi210", "gfx90a", "aldebaran", "AMD Instinct MI210", 90010, 0x740F,
	  1, 1, 104, 8, 1, 13, 64 * GiB, EMU_GEN_A, 1700 },
};

#define EMU_NPROFILES (sizeof(emu_profiles) / sizeof(emu_profiles[0]))

size_t emu_profile_count(void)
{
	return EMU_NPROFILES;
}

const struct emu_profile *emu_profile_at(size_t i)
{
	return i < EMU_NPROFILES ? &emu_profiles[i] : NULL;
}

const struct emu_profile *emu_profile_find(const char *name)
{
	for (size_t i = 0; i < EMU_NPROFILES; i++)
		if (!strcmp(emu_profiles[i].name, name))
			return &emu_profiles[i];
	return NULL;
}

static void emu_err(char *err, size_t errlen, const char *msg, const char *arg)
{
	if (!err || !errlen)
		return;
	int n = snprintf(err, errlen, "%s '%s'", msg, arg);
	if (n < 0 || (size_t)n >= errlen || strcmp(msg, "unknown GPU profile"))
		return;
	size_t off = (size_t)n;
	off += (size_t)snprintf(err + off, errlen - off, " (valid:");
	for (size_t i = 0; i < EMU_NPROFILES && off < errlen; i++)
		off += (size_t)snprintf(err + off, errlen - off, " %s", emu_profiles[i].name);
	if (off < errlen)
		snprintf(err + off, errlen - off, ")");
}

/*
 * gpu_id = (profile number + 1) << 12 | (occurrence of that profile + 1):
 * nonzero, 16 bits, never equal across profiles, and never a small node
 * index, so a caller that confuses the two fails loudly.
 */
static uint32_t emu_gpu_id(size_t profile_idx, uint32_t occurrence)
{
	return (uint32_t)((profile_idx + 1) << 12) | ((occurrence + 1) & 0xFFF);
}

int emu_spec_parse(const char *spec, struct emu_gpu_desc *out, size_t max, char *err, size_t errlen)
{
	uint32_t seen[EMU_NPROFILES] = { 0 };
	size_t n = 0;
	char item[64];

	if (!spec || !*spec) {
		emu_err(err, errlen, "empty profile spec", "");
		return -1;
	}
	for (const char *p = spec; *p;) {
		size_t len = strcspn(p, ",");
		if (len == 0 || len >= sizeof(item)) {
			emu_err(err, errlen, "bad profile spec", spec);
			return -1;
		}
		memcpy(item, p, len);
		item[len] = 0;
		p += len + (p[len] == ',');

		long cards = 1;
		char *colon = strchr(item, ':');
		if (colon) {
			char *end;
			*colon = 0;
			cards = strtol(colon + 1, &end, 10);
			if (!isdigit((unsigned char)colon[1]) || *end || cards < 1 || cards > EMU_MAX_GPUS) {
				emu_err(err, errlen, "bad card count in profile spec", spec);
				return -1;
			}
		}
		const struct emu_profile *prof = emu_profile_find(item);
		if (!prof) {
			emu_err(err, errlen, "unknown GPU profile", item);
			return -1;
		}
		size_t pidx = (size_t)(prof - emu_profiles);
		for (long c = 0; c < cards; c++) {
			for (uint32_t g = 0; g < prof->gpus_per_card; g++) {
				if (n >= max || n >= EMU_MAX_GPUS || seen[pidx] >= 0xFFF) {
					emu_err(err, errlen, "too many GPUs in profile spec", spec);
					return -1;
				}
				struct emu_gpu_desc *d = &out[n];
				d->profile = prof;
				d->gpu_id = emu_gpu_id(pidx, seen[pidx]++);
				d->node = (uint32_t)n + 1;
				d->render_minor = 128 + (uint32_t)n;
				d->location_id = (uint32_t)((0x03 + 0x10 * (n % 16)) << 8 | (n / 16) << 3);
				n++;
			}
		}
	}
	return (int)n;
}
