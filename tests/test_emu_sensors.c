/* SPDX-License-Identifier: MIT */
/*
 * The emulated sensors through the shim, read the way any sysfs reader
 * would (open/read, pread): the DRM/PCI/hwmon tree, gpu_metrics bytes at
 * the SENSORS.md 4.3 offsets per version, energy ticks and firmware
 * timestamps per update interval, the driver cache, read latency, glitches,
 * the MI250X second-die zeros and a square-wave workload seen through the
 * average-power filter's delay.  Expected values come from the truth API
 * (emu/common/sensors.h), evaluated at the sample time the table reports.
 *
 * The response_* cases drive square waves through the model's pure
 * functions: the delay/rise/fall knobs against the 10 %/90 % crossings of
 * the continuous signal (to 20 us) and of the tables (within one sample
 * spacing), the energy counter's delay, the defaults against the earlier
 * model, and the CPU a read costs.
 */
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emu/common/sensors.h"
#include "files.h"
#include "test_emu_util.h"

#define SPEC "mi210,mi250x,mi300x" /* card0 MI210, card1/2 MI250X GCDs, card3 MI300X */

static uint64_t raw_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long long read_num(const char *fmt, int card)
{
	char path[256], buf[64];
	snprintf(path, sizeof(path), fmt, card, card);
	if (tf_slurp_into(path, buf, sizeof(buf)) <= 0)
		return -1;
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
	return tf_slurp_into(path, (char *)buf, 4096);
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
		CU_ASSERT_EQUAL(tf_slurp_into(p, buf, sizeof(buf)), 7);
		CU_ASSERT_EQUAL(memcmp(buf, "amdgpu\n", 7), 0);
		snprintf(p, sizeof(p), "/sys/class/drm/card%d/device/hwmon/hwmon%d/in0_label", c, c);
		CU_ASSERT_EQUAL(tf_slurp_into(p, buf, sizeof(buf)), 7);
		snprintf(p, sizeof(p), "/sys/class/drm/card%d/device/vbios_version", c);
		CU_ASSERT(tf_slurp_into(p, buf, sizeof(buf)) > 0);
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

/* ---- step response: the figures of merit the knobs state ------------------ */

/* The knobs a response case sets, cleared again after it. */
static const char *const resp_knobs[] = {
	"SPMTAP_EMU_SENSOR_AVG_TAU_MS",  "SPMTAP_EMU_SENSOR_AVG_DELAY_MS", "SPMTAP_EMU_SENSOR_AVG_RISE_MS",
	"SPMTAP_EMU_SENSOR_AVG_FALL_MS", "SPMTAP_EMU_SENSOR_CUR_TAU_MS",   "SPMTAP_EMU_SENSOR_CUR_DELAY_MS",
	"SPMTAP_EMU_SENSOR_CUR_RISE_MS", "SPMTAP_EMU_SENSOR_CUR_FALL_MS",  "SPMTAP_EMU_SENSOR_ENERGY_DELAY_MS",
	"SPMTAP_EMU_SENSOR_UPDATE_US",   "SPMTAP_EMU_SENSOR_CACHE_US",     NULL,
};

static void resp_clear(void)
{
	for (int i = 0; resp_knobs[i]; i++)
		unsetenv(resp_knobs[i]);
}

/* The MI210 node's model under the knobs now set, with the square wave `wl`; its period in ns. */
static uint64_t resp_model(const char *wl, struct emu_sensor_model *m, struct emu_workload *w)
{
	CU_ASSERT_EQUAL_FATAL(emu_sensor_model_init(SPEC, 0, 0, m, NULL, 0), 0);
	CU_ASSERT_EQUAL_FATAL(emu_workload_parse(wl, w, NULL, 0), 0);
	return (uint64_t)(w->period_ms * 1e6);
}

struct crossing_ctx {
	const struct emu_sensor_model *m;
	const struct emu_workload *w;
	enum emu_sensor_signal sig;
	double lo, hi;
};

/* Normalised continuous signal y(t) = (v - low) / (high - low), as the analysis defines it. */
static double y_of(const struct crossing_ctx *c, uint64_t t)
{
	return (emu_sensor_signal_w(c->m, c->w, c->sig, t) - c->lo) / (c->hi - c->lo);
}

/* First t in (a, b] with y >= f (up) or y <= f (down), by bisection: y is monotone across a step. */
static uint64_t crossing(const struct crossing_ctx *c, uint64_t a, uint64_t b, double f, int up)
{
	while (b - a > 1) {
		uint64_t mid = a + (b - a) / 2;
		double y = y_of(c, mid);
		if (up ? y >= f : y <= f)
			b = mid;
		else
			a = mid;
	}
	return b;
}

struct measured {
	double delay_up, rise, delay_down, fall; /* ms */
};

/*
 * The continuous signal's crossings around the rising step at S (phase 0 of
 * the square wave) and the falling one half a period later; the levels are
 * those just before each step, settled when the phases are long.
 */
static void measure_continuous(const struct emu_sensor_model *m, const struct emu_workload *w,
			       enum emu_sensor_signal sig, uint64_t S, uint64_t period, struct measured *o)
{
	uint64_t half = period / 2;
	struct crossing_ctx c = { m, w, sig, 0, 0 };
	c.lo = emu_sensor_signal_w(m, w, sig, S - 1);
	c.hi = emu_sensor_signal_w(m, w, sig, S + half - 1);
	uint64_t t10 = crossing(&c, S, S + half, 0.1, 1), t90 = crossing(&c, t10, S + half, 0.9, 1);
	uint64_t f90 = crossing(&c, S + half, S + period, 0.9, 0), f10 = crossing(&c, f90, S + period, 0.1, 0);
	o->delay_up = (double)(t10 - S) / 1e6;
	o->rise = (double)(t90 - t10) / 1e6;
	o->delay_down = (double)(f90 - S - half) / 1e6;
	o->fall = (double)(f10 - f90) / 1e6;
}

static void check_continuous(const char *what, enum emu_sensor_signal sig, const char *wl, double delay_ms,
			     double rise_ms, double fall_ms)
{
	struct emu_sensor_model m;
	struct emu_workload w;
	struct emu_sensor_figures f;
	uint64_t p = resp_model(wl, &m, &w);
	uint64_t S = raw_ns() / p * p; /* a rising edge */
	struct measured o;
	measure_continuous(&m, &w, sig, S, p, &o);
	emu_sensor_figures_of(&m, sig, &f);
	printf("\n      %-28s delay %.4f/%.4f ms (set %.4f)  rise %.4f ms (set %.4f)  fall %.4f ms (set %.4f)", what,
	       o.delay_up, o.delay_down, delay_ms, o.rise, rise_ms, o.fall, fall_ms);
	const double tol = 0.020; /* 20 us */
	CU_ASSERT_DOUBLE_EQUAL(o.delay_up, delay_ms, tol);
	CU_ASSERT_DOUBLE_EQUAL(o.delay_down, delay_ms, tol);
	CU_ASSERT_DOUBLE_EQUAL(o.rise, rise_ms, tol);
	CU_ASSERT_DOUBLE_EQUAL(o.fall, fall_ms, tol);
	/* the ground-truth accessor states the same figures */
	CU_ASSERT_DOUBLE_EQUAL(f.delay_ms, delay_ms, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(f.delay_up_ms, delay_ms, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(f.delay_down_ms, delay_ms, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(f.rise_ms, rise_ms, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(f.fall_ms, fall_ms, 1e-9);
}

/*
 * DELAY, RISE and FALL are what the 10 %/90 % crossings of the continuous
 * signal show, per direction, within 20 us; RISE != FALL (the slower decay
 * of real sensors) included.
 */
static void test_response_continuous(void)
{
	const char *wl = "square:period_ms=2000,duty=0.5";
	printf("\n    continuous signal, 2 s square wave:");
	setenv("SPMTAP_EMU_SENSOR_AVG_DELAY_MS", "8", 1);
	setenv("SPMTAP_EMU_SENSOR_AVG_RISE_MS", "30", 1);
	setenv("SPMTAP_EMU_SENSOR_AVG_FALL_MS", "60", 1);
	setenv("SPMTAP_EMU_SENSOR_CUR_DELAY_MS", "3", 1);
	setenv("SPMTAP_EMU_SENSOR_CUR_RISE_MS", "2", 1);
	setenv("SPMTAP_EMU_SENSOR_CUR_FALL_MS", "5.5", 1);
	check_continuous("avg 8/30/60", EMU_SIG_AVG, wl, 8, 30, 60);
	check_continuous("cur 3/2/5.5", EMU_SIG_CUR, wl, 3, 2, 5.5);
	/* fall faster than rise, and no filtering at all (a delayed step) */
	setenv("SPMTAP_EMU_SENSOR_AVG_DELAY_MS", "40", 1);
	setenv("SPMTAP_EMU_SENSOR_AVG_RISE_MS", "120", 1);
	setenv("SPMTAP_EMU_SENSOR_AVG_FALL_MS", "15", 1);
	setenv("SPMTAP_EMU_SENSOR_CUR_DELAY_MS", "7", 1);
	setenv("SPMTAP_EMU_SENSOR_CUR_RISE_MS", "0", 1);
	setenv("SPMTAP_EMU_SENSOR_CUR_FALL_MS", "0", 1);
	check_continuous("avg 40/120/15", EMU_SIG_AVG, wl, 40, 120, 15);
	check_continuous("cur 7/0/0 (pure delay)", EMU_SIG_CUR, wl, 7, 0, 0);
	/* the older knob: TAU alone gives RISE = FALL = tau ln 9 and keeps the 10 ms dead time */
	resp_clear();
	setenv("SPMTAP_EMU_SENSOR_AVG_TAU_MS", "20", 1);
	check_continuous("avg TAU 20", EMU_SIG_AVG, wl, 10 + 20 * log(10.0 / 9), 20 * log(9.0), 20 * log(9.0));
	resp_clear();
}

/*
 * A DELAY shorter than the filter's own 0 -> 10 % time (tau ln(10/9)) can't
 * be met: the dead time is 0 and the accessor says what the signal does.
 */
static void test_response_clamped(void)
{
	setenv("SPMTAP_EMU_SENSOR_AVG_DELAY_MS", "1", 1);
	setenv("SPMTAP_EMU_SENSOR_AVG_RISE_MS", "100", 1);
	setenv("SPMTAP_EMU_SENSOR_AVG_FALL_MS", "10", 1);
	struct emu_sensor_model m;
	struct emu_workload w;
	struct emu_sensor_figures f;
	uint64_t p = resp_model("square:period_ms=2000,duty=0.5", &m, &w);
	struct measured o;
	measure_continuous(&m, &w, EMU_SIG_AVG, raw_ns() / p * p, p, &o);
	emu_sensor_figures_of(&m, EMU_SIG_AVG, &f);
	printf("\n    DELAY 1 ms, RISE 100 ms: delay up %.4f ms (accessor %.4f), down %.4f ms (accessor %.4f) ", o.delay_up,
	       f.delay_up_ms, o.delay_down, f.delay_down_ms);
	CU_ASSERT_DOUBLE_EQUAL(f.delay_up_ms, 100 * log(10.0 / 9) / log(9.0), 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(f.delay_down_ms, 1.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(o.delay_up, f.delay_up_ms, 0.020);
	CU_ASSERT_DOUBLE_EQUAL(o.delay_down, f.delay_down_ms, 0.020);
	CU_ASSERT_DOUBLE_EQUAL(f.delay_ms, 0.5 * (f.delay_up_ms + f.delay_down_ms), 1e-9);
	resp_clear();
}

/*
 * The tables: a fast reader's distinct samples (one per update, or per
 * cache window), analysed as specs/sensor-analysis-v1.md 3 does per step.
 * Each step's delay is the continuous one plus less than one sample
 * spacing; rise and fall are within one spacing.  The period is not a
 * multiple of the update, so steps fall at every phase of it.  Values
 * before the tables' rounding to whole watts, which can move a crossing
 * further, by up to 0.5 W over the slope there (0.5 ms at the end of a
 * 60 ms fall from 300 to 40 W).
 */
static void check_sampled(const char *what, enum emu_sensor_signal sig, const char *wl)
{
	struct emu_sensor_model m;
	struct emu_workload w;
	struct emu_sensor_figures f;
	uint64_t p = resp_model(wl, &m, &w), half = p / 2;
	emu_sensor_figures_of(&m, sig, &f);
	const double lo = 40, hi = 300; /* MI210 idle / full */
	/* the largest spacing of distinct samples: one update, or ceil(cache / update) of them */
	uint64_t gap = m.update_ns, min_gap = m.update_ns;
	if (m.cache_ns > m.update_ns) {
		gap = (m.cache_ns + m.update_ns - 1) / m.update_ns * m.update_ns;
		min_gap = m.cache_ns / m.update_ns * m.update_ns;
	}
	double gap_ms = (double)gap / 1e6, worst[4] = { 0, 0, 0, 0 };
	/*
	 * Uneven spacings (2, 3, 2, 3 ms under a 2.5 ms cache) make dE/dt a
	 * boxcar of 2 or 3 ms where the truth says 2.5: its 10 % point moves
	 * by a tenth of the difference.  1 us for rounding otherwise.
	 */
	double slack = 0.1 * (double)(gap - min_gap) / 1e6 + 0.001;
	uint64_t S0 = raw_ns() / p * p;
	int steps = 0, bad = 0;
	for (int k = 0; k < 12; k++) {
		uint64_t S = S0 + (uint64_t)k * p;
		/* readings (sample time, value): every 250 us, which sees every sample, from before the step to the next */
		double e_prev = 0;
		uint64_t s_prev = 0;
		double t10 = -1, t90 = -1, f90 = -1, f10 = -1;
		for (uint64_t t = S - 5 * gap; t < S + p; t += 250000) {
			struct emu_sensor_reading r;
			emu_sensor_read(&m, &w, t, 0, &r);
			if (r.sample_ns == s_prev)
				continue; /* a cached copy or a re-read of the same sample */
			double v;
			if (sig == EMU_SIG_ENERGY) {
				double e = (double)r.energy_ticks / EMU_ENERGY_TICKS_PER_J;
				v = s_prev ? (e - e_prev) / ((double)(r.sample_ns - s_prev) * 1e-9) : 0;
				e_prev = e;
			} else {
				v = sig == EMU_SIG_AVG ? r.avg_power_w : r.cur_power_w;
			}
			uint64_t s = r.sample_ns;
			bool first = !s_prev;
			s_prev = s;
			if (first || s < S)
				continue;
			double y = (v - lo) / (hi - lo), at = (double)s / 1e6;
			if (s < S + half) {
				if (t10 < 0 && y >= 0.1)
					t10 = at;
				if (t10 >= 0 && t90 < 0 && y >= 0.9)
					t90 = at;
			} else {
				if (f90 < 0 && y <= 0.9)
					f90 = at;
				if (f90 >= 0 && f10 < 0 && y <= 0.1)
					f10 = at;
			}
		}
		if (t10 < 0 || t90 < 0 || f90 < 0 || f10 < 0) {
			bad++;
			continue;
		}
		double sm = (double)S / 1e6, hm = (double)(S + half) / 1e6;
		double e[4] = { t10 - sm - f.delay_up_ms, (t90 - t10) - f.rise_ms, f90 - hm - f.delay_down_ms,
				(f10 - f90) - f.fall_ms };
		int b = !(e[0] >= -slack && e[0] < gap_ms + slack) || !(e[2] >= -slack && e[2] < gap_ms + slack) ||
			!(e[1] > -gap_ms - slack && e[1] < gap_ms + slack) ||
			!(e[3] > -gap_ms - slack && e[3] < gap_ms + slack);
		if (b)
			fprintf(stderr, "\n  %s step %d: table - truth %+.3f %+.3f %+.3f %+.3f ms", what, k, e[0], e[1], e[2], e[3]);
		bad += b;
		for (int i = 0; i < 4; i++)
			worst[i] = fabs(e[i]) > fabs(worst[i]) ? e[i] : worst[i];
		steps++;
	}
	printf("\n      %-30s %d steps; worst table - truth: delay up %+.3f, rise %+.3f, delay down %+.3f, fall %+.3f ms "
	       "(spacing %.1f ms)",
	       what, steps, worst[0], worst[1], worst[2], worst[3], gap_ms);
	CU_ASSERT_EQUAL(steps, 12);
	CU_ASSERT_EQUAL(bad, 0);
}

static void test_response_sampled(void)
{
	/* phases of 400 ms settle the slowest response here (tau 27 ms) to 1e-6 of the swing */
	const char *wl = "square:period_ms=800.3,duty=0.5";
	printf("\n    table values (1 ms updates, before whole-W rounding), 800.3 ms square wave:");
	setenv("SPMTAP_EMU_SENSOR_AVG_DELAY_MS", "8", 1);
	setenv("SPMTAP_EMU_SENSOR_AVG_RISE_MS", "30", 1);
	setenv("SPMTAP_EMU_SENSOR_AVG_FALL_MS", "60", 1);
	setenv("SPMTAP_EMU_SENSOR_CUR_DELAY_MS", "3", 1);
	setenv("SPMTAP_EMU_SENSOR_CUR_RISE_MS", "2", 1);
	setenv("SPMTAP_EMU_SENSOR_CUR_FALL_MS", "5.5", 1);
	setenv("SPMTAP_EMU_SENSOR_ENERGY_DELAY_MS", "2.5", 1);
	check_sampled("avg 8/30/60", EMU_SIG_AVG, wl);
	check_sampled("cur 3/2/5.5", EMU_SIG_CUR, wl);
	check_sampled("energy dE/dt, delay 2.5", EMU_SIG_ENERGY, wl);
	/* a 2.5 ms driver cache over 1 ms updates: distinct tables 2 or 3 ms apart */
	setenv("SPMTAP_EMU_SENSOR_CACHE_US", "2500", 1);
	check_sampled("avg, 2.5 ms cache", EMU_SIG_AVG, wl);
	check_sampled("energy, 2.5 ms cache", EMU_SIG_ENERGY, wl);
	/* sample_ms is the median spacing of the distinct tables a fast reader gets */
	static const char *const caches[] = { "2500", "2700", "2200", "3000", "500", "0" };
	for (int c = 0; c < 6; c++) {
		setenv("SPMTAP_EMU_SENSOR_CACHE_US", caches[c], 1);
		struct emu_sensor_model m;
		struct emu_workload w;
		struct emu_sensor_figures f;
		resp_model(wl, &m, &w);
		emu_sensor_figures_of(&m, EMU_SIG_AVG, &f);
		/* 400 gaps: whole repeats of the spacing pattern (2 windows at 2.5 ms, 5 at 2.2, 10 at 2.7) */
		double gaps[400];
		int ng = 0;
		uint64_t prev = 0, t0 = raw_ns();
		for (uint64_t t = t0; ng < 400; t += 50000) {
			struct emu_sensor_reading r;
			emu_sensor_read(&m, &w, t, 0, &r);
			if (prev && r.sample_ns != prev)
				gaps[ng++] = (double)(r.sample_ns - prev) / 1e6;
			prev = r.sample_ns;
		}
		for (int i = 1; i < ng; i++) /* insertion sort: few distinct values */
			for (int j = i; j > 0 && gaps[j] < gaps[j - 1]; j--) {
				double x = gaps[j];
				gaps[j] = gaps[j - 1];
				gaps[j - 1] = x;
			}
		double med = ng % 2 ? gaps[ng / 2] : 0.5 * (gaps[ng / 2 - 1] + gaps[ng / 2]);
		printf("\n      cache %s us: median spacing of distinct tables %.2f ms, accessor sample_ms %.2f ms", caches[c],
		       med, f.sample_ms);
		CU_ASSERT_DOUBLE_EQUAL(f.update_ms, 1.0, 1e-12);
		CU_ASSERT_DOUBLE_EQUAL(f.sample_ms, med, 1e-9);
	}
	/* a 5 ms update: the same statement with a wider grid */
	unsetenv("SPMTAP_EMU_SENSOR_CACHE_US");
	setenv("SPMTAP_EMU_SENSOR_UPDATE_US", "5000", 1);
	check_sampled("avg, 5 ms update", EMU_SIG_AVG, wl);
	check_sampled("energy, 5 ms update", EMU_SIG_ENERGY, wl);
	resp_clear();
}

/*
 * ENERGY_DELAY: the counter in a table sampled at s is the true energy up
 * to s - delay, and dE/dt's continuous signal (a boxcar of one update) has
 * delay + U/10 and 0.8 U as its 10 % delay and rise/fall.
 */
static void test_energy_delay(void)
{
	setenv("SPMTAP_EMU_SENSOR_ENERGY_DELAY_MS", "2.5", 1);
	const char *wl = "square:period_ms=100,duty=0.5";
	struct emu_sensor_model m;
	struct emu_workload w;
	struct emu_sensor_figures f;
	uint64_t p = resp_model(wl, &m, &w);
	int same = 0;
	uint64_t t0 = raw_ns();
	for (int i = 0; i < 200; i++) {
		struct emu_sensor_reading r;
		struct emu_sensor_truth t;
		emu_sensor_read(&m, &w, t0 + (uint64_t)i * 731000, 0, &r);
		emu_sensor_truth(&m, &w, r.sample_ns - 2500000, &t);
		same += r.energy_ticks == t.energy_ticks;
	}
	CU_ASSERT_EQUAL(same, 200);
	emu_sensor_figures_of(&m, EMU_SIG_ENERGY, &f);
	struct measured o;
	measure_continuous(&m, &w, EMU_SIG_ENERGY, t0 / p * p, p, &o);
	printf("\n    energy delay 2.5 ms: dE/dt delay %.4f/%.4f ms (accessor %.4f), rise %.4f, fall %.4f ms (accessor %.4f) ",
	       o.delay_up, o.delay_down, f.delay_ms, o.rise, o.fall, f.rise_ms);
	CU_ASSERT_DOUBLE_EQUAL(f.delay_ms, 2.6, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(f.rise_ms, 0.8, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(o.delay_up, 2.6, 0.020);
	CU_ASSERT_DOUBLE_EQUAL(o.delay_down, 2.6, 0.020);
	CU_ASSERT_DOUBLE_EQUAL(o.rise, 0.8, 0.020);
	CU_ASSERT_DOUBLE_EQUAL(o.fall, 0.8, 0.020);
	/* without the knob the counter is the truth at the sample itself */
	resp_clear();
	resp_model(wl, &m, &w);
	struct emu_sensor_reading r;
	struct emu_sensor_truth t;
	emu_sensor_read(&m, &w, t0, 0, &r);
	emu_sensor_truth(&m, &w, r.sample_ns, &t);
	CU_ASSERT_EQUAL(r.energy_ticks, t.energy_ticks);
}

/*
 * No knobs: the model before the figures-of-merit knobs, a 10 ms (avg) /
 * 1 ms (cur) dead time before a first-order filter of 100 ms / 5 ms.  After
 * a step from a settled level that is lo + swing (1 - e^-(t - S - dead)/tau),
 * which the signal must still follow to a millionth of the swing.
 */
static void test_response_defaults(void)
{
	resp_clear();
	struct emu_sensor_model m;
	struct emu_workload w;
	struct emu_sensor_figures fa, fc, fe;
	uint64_t p = resp_model("square:period_ms=8000,duty=0.5", &m, &w);
	emu_sensor_figures_of(&m, EMU_SIG_AVG, &fa);
	emu_sensor_figures_of(&m, EMU_SIG_CUR, &fc);
	emu_sensor_figures_of(&m, EMU_SIG_ENERGY, &fe);
	printf("\n    defaults: avg delay %.3f rise %.3f fall %.3f; cur delay %.3f rise %.3f fall %.3f; "
	       "energy delay %.3f rise %.3f; update %.3f ms ",
	       fa.delay_ms, fa.rise_ms, fa.fall_ms, fc.delay_ms, fc.rise_ms, fc.fall_ms, fe.delay_ms, fe.rise_ms,
	       fa.update_ms);
	CU_ASSERT_DOUBLE_EQUAL(fa.delay_ms, 10 + 100 * log(10.0 / 9), 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(fa.rise_ms, 100 * log(9.0), 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(fa.fall_ms, 100 * log(9.0), 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(fc.delay_ms, 1 + 5 * log(10.0 / 9), 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(fc.rise_ms, 5 * log(9.0), 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(fe.delay_ms, 0.1, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(fa.update_ms, 1.0, 1e-12);
	uint64_t S = raw_ns() / p * p, half = p / 2;
	double worst = 0;
	for (int sig = 0; sig < 2; sig++) {
		double dead = sig ? 1e6 : 10e6, tau = sig ? 5e6 : 100e6;
		for (uint64_t dt = 0; dt < 1000000000; dt += 1700000) {
			double up = 40 + 260 * (dt > dead ? 1 - exp(-((double)dt - dead) / tau) : 0);
			double down = 300 - 260 * (dt > dead ? 1 - exp(-((double)dt - dead) / tau) : 0);
			double a = emu_sensor_signal_w(&m, &w, (enum emu_sensor_signal)sig, S + dt);
			double b = emu_sensor_signal_w(&m, &w, (enum emu_sensor_signal)sig, S + half + dt);
			worst = fmax(worst, fmax(fabs(a - up), fabs(b - down)));
		}
	}
	printf("(worst |signal - earlier model| %.2e W) ", worst);
	CU_ASSERT(worst < 260e-6);
}

/*
 * CPU per read: the shim builds the model and a table at every read, and
 * may be polled every millisecond on four GPUs.  The earlier model summed
 * 10 tau of history (about 25 us a read); this one is closed-form.
 */
static void test_read_cost(void)
{
	setenv("SPMTAP_EMU_SENSOR_AVG_RISE_MS", "30", 1);
	setenv("SPMTAP_EMU_SENSOR_AVG_FALL_MS", "60", 1);
	static const char *const wls[] = { "square:period_ms=100,duty=0.5", "square:period_ms=2,duty=0.5",
					   "ramp:period_ms=1000" };
	double model_us[3];
	for (int k = 0; k < 3; k++) {
		struct timespec a, b;
		const int n = 4000;
		unsigned char buf[512];
		double sink = 0;
		uint64_t t0 = raw_ns();
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
		for (int i = 0; i < n; i++) {
			struct emu_sensor_model m;
			struct emu_workload w;
			struct emu_sensor_reading r;
			emu_sensor_model_init(SPEC, (unsigned)i & 3, 0, &m, NULL, 0);
			emu_workload_parse(wls[k], &w, NULL, 0);
			emu_sensor_read(&m, &w, t0 + (uint64_t)i * 250000, t0, &r);
			sink += (double)emu_sensor_render_metrics(&m, &r, buf, sizeof(buf)) + r.avg_power_w;
		}
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
		model_us[k] = ((double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3) / n;
		CU_ASSERT(sink > 0);
	}
	/* through the shim: open/read/close of gpu_metrics, as a poller that reopens does */
	unsigned char b[4096];
	struct timespec a0, a1;
	const int n = 2000;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a0);
	for (int i = 0; i < n; i++)
		metrics(0, b);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a1);
	double shim_us = ((double)(a1.tv_sec - a0.tv_sec) * 1e6 + (double)(a1.tv_nsec - a0.tv_nsec) / 1e3) / n;
	printf("\n    CPU per read: model %.2f us (100 ms square), %.2f us (2 ms square), %.2f us (1 s ramp); "
	       "a gpu_metrics open+read+close through the shim %.1f us ",
	       model_us[0], model_us[1], model_us[2], shim_us);
	/* The budgets are the product build's (-O2, no instrumentation). */
	if (TESTENV_SANITIZED) {
		printf("(budgets not checked in a sanitized build) ");
	} else {
		CU_ASSERT(model_us[0] < 10 && model_us[1] < 10);
		CU_ASSERT(model_us[2] < 60);
	}
	resp_clear();
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
	{ "response_continuous", test_response_continuous, NULL },
	{ "response_clamped", test_response_clamped, NULL },
	{ "response_sampled", test_response_sampled, NULL },
	{ "energy_delay", test_energy_delay, NULL },
	{ "response_defaults", test_response_defaults, NULL },
	{ "read_cost", test_read_cost, NULL },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return testenv_run_suite("emu_sensors", cases, argc, argv);
	testenv_under_emu(argc, argv, SPEC, NULL);
	return testenv_run_suite("emu_sensors", cases, argc, argv);
}
