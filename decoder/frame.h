/* SPDX-License-Identifier: MIT */
/*
 * Framing of a retired SPM buffer, for both kernel generations
 * (shared/ref/SPM.md 3.3, 3.5): gen A is raw bytes from offset 0 with the
 * length from the ioctl; gen B splits the buffer into num_xcc regions of
 * rounddown(size / num_xcc, 32) bytes, each with a 32-byte header written
 * when the region was retired.
 */
#ifndef SPMTAP_DECODER_FRAME_H
#define SPMTAP_DECODER_FRAME_H

#include <stdbool.h>
#include <stdint.h>

#define DEC_MAX_XCC 16
/* Written into gen B header slots before arming: a header still carrying it
 * was never written by the kernel (a failed retire, SPM.md 3.5). */
#define DEC_FRAME_POISON 0xDEADF00Du

struct dec_part {
	uint32_t xcc;    /* XCC index (region k) */
	uint32_t offset; /* of the data in the buffer */
	uint32_t bytes;  /* data bytes */
	bool loss;       /* the kernel flagged loss for this region */
	bool bad;        /* gen B: header poisoned, wrong version or size beyond the region */
};

/* Per-region size of a gen B buffer (0 if too small to hold a header + one line). */
uint32_t dec_frame_region_size(uint32_t size, uint32_t num_xcc);
/* Fill gen B header slots with DEC_FRAME_POISON. No-op for gen A. */
void dec_frame_poison(bool headers, uint32_t num_xcc, void *buf, uint32_t size);
/*
 * Split a retired buffer into parts; returns the number of parts (num_xcc
 * for gen B, 1 for gen A).  Never reads beyond `size`.
 */
int dec_frame_split(bool headers, uint32_t num_xcc, const void *buf, uint32_t size,
		    uint32_t args_bytes, uint32_t args_loss, struct dec_part *parts,
		    uint32_t max_parts);

#endif
