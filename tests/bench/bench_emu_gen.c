/* SPDX-License-Identifier: MIT */
/*
 * The emulated device's cost of making SPM sample bytes, per CPU second
 * (issue 15 item 1): the per-sample reference (every counter from the
 * model, SPMTAP_EMU_SAMPLE_TEMPLATES=0) and the template ring (the
 * default), in the same run, interleaved, on the layout spmtap programs
 * for `--spm SQ_WAVES,SQ_CYCLES,TCC_HIT,TA_TA_BUSY` on one MI300A XCC
 * (384-byte samples), for 8 XCCs as on an MI300X.  Each sample goes the
 * way emu/shim/rlc.c's fill takes it: a(t), the sample, a copy into the
 * destination, the timestamp patched.  With a square workload too (two
 * levels), and with the per-sample truth read as the shim does when
 * $SPMTAP_EMU_SAMPLE_TRUTH is set.
 *
 * Prints key=value lines; never fails on a timing.  `cpu_s_per_gb` at
 * 1 GB/s is the fraction of one core the generation needs.
 *   build/bench/bench_emu_gen [seconds per round, default 0.3]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "emu_fake_layout.h"

#define NXCC 8
#define ROUNDS 5
#define INTERVAL 4096u /* MI300X at 4096: about 1.5 GB/s from 8 XCCs with these counters */

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct run {
	struct emu_rlc_layout *L[NXCC];
	uint64_t seq[NXCC];
	uint8_t *dst;
	size_t dst_len;
	uint64_t sink;
};

/* One block of samples from each XCC, as fill copies them into the ring: bytes made. */
static size_t gen_block(struct run *r, bool truth)
{
	const uint64_t period_ns = (uint64_t)INTERVAL * 1000 / 2100; /* interval at 2100 MHz */
	size_t made = 0;
	for (uint32_t x = 0; x < NXCC; x++) {
		struct emu_rlc_layout *L = r->L[x];
		size_t off = 0;
		for (int i = 0; i < 256; i++, r->seq[x]++) {
			uint64_t t = r->seq[x] * period_ns;
			double a = emu_workload_activity(&L->wl, t);
			const uint64_t *tv = NULL;
			const uint8_t *s = emu_rlc_gen(L, x, r->seq[x], a, truth ? &tv : NULL);
			if (off + L->sample_bytes > r->dst_len)
				off = 0;
			memcpy(r->dst + off, s, L->sample_bytes);
			emu_rlc_put_ticks(L, r->dst + off, t / 10);
			if (tv)
				r->sink += tv[L->ncnt - 1];
			off += L->sample_bytes;
			made += L->sample_bytes;
		}
	}
	return made;
}

/* Bytes generated per CPU second over about `secs` of CPU. */
static double rate(struct run *r, bool direct, bool truth, double secs)
{
	for (uint32_t x = 0; x < NXCC; x++)
		r->L[x]->direct = direct;
	double c0 = cpu_s(), c;
	size_t bytes = 0;
	do {
		bytes += gen_block(r, truth);
		c = cpu_s() - c0;
	} while (c < secs);
	return (double)bytes / c;
}

static double median(double *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

static void bench(const char *name, const char *workload, bool truth, double secs)
{
	struct run r;
	memset(&r, 0, sizeof(r));
	r.dst_len = 4u << 20;
	r.dst = malloc(r.dst_len);
	for (uint32_t x = 0; x < NXCC; x++)
		r.L[x] = fake_layout_mi300a4(x, INTERVAL, workload);
	if (!r.dst || !r.L[NXCC - 1]) {
		fprintf(stderr, "bench_emu_gen: out of memory\n");
		exit(1);
	}
	rate(&r, false, truth, secs / 4); /* warm: the rings fill */
	double ref[ROUNDS], tpl[ROUNDS];
	for (int i = 0; i < ROUNDS; i++) {
		ref[i] = rate(&r, true, truth, secs);
		tpl[i] = rate(&r, false, truth, secs);
	}
	double mr = median(ref, ROUNDS), mt = median(tpl, ROUNDS);
	printf("%s_ref_gb_per_cpu_s=%.3f\n", name, mr / 1e9);
	printf("%s_tpl_gb_per_cpu_s=%.3f\n", name, mt / 1e9);
	printf("%s_ref_cpu_s_per_gb=%.3f\n", name, 1e9 / mr);
	printf("%s_tpl_cpu_s_per_gb=%.4f\n", name, 1e9 / mt);
	printf("%s_speedup=%.1f\n", name, mt / mr);
	if (r.sink == 42)
		printf("\n");
	for (uint32_t x = 0; x < NXCC; x++)
		fake_layout_free(r.L[x]);
	free(r.dst);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0.3;
	if (!(secs > 0))
		secs = 0.3;
	printf("xccs=%d\ninterval=%u\nsample_bytes=%u\nrounds=%d\n", NXCC, INTERVAL, 12 * EMU_RLC_LINE, ROUNDS);
	{
		struct emu_rlc_layout *L = fake_layout_mi300a4(0, INTERVAL, NULL);
		printf("ring_samples_per_level=%u\n", L ? emu_rlc_tpl_ring(L) : 0);
		fake_layout_free(L);
	}
	printf("memcpy_gb_per_s=%.2f\n", memcpy_rate() / 1e9);
	bench("constant", NULL, false, secs);
	bench("square", "square:period_ms=1,duty=0.5,high=1,low=0.2", false, secs);
	bench("truth", NULL, true, secs);
	return 0;
}
