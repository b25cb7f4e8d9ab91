/* SPDX-License-Identifier: MIT */
/* libotf2 loaded at run time (otf2_lib.h says why). */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "collector/lib/otf2_lib.h"
#include "log.h"

int otf2_lib_open(struct otf2_lib *l, char *err, size_t errlen)
{
	static const char *const names[] = OTF2_LIB_NAMES;
	memset(l, 0, sizeof(*l));
	char first[256] = "";
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !l->handle; i++) {
		l->handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (l->handle)
			l->name = names[i];
		else if (!first[0]) {
			const char *e = dlerror();
			snprintf(first, sizeof(first), "%s", e ? e : names[i]);
		}
	}
	if (!l->handle)
		return spmtap_seterr(err, errlen, ENOENT,
				     "libotf2 not found (%s): install libotf2-trace-dev or libopen-trace-format2",
				     first);
#define OTF2_LIB_LOAD(f)                                                                           \
	*(void **)&l->f = dlsym(l->handle, #f);                                                   \
	if (!l->f) {                                                                               \
		int rc = spmtap_seterr(err, errlen, ENOTSUP, "%s has no %s: OTF2 3.0 or newer needed", \
				       l->name, #f);                                                \
		otf2_lib_close(l);                                                                 \
		return rc;                                                                         \
	}
	OTF2_LIB_FNS(OTF2_LIB_LOAD)
#undef OTF2_LIB_LOAD
	return 0;
}

void otf2_lib_close(struct otf2_lib *l)
{
	if (l->handle)
		dlclose(l->handle);
	memset(l, 0, sizeof(*l));
}
