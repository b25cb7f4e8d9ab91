/* SPDX-License-Identifier: MIT */
/*
 * The emulated device's shared half: GPU profiles, the KFD sysfs topology
 * generator and the helpers that launch a program under the LD_PRELOAD shim.
 * Linked into the shim, the launcher (spmtap-emu) and the tests, never into
 * spmtap or libspmtap.  It knows nothing of spmtap's planner or decoder
 * (docs/emulator.md).
 */
#ifndef SPMTAP_EMU_H
#define SPMTAP_EMU_H

#include <stddef.h>
#include <stdint.h>

/* Kernel generation of kfd_spm.c (shared/ref/SPM.md section 3). */
enum emu_gen { EMU_GEN_A = 0, EMU_GEN_B = 1 };

struct emu_profile {
	const char *name;            /* spec name: "mi300a" */
	const char *gfx_name;        /* "gfx942" */
	const char *topology_name;   /* nodes/N/name as the kernel prints it */
	const char *marketing_name;  /* amdgpu_get_marketing_name() */
	uint32_t gfx_target_version; /* 90402 */
	uint32_t device_id;
	uint32_t num_xcc;
	uint32_t gpus_per_card;      /* mi250x: 2 GCD nodes per card */
	uint32_t cu_count;           /* per GPU node */
	uint32_t array_count;        /* shader arrays, all XCCs */
	uint32_t simd_arrays_per_engine;
	uint32_t cu_per_simd_array;
	uint64_t vram_bytes;         /* per GPU node */
	enum emu_gen default_gen;
	uint32_t sclk_mhz;           /* shader clock the RLC's sample interval counts (SPM.md 6.2) */
};

/* One GPU node of a parsed profile spec. */
struct emu_gpu_desc {
	const struct emu_profile *profile;
	uint32_t gpu_id;       /* 16-bit, nonzero, distinct across the spec */
	uint32_t node;         /* topology node index (CPU is node 0) */
	uint32_t render_minor; /* 128 + GPU index */
	uint32_t location_id;  /* PCI bus << 8 */
};

#define EMU_MAX_GPUS 64

size_t emu_profile_count(void);
const struct emu_profile *emu_profile_at(size_t i);
const struct emu_profile *emu_profile_find(const char *name);

/*
 * Parse "NAME[:CARDS][,NAME[:CARDS]...]" into at most `max` GPU nodes.
 * Returns the number of GPU nodes, or -1 with a message in err (an unknown
 * name lists the valid ones).
 */
int emu_spec_parse(const char *spec, struct emu_gpu_desc *out, size_t max, char *err, size_t errlen);

/* Write the topology tree for `spec` under dir (created), plus dir/emu-profile. */
int emu_tree_write(const char *dir, const char *profile_spec, char *err, size_t errlen);

/*
 * Path of libspmtap-emu.so: $SPMTAP_EMU_LIB, else beside /proc/self/exe or one
 * or two levels up (build tree), else <exe dir>/../lib/spmtap/ (installed).
 * NULL when not found, with the reason in buf.
 */
const char *emu_shim_path(char *buf, size_t len);

/*
 * mkdtemp under $TMPDIR (or /tmp), record this process as its owner
 * (EMU_OWNER_FILE), write the tree into <tmp>/kfd, set
 * SPMTAP_EMU_SYSFS, SPMTAP_EMU_PROFILE, SPMTAP_EMU_ACTIVE=1 and prepend the
 * shim to LD_PRELOAD.  The new directory is returned in tmpdir.  0 or -1.
 */
int emu_env_setup(const char *profile_spec, char *tmpdir, size_t len, char *err, size_t errlen);

/*
 * Delete a directory made by emu_env_setup (refuses one without our marker),
 * and the ROCm SMI mutexes its processes made under the tree's own tag
 * (/dev/shm/spmtap-emu-<emu_shm_tag>-*).
 */
int emu_tree_remove(const char *tmpdir);

/* The default tag of a tree's ROCm SMI mutexes: a hash of its SPMTAP_EMU_SYSFS path (docs/emulator.md). */
const char *emu_shm_tag(const char *sysfs, char *buf, size_t len);

/* Marker file that emu_env_setup leaves in its temporary directory. */
#define EMU_TMP_MARKER ".spmtap-emu-tmp"

/*
 * The owner record (owner.c): the process that made a temporary directory,
 * by pid, start time, boot id and pid namespace, written by emu_env_setup
 * before anything else, so that a directory whose maker died uncleanly can
 * be told from one in use.
 */
#define EMU_OWNER_FILE ".spmtap-emu-owner"
/* Record this process as tmpdir's owner.  0, or -1 with the reason in err. */
int emu_owner_write(const char *tmpdir, char *err, size_t errlen);
/* 1 when tmpdir's owner is provably dead; 0 when it lives, or no record says who it is. */
int emu_owner_gone(const char *tmpdir);
/*
 * Remove every spmtap-emu-* directory of ours under base ($TMPDIR or /tmp
 * when NULL) that has our marker and an owner provably gone; never another.
 * Returns how many were removed, or -1 with the reason in err.
 */
int emu_tree_sweep(const char *base, char *err, size_t errlen);
/* /proc/PID/stat's start time (clock ticks since boot); 0 when there is no such process. */
unsigned long long emu_proc_start(long pid);

#endif
