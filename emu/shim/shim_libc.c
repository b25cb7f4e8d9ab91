/* SPDX-License-Identifier: MIT */
/*
 * libc interposition: /dev/kfd and the render nodes become memfds that the
 * shim answers for, and the KFD sysfs paths are redirected into the
 * generated tree.  Everything passes straight through when the emulator is
 * not active (no SPMTAP_EMU_SYSFS), so a stray LD_PRELOAD is harmless.
 */
#include "emu/shim/shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* dlsym returns void *; going through a union keeps -Wpedantic-style casts out. */
#define EMU_REAL(ret, name, args)                                      \
	static ret(*emu_next_##name) args;                             \
	static void emu_load_##name(void)                              \
	{                                                              \
		if (!emu_next_##name) {                                \
			void *sym = dlsym(RTLD_NEXT, #name);           \
			memcpy(&emu_next_##name, &sym, sizeof(sym));   \
		}                                                      \
	}

EMU_REAL(int, open, (const char *, int, ...))
EMU_REAL(int, open64, (const char *, int, ...))
EMU_REAL(int, openat, (int, const char *, int, ...))
EMU_REAL(int, openat64, (int, const char *, int, ...))
EMU_REAL(int, __open_2, (const char *, int))
EMU_REAL(int, __open64_2, (const char *, int))
EMU_REAL(FILE *, fopen, (const char *, const char *))
EMU_REAL(FILE *, fopen64, (const char *, const char *))
EMU_REAL(DIR *, opendir, (const char *))
EMU_REAL(int, stat, (const char *, struct stat *))
EMU_REAL(int, lstat, (const char *, struct stat *))
EMU_REAL(int, stat64, (const char *, struct stat64 *))
EMU_REAL(int, lstat64, (const char *, struct stat64 *))
EMU_REAL(int, access, (const char *, int))
EMU_REAL(ssize_t, readlink, (const char *, char *, size_t))
EMU_REAL(int, ioctl, (int, unsigned long, ...))
EMU_REAL(void *, mmap, (void *, size_t, int, int, int, off_t))
EMU_REAL(void *, mmap64, (void *, size_t, int, int, int, off_t))
EMU_REAL(int, close, (int))
/* What librocm_smi64 5.2.3 and the sensor readers also use (the smiemu prototype's list). */
EMU_REAL(int, __openat_2, (int, const char *, int))
EMU_REAL(int, __openat64_2, (int, const char *, int))
EMU_REAL(int, scandir, (const char *, struct dirent ***, int (*)(const struct dirent *),
			int (*)(const struct dirent **, const struct dirent **)))
EMU_REAL(int, scandir64, (const char *, struct dirent64 ***, int (*)(const struct dirent64 *),
			  int (*)(const struct dirent64 **, const struct dirent64 **)))
EMU_REAL(int, fstatat, (int, const char *, struct stat *, int))
EMU_REAL(int, fstatat64, (int, const char *, struct stat64 *, int))
EMU_REAL(int, statx, (int, const char *, int, unsigned int, struct statx *))
EMU_REAL(int, faccessat, (int, const char *, int, int))
EMU_REAL(ssize_t, readlinkat, (int, const char *, char *, size_t))
EMU_REAL(char *, realpath, (const char *, char *))
EMU_REAL(char *, canonicalize_file_name, (const char *))
EMU_REAL(int, shm_open, (const char *, int, mode_t))
EMU_REAL(int, shm_unlink, (const char *))
EMU_REAL(ssize_t, read, (int, void *, size_t))
EMU_REAL(ssize_t, pread, (int, void *, size_t, off_t))
EMU_REAL(ssize_t, pread64, (int, void *, size_t, off64_t))

int emu_real_open(const char *path, int flags, mode_t mode)
{
	emu_load_open();
	return emu_next_open(path, flags, mode);
}

int emu_real_close(int fd)
{
	emu_load_close();
	return emu_next_close(fd);
}

FILE *emu_real_fopen(const char *path, const char *mode)
{
	emu_load_fopen();
	return emu_next_fopen(path, mode);
}

void *emu_real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	emu_load_mmap();
	return emu_next_mmap(addr, len, prot, flags, fd, off);
}

int emu_real_ioctl(int fd, unsigned long req, void *arg)
{
	emu_load_ioctl();
	return emu_next_ioctl(fd, req, arg);
}

char *emu_real_realpath(const char *path, char *resolved)
{
	emu_load_realpath();
	return emu_next_realpath(path, resolved);
}

/* ---- path redirection -------------------------------------------------- */

static const char *const emu_sys_prefixes[] = {
	"/sys/devices/virtual/kfd/kfd",
	"/sys/class/kfd/kfd",
};

/*
 * The DRM side (written by emu_tree_write under <sysfs>/sys): these prefixes
 * always go into the tree, which hides the host's own GPUs from ROCm SMI.
 */
static const char *const emu_drm_prefixes[] = {
	"/sys/class/drm",
	"/sys/class/hwmon",
	"/sys/module/amdgpu",
	"/sys/cray", /* the Cray EX node's pm_counters (craypm_fs.c) */
};

static bool emu_has_prefix(const char *path, const char *pre)
{
	size_t l = strlen(pre);
	return !strncmp(path, pre, l) && (path[l] == 0 || path[l] == '/');
}

static const char *emu_xlate(const char *path, char *buf, size_t n)
{
	/* The loaded modules, where the tree has the DRM side: libkmod's "is amdgpu loaded" (rocminfo). */
	if (emu_p.active && emu_p.drm && path && !strcmp(path, "/proc/modules")) {
		snprintf(buf, n, "%s/proc/modules", emu_p.sysfs);
		EMU_DBG("redirect %s -> %s\n", path, buf);
		return buf;
	}
	if (!emu_p.active || !path || strncmp(path, "/sys/", 5))
		return path;
	for (size_t i = 0; i < sizeof(emu_sys_prefixes) / sizeof(emu_sys_prefixes[0]); i++) {
		size_t l = strlen(emu_sys_prefixes[i]);
		if (!strncmp(path, emu_sys_prefixes[i], l) && (path[l] == 0 || path[l] == '/')) {
			snprintf(buf, n, "%s%s", emu_p.sysfs, path + l);
			EMU_DBG("redirect %s -> %s\n", path, buf);
			return buf;
		}
	}
	if (!emu_p.drm)
		return path;
	for (size_t i = 0; i < sizeof(emu_drm_prefixes) / sizeof(emu_drm_prefixes[0]); i++) {
		if (emu_has_prefix(path, emu_drm_prefixes[i])) {
			snprintf(buf, n, "%s%s", emu_p.sysfs, path);
			EMU_DBG("redirect %s -> %s\n", path, buf);
			return buf;
		}
	}
	/* PCI device directories: overlaid, i.e. only what the tree has (the host's other devices stay visible). */
	if (!strncmp(path, "/sys/devices/pci", 16)) {
		struct stat st;
		snprintf(buf, n, "%s%s", emu_p.sysfs, path);
		emu_load_lstat();
		if (emu_next_lstat(buf, &st) == 0) {
			EMU_DBG("overlay %s -> %s\n", path, buf);
			return buf;
		}
	}
	return path;
}

/* Maps a resolved path inside the tree back to the /sys path a real system would give. */
static char *emu_unxlate(char *res, bool allocated)
{
	size_t rl = strlen(emu_p.sysfs_real);
	if (!res || !emu_p.active || !rl || strncmp(res, emu_p.sysfs_real, rl) || (res[rl] && res[rl] != '/'))
		return res;
	if (!strncmp(res + rl, "/sys/", 5)) {
		memmove(res, res + rl, strlen(res + rl) + 1);
		return res;
	}
	char tmp[PATH_MAX];
	int k = snprintf(tmp, sizeof(tmp), "/sys/devices/virtual/kfd/kfd%s", res + rl);
	if (k < 0 || k >= PATH_MAX)
		return res;
	if (allocated) {
		char *nr = realloc(res, (size_t)k + 1);
		if (!nr)
			return res;
		res = nr;
	}
	memcpy(res, tmp, (size_t)k + 1);
	return res;
}

/* Which fake device a path names; *minor gets the render minor. */
static int emu_classify(const char *path, uint32_t *minor)
{
	unsigned m;
	char tail;
	if (!emu_p.active || !path)
		return EMU_FD_NONE;
	if (!strcmp(path, "/dev/kfd"))
		return EMU_FD_KFD;
	if (sscanf(path, "/dev/dri/renderD%u%c", &m, &tail) == 1 && emu_gpu_by_minor(m)) {
		*minor = m;
		return EMU_FD_RENDER;
	}
	return EMU_FD_NONE;
}

static int emu_open_fake(int kind, uint32_t minor, const char *path, int flags)
{
	/* The name is what /proc/PID/fd shows; spmtap looks for it to name a busy device's holder. */
	int fd = memfd_create(kind == EMU_FD_KFD ? "spmtap-emu-kfd" : "spmtap-emu-render",
			      (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
	if (fd < 0)
		return -1;
	if (fd >= EMU_MAX_FDS) {
		emu_real_close(fd);
		errno = EMFILE;
		return -1;
	}
	pthread_mutex_lock(&emu_p.lock);
	emu_p.fdkind[fd] = (unsigned char)kind;
	emu_p.fdminor[fd] = (uint16_t)minor;
	if (kind == EMU_FD_KFD)
		emu_p.kfd_fds++;
	pthread_mutex_unlock(&emu_p.lock);
	EMU_DBG("open(%s) -> fake fd %d\n", path, fd);
	return fd;
}

static int emu_fd_kind(int fd)
{
	return (fd >= 0 && fd < EMU_MAX_FDS) ? emu_p.fdkind[fd] : EMU_FD_NONE;
}

#define EMU_OPEN_BODY(realfn, ...)                                        \
	do {                                                              \
		uint32_t minor = 0;                                       \
		int kind = emu_classify(path, &minor);                    \
		if (kind)                                                 \
			return emu_open_fake(kind, minor, path, flags);   \
		int sch_ = emu_schedule_open(path, flags);               \
		if (sch_ != -2)                                           \
			return sch_;                                      \
		char buf[PATH_MAX];                                       \
		const char *orig_ = path;                                 \
		path = emu_xlate(path, buf, sizeof(buf));                 \
		if (path != orig_) {                                      \
			int sfd_ = emu_sensor_open(path, flags, true);    \
			if (sfd_ != -2)                                   \
				return sfd_;                              \
		}                                                         \
		emu_load_##realfn();                                      \
		return emu_next_##realfn(__VA_ARGS__);                    \
	} while (0)

static mode_t emu_mode_arg(int flags, va_list ap)
{
	return (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
}

EMU_EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t m = emu_mode_arg(flags, ap);
	va_end(ap);
	EMU_OPEN_BODY(open, path, flags, m);
}

EMU_EXPORT int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t m = emu_mode_arg(flags, ap);
	va_end(ap);
	EMU_OPEN_BODY(open64, path, flags, m);
}

EMU_EXPORT int openat(int dfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t m = emu_mode_arg(flags, ap);
	va_end(ap);
	EMU_OPEN_BODY(openat, dfd, path, flags, m);
}

EMU_EXPORT int openat64(int dfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t m = emu_mode_arg(flags, ap);
	va_end(ap);
	EMU_OPEN_BODY(openat64, dfd, path, flags, m);
}

EMU_EXPORT int __open_2(const char *path, int flags);
EMU_EXPORT int __open_2(const char *path, int flags)
{
	EMU_OPEN_BODY(__open_2, path, flags);
}

EMU_EXPORT int __open64_2(const char *path, int flags);
EMU_EXPORT int __open64_2(const char *path, int flags)
{
	EMU_OPEN_BODY(__open64_2, path, flags);
}

static int emu_fopen_flags(const char *mode)
{
	int fl = (mode && mode[0] == 'r' && !strchr(mode, '+')) ? O_RDONLY : O_RDWR;
	if (mode && strchr(mode, 'e'))
		fl |= O_CLOEXEC;
	return fl;
}

/* fd from a generated file (-2: not one) as a FILE; *handled says whether it was one. */
static FILE *emu_fopen_fd(int fd, const char *mode, bool *handled)
{
	*handled = fd != -2;
	if (fd < 0)
		return NULL;
	FILE *f = fdopen(fd, mode);
	if (!f)
		emu_real_close(fd);
	return f;
}

/*
 * The schedule, or a dynamic attribute (translated path xpath), opened through stdio (ifstream goes
 * through fopen64): generated once, at open.
 */
static FILE *emu_fopen_dynamic(const char *path, const char *xpath, const char *mode, bool *handled)
{
	FILE *f = emu_fopen_fd(emu_schedule_open(path, emu_fopen_flags(mode)), mode, handled);
	if (*handled || xpath == path)
		return f;
	return emu_fopen_fd(emu_sensor_open(xpath, emu_fopen_flags(mode), false), mode, handled);
}

EMU_EXPORT FILE *fopen(const char *path, const char *mode)
{
	char buf[PATH_MAX];
	const char *x = emu_xlate(path, buf, sizeof(buf));
	if (emu_p.active) {
		bool handled;
		FILE *f = emu_fopen_dynamic(path, x, mode, &handled);
		if (handled)
			return f;
	}
	emu_load_fopen();
	return emu_next_fopen(x, mode);
}

EMU_EXPORT FILE *fopen64(const char *path, const char *mode)
{
	char buf[PATH_MAX];
	const char *x = emu_xlate(path, buf, sizeof(buf));
	if (emu_p.active) {
		bool handled;
		FILE *f = emu_fopen_dynamic(path, x, mode, &handled);
		if (handled)
			return f;
	}
	emu_load_fopen64();
	return emu_next_fopen64(x, mode);
}

EMU_EXPORT DIR *opendir(const char *path)
{
	char buf[PATH_MAX];
	emu_load_opendir();
	return emu_next_opendir(emu_xlate(path, buf, sizeof(buf)));
}

/* Character-device identity of a fake device, as the real nodes have. */
static bool emu_fake_stat(const char *path, dev_t *rdev)
{
	uint32_t minor = 0;
	switch (emu_classify(path, &minor)) {
	case EMU_FD_KFD:
		*rdev = makedev(234, 0);
		return true;
	case EMU_FD_RENDER:
		*rdev = makedev(226, minor);
		return true;
	default:
		return false;
	}
}

#define EMU_STAT_BODY(realfn, st)                                 \
	do {                                                      \
		dev_t rdev;                                       \
		char buf[PATH_MAX];                               \
		if (emu_fake_stat(path, &rdev)) {                 \
			memset(st, 0, sizeof(*st));               \
			(st)->st_mode = S_IFCHR | 0666;           \
			(st)->st_rdev = rdev;                     \
			(st)->st_nlink = 1;                       \
			return 0;                                 \
		}                                                 \
		emu_load_##realfn();                              \
		return emu_next_##realfn(emu_xlate(path, buf, sizeof(buf)), st); \
	} while (0)

EMU_EXPORT int stat(const char *path, struct stat *st)
{
	EMU_STAT_BODY(stat, st);
}

EMU_EXPORT int lstat(const char *path, struct stat *st)
{
	EMU_STAT_BODY(lstat, st);
}

EMU_EXPORT int stat64(const char *path, struct stat64 *st)
{
	EMU_STAT_BODY(stat64, st);
}

EMU_EXPORT int lstat64(const char *path, struct stat64 *st)
{
	EMU_STAT_BODY(lstat64, st);
}

EMU_EXPORT int access(const char *path, int mode)
{
	char buf[PATH_MAX];
	uint32_t minor;
	if (emu_classify(path, &minor))
		return 0;
	emu_load_access();
	return emu_next_access(emu_xlate(path, buf, sizeof(buf)), mode);
}

EMU_EXPORT ssize_t readlink(const char *path, char *out, size_t n)
{
	char buf[PATH_MAX];
	emu_load_readlink();
	return emu_next_readlink(emu_xlate(path, buf, sizeof(buf)), out, n);
}

EMU_EXPORT int __openat_2(int dfd, const char *path, int flags);
EMU_EXPORT int __openat_2(int dfd, const char *path, int flags)
{
	EMU_OPEN_BODY(__openat_2, dfd, path, flags);
}

EMU_EXPORT int __openat64_2(int dfd, const char *path, int flags);
EMU_EXPORT int __openat64_2(int dfd, const char *path, int flags)
{
	EMU_OPEN_BODY(__openat64_2, dfd, path, flags);
}

EMU_EXPORT int scandir(const char *path, struct dirent ***nl, int (*sel)(const struct dirent *),
		       int (*cmp)(const struct dirent **, const struct dirent **))
{
	char buf[PATH_MAX];
	emu_load_scandir();
	return emu_next_scandir(emu_xlate(path, buf, sizeof(buf)), nl, sel, cmp);
}

EMU_EXPORT int scandir64(const char *path, struct dirent64 ***nl, int (*sel)(const struct dirent64 *),
			 int (*cmp)(const struct dirent64 **, const struct dirent64 **))
{
	char buf[PATH_MAX];
	emu_load_scandir64();
	return emu_next_scandir64(emu_xlate(path, buf, sizeof(buf)), nl, sel, cmp);
}

EMU_EXPORT int fstatat(int dfd, const char *path, struct stat *st, int fl)
{
	char buf[PATH_MAX];
	emu_load_fstatat();
	return emu_next_fstatat(dfd, emu_xlate(path, buf, sizeof(buf)), st, fl);
}

EMU_EXPORT int fstatat64(int dfd, const char *path, struct stat64 *st, int fl)
{
	char buf[PATH_MAX];
	emu_load_fstatat64();
	return emu_next_fstatat64(dfd, emu_xlate(path, buf, sizeof(buf)), st, fl);
}

EMU_EXPORT int statx(int dfd, const char *path, int fl, unsigned int mask, struct statx *st)
{
	char buf[PATH_MAX];
	emu_load_statx();
	return emu_next_statx(dfd, emu_xlate(path, buf, sizeof(buf)), fl, mask, st);
}

EMU_EXPORT int faccessat(int dfd, const char *path, int mode, int fl)
{
	char buf[PATH_MAX];
	emu_load_faccessat();
	return emu_next_faccessat(dfd, emu_xlate(path, buf, sizeof(buf)), mode, fl);
}

EMU_EXPORT ssize_t readlinkat(int dfd, const char *path, char *out, size_t n)
{
	char buf[PATH_MAX];
	emu_load_readlinkat();
	return emu_next_readlinkat(dfd, emu_xlate(path, buf, sizeof(buf)), out, n);
}

/* ROCm SMI takes the BDF from realpath() of the card: results inside the tree read as /sys paths. */
EMU_EXPORT char *realpath(const char *path, char *resolved)
{
	char buf[PATH_MAX];
	emu_load_realpath();
	return emu_unxlate(emu_next_realpath(emu_xlate(path, buf, sizeof(buf)), resolved), resolved == NULL);
}

EMU_EXPORT char *canonicalize_file_name(const char *path)
{
	char buf[PATH_MAX];
	emu_load_canonicalize_file_name();
	return emu_unxlate(emu_next_canonicalize_file_name(emu_xlate(path, buf, sizeof(buf))), true);
}

/*
 * ROCm SMI keeps one robust pthread mutex per card in /dev/shm/rocm_smi_cardN.
 * Emulated cards get their own names, /dev/shm/spmtap-emu-<tag>-rocm_smi_cardN
 * (tag = $SPMTAP_EMU_SHM_TAG, else a hash of the tree path), so an emulated
 * run never touches a real device's mutex, runs do not collide, and a test
 * can remove what it made.  See docs/emulator.md for the stuck-mutex hazard.
 */
static const char *emu_shm_xlate(const char *name, char *buf, size_t n)
{
	if (!emu_p.active || !name || strncmp(name, "/rocm_smi", 9))
		return name;
	const char *tag = getenv("SPMTAP_EMU_SHM_TAG");
	char h[16];
	if (!tag || !*tag)
		tag = emu_shm_tag(emu_p.sysfs, h, sizeof(h));
	snprintf(buf, n, "/spmtap-emu-%s-%s", tag, name + 1);
	EMU_DBG("shm %s -> %s\n", name, buf);
	return buf;
}

EMU_EXPORT int shm_open(const char *name, int oflag, mode_t mode)
{
	char buf[NAME_MAX + 1];
	emu_load_shm_open();
	return emu_next_shm_open(emu_shm_xlate(name, buf, sizeof(buf)), oflag, mode);
}

EMU_EXPORT int shm_unlink(const char *name)
{
	char buf[NAME_MAX + 1];
	emu_load_shm_unlink();
	return emu_next_shm_unlink(emu_shm_xlate(name, buf, sizeof(buf)));
}

/* ---- operations on fake descriptors ----------------------------------- */

/* A sysfs attribute is regenerated when read from offset 0 (seq_file/sysfs: show() runs then). */
EMU_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	if (emu_fd_kind(fd) == EMU_FD_SENSOR && lseek(fd, 0, SEEK_CUR) == 0)
		emu_sensor_fd_refresh(fd);
	emu_load_read();
	return emu_next_read(fd, buf, n);
}

EMU_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	if (emu_fd_kind(fd) == EMU_FD_SENSOR && off == 0)
		emu_sensor_fd_refresh(fd);
	emu_load_pread();
	return emu_next_pread(fd, buf, n, off);
}

EMU_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
	if (emu_fd_kind(fd) == EMU_FD_SENSOR && off == 0)
		emu_sensor_fd_refresh(fd);
	emu_load_pread64();
	return emu_next_pread64(fd, buf, n, off);
}

/* Sensor memfds map as what they are; only the fake devices get anonymous memory. */
static bool emu_fd_is_device(int fd)
{
	int k = emu_fd_kind(fd);
	return k == EMU_FD_KFD || k == EMU_FD_RENDER;
}

/* BOs, doorbells, the MMIO-remap page, the events page: kfd_mem.c. */
static void *emu_fake_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return emu_mem_mmap(emu_fd_kind(fd), addr, len, prot, flags, (uint64_t)off);
}

EMU_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (emu_fd_is_device(fd))
		return emu_fake_mmap(addr, len, prot, flags, fd, off);
	return emu_real_mmap(addr, len, prot, flags, fd, off);
}

EMU_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (emu_fd_is_device(fd))
		return emu_fake_mmap(addr, len, prot, flags, fd, off);
	emu_load_mmap64();
	return emu_next_mmap64(addr, len, prot, flags, fd, off);
}

EMU_EXPORT int close(int fd)
{
	int kind = emu_fd_kind(fd);
	if (kind) {
		EMU_DBG("close(fake fd %d)\n", fd);
		pthread_mutex_lock(&emu_p.lock);
		emu_p.fdkind[fd] = EMU_FD_NONE;
		bool last = kind == EMU_FD_KFD && --emu_p.kfd_fds <= 0;
		if (last) {
			emu_p.kfd_fds = 0;
			for (int i = 0; i < emu_p.ngpus; i++)
				emu_p.gpus[i].pdd = false;
		}
		pthread_mutex_unlock(&emu_p.lock);
		/* The kernel's process teardown of the KFD file releases SPM. */
		if (last) {
			emu_spm_teardown_all("close");
			/* amdkfd's process teardown: queues first (the CP stops), then events and memory. */
			emu_queue_teardown();
			pthread_mutex_lock(&emu_p.lock);
			emu_events_teardown();
			emu_mem_teardown();
			pthread_mutex_unlock(&emu_p.lock);
		}
	}
	return emu_real_close(fd);
}

EMU_EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	switch (emu_fd_kind(fd)) {
	case EMU_FD_KFD:
		return emu_kfd_ioctl(fd, req, arg);
	case EMU_FD_RENDER:
		EMU_DBG("ioctl(render fd %d, 0x%lx) -> ENOTTY\n", fd, req);
		errno = ENOTTY;
		return -1;
	default:
		return emu_real_ioctl(fd, req, arg);
	}
}
