#!/bin/sh
# The emulated multi-node test bed (docs/howto-job.md "Test bed on one machine"): run under
#   mpirun --allow-run-as-root --oversubscribe -np 4 tests/job/node.sh BED -- CMD [ARGS]
# and rank N runs CMD as emulated node "nodeN": its own time namespace (CLOCK_BOOTTIME and
# CLOCK_MONOTONIC/MONOTONIC_RAW offset by a fractional amount), its own UTS host name, its own
# emulated node (emulator state, truth files, GPU clock offset and drift, wall-clock skew as
# spmtap sees it).  The job's collector step and its application step both go through it, so
# app rank N shares node N's clocks and host name.  Needs root (time namespaces).
#
#   BED                        directory for the nodes' files: BED/nodeN/{state,truth.jsonl}
#   SPMTAP_TESTBED_OFFSETS_NS  the nodes' clock offsets, ns, space-separated
#                              (default "0 3200000000 -1700000000 250000000"; beyond the list:
#                              rank * 1.1 s).  CLOCK_REALTIME stays the machine's: the truth.
#   SPMTAP_TESTBED_BIN         where timens_node is (default: build/tests/helpers)
# The emulated workloads are periodic in each node's MONOTONIC_RAW from 0: with a period that
# divides every offset (the defaults are multiples of 50 ms), every node switches phase at the
# same true instant.
set -e
BED=$1
shift
[ "$1" = "--" ] && shift
r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}}
offs=${SPMTAP_TESTBED_OFFSETS_NS:-"0 3200000000 -1700000000 250000000"}
off=$(echo "$offs" | awk -v i=$((r + 1)) '{ print (i <= NF) ? $i : "" }')
[ -n "$off" ] || off=$((r * 1100000000))
node=node$r
mkdir -p "$BED/$node/state"
export SPMTAP_EMU_STATE_DIR="$BED/$node/state"
export SPMTAP_EMU_TRUTH="$BED/$node/truth.jsonl"
export SPMTAP_EMU_SHM_TAG="testbed-$node"
# The emulated tree in a directory of the node's own: the emulator's stale-tree sweep of other
# programs on this machine (scanning $TMPDIR or /tmp) never meets it. A sweeper in another time
# namespace would misread its owner's start time (emu/common/owner.c records the namespace; an older
# build does not).
mkdir -p "$BED/$node/tmp"
export TMPDIR="$BED/$node/tmp"
# GPU clocks: each node its own offset and drift; wall clocks: each its own skew (ns, as spmtap
# sees REALTIME under --emulate; docs/emulator.md SPMTAP_EMU_REALTIME_SKEW_NS).
export SPMTAP_EMU_CLOCK_OFFSET=$((0x1000000000 + r * 0x123456789))
export SPMTAP_EMU_CLOCK_PPM=$(echo "$r" | awk '{ print ($1 % 2 ? -1 : 1) * 1.75 * $1 }')
export SPMTAP_EMU_REALTIME_SKEW_NS=$(echo "$r" | awk '{ print ($1 % 2 ? -1 : 1) * 37000000 * $1 }')
echo "$off" > "$BED/$node/offset_ns"
echo "$SPMTAP_EMU_REALTIME_SKEW_NS" > "$BED/$node/realtime_skew_ns"
bin=${SPMTAP_TESTBED_BIN:-build/tests/helpers}
exec "$bin/timens_node" --boot-ns "$off" --host "$node" -- "$@"
