#!/bin/sh
# data/train-default-models.sh - reproduce the default models in data/
# (sentiment, ner) with libbert's own trainer, by fine-tuning the pre-trained
# English encoder data/base-en (itself made by data/pretrain-base-en.sh) on
# ../shared/data, on a CPU.
#
#   data/train-default-models.sh [BUILD_DIR [WORK_DIR [sentiment|ner]]]
#
# BUILD_DIR: where bert-train was built (default: the current directory);
# WORK_DIR:  scratch space (default /tmp/libbert-default-models);
# the third argument runs one of the two fine-tunes only (they are
# independent: run both at once on two cores, one thread each).
# Environment: SHARED_DIR (default <srcdir>/../shared), BASE (default
# <srcdir>/data/base-en), NER_BASE (default: BASE), THREADS (default 1),
# NEGATION (default 2: N copies of the negation rows of
# data/sentiment-negation.py, a python3 script, appended to the sentiment
# train file; 0 leaves them out, the recipe before the twenty-first session;
# a different N needs its own WORK_DIR).
# Both shipped models come from data/base-en as it is.  (The NER model of
# the fifth to eighth sessions came from its masked-LM stage, the data/base-en
# of commit 83998f5: NER_BASE takes such an encoder.)
# Results go to WORK_DIR/sentiment and WORK_DIR/ner (complete Hugging Face
# model directories); copy config.json, model.safetensors, vocab.txt,
# tokenizer_config.json and special_tokens_map.json into data/sentiment and
# data/ner.  Each fine-tune is skipped when its output already exists.
#
#  sentiment: SST-2 train, half of the rows with PTB contractions undone
#     ("does n't" -> "doesn't") so that raw text works, plus twice the
#     negation rows ("it 's never dull .", label flipped); the tokenizer
#     lower-cases (SST-2 is lower-cased); layer-wise lr decay 0.8, lr 3e-4,
#     2 epochs (the last is the best on dev for the shipped seed).
#  ner: CoNLL-2003 train, cased, every sub-token labelled (B-X continued as
#     I-X); 6 epochs, the best dev epoch kept.  bert-train records
#     aggregation "first" in config.json: bert-tag then prints the entities
#     the dev F1 counted, whole words only.
# Times: see the model cards (a few minutes an epoch on one core).
set -eu

SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-.}" && pwd) # absolute: the fine-tunes run in WORK
WORK=${2:-/tmp/libbert-default-models}
ONLY=${3:-}
SHARED=${SHARED_DIR:-$SRCDIR/../shared}
BASE=${BASE:-$SRCDIR/data/base-en}
NER_BASE=${NER_BASE:-$BASE}
THREADS=${THREADS:-1}
NEGATION=${NEGATION:-2}
D=$SHARED/data
TRAIN_BIN=$BUILD/apps/bert-train
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

[ -x "$TRAIN_BIN" ] || { echo "$0: $TRAIN_BIN not found: give the build directory" >&2; exit 1; }
[ -d "$D/sst2" ] || { echo "$0: $D not found (set SHARED_DIR)" >&2; exit 1; }
for b in "$BASE" "$NER_BASE"; do
    [ -s "$b/model.safetensors" ] || { echo "$0: no encoder in $b (set BASE or NER_BASE, or run data/pretrain-base-en.sh)" >&2; exit 1; }
done
case $ONLY in ''|sentiment|ner) ;; *) echo "$0: unknown model '$ONLY'" >&2; exit 1;; esac
case $NEGATION in ''|*[!0-9]*) echo "$0: NEGATION must be a count (0, 1, 2 ...), not '$NEGATION'" >&2; exit 1;; esac
mkdir -p "$WORK"
cd "$WORK"

# --- sentiment -----------------------------------------------------------------
# Every second row gets PTB contractions undone (the label is unchanged), so
# the model sees both "does n't" (SST-2 dev) and "doesn't" (raw text).
if [ "$ONLY" != ner ]; then
    # Written whole, then renamed: an interrupted run never leaves a half file.
    if [ ! -s sst2_train_mixed.csv ]; then
        awk 'NR>1 && NR%2==0 {
            gsub(/ ca n'\''t/, " can'\''t"); gsub(/^ca n'\''t/, "can'\''t");
            gsub(/ wo n'\''t/, " won'\''t"); gsub(/^wo n'\''t/, "won'\''t");
            gsub(/ n'\''t/, "n'\''t");
            gsub(/ '\''s /, "'\''s "); gsub(/ '\''re /, "'\''re "); gsub(/ '\''ve /, "'\''ve ");
            gsub(/ '\''ll /, "'\''ll "); gsub(/ '\''d /, "'\''d "); gsub(/ '\''m /, "'\''m ") }
            { print }' "$D/sst2/train.csv" > sst2_train_mixed.tmp
        if [ "$NEGATION" -gt 0 ]; then
            python3 "$SRCDIR/data/sentiment-negation.py" "$D/sst2/train.csv" \
                "$D/ud_en_ewt/train.conll" > negation.csv
            i=0
            while [ "$i" -lt "$NEGATION" ]; do
                tail -n +2 negation.csv >> sst2_train_mixed.tmp; i=$((i + 1))
            done
        fi
        mv sst2_train_mixed.tmp sst2_train_mixed.csv
    fi
    [ -s sentiment/model.safetensors ] || "$TRAIN_BIN" --init "$BASE" \
        --task sequence --lowercase --train sst2_train_mixed.csv \
        --dev "$D/sst2/dev.csv" --out sentiment --threads "$THREADS" \
        --batch-size 32 --max-length 128 --lr 3e-4 --layer-lr-decay 0.8 \
        --warmup 0.06 --epochs 2 --seed 42
fi

# --- NER -------------------------------------------------------------------------
if [ "$ONLY" != sentiment ]; then
    [ -s ner/model.safetensors ] || "$TRAIN_BIN" --init "$NER_BASE" --task token \
        --cased --label-all-subtokens --train "$D/conll2003/train.conll" \
        --dev "$D/conll2003/dev.conll" --out ner --threads "$THREADS" \
        --batch-size 32 --max-length 128 --lr 3e-4 --warmup 0.06 --epochs 6 \
        --seed 42
fi

echo "done: $WORK"
