/* SPDX-License-Identifier: MIT */
/* Every process below the supervisor: finding and signalling them (descend.c). */
#ifndef SPMTAP_EMU_DESCEND_H
#define SPMTAP_EMU_DESCEND_H

#include <sys/types.h>

/*
 * Send sig to every living descendant of root, found through the parent
 * links in /proc/PID/stat (any depth; processes in other process groups or
 * sessions too).  Each is opened as a pidfd and its start time checked
 * first, so that a pid reused since the scan is never hit.  Returns how
 * many were signalled, or -errno when /proc cannot be read.
 */
int emu_signal_descendants(pid_t root, int sig);

#endif
