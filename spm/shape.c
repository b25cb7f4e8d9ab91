/* SPDX-License-Identifier: MIT */
/* What each kernel generation's stream looks like (spm.h, struct spm_stream_shape). */
#include <errno.h>

#include "spm/spm.h"

#define SPM_LINE_BYTES 32u   /* the RLC writes and the kernel discards whole lines (SPM.md 3.3) */
#define SPM_HEADER_BYTES 32u /* gen B per-XCC region header (SPM.md 3.5) */

int spm_stream_shape_of(enum spm_gen gen, uint32_t num_xcc, struct spm_stream_shape *out)
{
	switch (gen) {
	case SPM_GEN_A:
		/* One ring whatever the XCC count (gen A is single-XCC hardware). */
		*out = (struct spm_stream_shape){ .gen = gen, .nstreams = 1,
						  .loss = SPM_LOSS_CUTS_LINES,
						  .loss_align = SPM_LINE_BYTES };
		return 0;
	case SPM_GEN_B:
		*out = (struct spm_stream_shape){ .gen = gen, .nstreams = num_xcc ? num_xcc : 1,
						  .headers = true, .header_bytes = SPM_HEADER_BYTES,
						  .loss_per_region = true,
						  .loss = SPM_LOSS_WHOLE_SAMPLES };
		return 0;
	default:
		*out = (struct spm_stream_shape){ .gen = gen };
		return -EINVAL;
	}
}
