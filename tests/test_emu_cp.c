/* SPDX-License-Identifier: MIT */
/*
 * The emulated command processor, through the emulator-only PM4 channel
 * and the test-only register read-back.  The PM4 is built by hand from
 * PROGRAMMING.md's encodings (never with spmtap's planner), so a shared
 * misreading cannot hide.  Runs under mi300a (6 XCCs, 4 SEs each) and
 * mi210 (1 XCC, 8 SEs).
 */
#include <pthread.h>

#include "emu/common/emu.h"
#include "emu/common/readback.h"
#include "test_emu_util.h"
#include "emu/common/test_pm4.h"

#define SPEC "mi300a,mi210"

static int kfd = -1;
static uint32_t G3, G2; /* mi300a, mi210 */

struct pm4 {
	uint32_t dw[4096];
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

static int submit(uint32_t gpu, uint32_t mask, const struct pm4 *p, struct emu_test_pm4_args *out)
{
	struct emu_test_pm4_args a;
	memset(&a, 0, sizeof(a));
	a.pm4 = (uint64_t)(uintptr_t)p->dw;
	a.ndw = p->n;
	a.gpu_id = gpu;
	a.xcc_mask = mask;
	int rc = ioctl(kfd, EMU_IOC_TEST_PM4, &a) ? errno : 0;
	if (out)
		*out = a;
	if (rc && !out)
		fprintf(stderr, "submit: %s\n", a.err);
	return rc;
}

static uint32_t rb(uint32_t gpu, uint32_t xcc, uint32_t what, uint32_t addr, uint32_t se, uint32_t inst)
{
	struct emu_readback_args a = { gpu, xcc, what, addr, se, inst, 0xDEADBEEF, 0 };
	if (ioctl(kfd, EMU_IOC_READBACK, &a))
		return 0xDEADBEEF;
	return a.value;
}

static uint32_t reg(uint32_t gpu, uint32_t xcc, uint32_t addr)
{
	return rb(gpu, xcc, EMU_RB_REG, addr, 0, 0);
}

static void test_set_uconfig_and_sh(void)
{
	struct pm4 p = { .n = 0 };
	/* Three consecutive registers in one packet: SEGMENT_SIZE, SE_MUXSEL_ADDR, (SE_MUXSEL_DATA). */
	hdr(&p, 0x79, 3);
	put(&p, 0xDC84 - 0xC000);
	put(&p, 0x0842100A);
	put(&p, 0);
	uconfig(&p, 0xDC80, 0x20003000);
	hdr(&p, 0x76, 2); /* SET_SH_REG COMPUTE_PERFCOUNT_ENABLE */
	put(&p, 0x020B);
	put(&p, 1);
	put(&p, 0xFFFF1000); /* 1-dword NOP */
	hdr(&p, 0x10, 3);    /* 4-dword NOP whose body looks like packets */
	put(&p, 0xC0002A00);
	put(&p, 0xDEADBEEF);
	put(&p, 0x12345678);
	hdr(&p, 0x46, 1); /* EVENT_WRITE CS_PARTIAL_FLUSH */
	put(&p, 0x407);
	hdr(&p, 0x58, 6); /* ACQUIRE_MEM */
	for (int i = 0; i < 6; i++)
		put(&p, i ? 0 : 0x28C40000);
	put(&p, 0x80000000u); /* type-2 filler */
	struct emu_test_pm4_args a;
	CU_ASSERT_EQUAL_FATAL(submit(G3, 0, &p, &a), 0);
	CU_ASSERT_EQUAL(a.done_dw, p.n);
	for (uint32_t k = 0; k < 6; k++) {
		CU_ASSERT_EQUAL(reg(G3, k, 0xDC84), 0x0842100A);
		CU_ASSERT_EQUAL(reg(G3, k, 0xDC80), 0x20003000);
		CU_ASSERT_EQUAL(reg(G3, k, 0x2E0B), 1);
	}
	/* xcc_mask: only XCC 4 */
	p.n = 0;
	uconfig(&p, 0xDC80, 0x10000000);
	CU_ASSERT_EQUAL(submit(G3, 1u << 4, &p, NULL), 0);
	CU_ASSERT_EQUAL(reg(G3, 4, 0xDC80), 0x10000000);
	CU_ASSERT_EQUAL(reg(G3, 3, 0xDC80), 0x20003000);
}

static void test_write_data(void)
{
	struct pm4 p = { .n = 0 };
	uconfig(&p, 0xC200, 0xE0000000);
	uconfig(&p, 0xDC9B, 0);
	hdr(&p, 0x37, 3 + 3); /* no increment: three dwords into GLOBAL_MUXSEL_DATA */
	put(&p, 0x00110000);
	put(&p, 0xDC9C);
	put(&p, 0);
	put(&p, 0xF0F0F0F0);
	put(&p, 0xF0F0F0F0);
	put(&p, 0xFFFF0100);
	put(&p, 0xFFFF1000);
	hdr(&p, 0x37, 3 + 2); /* with increment: TCC P0_SELECT, P0_SELECT1 */
	put(&p, 0x00100000);
	put(&p, 0xDB80);
	put(&p, 0);
	put(&p, 0x00100011);
	put(&p, 0x00000003);
	static uint32_t mem[4];
	hdr(&p, 0x37, 3 + 2); /* DST_SEL 5: memory */
	put(&p, 0x00000500);
	put(&p, (uint32_t)(uintptr_t)&mem[1]);
	put(&p, (uint32_t)((uint64_t)(uintptr_t)&mem[1] >> 32));
	put(&p, 0xA5A5A5A5);
	put(&p, 0x5A5A5A5A);
	CU_ASSERT_EQUAL_FATAL(submit(G3, 1, &p, NULL), 0);
	static const uint16_t want[6] = { 0xF0F0, 0xF0F0, 0xF0F0, 0xF0F0, 0x0100, 0xFFFF };
	for (uint32_t i = 0; i < 6; i++)
		CU_ASSERT_EQUAL(rb(G3, 0, EMU_RB_GLOBAL_RAM, i, 0, 0), want[i]);
	CU_ASSERT_EQUAL(reg(G3, 0, 0xDC9B), 3); /* the pointer advanced by three dwords */
	for (uint32_t inst = 0; inst < 16; inst++) {
		CU_ASSERT_EQUAL(rb(G3, 0, EMU_RB_REG, 0xDB80, 0, inst), 0x00100011);
		CU_ASSERT_EQUAL(rb(G3, 0, EMU_RB_REG, 0xDB81, 0, inst), 3);
	}
	CU_ASSERT_EQUAL(mem[0], 0);
	CU_ASSERT_EQUAL(mem[1], 0xA5A5A5A5);
	CU_ASSERT_EQUAL(mem[2], 0x5A5A5A5A);
	CU_ASSERT_EQUAL(mem[3], 0);
}

static void expect_error(uint32_t gpu, const struct pm4 *p, uint32_t at, const char *const *needles)
{
	struct emu_test_pm4_args a;
	CU_ASSERT_EQUAL(submit(gpu, 1, p, &a), EINVAL);
	CU_ASSERT_EQUAL(a.err_dw, at);
	CU_ASSERT_EQUAL(a.done_dw, at);
	for (; *needles; needles++) {
		if (!strstr(a.err, *needles)) {
			fprintf(stderr, "error '%s' lacks '%s'\n", a.err, *needles);
			CU_FAIL("error message");
		}
	}
}

static void test_errors_name_the_culprit(void)
{
	struct pm4 p = { .n = 0 };
	uconfig(&p, 0xC200, 0xE0000000);
	hdr(&p, 0x2A, 2);
	put(&p, 0);
	put(&p, 0);
	expect_error(G3, &p, 3, (const char *const[]){ "unknown PM4 opcode 0x2A", "dword 3", NULL });
	p.n = 0;
	put(&p, 0xFFFF1000);
	put(&p, 0xFFFF1000);
	uconfig(&p, 0xC123, 1);
	expect_error(G3, &p, 2, (const char *const[]){ "SET_UCONFIG_REG", "unmodelled register 0xC123", "dword 2", NULL });
	p.n = 0;
	uconfig(&p, 0xDC81, 0x1000);
	expect_error(G3, &p, 0, (const char *const[]){ "RLC_SPM_PERFMON_RING_BASE_LO", "KFD", NULL });
	p.n = 0;
	hdr(&p, 0x46, 1);
	put(&p, 0x16);
	expect_error(G3, &p, 0, (const char *const[]){ "EVENT_WRITE", "0x16", NULL });
	p.n = 0;
	uconfig(&p, 0xDCAF, 0x08421008); /* CORE1 does not exist on gfx942 */
	expect_error(G3, &p, 0, (const char *const[]){ "SEGMENT_SIZE_CORE1", "gfx942", NULL });
	CU_ASSERT_EQUAL(submit(G2, 0, &p, NULL), 0); /* but does on gfx90a */
	CU_ASSERT_EQUAL(reg(G2, 0, 0xDCAF), 0x08421008);
	p.n = 0;
	uconfig(&p, 0xD808, 0x00100011); /* a TCC-style select landing on CP_PERFMON_CNTL */
	expect_error(G3, &p, 0, (const char *const[]){ "CP_PERFMON_CNTL", "CPF_PERFCOUNTER0_SELECT + 1", NULL });
	p.n = 0;
	hdr(&p, 0x79, 5); /* truncated */
	put(&p, 0x200);
	expect_error(G3, &p, 0, (const char *const[]){ "SET_UCONFIG_REG", "past the end", NULL });
	p.n = 0;
	uconfig(&p, 0xC200, 0x00050000); /* SE 5 on a 4-SE XCC */
	expect_error(G3, &p, 0, (const char *const[]){ "GRBM_GFX_INDEX", "SE 5", NULL });
	p.n = 0;
	uconfig(&p, 0xC200, 0xA0000010); /* TCC instance 16: gfx942 has 16 */
	uconfig(&p, 0xDB80, 0x11);
	expect_error(G3, &p, 3, (const char *const[]){ "TCC_PERFCOUNTER0_SELECT", "instance 16", NULL });
	p.n = 0;
	uconfig(&p, 0xC200, 0xE0000000);
	CU_ASSERT_EQUAL(submit(G3, 0, &p, NULL), 0);
	/* bad channel arguments */
	struct emu_test_pm4_args a;
	CU_ASSERT_EQUAL(submit(0xDEAD, 0, &p, &a), EINVAL);
	CU_ASSERT_EQUAL(submit(G3, 1u << 6, &p, &a), EINVAL);
	CU_ASSERT_EQUAL(submit(G2, 2, &p, &a), EINVAL);
}

static void test_nested_ib(void)
{
	static struct pm4 inner, mid, self;
	inner.n = 0;
	uconfig(&inner, 0xDCA4, 0x34);
	mid.n = 0;
	hdr(&mid, 0x3F, 3);
	put(&mid, (uint32_t)(uintptr_t)inner.dw);
	put(&mid, (uint32_t)((uint64_t)(uintptr_t)inner.dw >> 32));
	put(&mid, 0x10800000 | inner.n);
	struct pm4 p = { .n = 0 };
	uconfig(&p, 0xDCA4, 0);
	hdr(&p, 0x3F, 3);
	put(&p, (uint32_t)(uintptr_t)mid.dw);
	put(&p, (uint32_t)((uint64_t)(uintptr_t)mid.dw >> 32));
	put(&p, 0x00800000 | mid.n);
	CU_ASSERT_EQUAL_FATAL(submit(G3, 0, &p, NULL), 0);
	for (uint32_t k = 0; k < 6; k++)
		CU_ASSERT_EQUAL(reg(G3, k, 0xDCA4), 0x34);
	/* an error inside the inner IB names the nesting */
	inner.n = 0;
	uconfig(&inner, 0xC124, 1);
	expect_error(G3, &p, 3, (const char *const[]){ "INDIRECT_BUFFER", "unmodelled register 0xC124", NULL });
	/* an IB that calls itself hits the depth bound */
	self.n = 0;
	hdr(&self, 0x3F, 3);
	put(&self, (uint32_t)(uintptr_t)self.dw);
	put(&self, (uint32_t)((uint64_t)(uintptr_t)self.dw >> 32));
	put(&self, 0x00800000 | 4);
	expect_error(G3, &self, 0, (const char *const[]){ "nested deeper", NULL });
	/* an unreadable IB */
	p.n = 0;
	hdr(&p, 0x3F, 3);
	put(&p, 0x1000);
	put(&p, 0);
	put(&p, 0x00800000 | 8);
	expect_error(G3, &p, 0, (const char *const[]){ "not readable", NULL });
}

static void test_pred_exec(void)
{
	struct pm4 p = { .n = 0 };
	uconfig(&p, 0xDCA4, 0x11);
	hdr(&p, 0x23, 1);
	put(&p, 0x05000000u | 3); /* XCC 0 and 2 only: the next 3 dwords */
	uconfig(&p, 0xDCA4, 0x22);
	uconfig(&p, 0xDCBF, 1);
	CU_ASSERT_EQUAL_FATAL(submit(G3, 0, &p, NULL), 0);
	for (uint32_t k = 0; k < 6; k++) {
		CU_ASSERT_EQUAL(reg(G3, k, 0xDCA4), (k == 0 || k == 2) ? 0x22u : 0x11u);
		CU_ASSERT_EQUAL(reg(G3, k, 0xDCBF), 1);
	}
}

static volatile uint32_t flag;

static void *set_flag_later(void *arg)
{
	(void)arg;
	ms_sleep(20);
	flag = 7;
	return NULL;
}

static void test_wait_reg_mem(void)
{
	setenv("SPMTAP_EMU_CP_WAIT_MS", "60", 1);
	struct pm4 p = { .n = 0 };
	uconfig(&p, 0xDCA4, 0x55);
	hdr(&p, 0x3C, 6); /* register, ==, satisfied at once */
	put(&p, 0x3);
	put(&p, 0xDCA4);
	put(&p, 0);
	put(&p, 0x55);
	put(&p, 0xFF);
	put(&p, 4);
	CU_ASSERT_EQUAL(submit(G3, 1, &p, NULL), 0);
	p.dw[7] = 0x56; /* now never true */
	double t0 = now_ms();
	expect_error(G3, &p, 3, (const char *const[]){ "WAIT_REG_MEM timed out", "0xDCA4", NULL });
	CU_ASSERT(now_ms() - t0 >= 55);
	/* memory, set by another thread while the CP polls */
	flag = 0;
	p.n = 0;
	hdr(&p, 0x3C, 6);
	put(&p, 0x13);
	put(&p, (uint32_t)(uintptr_t)&flag);
	put(&p, (uint32_t)((uint64_t)(uintptr_t)&flag >> 32));
	put(&p, 7);
	put(&p, 0xFFFFFFFF);
	put(&p, 4);
	setenv("SPMTAP_EMU_CP_WAIT_MS", "2000", 1);
	pthread_t th;
	pthread_create(&th, NULL, set_flag_later, NULL);
	CU_ASSERT_EQUAL(submit(G3, 1, &p, NULL), 0);
	pthread_join(th, NULL);
	unsetenv("SPMTAP_EMU_CP_WAIT_MS");
}

static void test_grbm_selection(void)
{
	struct pm4 p = { .n = 0 };
	uconfig(&p, 0xC200, 0xE0000000);
	uconfig(&p, 0xDB80, 0); /* clear all TCC instances */
	uconfig(&p, 0xDAC0, 0); /* and all TA instances in all SEs */
	uconfig(&p, 0xC200, 0xA0000003);
	uconfig(&p, 0xDB80, 0x00100011); /* TCC instance 3 */
	uconfig(&p, 0xC200, 0x40010000 | 0);
	uconfig(&p, 0xC200, 0x00010005); /* SE 1, instance 5 */
	uconfig(&p, 0xDAC0, 0x0010000D);
	/* SE RAM: broadcast image, then SE 2 gets its own */
	uconfig(&p, 0xC200, 0xE0000000);
	uconfig(&p, 0xDC85, 0);
	hdr(&p, 0x37, 3 + 1);
	put(&p, 0x00110000);
	put(&p, 0xDC86);
	put(&p, 0);
	put(&p, 0x01400240);
	uconfig(&p, 0xC200, 0x60020000);
	uconfig(&p, 0xDC85, 0);
	uconfig(&p, 0xDC86, 0xFFFF0141);
	uconfig(&p, 0xC200, 0xE0000000);
	CU_ASSERT_EQUAL_FATAL(submit(G3, 0, &p, NULL), 0);
	for (uint32_t inst = 0; inst < 16; inst++)
		CU_ASSERT_EQUAL(rb(G3, 1, EMU_RB_REG, 0xDB80, 0, inst), inst == 3 ? 0x00100011u : 0u);
	for (uint32_t se = 0; se < 4; se++)
		for (uint32_t inst = 0; inst < 16; inst++)
			CU_ASSERT_EQUAL(rb(G3, 1, EMU_RB_REG, 0xDAC0, se, inst),
					se == 1 && inst == 5 ? 0x0010000Du : 0u);
	for (uint32_t se = 0; se < 4; se++) {
		CU_ASSERT_EQUAL(rb(G3, 1, EMU_RB_SE_RAM, 0, se, 0), se == 2 ? 0x0141u : 0x0240u);
		CU_ASSERT_EQUAL(rb(G3, 1, EMU_RB_SE_RAM, 1, se, 0), se == 2 ? 0xFFFFu : 0x0140u);
	}
	/* 8 SEs on gfx90a: SE 6 alone */
	p.n = 0;
	uconfig(&p, 0xC200, 0x60060000);
	uconfig(&p, 0xDC85, 0);
	uconfig(&p, 0xDC86, 0x02400241);
	uconfig(&p, 0xC200, 0xE0000000);
	CU_ASSERT_EQUAL_FATAL(submit(G2, 0, &p, NULL), 0);
	CU_ASSERT_EQUAL(rb(G2, 0, EMU_RB_SE_RAM, 0, 6, 0), 0x0241);
	CU_ASSERT_EQUAL(rb(G2, 0, EMU_RB_SE_RAM, 1, 6, 0), 0x0240);
	CU_ASSERT_EQUAL(rb(G2, 0, EMU_RB_SE_RAM, 0, 7, 0), 0xFFFF);
	CU_ASSERT_EQUAL(rb(G2, 0, EMU_RB_RLC, 4, 0, 0), 8);
	CU_ASSERT_EQUAL(rb(G3, 0, EMU_RB_RLC, 4, 0, 0), 4);
}

static void test_start_needs_valid_program(void)
{
	struct pm4 p = { .n = 0 };
	uconfig(&p, 0xDC80, 0); /* interval 0 */
	uconfig(&p, 0xD808, 0x10);
	expect_error(G3, &p, 3, (const char *const[]){ "START_COUNTING", "interval 0", NULL });
	p.n = 0;
	uconfig(&p, 0xDC80, 0x20000000);
	uconfig(&p, 0xDC84, 0x0842100A);
	uconfig(&p, 0xDC9B, 0);
	uconfig(&p, 0xDC9C, 0xF0F0F0F0);
	uconfig(&p, 0xDC9C, 0xF0F0F0F0);
	uconfig(&p, 0xDC9C, 0xFFFF00C0); /* GDS: not modelled */
	uconfig(&p, 0xD808, 0x10);
	expect_error(G3, &p, 18, (const char *const[]){ "global muxsel entry 4", "GDS", NULL });
	CU_ASSERT_EQUAL(rb(G3, 0, EMU_RB_RLC, 0, 0, 0), 0); /* still reset */
}

static const struct testenv_case cases[] = {
	{ "set_uconfig_and_sh", test_set_uconfig_and_sh, NULL },
	{ "write_data", test_write_data, NULL },
	{ "errors_name_the_culprit", test_errors_name_the_culprit, NULL },
	{ "nested_ib", test_nested_ib, NULL },
	{ "pred_exec", test_pred_exec, NULL },
	{ "wait_reg_mem", test_wait_reg_mem, NULL },
	{ "grbm_selection", test_grbm_selection, NULL },
	{ "start_needs_valid_program", test_start_needs_valid_program, NULL },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	struct emu_gpu_desc g[2];
	char err[256];
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return testenv_run_suite("emu_cp", cases, argc, argv);
	testenv_under_emu(argc, argv, SPEC, NULL);
	if (emu_spec_parse(SPEC, g, 2, err, sizeof(err)) != 2)
		return 2;
	G3 = g[0].gpu_id;
	G2 = g[1].gpu_id;
	kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	if (kfd < 0) {
		fprintf(stderr, "cannot open the emulated KFD: %s\n", strerror(errno));
		return 2;
	}
	return testenv_run_suite("emu_cp", cases, argc, argv);
}
