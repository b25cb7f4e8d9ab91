/* SPDX-License-Identifier: MIT */
/*
 * libspmtap public API.  Every function returns 0 (or a count) on success and
 * a negative errno on failure, and sets errno too; spmtap_strerror() turns
 * either into text.  Only symbols marked SPMTAP_API are exported.
 */
#ifndef SPMTAP_H
#define SPMTAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPMTAP_API __attribute__((visibility("default")))

#define SPMTAP_VERSION_MAJOR 0
#define SPMTAP_VERSION_MINOR 1

SPMTAP_API const char *spmtap_version_string(void);
SPMTAP_API unsigned int spmtap_version_major(void);
SPMTAP_API unsigned int spmtap_version_minor(void);

/* Text for a negative (or positive) errno, including spmtap's own codes. */
SPMTAP_API const char *spmtap_strerror(int err);

enum spmtap_log_level { SPMTAP_LOG_WARN = 0, SPMTAP_LOG_INFO = 1, SPMTAP_LOG_DEBUG = 2 };
typedef void (*spmtap_print_fn)(enum spmtap_log_level level, const char *msg, void *user);
/* NULL restores the default (stderr, level from SPMTAP_LOG_LEVEL). */
SPMTAP_API void spmtap_set_print(spmtap_print_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif
