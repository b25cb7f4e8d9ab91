// SPDX-License-Identifier: MIT
/* The phases CSV: start_ns,end_ns,name (phases.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/phases.h"
#include "collector/analysis/sensor_trace.h"
#include "log.h"

#define HEADER "start_ns,end_ns,name"
#define QUOTE_MAX 40

void sa_phases_free(struct sa_phases *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i].name);
	free(p->v);
	p->v = NULL;
	p->n = 0;
}

/* Well-formed UTF-8 (no overlongs, no surrogates), which JSON strings need. */
static bool utf8_ok(const unsigned char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		unsigned c = s[i];
		size_t k;
		unsigned min;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			k = 1, min = 0x80, c &= 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			k = 2, min = 0x800, c &= 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			k = 3, min = 0x10000, c &= 0x07;
		} else {
			return false;
		}
		if (i + k >= len)
			return false;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			c = (c << 6) | (s[i + j] & 0x3f);
		}
		if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			return false;
		i += k + 1;
	}
	return true;
}

static int cell_int(const char *what, size_t line, const char *col, const char *p, size_t len, int64_t *v,
		    char *err, size_t errlen)
{
	int rc = sa_parse_int(p, len, v);
	if (!rc)
		return 0;
	return spmtap_seterr(err, errlen, EINVAL, "%s:%zu: %s '%.*s' %s", what, line, col,
			     (int)(len < QUOTE_MAX ? len : QUOTE_MAX), p,
			     !len ? "is empty" : rc == -ERANGE ? "is beyond +-2^60" : "is not an integer");
}

static int parse_row(const char *what, const struct sa_csv_line *l, struct sa_phase *ph, char *err,
		     size_t errlen)
{
	const char *c1 = memchr(l->p, ',', l->len);
	const char *c2 = c1 ? memchr(c1 + 1, ',', (size_t)(l->p + l->len - c1 - 1)) : NULL;
	if (!c2) {
		return spmtap_seterr(err, errlen, EINVAL, "%s:%zu: %d cells, expected 3 (" HEADER ")", what, l->no,
				     c1 ? 2 : 1);
	}
	const char *name = c2 + 1;
	size_t nlen = (size_t)(l->p + l->len - name);
	if (memchr(name, ',', nlen)) {
		size_t cells = 3;
		for (const char *p = name; (p = memchr(p, ',', (size_t)(l->p + l->len - p))); p++)
			cells++;
		return spmtap_seterr(err, errlen, EINVAL,
				     "%s:%zu: %zu cells, expected 3 (" HEADER "); a name cannot contain a comma", what,
				     l->no, cells);
	}
	int rc = cell_int(what, l->no, "start_ns", l->p, (size_t)(c1 - l->p), &ph->start_ns, err, errlen);
	if (!rc)
		rc = cell_int(what, l->no, "end_ns", c1 + 1, (size_t)(c2 - c1 - 1), &ph->end_ns, err, errlen);
	if (rc)
		return rc;
	if (ph->end_ns <= ph->start_ns)
		return spmtap_seterr(err, errlen, EINVAL, "%s:%zu: end_ns %lld is not after start_ns %lld", what,
				     l->no, (long long)ph->end_ns, (long long)ph->start_ns);
	if (!utf8_ok((const unsigned char *)name, nlen))
		return spmtap_seterr(err, errlen, EINVAL, "%s:%zu: the name is not valid UTF-8", what, l->no);
	ph->name = strndup(name, nlen);
	if (!ph->name)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	return 0;
}

int sa_phases_parse(const char *buf, size_t len, const char *what, struct sa_phases *out, char *err,
		    size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (!what)
		what = "phases";
	const char *nul = memchr(buf, 0, len);
	if (nul) {
		size_t line = 1;
		for (const char *p = buf; p < nul; p++)
			line += *p == '\n';
		return spmtap_seterr(err, errlen, EINVAL, "%s:%zu: a NUL byte: not a text file", what, line);
	}
	struct sa_csv_cursor cur;
	struct sa_csv_line l;
	sa_csv_init(&cur, buf, len);
	if (!sa_csv_next(&cur, &l) || (!l.len && cur.pos >= cur.end))
		return spmtap_seterr(err, errlen, EINVAL, "%s:1: empty file (expected the header " HEADER ")", what);
	if (l.len != strlen(HEADER) || memcmp(l.p, HEADER, l.len))
		return spmtap_seterr(err, errlen, EINVAL, "%s:1: the header must be " HEADER ", not '%.*s'", what,
				     (int)(l.len < QUOTE_MAX ? l.len : QUOTE_MAX), l.p);
	size_t cap = 0;
	int rc = 0;
	while (!rc && sa_csv_next(&cur, &l)) {
		if (!l.len)
			continue; /* a blank line, e.g. at the end */
		if (out->n == cap) {
			size_t ncap = cap ? 2 * cap : 16;
			struct sa_phase *v = realloc(out->v, ncap * sizeof(*v));
			if (!v) {
				rc = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
				break;
			}
			out->v = v;
			cap = ncap;
		}
		struct sa_phase ph = { 0 };
		rc = parse_row(what, &l, &ph, err, errlen);
		if (!rc)
			out->v[out->n++] = ph;
	}
	if (rc)
		sa_phases_free(out);
	return rc;
}

int sa_phases_load(const char *path, struct sa_phases *out, char *err, size_t errlen)
{
	char *buf;
	size_t len;
	memset(out, 0, sizeof(*out));
	int rc = sa_read_file(path, &buf, &len, err, errlen);
	if (rc)
		return rc;
	rc = sa_phases_parse(buf, len, path, out, err, errlen);
	free(buf);
	return rc;
}
