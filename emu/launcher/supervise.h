/* SPDX-License-Identifier: MIT */
/* The emulated session's supervisor (supervise.c). */
#ifndef SPMTAP_EMU_SUPERVISE_H
#define SPMTAP_EMU_SUPERVISE_H

#include <signal.h>
#include <sys/types.h>

/* Sent to the supervisor when the front process dies (PR_SET_PDEATHSIG): no one else sends it. */
#define EMU_SIG_PARENT_DIED (SIGRTMIN + 1)

struct emu_sup_opts {
	const char *who;     /* message prefix: "spmtap-emu" */
	const char *profile; /* profile spec */
	const char *gen;     /* "A", "B" or NULL: SPMTAP_EMU_GEN for the command */
	char **cmd;          /* the command, execvp'd */
	pid_t front;         /* the process the user started: the supervisor's parent */
	unsigned grace_ms;   /* SIGTERM, then SIGKILL this much later */
};

/*
 * Runs in the front's child, with the signals of emu_sup_signals() blocked
 * (orig: the mask the command gets).  Sets up the emulated node, runs the
 * command, and ends every process below it when the command ends or the
 * front dies; removes the node.  Returns the exit status for the front:
 * the command's, 128 + signal if it was killed, 64 if the node could not
 * be set up.
 */
int emu_supervise(const struct emu_sup_opts *o, const sigset_t *orig);

/* The signals that front and supervisor take synchronously (sigwaitinfo). */
void emu_sup_signals(sigset_t *set);

#endif
