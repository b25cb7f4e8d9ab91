/* SPDX-License-Identifier: MIT */
/*
 * The supervisor: the one process that outlives whatever the user started,
 * so that the emulated session ends with it, by any signal, SIGKILL too.
 *
 *   front (the process the user started; `spmtap --emulate`, `spmtap emulate`)
 *     └ supervisor: PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER, owns the tree
 *         └ command (re-executed spmtap, rocminfo, a shell ...) and all below it
 *
 * When the front dies, the kernel signals the supervisor (the parent-death
 * signal, checked against getppid() after it is set, in case the front died
 * first); when the command ends, the session ends too.  Either way every
 * descendant gets SIGTERM (and SIGCONT, for stopped jobs), then SIGKILL
 * after grace_ms, until none is left; then the tree is removed.  Being a
 * subreaper, the supervisor inherits every orphan below it, so "no child
 * left" (ECHILD) means no process of the session is left.
 *
 * The session stays in the user's process group, so the terminal's job
 * control works as for any command (a shell under `spmtap emulate` can read
 * the terminal); the descendant walk, not the group, finds what to end, and
 * it also finds a shell's background jobs, which sit in groups of their own.
 */
#include "emu/launcher/supervise.h"

#include "emu/common/emu.h"
#include "emu/launcher/descend.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long to keep killing after SIGKILL before giving up (a process stuck in the kernel). */
#define EMU_SUP_GIVE_UP_MS 10000u
/* Poll interval while ending: new orphans are found by the next walk. */
#define EMU_SUP_POLL_MS 20

void emu_sup_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGCHLD);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	/* mpirun forwards SIGUSR1/2 and not SIGINT/SIGTERM: spmtap record --job stops on them */
	sigaddset(set, SIGUSR1);
	sigaddset(set, SIGUSR2);
	sigaddset(set, EMU_SIG_PARENT_DIED);
}

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

struct sup {
	const struct emu_sup_opts *o;
	pid_t child;
	int status;       /* the command's wait status, once have_status */
	bool have_status;
	bool ending;
	uint64_t kill_at; /* SIGKILL from then on */
};

static void begin_end(struct sup *s)
{
	if (s->ending)
		return;
	s->ending = true;
	emu_signal_descendants(getpid(), SIGTERM);
	emu_signal_descendants(getpid(), SIGCONT);
	s->kill_at = now_ms() + s->o->grace_ms;
}

/* Reaps what exited; true when no child (so no descendant) is left. */
static bool reap(struct sup *s)
{
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p == 0)
			return false;
		if (p < 0)
			return errno == ECHILD;
		if (p == s->child) {
			s->status = st;
			s->have_status = true;
		}
	}
}

static pid_t start_command(const struct emu_sup_opts *o, const sigset_t *orig)
{
	pid_t sup = getpid();
	fflush(NULL);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	/* A backstop: should the supervisor itself be killed, the command goes with it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != sup)
		_exit(128 + SIGKILL);
	sigprocmask(SIG_SETMASK, orig, NULL);
	execvp(o->cmd[0], o->cmd);
	int e = errno;
	fprintf(stderr, "%s: %s: %s\n", o->who, o->cmd[0], strerror(e));
	_exit(e == ENOENT ? 127 : 126);
}

int emu_supervise(const struct emu_sup_opts *o, const sigset_t *orig)
{
	/* Set, then check: a front that died before the prctl sends nothing. */
	prctl(PR_SET_PDEATHSIG, EMU_SIG_PARENT_DIED);
	if (getppid() != o->front)
		return 128 + SIGKILL; /* nothing started yet: nothing to end */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1))
		fprintf(stderr, "%s: cannot become a child subreaper (%s): a daemonising command may outlive the session\n",
			o->who, strerror(errno));

	char tmp[PATH_MAX], err[512] = "";
	int swept = emu_tree_sweep(NULL, err, sizeof(err));
	if (swept > 0 && getenv("SPMTAP_EMU_DEBUG"))
		fprintf(stderr, "%s: removed %d emulated tree(s) of sessions that died\n", o->who, swept);
	if (emu_env_setup(o->profile, tmp, sizeof(tmp), err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s: %s\n", o->who, o->profile, err);
		return 64;
	}
	if (o->gen)
		setenv("SPMTAP_EMU_GEN", o->gen, 1);

	struct sup s = { .o = o };
	s.child = start_command(o, orig);
	if (s.child < 0) {
		fprintf(stderr, "%s: fork: %s\n", o->who, strerror(errno));
		emu_tree_remove(tmp);
		return 1;
	}
	sigset_t set;
	emu_sup_signals(&set);
	for (;;) {
		siginfo_t si;
		int sig;
		if (s.ending) {
			struct timespec to = { 0, EMU_SUP_POLL_MS * 1000000L };
			sig = sigtimedwait(&set, &si, &to);
		} else {
			sig = sigwaitinfo(&set, &si);
		}
		if (sig == EMU_SIG_PARENT_DIED) {
			begin_end(&s);
		} else if (sig == SIGUSR1 || sig == SIGUSR2) {
			if (!s.have_status)
				kill(s.child, sig);
		} else if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
			/* From the terminal, the whole foreground group has it already; sent to us, pass it on. */
			if (si.si_code != SI_KERNEL && !s.have_status)
				kill(s.child, sig);
		}
		bool none_left = reap(&s);
		if (none_left && (s.have_status || s.ending))
			break;
		if (s.have_status)
			begin_end(&s); /* the command ended: so does the rest of its session */
		if (s.ending && now_ms() >= s.kill_at) {
			emu_signal_descendants(getpid(), SIGKILL);
			if (now_ms() >= s.kill_at + EMU_SUP_GIVE_UP_MS) {
				fprintf(stderr, "%s: processes of the session survive SIGKILL; leaving %s\n", o->who, tmp);
				return 1;
			}
		}
	}
	if (emu_tree_remove(tmp))
		fprintf(stderr, "%s: could not remove %s: %s\n", o->who, tmp, strerror(errno));
	if (!s.have_status)
		return 1;
	if (WIFSIGNALED(s.status))
		return 128 + WTERMSIG(s.status);
	return WIFEXITED(s.status) ? WEXITSTATUS(s.status) : 1;
}
