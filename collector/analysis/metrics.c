// SPDX-License-Identifier: MIT
/*
 * A set of derived metrics (metrics.h): its columns and what their names
 * say, counter references resolved to columns, definitions from strings
 * and files, enumeration.  Parsing is in metrics_parse.c, evaluation in
 * metrics_eval.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/metrics_priv.h"
#include "log.h"

#define MX_FILE_MAX (16u << 20) /* a metrics file is text a person wrote */

static bool ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool ident_char(char c)
{
	return ident_start(c) || (c >= '0' && c <= '9');
}

/* A decimal index of at most 4 digits in s[0..n). */
static int small_index(const char *s, size_t n)
{
	int v = 0;
	if (n == 0 || n > 4)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/*
 * "NAME", "NAME[3]", "NAME[se1]", "NAME[3][se1]" to base, instance and SE;
 * false for anything else (at most one group of each kind).
 */
static bool split_name(const char *s, size_t n, size_t *baselen, int *inst, int *se)
{
	size_t p = 0;

	*inst = *se = -1;
	if (!n || !ident_start(s[0]))
		return false;
	while (p < n && ident_char(s[p]))
		p++;
	*baselen = p;
	while (p < n) {
		if (s[p] != '[')
			return false;
		const char *close = memchr(s + p, ']', n - p);
		if (!close)
			return false;
		const char *in = s + p + 1;
		size_t il = (size_t)(close - in);
		if (il > 2 && in[0] == 's' && in[1] == 'e') {
			int v = small_index(in + 2, il - 2);
			if (v < 0 || v >= MX_MAX_SE || *se >= 0)
				return false;
			*se = v;
		} else {
			int v = small_index(in, il);
			if (v < 0 || *inst >= 0)
				return false;
			*inst = v;
		}
		p = (size_t)(close - s) + 1;
	}
	return true;
}

const struct spm_counter *mx_catalog_find(const struct spm_catalog *cat, const char *name, size_t n)
{
	size_t total = cat ? spm_catalog_count(cat) : 0;

	for (size_t i = 0; i < total; i++) {
		const struct spm_counter *c = spm_catalog_at(cat, i);
		if (strlen(c->name) == n && !memcmp(c->name, name, n))
			return spm_counter_streamable(c) ? c : NULL;
	}
	return NULL;
}

static int set_column(struct mx_set *s, struct mx_col *c, const char *name)
{
	size_t bl;

	c->name = strdup(name);
	if (!c->name)
		return -ENOMEM;
	c->block = -1;
	if (!split_name(name, strlen(name), &bl, &c->inst, &c->se))
		return 0;
	c->base = strndup(name, bl);
	if (!c->base)
		return -ENOMEM;
	const struct spm_counter *k = mx_catalog_find(s->cat, c->base, bl);
	if (k) {
		c->block = (int)k->block;
		c->se_block = spm_counter_segment(k) == SPM_SEG_SE;
	}
	return 0;
}

static int catalog_columns(const struct spm_catalog *cat, const char ***out, size_t *n)
{
	size_t total = spm_catalog_count(cat), k = 0;
	const char **v = calloc(total ? total : 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < total; i++) {
		const struct spm_counter *c = spm_catalog_at(cat, i);
		if (spm_counter_streamable(c))
			v[k++] = c->name;
	}
	*out = v;
	*n = k;
	return 0;
}

int mx_set_new(const struct spm_catalog *cat, const char *const *columns, size_t ncolumns,
	       struct mx_set **out, char *err, size_t errlen)
{
	const char **own = NULL;
	int rc;

	*out = NULL;
	if (!columns && !cat)
		return spmtap_seterr(err, errlen, EINVAL, "metrics: no columns and no counter catalog to take them from");
	if (!columns) {
		if (catalog_columns(cat, &own, &ncolumns))
			return spmtap_seterr(err, errlen, ENOMEM, "metrics: out of memory");
		columns = own;
	}
	struct mx_set *s = calloc(1, sizeof(*s));
	if (!s || !(s->cols = calloc(ncolumns ? ncolumns : 1, sizeof(*s->cols)))) {
		free(s);
		free(own);
		return spmtap_seterr(err, errlen, ENOMEM, "metrics: out of memory");
	}
	s->cat = cat;
	for (size_t i = 0; i < ncolumns; i++) {
		for (size_t j = 0; j < i; j++) {
			if (!strcmp(columns[i], columns[j])) {
				rc = spmtap_seterr(err, errlen, EINVAL, "metrics: column %s appears twice (%zu and %zu)",
						   columns[i], j, i);
				goto fail;
			}
		}
		s->ncols++;
		if (set_column(s, &s->cols[i], columns[i])) {
			rc = spmtap_seterr(err, errlen, ENOMEM, "metrics: out of memory");
			goto fail;
		}
	}
	free(own);
	*out = s;
	return 0;
fail:
	free(own);
	mx_set_free(s);
	return rc;
}

void mx_metric_release(struct mx_metric *m)
{
	free(m->name);
	free(m->expr);
	free(m->desc);
	free(m->origin);
	free(m->unit);
	free(m->nodes);
	memset(m, 0, sizeof(*m));
}

void mx_set_free(struct mx_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		mx_metric_release(&s->m[i]);
	for (size_t i = 0; i < s->nrefs; i++) {
		free(s->refs[i].text);
		free(s->refs[i].top);
		free(s->refs[i].perse);
	}
	for (size_t i = 0; i < s->ncols; i++) {
		free(s->cols[i].name);
		free(s->cols[i].base);
	}
	free(s->m);
	free(s->refs);
	free(s->cols);
	free(s);
}

size_t mx_set_column_count(const struct mx_set *s)
{
	return s->ncols;
}

const char *mx_set_column(const struct mx_set *s, size_t col)
{
	return col < s->ncols ? s->cols[col].name : NULL;
}

bool mx_is_column_base(const struct mx_set *s, const char *name, size_t n)
{
	for (size_t i = 0; i < s->ncols; i++)
		if (s->cols[i].base && strlen(s->cols[i].base) == n && !memcmp(s->cols[i].base, name, n))
			return true;
	return false;
}

int mx_find_metric(const struct mx_set *s, const char *name, size_t n)
{
	for (size_t i = 0; i < s->n; i++)
		if (strlen(s->m[i].name) == n && !memcmp(s->m[i].name, name, n))
			return (int)i;
	return -ENOENT;
}

/*
 * Which columns a reference sums.  Where a recording has both a summed
 * column and its parts (NAME and NAME[se0], or NAME and NAME[3]), the
 * summed one is used, so nothing is counted twice.
 */
static size_t pick(const struct mx_set *s, const size_t *m, size_t nm, bool want_se, int rinst, size_t *out)
{
	bool summed_inst = false;
	size_t n = 0;

	for (size_t i = 0; i < nm; i++)
		if ((s->cols[m[i]].se >= 0) == want_se && s->cols[m[i]].inst < 0)
			summed_inst = true;
	for (size_t i = 0; i < nm; i++) {
		const struct mx_col *c = &s->cols[m[i]];
		if ((c->se >= 0) != want_se)
			continue;
		if (rinst < 0 && summed_inst && c->inst >= 0)
			continue;
		out[n++] = m[i];
	}
	return n;
}

static int resolve(const struct mx_set *s, struct mx_ref *r, const char *text, size_t len)
{
	size_t bl;
	int rinst, rse;

	if (!split_name(text, len, &bl, &rinst, &rse))
		return -ENOENT;
	size_t *m = calloc(s->ncols ? s->ncols : 1, sizeof(*m));
	size_t nm = 0;
	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < s->ncols; i++) {
		const struct mx_col *c = &s->cols[i];
		if (!c->base || strlen(c->base) != bl || memcmp(c->base, text, bl))
			continue;
		if ((rinst >= 0 && c->inst != rinst) || (rse >= 0 && c->se != rse))
			continue;
		m[nm++] = i;
	}
	if (!nm) {
		free(m);
		return -ENOENT;
	}
	r->top = calloc(nm, sizeof(*r->top));
	r->perse = calloc(nm, sizeof(*r->perse));
	if (!r->top || !r->perse) {
		free(m);
		return -ENOMEM;
	}
	r->nperse = rse >= 0 ? 0 : pick(s, m, nm, true, rinst, r->perse);
	if (rse >= 0)
		r->ntop = pick(s, m, nm, true, rinst, r->top);
	else if (!(r->ntop = pick(s, m, nm, false, rinst, r->top)))
		r->ntop = pick(s, m, nm, true, rinst, r->top);
	for (size_t i = 0; i < r->nperse; i++)
		r->semask |= 1ull << s->cols[r->perse[i]].se;
	r->pinned_se = rse >= 0;
	free(m);
	return 0;
}

int mx_ref_get(struct mx_set *s, const char *text, size_t len)
{
	for (size_t i = 0; i < s->nrefs; i++)
		if (strlen(s->refs[i].text) == len && !memcmp(s->refs[i].text, text, len))
			return (int)i;
	if (s->nrefs == s->crefs) {
		size_t cap = s->crefs ? s->crefs * 2 : 16;
		struct mx_ref *r = realloc(s->refs, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		s->refs = r;
		s->crefs = cap;
	}
	struct mx_ref *r = &s->refs[s->nrefs];
	memset(r, 0, sizeof(*r));
	int rc = resolve(s, r, text, len);
	if (!rc && !(r->text = strndup(text, len)))
		rc = -ENOMEM;
	if (rc) {
		free(r->top);
		free(r->perse);
		return rc;
	}
	return (int)s->nrefs++;
}

int mx_set_add(struct mx_set *s, const char *def, char *err, size_t errlen)
{
	const struct mx_src src = { 0 };
	return mx_define(s, def, strlen(def), &src, err, errlen);
}

static void rollback(struct mx_set *s, size_t n)
{
	while (s->n > n)
		mx_metric_release(&s->m[--s->n]);
}

/* The metric name a line defines, if it looks like a definition at all. */
static bool line_name(const char *t, size_t len, const char **name, size_t *nl, const char **rhs, size_t *rl)
{
	struct mx_token k;
	size_t pos = 0;

	mx_lex(t, len, &pos, &k);
	if (k.t != MX_T_NAME || k.brackets)
		return false;
	*name = t + k.pos;
	*nl = k.len;
	mx_lex(t, len, &pos, &k);
	if (k.t != MX_T_EQ)
		return false;
	*rhs = t + pos;
	*rl = len - pos;
	return true;
}

static bool blank(const char *t, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (t[i] == '#')
			return true;
		if (t[i] != ' ' && t[i] != '\t' && t[i] != '\r')
			return false;
	}
	return true;
}

int mx_set_add_text(struct mx_set *s, const char *text, size_t len, const char *origin, char *err,
		    size_t errlen)
{
	size_t before = s->n, nlines = 1, nl = 0;
	struct mx_later *later;
	int rc = 0;

	if (!origin)
		origin = "metrics";
	for (size_t i = 0; i < len; i++)
		nlines += text[i] == '\n';
	later = calloc(nlines, sizeof(*later));
	if (!later)
		return spmtap_seterr(err, errlen, ENOMEM, "%s: out of memory", origin);
	/* first pass: who defines what where, so that a forward use can be named */
	unsigned int line = 0;
	for (size_t p = 0; p <= len;) {
		const char *e = memchr(text + p, '\n', len - p);
		size_t l = e ? (size_t)(e - (text + p)) : len - p;
		const char *nm, *rhs;
		size_t nml, rl;
		line++;
		if (!blank(text + p, l) && line_name(text + p, l, &nm, &nml, &rhs, &rl)) {
			later[nl] = (struct mx_later){ strndup(nm, nml), line, rhs, rl };
			if (!later[nl++].name) {
				rc = spmtap_seterr(err, errlen, ENOMEM, "%s: out of memory", origin);
				goto out;
			}
		}
		p += l + 1;
	}
	line = 0;
	for (size_t p = 0; p <= len;) {
		const char *e = memchr(text + p, '\n', len - p);
		size_t l = e ? (size_t)(e - (text + p)) : len - p;
		line++;
		if (!blank(text + p, l)) {
			struct mx_src src = { .origin = origin, .line = line, .later = later, .nlater = nl };
			int r = mx_define(s, text + p, l, &src, err, errlen);
			if (r < 0) {
				rc = r;
				goto out;
			}
		}
		p += l + 1;
	}
	rc = (int)(s->n - before);
out:
	if (rc < 0)
		rollback(s, before);
	for (size_t i = 0; i < nl; i++)
		free(later[i].name);
	free(later);
	return rc;
}

int mx_set_add_file(struct mx_set *s, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return spmtap_seterr(err, errlen, errno, "%s: %s", path, strerror(errno));
	char *buf = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	for (;;) {
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			char *b = ncap <= 2 * (size_t)MX_FILE_MAX ? realloc(buf, ncap) : NULL;
			if (!b) {
				rc = spmtap_seterr(err, errlen, ENOMEM, "%s: out of memory", path);
				break;
			}
			buf = b;
			cap = ncap;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (n > MX_FILE_MAX) {
			rc = spmtap_seterr(err, errlen, EFBIG, "%s: larger than %u MiB, which no metrics file is",
					   path, MX_FILE_MAX >> 20);
			break;
		}
		if (got == 0) {
			if (ferror(f))
				rc = spmtap_seterr(err, errlen, EIO, "%s: read error", path);
			break;
		}
	}
	fclose(f);
	if (!rc)
		rc = mx_set_add_text(s, buf ? buf : "", n, path, err, errlen);
	free(buf);
	return rc;
}

size_t mx_set_count(const struct mx_set *s)
{
	return s->n;
}

int mx_set_find(const struct mx_set *s, const char *name)
{
	return mx_find_metric(s, name, strlen(name));
}

int mx_set_info(const struct mx_set *s, size_t i, struct mx_info *out)
{
	if (i >= s->n)
		return -EINVAL;
	const struct mx_metric *m = &s->m[i];
	*out = (struct mx_info){ m->name, m->expr, m->desc, m->unit, m->origin };
	return 0;
}
