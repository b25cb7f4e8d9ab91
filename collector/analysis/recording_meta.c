/* SPDX-License-Identifier: MIT */
/*
 * The recording's metadata as the truth of what was recorded: units and
 * device facts for the tables, and what the files hold against what the
 * metadata says they hold (rec_truth, recording.h).
 *
 * Rows expected per stream: extra.streams[i].rows (written by the recorder
 * as it goes); a recording without them but with its end-of-run accounting
 * (every recording that ended before "rows" existed) has one row per decoded
 * sample (accounting[g].xcc[x].samples) and per sensor sample
 * (accounting[g].smi_samples), so its files are checked against those.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/analysis/recording_priv.h"
#include "log.h"

static const char *jstr(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static struct rec_table *table_of(struct recording *r, json_t *s, struct rec_gpu **gp)
{
	const char *src = json_string_value(json_object_get(s, "source"));
	json_t *gj = json_object_get(s, "gpu");
	struct rec_gpu *g = json_is_integer(gj) ? rec_gpu_of(r, (uint32_t)json_integer_value(gj), false) : NULL;
	json_int_t xcc = json_integer_value(json_object_get(s, "xcc"));
	if (gp)
		*gp = g;
	if (!g || !src)
		return NULL;
	if (!strcmp(src, "smi"))
		return &g->smi;
	return !strcmp(src, "spm") && xcc >= 0 && xcc < REC_MAX_XCC ? &g->spm[xcc] : NULL;
}

/* Units, tick domains and device facts from the metadata (docs/formats/csv.md). */
void rec_units_from_meta(struct recording *r)
{
	json_t *streams = json_object_get(json_object_get(r->meta, "extra"), "streams");
	size_t i;
	json_t *s;
	json_array_foreach(streams, i, s)
	{
		struct rec_gpu *g;
		struct rec_table *t = table_of(r, s, &g);
		if (!t)
			continue;
		const char *td = json_string_value(json_object_get(s, "tick_domain"));
		if (t == &g->smi && td)
			snprintf(g->tick_domain, sizeof(g->tick_domain), "%s", td);
		size_t j;
		json_t *c;
		json_array_foreach(json_object_get(s, "columns"), j, c)
		{
			int k = rec_col(t, json_string_value(json_object_get(c, "name")));
			const char *u = json_string_value(json_object_get(c, "unit"));
			if (k >= 0 && u)
				t->units[k] = u; /* owned by r->meta */
		}
	}
	json_array_foreach(json_object_get(json_object_get(r->meta, "extra"), "devices"), i, s)
	{
		struct rec_gpu *g = rec_gpu_of(r, (uint32_t)json_integer_value(json_object_get(s, "gpu")), false);
		if (!g)
			continue;
		snprintf(g->gfx, sizeof(g->gfx), "%s", jstr(s, "gfx"));
		snprintf(g->name, sizeof(g->name), "%s", jstr(s, "name"));
		g->num_xcc = (uint32_t)json_integer_value(json_object_get(s, "num_xcc"));
		g->num_se = (uint32_t)json_integer_value(json_object_get(s, "num_se"));
		g->cu_count = (uint32_t)json_integer_value(json_object_get(s, "cu_count"));
		g->cus_per_se = (uint32_t)json_integer_value(json_object_get(s, "cus_per_se"));
		g->interval = (uint32_t)json_integer_value(json_object_get(s, "interval"));
	}
}

bool rec_smi_requested(const struct recording *r)
{
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(json_object_get(r->meta, "extra"), "streams"), i, s)
		if (!strcmp(jstr(s, "source"), "smi"))
			return true;
	return strstr(jstr(r->meta, "command_line"), "--smi") != NULL;
}

int rec_check_incomplete(struct recording *r, const struct rec_src *src)
{
	const struct rec_file *f[] = { &src->meta, &src->spm, &src->smi, &src->phases, &src->db };
	char parts[512] = "";
	size_t nparts = 0;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (!f[i]->path || !f[i]->part || (f[i] == &src->db) != src->sqlite)
			continue;
		size_t l = strlen(parts);
		snprintf(parts + l, sizeof(parts) - l, "%s%s", nparts++ ? ", " : "", rec_basename(f[i]->path));
	}
	json_t *complete = json_object_get(r->meta, "complete");
	if (nparts)
		r->truth.incomplete = true;
	if (json_is_false(complete))
		r->truth.incomplete = true;
	/* Before "complete" existed, the metadata got its accounting only when the run ended. */
	bool no_end = !complete && !json_object_get(r->meta, "accounting");
	if (no_end)
		r->truth.incomplete = true;
	if (!r->truth.incomplete)
		return 0;
	/* A recorder that stopped on an error finished, and said why (session_outputs.c). */
	const char *err = json_string_value(json_object_get(r->meta, "error"));
	if (err && !nparts)
		return rec_note(r, "incomplete recording: the recorder stopped on an error: %s", err);
	/* A catch-up stopped by a second Ctrl-C finished too: the rest waits in the journal. */
	size_t gi;
	json_t *acc;
	json_array_foreach(json_object_get(r->meta, "accounting"), gi, acc) {
		json_t *sp = json_object_get(acc, "spill");
		json_int_t left = json_integer_value(json_object_get(sp, "journal_left_bytes"));
		const char *j = json_string_value(json_object_get(sp, "journal"));
		if (!nparts && left > 0 && j) {
			/* Beside the recording (the path it has was the recorder's, from its directory). */
			const char *b = rec_basename(r->base);
			char path[4096];
			snprintf(path, sizeof(path), "%.*s%s", (int)(b - r->base), r->base, rec_basename(j));
			return rec_note(r, "incomplete recording: its catch-up was stopped, and %lld bytes of GPU %lld's "
					   "SPM data wait in %s (`spmtap decode %s` gives their rows)",
					(long long)left, (long long)json_integer_value(json_object_get(acc, "gpu")), path,
					path);
		}
	}
	return rec_note(r, "incomplete recording (the recorder did not finish): %s%s%s%s", nparts ? parts : "",
			nparts ? (nparts > 1 ? " are still under their temporary names" : " is still under its temporary name")
			       : "",
			nparts && (json_is_false(complete) || no_end) ? "; " : "",
			json_is_false(complete) ? (src->sqlite ? "its recording_meta says \"complete\": false"
							       : "its metadata says \"complete\": false")
			: no_end ? "its metadata has no end-of-run accounting"
				 : "");
}

/* accounting[] entry of GPU g, or NULL. */
static json_t *accounting_of(const struct recording *r, uint32_t gpu)
{
	size_t i;
	json_t *a;
	json_array_foreach(json_object_get(r->meta, "accounting"), i, a)
		if (json_integer_value(json_object_get(a, "gpu")) == gpu)
			return a;
	return NULL;
}

static json_t *accounting_xcc(const struct recording *r, uint32_t gpu, json_int_t xcc)
{
	size_t i;
	json_t *x;
	json_array_foreach(json_object_get(accounting_of(r, gpu), "xcc"), i, x)
		if (json_integer_value(json_object_get(x, "xcc")) == xcc)
			return x;
	return NULL;
}

static void stream_name(char *buf, size_t len, bool smi, uint32_t gpu, json_int_t xcc)
{
	if (smi)
		snprintf(buf, len, "GPU %u's sensors", gpu);
	else
		snprintf(buf, len, "GPU %u XCC %lld", gpu, (long long)xcc);
}

/* What is on disk, for the note of an incomplete recording: per GPU, rows and the time they span. */
static int what_is_there(struct recording *r)
{
	char s[1024] = "", a[32], b[32];
	size_t l = 0;
	for (uint32_t i = 0; i < r->ngpu && l < sizeof(s); i++) {
		const struct rec_gpu *g = &r->gpu[i];
		long long spm = 0;
		uint32_t nx = 0;
		int64_t lo = INT64_MAX, hi = INT64_MIN;
		for (uint32_t x = 0; x < g->nspm; x++) {
			const struct rec_table *t = &g->spm[x];
			if (!t->n)
				continue;
			spm += (long long)t->n;
			nx++;
			lo = t->t_ns[0] < lo ? t->t_ns[0] : lo;
			hi = t->t_ns[t->n - 1] > hi ? t->t_ns[t->n - 1] : hi;
		}
		l += (size_t)snprintf(s + l, sizeof(s) - l, "%sGPU %u: %s SPM rows", i ? "; " : "", g->index,
				      rec_count(a, sizeof(a), spm));
		if (nx && l < sizeof(s))
			l += (size_t)snprintf(s + l, sizeof(s) - l, " of %u XCC stream(s) over %.3f s", nx,
					      (double)(hi - lo) / 1e9);
		if (l < sizeof(s))
			l += (size_t)snprintf(s + l, sizeof(s) - l, ", %s sensor rows",
					      rec_count(b, sizeof(b), (long long)g->smi.n));
	}
	return rec_note(r, "what the incomplete recording holds: %s%s", r->ngpu ? s : "no rows",
			rec_smi_requested(r) && !r->ngpu ? " (sensors were requested: none reached the files)" : "");
}

int rec_check_truth(struct recording *r, const struct rec_src *src)
{
	const char *spmf = src->sqlite ? rec_basename(src->db.path) : src->spm.path ? rec_basename(src->spm.path) : NULL;
	const char *smif = src->sqlite ? rec_basename(src->db.path) : src->smi.path ? rec_basename(src->smi.path) : NULL;
	char bname[256];
	snprintf(bname, sizeof(bname), "%s", rec_basename(r->base));
	json_t *streams = json_object_get(json_object_get(r->meta, "extra"), "streams");
	bool done = !r->truth.incomplete;
	/* The metadata of a run that failed was written at its end, counting the rows known to be written. */
	const char *when = json_string_value(json_object_get(r->meta, "error"))
				   ? "the metadata, written when the recording failed, counts those known written:"
				   : "the metadata, last written during the run, says";
	int rc = 0;
	size_t i;
	json_t *s;
	json_array_foreach(streams, i, s)
	{
		struct rec_gpu *g;
		struct rec_table *t = table_of(r, s, &g);
		bool smi = !strcmp(jstr(s, "source"), "smi");
		uint32_t gpu = (uint32_t)json_integer_value(json_object_get(s, "gpu"));
		json_int_t xcc = json_integer_value(json_object_get(s, "xcc"));
		json_t *rows = json_object_get(s, "rows");
		json_int_t expected = -1;
		json_t *acc = smi ? accounting_of(r, gpu) : accounting_xcc(r, gpu, xcc);
		if (json_is_integer(rows))
			expected = json_integer_value(rows);
		else if (acc && json_is_integer(json_object_get(acc, smi ? "smi_samples" : "samples")))
			expected = json_integer_value(json_object_get(acc, smi ? "smi_samples" : "samples"));
		uint64_t lost = smi ? 0 : (uint64_t)json_integer_value(json_object_get(acc, "lost_gap_samples"));
		if (t && t->cols) {
			t->rows_expected = expected;
			t->lost_samples = lost;
		}
		long long n = t && t->cols ? (long long)t->n : 0;
		if (expected < 0 || n == expected || (!done && n == 0 && expected == 0))
			continue;
		char what[48], a[32], b[32];
		stream_name(what, sizeof(what), smi, gpu, xcc);
		const char *file = smi ? smif : spmf;
		char missing[300];
		if (!file)
			snprintf(missing, sizeof(missing), "there is no %s%s", bname, smi ? "_smi.csv" : "_spm.csv");
		if (n < expected) {
			if (done)
				r->truth.truncated = true;
			if (!file)
				rc = rec_note(r, "%s, where the metadata says %s has %s rows%s", missing, what,
					      rec_count(b, sizeof(b), expected),
					      done ? ": the recording is truncated" : "");
			else if (done)
				rc = rec_note(r, "%s has %s rows of %s where the metadata says %s: the file is truncated",
					      file, rec_count(a, sizeof(a), n), what, rec_count(b, sizeof(b), expected));
			else
				rc = rec_note(r, "%s has %s rows of %s; %s %s", file, rec_count(a, sizeof(a), n), what,
					      when, rec_count(b, sizeof(b), expected));
		} else if (done) {
			r->truth.inconsistent = true;
			rc = rec_note(r, "%s has %s rows of %s where the metadata says only %s: the file and its "
					 "metadata disagree",
				      file, rec_count(a, sizeof(a), n), what, rec_count(b, sizeof(b), expected));
		} else {
			rc = rec_note(r, "%s has %s rows of %s; %s %s", file, rec_count(a, sizeof(a), n), what, when,
				      rec_count(b, sizeof(b), expected));
		}
		if (rc)
			return rc;
	}
	/* Streams the metadata does not list (only where it lists streams at all). */
	for (uint32_t gi = 0; streams && gi < r->ngpu; gi++) {
		struct rec_gpu *g = &r->gpu[gi];
		for (uint32_t x = 0; x <= REC_MAX_XCC; x++) {
			struct rec_table *t = x < REC_MAX_XCC ? &g->spm[x] : &g->smi;
			if (!t->cols)
				continue;
			bool listed = false;
			json_array_foreach(streams, i, s) listed |= table_of(r, s, NULL) == t;
			if (listed)
				continue;
			char what[48], a[32];
			stream_name(what, sizeof(what), x == REC_MAX_XCC, g->index, x);
			r->truth.inconsistent = true;
			if ((rc = rec_note(r, "%s has %s rows of %s, a stream its metadata does not list: the file and "
					      "its metadata disagree",
					   x == REC_MAX_XCC ? smif : spmf, rec_count(a, sizeof(a), (long long)t->n), what)))
				return rc;
		}
	}
	for (uint32_t gi = 0; done && gi < r->ngpu; gi++) {
		r->truth.truncated |= r->gpu[gi].smi.cut_last_row;
		for (uint32_t x = 0; x < REC_MAX_XCC; x++)
			r->truth.truncated |= r->gpu[gi].spm[x].cut_last_row;
	}
	return done ? 0 : what_is_there(r);
}
