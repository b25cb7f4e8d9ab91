/* SPDX-License-Identifier: MIT */
#include "jline.h"

#include <stdio.h>
#include <string.h>

bool jget_u64(const char *line, const char *key, unsigned long long *v)
{
	char k[64];
	snprintf(k, sizeof(k), "\"%s\":", key);
	const char *p = strstr(line, k);
	return p && sscanf(p + strlen(k), "%llu", v) == 1;
}

bool jget_dbl(const char *line, const char *key, double *v)
{
	char k[64];
	snprintf(k, sizeof(k), "\"%s\":", key);
	const char *p = strstr(line, k);
	return p && sscanf(p + strlen(k), "%lf", v) == 1;
}

bool jget_str(const char *line, const char *key, char *out, size_t len)
{
	char k[64];
	snprintf(k, sizeof(k), "\"%s\":\"", key);
	const char *p = strstr(line, k);
	if (!p)
		return false;
	p += strlen(k);
	size_t n = strcspn(p, "\"");
	if (n >= len)
		return false;
	memcpy(out, p, n);
	out[n] = 0;
	return true;
}
