/* SPDX-License-Identifier: MIT */
/*
 * report and plot on a merged job recording (spmtap merge's .db): without
 * --node, `report` prints the job summary (collector/analysis/report_job.c);
 * with --node N, report and plot read node N as they read a single
 * recording (rec_load's "PATH#node=N"), on the job's reference timeline.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/report_job.h"
#include "collector/cli/cli.h"

int cli_job_report(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--node") || !strncmp(argv[i], "--node=", 7))
			return -1;
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '-' || !rj_is_merged(argv[i]))
			continue;
		struct rj_report *r = NULL;
		char err[512];
		if (rj_load(argv[i], &r, err, sizeof(err))) {
			fprintf(stderr, "spmtap report: %s: %s\n", argv[i], err);
			return EXIT_FAIL;
		}
		/* --json F (or -): the same as JSON; a table without it */
		const char *jpath = NULL;
		for (int k = 1; k + 1 < argc; k++)
			if (!strcmp(argv[k], "--json"))
				jpath = argv[k + 1];
		int rc = EXIT_OK;
		if (jpath) {
			json_t *j = rj_json(r);
			size_t fl = JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(16);
			if (!j || (!strcmp(jpath, "-") ? json_dumpf(j, stdout, fl) : json_dump_file(j, jpath, fl))) {
				fprintf(stderr, "spmtap report: %s: cannot write\n", jpath);
				rc = EXIT_FAIL;
			}
			json_decref(j);
		}
		if (!jpath || strcmp(jpath, "-"))
			rj_print(stdout, r);
		rj_free(r);
		fflush(stdout);
		return ferror(stdout) ? EXIT_FAIL : rc;
	}
	return -1;
}

int cli_job_node(const char *cmd, int *argc, char ***argv, char **keep)
{
	char **v = *argv;
	int n = *argc, at = -1;
	const char *node = NULL;
	for (int i = 1; i < n; i++) {
		if (!strcmp(v[i], "--node")) {
			if (i + 1 >= n) {
				fprintf(stderr, "spmtap %s: --node needs a node number\n", cmd);
				return EXIT_USAGE;
			}
			node = v[i + 1];
			at = i;
			break;
		}
		if (!strncmp(v[i], "--node=", 7)) {
			node = v[i] + 7;
			at = i;
			break;
		}
	}
	if (at < 0)
		return -1;
	char *end;
	long k = strtol(node, &end, 10);
	if (*end || end == node || k < 0) {
		fprintf(stderr, "spmtap %s: --node %s: a node number (spmtap report MERGED.db lists them)\n", cmd, node);
		return EXIT_USAGE;
	}
	int drop = strcmp(v[at], "--node") ? 1 : 2;
	char **nv = calloc((size_t)n + 1, sizeof(*nv));
	if (!nv)
		return EXIT_FAIL;
	int m = 0;
	bool found = false;
	for (int i = 0; i < n; i++) {
		if (i >= at && i < at + drop)
			continue;
		nv[m] = v[i];
		if (i && !found && v[i][0] != '-' && rj_is_merged(v[i])) {
			size_t l = strlen(v[i]) + 32;
			*keep = malloc(l);
			if (!*keep) {
				free(nv);
				return EXIT_FAIL;
			}
			snprintf(*keep, l, "%s#node=%ld", v[i], k);
			nv[m] = *keep;
			found = true;
		}
		m++;
	}
	if (!found) {
		fprintf(stderr, "spmtap %s: --node: no merged job recording (spmtap merge's .db) among the arguments\n",
			cmd);
		free(nv);
		return EXIT_USAGE;
	}
	*argc = m;
	*argv = nv;
	return 0;
}
