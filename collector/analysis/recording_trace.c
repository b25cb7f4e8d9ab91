/* SPDX-License-Identifier: MIT */
/* A recording's power and energy as a sensor trace (recording.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	if (!ntc && rec_smi_requested(r))
		return spmtap_seterr(err, errlen, ENOENT,
				     "%s holds no power or energy readings although the recording asked for them",
				     r->base);
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
