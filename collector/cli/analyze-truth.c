/* SPDX-License-Identifier: MIT */
/* A recording's truth on standard error, in JSON and in the exit status (analyze-truth.h). */
#include <errno.h>
#include <stdio.h>

#include "collector/cli/analyze-truth.h"

int ana_truth(const char *cmd, const struct recording *r, bool accept)
{
	for (size_t i = 0; i < r->truth.nnotes; i++)
		fprintf(stderr, "spmtap %s: %s\n", cmd, r->truth.notes[i]);
	if (!r->truth.truncated && !r->truth.inconsistent)
		return 0;
	if (accept)
		return 0;
	fprintf(stderr, "spmtap %s: the results cover only what the files hold; exit status %d (--accept-truncated "
			"accepts the recording as it is)\n",
		cmd, ANA_EXIT_DATAERR);
	return ANA_EXIT_DATAERR;
}

int ana_load_failed(const char *cmd, int rc, const char *err)
{
	fprintf(stderr, "spmtap %s: %s\n", cmd, err);
	return rc == -EBADMSG ? ANA_EXIT_DATAERR : 1;
}

static json_t *table_json(uint32_t gpu, int xcc, const struct rec_table *t)
{
	return json_pack("{s:I, s:o, s:s, s:I, s:o, s:I, s:b}", "gpu", (json_int_t)gpu, "xcc",
			 xcc < 0 ? json_null() : json_integer(xcc), "source", xcc < 0 ? "smi" : "spm", "rows",
			 (json_int_t)t->n, "rows_expected",
			 t->rows_expected < 0 ? json_null() : json_integer(t->rows_expected), "lost_samples",
			 (json_int_t)t->lost_samples, "cut_last_row", t->cut_last_row);
}

json_t *ana_truth_json(const struct recording *r)
{
	json_t *notes = json_array(), *streams = json_array();
	for (size_t i = 0; notes && i < r->truth.nnotes; i++)
		json_array_append_new(notes, json_string(r->truth.notes[i]));
	for (uint32_t g = 0; streams && g < r->ngpu; g++) {
		const struct rec_gpu *gp = &r->gpu[g];
		for (uint32_t x = 0; x < gp->nspm; x++)
			if (gp->spm[x].cols)
				json_array_append_new(streams, table_json(gp->index, (int)x, &gp->spm[x]));
		if (gp->smi.cols)
			json_array_append_new(streams, table_json(gp->index, -1, &gp->smi));
	}
	return json_pack("{s:b, s:b, s:b, s:o, s:o}", "complete", !r->truth.incomplete, "truncated",
			 r->truth.truncated, "inconsistent", r->truth.inconsistent, "notes", notes, "streams", streams);
}
