/* SPDX-License-Identifier: MIT */
/*
 * SPM through the HSA runtime's hsa_amd_spm_* (ROCm >= 5.5), resolved at run
 * time: Debian's ROCr 5.2.3 lacks them (SPM.md 8.4), and spmtap must still
 * start there and say why this backend is off.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include "log.h"
#include "spm/backend_priv.h"

#define HSA_SONAME "libhsa-runtime64.so.1"

struct hsa_lib {
	hsa_status_t (*init)(void);
	hsa_status_t (*shut_down)(void);
	hsa_status_t (*iterate_agents)(hsa_status_t (*)(hsa_agent_t, void *), void *);
	hsa_status_t (*agent_get_info)(hsa_agent_t, hsa_agent_info_t, void *);
	hsa_status_t (*status_string)(hsa_status_t, const char **);
	/* Declared here, not taken from a header: 5.2.3's hsa_ext_amd.h has no prototypes. */
	hsa_status_t (*spm_acquire)(hsa_agent_t);
	hsa_status_t (*spm_release)(hsa_agent_t);
	hsa_status_t (*spm_set_dest)(hsa_agent_t, size_t, uint32_t *, uint32_t *, void *, bool *);
};

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static struct hsa_lib lib;
static int lib_err;
static char lib_reason[256];

static bool resolve(void *h, const char *name, void *slot)
{
	dlerror();
	void *p = dlsym(h, name);
	if (!p)
		return false;
	memcpy(slot, &p, sizeof(p));
	return true;
}

/* "ROCr 5.2.3?" when the file is Debian's, else the real file name: a hint, not a fact. */
static void runtime_hint(void *h, char *buf, size_t len)
{
	struct link_map *lm = NULL;
	char real[PATH_MAX];

	snprintf(buf, len, "unknown version");
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !realpath(lm->l_name, real))
		return;
	const char *base = strrchr(real, '/');
	base = base ? base + 1 : real;
	if (!strcmp(base, "libhsa-runtime64.so.1.5.0"))
		snprintf(buf, len, "ROCr 5.2.3?");
	else
		snprintf(buf, len, "%.64s", base);
}

static void load(void)
{
	void *h = dlopen(HSA_SONAME, RTLD_NOW);
	if (!h) {
		lib_err = ENOENT;
		snprintf(lib_reason, sizeof(lib_reason), "dlopen(%s): %s", HSA_SONAME, dlerror());
		return;
	}
	static const struct {
		const char *name;
		size_t off;
	} base_syms[] = {
		{ "hsa_init", offsetof(struct hsa_lib, init) },
		{ "hsa_shut_down", offsetof(struct hsa_lib, shut_down) },
		{ "hsa_iterate_agents", offsetof(struct hsa_lib, iterate_agents) },
		{ "hsa_agent_get_info", offsetof(struct hsa_lib, agent_get_info) },
		{ "hsa_status_string", offsetof(struct hsa_lib, status_string) },
	};
	for (size_t i = 0; i < sizeof(base_syms) / sizeof(base_syms[0]); i++) {
		if (!resolve(h, base_syms[i].name, (char *)&lib + base_syms[i].off)) {
			lib_err = ENOSYS;
			snprintf(lib_reason, sizeof(lib_reason), "%s: missing required symbol: %s",
				 HSA_SONAME, base_syms[i].name);
			return;
		}
	}
	if (!resolve(h, "hsa_amd_spm_acquire", &lib.spm_acquire) ||
	    !resolve(h, "hsa_amd_spm_release", &lib.spm_release) ||
	    !resolve(h, "hsa_amd_spm_set_dest_buffer", &lib.spm_set_dest)) {
		char hint[96];
		runtime_hint(h, hint, sizeof(hint));
		lib_err = EOPNOTSUPP;
		snprintf(lib_reason, sizeof(lib_reason),
			 "%s (%s) has no hsa_amd_spm_* (added in ROCm 5.5)", HSA_SONAME, hint);
		return;
	}
	lib_err = 0;
}

static int hsa_probe(char *reason, size_t len)
{
	pthread_once(&load_once, load);
	if (lib_err)
		return spmtap_seterr(reason, len, lib_err, "%s", lib_reason);
	return 0;
}

struct hsa_backend {
	struct spm_backend base;
	size_t ndev;
	struct {
		uint32_t node;
		bool found;
		hsa_agent_t agent;
	} dev[];
};

static struct hsa_backend *to_ab(struct spm_backend *b)
{
	return spm_container_of(b, struct hsa_backend, base);
}

static const char *status_text(hsa_status_t st)
{
	const char *s = NULL;
	if (lib.status_string(st, &s) != HSA_STATUS_SUCCESS || !s)
		s = "unknown HSA status";
	return s;
}

/*
 * ROCr folds every thunk failure into HSA_STATUS_ERROR; whether errno
 * survives is unverified (SPM.md 8.4), so no errno is guessed here.
 */
static int hsa_result(hsa_status_t st, const char *call)
{
	if (st == HSA_STATUS_SUCCESS)
		return 0;
	pr_warn("hsa", "%s: %s (status 0x%x); reporting it as -EIO", call, status_text(st),
		(unsigned)st);
	return -EIO;
}

static hsa_status_t match_agent(hsa_agent_t agent, void *data)
{
	struct hsa_backend *ab = data;
	hsa_device_type_t type;
	uint32_t node;

	if (lib.agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type) != HSA_STATUS_SUCCESS ||
	    type != HSA_DEVICE_TYPE_GPU)
		return HSA_STATUS_SUCCESS;
	if (lib.agent_get_info(agent, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_DRIVER_NODE_ID,
			       &node) != HSA_STATUS_SUCCESS)
		return HSA_STATUS_SUCCESS;
	for (size_t i = 0; i < ab->ndev; i++) {
		if (ab->dev[i].node == node) {
			ab->dev[i].agent = agent;
			ab->dev[i].found = true;
		}
	}
	return HSA_STATUS_SUCCESS;
}

static int hsa_open(struct spm_backend **out, const struct spm_device *devs, size_t ndev,
		    char *err, size_t errlen)
{
	int r = hsa_probe(err, errlen);
	if (r)
		return r;

	hsa_status_t st = lib.init();
	if (st != HSA_STATUS_SUCCESS)
		return spmtap_seterr(err, errlen, EIO, "hsa_init: %s", status_text(st));

	struct hsa_backend *ab = calloc(1, sizeof(*ab) + ndev * sizeof(ab->dev[0]));
	if (!ab) {
		lib.shut_down();
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	}
	ab->base.ops = &spm_backend_hsa;
	ab->ndev = ndev;
	for (size_t i = 0; i < ndev; i++)
		ab->dev[i].node = devs[i].node;

	st = lib.iterate_agents(match_agent, ab);
	if (st != HSA_STATUS_SUCCESS) {
		free(ab);
		lib.shut_down();
		return spmtap_seterr(err, errlen, EIO, "hsa_iterate_agents: %s", status_text(st));
	}
	for (size_t i = 0; i < ndev; i++) {
		if (!ab->dev[i].found) {
			free(ab);
			lib.shut_down();
			return spmtap_seterr(err, errlen, ENODEV,
					     "the HSA runtime has no GPU agent for KFD node %u "
					     "(GPU %u, gpu_id 0x%x)",
					     devs[i].node, devs[i].index, devs[i].gpu_id);
		}
	}
	*out = &ab->base;
	return 0;
}

static int agent_of(struct hsa_backend *ab, const struct spm_device *dev, hsa_agent_t *agent)
{
	for (size_t i = 0; i < ab->ndev; i++) {
		if (ab->dev[i].node == dev->node) {
			*agent = ab->dev[i].agent;
			return 0;
		}
	}
	return -ENODEV;
}

static int hsa_acquire(struct spm_backend *b, const struct spm_device *dev)
{
	hsa_agent_t agent;
	int r = agent_of(to_ab(b), dev, &agent);
	return r ? r : hsa_result(lib.spm_acquire(agent), "hsa_amd_spm_acquire");
}

static int hsa_release(struct spm_backend *b, const struct spm_device *dev)
{
	hsa_agent_t agent;
	int r = agent_of(to_ab(b), dev, &agent);
	return r ? r : hsa_result(lib.spm_release(agent), "hsa_amd_spm_release");
}

static int hsa_set_dest(struct spm_backend *b, const struct spm_device *dev, void *buf,
			uint32_t size, uint32_t *timeout_ms, uint32_t *bytes_copied,
			uint32_t *data_loss)
{
	hsa_agent_t agent;
	int r = agent_of(to_ab(b), dev, &agent);
	if (r)
		return r;
	uint32_t t = *timeout_ms, copied = 0;
	bool loss = false;
	r = hsa_result(lib.spm_set_dest(agent, size, &t, &copied, buf, &loss),
		       "hsa_amd_spm_set_dest_buffer");
	*timeout_ms = t;
	*bytes_copied = copied;
	*data_loss = loss;
	return r;
}

/* ROCr loaded libhsakmt and opened KFD in hsa_init, so its clock counters work here. */
static int hsa_clock(struct spm_backend *b, const struct spm_device *dev,
		     struct spm_clock_pair *out)
{
	(void)b;
	const struct spm_hsakmt *k = spm_hsakmt_loaded();
	if (!k)
		return -EOPNOTSUPP;
	return spm_hsakmt_clock(k, dev->node, out);
}

static void hsa_close(struct spm_backend *b)
{
	if (!b)
		return;
	free(to_ab(b));
	lib.shut_down();
}

const struct spm_backend_ops spm_backend_hsa = {
	.name = "hsa",
	.summary = "HSA runtime hsa_amd_spm_* (ROCm >= 5.5), loaded at run time",
	.probe = hsa_probe,
	.open = hsa_open,
	.acquire = hsa_acquire,
	.set_dest = hsa_set_dest,
	.release = hsa_release,
	.clock_counters = hsa_clock,
	.close = hsa_close,
};
