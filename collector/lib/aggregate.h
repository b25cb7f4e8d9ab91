/* SPDX-License-Identifier: MIT */
/*
 * Aggregation between the decoder and a writer: the planner streams every
 * block instance as its own counter (TCC_HIT[0] .. TCC_HIT[15]); a user who
 * asked for TCC_HIT wants one series.  This stage sums the instance columns
 * of each such request into one column, keeping the decoder's chunk type, so
 * writers never know it exists.  A saturated input makes the sum saturated:
 * a sum that silently lost an instance's overflow would be a wrong number.
 */
#ifndef SPMTAP_COLLECTOR_AGGREGATE_H
#define SPMTAP_COLLECTOR_AGGREGATE_H

#include <stdbool.h>
#include <stddef.h>

#include "decoder/decode.h"

struct agg;

/*
 * in/nin: the decoder's columns ("NAME", "NAME[i]", "NAME[seN]",
 * "NAME[i][seN]").  requests: the counter names the user gave (case does not
 * matter); a column NAME[i] is summed into NAME when NAME (without an
 * instance) was requested, and kept when the user named the instance.
 * requests NULL sums every instance column.  per_instance: no sums at all.
 * Chunks go on to sink(user, chunk).  0 or -errno with a sentence.
 */
int agg_open(const struct dec_column *in, uint32_t nin, const char *const *requests, size_t nreq,
	     bool per_instance, dec_sink_fn sink, void *user, struct agg **out, char *err,
	     size_t errlen);
uint32_t agg_ncols(const struct agg *a);
const struct dec_column *agg_columns(const struct agg *a);
/* A dec_sink_fn: `user` is the struct agg. */
int agg_sink(void *user, const struct dec_chunk *chunk);
void agg_close(struct agg *a);

#endif
