/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the layout descriptor parser.  Whatever parses must
 * validate, write back to JSON and parse again to the same layout.
 */
#include <stdlib.h>
#include <string.h>

#include "decoder/layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dec_layout *l, *m;
	char err[256];
	if (dec_layout_parse((const char *)data, size, &l, err, sizeof(err)))
		return 0;
	if (dec_layout_validate(l, err, sizeof(err)))
		abort();
	char *s = dec_layout_to_json(l);
	if (!s)
		abort();
	if (dec_layout_parse(s, strlen(s), &m, err, sizeof(err)))
		abort();
	if (m->ncounters != l->ncounters || m->sample_bytes != l->sample_bytes ||
	    memcmp(m->counters, l->counters, l->ncounters * sizeof(*l->counters)))
		abort();
	free(s);
	dec_layout_free(l);
	dec_layout_free(m);
	return 0;
}
