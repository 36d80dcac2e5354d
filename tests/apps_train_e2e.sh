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
#    the gold ones (the run reports entity F1 1);
#  - the dev entity F1 bert-train reports equals the F1 of bert-tag's
#    default output, on words that bert-tag's aggregation splits.
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
    paris|london|rome|u.s.|u.k.|st.louis) echo B-LOC ;;
    acme|acme-corp) echo B-ORG ;; corp) echo I-ORG ;; i.|j.|j.r.) echo B-PER ;;
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
    --epochs 24 --batch-size 4 --lr 3e-3 --max-length 24 --no-dropout \
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

# --- the dev entity F1 bert-train reports is the F1 of what bert-tag prints
# A model trained too briefly to be right, on words that are one CoNLL word
# but several words for bert-tag's aggregation ("u.s." is u . s .): its
# best epoch's dev F1 must equal the F1 of bert-tag's default output on the
# dev sentences (words joined by spaces), exact spans as conlleval.  The
# last dev sentence is 70 tokens: the model's 64 positions end it inside
# "anna" (ann | ##a), where bert-tag's entity can only end at "ann", which
# the gold "anna" does not match; "went to u.k." is cut away.  Training
# examples are cut at 32 tokens: bert-train must still score the dev set
# at the model's 64, where bert-tag cuts it.
conll "u.s. officials met j. smith in paris" "acme-corp hired mary in st.louis" \
    "i. jones and j.r. smith went to rome" "the u.s. film was good" \
    "mary went to u.k. and st.louis" "acme-corp is in rome" \
    "john lives in the u.k." "anna works in u.s. and paris" > "$tmp/p_train.conll"
conll "mary smith met u.s. officials in rome" "j. smith works for acme-corp" \
    "anna went to st.louis and the u.k." "the film is about i. jones" \
    "acme-corp and u.s. in paris" \
    "$(for i in 1 2 3 4 5 6 7 8; do printf 'anna went to rome and '; done)then went to the film anna went to u.k." \
    > "$tmp/p_dev.conll"
"$TRAIN" --config "$tmp/tok.json" --vocab "$V" --task token \
    --label-all-subtokens --train "$tmp/p_train.conll" \
    --dev "$tmp/p_dev.conll" --out "$tmp/ptok" --epochs 20 --batch-size 4 \
    --lr 3e-3 --max-length 32 --seed 3 > /dev/null 2> "$tmp/ptok.err" ||
    die "bert-train (punctuation words) exited $?: $(head -c 400 "$tmp/ptok.err")"
want=$(grep 'best, saved' "$tmp/ptok.err" | tail -n 1 | sed 's/.* F1 \([0-9.]*\),.*/\1/')
# gold spans from the CoNLL tags, predicted ones from bert-tag's inline
# output; one "start:end:TYPE" list per sentence, then P/R/F1
awk -F'\t' 'NF == 2 { w[++n] = $1; t[n] = $2; next }
    n { pos = 0; out = ""; cur = ""
        for (i = 1; i <= n; i++) {
            s = pos; pos += length(w[i]) + 1
            split(t[i], bt, "-")
            if (t[i] == "O" || bt[1] == "B" || bt[2] != ty) {
                if (cur != "") out = out " " cur ":" ty
                cur = ""; ty = ""
            }
            if (t[i] != "O") { if (cur == "") cs = s; ty = bt[2]; cur = cs ":" (pos - 1) }
        }
        if (cur != "") out = out " " cur ":" ty
        print out; n = 0 }' "$tmp/p_dev.conll" > "$tmp/p_gold"
awk -F'\t' 'NF == 2 { printf "%s%s", (n++ ? " " : ""), $1; next } n { print ""; n = 0 }' \
    "$tmp/p_dev.conll" | "$TAG" --model "$tmp/ptok" --format inline > "$tmp/p_inline" 2> "$tmp/err" ||
    die "bert-tag on the punctuation model exited $?: $(cat "$tmp/err")"
awk '{ s = $0; out = ""; pos = 0
       while ((i = index(s, "[")) > 0) {
           pos += i - 1; s = substr(s, i + 1); j = index(s, "](")
           if (j == 0) { pos++; continue }
           txt = substr(s, 1, j - 1); s = substr(s, j + 2); k = index(s, ")")
           out = out " " pos ":" (pos + length(txt)) ":" substr(s, 1, k - 1)
           s = substr(s, k + 1); pos += length(txt)
       }
       print out }' "$tmp/p_inline" > "$tmp/p_pred"
got=$(paste -d '|' "$tmp/p_gold" "$tmp/p_pred" | awk -F'|' '
    { ng = split($1, G, " "); np = split($2, P, " ")
      for (i = 1; i <= ng; i++) seen[G[i]] = 1
      for (i = 1; i <= np; i++) if (P[i] in seen) tp++
      delete seen; TG += ng; TP += np }
    END { p = TP ? tp / TP : 0; r = TG ? tp / TG : 0
          printf "%.4f", p + r ? 2 * p * r / (p + r) : 0 }')
[ -n "$want" ] && [ "$want" = "$got" ] ||
    die "bert-train's dev F1 '$want' is not the F1 of bert-tag's output, $got:
$(paste -d '\n' "$tmp/p_gold" "$tmp/p_pred" "$tmp/p_inline")"
echo "dev entity F1 of the briefly trained model: bert-train $want, bert-tag $got"

[ $fail = 0 ] && echo "PASS: bert-train CSV -> bert-classify, CoNLL -> bert-tag"
exit $fail
