#!/bin/sh
# Replays the seed corpus of each fuzz target added for issue 15 through
# its replay program (fuzz/driver.c, no libFuzzer), with the bundled models.
s=${top_srcdir:-.}
b=${top_builddir:-.}
FUZZ_MODEL=$s/data/sentiment FUZZ_TOKEN_MODEL=$s/data/ner
export FUZZ_MODEL FUZZ_TOKEN_MODEL
[ -f "$FUZZ_MODEL/config.json" ] || { echo "SKIP: no data/sentiment"; exit 77; }
st=0
for t in window csv tokfiles tag_aggregate trainer train_readers vocab; do
    if "$b/fuzz/fuzz_${t}_replay" "$s/fuzz/corpus/$t"/* > "$b/fuzz/seeds-$t.out" 2>&1; then
        echo "ok $t ($(grep -c '^ok ' "$b/fuzz/seeds-$t.out") seeds)"
    else
        echo "FAIL $t"; tail -20 "$b/fuzz/seeds-$t.out"; st=1
    fi
    rm -f "$b/fuzz/seeds-$t.out"
done
exit $st
