/* SPDX-License-Identifier: MIT */
/*
 * hsa_copy: host <-> VRAM round trips with ROCr's hsa_amd_memory_async_copy,
 * the path HIP's hipMemcpy takes (on gfx90a ROCr runs it on an SDMA queue
 * unless HSA_ENABLE_SDMA=0).  For each size: a pattern in a fine-grained
 * system-pool buffer, copied to a VRAM (coarse-grained GPU pool) buffer,
 * copied back into a second host buffer at another offset, compared; the
 * copy's start/end GPU times from hsa_amd_profiling_get_async_copy_time.
 *
 * Usage: hsa_copy [BYTES...]   (default: 4096 1000003 12595161)
 * Prints one "copy BYTES h2d_start h2d_end d2h_start d2h_end ok" line per
 * size, "FAIL ..." on a mismatch; exit status 0 when every size came back equal.
 * Build: cc hsa_copy.c -lhsa-runtime64 -o hsa_copy
 */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct found {
	hsa_agent_t gpu, cpu;
	hsa_amd_memory_pool_t vram, host;
	int have_gpu, have_cpu, have_vram, have_host;
};

static hsa_status_t pool_cb(hsa_amd_memory_pool_t pool, void *data)
{
	struct found *f = data;
	hsa_amd_segment_t seg;
	uint32_t flags = 0;
	hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg);
	if (seg != HSA_AMD_SEGMENT_GLOBAL)
		return HSA_STATUS_SUCCESS;
	hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
	bool alloc = false;
	hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
	if (!alloc)
		return HSA_STATUS_SUCCESS;
	if (f->have_gpu && !f->have_vram && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED)) {
		f->vram = pool;
		f->have_vram = 1;
	}
	return HSA_STATUS_SUCCESS;
}

static hsa_status_t host_pool_cb(hsa_amd_memory_pool_t pool, void *data)
{
	struct found *f = data;
	hsa_amd_segment_t seg;
	uint32_t flags = 0;
	hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg);
	hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
	if (seg == HSA_AMD_SEGMENT_GLOBAL && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) && !f->have_host) {
		f->host = pool;
		f->have_host = 1;
	}
	return HSA_STATUS_SUCCESS;
}

static hsa_status_t agent_cb(hsa_agent_t a, void *data)
{
	struct found *f = data;
	hsa_device_type_t t;
	hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t);
	if (t == HSA_DEVICE_TYPE_GPU && !f->have_gpu) {
		f->gpu = a;
		f->have_gpu = 1;
		hsa_amd_agent_iterate_memory_pools(a, pool_cb, f);
	} else if (t == HSA_DEVICE_TYPE_CPU && !f->have_cpu) {
		f->cpu = a;
		f->have_cpu = 1;
		hsa_amd_agent_iterate_memory_pools(a, host_pool_cb, f);
	}
	return HSA_STATUS_SUCCESS;
}

static int check(hsa_status_t s, const char *what)
{
	if (s != HSA_STATUS_SUCCESS) {
		const char *m = NULL;
		hsa_status_string(s, &m);
		printf("FAIL: %s: %s\n", what, m ? m : "?");
		return -1;
	}
	return 0;
}

/* One async copy, waited for; its GPU start/end times. */
static int copy(void *dst, hsa_agent_t da, const void *src, hsa_agent_t sa, size_t n,
		hsa_amd_profiling_async_copy_time_t *t)
{
	hsa_signal_t s;
	if (check(hsa_signal_create(1, 0, NULL, &s), "hsa_signal_create"))
		return -1;
	if (check(hsa_amd_memory_async_copy(dst, da, src, sa, n, 0, NULL, s), "hsa_amd_memory_async_copy"))
		return -1;
	/* A bound: a copy that never completes fails the program instead of hanging it. */
	hsa_signal_value_t v = hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_LT, 1, 10ull * 1000000000ull,
							   HSA_WAIT_STATE_BLOCKED);
	if (v != 0) {
		printf("FAIL: copy of %zu bytes not completed (signal %lld)\n", n, (long long)v);
		return -1;
	}
	int rc = check(hsa_amd_profiling_get_async_copy_time(s, t), "hsa_amd_profiling_get_async_copy_time");
	hsa_signal_destroy(s);
	return rc;
}

int main(int argc, char **argv)
{
	static const size_t dflt[] = { 4096, 1000003, 12595161 };
	size_t sizes[16], nsizes = 0;
	for (int i = 1; i < argc && nsizes < 16; i++)
		sizes[nsizes++] = strtoull(argv[i], NULL, 0);
	if (!nsizes)
		for (; nsizes < 3; nsizes++)
			sizes[nsizes] = dflt[nsizes];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (check(hsa_init(), "hsa_init"))
		return 1;
	struct found f = { 0 };
	hsa_iterate_agents(agent_cb, &f);
	if (!f.have_gpu || !f.have_vram || !f.have_host) {
		printf("FAIL: no GPU agent with a VRAM pool and a fine-grained host pool\n");
		return 1;
	}
	if (check(hsa_amd_profiling_async_copy_enable(true), "hsa_amd_profiling_async_copy_enable"))
		return 1;
	int bad = 0;
	for (size_t k = 0; k < nsizes; k++) {
		size_t n = sizes[k], soff = k % 4, doff = (k * 3) % 8, voff = k % 2;
		uint8_t *hs = NULL, *hd = NULL, *v = NULL;
		if (check(hsa_amd_memory_pool_allocate(f.host, n + 64, 0, (void **)&hs), "host allocate") ||
		    check(hsa_amd_memory_pool_allocate(f.host, n + 64, 0, (void **)&hd), "host allocate") ||
		    check(hsa_amd_memory_pool_allocate(f.vram, n + 64, 0, (void **)&v), "VRAM allocate"))
			return 1;
		hsa_agent_t both[2] = { f.gpu, f.cpu };
		if (check(hsa_amd_agents_allow_access(2, both, NULL, hs), "allow_access") ||
		    check(hsa_amd_agents_allow_access(2, both, NULL, hd), "allow_access"))
			return 1;
		for (size_t i = 0; i < n; i++)
			hs[soff + i] = (uint8_t)((i * 2654435761u + n) >> 13);
		memset(hd, 0xEE, n + 64);
		hsa_amd_profiling_async_copy_time_t t1, t2;
		if (copy(v + voff, f.gpu, hs + soff, f.cpu, n, &t1) || copy(hd + doff, f.cpu, v + voff, f.gpu, n, &t2))
			return 1;
		int ok = memcmp(hd + doff, hs + soff, n) == 0;
		for (size_t i = 0; i < doff; i++)
			ok &= hd[i] == 0xEE;
		ok &= hd[doff + n] == 0xEE;
		printf("copy %zu %llu %llu %llu %llu %s\n", n, (unsigned long long)t1.start, (unsigned long long)t1.end,
		       (unsigned long long)t2.start, (unsigned long long)t2.end, ok ? "ok" : "MISMATCH");
		if (!ok) {
			printf("FAIL: %zu bytes did not come back equal\n", n);
			bad = 1;
		}
		hsa_amd_memory_pool_free(hs);
		hsa_amd_memory_pool_free(hd);
		hsa_amd_memory_pool_free(v);
	}
	hsa_shut_down();
	return bad;
}
