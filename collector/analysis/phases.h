/* SPDX-License-Identifier: MIT */
/*
 * The application's phases: [start_ns, end_ns) on the host timeline
 * (CLOCK_BOOTTIME), named, possibly overlapping or nested.  Read from the
 * phases CSV of ../shared/specs/sensor-analysis-v1.md section 1.2
 * (docs/formats/sensor-trace.md):
 *
 *	start_ns,end_ns,name
 *	1000000000,1100000000,load
 *
 * integers within +-2^60, end_ns > start_ns, a name without a comma (and
 * valid UTF-8, so that it can go into JSON as it is).  The names "load"
 * and "idle" mark a square-wave stimulus (characterize.h).
 *
 * The structs are plain so that phases can be built in code as well: fill
 * v[0..n) with malloc'd names and sa_phases_free() releases them.
 */
#ifndef SPMTAP_ANALYSIS_PHASES_H
#define SPMTAP_ANALYSIS_PHASES_H

#include <stddef.h>
#include <stdint.h>

struct sa_phase {
	int64_t start_ns, end_ns; /* [start, end), end > start */
	char *name;               /* malloc'd */
};

struct sa_phases {
	struct sa_phase *v;       /* malloc'd, in file order */
	size_t n;
};

/*
 * Parse a phases CSV held in memory into *out (zeroed first); `what`
 * names it in messages ("p.csv:3: end_ns 100 is not after start_ns 200").
 * A header alone gives no phases.  0 or a negative errno.
 */
int sa_phases_parse(const char *buf, size_t len, const char *what, struct sa_phases *out, char *err,
		    size_t errlen);
/* sa_phases_parse() of a file's contents, messages naming `path`. */
int sa_phases_load(const char *path, struct sa_phases *out, char *err, size_t errlen);
/* Free the names and the array, and zero *p. */
void sa_phases_free(struct sa_phases *p);

#endif
