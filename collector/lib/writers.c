/* SPDX-License-Identifier: MIT */
/* The writer registry: every output format behind writer.h, in -f order. */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "collector/lib/writer.h"
#include "log.h"

static const struct writer_ops *const all[] = { &writer_csv, &writer_perfetto, &writer_sqlite,
						&writer_otf2, NULL };

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

/*
 * rocprofv3's names for what we write, and its names for what we do not:
 * users type its -f values by habit, so each gets our writer or a sentence
 * that says why not and what to use instead.
 */
static const struct {
	const char *name;
	const char *writer;  /* our writer's name, or NULL: refused with why */
	const char *why;
} aliases[] = {
	{ "pftrace", "perfetto", NULL },
	{ "db", "sqlite", NULL },
	{ "rocpd", NULL,
	  "rocpd's schema is versioned with ROCm and only shows SPM tied to kernel dispatches; "
	  "use -f sqlite, spmtap's documented schema (docs/formats/sqlite.md)" },
	{ "json", NULL,
	  "rocprofv3's JSON is its own Chrome-trace dialect of per-dispatch counters; use -f pftrace "
	  "for a trace (ui.perfetto.dev, chrome://tracing) or -f csv for the series" },
};

const struct writer_ops *writer_lookup(const char *name, char *err, size_t errlen)
{
	const struct writer_ops *w = writer_find(name);
	if (w)
		return w;
	for (size_t i = 0; name && i < sizeof(aliases) / sizeof(aliases[0]); i++) {
		if (strcasecmp(aliases[i].name, name))
			continue;
		if (aliases[i].writer)
			return writer_find(aliases[i].writer);
		spmtap_seterr(err, errlen, EINVAL, "format %s: not written by spmtap: %s", name,
			      aliases[i].why);
		return NULL;
	}
	spmtap_seterr(err, errlen, EINVAL,
		      "format %s: unknown (csv, pftrace or perfetto, sqlite, otf2; comma-separated)",
		      name ? name : "(null)");
	return NULL;
}
