/* SPDX-License-Identifier: MIT */
/* -d/-o: rocprofv3's placeholders and where the files go (outname.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/cli/outname.h"
#include "collector/lib/writer.h"
#include "log.h"

void outname_env_init(struct outname_env *e)
{
	memset(e, 0, sizeof(*e));
	if (gethostname(e->hostname, sizeof(e->hostname) - 1))
		snprintf(e->hostname, sizeof(e->hostname), "localhost");
	e->pid = (long)getpid();
	e->launch = time(NULL);
}

/* A growing string; ok goes false for good when memory runs out. */
struct sb {
	char *s;
	size_t n, cap;
	bool ok;
};

static void put(struct sb *b, const char *s, size_t n)
{
	if (!b->ok)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = (b->n + n + 1) * 2;
		char *p = realloc(b->s, cap);
		if (!p) {
			b->ok = false;
			return;
		}
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = 0;
}

static void puts_(struct sb *b, const char *s) { put(b, s, strlen(s)); }

/* The first of the variables that is set and not empty, else NULL. */
static const char *first_env(const char *const *names)
{
	for (; *names; names++) {
		const char *v = getenv(*names);
		if (v && *v)
			return v;
	}
	return NULL;
}

static const char *rank(void)
{
	static const char *const v[] = { "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", NULL };
	const char *r = first_env(v);
	return r ? r : "0";
}

static const char *job(const struct outname_env *e, char *buf, size_t len)
{
	static const char *const v[] = { "SLURM_JOB_ID", "PBS_JOBID", NULL };
	const char *j = first_env(v);
	if (j)
		return j;
	snprintf(buf, len, "%ld", e->pid);
	return buf;
}

/* %env{NAME}% or $env{NAME} at s (past the lead character): its value; *used the length taken. */
static bool env_ref(const char *s, char close, struct sb *b, size_t *used)
{
	if (strncmp(s, "env{", 4))
		return false;
	const char *end = strchr(s + 4, '}');
	if (!end || end == s + 4 || (close && end[1] != close))
		return false;
	char name[256];
	size_t n = (size_t)(end - (s + 4));
	if (n >= sizeof(name))
		return false;
	memcpy(name, s + 4, n);
	name[n] = 0;
	const char *v = getenv(name);
	puts_(b, v ? v : "");
	*used = n + 5 + (close ? 1 : 0);
	return true;
}

char *outname_expand(const char *spec, const struct outname_env *e, int *rc, char *err, size_t errlen)
{
	struct sb b = { .ok = true };
	char num[64];
	*rc = 0;
	puts_(&b, "");
	for (const char *s = spec; *s;) {
		size_t used = 0;
		if (*s == '$' && env_ref(s + 1, 0, &b, &used)) {
			s += 1 + used;
			continue;
		}
		if (*s != '%') {
			put(&b, s, 1);
			s++;
			continue;
		}
		const char *t = s + 1;
		struct {
			const char *key;
			int what;
		} keys[] = {
			{ "hostname%", 'h' }, { "pid%", 'p' }, { "rank%", 'r' }, { "job%", 'j' },
			{ "launch_time%", 't' }, { "%", '%' },
			/* rocprofv3's shorthands: %h %p %r %j (matched after the long names) */
			{ "h", 'h' }, { "p", 'p' }, { "r", 'r' }, { "j", 'j' },
		};
		int what = 0;
		if (env_ref(t, '%', &b, &used)) {
			s = t + used;
			continue;
		}
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]) && !what; k++)
			if (!strncmp(t, keys[k].key, strlen(keys[k].key))) {
				what = keys[k].what;
				used = strlen(keys[k].key);
			}
		switch (what) {
		case 'h': puts_(&b, e->hostname); break;
		case 'p':
			snprintf(num, sizeof(num), "%ld", e->pid);
			puts_(&b, num);
			break;
		case 'r': puts_(&b, rank()); break;
		case 'j': puts_(&b, job(e, num, sizeof(num))); break;
		case 't': {
			struct tm tm;
			localtime_r(&e->launch, &tm);
			strftime(num, sizeof(num), "%Y_%m_%d_%H.%M.%S", &tm);
			puts_(&b, num);
			break;
		}
		case '%': puts_(&b, "%"); break;
		default: {
			const char *end = strchr(t, '%');
			int n = end ? (int)(end - t) + 2 : (int)strlen(t) + 1;
			free(b.s);
			*rc = spmtap_seterr(err, errlen, EINVAL,
					    "%s: unknown placeholder '%.*s' (%%hostname%%, %%pid%%, %%rank%%, %%job%%, "
					    "%%launch_time%%, %%env{NAME}%%; %%%% for a '%%')",
					    spec, n, s);
			return NULL;
		}
		}
		s = t + used;
	}
	if (!b.ok) {
		free(b.s);
		*rc = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
		return NULL;
	}
	return b.s;
}

static char *dup_n(const char *s, size_t n)
{
	char *p = malloc(n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = 0;
	}
	return p;
}

int outname_resolve(const char *dir, const char *out, char **dir_out, char **name_out, char *err,
		    size_t errlen)
{
	*dir_out = *name_out = NULL;
	if (!dir || !*dir)
		dir = ".";
	if (!out || !*out)
		out = "spmtap";
	size_t n = strlen(out);
	if (out[n - 1] == '/')
		return spmtap_seterr(err, errlen, EINVAL,
				     "-o %s: names the recording, not a directory (use -d DIR -o NAME)", out);
	const char *slash = strrchr(out, '/');
	const char *name = slash ? slash + 1 : out;
	size_t nl = strlen(name);
	/* "results.db" is the NAME "results" for every format: no results.db.db. */
	for (const struct writer_ops *const *w = writers(); *w; w++) {
		size_t el = strlen((*w)->ext);
		if (nl > el && !strcmp(name + nl - el, (*w)->ext)) {
			nl -= el;
			break;
		}
	}
	if (!nl || !strcmp(name, ".") || !strcmp(name, ".."))
		return spmtap_seterr(err, errlen, EINVAL, "-o %s: no file name in it", out);
	char *d;
	if (out[0] == '/') { /* an absolute -o ignores -d */
		d = slash == out ? strdup("/") : dup_n(out, (size_t)(slash - out));
	} else if (slash) {
		size_t dl = strlen(dir), sl = (size_t)(slash - out);
		d = malloc(dl + sl + 2);
		if (d)
			snprintf(d, dl + sl + 2, "%s/%.*s", dir, (int)sl, out);
	} else {
		d = strdup(dir);
	}
	char *nm = dup_n(name, nl);
	if (!d || !nm) {
		free(d);
		free(nm);
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	}
	*dir_out = d;
	*name_out = nm;
	return 0;
}
