/* SPDX-License-Identifier: MIT */
/*
 * Internal state of the LD_PRELOAD shim.  A preloaded library is process
 * state by nature, so everything lives in one struct, emu_p, guarded by
 * emu_p.lock; the files of emu/shim/ each own one job on it.
 */
#ifndef SPMTAP_EMU_SHIM_H
#define SPMTAP_EMU_SHIM_H

#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "emu/common/emu.h"

#define EMU_EXPORT __attribute__((visibility("default")))
#define EMU_MAX_FDS 65536

/* EMU_FD_SENSOR: a memfd serving a dynamic sysfs attribute (sensor_fs.c), refreshed on a read at offset 0. */
enum emu_fd_kind { EMU_FD_NONE = 0, EMU_FD_KFD = 1, EMU_FD_RENDER = 2, EMU_FD_SENSOR = 3 };

struct emu_spm;      /* spm_engine.c */
struct emu_gpu_regs; /* regs.c */
struct emu_cp_state; /* queues.c */
struct emu_gpu_state; /* gpu_state.c */

struct emu_gpu {
	uint32_t gpu_id;
	uint32_t node;
	uint32_t render_minor;
	uint32_t num_xcc;
	const struct emu_profile *profile; /* NULL for a tree not written by emu_tree_write */
	bool pdd;                          /* ACQUIRE_VM done by this process */
	uint64_t pdd_file;                 /* inode of the render-node file that VM came from */
	struct emu_spm *spm;               /* non-NULL while this process holds SPM */
	struct emu_gpu_state *gs;          /* what every process sees of the GPU (gpu_state.h); first use */
	struct emu_gpu_regs *regs;         /* this process's handle on the registers in gs */
	struct emu_cp_state *cp;           /* queues.c: the GPU's CP thread state; made on first queue */
};

struct emu_proc {
	bool active, debug;
	char sysfs[PATH_MAX];
	char sysfs_real[PATH_MAX]; /* realpath of sysfs: what realpath() results start with */
	bool drm;                  /* the tree has the DRM side (<sysfs>/sys/class/drm) */
	uint32_t kfd_minor;
	uint64_t clock_offset; /* GPU ticks added to the 100 MHz count */
	double clock_ppm;
	/* GET_CLOCK_COUNTERS disturbed (docs/emulator.md "GPU clock"): DELAY ns between two
	 * of its clock reads on RUN calls in every EVERY, from call EVERY on; AT_RAW: between
	 * the GPU latch and RAW, else between RAW and BOOTTIME */
	uint64_t clock_pair_delay_ns, clock_pair_delay_every, clock_pair_delay_run;
	bool clock_pair_delay_at_raw;
	uint64_t clock_pair_calls; /* atomic: GET_CLOCK_COUNTERS calls so far */
	struct emu_gpu gpus[EMU_MAX_GPUS];
	int ngpus;
	int kfd_fds; /* open /dev/kfd descriptors; the last close tears down */
	uint64_t next_handle;
	pthread_mutex_t lock;
	unsigned char fdkind[EMU_MAX_FDS];
	uint16_t fdminor[EMU_MAX_FDS]; /* render minor of an EMU_FD_RENDER fd */
};

extern struct emu_proc emu_p;

void emu_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define EMU_DBG(...)                          \
	do {                                  \
		if (emu_p.debug)              \
			emu_log(__VA_ARGS__); \
	} while (0)

/* Real libc entry points (shim_libc.c), resolved on first use. */
int emu_real_open(const char *path, int flags, mode_t mode);
int emu_real_close(int fd);
FILE *emu_real_fopen(const char *path, const char *mode);
void *emu_real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int emu_real_ioctl(int fd, unsigned long req, void *arg);
char *emu_real_realpath(const char *path, char *resolved);

/* sensor_fs.c: dynamic sensor attributes in <sysfs>/sys (docs/emulator.md "Sensors"). */
/* fd of freshly generated content if translated path xpath is a dynamic attribute, -2 if not, -1 on error. */
int emu_sensor_open(const char *xpath, int flags, bool track);
/* Regenerates a tracked sensor fd's content (a read at offset 0 re-reads sysfs); false if fd is not ours. */
bool emu_sensor_fd_refresh(int fd);
void emu_sensor_fd_forget(int fd);

/* craypm_fs.c: /sys/cray/pm_counters (docs/emulator.md "Cray PM counters"). */
/* Whether resolved path rp is a file of the tree's pm_counters; *name: its name. */
bool emu_cray_path(const char *rp, const char **name);
/* The file index of a pm_counters name (emu/common/craypm.h), or -1. */
int emu_cray_file_of(const char *name);
/* File `file` as a read now shows it; its length or -1. */
ssize_t emu_cray_generate(int file, unsigned char *buf, size_t len);

/* schedule_fs.c: <tree>/emu-schedule, generated at open; -2 when path is not it, else an fd or -1. */
int emu_schedule_open(const char *path, int flags);

/* config.c */
void emu_config_load(void);
struct emu_gpu *emu_gpu_by_id(uint32_t gpu_id);
struct emu_gpu *emu_gpu_by_minor(uint32_t minor);
/* Parses an unsigned/signed number knob; returns dflt when unset or bad. */
uint64_t emu_env_u64(const char *name, uint64_t dflt);
double emu_env_double(const char *name, double dflt);

/* gpu_clock.c: the one GPU time model (SPM.md 10.1/10.2). */
uint64_t emu_clock_raw_ns(void);
uint64_t emu_clock_boottime_ns(void);
uint64_t emu_clock_ticks(uint64_t raw_ns);

/* kfd_ioctl.c / kfd_events.c */
int emu_kfd_ioctl(int fd, unsigned long req, void *arg);
int emu_event_ioctl(unsigned long req, void *arg, int *handled);

/* spm_ioctl.c: the RLC_SPM ioctl; teardown when the KFD goes away. */
int emu_spm_ioctl(void *arg);
void emu_spm_teardown_all(const char *why);
void emu_spm_forget_after_fork(void);

/* cp_ioctl.c: the test-only PM4 channel and read-back, the register file. */
int emu_test_pm4_ioctl(void *arg);
int emu_readback_ioctl(void *arg);
/* The GPU's register file (in its shared state), mapped on first use; NULL when out of memory.  Under emu_p.lock. */
struct emu_gpu_regs *emu_gpu_regs(struct emu_gpu *g);
/* A mapping of the GPU's shared state of its own (for readers such as the sensors; g untouched). */
struct emu_gpu_state *emu_gpu_state_map(const struct emu_gpu *g);

/* kfd_mem.c: KFD memory objects (BOs) with real backing, the handle table, device mmaps. */
/* amdkfd's mmap offset encoding (kfd_priv.h): type in bits 63:62, gpu_id in bits 61:46. */
#define EMU_MMAP_TYPE_MASK (3ull << 62)
#define EMU_MMAP_TYPE_DOORBELL (3ull << 62)
#define EMU_MMAP_TYPE_EVENTS (2ull << 62)
#define EMU_MMAP_TYPE_RESERVED (1ull << 62)
#define EMU_MMAP_TYPE_MMIO (0ull << 62)
#define EMU_MMAP_GPU_ID(id) (((uint64_t)(id)&0xFFFFull) << 46)
#define EMU_MMAP_GET_GPU_ID(off) ((uint32_t)(((off) >> 46) & 0xFFFF))
#define EMU_DOORBELL_SLICE 8192u /* gfx9: 1024 64-bit doorbells per process per GPU */
int emu_mem_ioctl(unsigned long req, void *arg, int *handled);
/* A CPU pointer to the whole BO that stays valid while the shim lives (for USERPTR: the user's address). */
void *emu_mem_cpu(uint64_t handle, uint64_t *size);
/* The engines' view of GPU VA va (a BO alias, or *user: the user's memory); NULL when no BO holds it. */
void *emu_mem_gpu_va(uint64_t va, uint64_t *avail, bool *user);
void *emu_mem_mmap(int kind, void *addr, size_t len, int prot, int flags, uint64_t off);
/* The CP's view of GPU VA [va, va+len): NULL where the GPU would fault.  Under emu_p.lock. */
void *emu_mem_gpu_ptr(uint64_t va, uint64_t len, bool *vram);
extern uint64_t emu_mem_gpu_faults;
void emu_mem_teardown(void);
void emu_mem_after_fork(void);
/* The GPU's doorbell page as the CP sees it (made on first use); NULL when out of memory.  Under emu_p.lock. */
uint64_t *emu_doorbells(struct emu_gpu *g, int *fd);

/* kfd_events.c: events page, interrupts from the CP, statistics. */
void emu_event_interrupt_locked(uint32_t event_id);
void emu_events_teardown(void);
void emu_events_after_fork(void);
void emu_events_set_page(uint64_t *page); /* the APU path: a KFD_MMAP_TYPE_EVENTS mmap */
extern uint64_t emu_ev_stat_sleeps, emu_ev_stat_irqs, emu_ev_stat_irq_set;

/* queues.c: CREATE/DESTROY/UPDATE_QUEUE and the CP threads that take packets off user queues. */
int emu_queue_ioctl(unsigned long req, void *arg, int *handled);
void emu_queue_kick_all(void);   /* someone waits on the GPU: poll now.  Under emu_p.lock. */
void emu_queue_teardown(void);   /* last KFD close / exit */
void emu_queue_after_fork(void); /* the child owns no queues */
int emu_queue_readback(uint32_t gpu_id, uint32_t addr, uint32_t instance, uint32_t *value); /* under lock */
int emu_queue_err_ioctl(void *arg);
/* cp_ioctl.c: run dwords on the XCCs in mask (0 = all), one after another; -1 with "XCC k: ..." in err. */
int emu_cp_run_locked(struct emu_gpu *g, const uint32_t *dw, size_t n, uint32_t mask, char *err, size_t errlen,
		      uint32_t *err_dw);

#endif
