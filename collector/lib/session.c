/* SPDX-License-Identifier: MIT */
/*
 * A recording session over several GPUs (session.h, docs/architecture.md
 * "Session"): its life.  Open (every GPU prepared, writers open), start (the
 * threads), stop (counters stopped, drained, notes written), close.  The
 * jobs it orders live beside it: session_gpu.c (per-GPU setup and stats),
 * session_sinks.c (producers -> the queue), session_threads.c (writer,
 * clock and marker threads), session_meta.c (metadata and end records).
 */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/lib/kernel_reader.h"
#include "collector/lib/marker_reader.h"
#include "collector/lib/outset.h"
#include "collector/lib/session_priv.h"
#include "collector/lib/timebase.h"
#include "log.h"
#include "spm/submit.h"

int64_t ses_now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void ses_sleep_ms(int64_t ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* The first error wins; later ones are logged only. */
void ses_set_error(struct session *S, int rc, const char *msg)
{
	pthread_mutex_lock(&S->lock);
	if (!S->error) {
		S->error = rc < 0 ? rc : -EIO;
		snprintf(S->err, sizeof(S->err), "%s", msg);
	}
	pthread_mutex_unlock(&S->lock);
	atomic_store(&S->failed, true);
}

static void parse_stall(const char *name, int64_t *at, int64_t *dur)
{
	*at = *dur = -1;
	const char *v = getenv(name);
	long long a, d;
	if (v && sscanf(v, "%lld:%lld", &a, &d) == 2 && a >= 0 && d > 0) {
		*at = a;
		*dur = d;
	}
}

int session_open(struct session **out, const struct session_opts *o, char *err, size_t errlen)
{
	*out = NULL;
	if (!o || !o->ngpus || o->ngpus > SESSION_MAX_GPUS ||
	    o->nformats + (o->ticks_csv != NULL) > SESSION_MAX_WRITERS ||
	    (!o->ncounters && !o->smi_metrics && !o->raw_path && !o->cray))
		return spmtap_seterr(err, errlen, EINVAL,
				     "a session needs 1..%u GPUs, at most %u formats, and counters, sensors "
				     "or a raw container", SESSION_MAX_GPUS, SESSION_MAX_WRITERS);
	if ((o->raw_path || o->ticks_csv) && (o->ngpus != 1 || (o->ticks_csv && !o->ncounters)))
		return spmtap_seterr(err, errlen, EINVAL,
				     "a raw container or a tick CSV is one GPU's stream (and the CSV needs counters)");
	struct session *S = calloc(1, sizeof(*S));
	if (!S)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	S->o = *o;
	S->spm_hz = o->spm_clock_hz > 0 ? o->spm_clock_hz : TB_DEFAULT_GPU_HZ;
	pthread_mutex_init(&S->lock, NULL);
	pthread_cond_init(&S->clock_cv, NULL);
	if (spsc_init(&S->q, o->queue_chunks ? o->queue_chunks : SESSION_QUEUE_DEFAULT) < 0) {
		free(S);
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	}
	S->mk_fd = -1;
	S->kd_fd = -1;
	atomic_store(&S->end_boot, INT64_MAX);
	*out = S;
	if (o->markers) {
		int rc = mk_reader_create(&S->mk, &S->mk_fd, err, errlen);
		if (rc < 0)
			return rc;
	}
	int krc = ses_kernels_open(S, err, errlen);
	if (krc < 0)
		return krc;
	char reason[SPM_ERRLEN] = "";
	S->bops = o->backend;
	if (!S->bops) {
		for (const struct spm_backend_ops *const *b = spm_backends(); *b; b++) {
			reason[0] = 0;
			if ((*b)->probe(reason, sizeof(reason)) == 0) {
				S->bops = *b;
				break;
			}
		}
		if (!S->bops)
			return spmtap_seterr(err, errlen, ENODEV, "no SPM backend is usable: %s", reason);
	}
	for (size_t i = 0; i < o->ngpus; i++) {
		if (o->gpus[i] >= o->ndev)
			return spmtap_seterr(err, errlen, ENODEV, "no GPU %u", o->gpus[i]);
		for (size_t j = 0; j < i; j++)
			if (o->gpus[j] == o->gpus[i])
				return spmtap_seterr(err, errlen, EINVAL, "GPU %u given twice", o->gpus[i]);
		struct sgpu *g = &S->g[S->ng++];
		g->S = S;
		g->dev = &o->devs[o->gpus[i]];
		/* Queues first: libhsakmt must take the KFD VM before a backend with its own render fd. */
		if (o->ncounters) {
			int r = spm_submitter_open(g->dev, o->submitter, &g->sops, &g->sub, g->sub_note, err, errlen);
			if (r < 0)
				return r;
		}
	}
	int rc = S->bops->open(&S->b, o->devs, o->ndev, err, errlen);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < S->ng; i++) {
		struct sgpu *g = &S->g[i];
		rc = ses_gpu_prepare(S, g, err, errlen);
		if (!rc && o->smi_metrics) {
			rc = ses_gpu_smi(S, g);
			if (rc < 0 && g->smi_note[0])
				spmtap_seterr(err, errlen, -rc, "%s", g->smi_note);
			else if (rc < 0)
				spmtap_seterr(err, errlen, -rc, "GPU %u: cannot start the sensor sampler",
					      g->dev->index);
		}
		if (rc < 0)
			return rc;
	}
	/* At or before the outputs' start_boottime_ns, which ses_open_writers takes next. */
	S->start_boot = ses_now_ns(CLOCK_BOOTTIME);
	rc = ses_open_writers(S, err, errlen);
	return rc < 0 || !o->cray ? rc : ses_cray_open(S, err, errlen);
}

int64_t session_start_boottime(const struct session *S) { return S->start_boot; }

int64_t session_end_boottime(const struct session *S) { return atomic_load(&((struct session *)S)->end_boot); }

void session_set_end(struct session *S, int64_t boottime_ns)
{
	int64_t cur = atomic_load(&S->end_boot);
	while (boottime_ns < cur && !atomic_compare_exchange_weak(&S->end_boot, &cur, boottime_ns))
		;
}

int session_start(struct session *S, char *err, size_t errlen)
{
	if (S->started)
		return spmtap_seterr(err, errlen, EALREADY, "the session was started already");
	S->started = true;
	parse_stall("SPMTAP_DECODE_STALL", &S->decode_stall_at, &S->decode_stall_dur);
	parse_stall("SPMTAP_WRITER_STALL", &S->writer_stall_at, &S->writer_stall_dur);
	/* Threads of the library never take the application's signals. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int rc = 0;
	S->t0_mono = ses_now_ns(CLOCK_MONOTONIC);
	if (pthread_create(&S->writer_thr, NULL, ses_writer_main, S)) {
		rc = spmtap_seterr(err, errlen, EAGAIN, "cannot start the writer thread");
		goto out;
	}
	S->writer_running = true;
	/* Timebase pairs before the run: the fit exists before the first chunk. */
	for (int k = 0; k < 4; k++) {
		for (size_t i = 0; i < S->ng; i++)
			ses_add_pair(S, &S->g[i]);
		ses_sleep_ms(2);
	}
	if (pthread_create(&S->clock_thr, NULL, ses_clock_main, S)) {
		rc = spmtap_seterr(err, errlen, EAGAIN, "cannot start the clock thread");
		goto out;
	}
	S->clock_running = true;
	if (S->mk) {
		if (pthread_create(&S->mk_thr, NULL, ses_marker_main, S)) {
			rc = spmtap_seterr(err, errlen, EAGAIN, "cannot start the marker thread");
			goto out;
		}
		S->mk_running = true;
	}
	if (S->kd) {
		if (pthread_create(&S->kd_thr, NULL, ses_kernels_main, S)) {
			rc = spmtap_seterr(err, errlen, EAGAIN, "cannot start the kernel dispatch thread");
			goto out;
		}
		S->kd_running = true;
	}
	for (size_t i = 0; i < S->ng && !rc; i++) {
		struct sgpu *g = &S->g[i];
		if (!g->st)
			continue;
		struct feeder_opts fo = { .nbuffers = S->o.nbuffers, .buffer_size = g->size,
					  .spill = ses_spill_opts(S, g) };
		char e[SES_ERRLEN] = "";
		/* Without counters there is no program: the stream runs as it is (the emulator's pattern). */
		if (g->plan)
			rc = prime_start(&g->prime, g->st, g->dev, g->sops, g->sub, g->start.dw, g->start.n,
					 &fo, e, sizeof(e));
		else
			rc = feeder_start(&g->prime.f, g->st, g->dev, &fo, e, sizeof(e));
		if (g->prime.f) {
			g->f = g->prime.f;
			g->st = NULL;
			int r2 = dthr_start(g->dt, g->f, e, sizeof(e));
			if (r2 < 0 && !rc)
				rc = r2;
		}
		if (rc < 0)
			spmtap_seterr(err, errlen, -rc, "GPU %u: %s", g->dev->index, e);
		else
			g->started = true;
	}
	for (size_t i = 0; i < S->ng && !rc; i++)
		if (S->g[i].smi) {
			rc = smi_sampler_start(S->g[i].smi);
			if (rc < 0)
				spmtap_seterr(err, errlen, -rc, "GPU %u: cannot start the sensor sampler",
					      S->g[i].dev->index);
		}
	if (!rc)
		rc = ses_cray_start(S, err, errlen);
out:
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* Only a run that started replaces earlier outputs (ses_outputs_finish). */
	S->start_ok = rc == 0;
	return rc;
}

void session_progress(struct session *S, struct session_progress *p)
{
	memset(p, 0, sizeof(*p));
	p->seconds = S->t0_mono ? (double)(ses_now_ns(CLOCK_MONOTONIC) - S->t0_mono) / 1e9 : 0;
	p->samples = atomic_load(&S->samples);
	p->smi_samples = atomic_load(&S->smi_samples);
	p->chunks_written = atomic_load(&S->chunks);
	for (size_t i = 0; i < S->ng; i++)
		if (S->g[i].dt)
			p->lost_samples += dthr_lost_live(S->g[i].dt);
	uint64_t sb = 0;
	for (size_t i = 0; i < S->ng; i++)
		if (S->g[i].dt) {
			sb = dthr_sample_bytes(S->g[i].dt);
			break;
		}
	p->bytes = p->samples * sb;
	p->queue_depth = spsc_count(&S->q);
}

bool session_failed(struct session *S)
{
	for (size_t i = 0; i < S->ng; i++)
		if (S->g[i].dt && dthr_failed(S->g[i].dt))
			return true;
	return atomic_load(&S->failed);
}

void session_set_stop_reason(struct session *S, const char *why) { S->stop_reason = why; }

int session_set_job(struct session *S, const char *json_text)
{
	json_t *j = json_loads(json_text, 0, NULL);
	bool ok = j && json_is_object(j);
	json_decref(j);
	if (!ok)
		return -EINVAL;
	char *c = strdup(json_text);
	if (!c)
		return -ENOMEM;
	pthread_mutex_lock(&S->lock);
	free(S->job_json);
	S->job_json = c;
	pthread_mutex_unlock(&S->lock);
	return 0;
}

const char *session_layout(const struct session *S, size_t i)
{
	return i < S->ng ? S->g[i].layout_text : NULL;
}

const char *session_size_note(const struct session *S, size_t i)
{
	return i < S->ng ? S->g[i].size_note : "";
}

int session_stop(struct session *S, char *err, size_t errlen)
{
	if (S->stopped)
		return S->error;
	S->stopped = true;
	S->stop_mono = ses_now_ns(CLOCK_MONOTONIC);
	session_set_end(S, ses_now_ns(CLOCK_BOOTTIME));
	char e[SES_ERRLEN];
	/*
	 * Sensors end first: their readings after the end would be left out
	 * anyway, and a stop program that waits for a busy CP (seconds on a
	 * loaded host) should not keep them sampling.
	 */
	for (size_t i = 0; i < S->ng; i++)
		if (S->g[i].smi)
			smi_sampler_stop(S->g[i].smi);
	ses_cray_stop(S);
	/* Stop generation first, so each drain ends on a call that copies nothing. */
	for (size_t i = 0; i < S->ng; i++) {
		struct sgpu *g = &S->g[i];
		if (g->started && g->plan) {
			e[0] = 0;
			int rc = g->sops->submit(g->sub, g->stop.dw, g->stop.n, SPM_SUBMIT_TIMEOUT_MS, e, sizeof(e));
			if (rc < 0) {
				char m[SES_ERRLEN + 64];
				snprintf(m, sizeof(m), "GPU %u: the counter stop program failed: %s",
					 g->dev->index, e[0] ? e : spmtap_strerror(rc));
				ses_set_error(S, rc, m);
			}
		}
		if (g->f)
			feeder_request_stop(g->f);
	}
	/* Acquisition has ended; what waits in memory or the journal is decoded now, with progress. */
	ses_catch_up(S);
	for (size_t i = 0; i < S->ng; i++) {
		struct sgpu *g = &S->g[i];
		if (g->dt && g->f) {
			int rc = dthr_finish(g->dt);
			/* A failed part callback is the raw container's, which says why. */
			const char *raw = S->raw ? raw_writer_error(S->raw) : "";
			if (rc < 0)
				ses_set_error(S, rc, dthr_error(g->dt)[0] ? dthr_error(g->dt)
						     : raw[0] ? raw : spmtap_strerror(rc));
		}
		if (g->f) {
			int rc = feeder_finish(g->f, &g->fs);
			g->have_fs = true;
			g->f = NULL;
			if (rc < 0)
				ses_set_error(S, rc, g->fs.errmsg);
		}
		prime_free(&g->prime);
	}
	ses_spill_settle(S);
	if (S->clock_running) {
		pthread_mutex_lock(&S->lock);
		S->clock_stop = true;
		pthread_cond_broadcast(&S->clock_cv);
		pthread_mutex_unlock(&S->lock);
		pthread_join(S->clock_thr, NULL);
		S->clock_running = false;
	}
	/* Regions still open at the end are closed now, and counted. */
	if (S->mk_running) {
		atomic_store(&S->mk_stop, true);
		pthread_join(S->mk_thr, NULL);
		S->mk_running = false;
		mk_reader_finish(S->mk, ses_now_ns(CLOCK_BOOTTIME), ses_marker_emit, S);
	}
	/* Pairs after the run close the last segment. */
	for (int k = 0; k < 2 && S->started; k++) {
		for (size_t i = 0; i < S->ng; i++)
			ses_add_pair(S, &S->g[i]);
		ses_sleep_ms(1);
	}
	/* Dispatches mapped through the pairs just taken, which cover the last of them. */
	{
		char ke[SES_ERRLEN] = "";
		int krc = ses_kernels_finish(S, ke, sizeof(ke));
		if (krc < 0)
			ses_set_error(S, krc, ke);
	}
	spsc_close(&S->q);
	if (S->writer_running) {
		pthread_join(S->writer_thr, NULL);
		S->writer_running = false;
	}
	/* The writers are this thread's now: the dispatches, mapped above, into those that keep them. */
	if (!S->error) {
		char ke[SES_ERRLEN] = "";
		int krc = ses_kernels_to_writers(S, ke, sizeof(ke));
		if (krc < 0)
			ses_set_error(S, krc, ke);
	}
	json_t *tb = ses_timebase_json(S), *acc = ses_accounting_json(S);
	char *tbs = json_dumps(tb, JSON_COMPACT), *accs = json_dumps(acc, JSON_COMPACT);
	json_decref(tb);
	json_decref(acc);
	char *mks = NULL, *kds = NULL;
	if (S->mk) {
		json_t *m = mk_reader_json(S->mk);
		mks = json_dumps(m, JSON_COMPACT);
		json_decref(m);
	}
	if (S->kd) {
		json_t *m = ses_kernels_json(S);
		kds = json_dumps(m, JSON_COMPACT);
		json_decref(m);
	}
	for (size_t k = 0; k < S->nw; k++) {
		e[0] = 0;
		int rc = 0;
		if (!S->error && S->wops[k]->note) {
			rc = S->wops[k]->note(S->w[k], "timebase", tbs ? tbs : "[]", e, sizeof(e));
			if (!rc)
				rc = S->wops[k]->note(S->w[k], "accounting", accs ? accs : "[]", e, sizeof(e));
			if (!rc && mks)
				rc = S->wops[k]->note(S->w[k], "markers", mks, e, sizeof(e));
			if (!rc && kds)
				rc = S->wops[k]->note(S->w[k], "kernels", kds, e, sizeof(e));
			if (rc < 0) {
				S->writer_failed = true;
				ses_set_error(S, rc, e);
			}
		}
	}
	free(tbs);
	free(accs);
	free(mks);
	free(kds);
	/* The whole metadata, "complete" unless something failed, into every output before it ends. */
	e[0] = 0;
	int mrc = ses_meta_update(S, true, e, sizeof(e));
	if (mrc < 0)
		ses_set_error(S, mrc, e[0] ? e : spmtap_strerror(mrc));
	int err0 = S->error;
	for (size_t k = 0; k < S->nw; k++) {
		e[0] = 0;
		int rc = S->wops[k]->end(S->w[k], e, sizeof(e));
		S->w[k] = NULL;
		if (rc < 0)
			ses_set_error(S, rc, e[0] ? e : spmtap_strerror(rc));
	}
	/* A writer that failed at its end: the metadata file says the recording is not complete. */
	if (S->error && !err0)
		(void)ses_meta_update(S, true, NULL, 0);
	if (S->raw) {
		e[0] = 0;
		int rc = raw_writer_finish(S->raw, raw_writer_error(S->raw)[0] ? NULL : ses_raw_end_json(S), e,
					   sizeof(e));
		S->raw = NULL;
		if (rc < 0)
			ses_set_error(S, rc, e);
	}
	/* Every file renamed to its final name together (or, for a run that never started, removed). */
	e[0] = 0;
	int frc = ses_outputs_finish(S, e, sizeof(e));
	if (frc < 0)
		ses_set_error(S, frc, e);
	if (S->error)
		spmtap_seterr(err, errlen, -S->error, "%s", S->err);
	return S->error;
}

size_t session_ngpus(const struct session *S) { return S->ng; }

bool session_abandoned(const struct session *S) { return S->abandoned; }

const struct timebase *session_timebase(const struct session *S, size_t i)
{
	return i < S->ng ? S->g[i].tb : NULL;
}

const char *const *session_outputs(const struct session *S)
{
	static const char *const none[] = { NULL };
	return S->outs ? (const char *const *)S->outs : none;
}

const char *const *session_replaced(const struct session *S)
{
	static const char *const none[] = { NULL };
	return S->gone ? (const char *const *)S->gone : none;
}

void session_close(struct session *S)
{
	if (!S)
		return;
	if (S->started && !S->stopped)
		session_stop(S, NULL, 0);
	for (size_t k = 0; k < S->nw; k++)
		if (S->w[k])
			S->wops[k]->end(S->w[k], NULL, 0);
	/* Opened but never run (a failed open or start): its .part files go, earlier outputs stay. */
	ses_outputs_finish(S, NULL, 0);
	spsc_close(&S->q);
	if (S->writer_running)
		pthread_join(S->writer_thr, NULL);
	void *it;
	while (spsc_pop(&S->q, &it, 0) == 0)
		free(it);
	spsc_destroy(&S->q);
	raw_writer_finish(S->raw, NULL, NULL, 0);
	for (size_t i = 0; i < S->ng; i++)
		ses_gpu_free(&S->g[i]);
	if (S->b)
		S->bops->close(S->b);
	mk_reader_free(S->mk);
	if (S->kd_running) {
		atomic_store(&S->kd_stop, true);
		pthread_join(S->kd_thr, NULL);
	}
	kd_reader_free(S->kd);
	ses_cray_free(S);
	free(S->kdisp);
	for (size_t k = 0; k < S->nw; k++)
		free(S->paths[k]);
	free(S->outs);
	free(S->gone);
	free(S->meta_path);
	free(S->job_json);
	out_set_free(S->files);
	free(S);
}
