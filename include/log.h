/* SPDX-License-Identifier: MIT */
/*
 * Internal logging and error strings: one sink, set with spmtap_set_print().
 * The bodies are in log.c, the ground floor every other floor may call.
 */
#ifndef SPMTAP_LOG_H
#define SPMTAP_LOG_H

#include "spmtap.h"

void spmtap_log(enum spmtap_log_level level, const char *module, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define pr_warn(mod, ...)  spmtap_log(SPMTAP_LOG_WARN, mod, __VA_ARGS__)
#define pr_info(mod, ...)  spmtap_log(SPMTAP_LOG_INFO, mod, __VA_ARGS__)
#define pr_debug(mod, ...) spmtap_log(SPMTAP_LOG_DEBUG, mod, __VA_ARGS__)

/* snprintf into an optional error buffer; returns -err so callers can `return seterr(...)`. */
int spmtap_seterr(char *buf, size_t len, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
