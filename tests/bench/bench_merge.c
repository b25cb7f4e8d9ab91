/* SPDX-License-Identifier: MIT */
/*
 * spmtap merge of a job's synthetic node recordings (tests/helpers/mk_job,
 * tests/lib/synjob.h): time and peak RSS of the merge process (wait4's
 * rusage), for a job of --nodes recordings of --seconds, then of 2 x
 * --seconds: the RSS should stay flat, as merge's memory is bounded by its
 * chunk size, not by the job.  Also spmtap-merge-mpi under mpirun -np 2
 * where it is built (its time only: wait4 sees mpirun, not the ranks).
 * key=value lines; never fails on a timing.
 *
 *   build/bench/bench_merge [--nodes 64] [--seconds 2] [--spm-hz 10000] [--smi-hz 1000] [--dir DIR] [--keep]
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Run argv; its wall time and its (and its children's, for mpirun) peak RSS in KiB. */
static int run(char *const *argv, double *wall, long *rss_kib, const char *log)
{
	fflush(stdout); /* or the child's exit flushes our buffer a second time */
	double t0 = now_s();
	pid_t p = fork();
	if (p == 0) {
		if (log && freopen(log, "w", stdout) == NULL)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	int st;
	struct rusage ru;
	if (p < 0 || wait4(p, &st, 0, &ru) != p)
		return -1;
	*wall = now_s() - t0;
	*rss_kib = ru.ru_maxrss;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static long dir_bytes(const char *d)
{
	char cmd[PATH_MAX + 32];
	snprintf(cmd, sizeof(cmd), "du -sk '%s'", d);
	FILE *f = popen(cmd, "r");
	long k = 0;
	if (f && fscanf(f, "%ld", &k) != 1)
		k = 0;
	if (f)
		pclose(f);
	return k * 1024;
}

int main(int argc, char **argv)
{
	int nodes = 64;
	double seconds = 2, spm_hz = 10000, smi_hz = 1000;
	const char *base = NULL;
	int keep = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
			nodes = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--spm-hz") && i + 1 < argc)
			spm_hz = atof(argv[++i]);
		else if (!strcmp(argv[i], "--smi-hz") && i + 1 < argc)
			smi_hz = atof(argv[++i]);
		else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			base = argv[++i];
		else if (!strcmp(argv[i], "--keep"))
			keep = 1;
		else {
			fprintf(stderr, "usage: bench_merge [--nodes N] [--seconds S] [--spm-hz HZ] [--smi-hz HZ] [--dir D] [--keep]\n");
			return 64;
		}
	}
	const char *b = getenv("B") ? getenv("B") : "build";
	char tmp[PATH_MAX];
	if (base)
		snprintf(tmp, sizeof(tmp), "%s", base);
	else {
		snprintf(tmp, sizeof(tmp), "/tmp/spmtap-bench-merge-XXXXXX");
		if (!mkdtemp(tmp))
			return 1;
	}
	char mk[PATH_MAX], cli[PATH_MAX], mpi[PATH_MAX];
	snprintf(mk, sizeof(mk), "%s/tests/helpers/mk_job", b);
	snprintf(cli, sizeof(cli), "%s/spmtap", b);
	snprintf(mpi, sizeof(mpi), "%s/spmtap-merge-mpi", b);
	printf("nodes=%d\nspm_hz=%.0f\nsmi_hz=%.0f\n", nodes, spm_hz, smi_hz);
	int rc = 0;
	for (int pass = 0; pass < 2 && !rc; pass++) {
		double s = seconds * (pass + 1);
		char job[PATH_MAX + 32], ns[16], ss[32], h1[32], h2[32];
		snprintf(job, sizeof(job), "%s/job%d", tmp, pass);
		snprintf(ns, sizeof(ns), "%d", nodes);
		snprintf(ss, sizeof(ss), "%g", s);
		snprintf(h1, sizeof(h1), "%g", spm_hz);
		snprintf(h2, sizeof(h2), "%g", smi_hz);
		char *gen[] = { mk, job, ns, ss, h1, h2, "sqlite", NULL };
		double w;
		long r;
		if (run(gen, &w, &r, NULL)) {
			fprintf(stderr, "bench_merge: %s failed\n", mk);
			rc = 1;
			break;
		}
		/* the arguments: --serial, -d, -o, every node's .db */
		char **av = calloc((size_t)nodes + 12, sizeof(char *));
		char **paths = calloc((size_t)nodes, sizeof(char *));
		int k = 0;
		av[k++] = cli;
		av[k++] = "merge";
		av[k++] = "--serial";
		av[k++] = "-d";
		av[k++] = job;
		av[k++] = "-o";
		av[k++] = "merged";
		for (int i = 0; i < nodes; i++) {
			paths[i] = malloc(PATH_MAX + 64);
			snprintf(paths[i], PATH_MAX + 64, "%s/node%d/rec.db", job, i);
			av[k++] = paths[i];
		}
		char log[PATH_MAX + 32];
		snprintf(log, sizeof(log), "%s/merge.log", job);
		double wall;
		long rss;
		int mrc = run(av, &wall, &rss, log);
		uint64_t rows = (uint64_t)(nodes * (s * spm_hz + s * smi_hz + 2));
		printf("pass%d.seconds=%g\npass%d.rows=%llu\npass%d.input_bytes=%ld\npass%d.serial_rc=%d\n"
		       "pass%d.serial_wall_s=%.3f\npass%d.serial_peak_rss_kib=%ld\npass%d.serial_rows_per_s=%.0f\n",
		       pass, s, pass, (unsigned long long)rows, pass, dir_bytes(job), pass, mrc, pass, wall, pass, rss,
		       pass, rows / wall);
		if (mrc)
			rc = 1;
		if (access(mpi, X_OK) == 0 && access("/usr/bin/mpirun", X_OK) == 0) {
			char *mv[nodes + 16];
			int m = 0;
			mv[m++] = "/usr/bin/mpirun";
			mv[m++] = "--allow-run-as-root";
			mv[m++] = "--oversubscribe";
			mv[m++] = "-np";
			mv[m++] = "2";
			mv[m++] = mpi;
			mv[m++] = "-d";
			mv[m++] = job;
			mv[m++] = "-o";
			mv[m++] = "merged_mpi";
			for (int i = 0; i < nodes; i++)
				mv[m++] = paths[i];
			mv[m] = NULL;
			int prc = run(mv, &wall, &rss, log);
			printf("pass%d.mpi2_rc=%d\npass%d.mpi2_wall_s=%.3f\n", pass, prc, pass, wall);
		}
		for (int i = 0; i < nodes; i++)
			free(paths[i]);
		free(paths);
		free(av);
		fflush(stdout);
	}
	if (!keep && !base) {
		char cmd[PATH_MAX + 16];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
		if (system(cmd))
			rc = rc ? rc : 1;
	}
	return rc;
}
