#!/bin/sh
# Run every CUnit suite binary in $B/tests (default build/tests), one at a
# time with a time limit each, and summarise per binary with its time, so a
# slow suite (under a sanitizer, say) is seen before it meets the limit.
# Each suite puts itself under the emulator it needs (tests/lib/testenv.c).
B=${B:-build}
T=${TEST_TIMEOUT:-300}
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
	if timeout "$T" "$t"; then
		rc=0
	else
		rc=$?
	fi
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
[ -n "$failed" ] && echo "failed:$failed"
echo "all suites: $(secs $(($(now_ms) - start_all))) s"
# The closing line alone, as CI reads it: "N passed, N failed".
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
