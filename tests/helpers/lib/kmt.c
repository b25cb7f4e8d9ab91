/* SPDX-License-Identifier: MIT */
#include "kmt.h"

#include <fcntl.h>
#include <hsakmt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int kmt_open(uint32_t gpu_id, int *kfd, uint32_t *node)
{
	if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS) {
		printf("FAIL: hsaKmtOpenKFD\n");
		return -1;
	}
	*kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	HsaSystemProperties sp;
	int found = 0;
	if (hsaKmtAcquireSystemProperties(&sp) == HSAKMT_STATUS_SUCCESS)
		for (uint32_t n = 0; n < sp.NumNodes && !found; n++) {
			char path[128];
			snprintf(path, sizeof(path), "/sys/devices/virtual/kfd/kfd/topology/nodes/%u/gpu_id", n);
			FILE *f = fopen(path, "r");
			uint32_t id = 0;
			if (f) {
				if (fscanf(f, "%u", &id) == 1 && id == gpu_id) {
					*node = n;
					found = 1;
				}
				fclose(f);
			}
		}
	if (!found || *kfd < 0) {
		printf("FAIL: no node with gpu_id 0x%x\n", gpu_id);
		return -1;
	}
	return 0;
}

void *kmt_host_alloc(size_t size)
{
	HsaMemFlags f = { 0 };
	void *p = NULL;
	uint64_t va = 0;
	f.ui32.HostAccess = 1;
	f.ui32.ExecuteAccess = 1;
	f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
	f.ui32.NoNUMABind = 1;
	if (hsaKmtAllocMemory(0, size, f, &p) || hsaKmtMapMemoryToGPU(p, size, &va))
		return NULL;
	memset(p, 0, size);
	return p;
}

double kmt_now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}
