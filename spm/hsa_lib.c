/* SPDX-License-Identifier: MIT */
/* ROCr resolved at run time (hsa_lib.h). */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "spm/hsa_lib.h"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static struct spm_hsa_lib lib;
static int lib_err;
static char lib_reason[PATH_MAX + 128];

static void *resolve(void *h, const char *name)
{
	dlerror();
	return dlsym(h, name);
}

/* The resolved file, and "ROCr 5.2.3?" when it is Debian's: a hint for messages, not a fact. */
static void identify(void *h)
{
	struct link_map *lm = NULL;
	snprintf(lib.version, sizeof(lib.version), "unknown version");
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !realpath(lm->l_name, lib.file))
		return;
	const char *base = strrchr(lib.file, '/');
	base = base ? base + 1 : lib.file;
	if (!strcmp(base, "libhsa-runtime64.so.1.5.0"))
		snprintf(lib.version, sizeof(lib.version), "ROCr 5.2.3?");
	else
		snprintf(lib.version, sizeof(lib.version), "%.63s", base);
}

static void load(void)
{
	const char *name = getenv("SPMTAP_HSA_RUNTIME");
	if (!name || !*name)
		name = SPM_HSA_SONAME;
	void *h = dlopen(name, RTLD_NOW);
	if (!h) {
		lib_err = ENOENT;
		snprintf(lib_reason, sizeof(lib_reason), "dlopen(%s): %s", name, dlerror());
		return;
	}
	identify(h);
#define SPM_HSA_LOAD(fn)                                                                            \
	if (!lib_err) {                                                                             \
		void *p = resolve(h, #fn);                                                          \
		if (!p) {                                                                           \
			lib_err = ENOSYS;                                                           \
			snprintf(lib_reason, sizeof(lib_reason), "%s (%s): missing required symbol: %s", \
				 name, lib.version, #fn);                                           \
		}                                                                                   \
		memcpy(&lib.f.fn, &p, sizeof(p));                                                   \
	}
	SPM_HSA_REQUIRED(SPM_HSA_LOAD)
#undef SPM_HSA_LOAD
	void *a = resolve(h, "hsa_amd_spm_acquire"), *r = resolve(h, "hsa_amd_spm_release"),
	     *d = resolve(h, "hsa_amd_spm_set_dest_buffer");
	memcpy(&lib.spm_acquire, &a, sizeof(a));
	memcpy(&lib.spm_release, &r, sizeof(r));
	memcpy(&lib.spm_set_dest, &d, sizeof(d));
	lib.has_spm = a && r && d;
}

int spm_hsa_load(const struct spm_hsa_lib **out, char *reason, size_t len)
{
	pthread_once(&load_once, load);
	if (lib_err) {
		*out = NULL;
		return spmtap_seterr(reason, len, lib_err, "%s", lib_reason);
	}
	*out = &lib;
	return 0;
}

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static bool inited;
static _Atomic bool capture_stderr; /* process-wide like ROCr itself; set once by the CLI */

void spm_hsa_capture_init_stderr(bool on)
{
	capture_stderr = on;
}

/* fd 2 into an anonymous file for the call; -1 when not capturing or it cannot. */
static int capture_begin(int *saved)
{
	*saved = -1;
	if (!capture_stderr)
		return -1;
	int fd = memfd_create("spmtap-rocr-stderr", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	fflush(stderr);
	*saved = dup(2);
	if (*saved < 0 || dup2(fd, 2) < 0) {
		if (*saved >= 0)
			close(*saved);
		close(fd);
		*saved = -1;
		return -1;
	}
	return fd;
}

/* Restore fd 2; what was printed, whitespace folded to single spaces, into text. */
static void capture_end(int fd, int saved, char *text, size_t len)
{
	text[0] = 0;
	if (fd < 0)
		return;
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	char buf[1024];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	size_t o = 0;
	bool space = false;
	for (ssize_t i = 0; i < n && o + 1 < len; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
			space = o > 0;
			continue;
		}
		if (space && o + 2 < len)
			text[o++] = ' ';
		space = false;
		text[o++] = (char)c;
	}
	text[o] = 0;
}

int spm_hsa_open(const struct spm_hsa_lib **out, char *reason, size_t len)
{
	int r = spm_hsa_load(out, reason, len);
	if (r)
		return r;
	pthread_mutex_lock(&init_lock);
	if (!inited) {
		int saved, fd = capture_begin(&saved);
		hsa_status_t st = lib.f.hsa_init();
		char said[512];
		capture_end(fd, saved, said, sizeof(said));
		if (said[0])
			pr_info("rocr", "hsa_init (%s) printed: %s", lib.version, said);
		if (st == HSA_STATUS_SUCCESS)
			inited = true;
		else
			r = spmtap_seterr(reason, len, EIO, "hsa_init (%s): %s%s%s%s", lib.version,
					  spm_hsa_status(&lib, st), said[0] ? " (it printed: \"" : "", said,
					  said[0] ? "\")" : "");
	}
	pthread_mutex_unlock(&init_lock);
	if (r)
		*out = NULL;
	return r;
}

const char *spm_hsa_status(const struct spm_hsa_lib *h, hsa_status_t st)
{
	const char *s = NULL;
	if (h->f.hsa_status_string(st, &s) != HSA_STATUS_SUCCESS || !s)
		s = "unknown HSA status";
	return s;
}

struct agent_match {
	const struct spm_hsa_lib *h;
	uint32_t node;
	bool found;
	hsa_agent_t agent;
	int ngpu;
};

static hsa_status_t match_agent(hsa_agent_t agent, void *data)
{
	struct agent_match *m = data;
	hsa_device_type_t type;
	uint32_t node;
	if (m->h->f.hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type) != HSA_STATUS_SUCCESS ||
	    type != HSA_DEVICE_TYPE_GPU)
		return HSA_STATUS_SUCCESS;
	m->ngpu++;
	if (m->h->f.hsa_agent_get_info(agent, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_DRIVER_NODE_ID, &node) ==
		    HSA_STATUS_SUCCESS &&
	    node == m->node && !m->found) {
		m->agent = agent;
		m->found = true;
	}
	return HSA_STATUS_SUCCESS;
}

int spm_hsa_agent_for(const struct spm_hsa_lib *h, const struct spm_device *dev, hsa_agent_t *agent, char *why,
		      size_t len)
{
	struct agent_match m = { .h = h, .node = dev->node };
	hsa_status_t st = h->f.hsa_iterate_agents(match_agent, &m);
	if (st != HSA_STATUS_SUCCESS)
		return spmtap_seterr(why, len, EIO, "hsa_iterate_agents: %s", spm_hsa_status(h, st));
	if (m.found) {
		/* The node number is ROCr's own report; the PCI location confirms it is the same GPU. */
		uint32_t bdf = 0, domain = 0;
		if (h->f.hsa_agent_get_info(m.agent, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_BDFID, &bdf) ==
			    HSA_STATUS_SUCCESS &&
		    h->f.hsa_agent_get_info(m.agent, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_DOMAIN, &domain) ==
			    HSA_STATUS_SUCCESS &&
		    (bdf != dev->location_id || domain != dev->domain))
			return spmtap_seterr(why, len, ENODEV,
					     "ROCr's agent for KFD node %u is at PCI %04x:%02x:%02x.%x, but KFD "
					     "puts gpu_id 0x%x at %04x:%02x:%02x.%x; refusing to guess",
					     dev->node, domain, bdf >> 8, (bdf >> 3) & 31, bdf & 7, dev->gpu_id,
					     dev->domain, dev->location_id >> 8, (dev->location_id >> 3) & 31,
					     dev->location_id & 7);
		*agent = m.agent;
		return 0;
	}
	/* No agent: does this ROCr know the target at all?  Its ISA registry says. */
	char isa[64];
	hsa_isa_t unused;
	snprintf(isa, sizeof(isa), "amdgcn-amd-amdhsa--%s", dev->gfx);
	const char *ovr = getenv("HSA_OVERRIDE_GFX_VERSION");
	char note[96] = "";
	if (ovr && *ovr)
		snprintf(note, sizeof(note), " (HSA_OVERRIDE_GFX_VERSION=%.32s is set)", ovr);
	if (dev->gfx[0] && h->f.hsa_isa_from_name(isa, &unused) != HSA_STATUS_SUCCESS)
		/* Short and actionable: the file ROCr was loaded from is in `spmtap list` and at -v. */
		return spmtap_seterr(why, len, ENODEV,
				     "%s does not know %s (ROCm >= 5.7 knows gfx940-942)%s",
				     h->version, dev->gfx, note);
	return spmtap_seterr(why, len, ENODEV, "ROCr (%s) has no GPU agent for KFD node %u (%d GPU agents in all)%s",
			     h->version, dev->node, m.ngpu, note);
}
