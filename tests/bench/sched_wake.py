#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
What delays a woken thread: reads a tracefs text dump with sched_wakeup and
sched_switch events and prints, for the threads whose name starts with
PREFIX (default spmtap-smi, the sensor samplers), the wake-to-run delay
(p50, p99, max) and which thread held the CPU when a delay was long.

Used for docs/power.md "What still delays a woken real-time sampler".  As
root, around any recording:

    mount -t tracefs nodev /sys/kernel/tracing      # if not mounted
    cd /sys/kernel/tracing
    echo mono > trace_clock; echo 32768 > buffer_size_kb; echo > trace
    echo 'comm ~ "spmtap-smi*"' > events/sched/sched_wakeup/filter
    echo 1 > events/sched/sched_wakeup/enable
    echo 1 > events/sched/sched_switch/enable
    echo 1 > tracing_on; <the recording>; echo 0 > tracing_on
    cat trace > /tmp/sched.trace
    tests/bench/sched_wake.py /tmp/sched.trace

A thread that held the CPU for long while a real-time sampler waited is in
a long system call on a kernel without preemption (PREEMPT_NONE), or the
VM lost the vCPU (swapper: an idle vCPU woke late).
"""
import collections
import re
import sys

WAKE = re.compile(r"\[(\d+)\].*? (\d+\.\d+): sched_wakeup: comm=(\S+) pid=(\d+) prio=(\d+)")
SWITCH = re.compile(r"\[(\d+)\].*? (\d+\.\d+): sched_switch: prev_comm=(.*?) prev_pid=\d+ "
                    r"prev_prio=\d+ prev_state=\S+ ==> next_comm=(.*?) next_pid=(\d+)")


def pct(v, q):
    v = sorted(v)
    return v[int(q * (len(v) - 1))] if v else 0.0


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print("usage: sched_wake.py TRACE [PREFIX]", file=sys.stderr)
        return 64
    prefix = sys.argv[2] if len(sys.argv) > 2 else "spmtap-smi"
    pending = {}  # pid -> (wake time, prio)
    delays = collections.defaultdict(list)  # prio -> [(us, thread that ran before)]
    with open(sys.argv[1], errors="replace") as f:
        for line in f:
            m = WAKE.search(line)
            if m:
                if m.group(3).startswith(prefix):
                    pending[int(m.group(4))] = (float(m.group(2)), int(m.group(5)))
                continue
            m = SWITCH.search(line)
            if m and int(m.group(5)) in pending:
                t, prio = pending.pop(int(m.group(5)))
                delays[prio].append(((float(m.group(2)) - t) * 1e6, m.group(3)))
    if not delays:
        print(f"no wake-ups of {prefix}* in {sys.argv[1]}", file=sys.stderr)
        return 1
    for prio, d in sorted(delays.items()):
        us = [x[0] for x in d]
        kind = "real-time" if prio < 100 else "ordinary"
        print(f"{kind} (kernel prio {prio}): {len(us)} wake-ups, wake-to-run p50 {pct(us, .5):.0f} us, "
              f"p99 {pct(us, .99):.0f} us, max {max(us):.0f} us")
        for lo, hi in ((30, 100), (100, 300), (300, float("inf"))):
            c = collections.Counter(x[1] for x in d if lo < x[0] <= hi)
            if c:
                top = ", ".join(f"{k} {n}" for k, n in c.most_common(6))
                print(f"  {lo}-{hi if hi != float('inf') else ''} us behind: {top}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
