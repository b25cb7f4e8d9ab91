/* SPDX-License-Identifier: MIT */
#ifndef SPMTAP_CLI_CMD_LIST_SMI_H
#define SPMTAP_CLI_CMD_LIST_SMI_H

#include <stddef.h>
#include <stdio.h>

#include "collector/lib/smi_source.h"
#include "spm/spm.h"

/*
 * `spmtap list --smi`: per GPU, every power/energy source in probe order
 * with available/unavailable and the reason, the metrics each exposes
 * (name, unit), and which source spmtap will sample.  env NULL: defaults.
 * Returns 0, or -errno if writing to out failed.
 */
int cli_list_smi(FILE *out, const struct spm_device *devs, size_t ndev, const struct smi_env *env);

#endif
