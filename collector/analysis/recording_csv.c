/* SPDX-License-Identifier: MIT */
/*
 * A recording's CSV files read back (docs/formats/csv.md): NAME_spm.csv,
 * NAME_smi.csv and NAME_phases.csv, each possibly under its temporary name
 * (a killed run).  A last line cut short (a kill, a full disk, `truncate`)
 * is left out and said, never parsed into numbers.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/recording_priv.h"
#include "log.h"

#define REC_MAX_COLS 1024

/* Split a line in place at commas; the number of cells (at most max). */
static uint32_t split(char *line, char **cell, uint32_t max)
{
	uint32_t n = 0;
	char *p = line;
	for (;;) {
		if (n < max)
			cell[n] = p;
		n++;
		char *c = strchr(p, ',');
		if (!c)
			break;
		*c = 0;
		p = c + 1;
	}
	return n;
}

static int rec_err(char *err, size_t errlen, int e, const char *file, size_t line, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
static int rec_err(char *err, size_t errlen, int e, const char *file, size_t line, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return spmtap_seterr(err, errlen, e, "%s:%zu: %s", file, line, msg);
}

static int parse_i64(const char *s, int64_t *v)
{
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return -1;
	*v = x;
	return 0;
}

static int parse_val(const char *s, double *v)
{
	if (!*s) {
		*v = NAN;
		return 0;
	}
	char *end;
	errno = 0;
	*v = strtod(s, &end);
	return errno || end == s || *end ? -1 : 0;
}

/*
 * The last line was cut (no line end, or too few cells): which table it
 * belonged to, from its own gpu and xcc cells when they are whole, else the
 * table of the row before it.
 */
static int cut_row(struct recording *r, const char *path, bool spm, char *line, size_t lineno, uint32_t ncells,
		   uint32_t want, struct rec_table *prev)
{
	char *cell[3] = { NULL, NULL, NULL };
	uint32_t n = split(line, cell, 3);
	int64_t gpu, xcc = -1;
	struct rec_table *t = prev;
	if (n > (spm ? 2u : 1u) && !parse_i64(cell[0], &gpu) && gpu >= 0 &&
	    (!spm || (!parse_i64(cell[1], &xcc) && xcc >= 0 && xcc < REC_MAX_XCC))) {
		struct rec_gpu *g = rec_gpu_of(r, (uint32_t)gpu, false);
		if (g && (spm ? g->spm[xcc].cols != NULL : g->smi.cols != NULL))
			t = spm ? &g->spm[xcc] : &g->smi;
	}
	char ln[32], how[48];
	if (ncells == want)
		snprintf(how, sizeof(how), "no line end");
	else
		snprintf(how, sizeof(how), "%u of %u cells", ncells, want);
	rec_count(ln, sizeof(ln), (long long)lineno);
	if (!t)
		return rec_note(r, "%s ends in a cut row (line %s, %s) before any whole row: it is left out",
				rec_basename(path), ln, how);
	t->cut_last_row = true;
	char where[48] = "the sensors";
	for (uint32_t i = 0; i < r->ngpu; i++) {
		if (t == &r->gpu[i].smi)
			snprintf(where, sizeof(where), "GPU %u's sensors", r->gpu[i].index);
		for (uint32_t x = 0; x < REC_MAX_XCC; x++)
			if (t == &r->gpu[i].spm[x])
				snprintf(where, sizeof(where), "GPU %u XCC %u", r->gpu[i].index, x);
	}
	return rec_note(r, "%s ends in a cut row of %s (line %s, %s): it is left out", rec_basename(path), where, ln,
			how);
}

/*
 * One CSV file of the recording: spm (gpu,xcc,host_ns,gpu_ticks,...) or
 * smi (gpu,host_ns,sensor_ts,...).  Rows go to their GPU's (and XCC's)
 * table; every table of the file shares the header's column names.
 */
static int load_file(struct recording *r, const char *path, bool spm, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : spmtap_seterr(err, errlen, errno, "%s: %s", path, strerror(errno));
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t len;
	int rc = 0;
	uint32_t fixed = spm ? 4 : 3, ncols = 0;
	char **cols = NULL;
	struct rec_table *prev = NULL;
	char **cell = malloc((REC_MAX_COLS + 8) * sizeof(*cell));
	if (!cell) {
		fclose(f);
		return -ENOMEM;
	}
	while ((len = getline(&line, &cap, f)) >= 0 && !rc) {
		lineno++;
		/* Every line the writer finishes ends in a newline: one without it was cut. */
		bool whole = len > 0 && line[len - 1] == '\n';
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (lineno == 1) {
			if (!whole) {
				rc = rec_note(r, "%s ends within its header (%zd bytes): it holds no rows",
					      rec_basename(path), len);
				if (!r->truth.incomplete)
					r->truth.truncated = true;
				break;
			}
			char *hdr = strdup(line);
			char **h = realloc(r->headers, (r->nheaders + 1) * sizeof(*h));
			if (!hdr || !h) {
				free(hdr);
				rc = -ENOMEM;
				break;
			}
			r->headers = h;
			r->headers[r->nheaders++] = hdr;
			uint32_t n = split(hdr, cell, REC_MAX_COLS + 8);
			const char *want = spm ? "gpu,xcc,host_ns,gpu_ticks" : "gpu,host_ns,sensor_ts";
			char got[64] = "";
			for (uint32_t k = 0; k < fixed && k < n; k++)
				snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", k ? "," : "", cell[k]);
			if (n < fixed || strcmp(got, want) || n > REC_MAX_COLS + fixed) {
				rc = rec_err(err, errlen, EINVAL, path, lineno, "header does not start with %s", want);
				break;
			}
			ncols = n - fixed;
			cols = malloc((ncols ? ncols : 1) * sizeof(*cols));
			if (!cols) {
				rc = -ENOMEM;
				break;
			}
			memcpy(cols, cell + fixed, ncols * sizeof(*cols));
			continue;
		}
		if (!len)
			continue;
		uint32_t n = split(line, cell, REC_MAX_COLS + 8);
		if (!whole || n != ncols + fixed) {
			/* The last line of a recording cut short may be partial: say so, keep the rest. */
			if (!whole || feof(f) || ungetc(fgetc(f), f) == EOF) {
				for (uint32_t k = 0; k + 1 < n && k + 1 < REC_MAX_COLS + 8; k++)
					cell[k][strlen(cell[k])] = ','; /* the line as it was, for cut_row */
				rc = cut_row(r, path, spm, line, lineno, n, ncols + fixed, prev);
				break;
			}
			rc = rec_err(err, errlen, EINVAL, path, lineno, "%u cells, the header has %u", n, ncols + fixed);
			break;
		}
		int64_t gpu, xcc = -1, t, ticks = -1;
		uint32_t k = 0;
		if (parse_i64(cell[k++], &gpu) || gpu < 0 ||
		    (spm && (parse_i64(cell[k++], &xcc) || xcc < 0 || xcc >= REC_MAX_XCC)) ||
		    parse_i64(cell[k++], &t) || (*cell[k] && parse_i64(cell[k], &ticks))) {
			rc = rec_err(err, errlen, EINVAL, path, lineno, "malformed gpu, xcc, host_ns or ticks");
			break;
		}
		k++;
		struct rec_gpu *g = rec_gpu_of(r, (uint32_t)gpu, true);
		if (!g) {
			rc = rec_err(err, errlen, E2BIG, path, lineno, "more than %d GPUs", REC_MAX_GPUS);
			break;
		}
		struct rec_table *tb = spm ? &g->spm[xcc] : &g->smi;
		if (!tb->cols && (rc = rec_tbl_init(tb, cols, ncols)))
			break;
		if (spm && (uint32_t)xcc + 1 > g->nspm)
			g->nspm = (uint32_t)xcc + 1;
		if ((rc = rec_tbl_grow(tb)))
			break;
		tb->t_ns[tb->n] = t;
		tb->ticks[tb->n] = ticks;
		for (uint32_t c = 0; c < ncols; c++) {
			if (parse_val(cell[fixed + c], &tb->v[c][tb->n])) {
				rc = rec_err(err, errlen, EINVAL, path, lineno, "column %s: '%s' is not a number",
					     cols[c], cell[fixed + c]);
				break;
			}
		}
		if (!rc)
			tb->n++;
		prev = tb;
	}
	if (!rc && ferror(f))
		rc = spmtap_seterr(err, errlen, EIO, "%s: read failed", path);
	free(line);
	free(cell);
	free(cols);
	fclose(f);
	return rc;
}

int rec_load_csv(struct recording *r, const struct rec_src *src, char *err, size_t errlen)
{
	int rc = 0;
	if (src->spm.path)
		rc = load_file(r, src->spm.path, true, err, errlen);
	if (!rc && src->smi.path)
		rc = load_file(r, src->smi.path, false, err, errlen);
	if (!rc && src->phases.path)
		rc = sa_phases_load(src->phases.path, &r->phases, err, errlen);
	return rc;
}
