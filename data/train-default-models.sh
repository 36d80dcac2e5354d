#!/bin/sh
# data/train-default-models.sh - reproduce the default models in data/ with
# libbert's own tools, from ../shared/data, on a CPU.
#
#   data/train-default-models.sh [BUILD_DIR] [WORK_DIR]
#
# BUILD_DIR: where bert-vocab and bert-train were built (default: the
#            current directory, i.e. run it from a build tree);
# WORK_DIR:  scratch space (default /tmp/libbert-default-models).
# Environment: SHARED_DIR (default <srcdir>/../shared), THREADS (default 1),
#              PRETRAIN_MINUTES (default 55).
# Results go to WORK_DIR/sentiment and WORK_DIR/ner (complete Hugging Face
# model directories); copy config.json, model.safetensors, vocab.txt,
# tokenizer_config.json and special_tokens_map.json into data/sentiment and
# data/ner.  Each stage is skipped when its output already exists.
#
# Stages (times measured on the shared 2-vCPU machine, see the model cards):
#  1. bert-vocab: a cased 12,000-token WordPiece vocabulary from the
#     Wikipedia text + the CoNLL-2003 train tokens + the SST-2 train texts.
#  2. bert-train --task mlm: a 3-layer, 256-wide BERT pre-trained from
#     scratch on the same text (CoNLL and SST-2 texts twice) for
#     PRETRAIN_MINUTES.
#  3. bert-train --task sequence on SST-2 train (half of the rows with PTB
#     contractions undone, "does n't" -> "doesn't", so that raw text works),
#     lower-casing tokenizer; best dev epoch kept.
#  4. bert-train --task token on CoNLL-2003 train (cased), best dev epoch.
set -eu

SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-.}
WORK=${2:-/tmp/libbert-default-models}
SHARED=${SHARED_DIR:-$SRCDIR/../shared}
THREADS=${THREADS:-1}
PRETRAIN_MINUTES=${PRETRAIN_MINUTES:-55}
D=$SHARED/data
VOCAB_BIN=$BUILD/apps/bert-vocab
TRAIN_BIN=$BUILD/apps/bert-train
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

for f in "$VOCAB_BIN" "$TRAIN_BIN"; do
    [ -x "$f" ] || { echo "$0: $f not found: give the build directory" >&2; exit 1; }
done
[ -d "$D/sst2" ] || { echo "$0: $D not found (set SHARED_DIR)" >&2; exit 1; }
mkdir -p "$WORK"
cd "$WORK"

# --- text for the vocabulary and MLM -------------------------------------
# CoNLL sentences as lines of space-joined tokens; SST-2 texts (CSV: the
# text is quoted only when it holds a comma or a quote).
[ -s conll_train.txt ] || awk -F'\t' 'NF==2{printf "%s%s", (n++?" ":""), $1; next} {if(n) print ""; n=0}' \
    "$D/conll2003/train.conll" > conll_train.txt
[ -s sst2_train.txt ] || awk 'NR>1{ if (substr($0,1,1)=="\"") { sub(/,[a-z]+$/,""); s=substr($0,2,length($0)-2); gsub(/""/,"\"",s); print s } else { sub(/,[a-z]+$/,""); print } }' \
    "$D/sst2/train.csv" > sst2_train.txt

# --- 1. vocabulary ---------------------------------------------------------
[ -s vocab/vocab.txt ] || "$VOCAB_BIN" -q --out vocab --vocab-size 12000 \
    --min-frequency 2 --model-max-length 128 \
    "$D"/wiki_en/train-0*.txt conll_train.txt sst2_train.txt

# --- 2. MLM pre-training ---------------------------------------------------
cat > config_pretrain.json <<'EOF'
{"architectures": ["BertForMaskedLM"], "model_type": "bert",
 "vocab_size": 12000, "hidden_size": 256, "num_hidden_layers": 3,
 "num_attention_heads": 4, "intermediate_size": 1024, "hidden_act": "gelu",
 "max_position_embeddings": 128, "type_vocab_size": 2,
 "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.1,
 "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02,
 "pad_token_id": 0}
EOF
if [ ! -s pretrain/model.safetensors ]; then
    cat "$D"/wiki_en/train-0*.txt conll_train.txt conll_train.txt \
        sst2_train.txt sst2_train.txt > mlm_train.txt
    "$TRAIN_BIN" --config config_pretrain.json --vocab vocab --task mlm \
        --train mlm_train.txt --dev "$D/wiki_en/valid.txt" --dev-max 300 \
        --out pretrain --threads "$THREADS" --batch-size 32 --max-length 128 \
        --lr 7e-4 --warmup 150 --epochs 0.55 --max-minutes "$PRETRAIN_MINUTES" \
        --log-every 25 --seed 42
fi

# --- 3. sentiment ------------------------------------------------------------
# Every second row gets PTB contractions undone (the label is unchanged), so
# the model sees both "does n't" (SST-2 dev) and "doesn't" (raw text).
[ -s sst2_train_mixed.csv ] || awk 'NR>1 && NR%2==0 {
        gsub(/ ca n'\''t/, " can'\''t"); gsub(/^ca n'\''t/, "can'\''t");
        gsub(/ wo n'\''t/, " won'\''t"); gsub(/^wo n'\''t/, "won'\''t");
        gsub(/ n'\''t/, "n'\''t");
        gsub(/ '\''s /, "'\''s "); gsub(/ '\''re /, "'\''re "); gsub(/ '\''ve /, "'\''ve ");
        gsub(/ '\''ll /, "'\''ll "); gsub(/ '\''d /, "'\''d "); gsub(/ '\''m /, "'\''m ") }
        { print }' "$D/sst2/train.csv" > sst2_train_mixed.csv
[ -s sentiment/model.safetensors ] || "$TRAIN_BIN" --init pretrain --vocab vocab \
    --task sequence --lowercase --train sst2_train_mixed.csv --dev "$D/sst2/dev.csv" \
    --out sentiment --threads "$THREADS" --batch-size 32 --max-length 128 \
    --lr 1e-4 --warmup 0.06 --epochs 3 --seed 42

# --- 4. NER --------------------------------------------------------------------
[ -s ner/model.safetensors ] || "$TRAIN_BIN" --init pretrain --vocab vocab \
    --task token --cased --train "$D/conll2003/train.conll" \
    --dev "$D/conll2003/dev.conll" --out ner --threads "$THREADS" \
    --batch-size 32 --max-length 128 --lr 2e-4 --warmup 0.06 --epochs 6 --seed 42

echo "done: $WORK/sentiment and $WORK/ner"
