/* SPDX-License-Identifier: MIT */
/*
 * spmtap merge: node recordings of one job on one timeline
 * (collector/analysis/merge.h, docs/cli/spmtap-merge.md).  The serial path;
 * above MERGE_MPI_THRESHOLD recordings it points to spmtap-merge-mpi
 * (collector/merge/mpi_main.c) unless --serial: spmtap itself does not
 * link MPI.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/merge.h"
#include "collector/cli/cli.h"
#include "log.h"

const char cmd_merge_usage[] =
	"usage: spmtap merge [-d OUTDIR] [-o NAME] [-f sqlite,perfetto,otf2] [--chunk ROWS]\n"
	"                    [--allow-unaligned] [--accept-truncated] [--serial] RECORDING...\n"
	"\n"
	"Put the recordings of a job's nodes (spmtap record --job, one per rank) on\n"
	"one timeline: every time is mapped to rank 0's CLOCK_BOOTTIME through the\n"
	"node's clock offsets (linear interpolation between them), and written to\n"
	"OUTDIR/NAME.db (SQLite: a node table and a node column) and\n"
	"OUTDIR/NAME.pftrace (Perfetto: a process per node, its GPUs and sensors\n"
	"beneath), with OUTDIR/NAME_meta.json.  The clock method and every node's\n"
	"bound are in every output and in the summary.  Memory is bounded by\n"
	"--chunk (rows per stream), not by the job.  An earlier set under NAME is\n"
	"replaced as a whole, as record does; a failed merge leaves it as it was.\n"
	"\n"
	"  -d, --dir, --output-dir OUTDIR  output directory (default .; made if missing)\n"
	"  -o, --output NAME     output name (default merged)\n"
	"  -f, --format LIST     sqlite, perfetto (pftrace), otf2 (an OTF2 archive\n"
	"                        directory OUTDIR/NAME.otf2/), comma-separated\n"
	"                        (default sqlite,perfetto)\n"
	"  --chunk ROWS          rows per stream and chunk (default 4096)\n"
	"  --allow-unaligned     merge recordings without a job object beside job\n"
	"                        recordings: offset 0, bound unknown (\"unaligned\")\n"
	"  --accept-truncated    merge incomplete or truncated recordings\n"
	"  --serial              merge more than 16 recordings in this process\n"
	"                        instead of asking for spmtap-merge-mpi\n"
	"\n"
	"RECORDING: as spmtap report takes it (DIR, DIR/NAME, NAME_meta.json or\n"
	"NAME.db; CSV or SQLite).  Above 16 recordings run the MPI merge:\n"
	"  mpirun -np 4 spmtap-merge-mpi [the same options] RECORDING...\n"
	"Exit status: 0 merged; 1 an input or output error; 64 bad command line.\n";

static int usage_err(const char *msg)
{
	fprintf(stderr, "spmtap merge: %s (spmtap help merge)\n", msg);
	return EXIT_USAGE;
}

int cmd_merge(int argc, char **argv)
{
	enum { O_CHUNK = 256, O_UNALIGNED, O_TRUNC, O_SERIAL, O_HELP };
	static const struct option lo[] = {
		{ "dir", required_argument, NULL, 'd' }, { "output-dir", required_argument, NULL, 'd' },     { "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },  { "chunk", required_argument, NULL, O_CHUNK },
		{ "allow-unaligned", no_argument, NULL, O_UNALIGNED },
		{ "accept-truncated", no_argument, NULL, O_TRUNC },
		{ "serial", no_argument, NULL, O_SERIAL },  { "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct merge_opts o = { .dir = ".", .name = "merged", .sqlite = true, .perfetto = true,
				.chunk = MERGE_CHUNK_DEFAULT };
	bool serial = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "d:o:f:h", lo, NULL)) != -1) {
		switch (c) {
		case 'd': o.dir = optarg; break;
		case 'o': o.name = optarg; break;
		case 'f': {
			o.sqlite = o.perfetto = o.otf2 = false;
			char *dup = strdup(optarg), *save = NULL;
			for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				if (!strcmp(t, "sqlite"))
					o.sqlite = true;
				else if (!strcmp(t, "perfetto") || !strcmp(t, "pftrace"))
					o.perfetto = true;
				else if (!strcmp(t, "otf2"))
					o.otf2 = true;
				else {
					char m[160];
					snprintf(m, sizeof(m), "-f %s: merge writes sqlite, perfetto and otf2", t);
					free(dup);
					return usage_err(m);
				}
			}
			free(dup);
			break;
		}
		case O_CHUNK: {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || v < 1 || v > (1ul << 22))
				return usage_err("--chunk: a number of rows, 1 to 4194304");
			o.chunk = (uint32_t)v;
			break;
		}
		case O_UNALIGNED: o.allow_unaligned = true; break;
		case O_TRUNC: o.accept_truncated = true; break;
		case O_SERIAL: serial = true; break;
		case 'h':
		case O_HELP: fputs(cmd_merge_usage, stdout); return EXIT_OK;
		default: return EXIT_USAGE;
		}
	}
	size_t n = (size_t)(argc - optind);
	if (!n)
		return usage_err("no recording to merge");
	if (n > MERGE_MPI_THRESHOLD && !serial) {
		fprintf(stderr,
			"spmtap merge: %zu recordings, more than %d: run the MPI merge, e.g.\n"
			"  mpirun -np 4 spmtap-merge-mpi [options] RECORDING...\n"
			"(spmtap-merge-mpi beside spmtap; the same options and outputs), or add --serial to merge "
			"them in this one process\n",
			n, MERGE_MPI_THRESHOLD);
		return EXIT_USAGE;
	}
	/* the command line, for the outputs' metadata */
	size_t cl = 16;
	for (int i = 0; i < argc; i++)
		cl += strlen(argv[i]) + 1;
	char *cmdline = malloc(cl);
	if (cmdline) {
		cmdline[0] = 0;
		for (int i = 0; i < argc; i++)
			strcat(strcat(cmdline, i ? " " : ""), argv[i]);
	}
	o.command_line = cmdline;

	struct mg_node *nodes = calloc(n, sizeof(*nodes));
	struct mg_summary_row *rows = calloc(n, sizeof(*rows));
	char err[1024] = "";
	int rc = nodes && rows ? 0 : -ENOMEM;
	for (size_t i = 0; !rc && i < n; i++)
		rc = mg_node_open(&nodes[i], argv[optind + (int)i], (uint32_t)i, err, sizeof(err));
	if (!rc)
		rc = mg_nodes_check(nodes, n, &o, err, sizeof(err));
	struct mg_out *out = NULL;
	if (!rc)
		rc = mg_out_open(&out, &o, nodes, n, err, sizeof(err));
	if (!rc) {
		struct mg_sink sink = mg_out_sink(out);
		for (size_t i = 0; !rc && i < n; i++) {
			rows[i].node = &nodes[i];
			rc = mg_node_emit(&nodes[i], o.chunk, o.accept_truncated, &sink, &rows[i].st, err, sizeof(err));
		}
		char e2[1024] = "";
		int crc = mg_out_close(out, rc == 0, e2, sizeof(e2));
		if (!rc && crc) {
			rc = crc;
			snprintf(err, sizeof(err), "%s", e2);
		}
	}
	if (rc) {
		fprintf(stderr, "spmtap merge: %s\n", *err ? err : strerror(-rc));
	} else {
		for (size_t i = 0; i < n; i++)
			if (!nodes[i].job)
				fprintf(stderr, "spmtap merge: %s has no job object: merged with offset 0, bound unknown "
						"(unaligned)\n", nodes[i].path);
		mg_summary_print(stdout, rows, n);
		for (size_t i = 0; i < mg_out_nfiles(out); i++)
			printf("spmtap merge: wrote %s\n", mg_out_file(out, i));
	}
	mg_out_free(out);
	for (size_t i = 0; nodes && i < n; i++)
		mg_node_free(&nodes[i]);
	free(nodes);
	free(rows);
	free(cmdline);
	return rc ? EXIT_FAIL : EXIT_OK;
}
