/* SPDX-License-Identifier: MIT */
/*
 * The GPU clock model: a 100 MHz counter derived from CLOCK_MONOTONIC_RAW
 * (SPM.md 10.2), gpu = offset + raw_ns * (1 + ppm * 1e-6) / 10.  Every GPU
 * timestamp the emulator produces (GET_CLOCK_COUNTERS, SPM lines) goes
 * through emu_clock_ticks, so processes sharing the knobs agree.
 */
#include "emu/shim/shim.h"

#include <time.h>

static uint64_t emu_now(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t emu_clock_raw_ns(void)
{
	return emu_now(CLOCK_MONOTONIC_RAW);
}

uint64_t emu_clock_boottime_ns(void)
{
	return emu_now(CLOCK_BOOTTIME);
}

uint64_t emu_clock_ticks(uint64_t raw_ns)
{
	/* Integer base term keeps ppm = 0 exact; the drift term is small enough for long double. */
	if (emu_p.clock_ppm == 0)
		return emu_p.clock_offset + raw_ns / 10; /* the default: x87 math per SPM sample was 8 % of the device */
	long double drift = (long double)raw_ns * emu_p.clock_ppm / 1e7L;
	int64_t d = (int64_t)(drift + (drift >= 0 ? 0.5L : -0.5L));
	return emu_p.clock_offset + raw_ns / 10 + (uint64_t)d;
}
