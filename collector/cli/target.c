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

int cli_parse_devices(const struct cli_target *t, const char *cmd, const char *spec, uint32_t *gpus, size_t max,
		      size_t *n)
{
	char err[SPM_ERRLEN];
	*n = 0;
	if (!strcmp(spec, "all")) {
		for (size_t i = 0; i < t->ndev && *n < max; i++)
			gpus[(*n)++] = (uint32_t)i;
		if (!*n)
			fprintf(stderr, "spmtap %s: --device all: no GPU found\n", cmd);
		return *n ? 0 : -ENODEV;
	}
	char *dup = strdup(spec), *save = NULL;
	if (!dup)
		return -ENOMEM;
	int rc = 0;
	for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int idx = spm_device_lookup(t->devs, t->ndev, tok, err, sizeof(err));
		if (idx < 0) {
			fprintf(stderr, "spmtap %s: %s\n", cmd, err);
			rc = idx;
			break;
		}
		bool twice = false;
		for (size_t k = 0; k < *n; k++)
			twice |= gpus[k] == (uint32_t)idx;
		if (twice) {
			fprintf(stderr, "spmtap %s: --device: GPU %d given twice\n", cmd, idx);
			rc = -EINVAL;
			break;
		}
		if (*n == max) {
			fprintf(stderr, "spmtap %s: --device: at most %zu GPUs\n", cmd, max);
			rc = -E2BIG;
			break;
		}
		gpus[(*n)++] = (uint32_t)idx;
	}
	free(dup);
	if (!rc && !*n) {
		fprintf(stderr, "spmtap %s: --device '%s' names no GPU\n", cmd, spec);
		rc = -EINVAL;
	}
	return rc;
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
