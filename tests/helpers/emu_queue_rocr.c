/* SPDX-License-Identifier: MIT */
/*
 * Test helper: the real Debian ROCr 5.2.3 (dlopen libhsa-runtime64.so.1) on
 * the emulated GPU: hsa_init, the GPU agent, hsa_queue_create, a barrier-AND
 * round trip, a vendor PM4_IB packet whose register writes read back, a
 * waiter asleep in WAIT_EVENTS woken by the CP's completion, N round trips.
 * Usage: emu_queue_rocr GPU_ID all [N]      exit 0 when every check passes
 *        emu_queue_rocr GPU_ID noagent      exit 0 when hsa_init works and finds no GPU agent
 * Exit 77 when ROCr is not installed.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "emu/common/readback.h"

#define HSA_FNS(X)                                                                                             \
	X(hsa_init) X(hsa_shut_down) X(hsa_iterate_agents) X(hsa_agent_get_info) X(hsa_queue_create)          \
	X(hsa_queue_destroy) X(hsa_signal_create) X(hsa_signal_destroy) X(hsa_signal_store_screlease)         \
	X(hsa_signal_store_relaxed) X(hsa_signal_wait_scacquire) X(hsa_queue_add_write_index_screlease)       \
	X(hsa_queue_load_read_index_scacquire) X(hsa_system_get_info) X(hsa_amd_agent_iterate_memory_pools)   \
	X(hsa_amd_memory_pool_get_info) X(hsa_amd_memory_pool_allocate) X(hsa_amd_agents_allow_access)

#define DECL(f) static __typeof__(f) *p_##f;
HSA_FNS(DECL)

static int failures;
#define CHECK(c, ...)                                 \
	do {                                          \
		if (c) {                              \
			printf("ok: " __VA_ARGS__);   \
		} else {                              \
			failures++;                   \
			printf("FAIL: " __VA_ARGS__); \
		}                                     \
		printf("\n");                         \
	} while (0)

static hsa_agent_t gpu, cpu;
static int have_gpu, have_cpu, have_fine, n_gpu;
static hsa_amd_memory_pool_t fine_pool;
static uint32_t gpu_id;
static int kfd = -1;

static hsa_status_t agent_cb(hsa_agent_t a, void *d)
{
	hsa_device_type_t t;
	(void)d;
	p_hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t);
	n_gpu += t == HSA_DEVICE_TYPE_GPU;
	if (t == HSA_DEVICE_TYPE_GPU && !have_gpu) {
		gpu = a;
		have_gpu = 1;
	}
	if (t == HSA_DEVICE_TYPE_CPU && !have_cpu) {
		cpu = a;
		have_cpu = 1;
	}
	return HSA_STATUS_SUCCESS;
}

static hsa_status_t pool_cb(hsa_amd_memory_pool_t p, void *d)
{
	hsa_amd_segment_t seg;
	uint32_t flags = 0;
	bool alloc = false;
	(void)d;
	p_hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg);
	p_hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
	if (seg == HSA_AMD_SEGMENT_GLOBAL)
		p_hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
	if (seg == HSA_AMD_SEGMENT_GLOBAL && alloc && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) &&
	    !have_fine) {
		fine_pool = p;
		have_fine = 1;
	}
	return HSA_STATUS_SUCCESS;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint32_t rb(uint32_t what, uint32_t addr, uint32_t xcc)
{
	struct emu_readback_args a = { gpu_id, xcc, what, addr, 0, 0, 0xDEADBEEF, 0 };
	if (ioctl(kfd, EMU_IOC_READBACK, &a))
		return 0xDEADBEEF;
	return a.value;
}

struct aql_pm4_ib {
	uint16_t header;
	uint16_t ven_hdr;
	uint32_t ib_jump[4];
	uint32_t dw_cnt_remain;
	uint32_t reserved[8];
	hsa_signal_t completion_signal;
};
_Static_assert(sizeof(struct aql_pm4_ib) == 64, "AQL packet is 64 bytes");

static uint16_t hdr(hsa_packet_type_t t)
{
	return (uint16_t)((t << HSA_PACKET_HEADER_TYPE) | (1 << HSA_PACKET_HEADER_BARRIER) |
			  (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE) |
			  (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_RELEASE_FENCE_SCOPE));
}

static void submit(hsa_queue_t *q, const void *pkt64)
{
	uint64_t idx = p_hsa_queue_add_write_index_screlease(q, 1);
	while (idx - p_hsa_queue_load_read_index_scacquire(q) >= q->size)
		;
	uint8_t *slot = (uint8_t *)q->base_address + (idx & (q->size - 1)) * 64;
	memcpy(slot + 4, (const uint8_t *)pkt64 + 4, 60);
	uint32_t first;
	memcpy(&first, pkt64, 4);
	__atomic_store_n((uint32_t *)slot, first, __ATOMIC_RELEASE);
	p_hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)idx);
}

static uint64_t ticks(double seconds)
{
	uint64_t f = 0;
	p_hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &f);
	return (uint64_t)(seconds * (double)f);
}

static hsa_signal_t dep;
static void *release_dep(void *arg)
{
	(void)arg;
	usleep(100 * 1000);
	p_hsa_signal_store_screlease(dep, 0);
	return NULL;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static hsa_signal_value_t wait0(hsa_signal_t s, double secs)
{
	return p_hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, 0, ticks(secs), HSA_WAIT_STATE_BLOCKED);
}

static int run_all(int nrt)
{
	p_hsa_amd_agent_iterate_memory_pools(cpu, pool_cb, NULL);
	CHECK(have_fine, "fine-grained system pool");
	uint32_t *ib = NULL, *marker = NULL;
	hsa_status_t s = p_hsa_amd_memory_pool_allocate(fine_pool, 4096, 0, (void **)&ib);
	s |= p_hsa_amd_memory_pool_allocate(fine_pool, 4096, 0, (void **)&marker);
	hsa_agent_t ag[1] = { gpu };
	s |= p_hsa_amd_agents_allow_access(1, ag, NULL, ib);
	s |= p_hsa_amd_agents_allow_access(1, ag, NULL, marker);
	CHECK(s == HSA_STATUS_SUCCESS && ib && marker, "IB and marker in the fine-grained pool");
	hsa_signal_t s1;
	s = p_hsa_signal_create(1, 0, NULL, &s1);
	s |= p_hsa_signal_create(1, 0, NULL, &dep);
	hsa_queue_t *q = NULL;
	s |= p_hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_SINGLE, NULL, NULL, UINT32_MAX, UINT32_MAX, &q);
	CHECK(s == HSA_STATUS_SUCCESS && q, "hsa_queue_create: %u slots", q ? q->size : 0);
	if (!q || failures)
		return 1;

	hsa_barrier_and_packet_t b;
	memset(&b, 0, sizeof(b));
	b.header = hdr(HSA_PACKET_TYPE_BARRIER_AND);
	b.completion_signal = s1;
	submit(q, &b);
	hsa_signal_value_t v = wait0(s1, 5);
	CHECK(v == 0 && p_hsa_queue_load_read_index_scacquire(q) >= 1, "barrier-AND round trip");

	/* A waiter asleep in WAIT_EVENTS, woken by the CP's completion interrupt. */
	uint32_t sl0 = rb(EMU_RB_QUEUE, EMU_RBQ_WAIT_SLEEPS, 0), irq0 = rb(EMU_RB_QUEUE, EMU_RBQ_IRQS, 0);
	p_hsa_signal_store_relaxed(s1, 1);
	memset(&b, 0, sizeof(b));
	b.header = hdr(HSA_PACKET_TYPE_BARRIER_AND);
	b.dep_signal[0] = dep;
	b.completion_signal = s1;
	pthread_t th;
	double t0 = now_s();
	submit(q, &b);
	pthread_create(&th, NULL, release_dep, NULL);
	v = wait0(s1, 5);
	double dt = now_s() - t0;
	pthread_join(th, NULL);
	uint32_t sl1 = rb(EMU_RB_QUEUE, EMU_RBQ_WAIT_SLEEPS, 0), irq1 = rb(EMU_RB_QUEUE, EMU_RBQ_IRQS, 0);
	CHECK(v == 0 && dt > 0.09 && dt < 2.0, "dependent barrier completed after %.1f ms", dt * 1e3);
	CHECK(sl1 > sl0 && irq1 > irq0, "the waiter slept in WAIT_EVENTS (%u sleeps) and a CP interrupt woke it (%u)",
	      sl1 - sl0, irq1 - irq0);

	/* Vendor PM4_IB. */
	uint32_t n = 0;
	ib[n++] = 0xC0017900u;
	ib[n++] = 0xDC84 - 0xC000;
	ib[n++] = 0x0842100A;
	ib[n++] = 0xC0017900u;
	ib[n++] = 0xDC80 - 0xC000;
	ib[n++] = 0x20003000;
	ib[n++] = 0xC0033700u;
	ib[n++] = (5u << 8) | (1u << 20);
	ib[n++] = (uint32_t)(uintptr_t)marker;
	ib[n++] = (uint32_t)((uintptr_t)marker >> 32);
	ib[n++] = 0xC0FFEE01u;
	struct aql_pm4_ib p;
	memset(&p, 0, sizeof(p));
	p.header = hdr(HSA_PACKET_TYPE_VENDOR_SPECIFIC);
	p.ven_hdr = 1;
	p.ib_jump[0] = 0xC0023F00u;
	p.ib_jump[1] = (uint32_t)(uintptr_t)ib & ~3u;
	p.ib_jump[2] = (uint32_t)((uintptr_t)ib >> 32) & 0xFFFF;
	p.ib_jump[3] = n | (1u << 23);
	p.dw_cnt_remain = 0xA;
	p.completion_signal = s1;
	p_hsa_signal_store_relaxed(s1, 1);
	submit(q, &p);
	v = wait0(s1, 5);
	CHECK(v == 0 && marker[0] == 0xC0FFEE01u, "PM4_IB round trip (marker 0x%x)", marker[0]);
	CHECK(rb(EMU_RB_REG, 0xDC84, 0) == 0x0842100A && rb(EMU_RB_REG, 0xDC80, 0) == 0x20003000,
	      "registers read back as the IB wrote them");

	/* Round trips. */
	double *lat = calloc((size_t)nrt, sizeof(double));
	int done = 0;
	for (int i = 0; i < nrt && lat; i++) {
		memset(&b, 0, sizeof(b));
		b.header = hdr(HSA_PACKET_TYPE_BARRIER_AND);
		b.completion_signal = s1;
		p_hsa_signal_store_relaxed(s1, 1);
		t0 = now_s();
		submit(q, &b);
		if (wait0(s1, 5) != 0)
			break;
		lat[i] = (now_s() - t0) * 1e6;
		done++;
	}
	CHECK(done == nrt, "%d of %d round trips", done, nrt);
	if (done == nrt && nrt > 0) {
		qsort(lat, (size_t)nrt, sizeof(double), cmp_d);
		printf("p50_us %.1f p99_us %.1f\n", lat[nrt / 2], lat[(nrt * 99) / 100]);
	}
	free(lat);
	CHECK(rb(EMU_RB_QUEUE, EMU_RBQ_ERRORS, 0) == 0, "no CP errors");
	CHECK(p_hsa_queue_destroy(q) == HSA_STATUS_SUCCESS, "hsa_queue_destroy");
	p_hsa_signal_destroy(s1);
	p_hsa_signal_destroy(dep);
	return failures != 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s GPU_ID all|noagent [N]\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	gpu_id = (uint32_t)strtoul(argv[1], NULL, 0);
	void *h = dlopen("libhsa-runtime64.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		printf("skip: libhsa-runtime64.so.1 not installed\n");
		return 77;
	}
#define LOAD(f)                                                  \
	*(void **)&p_##f = dlsym(h, #f);                         \
	if (!p_##f) {                                            \
		printf("skip: ROCr lacks %s\n", #f);             \
		return 77;                                       \
	}
	HSA_FNS(LOAD)
	kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	hsa_status_t s = p_hsa_init();
	CHECK(s == HSA_STATUS_SUCCESS, "hsa_init -> 0x%x", s);
	if (s)
		return 1;
	p_hsa_iterate_agents(agent_cb, NULL);
	int rc;
	if (!strcmp(argv[2], "noagent")) {
		CHECK(have_cpu && !have_gpu, "only the CPU agent (cpu %d gpu %d)", have_cpu, have_gpu);
		rc = failures != 0;
	} else {
		CHECK(have_gpu && have_cpu, "agents: cpu %d gpu %d", have_cpu, have_gpu);
		if (have_gpu) {
			char name[64] = { 0 };
			p_hsa_agent_get_info(gpu, HSA_AGENT_INFO_NAME, name);
			printf("gpu agent %s\ngpu_agents %d\n", name, n_gpu);
		}
		rc = have_gpu ? run_all(argc > 3 ? atoi(argv[3]) : 256) : 1;
	}
	CHECK(p_hsa_shut_down() == HSA_STATUS_SUCCESS, "hsa_shut_down");
	return rc || failures;
}
