/* SPDX-License-Identifier: MIT */
/*
 * Test helper: programs counters on a GPU from a process of its own, while
 * another process streams them (tests/test_record_spm.c "two_process").
 * It plans the counters, makes a queue with the named submitter, prints
 * "ready", then obeys lines on stdin: "start" submits the start program
 * ("started"), "stop" the stop program ("stopped"); end of input exits.
 * It never touches SPM itself.
 * Usage: spm_program GPU_ID rocr|hsakmt INTERVAL COUNTER...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spm/plan.h"
#include "spm/pm4.h"
#include "spm/spm.h"
#include "spm/submit.h"

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: %s GPU_ID rocr|hsakmt INTERVAL COUNTER...\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	uint32_t gpu_id = (uint32_t)strtoul(argv[1], NULL, 0);
	const struct spm_submitter_ops *ops = spm_submitter_find(argv[2]);
	char err[SPM_ERRLEN];
	struct spm_device *devs = NULL;
	size_t ndev = 0;
	if (!ops || spm_discover(NULL, &devs, &ndev, err, sizeof(err)) < 0) {
		printf("failed discover/submitter\n");
		return 1;
	}
	const struct spm_device *d = NULL;
	for (size_t i = 0; i < ndev; i++)
		if (devs[i].gpu_id == gpu_id)
			d = &devs[i];
	struct spm_geometry geo;
	enum spm_gfx gfx;
	struct spm_plan *plan = NULL;
	struct spm_pm4 start, stop;
	spm_pm4_init(&start);
	spm_pm4_init(&stop);
	struct spm_plan_request req = { .counters = (const char *const *)(argv + 4), .ncounters = (size_t)argc - 4,
					.interval = (uint32_t)strtoul(argv[3], NULL, 0) };
	if (!d || spm_geometry_from_device(d, &geo, &gfx, err, sizeof(err)) < 0) {
		printf("failed no GPU 0x%x\n", gpu_id);
		return 1;
	}
	req.gfx = d->gfx;
	req.geo = geo;
	if (spm_plan_create(&req, &plan, err, sizeof(err)) < 0 || spm_pm4_build_start(plan, &start) ||
	    spm_pm4_build_stop(plan, &stop)) {
		printf("failed plan: %s\n", err);
		return 1;
	}
	struct spm_submitter *s = NULL;
	if (ops->create(&s, d, err, sizeof(err)) < 0) {
		printf("failed submitter: %s\n", err);
		return 1;
	}
	printf("ready\n");
	char line[64];
	while (fgets(line, sizeof(line), stdin)) {
		const struct spm_pm4 *p = !strncmp(line, "start", 5) ? &start : !strncmp(line, "stop", 4) ? &stop : NULL;
		if (!p)
			continue;
		if (ops->submit(s, p->dw, p->n, SPM_SUBMIT_TIMEOUT_MS, err, sizeof(err)) < 0) {
			printf("failed submit: %s\n", err);
			return 1;
		}
		printf("%s\n", p == &start ? "started" : "stopped");
	}
	ops->destroy(s);
	spm_pm4_fini(&start);
	spm_pm4_fini(&stop);
	spm_plan_free(plan);
	free(devs);
	return 0;
}
