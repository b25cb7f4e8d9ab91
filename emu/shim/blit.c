/* SPDX-License-Identifier: MIT */
/* ROCr 5.2.x blit kernels as memory copies and fills (blit.h; DISPATCH.md 4). */
#include "emu/shim/blit.h"
#include "emu/shim/code_objects.h"
#include "emu/shim/shim.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/*
 * memmove without libc: under ThreadSanitizer the shim is uninstrumented (Makefile), so TSan would see a
 * libc memmove's accesses (its interceptor) but not the CP's release/acquire around them, and report the
 * application's writes before the doorbell as races.  The attribute keeps GCC from turning the loop back
 * into a memmove call.
 */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void emu_move(uint8_t *d, const uint8_t *s,
											   uint64_t n)
{
	if (d < s || d >= s + n) {
		for (uint64_t i = 0; i < n; i++)
			d[i] = s[i];
	} else {
		for (uint64_t i = n; i-- > 0;)
			d[i] = s[i];
	}
}

enum emu_kkind emu_blit_kind(const uint8_t *kd)
{
	uint32_t ver[2], rsrc1;
	int64_t entry;
	memcpy(ver, kd, 8);
	memcpy(&entry, kd + 16, 8);
	memcpy(&rsrc1, kd + 48, 4);
	/* amd_kernel_code_t with zero version words and the code right behind its 256 bytes. */
	if (ver[0] || ver[1] || entry != 256)
		return EMU_KK_USER;
	uint32_t vgpr = rsrc1 & 0x3F, sgpr = (rsrc1 >> 6) & 0xF;
	if (sgpr == 3 && vgpr == 2)
		return EMU_KK_COPY_ALIGNED;
	if (sgpr == 2 && vgpr == 2)
		return EMU_KK_COPY_MISALIGNED;
	if (sgpr == 2 && vgpr == 1)
		return EMU_KK_FILL;
	return EMU_KK_LEGACY_UNKNOWN;
}

const char *emu_blit_kind_name(enum emu_kkind k)
{
	switch (k) {
	case EMU_KK_COPY_ALIGNED:
	case EMU_KK_COPY_MISALIGNED: return "blit_copy";
	case EMU_KK_FILL: return "blit_fill";
	default: return "user";
	}
}

int emu_blit_apply(enum emu_kkind k, uint64_t kernarg, uint64_t *bytes, char *msg, size_t len)
{
	/* Only the outer bounds matter; ROCr's phase fields split the same range for its shader. */
	const uint8_t *ka = emu_mem_gpu_ptr(kernarg, k == EMU_KK_COPY_ALIGNED ? 84 : k == EMU_KK_FILL ? 32 : 52, NULL);
	if (!ka) {
		snprintf(msg, len, "ROCr 5.2 blit kernel: kernarg 0x%llx not mapped for the GPU",
			 (unsigned long long)kernarg);
		return -1;
	}
	uint64_t f[10];
	memcpy(f, ka, k == EMU_KK_COPY_ALIGNED ? 80 : k == EMU_KK_FILL ? 24 : 48);
	if (k == EMU_KK_FILL) {
		uint64_t dst = f[0], end = f[2];
		uint32_t v;
		memcpy(&v, ka + 24, 4);
		uint8_t *p = end > dst ? emu_mem_gpu_ptr(dst, end - dst, NULL) : NULL;
		if (end < dst || ((end - dst) & 3) || (end > dst && !p)) {
			snprintf(msg, len, "ROCr 5.2 blit Fill: 0x%llx..0x%llx not mapped for the GPU or not whole dwords",
				 (unsigned long long)dst, (unsigned long long)end);
			return -1;
		}
		for (uint64_t i = 0; i < end - dst; i += 4)
			memcpy(p + i, &v, 4); /* ROCr aligns dst to 4; memcpy keeps any address defined */
		*bytes = end - dst;
		return 0;
	}
	uint64_t src = f[0], dst = f[1], end = k == EMU_KK_COPY_ALIGNED ? f[8] : f[4];
	uint64_t n = end > src ? end - src : 0;
	void *ps = n ? emu_mem_gpu_ptr(src, n, NULL) : NULL, *pd = n ? emu_mem_gpu_ptr(dst, n, NULL) : NULL;
	if (end < src || (n && (!ps || !pd))) {
		snprintf(msg, len, "ROCr 5.2 blit Copy%s: 0x%llx -> 0x%llx (%llu bytes) not mapped for the GPU",
			 k == EMU_KK_COPY_ALIGNED ? "Aligned" : "Misaligned", (unsigned long long)src,
			 (unsigned long long)dst, (unsigned long long)n);
		return -1;
	}
	if (n) {
		emu_move(pd, ps, n);
		emu_co_note_copy(dst, pd, n);
	}
	*bytes = n;
	return 0;
}
