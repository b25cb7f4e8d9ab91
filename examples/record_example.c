/* SPDX-License-Identifier: MIT */
/*
 * Record ~300 ms of two SPM counters on GPU 0 through the public libspmtap
 * API and print, per counter, the total over every sample and XCC, plus the
 * number of chunks the callback received.
 *
 *   cc record_example.c $(pkg-config --cflags --libs spmtap) -o record_example
 *   spmtap --emulate mi300a ./record_example      # no AMD GPU needed
 *
 * Usage: record_example [MILLISECONDS] [COUNTER...]   (default 300 SQ_WAVES SQ_CYCLES)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <spmtap.h>

#define MAX_COUNTERS 16

struct totals {
	const char *const *names;
	size_t n;
	unsigned long long sum[MAX_COUNTERS];
	unsigned long long saturated[MAX_COUNTERS];
	unsigned long samples, chunks;
};

/* Runs on the library's writer thread; the chunk is valid only during the call. */
static int on_chunk(const struct spmtap_chunk *c, void *user)
{
	struct totals *t = user;
	t->chunks++;
	if (strcmp(spmtap_chunk_source(c), "spm") != 0)
		return 0;
	uint32_t n = spmtap_chunk_n(c);
	t->samples += n;
	for (uint32_t col = 0; col < spmtap_chunk_ncols(c); col++) {
		const char *name = spmtap_chunk_col_name(c, col);
		const uint64_t *v = spmtap_chunk_u64(c, col);
		const uint64_t *missing = spmtap_chunk_missing(c, col);
		for (size_t k = 0; v && k < t->n; k++) {
			if (strcmp(name, t->names[k]) != 0)
				continue;
			for (uint32_t i = 0; i < n; i++) {
				if (missing && (missing[i / 64] >> (i % 64) & 1))
					t->saturated[k]++; /* saturated: value unknown */
				else
					t->sum[k] += v[i];
			}
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 300;
	static const char *const defaults[] = { "SQ_WAVES", "SQ_CYCLES" };
	const char *const *names = argc > 2 ? (const char *const *)&argv[2] : defaults;
	size_t n = argc > 2 ? (size_t)(argc - 2) : 2;
	if (ms <= 0 || n > MAX_COUNTERS) {
		fprintf(stderr, "usage: %s [MILLISECONDS] [COUNTER...] (at most %d)\n", argv[0],
			MAX_COUNTERS);
		return 64;
	}

	struct spmtap_devices *devs = NULL;
	int rc = spmtap_devices_open(&devs, NULL);
	if (rc < 0) {
		fprintf(stderr, "spmtap_devices_open: %s\n", spmtap_strerror(rc));
		return 1;
	}
	if (spmtap_devices_count(devs) < 1) {
		fprintf(stderr, "no AMD GPU found (try: spmtap --emulate mi300a %s)\n", argv[0]);
		spmtap_devices_close(devs);
		return 1;
	}
	printf("GPU 0: %s (%s), %u XCC(s)\n", spmtap_device_name(devs, 0), spmtap_device_gfx(devs, 0),
	       spmtap_device_num_xcc(devs, 0));

	struct totals t = { .names = names, .n = n };
	struct spmtap_session_opts o = SPMTAP_SESSION_OPTS_INIT;
	o.devices = devs;            /* GPU 0: gpus = NULL */
	o.counters = names;
	o.ncounters = n;
	o.on_chunk = on_chunk;       /* no files: formats = NULL */
	o.user = &t;

	struct spmtap_session *s = NULL;
	rc = spmtap_session_open(&s, &o);
	if (rc < 0) {
		fprintf(stderr, "%s\n", spmtap_session_errmsg(NULL));
		spmtap_devices_close(devs);
		return 1;
	}
	if ((rc = spmtap_session_start(s)) < 0) {
		fprintf(stderr, "start: %s\n", spmtap_session_errmsg(s));
		spmtap_session_close(s);
		spmtap_devices_close(devs);
		return 1;
	}
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);        /* the workload would run here */
	rc = spmtap_session_stop(s); /* stops, drains, then the last callbacks have run */
	if (rc < 0)
		fprintf(stderr, "stop: %s\n", spmtap_session_errmsg(s));
	spmtap_session_close(s);
	spmtap_devices_close(devs);

	for (size_t k = 0; k < n; k++)
		printf("%-24s total %llu (%llu saturated samples)\n", names[k], t.sum[k],
		       t.saturated[k]);
	printf("samples %lu\nchunks %lu\n", t.samples, t.chunks);
	return rc < 0 ? 1 : 0;
}
