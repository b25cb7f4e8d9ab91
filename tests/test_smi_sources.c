/* SPDX-License-Identifier: MIT */
/*
 * The sources and the probe on a synthetic sysfs tree (test_smi_util.h):
 * which source is chosen and why the others are not; gpu_metrics direct and
 * both AMD SMI doubles (6.x and 7.x symbols/structs) give the same values on
 * an MI210 (v1.3) and an MI300 (v1.5) table; Debian's ROCm SMI is skipped
 * on an MI300 table with the reason, before any call that would abort this
 * process; MI200's second GCD; the sampler's deadlines over 2 s at 1 ms.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

/* the command is not in libspmtap.a: compile it in, as test_cmd_decode does */
#include "collector/cli/cmd-list-smi.c"
#include "collector/lib/smi_sampler.h"
#include "collector/lib/smi_source.h"
#include "test_smi_util.h"
#include "testenv.h"

static uint8_t buf[4096];
static char dbl_v6[600], dbl_v7[600];
static char dbl_dir[300];

static void rm_doubles(void)
{
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dbl_dir);
	if (dbl_dir[0] && system(cmd)) {
	}
}

/* $B/doubles/libamd_smi_v{6,7}.so from the Makefile, else built here with cc. */
static const char *need_doubles(void)
{
	static int state; /* 0 unknown, 1 ok, 2 failed */
	if (state)
		return state == 1 ? NULL : "cannot build tests/doubles/libamd_smi_double.c";
	const char *b = testenv_build_dir();
	snprintf(dbl_v6, sizeof(dbl_v6), "%s/doubles/libamd_smi_v6.so", b);
	snprintf(dbl_v7, sizeof(dbl_v7), "%s/doubles/libamd_smi_v7.so", b);
	if (!access(dbl_v6, R_OK) && !access(dbl_v7, R_OK)) {
		state = 1;
		return NULL;
	}
	const char *t = getenv("TMPDIR");
	char *dir = dbl_dir;
	snprintf(dbl_dir, sizeof(dbl_dir), "%s/spmtap-smi-doubles-%d", t && *t ? t : "/tmp", (int)getpid());
	mkdir(dir, 0700);
	atexit(rm_doubles);
	state = 1;
	for (int v = 6; v <= 7; v++) {
		char *out = v == 6 ? dbl_v6 : dbl_v7;
		snprintf(out, 600, "%s/libamd_smi_v%d.so", dir, v);
		char cmd[1400];
		snprintf(cmd, sizeof(cmd),
			 "cc -std=c11 -O2 -Wall -Wextra -Werror -Wno-format-truncation -fPIC -fvisibility=hidden -D_GNU_SOURCE -DAMDSMI_V%d "
			 "-shared -o '%s' tests/doubles/libamd_smi_double.c",
			 v, out);
		if (system(cmd))
			state = 2;
	}
	return state == 1 ? NULL : "cannot build tests/doubles/libamd_smi_double.c";
}

static const char *need_rocm_smi(void)
{
	return access("/usr/lib/librocm_smi64.so.1", R_OK) ? "no /usr/lib/librocm_smi64.so.1" : NULL;
}

struct tree {
	char *root;
	char dev[512];
	struct smi_env env;
	struct smi_dev d;
};

static void tree_make(struct tree *t, int crev, uint64_t energy, uint16_t power)
{
	memset(t, 0, sizeof(*t));
	t->root = tsmi_mktree();
	tsmi_add_card(t->root, 0, "0000:03:00.0", t->dev, sizeof(t->dev));
	size_t n = tgm_build(buf, crev, energy, 123456789000ull, 4242424242ull, power, 66, 55);
	if (crev <= 3) {
		tgm_put16(buf, 4, 44);  /* edge */
		tgm_put16(buf, 8, 77);  /* mem */
		tgm_put16(buf, 18, 11); /* umc */
	} else {
		tgm_put16(buf, 6, 77);  /* mem */
		tgm_put16(buf, 14, 11); /* umc */
	}
	char p[600];
	snprintf(p, sizeof(p), "%s/gpu_metrics", t->dev);
	tsmi_write(p, buf, n);
	t->env.sysfs_root = t->root;
	t->env.amdsmi_lib = "/nonexistent/libamd_smi.so";
	t->env.rocm_lib = "/nonexistent/librocm_smi64.so.1";
	t->d = (struct smi_dev){ .index = 0, .domain = 0, .location_id = 0x0300, .name = "MI210" };
	setenv("AMDSMI_DOUBLE_SYSFS", t->root, 1);
}

static void tree_free(struct tree *t)
{
	tsmi_rmtree(t->root);
}

static void probe_reasons(void)
{
	struct tree t;
	tree_make(&t, 3, 1 << 20, 250);
	struct smi_probe p;
	CU_ASSERT_EQUAL_FATAL(smi_probe_device(&t.d, &t.env, &p), 0);
	CU_ASSERT_STRING_EQUAL(p.src[p.selected].source, "gpu_metrics");
	CU_ASSERT_EQUAL(p.src[0].avail, SMI_OK);
	CU_ASSERT_EQUAL(p.src[0].ts_domain, SMI_TS_FW_10NS);
	CU_ASSERT_EQUAL(p.src[1].avail, SMI_DISABLED);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.src[1].reason, "dlopen(/nonexistent/libamd_smi.so)"));
	CU_ASSERT_EQUAL(p.src[2].avail, SMI_DISABLED);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.src[2].reason, "dlopen(/nonexistent/librocm_smi64.so.1)"));
	/* hwmon works but has no energy; it is reported, not used */
	CU_ASSERT_EQUAL(p.src[3].avail, SMI_OK);
	CU_ASSERT(p.src[3].metrics & SMI_M_BIT(SMI_M_POWER_AVG));
	CU_ASSERT_FALSE(p.src[3].metrics & SMI_M_BIT(SMI_M_ENERGY));
	uint32_t want = SMI_M_BIT(SMI_M_ENERGY) | SMI_M_BIT(SMI_M_POWER_AVG) | SMI_M_BIT(SMI_M_TEMP_EDGE) |
			SMI_M_BIT(SMI_M_TEMP_HOTSPOT) | SMI_M_BIT(SMI_M_TEMP_MEM) | SMI_M_BIT(SMI_M_GFX_ACTIVITY) |
			SMI_M_BIT(SMI_M_UMC_ACTIVITY);
	CU_ASSERT_EQUAL(p.metrics, want);
	smi_probe_release(&p);

	/* no table at all: gpu_metrics says why, hwmon is used */
	char path[600];
	snprintf(path, sizeof(path), "%s/gpu_metrics", t.dev);
	unlink(path);
	CU_ASSERT_EQUAL(smi_probe_device(&t.d, &t.env, &p), 0);
	CU_ASSERT_STRING_EQUAL(p.src[p.selected].source, "hwmon");
	CU_ASSERT_PTR_NOT_NULL(strstr(p.src[0].reason, "gpu_metrics"));
	smi_probe_release(&p);

	/* the list command prints it */
	struct spm_device sd;
	memset(&sd, 0, sizeof(sd));
	sd.location_id = 0x0300;
	snprintf(sd.gfx, sizeof(sd.gfx), "gfx90a");
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	CU_ASSERT_EQUAL(cli_list_smi(f, &sd, 1, &t.env), 0);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "* hwmon"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "amd_smi      unavailable: dlopen("));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "power_avg      W     hwmon"));
	if (getenv("SPMTAP_TEST_VERBOSE"))
		printf("\n%s", text);
	free(text);
	tree_free(&t);
}

static void read_with(const struct smi_source_ops *ops, const struct tree *t, struct smi_batch *b,
		      const char *lib)
{
	struct smi_env env = t->env;
	if (lib)
		env.amdsmi_lib = lib;
	struct smi_source *s = NULL;
	char why[160] = "";
	int rc = ops->open(&t->d, &env, &s, why, sizeof(why));
	if (rc)
		fprintf(stderr, "\n  %s: %s\n", ops->name, why);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_EQUAL(ops->read_all(s, b), 0);
	ops->close(s);
}

/* gpu_metrics direct == AMD SMI 6.x double == AMD SMI 7.x double, on the metrics they share */
static void same_values(int crev)
{
	struct tree t;
	tree_make(&t, crev, 0x2345678, 321);
	struct smi_batch g, a6, a7;
	read_with(&smi_gpu_metrics_ops, &t, &g, NULL);
	read_with(&smi_amdsmi_ops, &t, &a6, dbl_v6);
	read_with(&smi_amdsmi_ops, &t, &a7, dbl_v7);
	uint32_t shared = SMI_M_BIT(SMI_M_ENERGY) | SMI_M_BIT(SMI_M_POWER_AVG) | SMI_M_BIT(SMI_M_POWER_CUR) |
			  SMI_M_BIT(SMI_M_TEMP_EDGE) | SMI_M_BIT(SMI_M_TEMP_HOTSPOT) | SMI_M_BIT(SMI_M_TEMP_MEM) |
			  SMI_M_BIT(SMI_M_GFX_ACTIVITY) | SMI_M_BIT(SMI_M_UMC_ACTIVITY);
	CU_ASSERT_EQUAL(g.present & shared, a6.present & shared);
	CU_ASSERT_EQUAL(g.present & shared, a7.present & shared);
	for (int m = 0; m < SMI_M_COUNT; m++) {
		if (!(shared & g.present & SMI_M_BIT(m)))
			continue;
		if (g.v[m] != a6.v[m] || g.v[m] != a7.v[m])
			fprintf(stderr, "\n  %s: gpu_metrics %g, amd_smi 6.x %g, 7.x %g\n",
				smi_metric_name((enum smi_metric)m), g.v[m], a6.v[m], a7.v[m]);
		CU_ASSERT_EQUAL(g.v[m], a6.v[m]);
		CU_ASSERT_EQUAL(g.v[m], a7.v[m]);
	}
	/* energy in J from raw ticks with 2^-16 J, whatever resolution the library claims */
	CU_ASSERT_EQUAL(a6.energy_ticks, 0x2345678ull);
	CU_ASSERT_EQUAL(a7.v[SMI_M_ENERGY], 0x2345678 / 65536.0);
	/* AMD SMI gives only the driver's BOOTTIME; gpu_metrics gives the firmware time too */
	CU_ASSERT_EQUAL(a6.ts_domain, SMI_TS_BOOTTIME_NS);
	CU_ASSERT_EQUAL(a6.sensor_ts, 123456789000ull);
	CU_ASSERT_EQUAL(g.sys_clock_ns, 123456789000ull);
	CU_ASSERT_EQUAL(g.fw_ts_10ns, 4242424242ull);
	tree_free(&t);
}

static void same_values_mi210(void)
{
	same_values(3);
}

static void same_values_mi300(void)
{
	same_values(5);
}

static void amdsmi_missing_symbol(void)
{
	struct tree t;
	tree_make(&t, 3, 1, 1);
	struct smi_source *s = NULL;
	char why[200] = "";
	t.env.amdsmi_lib = "libm.so.6"; /* loads, has none of the calls */
	CU_ASSERT_EQUAL(smi_amdsmi_ops.open(&t.d, &t.env, &s, why, sizeof(why)), -ENOSYS);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "missing required symbol: amdsmi_init"));
	/* a GPU the library does not have */
	t.env.amdsmi_lib = dbl_v7;
	t.d.location_id = 0x4400;
	CU_ASSERT_EQUAL(smi_amdsmi_ops.open(&t.d, &t.env, &s, why, sizeof(why)), -ENODEV);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "has: 0000:03:00.0"));
	tree_free(&t);
}

/* Debian's rsmi 5.2.3 would abort() on this table; spmtap must not let it. */
static void rocm_smi_mi300_skipped(void)
{
	struct tree t;
	tree_make(&t, 5, 1 << 20, 500);
	t.env.rocm_lib = "/usr/lib/librocm_smi64.so.1";
	struct smi_probe p;
	smi_probe_device(&t.d, &t.env, &p);
	CU_ASSERT_EQUAL(p.src[2].avail, SMI_DISABLED);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.src[2].reason, "aborts the process"));
	CU_ASSERT_PTR_NOT_NULL(strstr(p.src[2].reason, "v1.5"));
	CU_ASSERT_STRING_EQUAL(p.src[p.selected].source, "gpu_metrics");
	CU_ASSERT(p.metrics & SMI_M_BIT(SMI_M_POWER_CUR));
	smi_probe_release(&p);
	tree_free(&t); /* and we are still here */
}

static void second_gcd(void)
{
	struct tree t;
	tree_make(&t, 3, 0, 0);
	char hw[600];
	snprintf(hw, sizeof(hw), "%s/hwmon/hwmon0", t.dev);
	tsmi_writes(hw, "power1_average", "0\n"); /* the secondary die's hwmon says 0 W too */
	struct smi_probe p;
	CU_ASSERT_EQUAL(smi_probe_device(&t.d, &t.env, &p), 0);
	CU_ASSERT(p.energy_second_die);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.src[0].note, "second GCD reports no energy"));
	CU_ASSERT_FALSE(p.metrics & SMI_M_BIT(SMI_M_ENERGY));
	CU_ASSERT_FALSE(p.metrics & SMI_M_BIT(SMI_M_POWER_AVG));
	CU_ASSERT(p.metrics & SMI_M_BIT(SMI_M_TEMP_HOTSPOT));
	CU_ASSERT_STRING_EQUAL(p.src[p.selected].source, "gpu_metrics");
	CU_ASSERT_FALSE(p.src[3].metrics & SMI_M_BIT(SMI_M_POWER_AVG));
	smi_probe_release(&p);
	tree_free(&t);
}

struct collect {
	uint64_t rows, chunks, dedt_present;
	int64_t last_host;
	bool bad;
	const struct series_stream *stream;
};

static void on_chunk(const struct series_chunk *c, void *arg)
{
	struct collect *k = arg;
	k->chunks++;
	k->rows += c->n;
	if (c->stream != k->stream || strcmp(c->stream->source, "smi") || c->stream->xcc != -1)
		k->bad = true;
	uint32_t dc = c->stream->ncols - 1;
	for (uint32_t i = 0; i < c->n; i++) {
		if (!series_missing(c, dc, i))
			k->dedt_present++;
		k->last_host = c->host_ns[i];
	}
}

static void sampler_deadlines(void)
{
	struct tree t;
	tree_make(&t, 3, 1 << 20, 250);
	struct smi_probe p;
	CU_ASSERT_EQUAL_FATAL(smi_probe_device(&t.d, &t.env, &p), 0);
	struct collect k;
	memset(&k, 0, sizeof(k));
	struct smi_sampler_opts o = {
		.ops = p.ops, .src = p.inst, .metrics = p.metrics, .ts_domain = p.src[p.selected].ts_domain,
		.interval_ns = 1000000, .max_samples = 2000, .on_chunk = on_chunk, .arg = &k,
		.device_name = "MI210",
	};
	struct smi_sampler *s;
	CU_ASSERT_EQUAL_FATAL(smi_sampler_create(&s, &o), 0);
	k.stream = smi_sampler_stream(s);
	CU_ASSERT_STRING_EQUAL(k.stream->cols[k.stream->ncols - 1].name, "power_dedt");
	CU_ASSERT_STRING_EQUAL(k.stream->tick_domain, "smu_10ns");
	int64_t t0 = smi_now_boot_ns();
	CU_ASSERT_EQUAL_FATAL(smi_sampler_start(s), 0);
	smi_sampler_wait(s);
	int64_t wall = smi_now_boot_ns() - t0;
	struct smi_sampler_stats st;
	smi_sampler_get_stats(s, &st);
	smi_sampler_free(s);
	smi_probe_release(&p);
	printf("\n    %" PRIu64 " samples in %.3f s, %" PRIu64 " missed, lateness mean %.0f us max %.0f us ",
	       st.samples, wall * 1e-9, st.missed_deadlines, st.mean_late_ns / 1e3, st.max_late_ns / 1e3);
	CU_ASSERT_EQUAL(st.samples, 2000);
	CU_ASSERT_EQUAL(k.rows, 2000);
	CU_ASSERT_FALSE(k.bad);
	/*
	 * No drift: every deadline is on the grid, so the span of deadlines is
	 * exactly (samples - 1 + missed) periods, and the run takes that long.
	 */
	CU_ASSERT_EQUAL(st.last_deadline_ns - st.first_deadline_ns,
			(int64_t)(st.samples - 1 + st.missed_deadlines) * 1000000);
	CU_ASSERT(wall >= 1999000000ll + (int64_t)st.missed_deadlines * 1000000);
	CU_ASSERT(wall < 2000000000ll + (int64_t)st.missed_deadlines * 1000000 + 100000000ll);
	CU_ASSERT(st.missed_deadlines < 200); /* < 10 %: a loaded CI box preempts a 1 ms loop */
	/* a static table is one firmware sample read 2000 times: no power from duplicates */
	CU_ASSERT_EQUAL(k.dedt_present, 0);
	CU_ASSERT_EQUAL(st.dedt.n.duplicate, 1999);
	CU_ASSERT_EQUAL(st.distinct_sensor_ts, 1);
	/* host time: the driver's BOOTTIME stamp of the table */
	CU_ASSERT_EQUAL(k.last_host, 123456789000ll);
	tree_free(&t);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "smi_sources/probe_reasons", probe_reasons, NULL },
		{ "smi_sources/same_values_mi210", same_values_mi210, need_doubles },
		{ "smi_sources/same_values_mi300", same_values_mi300, need_doubles },
		{ "smi_sources/amdsmi_missing_symbol", amdsmi_missing_symbol, need_doubles },
		{ "smi_sources/rocm_smi_mi300_skipped", rocm_smi_mi300_skipped, need_rocm_smi },
		{ "smi_sources/second_gcd", second_gcd, NULL },
		{ "smi_sources/sampler_deadlines", sampler_deadlines, NULL },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("smi_sources", cases, argc, argv);
}
