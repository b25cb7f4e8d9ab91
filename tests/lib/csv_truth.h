/* SPDX-License-Identifier: MIT */
/*
 * Recorded CSV rows against the emulator's per-sample truth
 * ($SPMTAP_EMU_SAMPLE_TRUTH, spm_truth.h): `spmtap decode`'s
 * (xcc,timestamp,...) or -f csv's (gpu,xcc,host_ns,gpu_ticks,...) rows, each
 * matched to the truth sample of the same XCC and timestamp, values compared
 * cell by cell through the catalog's counter definitions.
 */
#ifndef SPMTAP_TESTS_CSV_TRUTH_H
#define SPMTAP_TESTS_CSV_TRUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decoder/frame.h"
#include "spm_truth.h"
#include "spm/catalog.h"

struct csv {
	char **names;
	uint32_t ncols; /* after xcc,timestamp */
	size_t nrows;
	uint32_t *xcc;
	uint64_t *ts;
	int64_t *v; /* [row * ncols + c]; -1 = empty (saturated) */
	bool whole; /* every line ends in \n and has the header's field count */
};

struct match {
	size_t rows, matched, mismatched_cells, unmatched_rows, truth_samples, missing;
	size_t duplicates; /* rows whose truth sample an earlier row matched already */
	size_t leading, trailing;
	size_t trailing_dropped; /* of trailing: dropped whole by the kernel (ST_STALLED, ST_DISCARDED) */
	uint64_t missing_per_xcc[DEC_MAX_XCC];
	uint64_t trailing_dropped_per_xcc[DEC_MAX_XCC];
	char first[512];
};

void csv_free(struct csv *c);
/*
 * Append the rows of a CSV to c (zeroed before the first file); the first
 * file's columns name them and a later one must have the same.  False when
 * the file cannot be read; c->whole says whether every row parsed.
 */
bool csv_load(const char *file, struct csv *c);
/*
 * Every CSV row must be a truth sample (same XCC and timestamp) with equal
 * values; truth samples of this GPU the CSV lacks are counted per XCC.
 */
void match_csv(const struct csv *c, struct truth *t, uint32_t gpu_id, const struct spm_catalog *cat,
	       struct match *m);

#endif
