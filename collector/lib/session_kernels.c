/* SPDX-License-Identifier: MIT */
/*
 * The session's kernel dispatch channel (kernel_reader.h): a thread drains
 * the records libspmtap-tool.so writes while the application runs; at the
 * stop, after the last clock pairs, each record's GPU ticks are mapped to
 * CLOCK_BOOTTIME through its own GPU's timebase (the mapping that GPU's SPM
 * samples use; the tool names the queue's KFD node), NAME_kernels.csv is
 * written (docs/formats/kernels-csv.md) and the writers that keep
 * dispatches (SQLite) get them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/lib/cost.h"
#include "collector/lib/kernel_reader.h"
#include "collector/lib/outset.h"
#include "collector/lib/session_priv.h"
#include "collector/lib/timebase.h"
#include "log.h"

/* Every 5 ms: the default ring (4096 records) takes 800 k dispatches/s; a quarter-full ring is read at once. */
#define KD_POLL_MS 5

static const char csv_header[] = "corr_id,pid,tid,queue_id,packet_index,kernel,grid_x,grid_y,grid_z,wg_x,wg_y,wg_z,"
				 "start_ns,end_ns,start_ticks,end_ticks,status,gpu\n";

/* NAME_kernels.csv.part (outset.h), header only until the stop; NULL with err set. */
static FILE *open_part(struct session *S, char *err, size_t errlen)
{
	char *part = NULL;
	if ((!S->files && out_set_new(&S->files) < 0) || !(part = out_set_part(S->files, S->o.kernels_csv))) {
		spmtap_seterr(err, errlen, ENOMEM, "out of memory");
		return NULL;
	}
	FILE *f = fopen(part, "w");
	if (!f)
		spmtap_seterr(err, errlen, errno, "%s: %s", part, strerror(errno));
	else if (fputs(csv_header, f) < 0 || fflush(f)) {
		spmtap_seterr(err, errlen, EIO, "%s: write failed", part);
		fclose(f);
		f = NULL;
	}
	free(part);
	return f;
}

int ses_kernels_open(struct session *S, char *err, size_t errlen)
{
	S->kd_fd = -1;
	if (!S->o.kernels)
		return 0;
	int rc = kd_reader_create(&S->kd, &S->kd_fd, err, errlen);
	/*
	 * The file is in the set from the start, header only: a killed run
	 * leaves NAME_kernels.csv.part (the records were in memory) and an
	 * earlier run's NAME_kernels.csv as it was.
	 */
	if (!rc && S->o.kernels_csv) {
		FILE *f = open_part(S, err, errlen);
		if (!f)
			return -EIO;
		fclose(f);
	}
	return rc;
}

void *ses_kernels_main(void *arg)
{
	struct session *S = arg;
	pthread_setname_np(pthread_self(), "spmtap-kernels");
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

/* The recorded GPU whose KFD node ran the dispatch; NULL when unknown or not recorded. */
static struct sgpu *gpu_of(struct session *S, uint16_t node)
{
	if (node == KD_NODE_UNKNOWN)
		return NULL;
	for (size_t i = 0; i < S->ng; i++)
		if (S->g[i].dev && S->g[i].dev->node == node)
			return &S->g[i];
	return NULL;
}

/*
 * Each record's ticks through its own GPU's timebase (its clock, its
 * offset): with several GPUs a dispatch is never mapped through another's.
 * Under each timebase's lock, GPU by GPU.
 */
static int map_all(struct session *S, const struct kd_record *r, size_t n)
{
	free(S->kdisp);
	S->kdisp = n ? calloc(n, sizeof(*S->kdisp)) : NULL;
	S->nkdisp = 0;
	if (n && !S->kdisp)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct series_dispatch *d = &S->kdisp[i];
		struct sgpu *g = gpu_of(S, r[i].node);
		*d = (struct series_dispatch){
			.corr_id = r[i].corr, .queue_id = r[i].queue_id, .packet_index = r[i].index,
			.start_ticks = r[i].start_ticks, .end_ticks = r[i].end_ticks, .start_ns = -1, .end_ns = -1,
			.pid = r[i].pid, .tid = r[i].tid, .status = r[i].status,
			.gpu = g ? (int32_t)g->dev->index : -1, .kernel = r[i].name,
		};
		memcpy(d->grid, r[i].grid, sizeof(d->grid));
		for (int k = 0; k < 3; k++)
			d->wg[k] = r[i].wg[k];
	}
	for (size_t gi = 0; gi < S->ng; gi++) {
		struct sgpu *g = &S->g[gi];
		if (!g->tb)
			continue;
		pthread_mutex_lock(&g->tb_lock);
		for (size_t i = 0; i < n; i++) {
			struct series_dispatch *d = &S->kdisp[i];
			spmtap_host_ns a, b;
			if (d->status || gpu_of(S, r[i].node) != g)
				continue;
			if (tb_map_gpu(g->tb, d->start_ticks, &a) >= 0 && tb_map_gpu(g->tb, d->end_ticks, &b) >= 0)
				d->start_ns = a, d->end_ns = b;
		}
		pthread_mutex_unlock(&g->tb_lock);
	}
	S->nkdisp = n;
	return 0;
}

/*
 * NAME_kernels.csv: written whole at the end as FINAL.part, in the
 * session's file set (outset.h), renamed with the rest at the clean end: a
 * killed run leaves the .part and an earlier run's file as it was.
 */
static int write_csv(struct session *S, char *err, size_t errlen)
{
	FILE *f = open_part(S, err, errlen);
	if (!f)
		return -EIO;
	for (size_t i = 0; i < S->nkdisp; i++) {
		const struct series_dispatch *d = &S->kdisp[i];
		fprintf(f, "%" PRIu64 ",%u,%u,%" PRIu64 ",%" PRIu64 ",", d->corr_id, d->pid, d->tid, d->queue_id,
			d->packet_index);
		csv_name(f, d->kernel);
		fprintf(f, ",%u,%u,%u,%u,%u,%u,", d->grid[0], d->grid[1], d->grid[2], d->wg[0], d->wg[1], d->wg[2]);
		if (d->start_ns >= 0)
			fprintf(f, "%" PRId64 ",%" PRId64 ",", d->start_ns, d->end_ns);
		else
			fputs(",,", f);
		fprintf(f, "%" PRIu64 ",%" PRIu64 ",%d,", d->start_ticks, d->end_ticks, d->status);
		if (d->gpu >= 0)
			fprintf(f, "%d", d->gpu);
		fputc('\n', f);
	}
	int bad = ferror(f);
	if (fclose(f) || bad)
		return spmtap_seterr(err, errlen, EIO, "%s%s: write failed", S->o.kernels_csv, OUTSET_PART);
	return 0;
}

/* After the last pairs: map, write the CSV, queue the Perfetto slices.  0, or -errno with err set. */
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
	size_t n;
	const struct kd_record *r = kd_reader_records(S->kd, &n);
	if (map_all(S, r, n) < 0)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory for kernel dispatch times");
	if (S->o.kernels_csv) {
		int rc = write_csv(S, err, errlen);
		if (rc < 0)
			return rc;
	}
	size_t nslice_fail = 0;
	for (size_t i = 0; i < S->nkdisp; i++) {
		const struct series_dispatch *d = &S->kdisp[i];
		if (d->start_ns < 0 || d->end_ns < d->start_ns)
			continue;
		/* A slice on its queue's track in the Perfetto output (the CSV/SQLite writers skip it). */
		struct series_slice sl = { .start_ns = d->start_ns, .end_ns = d->end_ns, .name = d->kernel,
					   .track = (uint32_t)d->queue_id, .category = "kernel", .pid = d->pid,
					   .gpu = (uint32_t)d->gpu };
		if (session_add_phase(S, &sl) < 0)
			nslice_fail++;
	}
	if (nslice_fail)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory for %zu kernel slices", nslice_fail);
	return 0;
}

/* After the writer thread has ended: every writer that keeps dispatches gets them (writer.h). */
int ses_kernels_to_writers(struct session *S, char *err, size_t errlen)
{
	for (size_t k = 0; k < S->nw && S->kd; k++)
		if (S->w[k] && S->wops[k]->dispatches) {
			int rc = S->wops[k]->dispatches(S->w[k], S->kdisp, S->nkdisp, err, errlen);
			if (rc < 0)
				return rc;
		}
	return 0;
}

const struct series_dispatch *session_kernels(const struct session *S, size_t *n)
{
	*n = S->kd ? S->nkdisp : 0;
	return S->kd ? S->kdisp : NULL;
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
