/* SPDX-License-Identifier: MIT */
/*
 * The emulated RLC: at START_COUNTING it derives the sample layout from the
 * registers alone (segment sizes, muxsel RAMs, selects, interval), and
 * afterwards synthesises each sample from that layout and the workload
 * model (SPM.md 5, PROGRAMMING.md 3).
 */
#ifndef SPMTAP_EMU_RLC_H
#define SPMTAP_EMU_RLC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/common/counters.h"
#include "emu/common/workload.h"
#include "emu/shim/regs.h"

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

struct emu_rlc_layout {
	int refs;
	uint32_t id;    /* per process, from 1 */
	uint32_t gpu_id, xcc;
	enum emu_gfx gfx;
	uint32_t G, S[EMU_MAX_SE], num_se, lines, sample_bytes;
	uint32_t interval, sclk_mhz;
	struct emu_workload wl;
	bool truth_header_done;
	uint32_t nent, ncnt; /* entries; those that are counters (not timestamp) */
	struct emu_rlc_entry ent[];
};

/* NULL with the reason in err when the registers do not hold a valid program. */
struct emu_rlc_layout *emu_rlc_derive(const struct emu_gpu_regs *r, uint32_t xcc, char *err, size_t errlen);
struct emu_rlc_layout *emu_rlc_get(struct emu_rlc_layout *L);
void emu_rlc_put(struct emu_rlc_layout *L);
/*
 * A layout as plain bytes, for the GPU's shared state (gpu_state.h): the
 * most any layout of a GPU with num_se SEs per XCC takes, a copy into dst
 * (at most cap bytes; the entries that do not fit are dropped, which
 * cannot happen within max_bytes), and a new layout (refs 1, a new id of
 * this process) from such a copy, or NULL.
 */
size_t emu_rlc_layout_max_bytes(uint32_t num_se);
void emu_rlc_layout_store(const struct emu_rlc_layout *L, void *dst, size_t cap);
struct emu_rlc_layout *emu_rlc_layout_load(const void *src, size_t cap);

/*
 * Sample `sample_seq` of XCC `xcc`, generated at t_ns with timestamp `ticks`:
 * sample_bytes into out; the true (unclamped) value of each counter entry,
 * in entry order, into truth (ncnt values) when non-NULL.
 */
void emu_rlc_sample(const struct emu_rlc_layout *L, uint32_t xcc, uint64_t sample_seq, uint64_t t_ns,
		    uint64_t ticks, uint8_t *out, uint64_t *truth);

/* sample_truth.c: $SPMTAP_EMU_SAMPLE_TRUTH (docs/emulator.md). */
bool emu_struth_enabled(void);
void emu_struth_record(struct emu_rlc_layout *L, uint32_t xcc, uint64_t sample_seq, uint64_t ticks,
		       uint32_t flags, const uint64_t *vals);
void emu_struth_flush(void);
void emu_struth_after_fork(void);
/* The layout as JSON fields for the release truth line: `"layout":{...}` into buf. */
int emu_rlc_layout_json(const struct emu_rlc_layout *L, char *buf, size_t len);

#endif
