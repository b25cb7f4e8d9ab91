/* SPDX-License-Identifier: MIT */
/* A recording's power and energy as a sensor trace (recording.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/analysis/recording.h"
#include "collector/analysis/sensor_trace.h"
#include "log.h"

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

/*
 * DIR/NAME_craypm.csv (a killed run's .part too), the Cray EX node power
 * that `record --cray` writes as a sensor trace already (session_cray.c):
 * its header after time_ns and its rows, to be merged in time order.
 */
struct pm_rows {
	char *buf;             /* the file, NUL-terminated */
	const char *head;      /* header cells after "time_ns" (",pm.power[W],...") */
	size_t headlen, ncols; /* ncols: cells after time_ns */
	struct pm_row { int64_t t; const char *rest; size_t len; } *row;
	size_t n;
};

static void pm_free(struct pm_rows *pm)
{
	free(pm->buf);
	free(pm->row);
	memset(pm, 0, sizeof(*pm));
}

static size_t count_commas(const char *p, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += p[i] == ',';
	return k;
}

/* 0 (pm->n may be 0: no file), or -errno with a sentence naming the file and line. */
static int pm_load(const struct recording *r, struct pm_rows *pm, char *err, size_t errlen)
{
	memset(pm, 0, sizeof(*pm));
	char path[4096];
	size_t len;
	snprintf(path, sizeof(path), "%s_craypm.csv", r->base);
	if (access(path, R_OK))
		snprintf(path, sizeof(path), "%s_craypm.csv.part", r->base);
	if (access(path, R_OK))
		return 0;
	int rc = sa_read_file(path, &pm->buf, &len, err, errlen);
	if (rc)
		return rc;
	struct sa_csv_cursor c;
	struct sa_csv_line l;
	sa_csv_init(&c, pm->buf, len);
	if (!sa_csv_next(&c, &l) || l.len < 7 || strncmp(l.p, "time_ns", 7) || (l.len > 7 && l.p[7] != ',')) {
		pm_free(pm);
		return spmtap_seterr(err, errlen, EINVAL, "%s:1: not a sensor trace (the header must begin with time_ns)",
				     path);
	}
	pm->head = l.p + 7;
	pm->headlen = l.len - 7;
	pm->ncols = count_commas(pm->head, pm->headlen);
	size_t cap = 0;
	while (sa_csv_next(&c, &l)) {
		if (!l.len)
			continue;
		const char *comma = memchr(l.p, ',', l.len);
		int64_t t;
		if (!comma || sa_parse_int(l.p, (size_t)(comma - l.p), &t) ||
		    count_commas(comma, l.len - (size_t)(comma - l.p)) != pm->ncols ||
		    (pm->n && t < pm->row[pm->n - 1].t)) {
			/* A cut last line of a killed run is not data; anything else is an error. */
			if (!c.pos || c.pos >= c.end)
				break;
			size_t no = l.no, cells = pm->ncols + 1;
			pm_free(pm);
			return spmtap_seterr(err, errlen, EINVAL, "%s:%zu: not a row of %zu cells in time order", path,
					     no, cells);
		}
		if (pm->n == cap) {
			cap = cap ? 2 * cap : 256;
			struct pm_row *nr = realloc(pm->row, cap * sizeof(*nr));
			if (!nr) {
				pm_free(pm);
				return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
			}
			pm->row = nr;
		}
		pm->row[pm->n++] = (struct pm_row){ t, comma, l.len - (size_t)(comma - l.p) };
	}
	return 0;
}

int rec_sensor_trace(const struct recording *r, char **buf, size_t *len, char *err, size_t errlen)
{
	*buf = NULL;
	*len = 0;
	struct pm_rows pm;
	int prc = pm_load(r, &pm, err, errlen);
	if (prc)
		return prc;
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
	if (!ntc && !pm.n && rec_smi_requested(r))
		return pm_free(&pm), spmtap_seterr(err, errlen, ENOENT,
				     "%s holds no power or energy readings although the recording asked for them",
				     r->base);
	if (!ntc && !pm.n)
		return spmtap_seterr(err, errlen, ENOENT,
				     "%s has no power or energy series (record with --smi power,energy)", r->base);
	struct row_ref *rows = malloc((nrows ? nrows : 1) * sizeof(*rows));
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = rows ? open_memstream(&out, &outlen) : NULL;
	if (!f) {
		free(rows);
		pm_free(&pm);
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
	if (pm.headlen) /* no NAME_craypm.csv: pm.head is NULL, which fwrite may not be given even for 0 bytes */
		fwrite(pm.head, 1, pm.headlen, f);
	fputc('\n', f);
	size_t smicells = 0;
	for (size_t c = 0; c < ntc; c++)
		smicells += 1 + (ts_scale(tc[c].g->tick_domain) != 0);
	size_t pi = 0;
	for (size_t i = 0; i <= nrows; i++) {
		/* The node's rows in time order between the GPUs' (an equal time: the GPU's first). */
		while (pi < pm.n && (i == nrows || pm.row[pi].t < rows[i].t)) {
			fprintf(f, "%" PRId64, pm.row[pi].t);
			for (size_t q = 0; q < smicells; q++)
				fputc(',', f);
			fwrite(pm.row[pi].rest, 1, pm.row[pi].len, f);
			fputc('\n', f);
			pi++;
		}
		if (i == nrows)
			break;
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
		for (size_t q = 0; q < pm.ncols; q++)
			fputc(',', f);
		fputc('\n', f);
	}
	free(rows);
	pm_free(&pm);
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
