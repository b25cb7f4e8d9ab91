/* SPDX-License-Identifier: MIT */
/*
 * `spmtap report` on a merged job recording (spmtap merge's SQLite,
 * docs/formats/sqlite.md "Merged job recordings"): per phase name, every
 * node's energy (its energy counter interpolated at the node's own phase
 * edges, on the reference timeline), mean power and SPM counter totals,
 * and their sums over the job.  Read by SQL range queries on each stream's
 * table (one seek per edge), so memory does not grow with the job.
 */
#ifndef SPMTAP_ANALYSIS_REPORT_JOB_H
#define SPMTAP_ANALYSIS_REPORT_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RJ_MAX_COUNTERS 32

struct rj_cell {
	uint32_t node;
	int64_t start_ns, end_ns;
	double energy_j;  /* NAN: no energy counter around both edges */
	double mean_w;
	uint64_t samples; /* SPM samples in [start, end) */
	double counter[RJ_MAX_COUNTERS]; /* totals over the node's XCC streams; NAN: none */
};

struct rj_phase {
	char *name;
	struct rj_cell *cell; /* one per node that has the phase */
	size_t ncell;
	double energy_j;      /* summed over the nodes (NAN when a node has none) */
	double counter[RJ_MAX_COUNTERS];
	int64_t start_spread_ns; /* latest minus earliest start across the nodes */
};

struct rj_node {
	uint32_t node;
	int32_t rank;
	char hostname[64];
	char clock_method[64];
	int64_t max_bound_ns; /* -1: unknown */
};

struct rj_report {
	struct rj_node *node;
	size_t nnode;
	char *counter[RJ_MAX_COUNTERS]; /* SPM counter names */
	size_t ncounter;
	struct rj_phase *phase;
	size_t nphase;
};

/* Whether path (a file) is a merged job recording: a SQLite file with a node table. */
bool rj_is_merged(const char *path);
int rj_load(const char *db, struct rj_report **out, char *err, size_t errlen);
void rj_free(struct rj_report *r);
void rj_print(FILE *f, const struct rj_report *r);
/* The same as JSON ("nodes", "counters", "phases": per phase "nodes" and "job"); NAN as null. */
struct json_t;
struct json_t *rj_json(const struct rj_report *r);

#endif
