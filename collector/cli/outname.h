/* SPDX-License-Identifier: MIT */
/*
 * Where `spmtap record` writes (docs/cli/spmtap-record.md "Outputs"):
 * rocprofv3's placeholders in -d and -o, and -d/-o resolved into one
 * directory and one NAME without a format's extension.
 */
#ifndef SPMTAP_CLI_OUTNAME_H
#define SPMTAP_CLI_OUTNAME_H

#include <stddef.h>
#include <time.h>

/*
 * What the placeholders stand for, read once per run so that -d and -o
 * agree (one launch time).  outname_env_init fills it from this process.
 */
struct outname_env {
	char hostname[256];
	long pid;
	time_t launch;
};

void outname_env_init(struct outname_env *e);

/*
 * spec with rocprofv3's placeholders replaced: %hostname% (%h), %pid% (%p),
 * %rank% (%r: OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, else 0),
 * %job% (%j: SLURM_JOB_ID, PBS_JOBID, else the pid), %launch_time%
 * (YYYY_MM_DD_HH.MM.SS, local time, as rocprofv3), %env{NAME}% and
 * $env{NAME} (empty when unset); "%%" is one '%'.  Anything else after a
 * '%' is an error.  malloc'd; NULL with -errno in *rc and a sentence in err.
 */
char *outname_expand(const char *spec, const struct outname_env *e, int *rc, char *err, size_t errlen);

/*
 * -d DIR (NULL: ".") and -o OUT (NULL: "spmtap"), already expanded, into
 * the directory and the NAME the -f writers append their suffixes to:
 * an absolute OUT ignores DIR, a relative one is under DIR; a trailing
 * extension of any -f format (.csv, .db, .pftrace) is dropped, so
 * "-o results.db" writes results.db.  malloc'd; 0 or -EINVAL with why.
 */
int outname_resolve(const char *dir, const char *out, char **dir_out, char **name_out, char *err,
		    size_t errlen);

#endif
