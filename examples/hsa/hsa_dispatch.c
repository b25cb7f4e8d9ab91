/* SPDX-License-Identifier: MIT */
/*
 * HSA example (examples/hsa/README.md): load a gfx90a code object, dispatch
 * its kernels from several threads onto two queues with profiling on, and
 * print one JSON line per dispatch with hsa_amd_profiling_get_dispatch_time
 * and the raw GPU ticks the packet processor wrote into the completion
 * signal.
 *
 * Usage: hsa_dispatch CODE.hsaco [THREADS=4] [DISPATCHES_PER_THREAD=8] [many]
 * (HSA_DISPATCH_AGENT=N: the N-th GPU agent instead of the first)
 * Thread t submits to queue t % 2 without waiting, kernel (t + i) % 3 of
 * add1 (1024 work-items), scale (4096) and nop (64); main then waits for
 * every completion signal.  Exit status 0 when every dispatch completed.
 * `many` (tens of thousands of dispatches, as test_kernels runs under
 * spmtap record): kernel (t + i) % 5, adding saxpy (2048) and zero (512);
 * each thread keeps at most BATCH dispatches in flight, each with its own
 * completion signal reused batch after batch, and prints a batch's lines
 * once it has waited for it.
 */
#include <hsa/amd_hsa_signal.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NQUEUES 2
#define NKERNELS 5
#define BATCH 16

static const char *const kname[NKERNELS] = { "add1", "scale", "nop", "saxpy", "zero" };
static const uint32_t kgrid[NKERNELS] = { 1024, 4096, 64, 2048, 512 };

struct kernel {
	uint64_t object;
	uint32_t kernarg_size, group_size, private_size;
};

struct dispatch {
	int thread, queue, kernel;
	uint64_t packet;
	hsa_signal_t done;
	void *kernarg;
};

static hsa_agent_t gpu;
static int have_gpu, have_kernarg, have_fine;
static hsa_amd_memory_pool_t kernarg_pool, fine_pool;
static hsa_queue_t *queues[NQUEUES];
static struct kernel kernels[NKERNELS];
static struct dispatch *dispatches;
static int nthreads, per_thread, nkernels = 3, many;
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;
static void *buffer; /* 4096 ints/floats that add1 and scale work on */

static void check(hsa_status_t s, const char *what)
{
	if (s == HSA_STATUS_SUCCESS)
		return;
	const char *m = NULL;
	hsa_status_string(s, &m);
	fprintf(stderr, "hsa_dispatch: %s failed: 0x%x %s\n", what, (unsigned)s, m ? m : "");
	exit(1);
}

/* The GPU agent numbered HSA_DISPATCH_AGENT (0, 1, ... in ROCr's order; default 0). */
static hsa_status_t find_gpu(hsa_agent_t a, void *d)
{
	int *seen = d;
	const char *e = getenv("HSA_DISPATCH_AGENT");
	hsa_device_type_t t;
	if (hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t) == HSA_STATUS_SUCCESS && t == HSA_DEVICE_TYPE_GPU &&
	    !have_gpu && (*seen)++ == (e ? atoi(e) : 0)) {
		gpu = a;
		have_gpu = 1;
	}
	return HSA_STATUS_SUCCESS;
}

/* The CPU agent's pools: kernarg (KERNARG_INIT) and fine-grained system memory for the buffer. */
static hsa_status_t find_pool(hsa_amd_memory_pool_t p, void *d)
{
	(void)d;
	hsa_amd_segment_t seg;
	uint32_t flags = 0;
	hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg);
	if (seg != HSA_AMD_SEGMENT_GLOBAL)
		return HSA_STATUS_SUCCESS;
	hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
	if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) && !have_kernarg) {
		kernarg_pool = p;
		have_kernarg = 1;
	}
	if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) && !have_fine) {
		fine_pool = p;
		have_fine = 1;
	}
	return HSA_STATUS_SUCCESS;
}

static hsa_status_t find_cpu_pools(hsa_agent_t a, void *d)
{
	hsa_device_type_t t;
	if (hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t) == HSA_STATUS_SUCCESS && t == HSA_DEVICE_TYPE_CPU)
		hsa_amd_agent_iterate_memory_pools(a, find_pool, d);
	return HSA_STATUS_SUCCESS;
}

static void *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END))
		return NULL;
	long sz = ftell(f);
	void *b = sz > 0 ? malloc((size_t)sz) : NULL;
	if (b && (fseek(f, 0, SEEK_SET) || fread(b, 1, (size_t)sz, f) != (size_t)sz)) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*n = (size_t)sz;
	return b;
}

static void load_kernels(hsa_executable_t ex)
{
	for (int k = 0; k < NKERNELS; k++) {
		char sym[64];
		snprintf(sym, sizeof(sym), "%s.kd", kname[k]);
		hsa_executable_symbol_t s;
		check(hsa_executable_get_symbol_by_name(ex, sym, &gpu, &s), sym);
		check(hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &kernels[k].object),
		      "kernel object");
		check(hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
						     &kernels[k].kernarg_size),
		      "kernarg size");
		check(hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
						     &kernels[k].group_size),
		      "group size");
		check(hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
						     &kernels[k].private_size),
		      "private size");
	}
}

/* One dispatch: reserve a slot (queues are shared by threads), fill it, publish the header, ring. */
static void submit(struct dispatch *d)
{
	hsa_queue_t *q = queues[d->queue];
	const struct kernel *k = &kernels[d->kernel];
	uint64_t idx = hsa_queue_add_write_index_scacq_screl(q, 1);
	while (idx - hsa_queue_load_read_index_scacquire(q) >= q->size)
		; /* the ring is full: the packet processor frees slots as it goes */
	hsa_kernel_dispatch_packet_t *p = (hsa_kernel_dispatch_packet_t *)q->base_address + (idx & (q->size - 1));
	memset((char *)p + 4, 0, sizeof(*p) - 4);
	p->workgroup_size_x = 64;
	p->workgroup_size_y = p->workgroup_size_z = 1;
	p->grid_size_x = kgrid[d->kernel];
	p->grid_size_y = p->grid_size_z = 1;
	p->kernel_object = k->object;
	p->kernarg_address = d->kernarg;
	p->private_segment_size = k->private_size;
	p->group_segment_size = k->group_size;
	p->completion_signal = d->done;
	uint16_t setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
	uint16_t hdr = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
		       (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
		       (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
	__atomic_store_n((uint32_t *)p, hdr | (uint32_t)setup << 16, __ATOMIC_RELEASE);
	hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)idx);
	d->packet = idx;
}

static int waited(struct dispatch *d); /* below: 0, or 1 when it never completed */

/* The submitting threads' CPU in submit() (filling the packet, ringing: a tool's intercept runs there). */
static int64_t submit_cpu_ns;

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t process_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *thread_main(void *arg)
{
	int t = (int)(intptr_t)arg;
	if (!many) {
		for (int i = 0; i < per_thread; i++)
			submit(&dispatches[t * per_thread + i]);
		return NULL;
	}
	/* dispatches[t * BATCH ..] are this thread's BATCH reusable ones. */
	intptr_t failed = 0;
	for (int i = 0; i < per_thread; i += BATCH) {
		int n = per_thread - i < BATCH ? per_thread - i : BATCH;
		int64_t c0 = thread_cpu_ns();
		for (int b = 0; b < n; b++) {
			struct dispatch *d = &dispatches[t * BATCH + b];
			d->kernel = (t + i + b) % nkernels;
			hsa_signal_store_relaxed(d->done, 1);
			submit(d);
		}
		__atomic_fetch_add(&submit_cpu_ns, thread_cpu_ns() - c0, __ATOMIC_RELAXED);
		for (int b = 0; b < n; b++)
			failed += waited(&dispatches[t * BATCH + b]);
	}
	return (void *)failed;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: hsa_dispatch CODE.hsaco [THREADS=4] [DISPATCHES_PER_THREAD=8]\n");
		return 2;
	}
	nthreads = argc > 2 ? atoi(argv[2]) : 4;
	per_thread = argc > 3 ? atoi(argv[3]) : 8;
	many = argc > 4 && !strcmp(argv[4], "many");
	if (many)
		nkernels = NKERNELS;
	if (nthreads < 1 || nthreads > 64 || per_thread < 1 || per_thread > (many ? 1000000 : 10000))
		return 2;
	check(hsa_init(), "hsa_init");
	int seen = 0;
	check(hsa_iterate_agents(find_gpu, &seen), "agents");
	check(hsa_iterate_agents(find_cpu_pools, NULL), "pools");
	if (!have_gpu || !have_kernarg || !have_fine) {
		fprintf(stderr, "hsa_dispatch: no GPU agent or no kernarg/fine-grained pool\n");
		return 1;
	}
	for (int i = 0; i < NQUEUES; i++) {
		check(hsa_queue_create(gpu, 256, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX, &queues[i]),
		      "hsa_queue_create");
		check(hsa_amd_profiling_set_profiler_enabled(queues[i], 1), "profiling on");
	}
	size_t sz;
	void *co = slurp(argv[1], &sz);
	if (!co) {
		perror(argv[1]);
		return 1;
	}
	hsa_code_object_reader_t rd;
	hsa_executable_t ex;
	check(hsa_code_object_reader_create_from_memory(co, sz, &rd), "code object reader");
	check(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &ex),
	      "executable");
	check(hsa_executable_load_agent_code_object(ex, gpu, rd, NULL, NULL), "load code object");
	check(hsa_executable_freeze(ex, NULL), "freeze"); /* ROCr uploads the code with its blit kernel here */
	load_kernels(ex);

	check(hsa_amd_memory_pool_allocate(fine_pool, 4096 * 4, 0, &buffer), "buffer");
	check(hsa_amd_agents_allow_access(1, &gpu, NULL, buffer), "buffer access");
	memset(buffer, 0, 4096 * 4);
	int n = many ? nthreads * BATCH : nthreads * per_thread;
	dispatches = calloc((size_t)n, sizeof(*dispatches));
	if (!dispatches)
		return 1;
	for (int t = 0; t < nthreads; t++)
		for (int i = 0; i < per_thread; i++) {
			if (many && i >= BATCH)
				break;
			struct dispatch *d = &dispatches[t * (many ? BATCH : per_thread) + i];
			d->thread = t;
			d->queue = t % NQUEUES;
			d->kernel = (t + i) % nkernels;
			check(hsa_signal_create(1, 0, NULL, &d->done), "signal");
			check(hsa_amd_memory_pool_allocate(kernarg_pool, 64, 0, &d->kernarg), "kernarg");
			float f = 2.0f;
			memcpy(d->kernarg, &buffer, sizeof(buffer)); /* add1(p), scale(p, f); nop ignores it */
			memcpy((char *)d->kernarg + 8, &f, sizeof(f));
		}
	pthread_t th[64];
	int64_t p0 = process_cpu_ns();
	for (int t = 0; t < nthreads; t++)
		if (pthread_create(&th[t], NULL, thread_main, (void *)(intptr_t)t))
			return 1;
	int failed = 0;
	for (int t = 0; t < nthreads; t++) {
		void *f = NULL;
		pthread_join(th[t], &f);
		failed += (int)(intptr_t)f;
	}
	for (int i = 0; i < n && !many; i++)
		failed += waited(&dispatches[i]);
	if (many) {
		n = nthreads * per_thread;
		/*
		 * Cost per dispatch (make bench, docs/bench.md): the app threads' CPU in submit(), and the
		 * whole process's CPU over the dispatching (every thread: the app's, ROCr's async signal
		 * thread, and under the emulator its CP thread too) from the threads' start to their end.
		 */
		fprintf(stderr, "hsa_dispatch: cpu_submit_ns_per_dispatch=%.1f cpu_process_ns_per_dispatch=%.1f "
				"dispatches=%d\n", (double)submit_cpu_ns / n, (double)(process_cpu_ns() - p0) / n, n);
	}
	for (int i = 0; i < (many ? nthreads * BATCH : n); i++) {
		hsa_signal_destroy(dispatches[i].done);
		hsa_amd_memory_pool_free(dispatches[i].kernarg);
	}
	hsa_amd_memory_pool_free(buffer);
	hsa_executable_destroy(ex);
	hsa_code_object_reader_destroy(rd);
	for (int i = 0; i < NQUEUES; i++)
		hsa_queue_destroy(queues[i]);
	hsa_shut_down();
	free(dispatches);
	free(co);
	fprintf(stderr, "hsa_dispatch: %d of %d dispatches completed\n", n - failed, n);
	return failed ? 1 : 0;
}

/* Waits for one dispatch and prints its line (what ROCr's profiling says of it); 1 when it failed. */
static int waited(struct dispatch *d)
{
	double deadline = now_s() + 60;
	while (hsa_signal_wait_scacquire(d->done, HSA_SIGNAL_CONDITION_LT, 1, 100000000, HSA_WAIT_STATE_BLOCKED) >= 1)
		if (now_s() > deadline)
			break;
	if (hsa_signal_load_scacquire(d->done) >= 1) {
		fprintf(stderr, "hsa_dispatch: thread %d's dispatch of %s (queue %d, packet %llu) never completed\n",
			d->thread, kname[d->kernel], d->queue, (unsigned long long)d->packet);
		return 1;
	}
	hsa_amd_profiling_dispatch_time_t t;
	check(hsa_amd_profiling_get_dispatch_time(gpu, d->done, &t), "dispatch time");
	/* An hsa_signal_t's handle is the address of its amd_signal_t (hsa/amd_hsa_signal.h). */
	const amd_signal_t *s = (const amd_signal_t *)(uintptr_t)d->done.handle;
	pthread_mutex_lock(&print_lock);
	printf("{\"thread\":%d,\"queue\":%d,\"queue_id\":%llu,\"packet\":%llu,\"kernel\":\"%s\",\"grid\":%u,"
	       "\"start_ns\":%llu,\"end_ns\":%llu,\"start_ts\":%llu,\"end_ts\":%llu}\n",
	       d->thread, d->queue, (unsigned long long)queues[d->queue]->id, (unsigned long long)d->packet,
	       kname[d->kernel], kgrid[d->kernel], (unsigned long long)t.start, (unsigned long long)t.end,
	       (unsigned long long)s->start_ts, (unsigned long long)s->end_ts);
	pthread_mutex_unlock(&print_lock);
	/* ROCr's times from the signal's stamps: none (0) or reversed means the profiling broke. */
	if (!s->start_ts || s->end_ts < s->start_ts || t.end < t.start) {
		fprintf(stderr, "hsa_dispatch: FAIL: dispatch of %s (queue %d, packet %llu) has no valid profiling times\n",
			kname[d->kernel], d->queue, (unsigned long long)d->packet);
		return 1;
	}
	return 0;
}
