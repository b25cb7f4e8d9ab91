/* SPDX-License-Identifier: MIT */
/* The submitter table: order is preference, first usable wins. */
#include <string.h>

#include "spm/submit.h"

static const struct spm_submitter_ops *const table[] = {
	&spm_submitter_emu,
	NULL,
};

const struct spm_submitter_ops *const *spm_submitters(void)
{
	return table;
}

const struct spm_submitter_ops *spm_submitter_find(const char *name)
{
	for (size_t i = 0; name && table[i]; i++)
		if (!strcmp(table[i]->name, name))
			return table[i];
	return NULL;
}
