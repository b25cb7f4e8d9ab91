/* SPDX-License-Identifier: MIT */
/*
 * Synthetic node recordings of one job (for `spmtap merge`'s tests and
 * bench): N recordings written by the real writers (collector/lib/writer.h,
 * CSV and/or SQLite) with NAME_meta.json as the session writes it, each
 * with its own CLOCK_BOOTTIME origin and a "job" object (docs/cli/
 * spmtap-merge.md "Clock") whose offsets describe a known, drifting clock:
 *   reference = local + off0 + drift * (local - origin)
 * (linear, so interpolating the recorded offsets is exact to the ns, and a
 * held offset would be off by drift x distance).  Every node holds an SPM
 * stream (gpu0 xcc0: SQ_WAVES = the phase's level + node, SQ_CYCLES = the
 * sample number), a sensor stream (gpu0: energy in J, power_avg in W) and
 * the job's phases as markers; the phases switch at common reference
 * instants.  truth.json has, per node, the clock, the counts and sums of
 * every column, and the phases' true reference edges.
 */
#ifndef SPMTAP_TESTS_SYNJOB_H
#define SPMTAP_TESTS_SYNJOB_H

#include <stdint.h>

struct synjob {
	const char *dir;      /* nodeK/ (K = rank) under it, and truth.json */
	unsigned nodes;
	double seconds;       /* length of every recording */
	double spm_hz, smi_hz;
	unsigned phases;      /* equal phases over the recording */
	int csv, sqlite;      /* which formats (both: two recordings per node: nodeK/ and nodeK.db) */
	int no_job_node;      /* >= 0: this node's recording has no "job" object (else -1) */
	int kernels;          /* even nodes get kernel dispatches (synjob_kernels); odd ones none */
};

/*
 * Node k's dispatches with kernels set (k even): synjob_ndisp(k) timed ones
 * at known reference instants (truth.json nodes[].dispatches: kernel,
 * queue, start_ns, end_ns, the true reference times of their recorded local
 * instants) named by synjob_kname(i), plus one the tool could not time
 * (status -1, no times, kernel "untimed").  SQLite: kernel_dispatch; CSV:
 * rec_kernels.csv beside.
 */
unsigned synjob_ndisp(unsigned k);
const char *synjob_kname(unsigned i);

/* Write the recordings and truth.json; 0 or -errno with a message on stderr. */
int synjob_make(const struct synjob *j);

/* The true clock of node k: reference = local + off0 + drift * (local - origin). */
int64_t synjob_origin(unsigned k);
int64_t synjob_off0(unsigned k);
double synjob_drift(unsigned k);
int64_t synjob_bound(unsigned k);
/* The job's reference start (rank 0's BOOTTIME at the first sample). */
#define SYNJOB_T0 500000000000ll

#endif
