#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Compare one recording's OTF2 archive with its SQLite database (tests/test_write_otf2.c).

Usage: otf2_compare.py ARCHIVE/traces.otf2 NAME.db

Read with the real readers (python3-otf2 and sqlite3), checks:
  * every sample value of every stream: the same (time, metric, value) cells in both
    (a missing cell, NULL in SQLite, is absent from OTF2), per stream, as many and equal;
  * every slice SQLite has (phases and markers; SQLite keeps no kernels) is an Enter/Leave
    pair in OTF2 with the same start, end and name, and nothing more;
  * on every CPU_THREAD location, Enter/Leave nest (a Leave closes the innermost open
    region) and times never decrease; on every location, times never decrease.
Kernel dispatches (locations "kernels queue Q") are counted apart: SQLite has no table for them.
Prints one summary line ("samples N=N cells, slices N=N, kernels N, locations N") and, on a
difference, what differs; exits 0 when all agree, 1 otherwise.
Runs under /usr/bin/python3: the Debian otf2 module is not in other interpreters.
"""
import collections
import sqlite3
import sys

import otf2


def location_name(source, gpu, xcc):
    """The writer's name for a stream's location (collector/lib/otf2w.c)."""
    if xcc >= 0:
        return "GPU %d XCC %d %s" % (gpu, xcc, "SPM" if source == "spm" else source)
    return "GPU %d %s" % (gpu, "sensors" if source == "smi" else source)


def from_sqlite(path):
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    cells = collections.defaultdict(list)
    for sid, source, gpu, xcc, table in db.execute(
            "SELECT id, source, gpu, xcc, sample_table FROM stream ORDER BY id"):
        cols = [r[0] for r in db.execute(
            "SELECT name FROM metric WHERE stream_id = ? ORDER BY col", (sid,))]
        loc = location_name(source, gpu, xcc)
        sel = ", ".join("v%d" % c for c in range(len(cols)))
        for row in db.execute("SELECT host_ns, %s FROM %s ORDER BY host_ns, idx" % (sel, table)):
            t = row[0]
            for name, v in zip(cols, row[1:]):
                if v is not None:
                    cells[loc].append((t, name, v))
    slices = collections.Counter()
    for start, end, name in db.execute("SELECT start_ns, end_ns, name FROM slice"):
        slices[(start, end, name or "")] += 1
    db.close()
    return cells, slices


def from_otf2(path, problems):
    cells = collections.defaultdict(list)
    slices = collections.Counter()
    kernels = collections.Counter()
    stacks = collections.defaultdict(list)
    last = {}
    with otf2.reader.open(path) as t:
        for loc, ev in t.events:
            key = loc.name
            if ev.time < last.get(key, 0):
                problems.append("%s: time went back at %d" % (key, ev.time))
            last[key] = ev.time
            kind = type(ev).__name__
            if kind == "Metric":
                m = ev.metric
                members = (m.metric_class if hasattr(m, "metric_class") else m).members
                for mem, v in zip(members, ev.values):
                    # raw values: base^exponent is the reader's to apply (all 0 here but MHz).
                    # SQLite has no integer past INT64_MAX: it keeps the nearest REAL
                    # (docs/formats/sqlite.md), so such a count compares as that REAL.
                    if isinstance(v, int) and v > 2**63 - 1:
                        v = float(v)
                    cells[key].append((ev.time, mem.name, v))
            elif kind == "Enter":
                stacks[key].append((ev.time, ev.region.name))
            elif kind == "Leave":
                if not stacks[key] or stacks[key][-1][1] != ev.region.name:
                    problems.append("%s: Leave %s at %d does not close the innermost region %s"
                                    % (key, ev.region.name, ev.time,
                                       stacks[key][-1][1] if stacks[key] else "(none)"))
                    continue
                start, name = stacks[key].pop()
                if key.startswith("kernels "):
                    kernels[(start, ev.time, name)] += 1  # SQLite keeps no kernels
                else:
                    slices[(start, ev.time, name)] += 1
        nlocs = len(list(t.definitions.locations))
    for key, st in stacks.items():
        if st:
            problems.append("%s: %d regions never left" % (key, len(st)))
    return cells, slices, kernels, nlocs


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    problems = []
    ocells, oslices, okernels, nlocs = from_otf2(sys.argv[1], problems)
    scells, sslices = from_sqlite(sys.argv[2])
    on = sum(len(v) for v in ocells.values())
    sn = sum(len(v) for v in scells.values())
    for loc in sorted(set(ocells) | set(scells)):
        a, b = sorted(ocells.get(loc, [])), sorted(scells.get(loc, []))
        if a != b:
            diff = [(x, y) for x, y in zip(a, b) if x != y][:3]
            problems.append("%s: %d cells in OTF2, %d in SQLite; first differences %s"
                            % (loc, len(a), len(b), diff))
    if oslices != sslices:
        only_o = list((oslices - sslices).items())[:3]
        only_s = list((sslices - oslices).items())[:3]
        problems.append("slices: %d in OTF2, %d in SQLite; only in OTF2 %s, only in SQLite %s"
                        % (sum(oslices.values()), sum(sslices.values()), only_o, only_s))
    print("samples %d=%d cells, slices %d=%d, kernels %d, locations %d"
          % (on, sn, sum(oslices.values()), sum(sslices.values()), sum(okernels.values()), nlocs))
    for p in problems[:20]:
        print("  " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
