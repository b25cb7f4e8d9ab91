// SPDX-License-Identifier: MIT
/* Sensor traces: raw readings in, signals on the host timeline out (sensor_trace.h); the CSV is sensor_trace_csv.c. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/analysis/sensor_trace.h"
#include "collector/analysis/sensor_trace_priv.h"
#include "log.h"

struct sig_store {
	struct sa_signal pub;
	char *name;
	struct sa_reading *r;
	int64_t *kept_t;
	double *ec;
};

struct sa_trace {
	struct sig_store *sig;
	size_t n, cap;
	char **warn;
	size_t nwarn, capwarn;
	char *what; /* file name for warnings; NULL for traces built in memory */
};

/* Cells quoted in messages are cut here: enough to recognise, short enough to read. */

const char *sa_unit_name(enum sa_unit u)
{
	return u == SA_UNIT_J ? "J" : "W";
}

int sa_trace_new(struct sa_trace **out, char *err, size_t errlen)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	return 0;
}

void sa_trace_free(struct sa_trace *tr)
{
	if (!tr)
		return;
	for (size_t i = 0; i < tr->n; i++) {
		free(tr->sig[i].name);
		free(tr->sig[i].r);
		free(tr->sig[i].kept_t);
		free(tr->sig[i].ec);
	}
	for (size_t i = 0; i < tr->nwarn; i++)
		free(tr->warn[i]);
	free(tr->warn);
	free(tr->sig);
	free(tr->what);
	free(tr);
}

/* A warning is advice: when memory runs out it is lost, the trace is not. */
void sa_trace_warn(struct sa_trace *tr, const char *fmt, ...)
{
	if (tr->nwarn == tr->capwarn) {
		size_t cap = tr->capwarn ? 2 * tr->capwarn : 4;
		char **w = realloc(tr->warn, cap * sizeof(*w));
		if (!w)
			return;
		tr->warn = w;
		tr->capwarn = cap;
	}
	va_list ap;
	va_start(ap, fmt);
	int rc = vasprintf(&tr->warn[tr->nwarn], fmt, ap);
	va_end(ap);
	if (rc >= 0)
		tr->nwarn++;
}

size_t sa_trace_nwarnings(const struct sa_trace *tr)
{
	return tr->nwarn;
}

const char *sa_trace_warning(const struct sa_trace *tr, size_t i)
{
	return i < tr->nwarn ? tr->warn[i] : NULL;
}

size_t sa_trace_nsignals(const struct sa_trace *tr)
{
	return tr->n;
}

const struct sa_signal *sa_trace_signal(const struct sa_trace *tr, size_t i)
{
	return i < tr->n ? &tr->sig[i].pub : NULL;
}

int sa_trace_first_j(const struct sa_trace *tr)
{
	for (size_t i = 0; i < tr->n; i++)
		if (tr->sig[i].pub.unit == SA_UNIT_J)
			return (int)i;
	return -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double sa_median(double *v, size_t n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- section 2 ---------------------------------------------------------- */

/* `changes` and `update_interval_ms` of step-1 readings (J: energy values). */
static int count_changes(struct sa_signal *s, const struct sa_reading *st, size_t m)
{
	double *gap = malloc((m ? m : 1) * sizeof(*gap));
	if (!gap)
		return -ENOMEM;
	size_t ng = 0;
	int64_t last = 0;
	s->changes = 0;
	for (size_t i = 1; i < m; i++) {
		if (st[i].v == st[i - 1].v)
			continue;
		if (s->changes++)
			gap[ng++] = (double)(st[i].t_ns - last) / 1e6;
		last = st[i].t_ns;
	}
	s->update_interval_ms = ng ? sa_median(gap, ng) : NAN;
	free(gap);
	return 0;
}

/*
 * J: keep the first appearance of each new energy value at a later t;
 * power between kept readings; a reset holds the previous power (the next
 * valid one for the intervals before any); Ec integrates that power.
 */
static int derive_power(struct sig_store *ss, const struct sa_reading *st, size_t m)
{
	struct sa_signal *s = &ss->pub;
	size_t cap = m ? m : 1;
	double *e = malloc(cap * sizeof(*e));
	double *p = malloc(cap * sizeof(*p));
	bool *reset = malloc(cap * sizeof(*reset));
	ss->kept_t = malloc(cap * sizeof(*ss->kept_t));
	ss->ec = malloc(cap * sizeof(*ss->ec));
	ss->r = malloc(cap * sizeof(*ss->r));
	int rc = -ENOMEM;
	if (!e || !p || !reset || !ss->kept_t || !ss->ec || !ss->r)
		goto out;
	size_t nk = 0;
	for (size_t i = 0; i < m; i++) {
		if (nk && (st[i].v == e[nk - 1] || st[i].t_ns <= ss->kept_t[nk - 1]))
			continue;
		ss->kept_t[nk] = st[i].t_ns;
		e[nk++] = st[i].v;
	}
	size_t first_valid = 0;
	for (size_t k = 1; k < nk; k++) {
		reset[k] = e[k] < e[k - 1];
		if (reset[k]) {
			s->resets++;
			continue;
		}
		p[k] = (e[k] - e[k - 1]) / ((double)(ss->kept_t[k] - ss->kept_t[k - 1]) * 1e-9);
		if (!first_valid)
			first_valid = k;
	}
	rc = 0;
	if (!first_valid)
		goto out; /* no interval with a power: no readings, no energy */
	for (size_t k = 1; k < nk; k++)
		if (reset[k])
			p[k] = k < first_valid ? p[first_valid] : p[k - 1];
	ss->ec[0] = 0;
	for (size_t k = 1; k < nk; k++) {
		ss->ec[k] = ss->ec[k - 1] + p[k] * (double)(ss->kept_t[k] - ss->kept_t[k - 1]) * 1e-9;
		ss->r[k - 1] = (struct sa_reading){ .t_ns = ss->kept_t[k], .v = p[k] };
	}
	s->nkept = nk;
	s->n = nk - 1;
out:
	free(e);
	free(p);
	free(reset);
	return rc;
}

/* read_interval_ns: the median spacing of the readings (J: the kept ones, which carry the data). */
static int read_spacing(struct sa_signal *s)
{
	const int64_t *kt = s->unit == SA_UNIT_J ? s->kept_t : NULL;
	size_t n = kt ? s->nkept : s->n;
	s->read_interval_ns = NAN;
	if (n < 2)
		return 0;
	double *d = malloc((n - 1) * sizeof(*d));
	if (!d)
		return -ENOMEM;
	for (size_t k = 1; k < n; k++)
		d[k - 1] = (double)(kt ? kt[k] - kt[k - 1] : s->r[k].t_ns - s->r[k - 1].t_ns);
	s->read_interval_ns = sa_median(d, n - 1);
	free(d);
	return 0;
}

static bool int_ok(int64_t v)
{
	return v >= -SA_INT_LIMIT && v <= SA_INT_LIMIT;
}

static int check_raw(const char *name, const struct sa_raw *raw, size_t n, bool has_ts, char *err,
		     size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		if (!int_ok(raw[i].time_ns) || (has_ts && !int_ok(raw[i].ts_ns)))
			return spmtap_seterr(err, errlen, ERANGE, "signal '%s': reading %zu: time beyond +-2^60 ns",
					     name, i);
		if (!(fabs(raw[i].v) <= SA_NUM_LIMIT))
			return spmtap_seterr(err, errlen, ERANGE, "signal '%s': reading %zu: value %g beyond +-1e18",
					     name, i, raw[i].v);
		if (i && raw[i].time_ns < raw[i - 1].time_ns)
			return spmtap_seterr(err, errlen, EINVAL, "signal '%s': reading %zu: time_ns goes backwards",
					     name, i);
	}
	return 0;
}

bool sa_valid_name(const char *p, size_t len)
{
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:-", p[i]) || !p[i])
			return false;
	return true;
}

int sa_trace_add(struct sa_trace *tr, const char *name, enum sa_unit unit, bool has_ts,
		 const struct sa_raw *raw, size_t n, char *err, size_t errlen)
{
	if (!name || !sa_valid_name(name, strlen(name)))
		return spmtap_seterr(err, errlen, EINVAL, "signal name '%.*s' is not [A-Za-z0-9_.:-]+", QUOTE_MAX,
				     name ? name : "");
	for (size_t i = 0; i < tr->n; i++)
		if (!strcmp(tr->sig[i].name, name))
			return spmtap_seterr(err, errlen, EEXIST, "signal '%s' is already in the trace", name);
	int rc = check_raw(name, raw, n, has_ts, err, errlen);
	if (rc)
		return rc;
	if (tr->n == tr->cap) {
		size_t cap = tr->cap ? 2 * tr->cap : 4;
		struct sig_store *v = realloc(tr->sig, cap * sizeof(*v));
		if (!v)
			return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
		tr->sig = v;
		tr->cap = cap;
	}
	struct sig_store *ss = &tr->sig[tr->n];
	memset(ss, 0, sizeof(*ss));
	struct sa_reading *st = malloc((n ? n : 1) * sizeof(*st));
	ss->name = strdup(name);
	if (!st || !ss->name)
		goto nomem;
	struct sa_signal *s = &ss->pub;
	s->name = ss->name;
	s->unit = unit;
	s->has_ts = has_ts;
	s->update_interval_ms = NAN;

	/* Step 1: the host time of each reading. */
	int64_t off = 0;
	for (size_t i = 0; has_ts && i < n; i++)
		if (!i || raw[i].time_ns - raw[i].ts_ns < off)
			off = raw[i].time_ns - raw[i].ts_ns; /* lower envelope: a read is never early */
	s->ts_offset_ns = off;
	size_t m = 0, back = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t t = raw[i].time_ns;
		if (has_ts) {
			if (i && raw[i].ts_ns == raw[i - 1].ts_ns)
				continue; /* a cached copy of the previous sample */
			t = raw[i].ts_ns + off;
			if (m && t < st[m - 1].t_ns) {
				back++;
				continue;
			}
		}
		st[m++] = (struct sa_reading){ .t_ns = t, .v = raw[i].v };
	}
	if (back)
		sa_trace_warn(tr, "%s%ssignal '%s': %zu readings whose %s[ts_ns] went backwards were dropped",
		     tr->what ? tr->what : "", tr->what ? ": " : "", name, back, name);
	if (count_changes(s, st, m))
		goto nomem;
	if (unit == SA_UNIT_W) {
		ss->r = st;
		st = NULL;
		s->n = m;
	} else if (derive_power(ss, st, m)) {
		goto nomem;
	}
	free(st);
	s->r = ss->r;
	s->kept_t = ss->kept_t;
	s->ec_j = ss->ec;
	if (read_spacing(s))
		goto nomem;
	tr->n++;
	return 0;
nomem:
	free(st);
	free(ss->name);
	free(ss->r);
	free(ss->kept_t);
	free(ss->ec);
	return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
}

/* ---- queries ------------------------------------------------------------ */

size_t sa_signal_lower_bound(const struct sa_signal *s, int64_t t_ns)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->r[mid].t_ns < t_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* First reading with t > t_ns (s->n when none). */
static size_t upper_bound_d(const struct sa_reading *r, size_t n, double t_ns)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if ((double)r[mid].t_ns <= t_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Ec at t, kept_t[0] <= t <= kept_t[nkept - 1]. */
static double ec_at(const struct sa_signal *s, double t)
{
	size_t lo = 0, hi = s->nkept;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if ((double)s->kept_t[mid] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || lo >= s->nkept)
		return s->ec_j[lo ? s->nkept - 1 : 0];
	if ((double)s->kept_t[lo] == t)
		return s->ec_j[lo];
	/* r[lo - 1] is the power over (kept_t[lo - 1], kept_t[lo]] */
	return s->ec_j[lo - 1] + s->r[lo - 1].v * (t - (double)s->kept_t[lo - 1]) * 1e-9;
}

int sa_trace_energy(const struct sa_trace *tr, size_t signal, double t0_ns, double t1_ns, double *joules,
		    char *err, size_t errlen)
{
	const struct sa_signal *s = sa_trace_signal(tr, signal);
	if (!s || s->unit != SA_UNIT_J)
		return spmtap_seterr(err, errlen, EINVAL, "signal %zu is not an energy (J) signal", signal);
	if (!s->nkept)
		return spmtap_seterr(err, errlen, ERANGE, "signal '%s' has no energy: no interval with a valid power",
				     s->name);
	double a = (double)s->kept_t[0], b = (double)s->kept_t[s->nkept - 1];
	if (t0_ns > b || t1_ns > b)
		return spmtap_seterr(err, errlen, ERANGE, "no readings after %.0f ns", b);
	if (!(t0_ns >= a && t1_ns >= a))
		return spmtap_seterr(err, errlen, ERANGE, "no readings before %.0f ns", a);
	/*
	 * A boundary inside a long gap splits energy nobody measured: Ec is a
	 * straight line there, which says nothing of where the phase's share
	 * ends.  Long: over the hold, and over SA_MAX_STALE of the window (a
	 * reader that missed a few updates at a boundary moves the energy by
	 * no more than the confident mean's own allowance).
	 */
	double hold = isfinite(s->read_interval_ns) ? SA_HOLD_READINGS * s->read_interval_ns : INFINITY;
	hold = fmax(hold, SA_MAX_STALE * fabs(t1_ns - t0_ns));
	for (int k = 0; k < 2; k++) {
		double t = k ? t1_ns : t0_ns;
		size_t i = 0, hi = s->nkept;
		while (i < hi) { /* first kept reading at or after t */
			size_t mid = i + (hi - i) / 2;
			if ((double)s->kept_t[mid] < t)
				i = mid + 1;
			else
				hi = mid;
		}
		if (i > 0 && i < s->nkept && (double)s->kept_t[i] != t &&
		    (double)(s->kept_t[i] - s->kept_t[i - 1]) > hold)
			return spmtap_seterr(err, errlen, ERANGE, "no readings from %lld to %lld ns",
					     (long long)s->kept_t[i - 1], (long long)s->kept_t[i]);
	}
	*joules = ec_at(s, t1_ns) - ec_at(s, t0_ns);
	return 0;
}

int sa_signal_mean(const struct sa_signal *s, double t0_ns, double t1_ns, double *w, char *err, size_t errlen)
{
	if (!(t0_ns < t1_ns))
		return spmtap_seterr(err, errlen, EINVAL, "empty window [%.0f, %.0f] ns (settling takes the phase)",
				     t0_ns, t1_ns);
	size_t i = upper_bound_d(s->r, s->n, t0_ns);
	if (!i)
		return spmtap_seterr(err, errlen, ENODATA, "no readings before %.0f ns",
				     s->n ? (double)s->r[0].t_ns : t1_ns);
	/* a reading stands for a few of its usual spacings, not for ever (sensor_trace.h) */
	double hold = isfinite(s->read_interval_ns) ? SA_HOLD_READINGS * s->read_interval_ns : INFINITY;
	double acc = 0, cur = t0_ns, stale = 0, worst = 0;
	size_t wi = 0;
	for (i--; i < s->n && cur < t1_ns; i++) {
		double next = i + 1 < s->n ? (double)s->r[i + 1].t_ns : t1_ns;
		/* the part of [cur, next) a reading no longer stands for */
		double st = fmin(next, t1_ns) - fmax((double)s->r[i].t_ns + hold, cur);
		if (st > 0 && i + 1 == s->n)
			return spmtap_seterr(err, errlen, ENODATA, "no readings after %lld ns", (long long)s->r[i].t_ns);
		if (st > 0) {
			stale += st;
			if (st > worst) {
				worst = st;
				wi = i;
			}
		}
		if (next > t1_ns)
			next = t1_ns;
		if (next > cur) {
			acc += s->r[i].v * (next - cur);
			cur = next;
		}
	}
	if (stale > SA_MAX_STALE * (t1_ns - t0_ns))
		return spmtap_seterr(err, errlen, ENODATA, "no readings from %lld to %lld ns", (long long)s->r[wi].t_ns,
				     (long long)s->r[wi + 1].t_ns);
	*w = acc / (t1_ns - t0_ns);
	return 0;
}

int sa_trace_set_what(struct sa_trace *tr, const char *what)
{
	free(tr->what);
	tr->what = strdup(what);
	return tr->what ? 0 : -ENOMEM;
}
