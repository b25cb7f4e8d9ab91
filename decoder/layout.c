/* SPDX-License-Identifier: MIT */
/* Layout descriptor: JSON parsing, validation and writing (docs/layout-format.md). */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/layout.h"
#include "log.h"

#define FORMAT_NAME "spmtap-layout"
#define FORMAT_VERSION 1

static const char *json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number with a fraction";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "?";
}

/*
 * Unknown keys are refused rather than ignored: a misspelt "hi_slot" would
 * otherwise silently turn a 32-bit counter into a 16-bit one.
 */
static int check_keys(json_t *obj, const char *const *known, const char *where, char *err,
		      size_t errlen)
{
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v) {
		bool ok = false;
		for (const char *const *k = known; *k; k++)
			ok |= !strcmp(key, *k);
		if (!ok)
			return spmtap_seterr(err, errlen, EINVAL, "%sunknown field \"%s\"", where, key);
	}
	return 0;
}

static int get_int(json_t *obj, const char *key, bool required, int64_t lo, int64_t hi,
		   int64_t *out, const char *where, char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);
	if (!v) {
		if (!required)
			return 1;
		return spmtap_seterr(err, errlen, EINVAL, "%s%s: missing", where, key);
	}
	if (!json_is_integer(v))
		return spmtap_seterr(err, errlen, EINVAL, "%s%s: must be an integer, got %s", where,
				     key, json_type_name(v));
	json_int_t x = json_integer_value(v);
	if (x < lo || x > hi)
		return spmtap_seterr(err, errlen, EINVAL, "%s%s: %" PRId64 " is out of range [%" PRId64
				     ", %" PRId64 "]", where, key, (int64_t)x, lo, hi);
	*out = x;
	return 0;
}

static int get_str(json_t *obj, const char *key, const char **out, const char *where, char *err,
		   size_t errlen)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return spmtap_seterr(err, errlen, EINVAL, "%s%s: missing", where, key);
	if (!json_is_string(v))
		return spmtap_seterr(err, errlen, EINVAL, "%s%s: must be a string, got %s", where, key,
				     json_type_name(v));
	*out = json_string_value(v);
	return 0;
}

/* Names become CSV header cells and "NAME[seN]" columns: keep them free of quoting. */
static bool name_char_ok(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-' || c == ':' || c == '+' || c == '/' || c == '[' ||
	       c == ']';
}

static const char *seg_name(enum dec_segment s)
{
	return s == DEC_SEG_GLOBAL ? "global" : "se";
}

/*
 * A slot map per segment kind: every SE segment has the same shape, so one
 * map serves all of them.  owner = counter index * 2 + (1 for a hi_slot).
 */
#define SEG_SLOTS (DEC_MAX_SEG_LINES * DEC_SLOTS_PER_LINE)

static int claim(int *map, uint32_t ci, bool hi, const struct dec_layout *l, int32_t slot,
		 char *err, size_t errlen)
{
	const struct dec_counter *c = &l->counters[ci];
	const char *field = hi ? "hi_slot" : "slot";
	uint32_t lines = c->segment == DEC_SEG_GLOBAL ? l->global_lines : l->se_lines;
	uint32_t nslots = lines * DEC_SLOTS_PER_LINE;
	if (slot < 0 || (uint32_t)slot >= nslots)
		return spmtap_seterr(err, errlen, EINVAL,
				     "counters[%u] \"%s\": %s %d is outside the %s segment "
				     "(%u line%s = slots 0..%d)", ci, c->name, field, (int)slot,
				     seg_name(c->segment), lines, lines == 1 ? "" : "s",
				     (int)nslots - 1);
	if (c->segment == DEC_SEG_GLOBAL && (uint32_t)slot < DEC_TS_SLOTS)
		return spmtap_seterr(err, errlen, EINVAL,
				     "counters[%u] \"%s\": %s %d is a timestamp slot "
				     "(global slots 0..3 hold the timestamp)", ci, c->name, field,
				     (int)slot);
	int o = map[slot];
	if (o >= 0)
		return spmtap_seterr(err, errlen, EINVAL,
				     "counters[%u] \"%s\": %s %d overlaps the %s of \"%s\" in the "
				     "%s segment", ci, c->name, field, (int)slot,
				     (o & 1) ? "hi_slot" : "slot", l->counters[o >> 1].name,
				     seg_name(c->segment));
	map[slot] = (int)(ci * 2 + hi);
	return 0;
}

int dec_layout_validate(struct dec_layout *l, char *err, size_t errlen)
{
	if (!l)
		return spmtap_seterr(err, errlen, EINVAL, "no layout");
	if (!l->gfx[0])
		return spmtap_seterr(err, errlen, EINVAL, "gfx: must not be empty");
	if (l->num_se < 1 || l->num_se > DEC_MAX_SE)
		return spmtap_seterr(err, errlen, EINVAL, "num_se: %u is out of range [1, %u]",
				     l->num_se, DEC_MAX_SE);
	if (l->global_lines < 1)
		return spmtap_seterr(err, errlen, EINVAL,
				     "global_lines: must be at least 1 (the timestamp is in global "
				     "line 0)");
	if (l->global_lines > DEC_MAX_SEG_LINES)
		return spmtap_seterr(err, errlen, EINVAL, "global_lines: %u is out of range [1, %u]",
				     l->global_lines, DEC_MAX_SEG_LINES);
	if (l->se_lines > DEC_MAX_SEG_LINES)
		return spmtap_seterr(err, errlen, EINVAL, "se_lines: %u is out of range [0, %u]",
				     l->se_lines, DEC_MAX_SEG_LINES);
	uint32_t lines = l->global_lines + l->se_lines * l->num_se;
	if (lines > DEC_MAX_SAMPLE_LINES)
		return spmtap_seterr(err, errlen, EINVAL,
				     "global_lines + se_lines * num_se = %u lines, more than the %u a "
				     "sample can have", lines, DEC_MAX_SAMPLE_LINES);
	if (l->ncounters == 0 || !l->counters)
		return spmtap_seterr(err, errlen, EINVAL, "counters: must name at least one counter");

	int gmap[SEG_SLOTS], smap[SEG_SLOTS];
	memset(gmap, 0xff, sizeof(gmap));
	memset(smap, 0xff, sizeof(smap));
	for (uint32_t i = 0; i < l->ncounters; i++) {
		struct dec_counter *c = &l->counters[i];
		size_t n = strnlen(c->name, sizeof(c->name));
		if (n == 0)
			return spmtap_seterr(err, errlen, EINVAL, "counters[%u]: name must not be empty",
					     i);
		if (n > DEC_MAX_NAME)
			return spmtap_seterr(err, errlen, EINVAL,
					     "counters[%u]: name is longer than %u characters", i,
					     DEC_MAX_NAME);
		for (size_t k = 0; k < n; k++)
			if (!name_char_ok(c->name[k]))
				return spmtap_seterr(err, errlen, EINVAL,
						     "counters[%u] \"%s\": name may only hold letters, "
						     "digits and _ . - : + / [ ]", i, c->name);
		if (!strcmp(c->name, "timestamp") || !strcmp(c->name, "xcc"))
			return spmtap_seterr(err, errlen, EINVAL,
					     "counters[%u] \"%s\": name is reserved for a CSV column",
					     i, c->name);
		for (uint32_t j = 0; j < i; j++)
			if (!strcmp(l->counters[j].name, c->name))
				return spmtap_seterr(err, errlen, EINVAL,
						     "counters[%u] \"%s\": duplicate name (also "
						     "counters[%u])", i, c->name, j);
		if (c->segment != DEC_SEG_GLOBAL && c->segment != DEC_SEG_SE)
			return spmtap_seterr(err, errlen, EINVAL,
					     "counters[%u] \"%s\": segment must be \"global\" or \"se\"",
					     i, c->name);
		int *map = c->segment == DEC_SEG_GLOBAL ? gmap : smap;
		int r = claim(map, i, false, l, c->slot, err, errlen);
		if (r)
			return r;
		if (c->hi_slot != -1) {
			r = claim(map, i, true, l, c->hi_slot, err, errlen);
			if (r)
				return r;
		}
	}
	l->sample_bytes = lines * DEC_LINE_BYTES;
	return 0;
}

static int parse_counter(json_t *jc, uint32_t i, struct dec_counter *c, char *err, size_t errlen)
{
	char where[32];
	snprintf(where, sizeof(where), "counters[%u]: ", i);
	if (!json_is_object(jc))
		return spmtap_seterr(err, errlen, EINVAL, "counters[%u]: must be an object, got %s", i,
				     json_type_name(jc));
	const char *name;
	int r = get_str(jc, "name", &name, where, err, errlen);
	if (r)
		return r;
	if (strlen(name) > DEC_MAX_NAME)
		return spmtap_seterr(err, errlen, EINVAL,
				     "counters[%u]: name is longer than %u characters", i,
				     DEC_MAX_NAME);
	if (strlen(name) != json_string_length(json_object_get(jc, "name")))
		return spmtap_seterr(err, errlen, EINVAL, "counters[%u]: name holds a NUL", i);
	snprintf(c->name, sizeof(c->name), "%s", name);
	/* From here on the counter has a name: use it in messages. */
	char w2[DEC_MAX_NAME + 32];
	snprintf(w2, sizeof(w2), "counters[%u] \"%s\": ", i, c->name);
	static const char *const keys[] = {"name", "segment", "slot", "hi_slot", NULL};
	r = check_keys(jc, keys, w2, err, errlen);
	if (r)
		return r;
	const char *seg;
	r = get_str(jc, "segment", &seg, w2, err, errlen);
	if (r)
		return r;
	if (!strcmp(seg, "global"))
		c->segment = DEC_SEG_GLOBAL;
	else if (!strcmp(seg, "se"))
		c->segment = DEC_SEG_SE;
	else
		return spmtap_seterr(err, errlen, EINVAL,
				     "%ssegment: \"%s\" is neither \"global\" nor \"se\"", w2, seg);
	int64_t v;
	/* Range is checked against the segment in dec_layout_validate; here only
	 * keep the value representable. */
	r = get_int(jc, "slot", true, 0, 0xFFFF, &v, w2, err, errlen);
	if (r)
		return r;
	c->slot = (int32_t)v;
	r = get_int(jc, "hi_slot", false, 0, 0xFFFF, &v, w2, err, errlen);
	if (r < 0)
		return r;
	c->hi_slot = r ? -1 : (int32_t)v;
	return 0;
}

int dec_layout_parse(const char *json, size_t len, struct dec_layout **out, char *err,
		     size_t errlen)
{
	*out = NULL;
	json_error_t je;
	/* jansson refuses embedded NULs unless asked; a descriptor never has one. */
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return spmtap_seterr(err, errlen, EINVAL, "not valid JSON (line %d, column %d): %s",
				     je.line, je.column, je.text);
	int r;
	struct dec_layout *l = calloc(1, sizeof(*l));
	if (!l) {
		r = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
		goto out;
	}
	if (!json_is_object(root)) {
		r = spmtap_seterr(err, errlen, EINVAL, "the descriptor must be a JSON object, got %s",
				  json_type_name(root));
		goto out;
	}
	const char *s;
	if ((r = get_str(root, "format", &s, "", err, errlen)))
		goto out;
	if (strcmp(s, FORMAT_NAME)) {
		r = spmtap_seterr(err, errlen, EINVAL, "format: \"%s\" is not \"" FORMAT_NAME "\"", s);
		goto out;
	}
	int64_t v;
	if ((r = get_int(root, "version", true, INT64_MIN, INT64_MAX, &v, "", err, errlen)))
		goto out;
	if (v != FORMAT_VERSION) {
		r = spmtap_seterr(err, errlen, EINVAL,
				  "version: %" PRId64 " is not supported (this reader knows %d)", v,
				  FORMAT_VERSION);
		goto out;
	}
	static const char *const keys[] = {"format", "version", "gfx", "num_se", "global_lines",
					   "se_lines", "counters", NULL};
	if ((r = check_keys(root, keys, "", err, errlen)))
		goto out;
	if ((r = get_str(root, "gfx", &s, "", err, errlen)))
		goto out;
	if (strlen(s) > DEC_MAX_GFX) {
		r = spmtap_seterr(err, errlen, EINVAL, "gfx: longer than %u characters", DEC_MAX_GFX);
		goto out;
	}
	snprintf(l->gfx, sizeof(l->gfx), "%s", s);
	if ((r = get_int(root, "num_se", true, 1, DEC_MAX_SE, &v, "", err, errlen)))
		goto out;
	l->num_se = (uint32_t)v;
	if ((r = get_int(root, "global_lines", true, INT64_MIN, INT64_MAX, &v, "", err, errlen)))
		goto out;
	if (v < 1) {
		r = spmtap_seterr(err, errlen, EINVAL,
				  "global_lines: must be at least 1 (the timestamp is in global "
				  "line 0)");
		goto out;
	}
	if (v > DEC_MAX_SEG_LINES) {
		r = spmtap_seterr(err, errlen, EINVAL, "global_lines: %" PRId64
				  " is out of range [1, %u]", v, DEC_MAX_SEG_LINES);
		goto out;
	}
	l->global_lines = (uint32_t)v;
	if ((r = get_int(root, "se_lines", true, 0, DEC_MAX_SEG_LINES, &v, "", err, errlen)))
		goto out;
	l->se_lines = (uint32_t)v;
	json_t *jcs = json_object_get(root, "counters");
	if (!jcs) {
		r = spmtap_seterr(err, errlen, EINVAL, "counters: missing");
		goto out;
	}
	if (!json_is_array(jcs)) {
		r = spmtap_seterr(err, errlen, EINVAL, "counters: must be an array, got %s",
				  json_type_name(jcs));
		goto out;
	}
	size_t n = json_array_size(jcs);
	if (n == 0) {
		r = spmtap_seterr(err, errlen, EINVAL, "counters: must name at least one counter");
		goto out;
	}
	/* Every slot of a sample could hold at most one counter. */
	if (n > DEC_MAX_SAMPLE_LINES * DEC_SLOTS_PER_LINE) {
		r = spmtap_seterr(err, errlen, EINVAL, "counters: %zu entries, more than a sample "
				  "has slots", n);
		goto out;
	}
	l->counters = calloc(n, sizeof(*l->counters));
	if (!l->counters) {
		r = spmtap_seterr(err, errlen, ENOMEM, "out of memory");
		goto out;
	}
	l->ncounters = (uint32_t)n;
	for (size_t i = 0; i < n; i++)
		if ((r = parse_counter(json_array_get(jcs, i), (uint32_t)i, &l->counters[i], err,
				       errlen)))
			goto out;
	r = dec_layout_validate(l, err, errlen);
out:
	json_decref(root);
	if (r) {
		dec_layout_free(l);
		return r;
	}
	*out = l;
	return 0;
}

int dec_layout_load(const char *path, struct dec_layout **out, char *err, size_t errlen)
{
	*out = NULL;
	FILE *f = fopen(path, "rb");
	if (!f)
		return spmtap_seterr(err, errlen, errno, "%s: %s", path, strerror(errno));
	/* A descriptor is a few KiB; 1 MiB bounds what a wrong path can cost. */
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap);
	if (!buf) {
		fclose(f);
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	}
	n = fread(buf, 1, cap, f);
	int rerr = ferror(f) ? errno : 0;
	bool big = n == cap && fgetc(f) != EOF;
	fclose(f);
	int r;
	if (rerr)
		r = spmtap_seterr(err, errlen, rerr ? rerr : EIO, "%s: read failed: %s", path,
				  strerror(rerr));
	else if (big)
		r = spmtap_seterr(err, errlen, EFBIG, "%s: larger than 1 MiB, not a layout descriptor",
				  path);
	else {
		char inner[256];
		r = dec_layout_parse(buf, n, out, inner, sizeof(inner));
		if (r)
			spmtap_seterr(err, errlen, r, "%s: %s", path, inner);
	}
	free(buf);
	return r;
}

char *dec_layout_to_json(const struct dec_layout *l)
{
	json_t *root = json_object();
	json_t *cs = json_array();
	if (!root || !cs)
		goto nomem;
	if (json_object_set_new(root, "format", json_string(FORMAT_NAME)) ||
	    json_object_set_new(root, "version", json_integer(FORMAT_VERSION)) ||
	    json_object_set_new(root, "gfx", json_string(l->gfx)) ||
	    json_object_set_new(root, "num_se", json_integer(l->num_se)) ||
	    json_object_set_new(root, "global_lines", json_integer(l->global_lines)) ||
	    json_object_set_new(root, "se_lines", json_integer(l->se_lines)))
		goto nomem;
	for (uint32_t i = 0; i < l->ncounters; i++) {
		const struct dec_counter *c = &l->counters[i];
		json_t *jc = json_object();
		if (!jc || json_array_append_new(cs, jc) ||
		    json_object_set_new(jc, "name", json_string(c->name)) ||
		    json_object_set_new(jc, "segment", json_string(seg_name(c->segment))) ||
		    json_object_set_new(jc, "slot", json_integer(c->slot)))
			goto nomem;
		if (c->hi_slot >= 0 && json_object_set_new(jc, "hi_slot", json_integer(c->hi_slot)))
			goto nomem;
	}
	if (json_object_set(root, "counters", cs))
		goto nomem;
	json_decref(cs);
	/* Keys in the order of docs/layout-format.md, so written files diff cleanly. */
	char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_COMPACT);
	json_decref(root);
	if (!s)
		errno = ENOMEM;
	return s;
nomem:
	json_decref(cs);
	json_decref(root);
	errno = ENOMEM;
	return NULL;
}

void dec_layout_free(struct dec_layout *l)
{
	if (!l)
		return;
	free(l->counters);
	free(l);
}
