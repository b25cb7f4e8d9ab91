/* SPDX-License-Identifier: MIT */
/*
 * Per-sample ground truth for tests ($SPMTAP_EMU_SAMPLE_TRUTH, format in
 * docs/emulator.md): a JSON header line per derived layout, then one
 * fixed-size binary record per produced sample.  Records are buffered
 * (bounded) and appended with whole-record writes under O_APPEND, flushed
 * when the buffer fills, at stop, release and exit.
 */
#include "emu/shim/rlc.h"
#include "emu/shim/shim.h"
#include "emu/shim/spm_device.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EMU_STRUTH_MAGIC 0x52545053u /* "SPTR" */
#define EMU_STRUTH_BUF (256u * 1024u)

static uint8_t *emu_st_buf;
static size_t emu_st_len;
static pid_t emu_st_pid; /* cached: getpid() is a syscall per record otherwise */

static uint32_t emu_st_getpid(void)
{
	if (!emu_st_pid)
		emu_st_pid = getpid();
	return (uint32_t)emu_st_pid;
}

/* The device process (spm_device.c) writes its parent's records: they name the SPM owner. */
void emu_struth_set_pid(pid_t pid)
{
	emu_st_pid = pid;
}

void emu_struth_after_fork(void)
{
	/* The child inherits the parent's unwritten records: they are the parent's to write. */
	emu_st_len = 0;
	emu_st_pid = 0;
}

bool emu_struth_enabled(void)
{
	const char *p = getenv("SPMTAP_EMU_SAMPLE_TRUTH");
	return p && *p;
}

void emu_struth_flush(void)
{
	const char *path = getenv("SPMTAP_EMU_SAMPLE_TRUTH");
	if (!emu_st_len)
		return;
	if (!path || !*path) {
		emu_st_len = 0;
		return;
	}
	int fd = emu_real_open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		emu_log("cannot append to SPMTAP_EMU_SAMPLE_TRUTH=%s\n", path);
	} else {
		if (write(fd, emu_st_buf, emu_st_len) != (ssize_t)emu_st_len)
			emu_log("short write to %s\n", path);
		emu_real_close(fd);
	}
	emu_st_len = 0;
}

static void emu_st_append(const void *p, size_t n)
{
	if (!emu_st_buf) {
		emu_st_buf = malloc(EMU_STRUTH_BUF);
		if (!emu_st_buf)
			return;
	}
	if (emu_st_len + n > EMU_STRUTH_BUF)
		emu_struth_flush();
	if (n > EMU_STRUTH_BUF) {
		/* Larger than the buffer (a huge layout header): straight through. */
		const char *path = getenv("SPMTAP_EMU_SAMPLE_TRUTH");
		int fd = emu_real_open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fd >= 0) {
			if (write(fd, p, n) != (ssize_t)n)
				emu_log("short write to %s\n", path);
			emu_real_close(fd);
		}
		return;
	}
	memcpy(emu_st_buf + emu_st_len, p, n);
	emu_st_len += n;
}

static const char *const emu_part_names[] = { "ts", "16", "lo", "hi" };

static size_t emu_st_header(const struct emu_rlc_layout *L, char *buf, size_t len)
{
	size_t o = 0;
	o += (size_t)snprintf(buf + o, len - o,
			      "{\"type\":\"layout\",\"pid\":%d,\"gpu_id\":%u,\"xcc\":%u,\"layout_id\":%u,\"gfx\":\"%s\","
			      "\"G\":%u,\"S\":[",
			      (int)emu_st_getpid(), L->gpu_id, L->xcc, L->id, emu_gfx_name(L->gfx), L->G);
	for (uint32_t se = 0; se < L->num_se && o < len; se++)
		o += (size_t)snprintf(buf + o, len - o, "%s%u", se ? "," : "", L->S[se]);
	o += (size_t)snprintf(buf + o, len - o,
			      "],\"num_se\":%u,\"lines\":%u,\"sample_bytes\":%u,\"interval\":%u,\"sclk_mhz\":%u,"
			      "\"nvals\":%u,\"slots\":[",
			      L->num_se, L->lines, L->sample_bytes, L->interval, L->sclk_mhz, L->ncnt);
	int first = 1;
	for (uint32_t i = 0; i < L->nent && o < len; i++) {
		const struct emu_rlc_entry *e = &L->ent[i];
		if (e->part == EMU_PART_TS)
			continue;
		o += (size_t)snprintf(buf + o, len - o,
				      "%s{\"se\":%d,\"slot\":%u,\"off\":%u,\"mux\":%u,\"block\":\"%s\",\"block_id\":%u,"
				      "\"instance\":%u,\"counter\":%u,\"event\":%u,\"width\":%u,\"part\":\"%s\","
				      "\"clamp\":%s,\"name\":\"%s\"}",
				      first ? "" : ",", e->se, e->slot, e->off, e->mux, emu_blk((enum emu_blk)e->blk)->name,
				      emu_blk((enum emu_blk)e->blk)->spm_id, e->inst, e->cntr, e->event, e->width,
				      emu_part_names[e->part], e->no_clamp ? "false" : "true", e->m.name ? e->m.name : "");
		first = 0;
	}
	if (o < len)
		o += (size_t)snprintf(buf + o, len - o, "]}\n");
	return o < len ? o : 0;
}

void emu_struth_record(struct emu_rlc_layout *L, uint32_t xcc, uint64_t sample_seq, uint64_t ticks,
		       uint32_t flags, const uint64_t *vals)
{
	if (!L->truth_header_done) {
		size_t len = 1024 + (size_t)L->ncnt * 240;
		char *h = malloc(len);
		size_t n = h ? emu_st_header(L, h, len) : 0;
		if (n)
			emu_st_append(h, n);
		free(h);
		L->truth_header_done = true;
	}
	uint32_t hdr[6] = { EMU_STRUTH_MAGIC, emu_st_getpid(), L->id, xcc, flags, L->ncnt };
	uint64_t hdr2[2] = { sample_seq, ticks };
	size_t n = sizeof(hdr) + sizeof(hdr2) + (size_t)L->ncnt * 8;
	uint8_t rec[40 + 8 * 16];
	uint8_t *p = n <= sizeof(rec) ? rec : malloc(n);
	if (!p)
		return;
	memcpy(p, hdr, sizeof(hdr));
	memcpy(p + sizeof(hdr), hdr2, sizeof(hdr2));
	if (vals)
		memcpy(p + 40, vals, (size_t)L->ncnt * 8);
	else
		memset(p + 40, 0, (size_t)L->ncnt * 8); /* a sample lost unmade (EMU_UNIT_LATE) */
	emu_st_append(p, n);
	if (p != rec)
		free(p);
}

int emu_rlc_layout_json(const struct emu_rlc_layout *L, char *buf, size_t len)
{
	int o = snprintf(buf, len, "\"layout\":{\"layout_id\":%u,\"G\":%u,\"S\":%u,\"S_per_se\":[", L->id, L->G,
			 L->S[0]);
	for (uint32_t se = 0; se < L->num_se && (size_t)o < len; se++)
		o += snprintf(buf + o, len - (size_t)o, "%s%u", se ? "," : "", L->S[se]);
	if ((size_t)o < len)
		o += snprintf(buf + o, len - (size_t)o,
			      "],\"num_se\":%u,\"lines\":%u,\"interval\":%u,\"sclk_mhz\":%u,\"sample_bytes\":%u,"
			      "\"counters\":%u}",
			      L->num_se, L->lines, L->interval, L->sclk_mhz, L->sample_bytes, L->ncnt);
	return o;
}
