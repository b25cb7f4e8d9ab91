/* SPDX-License-Identifier: MIT */
/*
 * make bench: the power sources on 4 emulated MI210s (docs/bench.md "Power sources").
 *
 * (a) Read-path overhead, the thesis's method (amd-smi-papi-thesis 4.1): per
 *     item (source x GPU) the mean time of one spmtap read_all against the
 *     same calls made directly (gpu_metrics: pread of the table + the same
 *     decoder; hwmon: pread of the same files + strtod; rocm_smi: the same
 *     rsmi_dev_* calls on a handle of our own), N_ITER timed iterations
 *     each after 2 warm-up reads, spmtap and direct in alternating blocks of
 *     50 so drift hits both.  r = log(mean_spmtap / mean_direct); the
 *     geometric mean exp(mean r) with t-intervals over items (90 %: the TOST
 *     at alpha 0.05; 98 %: the thesis's), equivalent if the interval lies
 *     in [0.98, 1.02].
 * (b) Monitoring interval: one sampler per GPU, all four at once, at 1..100
 *     ms requested: achieved interval, jitter of consecutive host times,
 *     CPU time per read, value changes per metric.
 * (c) Sensors at 1 ms while SPM streams: `spmtap record --device all --spm
 *     ... --smi all --smi-interval 1ms` on the 4 GPUs (issue 15), its
 *     sensor CSV read back: p99 |dt - 1 ms| of consecutive rows per GPU,
 *     missed deadlines (the metadata's accounting), gaps over 2 ms, rows/s,
 *     and the samplers' CPU (the metadata's cost stage "sensors", where the
 *     recorder writes one); once as the recorder runs its samplers
 *     (SCHED_FIFO where allowed, SPMTAP_SMI_RT=1) and once ordinary (the default).
 *     SPMTAP_BENCH_SMI_SECONDS (default 5), SPMTAP_BENCH_SMI_SPM_INTERVAL
 *     (default: record's) change the run.  key=value lines.
 *
 * Prints only; no thresholds.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "collector/lib/smi_sampler.h"
#include "collector/lib/smi_source.h"
#include "bench_util.h"
#include "emu/common/emu.h"

#define PROFILE "mi210:4"
#define NGPU 4
#define N_ITER 500
#define BLOCK 50
#define ROCM_LIB "/usr/lib/librocm_smi64.so.1"

static int64_t mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct smi_dev dev_of(unsigned i)
{
	struct smi_dev d = { .index = i, .domain = 0, .location_id = (i << 12) | 0x300 };
	snprintf(d.name, sizeof(d.name), "MI210");
	return d;
}

/* ---- direct readers ------------------------------------------------- */

struct direct {
	int kind; /* 0 gpu_metrics, 1 hwmon, 2 rocm_smi */
	int fd[12], nfd;
	uint32_t dv;
};

static struct {
	void *dl;
	int (*energy)(uint32_t, uint64_t *, float *, uint64_t *);
	int (*power_ave)(uint32_t, uint32_t, uint64_t *);
	int (*temp)(uint32_t, uint32_t, uint32_t, int64_t *);
	int (*busy)(uint32_t, uint32_t *);
	int (*mem_busy)(uint32_t, uint32_t *);
	int (*init)(uint64_t);
	int (*shut_down)(void);
	int (*num)(uint32_t *);
	int (*pci)(uint32_t, uint64_t *);
} rs;

static int rs_load(void)
{
	rs.dl = dlopen(ROCM_LIB, RTLD_NOW | RTLD_LOCAL);
	if (!rs.dl)
		return -1;
#define B(f, n) *(void **)&rs.f = dlsym(rs.dl, n)
	B(energy, "rsmi_dev_energy_count_get");
	B(power_ave, "rsmi_dev_power_ave_get");
	B(temp, "rsmi_dev_temp_metric_get");
	B(busy, "rsmi_dev_busy_percent_get");
	B(mem_busy, "rsmi_dev_memory_busy_percent_get");
	B(init, "rsmi_init");
	B(shut_down, "rsmi_shut_down");
	B(num, "rsmi_num_monitor_devices");
	B(pci, "rsmi_dev_pci_id_get");
#undef B
	return rs.init && rs.init(0) == 0 ? 0 : -1;
}

static int direct_open(struct direct *x, int kind, const struct smi_dev *d)
{
	memset(x, 0, sizeof(*x));
	x->kind = kind;
	char dir[400], why[200], p[600];
	if (kind == 2) {
		uint32_t n = 0;
		rs.num(&n);
		for (uint32_t i = 0; i < n; i++) {
			uint64_t bdf;
			if (!rs.pci(i, &bdf) && (bdf & 0xffff) == d->location_id) {
				x->dv = i;
				return 0;
			}
		}
		return -1;
	}
	if (smi_find_drm_device(NULL, d->domain, d->location_id, dir, sizeof(dir), why, sizeof(why)))
		return -1;
	if (kind == 0) {
		snprintf(p, sizeof(p), "%s/gpu_metrics", dir);
		x->fd[x->nfd++] = open(p, O_RDONLY | O_CLOEXEC);
		return x->fd[0] < 0 ? -1 : 0;
	}
	/* hwmon: the files smi_hwmon.c reads on an MI210 */
	static const char *const hw[] = { "power1_average", "temp1_input", "temp2_input", "temp3_input",
					  "freq1_input", "freq2_input" };
	for (size_t i = 0; i < sizeof(hw) / sizeof(hw[0]); i++) {
		snprintf(p, sizeof(p), "%s/hwmon/hwmon%u/%s", dir, d->index, hw[i]);
		x->fd[x->nfd++] = open(p, O_RDONLY | O_CLOEXEC);
	}
	snprintf(p, sizeof(p), "%s/gpu_busy_percent", dir);
	x->fd[x->nfd++] = open(p, O_RDONLY | O_CLOEXEC);
	snprintf(p, sizeof(p), "%s/mem_busy_percent", dir);
	x->fd[x->nfd++] = open(p, O_RDONLY | O_CLOEXEC);
	for (int i = 0; i < x->nfd; i++)
		if (x->fd[i] < 0)
			return -1;
	return 0;
}

static volatile double sink;

static void direct_read(struct direct *x)
{
	if (x->kind == 0) {
		static unsigned char buf[4096];
		struct smi_batch b;
		ssize_t n = pread(x->fd[0], buf, sizeof(buf), 0);
		smi_batch_reset(&b);
		if (n > 0)
			smi_gm_decode(buf, (size_t)n, &b, NULL, 0);
		sink = b.v[SMI_M_ENERGY];
	} else if (x->kind == 1) {
		double s = 0;
		for (int i = 0; i < x->nfd; i++) {
			char buf[64];
			ssize_t n = pread(x->fd[i], buf, sizeof(buf) - 1, 0);
			if (n <= 0)
				continue;
			buf[n] = 0;
			s += strtod(buf, NULL);
		}
		sink = s;
	} else {
		uint64_t e, ts, uw;
		float res;
		int64_t t;
		uint32_t pct;
		rs.energy(x->dv, &e, &res, &ts);
		rs.power_ave(x->dv, 0, &uw);
		for (uint32_t k = 0; k < 3; k++)
			rs.temp(x->dv, k, 0, &t);
		rs.busy(x->dv, &pct);
		rs.mem_busy(x->dv, &pct);
		sink = (double)e + (double)uw;
	}
}

static void direct_close(struct direct *x)
{
	for (int i = 0; i < x->nfd; i++)
		close(x->fd[i]);
}

/* Student t quantiles, two-sided, for the item counts we use (df = items - 1). */
static double t_q(int df, double conf)
{
	/* conf 0.90 -> t_{0.95}; 0.98 -> t_{0.99} */
	static const double t95[] = { 0, 6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771, 1.761, 1.753 };
	static const double t99[] = { 0, 31.82, 6.965, 4.541, 3.747, 3.365, 3.143, 2.998, 2.896, 2.821, 2.764, 2.718, 2.681, 2.650, 2.624, 2.602 };
	if (df < 1)
		return NAN;
	if (df > 15)
		return conf < 0.95 ? 1.645 : 2.326;
	return conf < 0.95 ? t95[df] : t99[df];
}

static void bench_overhead(void)
{
	static const char *const kinds[] = { "gpu_metrics", "hwmon", "rocm_smi" };
	const struct smi_source_ops *ops[] = { &smi_gpu_metrics_ops, &smi_hwmon_ops, &smi_rocm_ops };
	int have_rocm = !access(ROCM_LIB, R_OK) && !rs_load();
	struct smi_env env = { .amdsmi_lib = "/nonexistent", .rocm_lib = ROCM_LIB };
	double r[3 * NGPU], sum_s = 0, sum_d = 0;
	int nitems = 0;
	printf("\n(a) read-path overhead: spmtap read_all vs the same calls made directly, %d iterations per item\n",
	       N_ITER);
	printf("%-12s %4s %14s %14s %8s\n", "source", "gpu", "direct us", "spmtap us", "ratio");
	for (int k = 0; k < 3; k++) {
		if (k == 2 && !have_rocm) {
			printf("rocm_smi: skipped (no %s or rsmi_init failed)\n", ROCM_LIB);
			continue;
		}
		for (unsigned g = 0; g < NGPU; g++) {
			struct smi_dev d = dev_of(g);
			struct smi_source *s;
			char why[200];
			struct direct x;
			if (ops[k]->open(&d, &env, &s, why, sizeof(why))) {
				printf("%s gpu %u: %s\n", kinds[k], g, why);
				continue;
			}
			if (direct_open(&x, k, &d)) {
				printf("%s gpu %u: direct open failed\n", kinds[k], g);
				ops[k]->close(s);
				continue;
			}
			struct smi_batch b;
			for (int w = 0; w < 2; w++) {
				ops[k]->read_all(s, &b);
				direct_read(&x);
			}
			double ts_s = 0, ts_d = 0;
			for (int blk = 0; blk < N_ITER / BLOCK; blk++) {
				int64_t t0 = mono();
				for (int i = 0; i < BLOCK; i++)
					direct_read(&x);
				int64_t t1 = mono();
				for (int i = 0; i < BLOCK; i++)
					ops[k]->read_all(s, &b);
				int64_t t2 = mono();
				ts_d += (double)(t1 - t0);
				ts_s += (double)(t2 - t1);
			}
			double md = ts_d / N_ITER / 1e3, ms = ts_s / N_ITER / 1e3;
			printf("%-12s %4u %14.2f %14.2f %8.3f\n", kinds[k], g, md, ms, ms / md);
			r[nitems++] = log(ms / md);
			sum_s += ms;
			sum_d += md;
			direct_close(&x);
			ops[k]->close(s);
		}
	}
	if (nitems < 2)
		return;
	double m = 0, v = 0;
	for (int i = 0; i < nitems; i++)
		m += r[i];
	m /= nitems;
	for (int i = 0; i < nitems; i++)
		v += (r[i] - m) * (r[i] - m);
	double se = sqrt(v / (nitems - 1) / nitems);
	double h90 = t_q(nitems - 1, 0.90) * se, h98 = t_q(nitems - 1, 0.98) * se;
	double lo90 = exp(m - h90), hi90 = exp(m + h90), lo98 = exp(m - h98), hi98 = exp(m + h98);
	printf("geometric-mean ratio spmtap/direct over %d items: %.4f, 90%% CI [%.4f, %.4f], 98%% CI [%.4f, %.4f]\n",
	       nitems, exp(m), lo90, hi90, lo98, hi98);
	printf("TOST +-2%% (alpha 0.05, 90%% CI in [0.98, 1.02]): %s; at the thesis's 98%% CI: %s\n",
	       lo90 >= 0.98 && hi90 <= 1.02 ? "EQUIVALENT" : "not shown equivalent",
	       lo98 >= 0.98 && hi98 <= 1.02 ? "EQUIVALENT" : "not shown equivalent");
	printf("cross-item mean: direct %.2f us, spmtap %.2f us (%+.2f %%)\n", sum_d / nitems, sum_s / nitems,
	       (sum_s / sum_d - 1) * 100);
	if (have_rocm) {
		rs.shut_down();
		for (int c = 0; c < NGPU; c++) {
			char name[32];
			snprintf(name, sizeof(name), "/rocm_smi_card%d", c);
			shm_unlink(name);
		}
	}
}

/* ---- (b) monitoring interval --------------------------------------- */

#define MAXR 4096
struct gpu_rows {
	uint32_t n;
	int64_t host[MAXR];
	double v[3][MAXR]; /* energy, power_avg, temp_hotspot */
	int col[3];
};

static void on_chunk(const struct series_chunk *c, void *arg)
{
	struct gpu_rows *r = arg;
	if (r->col[0] == -2) {
		static const char *const names[3] = { "energy", "power_avg", "temp_hotspot" };
		for (int j = 0; j < 3; j++) {
			r->col[j] = -1;
			for (uint32_t k = 0; k < c->stream->ncols; k++)
				if (!strcmp(c->stream->cols[k].name, names[j]))
					r->col[j] = (int)k;
		}
	}
	for (uint32_t i = 0; i < c->n && r->n < MAXR; i++, r->n++) {
		r->host[r->n] = c->host_ns[i];
		for (int j = 0; j < 3; j++)
			r->v[j][r->n] = r->col[j] >= 0 ? series_f64(c, (uint32_t)r->col[j], i) : NAN;
	}
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static struct gpu_rows rows[NGPU];

static void bench_interval(void)
{
	static const unsigned iv_ms[] = { 1, 2, 5, 10, 20, 50, 100 };
	struct smi_env env = { .amdsmi_lib = "/nonexistent", .rocm_lib = "/nonexistent" };
	struct smi_probe p[NGPU];
	for (unsigned g = 0; g < NGPU; g++) {
		struct smi_dev d = dev_of(g);
		if (smi_probe_device(&d, &env, &p[g])) {
			printf("gpu %u: no source\n", g);
			return;
		}
	}
	printf("\n(b) monitoring interval: %d GPUs sampled at once (gpu_metrics, all metrics), 2 s per interval\n", NGPU);
	printf("%6s %9s %9s %9s %9s %8s %10s %9s %9s %9s %9s\n", "req ms", "reads/s", "eff ms", "jit p50",
	       "jit p99", "missed", "cpu us/rd", "energy", "power_avg", "temp_hot", "fw upd");
	for (size_t ii = 0; ii < sizeof(iv_ms) / sizeof(iv_ms[0]); ii++) {
		unsigned iv = iv_ms[ii];
		uint64_t nmax = 2000 / iv;
		struct smi_sampler *s[NGPU];
		memset(rows, 0, sizeof(rows));
		for (unsigned g = 0; g < NGPU; g++) {
			rows[g].col[0] = -2;
			struct smi_sampler_opts o = {
				.ops = p[g].ops, .src = p[g].inst, .metrics = p[g].metrics,
				.ts_domain = p[g].src[p[g].selected].ts_domain, .interval_ns = iv * 1000000ull,
				.max_samples = nmax, .on_chunk = on_chunk, .arg = &rows[g], .gpu = g,
			};
			if (smi_sampler_create(&s[g], &o)) {
				printf("sampler create failed\n");
				return;
			}
		}
		double c0 = cpu_s();
		for (unsigned g = 0; g < NGPU; g++)
			smi_sampler_start(s[g]);
		uint64_t missed = 0, fw = 0;
		for (unsigned g = 0; g < NGPU; g++) {
			smi_sampler_wait(s[g]);
			smi_sampler_stop(s[g]);
			struct smi_sampler_stats st;
			smi_sampler_get_stats(s[g], &st);
			missed += st.missed_deadlines;
			fw += st.distinct_sensor_ts;
			smi_sampler_free(s[g]);
		}
		double cpu = cpu_s() - c0;
		static int64_t d[NGPU * MAXR];
		size_t nd = 0;
		double span = 0;
		uint64_t nrows = 0, ch[3] = { 0, 0, 0 };
		for (unsigned g = 0; g < NGPU; g++) {
			struct gpu_rows *r = &rows[g];
			nrows += r->n;
			if (r->n > 1)
				span += (double)(r->host[r->n - 1] - r->host[0]) / (r->n - 1);
			for (uint32_t i = 1; i < r->n; i++) {
				d[nd++] = llabs((r->host[i] - r->host[i - 1]) - (int64_t)iv * 1000000);
				for (int j = 0; j < 3; j++)
					if (r->v[j][i] != r->v[j][i - 1])
						ch[j]++;
			}
		}
		qsort(d, nd, sizeof(d[0]), cmp_i64);
		double secs = (double)nmax * iv / 1000.0;
		printf("%6u %9.0f %9.3f %9.1f %9.1f %8" PRIu64 " %10.1f %9.0f %9.0f %9.0f %9.0f\n", iv,
		       (double)nrows / NGPU / secs, span / NGPU / 1e6, nd ? d[nd / 2] / 1e3 : 0.0,
		       nd ? d[(nd * 99) / 100] / 1e3 : 0.0, missed, cpu / (double)nrows * 1e6, ch[0] / (double)NGPU,
		       ch[1] / (double)NGPU, ch[2] / (double)NGPU, fw / (double)NGPU);
	}
	printf("(jitter in us: |host_ns[i] - host_ns[i-1] - interval|, host_ns = the driver's system_clock_counter; "
	       "changes and fw upd = per GPU over the run; cpu = process CPU time / reads)\n");
	for (unsigned g = 0; g < NGPU; g++)
		smi_probe_release(&p[g]);
}

/* ---- (c) 1 ms sensors while SPM streams ---------------------------- */

static int cmp_i64c(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* One recording; prints smi_<tag>_* lines.  Never fails the bench: a problem is printed. */
static void spm_smi_run(const char *tag, const char *rt)
{
	char exe[PATH_MAX], cli[PATH_MAX + 16], dir[] = "/tmp/spmtap-bench-smi-XXXXXX";
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0 || !mkdtemp(dir)) {
		printf("# (c) %s: no build dir or temp dir\n", tag);
		return;
	}
	exe[n] = 0;
	*strrchr(exe, '/') = 0; /* build/bench */
	snprintf(cli, sizeof(cli), "%s/../spmtap", exe);
	const char *secs = getenv("SPMTAP_BENCH_SMI_SECONDS") ? getenv("SPMTAP_BENCH_SMI_SECONDS") : "5";
	const char *iv = getenv("SPMTAP_BENCH_SMI_SPM_INTERVAL");
	char cmd[4 * PATH_MAX], log[PATH_MAX + 8];
	snprintf(log, sizeof(log), "%s/log", dir);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		setenv("SPMTAP_SMI_RT", rt, 1);
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		const char *args[32] = { cli, "record", "--device", "all", "--spm", "SQ_WAVES,SQ_CYCLES,TCC_HIT,TA_TA_BUSY",
					 "--smi", "all", "--smi-interval", "1ms", "-d", dir, "-o", "s", "-f", "csv",
					 "--duration", secs };
		int na = 18;
		if (iv) {
			args[na++] = "--interval";
			args[na++] = iv;
		}
		args[na] = NULL;
		execv(cli, (char *const *)args);
		_exit(127);
	}
	/*
	 * The samplers' CPU, independent of what the recorder says of itself:
	 * its threads named spmtap-smi* (smi_sampler.c), their utime + stime
	 * from /proc, read every 50 ms while it runs (the last reading is at
	 * most 50 ms before they end).
	 */
	double smi_cpu = 0;
	int wst = 0, nthr = 0;
	long hz = sysconf(_SC_CLK_TCK);
	while (pid > 0 && waitpid(pid, &wst, WNOHANG) == 0) {
		double sum = 0;
		int nt = 0;
		snprintf(cmd, sizeof(cmd), "/proc/%d/task", (int)pid);
		DIR *td = opendir(cmd);
		struct dirent *de;
		while (td && (de = readdir(td))) {
			char p2[PATH_MAX], comm[64] = "", stat[1024];
			snprintf(p2, sizeof(p2), "/proc/%d/task/%s/comm", (int)pid, de->d_name);
			FILE *cf = fopen(p2, "r");
			if (!cf)
				continue;
			if (!fgets(comm, sizeof(comm), cf))
				comm[0] = 0;
			fclose(cf);
			if (strncmp(comm, "spmtap-smi", 10))
				continue;
			snprintf(p2, sizeof(p2), "/proc/%d/task/%s/stat", (int)pid, de->d_name);
			cf = fopen(p2, "r");
			if (!cf)
				continue;
			size_t k = fread(stat, 1, sizeof(stat) - 1, cf);
			fclose(cf);
			stat[k] = 0;
			/* fields after ") ": state is field 3; utime, stime are 14 and 15 */
			char *q = strrchr(stat, ')');
			unsigned long ut = 0, stt = 0;
			if (q && sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &stt) == 2) {
				sum += (double)(ut + stt) / (double)hz;
				nt++;
			}
		}
		if (td)
			closedir(td);
		if (nt) {
			smi_cpu = sum;
			nthr = nt;
		}
		struct timespec ts = { 0, 50 * 1000000L };
		nanosleep(&ts, NULL);
	}
	int rc = pid > 0 && WIFEXITED(wst) ? WEXITSTATUS(wst) : -1;
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/s_smi.csv", dir);
	FILE *f = fopen(path, "r");
	if (rc || !f) {
		printf("# (c) %s: spmtap record failed (%d); its output is in %s/log\n", tag, rc, dir);
		if (f)
			fclose(f);
		return;
	}
	/* gpu,host_ns,... in time order per GPU */
	static int64_t last[64], first[64], d[1 << 20];
	static uint64_t nrow[64];
	memset(last, 0, sizeof(last));
	memset(nrow, 0, sizeof(nrow));
	size_t nd = 0;
	uint64_t gaps = 0;
	char line[4096];
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		char *end;
		long g = strtol(line, &end, 10);
		if (g < 0 || g >= 64 || *end != ',')
			continue;
		int64_t t = strtoll(end + 1, NULL, 10);
		if (!nrow[g])
			first[g] = t;
		if (nrow[g]++ && nd < sizeof(d) / sizeof(d[0])) {
			int64_t dt = t - last[g];
			d[nd++] = llabs(dt - 1000000);
			gaps += dt > 2000000;
		}
		last[g] = t;
	}
	fclose(f);
	qsort(d, nd, sizeof(d[0]), cmp_i64c);
	snprintf(path, sizeof(path), "%s/s_meta.json", dir);
	json_t *m = json_load_file(path, 0, NULL);
	uint64_t missed = 0, missed_late = 0, ngpu = 0;
	json_t *a, *acc = json_object_get(m, "accounting");
	size_t i;
	json_array_foreach(acc, i, a) {
		missed += (uint64_t)json_integer_value(json_object_get(a, "smi_missed_deadlines"));
		missed_late += (uint64_t)json_integer_value(json_object_get(a, "smi_missed_late"));
		ngpu++;
	}
	double sensors_cpu = -1;
	json_t *st, *stages = json_object_get(json_object_get(m, "cost"), "stages");
	json_array_foreach(stages, i, st)
		if (!strcmp(json_string_value(json_object_get(st, "stage")) ? json_string_value(json_object_get(st, "stage")) : "", "sensors"))
			sensors_cpu = json_number_value(json_object_get(st, "cpu_s"));
	json_decref(m);
	double dur = atof(secs);
	uint64_t total = 0;
	double rate = 0; /* rows per second of each GPU's own span, averaged */
	for (int g = 0; g < 64; g++) {
		total += nrow[g];
		if (nrow[g] > 1)
			rate += (double)(nrow[g] - 1) * 1e9 / (double)(last[g] - first[g]);
	}
	printf("smi_%s_gpus=%" PRIu64 "\n", tag, ngpu);
	printf("smi_%s_rows_per_s_per_gpu=%.0f\n", tag, ngpu ? rate / (double)ngpu : 0.0);
	printf("smi_%s_dt_p50_us=%.1f\n", tag, nd ? d[nd / 2] / 1e3 : 0.0);
	printf("smi_%s_dt_p99_us=%.1f\n", tag, nd ? d[(nd * 99) / 100] / 1e3 : 0.0);
	printf("smi_%s_dt_max_us=%.1f\n", tag, nd ? d[nd - 1] / 1e3 : 0.0);
	printf("smi_%s_missed_deadlines=%" PRIu64 "\n", tag, missed);
	/* of those, passed before the sampler woke: the scheduler's (or the VM's), not the read's */
	printf("smi_%s_missed_late=%" PRIu64 "\n", tag, missed_late);
	printf("smi_%s_gaps_over_2ms=%" PRIu64 "\n", tag, gaps);
	/* From /proc (threads spmtap-smi*), and as the recorder states it (metadata cost stage "sensors"). */
	printf("smi_%s_sampler_threads=%d\n", tag, nthr);
	printf("smi_%s_samplers_cpu_s=%.2f\nsmi_%s_samplers_cpu_pct_of_core=%.2f\n", tag, smi_cpu, tag,
	       100.0 * smi_cpu / dur);
	if (sensors_cpu >= 0)
		printf("smi_%s_samplers_cpu_s_meta=%.3f\n", tag, sensors_cpu);
	if (!total) {
		printf("# (c) %s: no sensor rows; kept %s\n", tag, dir);
		return;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		printf("# could not remove %s\n", dir);
}

static void bench_spm_smi(void)
{
	printf("\n(c) sensors at 1 ms, all metrics, %d GPUs, while their SPM streams (spmtap record --device all, %s s)\n",
	       NGPU, getenv("SPMTAP_BENCH_SMI_SECONDS") ? getenv("SPMTAP_BENCH_SMI_SECONDS") : "5");
	spm_smi_run("rt", "1");
	spm_smi_run("ordinary", "0");
	printf("# dt: |host_ns[i] - host_ns[i-1] - 1 ms| over consecutive rows of each GPU; rt: samplers SCHED_FIFO "
	       "where allowed (SPMTAP_SMI_RT=1), ordinary: the default\n");
}

int main(int argc, char **argv)
{
	(void)argc;
	setenv("SPMTAP_EMU_WORKLOAD", "square:period_ms=200,duty=0.5", 0);
	bench_under_emu(argv, "bench_smi", PROFILE);
	struct utsname u;
	uname(&u);
	time_t now = time(NULL);
	char date[64];
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	printf("bench_smi: %s, %ld CPUs, %s %s, %s; workload %s, sensor update %s us\n", PROFILE,
	       sysconf(_SC_NPROCESSORS_ONLN), u.sysname, u.release, date, getenv("SPMTAP_EMU_WORKLOAD"),
	       getenv("SPMTAP_EMU_SENSOR_UPDATE_US") ? getenv("SPMTAP_EMU_SENSOR_UPDATE_US") : "1000 (default)");
	if (getenv("SPMTAP_BENCH_SMI_ONLY_SPM")) {
		bench_spm_smi();
		return 0;
	}
	bench_overhead();
	bench_interval();
	bench_spm_smi();
	return 0;
}
