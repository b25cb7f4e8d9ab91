// SPDX-License-Identifier: MIT
/*
 * A small HIP application for spmtap's emulated GPUs (docs/emulator.md "HIP"):
 * device properties, hipMalloc, hipMemcpy host -> device, two kernel launches,
 * hipDeviceSynchronize, hipMemcpy device -> host, bytes compared.
 *
 * The kernels write a second buffer only, so the round trip of the first is
 * right on a real GPU too.  The emulator runs no GPU code (a kernel takes its
 * modelled time and leaves memory as it was), so what is checked here is what
 * both give: the copied bytes come back, the launches complete.
 *
 * Sizes (bytes) come from the command line; the default set is aligned and
 * misaligned, below and beyond one SDMA COPY_LINEAR packet (ROCr 5.2 splits
 * copies at 0x3fffe0 bytes).  Odd sizes are also copied at odd host and device
 * offsets.  With HSA_ENABLE_SDMA unset ROCr copies with its SDMA queues.
 *
 * One line per size:  "size N host+H dev+D: ok"  or  "... FAIL (why)".
 * Exit status 0 when every size is ok.
 */
#include <hip/hip_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void fill_index(uint32_t *out, size_t n)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = (uint32_t)i;
}

__global__ void add_one(uint32_t *out, size_t n)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i < n)
		out[i] += 1;
}

#define CHECK(call, what)                                                                              \
	do {                                                                                           \
		hipError_t e_ = (call);                                                                \
		if (e_ != hipSuccess) {                                                                \
			snprintf(why, sizeof(why), "%s: %s", what, hipGetErrorString(e_));             \
			goto out;                                                                      \
		}                                                                                      \
	} while (0)

/* Deterministic, size-dependent bytes: a stale or shifted copy cannot match by chance. */
static void pattern(unsigned char *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (unsigned char)(x >> 24);
	}
}

static bool round_trip(size_t size)
{
	/* Odd sizes also go at odd offsets: ROCr's misaligned copy paths. */
	size_t hoff = size % 2 ? 1 : 0, doff = size % 2 ? 3 : 0;
	unsigned char *src = (unsigned char *)malloc(size + 8), *back = (unsigned char *)malloc(size + 8);
	unsigned char *dev = nullptr;
	uint32_t *work = nullptr;
	const size_t nwork = 1 << 16;
	char why[256] = "";
	bool ok = false;
	if (!src || !back) {
		snprintf(why, sizeof(why), "out of host memory");
		goto out;
	}
	pattern(src + hoff, size, size);
	memset(back, 0, size + 8);
	CHECK(hipMalloc((void **)&dev, size + 8), "hipMalloc");
	CHECK(hipMalloc((void **)&work, nwork * sizeof(uint32_t)), "hipMalloc");
	CHECK(hipMemcpy(dev + doff, src + hoff, size, hipMemcpyHostToDevice), "hipMemcpy H2D");
	hipLaunchKernelGGL(fill_index, dim3(nwork / 256), dim3(256), 0, 0, work, nwork);
	CHECK(hipGetLastError(), "launch fill_index");
	hipLaunchKernelGGL(add_one, dim3(nwork / 256), dim3(256), 0, 0, work, nwork);
	CHECK(hipGetLastError(), "launch add_one");
	CHECK(hipDeviceSynchronize(), "hipDeviceSynchronize");
	CHECK(hipMemcpy(back + hoff, dev + doff, size, hipMemcpyDeviceToHost), "hipMemcpy D2H");
	if (memcmp(back + hoff, src + hoff, size)) {
		size_t i = 0;
		while (back[hoff + i] == src[hoff + i])
			i++;
		snprintf(why, sizeof(why), "byte %zu differs: 0x%02x, sent 0x%02x", i, back[hoff + i], src[hoff + i]);
		goto out;
	}
	ok = true;
out:
	printf("size %zu host+%zu dev+%zu: %s%s%s%s\n", size, hoff, doff, ok ? "ok" : "FAIL", ok ? "" : " (",
	       why, ok ? "" : ")");
	fflush(stdout);
	hipFree(dev);
	hipFree(work);
	free(src);
	free(back);
	return ok;
}

int main(int argc, char **argv)
{
	static const size_t dflt[] = { 4096, 1000003, 8388608, 12595161 };
	int n = 0;
	hipError_t e = hipGetDeviceCount(&n);
	if (e != hipSuccess || n == 0) {
		printf("FAIL: hipGetDeviceCount: %s, %d devices\n", hipGetErrorString(e), n);
		return 1;
	}
	hipDeviceProp_t pr;
	e = hipGetDeviceProperties(&pr, 0);
	if (e != hipSuccess) {
		printf("FAIL: hipGetDeviceProperties: %s\n", hipGetErrorString(e));
		return 1;
	}
	printf("device 0 of %d: %s, %s, %d CUs, %zu MiB\n", n, pr.name, pr.gcnArchName, pr.multiProcessorCount,
	       pr.totalGlobalMem >> 20);
	int bad = 0;
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			bad += !round_trip(strtoull(argv[i], nullptr, 0));
	} else {
		for (size_t i = 0; i < sizeof(dflt) / sizeof(dflt[0]); i++)
			bad += !round_trip(dflt[i]);
	}
	printf("%s\n", bad ? "FAIL" : "all sizes ok");
	return bad ? 1 : 0;
}
