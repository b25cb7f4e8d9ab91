/* SPDX-License-Identifier: MIT */
/*
 * The emulated RLC: a counter program written by hand (SPM.md 5.5's
 * worked-example layout plus an SQ 32-bit counter) goes through the PM4
 * channel, the stream comes back through raw RLC_SPM ioctls, and every
 * delivered sample is checked against $SPMTAP_EMU_SAMPLE_TRUTH: size,
 * timestamps, clamping, the 32-bit split, per-XCC independence, that
 * STOP_COUNTING ends the drain, and that the sample template ring wraps
 * with every sample still equal to its truth.  mi300a (gen B, 6 XCCs x 4 SEs) and mi210
 * (gen A, 8 SEs with SEGMENT_SIZE_CORE1).
 */
#include <sys/mman.h>

#include "emu/common/emu.h"
#include "emu/common/sample_gen.h"
#include "test_emu_util.h"
#include "emu/common/test_pm4.h"

#define SPEC "mi300a,mi210"
#define INTERVAL 65504u

enum { OP_ACQ = SPMTAP_KFD_SPM_OP_ACQUIRE, OP_REL = SPMTAP_KFD_SPM_OP_RELEASE };

static int kfd = -1;
static uint32_t G3, G2;
static char truth_path[4096];

struct pm4 {
	uint32_t dw[1024];
	uint32_t n;
};

static void put(struct pm4 *p, uint32_t v)
{
	p->dw[p->n++] = v;
}

static void hdr(struct pm4 *p, unsigned op, unsigned body)
{
	put(p, 0xC0000000u | ((body - 1) & 0x3FFF) << 16 | op << 8);
}

static void uconfig(struct pm4 *p, uint32_t addr, uint32_t val)
{
	hdr(p, 0x79, 2);
	put(p, addr - 0xC000);
	put(p, val);
}

static void csf(struct pm4 *p)
{
	hdr(p, 0x46, 1);
	put(p, 0x407);
}

/* WRITE_DATA of `n` dwords to one muxsel DATA register (no increment), then the 1-dword NOP. */
static void ram(struct pm4 *p, uint32_t addr_reg, uint32_t data_reg, const uint32_t *d, unsigned n)
{
	uconfig(p, addr_reg, 0);
	hdr(p, 0x37, 3 + n);
	put(p, 0x00110000);
	put(p, data_reg);
	put(p, 0);
	for (unsigned i = 0; i < n; i++)
		put(p, d[i]);
	put(p, 0xFFFF1000);
}

/*
 * Global: CPC_A (CPC k0), TCC_A k0 = TCC_HIT, TCC_B k1 = TCC_MISS, TCC_C k2 = TCC_REQ
 * at entries 4, 5, 16, 6 (SPM.md 5.5).  SE: TA_A k0 at 0, TA_B k1 at 16, and
 * SQ counter 0 in 32-bit mode: low half at 1 (field 0), high half at 17 (field 1).
 */
static void start_program(struct pm4 *p, bool gfx90a)
{
	p->n = 0;
	uconfig(p, 0xDCBF, 1);
	uconfig(p, 0xC200, 0xE0000000);
	csf(p);
	uconfig(p, 0xD808, 0x20);
	csf(p);
	uconfig(p, 0xDC80, INTERVAL << 16 | 3u << 12);
	uconfig(p, 0xC200, 0xA0000000);
	uconfig(p, 0xD809, 25 | 1u << 20);                  /* CPC_CPC_STAT_BUSY */
	uconfig(p, 0xC200, 0xA0000000);
	uconfig(p, 0xDB80, 17 | 19u << 10 | 1u << 20);      /* TCC_HIT, TCC_MISS */
	uconfig(p, 0xDB81, 3);                              /* TCC_REQ */
	uconfig(p, 0xC200, 0xA0000000);
	uconfig(p, 0xDAC0, (gfx90a ? 15u | 32u << 10 : 13u | 29u << 10) | 1u << 20); /* TA_BUSY, TOTAL_WAVEFRONTS */
	uconfig(p, 0xC200, 0xE0000000);
	uconfig(p, 0xD9E1, 0xFFFFFFFF);
	uconfig(p, 0xD9E0, 0xFFFF0057);
	uconfig(p, 0xD9C0, 0x0F3FF000u | (gfx90a ? 74 : 79)); /* SQ_WAVE_CYCLES, 32-bit clamp */
	uconfig(p, 0xDC84, 0x0842100A);
	if (gfx90a)
		uconfig(p, 0xDCAF, 8 | 2u << 12 | 2u << 17 | 2u << 22 | 2u << 27);
	uint32_t g[17], s[17];
	for (int i = 0; i < 17; i++)
		g[i] = s[i] = 0xFFFFFFFF;
	g[0] = g[1] = 0xF0F0F0F0;
	g[2] = 0x01000040;
	g[3] = 0xFFFF0102;
	g[8] = 0xFFFF0101;
	s[0] = 0x02400140;
	s[8] = 0x02410141;
	ram(p, 0xDC9B, 0xDC9C, g, 17);
	ram(p, 0xDC85, 0xDC86, s, 17);
	uconfig(p, 0xDC9B, 0);
	uconfig(p, 0xDC85, 0);
	csf(p);
	hdr(p, 0x76, 2);
	put(p, 0x020B);
	put(p, 1);
	uconfig(p, 0xD808, 0x10);
	csf(p);
}

static void stop_program(struct pm4 *p)
{
	p->n = 0;
	uconfig(p, 0xC200, 0xE0000000);
	csf(p);
	uconfig(p, 0xD808, 0x20);
	uconfig(p, 0xDCBF, 0);
}

static int submit(uint32_t gpu, const struct pm4 *p)
{
	struct emu_test_pm4_args a;
	memset(&a, 0, sizeof(a));
	a.pm4 = (uint64_t)(uintptr_t)p->dw;
	a.ndw = p->n;
	a.gpu_id = gpu;
	int rc = ioctl(kfd, EMU_IOC_TEST_PM4, &a) ? errno : 0;
	if (rc)
		fprintf(stderr, "submit: %s\n", a.err);
	return rc;
}

/* ---- the sample truth file (docs/emulator.md) ------------------------------------ */

struct slotdesc {
	unsigned off, width, clamp;
	char part[4], name[40];
};

struct tlayout {
	unsigned id, gpu, xcc, nvals, sample_bytes;
	struct slotdesc slot[64];
};

struct trec {
	unsigned xcc, flags, layout;
	uint64_t seq, ts, val[64];
};

static struct tlayout layouts[64];
static int nlayouts;
static struct trec *recs;
static size_t nrecs;

static void truth_load(void)
{
	FILE *f = fopen(truth_path, "rb");
	nlayouts = 0;
	nrecs = 0;
	free(recs);
	recs = NULL;
	size_t cap = 0;
	uint32_t me = (uint32_t)getpid();
	if (!f)
		return;
	for (;;) {
		int c = fgetc(f);
		if (c == EOF)
			break;
		if (c == '{') {
			static char line[65536];
			line[0] = '{';
			if (!fgets(line + 1, sizeof(line) - 1, f))
				break;
			json_t *j = json_loads(line, 0, NULL);
			if (j && json_integer_value(json_object_get(j, "pid")) == getpid() && nlayouts < 64) {
				struct tlayout *L = &layouts[nlayouts++];
				L->id = (unsigned)tv(j, "layout_id");
				L->gpu = (unsigned)tv(j, "gpu_id");
				L->xcc = (unsigned)tv(j, "xcc");
				L->nvals = (unsigned)tv(j, "nvals");
				L->sample_bytes = (unsigned)tv(j, "sample_bytes");
				json_t *slots = json_object_get(j, "slots");
				for (size_t i = 0; i < json_array_size(slots) && i < 64; i++) {
					json_t *s = json_array_get(slots, i);
					L->slot[i].off = (unsigned)tv(s, "off");
					L->slot[i].width = (unsigned)tv(s, "width");
					L->slot[i].clamp = json_is_true(json_object_get(s, "clamp"));
					snprintf(L->slot[i].part, 4, "%s", json_string_value(json_object_get(s, "part")));
					snprintf(L->slot[i].name, 40, "%s", json_string_value(json_object_get(s, "name")));
				}
			}
			json_decref(j);
			continue;
		}
		ungetc(c, f);
		uint32_t h[6];
		uint64_t h2[2];
		if (fread(h, 4, 6, f) != 6 || fread(h2, 8, 2, f) != 2 || h[0] != 0x52545053u || h[5] > 64)
			break;
		struct trec r = { h[3], h[4], h[2], h2[0], h2[1], { 0 } };
		if (fread(r.val, 8, h[5], f) != h[5])
			break;
		if (h[1] != me)
			continue;
		if (nrecs == cap) {
			cap = cap ? cap * 2 : 1024;
			recs = realloc(recs, cap * sizeof(*recs));
		}
		recs[nrecs++] = r;
	}
	fclose(f);
}

static const struct tlayout *layout_of(unsigned id)
{
	for (int i = 0; i < nlayouts; i++)
		if (layouts[i].id == id)
			return &layouts[i];
	return NULL;
}

static uint16_t u16at(const uint8_t *s, unsigned off)
{
	return (uint16_t)(s[2 * off] | s[2 * off + 1] << 8);
}

static int slot_index(const struct tlayout *L, const char *name, const char *part)
{
	for (unsigned i = 0; i < L->nvals; i++)
		if (!strcmp(L->slot[i].name, name) && !strcmp(L->slot[i].part, part))
			return (int)i;
	return -1;
}

struct check {
	uint64_t nsamples, saturated16, split32, mismatches, first_ts;
	uint64_t tcc_miss[8];
};

/* Every delivered sample of (gpu, xcc) against the truth records, in order. */
static void check_stream(uint32_t gpu, unsigned xcc, const uint8_t *b, size_t len, unsigned sample_bytes,
			 unsigned dlo, unsigned dhi, struct check *out)
{
	memset(out, 0, sizeof(*out));
	CU_ASSERT_EQUAL(len % sample_bytes, 0);
	size_t ri = 0;
	uint64_t prev_ts = 0;
	for (size_t off = 0; off + sample_bytes <= len; off += sample_bytes) {
		const uint8_t *s = b + off;
		uint64_t ts = le(s, 8);
		while (ri < nrecs) {
			const struct tlayout *L = layout_of(recs[ri].layout);
			if (L && L->gpu == gpu && recs[ri].xcc == xcc)
				break;
			ri++;
		}
		if (ri == nrecs) {
			CU_FAIL("more samples than truth records");
			return;
		}
		const struct trec *r = &recs[ri++];
		const struct tlayout *L = layout_of(r->layout);
		CU_ASSERT_EQUAL(L->sample_bytes, sample_bytes);
		CU_ASSERT_EQUAL(r->seq, out->nsamples);
		CU_ASSERT_EQUAL(r->ts, ts);
		if (out->nsamples) {
			if (ts - prev_ts < dlo || ts - prev_ts > dhi) {
				fprintf(stderr, "xcc %u sample %llu: timestamp step %llu\n", xcc,
					(unsigned long long)out->nsamples, (unsigned long long)(ts - prev_ts));
				CU_FAIL("timestamp step");
			}
		} else {
			out->first_ts = ts;
		}
		prev_ts = ts;
		for (unsigned i = 0; i < L->nvals; i++) {
			const struct slotdesc *d = &L->slot[i];
			uint64_t v = r->val[i], want;
			uint64_t lim = d->width == 16 ? 0xFFFF : 0xFFFFFFFFu;
			uint64_t w = v > lim ? lim : v;
			want = !strcmp(d->part, "hi") ? w >> 16 : w & 0xFFFF;
			if (u16at(s, d->off) != want)
				out->mismatches++;
			if (d->width == 16 && v > 0xFFFF && u16at(s, d->off) == 0xFFFF)
				out->saturated16++;
			if (!strcmp(d->part, "lo")) {
				int hi = -1;
				for (unsigned h = 0; h < L->nvals; h++)
					if (!strcmp(L->slot[h].part, "hi") && L->slot[h].off == d->off + 16)
						hi = (int)h;
				if (hi >= 0 && r->val[hi] == v && v > 0xFFFF && v <= lim &&
				    (u16at(s, d->off) | (uint64_t)u16at(s, L->slot[hi].off) << 16) == v)
					out->split32++;
			}
		}
		int miss = slot_index(L, "TCC_MISS", "16");
		if (out->nsamples < 8 && miss >= 0)
			out->tcc_miss[out->nsamples] = u16at(s, L->slot[miss].off);
		out->nsamples++;
	}
	CU_ASSERT_EQUAL(out->mismatches, 0);
}

static void test_mi300a_worked_example(void)
{
	const unsigned nx = 6, region = 4u << 20;
	uint8_t *buf = mmap(NULL, nx * region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *buf2 = mmap(NULL, nx * region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(buf != MAP_FAILED && buf2 != MAP_FAILED);
	uint32_t copied, loss;
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, G3, OP_ACQ), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, G3, buf, nx * region, 0, &copied, &loss), 0); /* KFD start */
	struct pm4 p;
	start_program(&p, false);
	CU_ASSERT_EQUAL_FATAL(submit(G3, &p), 0);
	ms_sleep(10); /* ~320 samples of 320 B per XCC; regions hold ten times that */
	stop_program(&p);
	CU_ASSERT_EQUAL(submit(G3, &p), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, G3, buf2, nx * region, 0, &copied, &loss), 0);
	CU_ASSERT(copied > 0);
	CU_ASSERT_EQUAL(loss, 0);
	ms_sleep(5);
	uint32_t copied2;
	CU_ASSERT_EQUAL(spm_set(kfd, G3, buf, nx * region, 0, &copied2, &loss), 0);
	CU_ASSERT_EQUAL(copied2, 0); /* STOP_COUNTING: the drain ends */
	CU_ASSERT_EQUAL(spm_op(kfd, G3, OP_REL), 0);
	truth_load();
	struct check c[6];
	uint32_t total = 0;
	for (unsigned k = 0; k < nx; k++) {
		const uint32_t *h = (const uint32_t *)(buf + (size_t)k * region);
		total += h[1];
		check_stream(G3, k, buf + (size_t)k * region + 32, h[1], 320, 3118, 3121, &c[k]);
		CU_ASSERT(c[k].nsamples >= 100);
		CU_ASSERT(c[k].saturated16 >= c[k].nsamples); /* TCC_HIT and TCC_REQ at 65504, full load */
		CU_ASSERT(c[k].split32 >= 4 * c[k].nsamples); /* SQ_WAVE_CYCLES in 4 SEs */
		json_t *j = truth_last(G3, k);
		json_t *L = json_object_get(j, "layout");
		CU_ASSERT_EQUAL(tv(L, "sample_bytes"), 320);
		CU_ASSERT_EQUAL(tv(L, "G"), 2);
		CU_ASSERT_EQUAL(tv(L, "S"), 2);
		CU_ASSERT_EQUAL(tv(L, "num_se"), 4);
		CU_ASSERT_EQUAL(tv(L, "interval"), INTERVAL);
		CU_ASSERT(truth_consistent(j));
		json_decref(j);
	}
	CU_ASSERT_EQUAL(total, copied);
	/* Same program on every XCC, independent values. */
	CU_ASSERT(memcmp(c[0].tcc_miss, c[1].tcc_miss, sizeof(c[0].tcc_miss)) != 0);
	/* SPM.md 5.5 offsets in XCC 0's first sample: TA_A at 32+32j, TA_B at 48+32j nonzero. */
	const uint8_t *s0 = buf + 32;
	for (unsigned j = 0; j < 4; j++) {
		CU_ASSERT(u16at(s0, 32 + 32 * j) > 0);
		CU_ASSERT(u16at(s0, 48 + 32 * j) > 0);
	}
	CU_ASSERT_EQUAL(u16at(s0, 7), 0); /* an unused (0xFFFF) entry */
	munmap(buf, nx * region);
	munmap(buf2, nx * region);
}

static void test_mi210_gen_a_8se(void)
{
	const unsigned size = 8u << 20;
	uint8_t *buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *buf2 = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint32_t copied, loss, c2;
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, G2, OP_ACQ), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, G2, buf, size, 0, &copied, &loss), 0);
	struct pm4 p;
	start_program(&p, true);
	CU_ASSERT_EQUAL_FATAL(submit(G2, &p), 0);
	ms_sleep(10);
	stop_program(&p);
	CU_ASSERT_EQUAL(submit(G2, &p), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, G2, buf2, size, 0, &copied, &loss), 0);
	CU_ASSERT_EQUAL(loss, 0);
	CU_ASSERT_EQUAL(spm_set(kfd, G2, NULL, 0, 0, &c2, &loss), 0);
	CU_ASSERT_EQUAL(c2, 0);
	CU_ASSERT_EQUAL(spm_op(kfd, G2, OP_REL), 0);
	truth_load();
	struct check c;
	/* (2 + 8*2) * 32 = 576 bytes; 65504 / 1.7 GHz = 38.53 us = 3853.2 ticks */
	check_stream(G2, 0, buf, copied, 576, 3852, 3855, &c);
	CU_ASSERT(c.nsamples >= 100);
	CU_ASSERT(c.split32 >= 8 * c.nsamples);
	for (unsigned j = 0; j < 8; j++)
		CU_ASSERT(u16at(buf, 32 + 32 * j) > 0); /* TA_A of SE j */
	json_t *j = truth_last(G2, 0);
	json_t *L = json_object_get(j, "layout");
	CU_ASSERT_EQUAL(tv(L, "sample_bytes"), 576);
	CU_ASSERT_EQUAL(tv(L, "num_se"), 8);
	json_decref(j);
	munmap(buf, size);
	munmap(buf2, size);
}

/*
 * Long enough for the template ring (emu/common/sample_gen.h) to wrap, with
 * two activity levels: every delivered sample still equals its truth
 * record, and a sample repeats the values of the one K samples before it
 * exactly when both are at the same level (K from the layout's size, as
 * the emulator sizes its rings).  SCLK at 20 GHz: a sample every 3.3 us.
 */
static void test_template_ring_wraps(void)
{
	const unsigned nx = 6, region = 4u << 20;
	unlink(truth_path); /* this case's records only (the earlier cases' are flushed at their release) */
	setenv("SPMTAP_EMU_SCLK_MHZ", "20000", 1);
	setenv("SPMTAP_EMU_WORKLOAD", "square:period_ms=4,duty=0.5,high=1,low=0.25", 1);
	uint8_t *buf = mmap(NULL, nx * region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *buf2 = mmap(NULL, nx * region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(buf != MAP_FAILED && buf2 != MAP_FAILED);
	uint32_t copied, loss;
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, G3, OP_ACQ), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, G3, buf, nx * region, 0, &copied, &loss), 0);
	struct pm4 p;
	start_program(&p, false);
	CU_ASSERT_EQUAL_FATAL(submit(G3, &p), 0);
	ms_sleep(12); /* ~3600 samples of 320 B per XCC: 1.2 MB of a 4 MiB region */
	stop_program(&p);
	CU_ASSERT_EQUAL(submit(G3, &p), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, G3, buf2, nx * region, 0, &copied, &loss), 0);
	CU_ASSERT_EQUAL(loss, 0);
	CU_ASSERT_EQUAL(spm_op(kfd, G3, OP_REL), 0);
	setenv("SPMTAP_EMU_WORKLOAD", "constant:1", 1);
	unsetenv("SPMTAP_EMU_SCLK_MHZ");
	truth_load();
	struct emu_rlc_layout dims = { 0 };
	for (unsigned k = 0; k < nx; k++) {
		const uint32_t *h = (const uint32_t *)(buf + (size_t)k * region);
		struct check c;
		check_stream(G3, k, buf + (size_t)k * region + 32, h[1], 320, 327, 328, &c);
		CU_ASSERT(c.nsamples >= 1500);
	}
	/* XCC 0's records by sample number: the same level K apart means the same values. */
	const struct tlayout *L = NULL;
	struct trec **by = calloc(nrecs + 1, sizeof(*by));
	size_t n = 0;
	for (size_t i = 0; i < nrecs; i++) {
		const struct tlayout *li = layout_of(recs[i].layout);
		if (li && li->gpu == G3 && recs[i].xcc == 0 && recs[i].seq == n) {
			L = li;
			by[n++] = &recs[i];
		}
	}
	CU_ASSERT_PTR_NOT_NULL_FATAL(L);
	dims.sample_bytes = L->sample_bytes;
	dims.ncnt = L->nvals;
	uint32_t K = emu_rlc_tpl_ring(&dims);
	int ta = slot_index(L, "TA_TA_BUSY", "16");
	CU_ASSERT_FATAL(ta >= 0);
	size_t same = 0, other = 0, bad = 0, levels[2] = { 0 };
	for (size_t i = 0; i + K < n; i++) {
		bool hi0 = by[i]->val[ta] > 37000, hi1 = by[i + K]->val[ta] > 37000;
		bool eq = !memcmp(by[i]->val, by[i + K]->val, L->nvals * sizeof(uint64_t));
		levels[hi0]++;
		if (hi0 == hi1) {
			same++;
			bad += !eq;
		} else {
			other++;
			bad += eq;
		}
	}
	/* The level flips every 2 ms (200000 ticks) at the first sample past the edge: within a sample. */
	uint64_t prev_flip = 0, flips = 0, off_edge = 0;
	for (size_t i = 1; i < n; i++) {
		if ((by[i]->val[ta] > 37000) == (by[i - 1]->val[ta] > 37000))
			continue;
		if (flips++ && (by[i]->ts - prev_flip < 200000 - 330 || by[i]->ts - prev_flip > 200000 + 330))
			off_edge++;
		prev_flip = by[i]->ts;
	}
	CU_ASSERT(flips >= 3);
	CU_ASSERT_EQUAL(off_edge, 0);
	free(by);
	CU_ASSERT(n > 2 * K);
	const char *mode = getenv("SPMTAP_EMU_SAMPLE_TEMPLATES");
	if (mode && !strcmp(mode, "0"))
		bad = 0; /* the reference on request: no period, only the truth checks above apply */
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(same > K && other > 0);
	CU_ASSERT(levels[0] > 0 && levels[1] > 0);
	munmap(buf, nx * region);
	munmap(buf2, nx * region);
}

/*
 * A process that programs counters on a GPU gets what hardware gives between
 * KFD's start (DISABLE_AND_RESET) and a PM4 START: nothing.  (A process that
 * never uses the PM4 channel gets the transport test pattern: test_emu_spm.)
 */
static void test_silent_until_started(void)
{
	static uint8_t buf[64 * 1024];
	uint32_t copied, loss;
	struct pm4 nop = { .n = 0 };
	put(&nop, 0xFFFF1000); /* a 1-dword NOP: uses the channel, programs nothing */
	CU_ASSERT_EQUAL_FATAL(submit(G2, &nop), 0);
	setenv("SPMTAP_EMU_RATE", "8192", 1);
	CU_ASSERT_EQUAL_FATAL(spm_op(kfd, G2, OP_ACQ), 0);
	CU_ASSERT_EQUAL(spm_set(kfd, G2, buf, sizeof(buf), 0, &copied, &loss), 0);
	ms_sleep(5);
	CU_ASSERT_EQUAL(spm_set(kfd, G2, buf, sizeof(buf), 0, &copied, &loss), 0);
	CU_ASSERT_EQUAL(copied, 0);
	CU_ASSERT_EQUAL(loss, 0);
	CU_ASSERT_EQUAL(spm_op(kfd, G2, OP_REL), 0);
	setenv("SPMTAP_EMU_RATE", "0", 1);
}

static const struct testenv_case cases[] = {
	{ "mi300a_worked_example", test_mi300a_worked_example, NULL },
	{ "mi210_gen_a_8se", test_mi210_gen_a_8se, NULL },
	{ "silent_until_started", test_silent_until_started, NULL },
	{ "template_ring_wraps", test_template_ring_wraps, NULL },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	static const char *const env[] = { "SPMTAP_EMU_RATE=0", "SPMTAP_EMU_WORKLOAD=constant:1", NULL };
	struct emu_gpu_desc g[2];
	char err[256];
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return testenv_run_suite("emu_rlc", cases, argc, argv);
	testenv_under_emu(argc, argv, SPEC, env);
	if (emu_spec_parse(SPEC, g, 2, err, sizeof(err)) != 2)
		return 2;
	G3 = g[0].gpu_id;
	G2 = g[1].gpu_id;
	snprintf(truth_path, sizeof(truth_path), "%s/samples.bin", testenv_tmpdir());
	setenv("SPMTAP_EMU_SAMPLE_TRUTH", truth_path, 1);
	uint32_t ids[2] = { G3, G2 };
	unsigned minors[2] = { g[0].render_minor, g[1].render_minor };
	kfd = kfd_open_vm(ids, minors, 2);
	if (kfd < 0) {
		fprintf(stderr, "cannot open the emulated KFD: %s\n", strerror(errno));
		return 2;
	}
	return testenv_run_suite("emu_rlc", cases, argc, argv);
}
