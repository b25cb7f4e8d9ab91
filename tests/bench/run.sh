#!/bin/sh
# make bench: every benchmark, one after the other (they compete for the cores).
# Each bench's output is shown as it runs; its key=value lines (contract 6 of
# issue 15: benches print numbers, never fail on them) are collected into
# $B/bench/results.txt as BENCH.KEY=VALUE, one run per file.
# SPMTAP_BENCH_E2E_S: the end-to-end bench's seconds per format (60).
set -eu
B=${B:-build}
out="$B/bench/results.txt"
: >"$out"
for p in "$B"/bench/*; do
	[ -x "$p" ] && [ -f "$p" ] || continue
	name=$(basename "$p")
	echo "== $name"
	case "$name" in
	bench_e2e) set -- "${SPMTAP_BENCH_E2E_S:-60}" ;;
	*) set -- ;;
	esac
	log="$B/bench/$name.log"
	{ rc=0; "$p" "$@" 2>&1 || rc=$?; echo "$rc" >"$log.rc"; } | tee "$log"
	rc=$(cat "$log.rc")
	rm -f "$log.rc"
	[ "$rc" -eq 0 ] || echo "== $name exited $rc"
	grep -E '^[A-Za-z0-9_.:-]+=' "$log" | sed "s/^/$name./" >>"$out" || true
done
echo "== key=value lines collected in $out"
