/* SPDX-License-Identifier: MIT */
/* The emulated Cray EX pm_counters (craypm.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/common/craypm.h"

/* floor and round to an integer without libm: the shim links no -lm (programs it is preloaded into may not). */
static int64_t ifloor(double x)
{
	int64_t i = (int64_t)x;
	return (double)i > x ? i - 1 : i;
}

static int64_t iround(double x)
{
	return ifloor(x + 0.5);
}

static double env_num(const char *name, double dflt)
{
	const char *e = getenv(name);
	char *end;
	if (!e || !*e)
		return dflt;
	double x = strtod(e, &end);
	return *end || !(x > -1e12 && x < 1e12) ? dflt : x;
}

/* "1.04" or "1.04,1.02,..." into v[0..n): the last value given repeats. */
static int env_list(const char *name, double dflt, double *v, unsigned n, char *err, size_t errlen)
{
	const char *e = getenv(name);
	for (unsigned i = 0; i < n; i++)
		v[i] = dflt;
	if (!e || !*e)
		return 0;
	const char *p = e;
	for (unsigned i = 0; i < n; i++) {
		char *end;
		double x = strtod(p, &end);
		if (end == p || (*end && *end != ',') || !(x > -1e6 && x < 1e6)) {
			snprintf(err, errlen, "%s='%s': not a number or a comma list of numbers", name, e);
			return -1;
		}
		for (unsigned j = i; j < n; j++)
			v[j] = x;
		if (!*end)
			break;
		p = end + 1;
	}
	return 0;
}

int emu_cray_epoch(const char *tree_dir, uint64_t *raw_ns, uint64_t *real_ns)
{
	char path[4096];
	unsigned long long a, b;
	snprintf(path, sizeof(path), "%s/cray-epoch", tree_dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int ok = fscanf(f, "%llu %llu", &a, &b) == 2;
	fclose(f);
	if (!ok)
		return -1;
	*raw_ns = a;
	*real_ns = b;
	return 0;
}

int emu_cray_model_init(const char *spec, uint64_t epoch_raw_ns, uint64_t epoch_real_ns,
			struct emu_cray_model *m, char *err, size_t errlen)
{
	struct emu_gpu_desc d[EMU_MAX_GPUS];
	int n = emu_spec_parse(spec, d, EMU_MAX_GPUS, err, errlen);
	if (n < 0)
		return -1;
	memset(m, 0, sizeof(*m));
	m->epoch_raw_ns = epoch_raw_ns;
	m->epoch_real_ns = epoch_real_ns;
	double us = env_num("SPMTAP_EMU_CRAY_INTERVAL_US", 100000);
	m->interval_ns = us >= 1 ? (uint64_t)(us * 1e3) : 1000;
	/* One accel per card: the primary node of each card measures the whole card. */
	for (int i = 0; i < n && m->naccel < EMU_CRAY_MAX_ACCEL; i++) {
		struct emu_sensor_model sm;
		if (emu_sensor_model_init(spec, (unsigned)i, epoch_raw_ns, &sm, err, errlen))
			return -1;
		if (sm.primary)
			m->accel[m->naccel++] = sm;
	}
	if (env_list("SPMTAP_EMU_CRAY_ACCEL_GAIN", 1.04, m->gain, m->naccel, err, errlen) ||
	    env_list("SPMTAP_EMU_CRAY_ACCEL_OFFSET_W", 18, m->offset_w, m->naccel, err, errlen))
		return -1;
	m->cpu_w = env_num("SPMTAP_EMU_CRAY_CPU_W", 150);
	m->mem_w = env_num("SPMTAP_EMU_CRAY_MEM_W", 40);
	m->other_w = env_num("SPMTAP_EMU_CRAY_OTHER_W", 75);
	if (emu_workload_parse(getenv("SPMTAP_EMU_WORKLOAD"), &m->w, err, errlen))
		return -1;
	return 0;
}

uint64_t emu_cray_index(const struct emu_cray_model *m, uint64_t raw_ns)
{
	return raw_ns > m->epoch_raw_ns ? (raw_ns - m->epoch_raw_ns) / m->interval_ns : 0;
}

/* The card's true energy (what its on-chip counter integrates) at raw t, J from MONOTONIC_RAW 0. */
static double card_energy(const struct emu_cray_model *m, unsigned a, uint64_t t)
{
	struct emu_sensor_truth tr;
	emu_sensor_truth(&m->accel[a], &m->w, t, &tr);
	return tr.sensor_energy_j;
}

void emu_cray_snapshot_at(const struct emu_cray_model *m, uint64_t k, struct emu_cray_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	uint64_t t = m->epoch_raw_ns + k * m->interval_ns, tp = t - m->interval_ns;
	double since = (double)(t - m->epoch_raw_ns) * 1e-9, iv = (double)m->interval_ns * 1e-9;
	s->k = k;
	s->t_raw_ns = t;
	s->timestamp_us = (m->epoch_real_ns + (t - m->epoch_raw_ns)) / 1000;
	double acc_e = 0, acc_p = 0;
	for (unsigned a = 0; a < m->naccel; a++) {
		double e0 = card_energy(m, a, m->epoch_raw_ns), e1 = card_energy(m, a, t), ep = card_energy(m, a, tp);
		double e = m->gain[a] * (e1 - e0) + m->offset_w[a] * since;
		double p = m->gain[a] * (e1 - ep) / iv + m->offset_w[a];
		s->card_energy_j[a] = e1 - e0;
		s->card_mean_power_w[a] = (e1 - ep) / iv;
		s->accel_n_energy_exact_j[a] = e;
		s->accel_n_energy_j[a] = ifloor(e);
		s->accel_n_power_w[a] = iround(p);
		acc_e += e;
		acc_p += p;
	}
	s->accel_energy_j = ifloor(acc_e);
	s->accel_power_w = iround(acc_p);
	s->cpu_energy_j = ifloor(m->cpu_w * since);
	s->cpu_power_w = iround(m->cpu_w);
	s->mem_energy_j = ifloor(m->mem_w * since);
	s->mem_power_w = iround(m->mem_w);
	double rest = m->cpu_w + m->mem_w + m->other_w;
	s->energy_j = ifloor(acc_e + rest * since);
	s->power_w = iround(acc_p + rest);
}

static const char *const node_names[EMU_CRAY_F_ACCEL] = {
	"power", "energy", "cpu_power", "cpu_energy", "memory_power", "memory_energy", "accel_power",
	"accel_energy", "freshness", "generation", "startup", "version", "power_cap", "raw_scan_hz",
};

const char *emu_cray_file_name(unsigned i, unsigned naccel, char *buf, size_t len)
{
	if (i < EMU_CRAY_F_ACCEL)
		return node_names[i];
	if (i >= EMU_CRAY_NFILES(naccel))
		return NULL;
	unsigned a = (i - EMU_CRAY_F_ACCEL) / 2;
	snprintf(buf, len, "accel%u_%s", a, (i - EMU_CRAY_F_ACCEL) % 2 ? "energy" : "power");
	return buf;
}

int emu_cray_file_index(const char *name, unsigned naccel)
{
	char b[32];
	for (unsigned i = 0; i < EMU_CRAY_NFILES(naccel); i++)
		if (!strcmp(emu_cray_file_name(i, naccel, b, sizeof(b)), name))
			return (int)i;
	return -1;
}

int emu_cray_render(const struct emu_cray_model *m, const struct emu_cray_snapshot *s, unsigned i, char *buf,
		    size_t len)
{
	int64_t v;
	char unit = 'W';
	switch (i) {
	case EMU_CRAY_F_POWER: v = s->power_w; break;
	case EMU_CRAY_F_ENERGY: v = s->energy_j, unit = 'J'; break;
	case EMU_CRAY_F_CPU_POWER: v = s->cpu_power_w; break;
	case EMU_CRAY_F_CPU_ENERGY: v = s->cpu_energy_j, unit = 'J'; break;
	case EMU_CRAY_F_MEM_POWER: v = s->mem_power_w; break;
	case EMU_CRAY_F_MEM_ENERGY: v = s->mem_energy_j, unit = 'J'; break;
	case EMU_CRAY_F_ACCEL_POWER: v = s->accel_power_w; break;
	case EMU_CRAY_F_ACCEL_ENERGY: v = s->accel_energy_j, unit = 'J'; break;
	case EMU_CRAY_F_POWER_CAP: v = 0; break; /* uncapped */
	/* Bare integers [R]: freshness counts snapshots; generation counts power-cap changes (none here). */
	case EMU_CRAY_F_FRESHNESS: return snprintf(buf, len, "%llu\n", (unsigned long long)s->k);
	case EMU_CRAY_F_GENERATION: return snprintf(buf, len, "0\n");
	case EMU_CRAY_F_STARTUP: return snprintf(buf, len, "%llu\n", (unsigned long long)(m->epoch_real_ns / 1000));
	case EMU_CRAY_F_VERSION: return snprintf(buf, len, "2\n");
	case EMU_CRAY_F_RAW_SCAN_HZ:
		return snprintf(buf, len, "%llu\n", (unsigned long long)iround(1e9 / (double)m->interval_ns));
	default:
		if (i >= EMU_CRAY_NFILES(m->naccel))
			return -1;
		unsigned a = (i - EMU_CRAY_F_ACCEL) / 2;
		if ((i - EMU_CRAY_F_ACCEL) % 2)
			v = s->accel_n_energy_j[a], unit = 'J';
		else
			v = s->accel_n_power_w[a];
		break;
	}
	return snprintf(buf, len, "%lld %c %llu us\n", (long long)v, unit, (unsigned long long)s->timestamp_us);
}

int emu_cray_truth_line(const struct emu_cray_model *m, const struct emu_cray_snapshot *s, char *buf,
			size_t len)
{
	int n = snprintf(buf, len,
			 "{\"k\":%llu,\"t_raw_ns\":%llu,\"timestamp_us\":%llu,\"power\":%lld,\"energy\":%lld,"
			 "\"cpu_power\":%lld,\"cpu_energy\":%lld,\"memory_power\":%lld,\"memory_energy\":%lld,"
			 "\"accel_power\":%lld,\"accel_energy\":%lld,\"accel\":[",
			 (unsigned long long)s->k, (unsigned long long)s->t_raw_ns, (unsigned long long)s->timestamp_us,
			 (long long)s->power_w, (long long)s->energy_j, (long long)s->cpu_power_w,
			 (long long)s->cpu_energy_j, (long long)s->mem_power_w, (long long)s->mem_energy_j,
			 (long long)s->accel_power_w, (long long)s->accel_energy_j);
	for (unsigned a = 0; a < m->naccel && n > 0 && (size_t)n < len; a++)
		n += snprintf(buf + n, len - (size_t)n,
			      "%s{\"gpu\":%u,\"power\":%lld,\"energy\":%lld,\"energy_exact_j\":%.6f,"
			      "\"card_energy_j\":%.6f,\"card_mean_power_w\":%.6f,\"gain\":%.9g,\"offset_w\":%.9g}",
			      a ? "," : "", m->accel[a].gpu_index, (long long)s->accel_n_power_w[a],
			      (long long)s->accel_n_energy_j[a], s->accel_n_energy_exact_j[a], s->card_energy_j[a],
			      s->card_mean_power_w[a], m->gain[a], m->offset_w[a]);
	if (n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "]}\n");
	return n > 0 && (size_t)n < len ? n : -1;
}
