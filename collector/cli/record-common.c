/* SPDX-License-Identifier: MIT */
/* The stop signals and the clock of `spmtap record` (record.h). */
#include <pthread.h>

#include "collector/cli/record.h"

_Atomic int rec_stop_signal;
_Atomic int rec_signal_count;

static void on_signal(int sig)
{
	rec_stop_signal = sig;
	rec_signal_count++;
}

void rec_signals_install(bool job)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* mpirun forwards these and not SIGINT/SIGTERM (docs/howto-job.md "Stopping") */
	if (job) {
		sigaction(SIGUSR1, &sa, NULL);
		sigaction(SIGUSR2, &sa, NULL);
	}
}

void rec_signals_block(sigset_t *old)
{
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &block, old);
}

void rec_signals_restore(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

uint64_t rec_now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
