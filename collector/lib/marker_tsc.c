/* SPDX-License-Identifier: MIT */
/* TSC to CLOCK_BOOTTIME for marker events (marker_tsc.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/lib/marker_tsc.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#define MK_HAVE_TSC 1
#else
#define MK_HAVE_TSC 0
#endif

/*
 * A pair is the narrowest of MK_BURST reads.  Pairs are kept at least
 * MK_MIN_GAP_NS apart (a closer one only replaces the tail, which every
 * value up to it still maps through), MK_KEEP of them: at a poll every 5 ms
 * that is seconds of history for a value whose thread was preempted between
 * its rdtsc and its publication.
 */
#define MK_BURST 8
#define MK_MIN_GAP_NS 1000000
#define MK_KEEP 1024

struct mk_pair {
	uint64_t tsc;
	int64_t ns, err;
};

struct mk_tsc {
	struct mk_pair p[MK_KEEP + 1]; /* kept pairs, oldest first, then the tail when has_tail */
	size_t n;
	int has_tail;
	struct mk_pair first; /* the first ever: the rate over the whole recording */
	struct mk_tsc_stats st;
};

static int64_t boot_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint64_t mk_tsc_read(void)
{
#if MK_HAVE_TSC
	/* lfence before: after the loads before it (the ring heads); after: before the clock read that follows. */
	_mm_lfence();
	uint64_t t = __rdtsc();
	_mm_lfence();
	return t;
#else
	return 0;
#endif
}

/* Whether `word` is a whole space-separated word of line. */
static int has_word(const char *line, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = line; (p = strstr(p, word)); p += n)
		if ((p == line || p[-1] == ' ' || p[-1] == '\t' || p[-1] == ':') &&
		    (p[n] == 0 || p[n] == ' ' || p[n] == '\n' || p[n] == '\t'))
			return 1;
	return 0;
}

static int read_line(const char *path, const char *prefix, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -ENOENT;
	int rc = -ENOENT;
	while (fgets(buf, (int)len, f))
		if (!prefix || !strncmp(buf, prefix, strlen(prefix))) {
			rc = 0;
			break;
		}
	fclose(f);
	return rc;
}

bool mk_tsc_usable(char *why, size_t whylen)
{
	const char *e = getenv("SPMTAP_MARKER_CLOCK");
	if (!MK_HAVE_TSC) {
		snprintf(why, whylen, "no TSC: not x86-64");
		return false;
	}
	if (e && !strcmp(e, "boottime")) {
		snprintf(why, whylen, "SPMTAP_MARKER_CLOCK=boottime");
		return false;
	}
	if (e && !strcmp(e, "tsc")) {
		snprintf(why, whylen, "SPMTAP_MARKER_CLOCK=tsc");
		return true;
	}
	static char line[8192];
	int flags = !read_line("/proc/cpuinfo", "flags", line, sizeof(line)) && has_word(line, "constant_tsc") &&
		    has_word(line, "nonstop_tsc");
	int invariant = 0;
#if MK_HAVE_TSC
	unsigned a, b, c, d;
	if (__get_cpuid(0x80000007, &a, &b, &c, &d))
		invariant = (d >> 8) & 1;
#endif
	if (!flags && !invariant) {
		snprintf(why, whylen, "the TSC is not constant and non-stop (no constant_tsc and nonstop_tsc in "
				      "/proc/cpuinfo, no invariant TSC in CPUID 0x80000007)");
		return false;
	}
	if (!read_line("/sys/devices/system/clocksource/clocksource0/available_clocksource", NULL, line,
		       sizeof(line)) &&
	    !has_word(line, "tsc")) {
		snprintf(why, whylen, "the kernel withdrew the tsc clocksource (found unstable or unsynchronised)");
		return false;
	}
	snprintf(why, whylen, "%s", flags ? "constant_tsc and nonstop_tsc" : "invariant TSC (CPUID 0x80000007)");
	return true;
}

int mk_tsc_create(struct mk_tsc **out)
{
	struct mk_tsc *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	mk_tsc_sample(m);
	m->first = m->p[0];
	*out = m;
	return 0;
}

void mk_tsc_free(struct mk_tsc *m)
{
	free(m);
}

void mk_tsc_sample(struct mk_tsc *m)
{
	struct mk_pair best = { 0, 0, -1 };
	int64_t best_w = -1;
	for (int k = 0; k < MK_BURST; k++) {
		int64_t t0 = boot_ns();
		uint64_t x = mk_tsc_read();
		int64_t t1 = boot_ns(), w = t1 - t0;
		if (best_w < 0 || w < best_w) {
			best_w = w;
			/* The TSC was read inside [t0, t1]: the midpoint is within half the bracket. */
			best = (struct mk_pair){ x, t0 + w / 2, w - w / 2 };
		}
	}
	m->st.pairs++;
	size_t kept = m->n - (size_t)m->has_tail;
	if (kept && best.ns - m->p[kept - 1].ns < MK_MIN_GAP_NS) {
		m->p[kept] = best; /* the tail: replaced by the next close one */
		m->n = kept + 1;
		m->has_tail = 1;
		return;
	}
	if (kept == MK_KEEP) {
		memmove(m->p, m->p + MK_KEEP / 2, (MK_KEEP / 2) * sizeof(m->p[0]));
		kept = MK_KEEP / 2;
	}
	m->p[kept] = best;
	m->n = kept + 1;
	m->has_tail = 0;
	if (best.err > m->st.max_pair_err_ns)
		m->st.max_pair_err_ns = best.err;
	if (best.ns > m->first.ns)
		m->st.hz = (double)(best.tsc - m->first.tsc) * 1e9 / (double)(best.ns - m->first.ns);
}

static int64_t line_at(const struct mk_pair *a, const struct mk_pair *b, uint64_t tsc)
{
	long double slope = (long double)(b->ns - a->ns) / (long double)(b->tsc - a->tsc);
	return a->ns + (int64_t)((long double)((int64_t)(tsc - a->tsc)) * slope);
}

int64_t mk_tsc_to_ns(struct mk_tsc *m, uint64_t tsc, int64_t *err_ns)
{
	const struct mk_pair *p = m->p;
	size_t n = m->n;
	int64_t ns, err;
	m->st.mapped++;
	if (n < 2 || p[n - 1].tsc == p[0].tsc) {
		/* Not reached through mk_reader (it samples before it maps): a GHz guess, unbounded. */
		ns = p[0].ns + (int64_t)(tsc - p[0].tsc);
		err = INT64_MAX / 4;
	} else if (tsc < p[0].tsc || tsc >= p[n - 1].tsc) {
		/*
		 * Outside every pair: the line through the first and the last kept
		 * pair (the longest base, the best slope), from the nearer end; the
		 * slope is known within (e_first + e_last) / span.
		 */
		const struct mk_pair *end = tsc < p[0].tsc ? &p[0] : &p[n - 1];
		ns = line_at(&p[0], &p[n - 1], tsc);
		int64_t far = llabs(ns - end->ns);
		err = end->err + (int64_t)((long double)far * (long double)(p[0].err + p[n - 1].err) /
					   (long double)(p[n - 1].ns - p[0].ns)) + 1;
	} else {
		size_t lo = 0, hi = n - 1; /* p[lo].tsc <= tsc < p[hi].tsc */
		while (hi - lo > 1) {
			size_t mid = lo + (hi - lo) / 2;
			if (p[mid].tsc <= tsc)
				lo = mid;
			else
				hi = mid;
		}
		ns = line_at(&p[lo], &p[hi], tsc);
		err = (p[lo].err > p[hi].err ? p[lo].err : p[hi].err) + 1; /* + 1: the rounding */
	}
	if (err > m->st.max_err_ns)
		m->st.max_err_ns = err;
	if (err_ns)
		*err_ns = err;
	return ns;
}

void mk_tsc_stats(const struct mk_tsc *m, struct mk_tsc_stats *st)
{
	*st = m->st;
	if (m->has_tail && m->p[m->n - 1].err > st->max_pair_err_ns)
		st->max_pair_err_ns = m->p[m->n - 1].err;
}
