/* SPDX-License-Identifier: MIT */
/*
 * /sys/cray/pm_counters of the emulated node (emu/common/craypm.h), served
 * as the GPU sensors are (sensor_fs.c): an open returns a memfd with the
 * file as a read now shows it, and a tracked fd is regenerated on a read at
 * offset 0.  A read between t_k and t_(k+1) shows snapshot k, so a reader
 * that crosses t_(k+1) while going through the files gets a torn snapshot,
 * as on the real node.
 *
 * SPMTAP_EMU_CRAY_TRUTH=PATH: each process appends one JSON line per
 * snapshot from the first it served to the last (the gaps between two reads
 * filled in, at most 4096 at a time); a line per snapshot index, identical
 * from every process, so readers take the first line of each k.
 */
#include "emu/common/craypm.h"
#include "emu/shim/shim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct {
	bool loaded, ok;
	char spec[512];
	uint64_t epoch_raw, epoch_real;
	uint64_t truth_next; /* next snapshot index to append; 0: none appended yet */
} emu_c;

static void emu_cray_load(void)
{
	if (emu_c.loaded)
		return;
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/emu-profile", emu_p.sysfs);
	FILE *f = emu_real_fopen(path, "r");
	if (f) {
		if (!fgets(emu_c.spec, sizeof(emu_c.spec), f))
			emu_c.spec[0] = 0;
		fclose(f);
	}
	emu_c.spec[strcspn(emu_c.spec, "\n")] = 0;
	snprintf(path, sizeof(path), "%s/cray-epoch", emu_p.sysfs);
	f = emu_real_fopen(path, "r");
	unsigned long long a, b;
	if (f) {
		emu_c.ok = fscanf(f, "%llu %llu", &a, &b) == 2 && emu_c.spec[0];
		fclose(f);
		emu_c.epoch_raw = a;
		emu_c.epoch_real = b;
	}
	emu_c.loaded = true;
}

bool emu_cray_path(const char *rp, const char **name)
{
	size_t rl = strlen(emu_p.sysfs_real);
	static const char dir[] = "/sys/cray/pm_counters/";
	if (strncmp(rp, emu_p.sysfs_real, rl) || strncmp(rp + rl, dir, sizeof(dir) - 1))
		return false;
	*name = rp + rl + sizeof(dir) - 1;
	return !strchr(*name, '/');
}

static void emu_cray_truth(const struct emu_cray_model *m, uint64_t k)
{
	const char *path = getenv("SPMTAP_EMU_CRAY_TRUTH");
	if (!path || !*path)
		return;
	pthread_mutex_lock(&emu_p.lock);
	uint64_t from = emu_c.truth_next ? emu_c.truth_next : k;
	if (k + 1 > from && k - from >= 4096)
		from = k - 4095;
	if (k + 1 > emu_c.truth_next)
		emu_c.truth_next = k + 1;
	pthread_mutex_unlock(&emu_p.lock);
	if (from > k)
		return;
	int fd = emu_real_open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	for (uint64_t i = from; i <= k; i++) {
		struct emu_cray_snapshot s;
		char line[4096];
		emu_cray_snapshot_at(m, i, &s);
		int n = emu_cray_truth_line(m, &s, line, sizeof(line));
		/* One write per line: O_APPEND keeps lines of several processes whole. */
		if (n > 0 && write(fd, line, (size_t)n) != n)
			break;
	}
	emu_real_close(fd);
}

ssize_t emu_cray_generate(int file, unsigned char *buf, size_t len)
{
	emu_cray_load();
	if (!emu_c.ok)
		return -1;
	struct emu_cray_model m;
	char err[256];
	/* Knobs at each read, as the GPU sensors' are. */
	if (emu_cray_model_init(emu_c.spec, emu_c.epoch_raw, emu_c.epoch_real, &m, err, sizeof(err))) {
		emu_log("cray pm_counters: %s\n", err);
		return -1;
	}
	if (file < 0 || (unsigned)file >= EMU_CRAY_NFILES(m.naccel))
		return -1;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	uint64_t k = emu_cray_index(&m, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
	struct emu_cray_snapshot s;
	emu_cray_snapshot_at(&m, k, &s);
	emu_cray_truth(&m, k);
	int n = emu_cray_render(&m, &s, (unsigned)file, (char *)buf, len);
	return n < 0 || (size_t)n >= len ? -1 : n;
}

int emu_cray_file_of(const char *name)
{
	emu_cray_load();
	return emu_cray_file_index(name, EMU_CRAY_MAX_ACCEL);
}
