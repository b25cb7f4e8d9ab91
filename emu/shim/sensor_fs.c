/* SPDX-License-Identifier: MIT */
/*
 * Dynamic sysfs attributes of the emulated cards: gpu_metrics and the
 * hwmon/device sensor files.  The tree (emu/common/tree.c) holds
 * placeholders; opening one read-only returns a memfd with content
 * generated now from the sensor model (emu/common/sensors.c), so that
 * open()/fopen()/ifstream readers such as librocm_smi64 need nothing else.
 * A reader that keeps an fd open and preads offset 0 again (the usual way to
 * poll sysfs) gets fresh content too: such fds are tracked and regenerated
 * on a read at offset 0, which is when the kernel's show() runs.
 */
#include "emu/common/sensors.h"
#include "emu/shim/kernel_activity.h"
#include "emu/shim/shim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const emu_dyn_names[] = {
	"gpu_metrics", "power1_average", "power1_input", "temp1_input", "temp2_input", "temp3_input",
	"gpu_busy_percent", "mem_busy_percent", "in0_input", "freq1_input", "freq2_input",
};
#define EMU_NDYN (sizeof(emu_dyn_names) / sizeof(emu_dyn_names[0]))

/* Per tracked fd: which GPU and attribute, and the memfd's inode (an fd number may be reused behind our back by fclose). */
struct emu_sfd {
	int16_t gpu;
	uint8_t attr;
	ino_t ino;
};
static struct emu_sfd *emu_sfds;

/* The spec of the tree and the glitch epoch, read once. */
static struct {
	bool loaded;
	char spec[512];
	uint64_t epoch;
	struct emu_gpu_desc d[EMU_MAX_GPUS];
	int n;
	/* The driver cache: the window last served per GPU and its BOOTTIME, so a window repeats its bytes exactly. */
	uint64_t cache_raw[EMU_MAX_GPUS], cache_boot[EMU_MAX_GPUS];
	/* Power follows kernels: per GPU its kernel activity log (once some process has run PM4) and running integral. */
	struct emu_gpu_state *kgs[EMU_MAX_GPUS];
	struct emu_kact_power_cache kcache[EMU_MAX_GPUS];
	char kpow_wl[EMU_MAX_GPUS][128]; /* the $SPMTAP_EMU_WORKLOAD its running integral is of */
} emu_s;

static void emu_sensor_load(void)
{
	if (emu_s.loaded)
		return;
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/emu-profile", emu_p.sysfs);
	FILE *f = emu_real_fopen(path, "r");
	if (f) {
		if (!fgets(emu_s.spec, sizeof(emu_s.spec), f))
			emu_s.spec[0] = 0;
		fclose(f);
	}
	emu_s.spec[strcspn(emu_s.spec, "\n")] = 0;
	emu_s.n = emu_s.spec[0] ? emu_spec_parse(emu_s.spec, emu_s.d, EMU_MAX_GPUS, NULL, 0) : 0;
	if (emu_s.n < 0)
		emu_s.n = 0;
	snprintf(path, sizeof(path), "%s/sensor-epoch", emu_p.sysfs);
	f = emu_real_fopen(path, "r");
	if (f) {
		unsigned long long v;
		if (fscanf(f, "%llu", &v) == 1)
			emu_s.epoch = v;
		fclose(f);
	}
	emu_s.loaded = true;
}

static int emu_dyn_index(const char *path)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	for (size_t i = 0; i < EMU_NDYN; i++)
		if (!strcmp(b, emu_dyn_names[i]))
			return (int)i;
	return -1;
}

/* The GPU whose PCI device directory holds resolved path rp: the last DDDD:BB:DD.F component. */
static int emu_gpu_of_path(const char *rp)
{
	int gpu = -1;
	for (const char *c = strchr(rp, '/'); c; c = strchr(c + 1, '/')) {
		unsigned dom, bus, slot, fn;
		char end;
		if (sscanf(c + 1, "%x:%x:%x.%x%c", &dom, &bus, &slot, &fn, &end) == 5 && end == '/' && !dom) {
			uint32_t loc = bus << 8 | slot << 3 | fn;
			for (int i = 0; i < emu_s.n; i++)
				if (emu_s.d[i].location_id == loc)
					gpu = i;
		}
	}
	return gpu;
}

static uint64_t emu_now(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The GPU's shared state, where the CPs of every process log their
 * dispatches (kernel_activity.h), when it exists: a read never creates it,
 * so the sensors of a GPU that never ran a kernel stay the workload's.
 */
static struct emu_gpu_state *emu_sensor_gs(int gpu)
{
	struct emu_gpu_state *gs = __atomic_load_n(&emu_s.kgs[gpu], __ATOMIC_ACQUIRE);
	if (gs)
		return gs;
	char path[PATH_MAX + 64];
	struct stat st;
	snprintf(path, sizeof(path), "%s/emu-state/gpu-%x.state", emu_p.sysfs, emu_s.d[gpu].gpu_id);
	if (stat(path, &st) || st.st_size == 0)
		return NULL;
	/*
	 * Its own mapping, made outside the process's lock (the open takes the
	 * file's flock and maps it: the CP and SPM ioctls of this process need
	 * not wait for that); the process's CP/SPM set-up stays theirs.
	 */
	pthread_mutex_lock(&emu_p.lock);
	struct emu_gpu *g = emu_gpu_by_id(emu_s.d[gpu].gpu_id);
	pthread_mutex_unlock(&emu_p.lock);
	struct emu_gpu_state *mine = g ? emu_gpu_state_map(g) : NULL, *none = NULL;
	if (mine && !__atomic_compare_exchange_n(&emu_s.kgs[gpu], &none, mine, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
		emu_log("sensors: GPU 0x%x's state mapped twice by racing readers; one mapping kept unused\n",
			emu_s.d[gpu].gpu_id);
	return emu_s.kgs[gpu];
}

static double emu_kpow_act(void *ctx, uint64_t t)
{
	return emu_kact_power_activity(ctx, t);
}

static double emu_kpow_int(void *ctx, uint64_t t)
{
	return emu_kact_power_integral(ctx, t);
}

/* Content of attribute `attr` of GPU `gpu` as a read now would see it; its length, or -1. */
static ssize_t emu_sensor_generate(int gpu, int attr, unsigned char *buf, size_t len)
{
	struct emu_sensor_model m;
	struct emu_workload w;
	struct emu_sensor_reading r;
	char err[256];

	if (emu_sensor_model_init(emu_s.spec, (unsigned)gpu, emu_s.epoch, &m, err, sizeof(err))) {
		/* A bad knob is reported every time (like a bad workload) and the read still works. */
		emu_log("sensors: %s\n", err);
		unsetenv("SPMTAP_EMU_SENSOR_GLITCH");
		if (emu_sensor_model_init(emu_s.spec, (unsigned)gpu, emu_s.epoch, &m, err, sizeof(err)))
			return -1;
	}
	if (emu_workload_parse(getenv("SPMTAP_EMU_WORKLOAD"), &w, err, sizeof(err)))
		emu_log("bad SPMTAP_EMU_WORKLOAD: %s; using constant:1\n", err);
	/* The activity the power model sees: the counters' (workload and kernels, kernel_activity.h). */
	const char *wl = getenv("SPMTAP_EMU_WORKLOAD");
	struct emu_kact_power kp = { emu_sensor_gs(gpu), &w, wl && *wl, &emu_s.kcache[gpu] };
	struct emu_sensor_kernels kern = { emu_kpow_act, emu_kpow_int, &kp };
	if (kp.gs) {
		m.kernels = &kern;
		/* a running integral of another background is no use (the cache is used under the GPU's lock) */
		emu_gs_lock(kp.gs);
		if (strncmp(emu_s.kpow_wl[gpu], wl ? wl : "", sizeof(emu_s.kpow_wl[gpu]) - 1)) {
			emu_s.kcache[gpu].cached = false;
			snprintf(emu_s.kpow_wl[gpu], sizeof(emu_s.kpow_wl[gpu]), "%s", wl ? wl : "");
		}
		emu_gs_unlock(kp.gs);
	}
	/* The SMU transfer of a real read: the table is built after it. */
	if (m.latency_ns) {
		struct timespec ts = { (time_t)(m.latency_ns / 1000000000ull), (long)(m.latency_ns % 1000000000ull) };
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	uint64_t boot = emu_now(CLOCK_BOOTTIME), raw = emu_now(CLOCK_MONOTONIC_RAW);
	if (m.cache_ns) {
		uint64_t win = raw - raw % m.cache_ns;
		pthread_mutex_lock(&emu_p.lock);
		if (emu_s.cache_raw[gpu] == win && emu_s.cache_boot[gpu]) {
			boot = emu_s.cache_boot[gpu] + (raw - win);
		} else {
			emu_s.cache_raw[gpu] = win;
			emu_s.cache_boot[gpu] = boot - (raw - win);
		}
		pthread_mutex_unlock(&emu_p.lock);
	}
	emu_sensor_read(&m, &w, raw, boot, &r);
	if (attr == 0) {
		size_t n = emu_sensor_render_metrics(&m, &r, buf, len);
		EMU_DBG("sensors: gpu %d gpu_metrics v1.%d, energy %llu, fw ts %llu\n", gpu, m.metrics_crev,
			(unsigned long long)r.energy_ticks, (unsigned long long)r.firmware_timestamp);
		return n ? (ssize_t)n : -1;
	}
	int n = emu_sensor_render_attr(&m, &r, emu_dyn_names[attr], (char *)buf, len);
	return n < 0 ? -1 : n;
}

static int emu_fill(int fd, const unsigned char *buf, size_t len)
{
	if (ftruncate(fd, 0) || pwrite(fd, buf, len, 0) != (ssize_t)len)
		return -1;
	return 0;
}

int emu_sensor_open(const char *xpath, int flags, bool track)
{
	if (!emu_p.active || !xpath || (flags & O_ACCMODE) != O_RDONLY)
		return -2;
	size_t rl = strlen(emu_p.sysfs_real);
	int attr = emu_dyn_index(xpath);
	bool cray = attr < 0 && strstr(xpath, "/cray/pm_counters/");
	if (attr < 0 && !cray)
		return -2;
	char rp[PATH_MAX];
	/* Only files that exist in our tree: an MI300 has no power1_average, and the open must fail like the kernel's. */
	if (!emu_real_realpath(xpath, rp) || strncmp(rp, emu_p.sysfs_real, rl) || rp[rl] != '/')
		return -2;
	int gpu;
	if (cray) {
		/* The Cray node's counters: GPU -1, attr = the file's index (craypm_fs.c). */
		const char *name;
		if (!emu_cray_path(rp, &name) || (attr = emu_cray_file_of(name)) < 0)
			return -2;
		gpu = -1;
	} else {
		emu_sensor_load();
		gpu = emu_gpu_of_path(rp);
		if (gpu < 0)
			return -2;
	}
	unsigned char buf[EMU_GPU_METRICS_MAX];
	ssize_t len = gpu < 0 ? emu_cray_generate(attr, buf, sizeof(buf)) : emu_sensor_generate(gpu, attr, buf, sizeof(buf));
	if (len < 0) {
		errno = EIO;
		return -1;
	}
	int fd = memfd_create("spmtap-emu-sysfs", (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
	if (fd < 0)
		return -1;
	if (emu_fill(fd, buf, (size_t)len) || lseek(fd, 0, SEEK_SET)) {
		int e = errno;
		emu_real_close(fd);
		errno = e;
		return -1;
	}
	if (track && fd < EMU_MAX_FDS) {
		struct stat st;
		pthread_mutex_lock(&emu_p.lock);
		if (!emu_sfds)
			emu_sfds = calloc(EMU_MAX_FDS, sizeof(*emu_sfds));
		if (emu_sfds && !fstat(fd, &st)) {
			emu_sfds[fd] = (struct emu_sfd){ (int16_t)gpu, (uint8_t)attr, st.st_ino };
			emu_p.fdkind[fd] = EMU_FD_SENSOR;
		}
		pthread_mutex_unlock(&emu_p.lock);
	}
	EMU_DBG("sensors: open %s -> fd %d (%zd bytes)\n", rp, fd, len);
	return fd;
}

void emu_sensor_fd_forget(int fd)
{
	if (fd >= 0 && fd < EMU_MAX_FDS && emu_p.fdkind[fd] == EMU_FD_SENSOR)
		emu_p.fdkind[fd] = EMU_FD_NONE;
}

bool emu_sensor_fd_refresh(int fd)
{
	struct stat st;
	if (!emu_sfds || fstat(fd, &st) || st.st_ino != emu_sfds[fd].ino) {
		/* Closed by fclose() (not interposed) and the number reused: not ours any more. */
		emu_sensor_fd_forget(fd);
		return false;
	}
	unsigned char buf[EMU_GPU_METRICS_MAX];
	ssize_t len = emu_sfds[fd].gpu < 0 ? emu_cray_generate(emu_sfds[fd].attr, buf, sizeof(buf))
					   : emu_sensor_generate(emu_sfds[fd].gpu, emu_sfds[fd].attr, buf, sizeof(buf));
	return len >= 0 && !emu_fill(fd, buf, (size_t)len);
}
