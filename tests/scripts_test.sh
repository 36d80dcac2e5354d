#!/bin/sh
# scripts/test-lib.sh, the stage runner of scripts/test.sh, on a fake tree:
# a failing stage does not stop the next ones, every failing test's log is
# printed (automake's .trs files say ":test-result: FAIL", also under
# bench/), passing ones are not, and the failed stages are recorded for the
# final exit status.
. "$(dirname "$0")/lib.sh"
mktmp
top=$tmp/tree failed=""
mkdir -p "$top/tests" "$top/bench" "$top/fuzz" "$top/build-san/tests"
for t in tests/a bench/b fuzz/c; do
    printf ':test-result: PASS\n' > "$top/$t.trs"; echo "log of $t: fine" > "$top/$t.log"
done
printf ':global-test-result: FAIL\n:test-result: FAIL\n' > "$top/bench/b.trs"
echo "log of bench/b: broken" > "$top/bench/b.log"
printf ':test-result: ERROR\n' > "$top/fuzz/c.trs"
echo "log of fuzz/c: crashed" > "$top/fuzz/c.log"
printf ':test-result: FAIL\n' > "$top/build-san/tests/d.trs"
echo "log of san d: leak" > "$top/build-san/tests/d.log"
. "$top_srcdir/scripts/test-lib.sh"
ran=""
stage one "$top" false > "$tmp/out1" 2>&1
stage two "$top" sh -c 'echo second ran' > "$tmp/out2" 2>&1
stage san "$top/build-san" false > "$tmp/out3" 2>&1
grep -q 'log of bench/b: broken' "$tmp/out1" || die "bench/ failure log not shown: $(cat "$tmp/out1")"
grep -q 'log of fuzz/c: crashed' "$tmp/out1" || die "ERROR log not shown"
grep -q 'fine' "$tmp/out1" && die "a passing test's log was shown"
grep -q 'san d' "$tmp/out1" && die "the sanitizer tree's logs shown for the top stage"
grep -q 'second ran' "$tmp/out2" || die "the stage after a failure did not run"
grep -q 'log of san d: leak' "$tmp/out3" || die "sanitizer tree log not shown"
[ "$(echo "$failed" | grep -c .)" = 2 ] && echo "$failed" | grep -q one && echo "$failed" | grep -q san ||
    die "failed stages: '$failed'"
exit $fail
