/* SPDX-License-Identifier: MIT */
/*
 * What the two recording paths of `spmtap record` share: the options, the
 * stop signals, the raw container's metadata and its per-region records.
 * record-raw.c streams bytes without programming counters (checked with the
 * emulator's test pattern); record-spm.c programs counters and decodes.
 */
#ifndef SPMTAP_CLI_RECORD_H
#define SPMTAP_CLI_RECORD_H

#include <jansson.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "collector/cli/cli.h"
#include "collector/lib/feeder.h"
#include "collector/lib/rawfile.h"

#define REC_MAX_COUNTERS 256

/*
 * The default sample interval of `record --spm`, in SCLK cycles: lossless
 * on the emulated MI300X on a 2-core machine with twice the headroom
 * (docs/cli/spmtap-record.md has the measurements and why it is not
 * aqlprofile's 8192).
 */
#define REC_INTERVAL_DEFAULT 32768u

struct rec_opts {
	const char *out;
	double duration;
	const char *device;
	const char *backend;
	const char *submitter;               /* --submitter: rocr, hsakmt (default: the first that works) */
	enum spm_gen gen;
	uint32_t nbuffers;
	uint64_t buffer_size;
	bool raw;
	bool size_given;
	/* --spm */
	char *spm_names;                     /* strdup'd --spm arguments, joined */
	const char *counters[REC_MAX_COUNTERS];
	size_t ncounters;
	uint32_t interval;                   /* 0: REC_INTERVAL_DEFAULT */
	bool per_se, per_instance;
	/* the session path (record-session.c) */
	const char *dir;                     /* -d DIR */
	const char *formats;                 /* -f csv,perfetto,sqlite */
	const char *smi;                     /* --smi power,energy,... */
	uint64_t smi_interval_ns;
	const char *smi_offset;
	double spm_clock_hz;
	char **app;                          /* -- app args */
	const char *phases[4];               /* --phases FILE|emulator (repeatable) */
	size_t nphases;
	int argc;
	char **argv;
};

/*
 * The stop signal, 0 until one arrives.  Atomic, not volatile sig_atomic_t:
 * the handler runs on whichever thread the kernel picks, often one that
 * libhsa-runtime started without our signal mask, while the main thread
 * polls it; volatile orders nothing between threads (TSan reports it).
 */
extern _Atomic int rec_stop_signal;
/* Handlers for SIGINT/SIGTERM; threads started between block/unblock never take them. */
void rec_signals_install(void);
void rec_signals_block(sigset_t *old);
void rec_signals_restore(const sigset_t *old);

uint64_t rec_now_ns(clockid_t c);
/* Append j (consumed) as one JSON record. */
int rec_append_json(struct rawfile_writer *w, uint16_t type, json_t *j, char *err, size_t errlen);
json_t *rec_meta_json(const struct spm_device *d, const char *backend, enum spm_gen gen,
		      const struct rec_opts *o, uint32_t size, uint32_t nbuf);

/* Per-XCC counts of the regions written to a raw container. */
struct rec_totals {
	uint64_t bytes[DEC_MAX_XCC];
	uint64_t regions[DEC_MAX_XCC];
	uint64_t loss_regions[DEC_MAX_XCC];
	uint64_t bad_regions[DEC_MAX_XCC];
	uint64_t buffers;
	uint64_t last_seq;
	int write_error;
	char write_msg[600];
};
/* One region into the container (a record even when empty, if flagged); counts it. */
void rec_raw_region(struct rawfile_writer *w, struct rec_totals *t, const struct feeder_buf *b,
		    const struct dec_part *p, const void *data);
/* The container's fixed header for this device and stream. */
void rec_raw_header(struct rawfile_header *h, const struct spm_device *dev, const char *backend,
		    enum spm_gen gen, uint32_t size, uint32_t nbuffers);

int record_raw(const struct rec_opts *o);
int record_spm(const struct rec_opts *o);
int record_session(const struct rec_opts *o);
/* Whether the options ask for the session path (-d DIR, -f, --smi, a device list, an app). */
bool rec_wants_session(const struct rec_opts *o);

#endif
