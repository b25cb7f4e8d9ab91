/* SPDX-License-Identifier: MIT */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spm_truth.h"

#define ST_MAGIC 0x52545053u

void truth_free(struct truth *t)
{
	for (size_t i = 0; i < t->nlay; i++)
		free(t->lay[i].slots);
	free(t->lay);
	free(t->s);
	free(t->pool);
	memset(t, 0, sizeof(*t));
}

static bool parse_layout_line(struct truth *t, const char *line)
{
	json_t *j = json_loads(line, 0, NULL);
	if (!j)
		return false;
	struct st_layout L = { 0 };
	L.pid = (uint32_t)json_integer_value(json_object_get(j, "pid"));
	L.id = (uint32_t)json_integer_value(json_object_get(j, "layout_id"));
	L.gpu_id = (uint32_t)json_integer_value(json_object_get(j, "gpu_id"));
	L.xcc = (uint32_t)json_integer_value(json_object_get(j, "xcc"));
	L.nvals = (uint32_t)json_integer_value(json_object_get(j, "nvals"));
	json_t *slots = json_object_get(j, "slots");
	L.slots = calloc(json_array_size(slots) + 1, sizeof(*L.slots));
	for (size_t i = 0; i < json_array_size(slots); i++) {
		json_t *e = json_array_get(slots, i);
		struct st_slot *s = &L.slots[i];
		s->se = (int)json_integer_value(json_object_get(e, "se"));
		snprintf(s->block, sizeof(s->block), "%s", json_string_value(json_object_get(e, "block")));
		const char *nm = json_string_value(json_object_get(e, "name"));
		snprintf(s->name, sizeof(s->name), "%s", nm ? nm : "");
		s->instance = (unsigned)json_integer_value(json_object_get(e, "instance"));
		s->event = (unsigned)json_integer_value(json_object_get(e, "event"));
		s->width = (unsigned)json_integer_value(json_object_get(e, "width"));
		const char *part = json_string_value(json_object_get(e, "part"));
		s->value = part && strcmp(part, "hi") != 0;
		s->clamp = json_is_true(json_object_get(e, "clamp"));
	}
	json_decref(j);
	t->lay = realloc(t->lay, (t->nlay + 1) * sizeof(*t->lay));
	t->lay[t->nlay++] = L;
	return true;
}

/* The last layout of that process and id read so far. */
static int find_layout(const struct truth *t, uint32_t pid, uint32_t id)
{
	for (size_t i = t->nlay; i-- > 0;)
		if (t->lay[i].pid == pid && t->lay[i].id == id)
			return (int)i;
	return -1;
}

/* JSON layout lines and fixed-size binary sample records, interleaved. */
bool truth_load(const char *file, struct truth *t)
{
	memset(t, 0, sizeof(*t));
	FILE *f = fopen(file, "rb");
	if (!f)
		return false;
	size_t cap = 1 << 20, len = 0;
	char *line = malloc(cap);
	for (;;) {
		int c = fgetc(f);
		if (c == EOF)
			break;
		if (c == '{') {
			len = 0;
			line[len++] = (char)c;
			while ((c = fgetc(f)) != EOF && c != '\n') {
				if (len + 2 >= cap)
					line = realloc(line, cap *= 2);
				line[len++] = (char)c;
			}
			line[len] = 0;
			if (!parse_layout_line(t, line))
				goto bad;
			continue;
		}
		ungetc(c, f);
		uint32_t h[6];
		uint64_t h2[2];
		if (fread(h, sizeof(h), 1, f) != 1 || fread(h2, sizeof(h2), 1, f) != 1 || h[0] != ST_MAGIC)
			goto bad;
		int li = find_layout(t, h[1], h[2]);
		if (li < 0 || h[5] != t->lay[li].nvals)
			goto bad;
		if (t->npool + h[5] > t->poolcap) {
			t->poolcap = (t->poolcap + h[5]) * 2;
			t->pool = realloc(t->pool, t->poolcap * sizeof(uint64_t));
		}
		if (h[5] && fread(t->pool + t->npool, 8, h[5], f) != h[5])
			goto bad;
		if (t->n == t->cap) {
			t->cap = t->cap ? t->cap * 2 : 4096;
			t->s = realloc(t->s, t->cap * sizeof(*t->s));
		}
		/* vals holds the pool index until the pool stops moving (below). */
		t->s[t->n++] = (struct st_sample){ .xcc = h[3], .flags = h[4], .layout = (uint32_t)li,
						   .seq = h2[0], .ticks = h2[1],
						   .vals = (uint64_t *)(uintptr_t)t->npool };
		t->npool += h[5];
	}
	for (size_t i = 0; i < t->n; i++)
		t->s[i].vals = t->pool + (uintptr_t)t->s[i].vals;
	free(line);
	fclose(f);
	return true;
bad:
	free(line);
	fclose(f);
	truth_free(t);
	fprintf(stderr, "\n  %s: malformed sample truth\n", file);
	return false;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct st_sample *x = a, *y = b;
	if (x->xcc != y->xcc)
		return x->xcc < y->xcc ? -1 : 1;
	return x->ticks < y->ticks ? -1 : x->ticks > y->ticks;
}

void truth_sort(struct truth *t)
{
	qsort(t->s, t->n, sizeof(*t->s), cmp_sample);
}
