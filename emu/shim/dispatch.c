/* SPDX-License-Identifier: MIT */
/* Kernel dispatch packets: the duration model, blits and the truth line (dispatch.h). */
#include "emu/shim/dispatch.h"
#include "emu/common/emu.h"
#include "emu/shim/blit.h"
#include "emu/shim/code_objects.h"
#include "emu/shim/dispatch_truth.h"
#include "emu/shim/kernel_activity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* hsa_kernel_dispatch_packet_t (HSA AQL), as the packet processor reads it. */
struct emu_aql_dispatch {
	uint16_t header, setup;
	uint16_t wg[3], reserved0;
	uint32_t grid[3];
	uint32_t private_segment_size, group_segment_size;
	uint64_t kernel_object, kernarg_address, reserved2, completion_signal;
};
_Static_assert(sizeof(struct emu_aql_dispatch) == 64, "an AQL packet is 64 bytes");

/*
 * The duration model (docs/emulator.md "Kernel dispatches"):
 *   user kernel: SPMTAP_EMU_KERNEL_NS's entry for its name if there is one, else
 *                BASE_NS + work-items x PS_PER_ITEM_CU / CUs / 1000 ns
 *                (defaults 5000 ns and 10400 ps: 100 ps per work-item on the MI210's 104 CUs);
 *   ROCr blit:   2000 ns + bytes / 100 (100 bytes per ns).
 */
#define EMU_KERNEL_BASE_NS 5000
#define EMU_KERNEL_PS_PER_ITEM_CU 10400
#define EMU_BLIT_BASE_NS 2000
#define EMU_BLIT_BYTES_PER_NS 100

static uint64_t emu_kbase_ns = UINT64_MAX, emu_kps_cu;

const char *emu_kernel_knob(const char *env, const char *name)
{
	const char *e = getenv(env);
	size_t nl = name ? strlen(name) : 0;
	if (nl >= 3 && !strcmp(name + nl - 3, ".kd"))
		nl -= 3;
	for (const char *p = e && name ? e : ""; *p;) {
		const char *eq = strchr(p, '='), *end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		if (eq && eq < end) {
			size_t kl = (size_t)(eq - p);
			if (kl >= 3 && !strncmp(eq - 3, ".kd", 3))
				kl -= 3;
			if (kl == nl && !strncmp(p, name, nl))
				return eq + 1;
		}
		p = *end ? end + 1 : end;
	}
	return NULL;
}

/* The SPMTAP_EMU_KERNEL_NS entry "name=ns" for `name` (with or without ".kd"); false if none. */
static bool emu_kernel_override(const char *name, uint64_t *ns)
{
	const char *v = emu_kernel_knob("SPMTAP_EMU_KERNEL_NS", name);
	if (v)
		*ns = strtoull(v, NULL, 10);
	return v != NULL;
}

static uint64_t emu_dispatch_model_ns(const char *name, long double items, uint32_t cus)
{
	uint64_t ns;
	if (emu_kernel_override(name, &ns))
		return ns;
	if (emu_kbase_ns == UINT64_MAX) {
		emu_kps_cu = emu_env_u64("SPMTAP_EMU_KERNEL_PS_PER_ITEM_CU", EMU_KERNEL_PS_PER_ITEM_CU);
		emu_kbase_ns = emu_env_u64("SPMTAP_EMU_KERNEL_BASE_NS", EMU_KERNEL_BASE_NS);
	}
	/* long double: a grid of up to 2^96 work-items must not wrap (the result saturates). */
	long double ns_ld = (long double)emu_kbase_ns + items * (long double)emu_kps_cu / (cus ? cus : 1) / 1000.0L;
	return ns_ld >= (long double)(UINT64_MAX / 4) ? UINT64_MAX / 4 : (uint64_t)ns_ld;
}

/* A code-object-v3+ kernel descriptor: 64-byte aligned, code entry set, reserved bytes zero. */
static bool emu_kd_valid(uint64_t va, const uint8_t *kd)
{
	int64_t entry;
	memcpy(&entry, kd + 16, 8);
	for (int i = 12; i < 16; i++)
		if (kd[i])
			return false;
	for (int i = 24; i < 44; i++)
		if (kd[i])
			return false;
	return !(va & 63) && entry != 0;
}

/* The name as a JSON string body: what cannot appear unescaped becomes '?'. */
static void emu_json_name(char *out, size_t len, const char *name)
{
	size_t i = 0;
	for (; name[i] && i + 1 < len; i++)
		out[i] = (name[i] == '"' || name[i] == '\\' || (unsigned char)name[i] < 0x20) ? '?' : name[i];
	out[i] = 0;
}

static void emu_dispatch_truth(struct emu_gpu *g, uint32_t qid, uint64_t idx, const struct emu_aql_dispatch *d,
			       enum emu_kkind kind, const char *name, uint64_t st, uint64_t en, uint64_t kseq,
			       double level)
{
	if (!emu_dtruth_enabled())
		return;
	char f[1024], nm[300] = "";
	if (name) {
		char esc[256];
		emu_json_name(esc, sizeof(esc), name);
		snprintf(nm, sizeof(nm), ",\"name\":\"%s\"", esc);
	}
	snprintf(f, sizeof(f),
		 "\"queue\":%u,\"index\":%llu,\"kind\":\"%s\",\"kernel_object\":%llu%s,\"grid\":[%u,%u,%u],"
		 "\"workgroup\":[%u,%u,%u],\"start_ts\":%llu,\"end_ts\":%llu,\"kseq\":%llu,\"level\":%.6g",
		 qid, (unsigned long long)idx, emu_blit_kind_name(kind), (unsigned long long)d->kernel_object, nm,
		 d->grid[0], d->grid[1], d->grid[2], d->wg[0], d->wg[1], d->wg[2], (unsigned long long)st,
		 (unsigned long long)en, (unsigned long long)kseq, level);
	emu_dtruth_line(g->gpu_id, "cp", f);
}

/* Start the dispatch: check it, apply a blit, model its time.  0 started, -1 refused (msg). */
static int emu_dispatch_start(struct emu_gpu *g, uint32_t qid, struct emu_kslot *k, const struct emu_aql_dispatch *d,
			      uint64_t idx, char *msg, size_t len)
{
	bool vram = false;
	const uint8_t *kd = emu_mem_gpu_ptr(d->kernel_object, 64, &vram);
	if (!kd) {
		snprintf(msg, len, "KERNEL_DISPATCH of kernel_object 0x%llx: no kernel descriptor there (not mapped "
			 "for the GPU)", (unsigned long long)d->kernel_object);
		return -1;
	}
	/* ROCr 5.2's blits live in host memory; a clang-built descriptor in VRAM is a user kernel at once. */
	enum emu_kkind kind = vram ? EMU_KK_USER : emu_blit_kind(kd);
	const char *name = kind == EMU_KK_USER ? emu_co_kernel_name(d->kernel_object) : NULL;
	if (kind == EMU_KK_LEGACY_UNKNOWN) {
		uint32_t rsrc1;
		memcpy(&rsrc1, kd + 48, 4);
		snprintf(msg, len, "KERNEL_DISPATCH of kernel_object 0x%llx: a legacy amd_kernel_code_t (RSRC1 0x%08x) "
			 "that is none of ROCr 5.2's blit kernels: not emulated", (unsigned long long)d->kernel_object,
			 rsrc1);
		return -1;
	}
	if (kind == EMU_KK_USER && !emu_kd_valid(d->kernel_object, kd)) {
		snprintf(msg, len, "KERNEL_DISPATCH of kernel_object 0x%llx%s%s: not a kernel descriptor",
			 (unsigned long long)d->kernel_object, name ? " " : "", name ? name : "");
		return -1;
	}
	uint64_t ns, bytes = 0;
	if (kind != EMU_KK_USER) {
		if (emu_blit_apply(kind, d->kernarg_address, &bytes, msg, len))
			return -1;
		ns = EMU_BLIT_BASE_NS + bytes / EMU_BLIT_BYTES_PER_NS;
	} else {
		long double items = (long double)(d->grid[0] ? d->grid[0] : 1) * (d->grid[1] ? d->grid[1] : 1) *
				    (d->grid[2] ? d->grid[2] : 1);
		ns = emu_dispatch_model_ns(name, items, g->profile ? g->profile->cu_count : 1);
	}
	k->busy = true;
	k->idx = idx;
	/*
	 * Counters follow kernels: the dispatch goes into the GPU's kernel
	 * activity log.  Its start is read under the GPU's lock, so an SPM owner
	 * that has produced samples up to some instant saw every dispatch that
	 * started by then (kernel_activity.h): the bytes and the truth of a
	 * sample never disagree on which kernels ran.
	 */
	double level = emu_kact_level(kind == EMU_KK_USER ? name : emu_blit_kind_name(kind));
	uint64_t kseq = 0;
	if (!g->gs)
		emu_gpu_regs(g); /* maps the GPU's shared state */
	if (g->gs) {
		emu_gs_lock(g->gs);
		k->start_raw = emu_clock_raw_ns();
		k->end_raw = k->start_raw + ns;
		kseq = emu_kact_append(g->gs, k->start_raw, k->end_raw, (uint32_t)getpid(), qid, idx, level);
		emu_gs_unlock(g->gs);
	} else {
		k->start_raw = emu_clock_raw_ns();
		k->end_raw = k->start_raw + ns;
	}
	EMU_DBG("  dispatch q%u #%llu %s kobj 0x%llx%s%s grid %ux%ux%u wg %ux%ux%u %llu ns%s\n", qid,
		(unsigned long long)idx, emu_blit_kind_name(kind), (unsigned long long)d->kernel_object, name ? " " : "",
		name ? name : "", d->grid[0], d->grid[1], d->grid[2], d->wg[0], d->wg[1], d->wg[2],
		(unsigned long long)ns, kind != EMU_KK_USER ? " (ROCr 5.2 blit applied)" : "");
	emu_dispatch_truth(g, qid, idx, d, kind, name, emu_clock_ticks(k->start_raw), emu_clock_ticks(k->end_raw), kseq,
			   level);
	return 0;
}

int emu_dispatch_step(struct emu_gpu *g, uint32_t qid, struct emu_kslot *k, const uint8_t *pkt, uint64_t idx,
		      uint64_t *start_ts, uint64_t *end_ts, char *msg, size_t len)
{
	struct emu_aql_dispatch d;
	memcpy(&d, pkt, sizeof(d));
	if (!k->busy || k->idx != idx) {
		k->busy = false;
		if (emu_dispatch_start(g, qid, k, &d, idx, msg, len))
			return -1;
	}
	if (emu_clock_raw_ns() < k->end_raw)
		return 0;
	*start_ts = emu_clock_ticks(k->start_raw);
	*end_ts = emu_clock_ticks(k->end_raw);
	k->busy = false;
	return 1;
}
