/* SPDX-License-Identifier: MIT */
/*
 * Test helper: an application that names its phases with the marker API,
 * from several threads at once, for `spmtap record -- marker_app`.
 * Usage: marker_app THREADS ITERATIONS [SLEEP_US]
 * Thread t runs ITERATIONS times: begin "t<t>/iter" { begin "t<t>/inner<i>" end } end,
 * with SLEEP_US of sleep inside the inner region (default 0).  It prints
 * one line per thread, "t<t> <n> regions", and exits 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "spmtap.h"

static long iters, sleep_us;

static void *run(void *arg)
{
	long t = (long)(intptr_t)arg;
	char outer[32], inner[48];
	snprintf(outer, sizeof(outer), "t%ld/iter", t);
	for (long i = 0; i < iters; i++) {
		spmtap_region_begin(outer);
		snprintf(inner, sizeof(inner), "t%ld/inner%ld", t, i);
		spmtap_region_begin(inner);
		if (sleep_us) {
			struct timespec ts = { 0, sleep_us * 1000 };
			nanosleep(&ts, NULL);
		}
		spmtap_region_end();
		spmtap_region_end();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s THREADS ITERATIONS [SLEEP_US]\n", argv[0]);
		return 2;
	}
	long nt = strtol(argv[1], NULL, 10);
	iters = strtol(argv[2], NULL, 10);
	sleep_us = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
	pthread_t th[64];
	if (nt < 1 || nt > 64)
		return 2;
	for (long t = 0; t < nt; t++)
		pthread_create(&th[t], NULL, run, (void *)(intptr_t)t);
	for (long t = 0; t < nt; t++) {
		pthread_join(th[t], NULL);
		printf("t%ld %ld regions\n", t, 2 * iters);
	}
	return 0;
}
