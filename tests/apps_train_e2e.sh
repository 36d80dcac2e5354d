#!/bin/sh
# bert-train end to end on a tiny BERT (1 layer, hidden 32) built from
# --config with the vocabulary of data/sentiment, in seconds:
#  - sequence classification from a tiny CSV (text,text_pair,label), then
#    the written model directory loaded by bert-classify, whose labels for
#    the dev rows must be the gold ones (the best epoch, which is the one
#    saved, reports dev accuracy 1);
#  - token classification from a tiny CoNLL file, then the model loaded by
#    bert-tag (--format conll --aggregation first, the first-sub-token rule
#    bert-train evaluates with), whose tags for the dev sentences must be
#    the gold ones (the run reports entity F1 1).
# The data are made so that a few epochs learn them exactly: the label is
# a function of one word.
. "$(dirname "$0")/lib.sh"
TRAIN=$top_builddir/apps/bert-train
CLASSIFY=$top_builddir/apps/bert-classify
TAG=$top_builddir/apps/bert-tag
V=$top_srcdir/data/sentiment
needs -f "$V/vocab.txt" "$V"
mktmp

# config FILE ARCH: the tiny BERT
config() {
    cat > "$1" <<EOC
{"architectures": ["$2"], "model_type": "bert",
 "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
 "intermediate_size": 64, "max_position_embeddings": 64,
 "vocab_size": $(wc -l < "$V/vocab.txt"), "type_vocab_size": 2,
 "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
 "attention_probs_dropout_prob": 0.1}
EOC
}

# --- sequence classification: CSV -> bert-train -> bert-classify ---------
config "$tmp/seq.json" BertForSequenceClassification
nouns="film movie story plot cast music song book show play"
{
    echo "text,text_pair,label"
    for n in $nouns; do
        echo "a good $n,\"yes, really\",positive"
        echo "the $n was good,indeed,positive"
        echo "a bad $n,\"no, really\",negative"
        echo "the $n was bad,indeed,negative"
    done
} > "$tmp/train.csv"
{
    echo "text,text_pair,label"
    echo "a good day,sure,positive"
    echo "the day was bad,sure,negative"
    echo "good,ok,positive"
    echo "bad,ok,negative"
} > "$tmp/dev.csv"
"$TRAIN" --config "$tmp/seq.json" --vocab "$V" --task sequence \
    --train "$tmp/train.csv" --dev "$tmp/dev.csv" --pair-column text_pair \
    --out "$tmp/seq" --epochs 20 --batch-size 8 --lr 1e-2 --max-length 24 \
    --no-dropout > "$tmp/seq.out" 2> "$tmp/seq.err" ||
    die "bert-train sequence exited $?: $(head -c 400 "$tmp/seq.err")"
grep -q 'dev loss [0-9.]* accuracy 1.0000 macro-F1 1.0000' "$tmp/seq.err" ||
    die "sequence: the tiny data were not learned: $(cat "$tmp/seq.err")"
for f in config.json model.safetensors vocab.txt tokenizer_config.json; do
    [ -s "$tmp/seq/$f" ] || die "sequence: no $f in the model directory"
done
"$CLASSIFY" --model "$tmp/seq" --column text --pair-column text_pair \
    --prefix pred_ "$tmp/dev.csv" > "$tmp/classified.csv" 2> "$tmp/err" ||
    die "bert-classify on the trained model exited $?: $(cat "$tmp/err")"
# columns: text,text_pair,label (gold),pred_label,pred_score
awk -F, 'NR > 1 { print $3 " " $4 }' "$tmp/classified.csv" > "$tmp/pairs"
[ "$(wc -l < "$tmp/pairs")" = 4 ] || die "bert-classify: $(cat "$tmp/classified.csv")"
while read -r gold got; do
    [ "$gold" = "$got" ] || die "bert-classify: '$got' for a '$gold' row: $(cat "$tmp/classified.csv")"
done < "$tmp/pairs"

# --- token classification: CoNLL -> bert-train -> bert-tag ---------------
config "$tmp/tok.json" BertForTokenClassification
# tag of a word: the people, places and companies below, else O
tagof() {
    case $1 in
    john|mary|anna) echo B-PER ;; smith|jones) echo I-PER ;;
    paris|london|rome) echo B-LOC ;; acme) echo B-ORG ;; corp) echo I-ORG ;;
    *) echo O ;;
    esac
}
conll() { # SENTENCE...: one sentence per argument
    for s; do
        for w in $s; do printf '%s\t%s\n' "$w" "$(tagof "$w")"; done
        echo
    done
}
conll "john smith lives in paris" "mary works for acme corp" \
    "anna jones went to rome" "the film was good" "mary went to london" \
    "acme corp is in rome" "john lives in london" "anna works in paris" \
    "the story of mary jones" "a good film about john smith" \
    "rome and paris and london" "acme corp and acme" > "$tmp/train.conll"
conll "mary smith lives in rome" "acme corp works in london" \
    "the film is about anna" > "$tmp/dev.conll"
"$TRAIN" --config "$tmp/tok.json" --vocab "$V" --task token \
    --train "$tmp/train.conll" --dev "$tmp/dev.conll" --out "$tmp/tok" \
    --epochs 12 --batch-size 4 --lr 3e-3 --max-length 24 --no-dropout \
    > "$tmp/tok.out" 2> "$tmp/tok.err" ||
    die "bert-train token exited $?: $(head -c 400 "$tmp/tok.err")"
grep -q 'entity P 1.0000 R 1.0000 F1 1.0000, token accuracy 1.0000' "$tmp/tok.err" ||
    die "token: the tiny data were not learned: $(cat "$tmp/tok.err")"
for f in config.json model.safetensors vocab.txt tokenizer_config.json; do
    [ -s "$tmp/tok/$f" ] || die "token: no $f in the model directory"
done
printf 'mary smith lives in rome\nacme corp works in london\nthe film is about anna\n' |
    "$TAG" --model "$tmp/tok" --format conll --aggregation first \
    > "$tmp/tagged.conll" 2> "$tmp/err" ||
    die "bert-tag on the trained model exited $?: $(cat "$tmp/err")"
cmp -s "$tmp/tagged.conll" "$tmp/dev.conll" ||
    die "bert-tag's tags differ from the gold ones:
$(diff "$tmp/dev.conll" "$tmp/tagged.conll")"
# the model records the aggregation its dev F1 used, and bert-tag's default
# follows it
grep -q '"aggregation_strategy": "first"' "$tmp/tok/config.json" ||
    die "token: config.json does not record aggregation_strategy first"
printf 'mary smith lives in rome\nacme corp works in london\nthe film is about anna\n' |
    "$TAG" --model "$tmp/tok" --format conll > "$tmp/tagged2.conll" 2> "$tmp/err" &&
    cmp -s "$tmp/tagged2.conll" "$tmp/tagged.conll" ||
    die "bert-tag's default on the trained model is not its first aggregation"

[ $fail = 0 ] && echo "PASS: bert-train CSV -> bert-classify, CoNLL -> bert-tag"
exit $fail
