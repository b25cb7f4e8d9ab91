/* SPDX-License-Identifier: MIT */
/* SPMTAP_JOB: an application finds its node's job recording (marker_job.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/lib/marker_job.h"

static void clean(char *d, size_t n, const char *s)
{
	size_t i = 0;
	for (; s[i] && i + 1 < n; i++) {
		char c = s[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
			 c == '_' || c == '-';
		d[i] = ok ? c : '_';
	}
	d[i] = 0;
}

/* Each kind's file name suffix and first word (a reader of one kind never takes the other's file). */
static const char *const suffix[] = { [MK_JOB_MARKERS] = "", [MK_JOB_KERNELS] = ".kernels" };
static const char *const magic[] = { [MK_JOB_MARKERS] = "spmtap-job-markers", [MK_JOB_KERNELS] = "spmtap-job-kernels" };

int mk_job_path_kind(char *buf, size_t n, const char *job, const char *host, enum mk_job_kind kind)
{
	char j[128], h[256];
	clean(j, sizeof(j), job);
	clean(h, sizeof(h), host);
	int w = snprintf(buf, n, "/dev/shm/spmtap-job.%s.%s%s", j, h, suffix[kind]);
	return w < 0 || (size_t)w >= n ? -ENAMETOOLONG : 0;
}

int mk_job_path(char *buf, size_t n, const char *job, const char *host)
{
	return mk_job_path_kind(buf, n, job, host, MK_JOB_MARKERS);
}

int mk_job_publish(const char *job, int fd, char *path, size_t n)
{
	return mk_job_publish_kind(job, MK_JOB_MARKERS, fd, path, n);
}

int mk_job_publish_kind(const char *job, enum mk_job_kind kind, int fd, char *path, size_t n)
{
	char host[256] = "", tmp[4200];
	gethostname(host, sizeof(host) - 1);
	int rc = mk_job_path_kind(path, n, job, host, kind);
	if (rc < 0)
		return rc;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "we");
	if (!f)
		return -errno;
	int bad = fprintf(f, "%s 1\n%ld %d\n", magic[kind], (long)getpid(), fd) < 0;
	if (fclose(f) || bad || rename(tmp, path)) {
		int e = errno ? errno : EIO;
		unlink(tmp);
		return -e;
	}
	return 0;
}

int mk_job_open(void)
{
	return mk_job_open_kind(MK_JOB_MARKERS);
}

int mk_job_open_kind(enum mk_job_kind kind)
{
	const char *job = getenv(MK_ENV_JOB);
	char host[256] = "", path[512], proc[64], word[32] = "";
	if (!job || !*job)
		return -1;
	gethostname(host, sizeof(host) - 1);
	if (mk_job_path_kind(path, sizeof(path), job, host, kind) < 0)
		return -1;
	FILE *f = fopen(path, "re");
	long pid = -1;
	int fd = -1, ver = 0;
	if (!f)
		return -1;
	int ok = fscanf(f, "%31s %d %ld %d", word, &ver, &pid, &fd) == 4 && !strcmp(word, magic[kind]) && ver == 1 &&
		 pid > 0 && fd >= 0;
	fclose(f);
	if (!ok)
		return -1;
	snprintf(proc, sizeof(proc), "/proc/%ld/fd/%d", pid, fd);
	return open(proc, O_RDWR | O_CLOEXEC);
}
