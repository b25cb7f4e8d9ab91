/* SPDX-License-Identifier: MIT */
/* Synthetic node recordings of one job (synjob.h). */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "collector/lib/writer.h"
#include "synjob.h"

#define CHUNK 4096u

int64_t synjob_origin(unsigned k)
{
	/* each node booted at its own time: rank 0's origin is the reference itself */
	return k ? 100000000000ll + (int64_t)k * 3200000000ll + (int64_t)k * 123457 : SYNJOB_T0;
}

int64_t synjob_off0(unsigned k)
{
	return SYNJOB_T0 - synjob_origin(k);
}

double synjob_drift(unsigned k)
{
	/* -75 .. +75 ppm: far more than NTP leaves, so a held offset would be visibly wrong */
	return k ? ((double)(k % 7) - 3.0) * 25e-6 : 0.0;
}

int64_t synjob_bound(unsigned k)
{
	return k ? 1500 + 100 * (int64_t)k : 0;
}

/* The true reference time of local time l on node k (real-valued). */
static double ref_of(unsigned k, int64_t l)
{
	return (double)SYNJOB_T0 + (double)(l - synjob_origin(k)) * (1.0 + synjob_drift(k));
}

static int64_t local_of(unsigned k, double ref)
{
	return synjob_origin(k) + llround((ref - (double)SYNJOB_T0) / (1.0 + synjob_drift(k)));
}

static unsigned phase_at(const struct synjob *j, double ref)
{
	double len = j->seconds * 1e9 / j->phases;
	double p = floor((ref - (double)SYNJOB_T0) / len);
	if (p < 0)
		p = 0;
	if (p >= j->phases)
		p = j->phases - 1;
	return (unsigned)p;
}

struct wset {
	const struct writer_ops *ops[2];
	struct writer *w[2];
	int n;
};

static int ws_call_begin(struct wset *ws, const struct series_stream *s, char *err, size_t el)
{
	for (int i = 0; i < ws->n; i++)
		if (ws->ops[i]->begin(ws->w[i], s, err, el))
			return -1;
	return 0;
}

static int ws_write(struct wset *ws, const struct series_chunk *c, char *err, size_t el)
{
	for (int i = 0; i < ws->n; i++)
		if (ws->ops[i]->write(ws->w[i], c, err, el))
			return -1;
	return 0;
}

static int ws_slice(struct wset *ws, const struct series_slice *s, char *err, size_t el)
{
	for (int i = 0; i < ws->n; i++)
		if (ws->ops[i]->slice(ws->w[i], s, err, el))
			return -1;
	return 0;
}

unsigned synjob_ndisp(unsigned k)
{
	return k % 2 ? 0 : 12 + 3 * k;
}

const char *synjob_kname(unsigned i)
{
	/* a comma and a quote: the CSV's quoting on the way (docs/formats/kernels-csv.md) */
	static const char *const names[] = { "gemm_f32", "reduce<int, 4>", "copy \"fast\"" };
	return names[i % 3];
}

/* rec_kernels.csv as the session writes it (session_kernels.c), a quoted name where it needs one. */
static int kernels_csv(const char *base, const struct series_dispatch *d, size_t n)
{
	char p[PATH_MAX + 32];
	snprintf(p, sizeof(p), "%s_kernels.csv", base);
	FILE *f = fopen(p, "w");
	if (!f)
		return -1;
	fputs("corr_id,pid,tid,queue_id,packet_index,kernel,grid_x,grid_y,grid_z,wg_x,wg_y,wg_z,"
	      "start_ns,end_ns,start_ticks,end_ticks,status,gpu\n", f);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%llu,%u,%u,%llu,%llu,\"", (unsigned long long)d[i].corr_id, d[i].pid, d[i].tid,
			(unsigned long long)d[i].queue_id, (unsigned long long)d[i].packet_index);
		for (const char *c = d[i].kernel; *c; c++)
			fprintf(f, "%s%c", *c == '"' ? "\"" : "", *c);
		fprintf(f, "\",%u,%u,%u,%u,%u,%u,", d[i].grid[0], d[i].grid[1], d[i].grid[2], d[i].wg[0], d[i].wg[1],
			d[i].wg[2]);
		if (d[i].start_ns >= 0)
			fprintf(f, "%lld,%lld,", (long long)d[i].start_ns, (long long)d[i].end_ns);
		else
			fputs(",,", f);
		fprintf(f, "%llu,%llu,%d,%d\n", (unsigned long long)d[i].start_ticks,
			(unsigned long long)d[i].end_ticks, d[i].status, d[i].gpu);
	}
	return fclose(f) ? -1 : 0;
}

static json_t *columns(const char *a, const char *ua, const char *b, const char *ub)
{
	return json_pack("[{s:s,s:s},{s:s,s:s}]", "name", a, "unit", ua, "name", b, "unit", ub);
}

static int make_node(const struct synjob *j, unsigned k, json_t *tnodes)
{
	char dir[PATH_MAX], base[PATH_MAX + 8], err[512] = "", host[32];
	snprintf(dir, sizeof(dir), "%s/node%u", j->dir, k);
	snprintf(base, sizeof(base), "%s/rec", dir);
	snprintf(host, sizeof(host), "node%u", k);
	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "synjob: %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	int64_t origin = synjob_origin(k);
	double spm_period = 1e9 / j->spm_hz, smi_period = 1e9 / j->smi_hz;
	/* sensors from half a period before the job's start to half after its end: energy is known at every edge */
	uint64_t n_spm = (uint64_t)(j->seconds * j->spm_hz), n_smi = (uint64_t)(j->seconds * j->smi_hz) + 2;

	/* the job object: offsets at start, four sync points, the end (JOB.md §3) */
	json_t *offs = json_array();
	for (int e = 0; e <= 4; e++) {
		int64_t l = origin + (int64_t)llround(e * j->seconds * 1e9 / 4);
		int64_t off = llround(ref_of(k, l) - (double)l);
		json_array_append_new(offs, json_pack("{s:I,s:I,s:I,s:I}", "local_ns", (json_int_t)l, "offset_ns",
						      (json_int_t)off, "bound_ns", (json_int_t)synjob_bound(k),
						      "rtt_ns", (json_int_t)(2 * synjob_bound(k))));
	}
	json_t *job = json_pack("{s:I,s:I,s:s,s:s,s:s,s:{s:s,s:i,s:s,s:i,s:o}}", "rank", (json_int_t)k, "size",
				(json_int_t)j->nodes, "hostname", host, "launcher", "mpirun", "job_id", "synjob-1",
				"clock", "clock", "CLOCK_BOOTTIME", "reference_rank", 0, "method",
				"mpi-min-rtt-pingpong", "rounds", 20, "offsets", offs);
	json_t *streams = json_pack("[{s:s,s:i,s:i,s:s,s:o,s:I},{s:s,s:i,s:i,s:s,s:o,s:I}]", "source", "spm", "gpu", 0,
				    "xcc", 0, "tick_domain", "spm_ticks", "columns",
				    columns("SQ_WAVES", "count", "SQ_CYCLES", "count"), "rows", (json_int_t)n_spm,
				    "source", "smi", "gpu", 0, "xcc", -1, "tick_domain", "smu_10ns", "columns",
				    columns("energy", "J", "power_avg", "W"), "rows", (json_int_t)n_smi);
	json_t *extra = json_pack("{s:o,s:[{s:i,s:i,s:s,s:s,s:i}],s:b}", "streams", streams, "devices", "gpu", 0,
				  "gpu_id", 1000 + (int)k, "name", "AMD Instinct MI300A (synthetic)", "gfx", "gfx942",
				  "num_xcc", 1, "emulated", 1);
	json_t *files = json_object();
	if (j->csv) {
		json_object_set_new(files, "spm", json_string("rec_spm.csv"));
		json_object_set_new(files, "smi", json_string("rec_smi.csv"));
		json_object_set_new(files, "phases", json_string("rec_phases.csv"));
	}
	if (j->sqlite)
		json_object_set_new(files, "sqlite", json_string("rec.db"));
	json_object_set_new(files, "meta", json_string("rec_meta.json"));
	json_t *meta = json_pack("{s:b,s:s,s:s,s:s,s:s,s:I,s:f,s:O,s:o}", "complete", 1, "time_base",
				 "CLOCK_BOOTTIME ns", "spmtap_version", "synjob", "command_line", "synjob (tests/lib/synjob.c)",
				 "hostname", host, "start_boottime_ns", (json_int_t)origin, "spm_clock_hz", 1e8, "extra",
				 extra, "files", files);
	if ((int)k != j->no_job_node)
		json_object_set_new(meta, "job", job);
	else
		json_decref(job);

	char *extra_text = json_dumps(extra, JSON_COMPACT | JSON_SORT_KEYS);
	struct writer_meta wm = { .spmtap_version = "synjob", .command_line = "synjob", .hostname = host,
				  .start_boottime_ns = origin, .spm_clock_hz = 1e8, .extra_json = extra_text };
	struct wset ws = { 0 };
	int rc = 0;
	if (j->csv) {
		char p[PATH_MAX + 16];
		snprintf(p, sizeof(p), "%s.csv", base);
		ws.ops[ws.n] = &writer_csv;
		rc = writer_csv.open(&ws.w[ws.n], p, &wm, err, sizeof(err));
		ws.n += !rc;
	}
	if (!rc && j->sqlite) {
		char p[PATH_MAX + 16];
		snprintf(p, sizeof(p), "%s.db", base);
		ws.ops[ws.n] = &writer_sqlite;
		rc = writer_sqlite.open(&ws.w[ws.n], p, &wm, err, sizeof(err));
		ws.n += !rc;
	}
	static const struct series_column spm_cols[] = { { "SQ_WAVES", "count", SERIES_U64 },
							 { "SQ_CYCLES", "count", SERIES_U64 } };
	static const struct series_column smi_cols[] = { { "energy", "J", SERIES_F64 },
							 { "power_avg", "W", SERIES_F64 } };
	struct series_stream spm = { .id = 1, .source = "spm", .gpu = 0, .gpu_id = 1000 + k, .xcc = 0,
				     .device_name = "AMD Instinct MI300A (synthetic)", .tick_domain = "spm_ticks",
				     .ncols = 2, .cols = spm_cols };
	struct series_stream smi = { .id = 2, .source = "smi", .gpu = 0, .gpu_id = 1000 + k, .xcc = -1,
				     .device_name = "AMD Instinct MI300A (synthetic)", .tick_domain = "smu_10ns",
				     .ncols = 2, .cols = smi_cols };
	if (!rc)
		rc = ws_call_begin(&ws, &spm, err, sizeof(err)) || ws_call_begin(&ws, &smi, err, sizeof(err));

	static int64_t host_ns[CHUNK];
	static uint64_t ticks[CHUNK], u0[CHUNK], u1[CHUNK];
	static double d0[CHUNK], d1[CHUNK];
	uint64_t sum_waves = 0, sum_cycles = 0;
	for (uint64_t i = 0; !rc && i < n_spm;) {
		uint32_t n = 0;
		for (; n < CHUNK && i < n_spm; n++, i++) {
			int64_t l = origin + (int64_t)llround((double)i * spm_period);
			host_ns[n] = l;
			ticks[n] = 1000000000ull + (uint64_t)(l - origin) / 10;
			u0[n] = 100ull * (phase_at(j, ref_of(k, l)) + 1) + k;
			u1[n] = i;
			sum_waves += u0[n];
			sum_cycles += u1[n];
		}
		const void *v[2] = { u0, u1 };
		struct series_chunk c = { .stream = &spm, .n = n, .host_ns = host_ns, .ticks = ticks, .values = v };
		rc = ws_write(&ws, &c, err, sizeof(err));
	}
	double energy = 1000.0 * (k + 1), sum_power = 0;
	for (uint64_t i = 0; !rc && i < n_smi;) {
		uint32_t n = 0;
		for (; n < CHUNK && i < n_smi; n++, i++) {
			int64_t l = origin + (int64_t)llround(((double)i - 0.5) * smi_period);
			host_ns[n] = l;
			ticks[n] = (uint64_t)l / 10;
			d1[n] = 50.0 + 10.0 * phase_at(j, ref_of(k, l)) + k;
			energy += d1[n] * smi_period * 1e-9;
			d0[n] = energy;
			sum_power += d1[n];
		}
		const void *v[2] = { d0, d1 };
		struct series_chunk c = { .stream = &smi, .n = n, .host_ns = host_ns, .ticks = ticks, .values = v };
		rc = ws_write(&ws, &c, err, sizeof(err));
	}
	/* the app's phases as markers, at common reference instants: their true edges go to the truth */
	double len = j->seconds * 1e9 / j->phases;
	for (unsigned p = 0; !rc && p < j->phases; p++) {
		char name[32];
		snprintf(name, sizeof(name), "phase%u", p);
		double r0 = (double)SYNJOB_T0 + p * len, r1 = r0 + len;
		struct series_slice sl = { .start_ns = local_of(k, r0), .end_ns = local_of(k, r1), .name = name,
					   .track = 1, .category = "marker", .pid = 4000 + k };
		rc = ws_slice(&ws, &sl, err, sizeof(err));
	}
	/* the app's kernel dispatches at known reference instants, and one the tool could not time */
	unsigned nd = j->kernels ? synjob_ndisp(k) : 0;
	struct series_dispatch disp[64];
	json_t *tdisp = json_array();
	for (unsigned i = 0; !rc && nd && i <= nd && i < 64; i++) {
		double r0 = (double)SYNJOB_T0 + (i + 1) * (j->seconds * 1e9 / (nd + 2)), r1 = r0 + 100000 + 1000 * i;
		int64_t l0 = local_of(k, r0), l1 = local_of(k, r1);
		bool timed = i < nd;
		disp[i] = (struct series_dispatch){
			.corr_id = 1 + i, .queue_id = 1 + i % 2, .packet_index = i, .start_ticks = (uint64_t)l0 / 10,
			.end_ticks = (uint64_t)l1 / 10, .start_ns = timed ? l0 : -1, .end_ns = timed ? l1 : -1,
			.pid = 4000 + k, .tid = 4100 + k, .grid = { 256 * (i + 1), 1, 1 }, .wg = { 256, 1, 1 },
			.status = timed ? 0 : -1, .gpu = 0, .kernel = timed ? synjob_kname(i) : "untimed",
		};
		if (timed)
			json_array_append_new(tdisp, json_pack("{s:s,s:I,s:I,s:I}", "kernel", synjob_kname(i), "queue",
							       (json_int_t)(1 + i % 2), "start_ns",
							       (json_int_t)llround(ref_of(k, l0)), "end_ns",
							       (json_int_t)llround(ref_of(k, l1))));
	}
	for (int i = 0; !rc && nd && i < ws.n; i++)
		if (ws.ops[i]->dispatches)
			rc = ws.ops[i]->dispatches(ws.w[i], disp, nd + 1, err, sizeof(err));
	if (!rc && nd && j->csv && kernels_csv(base, disp, nd + 1))
		rc = -1;
	char *text = json_dumps(meta, JSON_COMPACT | JSON_SORT_KEYS);
	for (int i = 0; i < ws.n; i++) {
		if (!rc && ws.ops[i]->meta)
			rc = ws.ops[i]->meta(ws.w[i], text, err, sizeof(err));
		if (ws.ops[i]->end(ws.w[i], rc ? NULL : err, rc ? 0 : sizeof(err)) && !rc)
			rc = -1;
	}
	free(text);
	free(extra_text);
	char mp[PATH_MAX + 16];
	snprintf(mp, sizeof(mp), "%s_meta.json", base);
	if (!rc && json_dump_file(meta, mp, JSON_INDENT(2) | JSON_SORT_KEYS))
		rc = -1;
	json_decref(meta);
	if (rc) {
		json_decref(tdisp);
		fprintf(stderr, "synjob: node %u: %s\n", k, *err ? err : "cannot write");
		return -EIO;
	}
	json_array_append_new(
		tnodes, json_pack("{s:I,s:s,s:I,s:I,s:f,s:I,s:b,s:I,s:f,s:I,s:I,s:I,s:f,s:f,s:o,s:I}", "rank", (json_int_t)k,
				  "hostname", host, "origin_ns", (json_int_t)origin, "off0_ns",
				  (json_int_t)synjob_off0(k), "drift", synjob_drift(k), "bound_ns",
				  (json_int_t)synjob_bound(k), "job", (int)k != j->no_job_node, "spm_n", (json_int_t)n_spm,
				  "spm_period_ns", spm_period, "sum_waves", (json_int_t)sum_waves, "sum_cycles",
				  (json_int_t)sum_cycles, "smi_n", (json_int_t)n_smi, "sum_power", sum_power,
				  "last_energy", energy, "dispatches", tdisp, "untimed", (json_int_t)(nd ? 1 : 0)));
	return 0;
}

int synjob_make(const struct synjob *j)
{
	if (mkdir(j->dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "synjob: %s: %s\n", j->dir, strerror(errno));
		return -errno;
	}
	json_t *nodes = json_array(), *phases = json_array();
	int rc = 0;
	for (unsigned k = 0; !rc && k < j->nodes; k++)
		rc = make_node(j, k, nodes);
	double len = j->seconds * 1e9 / j->phases;
	for (unsigned p = 0; p < j->phases; p++) {
		char name[32];
		snprintf(name, sizeof(name), "phase%u", p);
		json_array_append_new(phases, json_pack("{s:s,s:I,s:I}", "name", name, "start_ns",
							(json_int_t)llround(SYNJOB_T0 + p * len), "end_ns",
							(json_int_t)llround(SYNJOB_T0 + (p + 1) * len)));
	}
	json_t *t = json_pack("{s:I,s:f,s:f,s:f,s:o,s:o}", "t0_ns", (json_int_t)SYNJOB_T0, "seconds", j->seconds,
			      "spm_hz", j->spm_hz, "smi_hz", j->smi_hz, "nodes", nodes, "phases", phases);
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/truth.json", j->dir);
	if (!rc && json_dump_file(t, p, JSON_INDENT(1)))
		rc = -EIO;
	json_decref(t);
	return rc;
}
