/* SPDX-License-Identifier: MIT */
/*
 * Where a recording's files are (recording_priv.h): a directory, "DIR/NAME",
 * the metadata file or the SQLite file, under final names or, for a run that
 * was killed, under the temporary names FINAL.part (docs/formats/csv.md).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "collector/analysis/recording_priv.h"
#include "log.h"

/* The names a recording NAME leaves, each possibly with ".part". */
static const char *const kinds[] = { "_meta.json", ".db", ".pftrace" };
enum { K_META, K_DB, K_PFTRACE, K_N };

const char *rec_basename(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

/* The kind of a file name and the length of its NAME; -1 when it is none of ours. */
static int kind_of(const char *file, size_t *namelen)
{
	size_t n = strlen(file);
	if (ends_with(file, ".part"))
		n -= 5;
	for (int k = 0; k < K_N; k++) {
		size_t m = strlen(kinds[k]);
		if (n > m && !strncmp(file + n - m, kinds[k], m)) {
			*namelen = n - m;
			return k;
		}
	}
	return -1;
}

static bool exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* base + suffix, or base + suffix + ".part" when only that exists; f->path NULL when neither does. */
static int locate(const char *base, const char *suffix, struct rec_file *f)
{
	char p[PATH_MAX + 16];
	f->path = NULL;
	f->part = false;
	if ((size_t)snprintf(p, sizeof(p), "%s%s", base, suffix) >= sizeof(p) - 5)
		return -ENAMETOOLONG;
	if (!exists(p)) {
		strcat(p, ".part");
		if (!exists(p))
			return 0;
		f->part = true;
	}
	f->path = strdup(p);
	return f->path ? 0 : -ENOMEM;
}

void rec_src_free(struct rec_src *src)
{
	free(src->base);
	free(src->meta.path);
	free(src->spm.path);
	free(src->smi.path);
	free(src->phases.path);
	free(src->db.path);
	free(src->kernels.path);
	memset(src, 0, sizeof(*src));
}

/*
 * The files of base "DIR/NAME".  CSV when there is a metadata file and a
 * CSV of data; SQLite when there is a .db and no CSV, or when want_db (the
 * .db was named); a Perfetto trace alone is refused; metadata alone is a
 * recording without rows.
 */
static int files_of(const char *base, bool want_db, struct rec_src *src, char *err, size_t errlen)
{
	int rc;
	if (!(src->base = strdup(base)))
		return -ENOMEM;
	if ((rc = locate(base, "_meta.json", &src->meta)) || (rc = locate(base, "_spm.csv", &src->spm)) ||
	    (rc = locate(base, "_smi.csv", &src->smi)) || (rc = locate(base, "_phases.csv", &src->phases)) ||
	    (rc = locate(base, ".db", &src->db)) || (rc = locate(base, "_kernels.csv", &src->kernels)))
		return spmtap_seterr(err, errlen, -rc, "%s: %s", base, strerror(-rc));
	bool csv = src->meta.path && (src->spm.path || src->smi.path);
	/* The database was named: analysing the CSV files beside it instead would answer another question. */
	if (want_db && !src->db.path)
		return spmtap_seterr(err, errlen, ENOENT, "%s.db: no such file (nor %s.db.part)%s", base, base,
				     csv ? "; the CSV files of this recording are there: name the directory or "
					   "NAME_meta.json to read them" : "");
	src->sqlite = src->db.path && (want_db || !csv);
	if (src->sqlite || csv)
		return 0;
	struct rec_file pf;
	if ((rc = locate(base, ".pftrace", &pf)))
		return spmtap_seterr(err, errlen, -rc, "%s: %s", base, strerror(-rc));
	/* metadata and a Perfetto trace but no data the analysis reads: the trace is all there is */
	if (src->meta.path && !pf.path)
		return 0;
	if (pf.path) {
		rc = spmtap_seterr(err, errlen, EPROTONOSUPPORT,
				   "%s is a Perfetto trace, which the analysis does not read: open it in "
				   "https://ui.perfetto.dev, and record with -f csv or -f sqlite (e.g. -f csv,perfetto) "
				   "for report, characterize, plot and export",
				   pf.path);
		free(pf.path);
		return rc;
	}
	return spmtap_seterr(err, errlen, ENOENT,
			     "%s: not a recording (no %s_meta.json or %s.db, nor their .part; and not a directory)",
			     base, base, base);
}

/* The one recording NAME of a directory: its base, or an error naming what is there. */
static int scan_dir(const char *dir, char **base, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	if (!d)
		return spmtap_seterr(err, errlen, errno, "%s: %s", dir, strerror(errno));
	char names[4][NAME_MAX + 1];
	int k = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l;
		if (kind_of(e->d_name, &l) < 0 || l > NAME_MAX)
			continue;
		bool seen = false;
		for (int i = 0; i < k && i < 4; i++)
			seen |= strlen(names[i]) == l && !strncmp(names[i], e->d_name, l);
		if (seen)
			continue;
		if (k < 4)
			snprintf(names[k], sizeof(names[k]), "%.*s", (int)l, e->d_name);
		k++;
	}
	closedir(d);
	if (k == 0)
		return spmtap_seterr(err, errlen, ENOENT,
				     "%s: no recording here (no NAME_meta.json or NAME.db; record with -d %s -f csv or "
				     "-f sqlite)",
				     dir, dir);
	if (k > 1)
		return spmtap_seterr(err, errlen, EINVAL, "%s holds %d recordings (%s, %s%s): name one as %s/NAME",
				     dir, k, names[0], names[1], k > 2 ? ", ..." : "", dir);
	char tmp[PATH_MAX];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/%s", dir, names[0]) >= sizeof(tmp))
		return spmtap_seterr(err, errlen, ENAMETOOLONG, "%s/%s: %s", dir, names[0], strerror(ENAMETOOLONG));
	*base = strdup(tmp);
	return *base ? 0 : -ENOMEM;
}

int rec_find(const char *path, struct rec_src *src, char *err, size_t errlen)
{
	memset(src, 0, sizeof(*src));
	struct stat st;
	int rc;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		char *base = NULL;
		rc = scan_dir(path, &base, err, errlen);
		if (!rc)
			rc = files_of(base, false, src, err, errlen);
		free(base);
	} else {
		/* a file of the recording names it: DIR/NAME_meta.json, DIR/NAME.db (each maybe .part) */
		size_t l;
		int k = kind_of(rec_basename(path), &l);
		if (k >= 0) {
			size_t dirlen = (size_t)(rec_basename(path) - path);
			char *base = strndup(path, dirlen + l);
			rc = base ? files_of(base, k == K_DB, src, err, errlen) : -ENOMEM;
			free(base);
		} else {
			rc = files_of(path, false, src, err, errlen);
		}
	}
	if (rc)
		rec_src_free(src);
	return rc;
}
