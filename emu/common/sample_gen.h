/* SPDX-License-Identifier: MIT */
/*
 * Synthesising the bytes of emulated RLC samples from a derived layout
 * (emu/shim/rlc.c derives it from the registers) and the workload model.
 *
 * Two ways, one result.  The reference computes every counter of every
 * sample from the counter model (emu_rlc_sample).  The template ring, the
 * default, precomputes per (layout, activity per block) K samples with their
 * noise applied and hands out sample `seq` as template `seq mod K` with its
 * timestamp patched: generation becomes a memcpy.  Template i is the
 * reference's sample i, so both agree byte for byte on the first K samples
 * of a level, and after that the noise of sample seq is the noise of
 * sample seq mod K (a period of K samples, each value still within the
 * model's +-3 %).  Layout, counter widths, clamping, per-SE values and the
 * level a(t) of each sample are the reference's: a level change shows at
 * the sample whose time crosses it.  The per-sample ground truth reads the
 * values of the template it was given, so it records exactly what was
 * written.
 *
 * Here, not in the shim, so that a benchmark links it without the shim.
 */
#ifndef SPMTAP_EMU_SAMPLE_GEN_H
#define SPMTAP_EMU_SAMPLE_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/common/counters.h"
#include "emu/common/workload.h"

#ifndef EMU_MAX_SE
#define EMU_MAX_SE 8 /* the same definition as emu/shim/regs.h */
#endif
#define EMU_RLC_LINE 32u /* bytes per SPM line (EMU_SPM_LINE) */

enum emu_rlc_part {
	EMU_PART_TS,   /* 16 bits of the timestamp: `ts_word` */
	EMU_PART_16,   /* a 16-bit counter */
	EMU_PART_LO,   /* low half of a 32-bit counter */
	EMU_PART_HI,   /* high half of a 32-bit counter */
};

struct emu_rlc_entry {
	uint16_t off;   /* u16 offset in the sample */
	int8_t se;      /* -1: global segment */
	uint16_t slot;  /* index in its segment = muxsel RAM index */
	uint16_t mux;   /* the muxsel entry (for a derived HI half: its LO entry) */
	uint8_t part, ts_word;
	uint8_t blk, inst, cntr, width;
	bool no_clamp;
	uint16_t event;
	struct emu_cnt_model m;
	uint64_t key;   /* counter identity: XCC, SE, block, instance, counter, event */
};

struct emu_rlc_tpl;

/*
 * The activity a sample counts at, per block (enum emu_blk): the workload
 * model gives every block the same a(t); kernels (emu/shim/kernel_activity.h)
 * load blocks by their profile's fractions.
 */
struct emu_rlc_act {
	double a[EMU_NBLK];
};
void emu_rlc_act_all(struct emu_rlc_act *x, double a);

struct emu_rlc_layout {
	int refs;
	uint32_t id;    /* per process, from 1 */
	uint32_t gpu_id, xcc;
	enum emu_gfx gfx;
	uint32_t G, S[EMU_MAX_SE], num_se, lines, sample_bytes;
	uint32_t interval, sclk_mhz;
	struct emu_workload wl;
	bool wl_given;  /* $SPMTAP_EMU_WORKLOAD was set (not the default): kernels add to it, else they replace it */
	double kfrac[EMU_NBLK]; /* a kernel's load on each block per unit of its level ($SPMTAP_EMU_KERNEL_BLOCKS) */
	bool truth_header_done;
	bool struth, struth_checked; /* per process: $SPMTAP_EMU_SAMPLE_TRUTH asked for, read once */
	/* Generation: false = the template ring, true = the reference per sample ($SPMTAP_EMU_SAMPLE_TEMPLATES=0). */
	bool direct;
	/* Per process, never stored: the template ring or the reference's one-sample cache; NULL until used. */
	struct emu_rlc_tpl *tpl;
	uint32_t nent, ncnt; /* entries; those that are counters (not timestamp) */
	struct emu_rlc_entry ent[];
};

/*
 * The reference: sample `sample_seq` of XCC `xcc` at activity `a` with
 * timestamp `ticks`: sample_bytes into out; the true (unclamped) value of
 * each counter entry, in entry order, into truth (ncnt values) when
 * non-NULL.  emu_rlc_sample takes the activity of time t_ns.
 */
void emu_rlc_sample_level(const struct emu_rlc_layout *L, uint32_t xcc, uint64_t sample_seq, double a,
			  uint64_t ticks, uint8_t *out, uint64_t *truth);
void emu_rlc_sample(const struct emu_rlc_layout *L, uint32_t xcc, uint64_t sample_seq, uint64_t t_ns,
		    uint64_t ticks, uint8_t *out, uint64_t *truth);
/* The same with an activity per block (emu_rlc_sample_level gives every block a). */
void emu_rlc_sample_act(const struct emu_rlc_layout *L, uint32_t xcc, uint64_t sample_seq,
			const struct emu_rlc_act *act, uint64_t ticks, uint8_t *out, uint64_t *truth);

/* Write the timestamp `ticks` into the timestamp entries of a sample. */
void emu_rlc_put_ticks(const struct emu_rlc_layout *L, uint8_t *sample, uint64_t ticks);

/*
 * Sample `seq` of XCC `xcc` at activity `a`, the way L->direct says: a
 * pointer to its sample_bytes with every timestamp word 0 (the caller
 * copies the lines it needs and patches the timestamp with
 * emu_rlc_put_ticks), and its ncnt true values into *truth when truth is
 * non-NULL.  Valid until the next call on L.  NULL only when out of memory.
 * Not thread-safe per layout (the engine calls it under its lock).
 */
const uint8_t *emu_rlc_gen(struct emu_rlc_layout *L, uint32_t xcc, uint64_t seq, double a,
			   const uint64_t **truth);
/* The same at an activity per block; rings are kept per exact activity vector. */
const uint8_t *emu_rlc_gen_act(struct emu_rlc_layout *L, uint32_t xcc, uint64_t seq, const struct emu_rlc_act *a,
			       const uint64_t **truth);

/* The ring's size in samples per level for L (a power of two), and the levels it keeps. */
uint32_t emu_rlc_tpl_ring(const struct emu_rlc_layout *L);
#define EMU_RLC_TPL_LEVELS 4

/* Free L->tpl and set it NULL (emu_rlc_put, before a layout is stored or copied). */
void emu_rlc_tpl_drop(struct emu_rlc_layout *L);

#endif
