// SPDX-License-Identifier: MIT
/*
 * Close names for an unknown name in a definition: the columns (full names
 * and their bases), the metrics defined so far, the variables and, after a
 * '(', the functions.  Ranked like spm_catalog_suggest() (edit distance
 * within a length-dependent limit, then prefix, then substring), which
 * cannot be reused as is: it only knows the catalog's counters.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "collector/analysis/metrics_priv.h"
#include "spm/catalog.h"

#define MX_SUGGEST_MAX 3

static bool prefix_ci(const char *s, size_t ls, const char *p, size_t lp)
{
	return ls >= lp && !strncasecmp(s, p, lp);
}

static bool contains_ci(const char *s, size_t ls, const char *p, size_t lp)
{
	for (size_t i = 0; i + lp <= ls; i++)
		if (!strncasecmp(s + i, p, lp))
			return true;
	return false;
}

struct ranking {
	const char *name, *cand[MX_SUGGEST_MAX];
	size_t len;
	unsigned int score[MX_SUGGEST_MAX], got;
};

static void consider(struct ranking *r, const char *c)
{
	size_t lc = strlen(c);
	unsigned int limit = r->len <= 4 ? 1 : r->len <= 8 ? 2 : 3, s;
	unsigned int d = spm_edit_distance(r->name, r->len, c, lc);
	/* "TCC_HIT[33]": the counter exists, the instance does not */
	const char *br = memchr(r->name, '[', r->len);
	if (br) {
		unsigned int db = spm_edit_distance(r->name, (size_t)(br - r->name), c, lc);
		d = db < d ? db : d;
	}

	if (lc == r->len && !memcmp(c, r->name, lc))
		return;
	if (d <= limit)
		s = d;
	else if (r->len >= 3 && prefix_ci(c, lc, r->name, r->len))
		s = 10 + (unsigned int)(lc - r->len);
	else if (r->len >= 4 && contains_ci(c, lc, r->name, r->len))
		s = 100 + (unsigned int)(lc - r->len);
	else
		return;
	for (unsigned int i = 0; i < r->got; i++)
		if (!strcmp(r->cand[i], c))
			return;
	unsigned int pos = r->got;
	while (pos > 0 && r->score[pos - 1] > s)
		pos--;
	if (pos >= MX_SUGGEST_MAX)
		return;
	unsigned int last = r->got < MX_SUGGEST_MAX ? r->got : MX_SUGGEST_MAX - 1;
	for (unsigned int k = last; k > pos; k--) {
		r->score[k] = r->score[k - 1];
		r->cand[k] = r->cand[k - 1];
	}
	r->score[pos] = s;
	r->cand[pos] = c;
	if (r->got < MX_SUGGEST_MAX)
		r->got++;
}

void mx_suggest(const struct mx_set *s, const char *name, size_t n, bool fn, char *out, size_t outlen)
{
	struct ranking r = { .name = name, .len = n };

	if (fn) {
		for (int i = 0; i < MX_F_COUNT; i++)
			consider(&r, mx_fn_names[i]);
	} else {
		for (size_t i = 0; i < s->n; i++)
			consider(&r, s->m[i].name);
		for (int i = 0; i < MX_V_COUNT; i++)
			consider(&r, mx_var_names[i]);
		for (size_t i = 0; i < s->ncols; i++) {
			if (!s->cols[i].base)
				continue;
			consider(&r, s->cols[i].base);
			consider(&r, s->cols[i].name);
		}
	}
	size_t off = 0;
	out[0] = 0;
	for (unsigned int i = 0; i < r.got && off < outlen; i++)
		off += (size_t)snprintf(out + off, outlen - off, "%s%s",
					i == 0 ? "" : i + 1 == r.got ? " or " : ", ", r.cand[i]);
}
