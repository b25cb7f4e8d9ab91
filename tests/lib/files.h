/* SPDX-License-Identifier: MIT */
/* Reading files back in a test: the one copy of what suites used to call slurp(). */
#ifndef SPMTAP_TEST_FILES_H
#define SPMTAP_TEST_FILES_H

#include <stddef.h>
#include <sys/types.h>

/*
 * The whole file, NUL-terminated (the terminator is not counted), malloc'd;
 * *len (optional) gets its size.  NULL when it cannot be read.
 */
char *tf_slurp(const char *path, size_t *len);

/* The whole file as text the caller frees; "" (still to free) when it cannot be read. */
char *tf_text(const char *path);

/*
 * The file's text in a buffer that the next call reuses, "" when it cannot
 * be read: for a message or a one-off strstr.
 */
const char *tf_peek(const char *path);

/*
 * At most cap - 1 bytes of the file into buf with open(2)/read(2) (what an
 * emulated sysfs file sees), NUL-terminated ("" when it cannot be opened).
 * Returns the number of bytes read, or -1.
 */
ssize_t tf_slurp_into(const char *path, char *buf, size_t cap);

#endif
