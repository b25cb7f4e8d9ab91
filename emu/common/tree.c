/* SPDX-License-Identifier: MIT */
/*
 * Writes the KFD sysfs topology that libhsakmt 5.2.3 and spmtap read
 * (SPM.md section 11.3): generation_id, system_properties and per node
 * gpu_id, name, properties, mem_banks/0, caches/0 and io_links/K; and,
 * under <dir>/sys, the DRM/PCI/hwmon side that ROCm SMI and the sensor
 * readers use (docs/emulator.md, "Sensors").
 */
#include "emu/common/craypm.h"
#include "emu/common/emu.h"
#include "emu/common/sensors.h"

#include <time.h>

#include <errno.h>
#include <stdlib.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct emu_tw {
	char *err;
	size_t errlen;
	int failed;
};

static void tw_fail(struct emu_tw *tw, const char *what, const char *path)
{
	if (!tw->failed && tw->err && tw->errlen)
		snprintf(tw->err, tw->errlen, "%s %s: %s", what, path, strerror(errno));
	tw->failed = 1;
}

static void tw_mkdir(struct emu_tw *tw, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void tw_mkdir(struct emu_tw *tw, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (!tw->failed && mkdir(path, 0755) && errno != EEXIST)
		tw_fail(tw, "cannot create", path);
}

/* Writes `text` to the file named by the printf-style path. */
static void tw_file(struct emu_tw *tw, const char *text, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void tw_file(struct emu_tw *tw, const char *text, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (tw->failed)
		return;
	FILE *f = fopen(path, "w");
	if (!f) {
		tw_fail(tw, "cannot write", path);
		return;
	}
	fputs(text, f);
	if (fclose(f))
		tw_fail(tw, "cannot write", path);
}

/* Appends one "key value" line to a properties buffer. */
static void kv(char *buf, size_t len, const char *key, unsigned long long v)
{
	size_t off = strlen(buf);
	if (off < len)
		snprintf(buf + off, len - off, "%s %llu\n", key, v);
}

static void io_link(char *buf, size_t len, uint32_t from, uint32_t to)
{
	buf[0] = 0;
	kv(buf, len, "type", 2); /* PCIe */
	kv(buf, len, "version_major", 0);
	kv(buf, len, "version_minor", 0);
	kv(buf, len, "node_from", from);
	kv(buf, len, "node_to", to);
	kv(buf, len, "weight", 20);
	kv(buf, len, "min_latency", 0);
	kv(buf, len, "max_latency", 0);
	kv(buf, len, "min_bandwidth", 312);
	kv(buf, len, "max_bandwidth", 31250);
	kv(buf, len, "recommended_transfer_size", 0);
	kv(buf, len, "flags", 1);
}

static void write_cpu_node(struct emu_tw *tw, const char *t, int ngpus)
{
	char p[2048] = "";
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	tw_mkdir(tw, "%s/nodes/0", t);
	tw_mkdir(tw, "%s/nodes/0/mem_banks", t);
	tw_mkdir(tw, "%s/nodes/0/mem_banks/0", t);
	tw_mkdir(tw, "%s/nodes/0/caches", t);
	tw_mkdir(tw, "%s/nodes/0/io_links", t);
	tw_file(tw, "0\n", "%s/nodes/0/gpu_id", t);
	tw_file(tw, "\n", "%s/nodes/0/name", t);
	kv(p, sizeof(p), "cpu_cores_count", ncpu > 0 ? (unsigned long long)ncpu : 4);
	kv(p, sizeof(p), "simd_count", 0);
	kv(p, sizeof(p), "mem_banks_count", 1);
	/* 0, as KFD writes for CPU nodes: libhsakmt then reads /sys/devices/system/cpu/cpuN/cache/, whose
	 * entries carry the CPU type bit; ROCr's CPU agent keeps only those and asserts "CPU cache info
	 * missing" without any (rocminfo asks; shared/ref/DISPATCH.md 7). */
	kv(p, sizeof(p), "caches_count", 0);
	kv(p, sizeof(p), "io_links_count", (unsigned long long)ngpus);
	kv(p, sizeof(p), "p2p_links_count", 0);
	kv(p, sizeof(p), "cpu_core_id_base", 0);
	kv(p, sizeof(p), "simd_id_base", 0);
	kv(p, sizeof(p), "max_waves_per_simd", 0);
	kv(p, sizeof(p), "lds_size_in_kb", 0);
	kv(p, sizeof(p), "gds_size_in_kb", 0);
	kv(p, sizeof(p), "num_gws", 0);
	kv(p, sizeof(p), "wave_front_size", 0);
	kv(p, sizeof(p), "array_count", 0);
	kv(p, sizeof(p), "simd_arrays_per_engine", 0);
	kv(p, sizeof(p), "cu_per_simd_array", 0);
	kv(p, sizeof(p), "simd_per_cu", 0);
	kv(p, sizeof(p), "max_slots_scratch_cu", 0);
	kv(p, sizeof(p), "gfx_target_version", 0);
	kv(p, sizeof(p), "vendor_id", 0);
	kv(p, sizeof(p), "device_id", 0);
	kv(p, sizeof(p), "location_id", 0);
	kv(p, sizeof(p), "domain", 0);
	kv(p, sizeof(p), "drm_render_minor", 0);
	kv(p, sizeof(p), "hive_id", 0);
	kv(p, sizeof(p), "num_sdma_engines", 0);
	kv(p, sizeof(p), "num_sdma_xgmi_engines", 0);
	kv(p, sizeof(p), "num_sdma_queues_per_engine", 0);
	kv(p, sizeof(p), "num_cp_queues", 0);
	kv(p, sizeof(p), "max_engine_clk_ccompute", 3000);
	tw_file(tw, p, "%s/nodes/0/properties", t);
	tw_file(tw, "heap_type 0\nsize_in_bytes 17179869184\nflags 0\nwidth 72\nmem_clk_max 3200\n",
		"%s/nodes/0/mem_banks/0/properties", t);
	for (int i = 0; i < ngpus; i++) {
		tw_mkdir(tw, "%s/nodes/0/io_links/%d", t, i);
		io_link(p, sizeof(p), 0, (uint32_t)i + 1);
		tw_file(tw, p, "%s/nodes/0/io_links/%d/properties", t, i);
	}
}

static void write_gpu_node(struct emu_tw *tw, const char *t, const struct emu_gpu_desc *d)
{
	const struct emu_profile *pr = d->profile;
	char p[2048] = "", v[64];
	unsigned n = d->node;
	unsigned long long simd_base = 0x80001000ull + 0x1000ull * (n - 1);

	tw_mkdir(tw, "%s/nodes/%u", t, n);
	tw_mkdir(tw, "%s/nodes/%u/mem_banks", t, n);
	tw_mkdir(tw, "%s/nodes/%u/mem_banks/0", t, n);
	tw_mkdir(tw, "%s/nodes/%u/caches", t, n);
	tw_mkdir(tw, "%s/nodes/%u/caches/0", t, n);
	tw_mkdir(tw, "%s/nodes/%u/io_links", t, n);
	tw_mkdir(tw, "%s/nodes/%u/io_links/0", t, n);
	snprintf(v, sizeof(v), "%u\n", d->gpu_id);
	tw_file(tw, v, "%s/nodes/%u/gpu_id", t, n);
	snprintf(v, sizeof(v), "%s\n", pr->topology_name);
	tw_file(tw, v, "%s/nodes/%u/name", t, n);

	kv(p, sizeof(p), "cpu_cores_count", 0);
	kv(p, sizeof(p), "simd_count", 4ull * pr->cu_count);
	kv(p, sizeof(p), "mem_banks_count", 1);
	kv(p, sizeof(p), "caches_count", 1);
	kv(p, sizeof(p), "io_links_count", 1);
	kv(p, sizeof(p), "p2p_links_count", 0);
	kv(p, sizeof(p), "cpu_core_id_base", 0);
	kv(p, sizeof(p), "simd_id_base", simd_base);
	kv(p, sizeof(p), "max_waves_per_simd", 8);
	kv(p, sizeof(p), "lds_size_in_kb", 64);
	kv(p, sizeof(p), "gds_size_in_kb", 0);
	kv(p, sizeof(p), "num_gws", 64);
	kv(p, sizeof(p), "wave_front_size", 64);
	kv(p, sizeof(p), "array_count", pr->array_count);
	kv(p, sizeof(p), "simd_arrays_per_engine", pr->simd_arrays_per_engine);
	kv(p, sizeof(p), "cu_per_simd_array", pr->cu_per_simd_array);
	kv(p, sizeof(p), "simd_per_cu", 4);
	kv(p, sizeof(p), "max_slots_scratch_cu", 32);
	kv(p, sizeof(p), "gfx_target_version", pr->gfx_target_version);
	kv(p, sizeof(p), "vendor_id", 0x1002);
	kv(p, sizeof(p), "device_id", pr->device_id);
	kv(p, sizeof(p), "location_id", d->location_id);
	kv(p, sizeof(p), "domain", 0);
	kv(p, sizeof(p), "drm_render_minor", d->render_minor);
	kv(p, sizeof(p), "hive_id", 0);
	kv(p, sizeof(p), "num_sdma_engines", 2);
	kv(p, sizeof(p), "num_sdma_xgmi_engines", 3);
	kv(p, sizeof(p), "num_sdma_queues_per_engine", 8);
	kv(p, sizeof(p), "num_cp_queues", 24);
	kv(p, sizeof(p), "max_engine_clk_fcompute", 1700);
	kv(p, sizeof(p), "local_mem_size", 0);
	kv(p, sizeof(p), "fw_version", 78);
	kv(p, sizeof(p), "capability", 746612864); /* DoorbellType 2 (bits 13:12), as amdkfd reports for gfx9+ */
	kv(p, sizeof(p), "debug_prop", 1495);
	kv(p, sizeof(p), "sdma_fw_version", 8);
	kv(p, sizeof(p), "unique_id", 0x5350000000000000ull | d->gpu_id);
	/* libhsakmt 5.2.3 ignores num_xcc; the kernel prints it only on multi-XCC parts. */
	if (pr->num_xcc > 1)
		kv(p, sizeof(p), "num_xcc", pr->num_xcc);
	kv(p, sizeof(p), "max_engine_clk_ccompute", 3000);
	tw_file(tw, p, "%s/nodes/%u/properties", t, n);

	p[0] = 0;
	kv(p, sizeof(p), "heap_type", 1);
	kv(p, sizeof(p), "size_in_bytes", pr->vram_bytes);
	kv(p, sizeof(p), "flags", 0);
	kv(p, sizeof(p), "width", 4096);
	kv(p, sizeof(p), "mem_clk_max", 1600);
	tw_file(tw, p, "%s/nodes/%u/mem_banks/0/properties", t, n);

	p[0] = 0;
	kv(p, sizeof(p), "processor_id_low", simd_base);
	kv(p, sizeof(p), "level", 1);
	kv(p, sizeof(p), "size", 16);
	kv(p, sizeof(p), "cache_line_size", 64);
	kv(p, sizeof(p), "cache_lines_per_tag", 1);
	kv(p, sizeof(p), "association", 4);
	kv(p, sizeof(p), "latency", 1);
	kv(p, sizeof(p), "type", 9); /* DATA | HSACU, as KFD writes GPU caches: ROCr drops 5 (DATA | CPU) */
	kv(p, sizeof(p), "sibling_map", 1);
	tw_file(tw, p, "%s/nodes/%u/caches/0/properties", t, n);

	io_link(p, sizeof(p), n, 0);
	tw_file(tw, p, "%s/nodes/%u/io_links/0/properties", t, n);
}

static void tw_link(struct emu_tw *tw, const char *target, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void tw_link(struct emu_tw *tw, const char *target, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (!tw->failed && symlink(target, path))
		tw_fail(tw, "cannot link", path);
}

static void tw_bin(struct emu_tw *tw, const void *data, size_t len, const char *path)
{
	FILE *f = tw->failed ? NULL : fopen(path, "wb");
	if (!tw->failed && (!f || fwrite(data, 1, len, f) != len))
		tw_fail(tw, "cannot write", path);
	if (f && fclose(f))
		tw_fail(tw, "cannot write", path);
}

/*
 * The DRM side of GPU node i, laid out like the kernel's (relative links):
 *   sys/class/drm/cardI        -> ../../devices/pci0000:00/0000:00:PP.1/DDDD:BB:DD.F/drm/cardI
 *   sys/class/drm/renderD<m>   -> .../drm/renderD<m>
 *   sys/class/hwmon/hwmonI     -> ../../devices/.../hwmon/hwmonI
 * The BDF is the KFD node's location_id (bus << 8 | device << 3 | function)
 * in domain 0, which is how ROCm SMI pairs a card with its KFD node.
 * Dynamic attributes are placeholders here; the shim serves their content.
 */
static void write_drm_card(struct emu_tw *tw, const char *root, const struct emu_gpu_desc *d,
			   unsigned i, const char *spec)
{
	const struct emu_profile *pr = d->profile;
	struct emu_sensor_model m;
	char dev[PATH_MAX], rel[PATH_MAX], bdf[32], v[128];
	unsigned bus = d->location_id >> 8, slot = (d->location_id >> 3) & 0x1F, fn = d->location_id & 7;

	if (emu_sensor_model_init(spec, i, 0, &m, NULL, 0))
		memset(&m, 0, sizeof(m)), m.profile = pr, m.metrics_crev = 3, m.tdp_w = 300;
	snprintf(bdf, sizeof(bdf), "0000:%02x:%02x.%x", bus, slot, fn);
	snprintf(rel, sizeof(rel), "devices/pci0000:00/0000:00:%02x.1/%s", i + 1, bdf);
	snprintf(dev, sizeof(dev), "%s/%s", root, rel);
	tw_mkdir(tw, "%s/devices/pci0000:00/0000:00:%02x.1", root, i + 1);
	tw_mkdir(tw, "%s", dev);
	tw_mkdir(tw, "%s/drm", dev);
	tw_mkdir(tw, "%s/drm/card%u", dev, i);
	tw_mkdir(tw, "%s/drm/renderD%u", dev, d->render_minor);
	tw_link(tw, "../..", "%s/drm/card%u/device", dev, i);
	tw_link(tw, "../..", "%s/drm/renderD%u/device", dev, d->render_minor);
	snprintf(v, sizeof(v), "226:%u\n", i);
	tw_file(tw, v, "%s/drm/card%u/dev", dev, i);
	snprintf(v, sizeof(v), "226:%u\n", d->render_minor);
	tw_file(tw, v, "%s/drm/renderD%u/dev", dev, d->render_minor);
	snprintf(v, sizeof(v), "../../%s/drm/card%u", rel, i);
	tw_link(tw, v, "%s/class/drm/card%u", root, i);
	snprintf(v, sizeof(v), "../../%s/drm/renderD%u", rel, d->render_minor);
	tw_link(tw, v, "%s/class/drm/renderD%u", root, d->render_minor);

	static const char *const fixed[][2] = {
		{ "vendor", "0x1002" }, { "subsystem_vendor", "0x1002" }, { "revision", "0x01" },
		{ "class", "0x038000" }, { "numa_node", "0" }, { "current_link_speed", "16.0 GT/s PCIe" },
		{ "current_link_width", "16" }, { "max_link_speed", "16.0 GT/s PCIe" }, { "max_link_width", "16" },
		{ "power_dpm_force_performance_level", "auto" }, { "pcie_replay_count", "0" },
		{ "gpu_busy_percent", "0" }, { "mem_busy_percent", "0" },
	};
	for (size_t k = 0; k < sizeof(fixed) / sizeof(fixed[0]); k++) {
		snprintf(v, sizeof(v), "%s\n", fixed[k][1]);
		tw_file(tw, v, "%s/%s", dev, fixed[k][0]);
	}
	snprintf(v, sizeof(v), "0x%04x\n", pr->device_id);
	tw_file(tw, v, "%s/device", dev);
	tw_file(tw, v, "%s/subsystem_device", dev);
	tw_file(tw, !strcmp(pr->gfx_name, "gfx942") ? "113-M3000100-102\n" : "113-D67301-063\n",
		"%s/vbios_version", dev);
	snprintf(v, sizeof(v), "%s\n", pr->marketing_name);
	tw_file(tw, v, "%s/product_name", dev);
	snprintf(v, sizeof(v), "%016llx\n", 0x5350000000000000ull | d->gpu_id);
	tw_file(tw, v, "%s/unique_id", dev);
	snprintf(v, sizeof(v), "%llu\n", (unsigned long long)pr->vram_bytes);
	tw_file(tw, v, "%s/mem_info_vram_total", dev);
	tw_file(tw, "16777216\n", "%s/mem_info_vram_used", dev);
	snprintf(v, sizeof(v), "0: 500Mhz\n1: %uMhz *\n", pr->sclk_mhz);
	tw_file(tw, v, "%s/pp_dpm_sclk", dev);
	snprintf(v, sizeof(v), "0: 400Mhz\n1: %uMhz *\n", m.uclk_mhz ? m.uclk_mhz : 1600);
	tw_file(tw, v, "%s/pp_dpm_mclk", dev);

	/* gpu_metrics placeholder: the header and 0xFF, the size of the served table. */
	unsigned char blob[EMU_GPU_METRICS_MAX];
	size_t blen = m.metrics_crev >= 4 ? sizeof(struct emu_gpu_metrics_v1_5) : sizeof(struct emu_gpu_metrics_v1_3);
	memset(blob, 0xFF, blen);
	struct emu_metrics_header h = { (uint16_t)blen, 1, (uint8_t)m.metrics_crev };
	memcpy(blob, &h, sizeof(h));
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/gpu_metrics", dev);
	tw_bin(tw, blob, blen, path);

	/* hwmon (amdgpu_pm.c): gfx942 has no edge sensor (temp1) and power1_input instead of power1_average. */
	int mi300 = m.metrics_crev >= 4;
	tw_mkdir(tw, "%s/hwmon", dev);
	tw_mkdir(tw, "%s/hwmon/hwmon%u", dev, i);
	tw_link(tw, "../..", "%s/hwmon/hwmon%u/device", dev, i);
	snprintf(v, sizeof(v), "../../%s/hwmon/hwmon%u", rel, i);
	tw_link(tw, v, "%s/class/hwmon/hwmon%u", root, i);
	char hw[PATH_MAX + 32];
	snprintf(hw, sizeof(hw), "%s/hwmon/hwmon%u", dev, i);
	static const char *const hfixed[][2] = {
		{ "name", "amdgpu" }, { "temp1_input", "0" }, { "temp1_label", "edge" }, { "temp1_crit", "100000" },
		{ "temp1_crit_hyst", "-273150" }, { "temp1_emergency", "105000" },
		{ "temp2_input", "0" }, { "temp2_label", "junction" }, { "temp2_crit", "110000" },
		{ "temp2_crit_hyst", "-273150" }, { "temp2_emergency", "115000" },
		{ "temp3_input", "0" }, { "temp3_label", "mem" }, { "temp3_crit", "95000" },
		{ "temp3_crit_hyst", "-273150" }, { "temp3_emergency", "105000" },
		{ "power1_average", "0" }, { "power1_input", "0" }, { "power1_label", "PPT" },
		{ "in0_input", "0" }, { "in0_label", "vddgfx" },
		{ "freq1_input", "0" }, { "freq1_label", "sclk" }, { "freq2_input", "0" }, { "freq2_label", "mclk" },
	};
	for (size_t k = 0; k < sizeof(hfixed) / sizeof(hfixed[0]); k++) {
		const char *nm = hfixed[k][0];
		if (mi300 && (!strncmp(nm, "temp1_", 6) || !strcmp(nm, "power1_average")))
			continue;
		if (!mi300 && !strcmp(nm, "power1_input"))
			continue;
		snprintf(v, sizeof(v), "%s\n", hfixed[k][1]);
		tw_file(tw, v, "%s/%s", hw, nm);
	}
	unsigned long long cap = (unsigned long long)(m.tdp_w * 1e6);
	snprintf(v, sizeof(v), "%llu\n", cap);
	tw_file(tw, v, "%s/power1_cap", hw);
	tw_file(tw, v, "%s/power1_cap_max", hw);
	tw_file(tw, v, "%s/power1_cap_default", hw);
	tw_file(tw, "0\n", "%s/power1_cap_min", hw);
}

static void write_drm(struct emu_tw *tw, const char *dir, const struct emu_gpu_desc *g, int n, const char *spec)
{
	char root[PATH_MAX];
	snprintf(root, sizeof(root), "%s/sys", dir);
	tw_mkdir(tw, "%s", root);
	tw_mkdir(tw, "%s/class", root);
	tw_mkdir(tw, "%s/class/drm", root);
	tw_mkdir(tw, "%s/class/hwmon", root);
	tw_mkdir(tw, "%s/devices", root);
	tw_mkdir(tw, "%s/devices/pci0000:00", root);
	tw_mkdir(tw, "%s/module", root);
	tw_mkdir(tw, "%s/module/amdgpu", root);
	tw_file(tw, "drm 1.1.0 20060810\n", "%s/class/drm/version", root);
	tw_file(tw, "live\n", "%s/module/amdgpu/initstate", root);
	tw_file(tw, "5.16.9.22.20\n", "%s/module/amdgpu/version", root);
	tw_mkdir(tw, "%s/module/amdgpu/holders", root); /* libkmod lists it */
	/* /proc/modules as libkmod reads it (the shim redirects it here): rocminfo says "ROCk module is NOT
	 * loaded" without an amdgpu line. */
	tw_mkdir(tw, "%s/proc", dir);
	tw_file(tw, "amdgpu 9318400 0 - Live 0x0000000000000000\n", "%s/proc/modules", dir);
	for (int i = 0; i < n; i++)
		write_drm_card(tw, root, &g[i], (unsigned)i, spec);
}

/*
 * The Cray EX node's /sys/cray/pm_counters (craypm.h): placeholders the
 * shim serves (sensor_fs.c), one accel per card, and cray-epoch: the
 * sensor epoch on MONOTONIC_RAW with CLOCK_REALTIME at the same instant,
 * so every process stamps a snapshot with the same REALTIME us.
 * SPMTAP_EMU_CRAY=0 leaves the node without them (not a Cray EX node).
 */
static void write_cray(struct emu_tw *tw, const char *dir, const struct emu_gpu_desc *g, int n,
		       const struct timespec *raw)
{
	const char *e = getenv("SPMTAP_EMU_CRAY");
	if (e && !strcmp(e, "0"))
		return;
	unsigned cards = 0;
	for (int i = 0, die = 0; i < n; i++) {
		if (i && g[i].profile == g[i - 1].profile && die + 1 < (int)g[i].profile->gpus_per_card) {
			die++;
			continue;
		}
		die = 0;
		cards++;
	}
	if (cards > EMU_CRAY_MAX_ACCEL)
		cards = EMU_CRAY_MAX_ACCEL;
	struct timespec real;
	clock_gettime(CLOCK_REALTIME, &real);
	char v[96], nb[32];
	snprintf(v, sizeof(v), "%llu %llu\n", (unsigned long long)raw->tv_sec * 1000000000ull + (unsigned long long)raw->tv_nsec,
		 (unsigned long long)real.tv_sec * 1000000000ull + (unsigned long long)real.tv_nsec);
	tw_file(tw, v, "%s/cray-epoch", dir);
	tw_mkdir(tw, "%s/sys/cray", dir);
	tw_mkdir(tw, "%s/sys/cray/pm_counters", dir);
	for (unsigned i = 0; i < EMU_CRAY_NFILES(cards); i++)
		tw_file(tw, "0\n", "%s/sys/cray/pm_counters/%s", dir, emu_cray_file_name(i, cards, nb, sizeof(nb)));
}

int emu_tree_write(const char *dir, const char *profile_spec, char *err, size_t errlen)
{
	struct emu_gpu_desc gpus[EMU_MAX_GPUS];
	struct emu_tw tw = { err, errlen, 0 };
	char t[PATH_MAX], spec[512];

	int n = emu_spec_parse(profile_spec, gpus, EMU_MAX_GPUS, err, errlen);
	if (n < 0)
		return -1;
	if (strlen(dir) + 64 > sizeof(t)) {
		errno = ENAMETOOLONG;
		tw_fail(&tw, "path too long:", dir);
		return -1;
	}
	snprintf(t, sizeof(t), "%s/topology", dir);
	tw_mkdir(&tw, "%s", dir);
	tw_mkdir(&tw, "%s", t);
	tw_mkdir(&tw, "%s/nodes", t);
	tw_file(&tw, "1\n", "%s/generation_id", t);
	tw_file(&tw, "platform_oem 0\nplatform_id 0\nplatform_rev 0\n", "%s/system_properties", t);
	write_cpu_node(&tw, t, n);
	for (int i = 0; i < n; i++)
		write_gpu_node(&tw, t, &gpus[i]);
	write_drm(&tw, dir, gpus, n, profile_spec);
	snprintf(spec, sizeof(spec), "%s\n", profile_spec);
	tw_file(&tw, spec, "%s/emu-profile", dir);
	/* A placeholder: the shim serves each process its own workload's schedule here (schedule.h). */
	tw_file(&tw, "spmtap-emu-schedule 1\nerror read without the emulator's shim: the schedule is generated at open\n",
		"%s/emu-schedule", dir);
	/* Sensor glitch times (SPMTAP_EMU_SENSOR_GLITCH) count from here, in every process of the run. */
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	snprintf(spec, sizeof(spec), "%llu\n", (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
	tw_file(&tw, spec, "%s/sensor-epoch", dir);
	write_cray(&tw, dir, gpus, n, &ts);
	return tw.failed ? -1 : 0;
}
