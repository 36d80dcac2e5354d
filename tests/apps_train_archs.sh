#!/bin/sh
# bert-train on RoBERTa and ELECTRA end to end: --init from the roberta-seq,
# roberta-token and electra-seq fixtures, sequence and token tasks on a few
# examples, and what it writes (config.json, model.safetensors and the
# tokenizer files: byte-level BPE for RoBERTa) loads back in bert-infer and
# bert-tag.  The mlm task, which the trainer does not support for these
# models, is refused with a message.
. "$(dirname "$0")/lib.sh"
TRAIN=$top_builddir/apps/bert-train
INFER=$top_builddir/apps/bert-infer
TAG=$top_builddir/apps/bert-tag
FIX=$SHARED_DIR/fixtures-roberta-electra
needs -f "$FIX/roberta-seq/config.json" "$FIX/roberta-seq"
mktmp

# sequence: 12 texts of the fixture, two labels
{
    echo "text,label"
    head -12 "$FIX/roberta-seq/texts.txt" | tr -d '\t",' |
        awk '{ print "\"" $0 "\"," (NR % 2 ? "POSITIVE" : "NEGATIVE") }'
} > "$tmp/seq.csv"
"$TRAIN" -q --init "$FIX/roberta-seq" --task sequence --train "$tmp/seq.csv" \
    --out "$tmp/seq" --epochs 1 --batch-size 4 --max-length 64 \
    > "$tmp/train.out" 2> "$tmp/train.err" ||
    die "bert-train sequence exited $?: $(head -c 400 "$tmp/train.err")"
for f in config.json model.safetensors vocab.json merges.txt tokenizer.json; do
    [ -f "$tmp/seq/$f" ] || die "sequence: $f not written"
done
grep -q '"model_type": "roberta"' "$tmp/seq/config.json" ||
    die "sequence: config.json is not a RoBERTa config"
grep -q 'RobertaForSequenceClassification' "$tmp/seq/config.json" ||
    die "sequence: config.json names another architecture"
head -12 "$FIX/roberta-seq/texts.txt" > "$tmp/seq.in"
"$INFER" --model "$tmp/seq" < "$tmp/seq.in" > "$tmp/seq.out" 2> "$tmp/err" ||
    die "bert-infer on the fine-tuned RoBERTa exited $?: $(head -c 300 "$tmp/err")"
[ "$(grep -c '"label"' "$tmp/seq.out")" = 12 ] ||
    die "bert-infer on the fine-tuned RoBERTa: $(wc -l < "$tmp/seq.out") lines"

# token: a small CoNLL file with the fixture's labels
if [ -f "$FIX/roberta-token/config.json" ]; then
    printf 'John\tB-PER\nlives\tO\nin\tO\nParis\tB-LOC\n.\tO\n\nAcme\tB-ORG\nCorp\tI-ORG\nhired\tO\nMary\tB-PER\n\n' > "$tmp/tok.conll"
    "$TRAIN" -q --init "$FIX/roberta-token" --task token --train "$tmp/tok.conll" \
        --out "$tmp/tok" --epochs 1 --batch-size 2 --max-length 32 \
        > "$tmp/train.out" 2> "$tmp/train.err" ||
        die "bert-train token exited $?: $(head -c 400 "$tmp/train.err")"
    grep -q 'RobertaForTokenClassification' "$tmp/tok/config.json" ||
        die "token: config.json names another architecture"
    echo "John lives in Paris." | "$TAG" --model "$tmp/tok" > "$tmp/tag.out" 2> "$tmp/err" ||
        die "bert-tag on the fine-tuned RoBERTa exited $?: $(head -c 300 "$tmp/err")"
    [ "$(wc -l < "$tmp/tag.out")" = 1 ] || die "bert-tag: $(wc -l < "$tmp/tag.out") lines"
fi

# refusals: exit 2 and a message naming the reason
"$TRAIN" -q --init "$FIX/roberta-seq" --task mlm --train "$tmp/seq.in" \
    --out "$tmp/mlm" > /dev/null 2> "$tmp/err"
st=$?
[ "$st" = 2 ] || die "mlm on RoBERTa: exit $st, want 2"
grep -q 'sequence and token tasks only' "$tmp/err" || die "mlm on RoBERTa: $(cat "$tmp/err")"
if [ -f "$FIX/electra-seq/config.json" ]; then
    # ELECTRA: embedding_size 32 != hidden_size 64 (embeddings_project)
    "$TRAIN" -q --init "$FIX/electra-seq" --task sequence --train "$tmp/seq.csv" \
        --out "$tmp/el" --epochs 1 --batch-size 4 --max-length 64 \
        > "$tmp/train.out" 2> "$tmp/train.err" ||
        die "bert-train ELECTRA exited $?: $(head -c 400 "$tmp/train.err")"
    grep -q 'ElectraForSequenceClassification' "$tmp/el/config.json" ||
        die "ELECTRA: config.json names another architecture"
    grep -q '"embedding_size": 32' "$tmp/el/config.json" ||
        die "ELECTRA: config.json lacks embedding_size 32"
    "$INFER" --model "$tmp/el" < "$tmp/seq.in" > "$tmp/el.out" 2> "$tmp/err" ||
        die "bert-infer on the fine-tuned ELECTRA exited $?: $(head -c 300 "$tmp/err")"
    [ "$(grep -c '"label"' "$tmp/el.out")" = 12 ] ||
        die "bert-infer on the fine-tuned ELECTRA: $(wc -l < "$tmp/el.out") lines"
    # (bert-train's error exits leave freeing to the process exit: no leak
    # report from a sanitizer build for this one)
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
        "$TRAIN" -q --init "$FIX/electra-seq" --task mlm --train "$tmp/seq.in" \
        --out "$tmp/elm" > /dev/null 2> "$tmp/err"
    st=$?
    [ "$st" = 2 ] || die "mlm on ELECTRA: exit $st, want 2"
    grep -q 'cannot be trained with the mlm task' "$tmp/err" || die "mlm on ELECTRA: $(cat "$tmp/err")"
fi

[ $fail = 0 ] && echo "PASS: bert-train fine-tunes RoBERTa (sequence, token) and ELECTRA; mlm refused"
exit $fail
