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

/*
 * exp(x) without libm (the shim links no libm): x = k ln 2 + r with
 * |r| <= ln 2 / 2, Taylor to r^13 (error < 1e-17), 2^k written into the
 * exponent bits.  A read evaluates a few dozen of these.
 */
static double emu_exp(double x)
{
	if (x < -700)
		return 0.0;
	if (x > 700)
		x = 700;
	const double ln2_hi = 0.693147180369123816490, ln2_lo = 1.90821492927058770002e-10;
	long k = (long)(x * 1.4426950408889634 + (x < 0 ? -0.5 : 0.5));
	double r = (x - (double)k * ln2_hi) - (double)k * ln2_lo, term = 1.0, sum = 1.0;
	for (int i = 1; i <= 13; i++) {
		term *= r / i;
		sum += term;
	}
	union {
		double d;
		uint64_t u;
	} two_k = { .u = (uint64_t)(k + 1023) << 52 };
	return sum * two_k.d;
}

/* A non-negative number from the environment: 1 and *v if set and valid, else 0. */
static int emu_env_opt(const char *name, double *v)
{
	const char *e = getenv(name);
	char *end;
	if (!e || !*e)
		return 0;
	double x = strtod(e, &end);
	if (*end || !(x >= 0 && x < 1e12))
		return 0;
	*v = x;
	return 1;
}

static double emu_env_num(const char *name, double dflt)
{
	double v;
	return emu_env_opt(name, &v) ? v : dflt;
}

#define EMU_LN9 2.1972245773362196      /* 10 -> 90 % of a first-order step takes tau ln 9 */
#define EMU_LN10_9 0.10536051565782628  /* 0 -> 10 % takes tau ln(10/9) */

/*
 * One signal's response from SPMTAP_EMU_SENSOR_<sig>_*.  RISE and FALL
 * default to TAU ln 9, so the older TAU knob keeps its meaning.  DELAY is
 * the 10 % time; unset, it is `dead_ms` of dead time plus the slower
 * direction's 0 -> 10 % time, which with the defaults is exactly the
 * earlier model (a dead time of 10 ms / 1 ms before a 100 ms / 5 ms filter).
 */
static void emu_response_init(struct emu_sensor_response *r, const char *sig, double tau_ms, double dead_ms)
{
	char k[64];
	double v;
	snprintf(k, sizeof(k), "SPMTAP_EMU_SENSOR_%s_TAU_MS", sig);
	double tau = emu_env_num(k, tau_ms) * 1e6;
	snprintf(k, sizeof(k), "SPMTAP_EMU_SENSOR_%s_RISE_MS", sig);
	r->rise_ns = emu_env_opt(k, &v) ? v * 1e6 : tau * EMU_LN9;
	snprintf(k, sizeof(k), "SPMTAP_EMU_SENSOR_%s_FALL_MS", sig);
	r->fall_ns = emu_env_opt(k, &v) ? v * 1e6 : tau * EMU_LN9;
	r->tau_up_ns = r->rise_ns / EMU_LN9;
	r->tau_down_ns = r->fall_ns / EMU_LN9;
	double slow = r->tau_up_ns > r->tau_down_ns ? r->tau_up_ns : r->tau_down_ns;
	snprintf(k, sizeof(k), "SPMTAP_EMU_SENSOR_%s_DELAY_MS", sig);
	r->delay_ns = emu_env_opt(k, &v) ? v * 1e6 : dead_ms * 1e6 + slow * EMU_LN10_9;
	/* A delay shorter than the filter's own 10 % time cannot be met: no dead time, and the figures say so. */
	r->dead_up_ns = r->delay_ns - r->tau_up_ns * EMU_LN10_9;
	r->dead_down_ns = r->delay_ns - r->tau_down_ns * EMU_LN10_9;
	if (r->dead_up_ns < 0)
		r->dead_up_ns = 0;
	if (r->dead_down_ns < 0)
		r->dead_down_ns = 0;
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
	emu_response_init(&m->avg, "AVG", 100, 10);
	emu_response_init(&m->cur, "CUR", 5, 1);
	m->energy_delay_ns = emu_env_num("SPMTAP_EMU_SENSOR_ENERGY_DELAY_MS", 0) * 1e6;
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

/* The activity the power model sees at t, and its integral from 0 (s): the workload's unless kernels say. */
static double emu_power_act(const struct emu_sensor_model *m, const struct emu_workload *w, uint64_t t_ns)
{
	return m->kernels ? m->kernels->activity(m->kernels->ctx, t_ns) : emu_workload_activity(w, t_ns);
}

static double emu_power_int(const struct emu_sensor_model *m, const struct emu_workload *w, uint64_t t_ns)
{
	return m->kernels ? m->kernels->integral(m->kernels->ctx, t_ns) : emu_workload_integral(w, t_ns);
}

/* Sensor energy in J from t = 0: dies x ((idle + offset) t + (max - idle) A(t)). */
static double emu_sensor_energy(const struct emu_sensor_model *m, const struct emu_workload *w, uint64_t t_ns)
{
	if (!m->dies)
		return 0.0;
	return m->dies * ((m->idle_w + m->offset_w) * (double)t_ns * 1e-9 +
			  (m->max_w - m->idle_w) * emu_power_int(m, w, t_ns));
}

void emu_sensor_truth(const struct emu_sensor_model *m, const struct emu_workload *w, uint64_t t_ns,
		      struct emu_sensor_truth *out)
{
	double a = emu_power_act(m, w, t_ns);
	double A = emu_power_int(m, w, t_ns);
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
 * The filter input, the sensor's true power, as one period of a periodic
 * piecewise-constant wave: edges at offsets at[i] in [0, period), power
 * v[i] from each edge to the next.  Square and bursts are exact (their
 * edges measured from a(t) itself, to the ns); a ramp becomes steps of one
 * update interval (at most EMU_WAVE_MAX per period: with the evaluation's
 * arrays about 17 KB of the reading thread's stack) at their mean power.
 * period 0: constant v[0].
 */
#define EMU_WAVE_MAX 256

struct emu_wave {
	uint64_t period_ns;
	int n;
	uint64_t at[EMU_WAVE_MAX];
	double v[EMU_WAVE_MAX];
};

/* The wave of one die's power (the sensor's is `dies` times it: the response scales with its input). */
static void emu_wave_of(const struct emu_sensor_model *m, const struct emu_workload *w, struct emu_wave *wv)
{
	double p0 = m->idle_w + m->offset_w, span = m->max_w - m->idle_w;
	uint64_t p = 0;
	memset(wv, 0, sizeof(*wv));
	wv->v[0] = p0 + span * emu_workload_activity(w, 0);
	if (w->kind == EMU_WL_SQUARE)
		p = (uint64_t)(w->period_ms * 1e6);
	else if (w->kind == EMU_WL_BURSTS)
		p = (uint64_t)(w->every_ms * 1e6);
	if (p > 1) {
		uint64_t on = emu_workload_first_change(w, p);
		if (on < p) {
			wv->period_ns = p;
			wv->n = 2;
			wv->at[1] = on;
			wv->v[1] = p0 + span * emu_workload_activity(w, on);
		}
		return;
	}
	if (w->kind != EMU_WL_RAMP || (p = (uint64_t)(w->period_ms * 1e6)) < 2 * m->update_ns) {
		if (w->kind == EMU_WL_RAMP)
			wv->v[0] = p0 + span * 0.5; /* a ramp faster than the updates: its mean */
		return;
	}
	uint64_t n = p / m->update_ns;
	n = n > EMU_WAVE_MAX ? EMU_WAVE_MAX : n;
	wv->period_ns = p;
	wv->n = (int)n;
	for (uint64_t i = 0; i < n; i++) {
		/* i p / n without overflowing 64 bits */
		wv->at[i] = p / n * i + p % n * i / n;
		uint64_t end = i + 1 < n ? p / n * (i + 1) + p % n * (i + 1) / n : p;
		wv->v[i] = p0 + span * 0.5 * (double)(wv->at[i] + end) / (double)p; /* a(t) = t / p: the step's mean */
	}
}

/* One stretch of constant delayed input z, and the decay factors over it per direction. */
struct emu_seg {
	double z, k_up, k_down;
};

/* The output after one period from y at its start: piecewise exact first-order steps. */
static double emu_period_map(const struct emu_seg *sg, int n, double y)
{
	for (int i = 0; i < n; i++) {
		double z = sg[i].z;
		if (z > y)
			y = z + (y - z) * sg[i].k_up;
		else if (z < y)
			y = z + (y - z) * sg[i].k_down;
	}
	return y;
}

/*
 * Edge indices by age, oldest first, in O(n): edges that share a dead time
 * (one class per direction) are in offset order, so their ages fall along
 * the index but for one wrap; each class is read from its oldest edge
 * round, and the two runs are merged.
 */
static void emu_oldest_first(const double *age, int cls[2][EMU_WAVE_MAX], const int ncls[2], int *ord)
{
	int pos[2] = { 0, 0 }, left[2] = { ncls[0], ncls[1] }, k = 0;
	for (int c = 0; c < 2; c++)
		for (int j = 1; j < ncls[c]; j++)
			if (age[cls[c][j]] > age[cls[c][pos[c]]])
				pos[c] = j;
	while (left[0] || left[1]) {
		int c = !left[0] || (left[1] && age[cls[1][pos[1]]] > age[cls[0][pos[0]]]);
		ord[k++] = cls[c][pos[c]];
		left[c]--;
		if (++pos[c] == ncls[c])
			pos[c] = 0;
	}
}

/*
 * The response y(t) to wave wv, in periodic steady state (the workload is
 * a function of time since boot, so it has always run):
 *
 *   z(t): the input with each rising edge delayed by dead_up and each
 *         falling one by dead_down; where delayed edges overtake each
 *         other the later original edge wins (a short pulse can vanish);
 *   dy/dt = (z - y) / (z > y ? tau_up : tau_down).
 *
 * Over one period before t, z is a few constant stretches, on each of
 * which y moves exactly (exponentially, never past z); y(t) is the fixed
 * point of that period's map, found by regula falsi (Illinois) on
 * [min v, max v].  For a two-level wave the map is affine and the first
 * step lands on it.  No history to sum and no time step: exact to
 * rounding, and a few dozen flops for a square wave.
 */
static double emu_respond(const struct emu_wave *wv, double tau_up, double tau_down, double dead_up,
			  double dead_down, uint64_t t)
{
	if (!wv->period_ns || wv->n < 2)
		return wv->v[0];
	const uint64_t p = wv->period_ns;
	const double pd = (double)p;
	int n = wv->n;
	double age[EMU_WAVE_MAX], dly[EMU_WAVE_MAX];
	int ord[EMU_WAVE_MAX], cls[2][EMU_WAVE_MAX], ncls[2] = { 0, 0 };
	double lo = wv->v[0], hi = wv->v[0];
	/* whole ns of the dead times and t, modulo p, once: 64-bit divisions are most of the cost of a ramp */
	const uint64_t tp = t % p, du = (uint64_t)dead_up, dd = (uint64_t)dead_down, dmod[2] = { dd % p, du % p };
	const double frac[2] = { dead_down - (double)dd, dead_up - (double)du };
	for (int i = 0; i < n; i++) {
		double prev = wv->v[(i + n - 1) % n];
		int c = wv->v[i] > prev;
		dly[i] = c ? dead_up : dead_down;
		/* age at t of edge i's latest delayed occurrence, in [0, p): integer ns first, then the fraction */
		uint64_t x = wv->at[i] + dmod[c];
		x = x >= p ? x - p : x;
		uint64_t back = tp >= x ? tp - x : tp + p - x;
		age[i] = (double)back - frac[c];
		if (age[i] < 0)
			age[i] += pd;
		lo = wv->v[i] < lo ? wv->v[i] : lo;
		hi = wv->v[i] > hi ? wv->v[i] : hi;
		cls[c][ncls[c]++] = i;
	}
	emu_oldest_first(age, cls, ncls, ord);
	/*
	 * z on each stretch: the edge whose original time is latest among those
	 * whose delayed time has passed.  At the window start that is each
	 * edge's occurrence a period back; passing an edge's delayed time makes
	 * its original age a period younger, so the minimum only ever moves to
	 * the edge just passed.
	 */
	int best = 0;
	double best_age = age[0] + pd + dly[0];
	for (int i = 1; i < n; i++)
		if (age[i] + pd + dly[i] < best_age)
			best = i, best_age = age[i] + pd + dly[i];
	struct emu_seg sg[EMU_WAVE_MAX + 1];
	int ns = 0;
	double a_hi = pd, last_d = -1, last_up = 0, last_down = 0; /* a ramp's stretches are mostly alike */
	for (int k = 0; k <= n; k++) {
		double a_lo = k < n ? age[ord[k]] : 0.0;
		if (k > 0 && age[ord[k - 1]] + dly[ord[k - 1]] < best_age)
			best = ord[k - 1], best_age = age[ord[k - 1]] + dly[ord[k - 1]];
		if (a_hi - a_lo > 0) {
			double d = a_hi - a_lo;
			if (d - last_d > 1e-3 || last_d - d > 1e-3) { /* a ps either way changes e^(-d/tau) by < 1e-9 */
				last_d = d;
				last_up = tau_up > 0 ? emu_exp(-d / tau_up) : 0.0;
				last_down = tau_down > 0 ? emu_exp(-d / tau_down) : 0.0;
			}
			sg[ns].z = wv->v[best];
			sg[ns].k_up = last_up;
			sg[ns].k_down = last_down;
			ns++;
		}
		a_hi = a_lo < a_hi ? a_lo : a_hi;
	}
	double a = lo, b = hi;
	double ga = emu_period_map(sg, ns, a) - a, gb = emu_period_map(sg, ns, b) - b;
	if (!(ga > 0))
		return a;
	if (!(gb < 0))
		return b;
	double tol = 1e-12 * (hi - lo), c = a;
	int side = 0;
	for (int it = 0; it < 200 && b - a > tol; it++) {
		c = (a * gb - b * ga) / (gb - ga);
		double fc = emu_period_map(sg, ns, c);
		double gc = fc - c;
		if (gc <= tol && gc >= -tol)
			return fc; /* one more period from near the fixed point is nearer still */
		if (gc > 0) {
			a = c, ga = gc;
			if (side > 0)
				gb *= 0.5;
			side = 1;
		} else {
			b = c, gb = gc;
			if (side < 0)
				ga *= 0.5;
			side = -1;
		}
	}
	return c;
}

/* The sensor's response with one time constant and one dead time, as before the asymmetric model. */
double emu_sensor_filtered_power(const struct emu_sensor_model *m, const struct emu_workload *w, uint64_t t_ns,
				 double tau_ns, double delay_ns)
{
	if (!m->dies)
		return 0.0;
	struct emu_wave wv;
	emu_wave_of(m, w, &wv);
	return m->dies * emu_respond(&wv, tau_ns, tau_ns, delay_ns, delay_ns, t_ns);
}

static double emu_signal_of_wave(const struct emu_sensor_model *m, const struct emu_workload *w,
				 const struct emu_wave *wv, enum emu_sensor_signal sig, uint64_t t)
{
	if (!m->dies)
		return 0.0;
	if (sig == EMU_SIG_ENERGY) {
		/* what dE/dt between consecutive distinct tables shows: the mean over their spacing, delayed */
		struct emu_sensor_figures f;
		emu_sensor_figures_of(m, EMU_SIG_ENERGY, &f);
		uint64_t d = (uint64_t)m->energy_delay_ns, u = (uint64_t)(f.sample_ms * 1e6 + 0.5);
		uint64_t e = t > d ? t - d : 0, s = e > u ? e - u : 0;
		if (e <= s)
			return m->dies * wv->v[0];
		return (emu_sensor_energy(m, w, e) - emu_sensor_energy(m, w, s)) / ((double)(e - s) * 1e-9);
	}
	const struct emu_sensor_response *r = sig == EMU_SIG_AVG ? &m->avg : &m->cur;
	return m->dies * emu_respond(wv, r->tau_up_ns, r->tau_down_ns, r->dead_up_ns, r->dead_down_ns, t);
}

double emu_sensor_signal_w(const struct emu_sensor_model *m, const struct emu_workload *w,
			   enum emu_sensor_signal sig, uint64_t t_ns)
{
	struct emu_wave wv;
	emu_wave_of(m, w, &wv);
	return emu_signal_of_wave(m, w, &wv, sig, t_ns);
}

void emu_sensor_figures_of(const struct emu_sensor_model *m, enum emu_sensor_signal sig,
			   struct emu_sensor_figures *f)
{
	memset(f, 0, sizeof(*f));
	double u = (double)m->update_ns;
	f->update_ms = u * 1e-6;
	/* Distinct tables: every update, or with a wider cache window C every floor/ceil(C/U) updates. */
	f->sample_ms = f->update_ms;
	if (m->cache_ns > m->update_ns) {
		uint64_t q = m->cache_ns / m->update_ns, r = m->cache_ns % m->update_ns;
		double fr = (double)r / u;
		f->sample_ms = f->update_ms * (fr > 0.5 ? (double)q + 1 : fr < 0.5 ? (double)q : (double)q + 0.5);
	}
	if (sig == EMU_SIG_ENERGY) {
		/* a boxcar as wide as the spacing of the tables, after the delay: a linear ramp over it */
		f->delay_up_ms = f->delay_down_ms = m->energy_delay_ns * 1e-6 + 0.1 * f->sample_ms;
		f->rise_ms = f->fall_ms = 0.8 * f->sample_ms;
	} else {
		const struct emu_sensor_response *r = sig == EMU_SIG_AVG ? &m->avg : &m->cur;
		f->delay_up_ms = (r->dead_up_ns + r->tau_up_ns * EMU_LN10_9) * 1e-6;
		f->delay_down_ms = (r->dead_down_ns + r->tau_down_ns * EMU_LN10_9) * 1e-6;
		f->rise_ms = r->rise_ns * 1e-6;
		f->fall_ms = r->fall_ns * 1e-6;
	}
	f->delay_ms = 0.5 * (f->delay_up_ms + f->delay_down_ms);
}

/* The counter before glitches at sample time s: the energy up to s - ENERGY_DELAY, in ticks. */
static uint64_t emu_counter_ticks(const struct emu_sensor_model *m, const struct emu_workload *w, uint64_t s)
{
	if (!m->dies)
		return 0;
	uint64_t d = (uint64_t)m->energy_delay_ns;
	return m->energy_base_ticks + (uint64_t)(emu_sensor_energy(m, w, s > d ? s - d : 0) * EMU_ENERGY_TICKS_PER_J);
}

/* The energy counter at sample time s with glitches 0..upto-1 applied. */
static uint64_t emu_glitched_ticks(const struct emu_sensor_model *m, const struct emu_workload *w, uint64_t s,
				   int upto)
{
	if (!m->dies)
		return 0;
	uint64_t now = emu_counter_ticks(m, w, s), v = now;
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
			v = now - emu_counter_ticks(m, w, at - at % m->update_ns);
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
	struct emu_wave wv;
	emu_wave_of(m, w, &wv);
	r->avg_power_w = emu_signal_of_wave(m, w, &wv, EMU_SIG_AVG, s);
	r->cur_power_w = emu_signal_of_wave(m, w, &wv, EMU_SIG_CUR, s);
	/* Temperature follows the die's power (the second GCD heats too), slowly. */
	double pf = emu_respond(&wv, m->temp_tau_ns, m->temp_tau_ns, 0, 0, s);
	r->temp_edge_c = 25.0 + 0.10 * pf;
	r->temp_hotspot_c = r->temp_edge_c + 0.06 * pf;
	r->temp_mem_c = r->temp_edge_c + 0.04 * pf;
	/* Activity: the mean over the last update interval, as a busy counter would give. */
	double A1 = emu_power_int(m, w, s);
	double A0 = s >= m->update_ns ? emu_power_int(m, w, s - m->update_ns) : 0.0;
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
