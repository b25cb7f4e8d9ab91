/* SPDX-License-Identifier: MIT */
/*
 * KFD memory objects: ALLOC/FREE_MEMORY_OF_GPU and MAP/UNMAP_MEMORY_TO_GPU
 * with a handle table and amdkfd's validation, and the mmaps of the fake
 * device files.
 *
 * Backing: a VRAM or GTT BO is a memfd of its size.  The render-node mmap at
 * its offset maps that memfd (libhsakmt maps every such BO there, VRAM that
 * the CPU may not touch PROT_NONE), and the shim maps its own alias, so the
 * emulated CP and KFD (the events page) reach the memory whatever the
 * application's protection or unmapping.  USERPTR BOs are the user's own
 * memory (GPU VA == CPU VA in the SVM aperture).  DOORBELL and MMIO_REMAP
 * BOs are mmapped on the kfd fd with amdkfd's offset encoding; the doorbell
 * page is one memfd per GPU (emu_doorbells).
 */
#include "emu/shim/shim.h"
#include <linux/kfd_ioctl.h>

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define EMU_MAX_BOS 16384
#define EMU_BO_OFF_BASE 0x100000ull /* render-node mmap offsets: (BASE + index) pages */

struct emu_bo {
	bool used;
	uint32_t gpu_id, flags;
	uint64_t va, size, userptr;
	int memfd;   /* VRAM/GTT backing, -1 otherwise */
	void *alias; /* the shim's own mapping of memfd (made on demand) */
	bool pinned; /* alias in use by KFD itself (the events page): kept after FREE, as amdkfd's kmap */
};

static struct emu_bo emu_bos[EMU_MAX_BOS];
uint64_t emu_mem_gpu_faults; /* emu_mem_gpu_ptr lookups that found no backing */

struct emu_db {
	int fd;
	uint64_t *alias;
};
static struct emu_db emu_dbs[EMU_MAX_GPUS];

static int emu_fail(int e)
{
	errno = e;
	return -1;
}

static int emu_gpu_index(const struct emu_gpu *g)
{
	return (int)(g - emu_p.gpus);
}

uint64_t *emu_doorbells(struct emu_gpu *g, int *fd)
{
	struct emu_db *d = &emu_dbs[emu_gpu_index(g)];
	if (!d->alias) {
		int f = memfd_create("spmtap-emu-doorbell", MFD_CLOEXEC);
		if (f < 0)
			return NULL;
		if (ftruncate(f, EMU_DOORBELL_SLICE)) {
			emu_real_close(f);
			return NULL;
		}
		void *p = emu_real_mmap(NULL, EMU_DOORBELL_SLICE, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
		if (p == MAP_FAILED) {
			emu_real_close(f);
			return NULL;
		}
		d->fd = f;
		d->alias = p;
		/* Every slot parked at the "no write" sentinel (queues.c). */
		memset(p, 0xFF, EMU_DOORBELL_SLICE);
	}
	if (fd)
		*fd = d->fd;
	return d->alias;
}

static struct emu_bo *emu_bo_get(uint64_t handle)
{
	uint32_t i = (uint32_t)handle;
	if (i == 0 || i >= EMU_MAX_BOS || !emu_bos[i].used || emu_bos[i].gpu_id != (uint32_t)(handle >> 32))
		return NULL;
	return &emu_bos[i];
}

static void emu_bo_release(struct emu_bo *b)
{
	if (b->alias && !b->pinned)
		munmap(b->alias, b->size);
	if (b->memfd >= 0)
		emu_real_close(b->memfd);
	memset(b, 0, sizeof(*b));
}

static int emu_alloc(struct kfd_ioctl_alloc_memory_of_gpu_args *a)
{
	struct emu_gpu *g = emu_gpu_by_id(a->gpu_id);
	uint32_t kinds = a->flags & (KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT |
				     KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL |
				     KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP);
	if (!g || !a->size || !kinds || (kinds & (kinds - 1)))
		return emu_fail(EINVAL);
	/* amdkfd: doorbell BOs are exactly the process doorbell slice, MMIO_REMAP exactly one page. */
	if ((kinds == KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL && a->size != EMU_DOORBELL_SLICE) ||
	    (kinds == KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP && a->size != 4096))
		return emu_fail(EINVAL);
	if (kinds == KFD_IOC_ALLOC_MEM_FLAGS_USERPTR && (!a->mmap_offset || (a->mmap_offset & 4095)))
		return emu_fail(EINVAL);
	int memfd = -1;
	if (kinds == KFD_IOC_ALLOC_MEM_FLAGS_VRAM || kinds == KFD_IOC_ALLOC_MEM_FLAGS_GTT) {
		memfd = memfd_create("spmtap-emu-bo", MFD_CLOEXEC);
		if (memfd < 0)
			return emu_fail(ENOMEM);
		if (ftruncate(memfd, (off_t)a->size)) {
			emu_real_close(memfd);
			return emu_fail(ENOMEM);
		}
	}
	pthread_mutex_lock(&emu_p.lock);
	uint32_t i;
	for (i = 1; i < EMU_MAX_BOS && emu_bos[i].used; i++)
		;
	if (i == EMU_MAX_BOS) {
		pthread_mutex_unlock(&emu_p.lock);
		if (memfd >= 0)
			emu_real_close(memfd);
		return emu_fail(ENOMEM);
	}
	emu_bos[i] = (struct emu_bo){ true, a->gpu_id, a->flags, a->va_addr, a->size,
				      kinds == KFD_IOC_ALLOC_MEM_FLAGS_USERPTR ? a->mmap_offset : 0, memfd, NULL,
				      false };
	pthread_mutex_unlock(&emu_p.lock);
	a->handle = ((uint64_t)a->gpu_id << 32) | i;
	if (kinds == KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL)
		a->mmap_offset = EMU_MMAP_TYPE_DOORBELL | EMU_MMAP_GPU_ID(a->gpu_id);
	else if (kinds == KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP)
		a->mmap_offset = EMU_MMAP_TYPE_MMIO | EMU_MMAP_GPU_ID(a->gpu_id);
	else if (kinds != KFD_IOC_ALLOC_MEM_FLAGS_USERPTR)
		a->mmap_offset = (EMU_BO_OFF_BASE + i) << 12;
	EMU_DBG("  alloc gpu 0x%x va 0x%llx size 0x%llx flags 0x%x -> handle 0x%llx off 0x%llx\n", a->gpu_id,
		(unsigned long long)a->va_addr, (unsigned long long)a->size, a->flags, (unsigned long long)a->handle,
		(unsigned long long)a->mmap_offset);
	return 0;
}

/* MAP/UNMAP: the handle must exist and every device id must be a GPU (amdkfd: EINVAL). */
static int emu_map(uint64_t handle, uint64_t ids_ptr, uint32_t n, uint32_t *n_success)
{
	if (!n || n > (uint32_t)emu_p.ngpus || *n_success > n || !ids_ptr)
		return emu_fail(EINVAL);
	const uint32_t *ids = (const uint32_t *)(uintptr_t)ids_ptr;
	pthread_mutex_lock(&emu_p.lock);
	bool ok = emu_bo_get(handle) != NULL;
	for (uint32_t k = 0; ok && k < n; k++)
		ok = emu_gpu_by_id(ids[k]) != NULL;
	pthread_mutex_unlock(&emu_p.lock);
	if (!ok)
		return emu_fail(EINVAL);
	*n_success = n;
	return 0;
}

int emu_mem_ioctl(unsigned long req, void *arg, int *handled)
{
	*handled = 1;
	switch (req) {
	case AMDKFD_IOC_ALLOC_MEMORY_OF_GPU:
		return emu_alloc(arg);
	case AMDKFD_IOC_FREE_MEMORY_OF_GPU: {
		struct kfd_ioctl_free_memory_of_gpu_args *a = arg;
		pthread_mutex_lock(&emu_p.lock);
		struct emu_bo *b = emu_bo_get(a->handle);
		if (b)
			emu_bo_release(b);
		pthread_mutex_unlock(&emu_p.lock);
		return b ? 0 : emu_fail(EINVAL);
	}
	case AMDKFD_IOC_MAP_MEMORY_TO_GPU: {
		struct kfd_ioctl_map_memory_to_gpu_args *a = arg;
		return emu_map(a->handle, a->device_ids_array_ptr, a->n_devices, &a->n_success);
	}
	case AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU: {
		struct kfd_ioctl_unmap_memory_from_gpu_args *a = arg;
		return emu_map(a->handle, a->device_ids_array_ptr, a->n_devices, &a->n_success);
	}
	default:
		*handled = 0;
		return -1;
	}
}

/* The shim's own mapping of a VRAM/GTT BO's memfd, made on first use. */
static void *emu_bo_alias(struct emu_bo *b)
{
	if (b->memfd < 0)
		return NULL;
	if (!b->alias) {
		void *p = emu_real_mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_SHARED, b->memfd, 0);
		if (p == MAP_FAILED)
			return NULL;
		b->alias = p;
	}
	return b->alias;
}

void *emu_mem_cpu(uint64_t handle, uint64_t *size)
{
	struct emu_bo *b = emu_bo_get(handle);
	if (!b)
		return NULL;
	*size = b->size;
	if (b->userptr)
		return (void *)(uintptr_t)b->userptr;
	if (!emu_bo_alias(b))
		return NULL;
	b->pinned = true;
	return b->alias;
}

/* The BO of this process that holds GPU VA va, or NULL (on the GPU, a page fault). */
static struct emu_bo *emu_bo_at(uint64_t va)
{
	for (uint32_t i = 1; i < EMU_MAX_BOS; i++) {
		struct emu_bo *b = &emu_bos[i];
		if (b->used && b->va && va >= b->va && va - b->va < b->size)
			return b;
	}
	return NULL;
}

/*
 * The memory behind GPU VA va as the emulated engines reach it: inside a
 * VRAM/GTT BO, the shim's alias of its memfd (whatever the application's
 * protection); inside a USERPTR BO, the user's CPU address (*user set: the
 * caller must access it fault-safely, the user may have unmapped it).
 * *avail: bytes from va to the BO's end.  NULL when no BO of this process
 * holds va: on the GPU, a page fault.  Under emu_p.lock.  (The SDMA engine's.)
 */
void *emu_mem_gpu_va(uint64_t va, uint64_t *avail, bool *user)
{
	struct emu_bo *b = emu_bo_at(va);
	if (!b)
		return NULL;
	uint64_t off = va - b->va;
	*avail = b->size - off;
	*user = b->userptr != 0;
	if (b->userptr)
		return (void *)(uintptr_t)(b->userptr + off);
	char *base = emu_bo_alias(b);
	return base ? base + off : NULL;
}

/*
 * A GPU virtual address range as the CP reaches it (DISPATCH.md 5): the same
 * lookup for a whole range.  NULL, with the failure counted, when the range
 * is in no BO the process allocated or registered, or straddles a BO's end:
 * the GPU would fault there.  *vram (may be NULL) says whether the BO is
 * VRAM.  Under emu_p.lock.
 */
void *emu_mem_gpu_ptr(uint64_t va, uint64_t len, bool *vram)
{
	uint64_t avail = 0;
	bool user = false;
	void *p = emu_mem_gpu_va(va, &avail, &user);
	if (!p || len > avail) {
		emu_mem_gpu_faults++;
		return NULL;
	}
	if (vram)
		*vram = (emu_bo_at(va)->flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM) != 0;
	return p;
}

static void *emu_map_fd(void *addr, size_t len, int prot, int flags, int fd)
{
	int nflags = (flags & ~(MAP_SHARED | MAP_PRIVATE | MAP_ANONYMOUS)) | MAP_SHARED;
	return emu_real_mmap(addr, len, prot, nflags, fd, 0);
}

void *emu_mem_mmap(int kind, void *addr, size_t len, int prot, int flags, uint64_t off)
{
	int fd = -1;
	bool doorbell = false;
	pthread_mutex_lock(&emu_p.lock);
	if (kind == EMU_FD_RENDER && off >= EMU_BO_OFF_BASE << 12) {
		uint64_t i = (off >> 12) - EMU_BO_OFF_BASE;
		if (i < EMU_MAX_BOS && emu_bos[i].used && emu_bos[i].memfd >= 0 && len <= emu_bos[i].size)
			fd = emu_bos[i].memfd;
	} else if (kind == EMU_FD_KFD && (off & EMU_MMAP_TYPE_MASK) == EMU_MMAP_TYPE_DOORBELL) {
		struct emu_gpu *g = emu_gpu_by_id(EMU_MMAP_GET_GPU_ID(off));
		if (g && len <= EMU_DOORBELL_SLICE && emu_doorbells(g, &fd))
			doorbell = true;
	}
	void *p;
	if (fd >= 0) {
		p = emu_map_fd(addr, len, prot, flags, fd);
	} else {
		int nflags = (flags & ~(MAP_SHARED | MAP_PRIVATE)) | MAP_SHARED | MAP_ANONYMOUS;
		p = emu_real_mmap(addr, len, prot, nflags, -1, 0);
		if (p != MAP_FAILED && kind == EMU_FD_KFD && (off & EMU_MMAP_TYPE_MASK) == EMU_MMAP_TYPE_EVENTS &&
		    len >= KFD_SIGNAL_EVENT_LIMIT * 8)
			emu_events_set_page(p); /* the APU path: KFD provides the events page */
	}
	/* amdkfd's doorbell VMAs are VM_DONTCOPY: a forked child has no doorbells. */
	if (doorbell && p != MAP_FAILED)
		madvise(p, len, MADV_DONTFORK);
	pthread_mutex_unlock(&emu_p.lock);
	EMU_DBG("mmap(%s fd, off 0x%llx, len 0x%zx)%s -> %p\n", kind == EMU_FD_KFD ? "kfd" : "render",
		(unsigned long long)off, len, fd >= 0 ? (doorbell ? " doorbells" : " BO") : "", p);
	return p;
}

/* Under emu_p.lock. */
void emu_mem_teardown(void)
{
	for (uint32_t i = 1; i < EMU_MAX_BOS; i++)
		if (emu_bos[i].used)
			emu_bo_release(&emu_bos[i]);
	for (int i = 0; i < EMU_MAX_GPUS; i++)
		if (emu_dbs[i].alias)
			memset(emu_dbs[i].alias, 0xFF, EMU_DOORBELL_SLICE);
}

void emu_mem_after_fork(void)
{
	/* The child is not the KFD process that owns these BOs: it forgets them (its fd copies closed). */
	for (uint32_t i = 1; i < EMU_MAX_BOS; i++)
		if (emu_bos[i].used) {
			if (emu_bos[i].memfd >= 0)
				emu_real_close(emu_bos[i].memfd);
			memset(&emu_bos[i], 0, sizeof(emu_bos[i]));
		}
	/* Doorbell pages: the child's aliases would be the parent's doorbells; make fresh ones on demand. */
	for (int i = 0; i < EMU_MAX_GPUS; i++) {
		if (emu_dbs[i].alias) {
			munmap(emu_dbs[i].alias, EMU_DOORBELL_SLICE);
			emu_real_close(emu_dbs[i].fd);
		}
		emu_dbs[i] = (struct emu_db){ 0, NULL };
	}
}
