#!/bin/sh
# Run every CUnit suite binary in $B/tests (default build/tests), one at a
# time with a time limit each, and summarise per binary with its time, so a
# slow suite (under a sanitizer, say) is seen before it meets the limit.
# Each suite puts itself under the emulator it needs (tests/lib/testenv.c).
# Each suite's output is also kept in $B/tests/logs/NAME.log, and a failed
# suite's failure lines are printed again at the end: CI keeps only the tail.
B=${B:-build}
T=${TEST_TIMEOUT:-300}
L="$B/tests/logs"
mkdir -p "$L"
pass=0
fail=0
failed=""
times=""
now_ms() { echo $(($(date +%s%N) / 1000000)); }
secs() { printf '%d.%d' $(($1 / 1000)) $(($1 % 1000 / 100)); }
start_all=$(now_ms)
for t in "$B"/tests/test_*; do
	[ -f "$t" ] && [ -x "$t" ] || continue
	name=$(basename "$t")
	echo "=== $name"
	t0=$(now_ms)
	# The exit status goes through a file: a pipeline's is tee's.
	{
		timeout "$T" "$t"
		echo $? > "$L/$name.rc"
	} 2>&1 | tee "$L/$name.log"
	rc=$(cat "$L/$name.rc")
	ms=$(($(now_ms) - t0))
	times="$times$ms $name
"
	if [ "$rc" -eq 0 ]; then
		echo "=== $name: PASS ($(secs "$ms") s)"
		pass=$((pass + 1))
	else
		if [ "$rc" -eq 124 ]; then
			echo "=== $name: FAIL (timed out after ${T}s)"
		else
			echo "=== $name: FAIL (exit $rc, $(secs "$ms") s)"
		fi
		fail=$((fail + 1))
		failed="$failed $name"
	fi
done
echo "slowest suites:"
printf '%s' "$times" | sort -rn | head -5 | while read -r ms name; do
	echo "  $(secs "$ms") s  $name"
done
for name in $failed; do
	echo "--- $name: what failed (the whole output: $L/$name.log)"
	# CUnit's failed tests and asserts, a sanitizer's summary, a test's own
	# FAILED explanation; then the last lines, for a crash or a time-out.
	grep -E '\.\.\.FAILED|^ +[0-9]+\. .*:[0-9]+ +- |SUMMARY: |FAILED: |^ERROR: ' "$L/$name.log" | head -40
	echo "--- $name: its last lines"
	tail -15 "$L/$name.log"
done
[ -n "$failed" ] && echo "failed:$failed"
echo "all suites: $(secs $(($(now_ms) - start_all))) s"
# The closing line alone, as CI reads it: "N passed, N failed".
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
