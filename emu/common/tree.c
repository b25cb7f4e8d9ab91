/* SPDX-License-Identifier: MIT */
/*
 * Writes the KFD sysfs topology that libhsakmt 5.2.3 and spmtap read
 * (SPM.md section 11.3): generation_id, system_properties and per node
 * gpu_id, name, properties, mem_banks/0, caches/0 and io_links/K.
 */
#include "emu/common/emu.h"

#include <errno.h>
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
	tw_mkdir(tw, "%s/nodes/0/caches/0", t);
	tw_mkdir(tw, "%s/nodes/0/io_links", t);
	tw_file(tw, "0\n", "%s/nodes/0/gpu_id", t);
	tw_file(tw, "\n", "%s/nodes/0/name", t);
	kv(p, sizeof(p), "cpu_cores_count", ncpu > 0 ? (unsigned long long)ncpu : 4);
	kv(p, sizeof(p), "simd_count", 0);
	kv(p, sizeof(p), "mem_banks_count", 1);
	kv(p, sizeof(p), "caches_count", 1);
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
	tw_file(tw,
		"processor_id_low 0\nlevel 1\nsize 32\ncache_line_size 64\ncache_lines_per_tag 1\n"
		"association 8\nlatency 1\ntype 1\nsibling_map 1\n",
		"%s/nodes/0/caches/0/properties", t);
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
	kv(p, sizeof(p), "capability", 746604672);
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
	kv(p, sizeof(p), "type", 5);
	kv(p, sizeof(p), "sibling_map", 1);
	tw_file(tw, p, "%s/nodes/%u/caches/0/properties", t, n);

	io_link(p, sizeof(p), n, 0);
	tw_file(tw, p, "%s/nodes/%u/io_links/0/properties", t, n);
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
	snprintf(spec, sizeof(spec), "%s\n", profile_spec);
	tw_file(&tw, spec, "%s/emu-profile", dir);
	return tw.failed ? -1 : 0;
}
