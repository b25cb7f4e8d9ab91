/* SPDX-License-Identifier: MIT */
/*
 * The emulator's per-sample ground truth ($SPMTAP_EMU_SAMPLE_TRUTH,
 * docs/emulator.md): what the emulated RLC produced, sample by sample, for
 * suites that check recorded values against it (test_record_spm,
 * test_lying_analysis).
 */
#ifndef SPMTAP_TEST_SPM_TRUTH_H
#define SPMTAP_TEST_SPM_TRUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Truth flags (docs/emulator.md): the kernel dropped the sample whole, by its own rule. */
#define ST_STALLED 1u   /* gen B: the ring was full, the RLC stalled over it (SPM.md 4.2) */
#define ST_DISCARDED 2u /* gen A: the armed buffer was full, the worker discarded the ring (4.2) */
#define ST_LATE 4u      /* with one of the above: lost unmade by a device behind real time */
/* Counters follow kernels: dispatches ran at the sample's time; their count, the newest one's kseq & 0xFFFF. */
#define ST_KERNEL 8u
#define ST_KCOUNT(f) (((f) >> 8) & 0xFFu)
#define ST_KSEQ(f) ((f) >> 16)

struct st_slot {
	int se;
	char block[8];
	char name[40]; /* the counter's name ("" for unknown event ids) */
	unsigned instance, event, width;
	bool value; /* "16" or "lo": carries the counter's value; "hi" repeats it */
	bool clamp;
};

struct st_layout {
	uint32_t pid, id, gpu_id, xcc, nvals;
	struct st_slot *slots;
};

struct st_sample {
	uint32_t xcc, flags, layout; /* index into layouts */
	uint64_t seq, ticks;
	uint64_t *vals; /* nvals of its layout, in the pool */
};

struct truth {
	struct st_layout *lay;
	size_t nlay;
	struct st_sample *s;
	size_t n, cap;
	uint64_t *pool; /* values of all samples */
	size_t npool, poolcap;
};

/*
 * Load a truth file, samples in file order.  False (with a message on stderr
 * when the file is malformed, and *t empty) when it cannot be read.
 */
bool truth_load(const char *file, struct truth *t);

/* Sort the samples by XCC, then ticks. */
void truth_sort(struct truth *t);

void truth_free(struct truth *t);

#endif
