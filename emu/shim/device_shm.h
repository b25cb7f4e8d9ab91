/* SPDX-License-Identifier: MIT */
/*
 * The page the owner and its device process share (spm_device.h): plain
 * data only, no pointers, since the two map it at different addresses and
 * run different images of the shim.  One robust process-shared mutex
 * guards all of it; `req` wakes the device, `rep` the caller.  Requests go
 * strictly one at a time: every caller of the engine holds emu_p.lock.
 * After the page, from EMU_DEV_RING_OFF, each XCC's ring (ring_bytes).
 */
#ifndef SPMTAP_EMU_DEVICE_SHM_H
#define SPMTAP_EMU_DEVICE_SHM_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "emu/shim/gpu_state.h"
#include "emu/shim/spm_engine.h"

#define EMU_DEV_MAGIC 0x56454453u /* "SDEV" */
#define EMU_DEV_VERSION 1u
/* Production and the worker's copies run at least this often (gen B's poll, gen A's interrupts). */
#define EMU_DEV_TICK_NS 1000000ull
/* Between two SPM streams (after ACQUIRE, after a stop) the tick only replays the GPU's log. */
#define EMU_DEV_IDLE_TICK_NS 20000000ull
/*
 * A device further behind real time than LAG_MAX (a starved host, a rate it
 * cannot make) loses the samples up to KEEP before now without making them:
 * no step is ever longer than LAG_MAX's production, so a request (a stop, a
 * release) waits at most that, and the per-sample truth grows no faster
 * than the device can keep up with.  Never reached on a host that keeps up.
 */
#define EMU_DEV_LAG_MAX_NS 100000000ull
#define EMU_DEV_LAG_KEEP_NS 2000000ull
/*
 * The lost samples still get their per-sample truth record (no values), so
 * tests can count them, unless the device is this far behind: at rates
 * where even a record per sample outruns it, it writes none.
 */
#define EMU_DEV_LAG_UNTOLD_NS 1000000000ull
/* How often the device checks that its owner has not exec'ed. */
#define EMU_DEV_PROBE_NS 100000000ull
/* How long ACQUIRE waits for a new device before it falls back to the inline engine. */
#define EMU_DEV_START_NS 10000000000ull

struct emu_dev_shm {
	uint32_t magic, version;
	pthread_mutex_t mu;
	pthread_cond_t req, rep;
	/* Set by the caller before the spawn. */
	int32_t owner_pid;
	uint32_t gpu_id, num_xcc, gen;
	uint64_t rate, ring_bytes;
	int32_t ninj;
	struct emu_spm_inj inj[EMU_SPM_MAX_INJ];
	uint64_t cursor[EMU_GS_MAX_XCC]; /* the GPU's transition log heads at ACQUIRE */
	uint64_t probe_addr, token;      /* where the owner keeps `token` (its image: an exec replaces it) */
	uint32_t session;                /* the owner's device sessions so far, from 1 */
	/* The device's answer to the start: 1 ready, else -errno. */
	int32_t ready;
	char why[128];
	/* One request at a time. */
	uint64_t req_seq, rep_seq;
	uint32_t op;
	uint64_t a[3];
	int32_t rc;
	uint32_t bytes, loss;
	uint64_t val;
	uint8_t hold;                    /* the caller is inside a SET_DEST_BUF: no worker, no production */
	uint32_t want;                   /* atomic, no lock: the caller waits for the lock to post a request */
	/* EMU_DEV_FLUSH: what the caller copies from the shared ring; EMU_DEV_ROTATE: what it could not. */
	uint32_t fl_len[EMU_GS_MAX_XCC], fl_short[EMU_GS_MAX_XCC];
	uint64_t fl_from[EMU_GS_MAX_XCC], fl_dest[EMU_GS_MAX_XCC];
	/* The engine's state the caller reads, as of the last request or tick. */
	uint8_t streaming;
	uint8_t armed[EMU_GS_MAX_XCC], full[EMU_GS_MAX_XCC];
	uint64_t fill_ns[EMU_GS_MAX_XCC];
};

#define EMU_DEV_RING_OFF ((sizeof(struct emu_dev_shm) + 4095) / 4096 * 4096)

static inline size_t emu_dev_map_bytes(uint32_t num_xcc, uint64_t ring_bytes)
{
	return EMU_DEV_RING_OFF + (size_t)num_xcc * ring_bytes;
}

static inline uint64_t emu_dev_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline struct timespec emu_dev_ts(uint64_t ns)
{
	return (struct timespec){ (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
}

/* A holder that died (kill -9 of the other side) leaves the page usable. */
static inline void emu_dev_lock(struct emu_dev_shm *m)
{
	if (pthread_mutex_lock(&m->mu) == EOWNERDEAD)
		pthread_mutex_consistent(&m->mu);
}

static inline int emu_dev_timedwait(pthread_cond_t *c, struct emu_dev_shm *m, uint64_t until_mono)
{
	struct timespec ts = emu_dev_ts(until_mono);
	int r = pthread_cond_timedwait(c, &m->mu, &ts);
	if (r == EOWNERDEAD)
		pthread_mutex_consistent(&m->mu);
	return r;
}

#endif
