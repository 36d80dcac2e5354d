#!/bin/sh
# bert-train end to end on a tiny model (hidden 8, one layer) built from
# --config with the vocabulary of data/sentiment: what the model directory
# holds, saves that survive a kill or a full disk (file size limit), the
# opt-in resume state, --out checked before training, and the refusals
# (one-class data, dropout outside [0, 1), a bad --rdrop), R-Drop, and --init from the bundled
# pre-trained encoder.  Each run takes a fraction of a second.
. "$(dirname "$0")/lib.sh"
TRAIN=$top_builddir/apps/bert-train
V=$top_srcdir/data/sentiment
needs -f "$V/vocab.txt" "$V"
mktmp

# check_err NAME: a sanitizer report in $tmp/err fails the test
check_err() {
    if grep -q -e 'Sanitizer' -e 'runtime error' "$tmp/err"; then
        die "$1: sanitizer report: $(head -5 "$tmp/err")"
    fi
}
# config FILE [KEY VALUE]...: a tiny BERT sequence-classification config
config() {
    f=$1; shift
    hd=0.1 ad=0.1
    while [ $# -gt 1 ]; do
        case $1 in hidden) hd=$2 ;; attention) ad=$2 ;; esac
        shift 2
    done
    cat > "$f" <<EOC
{"architectures": ["BertForSequenceClassification"], "model_type": "bert",
 "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
 "intermediate_size": 16, "max_position_embeddings": 32,
 "vocab_size": $(wc -l < "$V/vocab.txt"), "type_vocab_size": 2,
 "hidden_act": "gelu", "hidden_dropout_prob": $hd,
 "attention_probs_dropout_prob": $ad}
EOC
}
config "$tmp/config.json"
{ echo text,label
  for i in 1 2 3 4 5 6 7 8 9 10; do echo "good film $i,positive"; echo "bad film $i,negative"; done
} > "$tmp/train.csv"
# train NAME OUT ARGS...: bert-train on the tiny model into OUT, stderr in
# $tmp/err, exit status in $st
train() {
    name=$1 out=$2; shift 2
    "$TRAIN" --config "$tmp/config.json" --vocab "$V" --task sequence \
        --train "$tmp/train.csv" --out "$out" --max-length 16 "$@" \
        > /dev/null 2> "$tmp/err"
    st=$?
    check_err "$name"
}

# --- the model directory: the model only; resume state with --save-state --
train plain "$tmp/out" --epochs 1
[ $st = 0 ] || die "plain run: exit $st: $(cat "$tmp/err")"
for f in config.json model.safetensors vocab.txt tokenizer_config.json special_tokens_map.json; do
    [ -s "$tmp/out/$f" ] || die "plain run: no $f"
done
[ ! -e "$tmp/out/trainer_state.bin" ] && [ ! -e "$tmp/out/trainer_progress.txt" ] ||
    die "the resume state is opt-in, but --out has it: $(ls "$tmp/out")"
[ -z "$(ls -A "$tmp/out" | grep '^\.')" ] || die "temporary files left: $(ls -A "$tmp/out")"
train state "$tmp/st" --epochs 1 --save-state
[ $st = 0 ] && [ -s "$tmp/st/trainer_state.bin" ] && [ -s "$tmp/st/trainer_progress.txt" ] ||
    die "--save-state: exit $st, $(ls "$tmp/st")"
train resume "$tmp/st" --epochs 2 --resume
[ $st = 0 ] && grep -q 'resuming after epoch 1' "$tmp/err" || die "--resume: exit $st: $(cat "$tmp/err")"
# a state file claiming 2^63 steps is refused
cp -r "$tmp/st" "$tmp/st63"
printf '\000\000\000\000\000\000\000\200' |
    dd of="$tmp/st63/trainer_state.bin" bs=1 seek=16 conv=notrunc 2> /dev/null
train resume63 "$tmp/st63" --epochs 2 --resume
[ $st = 2 ] && grep -q 'implausible step count' "$tmp/err" || die "2^63 steps: exit $st: $(cat "$tmp/err")"

# --- item 2: a kill during a save leaves the previous model whole ---------
# The file size limit (SIGXFSZ kills the process) cuts the next save of
# model.safetensors (390 kB) short.  200 blocks are 100 or 200 kB.
cp "$tmp/out/model.safetensors" "$tmp/good.safetensors"
( ulimit -f 200; exec "$TRAIN" --config "$tmp/config.json" --vocab "$V" --task sequence \
    --train "$tmp/train.csv" --out "$tmp/out" --max-length 16 --epochs 1 --seed 7 ) \
    > /dev/null 2>&1 && die "item 2: the save should have been cut"
cmp -s "$tmp/out/model.safetensors" "$tmp/good.safetensors" ||
    die "item 2: a killed save damaged the previous model.safetensors"

# --- item 3: a full disk while saving is an error, the old files stay ------
# (SIGXFSZ ignored: write fails with EFBIG.)  900 blocks (450 or 900 kB)
# hold the model but not the 1.1 MB trainer_state.bin.
cp "$tmp/st/trainer_state.bin" "$tmp/good.state"
cp "$tmp/st/trainer_progress.txt" "$tmp/good.progress"
( trap '' XFSZ; ulimit -f 900; exec "$TRAIN" --config "$tmp/config.json" --vocab "$V" \
    --task sequence --train "$tmp/train.csv" --out "$tmp/st" --max-length 16 \
    --epochs 1 --seed 7 --save-state ) > /dev/null 2> "$tmp/err"; st=$?
[ $st = 2 ] || die "item 3: a failed trainer_state.bin write: exit $st, want 2"
grep -q 'cannot write .*trainer_state.bin' "$tmp/err" || die "item 3: message: $(cat "$tmp/err")"
cmp -s "$tmp/st/trainer_state.bin" "$tmp/good.state" && cmp -s "$tmp/st/trainer_progress.txt" "$tmp/good.progress" ||
    die "item 3: the previous resume state was damaged"
[ -z "$(ls -A "$tmp/st" | grep '^\.')" ] || die "item 3: temporary files left: $(ls -A "$tmp/st")"
( trap '' XFSZ; ulimit -f 200; exec "$TRAIN" --config "$tmp/config.json" --vocab "$V" \
    --task sequence --train "$tmp/train.csv" --out "$tmp/out" --max-length 16 \
    --epochs 1 --seed 7 ) > /dev/null 2> "$tmp/err"; st=$?
[ $st = 2 ] && grep -q 'cannot write .*model.safetensors\|write failed' "$tmp/err" ||
    die "item 3: a failed model write: exit $st: $(cat "$tmp/err")"
cmp -s "$tmp/out/model.safetensors" "$tmp/good.safetensors" || die "item 3: the previous model was damaged"

# --- item 12: a bad --out fails before training, with the real reason -----
touch "$tmp/file"
train notdir "$tmp/file/out" --epochs 1
[ $st = 2 ] && grep -q 'cannot create --out .*Not a directory' "$tmp/err" && ! grep -q 'examples' "$tmp/err" ||
    die "item 12: --out under a file: exit $st: $(cat "$tmp/err")"
if command -v unshare > /dev/null && unshare -rm true 2> /dev/null; then
    mkdir "$tmp/ro"
    unshare -rm sh -c 'mount -t tmpfs -o ro tmpfs "$1" && exec "$2" --config "$3/config.json" \
        --vocab "$4" --task sequence --train "$3/train.csv" --out "$1/out" --max-length 16' \
        sh "$tmp/ro" "$TRAIN" "$tmp" "$V" > /dev/null 2> "$tmp/err"; st=$?
    [ $st = 2 ] && grep -q 'Read-only file system' "$tmp/err" ||
        die "item 12: read-only --out: exit $st: $(cat "$tmp/err")"
fi

# --- --threads beyond the cores is lowered with a note; a bad value, or a
# numeric option out of range, is a usage error that names the option
train threads "$tmp/th" --epochs 1 --threads 1024
[ $st = 0 ] && grep -q 'more than the [0-9]* CPU' "$tmp/err" || die "--threads 1024: exit $st: $(cat "$tmp/err")"
train threads2 "$tmp/th" --epochs 1 --threads 4294967297
[ $st = 1 ] && grep -q 'from 1 to 1024' "$tmp/err" || die "--threads 2^32+1: exit $st: $(cat "$tmp/err")"
for o in batch-size accum max-length epochs lr mlm-probability; do
    train "$o 0" "$tmp/th" --$o 0
    [ $st = 1 ] && grep -q -- "--$o must" "$tmp/err" || die "--$o 0: exit $st: $(head -1 "$tmp/err")"
done

# an empty train.csv is called empty, not malformed
: > "$tmp/empty.csv"
"$TRAIN" --config "$tmp/config.json" --vocab "$V" --task sequence --train "$tmp/empty.csv" \
    --out "$tmp/e" > /dev/null 2> "$tmp/err"; st=$?
[ $st = 2 ] && grep -q 'empty.csv: empty file' "$tmp/err" || die "empty train.csv: exit $st: $(cat "$tmp/err")"

# --init with the labels in another order: the head's rows follow the names
"$TRAIN" --init "$V" --task sequence --train "$tmp/train.csv" --out "$tmp/swap" --max-length 16 \
    --labels positive,negative --lr 1e-12 --no-dropout --epochs 1 > /dev/null 2> "$tmp/err" ||
    die "--labels swapped: exit $?: $(cat "$tmp/err")"
grep -q 'classifier rows reordered' "$tmp/err" || die "--labels swapped: no note: $(cat "$tmp/err")"
S=$top_builddir/apps/bert-sentiment
"$S" --model "$V" 'a gorgeous film' 'a waste of time' | cut -f1,3 > "$tmp/want"
"$S" --model "$tmp/swap" 'a gorgeous film' 'a waste of time' | cut -f1,3 > "$tmp/got"
cmp -s "$tmp/want" "$tmp/got" || die "--labels swapped: labels moved: $(cat "$tmp/got")"
# the task message lists every task; --format is documented
"$TRAIN" --train x --out y 2> "$tmp/err"; grep -q 'mlm|embeddings|rtd' "$tmp/err" || die "task message: $(head -1 "$tmp/err")"
"$TRAIN" --help | grep -q -- '--format csv|conll|text' || die "--format not in --help"

# --- item 11: one-class training data, dropout outside [0, 1) -------------
{ echo text,label; echo "good,positive"; echo "fine,positive"; } > "$tmp/one.csv"
"$TRAIN" --config "$tmp/config.json" --vocab "$V" --task sequence --train "$tmp/one.csv" \
    --out "$tmp/one" --max-length 16 > /dev/null 2> "$tmp/err"; st=$?
[ $st = 2 ] && grep -q 'at least two labels' "$tmp/err" || die "item 11: one class: exit $st: $(cat "$tmp/err")"
for d in 5.0 1.0 -0.5; do
    config "$tmp/config.json" hidden "$d"
    train "dropout $d" "$tmp/d" --epochs 1
    [ $st = 2 ] && grep -q 'probability' "$tmp/err" || die "item 11: dropout $d: exit $st: $(cat "$tmp/err")"
done
config "$tmp/config.json" attention 1
train "dropout 1 --no-dropout" "$tmp/d" --epochs 1 --no-dropout
[ $st = 0 ] || die "item 11: dropout 1 with --no-dropout: exit $st: $(cat "$tmp/err")"
config "$tmp/config.json"

# --- R-Drop: trains (twice the rows a step), refuses a bad weight ---------
train rdrop "$tmp/rd" --epochs 2 --rdrop 1 --dev "$tmp/train.csv"
[ $st = 0 ] && [ -s "$tmp/rd/model.safetensors" ] && grep -q 'epoch 2: train loss .* accuracy' "$tmp/err" ||
    die "--rdrop 1: exit $st: $(cat "$tmp/err")"
train "rdrop -1" "$tmp/rdb" --epochs 1 --rdrop -1
[ $st = 2 ] && grep -q 'rdrop -1 is not a weight' "$tmp/err" || die "--rdrop -1: exit $st: $(cat "$tmp/err")"
train "rdrop nan" "$tmp/rdb" --epochs 1 --rdrop nan
[ $st = 1 ] && grep -q "bad number 'nan'" "$tmp/err" || die "--rdrop nan: exit $st: $(cat "$tmp/err")"

# The bundled pre-trained encoder (data/base-en) is a starting point for
# --init: an encoder (BertModel) of 128 positions that fine-tunes into a
# classifier of the same shape, which the tools load.
B=$top_srcdir/data/base-en
if [ -f "$B/model.safetensors" ]; then
    grep -q '"BertModel"' "$B/config.json" || die "base-en: not BertModel"
    grep -q '"max_position_embeddings": 128' "$B/config.json" || die "base-en: positions"
    printf 'text,label\na fine film,positive\na dull film,negative\n' > "$tmp/b.csv"
    "$TRAIN" --init "$B" --task sequence --train "$tmp/b.csv" --out "$tmp/from-base" \
        --epochs 1 -q > /dev/null 2> "$tmp/err" || die "--init base-en: exit $?: $(cat "$tmp/err")"
    check_err "--init base-en"
    grep -q '"BertForSequenceClassification"' "$tmp/from-base/config.json" &&
        grep -q '"max_position_embeddings": 128' "$tmp/from-base/config.json" ||
        die "--init base-en: $(cat "$tmp/from-base/config.json")"
    "$top_builddir/apps/bert-sentiment" --model "$tmp/from-base" 'a fine film' > /dev/null 2> "$tmp/err" ||
        die "bert-sentiment on the model from base-en: $(cat "$tmp/err")"
    # --task rtd: base-en as the discriminator's start, and as the generator
    # a tiny masked LM on base-en's vocabulary, trained here (base-en has no
    # MLM head, so it is refused as a generator); the discriminator is a
    # token classifier (original, replaced) that bert-tag loads and --init
    # fine-tunes
    printf 'The film was shown in Paris in 1999 and won a prize.\nShe wrote three books about the river.\n' > "$tmp/rtd.txt"
    sed -e 's/BertForSequenceClassification/BertForMaskedLM/' \
        -e "s/\"vocab_size\": [0-9]*/\"vocab_size\": $(wc -l < "$B/vocab.txt")/" \
        "$tmp/config.json" > "$tmp/gen-config.json"
    "$TRAIN" --config "$tmp/gen-config.json" --vocab "$B" --task mlm --train "$tmp/rtd.txt" \
        --out "$tmp/gen" --epochs 1 --max-length 16 -q > /dev/null 2> "$tmp/err" ||
        die "the generator (--task mlm): exit $?: $(cat "$tmp/err")"
    "$TRAIN" --init "$B" --generator "$B" --task rtd --train "$tmp/rtd.txt" --out "$tmp/rtd0" 2> "$tmp/err"; st=$?
    [ $st -eq 2 ] && grep -q 'not a masked-LM' "$tmp/err" || die "rtd with base-en as generator: exit $st: $(head -1 "$tmp/err")"
    "$TRAIN" --init "$B" --generator "$tmp/gen" --task rtd --train "$tmp/rtd.txt" \
        --dev "$tmp/rtd.txt" --out "$tmp/rtd" --epochs 1 --max-length 16 > /dev/null 2> "$tmp/err" ||
        die "--task rtd: exit $?: $(cat "$tmp/err")"
    check_err "--task rtd"
    grep -q 'dev replaced-token loss .* replaced P' "$tmp/err" || die "--task rtd: no dev line: $(cat "$tmp/err")"
    grep -q '"BertForTokenClassification"' "$tmp/rtd/config.json" &&
        grep -q '"1": "replaced"' "$tmp/rtd/config.json" || die "--task rtd: $(cat "$tmp/rtd/config.json")"
    "$top_builddir/apps/bert-tag" --model "$tmp/rtd" 'a fine film' > /dev/null 2> "$tmp/err" ||
        die "bert-tag on the discriminator: $(cat "$tmp/err")"
    "$TRAIN" --init "$tmp/rtd" --task sequence --train "$tmp/b.csv" --out "$tmp/from-rtd" \
        --epochs 1 -q > /dev/null 2> "$tmp/err" || die "--init from the discriminator: exit $?: $(cat "$tmp/err")"
    # rtd and --generator go together
    "$TRAIN" --init "$B" --task rtd --train "$tmp/rtd.txt" --out "$tmp/rtd2" 2> "$tmp/err"; st=$?
    [ $st -eq 1 ] && grep -q 'go together' "$tmp/err" || die "rtd without --generator: exit $st: $(head -1 "$tmp/err")"
    "$TRAIN" --init "$B" --generator "$tmp/from-base" --task rtd --train "$tmp/rtd.txt" --out "$tmp/rtd3" 2> "$tmp/err"; st=$?
    [ $st -eq 2 ] && grep -q 'not a masked-LM' "$tmp/err" || die "rtd with a classifier as generator: exit $st: $(head -1 "$tmp/err")"
else
    echo "note: data/base-en absent, --init from it not checked"
fi

exit $fail
