/* SPDX-License-Identifier: MIT */
/*
 * Starting programs from a test and waiting for them: the one copy of what
 * suites used to call spawn(), wait_status(), run() and sh1().
 */
#ifndef SPMTAP_TEST_PROC_H
#define SPMTAP_TEST_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* How a child starts; every field may be left 0. */
struct tp_opts {
	const char *const *unset; /* names removed from the child's environment */
	const char *const *env;   /* "K=V" set in the child, after `unset` */
	const char *out;          /* stdout into this file (truncated); NULL: inherited */
	const char *err;          /* stderr into this file (truncated); NULL: inherited; the same
				   * string as `out`: into that one file (2>&1) */
	long fsize;               /* RLIMIT_FSIZE in the child when > 0 (SIGXFSZ ignored) */
};

/* fork + execv(argv[0], argv) with `o` (may be NULL); the child's pid. */
pid_t tp_spawn(const char *const *argv, const struct tp_opts *o);

/* Wait for pid: its exit status, or 128 + the signal that ended it. */
int tp_wait(pid_t pid);

/* tp_spawn then tp_wait. */
int tp_run(const char *const *argv, const struct tp_opts *o);

/*
 * tp_spawn then tp_wait with the child's stdout read back through a pipe
 * (`o->out` is not used): *out a malloc'd NUL-terminated copy of all of it
 * (NULL when out of memory).  Its exit status, as tp_wait; -1 when it could
 * not start.
 */
int tp_capture(const char *const *argv, const struct tp_opts *o, char **out);

/*
 * tp_capture into out (at most len - 1 bytes, NUL-terminated); when the
 * status is not 0 or the output says FAIL (the helpers' word for a failed
 * check), what it said goes to stderr under argv[0].
 */
int tp_capture_buf(const char *const *argv, const struct tp_opts *o, char *out, size_t len);

/*
 * $B/spmtap with `pre` (may be NULL) then `args`, started outside this
 * suite's emulator (SPMTAP_EMU_ACTIVE and LD_PRELOAD unset, so its --emulate
 * sets up a fresh one) with SPMTAP_EMU_STATE_DIR=state_dir; then `o` applies
 * (its env may override the state dir).
 */
pid_t tp_spawn_spmtap(const char *const *pre, const char *const *args, const char *state_dir,
		      const struct tp_opts *o);

/*
 * sh -c cmd: its stdout into out (at most len - 1 bytes, NUL-terminated;
 * out may be NULL), the rest read and dropped.  The exit status, 128 when it
 * did not exit, -1 when it could not start.
 */
int tp_sh(const char *cmd, char *out, size_t len);

/* The first line of sh -c cmd's stdout, without its newline, in a buffer the next call reuses. */
const char *tp_sh1(const char *cmd);

#endif
