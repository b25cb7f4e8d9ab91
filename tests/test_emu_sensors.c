/* SPDX-License-Identifier: MIT */
/*
 * The emulated sensors through the shim, read the way any sysfs reader
 * would (open/read, pread): the DRM/PCI/hwmon tree, gpu_metrics bytes at
 * the SENSORS.md 4.3 offsets per version, energy ticks and firmware
 * timestamps per update interval, the driver cache, read latency, glitches,
 * the MI250X second-die zeros and a square-wave workload seen through the
 * average-power filter's delay.  Expected values come from the truth API
 * (emu/common/sensors.h), evaluated at the sample time the table reports.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emu/common/sensors.h"
#include "test_emu_util.h"

#define SPEC "mi210,mi250x,mi300x" /* card0 MI210, card1/2 MI250X GCDs, card3 MI300X */

static uint64_t raw_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static ssize_t slurp(const char *path, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len);
	close(fd);
	return n;
}

static long long read_num(const char *fmt, int card)
{
	char path[256], buf[64];
	snprintf(path, sizeof(path), fmt, card, card);
	ssize_t n = slurp(path, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return atoll(buf);
}

static uint64_t u64at(const unsigned char *b, size_t off)
{
	uint64_t v;
	memcpy(&v, b + off, 8);
	return v;
}

static unsigned u16at(const unsigned char *b, size_t off)
{
	uint16_t v;
	memcpy(&v, b + off, 2);
	return v;
}

static ssize_t metrics(int card, unsigned char *buf)
{
	char path[128];
	snprintf(path, sizeof(path), "/sys/class/drm/card%d/device/gpu_metrics", card);
	return slurp(path, buf, 4096);
}

static void model(unsigned gpu, struct emu_sensor_model *m, struct emu_workload *w)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/kfd", testenv_tmpdir());
	CU_ASSERT_EQUAL_FATAL(emu_sensor_model_init(SPEC, gpu, emu_sensor_epoch_ns(path), m, NULL, 0), 0);
	emu_workload_parse(getenv("SPMTAP_EMU_WORKLOAD"), w, NULL, 0);
}

/* The reading the shim computed for a table whose firmware timestamp is fw. */
static void expected(unsigned gpu, uint64_t fw, struct emu_sensor_reading *r)
{
	struct emu_sensor_model m;
	struct emu_workload w;
	model(gpu, &m, &w);
	m.cache_ns = 0;
	emu_sensor_read(&m, &w, fw * 10, 0, r);
}

static void test_tree(void)
{
	char link[PATH_MAX], rp[PATH_MAX];
	static const unsigned loc[] = { 0x300, 0x1300, 0x2300, 0x3300 };
	for (int c = 0; c < 4; c++) {
		char p[128], bdf[32];
		snprintf(p, sizeof(p), "/sys/class/drm/card%d", c);
		ssize_t n = readlink(p, link, sizeof(link) - 1);
		CU_ASSERT_FATAL(n > 0);
		link[n] = 0;
		/* ROCm SMI takes the BDF from this link and pairs it with the KFD node's location_id. */
		snprintf(bdf, sizeof(bdf), "/0000:%02x:%02x.%x/drm/card%d", loc[c] >> 8, (loc[c] >> 3) & 31, loc[c] & 7, c);
		CU_ASSERT_PTR_NOT_NULL(strstr(link, bdf));
		snprintf(p, sizeof(p), "/sys/class/drm/card%d/device", c);
		CU_ASSERT_PTR_NOT_NULL_FATAL(realpath(p, rp));
		CU_ASSERT_EQUAL(strncmp(rp, "/sys/devices/pci0000:00/", 24), 0);
		CU_ASSERT_EQUAL(read_num("/sys/class/drm/card%d/device/vendor", c), 0); /* "0x1002": atoll stops at x */
		snprintf(p, sizeof(p), "/sys/class/drm/card%d/device/drm/renderD%d", c, 128 + c);
		CU_ASSERT_EQUAL(access(p, F_OK), 0);
		char buf[64];
		snprintf(p, sizeof(p), "/sys/class/drm/card%d/device/hwmon/hwmon%d/name", c, c);
		CU_ASSERT_EQUAL(slurp(p, buf, sizeof(buf)), 7);
		CU_ASSERT_EQUAL(memcmp(buf, "amdgpu\n", 7), 0);
		snprintf(p, sizeof(p), "/sys/class/drm/card%d/device/hwmon/hwmon%d/in0_label", c, c);
		CU_ASSERT_EQUAL(slurp(p, buf, sizeof(buf)), 7);
		snprintf(p, sizeof(p), "/sys/class/drm/card%d/device/vbios_version", c);
		CU_ASSERT(slurp(p, buf, sizeof(buf)) > 0);
	}
	/* MI200: power1_average only; MI300: power1_input only, and no edge sensor (temp1). */
	CU_ASSERT(read_num("/sys/class/drm/card%d/device/hwmon/hwmon%d/power1_average", 0) > 0);
	CU_ASSERT_EQUAL(read_num("/sys/class/drm/card%d/device/hwmon/hwmon%d/power1_input", 0), -1);
	CU_ASSERT_EQUAL(read_num("/sys/class/drm/card%d/device/hwmon/hwmon%d/power1_average", 3), -1);
	CU_ASSERT(read_num("/sys/class/drm/card%d/device/hwmon/hwmon%d/power1_input", 3) > 0);
	CU_ASSERT_EQUAL(read_num("/sys/class/drm/card%d/device/hwmon/hwmon%d/temp1_input", 3), -1);
	CU_ASSERT(read_num("/sys/class/drm/card%d/device/hwmon/hwmon%d/temp2_input", 3) > 20000);
	CU_ASSERT_EQUAL(read_num("/sys/class/drm/card%d/device/hwmon/hwmon%d/power1_cap", 0), 300000000);
	CU_ASSERT_EQUAL(read_num("/sys/class/drm/card%d/device/gpu_busy_percent", 0), 100);
	CU_ASSERT_EQUAL(read_num("/sys/class/drm/card%d/device/hwmon/hwmon%d/freq1_input", 0), 1700000000ll);
}

static void test_v1_3_bytes(void)
{
	unsigned char b[4096];
	struct emu_sensor_reading r;
	CU_ASSERT_EQUAL_FATAL(metrics(0, b), 120);
	CU_ASSERT_EQUAL(u16at(b, 0), 120);
	CU_ASSERT_EQUAL(b[2], 1);
	CU_ASSERT_EQUAL(b[3], 3);
	uint64_t fw = u64at(b, 96);
	expected(0, fw, &r);
	CU_ASSERT_EQUAL(u64at(b, 24), r.energy_ticks);
	CU_ASSERT_EQUAL(u16at(b, 22), (unsigned)(r.avg_power_w + 0.5));
	CU_ASSERT_EQUAL(u16at(b, 4), (unsigned)(r.temp_edge_c + 0.5));
	CU_ASSERT_EQUAL(u16at(b, 6), (unsigned)(r.temp_hotspot_c + 0.5));
	CU_ASSERT_EQUAL(u16at(b, 16), 100);
	CU_ASSERT_EQUAL(u16at(b, 54), 1700);
	CU_ASSERT_EQUAL(u16at(b, 60), 0xFFFF); /* current_vclk0: unsupported, the kernel's 0xFF fill */
	CU_ASSERT_EQUAL(u16at(b, 104), 900);
	/* system_clock_counter is BOOTTIME at the read; the firmware timestamp is 10 ns ticks of the sample. */
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	uint64_t boot = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	CU_ASSERT(u64at(b, 32) <= boot && boot - u64at(b, 32) < 1000000000ull);
	CU_ASSERT_EQUAL(fw * 10 % 1000000, 0);
	CU_ASSERT(raw_ns() - fw * 10 < 1000000000ull);
}

static void test_v1_5_bytes(void)
{
	unsigned char b[4096];
	struct emu_sensor_reading r;
	CU_ASSERT_EQUAL_FATAL(metrics(3, b), 360);
	CU_ASSERT_EQUAL(u16at(b, 0), 360);
	CU_ASSERT_EQUAL(b[2], 1);
	CU_ASSERT_EQUAL(b[3], 5); /* content revision >= 4: Debian rsmi 5.2.3 asserts on this */
	uint64_t fw = u64at(b, 304);
	expected(3, fw, &r);
	CU_ASSERT_EQUAL(u64at(b, 88), r.energy_ticks);
	CU_ASSERT_EQUAL(u16at(b, 10), (unsigned)(r.cur_power_w + 0.5));
	CU_ASSERT_EQUAL(u16at(b, 4), (unsigned)(r.temp_hotspot_c + 0.5));
	CU_ASSERT_EQUAL(u16at(b, 12), 100);
	CU_ASSERT_EQUAL(u16at(b, 312), 2100);
	CU_ASSERT_EQUAL(u16at(b, 312 + 2 * 7), 2100); /* 8 XCCs on MI300X */
	CU_ASSERT_EQUAL(u16at(b, 352), 1300);
	CU_ASSERT_EQUAL(u64at(b, 104) & 0xFFFFFFFF, 0);
	CU_ASSERT(u64at(b, 96) > 0);
	CU_ASSERT_EQUAL(u16at(b, 24 + 2 * 31), 0xFFFF); /* jpeg_activity: 0xFF fill */
}

/* Polls gpu_metrics: firmware timestamps step by the update interval and energy/time is the model's power. */
static void poll_updates(uint64_t update_ns)
{
	unsigned char b[4096];
	uint64_t fw0 = 0, e0 = 0, fwp = 0, ep = 0;
	int distinct = 0, bad = 0;
	double t_end = now_ms() + 60;
	while (now_ms() < t_end) {
		CU_ASSERT_EQUAL_FATAL(metrics(0, b), 120);
		uint64_t fw = u64at(b, 96), e = u64at(b, 24);
		if (!fw0)
			fw0 = fw, e0 = e;
		else if (fw != fwp) {
			distinct++;
			if ((fw - fwp) * 10 % update_ns || e <= ep)
				bad++;
		} else if (e != ep)
			bad++; /* one sample, one value */
		fwp = fw, ep = e;
	}
	CU_ASSERT_EQUAL(bad, 0);
	/* a loaded machine may starve this poller; the step check above is what pins the interval */
	CU_ASSERT(distinct >= (int)(10e6 / update_ns));
	double p = (double)(ep - e0) / EMU_ENERGY_TICKS_PER_J / ((double)(fwp - fw0) * 1e-8);
	CU_ASSERT(p > 299 && p < 301); /* MI210 at constant:1 */
}

static void test_energy_updates(void)
{
	poll_updates(1000000);
	setenv("SPMTAP_EMU_SENSOR_UPDATE_US", "5000", 1);
	poll_updates(5000000);
	unsetenv("SPMTAP_EMU_SENSOR_UPDATE_US");
}

/* A reader that keeps the fd and preads offset 0, as sysfs pollers do, sees new tables. */
static void test_pread_refresh(void)
{
	unsigned char a[4096], b[4096];
	int fd = open("/sys/class/drm/card0/device/gpu_metrics", O_RDONLY | O_CLOEXEC);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pread(fd, a, sizeof(a), 0), 120);
	ms_sleep(5);
	CU_ASSERT_EQUAL(pread(fd, b, sizeof(b), 0), 120);
	CU_ASSERT(u64at(b, 24) > u64at(a, 24));
	CU_ASSERT(u64at(b, 96) >= u64at(a, 96) + 400000);
	close(fd);
}

static void test_cache_and_latency(void)
{
	unsigned char a[4096], b[4096];
	setenv("SPMTAP_EMU_SENSOR_CACHE_US", "50000", 1);
	int same = 0;
	for (int i = 0; i < 3 && !same; i++) {
		metrics(0, a);
		metrics(0, b);
		same = !memcmp(a, b, 120);
	}
	CU_ASSERT(same);
	ms_sleep(60);
	metrics(0, b);
	CU_ASSERT(memcmp(a, b, 120) != 0);
	unsetenv("SPMTAP_EMU_SENSOR_CACHE_US");
	setenv("SPMTAP_EMU_SENSOR_READ_LATENCY_US", "3000", 1);
	double t0 = now_ms();
	metrics(0, a);
	CU_ASSERT(now_ms() - t0 >= 3.0);
	unsetenv("SPMTAP_EMU_SENSOR_READ_LATENCY_US");
}

static double rel_ms(void)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/kfd", testenv_tmpdir());
	return (double)(raw_ns() - emu_sensor_epoch_ns(path)) / 1e6;
}

static void test_glitches(void)
{
	unsigned char b[4096];
	char spec[128];
	/* backstep: the counter goes back 10 J and keeps counting. */
	/* 10 J is 33 ms at 300 W: read 10 ms after the step, before it is made up. */
	snprintf(spec, sizeof(spec), "backstep@%.0f", rel_ms() + 5);
	setenv("SPMTAP_EMU_SENSOR_GLITCH", spec, 1);
	metrics(0, b);
	uint64_t before = u64at(b, 24);
	ms_sleep(15);
	metrics(0, b);
	CU_ASSERT(u64at(b, 24) < before);
	CU_ASSERT(u64at(b, 24) > before - EMU_GLITCH_BACKSTEP_TICKS);
	/* stuck: the counter holds while the firmware timestamp advances, then catches up. */
	snprintf(spec, sizeof(spec), "stuck@%.0f:60", rel_ms() + 10);
	setenv("SPMTAP_EMU_SENSOR_GLITCH", spec, 1);
	ms_sleep(25);
	metrics(0, b);
	uint64_t e1 = u64at(b, 24), f1 = u64at(b, 96);
	ms_sleep(20);
	metrics(0, b);
	CU_ASSERT_EQUAL(u64at(b, 24), e1);
	CU_ASSERT(u64at(b, 96) > f1);
	ms_sleep(60);
	metrics(0, b);
	CU_ASSERT(u64at(b, 24) > e1 + 300 * 60e-3 * EMU_ENERGY_TICKS_PER_J);
	/* reset: restarts from 0. */
	snprintf(spec, sizeof(spec), "reset@%.0f", rel_ms() + 5);
	setenv("SPMTAP_EMU_SENSOR_GLITCH", spec, 1);
	ms_sleep(30);
	metrics(0, b);
	CU_ASSERT(u64at(b, 24) < 300 * 0.2 * EMU_ENERGY_TICKS_PER_J);
	CU_ASSERT(u64at(b, 24) > 0);
	unsetenv("SPMTAP_EMU_SENSOR_GLITCH");
}

static void test_second_die(void)
{
	unsigned char b[4096];
	CU_ASSERT_EQUAL_FATAL(metrics(2, b), 120);
	CU_ASSERT_EQUAL(u64at(b, 24), 0);
	CU_ASSERT_EQUAL(u16at(b, 22), 0);
	CU_ASSERT(u16at(b, 4) > 20); /* temperatures are per die */
	CU_ASSERT_EQUAL(read_num("/sys/class/drm/card%d/device/hwmon/hwmon%d/power1_average", 2), 0);
	/* The primary reports the package: both GCDs, 2 x (250 W + 2.5 W card offset). */
	CU_ASSERT_EQUAL(read_num("/sys/class/drm/card%d/device/hwmon/hwmon%d/power1_average", 1), 505000000);
	struct emu_sensor_model m;
	struct emu_workload w;
	struct emu_sensor_truth t;
	model(2, &m, &w);
	emu_sensor_truth(&m, &w, raw_ns(), &t);
	CU_ASSERT_EQUAL(t.sensor_power_w, 0);
	CU_ASSERT_DOUBLE_EQUAL(t.die_power_w, 252.5, 1e-9);
}

/*
 * A 100 ms square wave (0 / 1) with no averaging (tau 0) and a 20 ms delay:
 * each average-power reading is the true power 20 ms before its sample.
 */
static void test_square_delay(void)
{
	unsigned char b[4096];
	setenv("SPMTAP_EMU_WORKLOAD", "square:period_ms=100,duty=0.5", 1);
	setenv("SPMTAP_EMU_SENSOR_AVG_TAU_MS", "0", 1);
	setenv("SPMTAP_EMU_SENSOR_AVG_DELAY_MS", "20", 1);
	struct emu_sensor_model m;
	struct emu_workload w;
	model(0, &m, &w);
	int n = 0, delayed_ok = 0, undelayed_ok = 0, hi = 0, lo = 0;
	double t_end = now_ms() + 250;
	while (now_ms() < t_end) {
		metrics(0, b);
		uint64_t s = u64at(b, 96) * 10;
		unsigned p = u16at(b, 22);
		struct emu_sensor_truth td, tn;
		emu_sensor_truth(&m, &w, s - 20000000 - 500000, &td);
		emu_sensor_truth(&m, &w, s - 500000, &tn);
		delayed_ok += p == (unsigned)(td.sensor_power_w + 0.5);
		undelayed_ok += p == (unsigned)(tn.sensor_power_w + 0.5);
		hi += p == 300;
		lo += p == 40;
		n++;
		ms_sleep(1);
	}
	CU_ASSERT_EQUAL(delayed_ok, n);
	CU_ASSERT(undelayed_ok < n * 0.8); /* ~40 % of the readings are in the 20 ms after an edge */
	CU_ASSERT(hi > n / 4 && lo > n / 4);
	/* With the default filter (tau 100 ms) the same wave is smoothed: never the full swing. */
	unsetenv("SPMTAP_EMU_SENSOR_AVG_TAU_MS");
	unsetenv("SPMTAP_EMU_SENSOR_AVG_DELAY_MS");
	metrics(0, b);
	CU_ASSERT(u16at(b, 22) > 60 && u16at(b, 22) < 280);
	struct emu_sensor_reading r;
	expected(0, u64at(b, 96), &r);
	CU_ASSERT_EQUAL(u16at(b, 22), (unsigned)(r.avg_power_w + 0.5));
	unsetenv("SPMTAP_EMU_WORKLOAD");
}

/* The truth API: energy is the integral of power, and the counter is its 2^-16 J ticks. */
static void test_truth(void)
{
	struct emu_sensor_model m;
	struct emu_workload w;
	struct emu_sensor_truth a, b;
	model(0, &m, &w);
	CU_ASSERT_EQUAL(emu_workload_parse("ramp:period_ms=10", &w, NULL, 0), 0);
	uint64_t t = raw_ns() / 10000000 * 10000000;
	emu_sensor_truth(&m, &w, t, &a);
	emu_sensor_truth(&m, &w, t + 10000000, &b);
	/* One ramp period: mean activity 0.5, mean power 170 W, over 10 ms. */
	CU_ASSERT_DOUBLE_EQUAL(b.sensor_energy_j - a.sensor_energy_j, 1.7, 1e-6);
	CU_ASSERT(b.energy_ticks - a.energy_ticks >= 111410 && b.energy_ticks - a.energy_ticks <= 111412);
	struct emu_glitches g;
	CU_ASSERT_EQUAL(emu_glitch_parse("reset@5,stuck@1:2", &g, NULL, 0), 0);
	CU_ASSERT_EQUAL(g.n, 2);
	CU_ASSERT_EQUAL(g.g[0].kind, EMU_GLITCH_STUCK);
	CU_ASSERT_EQUAL(emu_glitch_parse("stuck@1", &g, NULL, 0), -1);
}

static const struct testenv_case cases[] = {
	{ "tree", test_tree, NULL },
	{ "v1_3_bytes", test_v1_3_bytes, NULL },
	{ "v1_5_bytes", test_v1_5_bytes, NULL },
	{ "energy_updates", test_energy_updates, NULL },
	{ "pread_refresh", test_pread_refresh, NULL },
	{ "cache_and_latency", test_cache_and_latency, NULL },
	{ "glitches", test_glitches, NULL },
	{ "second_die", test_second_die, NULL },
	{ "square_delay", test_square_delay, NULL },
	{ "truth", test_truth, NULL },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return testenv_run_suite("emu_sensors", cases, argc, argv);
	testenv_under_emu(argc, argv, SPEC, NULL);
	return testenv_run_suite("emu_sensors", cases, argc, argv);
}
