/* SPDX-License-Identifier: MIT */
/* Reading a recording back from its CSV outputs (recording.h). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "collector/analysis/recording.h"
#include "collector/analysis/sensor_trace.h"
#include "log.h"

#define REC_MAX_COLS 1024

static char *cat(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	char *p = malloc(na + nb + 1);
	if (p) {
		memcpy(p, a, na);
		memcpy(p + na, b, nb + 1);
	}
	return p;
}

/* DIR/NAME from a directory (its one *_meta.json), a base, or the meta file. */
static int find_base(const char *path, char **base, char *err, size_t errlen)
{
	struct stat st;
	size_t n = strlen(path);
	static const char suffix[] = "_meta.json";
	if (n > sizeof(suffix) - 1 && !strcmp(path + n - (sizeof(suffix) - 1), suffix)) {
		*base = strndup(path, n - (sizeof(suffix) - 1));
		return *base ? 0 : -ENOMEM;
	}
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		if (!d)
			return spmtap_seterr(err, errlen, errno, "%s: %s", path, strerror(errno));
		char found[4][256];
		int k = 0;
		struct dirent *e;
		while ((e = readdir(d))) {
			size_t l = strlen(e->d_name);
			if (l > sizeof(suffix) - 1 && !strcmp(e->d_name + l - (sizeof(suffix) - 1), suffix)) {
				if (k < 4)
					snprintf(found[k], sizeof(found[k]), "%.*s", (int)(l - (sizeof(suffix) - 1)),
						 e->d_name);
				k++;
			}
		}
		closedir(d);
		if (k == 0)
			return spmtap_seterr(err, errlen, ENOENT,
					     "%s: no recording here (no NAME_meta.json; record with -d %s -f csv)", path,
					     path);
		if (k > 1)
			return spmtap_seterr(err, errlen, EINVAL,
					     "%s holds %d recordings (%s, %s%s): name one as %s/NAME", path, k, found[0],
					     found[1], k > 2 ? ", ..." : "", path);
		char tmp[PATH_MAX];
		snprintf(tmp, sizeof(tmp), "%s/%s", path, found[0]);
		*base = strdup(tmp);
		return *base ? 0 : -ENOMEM;
	}
	char *meta = cat(path, suffix);
	if (!meta)
		return -ENOMEM;
	int ok = stat(meta, &st) == 0;
	free(meta);
	if (!ok)
		return spmtap_seterr(err, errlen, ENOENT, "%s: not a recording (no %s%s, and not a directory)", path,
				     path, suffix);
	*base = strdup(path);
	return *base ? 0 : -ENOMEM;
}

static int tbl_grow(struct rec_table *t)
{
	if (t->n < t->cap)
		return 0;
	size_t cap = t->cap ? t->cap * 2 : 1024;
	int64_t *tt = realloc(t->t_ns, cap * sizeof(*tt));
	if (tt)
		t->t_ns = tt;
	int64_t *tk = realloc(t->ticks, cap * sizeof(*tk));
	if (tk)
		t->ticks = tk;
	if (!tt || !tk)
		return -ENOMEM;
	for (uint32_t c = 0; c < t->ncols; c++) {
		double *v = realloc(t->v[c], cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->v[c] = v;
	}
	t->cap = cap;
	return 0;
}

static void tbl_free(struct rec_table *t)
{
	free(t->t_ns);
	free(t->ticks);
	for (uint32_t c = 0; c < t->ncols; c++)
		free(t->v[c]);
	free(t->v);
	free(t->cols);
	free(t->units);
	memset(t, 0, sizeof(*t));
}

static int tbl_init(struct rec_table *t, char **cols, uint32_t ncols)
{
	t->ncols = ncols;
	t->rows_expected = -1;
	t->cols = calloc(ncols ? ncols : 1, sizeof(*t->cols));
	t->units = calloc(ncols ? ncols : 1, sizeof(*t->units));
	t->v = calloc(ncols ? ncols : 1, sizeof(*t->v));
	if (!t->cols || !t->units || !t->v)
		return -ENOMEM;
	for (uint32_t c = 0; c < ncols; c++) {
		t->cols[c] = cols[c];
		t->units[c] = "";
	}
	return 0;
}

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

static struct rec_gpu *gpu_of(struct recording *r, uint32_t index, bool make)
{
	for (uint32_t i = 0; i < r->ngpu; i++)
		if (r->gpu[i].index == index)
			return &r->gpu[i];
	if (!make || r->ngpu == REC_MAX_GPUS)
		return NULL;
	struct rec_gpu *g = &r->gpu[r->ngpu++];
	memset(g, 0, sizeof(*g));
	g->index = index;
	return g;
}

/*
 * One CSV file of the recording: spm (gpu,xcc,host_ns,gpu_ticks,...) or
 * smi (gpu,host_ns,sensor_ts,...).  Rows go to their GPU's (and XCC's)
 * table; every table of the file shares the header's column names.
 */
static int load_csv(struct recording *r, const char *path, bool spm, char *err, size_t errlen)
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
	char **cell = malloc((REC_MAX_COLS + 8) * sizeof(*cell));
	if (!cell) {
		fclose(f);
		return -ENOMEM;
	}
	while ((len = getline(&line, &cap, f)) >= 0 && !rc) {
		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (lineno == 1) {
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
		if (n != ncols + fixed) {
			/* The last line of a recording cut short (a full disk) may be partial: say so, keep the rest. */
			if (feof(f) || fgetc(f) == EOF)
				break;
			rc = rec_err(err, errlen, EINVAL, path, lineno, "%u cells, the header has %u", n, ncols + fixed);
			break;
		}
		int64_t gpu, xcc = -1, t, ticks = -1;
		uint32_t k = 0;
		if (parse_i64(cell[k++], &gpu) || gpu < 0 || (spm && (parse_i64(cell[k++], &xcc) || xcc < 0 ||
								    xcc >= REC_MAX_XCC)) ||
		    parse_i64(cell[k++], &t) || (*cell[k] && parse_i64(cell[k], &ticks))) {
			rc = rec_err(err, errlen, EINVAL, path, lineno, "malformed gpu, xcc, host_ns or ticks");
			break;
		}
		k++;
		struct rec_gpu *g = gpu_of(r, (uint32_t)gpu, true);
		if (!g) {
			rc = rec_err(err, errlen, E2BIG, path, lineno, "more than %d GPUs", REC_MAX_GPUS);
			break;
		}
		struct rec_table *tb = spm ? &g->spm[xcc] : &g->smi;
		if (!tb->cols && (rc = tbl_init(tb, cols, ncols)))
			break;
		if (spm && (uint32_t)xcc + 1 > g->nspm)
			g->nspm = (uint32_t)xcc + 1;
		if ((rc = tbl_grow(tb)))
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
	}
	free(line);
	free(cell);
	free(cols);
	fclose(f);
	return rc;
}

static const char *jstr(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

/* Units, tick domains and device facts from the metadata (docs/formats/csv.md). */
static void units_from_meta(struct recording *r)
{
	json_t *streams = json_object_get(json_object_get(r->meta, "extra"), "streams");
	size_t i;
	json_t *s;
	json_array_foreach(streams, i, s)
	{
		const char *src = json_string_value(json_object_get(s, "source"));
		struct rec_gpu *g = gpu_of(r, (uint32_t)json_integer_value(json_object_get(s, "gpu")), false);
		int xcc = (int)json_integer_value(json_object_get(s, "xcc"));
		if (!g || !src)
			continue;
		struct rec_table *t = !strcmp(src, "smi") ? &g->smi : xcc >= 0 && xcc < REC_MAX_XCC ? &g->spm[xcc] : NULL;
		if (!t)
			continue;
		const char *td = json_string_value(json_object_get(s, "tick_domain"));
		if (!strcmp(src, "smi") && td)
			snprintf(g->tick_domain, sizeof(g->tick_domain), "%s", td);
		size_t j;
		json_t *c;
		json_array_foreach(json_object_get(s, "columns"), j, c)
		{
			int k = rec_col(t, json_string_value(json_object_get(c, "name")));
			const char *u = json_string_value(json_object_get(c, "unit"));
			if (k >= 0 && u)
				t->units[k] = u; /* owned by r->meta */
		}
	}
	json_array_foreach(json_object_get(json_object_get(r->meta, "extra"), "devices"), i, s)
	{
		struct rec_gpu *g = gpu_of(r, (uint32_t)json_integer_value(json_object_get(s, "gpu")), false);
		if (!g)
			continue;
		snprintf(g->gfx, sizeof(g->gfx), "%s", jstr(s, "gfx"));
		snprintf(g->name, sizeof(g->name), "%s", jstr(s, "name"));
		g->num_xcc = (uint32_t)json_integer_value(json_object_get(s, "num_xcc"));
		g->num_se = (uint32_t)json_integer_value(json_object_get(s, "num_se"));
		g->cu_count = (uint32_t)json_integer_value(json_object_get(s, "cu_count"));
		g->cus_per_se = (uint32_t)json_integer_value(json_object_get(s, "cus_per_se"));
		g->interval = (uint32_t)json_integer_value(json_object_get(s, "interval"));
	}
}

int rec_load(const char *path, struct recording **out, char *err, size_t errlen)
{
	*out = NULL;
	struct recording *r = calloc(1, sizeof(*r));
	if (!r)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	int rc = find_base(path, &r->base, err, errlen);
	char *p = NULL;
	if (!rc) {
		p = cat(r->base, "_meta.json");
		json_error_t je;
		r->meta = p ? json_load_file(p, 0, &je) : NULL;
		if (!r->meta)
			rc = p ? spmtap_seterr(err, errlen, EINVAL, "%s:%d: %s", p, je.line, je.text) : -ENOMEM;
		free(p);
	}
	if (!rc) {
		json_t *hz = json_object_get(r->meta, "spm_clock_hz");
		r->spm_clock_hz = json_is_number(hz) ? json_number_value(hz) : 1e8;
		p = cat(r->base, "_spm.csv");
		rc = p ? load_csv(r, p, true, err, errlen) : -ENOMEM;
		free(p);
	}
	if (!rc) {
		p = cat(r->base, "_smi.csv");
		rc = p ? load_csv(r, p, false, err, errlen) : -ENOMEM;
		free(p);
	}
	if (!rc) {
		p = cat(r->base, "_phases.csv");
		struct stat st;
		if (!p)
			rc = -ENOMEM;
		else if (stat(p, &st) == 0)
			rc = sa_phases_load(p, &r->phases, err, errlen);
		free(p);
	}
	if (rc) {
		rec_free(r);
		return rc < 0 ? rc : -rc;
	}
	units_from_meta(r);
	*out = r;
	return 0;
}

void rec_free(struct recording *r)
{
	if (!r)
		return;
	for (uint32_t i = 0; i < r->ngpu; i++) {
		tbl_free(&r->gpu[i].smi);
		for (uint32_t x = 0; x < REC_MAX_XCC; x++)
			tbl_free(&r->gpu[i].spm[x]);
	}
	for (size_t i = 0; i < r->nheaders; i++)
		free(r->headers[i]);
	free(r->headers);
	for (size_t i = 0; i < r->truth.nnotes; i++)
		free(r->truth.notes[i]);
	free(r->truth.notes);
	sa_phases_free(&r->phases);
	json_decref(r->meta);
	free(r->base);
	free(r);
}

const struct rec_gpu *rec_gpu(const struct recording *r, uint32_t index)
{
	return gpu_of((struct recording *)r, index, false);
}

int rec_col(const struct rec_table *t, const char *name)
{
	for (uint32_t c = 0; name && c < t->ncols; c++)
		if (!strcmp(t->cols[c], name))
			return (int)c;
	return -1;
}

/* ---- the sensor trace ------------------------------------------------------------------------- */

/* ns per tick of a sensor timestamp domain (docs/power.md), 0 when it has none or is unknown. */
static int64_t ts_scale(const char *domain)
{
	if (!strcmp(domain, "smu_10ns"))
		return 10;
	if (!strcmp(domain, "smu_ns") || !strcmp(domain, "boottime_ns"))
		return 1;
	return 0;
}

struct trace_col {
	const struct rec_gpu *g;
	int col;            /* in g->smi */
	char unit;          /* 'J' or 'W' */
};

struct row_ref {
	int64_t t;
	uint32_t g;         /* index into r->gpu */
	size_t i;
};

static int cmp_row(const void *a, const void *b)
{
	const struct row_ref *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->g != y->g)
		return x->g < y->g ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

int rec_sensor_trace(const struct recording *r, char **buf, size_t *len, char *err, size_t errlen)
{
	*buf = NULL;
	*len = 0;
	struct trace_col tc[REC_MAX_GPUS * 8];
	size_t ntc = 0, nrows = 0;
	for (uint32_t gi = 0; gi < r->ngpu; gi++) {
		const struct rec_gpu *g = &r->gpu[gi];
		for (uint32_t c = 0; c < g->smi.ncols && ntc < sizeof(tc) / sizeof(tc[0]); c++) {
			const char *u = g->smi.units[c], *n = g->smi.cols[c];
			/* Units from the metadata; an older recording without them: energy is J, power_* W. */
			bool j = !strcmp(u, "J") || (!*u && !strcmp(n, "energy"));
			bool w = !strcmp(u, "W") || (!*u && !strncmp(n, "power_", 6));
			if ((!j && !w) || !strcmp(n, "power_dedt"))
				continue;
			tc[ntc++] = (struct trace_col){ g, (int)c, j ? 'J' : 'W' };
		}
		nrows += g->smi.n;
	}
	if (!ntc)
		return spmtap_seterr(err, errlen, ENOENT,
				     "%s has no power or energy series (record with --smi power,energy)", r->base);
	struct row_ref *rows = malloc((nrows ? nrows : 1) * sizeof(*rows));
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = rows ? open_memstream(&out, &outlen) : NULL;
	if (!f) {
		free(rows);
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	}
	size_t k = 0;
	for (uint32_t gi = 0; gi < r->ngpu; gi++)
		for (size_t i = 0; i < r->gpu[gi].smi.n; i++)
			rows[k++] = (struct row_ref){ r->gpu[gi].smi.t_ns[i], gi, i };
	qsort(rows, nrows, sizeof(*rows), cmp_row);
	bool prefix = r->ngpu > 1;
	fputs("time_ns", f);
	for (size_t c = 0; c < ntc; c++) {
		char name[96];
		if (prefix)
			snprintf(name, sizeof(name), "gpu%u.%s", tc[c].g->index, tc[c].g->smi.cols[tc[c].col]);
		else
			snprintf(name, sizeof(name), "%s", tc[c].g->smi.cols[tc[c].col]);
		fprintf(f, ",%s[%c]", name, tc[c].unit);
		if (ts_scale(tc[c].g->tick_domain))
			fprintf(f, ",%s[ts_ns]", name);
	}
	fputc('\n', f);
	for (size_t i = 0; i < nrows; i++) {
		const struct rec_gpu *g = &r->gpu[rows[i].g];
		size_t row = rows[i].i;
		fprintf(f, "%" PRId64, rows[i].t);
		for (size_t c = 0; c < ntc; c++) {
			int64_t scale = ts_scale(tc[c].g->tick_domain);
			double v = tc[c].g == g ? g->smi.v[tc[c].col][row] : NAN;
			int64_t ts = tc[c].g == g ? g->smi.ticks[row] : -1;
			/* A reading needs both cells (or the value alone where the source has no timestamp). */
			bool have = !isnan(v) && (!scale || ts >= 0);
			if (have)
				fprintf(f, ",%.17g", v);
			else
				fputc(',', f);
			if (scale) {
				if (have)
					fprintf(f, ",%" PRId64, ts * scale);
				else
					fputc(',', f);
			}
		}
		fputc('\n', f);
	}
	free(rows);
	if (fclose(f) || !out) {
		free(out);
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	}
	*buf = out;
	*len = outlen;
	return 0;
}

int rec_sensor_trace_write(const struct recording *r, const char *path, char *err, size_t errlen)
{
	char *buf;
	size_t len;
	int rc = rec_sensor_trace(r, &buf, &len, err, errlen);
	if (rc)
		return rc;
	FILE *f = strcmp(path, "-") ? fopen(path, "we") : stdout;
	if (!f) {
		rc = spmtap_seterr(err, errlen, errno, "%s: %s", path, strerror(errno));
	} else {
		bool is_stdout = f == stdout;
		size_t w = fwrite(buf, 1, len, f);
		int e = errno;
		if (is_stdout ? fflush(f) != 0 : fclose(f) != 0)
			w = 0;
		if (w != len)
			rc = spmtap_seterr(err, errlen, e ? e : EIO, "%s: %s", path, strerror(e ? e : EIO));
	}
	free(buf);
	return rc;
}

int rec_trace(const struct recording *r, struct sa_trace **tr, char *err, size_t errlen)
{
	char *buf;
	size_t len;
	*tr = NULL;
	int rc = rec_sensor_trace(r, &buf, &len, err, errlen);
	if (rc)
		return rc;
	rc = sa_trace_parse(buf, len, r->base, tr, err, errlen);
	free(buf);
	return rc;
}
