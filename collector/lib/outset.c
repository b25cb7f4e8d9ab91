/* SPDX-License-Identifier: MIT */
/* The files of one recording, written as .part and replaced together (outset.h). */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/lib/outset.h"
#include "log.h"

#define OUTSET_MAX 32u

/*
 * The session's threads share one set: the writer thread opens a CSV file
 * the first time its rows come and rewrites the metadata, while the main
 * thread writes NAME_kernels.csv at the stop.  `lock` guards the names; the
 * commit, discard and removal run after every thread has ended.
 */
struct out_set {
	pthread_mutex_t lock;
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
	if (!*out)
		return -ENOMEM;
	pthread_mutex_init(&(*out)->lock, NULL);
	return 0;
}

void out_set_free(struct out_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->final[i]);
	for (size_t i = 0; i < s->nremoved; i++)
		free(s->removed[i]);
	pthread_mutex_destroy(&s->lock);
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
	pthread_mutex_lock(&s->lock);
	bool known = false;
	for (size_t i = 0; i < s->n && !known; i++)
		known = !strcmp(s->final[i], final);
	if (!known && s->n < OUTSET_MAX && (s->final[s->n] = strdup(final)))
		s->n++, known = true;
	pthread_mutex_unlock(&s->lock);
	return known ? cat(final, OUTSET_PART) : NULL;
}

size_t out_set_count(struct out_set *s)
{
	if (!s)
		return 0;
	pthread_mutex_lock(&s->lock);
	size_t n = s->n;
	pthread_mutex_unlock(&s->lock);
	return n;
}

size_t out_set_nremoved(const struct out_set *s) { return s ? s->nremoved : 0; }

const char *out_set_removed(const struct out_set *s, size_t i)
{
	return s && i < s->nremoved ? s->removed[i] : NULL;
}

/* An entry never changes once added: its pointer outlives the lock. */
const char *out_set_final(struct out_set *s, size_t i)
{
	if (!s)
		return NULL;
	pthread_mutex_lock(&s->lock);
	const char *f = i < s->n ? s->final[i] : NULL;
	pthread_mutex_unlock(&s->lock);
	return f;
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

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

/* Each entry of a directory, with fn(path, is_dir, arg); stops at the first nonzero. */
static int each_entry(const char *dir, int (*fn)(const char *path, const char *name, bool is_dir, void *arg),
		      void *arg)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int rc = 0;
	struct dirent *e;
	char p[4096];
	while (!rc && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= sizeof(p)) {
			rc = -ENAMETOOLONG;
			break;
		}
		struct stat sb;
		if (lstat(p, &sb)) {
			rc = -errno;
			break;
		}
		if (!S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode))
			rc = -ENOTEMPTY;
		else
			rc = fn(p, e->d_name, S_ISDIR(sb.st_mode), arg);
	}
	closedir(d);
	return rc;
}

/* In an archive's traces/: only .evt and .def files. */
static int check_traces(const char *path, const char *name, bool is_dir, void *arg)
{
	(void)path;
	(void)arg;
	return !is_dir && (has_suffix(name, ".evt") || has_suffix(name, ".def")) ? 0 : -ENOTEMPTY;
}

static int check_top(const char *path, const char *name, bool is_dir, void *arg)
{
	(void)arg;
	if (is_dir)
		return strcmp(name, "traces") ? -ENOTEMPTY : each_entry(path, check_traces, NULL);
	return !strcmp(name, "traces.otf2") || !strcmp(name, "traces.def") ? 0 : -ENOTEMPTY;
}

static int remove_entry(const char *path, const char *name, bool is_dir, void *arg)
{
	(void)name;
	(void)arg;
	if (is_dir) {
		int rc = each_entry(path, remove_entry, NULL);
		return rc ? rc : rmdir(path) ? -errno : 0;
	}
	return unlink(path) && errno != ENOENT ? -errno : 0;
}

int out_set_remove_archive(const char *dir)
{
	struct stat sb;
	if (lstat(dir, &sb))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(sb.st_mode))
		return -EEXIST;
	/* Everything checked before anything goes: a directory of the user's stays whole. */
	int rc = each_entry(dir, check_top, NULL);
	if (!rc)
		rc = each_entry(dir, remove_entry, NULL);
	if (!rc && rmdir(dir))
		rc = -errno;
	return rc;
}

static void unlink_with_companions(const char *p)
{
	char q[4096];
	struct stat sb;
	if (!lstat(p, &sb) && S_ISDIR(sb.st_mode)) {
		(void)out_set_remove_archive(p);
		return;
	}
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
			bool was = !lstat(old[i], &sb) && (S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode));
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
		/* An earlier archive directory under the final name: rename() does not replace a full one. */
		if (S_ISDIR(sb.st_mode)) {
			int r = out_set_remove_archive(f);
			if (r && !rc)
				rc = spmtap_seterr(err, errlen, -r, "%s: cannot replace: %s", f,
						   spmtap_strerror(-r));
			if (r)
				continue;
		}
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
