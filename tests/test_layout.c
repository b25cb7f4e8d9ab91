/* SPDX-License-Identifier: MIT */
/* decoder/layout.c: every validation rule with its message; JSON round trip. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decoder/layout.h"
#include "lib/testenv.h"

#define HEAD "\"format\":\"spmtap-layout\",\"version\":1,\"gfx\":\"gfx942\""
#define GEOM "\"num_se\":4,\"global_lines\":2,\"se_lines\":2"

static const char *GOOD =
	"{" HEAD "," GEOM ",\"counters\":["
	"{\"name\":\"TCC_HIT\",\"segment\":\"global\",\"slot\":4},"
	"{\"name\":\"SQ_WAVES\",\"segment\":\"se\",\"slot\":0,\"hi_slot\":16},"
	"{\"name\":\"TA_BUSY\",\"segment\":\"se\",\"slot\":31}]}";

/* Parse `json`, expect failure with a message containing every `want` (NULL-terminated). */
static void refuse(const char *json, const char *want1, const char *want2)
{
	struct dec_layout *l = (void *)1;
	char err[256] = "";
	int r = dec_layout_parse(json, strlen(json), &l, err, sizeof(err));
	CU_ASSERT_EQUAL(r, -EINVAL);
	CU_ASSERT_PTR_NULL(l);
	bool ok = strstr(err, want1) && (!want2 || strstr(err, want2));
	if (!ok)
		fprintf(stderr, "\n  message \"%s\" lacks \"%s\"/\"%s\"\n", err, want1,
			want2 ? want2 : "");
	CU_ASSERT_TRUE(ok);
}

static char *with_counters(const char *geom, const char *counters)
{
	static char buf[4096];
	snprintf(buf, sizeof(buf), "{" HEAD ",%s,\"counters\":[%s]}", geom, counters);
	return buf;
}

#define C(name, seg, slot) "{\"name\":\"" name "\",\"segment\":\"" seg "\",\"slot\":" #slot "}"
#define C32(name, seg, slot, hi) \
	"{\"name\":\"" name "\",\"segment\":\"" seg "\",\"slot\":" #slot ",\"hi_slot\":" #hi "}"

static void test_good(void)
{
	struct dec_layout *l;
	char err[256];
	CU_ASSERT_EQUAL_FATAL(dec_layout_parse(GOOD, strlen(GOOD), &l, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(l->gfx, "gfx942");
	CU_ASSERT_EQUAL(l->num_se, 4);
	CU_ASSERT_EQUAL(l->global_lines, 2);
	CU_ASSERT_EQUAL(l->se_lines, 2);
	CU_ASSERT_EQUAL(l->sample_bytes, 320);
	CU_ASSERT_EQUAL(l->ncounters, 3);
	CU_ASSERT_STRING_EQUAL(l->counters[1].name, "SQ_WAVES");
	CU_ASSERT_EQUAL(l->counters[1].segment, DEC_SEG_SE);
	CU_ASSERT_EQUAL(l->counters[1].hi_slot, 16);
	CU_ASSERT_EQUAL(l->counters[0].hi_slot, -1);
	dec_layout_free(l);
	/* Mesa's minimum: one global line, no SE lines */
	const char *j = with_counters("\"num_se\":4,\"global_lines\":1,\"se_lines\":0",
				      C("A", "global", 15));
	CU_ASSERT_EQUAL_FATAL(dec_layout_parse(j, strlen(j), &l, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(l->sample_bytes, 32);
	dec_layout_free(l);
}

static void test_round_trip(void)
{
	struct dec_layout *l, *m;
	char err[256];
	CU_ASSERT_EQUAL_FATAL(dec_layout_parse(GOOD, strlen(GOOD), &l, err, sizeof(err)), 0);
	char *s = dec_layout_to_json(l);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL_FATAL(dec_layout_parse(s, strlen(s), &m, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(m->gfx, l->gfx);
	CU_ASSERT_EQUAL(m->sample_bytes, l->sample_bytes);
	CU_ASSERT_EQUAL(m->ncounters, l->ncounters);
	CU_ASSERT_EQUAL(memcmp(m->counters, l->counters, l->ncounters * sizeof(*l->counters)), 0);
	/* a 16-bit counter is written without hi_slot */
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "\"hi_slot\":16"));
	CU_ASSERT_PTR_NULL(strstr(s, "-1"));
	char *s2 = dec_layout_to_json(m);
	CU_ASSERT_STRING_EQUAL(s, s2);
	free(s);
	free(s2);
	dec_layout_free(l);
	dec_layout_free(m);
}

static void test_top_level(void)
{
	refuse("{", "not valid JSON", NULL);
	refuse("[1]", "must be a JSON object", NULL);
	refuse("{\"version\":1}", "format: missing", NULL);
	refuse("{\"format\":\"spmtap-raw\",\"version\":1}", "format: \"spmtap-raw\"", NULL);
	refuse("{\"format\":3}", "format: must be a string", NULL);
	refuse("{\"format\":\"spmtap-layout\"}", "version: missing", NULL);
	refuse("{\"format\":\"spmtap-layout\",\"version\":2}", "version: 2 is not supported", NULL);
	refuse("{\"format\":\"spmtap-layout\",\"version\":\"1\"}", "version: must be an integer",
	       "a string");
	refuse("{" HEAD "," GEOM ",\"counters\":[],\"extra\":1}", "unknown field \"extra\"", NULL);
	refuse("{\"format\":\"spmtap-layout\",\"version\":1," GEOM ",\"counters\":[]}",
	       "gfx: missing", NULL);
	refuse("{\"format\":\"spmtap-layout\",\"version\":1,\"gfx\":7}", "gfx: must be a string",
	       NULL);
	refuse("{" HEAD ",\"num_se\":0,\"global_lines\":2,\"se_lines\":2,\"counters\":[]}",
	       "num_se: 0 is out of range", NULL);
	refuse("{" HEAD ",\"num_se\":4.0,\"global_lines\":2,\"se_lines\":2,\"counters\":[]}",
	       "num_se: must be an integer", "fraction");
	refuse("{" HEAD ",\"global_lines\":2,\"se_lines\":2,\"counters\":[]}", "num_se: missing",
	       NULL);
	refuse("{" HEAD ",\"num_se\":4,\"global_lines\":0,\"se_lines\":2,\"counters\":[]}",
	       "global_lines: must be at least 1", "timestamp");
	refuse("{" HEAD ",\"num_se\":4,\"global_lines\":32,\"se_lines\":2,\"counters\":[]}",
	       "global_lines: 32 is out of range", NULL);
	refuse("{" HEAD ",\"num_se\":4,\"global_lines\":2,\"se_lines\":-1,\"counters\":[]}",
	       "se_lines: -1 is out of range", NULL);
	refuse(with_counters("\"num_se\":32,\"global_lines\":2,\"se_lines\":8", C("A", "se", 1)),
	       "258 lines", "255");
	refuse("{" HEAD "," GEOM "}", "counters: missing", NULL);
	refuse("{" HEAD "," GEOM ",\"counters\":{}}", "counters: must be an array", NULL);
	refuse("{" HEAD "," GEOM ",\"counters\":[]}", "counters: must name at least one", NULL);
	refuse("{" HEAD "," GEOM ",\"gfx\":\"x\",\"counters\":[]}", "not valid JSON", "duplicate");
}

static void test_counter_fields(void)
{
	refuse(with_counters(GEOM, "3"), "counters[0]: must be an object", NULL);
	refuse(with_counters(GEOM, "{\"segment\":\"se\",\"slot\":1}"), "counters[0]: name: missing",
	       NULL);
	refuse(with_counters(GEOM, "{\"name\":5}"), "counters[0]: name: must be a string", NULL);
	refuse(with_counters(GEOM, C("", "se", 1)), "counters[0]: name must not be empty", NULL);
	refuse(with_counters(GEOM, C("A,B", "se", 1)), "counters[0] \"A,B\": name may only hold",
	       NULL);
	refuse(with_counters(GEOM, C("timestamp", "se", 1)), "\"timestamp\": name is reserved",
	       NULL);
	refuse(with_counters(GEOM, C("A", "se", 1) "," C("B", "se", 2) "," C("A", "global", 5)),
	       "counters[2] \"A\": duplicate name", "counters[0]");
	refuse(with_counters(GEOM, "{\"name\":\"A\",\"slot\":1}"), "counters[0] \"A\": segment: "
	       "missing", NULL);
	refuse(with_counters(GEOM, C("A", "sa", 1)), "counters[0] \"A\": segment: \"sa\"", NULL);
	refuse(with_counters(GEOM, "{\"name\":\"A\",\"segment\":\"se\"}"),
	       "counters[0] \"A\": slot: missing", NULL);
	refuse(with_counters(GEOM, "{\"name\":\"A\",\"segment\":\"se\",\"slot\":\"3\"}"),
	       "counters[0] \"A\": slot: must be an integer", NULL);
	refuse(with_counters(GEOM, "{\"name\":\"A\",\"segment\":\"se\",\"slot\":true}"),
	       "slot: must be an integer, got a boolean", NULL);
	refuse(with_counters(GEOM, "{\"name\":\"A\",\"segment\":\"se\",\"slot\":1,\"hi_slot\":null}"),
	       "counters[0] \"A\": hi_slot: must be an integer", NULL);
	refuse(with_counters(GEOM, "{\"name\":\"A\",\"segment\":\"se\",\"slot\":1,\"hislot\":17}"),
	       "counters[0] \"A\": unknown field \"hislot\"", NULL);
}

static void test_slots(void)
{
	/* timestamp slots, for slot and hi_slot */
	refuse(with_counters(GEOM, C("T", "global", 3)), "counters[0] \"T\": slot 3 is a timestamp slot",
	       NULL);
	refuse(with_counters(GEOM, C32("T", "global", 20, 0)), "\"T\": hi_slot 0 is a timestamp slot",
	       NULL);
	/* se slots are not timestamp slots */
	struct dec_layout *l;
	const char *j = with_counters(GEOM, C("S", "se", 0));
	CU_ASSERT_EQUAL(dec_layout_parse(j, strlen(j), &l, NULL, 0), 0);
	dec_layout_free(l);
	/* ranges: global < global_lines * 16, se < se_lines * 16 */
	refuse(with_counters(GEOM, C("G", "global", 32)), "counters[0] \"G\": slot 32 is outside the "
	       "global segment", "slots 0..31");
	refuse(with_counters(GEOM, C("S", "se", 32)), "\"S\": slot 32 is outside the se segment",
	       "2 lines");
	refuse(with_counters(GEOM, C32("S", "se", 1, 40)), "\"S\": hi_slot 40 is outside", NULL);
	refuse(with_counters(GEOM, C("S", "se", -1)), "\"S\": slot: -1 is out of range", NULL);
	refuse(with_counters("\"num_se\":4,\"global_lines\":1,\"se_lines\":0", C("S", "se", 0)),
	       "\"S\": slot 0 is outside the se segment", "0 lines");
	/* overlaps, hi_slot included, per segment kind */
	refuse(with_counters(GEOM, C("A", "se", 5) "," C("B", "se", 5)),
	       "counters[1] \"B\": slot 5 overlaps the slot of \"A\"", "se segment");
	refuse(with_counters(GEOM, C32("A", "se", 1, 17) "," C("B", "se", 17)),
	       "counters[1] \"B\": slot 17 overlaps the hi_slot of \"A\"", NULL);
	refuse(with_counters(GEOM, C("A", "global", 20) "," C32("B", "global", 4, 20)),
	       "counters[1] \"B\": hi_slot 20 overlaps the slot of \"A\"", "global segment");
	refuse(with_counters(GEOM, C32("A", "se", 3, 3)), "\"A\": hi_slot 3 overlaps the slot of \"A\"",
	       NULL);
	/* the same slot number in different segments is no overlap */
	j = with_counters(GEOM, C("A", "global", 5) "," C("B", "se", 5));
	CU_ASSERT_EQUAL(dec_layout_parse(j, strlen(j), &l, NULL, 0), 0);
	dec_layout_free(l);
}

static void test_validate_in_memory(void)
{
	struct dec_counter c[2] = {
		{.name = "A", .segment = DEC_SEG_GLOBAL, .slot = 4, .hi_slot = -1},
		{.name = "B", .segment = DEC_SEG_SE, .slot = 0, .hi_slot = 16},
	};
	struct dec_layout l = {.gfx = "gfx90a", .num_se = 8, .global_lines = 2, .se_lines = 2,
			       .ncounters = 2, .counters = c};
	char err[256];
	CU_ASSERT_EQUAL(dec_layout_validate(&l, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(l.sample_bytes, (2 + 2 * 8) * 32);
	c[1].segment = 7;
	CU_ASSERT_EQUAL(dec_layout_validate(&l, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "segment must be"));
}

static void test_load(void)
{
	struct dec_layout *l;
	char err[512];
	CU_ASSERT_EQUAL(dec_layout_load("/nonexistent/l.json", &l, err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/l.json"));
	char path[] = "/tmp/spmtap-layout-XXXXXX";
	int fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fputs(with_counters(GEOM, C("A", "se", 40)), f);
	fclose(f);
	CU_ASSERT_EQUAL(dec_layout_load(path, &l, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "slot 40 is outside"));
	f = fopen(path, "w");
	fputs(GOOD, f);
	fclose(f);
	CU_ASSERT_EQUAL(dec_layout_load(path, &l, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(l->ncounters, 3);
	dec_layout_free(l);
	unlink(path);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{"layout/good", test_good, NULL},
		{"layout/round_trip", test_round_trip, NULL},
		{"layout/top_level", test_top_level, NULL},
		{"layout/counter_fields", test_counter_fields, NULL},
		{"layout/slots", test_slots, NULL},
		{"layout/validate_in_memory", test_validate_in_memory, NULL},
		{"layout/load", test_load, NULL},
		{NULL, NULL, NULL},
	};
	return testenv_run_suite("layout", cases, argc, argv);
}
