/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the derived-metric language: arbitrary text as a
 * metrics file and its first line as one definition, against columns of
 * every kind (bare, instance, per-SE, unreferenceable), with and without
 * the built-ins.  Whatever compiles is evaluated on a frame with zeros and
 * missing values; a value is either missing (and 0) or finite, never NaN.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const cols[] = {
	"SQ_WAVES", "SQ_CYCLES[se0]", "SQ_CYCLES[se1]", "SQ_BUSY_CYCLES[se0]", "SQ_BUSY_CYCLES[se1]",
	"TCC_HIT[0]", "TCC_HIT[1]", "TCC_MISS", "TCC_BUSY[3]", "TA_TA_BUSY[0][se0]", "TA_TA_BUSY[0][se1]",
	"TD_TD_BUSY", "CPC_CPC_STAT_BUSY", "CPC_CPC_STAT_IDLE", "A", "B[2]", "x.y:z", "C[1][2]",
};

#define NCOLS (sizeof(cols) / sizeof(cols[0]))

static bool value(void *user, size_t col, const char *name, unsigned int xcc, double *v)
{
	(void)user;
	if (col >= NCOLS || strcmp(name, cols[col]))
		abort(); /* the index and the name must agree */
	unsigned int k = (unsigned int)col * 7 + xcc * 3;
	if (k % 13 == 5)
		return false; /* saturated */
	*v = (double)(k % 11); /* zeros too: divisions by zero */
	return true;
}

static void check(struct mx_set *s, const struct mx_frame *f)
{
	for (size_t i = 0; i < mx_set_count(s); i++) {
		struct mx_info in;
		struct mx_value v;
		if (mx_set_info(s, i, &in) || mx_set_find(s, in.name) != (int)i)
			abort();
		if (mx_eval(s, i, f, &v))
			abort();
		if (isnan(v.v) || isinf(v.v) || (v.missing && v.v != 0))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct spm_catalog *cat = NULL;
	struct mx_set *s = NULL;
	char err[256];

	if (size == 0)
		return 0;
	/* the first byte picks the catalog and whether the built-ins come first */
	uint8_t mode = data[0];
	data++, size--;
	if (spm_catalog_get(mode & 1 ? SPM_GFX_942 : SPM_GFX_90A, &cat, NULL, 0))
		abort();
	if (mx_set_new(mode & 2 ? cat : NULL, cols, NCOLS, &s, err, sizeof(err)))
		abort();
	if (mode & 4) {
		int n = mx_set_add_builtins(s, err, sizeof(err));
		if ((mode & 2) ? n < 1 : n != -EINVAL)
			abort();
	}
	struct mx_frame f = { .nxcc = 1 + (mode >> 4) % 3, .interval = (mode & 8) ? 0 : 1024, .dt = 1e-6,
			      .se_per_xcc = 2, .cus_per_se = (mode & 8) ? 0 : 4, .cu_count = 16,
			      .value = value };
	size_t before = mx_set_count(s);
	int n = mx_set_add_text(s, (const char *)data, size, "fuzz", err, sizeof(err));
	if (n >= 0 ? mx_set_count(s) != before + (size_t)n : mx_set_count(s) != before)
		abort(); /* all or nothing */
	if (strlen(err) >= sizeof(err))
		abort();
	/* the first line once more, as a single definition */
	const uint8_t *nl = memchr(data, '\n', size);
	size_t l = nl ? (size_t)(nl - data) : size;
	char *line = malloc(l + 1);
	if (!line)
		return 0;
	memcpy(line, data, l);
	line[l] = 0;
	mx_set_add(s, line, err, sizeof(err));
	free(line);
	check(s, &f);
	mx_set_free(s);
	return 0;
}
