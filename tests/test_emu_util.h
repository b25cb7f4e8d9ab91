/* SPDX-License-Identifier: MIT */
/*
 * Shared by the emulator suites: raw KFD setup, the SPM ioctl, an
 * independent checker of the self-checking pattern (written from
 * docs/emulator.md, not from the shim) and the ground-truth reader.
 */
#ifndef SPMTAP_TEST_EMU_UTIL_H
#define SPMTAP_TEST_EMU_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "testenv.h"
#include "uapi/kfd_spm.h"

#define LINE 32u

static inline void ms_sleep(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static inline double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Opens /dev/kfd like hsaKmtOpenKFD: GET_VERSION, then ACQUIRE_VM per listed gpu_id. */
static inline int kfd_open_vm(const uint32_t *gpu_ids, const unsigned *minors, int n)
{
	int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	if (kfd < 0)
		return -1;
	struct spmtap_kfd_get_version_args v = { 0, 0 };
	if (ioctl(kfd, SPMTAP_KFD_IOC_GET_VERSION, &v) || v.major_version != 1)
		return -1;
	for (int i = 0; i < n; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/dev/dri/renderD%u", minors[i]);
		int drm = open(path, O_RDWR | O_CLOEXEC);
		struct spmtap_kfd_acquire_vm_args a = { (uint32_t)drm, gpu_ids[i] };
		/* EBUSY: this process's VM came from another render-node file (libhsakmt's), as amdkfd says. */
		if (drm < 0 || (ioctl(kfd, SPMTAP_KFD_IOC_ACQUIRE_VM, &a) && errno != EBUSY))
			return -1;
	}
	return kfd;
}

/* One RLC_SPM call; returns 0 or the errno. */
static inline int spm_call(int kfd, uint32_t gpu, uint32_t op, void *dest, uint32_t size, uint32_t *timeout,
			   uint32_t *copied, uint32_t *loss)
{
	struct spmtap_kfd_spm_args a = { (uint64_t)(uintptr_t)dest, size, op, timeout ? *timeout : 0, gpu, 0xEEEE, 0xEEEE };
	int rc = ioctl(kfd, SPMTAP_KFD_IOC_RLC_SPM, &a) ? errno : 0;
	if (timeout)
		*timeout = a.timeout;
	if (copied)
		*copied = a.bytes_copied;
	if (loss)
		*loss = a.has_data_loss;
	return rc;
}

static inline int spm_op(int kfd, uint32_t gpu, uint32_t op)
{
	return spm_call(kfd, gpu, op, NULL, 0, NULL, NULL, NULL);
}

static inline int spm_set(int kfd, uint32_t gpu, void *dest, uint32_t size, uint32_t timeout, uint32_t *copied,
			  uint32_t *loss)
{
	return spm_call(kfd, gpu, SPMTAP_KFD_SPM_OP_SET_DEST_BUF, dest, size, &timeout, copied, loss);
}

static inline uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Everything one XCC delivered, as one byte stream, and what the checker found in it. */
struct stream {
	uint8_t *bytes;
	size_t len, cap;
	uint64_t lines, first_seq, last_seq, gap_lines, bad, first_ts, last_ts;
};

static inline void stream_add(struct stream *s, const void *p, size_t n)
{
	if (s->len + n > s->cap) {
		s->cap = (s->len + n) * 2;
		s->bytes = realloc(s->bytes, s->cap);
	}
	memcpy(s->bytes + s->len, p, n);
	s->len += n;
}

/* Checks every line: magic, xcc, gpu, check word, increasing seq and timestamp. */
static inline void stream_check(struct stream *s, uint16_t xcc, uint32_t gpu_id)
{
	s->lines = s->gap_lines = s->bad = 0;
	for (size_t off = 0; off + LINE <= s->len; off += LINE) {
		const uint8_t *l = s->bytes + off;
		uint64_t ts = le(l, 8), seq = le(l + 8, 8);
		uint64_t chk = seq * 0x9E3779B97F4A7C15ull ^ ts ^ ((uint64_t)xcc << 48);
		if (le(l + 16, 4) != 0x544D5053u || le(l + 20, 2) != xcc || le(l + 22, 2) != (gpu_id & 0xFFFF) ||
		    le(l + 24, 8) != chk) {
			s->bad++;
			continue;
		}
		if (s->lines == 0) {
			s->first_seq = seq;
			s->first_ts = ts;
		} else {
			if (seq <= s->last_seq || ts < s->last_ts)
				s->bad++;
			else
				s->gap_lines += seq - s->last_seq - 1;
		}
		s->last_seq = seq;
		s->last_ts = ts;
		s->lines++;
	}
	if (s->len % LINE)
		s->bad++;
}

static inline void stream_free(struct stream *s)
{
	free(s->bytes);
	memset(s, 0, sizeof(*s));
}

/* The last truth record of this process for gpu_id/xcc, or NULL (caller json_decref's). */
static inline json_t *truth_last(uint32_t gpu_id, unsigned xcc)
{
	const char *path = getenv("SPMTAP_EMU_TRUTH");
	json_t *found = NULL;
	char line[2048];
	FILE *f = path ? fopen(path, "r") : NULL;
	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		json_t *j = json_loads(line, 0, NULL);
		if (!j)
			continue;
		if (json_integer_value(json_object_get(j, "pid")) == getpid() &&
		    json_integer_value(json_object_get(j, "gpu_id")) == gpu_id &&
		    json_integer_value(json_object_get(j, "xcc")) == xcc) {
			json_decref(found);
			found = j;
		} else {
			json_decref(j);
		}
	}
	fclose(f);
	return found;
}

static inline long long tv(json_t *j, const char *key)
{
	return json_integer_value(json_object_get(j, key));
}

/* produced = copied + lost, and lost = the sum of its parts. */
static inline int truth_consistent(json_t *j)
{
	static const char *const parts[] = { "lost_overflow_bytes", "lost_no_buffer_bytes", "lost_injected_bytes",
					     "lost_efault_bytes", "discarded_stop_bytes", "discarded_release_bytes" };
	long long sum = 0;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		sum += tv(j, parts[i]);
	return j && tv(j, "lost_bytes") == sum && tv(j, "produced_bytes") == tv(j, "copied_bytes") + sum &&
	       tv(j, "lines") * 32 == tv(j, "produced_bytes");
}

#endif
