/* SPDX-License-Identifier: MIT */
/* Reading the emulator's schedule file (emu-schedule.h); its format: emu/common/schedule.h. */
#include "collector/cli/emu-schedule.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sched_file_read(struct sched_file *s, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	const char *tree = getenv("SPMTAP_EMU_SYSFS");
	if (!tree || !*tree) {
		snprintf(err, errlen, "SPMTAP_EMU_SYSFS is not set: not on the emulated node");
		return -ENOENT;
	}
	char path[PATH_MAX], line[512];
	snprintf(path, sizeof(path), "%s/emu-schedule", tree);
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "%s: %s (an emulator older than this spmtap?)", path, strerror(errno));
		return -ENOENT;
	}
	int rc = 0, version = 0;
	bool have_period = false;
	while (!rc && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		unsigned long long a;
		char name[sizeof(s->step[0].name)];
		if (sscanf(line, "spmtap-emu-schedule %d", &version) == 1) {
			continue;
		} else if (!strncmp(line, "workload ", 9)) {
			snprintf(s->workload, sizeof(s->workload), "%s", line + 9);
		} else if (!strncmp(line, "error ", 6)) {
			snprintf(err, errlen, "SPMTAP_EMU_WORKLOAD=%s: %s", s->workload, line + 6);
			rc = -EINVAL;
		} else if (sscanf(line, "period_ns %llu", &a) == 1) {
			s->period_ns = a;
			have_period = true;
		} else if (sscanf(line, "step %llu %15s", &a, name) == 2) {
			if (s->nsteps == SCHED_FILE_MAX_STEPS || (s->nsteps && a <= s->step[s->nsteps - 1].at_ns) ||
			    (!s->nsteps && a) || (s->period_ns && a >= s->period_ns)) {
				snprintf(err, errlen, "%s: step '%s' out of order or range", path, line);
				rc = -EINVAL;
				break;
			}
			s->step[s->nsteps].at_ns = a;
			snprintf(s->step[s->nsteps].name, sizeof(s->step[0].name), "%s", name);
			s->nsteps++;
		}
	}
	fclose(f);
	if (!rc && (version != 1 || !have_period)) {
		snprintf(err, errlen, "%s: not a version 1 schedule", path);
		rc = -EINVAL;
	}
	if (!rc && s->period_ns && s->nsteps < 2)
		s->period_ns = 0; /* one level all period long: no steps */
	return rc;
}

int sched_file_each(const struct sched_file *s, uint64_t t0_ns, uint64_t t1_ns,
		    int (*fn)(uint64_t start_ns, uint64_t end_ns, const char *name, void *user), void *user)
{
	uint64_t p = s->period_ns;
	if (!p || t1_ns <= t0_ns)
		return 0;
	int count = 0;
	/* a(t) is periodic from t = 0: stretch i of period k is [kp + at_i, kp + at_{i+1}) */
	for (uint64_t k = t0_ns / p; k * p < t1_ns; k++) {
		for (size_t i = 0; i < s->nsteps; i++) {
			uint64_t b = k * p + s->step[i].at_ns;
			uint64_t e = k * p + (i + 1 < s->nsteps ? s->step[i + 1].at_ns : p);
			if (b < t0_ns)
				b = t0_ns;
			if (e > t1_ns)
				e = t1_ns;
			if (b >= e)
				continue;
			int rc = fn(b, e, s->step[i].name, user);
			if (rc)
				return rc;
			count++;
		}
	}
	return count;
}
