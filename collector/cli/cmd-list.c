/* SPDX-License-Identifier: MIT */
/* spmtap list: what GPUs there are and which SPM backends can reach them. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/cli/cli.h"

const char cmd_list_usage[] =
	"usage: spmtap list [--probe] [--spm-backend NAME]\n"
	"\n"
	"List the GPUs KFD reports and the SPM backends, with the reason a backend\n"
	"cannot be used here.\n"
	"\n"
	"  --probe             also acquire SPM on each GPU for a moment to find out\n"
	"                      which kernel generation (A or B) answers; fails on a GPU\n"
	"                      whose SPM another process holds\n"
	"  --spm-backend NAME  backend for --probe (default: the first usable one)\n"
	"\n"
	"Exit status: 0 on success, 1 if discovery fails, 64 on a bad command line.\n";

static void probe_gen(const struct cli_target *t, const struct spm_device *d, char *out, size_t len)
{
	char err[SPM_ERRLEN] = "";
	struct spm_backend *b = NULL;
	struct spm_stream *s = NULL;
	int rc = t->ops->open(&b, t->devs, t->ndev, err, sizeof(err));
	if (rc == 0)
		rc = spm_stream_open(&s, t->ops, b, d, NULL, err, sizeof(err));
	if (rc == 0)
		snprintf(out, len, "%s", spm_gen_name(spm_stream_gen(s)));
	else
		snprintf(out, len, "? (%s)", err[0] ? err : spmtap_strerror(rc));
	spm_stream_close(s);
	if (b)
		t->ops->close(b);
}

int cmd_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "probe", no_argument, NULL, 'p' },
		{ "spm-backend", required_argument, NULL, 'b' },
		{ NULL, 0, NULL, 0 },
	};
	bool probe = false;
	const char *backend = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p': probe = true; break;
		case 'b': backend = optarg; break;
		default:
			fputs(cmd_list_usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "spmtap list: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}

	struct cli_target t;
	int st = cli_target_devices(&t, "list");
	if (st != EXIT_OK)
		return st;
	if (probe && t.ndev) {
		st = cli_target_backend(&t, "list", backend);
		if (st != EXIT_OK) {
			cli_target_free(&t);
			return st;
		}
	}

	printf("GPUs:\n");
	if (!t.ndev)
		printf("  (none: KFD lists no GPU; on a machine without one try --emulate mi300a)\n");
	else
		printf("  %-3s %-8s %-8s %-4s %-5s %-5s %-12s %-28s%s\n", "#", "gpu_id", "gfx", "XCCs",
		       "SE/X", "CUs", "render", "name", probe ? " SPM gen" : "");
	for (size_t i = 0; i < t.ndev; i++) {
		struct spm_device *d = &t.devs[i];
		spm_device_marketing_name(d);
		char render[24], name[200], gen[SPM_ERRLEN + 8] = "";
		snprintf(render, sizeof(render), "renderD%u", d->drm_render_minor);
		if (d->marketing_name[0])
			snprintf(name, sizeof(name), "%s (%s)", d->marketing_name, d->name);
		else
			snprintf(name, sizeof(name), "%s", d->name);
		if (probe)
			probe_gen(&t, d, gen, sizeof(gen));
		printf("  %-3u 0x%-6x %-8s %-4u %-5u %-5u %-12s %-28s%s%s\n", d->index, d->gpu_id, d->gfx,
		       d->num_xcc, d->num_se, d->cu_count, render, name, probe ? " " : "", gen);
	}

	printf("\nSPM backends:\n");
	for (const struct spm_backend_ops *const *o = spm_backends(); *o; o++) {
		char reason[SPM_ERRLEN] = "";
		int rc = (*o)->probe(reason, sizeof(reason));
		printf("  %-7s %-11s %s\n", (*o)->name, rc == 0 ? "available" : "unavailable",
		       (*o)->summary ? (*o)->summary : "");
		if (rc)
			printf("  %-7s \\-> %s\n", "", reason[0] ? reason : spmtap_strerror(rc));
	}
	cli_target_free(&t);
	return EXIT_OK;
}
