/* SPDX-License-Identifier: MIT */
#include "raw_end.h"

#include "collector/lib/rawfile.h"

json_t *raw_end_json(const char *raw)
{
	struct rawfile_reader *r;
	char e[256];
	if (rawfile_open(&r, raw, e, sizeof(e)))
		return NULL;
	struct rawfile_record rr;
	json_t *end = NULL;
	while (rawfile_next(r, &rr, e, sizeof(e)) == 1)
		if (rr.type == RAWFILE_END) {
			json_decref(end);
			end = json_loadb(rr.data, rr.length, 0, NULL);
		}
	rawfile_close(r);
	return end;
}
