/* SPDX-License-Identifier: MIT */
/* Instance sums between the decoder and a writer (aggregate.h). */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "collector/lib/aggregate.h"
#include "log.h"

struct agg {
	dec_sink_fn sink;
	void *user;
	bool identity;         /* nothing to sum: chunks pass through untouched */
	uint32_t nin, nout;
	struct dec_column *cols;   /* [nout] */
	uint32_t *src_start;       /* [nout + 1]: inputs of output k are src[start[k]..start[k+1]) */
	uint32_t *src;             /* [nin] */
	uint32_t cap;              /* samples the buffers below hold */
	uint64_t *vals;            /* [nout][cap] */
	uint64_t *sat;             /* [nout][cap / 64] */
	const uint64_t **vptr;     /* [nout] */
	const uint64_t **sptr;     /* [nout] */
};

/*
 * "TCC_HIT[3][se1]" -> base "TCC_HIT", suffix "[se1]", true.  False when the
 * name has no numeric instance right after the base.
 */
static bool split_instance(const char *name, char *base, size_t blen, const char **suffix)
{
	const char *open = strchr(name, '[');
	if (!open || !isdigit((unsigned char)open[1]))
		return false;
	const char *p = open + 1;
	while (isdigit((unsigned char)*p))
		p++;
	if (*p != ']')
		return false;
	size_t n = (size_t)(open - name);
	if (n >= blen)
		return false;
	memcpy(base, name, n);
	base[n] = '\0';
	*suffix = p + 1;
	return true;
}

static bool requested_whole(const char *base, const char *const *req, size_t nreq)
{
	if (!req)
		return true;
	for (size_t i = 0; i < nreq; i++)
		if (req[i] && !strchr(req[i], '[') && !strcasecmp(req[i], base))
			return true;
	return false;
}

int agg_open(const struct dec_column *in, uint32_t nin, const char *const *requests, size_t nreq,
	     bool per_instance, dec_sink_fn sink, void *user, struct agg **out, char *err,
	     size_t errlen)
{
	*out = NULL;
	struct agg *a = calloc(1, sizeof(*a));
	if (!a)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	a->sink = sink;
	a->user = user;
	a->nin = nin;
	a->cols = calloc(nin ? nin : 1, sizeof(*a->cols));
	a->src_start = calloc(nin + 1, sizeof(uint32_t));
	a->src = calloc(nin ? nin : 1, sizeof(uint32_t));
	uint32_t *group = calloc(nin ? nin : 1, sizeof(uint32_t)); /* output of input i */
	if (!a->cols || !a->src_start || !a->src || !group) {
		free(group);
		agg_close(a);
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	}
	/* Outputs in order of their first input, so the column order follows the request order. */
	for (uint32_t i = 0; i < nin; i++) {
		char base[sizeof(in[i].name)], name[sizeof(in[i].name)];
		const char *suffix;
		snprintf(name, sizeof(name), "%s", in[i].name);
		if (!per_instance && split_instance(in[i].name, base, sizeof(base), &suffix) &&
		    requested_whole(base, requests, nreq))
			snprintf(name, sizeof(name), "%s%s", base, suffix);
		uint32_t k = 0;
		while (k < a->nout && strcmp(a->cols[k].name, name))
			k++;
		if (k == a->nout) {
			a->cols[k] = in[i];
			snprintf(a->cols[k].name, sizeof(a->cols[k].name), "%s", name);
			a->nout++;
		}
		a->cols[k].wide |= in[i].wide;
		group[i] = k;
	}
	uint32_t n = 0;
	for (uint32_t k = 0; k < a->nout; k++) {
		a->src_start[k] = n;
		for (uint32_t i = 0; i < nin; i++)
			if (group[i] == k)
				a->src[n++] = i;
	}
	a->src_start[a->nout] = n;
	free(group);
	a->identity = a->nout == nin;
	a->vptr = calloc(a->nout ? a->nout : 1, sizeof(*a->vptr));
	a->sptr = calloc(a->nout ? a->nout : 1, sizeof(*a->sptr));
	if (!a->vptr || !a->sptr) {
		agg_close(a);
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	}
	*out = a;
	return 0;
}

uint32_t agg_ncols(const struct agg *a)
{
	return a->nout;
}

const struct dec_column *agg_columns(const struct agg *a)
{
	return a->cols;
}

static int reserve(struct agg *a, uint32_t nsamples)
{
	if (nsamples <= a->cap)
		return 0;
	uint32_t cap = (nsamples + 63) & ~63u;
	uint64_t *v = realloc(a->vals, (size_t)a->nout * cap * sizeof(uint64_t));
	if (!v)
		return -ENOMEM;
	a->vals = v;
	uint64_t *s = realloc(a->sat, (size_t)a->nout * (cap / 64) * sizeof(uint64_t));
	if (!s)
		return -ENOMEM;
	a->sat = s;
	a->cap = cap;
	return 0;
}

/*
 * v = the sum of the nsrc columns, in one pass over v: four inputs a turn,
 * blocks of 512 samples kept in cache between turns (a plain "v += in" per
 * input rereads and rewrites v once per instance; 16 TCC instances, 16 times).
 * E is a constant for whole blocks, so that -O2's cheap vectorizer takes the
 * loops (it leaves loops of unknown length alone).
 */
static inline __attribute__((always_inline)) void sum_block(uint64_t *restrict o,
							    const uint64_t *const *vals,
							    const uint32_t *src, uint32_t nsrc,
							    uint32_t b, const uint32_t E)
{
	uint32_t j = 0;
	if (nsrc >= 2) {
		const uint64_t *restrict x = vals[src[0]] + b, *restrict y = vals[src[1]] + b;
		for (uint32_t i = 0; i < E; i++)
			o[i] = x[i] + y[i];
		j = 2;
	} else {
		memcpy(o, vals[src[0]] + b, E * sizeof(*o));
		j = 1;
	}
	for (; j + 4 <= nsrc; j += 4) {
		const uint64_t *restrict x0 = vals[src[j]] + b, *restrict x1 = vals[src[j + 1]] + b;
		const uint64_t *restrict x2 = vals[src[j + 2]] + b, *restrict x3 = vals[src[j + 3]] + b;
		for (uint32_t i = 0; i < E; i++)
			o[i] += (x0[i] + x1[i]) + (x2[i] + x3[i]);
	}
	for (; j < nsrc; j++) {
		const uint64_t *restrict x = vals[src[j]] + b;
		for (uint32_t i = 0; i < E; i++)
			o[i] += x[i];
	}
}

static void sum_columns(uint64_t *restrict v, const uint64_t *const *vals, const uint32_t *src,
			uint32_t nsrc, uint32_t n)
{
	enum { BLK = 512 };
	uint32_t b = 0;
	for (; b + BLK <= n; b += BLK)
		sum_block(v + b, vals, src, nsrc, b, BLK);
	if (b < n)
		sum_block(v + b, vals, src, nsrc, b, n - b);
}

int agg_sink(void *user, const struct dec_chunk *c)
{
	struct agg *a = user;
	if (a->identity) {
		struct dec_chunk x = *c;
		x.cols = a->cols; /* same cells; names as this stage reports them */
		return a->sink ? a->sink(a->user, &x) : 0;
	}
	if (c->ncols != a->nin)
		return -EINVAL;
	if (reserve(a, c->nsamples))
		return -ENOMEM;
	uint32_t words = (c->nsamples + 63) / 64;
	for (uint32_t k = 0; k < a->nout; k++) {
		uint64_t *v = a->vals + (size_t)k * a->cap;
		uint64_t *s = a->sat + (size_t)k * (a->cap / 64);
		const uint32_t *src = a->src + a->src_start[k];
		uint32_t nsrc = a->src_start[k + 1] - a->src_start[k];
		memcpy(s, c->saturated[src[0]], words * sizeof(uint64_t));
		for (uint32_t j = 1; j < nsrc; j++) {
			const uint64_t *ins = c->saturated[src[j]];
			for (uint32_t w = 0; w < words; w++)
				s[w] |= ins[w];
		}
		/* Saturated cells hold UINT64_MAX; they are overwritten below, so wrap is harmless. */
		sum_columns(v, c->values, src, nsrc, c->nsamples);
		for (uint32_t w = 0; w < words; w++) {
			uint64_t m = s[w];
			while (m) {
				uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(m);
				v[i] = DEC_SATURATED;
				m &= m - 1;
			}
		}
		a->vptr[k] = v;
		a->sptr[k] = s;
	}
	struct dec_chunk x = *c;
	x.ncols = a->nout;
	x.values = a->vptr;
	x.saturated = a->sptr;
	x.cols = a->cols;
	return a->sink ? a->sink(a->user, &x) : 0;
}

void agg_close(struct agg *a)
{
	if (!a)
		return;
	free(a->cols);
	free(a->src_start);
	free(a->src);
	free(a->vals);
	free(a->sat);
	free(a->vptr);
	free(a->sptr);
	free(a);
}
