#!/bin/sh
# Run every CUnit suite binary in $B/tests (default build/tests), one at a
# time with a time limit each, and summarise per binary.  Each suite puts
# itself under the emulator it needs (tests/lib/testenv.c).
B=${B:-build}
T=${TEST_TIMEOUT:-300}
pass=0
fail=0
failed=""
for t in "$B"/tests/test_*; do
	[ -f "$t" ] && [ -x "$t" ] || continue
	name=$(basename "$t")
	echo "=== $name"
	if timeout "$T" "$t"; then
		echo "=== $name: PASS"
		pass=$((pass + 1))
	else
		rc=$?
		if [ "$rc" -eq 124 ]; then
			echo "=== $name: FAIL (timed out after ${T}s)"
		else
			echo "=== $name: FAIL (exit $rc)"
		fi
		fail=$((fail + 1))
		failed="$failed $name"
	fi
done
[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
