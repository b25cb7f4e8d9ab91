// SPDX-License-Identifier: MIT
/* HPE Cray EX /sys/cray/pm_counters (smi_cray_pm.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/lib/smi_cray_pm.h"
#include "log.h"

struct cray_pm {
	int fresh_fd;
	unsigned n, naccel;
	struct {
		char name[24];
		char unit;
		int accel; /* -1: node-level */
		int fd;
	} s[CRAY_PM_MAX_SERIES];
	uint64_t raw_scan_hz;
	char version[32];
};

static int64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* pread at 0 (sysfs runs show() again), one line without its newline; length or -errno. */
static int read_at0(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return (int)n;
}

static int read_u64(int fd, uint64_t *v)
{
	char b[64], *end;
	int rc = read_at0(fd, b, sizeof(b));
	if (rc < 0)
		return rc;
	errno = 0;
	unsigned long long x = strtoull(b, &end, 10);
	if (end == b || errno)
		return -EINVAL;
	*v = x;
	return 0;
}

int cray_pm_parse_line(const char *s, int64_t *v, char *unit, uint64_t *ts_us, bool *has_ts)
{
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (end == s || errno || *end != ' ' || (end[1] != 'W' && end[1] != 'J') ||
	    (end[2] && end[2] != ' '))
		return -EINVAL;
	*v = x;
	*unit = end[1];
	*has_ts = false;
	*ts_us = 0;
	const char *p = end + 2;
	while (*p == ' ')
		p++;
	if (!*p)
		return 0;
	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	unsigned long long t = strtoull(p, &end, 10);
	if (errno || strcmp(end, " us"))
		return -EINVAL;
	*ts_us = t;
	*has_ts = true;
	return 0;
}

static void add(struct cray_pm *p, const char *dir, const char *name, char unit, int accel)
{
	if (p->n >= CRAY_PM_MAX_SERIES)
		return;
	char path[600];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	snprintf(p->s[p->n].name, sizeof(p->s[p->n].name), "%s", name);
	p->s[p->n].unit = unit;
	p->s[p->n].accel = accel;
	p->s[p->n].fd = fd;
	p->n++;
}

int cray_pm_open(const char *sysfs_root, struct cray_pm **out, char *why, size_t whylen)
{
	*out = NULL;
	char dir[480], path[560];
	snprintf(dir, sizeof(dir), "%s/cray/pm_counters", sysfs_root ? sysfs_root : "/sys");
	snprintf(path, sizeof(path), "%s/freshness", dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		return spmtap_seterr(why, whylen, e, "%s: %s%s", path, strerror(e),
				     e == ENOENT ? " (not an HPE Cray EX node)" : "");
	}
	struct cray_pm *p = calloc(1, sizeof(*p));
	if (!p) {
		close(fd);
		return spmtap_seterr(why, whylen, ENOMEM, "out of memory");
	}
	p->fresh_fd = fd;
	static const struct {
		const char *name;
		char unit;
	} node[] = { { "power", 'W' },        { "energy", 'J' },        { "cpu_power", 'W' },
		     { "cpu_energy", 'J' },   { "memory_power", 'W' },  { "memory_energy", 'J' },
		     { "accel_power", 'W' },  { "accel_energy", 'J' } };
	for (size_t i = 0; i < sizeof(node) / sizeof(node[0]); i++)
		add(p, dir, node[i].name, node[i].unit, -1);
	/* accel0..: GPU blades have them (four on Frontier); stop at the first absent. */
	for (unsigned a = 0; a < CRAY_PM_MAX_ACCEL; a++) {
		char n[24];
		unsigned before = p->n;
		snprintf(n, sizeof(n), "accel%u_power", a);
		add(p, dir, n, 'W', (int)a);
		snprintf(n, sizeof(n), "accel%u_energy", a);
		add(p, dir, n, 'J', (int)a);
		if (p->n == before)
			break;
		p->naccel = a + 1;
	}
	snprintf(path, sizeof(path), "%s/raw_scan_hz", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read_u64(fd, &p->raw_scan_hz))
			p->raw_scan_hz = 0;
		close(fd);
	}
	snprintf(path, sizeof(path), "%s/version", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read_at0(fd, p->version, sizeof(p->version)) < 0)
			p->version[0] = 0;
		close(fd);
	}
	uint64_t f;
	int rc = read_u64(p->fresh_fd, &f);
	if (rc || !p->n) {
		cray_pm_close(p);
		return spmtap_seterr(why, whylen, rc ? -rc : ENOENT, "%s: %s", dir,
				     rc ? "freshness is not a number" : "no power or energy files");
	}
	*out = p;
	return 0;
}

void cray_pm_close(struct cray_pm *p)
{
	if (!p)
		return;
	close(p->fresh_fd);
	for (unsigned i = 0; i < p->n; i++)
		close(p->s[i].fd);
	free(p);
}

unsigned cray_pm_nseries(const struct cray_pm *p) { return p->n; }
const char *cray_pm_series_name(const struct cray_pm *p, unsigned i) { return i < p->n ? p->s[i].name : "?"; }
char cray_pm_series_unit(const struct cray_pm *p, unsigned i) { return i < p->n ? p->s[i].unit : '?'; }
int cray_pm_series_accel(const struct cray_pm *p, unsigned i) { return i < p->n ? p->s[i].accel : -1; }
unsigned cray_pm_naccel(const struct cray_pm *p) { return p->naccel; }
uint64_t cray_pm_raw_scan_hz(const struct cray_pm *p) { return p->raw_scan_hz; }
const char *cray_pm_version(const struct cray_pm *p) { return p->version; }

int cray_pm_read(struct cray_pm *p, struct cray_pm_snap *s, uint64_t *torn)
{
	for (uint32_t t = 1; t <= CRAY_PM_MAX_TRIES; t++) {
		uint64_t f0, f1;
		memset(s, 0, sizeof(*s));
		s->host_before_ns = now_ns(CLOCK_BOOTTIME);
		int64_t real = now_ns(CLOCK_REALTIME);
		if (read_u64(p->fresh_fd, &f0))
			return -EIO;
		for (unsigned i = 0; i < p->n; i++) {
			char b[96];
			char unit;
			bool has_ts;
			struct cray_pm_value *v = &s->val[i];
			if (read_at0(p->s[i].fd, b, sizeof(b)) < 0 ||
			    cray_pm_parse_line(b, &v->v, &unit, &v->ts_us, &has_ts) || unit != p->s[i].unit)
				continue;
			v->present = true;
			if (!s->ts_us && has_ts)
				s->ts_us = v->ts_us;
		}
		if (read_u64(p->fresh_fd, &f1))
			return -EIO;
		s->host_after_ns = now_ns(CLOCK_BOOTTIME);
		/* REALTIME - BOOTTIME from the pass's two ends: the two clocks were read within it. */
		s->real_minus_boot_ns = real - s->host_before_ns;
		if (f0 == f1) {
			s->freshness = f0;
			s->tries = t;
			return 0;
		}
		if (torn)
			(*torn)++;
	}
	return -EAGAIN;
}

int cray_pm_parse_map(const char *spec, int32_t map[CRAY_PM_MAX_ACCEL], char *err, size_t errlen)
{
	for (unsigned a = 0; a < CRAY_PM_MAX_ACCEL; a++)
		map[a] = -1;
	if (!spec || !*spec)
		return 0;
	const char *p = spec;
	while (*p) {
		unsigned a, g;
		int n = -1;
		if (sscanf(p, "accel%u=gpu%u%n", &a, &g, &n) != 2 || n < 0) {
			n = -1;
			if (sscanf(p, "accel%u=%u%n", &a, &g, &n) != 2 || n < 0)
				return spmtap_seterr(err, errlen, EINVAL,
						     "'%s': expected accelN=gpuM[,accelN=gpuM...]", p);
		}
		if (a >= CRAY_PM_MAX_ACCEL)
			return spmtap_seterr(err, errlen, EINVAL, "accel%u: at most accel%u", a,
					     CRAY_PM_MAX_ACCEL - 1);
		if (map[a] >= 0)
			return spmtap_seterr(err, errlen, EINVAL, "accel%u mapped twice", a);
		for (unsigned b = 0; b < CRAY_PM_MAX_ACCEL; b++)
			if (map[b] == (int32_t)g)
				return spmtap_seterr(err, errlen, EINVAL, "gpu%u mapped twice (accel%u and accel%u)",
						     g, b, a);
		map[a] = (int32_t)g;
		p += n;
		if (*p == ',')
			p++;
		else if (*p)
			return spmtap_seterr(err, errlen, EINVAL, "'%s': expected ',' after accel%u=gpu%u", p, a,
					     g);
	}
	return 0;
}
