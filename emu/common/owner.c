/* SPDX-License-Identifier: MIT */
/*
 * Who owns a temporary emulated directory, and removing the directories
 * whose owner is provably gone (a session killed before it could clean up).
 *
 * The owner is the process that made the directory (emu_env_setup) and
 * removes it at the end.  It is named by pid *and* start time, because a
 * pid alone is reused; by boot id, because /tmp may outlive a reboot; and
 * by pid namespace, because a pid means nothing in another one; and by
 * time namespace, because /proc/PID/stat's start time is shown shifted by
 * the reader's boot-time offset (the job test bed's "nodes" are time
 * namespaces on one machine: each would take the others' owners for dead).  A
 * directory is removed only when all of that says the owner is dead: a
 * directory without an owner record, or of another pid namespace, or whose
 * owner runs, is never touched.
 */
#include "emu/common/emu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct emu_owner {
	long pid;
	unsigned long long start; /* /proc/PID/stat field 22: clock ticks since boot */
	char boot[64];            /* /proc/sys/kernel/random/boot_id */
	unsigned long long pidns; /* inode of /proc/self/ns/pid */
	unsigned long long timens; /* inode of /proc/self/ns/time (0: an older record, or none) */
};

/* Start time of pid (0 when it does not exist), and whether it is a zombie: dead, not yet reaped. */
static unsigned long long proc_start(long pid, int *zombie)
{
	char p[64], buf[1024];
	snprintf(p, sizeof(p), "/proc/%ld/stat", pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* The command name may hold spaces and parentheses: fields start after the last ')'. */
	char *s = strrchr(buf, ')');
	if (!s)
		return 0;
	char state = 0;
	unsigned long long start = 0;
	/* fields 3 (state) ... 22 (starttime): skip 18 between them */
	if (sscanf(s + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu",
		   &state, &start) != 2)
		return 0;
	if (zombie)
		*zombie = state == 'Z' || state == 'X';
	return start;
}

unsigned long long emu_proc_start(long pid)
{
	return proc_start(pid, NULL);
}

static void boot_id(char *buf, size_t len)
{
	buf[0] = 0;
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
}

static unsigned long long pid_ns(void)
{
	struct stat st;
	return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

static unsigned long long time_ns(void)
{
	struct stat st;
	return stat("/proc/self/ns/time", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

int emu_owner_write(const char *tmpdir, char *err, size_t errlen)
{
	char p[PATH_MAX], tmp[PATH_MAX], boot[64];
	unsigned long long start = proc_start((long)getpid(), NULL);
	boot_id(boot, sizeof(boot));
	if (!start || !boot[0]) {
		snprintf(err, errlen, "cannot read /proc/self/stat or the boot id (is /proc mounted?)");
		return -1;
	}
	snprintf(p, sizeof(p), "%s/" EMU_OWNER_FILE, tmpdir);
	snprintf(tmp, sizeof(tmp), "%s/" EMU_OWNER_FILE ".new", tmpdir);
	FILE *f = fopen(tmp, "wxe");
	if (!f) {
		snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
		return -1;
	}
	fprintf(f, "pid %ld\nstart %llu\nboot %s\npidns %llu\ntimens %llu\n", (long)getpid(), start, boot, pid_ns(),
		time_ns());
	/* Complete before it has its name: a sweeper never reads half a record. */
	if (fclose(f) || rename(tmp, p)) {
		snprintf(err, errlen, "cannot write %s: %s", p, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

static int owner_read(const char *tmpdir, struct emu_owner *o)
{
	char p[PATH_MAX], key[16], val[64];
	snprintf(p, sizeof(p), "%s/" EMU_OWNER_FILE, tmpdir);
	FILE *f = fopen(p, "re");
	if (!f)
		return -1;
	int have = 0;
	memset(o, 0, sizeof(*o));
	while (fscanf(f, "%15s %63s", key, val) == 2) {
		if (!strcmp(key, "pid"))
			have |= (o->pid = strtol(val, NULL, 10)) > 0 ? 1 : 0;
		else if (!strcmp(key, "start"))
			have |= (o->start = strtoull(val, NULL, 10)) ? 2 : 0;
		else if (!strcmp(key, "boot"))
			have |= snprintf(o->boot, sizeof(o->boot), "%s", val) > 0 ? 4 : 0;
		else if (!strcmp(key, "pidns"))
			have |= (o->pidns = strtoull(val, NULL, 10)) ? 8 : 0;
		else if (!strcmp(key, "timens"))
			o->timens = strtoull(val, NULL, 10);
	}
	fclose(f);
	return have == 15 ? 0 : -1;
}

int emu_owner_gone(const char *tmpdir)
{
	struct emu_owner o;
	char boot[64];
	if (owner_read(tmpdir, &o))
		return 0; /* no record (being set up, or not a session's): not provably gone */
	boot_id(boot, sizeof(boot));
	if (!boot[0])
		return 0;
	if (strcmp(boot, o.boot))
		return 1; /* made before this boot */
	if (o.pidns != pid_ns())
		return 0; /* another pid namespace: its pids are not ours to judge */
	if (o.timens && o.timens != time_ns())
		return 0; /* another time namespace: its start times are not comparable with ours */
	int zombie = 0;
	unsigned long long start = proc_start(o.pid, &zombie);
	return !start || start != o.start || zombie;
}

int emu_tree_sweep(const char *base, char *err, size_t errlen)
{
	char p[PATH_MAX], m[PATH_MAX + 32];
	if (!base || !*base) {
		base = getenv("TMPDIR");
		if (!base || !*base)
			base = "/tmp";
	}
	DIR *d = opendir(base);
	if (!d) {
		snprintf(err, errlen, "cannot read %s: %s", base, strerror(errno));
		return -1;
	}
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		struct stat st;
		if (strncmp(e->d_name, "spmtap-emu-", 11))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode) ||
		    st.st_uid != geteuid())
			continue;
		snprintf(p, sizeof(p), "%s/%s", base, e->d_name);
		snprintf(m, sizeof(m), "%s/" EMU_TMP_MARKER, p);
		if (lstat(m, &st) || !S_ISREG(st.st_mode) || !emu_owner_gone(p))
			continue;
		/* Another sweeper may be removing it too: what it took is not an error. */
		if (emu_tree_remove(p) == 0 || errno == ENOENT)
			removed++;
	}
	closedir(d);
	return removed;
}
