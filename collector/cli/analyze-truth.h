/* SPDX-License-Identifier: MIT */
/*
 * What every analysis command (report, characterize, plot, export) does
 * with a recording's truth (recording.h) right after rec_load: print every
 * note on standard error before any output, put it into JSON outputs, and
 * decide the exit status (docs/cli/spmtap.md, docs/analysis.md "What the
 * analysis trusts").
 */
#ifndef SPMTAP_CLI_ANALYZE_TRUTH_H
#define SPMTAP_CLI_ANALYZE_TRUTH_H

#include <jansson.h>
#include <stdbool.h>

#include "collector/analysis/recording.h"

/* sysexits' EX_DATAERR: the input is truncated or disagrees with its metadata. */
#define ANA_EXIT_DATAERR 65

/*
 * Prints "spmtap CMD: NOTE" for every note of r's truth and returns the
 * status the command ends with when everything else went well: 0, or
 * ANA_EXIT_DATAERR when r is truncated or inconsistent and !accept
 * (--accept-truncated); the output is still produced.
 */
int ana_truth(const char *cmd, const struct recording *r, bool accept);

/*
 * rec_load's failure printed ("spmtap CMD: ERR"); the status: ANA_EXIT_DATAERR
 * for a file damaged or cut short (-EBADMSG), else 1.
 */
int ana_load_failed(const char *cmd, int rc, const char *err);

/*
 * {"complete", "truncated", "inconsistent", "notes": [...], "streams":
 * [{"gpu", "xcc" (null for sensors), "source", "rows", "rows_expected"
 * (null: unknown), "lost_samples", "cut_last_row"}]}: the object JSON
 * outputs carry as "truth".  A new reference (NULL without memory).
 */
json_t *ana_truth_json(const struct recording *r);

/* The option every analysis command takes, and its line in their usages. */
#define ANA_ACCEPT_OPTION "accept-truncated"
#define ANA_ACCEPT_USAGE                                                                  \
	"  --accept-truncated  exit 0 although the recording is truncated or disagrees\n" \
	"                    with its metadata (the notes are printed all the same)\n"

#endif
