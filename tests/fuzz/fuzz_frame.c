/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: retired-buffer framing and the pattern checker take whatever
 * a kernel (or a corrupt file) hands them.  The first bytes choose the
 * generation, XCC count and the ioctl's claimed byte count.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "decoder/frame.h"
#include "decoder/pattern.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 6)
		return 0;
	bool headers = data[0] & 1;
	uint32_t num_xcc = 1 + data[1] % DEC_MAX_XCC;
	uint32_t args_bytes;
	memcpy(&args_bytes, data + 2, 4);
	data += 6;
	size -= 6;
	struct dec_part parts[DEC_MAX_XCC];
	int n = dec_frame_split(headers, num_xcc, data, (uint32_t)size, args_bytes, data[-6] >> 1,
				parts, DEC_MAX_XCC);
	struct dec_pat pat;
	if (dec_pat_init(&pat, num_xcc, -1))
		return 0;
	for (int i = 0; i < n; i++) {
		/* a part must lie inside the buffer: the pattern checker reads all of it */
		if (parts[i].offset > size || parts[i].bytes > size - parts[i].offset)
			__builtin_trap();
		dec_pat_feed(&pat, parts[i].xcc % num_xcc, data + parts[i].offset, parts[i].bytes);
	}
	struct dec_pat_stats tot;
	dec_pat_total(&pat, &tot);
	return 0;
}
