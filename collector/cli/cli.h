/* SPDX-License-Identifier: MIT */
/* What the spmtap CLI's files share: the command table's shape and helpers. */
#ifndef SPMTAP_CLI_H
#define SPMTAP_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "spm/plan.h"
#include "spm/spm.h"
#include "spmtap.h"

/* Exit statuses (docs/cli/spmtap-record.md). */
enum {
	EXIT_OK = 0,     /* done; a recording with data loss still ends here, loudly */
	EXIT_FAIL = 1,   /* a device, stream or output error */
	EXIT_BUSY = 2,   /* SPM is held by another process (EBUSY) */
	EXIT_USAGE = 64, /* bad command line (sysexits EX_USAGE) */
};

struct cli_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
	const char *usage; /* full help text, printed by `spmtap help <cmd>` */
};

int cmd_list(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_plan(int argc, char **argv);
extern const char cmd_list_usage[];
extern const char cmd_record_usage[];
extern const char cmd_plan_usage[];
/* Offline analysis of recordings and sensor traces (collector/analysis/). */
int cmd_characterize(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_export(int argc, char **argv);
struct recording;
struct sa_trace;
struct sa_report;
/* A recording's sensor trace and its report; both NULL, and 0, when it has no sensor data. */
int cli_rec_analysis(const struct recording *r, struct sa_trace **tr, struct sa_report **rep, char *err,
		     size_t errlen);
extern const char cmd_characterize_usage[];
extern const char cmd_report_usage[];
extern const char cmd_plot_usage[];
extern const char cmd_export_usage[];
/*
 * A merged job recording (report-job.c): cli_job_report prints the job
 * summary when argv names a merged .db without --node (else -1: carry on);
 * cli_job_node rewrites "--node N" and the .db into "DB#node=N" for
 * rec_load (new *argv and *keep to free; -1 when there is no --node; an
 * exit status on error).
 */
int cli_job_report(int argc, char **argv);
int cli_job_node(const char *cmd, int *argc, char ***argv, char **keep);
/* spmtap merge (cmd-merge.c, collector/analysis/merge.h). */
int cmd_merge(int argc, char **argv);
extern const char cmd_merge_usage[];

/*
 * --emulate: re-run this very command under the emulator and return its exit
 * status, or -1 when we already are under it (carry on in this process).
 */
int emulate_run(const char *profile, char **argv);
/*
 * Exec the emulator's launcher (spmtap-emu) to run cmd on the emulated node
 * `profile` (gen "A", "B" or NULL); returns an exit status only when that
 * fails, the message printed with `what` ("--emulate", "emulate").
 */
int emulate_exec(const char *what, const char *profile, const char *gen, char **cmd);
/* spmtap job stop|env DIR (cmd-job.c): the job script's side of record --job. */
int cmd_job(int argc, char **argv);
extern const char cmd_job_usage[];
/* spmtap emulate PROFILE [--gen A|B] -- CMD [ARGS] (cmd-emulate.c). */
int cmd_emulate(int argc, char **argv);
extern const char cmd_emulate_usage[];

/* "8M", "512k", "4096": bytes; -EINVAL on anything else. */
int cli_parse_size(const char *s, uint64_t *out);
/*
 * A time with an optional unit: ns, us (or µs), ms, s, m/min, h; a bare
 * number is in units of bare_ns (1e9: seconds).  0 with *ns set, or -1 for
 * anything else (negative, no number, an unknown unit).
 */
int cli_parse_time(const char *s, double bare_ns, double *ns);
/*
 * --interval as typed: SCLK cycles within the hardware's range (a time with a
 * unit is refused with how to see the period).  EXIT_OK, or EXIT_USAGE after
 * printing "spmtap CMD: --interval ...".
 */
int cli_parse_interval(const char *cmd, const char *s, uint32_t *out);

/* rocprofv3's SPM flags (rocprof.c).  A counter name, or names joined by commas: TCC_HIT, TCC_HIT[3]. */
bool cli_counter_word(const char *s);
/*
 * --spm ARG and, as rocprofv3's `--spm A B C`, the words after it at
 * argv[*optind_] that are counter names, appended to the comma-joined *list
 * (realloc'd); *optind_ moves past those words.  0, or -ENOMEM.
 */
int cli_spm_names(int argc, char **argv, int *optind_, const char *arg, char **list);
/* --spm-sample-interval-unit: sclk_cycles, or EXIT_USAGE after saying why. */
int cli_spm_interval_unit(const char *cmd, const char *unit);
/* --spm-beta-enabled [BOOL]: a boolean word after it is consumed. */
void cli_beta_flag(int argc, char **argv, int *optind_);
/* --pmc: what spmtap does instead; EXIT_USAGE. */
int cli_pmc_refused(const char *cmd);

/*
 * Discovery plus the GPU and backend a command works on.  devs is malloc'd;
 * `backend` NULL picks the first usable backend.  Returns an exit status;
 * the message is already printed.
 */
struct cli_target {
	struct spm_device *devs;
	size_t ndev;
	const struct spm_device *dev;
	const struct spm_backend_ops *ops;
};
int cli_target_devices(struct cli_target *t, const char *cmd);
int cli_target_backend(struct cli_target *t, const char *cmd, const char *backend);
void cli_target_free(struct cli_target *t);
/*
 * --device SPEC: `all` (every GPU discovered, in order) or a comma-separated
 * list of what spm_device_lookup takes (an index, gpu_id:0x..., a PCI
 * address), at most max.  0 with gpus[0..*n) set; a negative errno with the
 * message printed as "spmtap CMD: ...".
 */
int cli_parse_devices(const struct cli_target *t, const char *cmd, const char *spec, uint32_t *gpus, size_t max,
		      size_t *n);
#define CLI_MAX_GPUS 16u /* a session's (SESSION_MAX_GPUS) */

/*
 * A default geometry for a gfx target when there is no GPU to ask (a
 * representative part, named in *part).  Returns an exit status, message
 * printed.
 */
int cli_gfx_geometry(const char *cmd, const char *gfx, struct spm_geometry *geo,
		     enum spm_gfx *family, const char **part);
/* Assumed peak SCLK of a family in GHz, for data-rate estimates only. */
double cli_sclk_ghz(enum spm_gfx gfx);
/* spm_plan_create with the planner's sentence printed; EXIT_USAGE for a refused request. */
int cli_make_plan(const char *cmd, const char *gfx, const struct spm_geometry *geo,
		  const char *const *names, size_t n, uint32_t interval, struct spm_plan **out);

#endif
