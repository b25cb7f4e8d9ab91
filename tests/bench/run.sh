#!/bin/sh
# make bench: every benchmark, one after the other (they compete for 2 cores).
set -eu
B=${B:-build}
for p in "$B"/bench/*; do
	[ -x "$p" ] || continue
	echo "== $(basename "$p")"
	"$p"
done
