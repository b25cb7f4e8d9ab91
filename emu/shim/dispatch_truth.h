/* SPDX-License-Identifier: MIT */
/*
 * The per-dispatch ground truth (docs/emulator.md, "Dispatch truth"): one
 * JSON object per line, appended to $SPMTAP_EMU_DISPATCH_TRUTH with one
 * O_APPEND write per line, so the CP threads of concurrent processes never
 * interleave.  Every packet the emulated GPU ran that did work (a kernel
 * dispatch, a ROCr blit, an SDMA packet) has a line; the caller formats
 * the fields of its kind, this file adds the common ones first:
 *   {"pid":N,"gpu_id":N,"engine":"cp"|"sdma",<the caller's fields>}
 */
#ifndef SPMTAP_EMU_DISPATCH_TRUTH_H
#define SPMTAP_EMU_DISPATCH_TRUTH_H

#include <stdbool.h>
#include <stdint.h>

/* Whether a truth file was asked for (check before formatting a line). */
bool emu_dtruth_enabled(void);
/*
 * Append one line: the common fields, then `fields` (a JSON object's
 * members without braces, e.g. "\"queue\":1,\"index\":7").
 */
void emu_dtruth_line(uint32_t gpu_id, const char *engine, const char *fields);

#endif
