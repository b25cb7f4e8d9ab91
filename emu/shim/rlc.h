/* SPDX-License-Identifier: MIT */
/*
 * The emulated RLC: at START_COUNTING it derives the sample layout from the
 * registers alone (segment sizes, muxsel RAMs, selects, interval), and
 * afterwards synthesises each sample from that layout and the workload
 * model (SPM.md 5, PROGRAMMING.md 3), through emu/common/sample_gen.h's
 * template ring.
 */
#ifndef SPMTAP_EMU_RLC_H
#define SPMTAP_EMU_RLC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/common/counters.h"
#include "emu/common/sample_gen.h" /* the layout types and the sample generators */
#include "emu/common/workload.h"
#include "emu/shim/regs.h"

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

/* sample_truth.c: $SPMTAP_EMU_SAMPLE_TRUTH (docs/emulator.md). */
bool emu_struth_enabled(void);
/* vals NULL: zeros, for a sample never made (EMU_UNIT_LATE). */
void emu_struth_record(struct emu_rlc_layout *L, uint32_t xcc, uint64_t sample_seq, uint64_t ticks,
		       uint32_t flags, const uint64_t *vals);
void emu_struth_flush(void);
void emu_struth_after_fork(void);
/* The layout as JSON fields for the release truth line: `"layout":{...}` into buf. */
int emu_rlc_layout_json(const struct emu_rlc_layout *L, char *buf, size_t len);

#endif
