/* SPDX-License-Identifier: MIT */
/*
 * Putting a process under the emulator: find the shim, make a private
 * temporary directory with the topology, and set the environment that the
 * shim reads at load time.  Used by `spmtap --emulate` and the tests.
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

#define EMU_SHIM_NAME "libspmtap-emu.so"

static int emu_is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

const char *emu_shim_path(char *buf, size_t len)
{
	static const char *const rel[] = { "", "/..", "/../..", "/../lib/spmtap" };
	char exe[PATH_MAX], cand[PATH_MAX + 64];
	const char *env = getenv("SPMTAP_EMU_LIB");

	if (env && *env) {
		if (!emu_is_file(env)) {
			snprintf(buf, len, "SPMTAP_EMU_LIB=%s: not a file", env);
			return NULL;
		}
		snprintf(buf, len, "%s", env);
		return buf;
	}
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		snprintf(buf, len, "cannot read /proc/self/exe: %s", strerror(errno));
		return NULL;
	}
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(cand, sizeof(cand), "%s%s/" EMU_SHIM_NAME, exe, rel[i]);
		char *real = realpath(cand, NULL);
		if (real && emu_is_file(real) && strlen(real) < len) {
			snprintf(buf, len, "%s", real);
			free(real);
			return buf;
		}
		free(real);
	}
	snprintf(buf, len, EMU_SHIM_NAME " not found beside %s, in ../, ../../ or ../lib/spmtap/ "
		 "(set SPMTAP_EMU_LIB)", exe);
	return NULL;
}

int emu_env_setup(const char *profile_spec, char *tmpdir, size_t len, char *err, size_t errlen)
{
	char shim[PATH_MAX], tree[PATH_MAX + 16], tmpl[PATH_MAX];
	const char *base = getenv("TMPDIR");

	if (!emu_shim_path(shim, sizeof(shim))) {
		snprintf(err, errlen, "%s", shim);
		return -1;
	}
	if (!base || !*base)
		base = "/tmp";
	snprintf(tmpl, sizeof(tmpl), "%s/spmtap-emu-XXXXXX", base);
	if (!mkdtemp(tmpl)) {
		snprintf(err, errlen, "mkdtemp %s: %s", tmpl, strerror(errno));
		return -1;
	}
	snprintf(tmpdir, len, "%s", tmpl);
	/* The owner first: a directory without one is never swept, so a crash here leaves it, not a live one's. */
	if (emu_owner_write(tmpl, err, errlen)) {
		rmdir(tmpl);
		return -1;
	}
	snprintf(tree, sizeof(tree), "%s/" EMU_TMP_MARKER, tmpl);
	int fd = open(tree, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create %s: %s", tree, strerror(errno));
		snprintf(tree, sizeof(tree), "%s/" EMU_OWNER_FILE, tmpl);
		unlink(tree);
		rmdir(tmpl);
		return -1;
	}
	close(fd);
	snprintf(tree, sizeof(tree), "%s/kfd", tmpl);
	if (emu_tree_write(tree, profile_spec, err, errlen)) {
		emu_tree_remove(tmpl);
		return -1;
	}

	const char *old = getenv("LD_PRELOAD");
	size_t need = strlen(shim) + (old ? strlen(old) + 2 : 1);
	char *pre = malloc(need);
	if (!pre) {
		snprintf(err, errlen, "out of memory");
		emu_tree_remove(tmpl);
		return -1;
	}
	if (old && *old)
		snprintf(pre, need, "%s:%s", shim, old);
	else
		snprintf(pre, need, "%s", shim);
	setenv("SPMTAP_EMU_SYSFS", tree, 1);
	setenv("SPMTAP_EMU_PROFILE", profile_spec, 1);
	setenv("SPMTAP_EMU_ACTIVE", "1", 1);
	setenv("LD_PRELOAD", pre, 1);
	free(pre);
	return 0;
}

/* Removes everything below `path` without following symlinks. */
static int emu_rm_rf(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return unlinkat(dfd, name, 0);
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (emu_rm_rf(dirfd(d), e->d_name))
			rc = -1;
	}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR))
		rc = -1;
	return rc;
}

const char *emu_shm_tag(const char *sysfs, char *buf, size_t len)
{
	unsigned x = 2166136261u; /* FNV-1a */
	for (const char *c = sysfs; *c; c++)
		x = (x ^ (unsigned char)*c) * 16777619u;
	snprintf(buf, len, "%08x", x);
	return buf;
}

/* The tree's own ROCm SMI mutexes; one with an explicit SPMTAP_EMU_SHM_TAG is its owner's to remove. */
static void emu_shm_remove(const char *tmpdir)
{
	char tree[PATH_MAX + 8], tag[16], pre[64];
	snprintf(tree, sizeof(tree), "%s/kfd", tmpdir);
	snprintf(pre, sizeof(pre), "spmtap-emu-%s-", emu_shm_tag(tree, tag, sizeof(tag)));
	DIR *d = opendir("/dev/shm");
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, pre, strlen(pre)))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
}

int emu_tree_remove(const char *tmpdir)
{
	char marker[PATH_MAX + 32];
	struct stat st;

	if (!tmpdir || !*tmpdir) {
		errno = EINVAL;
		return -1;
	}
	snprintf(marker, sizeof(marker), "%s/" EMU_TMP_MARKER, tmpdir);
	if (lstat(marker, &st) || !S_ISREG(st.st_mode)) {
		errno = EPERM; /* not ours: never delete what we did not create */
		return -1;
	}
	emu_shm_remove(tmpdir);
	return emu_rm_rf(AT_FDCWD, tmpdir);
}
