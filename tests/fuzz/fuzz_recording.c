/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for reading a recording back (collector/analysis/
 * recording.c), as `spmtap report/plot/export RECORDING` do: its metadata
 * JSON and its SPM, sensor and phases CSVs are outside bytes (copied,
 * edited, truncated by a full disk).  The input is the four files
 * separated by NUL bytes: meta, spm, smi, phases (missing ones are absent).
 * Whatever loads must give a sensor trace, counters per phase and a figure
 * without crashing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/analysis/figure.h"
#include "collector/analysis/phase_counters.h"
#include "collector/analysis/recording.h"
#include "collector/analysis/sensor_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void put(const char *suffix, const char *p, size_t n)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/r%s", dir, suffix);
	if (!p) {
		unlink(path);
		return;
	}
	FILE *f = fopen(path, "wb");
	if (!f)
		abort();
	if (n && fwrite(p, 1, n, f) != n)
		abort();
	fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/spmtap-fuzz-rec-XXXXXX");
		if (!mkdtemp(dir))
			abort();
	}
	static const char *const suffix[] = { "_meta.json", "_spm.csv", "_smi.csv", "_phases.csv" };
	const char *p = (const char *)data, *end = p + size;
	for (int i = 0; i < 4; i++) {
		if (p > end) { /* the input ended before this file: it is absent */
			put(suffix[i], NULL, 0);
			continue;
		}
		const char *nul = memchr(p, 0, (size_t)(end - p));
		const char *e = nul ? nul : end;
		put(suffix[i], p, (size_t)(e - p));
		p = e + 1;
	}
	char base[96], err[512];
	snprintf(base, sizeof(base), "%s/r", dir);
	struct recording *r;
	if (rec_load(base, &r, err, sizeof(err)))
		return 0;
	struct sa_trace *tr = NULL;
	if (rec_trace(r, &tr, err, sizeof(err)))
		tr = NULL;
	struct pc_result *pc;
	if (!pc_compute(r, &r->phases, NULL, PC_MIN_COVERAGE, &pc, err, sizeof(err)))
		pc_free(pc);
	for (uint32_t i = 0; i < r->ngpu; i++) {
		struct plot_figure *f;
		struct fig_data *d;
		if (!fig_build(r, r->gpu[i].index, tr, NULL, NULL, &f, &d, NULL, 0, err, sizeof(err))) {
			plot_figure_free(f);
			fig_data_free(d);
		}
	}
	sa_trace_free(tr);
	rec_free(r);
	return 0;
}
