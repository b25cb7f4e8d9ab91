/* SPDX-License-Identifier: MIT */
/*
 * Test helper: one rank of a job's application step (test_job, the job test
 * bed).  job_marker_app OUTDIR N SLEEP_US: N regions named "<host>/r<i>",
 * each opened and closed with the marker API (joining the node's recording
 * through SPMTAP_JOB), SLEEP_US apart.  Each marker call is bracketed by two
 * reads of the machine's CLOCK_REALTIME, which the test bed's namespaces do
 * not offset: the truth shared by every "node".  OUTDIR/<host>.txt gets one
 * line per call: "begin|end I REALTIME_BEFORE REALTIME_AFTER".
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "spmtap.h"

static long long rt(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: job_marker_app OUTDIR N SLEEP_US\n");
		return 64;
	}
	char host[256] = "", path[4096], name[320];
	gethostname(host, sizeof(host) - 1);
	snprintf(path, sizeof(path), "%s/%s.txt", argv[1], host);
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		return 1;
	}
	long n = strtol(argv[2], NULL, 10), us = strtol(argv[3], NULL, 10);
	for (long i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s/r%ld", host, i);
		long long a = rt();
		spmtap_region_begin(name);
		long long b = rt();
		struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
		nanosleep(&ts, NULL);
		long long c = rt();
		spmtap_region_end();
		long long d = rt();
		fprintf(f, "begin %ld %lld %lld\nend %ld %lld %lld\n", i, a, b, i, c, d);
		nanosleep(&ts, NULL);
	}
	return fclose(f) ? 1 : 0;
}
