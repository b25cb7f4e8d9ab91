// SPDX-License-Identifier: MIT
/* The spmtap-sensor-trace v1 CSV and the CSV helpers the phases share (sensor_trace.h). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/analysis/sensor_trace.h"
#include "collector/analysis/sensor_trace_priv.h"
#include "log.h"

/* ---- CSV ---------------------------------------------------------------- */

void sa_csv_init(struct sa_csv_cursor *c, const char *buf, size_t len)
{
	c->buf = c->pos = buf;
	c->end = buf + len;
	c->no = 0;
}

bool sa_csv_next(struct sa_csv_cursor *c, struct sa_csv_line *line)
{
	if (c->pos >= c->end)
		return false;
	const char *nl = memchr(c->pos, '\n', (size_t)(c->end - c->pos));
	const char *stop = nl ? nl : c->end;
	line->p = c->pos;
	line->len = (size_t)(stop - c->pos);
	if (line->len && line->p[line->len - 1] == '\r')
		line->len--;
	line->no = ++c->no;
	c->pos = nl ? nl + 1 : c->end;
	return true;
}

int sa_parse_int(const char *p, size_t len, int64_t *out)
{
	size_t i = 0;
	bool neg = false;
	if (i < len && (p[i] == '-' || p[i] == '+'))
		neg = p[i++] == '-';
	if (i == len)
		return -EINVAL;
	int64_t v = 0;
	bool big = false;
	for (; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -EINVAL;
		/* past the limit before the multiplication overflows; keep checking the syntax */
		if (!big && v > (SA_INT_LIMIT - (p[i] - '0')) / 10)
			big = true;
		else if (!big)
			v = v * 10 + (p[i] - '0');
	}
	if (big)
		return -ERANGE;
	*out = neg ? -v : v;
	return 0;
}

int sa_parse_num(const char *p, size_t len, double *out)
{
	char tmp[512];
	size_t i = 0, digits = 0;
	if (!len || len >= sizeof(tmp))
		return -EINVAL;
	if (p[i] == '-' || p[i] == '+')
		i++;
	for (; i < len && p[i] >= '0' && p[i] <= '9'; i++)
		digits++;
	if (i < len && p[i] == '.')
		for (i++; i < len && p[i] >= '0' && p[i] <= '9'; i++)
			digits++;
	if (!digits)
		return -EINVAL;
	if (i < len && (p[i] == 'e' || p[i] == 'E')) {
		size_t ed = 0;
		if (++i < len && (p[i] == '-' || p[i] == '+'))
			i++;
		for (; i < len && p[i] >= '0' && p[i] <= '9'; i++)
			ed++;
		if (!ed)
			return -EINVAL;
	}
	if (i != len)
		return -EINVAL;
	memcpy(tmp, p, len);
	tmp[len] = 0;
	double v = strtod(tmp, NULL);
	if (!(fabs(v) <= SA_NUM_LIMIT))
		return -ERANGE;
	*out = v;
	return 0;
}

int sa_read_file(const char *path, char **buf, size_t *len, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return spmtap_seterr(err, errlen, errno, "%s: %s", path, strerror(errno));
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	int rc = 0;
	for (;;) {
		if (!b) {
			rc = spmtap_seterr(err, errlen, ENOMEM, "%s: out of memory", path);
			break;
		}
		if (n + 1 == cap) {
			char *nb = cap > SIZE_MAX / 2 ? NULL : realloc(b, cap * 2);
			if (!nb) {
				free(b);
				b = NULL;
				continue;
			}
			b = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, b + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = spmtap_seterr(err, errlen, errno, "%s: %s", path, strerror(errno));
			break;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (rc) {
		free(b);
		return rc;
	}
	b[n] = 0;
	*buf = b;
	*len = n;
	return 0;
}

/* ---- the trace CSV ------------------------------------------------------ */

enum col_kind { COL_IGNORED, COL_VALUE, COL_TS };

struct hcol {
	const char *name; /* into the header line */
	size_t nlen;
	enum col_kind kind;
	enum sa_unit unit;
	size_t col;       /* 0-based column */
	size_t sig;       /* signal it feeds */
};

struct sig_build {
	size_t vcol, tscol; /* tscol 0: none (column 0 is time_ns) */
	enum sa_unit unit;
	char *name;
	struct sa_raw *raw;
	size_t n, cap;
	/* the current row */
	bool have_v, have_ts;
	double v;
	int64_t ts;
};

struct parser {
	const char *what;
	struct sa_trace *tr;
	size_t ncols;
	struct hcol *cols;       /* [ncols]; cols[0] is time_ns */
	struct sig_build *sig;   /* by VALUE column order */
	size_t nsig;
	char *err;
	size_t errlen;
};

static int cmp_hcol(const void *a, const void *b)
{
	const struct hcol *x = *(const struct hcol *const *)a, *y = *(const struct hcol *const *)b;
	size_t n = x->nlen < y->nlen ? x->nlen : y->nlen;
	int c = memcmp(x->name, y->name, n);
	if (c)
		return c;
	if (x->nlen != y->nlen)
		return x->nlen < y->nlen ? -1 : 1;
	return (x->col > y->col) - (x->col < y->col);
}

/* The cells of a line; *n is their count.  cells must hold line->len + 1 entries. */
static size_t split(const struct sa_csv_line *l, const char **cp, size_t *cl)
{
	size_t n = 0;
	const char *p = l->p, *end = l->p + l->len;
	for (;;) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		const char *stop = c ? c : end;
		cp[n] = p;
		cl[n++] = (size_t)(stop - p);
		if (!c)
			return n;
		p = c + 1;
	}
}

static size_t count_cells(const struct sa_csv_line *l)
{
	size_t n = 1;
	for (const char *p = l->p, *end = l->p + l->len; (p = memchr(p, ',', (size_t)(end - p))); p++)
		n++;
	return n;
}

static int classify(struct parser *ps, size_t j, const char *c, size_t len)
{
	struct hcol *h = &ps->cols[j];
	h->col = j;
	h->kind = COL_IGNORED;
	const char *br = memchr(c, '[', len);
	if (len == 7 && !memcmp(c, "time_ns", 7))
		return spmtap_seterr(ps->err, ps->errlen, EINVAL, "%s:1: a second time_ns column (column %zu)",
				     ps->what, j + 1);
	if (!br || c[len - 1] != ']') {
		sa_trace_warn(ps->tr, "%s:1: column %zu '%.*s' has no [unit]; ignored", ps->what, j + 1,
		     (int)(len < QUOTE_MAX ? len : QUOTE_MAX), c);
		return 0;
	}
	h->name = c;
	h->nlen = (size_t)(br - c);
	const char *unit = br + 1;
	size_t ulen = len - h->nlen - 2;
	if (ulen == 1 && unit[0] == 'J') {
		h->kind = COL_VALUE;
		h->unit = SA_UNIT_J;
	} else if (ulen == 1 && unit[0] == 'W') {
		h->kind = COL_VALUE;
		h->unit = SA_UNIT_W;
	} else if (ulen == 5 && !memcmp(unit, "ts_ns", 5)) {
		h->kind = COL_TS;
	} else {
		sa_trace_warn(ps->tr, "%s:1: column '%.*s': unit %.*s is not J, W or ts_ns; ignored", ps->what,
		     (int)(len < 80 ? len : 80), c, (int)(ulen < QUOTE_MAX ? ulen : QUOTE_MAX), unit);
		return 0;
	}
	if (!sa_valid_name(h->name, h->nlen))
		return spmtap_seterr(ps->err, ps->errlen, EINVAL,
				     "%s:1: column %zu '%.*s': NAME must be [A-Za-z0-9_.:-]+", ps->what, j + 1,
				     (int)(len < 80 ? len : 80), c);
	return 0;
}

/* Pair each ts_ns column with its J/W column; a NAME may name one signal only. */
static int pair_columns(struct parser *ps)
{
	struct hcol **v = malloc(ps->ncols * sizeof(*v));
	if (!v)
		return spmtap_seterr(ps->err, ps->errlen, ENOMEM, "out of memory");
	size_t n = 0;
	for (size_t j = 1; j < ps->ncols; j++)
		if (ps->cols[j].kind != COL_IGNORED)
			v[n++] = &ps->cols[j];
	qsort(v, n, sizeof(*v), cmp_hcol);
	int rc = 0;
	for (size_t i = 0; i < n && !rc;) {
		size_t k = i + 1;
		while (k < n && v[k]->nlen == v[i]->nlen && !memcmp(v[k]->name, v[i]->name, v[i]->nlen))
			k++;
		struct hcol *val = NULL, *ts = NULL;
		for (size_t q = i; q < k && !rc; q++) {
			struct hcol **slot = v[q]->kind == COL_VALUE ? &val : &ts;
			if (*slot)
				rc = spmtap_seterr(ps->err, ps->errlen, EINVAL,
						   "%s:1: duplicate NAME '%.*s' (columns %zu and %zu): a NAME belongs to one signal",
						   ps->what, (int)v[q]->nlen, v[q]->name, (*slot)->col + 1, v[q]->col + 1);
			*slot = v[q];
		}
		if (!rc && !val)
			rc = spmtap_seterr(ps->err, ps->errlen, EINVAL,
					   "%s:1: column %zu '%.*s[ts_ns]' has no '%.*s[J]' or '%.*s[W]' column", ps->what,
					   ts->col + 1, (int)ts->nlen, ts->name, (int)ts->nlen, ts->name, (int)ts->nlen,
					   ts->name);
		if (!rc && ts)
			ts->sig = val->col; /* resolved to a signal index below */
		i = k;
	}
	free(v);
	return rc;
}

static int parse_header(struct parser *ps, const struct sa_csv_line *l)
{
	ps->ncols = count_cells(l);
	const char **cp = malloc(ps->ncols * sizeof(*cp));
	size_t *cl = malloc(ps->ncols * sizeof(*cl));
	ps->cols = calloc(ps->ncols, sizeof(*ps->cols));
	ps->sig = calloc(ps->ncols, sizeof(*ps->sig));
	int rc = 0;
	if (!cp || !cl || !ps->cols || !ps->sig) {
		rc = spmtap_seterr(ps->err, ps->errlen, ENOMEM, "out of memory");
		goto out;
	}
	split(l, cp, cl);
	if (cl[0] != 7 || memcmp(cp[0], "time_ns", 7)) {
		rc = spmtap_seterr(ps->err, ps->errlen, EINVAL,
				   "%s:1: the header must begin with time_ns (spmtap-sensor-trace v1), not '%.*s'",
				   ps->what, (int)(cl[0] < QUOTE_MAX ? cl[0] : QUOTE_MAX), cp[0]);
		goto out;
	}
	for (size_t j = 1; j < ps->ncols && !rc; j++)
		rc = classify(ps, j, cp[j], cl[j]);
	if (!rc)
		rc = pair_columns(ps);
	if (rc)
		goto out;
	for (size_t j = 1; j < ps->ncols; j++) {
		struct hcol *h = &ps->cols[j];
		if (h->kind != COL_VALUE)
			continue;
		struct sig_build *b = &ps->sig[ps->nsig];
		b->vcol = j;
		b->unit = h->unit;
		b->name = strndup(h->name, h->nlen);
		if (!b->name) {
			rc = spmtap_seterr(ps->err, ps->errlen, ENOMEM, "out of memory");
			goto out;
		}
		h->sig = ps->nsig++;
	}
	for (size_t j = 1; j < ps->ncols; j++) {
		struct hcol *h = &ps->cols[j];
		if (h->kind == COL_TS) {
			h->sig = ps->cols[h->sig].sig;
			ps->sig[h->sig].tscol = j;
		}
	}
	if (!ps->nsig)
		rc = spmtap_seterr(ps->err, ps->errlen, EINVAL, "%s:1: no NAME[J] or NAME[W] column", ps->what);
out:
	free(cp);
	free(cl);
	return rc;
}

static int cell_error(struct parser *ps, size_t line, size_t j, const char *c, size_t len, int rc, bool integer)
{
	const char *why = rc == -ERANGE ? (integer ? "is beyond +-2^60" : "is beyond +-1e18")
			  : integer ? "is not an integer" : "is not a decimal number";
	const struct hcol *h = &ps->cols[j];
	if (j == 0)
		return spmtap_seterr(ps->err, ps->errlen, EINVAL, "%s:%zu: time_ns '%.*s' %s", ps->what, line,
				     (int)(len < QUOTE_MAX ? len : QUOTE_MAX), c, why);
	return spmtap_seterr(ps->err, ps->errlen, EINVAL, "%s:%zu: column %zu '%.*s[%s]': '%.*s' %s", ps->what, line,
			     j + 1, (int)h->nlen, h->name, h->kind == COL_TS ? "ts_ns" : sa_unit_name(h->unit),
			     (int)(len < QUOTE_MAX ? len : QUOTE_MAX), c, why);
}

static int push_raw(struct sig_build *b, const struct sa_raw *r)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 256;
		struct sa_raw *v = realloc(b->raw, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		b->raw = v;
		b->cap = cap;
	}
	b->raw[b->n++] = *r;
	return 0;
}

static int parse_rows(struct parser *ps, struct sa_csv_cursor *cur)
{
	const char **cp = malloc(ps->ncols * sizeof(*cp));
	size_t *cl = malloc(ps->ncols * sizeof(*cl));
	int rc = 0;
	if (!cp || !cl) {
		rc = spmtap_seterr(ps->err, ps->errlen, ENOMEM, "out of memory");
		goto out;
	}
	struct sa_csv_line l;
	int64_t prev_t = 0;
	size_t prev_line = 0;
	while (!rc && sa_csv_next(cur, &l)) {
		if (!l.len)
			continue; /* a blank line, e.g. at the end */
		size_t nc = count_cells(&l);
		if (nc != ps->ncols) {
			rc = spmtap_seterr(ps->err, ps->errlen, EINVAL, "%s:%zu: %zu cells, but the header has %zu",
					   ps->what, l.no, nc, ps->ncols);
			break;
		}
		split(&l, cp, cl);
		int64_t t;
		if (!cl[0]) {
			rc = spmtap_seterr(ps->err, ps->errlen, EINVAL, "%s:%zu: time_ns is empty", ps->what, l.no);
			break;
		}
		int prc = sa_parse_int(cp[0], cl[0], &t);
		if (prc) {
			rc = cell_error(ps, l.no, 0, cp[0], cl[0], prc, true);
			break;
		}
		if (prev_line && t < prev_t) {
			rc = spmtap_seterr(ps->err, ps->errlen, EINVAL,
					   "%s:%zu: time_ns %lld is earlier than %lld on line %zu (rows must be in time order)",
					   ps->what, l.no, (long long)t, (long long)prev_t, prev_line);
			break;
		}
		prev_t = t;
		prev_line = l.no;
		for (size_t s = 0; s < ps->nsig && !rc; s++) {
			struct sig_build *b = &ps->sig[s];
			size_t j = b->vcol;
			b->have_v = cl[j] > 0;
			if (b->have_v && (prc = sa_parse_num(cp[j], cl[j], &b->v)))
				rc = cell_error(ps, l.no, j, cp[j], cl[j], prc, false);
			j = b->tscol;
			b->have_ts = j && cl[j] > 0;
			if (!rc && b->have_ts && (prc = sa_parse_int(cp[j], cl[j], &b->ts)))
				rc = cell_error(ps, l.no, j, cp[j], cl[j], prc, true);
			if (!rc && b->have_v && (!b->tscol || b->have_ts)) {
				struct sa_raw r = { .time_ns = t, .ts_ns = b->have_ts ? b->ts : 0, .v = b->v };
				if (push_raw(b, &r))
					rc = spmtap_seterr(ps->err, ps->errlen, ENOMEM, "out of memory");
			}
		}
	}
out:
	free(cp);
	free(cl);
	return rc;
}

int sa_trace_parse(const char *buf, size_t len, const char *what, struct sa_trace **out, char *err,
		   size_t errlen)
{
	struct parser ps = { .what = what ? what : "trace", .err = err, .errlen = errlen };
	*out = NULL;
	const char *nul = memchr(buf, 0, len);
	if (nul) {
		size_t line = 1;
		for (const char *p = buf; p < nul; p++)
			line += *p == '\n';
		return spmtap_seterr(err, errlen, EINVAL, "%s:%zu: a NUL byte: not a text file", ps.what, line);
	}
	struct sa_csv_cursor cur;
	struct sa_csv_line l;
	sa_csv_init(&cur, buf, len);
	if (!sa_csv_next(&cur, &l) || (!l.len && cur.pos >= cur.end))
		return spmtap_seterr(err, errlen, EINVAL,
				     "%s:1: empty file (expected the header time_ns,NAME[J],NAME[W],...)", ps.what);
	int rc = sa_trace_new(&ps.tr, err, errlen);
	if (rc)
		return rc;
	if (sa_trace_set_what(ps.tr, ps.what))
		rc = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	if (!rc)
		rc = parse_header(&ps, &l);
	if (!rc)
		rc = parse_rows(&ps, &cur);
	for (size_t s = 0; s < ps.nsig && !rc; s++) {
		struct sig_build *b = &ps.sig[s];
		rc = sa_trace_add(ps.tr, b->name, b->unit, b->tscol != 0, b->raw, b->n, err, errlen);
	}
	for (size_t s = 0; s < ps.nsig; s++) {
		free(ps.sig[s].name);
		free(ps.sig[s].raw);
	}
	free(ps.sig);
	free(ps.cols);
	if (rc) {
		sa_trace_free(ps.tr);
		return rc;
	}
	*out = ps.tr;
	return 0;
}

int sa_trace_load(const char *path, struct sa_trace **out, char *err, size_t errlen)
{
	char *buf;
	size_t len;
	int rc = sa_read_file(path, &buf, &len, err, errlen);
	if (rc)
		return rc;
	rc = sa_trace_parse(buf, len, path, out, err, errlen);
	free(buf);
	return rc;
}
