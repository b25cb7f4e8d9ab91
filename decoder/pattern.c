/* SPDX-License-Identifier: MIT */
/*
 * Test-pattern checker (decoder/pattern.h).  Input is arbitrary bytes: it
 * may be garbage, cut anywhere, duplicated or reordered, and the checker only
 * counts; it never trusts a field enough to index memory with it.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "decoder/pattern.h"
#include "le.h"

static uint64_t check_of(uint64_t ts, uint64_t seq, uint16_t xcc)
{
	return seq * DEC_PAT_MUL ^ ts ^ ((uint64_t)xcc << 48);
}

void dec_pat_make_line(unsigned char out[DEC_PAT_LINE], uint64_t ts, uint64_t seq, uint16_t xcc,
		       uint32_t gpu_id)
{
	uint64_t v64;
	uint32_t v32;
	uint16_t v16;
	v64 = htole64(ts);
	memcpy(out, &v64, 8);
	v64 = htole64(seq);
	memcpy(out + 8, &v64, 8);
	v32 = htole32(DEC_PAT_MAGIC);
	memcpy(out + 16, &v32, 4);
	v16 = htole16(xcc);
	memcpy(out + 20, &v16, 2);
	v16 = htole16((uint16_t)gpu_id);
	memcpy(out + 22, &v16, 2);
	v64 = htole64(check_of(ts, seq, xcc));
	memcpy(out + 24, &v64, 8);
}

int dec_pat_init(struct dec_pat *p, uint32_t num_xcc, int64_t gpu_id)
{
	if (!p || num_xcc == 0 || num_xcc > DEC_MAX_XCC)
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	p->num_xcc = num_xcc;
	p->gpu_id_low = gpu_id < 0 ? -1 : (int32_t)(gpu_id & 0xFFFF);
	return 0;
}

static bool line_valid(const struct dec_pat *p, uint32_t xcc, const unsigned char *l)
{
	uint64_t ts = le_get64(l), seq = le_get64(l + 8);
	uint16_t lx = le_get16(l + 20);
	if (le_get32(l + 16) != DEC_PAT_MAGIC || lx != xcc)
		return false;
	if (p->gpu_id_low >= 0 && le_get16(l + 22) != (uint16_t)p->gpu_id_low)
		return false;
	return le_get64(l + 24) == check_of(ts, seq, lx);
}

/*
 * Lost bytes are counted in whole lines, but a discontinuity can fall inside
 * a line: its first bytes were recorded, the rest never came.  Subtracting
 * those recorded bytes keeps "bytes recorded + lost bytes = bytes produced"
 * exact for the caller.
 */
static void update_lost(struct dec_pat_stats *st)
{
	uint64_t l = st->lost_lines * DEC_PAT_LINE;
	st->lost_bytes = l > st->dropped_partial ? l - st->dropped_partial : 0;
}

static void account(struct dec_pat *p, uint32_t xcc, const unsigned char *l)
{
	struct dec_pat_xcc *x = &p->x[xcc];
	uint64_t ts = le_get64(l), seq = le_get64(l + 8);
	if (seq < x->st.next_seq) {
		x->st.dup_lines++;
		return;
	}
	x->st.lost_lines += seq - x->st.next_seq;
	x->st.next_seq = seq + 1;
	x->st.good_lines++;
	if (x->have_ts && ts < x->last_ts)
		x->st.ts_backwards++;
	x->last_ts = ts;
	x->have_ts = true;
	update_lost(&x->st);
}

void dec_pat_break(struct dec_pat *p, uint32_t xcc)
{
	if (!p || xcc >= p->num_xcc)
		return;
	struct dec_pat_xcc *x = &p->x[xcc];
	x->st.dropped_partial += x->st.carry;
	x->st.carry = 0;
	update_lost(&x->st);
}

void dec_pat_feed(struct dec_pat *p, uint32_t xcc, const void *bytes, size_t len)
{
	if (!p || xcc >= p->num_xcc || (!bytes && len))
		return;
	struct dec_pat_xcc *x = &p->x[xcc];
	const unsigned char *b = bytes;
	x->st.bytes_fed += len;

	if (x->st.carry) {
		uint32_t need = DEC_PAT_LINE - x->st.carry;
		if (len < need) {
			memcpy(x->partial + x->st.carry, b, len);
			x->st.carry += (uint32_t)len;
			return;
		}
		unsigned char line[DEC_PAT_LINE];
		memcpy(line, x->partial, x->st.carry);
		memcpy(line + x->st.carry, b, need);
		if (line_valid(p, xcc, line)) {
			account(p, xcc, line);
			x->st.carry = 0;
			b += need;
			len -= need;
		} else if (len >= DEC_PAT_LINE && line_valid(p, xcc, b)) {
			/* The new bytes start on a line of their own: the kernel dropped
			 * the rest of the carried line (gen A discards its ring on
			 * overflow), so resynchronise here instead of misreading every
			 * following line. */
			dec_pat_break(p, xcc);
		} else {
			x->st.corrupt_lines++;
			x->st.carry = 0;
			b += need;
			len -= need;
		}
	}
	for (; len >= DEC_PAT_LINE; b += DEC_PAT_LINE, len -= DEC_PAT_LINE) {
		if (line_valid(p, xcc, b))
			account(p, xcc, b);
		else
			x->st.corrupt_lines++;
	}
	if (len) {
		memcpy(x->partial, b, len);
		x->st.carry = (uint32_t)len;
	}
}

const struct dec_pat_stats *dec_pat_stats(const struct dec_pat *p, uint32_t xcc)
{
	if (!p || xcc >= p->num_xcc)
		return NULL;
	return &p->x[xcc].st;
}

void dec_pat_total(const struct dec_pat *p, struct dec_pat_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!p)
		return;
	for (uint32_t k = 0; k < p->num_xcc; k++) {
		const struct dec_pat_stats *s = &p->x[k].st;
		out->bytes_fed += s->bytes_fed;
		out->good_lines += s->good_lines;
		out->lost_lines += s->lost_lines;
		out->lost_bytes += s->lost_bytes;
		out->dup_lines += s->dup_lines;
		out->corrupt_lines += s->corrupt_lines;
		out->ts_backwards += s->ts_backwards;
		out->dropped_partial += s->dropped_partial;
		out->next_seq += s->next_seq;
		out->carry += s->carry;
	}
}

bool dec_pat_detected(const struct dec_pat *p)
{
	if (!p)
		return false;
	for (uint32_t k = 0; k < p->num_xcc; k++)
		if (p->x[k].st.good_lines)
			return true;
	return false;
}
