#!/bin/sh
# The kernel tiers through the tools: BERT_KERNELS=amx|avx512|avx2|blis makes
# bert-infer run that tier, and every fixture's output still matches
# Hugging Face within 1e-4 (tests/infer_check), on 1 and 2 threads; a tier
# the CPU lacks exits 2 naming the missing feature; an unknown name exits 1;
# bert-bench --kernels reports the tier it ran and whether the weights were
# packed; bf16 and int8 likewise (--precision), within their measured
# bounds.
. "$(dirname "$0")/lib.sh"
INFER=$top_builddir/apps/bert-infer
BENCH=$top_builddir/apps/bert-bench
CHECK=$top_builddir/tests/infer_check
FIXTURES=$SHARED_DIR/fixtures
needs -d "$FIXTURES" "$FIXTURES"
mktmp

ran=""
for k in amx avx512 avx2 blis; do
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

# The reduced precisions through the tools: bert-infer --precision P on
# every fixture within the bounds tests/test_model asserts (docs/precision.md),
# 1 and 2 threads; where this CPU cannot run P, exit 2 naming the feature.
for p in bf16 int8; do
    case $p in
    bf16) tl=0.03 th=0.06 ;;
    int8) tl=0.1 th=0.2 ;;
    esac
    echo "a text" | "$INFER" --model "$FIXTURES/bert-seq-uncased" --precision $p \
        > "$tmp/probe.out" 2> "$tmp/probe.err"
    st=$?
    if [ $st = 2 ] && grep -q "lacks\|neither" "$tmp/probe.err"; then
        echo "precision $p: not on this CPU ($(cat "$tmp/probe.err"))"
        continue
    fi
    [ $st = 0 ] || { die "precision $p: bert-infer exited $st: $(cat "$tmp/probe.err")"; continue; }
    for fix in "$FIXTURES"/*/; do
        fix=${fix%/}
        [ -f "$fix/expected.json" ] && [ -f "$fix/texts.txt" ] || continue
        f=$(basename "$fix")
        for t in 1 2; do
            BERT_PRECISION=$p "$INFER" --model "$fix" --threads $t --hidden \
                --batch 7 < "$fix/texts.txt" > "$tmp/$f.$p.$t.out" 2> "$tmp/err" ||
                die "precision $p $f --threads $t: exit $?: $(cat "$tmp/err")"
            "$CHECK" --hidden --tol $tl --tol-hidden $th "$fix" "$tmp/$f.$p.$t.out" ||
                die "precision $p $f --threads $t: beyond the documented bounds"
        done
    done
    json=$("$BENCH" --shape bert-tiny --batch 2 --seq 16 --reps 2 --min-time 0.01 \
           --no-blis --json --precision $p 2> "$tmp/err") ||
        die "bert-bench --precision $p: $(cat "$tmp/err")"
    echo "$json" | grep -q "\"precision\":\"$p\"" ||
        die "bert-bench --precision $p reports: $json"
    # the peak of the dot instruction its kernels use, where there is one
    # to measure (none on the amx tier), and the right instruction: int8's
    # avx2 kernel widens to vpmaddwd + vpaddd on CPUs without VNNI
    case $p in bf16) insn=vdpbf16ps ;; *) insn=vpdpbusd ;; esac
    if [ $p = int8 ] && echo "$json" | grep -q '"gemm_kernels":"avx2"' &&
        ! echo "$json" | grep -q '"cpu_features":"[^"]*avx_vnni'; then
        insn=vpmaddwd+vpaddd
    fi
    case $json in
    *'"dot_insn":""'*) echo "$json" | grep -q '"gemm_kernels":"amx"' ||
        die "bert-bench --precision $p measured no dot peak: $json" ;;
    *"\"dot_insn\":\"$insn "*)
        echo "$json" | grep -q '"dot_peak_gflops":0.0,' &&
            die "bert-bench --precision $p: a dot peak of 0: $json" ;;
    *) die "bert-bench --precision $p: not the $insn peak: $json" ;;
    esac
    ran="$ran $p"
done
# int8 with the blis tier is refused, naming why; an unknown precision is a
# usage error
echo "a text" | BERT_KERNELS=blis "$INFER" --model "$FIXTURES/bert-seq-uncased" \
    --precision int8 > "$tmp/b.out" 2> "$tmp/b.err"
st=$?
[ $st = 2 ] && grep -q "fp32 only" "$tmp/b.err" ||
    die "int8 with BERT_KERNELS=blis: exit $st: $(cat "$tmp/b.err")"
echo "a text" | "$INFER" --model "$FIXTURES/bert-seq-uncased" --precision fp16 \
    > "$tmp/b.out" 2> "$tmp/b.err"
st=$?
[ $st = 1 ] && grep -q "fp16" "$tmp/b.err" ||
    die "--precision fp16: exit $st: $(cat "$tmp/b.err")"

# An unknown tier name is a usage error with a message.
echo "a text" | BERT_KERNELS=sse "$INFER" --model "$FIXTURES/bert-seq-uncased" > "$tmp/u.out" 2> "$tmp/u.err"
st=$?
[ $st = 1 ] || die "BERT_KERNELS=sse: exit $st, expected 1"
grep -q "BERT_KERNELS=sse" "$tmp/u.err" || die "BERT_KERNELS=sse: message: $(cat "$tmp/u.err")"
"$BENCH" --shape bert-tiny --kernels sse > /dev/null 2>&1
[ $? = 1 ] || die "bert-bench --kernels sse: not a usage error"

[ $fail = 0 ] && echo "PASS: tiers$ran"
exit $fail
