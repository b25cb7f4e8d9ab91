/* SPDX-License-Identifier: MIT */
/*
 * Decoder throughput against memcpy of the same bytes, and against two
 * baselines: a straightforward per-sample loop into per-column arrays, and
 * one indirect callback per (sample, counter, SE) as aqlprofile's v1 decoder
 * does (PEERS.md 1.1, SPM.md 5.6).
 *
 * Without file arguments, three built-in cases on synthetic samples made in
 * memory: bench_decode's own layout (16 counters, 3 of them 32-bit), a
 * second 16-counter layout placed as aqlprofile's builder would (two 32-bit
 * SQ counters), and that one with per-SE columns.  All 320-byte samples,
 * global + 4 SEs.  With `LAYOUT.json RAW.bin`: the layout descriptor
 * (`x.layout.json` beside a ticks CSV, docs/layout-format.md) and one XCC's
 * headerless stream, read from files.
 *
 * Every variant runs once per round, memcpy of the same bytes before and
 * after it, rounds interleaved so that each variant sees the same machine
 * (2 cores shared with builds); the median over rounds of each ratio is
 * printed.  key=value lines for tests/bench/run.sh; no thresholds, never
 * fails on a timing (make bench).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decoder/decode.h"
#include "decoder/layout.h"

#define REGION (4u << 20) /* fed like retired buffer regions */
#define REPS 7            /* rounds by default: the median counts */
#define MAX_REPS 101
#define MIN_ROUND_BYTES (64u << 20) /* a small file is decoded several times per round */

/* bench_decode's own layout: 6 global, 10 per-SE of which 3 32-bit. */
static const char *LAYOUT_OWN =
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

/*
 * 16 counters as aqlprofile's builder places them (SPM.md 5.3, 5.6): per
 * block, even registers on the even line and odd ones on the odd line, SQ in
 * 32-bit mode with its high half 16 slots on.  6 global (GRBM, CPC, TCC), 10
 * per SE (SQ x2 32-bit, TA, TD, TCP, SPI x2 each); G = 2, S = 2: 320 bytes.
 */
static const char *LAYOUT_SE16 =
	"{\"format\":\"spmtap-layout\",\"version\":1,\"gfx\":\"gfx942\",\"num_se\":4,"
	"\"global_lines\":2,\"se_lines\":2,\"counters\":["
	"{\"name\":\"GRBM_COUNT\",\"segment\":\"global\",\"slot\":4},"
	"{\"name\":\"GRBM_GUI_ACTIVE\",\"segment\":\"global\",\"slot\":16},"
	"{\"name\":\"CPC_CPC_STAT_BUSY\",\"segment\":\"global\",\"slot\":5},"
	"{\"name\":\"TCC_HIT\",\"segment\":\"global\",\"slot\":6},"
	"{\"name\":\"TCC_MISS\",\"segment\":\"global\",\"slot\":17},"
	"{\"name\":\"TCC_EA0_RDREQ\",\"segment\":\"global\",\"slot\":7},"
	"{\"name\":\"SQ_WAVES\",\"segment\":\"se\",\"slot\":0,\"hi_slot\":16},"
	"{\"name\":\"SQ_INSTS_VALU\",\"segment\":\"se\",\"slot\":1,\"hi_slot\":17},"
	"{\"name\":\"TA_TA_BUSY\",\"segment\":\"se\",\"slot\":2},"
	"{\"name\":\"TA_FLAT_READ_WAVEFRONTS\",\"segment\":\"se\",\"slot\":18},"
	"{\"name\":\"TD_TD_BUSY\",\"segment\":\"se\",\"slot\":3},"
	"{\"name\":\"TD_TC_STALL\",\"segment\":\"se\",\"slot\":19},"
	"{\"name\":\"TCP_TOTAL_CACHE_ACCESSES\",\"segment\":\"se\",\"slot\":4},"
	"{\"name\":\"TCP_TCC_READ_REQ\",\"segment\":\"se\",\"slot\":20},"
	"{\"name\":\"SPI_CSN_BUSY\",\"segment\":\"se\",\"slot\":5},"
	"{\"name\":\"SPI_CSN_WAVE\",\"segment\":\"se\",\"slot\":21}]}";

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

struct loop_buf {
	uint32_t ncols;
	uint64_t *ts;  /* [CHUNK] */
	uint64_t *val; /* [ncols][CHUNK] */
	uint8_t *sat;  /* [ncols][CHUNK] */
};

static void straightforward(const struct dec_layout *l, bool per_se, struct loop_buf *b,
			    const uint8_t *buf, size_t n)
{
	uint32_t sb = l->sample_bytes, g = l->global_lines * 32, s = l->se_lines * 32;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = buf + i * sb;
		memcpy(&b->ts[k], p, 8);
		uint32_t col = 0;
		for (uint32_t c = 0; c < l->ncounters; c++) {
			const struct dec_counter *ct = &l->counters[c];
			bool global = ct->segment == DEC_SEG_GLOBAL;
			uint32_t nse = global ? 1 : l->num_se;
			uint64_t sum = 0;
			bool sat = false;
			for (uint32_t j = 0; j < nse; j++) {
				const uint8_t *q = global ? p : p + g + j * s;
				uint64_t v = ld16(q + ct->slot * 2);
				bool vs;
				if (ct->hi_slot >= 0) {
					v |= ld16(q + ct->hi_slot * 2) << 16;
					vs = v == 0xFFFFFFFF;
				} else {
					vs = v == 0xFFFF;
				}
				if (per_se && !global) {
					b->val[(size_t)col * CHUNK + k] = vs ? UINT64_MAX : v;
					b->sat[(size_t)col * CHUNK + k] = vs;
					col++;
				}
				sat |= vs;
				sum += v;
			}
			if (!per_se || global) {
				b->val[(size_t)col * CHUNK + k] = sat ? UINT64_MAX : sum;
				b->sat[(size_t)col * CHUNK + k] = sat;
				col++;
			}
		}
		if (++k == CHUNK) {
			sink_sum += b->val[(size_t)(b->ncols - 1) * CHUNK] + b->ts[CHUNK - 1];
			k = 0;
		}
	}
}

/* ---- baseline 2: one indirect call per value (aqlprofile v1) --------------------------- */

typedef void (*value_cb)(void *user, uint64_t ts, uint32_t counter, int se, uint64_t value);
static void count_cb(void *user, uint64_t ts, uint32_t counter, int se, uint64_t value)
{
	uint64_t *acc = user;
	acc[counter % 64] += value + (uint64_t)se + (ts & 1);
}
/* volatile: the call stays indirect, as across a library boundary */
static value_cb volatile the_cb = count_cb;

static void per_value_callback(const struct dec_layout *l, const uint8_t *buf, size_t n)
{
	uint32_t sb = l->sample_bytes, g = l->global_lines * 32, s = l->se_lines * 32;
	uint64_t acc[64] = {0};
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

/* ---- the variants ------------------------------------------------------------------------ */

enum { V_MEMCPY, V_DEC, V_SCALAR, V_LOOP, V_CB, NV };
static const char VLETTER[NV + 1] = "mdnfc";
static const char *VKEY[NV] = {"memcpy", "dec", "scalar", "loop", "callback"};
static const char *VNAME[NV] = {
	"memcpy", "dec_feed", "dec_feed, scalar kernels", "straightforward loop",
	"per-value callback",
};

struct bcase {
	const char *key;   /* key prefix: decode_<key>_... */
	const char *title;
	struct dec_layout *l;
	bool per_se;
	const uint8_t *src;
	size_t bytes;      /* whole samples */
	uint32_t passes;   /* over src per timing (a small file) */
	struct loop_buf lb;
	struct dec_stats st; /* of the last dec_feed run */
	double t[NV][MAX_REPS];
	double tm[MAX_REPS]; /* memcpy: the faster of the runs around this round */
};

static void die(const char *what, const char *err)
{
	fprintf(stderr, "bench_decode: %s: %s\n", what, err);
	exit(1);
}

static double run_decoder(struct bcase *c, bool no_simd)
{
	struct dec *d;
	char err[256];
	struct dec_opts o = {.sz = sizeof(o), .per_se = c->per_se, .no_simd = no_simd};
	double t = 0;
	for (uint32_t pass = 0; pass < c->passes; pass++) {
		if (dec_open(c->l, 1, &o, null_sink, NULL, &d, err, sizeof(err)))
			die("dec_open", err);
		double t0 = now();
		for (size_t off = 0; off < c->bytes; off += REGION)
			dec_feed(d, 0, c->src + off,
				 c->bytes - off < REGION ? c->bytes - off : REGION, false);
		dec_flush(d);
		t += now() - t0;
		if (!no_simd)
			dec_stats(d, 0, &c->st);
		dec_close(d);
	}
	return t;
}

static double run_variant(struct bcase *c, int v, uint8_t *dst)
{
	double t0 = now();
	size_t n = c->bytes / c->l->sample_bytes;
	switch (v) {
	case V_MEMCPY:
		for (uint32_t pass = 0; pass < c->passes; pass++)
			memcpy(dst, c->src, c->bytes);
		sink_sum += dst[c->bytes / 2];
		break;
	case V_DEC:
	case V_SCALAR:
		return run_decoder(c, v == V_SCALAR);
	case V_LOOP:
		for (uint32_t pass = 0; pass < c->passes; pass++)
			straightforward(c->l, c->per_se, &c->lb, c->src, n);
		break;
	case V_CB:
		for (uint32_t pass = 0; pass < c->passes; pass++)
			per_value_callback(c->l, c->src, n);
		break;
	}
	return now() - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
	double s[MAX_REPS];
	memcpy(s, v, (size_t)n * sizeof(double));
	qsort(s, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void loop_buf_init(struct bcase *c)
{
	uint32_t ncols = 0;
	for (uint32_t i = 0; i < c->l->ncounters; i++)
		ncols += c->per_se && c->l->counters[i].segment == DEC_SEG_SE ? c->l->num_se : 1;
	c->lb.ncols = ncols ? ncols : 1;
	c->lb.ts = calloc(CHUNK, 8);
	c->lb.val = calloc((size_t)c->lb.ncols * CHUNK, 8);
	c->lb.sat = calloc((size_t)c->lb.ncols * CHUNK, 1);
	if (!c->lb.ts || !c->lb.val || !c->lb.sat)
		die("loop buffers", "out of memory");
}

/* n synthetic samples of sb bytes: steady timestamps, small deltas, some saturated slots. */
static uint8_t *synth(size_t sb, size_t n)
{
	uint8_t *src = malloc(n * sb);
	if (!src)
		die("samples", "out of memory");
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
	return src;
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		die(path, strerror(errno));
	size_t cap = 1 << 20, n = 0;
	uint8_t *b = malloc(cap);
	for (;;) {
		if (!b)
			die(path, "out of memory");
		n += fread(b + n, 1, cap - n, f);
		if (n < cap)
			break;
		cap *= 2;
		b = realloc(b, cap);
	}
	if (ferror(f))
		die(path, strerror(errno));
	fclose(f);
	*len = n;
	return b;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: bench_decode [-m MiB] [-r rounds] [-o VARIANTS] [-c CASES]\n"
		"       bench_decode [-r rounds] [-o VARIANTS] [--per-se] LAYOUT.json RAW.bin\n"
		"  VARIANTS: letters of m (memcpy) d (dec_feed) n (dec_feed, scalar kernels)\n"
		"  f (straightforward loop) c (per-value callback); default: all\n"
		"  CASES: comma-separated of own, se16, se16_per_se; default: all\n"
		"  RAW.bin: one XCC's stream without a header (spmtap decode's input)\n"
		"  (e.g. -m 16 -r 1 -o d -c se16 under valgrind --tool=callgrind)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	char err[256];
	size_t mib = 256;
	int reps = REPS;
	const char *only = "mdnfc", *cases = "own,se16,se16_per_se";
	const char *files[2] = {NULL, NULL};
	bool per_se = false;
	int nfiles = 0;
	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && !strcmp(argv[i], "-m"))
			mib = strtoul(argv[++i], NULL, 0);
		else if (i + 1 < argc && !strcmp(argv[i], "-r"))
			reps = atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "-o"))
			only = argv[++i];
		else if (i + 1 < argc && !strcmp(argv[i], "-c"))
			cases = argv[++i];
		else if (!strcmp(argv[i], "--per-se"))
			per_se = true;
		else if (argv[i][0] != '-' && nfiles < 2)
			files[nfiles++] = argv[i];
		else
			usage();
	}
	if (!mib || reps < 1 || reps > MAX_REPS || nfiles == 1)
		usage();
	bool on[NV];
	for (int v = 0; v < NV; v++)
		on[v] = strchr(only, VLETTER[v]) != NULL;
	on[V_MEMCPY] = true; /* every ratio needs it */

	static struct bcase bc[3];
	int nc = 0;
	size_t maxbytes = 0;
	if (nfiles) {
		struct dec_layout *l;
		if (dec_layout_load(files[0], &l, err, sizeof(err)))
			die(files[0], err);
		size_t len;
		uint8_t *raw = read_file(files[1], &len);
		size_t bytes = len / l->sample_bytes * l->sample_bytes;
		if (bytes < (size_t)l->sample_bytes * 8)
			die(files[1], "fewer than 8 samples of this layout");
		bc[0] = (struct bcase){
			.key = "file", .title = files[1], .l = l, .per_se = per_se, .src = raw,
			.bytes = bytes,
			.passes = bytes >= MIN_ROUND_BYTES ? 1 : (uint32_t)(MIN_ROUND_BYTES / bytes + 1),
		};
		nc = 1;
	} else {
		struct dec_layout *own, *se16;
		if (dec_layout_parse(LAYOUT_OWN, strlen(LAYOUT_OWN), &own, err, sizeof(err)) ||
		    dec_layout_parse(LAYOUT_SE16, strlen(LAYOUT_SE16), &se16, err, sizeof(err)))
			die("built-in layout", err);
		/* Both are 320-byte samples: one set of synthetic bytes serves all. */
		size_t sb = own->sample_bytes, n = (mib << 20) / sb;
		const uint8_t *src = synth(sb, n);
		const struct { const char *key, *title; struct dec_layout *l; bool per_se; } all[3] = {
			{"own", "own layout: 16 counters (6 global, 10 se of which 3 32-bit), SE sums",
			 own, false},
			{"se16", "aqlprofile-placed layout: 16 counters (6 global, 10 se of which 2 "
			 "32-bit), SE sums", se16, false},
			{"se16_per_se", "the same, per-SE columns (46)", se16, true},
		};
		for (int i = 0; i < 3; i++) {
			const char *at = strstr(cases, all[i].key);
			size_t kl = strlen(all[i].key);
			/* "se16" must not pick "se16_per_se" */
			while (at && ((at != cases && at[-1] != ',') || (at[kl] && at[kl] != ',')))
				at = strstr(at + 1, all[i].key);
			if (!at)
				continue;
			bc[nc++] = (struct bcase){
				.key = all[i].key, .title = all[i].title, .l = all[i].l,
				.per_se = all[i].per_se, .src = src, .bytes = n * sb, .passes = 1,
			};
		}
		if (!nc)
			usage();
	}
	for (int i = 0; i < nc; i++) {
		loop_buf_init(&bc[i]);
		maxbytes = bc[i].bytes > maxbytes ? bc[i].bytes : maxbytes;
	}
	uint8_t *dst = malloc(maxbytes);
	if (!dst)
		die("memcpy target", "out of memory");
	memset(dst, 1, maxbytes);

	/*
	 * Round r: for each case, memcpy, every variant, memcpy again.  A ratio
	 * is taken within a round against the faster memcpy around it, and the
	 * median over rounds is printed: the load from other processes moves
	 * both sides of a ratio alike.
	 */
	for (int r = 0; r < reps; r++)
		for (int i = 0; i < nc; i++) {
			struct bcase *c = &bc[i];
			double m0 = run_variant(c, V_MEMCPY, dst);
			for (int v = 1; v < NV; v++)
				if (on[v])
					c->t[v][r] = run_variant(c, v, dst);
			double m1 = run_variant(c, V_MEMCPY, dst);
			c->tm[r] = c->t[V_MEMCPY][r] = m0 < m1 ? m0 : m1;
		}

	printf("bench_decode: median of %d interleaved rounds, memcpy of the same bytes around "
	       "each variant\n", reps);
	/* The table first, then the key=value lines (tests/bench/run.sh) together. */
	static double gbps[3][NV], xm[3][NV];
	for (int i = 0; i < nc; i++) {
		struct bcase *c = &bc[i];
		const struct dec_layout *l = c->l;
		double gb = (double)c->bytes * c->passes / 1e9;
		printf("  %s: %zu samples x %u B = %.1f MiB%s, %u counters, %u SEs%s\n", c->title,
		       c->bytes / l->sample_bytes, l->sample_bytes, c->bytes / 1048576.0,
		       c->passes > 1 ? " (several passes per round)" : "", l->ncounters, l->num_se,
		       c->per_se ? ", per-SE columns" : "");
		for (int v = 0; v < NV; v++) {
			if (!on[v])
				continue;
			double ratio[MAX_REPS];
			for (int r = 0; r < reps; r++)
				ratio[r] = c->tm[r] / c->t[v][r];
			gbps[i][v] = gb / median(c->t[v], reps);
			xm[i][v] = median(ratio, reps);
			printf("    %-27s %6.2f GB/s  %.2fx memcpy\n", VNAME[v], gbps[i][v], xm[i][v]);
		}
		if (on[V_DEC])
			printf("    decoded %llu samples, %llu saturated cells, %llu corrupt, %llu "
			       "resyncs, %llu gaps\n", (unsigned long long)c->st.samples,
			       (unsigned long long)c->st.saturated,
			       (unsigned long long)c->st.corrupt_events,
			       (unsigned long long)c->st.resyncs, (unsigned long long)c->st.gaps);
	}
	for (int i = 0; i < nc; i++) {
		struct bcase *c = &bc[i];
		/* files: decode_gbps=, decode_x_memcpy=, loop_x_memcpy=, ...;
		 * built-in: decode_<case>_dec_gbps=, decode_<case>_loop_x_memcpy=, ... */
		char pre[64];
		snprintf(pre, sizeof(pre), "decode_%s_", c->key);
		for (int v = 0; v < NV; v++) {
			if (!on[v])
				continue;
			const char *k = nfiles && v == V_DEC ? "decode" : VKEY[v];
			printf("%s%s_gbps=%.3f\n", nfiles ? "" : pre, k, gbps[i][v]);
			if (v != V_MEMCPY)
				printf("%s%s_x_memcpy=%.3f\n", nfiles ? "" : pre, k, xm[i][v]);
		}
		if (on[V_DEC])
			printf("%ssamples=%llu\n%scorrupt=%llu\n", nfiles ? "decode_" : pre,
			       (unsigned long long)c->st.samples, nfiles ? "decode_" : pre,
			       (unsigned long long)c->st.corrupt_events);
	}
	printf("decode_rounds=%d\n(check %llu)\n", reps, (unsigned long long)(sink_sum & 0xFF));
	for (int i = 0; i < nc; i++) {
		free(bc[i].lb.ts);
		free(bc[i].lb.val);
		free(bc[i].lb.sat);
	}
	free(dst);
	return 0;
}
