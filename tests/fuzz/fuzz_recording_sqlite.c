/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for reading a SQLite recording back
 * (collector/analysis/recording_sqlite.c): a valid spmtap database (schema
 * version 2; tests/test_recording.c reads version 1), built once, is
 * damaged by the input (a length to cut it to, then byte patches) and loaded as `spmtap report run.db` does.  Whatever loads must give a
 * sensor trace and counters per phase without crashing; whatever does not
 * must say why.  Random bytes would never form a SQLite file, so the input
 * edits one rather than being one.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/analysis/phase_counters.h"
#include "collector/analysis/recording.h"
#include "collector/analysis/sensor_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static unsigned char *seed;
static size_t seedlen;

/* Schema version 2 as write_sqlite.c makes it (a table per stream, the views over them), in 1 KiB pages. */
static const char schema[] =
	"PRAGMA page_size=1024; PRAGMA application_id=1397771604; PRAGMA user_version=2;"
	"CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value);"
	"CREATE TABLE stream(id INTEGER PRIMARY KEY, source TEXT NOT NULL, gpu INTEGER NOT NULL, gpu_id INTEGER NOT "
	"NULL, xcc INTEGER NOT NULL, device_name TEXT, tick_domain TEXT, ncols INTEGER NOT NULL, sample_table TEXT NOT "
	"NULL);"
	"CREATE TABLE metric(id INTEGER PRIMARY KEY, stream_id INTEGER NOT NULL, col INTEGER NOT NULL, name TEXT NOT "
	"NULL, unit TEXT, type TEXT NOT NULL, track TEXT NOT NULL, UNIQUE (stream_id, col));"
	"CREATE TABLE slice(id INTEGER PRIMARY KEY, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, name TEXT, "
	"track INTEGER NOT NULL, category TEXT NOT NULL, depth INTEGER NOT NULL, pid INTEGER NOT NULL);"
	"CREATE TABLE samples_0(idx INTEGER NOT NULL, host_ns INTEGER NOT NULL, ticks INTEGER, v0, v1, "
	"PRIMARY KEY (host_ns, idx)) WITHOUT ROWID;"
	"CREATE TABLE samples_1(idx INTEGER NOT NULL, host_ns INTEGER NOT NULL, ticks INTEGER, v0, v1, "
	"PRIMARY KEY (host_ns, idx)) WITHOUT ROWID;"
	"CREATE VIEW sample AS"
	"  SELECT m.id AS metric_id, x.host_ns AS host_ns, x.idx AS idx, x.ticks AS ticks, "
	"    CASE m.col WHEN 0 THEN x.v0 WHEN 1 THEN x.v1 END AS value"
	"  FROM metric m CROSS JOIN samples_0 x WHERE m.stream_id = 0"
	"  UNION ALL"
	"  SELECT m.id AS metric_id, x.host_ns AS host_ns, x.idx AS idx, x.ticks AS ticks, "
	"    CASE m.col WHEN 0 THEN x.v0 WHEN 1 THEN x.v1 END AS value"
	"  FROM metric m CROSS JOIN samples_1 x WHERE m.stream_id = 1;"
	"INSERT INTO meta VALUES ('spm_clock_hz', 100000000.0), ('schema_version', 2), ('recording_meta', "
	"'{\"complete\": true, "
	"\"extra\": {\"streams\": [{\"source\": \"spm\", \"gpu\": 0, \"xcc\": 0, \"rows\": 200}, {\"source\": \"smi\", "
	"\"gpu\": 0, \"xcc\": -1, \"rows\": 200}]}}');"
	"INSERT INTO stream VALUES (0, 'spm', 0, 1, 0, 'x', 'spm_ticks', 2, 'samples_0'),"
	"  (1, 'smi', 0, 1, -1, 'x', 'smu_10ns', 2, 'samples_1');"
	"INSERT INTO metric VALUES (0, 0, 0, 'SQ_WAVES', 'count', 'u64', 't0'), (1, 0, 1, 'SQ_BUSY_CYCLES', 'count', "
	"'u64', 't1'), (2, 1, 0, 'energy', 'J', 'f64', 't2'), (3, 1, 1, 'power_cur', 'W', 'f64', 't3');"
	"WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 199)"
	"  INSERT INTO samples_0 SELECT i, 1000000 * i, 100 * i, i, 2 * i FROM n;"
	"WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 199)"
	"  INSERT INTO samples_1 SELECT i, 1000000 * i, 100 * i, CASE WHEN i % 7 = 3 THEN NULL ELSE 1.5 * i END,"
	"  CASE WHEN i % 7 = 3 THEN NULL ELSE 1.5 * i END FROM n;"
	"INSERT INTO slice VALUES (1, 0, 100000000, 'load', 0, 'file', 0, 0), (2, 100000000, 199000000, 'idle', 0, "
	"'file', 0, 0);";

static void make_seed(void)
{
	snprintf(dir, sizeof(dir), "/tmp/spmtap-fuzz-recsq-XXXXXX");
	if (!mkdtemp(dir))
		abort();
	char p[128];
	snprintf(p, sizeof(p), "%s/seed.db", dir);
	sqlite3 *db;
	if (sqlite3_open(p, &db) != SQLITE_OK || sqlite3_exec(db, schema, NULL, NULL, NULL) != SQLITE_OK)
		abort();
	sqlite3_close(db);
	FILE *f = fopen(p, "rb");
	if (!f || fseek(f, 0, SEEK_END) || (seedlen = (size_t)ftell(f)) == 0 || fseek(f, 0, SEEK_SET))
		abort();
	seed = malloc(seedlen);
	if (!seed || fread(seed, 1, seedlen, f) != seedlen)
		abort();
	fclose(f);
	unlink(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!seed)
		make_seed();
	unsigned char *db = malloc(seedlen);
	if (!db)
		abort();
	memcpy(db, seed, seedlen);
	size_t len = seedlen;
	/* first 2 bytes: the length to cut to (0xffff: keep it whole); then 3-byte patches (offset, byte) */
	if (size >= 2) {
		size_t cut = (size_t)data[0] << 8 | data[1];
		if (cut != 0xffff)
			len = cut * seedlen / 0xfffe;
		data += 2;
		size -= 2;
	}
	for (; size >= 3; data += 3, size -= 3) {
		size_t off = ((size_t)data[0] << 8 | data[1]) * seedlen / 0x10000;
		if (off < len)
			db[off] = data[2];
	}
	char p[128], err[1024];
	snprintf(p, sizeof(p), "%s/run.db", dir);
	FILE *f = fopen(p, "wb");
	if (!f || (len && fwrite(db, 1, len, f) != len) || fclose(f))
		abort();
	free(db);
	struct recording *r;
	if (rec_load(p, &r, err, sizeof(err))) {
		if (!err[0])
			abort(); /* a failure always says why */
		return 0;
	}
	struct sa_trace *tr = NULL;
	if (rec_trace(r, &tr, err, sizeof(err)))
		tr = NULL;
	struct pc_result *pc;
	if (!pc_compute(r, &r->phases, NULL, PC_MIN_COVERAGE, &pc, err, sizeof(err)))
		pc_free(pc);
	sa_trace_free(tr);
	rec_free(r);
	return 0;
}
