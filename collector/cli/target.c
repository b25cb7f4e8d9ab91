/* SPDX-License-Identifier: MIT */
/* Finding the GPU and the backend a command acts on, with messages users can act on. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/cli/cli.h"

int cli_parse_size(const char *s, uint64_t *out)
{
	char *end;
	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (end == s || errno)
		return -EINVAL;
	unsigned shift = 0;
	switch (*end) {
	case 0: break;
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: return -EINVAL;
	}
	if ((*end == 'i' || *end == 'I') && shift) /* accept "MiB"-ish "Mi" and "MiB" */
		end++;
	if ((*end == 'b' || *end == 'B') && shift)
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

int cli_target_devices(struct cli_target *t, const char *cmd)
{
	char err[SPM_ERRLEN] = "";
	memset(t, 0, sizeof(*t));
	int rc = spm_discover(NULL, &t->devs, &t->ndev, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "spmtap %s: %s\n", cmd, err[0] ? err : spmtap_strerror(rc));
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

int cli_target_backend(struct cli_target *t, const char *cmd, const char *name)
{
	char reason[SPM_ERRLEN] = "";
	if (name) {
		t->ops = spm_backend_find(name);
		if (!t->ops) {
			fprintf(stderr, "spmtap %s: unknown SPM backend '%s'; known:", cmd, name);
			for (const struct spm_backend_ops *const *o = spm_backends(); *o; o++)
				fprintf(stderr, " %s", (*o)->name);
			fprintf(stderr, "\n");
			return EXIT_USAGE;
		}
		if (t->ops->probe(reason, sizeof(reason)) < 0) {
			fprintf(stderr, "spmtap %s: SPM backend %s is unavailable: %s\n", cmd, name,
				reason);
			return EXIT_FAIL;
		}
		return EXIT_OK;
	}
	for (const struct spm_backend_ops *const *o = spm_backends(); *o; o++) {
		reason[0] = 0;
		if ((*o)->probe(reason, sizeof(reason)) == 0) {
			t->ops = *o;
			return EXIT_OK;
		}
		fprintf(stderr, "spmtap %s: backend %s unavailable: %s\n", cmd, (*o)->name, reason);
	}
	fprintf(stderr, "spmtap %s: no SPM backend is usable (see `spmtap list`)\n", cmd);
	return EXIT_FAIL;
}

void cli_target_free(struct cli_target *t)
{
	free(t->devs);
	memset(t, 0, sizeof(*t));
}
