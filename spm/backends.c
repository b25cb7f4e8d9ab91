/* SPDX-License-Identifier: MIT */
/* The backend table: order is preference, default first. */
#include <string.h>

#include "spm/spm.h"

static const struct spm_backend_ops *const table[] = {
	&spm_backend_hsakmt,
	&spm_backend_kfd,
	&spm_backend_hsa,
	NULL,
};

const struct spm_backend_ops *const *spm_backends(void)
{
	return table;
}

const struct spm_backend_ops *spm_backend_find(const char *name)
{
	for (size_t i = 0; name && table[i]; i++)
		if (!strcmp(table[i]->name, name))
			return table[i];
	return NULL;
}
