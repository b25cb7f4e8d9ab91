/* SPDX-License-Identifier: MIT */
/*
 * Fields of one flat JSON line, as the emulator's dispatch truth writes
 * them ({"key":123,"name":"add1",...}: no nesting, no escapes): quick
 * readers for the suites that scan thousands of such lines.
 */
#ifndef SPMTAP_TESTS_JLINE_H
#define SPMTAP_TESTS_JLINE_H

#include <stdbool.h>
#include <stddef.h>

/* The unsigned integer after "key":, false when absent. */
bool jget_u64(const char *line, const char *key, unsigned long long *v);
/* The number after "key":, false when absent. */
bool jget_dbl(const char *line, const char *key, double *v);
/* The string after "key":" up to its closing quote into out (len with the NUL), false when absent or longer. */
bool jget_str(const char *line, const char *key, char *out, size_t len);

#endif
