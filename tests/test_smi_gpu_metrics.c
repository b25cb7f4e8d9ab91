/* SPDX-License-Identifier: MIT */
/*
 * gpu_metrics decoding: synthetic tables of every known version decode to
 * the values put in (offsets restated in test_smi_util.h from SENSORS.md
 * 4.3); 0xFF fill reads as absent; unknown versions and sizes are refused
 * with their numbers; a truncated table is refused; the direct source reads
 * a table through a synthetic sysfs tree found by PCI address.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "collector/lib/smi_source.h"
#include "test_smi_util.h"
#include "testenv.h"

static uint8_t buf[4096];

static void every_version(void)
{
	for (size_t i = 0; i < sizeof(tgm_offs) / sizeof(tgm_offs[0]); i++) {
		const struct tgm_off *o = &tgm_offs[i];
		size_t n = tgm_build(buf, o->crev, 0x123456789ull, 987654321000ull, 55555555ull, 312, 71, 88);
		struct smi_batch b;
		smi_batch_reset(&b);
		char why[160] = "";
		CU_ASSERT_EQUAL_FATAL(smi_gm_decode(buf, n, &b, why, sizeof(why)), 0);
		CU_ASSERT(b.present & SMI_M_BIT(SMI_M_ENERGY));
		CU_ASSERT_EQUAL(b.energy_ticks, 0x123456789ull);
		CU_ASSERT(fabs(b.v[SMI_M_ENERGY] - 0x123456789ull / 65536.0) < 1e-9);
		CU_ASSERT_EQUAL(b.sys_clock_ns, 987654321000ull);
		enum smi_metric pm = o->power_is_avg ? SMI_M_POWER_AVG : SMI_M_POWER_CUR;
		enum smi_metric other = o->power_is_avg ? SMI_M_POWER_CUR : SMI_M_POWER_AVG;
		CU_ASSERT(b.present & SMI_M_BIT(pm));
		CU_ASSERT(!(b.present & SMI_M_BIT(other)));
		CU_ASSERT_EQUAL(b.v[pm], 312.0);
		CU_ASSERT_EQUAL(b.v[SMI_M_TEMP_HOTSPOT], 71.0);
		CU_ASSERT_EQUAL(b.v[SMI_M_GFX_ACTIVITY], 88.0);
		/* fields we did not set are 0xFF-filled: absent, not 65535 */
		CU_ASSERT(!(b.present & SMI_M_BIT(SMI_M_TEMP_MEM)));
		CU_ASSERT(!(b.present & SMI_M_BIT(SMI_M_TEMP_EDGE)));
		if (o->fw_ts) {
			CU_ASSERT_EQUAL(b.fw_ts_10ns, 55555555ull);
			CU_ASSERT_EQUAL(b.ts_domain, SMI_TS_FW_10NS);
			CU_ASSERT_EQUAL(b.sensor_ts, 55555555ull);
		} else {
			CU_ASSERT_EQUAL(b.fw_ts_10ns, SMI_TS_ABSENT);
			CU_ASSERT_EQUAL(b.ts_domain, SMI_TS_BOOTTIME_NS);
			CU_ASSERT_EQUAL(b.sensor_ts, 987654321000ull);
		}
	}
}

/* The emulator test vector of SENSORS.md 4.3, with the MI200 fields set. */
static void v13_full(void)
{
	size_t n = tgm_build(buf, 3, 1000, 2000, 3000, 290, 60, 10);
	tgm_put16(buf, 4, 50);   /* edge */
	tgm_put16(buf, 8, 70);   /* mem */
	tgm_put16(buf, 18, 20);  /* umc */
	tgm_put16(buf, 54, 1700); /* current gfxclk */
	tgm_put16(buf, 58, 1600); /* current uclk */
	struct smi_batch b;
	smi_batch_reset(&b);
	CU_ASSERT_EQUAL_FATAL(smi_gm_decode(buf, n, &b, NULL, 0), 0);
	CU_ASSERT_EQUAL(b.v[SMI_M_TEMP_EDGE], 50);
	CU_ASSERT_EQUAL(b.v[SMI_M_TEMP_MEM], 70);
	CU_ASSERT_EQUAL(b.v[SMI_M_UMC_ACTIVITY], 20);
	CU_ASSERT_EQUAL(b.v[SMI_M_GFXCLK], 1700);
	CU_ASSERT_EQUAL(b.v[SMI_M_UCLK], 1600);
	CU_ASSERT(!(b.present & SMI_M_BIT(SMI_M_SOCCLK)));
}

static void expect_refused(const uint8_t *t, size_t n, int err, const char *needle)
{
	struct smi_batch b;
	smi_batch_reset(&b);
	char why[160] = "";
	CU_ASSERT_EQUAL(smi_gm_decode(t, n, &b, why, sizeof(why)), -err);
	if (!strstr(why, needle))
		fprintf(stderr, "\n  reason '%s' lacks '%s'\n", why, needle);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, needle));
	CU_ASSERT_EQUAL(b.present, 0);
}

static void unknown_refused(void)
{
	uint8_t t[512];
	memset(t, 0xff, sizeof(t));
	tgm_put16(t, 0, 400);
	t[2] = 1;
	t[3] = 8;
	expect_refused(t, 400, EPROTO, "v1.8 (size 400): unknown");
	t[3] = 6; /* the newer in-place v1_6 has another size */
	expect_refused(t, 400, EPROTO, "v1.6 with structure_size 400");
	t[3] = 0;
	tgm_put16(t, 0, 80);
	expect_refused(t, 80, EPROTO, "v1.0");
	t[2] = 2;
	t[3] = 1;
	expect_refused(t, 80, EPROTO, "v2.1 (size 80): an APU table");
	t[2] = 1;
	t[3] = 3;
	tgm_put16(t, 0, 124); /* v1.3 with a wrong size */
	expect_refused(t, 124, EPROTO, "v1.3 with structure_size 124");
}

static void truncated_refused(void)
{
	size_t n = tgm_build(buf, 3, 1, 2, 3, 4, 5, 6);
	expect_refused(buf, n - 20, EMSGSIZE, "read 100 of 120 bytes");
	expect_refused(buf, 2, EMSGSIZE, "shorter than its header");
	n = tgm_build(buf, 7, 1, 2, 3, 4, 5, 6);
	expect_refused(buf, 1024, EMSGSIZE, "v1.7: read 1024 of 2208");
}

static void source_through_tree(void)
{
	char *root = tsmi_mktree();
	char dev[512], path[600];
	tsmi_add_card(root, 0, "0000:c1:00.0", dev, sizeof(dev));
	tsmi_add_card(root, 1, "0000:03:00.0", dev, sizeof(dev));
	size_t n = tgm_build(buf, 3, 65536 * 10, 5000, 6000, 300, 60, 40);
	snprintf(path, sizeof(path), "%s/gpu_metrics", dev);
	tsmi_write(path, buf, n);

	struct smi_env env = { .sysfs_root = root };
	struct smi_dev d = { .index = 1, .domain = 0, .location_id = 0x0300 };
	struct smi_source *s = NULL;
	char why[160] = "";
	CU_ASSERT_EQUAL_FATAL(smi_gpu_metrics_ops.open(&d, &env, &s, why, sizeof(why)), 0);
	struct smi_batch b;
	CU_ASSERT_EQUAL(smi_gpu_metrics_ops.read_all(s, &b), 0);
	CU_ASSERT(fabs(b.v[SMI_M_ENERGY] - 10.0) < 1e-12);
	CU_ASSERT(b.host_before_ns > 0 && b.host_after_ns >= b.host_before_ns);
	smi_gpu_metrics_ops.close(s);

	/* the other card has no table; a GPU at an unknown address names the cards there are */
	d.location_id = 0xc100;
	CU_ASSERT_EQUAL(smi_gpu_metrics_ops.open(&d, &env, &s, why, sizeof(why)), -ENOENT);
	d.location_id = 0x4400;
	CU_ASSERT_EQUAL(smi_gpu_metrics_ops.open(&d, &env, &s, why, sizeof(why)), -ENODEV);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "card1=0000:03:00.0"));
	tsmi_rmtree(root);
}

static void bdf_parse(void)
{
	uint32_t dom, loc;
	CU_ASSERT_EQUAL(smi_parse_bdf("0001:c1:1f.7", &dom, &loc), 0);
	CU_ASSERT_EQUAL(dom, 1);
	CU_ASSERT_EQUAL(loc, 0xc1u << 8 | 0x1f << 3 | 7);
	CU_ASSERT_EQUAL(smi_parse_bdf("0000:03:00.0-1", &dom, &loc), -EINVAL);
	CU_ASSERT_EQUAL(smi_parse_bdf("card0", &dom, &loc), -EINVAL);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "gpu_metrics/every_version", every_version, NULL },
		{ "gpu_metrics/v1_3_fields", v13_full, NULL },
		{ "gpu_metrics/unknown_refused", unknown_refused, NULL },
		{ "gpu_metrics/truncated_refused", truncated_refused, NULL },
		{ "gpu_metrics/source_through_tree", source_through_tree, NULL },
		{ "gpu_metrics/bdf_parse", bdf_parse, NULL },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("smi_gpu_metrics", cases, argc, argv);
}
