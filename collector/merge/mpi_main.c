/* SPDX-License-Identifier: MIT */
/*
 * spmtap-merge-mpi: `spmtap merge` as an MPI job, for more recordings than
 * MERGE_MPI_THRESHOLD (docs/cli/spmtap-merge.md "Many nodes").  spmtap
 * itself does not link MPI; this binary does (mpicc).
 *
 *   mpirun -np P spmtap-merge-mpi [-d OUTDIR] [-o NAME] [-f ...] RECORDING...
 *
 * Every rank reads every input's metadata (small) and checks the set as the
 * serial merge does, so all agree on the node order.  Rank r then reads,
 * time-maps and writes nodes r, r+P, r+2P, ... into node-ordered chunk
 * files (merge_spill.c) in a private directory under OUTDIR (a file system
 * every rank sees); rank 0 replays them, node after node, into the outputs
 * (merge_out.c).  The reading, parsing and time mapping -- the expensive
 * part with CSV inputs -- runs on P ranks; the writing is serial because
 * both outputs are single files.  The outputs are the serial merge's:
 * the same calls reach the writers in the same order.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/analysis/merge.h"

#define ERRLEN 1024

static const char usage[] =
	"usage: mpirun -np P spmtap-merge-mpi [-d OUTDIR] [-o NAME] [-f sqlite,perfetto,otf2] [--chunk ROWS]\n"
	"                                     [--allow-unaligned] [--accept-truncated] RECORDING...\n"
	"spmtap merge as an MPI job (docs/cli/spmtap-merge.md); the same options and outputs.\n";

static int parse(int argc, char **argv, struct merge_opts *o)
{
	enum { O_CHUNK = 256, O_UNALIGNED, O_TRUNC, O_SERIAL };
	static const struct option lo[] = {
		{ "dir", required_argument, NULL, 'd' }, { "output-dir", required_argument, NULL, 'd' },    { "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' }, { "chunk", required_argument, NULL, O_CHUNK },
		{ "allow-unaligned", no_argument, NULL, O_UNALIGNED },
		{ "accept-truncated", no_argument, NULL, O_TRUNC },
		{ "serial", no_argument, NULL, O_SERIAL },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "d:o:f:", lo, NULL)) != -1) {
		switch (c) {
		case 'd': o->dir = optarg; break;
		case 'o': o->name = optarg; break;
		case 'f':
			o->sqlite = strstr(optarg, "sqlite") != NULL;
			o->perfetto = strstr(optarg, "perfetto") || strstr(optarg, "pftrace");
			o->otf2 = strstr(optarg, "otf2") != NULL;
			if (!o->sqlite && !o->perfetto && !o->otf2)
				return -1;
			break;
		case O_CHUNK: {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || v < 1 || v > (1ul << 22))
				return -1;
			o->chunk = (uint32_t)v;
			break;
		}
		case O_UNALIGNED: o->allow_unaligned = true; break;
		case O_TRUNC: o->accept_truncated = true; break;
		case O_SERIAL: break;
		default: return -1;
		}
	}
	return optind < argc ? 0 : -1;
}

/* Every rank's rc: the first failing rank's message reaches rank 0 (printed there). */
static int agree(int rc, const char *err, int rank, int size)
{
	int bad = rc != 0, any = 0;
	MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (!any)
		return 0;
	char *all = rank == 0 ? calloc((size_t)size, ERRLEN) : NULL;
	char mine[ERRLEN];
	snprintf(mine, sizeof(mine), "%s", bad ? err : "");
	MPI_Gather(mine, ERRLEN, MPI_CHAR, all, ERRLEN, MPI_CHAR, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		for (int r = 0; r < size; r++)
			if (all && all[(size_t)r * ERRLEN]) {
				fprintf(stderr, "spmtap-merge-mpi: %s\n", &all[(size_t)r * ERRLEN]);
				break;
			}
		free(all);
	}
	return -1;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	struct merge_opts o = { .dir = ".", .name = "merged", .sqlite = true, .perfetto = true,
				.chunk = MERGE_CHUNK_DEFAULT };
	if (parse(argc, argv, &o)) {
		if (rank == 0)
			fputs(usage, stderr);
		MPI_Finalize();
		return 64;
	}
	size_t cl = 16;
	for (int i = 0; i < argc; i++)
		cl += strlen(argv[i]) + 1;
	char *cmdline = calloc(1, cl);
	for (int i = 0; cmdline && i < argc; i++)
		strcat(strcat(cmdline, i ? " " : ""), i ? argv[i] : "spmtap-merge-mpi");
	o.command_line = cmdline;

	size_t n = (size_t)(argc - optind);
	struct mg_node *nodes = calloc(n, sizeof(*nodes));
	struct mg_node_stats *st = calloc(n, sizeof(*st));
	char err[ERRLEN] = "";
	int rc = nodes && st ? 0 : -ENOMEM;
	for (size_t i = 0; !rc && i < n; i++)
		rc = mg_node_open(&nodes[i], argv[optind + (int)i], (uint32_t)i, err, sizeof(err));
	if (!rc)
		rc = mg_nodes_check(nodes, n, &o, err, sizeof(err));
	/* rank 0 also checks the outputs before anyone reads: a refusal there costs nothing */
	struct mg_out *out = NULL;
	if (!rc && rank == 0)
		rc = mg_out_open(&out, &o, nodes, n, err, sizeof(err));
	char spill[PATH_MAX] = "";
	if (!rc && rank == 0) {
		snprintf(spill, sizeof(spill), "%s/.%s.merge-XXXXXX", o.dir, o.name);
		if (!mkdtemp(spill)) {
			rc = -errno;
			snprintf(err, sizeof(err), "%s: %s", spill, strerror(errno));
		}
	}
	if (agree(rc, err, rank, size)) {
		rc = 1;
		goto done;
	}
	MPI_Bcast(spill, sizeof(spill), MPI_CHAR, 0, MPI_COMM_WORLD);

	/* this rank's share: nodes rank, rank+size, ... into chunk files */
	for (size_t i = (size_t)rank; !rc && i < n; i += (size_t)size) {
		char p[PATH_MAX + 32];
		snprintf(p, sizeof(p), "%s/node-%zu.bin", spill, i);
		struct mg_spill *sp = NULL;
		rc = mg_spill_open(&sp, p, err, sizeof(err));
		if (rc)
			break;
		struct mg_sink sink = mg_spill_sink(sp);
		rc = mg_node_emit(&nodes[i], o.chunk, o.accept_truncated, &sink, &st[i], err, sizeof(err));
		char e2[ERRLEN];
		int crc = mg_spill_close(sp, e2, sizeof(e2));
		if (!rc && crc) {
			rc = crc;
			snprintf(err, sizeof(err), "%s", e2);
		}
	}
	int failed = agree(rc, err, rank, size);
	/* the counts to rank 0 for the summary: each node's are non-zero on one rank only */
	uint64_t *cnt = calloc(3 * (n ? n : 1), sizeof(uint64_t)), *sum = calloc(3 * (n ? n : 1), sizeof(uint64_t));
	for (size_t i = 0; cnt && i < n; i++) {
		cnt[3 * i] = st[i].samples;
		cnt[3 * i + 1] = st[i].slices;
		cnt[3 * i + 2] = st[i].truncated;
	}
	MPI_Reduce(cnt, sum, (int)(3 * n), MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
	rc = failed ? 1 : 0;
	if (rank == 0) {
		struct mg_sink sink = mg_out_sink(out);
		for (size_t i = 0; !rc && i < n; i++) {
			char p[PATH_MAX + 32];
			snprintf(p, sizeof(p), "%s/node-%zu.bin", spill, i);
			if (mg_spill_replay(p, &sink, err, sizeof(err))) {
				fprintf(stderr, "spmtap-merge-mpi: %s\n", err);
				rc = 1;
			}
		}
		char e2[ERRLEN];
		if (mg_out_close(out, rc == 0, e2, sizeof(e2)) && !rc) {
			fprintf(stderr, "spmtap-merge-mpi: %s\n", e2);
			rc = 1;
		}
		for (size_t i = 0; i < n; i++) {
			char p[PATH_MAX + 32];
			snprintf(p, sizeof(p), "%s/node-%zu.bin", spill, i);
			unlink(p);
		}
		rmdir(spill);
		if (!rc) {
			struct mg_summary_row *rows = calloc(n, sizeof(*rows));
			for (size_t i = 0; rows && i < n; i++) {
				rows[i].node = &nodes[i];
				rows[i].st.samples = sum[3 * i];
				rows[i].st.slices = sum[3 * i + 1];
				rows[i].st.truncated = sum[3 * i + 2] != 0;
			}
			if (rows)
				mg_summary_print(stdout, rows, n);
			free(rows);
			for (size_t i = 0; i < mg_out_nfiles(out); i++)
				printf("spmtap-merge-mpi: wrote %s (%d ranks)\n", mg_out_file(out, i), size);
		}
	}
	free(cnt);
	free(sum);
	MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
done:
	if (rank == 0 && rc && spill[0])
		rmdir(spill); /* a refusal after it was made: it is still empty */
	mg_out_free(out);
	for (size_t i = 0; nodes && i < n; i++)
		mg_node_free(&nodes[i]);
	free(nodes);
	free(st);
	free(cmdline);
	MPI_Finalize();
	return rc;
}
