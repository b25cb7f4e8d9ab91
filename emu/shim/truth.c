/* SPDX-License-Identifier: MIT */
/*
 * Ground truth for tests: one JSON line per XCC when SPM is released
 * (RELEASE, last KFD close, exit), appended to $SPMTAP_EMU_TRUTH with one
 * O_APPEND write per line so concurrent processes never interleave.
 * Invariant: produced = copied + every lost_* and discarded_* field.
 * "device" says where the engine ran (spm_device.h) and "device_cpu_s" what
 * it cost there: the device process's CPU, or the caller's inside the
 * inline engine; the same on every XCC line of one session.
 */
#include "emu/shim/shim.h"
#include "emu/shim/gpu_state.h"
#include "emu/shim/rlc.h"
#include "emu/shim/spm_engine.h"
#include "emu/shim/spm_device.h"

#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* The device's CPU for this session: its whole process, or the caller's time in the inline engine. */
static double emu_truth_device_cpu_s(const struct emu_spm *s)
{
	if (!s->in_device)
		return (double)s->cpu_ns / 1e9;
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void emu_truth_release(const struct emu_spm *s)
{
	if (s->dev) {
		/* The engine, and so the truth, is the device process's. */
		emu_dev_call((struct emu_spm *)s, EMU_DEV_TRUTH, 0, 0, 0);
		return;
	}
	const char *path = getenv("SPMTAP_EMU_TRUTH");
	if (!path || !*path)
		return;
	double cpu_s = emu_truth_device_cpu_s(s);
	int fd = emu_real_open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		emu_log("cannot append to SPMTAP_EMU_TRUTH=%s\n", path);
		return;
	}
	for (uint32_t k = 0; k < s->num_xcc; k++) {
		const struct emu_spm_counts *c = &s->x[k].c;
		uint64_t lost = c->lost_overflow + c->lost_no_buffer + c->lost_injected + c->lost_efault +
				c->discarded_stop + c->discarded_release;
		char line[1024];
		int n = snprintf(line, sizeof(line),
				 "{\"event\":\"release\",\"pid\":%d,\"gpu_id\":%u,\"xcc\":%u,\"gen\":\"%c\","
				 "\"produced_bytes\":%llu,\"copied_bytes\":%llu,\"lost_bytes\":%llu,"
				 "\"lost_overflow_bytes\":%llu,\"lost_no_buffer_bytes\":%llu,"
				 "\"lost_injected_bytes\":%llu,\"lost_efault_bytes\":%llu,"
				 "\"discarded_stop_bytes\":%llu,\"discarded_release_bytes\":%llu,\"lines\":%llu,"
				 "\"lost_late_bytes\":%llu,\"device\":\"%s\",\"device_cpu_s\":%.6f",
				 s->user_pid ? s->user_pid : (int)getpid(), s->gpu_id, k, s->gen == EMU_GEN_A ? 'A' : 'B',
				 (unsigned long long)c->produced, (unsigned long long)c->copied,
				 (unsigned long long)lost, (unsigned long long)c->lost_overflow,
				 (unsigned long long)c->lost_no_buffer, (unsigned long long)c->lost_injected,
				 (unsigned long long)c->lost_efault, (unsigned long long)c->discarded_stop,
				 (unsigned long long)c->discarded_release,
				 (unsigned long long)(c->produced / EMU_SPM_LINE),
				 (unsigned long long)c->lost_late, s->in_device ? "process" : "inline",
				 cpu_s);
		if (s->gs && n > 0 && (size_t)n < sizeof(line)) {
			/* The GPU's kernel activity log so far (counters follow kernels, kernel_activity.h). */
			struct emu_gs_klog *kl = emu_gs_klog(s->gs);
			emu_gs_lock(s->gs);
			unsigned long long logged = kl->head, dropped = kl->dropped;
			emu_gs_unlock(s->gs);
			n += snprintf(line + n, sizeof(line) - (size_t)n,
				      ",\"kernels_logged\":%llu,\"kernels_dropped\":%llu", logged, dropped);
		}
		const struct emu_rlc_layout *L = emu_spm_last_layout(s, k);
		if (L && n > 0 && (size_t)n < sizeof(line)) {
			line[n++] = ',';
			n += emu_rlc_layout_json(L, line + n, sizeof(line) - (size_t)n);
		}
		if (n > 0 && (size_t)n + 2 < sizeof(line)) {
			line[n++] = '}';
			line[n++] = '\n';
		}
		if (c->produced != c->copied + lost)
			emu_log("truth invariant broken on gpu 0x%x xcc %u\n", s->gpu_id, k);
		if (write(fd, line, (size_t)n) != n)
			emu_log("short write to %s\n", path);
	}
	emu_real_close(fd);
}
