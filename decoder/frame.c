/* SPDX-License-Identifier: MIT */
/*
 * Framing of retired SPM buffers (decoder/frame.h).  Everything the kernel
 * wrote is untrusted: a header may be stale (never retired), poisoned by us,
 * or claim more bytes than its region holds, and none of that may make us
 * read outside the buffer.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "decoder/frame.h"
#include "uapi/kfd_spm.h"
#include "le.h"

#define HDR_BYTES ((uint32_t)sizeof(struct spmtap_kfd_spm_buffer_header))

uint32_t dec_frame_region_size(uint32_t size, uint32_t num_xcc)
{
	if (num_xcc == 0 || num_xcc > DEC_MAX_XCC)
		return 0;
	uint32_t region = (size / num_xcc) & ~31u;
	/* The kernel refuses regions of 32 bytes or less (SPM.md 3.3 step 2). */
	return region > HDR_BYTES ? region : 0;
}

void dec_frame_poison(bool headers, uint32_t num_xcc, void *buf, uint32_t size)
{
	uint32_t region = dec_frame_region_size(size, num_xcc);
	if (!headers || !buf || region == 0)
		return;
	uint32_t poison = htole32(DEC_FRAME_POISON);
	for (uint32_t k = 0; k < num_xcc; k++)
		for (uint32_t w = 0; w < HDR_BYTES / 4; w++)
			memcpy((unsigned char *)buf + (size_t)k * region + w * 4, &poison, 4);
}

/*
 * Header version: major 0, minor >= 2 is the layout of SPM 0.2..0.4 and we
 * take later minors as compatible (a minor bump must not move these fields);
 * any other major, or our poison, means the region cannot be trusted.
 */
static bool version_ok(uint32_t v)
{
	return SPMTAP_KFD_SPM_HEADER_VERSION_MAJOR(v) == 0 &&
	       SPMTAP_KFD_SPM_HEADER_VERSION_MINOR(v) >= 2;
}

int dec_frame_split(bool headers, uint32_t num_xcc, const void *buf, uint32_t size,
		    uint32_t args_bytes, uint32_t args_loss, struct dec_part *parts,
		    uint32_t max_parts)
{
	if (!parts || max_parts == 0)
		return -EINVAL;
	if (!headers) {
		/* Gen A: one stream from offset 0; the ioctl is the only length source.
		 * A count beyond the buffer is impossible from a sane kernel, so it is
		 * clamped and marked rather than trusted. */
		parts[0] = (struct dec_part){
			.xcc = 0,
			.offset = 0,
			.bytes = args_bytes > size ? size : args_bytes,
			.loss = args_loss != 0,
			.bad = args_bytes > size,
		};
		if (!buf)
			parts[0].bytes = 0;
		return 1;
	}

	uint32_t region = dec_frame_region_size(size, num_xcc);
	if (!buf || region == 0 || max_parts < num_xcc)
		return -EINVAL;
	/* Gen B: headers, not args, are authoritative (SPM.md 3.5): early
	 * multi-XCC kernels reported bytes and loss only there. */
	const unsigned char *base = buf;
	for (uint32_t k = 0; k < num_xcc; k++) {
		const unsigned char *h = base + (size_t)k * region;
		uint32_t version = le_get32(h);
		uint32_t bytes = le_get32(h + 4);
		uint32_t loss = le_get32(h + 8);
		struct dec_part *p = &parts[k];
		*p = (struct dec_part){ .xcc = k, .offset = k * region + HDR_BYTES };
		if (version == DEC_FRAME_POISON || !version_ok(version)) {
			p->bad = true;
			continue;
		}
		if (bytes > region - HDR_BYTES) {
			p->bad = true;
			p->loss = loss != 0;
			continue;
		}
		p->bytes = bytes;
		p->loss = loss != 0;
	}
	return (int)num_xcc;
}
