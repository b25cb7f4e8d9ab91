/* SPDX-License-Identifier: MIT */
/*
 * The device process of one GPU's SPM session (spm_device.h): the caller's
 * side (spawn, requests, end) and the device's side (its main loop).
 *
 * The shared page is plain data: no pointers, since the two processes map
 * it at different addresses and run different images of the shim.  One
 * robust process-shared mutex guards all of it; `req` wakes the device,
 * `rep` the caller.  Requests are strictly one at a time: every caller of
 * the engine holds emu_p.lock.
 */
#include "emu/shim/spm_device.h"
#include "emu/shim/gpu_state.h"
#include "emu/shim/rlc.h"
#include "emu/shim/shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define EMU_DEV_MAGIC 0x56454453u /* "SDEV" */
#define EMU_DEV_VERSION 1u
/* Production and the worker's copies run at least this often (gen B's poll, gen A's interrupts). */
#define EMU_DEV_TICK_NS 1000000ull
/* Between two SPM streams (after ACQUIRE, after a stop) the tick only replays the GPU's log. */
#define EMU_DEV_IDLE_TICK_NS 20000000ull
/* How often the device checks that its owner has not exec'ed. */
#define EMU_DEV_PROBE_NS 100000000ull
/* How long ACQUIRE waits for a new device before it falls back to the inline engine. */
#define EMU_DEV_START_NS 10000000000ull

struct emu_dev_shm {
	uint32_t magic, version;
	pthread_mutex_t mu;
	pthread_cond_t req, rep;
	/* Set by the caller before the spawn. */
	int32_t owner_pid;
	uint32_t gpu_id, num_xcc, gen;
	uint64_t rate, ring_bytes;
	int32_t ninj;
	struct emu_spm_inj inj[EMU_SPM_MAX_INJ];
	uint64_t cursor[EMU_GS_MAX_XCC]; /* the GPU's transition log heads at ACQUIRE */
	uint64_t probe_addr, token;      /* where the owner keeps `token` (its image: an exec replaces it) */
	uint32_t session;                /* the owner's device sessions so far, from 1 */
	/* The device's answer to the start: 1 ready, else -errno. */
	int32_t ready;
	char why[128];
	/* One request at a time. */
	uint64_t req_seq, rep_seq;
	uint32_t op;
	uint64_t a[3];
	int32_t rc;
	uint32_t bytes, loss;
	uint64_t val;
	uint8_t hold;                    /* the caller is inside a SET_DEST_BUF: no worker, no production */
	uint32_t want;                   /* atomic, no lock: the caller waits for the lock to post a request */
	/* EMU_DEV_FLUSH: what the caller copies from the shared ring; EMU_DEV_ROTATE: what it could not. */
	uint32_t fl_len[EMU_GS_MAX_XCC], fl_short[EMU_GS_MAX_XCC];
	uint64_t fl_from[EMU_GS_MAX_XCC], fl_dest[EMU_GS_MAX_XCC];
	/* The engine's state the caller reads, as of the last request or tick. */
	uint8_t streaming;
	uint8_t armed[EMU_GS_MAX_XCC], full[EMU_GS_MAX_XCC];
	uint64_t fill_ns[EMU_GS_MAX_XCC];
};

/* Then, from EMU_DEV_RING_OFF: each XCC's ring, ring_bytes, the bytes of a line at its slot. */
#define EMU_DEV_RING_OFF ((sizeof(struct emu_dev_shm) + 4095) / 4096 * 4096)

struct emu_dev {
	struct emu_dev_shm *shm;
	size_t map_bytes;
	int fd;
	pid_t pid;
	bool dead, hold;
	uint32_t fl_len[EMU_GS_MAX_XCC], fl_short[EMU_GS_MAX_XCC];
	uint64_t fl_from[EMU_GS_MAX_XCC], fl_dest[EMU_GS_MAX_XCC];
};

static size_t emu_dev_map_bytes(uint32_t num_xcc, uint64_t ring_bytes)
{
	return EMU_DEV_RING_OFF + (size_t)num_xcc * ring_bytes;
}

/* What the device reads back from the owner's memory: gone or different once the owner has exec'ed. */
static volatile uint64_t emu_dev_token;

bool emu_dev_wanted(void)
{
	const char *e = getenv("SPMTAP_EMU_DEVICE");
	return !(e && !strcmp(e, "inline"));
}

static uint64_t emu_dev_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct timespec emu_dev_ts(uint64_t ns)
{
	return (struct timespec){ (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
}

/* A holder that died (kill -9 of the other side) leaves the page usable. */
static void emu_dev_lock(struct emu_dev_shm *m)
{
	if (pthread_mutex_lock(&m->mu) == EOWNERDEAD)
		pthread_mutex_consistent(&m->mu);
}

static int emu_dev_timedwait(pthread_cond_t *c, struct emu_dev_shm *m, uint64_t until_mono)
{
	struct timespec ts = emu_dev_ts(until_mono);
	int r = pthread_cond_timedwait(c, &m->mu, &ts);
	if (r == EOWNERDEAD)
		pthread_mutex_consistent(&m->mu);
	return r;
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

/* ---- the device's side ------------------------------------------------------- */

static pid_t emu_dev_parent;

/* PDEATHSIG comes when the spawning thread ends too: only a new parent means the owner is gone. */
static void emu_dev_on_pdeath(int sig)
{
	(void)sig;
	if (getppid() != emu_dev_parent)
		_exit(0);
}

static void emu_dev_snapshot(struct emu_dev_shm *m, const struct emu_spm *e)
{
	m->streaming = e->streaming;
	for (uint32_t k = 0; k < e->num_xcc; k++) {
		m->armed[k] = e->x[k].armed;
		m->full[k] = e->x[k].full;
		m->fill_ns[k] = e->x[k].fill_ns;
	}
}

/*
 * The caller's "now" was read before its request reached the device, whose
 * tick may have advanced past it meanwhile: time never goes back.
 */
static uint64_t emu_dev_now(uint64_t *last, uint64_t now)
{
	if (now > *last)
		*last = now;
	return *last;
}

static void emu_dev_exec(struct emu_dev_shm *m, struct emu_spm *e, uint64_t *last)
{
	uint32_t b = 0, l = 0;
	m->rc = 0;
	switch ((enum emu_dev_op)m->op) {
	case EMU_DEV_ADVANCE:
		emu_spm_advance(e, emu_dev_now(last, m->a[0]));
		break;
	case EMU_DEV_PREDICT:
		m->val = emu_spm_predict_fill(e, m->a[0]);
		break;
	case EMU_DEV_FLUSH: {
		/* Copies the worker made before are its own to write; this one is the caller's. */
		emu_spm_commit(e);
		emu_spm_flush(e, emu_dev_now(last, m->a[0]));
		uint8_t *base = (uint8_t *)m + EMU_DEV_RING_OFF;
		for (uint32_t k = 0; k < e->num_xcc; k++)
			m->fl_len[k] = emu_spm_take_pending(e, k, base + (size_t)k * e->ring_bytes, &m->fl_from[k],
							    &m->fl_dest[k]);
		break;
	}
	case EMU_DEV_ROTATE:
		for (uint32_t k = 0; k < e->num_xcc; k++)
			emu_spm_short_copy(e, k, m->fl_short[k]);
		m->rc = emu_spm_rotate(e, m->a[0], (uint32_t)m->a[1], emu_dev_now(last, m->a[2]), &b, &l);
		m->bytes = b;
		m->loss = l;
		if (!m->a[0])
			emu_struth_flush();
		break;
	case EMU_DEV_RETIRE:
		m->rc = emu_spm_retire(e, &b, &l);
		m->bytes = b;
		m->loss = l;
		break;
	case EMU_DEV_ARM:
		emu_spm_arm(e, m->a[0], (uint32_t)m->a[1], emu_dev_now(last, m->a[2]));
		break;
	case EMU_DEV_STOP:
		emu_spm_stop(e);
		emu_struth_flush();
		break;
	case EMU_DEV_DISCARD:
		emu_spm_discard_all(e);
		break;
	case EMU_DEV_COMMIT:
		emu_spm_commit(e);
		break;
	case EMU_DEV_TRUTH:
		emu_truth_release(e);
		emu_struth_flush();
		break;
	case EMU_DEV_NONE:
	case EMU_DEV_QUIT:
		break;
	}
	emu_dev_snapshot(m, e);
}

/*
 * Can this process reach its owner's memory (not where ptrace is
 * restricted: Yama, seccomp), and is the owner still the image that
 * started it?  An exec replaces the image: the kernel then ends the KFD
 * process and SPM with it, and this device must not write into the new one.
 */
static int emu_dev_probe(const struct emu_dev_shm *m)
{
	uint64_t v = 0;
	struct iovec l = { &v, sizeof(v) }, r = { (void *)(uintptr_t)m->probe_addr, sizeof(v) };
	if (process_vm_readv(m->owner_pid, &l, 1, &r, 1, 0) != sizeof(v))
		return errno ? errno : EIO;
	return v == m->token ? 0 : ESRCH;
}

static struct emu_spm *emu_dev_engine(struct emu_dev_shm *m, char *why, size_t whylen)
{
	pthread_mutex_lock(&emu_p.lock);
	struct emu_gpu *g = emu_gpu_by_id(m->gpu_id);
	struct emu_gpu_regs *r = g ? emu_gpu_regs(g) : NULL;
	struct emu_gpu_state *gs = r ? g->gs : NULL;
	pthread_mutex_unlock(&emu_p.lock);
	if (!gs) {
		snprintf(why, whylen, "gpu_id 0x%x: no GPU state in this process", m->gpu_id);
		return NULL;
	}
	struct emu_spm *e = emu_spm_new((enum emu_gen)m->gen, m->num_xcc, m->gpu_id, m->rate, m->ring_bytes, m->inj,
					m->ninj);
	if (!e) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	e->gs = gs;
	for (uint32_t k = 0; k < m->num_xcc; k++)
		e->x[k].log_cursor = m->cursor[k];
	e->user_pid = m->owner_pid;
	e->layout_id_base = m->session << 20;
	e->in_device = true;
	return e;
}

EMU_EXPORT int spmtap_emu_device_main(int argc, char **argv)
{
	if (argc < 2 || !emu_p.active) {
		emu_log("spmtap-emu-device: started by the emulator's shim at SPM ACQUIRE, not by hand\n");
		return 2;
	}
	int fd = atoi(argv[1]);
	struct emu_dev_shm *m = emu_real_mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED || m->magic != EMU_DEV_MAGIC || m->version != EMU_DEV_VERSION)
		return 2;
	size_t map_bytes = emu_dev_map_bytes(m->num_xcc, m->ring_bytes);
	munmap(m, sizeof(*m));
	m = emu_real_mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return 2;
	emu_real_close(fd);
	/* Nothing else of the owner's: a pipe it inherited must not stay open here after the owner's end. */
	close_range(3, ~0u, 0);
	emu_dev_parent = m->owner_pid;
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, emu_dev_on_pdeath);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != emu_dev_parent)
		return 0; /* the owner died before PDEATHSIG was armed */
	char why[128] = "";
	int perr = emu_dev_probe(m);
	if (perr)
		snprintf(why, sizeof(why), "process_vm_readv of the owner: %s", strerror(perr));
	struct emu_spm *e = perr ? NULL : emu_dev_engine(m, why, sizeof(why));
	emu_struth_set_pid(m->owner_pid);
	emu_dev_lock(m);
	m->ready = e ? 1 : -1;
	snprintf(m->why, sizeof(m->why), "%s", why);
	if (e)
		emu_dev_snapshot(m, e);
	pthread_cond_broadcast(&m->rep);
	if (!e) {
		pthread_mutex_unlock(&m->mu);
		return 1;
	}
	/*
	 * The device's clock: production and the worker's copies up to now on
	 * every tick, the caller's requests as they come.  Everything runs under
	 * the page's lock, so a request sees the engine between two steps.
	 */
	uint64_t next_tick = emu_dev_mono_ns(), next_probe = next_tick + EMU_DEV_PROBE_NS, last = 0;
	for (;;) {
		if (m->req_seq != m->rep_seq) {
			uint32_t op = m->op;
			emu_dev_exec(m, e, &last);
			m->rep_seq = m->req_seq;
			pthread_cond_broadcast(&m->rep);
			if (op == EMU_DEV_QUIT)
				break;
			continue;
		}
		if (getppid() != emu_dev_parent)
			break;
		uint64_t mono = emu_dev_mono_ns();
		if (mono >= next_probe) {
			if (emu_dev_probe(m))
				break; /* the owner exec'ed */
			next_probe = mono + EMU_DEV_PROBE_NS;
		}
		if (mono >= next_tick && !m->hold && !__atomic_load_n(&m->want, __ATOMIC_SEQ_CST)) {
			emu_spm_advance(e, emu_dev_now(&last, emu_clock_raw_ns()));
			emu_spm_commit(e);
			emu_dev_snapshot(m, e);
			/* From the end of the step: a device behind real time still leaves the lock free a while. */
			mono = emu_dev_mono_ns();
			/* Stopped, nothing is produced: the GPU's log is replayed, but a request starts the stream. */
			next_tick = mono + (e->streaming ? EMU_DEV_TICK_NS : EMU_DEV_IDLE_TICK_NS);
		}
		if (__atomic_load_n(&m->want, __ATOMIC_SEQ_CST) && m->req_seq == m->rep_seq) {
			/* The caller is at the lock: let it in and wait for its request. */
			emu_dev_timedwait(&m->req, m, mono + EMU_DEV_TICK_NS);
			continue;
		}
		/* Held: only a request (or the owner's death, looked at now and then) moves the device. */
		emu_dev_timedwait(&m->req, m, m->hold ? mono + 100000000ull : next_tick);
	}
	pthread_mutex_unlock(&m->mu);
	emu_struth_flush();
	emu_spm_free(e);
	return 0;
}
