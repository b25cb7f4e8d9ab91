/* SPDX-License-Identifier: MIT */
/*
 * The emulated workload's schedule, as the emulator writes it for this
 * process (<SPMTAP_EMU_SYSFS>/emu-schedule, docs/emulator.md): what
 * `record --phases emulator` needs, read without linking emulator code.
 */
#ifndef SPMTAP_CLI_EMU_SCHEDULE_H
#define SPMTAP_CLI_EMU_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#define SCHED_FILE_MAX_STEPS 8

struct sched_file {
	char workload[256];   /* the SPMTAP_EMU_WORKLOAD it was made from */
	uint64_t period_ns;   /* 0: no steps */
	size_t nsteps;
	struct {
		uint64_t at_ns;   /* offset in the period, increasing from 0 */
		char name[16];
	} step[SCHED_FILE_MAX_STEPS];
};

/* Read this process's schedule.  0, or -EINVAL/-ENOENT with the reason in err. */
int sched_file_read(struct sched_file *s, char *err, size_t errlen);

/*
 * Call fn for every stretch that overlaps [t0_ns, t1_ns) (CLOCK_MONOTONIC_RAW,
 * clipped to it), in time order.  Returns the number of stretches (0 when
 * the workload has no steps), or the first nonzero fn return.
 */
int sched_file_each(const struct sched_file *s, uint64_t t0_ns, uint64_t t1_ns,
		    int (*fn)(uint64_t start_ns, uint64_t end_ns, const char *name, void *user), void *user);

#endif
