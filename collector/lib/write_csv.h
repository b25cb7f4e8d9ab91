/* SPDX-License-Identifier: MIT */
/*
 * Streaming CSV writer for decoder chunks (docs/decode-csv.md): one header
 * line, then one row per sample; a saturated value is an empty cell.  Memory
 * is one fixed output buffer whatever the stream length.
 */
#ifndef SPMTAP_COLLECTOR_WRITE_CSV_H
#define SPMTAP_COLLECTOR_WRITE_CSV_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/decode.h"

/* Put an "xcc" column first (for streams of several XCCs in one file). */
#define CSV_XCC_COLUMN (1u << 0)

struct csv_writer;

/* Write to fd (not closed by the writer).  Returns 0 or -ENOMEM. */
int csv_open_fd(int fd, unsigned int flags, struct csv_writer **out);
/* The header: [xcc,]timestamp,<column names>.  Columns must match later chunks. */
int csv_begin(struct csv_writer *w, const struct dec_column *cols, uint32_t ncols);
int csv_write(struct csv_writer *w, const struct dec_chunk *chunk);
/* Flush what is buffered.  Returns 0 or the first write error (-errno). */
int csv_end(struct csv_writer *w);
/* A dec_sink_fn: `user` is the struct csv_writer. */
int csv_sink(void *user, const struct dec_chunk *chunk);
/* The first error as a sentence ("write: No space left on device"), or "". */
const char *csv_error(const struct csv_writer *w);
uint64_t csv_rows(const struct csv_writer *w);
void csv_close(struct csv_writer *w);

/*
 * The cell formatters of both CSV writers (no printf on a per-sample path,
 * issue 15): each writes at p, without a terminating NUL, and returns the
 * length.  The bytes are exactly printf's ("%" PRIu64, "%" PRId64, and for
 * doubles the shortest of "%.15g", "%.16g", "%.17g" that reads back as the
 * same double), which tests/test_write_csv.c checks against snprintf.
 */
#define CSV_U64_MAX 20u /* 18446744073709551615 */
#define CSV_I64_MAX 20u /* -9223372036854775808 */
#define CSV_F64_MAX 32u /* -2.2250738585072014e-308, "-nan" */
size_t csv_fmt_u64(char *p, uint64_t v);
size_t csv_fmt_i64(char *p, int64_t v);
/*
 * csv_fmt_u64's text of v, with the digits above the last six copied from the
 * previous call's when they are the same: a stream's times (ns, ticks) share
 * them from row to row, so a 16-digit time costs three pairs of digits, not
 * eight.  Start with a zeroed struct (hi 0 never matches a v of 10^6 or more).
 * Writes up to 16 bytes beyond the text's end (the caller's row room).
 */
struct csv_prefix {
	uint64_t hi;
	unsigned int len;
	char d[24];
};
size_t csv_fmt_u64_near(char *p, uint64_t v, struct csv_prefix *c);
size_t csv_fmt_f64(char *p, double v);

#endif
