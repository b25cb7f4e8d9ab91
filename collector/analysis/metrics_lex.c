// SPDX-License-Identifier: MIT
/* Tokens of the metric language, and its reserved names (metrics_priv.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/metrics_priv.h"

const char *const mx_var_names[MX_V_COUNT] = {
	[MX_V_INTERVAL] = "interval", [MX_V_DT] = "dt", [MX_V_SCLK] = "sclk",
	[MX_V_NXCC] = "nxcc", [MX_V_NSE] = "nse", [MX_V_NCU] = "ncu",
};

const char *const mx_fn_names[MX_F_COUNT] = {
	[MX_F_SUM] = "sum", [MX_F_AVG] = "avg", [MX_F_MIN] = "min", [MX_F_MAX] = "max",
	[MX_F_INST] = "inst",
};

static int lookup(const char *const *tab, int n, const char *s, size_t len)
{
	for (int i = 0; i < n; i++)
		if (strlen(tab[i]) == len && !memcmp(tab[i], s, len))
			return i;
	return -1;
}

int mx_var_lookup(const char *s, size_t n)
{
	return lookup(mx_var_names, MX_V_COUNT, s, n);
}

int mx_fn_lookup(const char *s, size_t n)
{
	return lookup(mx_fn_names, MX_F_COUNT, s, n);
}

/* Explicit ranges: <ctype.h> depends on the locale and on signed chars. */
static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

unsigned int mx_column(const char *text, size_t pos)
{
	unsigned int col = 1;
	for (size_t i = 0; i < pos; i++)
		if (((unsigned char)text[i] & 0xC0) != 0x80)
			col++;
	return col;
}

static void bad(struct mx_token *k, size_t pos, size_t len, const char *why)
{
	k->t = MX_T_BAD;
	k->pos = pos;
	k->len = len;
	k->why = why;
}

/* Users paste typeset formulas: name the ASCII operator they meant. */
static bool typeset_operator(const char *t, size_t len, size_t p, struct mx_token *k)
{
	static const struct {
		const char *utf8, *why;
	} ops[] = {
		{ "\xC3\x97", "use the ASCII operator * for \xC3\x97" },
		{ "\xC3\xB7", "use the ASCII operator / for \xC3\xB7" },
		{ "\xE2\x88\x92", "use the ASCII operator - for \xE2\x88\x92" },
		{ "\xE2\x8B\x85", "use the ASCII operator * for \xE2\x8B\x85" },
	};
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		size_t n = strlen(ops[i].utf8);
		if (len - p >= n && !memcmp(t + p, ops[i].utf8, n)) {
			bad(k, p, n, ops[i].why);
			return true;
		}
	}
	return false;
}

static void number(const char *t, size_t len, size_t p, struct mx_token *k)
{
	size_t s = p;
	while (p < len && is_digit(t[p]))
		p++;
	if (p < len && t[p] == '.') {
		p++;
		while (p < len && is_digit(t[p]))
			p++;
	}
	if (p < len && (t[p] == 'e' || t[p] == 'E')) {
		size_t e = p + 1;
		if (e < len && (t[e] == '+' || t[e] == '-'))
			e++;
		if (e >= len || !is_digit(t[e])) {
			bad(k, s, e - s, "malformed number: expected digits after the exponent");
			return;
		}
		p = e;
		while (p < len && is_digit(t[p]))
			p++;
	}
	/* "3x", "0x10", "1.2.3": a number runs into a name or a second point */
	if (p < len && (is_alpha(t[p]) || is_digit(t[p]) || t[p] == '.')) {
		while (p < len && (is_alpha(t[p]) || is_digit(t[p]) || t[p] == '.'))
			p++;
		bad(k, s, p - s, "malformed number (decimal digits, an optional fraction and exponent)");
		return;
	}
	char buf[128];
	if (p - s >= sizeof(buf)) {
		bad(k, s, p - s, "number too long (more than 127 characters)");
		return;
	}
	memcpy(buf, t + s, p - s);
	buf[p - s] = 0;
	double v = strtod(buf, NULL);
	if (!isfinite(v)) {
		bad(k, s, p - s, "number out of range");
		return;
	}
	k->t = MX_T_NUM;
	k->pos = s;
	k->len = p - s;
	k->num = v;
}

static void name(const char *t, size_t len, size_t p, struct mx_token *k)
{
	size_t s = p;
	while (p < len && (is_alpha(t[p]) || is_digit(t[p])))
		p++;
	k->brackets = false;
	while (p < len && t[p] == '[') {
		size_t q = p + 1;
		while (q < len && (is_alpha(t[q]) || is_digit(t[q])))
			q++;
		if (q >= len || t[q] != ']') {
			bad(k, p, 1, "expected ']' to close this '[' (a bracket holds an instance N or seN)");
			return;
		}
		if (q == p + 1) {
			bad(k, p, 2, "empty brackets: expected an instance N or seN inside");
			return;
		}
		p = q + 1;
		k->brackets = true;
	}
	k->t = MX_T_NAME;
	k->pos = s;
	k->len = p - s;
}

void mx_lex(const char *t, size_t len, size_t *pos, struct mx_token *k)
{
	size_t p = *pos;
	memset(k, 0, sizeof(*k));
	while (p < len && (t[p] == ' ' || t[p] == '\t' || t[p] == '\r'))
		p++;
	k->pos = p;
	if (p >= len || t[p] == '#') {
		k->t = MX_T_END;
		*pos = p;
		return;
	}
	static const char ops[] = "()+-*/,=";
	static const enum mx_tok opt[] = { MX_T_LP, MX_T_RP, MX_T_PLUS, MX_T_MINUS,
					   MX_T_STAR, MX_T_SLASH, MX_T_COMMA, MX_T_EQ };
	const char *o = t[p] ? strchr(ops, t[p]) : NULL;
	if (o) {
		k->t = opt[o - ops];
		k->len = 1;
	} else if (is_digit(t[p]) || (t[p] == '.' && p + 1 < len && is_digit(t[p + 1]))) {
		number(t, len, p, k);
	} else if (is_alpha(t[p])) {
		name(t, len, p, k);
	} else if (!typeset_operator(t, len, p, k)) {
		/* the parser names the character; len covers a whole UTF-8 sequence */
		size_t n = 1;
		while (p + n < len && ((unsigned char)t[p + n] & 0xC0) == 0x80)
			n++;
		bad(k, p, n, NULL);
	}
	*pos = k->pos + k->len;
}
