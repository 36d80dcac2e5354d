#!/bin/sh
# The kernel tiers through the tools: BERT_KERNELS=avx512|avx2|blis makes
# bert-infer run that tier, and every fixture's output still matches
# Hugging Face within 1e-4 (tests/infer_check), on 1 and 2 threads; a tier
# the CPU lacks exits 2 naming the missing feature; an unknown name exits 1;
# bert-bench --kernels reports the tier it ran and whether the weights were
# packed.
. "$(dirname "$0")/lib.sh"
INFER=$top_builddir/apps/bert-infer
BENCH=$top_builddir/apps/bert-bench
CHECK=$top_builddir/tests/infer_check
FIXTURES=$SHARED_DIR/fixtures
needs -d "$FIXTURES" "$FIXTURES"
mktmp

ran=""
for k in avx512 avx2 blis; do
    SEQ=$FIXTURES/bert-seq-uncased
    echo "a text" | BERT_KERNELS=$k "$INFER" --model "$SEQ" > "$tmp/probe.out" 2> "$tmp/probe.err"
    st=$?
    if [ $st = 2 ] && grep -q "lacks" "$tmp/probe.err"; then
        echo "tier $k: not on this CPU ($(cat "$tmp/probe.err"))"
        continue
    fi
    [ $st = 0 ] || { die "tier $k: bert-infer exited $st: $(cat "$tmp/probe.err")"; continue; }
    ran="$ran $k"
    for fix in "$FIXTURES"/*/; do
        fix=${fix%/}
        [ -f "$fix/expected.json" ] && [ -f "$fix/texts.txt" ] || continue
        f=$(basename "$fix")
        for t in 1 2; do
            BERT_KERNELS=$k "$INFER" --model "$fix" --threads $t --hidden --batch 7 \
                < "$fix/texts.txt" > "$tmp/$f.$k.$t.out" 2> "$tmp/err" ||
                die "tier $k $f --threads $t: exit $?: $(cat "$tmp/err")"
            "$CHECK" --hidden "$fix" "$tmp/$f.$k.$t.out" ||
                die "tier $k $f --threads $t: output differs from Hugging Face"
        done
    done
    json=$("$BENCH" --shape bert-tiny --batch 2 --seq 16 --reps 2 --min-time 0.01 \
           --no-peak --no-blis --json --kernels $k 2> "$tmp/err") ||
        die "bert-bench --kernels $k: $(cat "$tmp/err")"
    case $k in
    blis) want='"gemm_kernels":"blis-[a-z0-9_]*","packed":0' ;;
    *) want="\"gemm_kernels\":\"$k\",\"packed\":1" ;;
    esac
    echo "$json" | grep -q "$want" || die "bert-bench --kernels $k reports: $json"
done
[ -n "$ran" ] || die "no tier ran (blis always should)"
case $ran in *blis*) ;; *) die "the blis tier did not run" ;; esac

# An unknown tier name is a usage error with a message.
echo "a text" | BERT_KERNELS=sse "$INFER" --model "$FIXTURES/bert-seq-uncased" > "$tmp/u.out" 2> "$tmp/u.err"
st=$?
[ $st = 1 ] || die "BERT_KERNELS=sse: exit $st, expected 1"
grep -q "BERT_KERNELS=sse" "$tmp/u.err" || die "BERT_KERNELS=sse: message: $(cat "$tmp/u.err")"
"$BENCH" --shape bert-tiny --kernels sse > /dev/null 2>&1
[ $? = 1 ] || die "bert-bench --kernels sse: not a usage error"

[ $fail = 0 ] && echo "PASS: tiers$ran"
exit $fail
