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

/* ---- path redirection -------------------------------------------------- */

static const char *const emu_sys_prefixes[] = {
	"/sys/devices/virtual/kfd/kfd",
	"/sys/class/kfd/kfd",
};

static const char *emu_xlate(const char *path, char *buf, size_t n)
{
	if (!emu_p.active || !path)
		return path;
	for (size_t i = 0; i < sizeof(emu_sys_prefixes) / sizeof(emu_sys_prefixes[0]); i++) {
		size_t l = strlen(emu_sys_prefixes[i]);
		if (!strncmp(path, emu_sys_prefixes[i], l) && (path[l] == 0 || path[l] == '/')) {
			snprintf(buf, n, "%s%s", emu_p.sysfs, path + l);
			EMU_DBG("redirect %s -> %s\n", path, buf);
			return buf;
		}
	}
	return path;
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
		char buf[PATH_MAX];                                       \
		path = emu_xlate(path, buf, sizeof(buf));                 \
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

EMU_EXPORT FILE *fopen(const char *path, const char *mode)
{
	char buf[PATH_MAX];
	emu_load_fopen();
	return emu_next_fopen(emu_xlate(path, buf, sizeof(buf)), mode);
}

EMU_EXPORT FILE *fopen64(const char *path, const char *mode)
{
	char buf[PATH_MAX];
	emu_load_fopen64();
	return emu_next_fopen64(emu_xlate(path, buf, sizeof(buf)), mode);
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

/* ---- operations on fake descriptors ----------------------------------- */

/* The KFD MMIO-remap page and doorbells: plain shared memory is enough. */
static void *emu_fake_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	int nflags = (flags & ~(MAP_SHARED | MAP_PRIVATE)) | MAP_SHARED | MAP_ANONYMOUS;
	void *p = emu_real_mmap(addr, len, prot, nflags, -1, 0);
	EMU_DBG("mmap(fake fd %d, off 0x%llx, len 0x%zx) -> %p\n", fd, (unsigned long long)off, len, p);
	return p;
}

EMU_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (emu_fd_kind(fd))
		return emu_fake_mmap(addr, len, prot, flags, fd, off);
	return emu_real_mmap(addr, len, prot, flags, fd, off);
}

EMU_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (emu_fd_kind(fd))
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
		if (last)
			emu_spm_teardown_all("close");
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
