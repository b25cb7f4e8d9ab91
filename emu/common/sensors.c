/* SPDX-License-Identifier: MIT */
/*
 * The sensor model behind the emulated gpu_metrics and hwmon files
 * (docs/emulator.md, "Sensors").  Stateless: every value is a closed-form
 * function of CLOCK_MONOTONIC_RAW time (quantised to the firmware update
 * interval), so every process reading the same tree sees the same counters
 * and a test can recompute any reading.
 */
#include "emu/common/sensors.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(struct emu_gpu_metrics_v1_3) == 120, "v1_3 size (SENSORS.md 4.3)");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_3, temperature_edge) == 4, "v1_3 edge");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_3, average_socket_power) == 22, "v1_3 power");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_3, energy_accumulator) == 24, "v1_3 energy");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_3, system_clock_counter) == 32, "v1_3 scc");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_3, current_gfxclk) == 54, "v1_3 gfxclk");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_3, throttle_status) == 68, "v1_3 throttle");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_3, gfx_activity_acc) == 80, "v1_3 acc");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_3, temperature_hbm) == 88, "v1_3 hbm");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_3, firmware_timestamp) == 96, "v1_3 fw ts");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_3, voltage_soc) == 104, "v1_3 voltages");
_Static_assert(sizeof(struct emu_gpu_metrics_v1_5) == 360, "v1_5 size (SENSORS.md 4.3)");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_5, temperature_hotspot) == 4, "v1_5 hotspot");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_5, curr_socket_power) == 10, "v1_5 power");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_5, average_gfx_activity) == 12, "v1_5 gfx");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_5, energy_accumulator) == 88, "v1_5 energy");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_5, system_clock_counter) == 96, "v1_5 scc");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_5, throttle_status) == 104, "v1_5 throttle");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_5, gfx_activity_acc) == 120, "v1_5 acc");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_5, firmware_timestamp) == 304, "v1_5 fw ts");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_5, current_gfxclk) == 312, "v1_5 gfxclk");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_5, current_socclk) == 328, "v1_5 socclk");
_Static_assert(offsetof(struct emu_gpu_metrics_v1_5, current_uclk) == 352, "v1_5 uclk");

/*
 * Power per die [I]: idle and full-load board power.  MI250X: 500 W per
 * card split over two GCDs; MI300X 750 W; MI300A 550 W; MI210 300 W.
 */
static void emu_power_of(const struct emu_profile *p, double *idle, double *max, double *tdp)
{
	if (!strcmp(p->name, "mi300x")) {
		*idle = 140, *max = 750, *tdp = 750;
	} else if (!strcmp(p->name, "mi300a")) {
		*idle = 110, *max = 550, *tdp = 550;
	} else if (!strcmp(p->name, "mi250x")) {
		*idle = 45, *max = 250, *tdp = 500;
	} else {
		*idle = 40, *max = 300, *tdp = 300;
	}
}

/* exp(x) without libm (the shim links no libm): range reduction by ln 2, then Taylor. */
static double emu_exp(double x)
{
	if (x < -700)
		return 0.0;
	if (x > 700)
		x = 700;
	const double ln2 = 0.6931471805599453;
	long k = (long)(x / ln2 + (x < 0 ? -0.5 : 0.5));
	double r = x - (double)k * ln2, term = 1.0, sum = 1.0;
	for (int i = 1; i < 20; i++) {
		term *= r / i;
		sum += term;
	}
	for (; k > 0; k--)
		sum *= 2.0;
	for (; k < 0; k++)
		sum *= 0.5;
	return sum;
}

static double emu_env_num(const char *name, double dflt)
{
	const char *e = getenv(name);
	char *end;
	if (!e || !*e)
		return dflt;
	double v = strtod(e, &end);
	return (*end || !(v >= 0)) ? dflt : v;
}

int emu_glitch_parse(const char *spec, struct emu_glitches *g, char *err, size_t errlen)
{
	memset(g, 0, sizeof(*g));
	if (!spec || !*spec)
		return 0;
	for (const char *p = spec; *p;) {
		size_t len = strcspn(p, ",");
		char item[64], *end;
		if (!len || len >= sizeof(item) || g->n >= EMU_MAX_GLITCHES)
			goto bad;
		memcpy(item, p, len);
		item[len] = 0;
		p += len + (p[len] == ',');
		char *at = strchr(item, '@');
		if (!at)
			goto bad;
		*at = 0;
		int i = g->n;
		if (!strcmp(item, "backstep"))
			g->g[i].kind = EMU_GLITCH_BACKSTEP;
		else if (!strcmp(item, "stuck"))
			g->g[i].kind = EMU_GLITCH_STUCK;
		else if (!strcmp(item, "reset"))
			g->g[i].kind = EMU_GLITCH_RESET;
		else
			goto bad;
		double t = strtod(at + 1, &end);
		if (end == at + 1 || !(t >= 0))
			goto bad;
		g->g[i].at_ns = (uint64_t)(t * 1e6);
		if (g->g[i].kind == EMU_GLITCH_STUCK) {
			if (*end != ':')
				goto bad;
			char *d0 = end + 1;
			double d = strtod(d0, &end);
			if (end == d0 || !(d > 0))
				goto bad;
			g->g[i].dur_ns = (uint64_t)(d * 1e6);
		}
		if (*end)
			goto bad;
		g->n++;
	}
	/* Time order, so "later" glitches act on what earlier ones left. */
	for (int i = 1; i < g->n; i++)
		for (int j = i; j > 0 && g->g[j].at_ns < g->g[j - 1].at_ns; j--) {
			__typeof__(g->g[0]) tmp = g->g[j];
			g->g[j] = g->g[j - 1];
			g->g[j - 1] = tmp;
		}
	return 0;
bad:
	if (err && errlen)
		snprintf(err, errlen, "bad SPMTAP_EMU_SENSOR_GLITCH '%s' (backstep@T_MS,stuck@T_MS:DUR_MS,reset@T_MS)",
			 spec);
	memset(g, 0, sizeof(*g));
	return -1;
}

uint64_t emu_sensor_epoch_ns(const char *tree_dir)
{
	char path[4096];
	unsigned long long v = 0;
	snprintf(path, sizeof(path), "%s/sensor-epoch", tree_dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

int emu_sensor_model_init(const char *spec, unsigned gpu_index, uint64_t epoch_ns,
			  struct emu_sensor_model *m, char *err, size_t errlen)
{
	struct emu_gpu_desc d[EMU_MAX_GPUS];
	int n = emu_spec_parse(spec, d, EMU_MAX_GPUS, err, errlen);
	if (n < 0)
		return -1;
	if (gpu_index >= (unsigned)n) {
		if (err && errlen)
			snprintf(err, errlen, "GPU %u not in spec '%s'", gpu_index, spec);
		return -1;
	}
	memset(m, 0, sizeof(*m));
	const struct emu_profile *p = d[gpu_index].profile;
	/* The die index within its card: nodes of one card are consecutive. */
	unsigned card = 0, die = 0;
	for (unsigned i = 0; i <= gpu_index; i++) {
		if (i) {
			if (d[i].profile == d[i - 1].profile && die + 1 < d[i].profile->gpus_per_card)
				die++;
			else
				card++, die = 0;
		}
	}
	m->profile = p;
	m->gpu_index = gpu_index;
	m->card_index = card;
	m->primary = die == 0;
	m->dies = m->primary ? p->gpus_per_card : 0;
	emu_power_of(p, &m->idle_w, &m->max_w, &m->tdp_w);
	m->offset_w = 2.5 * card;
	/* Counters start far from 0, as on a GPU that has been up for a while, and differ per card. */
	m->energy_base_ticks = m->primary ? (uint64_t)(card + 1) << 32 : 0;
	m->metrics_crev = p->num_xcc > 1 ? 5 : 3;
	m->update_ns = (uint64_t)(emu_env_num("SPMTAP_EMU_SENSOR_UPDATE_US", 1000) * 1e3);
	if (m->update_ns < 1000)
		m->update_ns = 1000;
	m->avg_tau_ns = emu_env_num("SPMTAP_EMU_SENSOR_AVG_TAU_MS", 100) * 1e6;
	m->avg_delay_ns = emu_env_num("SPMTAP_EMU_SENSOR_AVG_DELAY_MS", 10) * 1e6;
	m->cur_tau_ns = emu_env_num("SPMTAP_EMU_SENSOR_CUR_TAU_MS", 5) * 1e6;
	m->cur_delay_ns = emu_env_num("SPMTAP_EMU_SENSOR_CUR_DELAY_MS", 1) * 1e6;
	m->temp_tau_ns = emu_env_num("SPMTAP_EMU_SENSOR_TEMP_TAU_MS", 2000) * 1e6;
	m->cache_ns = (uint64_t)(emu_env_num("SPMTAP_EMU_SENSOR_CACHE_US", 0) * 1e3);
	m->latency_ns = (uint64_t)(emu_env_num("SPMTAP_EMU_SENSOR_READ_LATENCY_US", 0) * 1e3);
	m->epoch_ns = epoch_ns;
	m->sclk_mhz = p->sclk_mhz;
	m->uclk_mhz = p->num_xcc > 1 ? 1300 : 1600;
	if (emu_glitch_parse(getenv("SPMTAP_EMU_SENSOR_GLITCH"), &m->glitches, err, errlen))
		return -1;
	return 0;
}

/* Sensor energy in J from t = 0: dies x ((idle + offset) t + (max - idle) A(t)). */
static double emu_sensor_energy(const struct emu_sensor_model *m, const struct emu_workload *w, uint64_t t_ns)
{
	if (!m->dies)
		return 0.0;
	return m->dies * ((m->idle_w + m->offset_w) * (double)t_ns * 1e-9 +
			  (m->max_w - m->idle_w) * emu_workload_integral(w, t_ns));
}

void emu_sensor_truth(const struct emu_sensor_model *m, const struct emu_workload *w, uint64_t t_ns,
		      struct emu_sensor_truth *out)
{
	double a = emu_workload_activity(w, t_ns);
	double A = emu_workload_integral(w, t_ns);
	out->activity = a;
	out->die_power_w = m->idle_w + m->offset_w + a * (m->max_w - m->idle_w);
	out->die_energy_j = (m->idle_w + m->offset_w) * (double)t_ns * 1e-9 + (m->max_w - m->idle_w) * A;
	out->sensor_power_w = m->dies * out->die_power_w;
	out->sensor_energy_j = m->dies * out->die_energy_j;
	out->energy_ticks = m->dies ? m->energy_base_ticks +
					      (uint64_t)(out->sensor_energy_j * EMU_ENERGY_TICKS_PER_J)
				    : 0;
}

/*
 * y(t) = first-order low-pass of the sensor power, delayed by d:
 * sum over steps j of alpha^j x mean power over [t-d-(j+1)h, t-d-jh],
 * normalised, with h the update interval (coarser for long tau so a read
 * costs at most ~2048 steps) and 10 tau of history (weight left < 5e-5).
 * tau = 0 is the mean power of the last step (no filtering).  Means come
 * from the closed-form energy, so the filter input is exactly the power
 * that the energy counter integrates.
 */
double emu_sensor_filtered_power(const struct emu_sensor_model *m, const struct emu_workload *w, uint64_t t_ns,
				 double tau_ns, double delay_ns)
{
	if (!m->dies)
		return 0.0;
	double h = (double)m->update_ns;
	if (tau_ns > 0 && 10 * tau_ns / h > 2048)
		h = 10 * tau_ns / 2048;
	uint64_t hn = (uint64_t)h, dn = (uint64_t)delay_ns;
	h = (double)hn;
	if (t_ns < dn + hn)
		return m->dies * (m->idle_w + m->offset_w);
	uint64_t end = t_ns - dn;
	int steps = tau_ns > 0 ? (int)(10 * tau_ns / h) + 1 : 1;
	double alpha = tau_ns > 0 ? emu_exp(-h / tau_ns) : 0.0;
	double wsum = 0, ysum = 0, wj = 1.0;
	double e_hi = emu_sensor_energy(m, w, end);
	for (int j = 0; j < steps && end >= hn; j++) {
		double e_lo = emu_sensor_energy(m, w, end - hn);
		ysum += wj * (e_hi - e_lo) / (h * 1e-9);
		wsum += wj;
		wj *= alpha;
		e_hi = e_lo;
		end -= hn;
	}
	return wsum > 0 ? ysum / wsum : 0.0;
}

/* The energy counter at sample time s with glitches 0..upto-1 applied. */
static uint64_t emu_glitched_ticks(const struct emu_sensor_model *m, const struct emu_workload *w, uint64_t s,
				   int upto)
{
	struct emu_sensor_truth t;
	emu_sensor_truth(m, w, s, &t);
	uint64_t v = t.energy_ticks;
	if (!m->dies)
		return 0;
	for (int i = 0; i < upto; i++) {
		uint64_t at = m->epoch_ns + m->glitches.g[i].at_ns;
		if (s < at)
			break;
		switch (m->glitches.g[i].kind) {
		case EMU_GLITCH_BACKSTEP:
			v = v > EMU_GLITCH_BACKSTEP_TICKS ? v - EMU_GLITCH_BACKSTEP_TICKS : 0;
			break;
		case EMU_GLITCH_RESET: {
			/* The firmware accumulator restarts at 0: earlier history is gone. */
			struct emu_sensor_truth t0;
			emu_sensor_truth(m, w, at - at % m->update_ns, &t0);
			v = t.energy_ticks - t0.energy_ticks;
			break;
		}
		case EMU_GLITCH_STUCK:
			if (s < at + m->glitches.g[i].dur_ns)
				v = emu_glitched_ticks(m, w, at - at % m->update_ns, i);
			break;
		}
	}
	return v;
}

static double emu_temp_base(const struct emu_sensor_model *m, const struct emu_workload *w, uint64_t s)
{
	/* Temperature follows the die's power (the second GCD heats too), slowly. */
	struct emu_sensor_model die = *m;
	die.dies = 1;
	return emu_sensor_filtered_power(&die, w, s, m->temp_tau_ns, 0);
}

void emu_sensor_read(const struct emu_sensor_model *m, const struct emu_workload *w, uint64_t raw_ns,
		     uint64_t boot_ns, struct emu_sensor_reading *r)
{
	memset(r, 0, sizeof(*r));
	/* The driver cache: a read inside a window gets the table built at the window start. */
	if (m->cache_ns) {
		uint64_t back = raw_ns % m->cache_ns;
		raw_ns -= back;
		boot_ns -= back;
	}
	uint64_t s = raw_ns - raw_ns % m->update_ns;
	r->sample_ns = s;
	r->system_clock_counter = boot_ns;
	r->firmware_timestamp = s / 10;
	r->energy_ticks = emu_glitched_ticks(m, w, s, m->glitches.n);
	r->avg_power_w = emu_sensor_filtered_power(m, w, s, m->avg_tau_ns, m->avg_delay_ns);
	r->cur_power_w = emu_sensor_filtered_power(m, w, s, m->cur_tau_ns, m->cur_delay_ns);
	double pf = emu_temp_base(m, w, s);
	r->temp_edge_c = 25.0 + 0.10 * pf;
	r->temp_hotspot_c = r->temp_edge_c + 0.06 * pf;
	r->temp_mem_c = r->temp_edge_c + 0.04 * pf;
	/* Activity: the mean over the last update interval, as a busy counter would give. */
	double A1 = emu_workload_integral(w, s);
	double A0 = s >= m->update_ns ? emu_workload_integral(w, s - m->update_ns) : 0.0;
	double a = (A1 - A0) / ((double)m->update_ns * 1e-9);
	a = a < 0 ? 0 : a > 1 ? 1 : a;
	r->gfx_busy = (unsigned)(a * 100 + 0.5);
	r->umc_busy = (unsigned)(a * 50 + 0.5);
	r->activity_integral_s = A1;
	r->vddgfx_mv = 750 + (unsigned)(a * 100 + 0.5);
}

static uint16_t emu_w16(double v)
{
	if (!(v > 0))
		return 0;
	return v > 65534 ? 65534 : (uint16_t)(v + 0.5);
}

size_t emu_sensor_render_metrics(const struct emu_sensor_model *m, const struct emu_sensor_reading *r,
				 void *buf, size_t len)
{
	/* smu_cmn_init_soft_gpu_metrics: all 0xFF, then the header. */
	uint16_t pw_avg = m->dies ? emu_w16(r->avg_power_w) : 0;
	uint16_t pw_cur = m->dies ? emu_w16(r->cur_power_w) : 0;
	uint32_t gfx_acc = (uint32_t)(uint64_t)(r->activity_integral_s * 1e5); /* % x ms [I] */
	if (m->metrics_crev >= 4) {
		struct emu_gpu_metrics_v1_5 t;
		if (len < sizeof(t))
			return 0;
		memset(&t, 0xFF, sizeof(t));
		t.hdr = (struct emu_metrics_header){ sizeof(t), 1, (uint8_t)m->metrics_crev };
		t.temperature_hotspot = emu_w16(r->temp_hotspot_c);
		t.temperature_mem = emu_w16(r->temp_mem_c);
		t.temperature_vrsoc = emu_w16(r->temp_edge_c + 5);
		t.curr_socket_power = pw_cur;
		t.average_gfx_activity = (uint16_t)r->gfx_busy;
		t.average_umc_activity = (uint16_t)r->umc_busy;
		for (int i = 0; i < 4; i++)
			t.vcn_activity[i] = 0;
		t.energy_accumulator = r->energy_ticks;
		t.system_clock_counter = r->system_clock_counter;
		t.throttle_status = 0;
		t.gfxclk_lock_status = 0;
		t.pcie_link_width = 16;
		t.pcie_link_speed = 320;
		t.xgmi_link_width = 16;
		t.xgmi_link_speed = 32;
		t.gfx_activity_acc = gfx_acc;
		t.mem_activity_acc = gfx_acc / 2;
		t.firmware_timestamp = r->firmware_timestamp;
		for (unsigned i = 0; i < 8; i++)
			t.current_gfxclk[i] = i < m->profile->num_xcc ? (uint16_t)m->sclk_mhz : 0xFFFF;
		for (int i = 0; i < 4; i++)
			t.current_socclk[i] = 1143;
		t.current_uclk = (uint16_t)m->uclk_mhz;
		memcpy(buf, &t, sizeof(t));
		return sizeof(t);
	}
	struct emu_gpu_metrics_v1_3 t;
	if (len < sizeof(t))
		return 0;
	memset(&t, 0xFF, sizeof(t));
	t.hdr = (struct emu_metrics_header){ sizeof(t), 1, (uint8_t)m->metrics_crev };
	t.temperature_edge = emu_w16(r->temp_edge_c);
	t.temperature_hotspot = emu_w16(r->temp_hotspot_c);
	t.temperature_mem = emu_w16(r->temp_mem_c);
	t.temperature_vrgfx = emu_w16(r->temp_edge_c + 3);
	t.temperature_vrsoc = emu_w16(r->temp_edge_c + 5);
	t.temperature_vrmem = emu_w16(r->temp_edge_c + 2);
	t.average_gfx_activity = (uint16_t)r->gfx_busy;
	t.average_umc_activity = (uint16_t)r->umc_busy;
	t.average_mm_activity = 0;
	/* aldebaran fills power and energy on the primary die only (SENSORS.md 4.4). */
	t.average_socket_power = pw_avg;
	t.energy_accumulator = r->energy_ticks;
	t.system_clock_counter = r->system_clock_counter;
	t.average_gfxclk_frequency = t.current_gfxclk = (uint16_t)m->sclk_mhz;
	t.average_socclk_frequency = t.current_socclk = 1090;
	t.average_uclk_frequency = t.current_uclk = (uint16_t)m->uclk_mhz;
	t.throttle_status = 0;
	t.pcie_link_width = 16;
	t.pcie_link_speed = 160;
	t.gfx_activity_acc = gfx_acc;
	t.mem_activity_acc = gfx_acc / 2;
	for (int i = 0; i < 4; i++)
		t.temperature_hbm[i] = emu_w16(r->temp_mem_c + i);
	t.firmware_timestamp = r->firmware_timestamp;
	t.voltage_soc = 900;
	t.voltage_gfx = (uint16_t)r->vddgfx_mv;
	t.voltage_mem = 1200;
	t.indep_throttle_status = 0;
	memcpy(buf, &t, sizeof(t));
	return sizeof(t);
}

int emu_sensor_render_attr(const struct emu_sensor_model *m, const struct emu_sensor_reading *r,
			   const char *name, char *buf, size_t len)
{
	long long v;
	/* The kernel reports power and temperature from the same SMU metrics in whole W and whole degC. */
	if (!strcmp(name, "power1_average"))
		v = m->dies ? emu_w16(r->avg_power_w) * 1000000ll : 0;
	else if (!strcmp(name, "power1_input"))
		v = m->dies ? emu_w16(r->cur_power_w) * 1000000ll : 0;
	else if (!strcmp(name, "temp1_input"))
		v = emu_w16(r->temp_edge_c) * 1000ll;
	else if (!strcmp(name, "temp2_input"))
		v = emu_w16(r->temp_hotspot_c) * 1000ll;
	else if (!strcmp(name, "temp3_input"))
		v = emu_w16(r->temp_mem_c) * 1000ll;
	else if (!strcmp(name, "gpu_busy_percent"))
		v = r->gfx_busy;
	else if (!strcmp(name, "mem_busy_percent"))
		v = r->umc_busy;
	else if (!strcmp(name, "in0_input"))
		v = r->vddgfx_mv;
	else if (!strcmp(name, "freq1_input"))
		v = m->sclk_mhz * 1000000ll;
	else if (!strcmp(name, "freq2_input"))
		v = m->uclk_mhz * 1000000ll;
	else
		return -1;
	return snprintf(buf, len, "%lld\n", v);
}
