// SPDX-License-Identifier: MIT
/*
 * One definition "NAME = expression" to a tree of mx_node (metrics_priv.h),
 * by recursive descent over the grammar in docs/metrics.md.  Every name is
 * resolved here, against the set's columns and earlier metrics, so that
 * evaluation cannot fail on a name; each error names the 1-based column.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/metrics_priv.h"
#include "log.h"

struct parser {
	struct mx_set *s;
	const char *t;
	size_t len, pos;
	struct mx_token tok;
	const struct mx_src *src;
	const char *name; /* the metric being defined */
	size_t namelen;
	struct mx_node *nodes;
	uint32_t nnodes, cap;
	int nest;
	int rc;
	char *err;
	size_t errlen;
};

/* Records the first error only; always returns -1 (no node). */
__attribute__((format(printf, 4, 5)))
static int32_t perr(struct parser *p, size_t pos, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (p->rc)
		return -1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	unsigned int col = mx_column(p->t, pos);
	const char *more = p->len > 60 ? "..." : "";
	int shown = p->len > 60 ? 60 : (int)p->len;
	if (p->src->origin)
		p->rc = spmtap_seterr(p->err, p->errlen, code, "%s:%u:%u: %s", p->src->origin, p->src->line,
				      col, msg);
	else
		p->rc = spmtap_seterr(p->err, p->errlen, code, "%s '%.*s%s': column %u: %s",
				      p->src->builtin ? "built-in" : "metric", shown, p->t, more, col, msg);
	return -1;
}

static const char *found(const struct parser *p, char *buf, size_t n)
{
	const struct mx_token *k = &p->tok;
	int l = k->len > 40 ? 40 : (int)k->len;

	switch (k->t) {
	case MX_T_END:
		return k->pos < p->len ? "'#' (a comment)" : "the end of the definition";
	case MX_T_NUM:
		snprintf(buf, n, "the number %.*s", l, p->t + k->pos);
		return buf;
	case MX_T_NAME:
		snprintf(buf, n, "the name %.*s", l, p->t + k->pos);
		return buf;
	default:
		snprintf(buf, n, "'%.*s'", l, p->t + k->pos);
		return buf;
	}
}

static bool advance(struct parser *p)
{
	mx_lex(p->t, p->len, &p->pos, &p->tok);
	if (p->tok.t != MX_T_BAD)
		return true;
	unsigned char c = (unsigned char)p->t[p->tok.pos];
	if (p->tok.why)
		perr(p, p->tok.pos, EINVAL, "%s", p->tok.why);
	else if (c >= 0x20 && c < 0x7f)
		perr(p, p->tok.pos, EINVAL, "unexpected character '%c'", c);
	else
		perr(p, p->tok.pos, EINVAL, "unexpected %s byte 0x%02x", c < 0x80 ? "control" : "non-ASCII", c);
	return false;
}

static int32_t node(struct parser *p, enum mx_op op, size_t pos)
{
	if (p->rc)
		return -1;
	if (p->nnodes == p->cap) {
		uint32_t cap = p->cap ? p->cap * 2 : 16;
		struct mx_node *n = realloc(p->nodes, cap * sizeof(*n));
		if (!n) {
			p->rc = spmtap_seterr(p->err, p->errlen, ENOMEM, "out of memory compiling a metric");
			return -1;
		}
		p->nodes = n;
		p->cap = cap;
	}
	struct mx_node *n = &p->nodes[p->nnodes];
	memset(n, 0, sizeof(*n));
	n->op = (uint8_t)op;
	n->a = n->b = -1;
	n->pos = (uint32_t)pos;
	return (int32_t)p->nnodes++;
}

static int popcount64(uint64_t v)
{
	int n = 0;
	for (; v; v &= v - 1)
		n++;
	return n;
}

/* Cost and depth of node i from its children; refuses what is too big. */
static int32_t finish(struct parser *p, int32_t i)
{
	struct mx_node *n = &p->nodes[i];
	const struct mx_node *a = n->a >= 0 ? &p->nodes[n->a] : NULL;
	const struct mx_node *b = n->b >= 0 ? &p->nodes[n->b] : NULL;

	switch (n->op) {
	case MX_N_REF:
	case MX_N_INST: {
		const struct mx_ref *r = &p->s->refs[n->a];
		n->cost = 1.0 + (double)(r->ntop + r->nperse);
		n->depth = 1;
		break;
	}
	case MX_N_METRIC: {
		const struct mx_metric *m = &p->s->m[n->a];
		n->cost = m->nodes[m->root].cost;
		n->depth = 1 + m->nodes[m->root].depth;
		break;
	}
	case MX_N_NEG:
		n->cost = 1.0 + a->cost;
		n->depth = 1 + a->depth;
		break;
	case MX_N_ADD:
	case MX_N_SUB:
	case MX_N_MUL:
	case MX_N_DIV:
		n->cost = 1.0 + a->cost + b->cost;
		n->depth = 1 + (a->depth > b->depth ? a->depth : b->depth);
		break;
	case MX_N_RED:
		n->cost = 1.0 + a->cost * MX_XCC_COST * (n->dim == MX_D_SE ? popcount64(n->semask) : 1);
		n->depth = 1 + a->depth;
		break;
	default:
		n->cost = 1.0;
		n->depth = 1;
		break;
	}
	if (n->depth > MX_MAX_DEPTH)
		return perr(p, n->pos, E2BIG, "nested too deeply: %u levels through operators and metric "
			    "references (the limit is %u)", n->depth, MX_MAX_DEPTH);
	if (n->cost > MX_MAX_COST)
		return perr(p, n->pos, E2BIG, "too costly: about %.3g operations per evaluation through metric "
			    "references and reductions (the limit is %.0f)", n->cost, MX_MAX_COST);
	return i;
}

static bool same(const char *a, size_t la, const char *b)
{
	return strlen(b) == la && !memcmp(a, b, la);
}

/* ---- "used before its definition" and cycles, for a metrics file ---- */

static int later_find(const struct mx_src *src, const char *nm, size_t nl)
{
	for (size_t i = 0; i < src->nlater; i++)
		if (src->later[i].line > src->line && same(nm, nl, src->later[i].name))
			return (int)i;
	return -1;
}

#define MX_CYCLE_MAX 32

/* Does later[i] reach `target` through names defined further down? */
static bool reaches(const struct mx_src *src, const char *target, size_t i, bool *seen, size_t *path,
		    size_t *depth)
{
	const struct mx_later *l = &src->later[i];
	struct mx_token k;
	size_t pos = 0;

	if (seen[i] || *depth >= MX_CYCLE_MAX)
		return false;
	seen[i] = true;
	path[(*depth)++] = i;
	for (mx_lex(l->rhs, l->rhslen, &pos, &k); k.t != MX_T_END && k.t != MX_T_BAD;
	     mx_lex(l->rhs, l->rhslen, &pos, &k)) {
		if (k.t != MX_T_NAME || k.brackets)
			continue;
		if (same(l->rhs + k.pos, k.len, target))
			return true;
		int j = later_find(src, l->rhs + k.pos, k.len);
		if (j >= 0 && reaches(src, target, (size_t)j, seen, path, depth))
			return true;
	}
	(*depth)--;
	return false;
}

static int32_t used_before(struct parser *p, const char *nm, size_t nl, size_t pos, int li)
{
	const struct mx_src *src = p->src;
	char target[256];
	size_t path[MX_CYCLE_MAX], depth = 0;
	bool *seen = calloc(src->nlater, sizeof(*seen));

	snprintf(target, sizeof(target), "%.*s", (int)p->namelen, p->name);
	bool cyc = seen && reaches(src, target, (size_t)li, seen, path, &depth);
	free(seen);
	if (!cyc)
		return perr(p, pos, ENOENT, "%.*s is used before its definition on line %u; define it first",
			    (int)nl, nm, src->later[li].line);
	char chain[384];
	size_t off = (size_t)snprintf(chain, sizeof(chain), "%s", target);
	for (size_t i = 0; i < depth && off < sizeof(chain); i++)
		off += (size_t)snprintf(chain + off, sizeof(chain) - off, " -> %s (line %u)",
					src->later[path[i]].name, src->later[path[i]].line);
	if (off < sizeof(chain))
		snprintf(chain + off, sizeof(chain) - off, " -> %s", target);
	return perr(p, pos, ELOOP, "cycle %s: metrics cannot depend on each other", chain);
}

static int32_t unknown(struct parser *p, const char *nm, size_t nl, size_t pos, bool brackets, bool fn)
{
	char sug[256];
	int li = fn || brackets ? -1 : later_find(p->src, nm, nl);

	if (li >= 0)
		return used_before(p, nm, nl, pos, li);
	mx_suggest(p->s, nm, nl, fn, sug, sizeof(sug));
	const char *what = fn ? "function" : brackets ? "column" : "name";
	if (*sug)
		return perr(p, pos, ENOENT, "unknown %s %.*s; did you mean %s?", what, (int)nl, nm, sug);
	if (fn)
		return perr(p, pos, ENOENT, "unknown function %.*s (the functions are sum, avg, min, max and inst)",
			    (int)nl, nm);
	return perr(p, pos, ENOENT, "unknown %s %.*s: no column of the recording, metric defined before it "
		    "or variable has that name", what, (int)nl, nm);
}

static int32_t counter(struct parser *p, const char *nm, size_t nl, size_t pos, bool brackets,
		       enum mx_op op)
{
	int r = mx_ref_get(p->s, nm, nl);
	if (r == -ENOMEM) {
		p->rc = spmtap_seterr(p->err, p->errlen, ENOMEM, "out of memory compiling a metric");
		return -1;
	}
	if (r < 0)
		return unknown(p, nm, nl, pos, brackets, false);
	int32_t n = node(p, op, pos);
	if (n < 0)
		return -1;
	p->nodes[n].a = r;
	return finish(p, n);
}

/* ---- what a reduction over se needs: per-SE columns behind every reference ---- */

struct se_scan {
	uint64_t mask;
	const char *bad, *via;
	bool pinned;
	size_t pos;
};

static void scan(const struct parser *p, int32_t i, struct se_scan *sc)
{
	const struct mx_node *n = &p->nodes[i];

	switch (n->op) {
	case MX_N_REF:
	case MX_N_INST: {
		const struct mx_ref *r = &p->s->refs[n->a];
		if (r->pinned_se || !r->nperse) {
			if (!sc->bad)
				*sc = (struct se_scan){ sc->mask, r->text, NULL, r->pinned_se, n->pos };
			return;
		}
		sc->mask |= r->semask;
		return;
	}
	case MX_N_METRIC: {
		const struct mx_metric *m = &p->s->m[n->a];
		if (m->se_bad) {
			if (!sc->bad)
				*sc = (struct se_scan){ sc->mask, m->se_bad, m->name, m->se_bad_pinned, n->pos };
			return;
		}
		sc->mask |= m->se_mask;
		return;
	}
	case MX_N_NEG:
	case MX_N_RED:
		scan(p, n->a, sc);
		return;
	case MX_N_ADD:
	case MX_N_SUB:
	case MX_N_MUL:
	case MX_N_DIV:
		scan(p, n->a, sc);
		scan(p, n->b, sc);
		return;
	default:
		return;
	}
}

static int32_t expr(struct parser *p);

static int32_t inst_call(struct parser *p, size_t fpos)
{
	char fb[64];

	if (p->tok.t != MX_T_NAME)
		return perr(p, p->tok.pos, EINVAL, "inst() takes a counter name, found %s", found(p, fb, sizeof(fb)));
	const char *nm = p->t + p->tok.pos;
	size_t nl = p->tok.len, pos = p->tok.pos;
	bool br = p->tok.brackets;
	if (!br && (mx_var_lookup(nm, nl) >= 0 || mx_find_metric(p->s, nm, nl) >= 0))
		return perr(p, pos, EINVAL, "inst() takes a counter name; %.*s is a %s", (int)nl, nm,
			    mx_var_lookup(nm, nl) >= 0 ? "variable" : "metric");
	int32_t n = counter(p, nm, nl, pos, br, MX_N_INST);
	if (n < 0)
		return -1;
	const struct mx_ref *r = &p->s->refs[p->nodes[n].a];
	for (size_t i = 0; i < r->ntop + r->nperse; i++) {
		size_t c = i < r->ntop ? r->top[i] : r->perse[i - r->ntop];
		if (p->s->cols[c].block < 0)
			return perr(p, pos, EINVAL, "inst(%.*s): the number of instances of %s is unknown: %s",
				    (int)nl, nm, p->s->cols[c].base,
				    p->s->cat ? "the counter is not in the catalog" : "no counter catalog was given");
	}
	if (!advance(p))
		return -1;
	if (p->tok.t != MX_T_RP)
		return perr(p, p->tok.pos, EINVAL, "expected ')' to close inst( at column %u, found %s",
			    mx_column(p->t, fpos), found(p, fb, sizeof(fb)));
	return n;
}

static int32_t call(struct parser *p, const char *nm, size_t nl, size_t pos)
{
	char fb[64];
	int f = mx_fn_lookup(nm, nl);

	if (f < 0)
		return unknown(p, nm, nl, pos, false, true);
	if (++p->nest > MX_MAX_NEST)
		return perr(p, pos, E2BIG, "nested too deeply (more than %d parentheses, calls or unary minus)",
			    MX_MAX_NEST);
	if (!advance(p))
		return -1;
	if (f == MX_F_INST) {
		int32_t n = inst_call(p, pos);
		if (n < 0 || !advance(p))
			return -1;
		p->nest--;
		return n;
	}
	int32_t a = expr(p);
	if (a < 0)
		return -1;
	if (p->tok.t != MX_T_COMMA)
		return perr(p, p->tok.pos, EINVAL, "expected ',' and a dimension (xcc or se) after the first "
			    "argument of %s(, found %s", mx_fn_names[f], found(p, fb, sizeof(fb)));
	if (!advance(p))
		return -1;
	int dim;
	if (p->tok.t == MX_T_NAME && !p->tok.brackets && same(p->t + p->tok.pos, p->tok.len, "xcc"))
		dim = MX_D_XCC;
	else if (p->tok.t == MX_T_NAME && !p->tok.brackets && same(p->t + p->tok.pos, p->tok.len, "se"))
		dim = MX_D_SE;
	else if (p->tok.t == MX_T_NAME)
		return perr(p, p->tok.pos, EINVAL, "unknown dimension %.*s: expected xcc or se",
			    (int)(p->tok.len > 40 ? 40 : p->tok.len), p->t + p->tok.pos);
	else
		return perr(p, p->tok.pos, EINVAL, "expected a dimension (xcc or se), found %s",
			    found(p, fb, sizeof(fb)));
	if (!advance(p))
		return -1;
	if (p->tok.t != MX_T_RP)
		return perr(p, p->tok.pos, EINVAL, "expected ')' to close %s( at column %u, found %s",
			    mx_fn_names[f], mx_column(p->t, pos), found(p, fb, sizeof(fb)));
	if (!advance(p))
		return -1;
	p->nest--;
	int32_t n = node(p, MX_N_RED, pos);
	if (n < 0)
		return -1;
	p->nodes[n].sub = (uint8_t)f;
	p->nodes[n].dim = (uint8_t)dim;
	p->nodes[n].a = a;
	if (dim == MX_D_SE) {
		struct se_scan sc = { 0 };
		scan(p, a, &sc);
		char via[300] = "";
		if (sc.via)
			snprintf(via, sizeof(via), " (through metric %s)", sc.via);
		if (sc.bad && sc.pinned)
			return perr(p, sc.pos, EINVAL, "%s names one SE, so %s(..., se) cannot reduce it over "
				    "SEs%s", sc.bad, mx_fn_names[f], via);
		if (sc.bad)
			return perr(p, sc.pos, EINVAL, "%s(..., se) evaluates its argument per SE, but %s has no "
				    "per-SE columns%s: record with --per-se to get %s[seK]", mx_fn_names[f], sc.bad,
				    via, sc.bad);
		if (!sc.mask)
			return perr(p, pos, EINVAL, "%s(..., se) needs a counter in its first argument: nothing "
				    "in it varies by SE", mx_fn_names[f]);
		p->nodes[n].semask = sc.mask;
	}
	return finish(p, n);
}

static int32_t name_expr(struct parser *p)
{
	const char *nm = p->t + p->tok.pos;
	size_t nl = p->tok.len, pos = p->tok.pos;
	bool br = p->tok.brackets;

	if (!advance(p))
		return -1;
	if (!br && p->tok.t == MX_T_LP)
		return call(p, nm, nl, pos);
	if (br)
		return counter(p, nm, nl, pos, true, MX_N_REF);
	int v = mx_var_lookup(nm, nl);
	if (v >= 0) {
		int32_t n = node(p, MX_N_VAR, pos);
		if (n < 0)
			return -1;
		p->nodes[n].sub = (uint8_t)v;
		return finish(p, n);
	}
	if (same(nm, nl, "xcc") || same(nm, nl, "se"))
		return perr(p, pos, EINVAL, "%.*s is a dimension: it can only be the second argument of sum, avg, "
			    "min or max", (int)nl, nm);
	if (mx_fn_lookup(nm, nl) >= 0)
		return perr(p, pos, EINVAL, "%.*s is a function: expected '(' after it", (int)nl, nm);
	if (nl == p->namelen && !memcmp(nm, p->name, nl))
		return perr(p, pos, ELOOP, "%.*s uses itself: a metric cannot refer to its own value", (int)nl, nm);
	int mi = mx_find_metric(p->s, nm, nl);
	if (mi >= 0) {
		int32_t n = node(p, MX_N_METRIC, pos);
		if (n < 0)
			return -1;
		p->nodes[n].a = mi;
		return finish(p, n);
	}
	return counter(p, nm, nl, pos, false, MX_N_REF);
}

static int32_t primary(struct parser *p)
{
	char fb[64];
	size_t pos = p->tok.pos;

	switch (p->tok.t) {
	case MX_T_NUM: {
		int32_t n = node(p, MX_N_NUM, pos);
		if (n < 0)
			return -1;
		p->nodes[n].num = p->tok.num;
		return advance(p) ? finish(p, n) : -1;
	}
	case MX_T_LP: {
		if (++p->nest > MX_MAX_NEST)
			return perr(p, pos, E2BIG, "nested too deeply (more than %d parentheses, calls or unary "
				    "minus)", MX_MAX_NEST);
		if (!advance(p))
			return -1;
		int32_t e = expr(p);
		if (e < 0)
			return -1;
		if (p->tok.t != MX_T_RP)
			return perr(p, p->tok.pos, EINVAL, "expected ')' to close the '(' at column %u, found %s",
				    mx_column(p->t, pos), found(p, fb, sizeof(fb)));
		p->nest--;
		return advance(p) ? e : -1;
	}
	case MX_T_NAME:
		return name_expr(p);
	default:
		return perr(p, pos, EINVAL, "expected a number, a name, '(' or '-', found %s", found(p, fb, sizeof(fb)));
	}
}

static int32_t unary(struct parser *p)
{
	if (p->tok.t != MX_T_MINUS)
		return primary(p);
	size_t pos = p->tok.pos;
	if (++p->nest > MX_MAX_NEST)
		return perr(p, pos, E2BIG, "nested too deeply (more than %d parentheses, calls or unary minus)",
			    MX_MAX_NEST);
	if (!advance(p))
		return -1;
	int32_t a = unary(p);
	if (a < 0)
		return -1;
	p->nest--;
	int32_t n = node(p, MX_N_NEG, pos);
	if (n < 0)
		return -1;
	p->nodes[n].a = a;
	return finish(p, n);
}

static int32_t binary(struct parser *p, int32_t (*operand)(struct parser *), enum mx_tok t1, enum mx_op o1,
		      enum mx_tok t2, enum mx_op o2)
{
	int32_t a = operand(p);
	while (a >= 0 && (p->tok.t == t1 || p->tok.t == t2)) {
		enum mx_op op = p->tok.t == t1 ? o1 : o2;
		size_t pos = p->tok.pos;
		if (!advance(p))
			return -1;
		int32_t b = operand(p);
		if (b < 0)
			return -1;
		int32_t n = node(p, op, pos);
		if (n < 0)
			return -1;
		p->nodes[n].a = a;
		p->nodes[n].b = b;
		a = finish(p, n);
	}
	return a;
}

static int32_t term(struct parser *p)
{
	return binary(p, unary, MX_T_STAR, MX_N_MUL, MX_T_SLASH, MX_N_DIV);
}

static int32_t expr(struct parser *p)
{
	return binary(p, term, MX_T_PLUS, MX_N_ADD, MX_T_MINUS, MX_N_SUB);
}

/* The name of a new metric must not shadow anything an expression can name. */
static int check_name(struct parser *p, size_t pos)
{
	const char *nm = p->name;
	int l = (int)p->namelen;

	if (mx_var_lookup(nm, p->namelen) >= 0)
		return perr(p, pos, EINVAL, "%.*s is a variable; a metric needs a name of its own", l, nm);
	if (mx_fn_lookup(nm, p->namelen) >= 0)
		return perr(p, pos, EINVAL, "%.*s is a function; a metric needs a name of its own", l, nm);
	if (same(nm, p->namelen, "xcc") || same(nm, p->namelen, "se"))
		return perr(p, pos, EINVAL, "%.*s is a dimension; a metric needs a name of its own", l, nm);
	if (mx_is_column_base(p->s, nm, p->namelen))
		return perr(p, pos, EINVAL, "%.*s is a counter column; a metric needs a name of its own", l, nm);
	int mi = mx_find_metric(p->s, nm, p->namelen);
	if (mi >= 0) {
		const char *o = p->s->m[mi].origin;
		if (!strcmp(o, "built-in"))
			return perr(p, pos, EEXIST, "%.*s is already defined as a built-in metric", l, nm);
		if (!strcmp(o, "metric"))
			return perr(p, pos, EEXIST, "%.*s is already defined", l, nm);
		return perr(p, pos, EEXIST, "%.*s is already defined at %s", l, nm, o);
	}
	return 0;
}

static char *dup_trimmed(const char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		n--;
	return strndup(s, n);
}

static int append(struct parser *p, int32_t root, size_t rhs, size_t end)
{
	struct mx_set *s = p->s;
	char origin[300];

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct mx_metric *m = realloc(s->m, cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		s->m = m;
		s->cap = cap;
	}
	struct mx_metric *m = &s->m[s->n];
	memset(m, 0, sizeof(*m));
	if (p->src->builtin)
		snprintf(origin, sizeof(origin), "built-in");
	else if (p->src->origin)
		snprintf(origin, sizeof(origin), "%s:%u", p->src->origin, p->src->line);
	else
		snprintf(origin, sizeof(origin), "metric");
	m->name = strndup(p->name, p->namelen);
	m->expr = dup_trimmed(p->t + rhs, end - rhs);
	m->desc = end < p->len ? dup_trimmed(p->t + end + 1, p->len - end - 1) : strdup("");
	m->origin = strdup(origin);
	m->unit = strdup("");
	if (!m->name || !m->expr || !m->desc || !m->origin || !m->unit) {
		mx_metric_release(m);
		return -ENOMEM;
	}
	m->nodes = p->nodes;
	m->nnodes = p->nnodes;
	m->root = root;
	p->nodes = NULL;
	/* what a later reduction over se needs to know about this metric */
	struct parser view = { .s = s, .nodes = m->nodes };
	struct se_scan sc = { 0 };
	scan(&view, root, &sc);
	m->se_mask = sc.mask;
	m->se_bad = sc.bad;
	m->se_bad_pinned = sc.pinned;
	return (int)s->n++;
}

int mx_define(struct mx_set *s, const char *text, size_t len, const struct mx_src *src, char *err,
	      size_t errlen)
{
	struct parser P = { .s = s, .t = text, .len = len, .src = src, .err = err, .errlen = errlen };
	struct parser *p = &P;
	char fb[64];

	/* "3X = 1": a name is expected, so say that rather than "malformed number" */
	mx_lex(text, len, &p->pos, &p->tok);
	if (p->tok.t != MX_T_NAME || p->tok.brackets) {
		if (p->tok.t == MX_T_BAD)
			snprintf(fb, sizeof(fb), "'%.*s'", (int)(p->tok.len > 40 ? 40 : p->tok.len), text + p->tok.pos);
		perr(p, p->tok.pos, EINVAL, "expected a metric name (a letter or '_', then letters, digits or "
		     "'_') at the start of the definition, found %s",
		     p->tok.t == MX_T_BAD ? fb : found(p, fb, sizeof(fb)));
		return P.rc;
	}
	size_t npos = p->tok.pos;
	p->name = text + p->tok.pos;
	p->namelen = p->tok.len;
	if (!advance(p))
		return P.rc;
	if (p->tok.t != MX_T_EQ) {
		perr(p, p->tok.pos, EINVAL, "expected '=' after the metric name %.*s, found %s", (int)p->namelen,
		     p->name, found(p, fb, sizeof(fb)));
		return P.rc;
	}
	if (check_name(p, npos))
		return P.rc;
	size_t rhs = p->pos;
	if (!advance(p))
		return P.rc;
	int32_t root = expr(p);
	if (root >= 0 && p->tok.t == MX_T_RP)
		perr(p, p->tok.pos, EINVAL, "unmatched ')'");
	else if (root >= 0 && p->tok.t != MX_T_END)
		perr(p, p->tok.pos, EINVAL, "expected an operator (+ - * /) or the end of the definition, found %s",
		     found(p, fb, sizeof(fb)));
	if (P.rc) {
		free(P.nodes);
		return P.rc;
	}
	int idx = append(p, root, rhs, p->tok.pos);
	if (idx < 0) {
		free(P.nodes);
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory compiling a metric");
	}
	return idx;
}
