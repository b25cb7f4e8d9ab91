/* SPDX-License-Identifier: MIT */
/* The submitter table and the choice between its entries. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "spm/submit.h"

static const struct spm_submitter_ops *const table[] = {
	&spm_submitter_rocr,
	&spm_submitter_hsakmt,
	NULL,
};

const struct spm_submitter_ops *const *spm_submitters(void)
{
	return table;
}

const struct spm_submitter_ops *spm_submitter_find(const char *name)
{
	for (size_t i = 0; name && table[i]; i++)
		if (!strcmp(table[i]->name, name))
			return table[i];
	return NULL;
}

const char *spm_submitter_names(void)
{
	return "rocr, hsakmt";
}

uint64_t spm_submit_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int spm_submitter_open(const struct spm_device *dev, const char *want, const struct spm_submitter_ops **ops,
		       struct spm_submitter **out, char *note, char *err, size_t errlen)
{
	*ops = NULL;
	*out = NULL;
	if (note)
		note[0] = 0;
	if (want && !spm_submitter_find(want))
		return spmtap_seterr(err, errlen, EINVAL, "unknown submitter '%s' (choose from %s)", want,
				     spm_submitter_names());
	char why[SPM_ERRLEN * 2] = "";
	size_t used = 0;
	int rc = -ENODEV;
	bool dropped = false; /* a runtime that is installed but does not serve this GPU (and said so on stderr) */
	for (size_t i = 0; table[i]; i++) {
		if (want && strcmp(table[i]->name, want))
			continue;
		char e[SPM_ERRLEN] = "";
		rc = table[i]->create(out, dev, e, sizeof(e));
		if (rc == 0) {
			*ops = table[i];
			if (note && used)
				snprintf(note, SPM_ERRLEN, "%s", why);
			if (dropped) {
				char label[96];
				/* One line the user can act on; spmtap list and -v say more. */
				pr_warn("submit", "%s: programming counters through %s (%s)",
					spm_device_label(dev, label, sizeof(label)), table[i]->name, why);
			}
			return 0;
		}
		dropped |= rc == -ENODEV;
		int n = snprintf(why + used, sizeof(why) - used, "%s%s: %s", used ? "; " : "", table[i]->name,
				 e[0] ? e : spmtap_strerror(rc));
		if (n > 0)
			used = used + (size_t)n < sizeof(why) ? used + (size_t)n : sizeof(why) - 1;
	}
	char label[96];
	return spmtap_seterr(err, errlen, rc < 0 ? -rc : ENODEV, "no way to program counters on %s: %s",
			     spm_device_label(dev, label, sizeof(label)), why);
}
