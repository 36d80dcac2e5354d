#!/bin/sh
# bert-infer end to end (the CLI contract of issue 3): on every fixture of
# $SHARED_DIR/fixtures and fixtures-roberta-electra, the JSON line for each line of texts.txt carries the
# contract's keys, the expected ids, and logits / probs / labels / pooler /
# last_hidden_state within 1e-4 (tests/infer_check), for --batch 1, 7, the
# default, --threads 1 and 2, with and without --hidden; invalid UTF-8 lines
# give {"line":N,"error":...} in their place and exit 2; a last line without
# '\n' is still answered; --max-length truncates; usage errors exit 1 and bad
# model directories exit 2, with nothing on stdout.
. "$(dirname "$0")/lib.sh"
INFER=$top_builddir/apps/bert-infer
CHECK=$top_builddir/tests/infer_check
FIXTURES=$SHARED_DIR/fixtures
needs -d "$FIXTURES" "$FIXTURES"
mktmp

# run NAME EXPECTED_STATUS ARGS... < input: output in $tmp/NAME.{out,err}
run() {
    name=$1 want=$2; shift 2
    "$INFER" "$@" > "$tmp/$name.out" 2> "$tmp/$name.err"
    st=$?
    [ "$st" = "$want" ] || die "bert-infer $* exited $st, expected $want: $(head -c 300 "$tmp/$name.err")"
}

n_fix=0
# the RoBERTa and ELECTRA fixtures live in a folder of their own
for fix in "$FIXTURES"/*/ "$SHARED_DIR"/fixtures-roberta-electra/*/; do
    fix=${fix%/}
    [ -f "$fix/expected.json" ] && [ -f "$fix/texts.txt" ] || continue
    n_fix=$((n_fix + 1))
    f=$(basename "$fix")
    # batch threads [--hidden] (the default batch on the first fixture only)
    cfgs="1 1|7 2|1 2 --hidden|7 1 --hidden"
    [ $n_fix = 1 ] && cfgs="$cfgs|- 2"
    IFS='|'; set -- $cfgs; IFS=' '
    for cfg; do
        set -- $cfg
        b=$1 t=$2 h=${3:-}
        if [ "$b" = - ]; then batch=""; else batch="--batch $b"; fi
        run "$f.$b.$t$h" 0 --model "$fix" $batch --threads "$t" $h < "$fix/texts.txt"
        [ -s "$tmp/$f.$b.$t$h.err" ] && die "$f batch $b threads $t $h: stderr: $(head -c 300 "$tmp/$f.$b.$t$h.err")"
        "$CHECK" $h "$fix" "$tmp/$f.$b.$t$h.out" || die "$f batch $b threads $t $h: output differs"
    done

    # --embeddings: the sentence embedding (mean or [CLS] pooling of the
    # last hidden state, optionally L2-normalised) for every model
    for e in "mean" "cls --normalize" "mean --normalize --hidden"; do
        n=$(echo "$e" | tr -d ' -')
        # shellcheck disable=SC2086
        run "$f.emb$n" 0 --model "$fix" --batch 7 --embeddings $e < "$fix/texts.txt"
        # shellcheck disable=SC2086
        "$CHECK" --embeddings $e "$fix" "$tmp/$f.emb$n.out" || die "$f --embeddings $e: output differs"
    done

    # Invalid UTF-8 lines (input lines 1, 12, 43) give the error object in
    # their place, every other line is still right, the exit status is 2;
    # the last line has no '\n' and is still answered.
    bad1=$(printf 'caf\303')          # truncated sequence
    bad2=$(printf '\355\240\200 surrogate')
    bad3=$(printf 'over\300\257long')
    {
        printf '%s\n' "$bad1"
        sed -n 1,10p "$fix/texts.txt"
        printf '%s\n' "$bad2"
        sed -n 11,40p "$fix/texts.txt"
        printf '%s\n' "$bad3"
        sed -n '41,$p' "$fix/texts.txt"
    } | head -c -1 > "$tmp/bad.in"
    for b in 1 7; do
        run "$f.bad$b" 2 --model "$fix" --batch "$b" < "$tmp/bad.in"
        "$CHECK" --bad 1 --bad 12 --bad 43 "$fix" "$tmp/$f.bad$b.out" ||
            die "$f batch $b: output with invalid UTF-8 lines differs"
    done
done
[ "$n_fix" -gt 0 ] || { echo "SKIP: no fixture in $FIXTURES"; exit 77; }

SEQ=$FIXTURES/bert-seq-uncased
if [ -f "$SEQ/expected.json" ]; then
    # --max-length truncates as HF (longest_first); short texts unchanged.
    run trunc 0 --model "$SEQ" --max-length 16 --batch 5 < "$SEQ/texts.txt"
    "$CHECK" --max-length 16 "$SEQ" "$tmp/trunc.out" || die "--max-length 16 output differs"

    # Empty input: no output, success.
    run empty 0 --model "$SEQ" < /dev/null
    [ -s "$tmp/empty.out" ] && die "empty input gave output"

    # Usage errors: exit 1, nothing on stdout, a message on stderr.
    i=0
    for args in "" "--model" "--bogus --model $SEQ" "--model $SEQ --batch 0" \
        "--model $SEQ --batch x" "--model $SEQ --batch 4097" \
        "--model $SEQ --threads 0" "--model $SEQ --threads" \
        "--model $SEQ --max-length 2" "--model $SEQ --max-length 129" \
        "--model $SEQ --max-length -5" "--hidden" \
        "--model $SEQ --normalize" "--model $SEQ --embeddings max" \
        "--model $SEQ --embeddings"; do
        i=$((i + 1))
        run "usage$i" 1 $args < /dev/null
        [ -s "$tmp/usage$i.out" ] && die "usage error '$args' wrote to stdout"
        [ -s "$tmp/usage$i.err" ] || die "usage error '$args' gave no message"
    done
    run help 0 --help < /dev/null
    grep -q 'usage: bert-infer' "$tmp/help.out" || die "--help prints no usage"

    # Bad model directories: exit 2 with a message, nothing on stdout.
    echo "a text" > "$tmp/one.in"
    mkdir "$tmp/m-empty" "$tmp/m-config" "$tmp/m-trunc"
    cp "$SEQ/config.json" "$tmp/m-config/"
    cp "$SEQ"/*.json "$SEQ/vocab.txt" "$tmp/m-trunc/"
    head -c 5000 "$SEQ/model.safetensors" > "$tmp/m-trunc/model.safetensors"
    for d in "$tmp/no-such-dir" "$tmp/m-empty" "$tmp/m-config" "$tmp/m-trunc" "$SEQ/texts.txt"; do
        run badmodel 2 --model "$d" < "$tmp/one.in"
        [ -s "$tmp/badmodel.out" ] && die "bad model $d wrote to stdout"
        [ -s "$tmp/badmodel.err" ] || die "bad model $d gave no message"
    done
fi

[ $fail = 0 ] && echo "PASS: bert-infer on $n_fix fixtures"
exit $fail
