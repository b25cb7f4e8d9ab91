/* SPDX-License-Identifier: MIT */
/* The writer registry: every output format behind writer.h, in -f order. */
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "collector/lib/writer.h"

static const struct writer_ops *const all[] = { &writer_csv, &writer_perfetto, &writer_sqlite,
						NULL };

const struct writer_ops *const *writers(void) { return all; }

const struct writer_ops *writer_find(const char *name)
{
	if (!name)
		return NULL;
	for (const struct writer_ops *const *w = all; *w; w++)
		if (!strcasecmp((*w)->name, name))
			return *w;
	return NULL;
}
