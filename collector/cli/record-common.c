/* SPDX-License-Identifier: MIT */
/* Signals, metadata and raw regions shared by the recording paths (record.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/cli/record.h"
#include "log.h"

_Atomic int rec_stop_signal;

static void on_signal(int sig) { rec_stop_signal = sig; }

void rec_signals_install(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

void rec_signals_block(sigset_t *old)
{
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, old);
}

void rec_signals_restore(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

uint64_t rec_now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int rec_append_json(struct rawfile_writer *w, uint16_t type, json_t *j, char *err, size_t errlen)
{
	char *s = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(j);
	if (!s)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	int rc = rawfile_append(w, type, 0, 0, 0, rec_now_ns(CLOCK_BOOTTIME), s, (uint32_t)strlen(s),
				err, errlen);
	free(s);
	return rc;
}

json_t *rec_meta_json(const struct spm_device *d, const char *backend, enum spm_gen gen,
		      const struct rec_opts *o, uint32_t size, uint32_t nbuf)
{
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	const char *emu = getenv("SPMTAP_EMU_ACTIVE");
	return json_pack(
		"{s:s, s:{s:i, s:i, s:i, s:s, s:i, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i}, s:s, s:s,"
		" s:{s:s, s:f, s:i, s:i, s:s}, s:s, s:b}",
		"spmtap_version", spmtap_version_string(),
		"device",
		"index", (json_int_t)d->index, "gpu_id", (json_int_t)d->gpu_id, "node", (json_int_t)d->node,
		"gfx", d->gfx, "gfx_target_version", (json_int_t)d->gfx_target_version, "name", d->name,
		"marketing_name", d->marketing_name, "num_xcc", (json_int_t)d->num_xcc,
		"num_se", (json_int_t)d->num_se, "cu_count", (json_int_t)d->cu_count,
		"device_id", (json_int_t)d->device_id, "location_id", (json_int_t)d->location_id,
		"render_minor", (json_int_t)d->drm_render_minor,
		"backend", backend, "spm_gen", spm_gen_name(gen),
		"options", "device", o->device, "duration_s", o->duration,
		"buffer_size", (json_int_t)size, "buffers", (json_int_t)nbuf,
		"spm_gen", o->gen == SPM_GEN_UNKNOWN ? "auto" : spm_gen_name(o->gen),
		"hostname", host, "emulated", emu && *emu);
}

void rec_raw_header(struct rawfile_header *h, const struct spm_device *dev, const char *backend,
		    enum spm_gen gen, uint32_t size, uint32_t nbuffers)
{
	*h = (struct rawfile_header){
		.gpu_id = dev->gpu_id, .node = dev->node,
		.gfx_target_version = dev->gfx_target_version, .num_xcc = dev->num_xcc,
		.num_se = dev->num_se, .gen = gen == SPM_GEN_B ? RAWFILE_GEN_B : RAWFILE_GEN_A,
		.buffer_size = size, .nbuffers = nbuffers,
		.start_boottime_ns = rec_now_ns(CLOCK_BOOTTIME),
	};
	snprintf(h->backend, sizeof(h->backend), "%.8s", backend);
}

void rec_raw_region(struct rawfile_writer *w, struct rec_totals *t, const struct feeder_buf *b,
		    const struct dec_part *p, const void *data)
{
	uint32_t flags = (p->loss ? RAWFILE_F_LOSS : 0) | (p->bad ? RAWFILE_F_BAD : 0);
	if (!t->buffers || b->seq != t->last_seq) {
		t->buffers++;
		t->last_seq = b->seq;
	}
	t->regions[p->xcc]++;
	t->loss_regions[p->xcc] += p->loss;
	t->bad_regions[p->xcc] += p->bad;
	t->bytes[p->xcc] += p->bytes;
	if ((p->bytes || flags) && !t->write_error) {
		int rc = rawfile_append(w, RAWFILE_SPM, (uint16_t)p->xcc, flags, b->seq, b->host_ns, data,
					p->bytes, t->write_msg, sizeof(t->write_msg));
		if (rc < 0)
			t->write_error = rc;
	}
}
