/* SPDX-License-Identifier: MIT */
/*
 * The files of one recording, replaced all together (docs/formats/csv.md
 * "Temporary names").  While recording every file is written under its
 * final name + ".part"; a run that ends (duration, app exit, SIGINT/SIGTERM)
 * commits: it removes what an earlier run left under the same NAME (the
 * old set as a whole, as its metadata tells it) and
 * renames every .part to its final name.  A run that never started
 * discards its .part files, so earlier outputs stay as they were; a killed
 * run leaves its .part files for the readers ("incomplete recording").
 */
#ifndef SPMTAP_COLLECTOR_OUTSET_H
#define SPMTAP_COLLECTOR_OUTSET_H

#include <stddef.h>

#define OUTSET_PART ".part"

struct out_set;

int out_set_new(struct out_set **out);
/* Removes nothing: a set not committed or discarded leaves its .part files. */
void out_set_free(struct out_set *s);
/*
 * The path to write `final` under: final + ".part", recorded in the set
 * (once per final name).  With s NULL a copy of final (a writer used
 * alone, as the unit tests do).  malloc'd; NULL when out of memory.
 */
char *out_set_part(struct out_set *s, const char *final);
/* The final names recorded so far (any thread; an entry, once there, never changes). */
size_t out_set_count(struct out_set *s);
const char *out_set_final(struct out_set *s, size_t i);
/* The earlier run's files the last out_set_commit removed (not replaced by name). */
size_t out_set_nremoved(const struct out_set *s);
const char *out_set_removed(const struct out_set *s, size_t i);
/*
 * The end of a run: every `old` file (earlier outputs under this run's
 * names, NULL-terminated, may be NULL) that is not in the set is removed,
 * then every .part is renamed to its final name (an OTF2 archive directory
 * included: the old one under the final name goes first, out_set_remove_archive).  SQLite's companions
 * (-wal, -shm, -journal) follow their file: a stale -wal beside a new
 * database would be replayed into it.  Every rename is tried; 0 or the
 * first -errno with "PATH: reason" in err.
 */
int out_set_commit(struct out_set *s, const char *const *old, char *err, size_t errlen);
/* Stale FINAL.part files (a killed run's) of `names` not in the set, and their companions, removed. */
void out_set_drop_parts(const struct out_set *s, const char *const *names);
/*
 * An OTF2 archive directory spmtap writes (docs/formats/otf2.md: DIR/traces.otf2,
 * DIR/traces.def, DIR/traces/ with .evt and .def files) removed with DIR.
 * 0 when gone or absent; -ENOTEMPTY, touching nothing, when DIR holds
 * anything else; -EEXIST when DIR is not a directory.
 */
int out_set_remove_archive(const char *dir);
/* A run that never started: every .part file (and companion) removed. */
void out_set_discard(struct out_set *s);

#endif
