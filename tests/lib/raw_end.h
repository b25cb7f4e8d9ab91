/* SPDX-License-Identifier: MIT */
/* The end/summary record of a raw container (docs/raw-format.md), for tests. */
#ifndef SPMTAP_TESTS_RAW_END_H
#define SPMTAP_TESTS_RAW_END_H

#include <jansson.h>

/* The last end record's JSON object (the caller's reference), or NULL when the file has none. */
json_t *raw_end_json(const char *raw);

#endif
