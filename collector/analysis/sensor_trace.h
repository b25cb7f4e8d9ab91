/* SPDX-License-Identifier: MIT */
/*
 * A power/energy sensor trace on the host timeline: the "spmtap-sensor-trace
 * v1" CSV (docs/formats/sensor-trace.md) read and turned into signals as
 * section 2 of ../shared/specs/sensor-analysis-v1.md says:
 *
 *   - a NAME[ts_ns] column maps the sensor's time onto the host's with the
 *     lower envelope, offset = min(time_ns - ts_ns), and drops cached copies
 *     (a reading whose ts equals the previous one's);
 *   - a NAME[W] column gives readings (t, W);
 *   - a NAME[J] column gives derived power (t_k, dE/dt) from the readings
 *     kept by "new value and later t", with a reset (the counter going
 *     down) holding the previous power, and a continuous energy Ec(t);
 *   - every signal is a staircase: a reading holds until the next one;
 *   - `changes` and `update_interval_ms` say how often the value moved.
 *
 * Numbers: integer cells (time_ns, ts_ns) must lie within +-2^60 (36
 * years of ns) and decimal cells within +-1e18, so that no sum, difference
 * or quotient the analysis forms can overflow or become infinite.
 *
 * Traces can also be built in memory (sa_trace_new + sa_trace_add), e.g.
 * from a recording, and then go through exactly the same section 2.
 * Functions return 0 or a negative errno and write a sentence into err.
 */
#ifndef SPMTAP_ANALYSIS_SENSOR_TRACE_H
#define SPMTAP_ANALYSIS_SENSOR_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Integer cells beyond this are refused (see above). */
#define SA_INT_LIMIT (INT64_C(1) << 60)
/* Decimal cells beyond this are refused (see above). */
#define SA_NUM_LIMIT 1e18

enum sa_unit {
	SA_UNIT_J, /* cumulative energy counter in J; the signal is its derived power */
	SA_UNIT_W, /* power in W */
};

/* "J" or "W". */
const char *sa_unit_name(enum sa_unit u);

/* One reading of a signal on the host timeline: the value holds from t_ns on. */
struct sa_reading {
	int64_t t_ns; /* CLOCK_BOOTTIME ns */
	double v;     /* W (a J signal's derived power) */
};

/* A signal after section 2; every array belongs to the trace. */
struct sa_signal {
	const char *name;       /* NAME of the source column */
	enum sa_unit unit;      /* unit of the source column */
	bool has_ts;            /* the trace had a NAME[ts_ns] column */
	int64_t ts_offset_ns;   /* has_ts: the lower-envelope offset added to ts_ns */
	const struct sa_reading *r; /* readings, t non-decreasing (J: strictly increasing) */
	size_t n;
	uint64_t changes;       /* readings (J: energy values) that differ from the previous one */
	double update_interval_ms; /* median spacing of the changes; NAN with fewer than two */
	/*
	 * J only: the kept readings (new energy value, later t) and the
	 * continuous energy at each, Ec(kept_t[0]) = 0.  r[k - 1] is the power
	 * over (kept_t[k - 1], kept_t[k]], so n = nkept - 1.  nkept is 0 when
	 * no interval had a valid power (every one was a reset): then the
	 * signal has no readings and no energy.
	 */
	const int64_t *kept_t;
	const double *ec_j;
	size_t nkept;
	uint64_t resets;        /* J: intervals whose energy went down */
	/*
	 * Median spacing of the readings (J: of the kept ones); NAN with fewer
	 * than two.  A reading stands for at most SA_HOLD_READINGS of these:
	 * a window reaching further past the last reading, or across a longer
	 * gap between two, has no mean (sa_signal_mean).
	 */
	double read_interval_ns;
};

/*
 * How many usual reading spacings a reading may stand for.  A sensor read
 * every millisecond on a loaded machine misses a deadline or two (a 2-3 ms
 * gap); four spacings keep those, while a sensor that stopped (a CSV cut
 * short, a dead reader) is caught within 4 ms.
 */
#define SA_HOLD_READINGS 4
/*
 * Inside the data, a window keeps its mean while the time its readings no
 * longer stand for (gaps beyond the hold) is at most this share of it: a
 * reader that missed a few updates in a steady phase still measures it.
 * Past the last reading nothing is held beyond the hold.
 */
#define SA_MAX_STALE 0.1

/* The raw readings of one signal, in row order, for sa_trace_add(). */
struct sa_raw {
	int64_t time_ns; /* host time the read completed */
	int64_t ts_ns;   /* sensor time of the value; used only with has_ts */
	double v;        /* J or W as the unit says */
};

struct sa_trace;

/* An empty trace, for sa_trace_add(). */
int sa_trace_new(struct sa_trace **out, char *err, size_t errlen);
void sa_trace_free(struct sa_trace *tr);

/*
 * Add a signal from its raw readings (copied) and apply section 2 to it.
 * `name` must be new in the trace.  time_ns must not go backwards; with
 * has_ts, a reading whose ts_ns goes backwards is dropped (the spec says
 * nothing about it; a warning counts them).  Integers and values must lie
 * within SA_INT_LIMIT / SA_NUM_LIMIT.
 */
int sa_trace_add(struct sa_trace *tr, const char *name, enum sa_unit unit, bool has_ts,
		 const struct sa_raw *raw, size_t n, char *err, size_t errlen);

/*
 * Parse a trace CSV held in memory.  `what` names it in messages
 * ("t.csv:5: column 'power[W]': '1.2.3' is not a decimal number").  Never
 * reads past buf + len; NUL bytes are refused.
 */
int sa_trace_parse(const char *buf, size_t len, const char *what, struct sa_trace **out, char *err,
		   size_t errlen);
/* sa_trace_parse() of a file's contents, messages naming `path`. */
int sa_trace_load(const char *path, struct sa_trace **out, char *err, size_t errlen);

size_t sa_trace_nsignals(const struct sa_trace *tr);
/* Signal i (0 <= i < nsignals), in the order of their J/W columns. */
const struct sa_signal *sa_trace_signal(const struct sa_trace *tr, size_t i);
/* Index of the first J signal, or -1 when the trace has none. */
int sa_trace_first_j(const struct sa_trace *tr);

/*
 * Non-fatal problems found while reading, e.g.
 * "t.csv:1: column 'x[kJ]': unit kJ is not J, W or ts_ns; ignored".
 */
size_t sa_trace_nwarnings(const struct sa_trace *tr);
const char *sa_trace_warning(const struct sa_trace *tr, size_t i);

/*
 * Ec(t1) - Ec(t0) of J signal `signal` in J, with Ec linear between kept
 * readings (no delay correction).  -EINVAL when the signal is not a J
 * signal; -ERANGE (the spec's null) when t0 or t1 lies outside
 * [first kept t, last kept t] ("no readings after T" / "no readings before
 * T", without the signal's name), when t0 or t1 falls inside a gap between
 * kept readings longer than SA_HOLD_READINGS x read_interval_ns and than
 * SA_MAX_STALE x (t1 - t0) ("no readings from A to B": the split of that
 * energy is unknown), or the signal has no energy.
 */
int sa_trace_energy(const struct sa_trace *tr, size_t signal, double t0_ns, double t1_ns, double *joules,
		    char *err, size_t errlen);

/*
 * Time-weighted mean of a signal's staircase over [t0, t1], in W.  A
 * reading holds until the next one, but for no longer than
 * SA_HOLD_READINGS x read_interval_ns: no value is carried past the data.
 * -EINVAL when t0 >= t1 (an empty window); -ENODATA when no reading is at
 * or before t0, when t1 lies past the last reading's hold ("no readings
 * after T"), or gaps beyond the hold take more than SA_MAX_STALE of the
 * window ("no readings from A to B", the longest);
 * err then says which, without the signal's name, for a report's reason.
 */
int sa_signal_mean(const struct sa_signal *s, double t0_ns, double t1_ns, double *w, char *err,
		   size_t errlen);

/* Index of the first reading with t >= t_ns (s->n when none). */
size_t sa_signal_lower_bound(const struct sa_signal *s, int64_t t_ns);

/* ---- CSV helpers, shared with phases.c --------------------------------- */

/*
 * One line of a CSV buffer: [p, p + len) without its LF or CRLF, `no` is
 * its 1-based number.  sa_csv_next() returns false at the end of buf.
 */
struct sa_csv_cursor {
	const char *buf, *end, *pos;
	size_t no;
};
struct sa_csv_line {
	const char *p;
	size_t len;
	size_t no;
};
void sa_csv_init(struct sa_csv_cursor *c, const char *buf, size_t len);
bool sa_csv_next(struct sa_csv_cursor *c, struct sa_csv_line *line);

/* A whole cell as an integer within +-SA_INT_LIMIT: 0 or -EINVAL / -ERANGE. */
int sa_parse_int(const char *p, size_t len, int64_t *out);
/* A whole cell as a decimal number within +-SA_NUM_LIMIT (no inf, nan or hex). */
int sa_parse_num(const char *p, size_t len, double *out);
/* Read a whole file into a malloc'd buffer (NUL-terminated; *len excludes the NUL). */
int sa_read_file(const char *path, char **buf, size_t *len, char *err, size_t errlen);
/* Median of v[0..n) (sorted in place); the mean of the middle two for even n; NAN for n = 0. */
double sa_median(double *v, size_t n);

#endif
