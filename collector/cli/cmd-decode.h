/* SPDX-License-Identifier: MIT */
#ifndef SPMTAP_CLI_CMD_DECODE_H
#define SPMTAP_CLI_CMD_DECODE_H

/* spmtap decode --layout L.json [--per-se] [-o out.csv] raw.bin (docs/cli/spmtap-decode.md) */
int cmd_decode(int argc, char **argv);

#endif
