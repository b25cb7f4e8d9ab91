/* SPDX-License-Identifier: MIT */
/*
 * Load-time configuration: the environment knobs read once, the GPUs of the
 * generated tree, and the process lifecycle hooks (fork, exit).  Knobs that
 * a test may change between cases (generation, rate, ring size, injection,
 * no-SPM mode) are read later, where they take effect (spm_ioctl.c).
 */
#include "emu/shim/rlc.h"
#include "emu/shim/shim.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct emu_proc emu_p = { .lock = PTHREAD_MUTEX_INITIALIZER, .kfd_minor = 8 };

void emu_log(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n = snprintf(line, sizeof(line), "[spmtap-emu %d] ", (int)getpid());
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One write per message so concurrent processes do not interleave mid-line. */
	ssize_t w = write(2, line, strlen(line));
	(void)w;
}

uint64_t emu_env_u64(const char *name, uint64_t dflt)
{
	const char *e = getenv(name);
	char *end;
	if (!e || !*e)
		return dflt;
	errno = 0;
	unsigned long long v = strtoull(e, &end, 0);
	if (errno || *end || *e == '-') {
		emu_log("ignoring %s=%s (not an unsigned number)\n", name, e);
		return dflt;
	}
	return v;
}

double emu_env_double(const char *name, double dflt)
{
	const char *e = getenv(name);
	char *end;
	if (!e || !*e)
		return dflt;
	double v = strtod(e, &end);
	if (*end) {
		emu_log("ignoring %s=%s (not a number)\n", name, e);
		return dflt;
	}
	return v;
}

struct emu_gpu *emu_gpu_by_id(uint32_t gpu_id)
{
	for (int i = 0; i < emu_p.ngpus; i++)
		if (emu_p.gpus[i].gpu_id == gpu_id)
			return &emu_p.gpus[i];
	return NULL;
}

struct emu_gpu *emu_gpu_by_minor(uint32_t minor)
{
	for (int i = 0; i < emu_p.ngpus; i++)
		if (emu_p.gpus[i].render_minor == minor)
			return &emu_p.gpus[i];
	return NULL;
}

/* The profile of each gpu_id comes from <sysfs>/emu-profile, the spec the tree was made from. */
static const struct emu_profile *emu_profile_of(uint32_t gpu_id)
{
	static struct emu_gpu_desc descs[EMU_MAX_GPUS];
	static int ndescs = -2;
	if (ndescs == -2) {
		char path[PATH_MAX + 16], spec[512] = "";
		snprintf(path, sizeof(path), "%s/emu-profile", emu_p.sysfs);
		FILE *f = emu_real_fopen(path, "r");
		if (f) {
			if (!fgets(spec, sizeof(spec), f))
				spec[0] = 0;
			fclose(f);
		}
		spec[strcspn(spec, "\n")] = 0;
		ndescs = spec[0] ? emu_spec_parse(spec, descs, EMU_MAX_GPUS, NULL, 0) : -1;
	}
	for (int i = 0; i < ndescs; i++)
		if (descs[i].gpu_id == gpu_id)
			return descs[i].profile;
	return NULL;
}

/* Reads the GPU nodes the way libhsakmt does: stop at the first missing gpu_id. */
static void emu_topology_load(void)
{
	char path[PATH_MAX + 64];
	emu_p.ngpus = 0;
	for (uint32_t n = 0; n < 256 && emu_p.ngpus < EMU_MAX_GPUS; n++) {
		unsigned long gid = 0;
		snprintf(path, sizeof(path), "%s/topology/nodes/%u/gpu_id", emu_p.sysfs, n);
		FILE *f = emu_real_fopen(path, "r");
		if (!f)
			break;
		if (fscanf(f, "%lu", &gid) != 1)
			gid = 0;
		fclose(f);
		if (!gid)
			continue;
		struct emu_gpu *g = &emu_p.gpus[emu_p.ngpus++];
		memset(g, 0, sizeof(*g));
		g->gpu_id = (uint32_t)gid;
		g->node = n;
		g->num_xcc = 1;
		snprintf(path, sizeof(path), "%s/topology/nodes/%u/properties", emu_p.sysfs, n);
		f = emu_real_fopen(path, "r");
		if (f) {
			char key[128];
			unsigned long long v;
			while (fscanf(f, "%127s %llu", key, &v) == 2) {
				if (!strcmp(key, "drm_render_minor"))
					g->render_minor = (uint32_t)v;
				else if (!strcmp(key, "num_xcc") && v >= 1)
					g->num_xcc = (uint32_t)v;
			}
			fclose(f);
		}
		g->profile = emu_profile_of(g->gpu_id);
		EMU_DBG("node %u: gpu_id 0x%x render minor %u num_xcc %u profile %s\n", n, g->gpu_id,
			g->render_minor, g->num_xcc, g->profile ? g->profile->name : "(none)");
	}
}

static void emu_atfork_child(void)
{
	pthread_mutex_init(&emu_p.lock, NULL);
	/* KFD state is per process: the child has no per-process devices and owns no SPM. */
	for (int i = 0; i < emu_p.ngpus; i++)
		emu_p.gpus[i].pdd = false;
	emu_spm_forget_after_fork();
	emu_struth_after_fork();
	/* ... and no queues, CP threads, events or memory objects (amdkfd: the child is a new process). */
	emu_queue_after_fork();
	emu_events_after_fork();
	emu_mem_after_fork();
}

__attribute__((constructor)) static void emu_init(void)
{
	const char *root = getenv("SPMTAP_EMU_SYSFS");
	const char *dbg = getenv("SPMTAP_EMU_DEBUG");
	emu_p.debug = dbg && *dbg && strcmp(dbg, "0");
	if (!root || !*root)
		return;
	snprintf(emu_p.sysfs, sizeof(emu_p.sysfs), "%s", root);
	emu_p.kfd_minor = (uint32_t)emu_env_u64("SPMTAP_EMU_KFD_MINOR", 8);
	emu_p.clock_offset = emu_env_u64("SPMTAP_EMU_CLOCK_OFFSET", 0x1000000000ull);
	emu_p.clock_ppm = emu_env_double("SPMTAP_EMU_CLOCK_PPM", 0.0);
	emu_p.clock_pair_delay_ns = emu_env_u64("SPMTAP_EMU_CLOCK_PAIR_DELAY_NS", 0);
	emu_p.clock_pair_delay_every = emu_env_u64("SPMTAP_EMU_CLOCK_PAIR_DELAY_EVERY", 1);
	emu_p.clock_pair_delay_run = emu_env_u64("SPMTAP_EMU_CLOCK_PAIR_DELAY_RUN", 1);
	{
		const char *at = getenv("SPMTAP_EMU_CLOCK_PAIR_DELAY_AT");
		emu_p.clock_pair_delay_at_raw = at && !strcmp(at, "raw");
	}
	emu_p.next_handle = 1;
	emu_topology_load();
	if (!emu_real_realpath(emu_p.sysfs, emu_p.sysfs_real))
		snprintf(emu_p.sysfs_real, sizeof(emu_p.sysfs_real), "%s", emu_p.sysfs);
	{
		char drm[PATH_MAX + 32];
		struct stat st;
		snprintf(drm, sizeof(drm), "%s/sys/class/drm", emu_p.sysfs);
		emu_p.drm = stat(drm, &st) == 0 && S_ISDIR(st.st_mode);
	}
	emu_p.active = true;
	pthread_atfork(NULL, NULL, emu_atfork_child);
	EMU_DBG("active: sysfs=%s gpus=%d\n", emu_p.sysfs, emu_p.ngpus);
}

/* Process exit releases SPM like the kernel's process teardown, with truth written. */
__attribute__((destructor)) static void emu_fini(void)
{
	if (emu_p.active) {
		emu_spm_teardown_all("exit");
		emu_queue_teardown();
	}
}
