/* SPDX-License-Identifier: MIT */
/*
 * The session's kernel dispatch channel (kernel_reader.h): a thread drains
 * the records libspmtap-tool.so writes while the application runs; at the
 * stop, after the last clock pairs, each record's GPU ticks are mapped to
 * CLOCK_BOOTTIME through the first GPU's timebase (the mapping the SPM
 * samples use) and NAME_kernels.csv is written (docs/formats/kernels-csv.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/lib/cost.h"
#include "collector/lib/kernel_reader.h"
#include "collector/lib/session_priv.h"
#include "collector/lib/timebase.h"
#include "log.h"

/* Every 5 ms: the default ring (4096 records) takes 800 k dispatches/s; a quarter-full ring is read at once. */
#define KD_POLL_MS 5

int ses_kernels_open(struct session *S, char *err, size_t errlen)
{
	S->kd_fd = -1;
	if (!S->o.kernels)
		return 0;
	return kd_reader_create(&S->kd, &S->kd_fd, err, errlen);
}

void *ses_kernels_main(void *arg)
{
	struct session *S = arg;
	while (!atomic_load(&S->kd_stop)) {
		int most = kd_reader_poll(S->kd);
		if (most < 0)
			break;
		if (most < (int)(KD_EVENTS_DEFAULT / 4))
			ses_sleep_ms(KD_POLL_MS);
	}
	return NULL;
}

int session_kernels_fd(const struct session *S)
{
	return S->kd ? S->kd_fd : -1;
}

static void csv_name(FILE *f, const char *n)
{
	/* Names are C identifiers or mangled names; a quote or comma is escaped anyway. */
	if (!strpbrk(n, "\",\n")) {
		fputs(n, f);
		return;
	}
	fputc('"', f);
	for (; *n; n++) {
		if (*n == '"')
			fputc('"', f);
		fputc(*n == '\n' ? ' ' : *n, f);
	}
	fputc('"', f);
}

/* After the last pairs: map and write.  0, or -errno with err set. */
int ses_kernels_finish(struct session *S, char *err, size_t errlen)
{
	if (!S->kd)
		return 0;
	if (S->kd_running) {
		atomic_store(&S->kd_stop, true);
		pthread_join(S->kd_thr, NULL);
		S->kd_running = false;
	}
	if (kd_reader_poll(S->kd) < 0)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory for kernel dispatch records");
	if (!S->o.kernels_csv)
		return 0;
	FILE *f = fopen(S->o.kernels_csv, "w");
	if (!f)
		return spmtap_seterr(err, errlen, errno, "%s: %s", S->o.kernels_csv, strerror(errno));
	fputs("corr_id,pid,tid,queue_id,packet_index,kernel,grid_x,grid_y,grid_z,wg_x,wg_y,wg_z,start_ns,end_ns,"
	      "start_ticks,end_ticks,status\n",
	      f);
	size_t n;
	const struct kd_record *r = kd_reader_records(S->kd, &n);
	/* Mapped first, under the timebase's lock; written and queued after, without it. */
	spmtap_host_ns *t = n ? malloc(2 * n * sizeof(*t)) : NULL;
	if (n && !t) {
		fclose(f);
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory for kernel dispatch times");
	}
	struct sgpu *g = S->ng ? &S->g[0] : NULL;
	if (g)
		pthread_mutex_lock(&g->tb_lock);
	for (size_t i = 0; i < n; i++) {
		bool ok = g && r[i].status == 0 && tb_map_gpu(g->tb, r[i].start_ticks, &t[2 * i]) >= 0 &&
			  tb_map_gpu(g->tb, r[i].end_ticks, &t[2 * i + 1]) >= 0;
		if (!ok)
			t[2 * i] = t[2 * i + 1] = -1;
	}
	if (g)
		pthread_mutex_unlock(&g->tb_lock);
	size_t nslice_fail = 0;
	for (size_t i = 0; i < n; i++, r++) {
		int64_t s = t[2 * i], e = t[2 * i + 1];
		fprintf(f, "%" PRIu64 ",%u,%u,%" PRIu64 ",%" PRIu64 ",", r->corr, r->pid, r->tid, r->queue_id, r->index);
		csv_name(f, r->name);
		fprintf(f, ",%u,%u,%u,%u,%u,%u,", r->grid[0], r->grid[1], r->grid[2], r->wg[0], r->wg[1], r->wg[2]);
		if (s >= 0) {
			fprintf(f, "%" PRId64 ",%" PRId64 ",", s, e);
			/* A slice on its queue's track in the Perfetto output (the CSV/SQLite writers skip it). */
			struct series_slice sl = { .start_ns = s, .end_ns = e, .name = r->name,
						   .track = (uint32_t)r->queue_id, .category = "kernel", .pid = r->pid };
			if (e >= s && session_add_phase(S, &sl) < 0)
				nslice_fail++;
		} else {
			fputs(",,", f);
		}
		fprintf(f, "%" PRIu64 ",%" PRIu64 ",%d\n", r->start_ticks, r->end_ticks, r->status);
	}
	free(t);
	if (fclose(f))
		return spmtap_seterr(err, errlen, EIO, "%s: write failed", S->o.kernels_csv);
	if (nslice_fail)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory for %zu kernel slices", nslice_fail);
	return 0;
}

int session_kernels_counts(const struct session *S, uint64_t *received, uint64_t *dropped)
{
	if (!S->kd)
		return -ENOENT;
	size_t n;
	kd_reader_records(S->kd, &n);
	*received = n;
	*dropped = kd_reader_dropped(S->kd);
	return 0;
}

json_t *ses_kernels_json(const struct session *S)
{
	return S->kd ? kd_reader_json(S->kd) : NULL;
}
