/* SPDX-License-Identifier: MIT */
/*
 * Internals of the derived-metric compiler (metrics.h), shared by the set
 * (metrics.c), the lexer and parser (metrics_parse.c), the evaluator
 * (metrics_eval.c), close-name suggestions (metrics_suggest.c) and the
 * built-ins (metrics_builtin.c).
 */
#ifndef SPMTAP_ANALYSIS_METRICS_PRIV_H
#define SPMTAP_ANALYSIS_METRICS_PRIV_H

#include <stdint.h>

#include "collector/analysis/metrics.h"

/* Limits that keep a hostile definition from exhausting the stack or time. */
#define MX_MAX_NEST 64          /* parentheses, unary minus and calls, per definition */
#define MX_MAX_DEPTH 1000       /* evaluation depth, through metric references */
#define MX_MAX_COST 1000000.0   /* nominal operations per evaluation */
#define MX_XCC_COST 8.0         /* what one reduction over xcc is assumed to multiply */
#define MX_MAX_SE 64            /* SE indices a column may name ([se0]..[se63]) */

enum mx_tok {
	MX_T_END,    /* end of text, or '#' (a comment follows) */
	MX_T_NUM,
	MX_T_NAME,   /* identifier, possibly with [..] groups */
	MX_T_LP,
	MX_T_RP,
	MX_T_COMMA,
	MX_T_PLUS,
	MX_T_MINUS,
	MX_T_STAR,
	MX_T_SLASH,
	MX_T_EQ,
	MX_T_BAD,    /* the lexer's message is in tok.why */
};

struct mx_token {
	enum mx_tok t;
	size_t pos, len;   /* byte offset and length in the definition text */
	bool brackets;     /* a name with [..] groups */
	double num;
	const char *why;   /* MX_T_BAD */
};

/* Next token at *pos; advances *pos. */
void mx_lex(const char *text, size_t len, size_t *pos, struct mx_token *tok);
/* 1-based column of byte offset pos, counting UTF-8 characters. */
unsigned int mx_column(const char *text, size_t pos);

enum mx_var { MX_V_INTERVAL, MX_V_DT, MX_V_SCLK, MX_V_NXCC, MX_V_NSE, MX_V_NCU, MX_V_COUNT };
enum mx_fn { MX_F_SUM, MX_F_AVG, MX_F_MIN, MX_F_MAX, MX_F_INST, MX_F_COUNT };
enum mx_dim { MX_D_XCC, MX_D_SE };

extern const char *const mx_var_names[MX_V_COUNT];
extern const char *const mx_fn_names[MX_F_COUNT];
int mx_var_lookup(const char *s, size_t n);
int mx_fn_lookup(const char *s, size_t n);

enum mx_op {
	MX_N_NUM, MX_N_VAR, MX_N_REF, MX_N_INST, MX_N_METRIC,
	MX_N_NEG, MX_N_ADD, MX_N_SUB, MX_N_MUL, MX_N_DIV, MX_N_RED,
};

struct mx_node {
	uint8_t op;      /* enum mx_op */
	uint8_t sub;     /* MX_N_VAR: enum mx_var; MX_N_RED: enum mx_fn */
	uint8_t dim;     /* MX_N_RED: enum mx_dim */
	int32_t a, b;    /* children; MX_N_REF/INST: ref index; MX_N_METRIC: metric index */
	double num;
	uint64_t semask; /* MX_N_RED over se: the SE indices iterated */
	double cost;     /* nominal operations to evaluate the subtree */
	uint32_t depth;  /* evaluation depth of the subtree, through metrics */
	uint32_t pos;    /* byte offset in the definition, for messages */
};

/* A decoded column and what its name says. */
struct mx_col {
	char *name;
	char *base;     /* NULL: the name is not <identifier>[..] and cannot be referenced */
	int inst, se;   /* from "[N]" and "[seN]"; -1 absent */
	int block;      /* enum spm_block from the catalog; -1 unknown */
	bool se_block;  /* the block is counted per SE */
};

/* A counter reference as written, resolved to columns once per set. */
struct mx_ref {
	char *text;
	size_t *top, ntop;        /* summed outside SE reductions */
	size_t *perse, nperse;    /* "[seK]" columns, for SE reductions */
	uint64_t semask;
	bool pinned_se;           /* the reference itself names one SE */
};

struct mx_metric {
	char *name, *expr, *desc, *origin, *unit;
	struct mx_node *nodes;
	uint32_t nnodes;
	int32_t root;
	/* For use inside a reduction over se: every reference reachable has
	 * per-SE columns (se_bad == NULL), and their SE indices. */
	uint64_t se_mask;
	const char *se_bad;   /* text of the first reference that has none */
	bool se_bad_pinned;   /* ... because it names one SE */
};

struct mx_set {
	const struct spm_catalog *cat;
	struct mx_col *cols;
	size_t ncols;
	struct mx_ref *refs;
	size_t nrefs, crefs;
	struct mx_metric *m;
	size_t n, cap;
};

/* A definition still to come in the same text: for "used before" and cycles. */
struct mx_later {
	char *name;
	unsigned int line;
	const char *rhs;
	size_t rhslen;
};

/* Where a definition comes from, for messages and mx_info.origin. */
struct mx_src {
	const char *origin;    /* file name; NULL for a single definition */
	unsigned int line;
	const struct mx_later *later;
	size_t nlater;
	bool builtin;
};

/*
 * Compile one definition (text, len: no newline) and append it to the set.
 * Returns the index or -errno with the message in err.
 */
int mx_define(struct mx_set *s, const char *text, size_t len, const struct mx_src *src, char *err,
	      size_t errlen);
void mx_metric_release(struct mx_metric *m);

/* Index of the reference `text` (resolved on first use), or -ENOENT if no column matches. */
int mx_ref_get(struct mx_set *s, const char *text, size_t len);

/* The streamable catalog counter spelt exactly name[0..n), or NULL; no suggestions computed. */
const struct spm_counter *mx_catalog_find(const struct spm_catalog *cat, const char *name, size_t n);

/* Is `s[0..n)` the base of some referenceable column? */
bool mx_is_column_base(const struct mx_set *s, const char *name, size_t n);
int mx_find_metric(const struct mx_set *s, const char *name, size_t n);

/*
 * Close names to `name` among the columns (full names and bases), the
 * metrics and, when `fn` is set, the function names: "A, B or C", up to 3,
 * best first; "" when none.
 */
void mx_suggest(const struct mx_set *s, const char *name, size_t n, bool fn, char *out, size_t outlen);

#endif
