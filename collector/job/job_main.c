/* SPDX-License-Identifier: MIT */
/*
 * spmtap-job record --job DIR [record options]: one rank per node
 * (docs/howto-job.md).  `spmtap record --job` execs this program, which is
 * spmtap's record command with MPI around it: spmtap itself links no MPI, so
 * one build runs on a laptop without MPI and on a cluster with the site's.
 * A separate binary rather than dlopen("libmpi.so"): MPI's ABI (handles,
 * datatypes, MPI_Status) differs between Open MPI, MPICH and Cray MPICH, so
 * a dlopen'd MPI would need per-implementation shims; a binary built with the
 * site's mpicc needs none, and is what a site rebuilds against its own MPI.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector/job/job.h"

static const char *launcher(void)
{
	if (getenv("SLURM_STEP_ID") || getenv("SLURM_JOB_ID"))
		return getenv("OMPI_COMM_WORLD_SIZE") ? "mpirun" : "srun";
	return getenv("OMPI_COMM_WORLD_SIZE") ? "mpirun" : "other";
}

/* Rank 0's: the Slurm job, else Open MPI's job id, else a random one; then everyone's. */
static void job_id(struct job *j)
{
	if (j->rank == 0) {
		const char *s = getenv("SLURM_JOB_ID");
		if (!s || !*s)
			s = getenv("OMPI_MCA_ess_base_jobid");
		if (s && *s) {
			snprintf(j->job_id, sizeof(j->job_id), "%s", s);
		} else {
			unsigned char b[8] = { 0 };
			FILE *f = fopen("/dev/urandom", "re");
			if (!f || fread(b, 1, sizeof(b), f) != sizeof(b))
				snprintf(j->job_id, sizeof(j->job_id), "%ld-%ld", (long)getpid(), (long)time(NULL));
			else
				for (int i = 0; i < 8; i++)
					snprintf(j->job_id + 2 * i, 3, "%02x", b[i]);
			if (f)
				fclose(f);
		}
	}
	MPI_Bcast(j->job_id, sizeof(j->job_id), MPI_CHAR, 0, j->comm);
}

/*
 * One rank per node: two ranks on one host name would fight for the node's
 * SPM and read its sensors twice.  SPMTAP_JOB_SHARED_HOST=1 allows it, for
 * tests whose "nodes" share a host name (a test bed with UTS namespaces
 * gives each its own).  Returns 0, or EXIT_USAGE on every rank.
 */
static int one_per_node(struct job *j)
{
	char *all = calloc((size_t)j->size, sizeof(j->host));
	if (!all)
		MPI_Abort(j->comm, 1);
	MPI_Allgather(j->host, sizeof(j->host), MPI_CHAR, all, sizeof(j->host), MPI_CHAR, j->comm);
	const char *ok = getenv("SPMTAP_JOB_SHARED_HOST");
	int dup = -1;
	for (int r = 0; r < j->size && dup < 0; r++)
		for (int q = r + 1; q < j->size; q++)
			if (!strcmp(all + (size_t)r * sizeof(j->host), all + (size_t)q * sizeof(j->host))) {
				dup = r;
				if (j->rank == 0 && !(ok && !strcmp(ok, "1")))
					fprintf(stderr, "spmtap-job: ranks %d and %d are both on %s: run one rank per "
							"node (mpirun --map-by ppr:1:node, srun --ntasks-per-node=1)\n",
						r, q, j->host[0] ? all + (size_t)r * sizeof(j->host) : "?");
				break;
			}
	free(all);
	return dup >= 0 && !(ok && !strcmp(ok, "1")) ? EXIT_USAGE : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "record")) {
		fprintf(stderr, "usage: spmtap-job record --job DIR [spmtap record options]\n"
				"(run by `spmtap record --job DIR ...` under mpirun or srun; docs/howto-job.md)\n");
		return EXIT_USAGE;
	}
	struct job *J = calloc(1, sizeof(*J)); /* large (the offsets): on the heap, passed by pointer */
	if (!J) {
		fprintf(stderr, "spmtap-job: out of memory\n");
		return EXIT_FAIL;
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_dup(MPI_COMM_WORLD, &J->comm);
	MPI_Comm_rank(J->comm, &J->rank);
	MPI_Comm_size(J->comm, &J->size);
	gethostname(J->host, sizeof(J->host) - 1);
	J->launcher = launcher();
	const char *skew = getenv("SPMTAP_EMU_REALTIME_SKEW_NS");
	if (getenv("SPMTAP_EMU_ACTIVE") && skew) /* test-only, under --emulate only (job_sync.c) */
		J->realtime_skew = strtoll(skew, NULL, 10);
	job_hooks_init(J);
	int st = one_per_node(J);
	if (st == 0) {
		job_id(J);
		/* --job DIR, found among the arguments here only to create it before any rank needs it */
		for (int i = 2; i < argc && strcmp(argv[i], "--"); i++) /* not the app's arguments */
			if (!strcmp(argv[i], "--job") && i + 1 < argc)
				J->dir = argv[i + 1];
			else if (!strncmp(argv[i], "--job=", 6))
				J->dir = argv[i] + 6;
		char err[512];
		if (J->dir && J->rank == 0 && session_make_dir(J->dir, err, sizeof(err)) < 0)
			fprintf(stderr, "spmtap-job: --job %s: %s\n", J->dir, err);
		if (!J->dir)
			J->dir = ".";
		st = cmd_record_job(argc - 1, argv + 1, &J->hooks);
		/* a bad command line never reached the start: meet the others there all the same */
		if (!J->started_called)
			J->hooks.started(J, NULL, &(struct rec_opts){ 0 }, false);
	}
	if (!J->aborted)
		MPI_Finalize();
	free(J);
	return st;
}
