/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the sample decoder.  The first 8 bytes choose a
 * small layout, options and split points; the rest is the stream.  Besides
 * crashes and out-of-bounds reads it checks that the output does not
 * depend on how the bytes are split, nor on the SIMD path.
 */
#include <stdlib.h>
#include <string.h>

#include "decoder/decode.h"
#include "decoder/layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Per XCC: the two XCCs' chunks interleave differently with different splits. */
struct digest {
	uint64_t h[2], n;
};

static int sink(void *user, const struct dec_chunk *c)
{
	struct digest *g = user;
	uint64_t *h = &g->h[c->xcc];
	for (uint32_t i = 0; i < c->nsamples; i++) {
		*h = (*h ^ c->timestamp[i]) * 0x100000001B3ull;
		for (uint32_t k = 0; k < c->ncols; k++)
			*h = (*h ^ c->values[k][i] ^ dec_chunk_saturated(c, k, i)) *
			     0x100000001B3ull;
	}
	g->n += c->nsamples;
	return 0;
}

static struct digest run(const struct dec_layout *l, const struct dec_opts *o, const uint8_t *b,
			 size_t n, const size_t *cuts, int ncuts, uint32_t loss_mask)
{
	struct digest g = {{0xcbf29ce484222325ull, 0xcbf29ce484222325ull}, 0};
	struct dec *d;
	if (dec_open(l, 2, o, sink, &g, &d, NULL, 0))
		abort();
	size_t prev = 0;
	for (int i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : n;
		/* the same bytes go to XCC 1 with loss flags: must never crash */
		dec_feed(d, 0, b + prev, end - prev, false);
		dec_feed(d, 1, b + prev, end - prev, (loss_mask >> i) & 1);
		prev = end;
	}
	dec_flush(d);
	struct dec_stats st;
	for (uint32_t x = 0; x < 2; x++)
		if (dec_stats(d, x, &st) || st.partial_bytes > (8 + 1) * l->sample_bytes)
			abort();
	dec_close(d);
	return g;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 8)
		return 0;
	struct dec_counter c[4];
	struct dec_layout l = {.gfx = "gfx942"};
	l.global_lines = 1 + data[0] % 3;
	l.se_lines = data[1] % 4;
	l.num_se = 1 + data[2] % 8;
	uint32_t n = 0;
	c[n++] = (struct dec_counter){.name = "G", .segment = DEC_SEG_GLOBAL, .slot = 4,
				      .hi_slot = (data[3] & 1) && l.global_lines > 1 ? 20 : -1};
	if (data[3] & 2)
		c[n++] = (struct dec_counter){.name = "G2", .segment = DEC_SEG_GLOBAL,
					      .slot = 5 + data[4] % 11, .hi_slot = -1};
	if (l.se_lines) {
		c[n++] = (struct dec_counter){.name = "S", .segment = DEC_SEG_SE, .slot = 0,
					      .hi_slot = (data[3] & 4) && l.se_lines > 1 ? 16 : -1};
		c[n++] = (struct dec_counter){.name = "S2", .segment = DEC_SEG_SE,
					      .slot = 1 + data[5] % 15,
					      .hi_slot = (data[3] & 8) ? 1 + (data[5] + 7) % 15 : -1};
		if (c[n - 1].hi_slot == c[n - 1].slot)
			c[n - 1].hi_slot = -1;
	}
	l.counters = c;
	l.ncounters = n;
	if (dec_layout_validate(&l, NULL, 0))
		return 0;
	struct dec_opts o = {.sz = sizeof(o), .per_se = data[3] & 16, .chunk_samples = 64,
			     .no_simd = data[3] & 32};
	const uint8_t *b = data + 8;
	size_t len = size - 8;
	size_t cuts[3];
	int ncuts = 0;
	for (int i = 0; i < 3 && len; i++) {
		size_t cut = (size_t)data[6 + (i & 1)] * (i + 1) * 7 % (len + 1);
		if (!ncuts || cut >= cuts[ncuts - 1])
			cuts[ncuts++] = cut;
	}
	uint32_t loss = data[7] >> 4;
	/* XCC 1 got loss flags in `split` only: compare XCC 0 alone */
	struct digest split = run(&l, &o, b, len, cuts, ncuts, 0);
	run(&l, &o, b, len, cuts, ncuts, loss);
	struct digest whole = run(&l, &o, b, len, NULL, 0, 0);
	if (split.h[0] != whole.h[0] || split.h[1] != whole.h[1] || split.n != whole.n)
		abort();
	o.no_simd = !o.no_simd;
	struct digest other = run(&l, &o, b, len, NULL, 0, 0);
	if (other.h[0] != whole.h[0])
		abort();
	return 0;
}
