/* SPDX-License-Identifier: MIT */
/* What the spmtap CLI's files share: the command table's shape and helpers. */
#ifndef SPMTAP_CLI_H
#define SPMTAP_CLI_H

#include <stddef.h>
#include <stdint.h>

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
extern const char cmd_list_usage[];
extern const char cmd_record_usage[];

/*
 * --emulate: re-run this very command under the emulator and return its exit
 * status, or -1 when we already are under it (carry on in this process).
 */
int emulate_run(const char *profile, char **argv);

/* "8M", "512k", "4096": bytes; -EINVAL on anything else. */
int cli_parse_size(const char *s, uint64_t *out);

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

#endif
