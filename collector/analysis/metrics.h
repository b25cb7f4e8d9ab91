/* SPDX-License-Identifier: MIT */
/*
 * Derived metrics over SPM counter series, rocprofiler-style: definitions
 * `NAME = expression` over column names, compiled once against the columns
 * a recording has, then evaluated on frames the caller builds (one sample
 * of every XCC of a GPU, or the sums over a phase).  The language, the
 * variables, missing values and the built-in set are in docs/metrics.md.
 *
 * Return convention: 0 (or a count / an index) or -errno, with a sentence
 * in the optional err buffer.  A set is not thread-safe to modify; once
 * built, mx_eval() may run on it from several threads at once.
 */
#ifndef SPMTAP_ANALYSIS_METRICS_H
#define SPMTAP_ANALYSIS_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "spm/catalog.h"

struct mx_set;

/*
 * A set compiled against `columns` (the decoded column names: "SQ_WAVES",
 * "TCC_HIT[3]", "SQ_WAVES[se1]", "TA_TA_BUSY[2][se0]"; other names are
 * kept but cannot be referenced).  frame->value() is later asked by index
 * into this array.  `cat` says which block a counter belongs to (for
 * inst(), the instance counts and the built-ins); it may be NULL.
 * columns == NULL with a catalog: one bare column per streamable counter
 * of the catalog (to list or check definitions without a recording).
 * -EINVAL duplicate column or no columns and no catalog, -ENOMEM.
 */
int mx_set_new(const struct spm_catalog *cat, const char *const *columns, size_t ncolumns,
	       struct mx_set **out, char *err, size_t errlen);
void mx_set_free(struct mx_set *s);

size_t mx_set_column_count(const struct mx_set *s);
const char *mx_set_column(const struct mx_set *s, size_t col);

/*
 * Add one definition "NAME = expr" (an optional trailing "# text" becomes
 * its description).  Returns the new metric's index, or: -EINVAL syntax
 * error or misuse (a reduction over se without per-SE columns, a name that
 * is a column, a variable or a function), -ENOENT unknown name (with close
 * names), -EEXIST redefinition, -ELOOP the metric uses itself, -E2BIG too
 * deep or too costly.  Messages give the 1-based column:
 * "metric 'X=1+': column 5: expected a number, a name, '(' or '-', found
 * the end of the definition".
 */
int mx_set_add(struct mx_set *s, const char *def, char *err, size_t errlen);

/*
 * Add the definitions of a metrics file's text: one per line, '#'
 * comments, blank lines.  All or nothing: on an error no definition of
 * this text stays in the set.  Messages are "ORIGIN:LINE:COLUMN: ...";
 * a name used before the line that defines it is reported as such, and a
 * cycle between lines is named.  Returns the number of metrics added.
 */
int mx_set_add_text(struct mx_set *s, const char *text, size_t len, const char *origin, char *err,
		    size_t errlen);
/* The same for a file ("--metrics FILE"); ORIGIN is the path. */
int mx_set_add_file(struct mx_set *s, const char *path, char *err, size_t errlen);

/*
 * Add every built-in (docs/metrics.md) whose counters are all in the set's
 * catalog and all among its columns; a built-in whose name is already
 * defined is skipped (the user's definition wins).  Returns the number
 * added; -EINVAL when the set has no catalog.
 */
int mx_set_add_builtins(struct mx_set *s, char *err, size_t errlen);

/* ---- enumeration ---- */

struct mx_info {
	const char *name;
	const char *expr;   /* the definition's right-hand side, as written (trimmed) */
	const char *desc;   /* built-ins and "# ..." comments; "" when none */
	const char *unit;   /* built-ins: "%", "1/cycle", "B/s", ...; "" for user metrics */
	const char *origin; /* "built-in", "metric", "FILE:LINE" */
};

size_t mx_set_count(const struct mx_set *s);
/* Index of the metric called name, or -ENOENT. */
int mx_set_find(const struct mx_set *s, const char *name);
/* -EINVAL when i is out of range. */
int mx_set_info(const struct mx_set *s, size_t i, struct mx_info *out);

/* ---- evaluation ---- */

/*
 * What a metric is evaluated on; the caller fills it.  Per sample: the
 * k-th sample of every XCC of one GPU, interval = the programmed sample
 * interval, dt = the sample period in seconds.  Per phase: each value is
 * the XCC's sum of that column over the phase's samples, interval = the
 * sum of the samples' intervals, dt = the phase's duration; a metric is
 * then a ratio of sums, not a mean of per-sample ratios.
 */
struct mx_frame {
	unsigned int nxcc;         /* XCCs, indices 0..nxcc-1; 1..MX_MAX_XCC */
	double interval;           /* SCLK cycles the values cover (per XCC); <= 0 unknown */
	double dt;                 /* seconds the values cover; <= 0 unknown */
	unsigned int se_per_xcc;   /* geometry; 0 unknown */
	unsigned int cus_per_se;   /* TA/TD/TCP instances per SE as planned; 0 unknown */
	unsigned int cu_count;     /* CUs of all nxcc XCCs together; 0 unknown */
	/*
	 * Value of column `col` (mx_set_column(s, col) == name) in XCC xcc:
	 * true with *v set, false when it is missing (a saturated value, a
	 * column this XCC's stream does not have).  A non-finite *v counts as
	 * missing.
	 */
	bool (*value)(void *user, size_t col, const char *name, unsigned int xcc, double *v);
	void *user;
};

#define MX_MAX_XCC 64u

struct mx_value {
	double v;     /* 0 when missing: never NaN or infinite */
	bool missing; /* an input was missing, a division by zero, a non-finite result */
};

/* Evaluate metric i on a frame.  -EINVAL bad index or frame. */
int mx_eval(const struct mx_set *s, size_t i, const struct mx_frame *f, struct mx_value *out);

/* ---- the built-in table, for listings and docs ---- */

struct mx_builtin {
	const char *name;
	const char *expr;  /* in the language above: users can copy it */
	const char *unit;
	const char *desc;
};

/* Every built-in of every gfx target (some names appear once per target variant). */
const struct mx_builtin *mx_builtins(size_t *n);

#endif
