/* SPDX-License-Identifier: MIT */
/*
 * The sensor sampler: one thread per GPU reading one source's batch on
 * absolute deadlines (clock_nanosleep TIMER_ABSTIME on CLOCK_MONOTONIC, so
 * the period never drifts; a read that overruns skips whole periods, which
 * are counted), delivering series_chunks (source "smi", xcc -1) to a
 * callback.  Memory is bounded: one chunk buffer, handed to the callback
 * when full or every flush_ns, on the sampler thread (the callback must copy
 * or write it out before returning).
 *
 * Columns: the metrics the probe exposed (docs/power.md), then power_dedt
 * (W, dE/dt over the sensor timestamp) when energy is among them.  Each row
 * also has host_ns (BOOTTIME) and ticks (the sensor's own timestamp, in
 * the stream's tick_domain).
 */
#ifndef SPMTAP_COLLECTOR_SMI_SAMPLER_H
#define SPMTAP_COLLECTOR_SMI_SAMPLER_H

#include <stdint.h>

#include "collector/lib/power_dedt.h"
#include "collector/lib/series.h"
#include "collector/lib/smi_source.h"

struct smi_sampler_opts {
	const struct smi_source_ops *ops;  /* borrowed: the probe's selected source */
	struct smi_source *src;
	uint32_t metrics;                  /* SMI_M_BIT() set for the columns */
	enum smi_ts_domain ts_domain;      /* of the source (the probe report says) */
	uint64_t interval_ns;              /* >= 1 ms */
	/*
	 * Deadlines fall at k * interval_ns + phase_ns of CLOCK_MONOTONIC
	 * (phase_ns < interval_ns): the node's samplers, in one process or one
	 * per rank, spread over the period by GPU instead of waking together.
	 */
	uint64_t phase_ns;
	uint32_t chunk_samples;            /* 0: 256 */
	uint64_t flush_ns;                 /* 0: 100 ms */
	uint64_t max_samples;              /* 0: until smi_sampler_stop() */
	const struct smi_offsets *offsets; /* NULL: none */
	const struct dedt_opts *dedt;      /* NULL: defaults */
	/* stream identity, copied into the series_stream */
	uint32_t stream_id, gpu, gpu_id;
	const char *device_name;
	void (*on_chunk)(const struct series_chunk *c, void *arg);
	void *arg;
};

struct smi_sampler_stats {
	uint64_t samples;          /* rows delivered */
	uint64_t read_errors;
	uint64_t missed_deadlines; /* periods skipped: passed before the sample was done */
	uint64_t missed_late;      /* of those, passed before the sampler even woke (scheduling) */
	int64_t max_late_ns;       /* wake-up after the deadline, worst */
	int64_t max_read_ns;       /* one sample, wake-up to done (read and hand-off), worst */
	double mean_late_ns;
	int64_t first_deadline_ns, last_deadline_ns; /* CLOCK_MONOTONIC */
	uint64_t distinct_sensor_ts;
	struct dedt dedt;          /* counters of the derived power (dedt.n) */
	uint64_t cpu_ns;           /* CPU time of the sampler thread, after it stopped (cost.h) */
};

struct smi_sampler;

/* 0 or -errno (-EINVAL: interval below 1 ms, no metrics). */
int smi_sampler_create(struct smi_sampler **out, const struct smi_sampler_opts *o);
/* The stream every chunk refers to; valid until smi_sampler_free(). */
const struct series_stream *smi_sampler_stream(const struct smi_sampler *s);
int smi_sampler_start(struct smi_sampler *s);
/* Stops the thread (if running), delivers the last partial chunk. */
int smi_sampler_stop(struct smi_sampler *s);
/* Blocks until max_samples are taken (max_samples must be set). */
int smi_sampler_wait(struct smi_sampler *s);
void smi_sampler_get_stats(const struct smi_sampler *s, struct smi_sampler_stats *st);
void smi_sampler_free(struct smi_sampler *s);

#endif
