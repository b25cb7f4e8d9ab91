/* SPDX-License-Identifier: MIT */
/* The files of one recording, written as .part and replaced together (outset.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/lib/outset.h"
#include "log.h"

#define OUTSET_MAX 32u

struct out_set {
	char *final[OUTSET_MAX];
	size_t n;
	char *removed[OUTSET_MAX]; /* an earlier run's files out_set_commit removed */
	size_t nremoved;
};

/* SQLite's files beside a database; harmless (absent) for every other format. */
static const char *const companions[] = { "-wal", "-shm", "-journal" };

int out_set_new(struct out_set **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void out_set_free(struct out_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->final[i]);
	for (size_t i = 0; i < s->nremoved; i++)
		free(s->removed[i]);
	free(s);
}

static char *cat(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	char *p = malloc(na + nb + 1);
	if (p) {
		memcpy(p, a, na);
		memcpy(p + na, b, nb + 1);
	}
	return p;
}

char *out_set_part(struct out_set *s, const char *final)
{
	if (!s)
		return strdup(final);
	bool known = false;
	for (size_t i = 0; i < s->n && !known; i++)
		known = !strcmp(s->final[i], final);
	if (!known) {
		if (s->n == OUTSET_MAX)
			return NULL;
		if (!(s->final[s->n] = strdup(final)))
			return NULL;
		s->n++;
	}
	return cat(final, OUTSET_PART);
}

size_t out_set_count(const struct out_set *s) { return s ? s->n : 0; }

size_t out_set_nremoved(const struct out_set *s) { return s ? s->nremoved : 0; }

const char *out_set_removed(const struct out_set *s, size_t i)
{
	return s && i < s->nremoved ? s->removed[i] : NULL;
}

const char *out_set_final(const struct out_set *s, size_t i)
{
	return s && i < s->n ? s->final[i] : NULL;
}

/* Remove a regular file (never a directory or a device the user named); ENOENT is no error. */
static int unlink_regular(const char *p)
{
	struct stat sb;
	if (lstat(p, &sb))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISREG(sb.st_mode))
		return -EISDIR;
	return unlink(p) && errno != ENOENT ? -errno : 0;
}

static void unlink_with_companions(const char *p)
{
	char q[4096];
	(void)unlink_regular(p);
	for (size_t k = 0; k < sizeof(companions) / sizeof(companions[0]); k++)
		if ((size_t)snprintf(q, sizeof(q), "%s%s", p, companions[k]) < sizeof(q))
			(void)unlink_regular(q);
}

static bool in_set(const struct out_set *s, const char *p)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->final[i], p))
			return true;
	return false;
}

/*
 * The earlier run's files this run does not replace by name: its set goes as
 * a whole.  Called once the new files carry their final names, so a failure
 * or a kill before that point leaves the earlier recording whole.
 */
static void remove_old_set(struct out_set *s, const char *const *old)
{
	char from[4096];
	for (size_t i = 0; old && old[i]; i++)
		if (!in_set(s, old[i])) {
			struct stat sb;
			bool was = !lstat(old[i], &sb) && S_ISREG(sb.st_mode);
			bool listed = false;
			for (size_t k = 0; k < s->nremoved && !listed; k++)
				listed = !strcmp(s->removed[k], old[i]);
			unlink_with_companions(old[i]);
			if (was && !listed && lstat(old[i], &sb) && s->nremoved < OUTSET_MAX &&
			    (s->removed[s->nremoved] = strdup(old[i])))
				s->nremoved++;
			if ((size_t)snprintf(from, sizeof(from), "%s%s", old[i], OUTSET_PART) < sizeof(from))
				unlink_with_companions(from);
		}
}

int out_set_commit(struct out_set *s, const char *const *old, char *err, size_t errlen)
{
	if (!s)
		return 0;
	int rc = 0;
	char from[4096], to[4096];
	for (size_t i = 0; i < s->n; i++) {
		const char *f = s->final[i];
		if ((size_t)snprintf(from, sizeof(from), "%s%s", f, OUTSET_PART) >= sizeof(from)) {
			if (!rc)
				rc = spmtap_seterr(err, errlen, ENAMETOOLONG, "%s: %s", f,
						   spmtap_strerror(ENAMETOOLONG));
			continue;
		}
		struct stat sb;
		if (lstat(from, &sb))
			continue; /* a file the writer never created (a source without rows) */
		/* The old file's companions first: a stale -wal must not meet the new database. */
		for (size_t k = 0; k < sizeof(companions) / sizeof(companions[0]); k++)
			if ((size_t)snprintf(to, sizeof(to), "%s%s", f, companions[k]) < sizeof(to))
				(void)unlink_regular(to);
		if (rename(from, f)) {
			int e = errno;
			if (!rc)
				rc = spmtap_seterr(err, errlen, e, "%s: cannot rename to %s: %s", from, f,
						   spmtap_strerror(e));
			continue;
		}
		/* A reader still open on the database can keep its log beside it: it follows. */
		for (size_t k = 0; k < sizeof(companions) / sizeof(companions[0]); k++) {
			if ((size_t)snprintf(from, sizeof(from), "%s%s%s", f, OUTSET_PART, companions[k]) >=
				    sizeof(from) ||
			    (size_t)snprintf(to, sizeof(to), "%s%s", f, companions[k]) >= sizeof(to))
				continue;
			if (!lstat(from, &sb))
				(void)rename(from, to);
		}
	}
	remove_old_set(s, old);
	return rc;
}

void out_set_drop_parts(const struct out_set *s, const char *const *names)
{
	char p[4096];
	for (size_t i = 0; s && names && names[i]; i++)
		if (!in_set(s, names[i]) &&
		    (size_t)snprintf(p, sizeof(p), "%s%s", names[i], OUTSET_PART) < sizeof(p))
			unlink_with_companions(p);
}

void out_set_discard(struct out_set *s)
{
	char p[4096];
	for (size_t i = 0; s && i < s->n; i++)
		if ((size_t)snprintf(p, sizeof(p), "%s%s", s->final[i], OUTSET_PART) < sizeof(p))
			unlink_with_companions(p);
}
