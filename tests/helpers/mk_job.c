/* SPDX-License-Identifier: MIT */
/*
 * mk_job DIR NODES [SECONDS [SPM_HZ [SMI_HZ [FORMAT]]]]: synthetic node
 * recordings of one job and their truth (tests/lib/synjob.h), for
 * `spmtap merge` by hand and for `make bench` (tests/bench/bench_merge.c).
 * FORMAT: csv, sqlite or both (default sqlite).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synjob.h"

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: mk_job DIR NODES [SECONDS [SPM_HZ [SMI_HZ [csv|sqlite|both]]]]\n");
		return 64;
	}
	const char *f = argc > 6 ? argv[6] : "sqlite";
	struct synjob j = {
		.dir = argv[1],
		.nodes = (unsigned)atoi(argv[2]),
		.seconds = argc > 3 ? atof(argv[3]) : 2.0,
		.spm_hz = argc > 4 ? atof(argv[4]) : 10000.0,
		.smi_hz = argc > 5 ? atof(argv[5]) : 1000.0,
		.phases = 4,
		.csv = !strcmp(f, "csv") || !strcmp(f, "both"),
		.sqlite = !strcmp(f, "sqlite") || !strcmp(f, "both"),
		.no_job_node = -1,
	};
	if (!j.nodes || j.seconds <= 0 || j.spm_hz <= 0 || j.smi_hz <= 0 || (!j.csv && !j.sqlite)) {
		fprintf(stderr, "mk_job: bad arguments\n");
		return 64;
	}
	return synjob_make(&j) ? 1 : 0;
}
