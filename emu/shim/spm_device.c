/* SPDX-License-Identifier: MIT */
/*
 * The owner's side of the device process (spm_device.h): spawn, requests,
 * the flush it performs itself, the end.  The device's side is
 * device_main.c; the page they share, device_shm.h.
 */
#include "emu/shim/spm_device.h"
#include "emu/shim/device_shm.h"
#include "emu/shim/gpu_state.h"
#include "emu/shim/shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct emu_dev {
	struct emu_dev_shm *shm;
	size_t map_bytes;
	int fd;
	pid_t pid;
	bool dead, hold;
	uint32_t fl_len[EMU_GS_MAX_XCC], fl_short[EMU_GS_MAX_XCC];
	uint64_t fl_from[EMU_GS_MAX_XCC], fl_dest[EMU_GS_MAX_XCC];
};

/* What the device reads back from the owner's memory: gone or different once the owner has exec'ed. */
static volatile uint64_t emu_dev_token;
bool emu_dev_wanted(void)
{
	const char *e = getenv("SPMTAP_EMU_DEVICE");
	return !e || strcmp(e, "inline");
}

/* ---- the caller's side ------------------------------------------------------- */

static void emu_dev_mirror(struct emu_spm *s, const struct emu_dev_shm *m)
{
	s->streaming = m->streaming;
	for (uint32_t k = 0; k < s->num_xcc && k < EMU_GS_MAX_XCC; k++) {
		s->x[k].armed = m->armed[k];
		s->x[k].full = m->full[k];
		s->x[k].fill_ns = m->fill_ns[k];
	}
}

/* Whether the device still runs; reaps it when not. */
static bool emu_dev_alive(struct emu_dev *d)
{
	if (d->dead)
		return false;
	int st;
	pid_t w = waitpid(d->pid, &st, WNOHANG);
	if (w == d->pid || (w < 0 && errno == ECHILD)) {
		d->dead = true;
		emu_log("SPM device process %d is gone: the session's data stops here\n", (int)d->pid);
	}
	return !d->dead;
}

int emu_dev_call(struct emu_spm *s, enum emu_dev_op op, uint64_t a0, uint64_t a1, uint64_t a2)
{
	struct emu_dev *d = s->dev;
	if (!d || d->dead)
		return EIO;
	struct emu_dev_shm *m = d->shm;
	/*
	 * The mutex is not fair: a device that is behind real time would take
	 * it back from tick to tick and starve the caller (its ring then fills,
	 * the RLC stalls, the device falls further behind).  It yields to `want`.
	 */
	__atomic_add_fetch(&m->want, 1, __ATOMIC_SEQ_CST);
	emu_dev_lock(m);
	__atomic_sub_fetch(&m->want, 1, __ATOMIC_SEQ_CST);
	m->op = op;
	m->hold = d->hold;
	if (op == EMU_DEV_ROTATE) {
		/* What the caller's flush could not write: accounted before the retire reports the buffer. */
		memcpy(m->fl_short, d->fl_short, sizeof(m->fl_short));
		memset(d->fl_short, 0, sizeof(d->fl_short));
	}
	m->a[0] = a0;
	m->a[1] = a1;
	m->a[2] = a2;
	uint64_t seq = ++m->req_seq;
	pthread_cond_signal(&m->req);
	while (m->rep_seq != seq) {
		emu_dev_timedwait(&m->rep, m, emu_dev_mono_ns() + 100000000ull);
		if (m->rep_seq != seq && !emu_dev_alive(d)) {
			pthread_mutex_unlock(&m->mu);
			return EIO;
		}
	}
	s->dev_rc = m->rc;
	s->dev_bytes = m->bytes;
	s->dev_loss = m->loss;
	s->dev_val = m->val;
	if (op == EMU_DEV_FLUSH) {
		memcpy(d->fl_len, m->fl_len, sizeof(d->fl_len));
		memcpy(d->fl_from, m->fl_from, sizeof(d->fl_from));
		memcpy(d->fl_dest, m->fl_dest, sizeof(d->fl_dest));
	}
	emu_dev_mirror(s, m);
	pthread_mutex_unlock(&m->mu);
	return 0;
}

void emu_dev_hold(struct emu_spm *s, bool on)
{
	if (s->dev)
		s->dev->hold = on;
}

/*
 * The device runs the worker (its older copies it writes itself) and puts
 * the lines this copy takes in their slots of the shared ring; this thread
 * writes them into its own buffer, so the collector pays for the flush's
 * copy as it does on hardware.  The device waits for the next request.
 */
void emu_dev_flush(struct emu_spm *s, uint64_t now)
{
	struct emu_dev *d = s->dev;
	if (emu_dev_call(s, EMU_DEV_FLUSH, now, 0, 0))
		return;
	const uint8_t *base = (const uint8_t *)d->shm + EMU_DEV_RING_OFF;
	for (uint32_t k = 0; k < s->num_xcc; k++) {
		uint32_t len = d->fl_len[k];
		d->fl_short[k] = 0;
		if (!len)
			continue;
		const uint8_t *ring = base + (size_t)k * s->ring_bytes;
		uint64_t off = d->fl_from[k] % s->ring_bytes;
		size_t first = len < s->ring_bytes - off ? len : (size_t)(s->ring_bytes - off);
		size_t w = emu_spm_user_write(d->fl_dest[k], ring + off, first);
		if (w == first && len > first)
			w += emu_spm_user_write(d->fl_dest[k] + first, ring, len - first);
		d->fl_short[k] = (uint32_t)(len - w);
	}
	/* The rotation that follows carries the shorts to the device's accounting. */
}

/* spmtap-emu-device beside this shim, or $SPMTAP_EMU_DEVICE_EXE. */
static int emu_dev_paths(char *exe, size_t exelen, char *shim, size_t shimlen)
{
	Dl_info info;
	if (!dladdr((void *)emu_dev_paths, &info) || !info.dli_fname || info.dli_fname[0] != '/')
		return -1;
	snprintf(shim, shimlen, "%s", info.dli_fname);
	const char *e = getenv("SPMTAP_EMU_DEVICE_EXE");
	if (e && *e) {
		snprintf(exe, exelen, "%s", e);
		return 0;
	}
	const char *slash = strrchr(info.dli_fname, '/');
	snprintf(exe, exelen, "%.*s/spmtap-emu-device", (int)(slash - info.dli_fname), info.dli_fname);
	return 0;
}

/* The caller's environment with the shim preloaded (a library user may have linked it some other way). */
static char **emu_dev_env(const char *shim, char *pre, size_t prelen)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 2, sizeof(*env));
	if (!env)
		return NULL;
	const char *cur = getenv("LD_PRELOAD");
	const char *base = strrchr(shim, '/') + 1;
	if (cur && strstr(cur, base))
		snprintf(pre, prelen, "LD_PRELOAD=%s", cur);
	else
		snprintf(pre, prelen, "LD_PRELOAD=%s%s%s", shim, cur && *cur ? ":" : "", cur ? cur : "");
	size_t j = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11))
			env[j++] = environ[i];
	env[j++] = pre;
	env[j] = NULL;
	return env;
}

static void emu_dev_unmap(struct emu_dev *d)
{
	if (d->shm)
		munmap(d->shm, d->map_bytes);
	if (d->fd >= 0)
		emu_real_close(d->fd);
	free(d);
}

static int emu_dev_start(struct emu_dev *d, char *err, size_t errlen)
{
	char exe[PATH_MAX], shim[PATH_MAX], pre[2 * PATH_MAX + 16], fdarg[16];
	if (emu_dev_paths(exe, sizeof(exe), shim, sizeof(shim))) {
		snprintf(err, errlen, "cannot tell where the shim was loaded from");
		return -1;
	}
	if (access(exe, X_OK)) {
		snprintf(err, errlen, "%s: %s", exe, strerror(errno));
		return -1;
	}
	char **env = emu_dev_env(shim, pre, sizeof(pre));
	if (!env) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* The page goes to the device as fd 3 (4 if it is 3 already: dup2 onto itself keeps CLOEXEC). */
	int target = d->fd == 3 ? 4 : 3;
	snprintf(fdarg, sizeof(fdarg), "%d", target);
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, d->fd, target);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawnattr_init(&at);
	/*
	 * Its own process group: a terminal's ^C goes to the collector, which
	 * then stops and releases SPM through the device; the device itself
	 * only ever dies with its parent.  Default signal dispositions.
	 */
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	char *argv[] = { "spmtap-emu-device", fdarg, NULL };
	int rc = posix_spawn(&d->pid, exe, &fa, &at, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	free(env);
	if (rc) {
		snprintf(err, errlen, "posix_spawn %s: %s", exe, strerror(rc));
		return -1;
	}
	struct emu_dev_shm *m = d->shm;
	uint64_t until = emu_dev_mono_ns() + EMU_DEV_START_NS;
	emu_dev_lock(m);
	while (!m->ready) {
		emu_dev_timedwait(&m->rep, m, emu_dev_mono_ns() + 20000000ull);
		if (!m->ready && (!emu_dev_alive(d) || emu_dev_mono_ns() > until))
			break;
	}
	int ready = m->ready;
	if (ready != 1)
		snprintf(err, errlen, "the device process did not start: %s",
			 ready < 0 ? m->why : d->dead ? "it exited" : "no answer");
	pthread_mutex_unlock(&m->mu);
	if (ready != 1) {
		if (!d->dead) {
			kill(d->pid, SIGKILL);
			waitpid(d->pid, NULL, 0);
		}
		return -1;
	}
	return 0;
}

struct emu_spm *emu_dev_spawn(enum emu_gen gen, uint32_t num_xcc, uint32_t gpu_id, uint64_t rate,
			      uint64_t ring_bytes, const struct emu_spm_inj *inj, int ninj,
			      struct emu_gpu_state *gs, char *err, size_t errlen)
{
	static uint64_t epoch = 1ull << 32; /* apart from the inline engine's */
	if (num_xcc > EMU_GS_MAX_XCC) {
		snprintf(err, errlen, "%u XCCs", num_xcc);
		return NULL;
	}
	struct emu_dev *d = calloc(1, sizeof(*d));
	struct emu_spm *s = calloc(1, sizeof(*s) + num_xcc * sizeof(s->x[0]));
	if (!d || !s) {
		free(d);
		free(s);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->map_bytes = emu_dev_map_bytes(num_xcc, ring_bytes);
	d->fd = memfd_create("spmtap-emu-device", MFD_CLOEXEC);
	if (d->fd < 0 || ftruncate(d->fd, (off_t)d->map_bytes) ||
	    (d->shm = emu_real_mmap(NULL, d->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, d->fd, 0)) == MAP_FAILED) {
		snprintf(err, errlen, "shared page: %s", strerror(errno));
		d->shm = NULL;
		emu_dev_unmap(d);
		free(s);
		return NULL;
	}
	struct emu_dev_shm *m = d->shm;
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&m->mu, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->req, &ca);
	pthread_cond_init(&m->rep, &ca);
	pthread_condattr_destroy(&ca);
	m->magic = EMU_DEV_MAGIC;
	m->version = EMU_DEV_VERSION;
	m->owner_pid = (int32_t)getpid();
	m->gpu_id = gpu_id;
	m->num_xcc = num_xcc;
	m->gen = gen;
	m->rate = rate;
	m->ring_bytes = ring_bytes;
	m->ninj = ninj;
	memcpy(m->inj, inj, (size_t)ninj * sizeof(*inj));
	if (gs) {
		/* The session starts here, not when the device is up: it replays what happens from now. */
		emu_gs_lock(gs);
		for (uint32_t k = 0; k < num_xcc; k++)
			m->cursor[k] = emu_gs_head(gs, k);
		emu_gs_unlock(gs);
	}
	if (!emu_dev_token)
		emu_dev_token = emu_dev_mono_ns() ^ (uint64_t)getpid() << 40 ^ (uint64_t)(uintptr_t)m;
	m->probe_addr = (uint64_t)(uintptr_t)&emu_dev_token;
	m->token = emu_dev_token;
	static uint32_t sessions;
	m->session = ++sessions;
	if (emu_dev_start(d, err, errlen)) {
		emu_dev_unmap(d);
		free(s);
		return NULL;
	}
	s->gen = gen;
	s->num_xcc = num_xcc;
	s->gpu_id = gpu_id;
	s->epoch = ++epoch;
	s->lock_fd = -1;
	s->rate = rate;
	s->ring_bytes = ring_bytes;
	s->ring_lines = ring_bytes / EMU_SPM_LINE;
	s->gs = gs;
	s->dev = d;
	emu_dev_mirror(s, m);
	return s;
}

void emu_dev_close(struct emu_spm *s)
{
	struct emu_dev *d = s->dev;
	if (!d)
		return;
	if (!emu_dev_call(s, EMU_DEV_QUIT, 0, 0, 0) && !d->dead)
		waitpid(d->pid, NULL, 0);
	else if (!d->dead) {
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
	}
	s->dev = NULL;
	emu_dev_unmap(d);
}
