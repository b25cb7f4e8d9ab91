/* SPDX-License-Identifier: MIT */
/*
 * Starting counters in AMD's order (shared/ref/PROGRAMMING.md 2.4) without
 * recording what the RLC wrote before it was programmed.
 *
 * KFD's first SET_DEST_BUF starts SPM and resets the RLC, so the start
 * program must come after it; but between the two the RLC may already
 * write (the emulator streams its test pattern there; on hardware it is
 * unverified, docs/first-run-on-hardware.md).  Those bytes are no samples
 * of this layout, and a decoder fed with them would decode garbage.  So:
 *
 *  1. arm a throwaway buffer: KFD starts SPM, the RLC is reset;
 *  2. start the feeder: its first rotation flushes the ring into the
 *     throwaway buffer, retires it unread and arms the feeder's buffer 0;
 *  3. submit the start program (sops NULL: another process programs the
 *     counters; the GPU's registers are the GPU's, not the process's).
 *
 * Buffer 0 (seq 0) may still hold pre-program bytes, so the consumer drops
 * it (dthr_opts.skip_first); the program is in place long before its
 * retirement, one feeder period (10 ms) later.  Every later buffer holds
 * only samples of this layout, starting anywhere in a sample: the decoder
 * searches the alignment at the start of every stream (decode_thread.h).
 * The cost: the samples of the first feeder period are not recorded.
 */
#ifndef SPMTAP_COLLECTOR_PRIME_H
#define SPMTAP_COLLECTOR_PRIME_H

#include <stddef.h>
#include <stdint.h>

#include "collector/lib/feeder.h"
#include "spm/submit.h"

struct prime {
	void *junk;     /* the throwaway buffer; the kernel may hold it until feeder_finish */
	struct feeder *f;
};

/*
 * Steps 1-3.  On success the feeder owns s.  If the program fails, the
 * feeder has started (p->f set, owning s) and the caller stops it as usual;
 * if an earlier step fails, p->f is NULL and s is still the caller's.
 * 0 or -errno with a sentence.
 */
int prime_start(struct prime *p, struct spm_stream *s, const struct spm_device *dev,
		const struct spm_submitter_ops *sops, struct spm_submitter *sub,
		const uint32_t *start, size_t ndw, const struct feeder_opts *fo, char *err,
		size_t errlen);
/* Free the throwaway buffer; only after feeder_finish. */
void prime_free(struct prime *p);

#endif
