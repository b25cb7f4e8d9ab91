/* SPDX-License-Identifier: MIT */
/*
 * The ground floor's only code: the log sink and error strings that every
 * floor (spm/, decoder/, collector/) calls.  It lives here, beside log.h, and
 * needs nothing but libc and pthreads, so that spm/ and decoder/ link without
 * anything above them (tests/test_floors.c checks it).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "spmtap.h"

SPMTAP_API const char *spmtap_strerror(int err)
{
	if (err < 0)
		err = -err;
	/* strerror() is not thread-safe; strerrordesc_np() returns static text. */
	const char *s = strerrordesc_np(err);
	return s ? s : "unknown error";
}

/*
 * The print hook is process-wide by nature (like libbpf_set_print); it is the
 * one piece of mutable state outside a context, guarded by a lock.
 */
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;
static spmtap_print_fn print_fn;
static void *print_user;

SPMTAP_API void spmtap_set_print(spmtap_print_fn fn, void *user)
{
	pthread_mutex_lock(&print_lock);
	print_fn = fn;
	print_user = user;
	pthread_mutex_unlock(&print_lock);
}

static int env_level(void)
{
	const char *e = getenv("SPMTAP_LOG_LEVEL");
	if (!e)
		return SPMTAP_LOG_WARN;
	if (!strcmp(e, "debug") || !strcmp(e, "2"))
		return SPMTAP_LOG_DEBUG;
	if (!strcmp(e, "info") || !strcmp(e, "1"))
		return SPMTAP_LOG_INFO;
	return SPMTAP_LOG_WARN;
}

void spmtap_log(enum spmtap_log_level level, const char *module, const char *fmt, ...)
{
	char msg[1024];
	int n = snprintf(msg, sizeof(msg), "spmtap: %s: ", module);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&print_lock);
	spmtap_print_fn fn = print_fn;
	void *user = print_user;
	pthread_mutex_unlock(&print_lock);
	if (fn) {
		fn(level, msg, user);
		return;
	}
	if ((int)level <= env_level())
		fprintf(stderr, "%s%s", msg, msg[strlen(msg) - 1] == '\n' ? "" : "\n");
}

int spmtap_seterr(char *buf, size_t len, int err, const char *fmt, ...)
{
	if (buf && len) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(buf, len, fmt, ap);
		va_end(ap);
	}
	return err > 0 ? -err : err;
}
