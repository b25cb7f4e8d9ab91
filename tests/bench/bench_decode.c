/* SPDX-License-Identifier: MIT */
/*
 * Decoder throughput against memcpy of the same bytes, and against two
 * baselines: a straightforward per-sample loop into per-counter arrays, and
 * one indirect callback per (sample, counter, SE) as aqlprofile's v1 decoder
 * does (PEERS.md 1.1, SPM.md 5.6).  16 counters, global + 4 SEs, 3 of them
 * 32-bit SQ counters; ~256 MiB of synthetic samples made in memory.  Prints
 * ratios; no thresholds (make bench).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decoder/decode.h"
#include "decoder/layout.h"

#define REGION (4u << 20) /* fed like retired buffer regions */
#define REPS 7 /* rounds by default; the best of them counts */
#define MAX_REPS 100

static const char *LAYOUT =
	"{\"format\":\"spmtap-layout\",\"version\":1,\"gfx\":\"gfx942\",\"num_se\":4,"
	"\"global_lines\":2,\"se_lines\":2,\"counters\":["
	"{\"name\":\"GRBM_COUNT\",\"segment\":\"global\",\"slot\":4},"
	"{\"name\":\"GRBM_GUI_ACTIVE\",\"segment\":\"global\",\"slot\":5},"
	"{\"name\":\"CPC_A\",\"segment\":\"global\",\"slot\":6},"
	"{\"name\":\"TCC_HIT\",\"segment\":\"global\",\"slot\":7},"
	"{\"name\":\"TCC_MISS\",\"segment\":\"global\",\"slot\":8},"
	"{\"name\":\"TCC_EA_RDREQ\",\"segment\":\"global\",\"slot\":16},"
	"{\"name\":\"SQ_WAVES\",\"segment\":\"se\",\"slot\":1,\"hi_slot\":17},"
	"{\"name\":\"SQ_BUSY_CYCLES\",\"segment\":\"se\",\"slot\":7,\"hi_slot\":23},"
	"{\"name\":\"SQ_INSTS_VALU\",\"segment\":\"se\",\"slot\":8,\"hi_slot\":24},"
	"{\"name\":\"TA_BUSY\",\"segment\":\"se\",\"slot\":0},"
	"{\"name\":\"TA_FLAT_READ\",\"segment\":\"se\",\"slot\":2},"
	"{\"name\":\"TD_BUSY\",\"segment\":\"se\",\"slot\":3},"
	"{\"name\":\"TCP_TOTAL\",\"segment\":\"se\",\"slot\":4},"
	"{\"name\":\"SPI_CSN_BUSY\",\"segment\":\"se\",\"slot\":5},"
	"{\"name\":\"SPI_CSN_WAVE\",\"segment\":\"se\",\"slot\":6},"
	"{\"name\":\"TA_FLAT_WRITE\",\"segment\":\"se\",\"slot\":18}]}";

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t sink_sum;
static int null_sink(void *user, const struct dec_chunk *c)
{
	(void)user;
	/* Touch the output so the work is observable. */
	sink_sum += c->timestamp[c->nsamples - 1] + c->values[c->ncols - 1][0];
	return 0;
}

static inline uint64_t ld16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

/* ---- baseline 1: the loop one writes first ----------------------------------------------- */

#define CHUNK 4096
static uint64_t b_ts[CHUNK];
static uint64_t b_val[16][CHUNK];
static uint8_t b_sat[16][CHUNK];

static void straightforward(const struct dec_layout *l, const uint8_t *buf, size_t n)
{
	uint32_t sb = l->sample_bytes, g = l->global_lines * 32, s = l->se_lines * 32;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = buf + i * sb;
		memcpy(&b_ts[k], p, 8);
		for (uint32_t c = 0; c < l->ncounters; c++) {
			const struct dec_counter *ct = &l->counters[c];
			uint64_t sum = 0;
			bool sat = false;
			uint32_t nse = ct->segment == DEC_SEG_GLOBAL ? 1 : l->num_se;
			for (uint32_t j = 0; j < nse; j++) {
				const uint8_t *q = ct->segment == DEC_SEG_GLOBAL ? p : p + g + j * s;
				uint64_t v = ld16(q + ct->slot * 2);
				if (ct->hi_slot >= 0) {
					v |= ld16(q + ct->hi_slot * 2) << 16;
					if (v == 0xFFFFFFFF)
						sat = true;
				} else if (v == 0xFFFF) {
					sat = true;
				}
				sum += v;
			}
			b_val[c][k] = sat ? UINT64_MAX : sum;
			b_sat[c][k] = sat;
		}
		if (++k == CHUNK) {
			sink_sum += b_val[15][0];
			k = 0;
		}
	}
}

/* ---- baseline 2: one indirect call per value (aqlprofile v1) --------------------------- */

typedef void (*value_cb)(void *user, uint64_t ts, uint32_t counter, int se, uint64_t value);
static void count_cb(void *user, uint64_t ts, uint32_t counter, int se, uint64_t value)
{
	uint64_t *acc = user;
	acc[counter] += value + (uint64_t)se + (ts & 1);
}
/* volatile: the call stays indirect, as across a library boundary */
static value_cb volatile the_cb = count_cb;

static void per_value_callback(const struct dec_layout *l, const uint8_t *buf, size_t n)
{
	uint32_t sb = l->sample_bytes, g = l->global_lines * 32, s = l->se_lines * 32;
	uint64_t acc[16] = {0};
	value_cb cb = the_cb;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = buf + i * sb;
		uint64_t ts;
		memcpy(&ts, p, 8);
		for (uint32_t c = 0; c < l->ncounters; c++) {
			const struct dec_counter *ct = &l->counters[c];
			bool global = ct->segment == DEC_SEG_GLOBAL;
			uint32_t nse = global ? 1 : l->num_se;
			for (uint32_t j = 0; j < nse; j++) {
				const uint8_t *q = global ? p : p + g + j * s;
				uint64_t v = ld16(q + ct->slot * 2);
				if (ct->hi_slot >= 0)
					v |= ld16(q + ct->hi_slot * 2) << 16;
				cb(acc, ts, c, global ? -1 : (int)j, v);
			}
		}
	}
	sink_sum += acc[0];
}

static double best_of(const double *t, int reps)
{
	double b = t[0];
	for (int i = 1; i < reps; i++)
		b = t[i] < b ? t[i] : b;
	return b;
}

/* 0: SE sums, 1: per SE, 2: SE sums with the scalar kernels only */
static double run_decoder(const struct dec_layout *l, const uint8_t *src, size_t bytes, int v,
			  struct dec_stats *st)
{
	struct dec *d;
	char err[256];
	struct dec_opts o = {.sz = sizeof(o), .per_se = v == 1, .no_simd = v == 2};
	if (dec_open(l, 1, &o, null_sink, NULL, &d, err, sizeof(err))) {
		fprintf(stderr, "bench_decode: %s\n", err);
		exit(1);
	}
	double t0 = now();
	for (size_t off = 0; off < bytes; off += REGION)
		dec_feed(d, 0, src + off, bytes - off < REGION ? bytes - off : REGION, false);
	dec_flush(d);
	double t = now() - t0;
	if (st)
		dec_stats(d, 0, st);
	dec_close(d);
	return t;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_decode [-m MiB] [-r reps] [-o VARIANTS]\n"
		"  VARIANTS: letters of m (memcpy) s (SE sums) p (per SE) n (scalar)\n"
		"  f (straightforward loop) c (per-value callback); default: all\n"
		"  (e.g. -m 16 -r 1 -o s under valgrind --tool=callgrind)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct dec_layout *l;
	char err[256];
	size_t mib = 256;
	int reps = REPS;
	const char *only = "mspnfc";
	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && !strcmp(argv[i], "-m"))
			mib = strtoul(argv[++i], NULL, 0);
		else if (i + 1 < argc && !strcmp(argv[i], "-r"))
			reps = atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "-o"))
			only = argv[++i];
		else
			usage();
	}
	if (!mib || reps < 1 || reps > MAX_REPS)
		usage();
	if (dec_layout_parse(LAYOUT, strlen(LAYOUT), &l, err, sizeof(err))) {
		fprintf(stderr, "bench_decode: %s\n", err);
		return 1;
	}
	size_t sb = l->sample_bytes, n = (mib << 20) / sb, bytes = n * sb;
	uint8_t *src = malloc(bytes), *dst = malloc(bytes);
	if (!src || !dst)
		return 1;
	uint64_t x = 88172645463325252ull;
	for (size_t i = 0; i < n; i++) {
		uint8_t *p = src + i * sb;
		uint64_t ts = 1000000 + i * 3900;
		memcpy(p, &ts, 8);
		for (size_t k = 8; k < sb; k += 8) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			/* mostly small deltas, an occasional saturated slot */
			uint64_t v = x & 0x0FFF0FFF0FFF0FFFull;
			if ((x >> 60) == 0xF)
				v |= 0xFFFF;
			memcpy(p + k, &v, 8);
		}
	}
	memset(dst, 1, bytes);

	/*
	 * Every variant once per round, memcpy first and again last, so that each
	 * sees the same machine state (2 cores shared with builds): the best of N
	 * rounds is compared, memcpy's best over both of its runs per round.
	 */
	static double t[6][2 * MAX_REPS];
	struct dec_stats st = {0};
	bool on[6];
	for (int v = 0; v < 6; v++)
		on[v] = strchr(only, "mspnfc"[v]) != NULL;
	for (int r = 0; r < reps; r++) {
		for (int half = 0; half < 2; half++) {
			if (on[0]) {
				double t0 = now();
				memcpy(dst, src, bytes);
				t[0][2 * r + half] = now() - t0;
				sink_sum += dst[bytes / 2];
			}
			if (half)
				break;
			for (int v = 0; v < 3; v++)
				if (on[1 + v])
					t[1 + v][r] = run_decoder(l, src, bytes, v, v == 0 ? &st : NULL);
			if (on[4]) {
				double t0 = now();
				straightforward(l, src, n);
				t[4][r] = now() - t0;
			}
			if (on[5]) {
				double t0 = now();
				per_value_callback(l, src, n);
				t[5][r] = now() - t0;
			}
		}
	}
	double gb = bytes / 1e9;
	double m = on[0] ? gb / best_of(t[0], 2 * reps) : 0;
	static const char *name[6] = {
		"memcpy", "dec_feed (SE sums)", "dec_feed (--per-se)", "dec_feed (scalar kernels)",
		"straightforward loop", "per-value callback",
	};
	printf("bench_decode: %zu samples x %zu B = %.1f MiB, 16 counters (6 global, 10 se of which "
	       "3 32-bit), 4 SEs, best of %d interleaved rounds\n", n, sb, bytes / 1048576.0, reps);
	for (int v = 0; v < 6; v++) {
		if (!on[v])
			continue;
		double g = gb / best_of(t[v], v ? reps : 2 * reps);
		if (m)
			printf("  %-27s %6.2f GB/s  %.2fx memcpy\n", name[v], g, g / m);
		else
			printf("  %-27s %6.2f GB/s\n", name[v], g);
	}
	printf("  decoded %llu samples, %llu saturated cells, %llu corrupt (check %llu)\n",
	       (unsigned long long)st.samples, (unsigned long long)st.saturated,
	       (unsigned long long)st.corrupt_events, (unsigned long long)(sink_sum & 0xFF));
	free(src);
	free(dst);
	dec_layout_free(l);
	return 0;
}
