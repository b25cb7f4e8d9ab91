/* SPDX-License-Identifier: MIT */
/*
 * A session's outputs as one set (session_priv.h, outset.h): the
 * recording's metadata NAME_meta.json written first ("complete": false)
 * and brought up to date at least once a second with the rows written so
 * far, every writer flushed before it, so that a killed recorder leaves
 * files the metadata describes; at the end the whole accounting,
 * "complete": true, and every .part renamed to its final name together
 * (an earlier run's set under the same NAME removed as a whole).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/lib/marker_reader.h"
#include "collector/lib/outset.h"
#include "collector/lib/session_priv.h"
#include "log.h"

int ses_stream_index(struct session *S, const struct series_stream *s)
{
	if (S->last_mst < S->nmst && S->mst[S->last_mst] == s)
		return (int)S->last_mst;
	for (size_t i = 0; i < S->nmst; i++)
		if (S->mst[i] == s) {
			S->last_mst = i;
			return (int)i;
		}
	return -1;
}

/* What a file of the set is, for "files": the CSV writer's keys kept (spm, smi, phases). */
static const struct {
	const char *suffix, *key;
} kinds[] = {
	{ "_spm.csv", "spm" }, { "_smi.csv", "smi" },       { "_phases.csv", "phases" },
	{ "_meta.json", "meta" }, { ".db", "sqlite" }, { ".pftrace", "perfetto" }, { "_kernels.csv", "kernels" },
	{ ".otf2", "otf2" },
};

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

static json_t *files_json(struct session *S)
{
	json_t *f = json_object();
	for (size_t i = 0; i < out_set_count(S->files); i++) {
		const char *p = out_set_final(S->files, i), *slash = strrchr(p, '/');
		const char *key = slash ? slash + 1 : p;
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
			if (ends_with(p, kinds[k].suffix)) {
				key = kinds[k].key;
				break;
			}
		json_object_set_new(f, key, json_string(slash ? slash + 1 : p));
	}
	return f;
}

/*
 * During the run only what is safe to read beside the threads that own the
 * rest: rows written per stream and the decode threads' live lost count.
 * The whole accounting (ses_accounting_json) comes at the end.
 */
static json_t *live_accounting_json(struct session *S)
{
	json_t *arr = json_array();
	size_t idx = 0;
	for (size_t i = 0; i < S->ng; i++) {
		struct sgpu *g = &S->g[i];
		json_t *xs = json_array();
		uint64_t smi = 0;
		for (uint32_t x = 0; x <= g->nseries; x++) {
			const struct series_stream *st =
				x < g->nseries ? &g->streams[x] : g->smi ? smi_sampler_stream(g->smi) : NULL;
			if (!st)
				continue;
			uint64_t rows = idx < S->nmst ? S->rows_flushed[idx] : 0;
			idx++;
			if (x < g->nseries)
				json_array_append_new(xs, json_pack("{s:i, s:I}", "xcc", (int)x, "samples",
								    (json_int_t)rows));
			else
				smi = rows;
		}
		json_array_append_new(arr, json_pack("{s:i, s:b, s:I, s:I, s:o}", "gpu", (int)g->dev->index,
			"live", 1, "lost_samples_live", (json_int_t)(g->dt ? dthr_lost_live(g->dt) : 0),
			"smi_samples", (json_int_t)smi, "xcc", xs));
	}
	return arr;
}

static json_t *markers_json(struct session *S)
{
	return S->mk ? mk_reader_json(S->mk) : NULL;
}

static json_t *full_meta(struct session *S, bool final)
{
	json_t *m = json_object();
	json_object_set_new(m, "time_base", json_string("CLOCK_BOOTTIME ns"));
	json_object_set_new(m, "spmtap_version", json_string(spmtap_version_string()));
	json_object_set_new(m, "command_line", json_string(S->o.command_line ? S->o.command_line : ""));
	json_object_set_new(m, "hostname", json_string(S->host));
	json_object_set_new(m, "start_boottime_ns", json_integer(S->start_boot_ns));
	json_object_set_new(m, "spm_clock_hz", json_real(S->spm_hz));
	json_object_set_new(m, "extra", ses_extra_json(S));
	json_object_set_new(m, "files", files_json(S));
	/* A job rank's clock offsets and identity (session_set_job): copied under the lock. */
	pthread_mutex_lock(&S->lock);
	json_t *job = S->job_json ? json_loads(S->job_json, 0, NULL) : NULL;
	pthread_mutex_unlock(&S->lock);
	if (job)
		json_object_set_new(m, "job", job);
	/* An abandoned catch-up left rows in the journal: not complete. */
	json_object_set_new(m, "complete", json_boolean(final && !S->error && !S->abandoned));
	/* Why not, for whoever reads the files later without the terminal's last line. */
	pthread_mutex_lock(&S->lock);
	if (S->error)
		json_object_set_new(m, "error", json_string(S->err));
	pthread_mutex_unlock(&S->lock);
	if (final) {
		json_object_set_new(m, "timebase", ses_timebase_json(S));
		json_object_set_new(m, "accounting", ses_accounting_json(S));
		json_t *mk = markers_json(S);
		if (mk)
			json_object_set_new(m, "markers", mk);
		json_t *kd = ses_kernels_json(S);
		if (kd)
			json_object_set_new(m, "kernels", kd);
		/* docs/formats/meta-cost.md: every thread has ended, the last flush is counted */
		json_object_set_new(m, "cost", cost_json(ses_cost(S)));
	} else {
		json_object_set_new(m, "accounting", live_accounting_json(S));
	}
	return m;
}

/* NAME_meta.json.part replaced at once (a new file renamed over it): a kill leaves the old or the new. */
static int write_meta_file(struct session *S, json_t *m, char *err, size_t errlen)
{
	char *part = out_set_part(S->files, S->meta_path);
	size_t n = part ? strlen(part) + 5 : 0;
	char *tmp = part ? malloc(n) : NULL;
	if (!tmp) {
		free(part);
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	}
	snprintf(tmp, n, "%s.tmp", part);
	int rc = 0;
	errno = 0;
	if (json_dump_file(m, tmp, JSON_INDENT(2) | JSON_SORT_KEYS)) {
		int e = errno ? errno : EIO;
		unlink(tmp);
		rc = spmtap_seterr(err, errlen, e, "%s: %s", tmp, spmtap_strerror(e));
	} else if (rename(tmp, part)) {
		int e = errno;
		unlink(tmp);
		rc = spmtap_seterr(err, errlen, e, "%s: %s", part, spmtap_strerror(e));
	}
	free(tmp);
	free(part);
	return rc;
}

int ses_meta_update(struct session *S, bool final, char *err, size_t errlen)
{
	int frc = 0, rc = 0;
	/* Rows first, then the metadata that counts them: the files hold at least what it says. */
	for (size_t k = 0; k < S->nw && !frc; k++)
		if (S->w[k] && S->wops[k]->flush) {
			uint64_t c0 = cost_thread_cpu_ns();
			frc = S->wops[k]->flush(S->w[k], err, errlen);
			S->wcpu_ns[k] += cost_thread_cpu_ns() - c0;
		}
	/* Taken by every writer and now flushed by every one: in the files (a buffered writer that fails
	 * later loses what it had taken since, so the rows taken are not proof of rows written). */
	if (frc)
		S->writer_failed = true;
	else if (!S->writer_failed)
		memcpy(S->rows_flushed, S->rows, sizeof(S->rows));
	/*
	 * At the end a failed flush (a full disk) still gets the metadata
	 * written, saying "complete": false, with the accounting of what was
	 * recorded; during the run the error stops the session anyway.
	 */
	if ((frc && !final) || !S->meta_path)
		return frc;
	json_t *m = full_meta(S, final);
	if (frc)
		json_object_set_new(m, "complete", json_false());
	char *text = m ? json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (!text)
		rc = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	for (size_t k = 0; k < S->nw && text; k++)
		if (S->w[k] && S->wops[k]->meta) {
			uint64_t c0 = cost_thread_cpu_ns();
			int r = S->wops[k]->meta(S->w[k], text, frc || rc ? NULL : err, frc || rc ? 0 : errlen);
			S->wcpu_ns[k] += cost_thread_cpu_ns() - c0;
			if (r < 0 && !rc)
				rc = r;
		}
	int wrc = write_meta_file(S, m, frc || rc ? NULL : err, frc || rc ? 0 : errlen);
	free(text);
	json_decref(m);
	S->meta_mono = ses_now_ns(CLOCK_MONOTONIC);
	return frc ? frc : rc ? rc : wrc;
}

/*
 * DIR/NAME + every suffix a -f writer can give it; with `listed`, what the
 * old metadata lists too (NULL when there is no old metadata).
 */
static char **name_set(struct session *S, bool listed)
{
	size_t nb = strlen(S->meta_path) - strlen("_meta.json");
	size_t n = sizeof(kinds) / sizeof(kinds[0]);
	json_t *old = listed ? json_load_file(S->meta_path, 0, NULL) : NULL;
	if (listed && !old)
		return NULL;
	json_t *files = json_object_get(old, "files");
	char **v = calloc(n + json_object_size(files) + 1, sizeof(*v));
	size_t k = 0;
	for (size_t i = 0; v && i < n; i++)
		if ((v[k] = malloc(nb + strlen(kinds[i].suffix) + 1)))
			sprintf(v[k++], "%.*s%s", (int)nb, S->meta_path, kinds[i].suffix);
	/*
	 * The old run's own list, as far as it names files of that run (NAME
	 * and a suffix, no directory part): the metadata is trusted with no
	 * other path.
	 */
	const char *slash = strrchr(S->meta_path, '/');
	size_t dl = slash ? (size_t)(slash - S->meta_path) + 1 : 0;
	const char *name = S->meta_path + dl;
	size_t nl = nb - dl;
	const char *key;
	json_t *val;
	json_object_foreach(files, key, val) {
		const char *f = json_string_value(val);
		if (!v || !f || strchr(f, '/') || strncmp(f, name, nl) || !strcmp(f + nl, "") ||
		    strstr(f, ".."))
			continue;
		if ((v[k] = malloc(dl + strlen(f) + 1)))
			sprintf(v[k++], "%.*s%s", (int)dl, S->meta_path, f);
	}
	json_decref(old);
	return v;
}

static void free_names(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

int ses_outputs_finish(struct session *S, char *err, size_t errlen)
{
	if (S->committed || !S->files)
		return 0;
	S->committed = true;
	if (!S->start_ok) {
		/* Nothing was recorded: the earlier outputs stay as they were. */
		out_set_discard(S->files);
		return 0;
	}
	/*
	 * An earlier run under this NAME (its NAME_meta.json says so) goes as a
	 * whole; without one no file of that name is spmtap's to remove, but a
	 * killed run's .part files are.
	 */
	char **old = S->meta_path ? name_set(S, true) : NULL;
	char **known = S->meta_path ? name_set(S, false) : NULL;
	out_set_drop_parts(S->files, (const char *const *)known);
	/* A metadata rewrite a kill interrupted (write_meta_file's new file). */
	char tmp[4096];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s%s.tmp", S->meta_path ? S->meta_path : "", OUTSET_PART) <
		    sizeof(tmp) && S->meta_path)
		unlink(tmp);
	int rc = out_set_commit(S->files, (const char *const *)old, err, errlen);
	free_names(old);
	free_names(known);
	size_t n = out_set_count(S->files), nr = out_set_nremoved(S->files);
	S->outs = calloc(n + 1, sizeof(*S->outs));
	for (size_t i = 0; S->outs && i < n; i++)
		S->outs[i] = out_set_final(S->files, i);
	S->gone = calloc(nr + 1, sizeof(*S->gone));
	for (size_t i = 0; S->gone && i < nr; i++)
		S->gone[i] = out_set_removed(S->files, i);
	return rc;
}
