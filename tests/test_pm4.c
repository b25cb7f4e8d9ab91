/* SPDX-License-Identifier: MIT */
/*
 * spm/pm4.c: packet encodings (PROGRAMMING.md §1), the start/stop programs
 * in AQP-NEW's order (§2.4, §2.6), the AQL carrier (§5.1) and the
 * disassembler.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "spm/plan.h"
#include "spm/pm4.h"
#include "testenv.h"

#define HAS(s, sub) CU_ASSERT_PTR_NOT_NULL(strstr((s), (sub)))
#define N(a) (sizeof(a) / sizeof((a)[0]))

static struct spm_plan *plan_ok(const char *gfx, uint32_t num_se, const char *const *names, size_t n)
{
	struct spm_plan_request req = {
		.gfx = gfx,
		.geo = { .num_se = num_se, .num_xcc = 1, .cus_per_se = 10 },
		.counters = names,
		.ncounters = n,
		.interval = 8192,
	};
	struct spm_plan *p = NULL;
	char err[256] = "";
	int r = spm_plan_create(&req, &p, err, sizeof(err));
	if (r)
		fprintf(stderr, "plan: %s\n", err);
	CU_ASSERT_EQUAL_FATAL(r, 0);
	return p;
}

static void test_headers(void)
{
	CU_ASSERT_EQUAL(spm_pm4_header(SPM_PM4_SET_UCONFIG_REG, 1), 0xC0017900);
	CU_ASSERT_EQUAL(spm_pm4_header(SPM_PM4_SET_SH_REG, 1), 0xC0017600);
	CU_ASSERT_EQUAL(spm_pm4_header(SPM_PM4_EVENT_WRITE, 0), 0xC0004600);
	CU_ASSERT_EQUAL(spm_pm4_header(SPM_PM4_INDIRECT_BUFFER, 2), 0xC0023F00);
	/* n = -1 masks to 0x3FFF: the one-dword NOP */
	CU_ASSERT_EQUAL(spm_pm4_header(SPM_PM4_NOP, (unsigned int)-1), 0xFFFF1000);

	struct spm_pm4 b;
	spm_pm4_init(&b);
	CU_ASSERT_EQUAL(spm_pm4_set_uconfig(&b, 0xDC84, 0x0842100A), 0);
	CU_ASSERT_EQUAL(spm_pm4_set_sh(&b, 0x2E0B, 1), 0);
	CU_ASSERT_EQUAL(spm_pm4_cs_partial_flush(&b), 0);
	CU_ASSERT_EQUAL(spm_pm4_nop1(&b), 0);
	CU_ASSERT_EQUAL(spm_pm4_indirect_buffer(&b, 0x123456789ABCull, 617), 0);
	static const uint32_t want[] = {
		0xC0017900, 0x00001C84, 0x0842100A, /* offset = abs - 0xC000 */
		0xC0017600, 0x0000020B, 0x00000001, /* offset = abs - 0x2C00 */
		0xC0004600, 0x00000407,
		0xFFFF1000,
		0xC0023F00, 0x56789ABC, 0x00001234, 0x10800000 | 617,
	};
	CU_ASSERT_EQUAL_FATAL(b.n, N(want));
	CU_ASSERT_EQUAL(memcmp(b.dw, want, sizeof(want)), 0);
	CU_ASSERT_EQUAL(b.err, 0);
	spm_pm4_fini(&b);
}

static void test_write_data(void)
{
	uint32_t data[17];
	struct spm_pm4 b;

	for (size_t i = 0; i < N(data); i++)
		data[i] = 0x1000 + (uint32_t)i;
	spm_pm4_init(&b);
	CU_ASSERT_EQUAL(spm_pm4_write_data_reg(&b, 0xDC9C, data, 17), 0);
	CU_ASSERT_EQUAL_FATAL(b.n, 4 + 17 + 1);
	CU_ASSERT_EQUAL(b.dw[0], 0xC0133700); /* 0xC0003700 | (N + 2) << 16 */
	CU_ASSERT_EQUAL(b.dw[1], 0x00110000);
	CU_ASSERT_EQUAL(b.dw[2], 0x0000DC9C); /* absolute, not a UCONFIG offset */
	CU_ASSERT_EQUAL(b.dw[3], 0);
	CU_ASSERT_EQUAL(b.dw[4], 0x1000);
	CU_ASSERT_EQUAL(b.dw[20], 0x1010);
	CU_ASSERT_EQUAL(b.dw[21], 0xFFFF1000); /* odd N: 1-dword NOP */
	spm_pm4_fini(&b);

	spm_pm4_init(&b);
	CU_ASSERT_EQUAL(spm_pm4_write_data_reg(&b, 0xDC86, data, 2), 0);
	CU_ASSERT_EQUAL(b.n, 6); /* even N: no NOP */
	CU_ASSERT_EQUAL(b.dw[0], 0xC0043700);
	spm_pm4_fini(&b);

	/* errors are sticky */
	spm_pm4_init(&b);
	CU_ASSERT_EQUAL(spm_pm4_set_uconfig(&b, 0x2E0B, 1), -EINVAL); /* SH space */
	CU_ASSERT_EQUAL(spm_pm4_set_sh(&b, 0xC200, 1), -EINVAL);
	CU_ASSERT_EQUAL(spm_pm4_cs_partial_flush(&b), -EINVAL);
	CU_ASSERT_EQUAL(b.n, 0);
	spm_pm4_fini(&b);
	spm_pm4_init(&b);
	CU_ASSERT_EQUAL(spm_pm4_indirect_buffer(&b, 0x1002, 4), -EINVAL);
	spm_pm4_fini(&b);
}

static void test_aql_packet(void)
{
	uint32_t pkt[16];

	memset(pkt, 0xAB, sizeof(pkt));
	spm_pm4_aql_packet(pkt, 0x7F0012345000ull, 617, 0x1122334455667788ull);
	CU_ASSERT_EQUAL(pkt[0], 0x00010100);
	CU_ASSERT_EQUAL(pkt[1], 0xC0023F00);
	CU_ASSERT_EQUAL(pkt[2], 0x12345000);
	CU_ASSERT_EQUAL(pkt[3], 0x00007F00);
	CU_ASSERT_EQUAL(pkt[4], 0x10800000 | 617);
	CU_ASSERT_EQUAL(pkt[5], 10);
	for (int i = 6; i < 14; i++)
		CU_ASSERT_EQUAL(pkt[i], 0);
	CU_ASSERT_EQUAL(pkt[14], 0x55667788);
	CU_ASSERT_EQUAL(pkt[15], 0x11223344);
}

/* PROGRAMMING.md §7's configuration, encoded in AQP-NEW's order, dword for dword. */
static void test_start_program_exact(void)
{
	static const char *const names[] = { "SQ_WAVES", "TCC_HIT[0]", "TA_TA_BUSY[0]" };
	struct spm_plan *p = plan_ok("gfx942", 4, names, N(names));
	struct spm_pm4 b;
	uint32_t want[200];
	size_t n = 0;
#define W(...)                                                                                                 \
	do {                                                                                                   \
		const uint32_t v_[] = { __VA_ARGS__ };                                                         \
		memcpy(&want[n], v_, sizeof(v_));                                                              \
		n += N(v_);                                                                                    \
	} while (0)
	W(0xC0017900, 0x1CBF, 1);               /* RLC_PERFMON_CLK_CNTL */
	W(0xC0017900, 0x0200, 0xE0000000);      /* GRBM broadcast */
	W(0xC0004600, 0x407);                   /* CSF */
	W(0xC0017900, 0x1808, 0x20);            /* CP_PERFMON_CNTL: SPM stop */
	W(0xC0004600, 0x407);
	W(0xC0017900, 0x1C80, 0x20003000);      /* interval 8192, ring mode 3 */
	W(0xC0017900, 0x1CA4, 0x34);            /* SAMPLE_DELAY_MAX on gfx94x */
	W(0xC0017900, 0x0200, 0xA0000000);      /* instance 0 in all SEs */
	W(0xC0017900, 0x1AC0, 0x0010000D);      /* TA before TCC (block order) */
	W(0xC0017900, 0x1B80, 0x00100011);      /* GRBM unchanged: not rewritten */
	W(0xC0017900, 0x0200, 0xE0000000);
	W(0xC0017900, 0x19E1, 0xFFFFFFFF);      /* SQ MASK */
	W(0xC0017900, 0x19E0, 0xFFFF0057);      /* SQ CTRL */
	W(0xC0017900, 0x19C0, 0x0F3FF004);      /* SQ_PERFCOUNTER0_SELECT */
	W(0xC0017900, 0x1C84, 0x0842100A);      /* SEGMENT_SIZE */
	W(0xC0017900, 0x1C9B, 0);               /* GLOBAL_MUXSEL_ADDR */
	W(0xC0133700, 0x00110000, 0xDC9C, 0, 0xF0F0F0F0, 0xF0F0F0F0, 0xFFFF0100);
	for (int i = 0; i < 14; i++)
		W(0xFFFFFFFF);
	W(0xFFFF1000);
	W(0xC0017900, 0x1C85, 0);               /* SE_MUXSEL_ADDR */
	W(0xC0133700, 0x00110000, 0xDC86, 0, 0x01400240);
	for (int i = 0; i < 7; i++)
		W(0xFFFFFFFF);
	W(0xFFFF0241);                          /* SQ high half at +16 */
	for (int i = 0; i < 8; i++)
		W(0xFFFFFFFF);
	W(0xFFFF1000);
	W(0xC0017900, 0x1C9B, 0, 0xC0017900, 0x1C85, 0);
	W(0xC0004600, 0x407);
	W(0xC0017600, 0x020B, 1);               /* COMPUTE_PERFCOUNT_ENABLE */
	W(0xC0017900, 0x1808, 0x10);            /* SPM start */
	W(0xC0004600, 0x407);
#undef W

	spm_pm4_init(&b);
	CU_ASSERT_EQUAL_FATAL(spm_pm4_build_start(p, &b), 0);
	CU_ASSERT_EQUAL_FATAL(b.n, n);
	for (size_t i = 0; i < n; i++)
		if (b.dw[i] != want[i]) {
			fprintf(stderr, "dword %zu: got %08x want %08x\n", i, b.dw[i], want[i]);
			CU_FAIL("start program differs");
			break;
		}
	CU_ASSERT_EQUAL(b.n % 2, 1); /* 109: as emitted, no alignment is promised */
	spm_pm4_fini(&b);
	spm_plan_free(p);
}

/* Find each needle after the previous one. */
static void has_in_order(const char *text, const char *const *needles, size_t n)
{
	const char *at = text;
	for (size_t i = 0; i < n; i++) {
		const char *f = strstr(at, needles[i]);
		if (!f) {
			fprintf(stderr, "missing (in order): %s\n", needles[i]);
			CU_FAIL("disassembly order");
			return;
		}
		at = f + strlen(needles[i]);
	}
}

static void test_start_disasm_order(void)
{
	static const char *const names[] = { "TCC_HIT", "SQ_WAVES", "SPI_CSN_WAVE" };
	struct spm_plan *p = plan_ok("gfx942", 4, names, N(names));
	struct spm_pm4 b;

	spm_pm4_init(&b);
	CU_ASSERT_EQUAL_FATAL(spm_pm4_build_start(p, &b), 0);
	char *t = spm_pm4_disasm(b.dw, b.n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	static const char *const order[] = {
		"SET_UCONFIG_REG  RLC_PERFMON_CLK_CNTL = 0x00000001",
		"GRBM_GFX_INDEX = 0xe0000000  broadcast",
		"EVENT_WRITE      CS_PARTIAL_FLUSH",
		"CP_PERFMON_CNTL = 0x00000020",
		"EVENT_WRITE      CS_PARTIAL_FLUSH",
		"RLC_SPM_PERFMON_CNTL = 0x20003000",
		"RLC_SPM_PERFMON_SAMPLE_DELAY_MAX = 0x00000034",
		"GRBM_GFX_INDEX = 0xa0000000  instance 0, all SEs, all SHs",
		"SPI_PERFCOUNTER0_SELECT = 0x00100034",
		"TCC_PERFCOUNTER0_SELECT = 0x00100011",
		"GRBM_GFX_INDEX = 0xa0000001  instance 1",
		"TCC_PERFCOUNTER0_SELECT = 0x00100011",
		"GRBM_GFX_INDEX = 0xa000000f  instance 15",
		"TCC_PERFCOUNTER0_SELECT = 0x00100011",
		"GRBM_GFX_INDEX = 0xe0000000  broadcast",
		"SQ_PERFCOUNTER_MASK = 0xffffffff",
		"SQ_PERFCOUNTER_CTRL = 0xffff0057",
		"SQ_PERFCOUNTER0_SELECT = 0x0f3ff004",
		"RLC_SPM_PERFMON_SEGMENT_SIZE = 0x",
		"RLC_SPM_GLOBAL_MUXSEL_ADDR = 0x00000000",
		"WRITE_DATA       RLC_SPM_GLOBAL_MUXSEL_DATA x33: f0f0f0f0 f0f0f0f0 09000100",
		"NOP              (1 dword)",
		"RLC_SPM_SE_MUXSEL_ADDR = 0x00000000",
		"WRITE_DATA       RLC_SPM_SE_MUXSEL_DATA x17: 02000240",
		"NOP              (1 dword)",
		"RLC_SPM_GLOBAL_MUXSEL_ADDR = 0x00000000",
		"RLC_SPM_SE_MUXSEL_ADDR = 0x00000000",
		"EVENT_WRITE      CS_PARTIAL_FLUSH",
		"SET_SH_REG       COMPUTE_PERFCOUNT_ENABLE = 0x00000001",
		"CP_PERFMON_CNTL = 0x00000010",
		"EVENT_WRITE      CS_PARTIAL_FLUSH",
	};
	has_in_order(t, order, N(order));
	/* never the KFD-owned registers, never CORE1 on gfx942 */
	CU_ASSERT_PTR_NULL(strstr(t, "RING"));
	CU_ASSERT_PTR_NULL(strstr(t, "MC_CNTL"));
	CU_ASSERT_PTR_NULL(strstr(t, "CORE1"));
	CU_ASSERT_PTR_NULL(strstr(t, "reg 0x"));
	/* the program's last GRBM write is broadcast */
	const char *last = NULL;
	for (const char *s = t; (s = strstr(s, "GRBM_GFX_INDEX = ")); s++)
		last = s;
	CU_ASSERT_PTR_NOT_NULL_FATAL(last);
	CU_ASSERT_EQUAL(strncmp(last, "GRBM_GFX_INDEX = 0xe0000000", 27), 0);
	free(t);
	spm_pm4_fini(&b);
	spm_plan_free(p);
}

static void test_gfx90a_program(void)
{
	static const char *const names[] = { "SQ_WAVES" };
	struct spm_plan *p = plan_ok("gfx90a", 8, names, N(names));
	struct spm_pm4 b;

	spm_pm4_init(&b);
	CU_ASSERT_EQUAL_FATAL(spm_pm4_build_start(p, &b), 0);
	char *t = spm_pm4_disasm(b.dw, b.n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	static const char *const order[] = {
		"RLC_SPM_PERFMON_CNTL = 0x20003000",
		"SQ_PERFCOUNTER0_SELECT = 0x0f3ff004",
		"RLC_SPM_PERFMON_SEGMENT_SIZE = 0x0842100a",
		"RLC_SPM_PERFMON_SEGMENT_SIZE_CORE1 = 0x10842008",
		"RLC_SPM_GLOBAL_MUXSEL_DATA x17",
	};
	has_in_order(t, order, N(order));
	/* gfx90a's factory value is 0: no SAMPLE_DELAY_MAX write */
	CU_ASSERT_PTR_NULL(strstr(t, "SAMPLE_DELAY_MAX"));
	/* SQ alone: no per-instance GRBM write */
	CU_ASSERT_PTR_NULL(strstr(t, "0xa0000000"));
	free(t);
	spm_pm4_fini(&b);
	spm_plan_free(p);
}

static void test_stop_program(void)
{
	static const char *const names[] = { "SQ_WAVES" };
	struct spm_plan *p = plan_ok("gfx942", 4, names, N(names));
	struct spm_pm4 b;
	static const uint32_t want[] = {
		0xC0017900, 0x0200, 0xE0000000, /* GRBM broadcast */
		0xC0004600, 0x0407,             /* CSF */
		0xC0017900, 0x1808, 0x20,       /* SPM stop; AQP-NEW drops the reset to 0 */
		0xC0017900, 0x1CBF, 0,          /* RLC_PERFMON_CLK_CNTL = 0 */
	};

	spm_pm4_init(&b);
	/* a start first: the stop IB must still write GRBM (a new IB, cache reset) */
	CU_ASSERT_EQUAL_FATAL(spm_pm4_build_start(p, &b), 0);
	size_t start_n = b.n;
	CU_ASSERT_EQUAL_FATAL(spm_pm4_build_stop(p, &b), 0);
	CU_ASSERT_EQUAL_FATAL(b.n - start_n, N(want));
	CU_ASSERT_EQUAL(memcmp(b.dw + start_n, want, sizeof(want)), 0);
	spm_pm4_fini(&b);
	spm_plan_free(p);
}

static void test_disasm_edges(void)
{
	static const uint32_t dw[] = {
		0xFFFF1000,                         /* NOP of 1 dword */
		0xC0027900, 0x1C9B, 0x11, 0x22,     /* 2 consecutive registers */
		0xC0004600, 0x00000017,             /* PERFCOUNTER_START-type event */
		0xC0023F00, 0x1000, 0x1, 0x10800010,
		0x12345678,                         /* not type 3 */
		0xC0055800, 0x1,                    /* truncated */
	};
	char *t = spm_pm4_disasm(dw, N(dw));
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	static const char *const order[] = {
		"0000  NOP              (1 dword)",
		"0001  SET_UCONFIG_REG  RLC_SPM_GLOBAL_MUXSEL_ADDR = 0x00000011",
		"SET_UCONFIG_REG  RLC_SPM_GLOBAL_MUXSEL_DATA = 0x00000022",
		"0005  EVENT_WRITE      type 0x17 index 0",
		"0007  INDIRECT_BUFFER  addr 0x0000000100001000 size 16 dwords ctrl 0x10800000",
		"000b  DATA?",
		"000c  TRUNCATED",
	};
	has_in_order(t, order, N(order));
	free(t);

	char buf[64];
	CU_ASSERT_STRING_EQUAL(spm_gfx9_reg_name(0xDB81, buf, sizeof(buf)), "TCC_PERFCOUNTER0_SELECT1");
	CU_ASSERT_STRING_EQUAL(spm_gfx9_reg_name(0xD981, buf, sizeof(buf)), "SPI_PERFCOUNTER1_SELECT");
	CU_ASSERT_STRING_EQUAL(spm_gfx9_reg_name(0xDC98, buf, sizeof(buf)), "RLC_SPM_SQG_PERFMON_SAMPLE_DELAY");
	CU_ASSERT_STRING_EQUAL(spm_gfx9_reg_name(0xD808, buf, sizeof(buf)), "CP_PERFMON_CNTL");
	CU_ASSERT_STRING_EQUAL(spm_gfx9_reg_name(0xD9CF, buf, sizeof(buf)), "SQ_PERFCOUNTER15_SELECT");
	CU_ASSERT_STRING_EQUAL(spm_gfx9_reg_name(0x1234, buf, sizeof(buf)), "reg 0x1234");
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "pm4/headers", test_headers, NULL },
		{ "pm4/write_data", test_write_data, NULL },
		{ "pm4/aql_packet", test_aql_packet, NULL },
		{ "pm4/start_program_exact", test_start_program_exact, NULL },
		{ "pm4/start_disasm_order", test_start_disasm_order, NULL },
		{ "pm4/gfx90a_program", test_gfx90a_program, NULL },
		{ "pm4/stop_program", test_stop_program, NULL },
		{ "pm4/disasm_edges", test_disasm_edges, NULL },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("pm4", cases, argc, argv);
}
