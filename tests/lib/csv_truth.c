/* SPDX-License-Identifier: MIT */
/*
 * Recorded CSV rows against the emulator's per-sample truth (csv_truth.h):
 * the loader of both CSV forms and the matcher test_record_spm and
 * test_journal share.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv_truth.h"

/* ---- CSV ---------------------------------------------------------------- */



void csv_free(struct csv *c)
{
	for (uint32_t i = 0; i < c->ncols; i++)
		free(c->names[i]);
	free(c->names);
	free(c->xcc);
	free(c->ts);
	free(c->v);
	memset(c, 0, sizeof(*c));
}

/*
 * Append the rows of a CSV to c: `spmtap decode`'s (xcc,timestamp,...) or
 * the -f csv file's (gpu,xcc,host_ns,gpu_ticks,...); the columns of the
 * first file name them (the second must have the same).
 */
bool csv_load(const char *file, struct csv *c)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return false;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, f);
	bool first = c->names == NULL;
	if (first)
		c->whole = true;
	int skip; /* fields before xcc, between xcc and the ticks */
	size_t hdr;
	if (n > 0 && !strncmp(line, "xcc,timestamp,", 14)) {
		skip = 0;
		hdr = 14;
	} else if (n > 0 && !strncmp(line, "gpu,xcc,host_ns,gpu_ticks,", 26)) {
		skip = 1;
		hdr = 26;
	} else {
		free(line);
		fclose(f);
		return false;
	}
	line[strcspn(line, "\n")] = 0;
	uint32_t ncols = 0;
	for (char *save = NULL, *tok = strtok_r(line + hdr, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (first) {
			c->names = realloc(c->names, (c->ncols + 1) * sizeof(char *));
			c->names[c->ncols++] = strdup(tok);
		} else if (ncols >= c->ncols || strcmp(c->names[ncols], tok)) {
			c->whole = false;
		}
		ncols++;
	}
	if (ncols != c->ncols)
		c->whole = false;
	size_t rcap = c->nrows;
	while ((n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] != '\n')
			c->whole = false;
		if (c->nrows >= rcap) {
			rcap = rcap ? rcap * 2 : 4096;
			c->xcc = realloc(c->xcc, rcap * sizeof(uint32_t));
			c->ts = realloc(c->ts, rcap * sizeof(uint64_t));
			c->v = realloc(c->v, rcap * c->ncols * sizeof(int64_t));
		}
		char *p = line;
		if (skip) {
			strtoul(p, &p, 10);
			p++;
		}
		c->xcc[c->nrows] = (uint32_t)strtoul(p, &p, 10);
		if (*p++ != ',') {
			c->whole = false;
			continue;
		}
		if (skip) {
			strtoull(p, &p, 10);
			p++;
		}
		c->ts[c->nrows] = strtoull(p, &p, 10);
		uint32_t k = 0;
		for (; k < c->ncols && *p == ','; k++) {
			p++;
			int64_t *cell = &c->v[c->nrows * c->ncols + k];
			if (*p == ',' || *p == '\n' || !*p)
				*cell = -1;
			else
				*cell = (int64_t)strtoull(p, &p, 10);
		}
		if (k != c->ncols || (*p != '\n' && *p))
			c->whole = false;
		else
			c->nrows++;
	}
	free(line);
	fclose(f);
	return true;
}

/* ---- expected values ---------------------------------------------------- */

/* What one CSV column sums: a catalog counter, an instance (or all), an SE (or all). */
struct colspec {
	char block[8];
	unsigned event;
	int instance; /* -1 all */
	int se;       /* -1 all */
};

static bool colspec_of(const struct spm_catalog *cat, const char *name, struct colspec *cs)
{
	char base[80];
	snprintf(base, sizeof(base), "%s", name);
	cs->instance = -1;
	cs->se = -1;
	char *br;
	while ((br = strrchr(base, '[')) != NULL) {
		if (!strncmp(br, "[se", 3))
			cs->se = atoi(br + 3);
		else
			cs->instance = atoi(br + 1);
		*br = 0;
	}
	const struct spm_counter *c;
	if (spm_catalog_lookup(cat, base, &c, NULL, 0) < 0)
		return false;
	snprintf(cs->block, sizeof(cs->block), "%s", spm_block_info(c->block)->name);
	cs->event = c->event;
	return true;
}

/* -1: saturated. */
static int64_t expect(const struct truth *t, const struct st_sample *s, const struct colspec *cs,
		      unsigned *nmatch)
{
	const struct st_layout *L = &t->lay[s->layout];
	uint64_t sum = 0;
	bool sat = false;
	*nmatch = 0;
	for (uint32_t i = 0; i < L->nvals; i++) {
		const struct st_slot *e = &L->slots[i];
		if (!e->value || e->event != cs->event || strcmp(e->block, cs->block))
			continue;
		if (cs->instance >= 0 && (int)e->instance != cs->instance)
			continue;
		if (cs->se >= 0 && e->se != cs->se)
			continue;
		uint64_t clamp = e->width == 32 ? 0xFFFFFFFFull : 0xFFFFull;
		(*nmatch)++;
		if (e->clamp && s->vals[i] >= clamp)
			sat = true;
		sum += s->vals[i];
	}
	return sat ? -1 : (int64_t)sum;
}

static int cmp_key(uint32_t xa, uint64_t ta, uint32_t xb, uint64_t tb)
{
	if (xa != xb)
		return xa < xb ? -1 : 1;
	return ta < tb ? -1 : ta > tb;
}

/*
 * Truth samples the CSV lacks: `leading` were produced before the first row
 * of their XCC (between the start program and the first armed buffer,
 * collector/lib/prime.h), `trailing` after its last row (at most the one
 * the stop cut); `missing` are inside the recording: lost.
 */


/*
 * Every CSV row must be a truth sample (same XCC and timestamp) with equal
 * values; truth samples of this GPU the CSV lacks are counted per XCC.
 */
void match_csv(const struct csv *c, struct truth *t, uint32_t gpu_id,
		      const struct spm_catalog *cat, struct match *m)
{
	memset(m, 0, sizeof(*m));
	/* Only this GPU's samples: a truth file may hold other runs' GPUs. */
	size_t n = 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->lay[t->s[i].layout].gpu_id == gpu_id)
			t->s[n++] = t->s[i];
	t->n = n;
	truth_sort(t);
	m->truth_samples = t->n;
	struct colspec *cs = calloc(c->ncols + 1, sizeof(*cs));
	for (uint32_t k = 0; k < c->ncols; k++)
		if (!colspec_of(cat, c->names[k], &cs[k]) && !m->first[0])
			snprintf(m->first, sizeof(m->first), "column %s is not a catalog counter", c->names[k]);
	bool *seen = calloc(t->n + 1, 1);
	m->rows = c->nrows;
	for (size_t r = 0; r < c->nrows; r++) {
		size_t lo = 0, hi = t->n;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (cmp_key(t->s[mid].xcc, t->s[mid].ticks, c->xcc[r], c->ts[r]) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == t->n || t->s[lo].xcc != c->xcc[r] || t->s[lo].ticks != c->ts[r]) {
			if (!m->first[0])
				snprintf(m->first, sizeof(m->first), "row %zu (xcc %u ts %" PRIu64 ") is no truth sample",
					 r, c->xcc[r], c->ts[r]);
			m->unmatched_rows++;
			continue;
		}
		m->duplicates += seen[lo];
		seen[lo] = true;
		bool ok = true;
		for (uint32_t k = 0; k < c->ncols; k++) {
			unsigned nm;
			int64_t want = expect(t, &t->s[lo], &cs[k], &nm);
			int64_t got = c->v[r * c->ncols + k];
			if (want != got || !nm) {
				ok = false;
				m->mismatched_cells++;
				if (!m->first[0])
					snprintf(m->first, sizeof(m->first),
						 "row %zu xcc %u ts %" PRIu64 " column %s: csv %" PRId64 ", truth %" PRId64
						 " (%u slots)", r, c->xcc[r], c->ts[r], c->names[k], got, want, nm);
			}
		}
		m->matched += ok;
	}
	/*
	 * Per XCC (the truth is sorted by XCC, then time): unseen samples before
	 * its first seen one are leading, after its last one trailing, between
	 * them missing.  Linear: scanning from every unseen sample to the nearest
	 * seen one cost a gap's length squared, minutes under TSan.
	 */
	for (size_t a = 0, b; a < t->n; a = b) {
		uint32_t x = t->s[a].xcc;
		size_t first = SIZE_MAX, last = 0;
		for (b = a; b < t->n && t->s[b].xcc == x; b++)
			if (seen[b]) {
				if (first == SIZE_MAX)
					first = b;
				last = b;
			}
		for (size_t i = a; i < b; i++) {
			if (seen[i])
				continue;
			if (first == SIZE_MAX || i < first)
				m->leading++;
			else if (i > last) {
				m->trailing++;
				if (t->s[i].flags & (ST_STALLED | ST_DISCARDED)) {
					m->trailing_dropped++;
					if (x < DEC_MAX_XCC)
						m->trailing_dropped_per_xcc[x]++;
				}
			}
			else {
				m->missing++;
				if (x < DEC_MAX_XCC)
					m->missing_per_xcc[x]++;
			}
		}
	}
	free(seen);
	free(cs);
}
