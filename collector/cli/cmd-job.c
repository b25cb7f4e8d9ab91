/* SPDX-License-Identifier: MIT */
/*
 * spmtap job stop|env DIR: the job script's side of `spmtap record --job DIR`
 * (docs/howto-job.md, docs/cli/spmtap-job.md).  No MPI here: DIR is the
 * job's control directory, which rank 0 of the recording writes and polls.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/cli/cli.h"

const char cmd_job_usage[] =
	"usage: spmtap job stop DIR\n"
	"       spmtap job env DIR [--timeout T]\n"
	"\n"
	"For a recording started with `spmtap record --job DIR ...` under mpirun or\n"
	"srun (docs/howto-job.md):\n"
	"\n"
	"  stop DIR   ask the job's recording to stop: writes DIR/stop, which rank 0\n"
	"             polls (every 0.1 s); every node stops at one common instant\n"
	"             about 0.2 s later.  DIR must be the directory rank 0 sees.\n"
	"  env DIR    wait until every node records (DIR/job.json, default up to\n"
	"             60 s) and print the value of SPMTAP_JOB for the application:\n"
	"                 export SPMTAP_JOB=$(spmtap job env DIR)\n"
	"             With it, the markers of every application process land in\n"
	"             the recording of the node the process runs on.\n"
	"\n"
	"Exit status: 0 done; 1 no job (env: none came up within the timeout);\n"
	"64 bad command line.\n";

static int job_stop(const char *dir)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/stop", dir);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		fprintf(stderr, "spmtap job stop: %s: %s\n", p, strerror(errno));
		return EXIT_FAIL;
	}
	close(fd);
	snprintf(p, sizeof(p), "%s/job.json", dir);
	if (access(p, F_OK))
		fprintf(stderr, "spmtap job stop: note: %s does not exist (yet): no job is recording there now; "
				"the stop file is left for it (a new job removes it when it starts)\n", p);
	else
		fprintf(stderr, "spmtap job stop: stop requested (%s/stop); the recording ends in about 0.2 s\n",
			dir);
	return EXIT_OK;
}

static int job_env(const char *dir, double timeout_s)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/job.json", dir);
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		json_t *m = json_load_file(p, 0, NULL);
		const char *id = m ? json_string_value(json_object_get(m, "job_id")) : NULL;
		if (id) {
			printf("%s\n", id);
			json_decref(m);
			return EXIT_OK;
		}
		json_decref(m);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 >= timeout_s)
			break;
		struct timespec ts = { 0, 50000000 };
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "spmtap job env: %s: no job recording there after %.0f s (is `spmtap record --job %s` "
			"running?)\n", p, timeout_s, dir);
	return EXIT_FAIL;
}

int cmd_job(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(cmd_job_usage, stdout);
		return EXIT_OK;
	}
	if (argc == 3 && !strcmp(argv[1], "stop"))
		return job_stop(argv[2]);
	if ((argc == 3 || argc == 5) && !strcmp(argv[1], "env")) {
		double ns = 60e9;
		if (argc == 5 && (strcmp(argv[3], "--timeout") || cli_parse_time(argv[4], 1e9, &ns) < 0)) {
			fputs(cmd_job_usage, stderr);
			return EXIT_USAGE;
		}
		return job_env(argv[2], ns / 1e9);
	}
	fputs(cmd_job_usage, stderr);
	return EXIT_USAGE;
}
