/* SPDX-License-Identifier: MIT */
/* The recording's cost per stage (cost.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "collector/lib/cost.h"

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	if (clock_gettime(id, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t cost_thread_cpu_ns(void) { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }
uint64_t cost_process_cpu_ns(void) { return clock_ns(CLOCK_PROCESS_CPUTIME_ID); }

void cost_add(struct cost *c, const char *name, uint64_t ns)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->st[i].name, name)) {
			c->st[i].cpu_ns += ns;
			return;
		}
	if (c->n == COST_MAX_STAGES)
		return;
	snprintf(c->st[c->n].name, sizeof(c->st[c->n].name), "%s", name);
	c->st[c->n++].cpu_ns = ns;
}

double cost_memcpy_s(uint64_t bytes)
{
	if (!bytes)
		return 0;
	size_t n = COST_MEMCPY_BLOCK;
	/*
	 * mmap, not malloc: the pages go back to the system at munmap, so the
	 * reference leaves nothing behind in a long-lived library user.
	 */
	char *a = mmap(NULL, 2 * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED)
		return 0;
	char *b = a + n;
	memset(a, 1, 2 * n);
	uint64_t k = (bytes + n - 1) / n;
	if (k > COST_MEMCPY_BLOCKS)
		k = COST_MEMCPY_BLOCKS;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	for (uint64_t i = 0; i < k; i++) {
		memcpy(i & 1 ? a : b, i & 1 ? b : a, n);
		/* keep the copy: the compiler may not drop a memcpy whose result is read */
		__asm__ volatile("" : : "r"(a), "r"(b) : "memory");
	}
	uint64_t dt = clock_ns(CLOCK_MONOTONIC) - t0;
	munmap(a, 2 * n);
	if (!dt)
		dt = 1;
	return (double)dt / 1e9 * (double)bytes / ((double)k * (double)n);
}

void cost_finish(struct cost *c)
{
	c->process_cpu_ns = cost_process_cpu_ns();
	c->memcpy_s = cost_memcpy_s(c->bytes);
	c->done = 1;
}

double cost_per_gb(const struct cost *c, uint64_t ns)
{
	return c->bytes ? (double)ns / 1e9 / ((double)c->bytes / 1e9) : -1;
}

/* A ratio, or JSON null where it has no meaning (no bytes, no reference). */
static json_t *num_or_null(double v)
{
	return v >= 0 ? json_real(v) : json_null();
}

json_t *cost_json(const struct cost *c)
{
	json_t *stages = json_array();
	uint64_t sum = 0;
	for (size_t i = 0; i < c->n; i++) {
		const struct cost_stage *s = &c->st[i];
		sum += s->cpu_ns;
		json_t *e = json_object();
		json_object_set_new(e, "stage", json_string(s->name));
		json_object_set_new(e, "cpu_s", json_real((double)s->cpu_ns / 1e9));
		json_object_set_new(e, "cpu_s_per_gb", num_or_null(cost_per_gb(c, s->cpu_ns)));
		json_object_set_new(e, "x_memcpy", num_or_null(c->memcpy_s > 0 ? (double)s->cpu_ns / 1e9 /
									 c->memcpy_s : -1));
		json_array_append_new(stages, e);
	}
	json_t *o = json_object();
	json_object_set_new(o, "bytes", json_integer((json_int_t)c->bytes));
	json_object_set_new(o, "collector_cpu_s", json_real((double)c->process_cpu_ns / 1e9));
	json_object_set_new(o, "collector_cpu_s_per_gb", num_or_null(cost_per_gb(c, c->process_cpu_ns)));
	json_object_set_new(o, "memcpy_s", json_real(c->memcpy_s));
	json_object_set_new(o, "memcpy_s_per_gb",
			    num_or_null(c->bytes && c->memcpy_s > 0 ? c->memcpy_s / ((double)c->bytes / 1e9) : -1));
	/* The threads no stage names: the main thread, the writer thread's queue and metadata work, library threads. */
	json_object_set_new(o, "other_cpu_s",
			    json_real(c->process_cpu_ns > sum ? (double)(c->process_cpu_ns - sum) / 1e9 : 0.0));
	json_object_set_new(o, "stages", stages);
	return o;
}

void cost_line(const struct cost *c, char *buf, size_t len)
{
	if (!len)
		return;
	buf[0] = 0;
	if (!c->bytes || !c->done)
		return;
	size_t n = (size_t)snprintf(buf, len, "%.2f s CPU per GB (", cost_per_gb(c, c->process_cpu_ns));
	for (size_t i = 0; i < c->n && n < len; i++) {
		const char *name = c->st[i].name;
		if (!strncmp(name, "writer:", 7))
			name += 7;
		n += (size_t)snprintf(buf + n, len - n, "%s%s %.2f", i ? ", " : "", name,
				      cost_per_gb(c, c->st[i].cpu_ns));
	}
	if (n < len && c->memcpy_s > 0)
		n += (size_t)snprintf(buf + n, len - n, "; memcpy %.2f", c->memcpy_s / ((double)c->bytes / 1e9));
	if (n < len)
		n += (size_t)snprintf(buf + n, len - n, ")");
	/*
	 * Per GB of a few MB is mostly the fixed costs (threads, the journal's
	 * spare buffers, the first pages): a 0.3 s recording read "23.89 s CPU
	 * per GB".  Said where the number is, not left to be compared.
	 */
	if (n < len && c->bytes < COST_FIXED_BYTES)
		snprintf(buf + n, len - n, "; only %.0f MB: fixed costs weigh on these figures",
			 (double)c->bytes / 1e6);
}
