#!/bin/sh
# data/train-default-models.sh - reproduce the default models in data/ with
# libbert's own tools, from ../shared/data, on a CPU.
#
#   data/train-default-models.sh [BUILD_DIR] [WORK_DIR]
#
# BUILD_DIR: where bert-vocab and bert-train were built (default: the
#            current directory, i.e. run it from a build tree);
# WORK_DIR:  scratch space (default /tmp/libbert-default-models).
# Environment: SHARED_DIR (default <srcdir>/../shared), THREADS (default 1).
# Results go to WORK_DIR/sentiment and WORK_DIR/ner (complete Hugging Face
# model directories); copy config.json, model.safetensors, vocab.txt,
# tokenizer_config.json and special_tokens_map.json into data/sentiment and
# data/ner.  Each stage is skipped when its output already exists.
#
# Stages (times measured on the shared 2-vCPU machine, see the model cards):
#  1. bert-vocab: two 12,000-token WordPiece vocabularies learned from the
#     Wikipedia text + the CoNLL-2003 train tokens + the SST-2 train texts:
#     uncased (sentiment) and cased (NER).  (seconds)
#  2. bert-train --task embeddings: word2vec skip-gram over the WordPiece ids
#     of the Wikipedia text (+ SST-2 texts / + CoNLL tokens), one pass for
#     sentiment, three for NER; the vectors become the word embeddings of a
#     fresh BERT (hidden 256; 2 layers for sentiment, 3 for NER).  (5-13 min)
#  3. bert-train --task sequence on SST-2 train, half of the rows with PTB
#     contractions undone ("does n't" -> "doesn't") so that raw text works;
#     lower-casing tokenizer; best dev epoch kept.
#  4. bert-train --task token on CoNLL-2003 train (cased, every sub-token
#     labelled, sinusoidal initial positions), 12 epochs; best dev epoch.
#     (~45 min)
set -eu

SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-.}
WORK=${2:-/tmp/libbert-default-models}
SHARED=${SHARED_DIR:-$SRCDIR/../shared}
THREADS=${THREADS:-1}
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

# --- text for the vocabularies and embeddings ------------------------------
# CoNLL sentences as lines of space-joined tokens; SST-2 texts (CSV: the
# text is quoted only when it holds a comma or a quote).
[ -s conll_train.txt ] || awk -F'\t' 'NF==2{printf "%s%s", (n++?" ":""), $1; next} {if(n) print ""; n=0}' \
    "$D/conll2003/train.conll" > conll_train.txt
[ -s sst2_train.txt ] || awk 'NR>1{ if (substr($0,1,1)=="\"") { sub(/,[a-z]+$/,""); s=substr($0,2,length($0)-2); gsub(/""/,"\"",s); print s } else { sub(/,[a-z]+$/,""); print } }' \
    "$D/sst2/train.csv" > sst2_train.txt

# --- 1. vocabularies ---------------------------------------------------------
[ -s vocab_uncased/vocab.txt ] || "$VOCAB_BIN" -q --lowercase --out vocab_uncased \
    --vocab-size 12000 --min-frequency 2 --model-max-length 128 \
    "$D"/wiki_en/train-0*.txt sst2_train.txt conll_train.txt
[ -s vocab_cased/vocab.txt ] || "$VOCAB_BIN" -q --out vocab_cased \
    --vocab-size 12000 --min-frequency 2 --model-max-length 128 \
    "$D"/wiki_en/train-0*.txt conll_train.txt sst2_train.txt

# --- 2. word-embedding pre-training -------------------------------------------
config() { # $1 = layers
    printf '{"architectures": ["BertForMaskedLM"], "model_type": "bert",
 "vocab_size": 12000, "hidden_size": 256, "num_hidden_layers": %s,
 "num_attention_heads": 4, "intermediate_size": 1024, "hidden_act": "gelu",
 "max_position_embeddings": 128, "type_vocab_size": 2,
 "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.1,
 "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02,
 "pad_token_id": 0}\n' "$1"
}
config 2 > config_sentiment.json
config 3 > config_ner.json
if [ ! -s emb_sentiment/model.safetensors ]; then
    cat "$D"/wiki_en/train-0*.txt sst2_train.txt > emb_sentiment.txt
    "$TRAIN_BIN" --config config_sentiment.json --vocab vocab_uncased --lowercase \
        --task embeddings --train emb_sentiment.txt --out emb_sentiment --epochs 1
fi
if [ ! -s emb3_ner/model.safetensors ]; then
    cat "$D"/wiki_en/train-0*.txt conll_train.txt > emb_ner.txt
    "$TRAIN_BIN" --config config_ner.json --vocab vocab_cased --cased \
        --task embeddings --train emb_ner.txt --out emb3_ner --epochs 3
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
[ -s sentiment/model.safetensors ] || "$TRAIN_BIN" --init emb_sentiment \
    --vocab vocab_uncased --task sequence --lowercase --train sst2_train_mixed.csv \
    --dev "$D/sst2/dev.csv" --out sentiment --threads "$THREADS" --batch-size 32 \
    --max-length 128 --lr 5e-4 --warmup 0.06 --epochs 2 --seed 42

# --- 4. NER --------------------------------------------------------------------
# Every sub-token is labelled (B-X continued as I-X), which also makes the
# per-token output clean for the pipeline's aggregation; position embeddings
# start as sinusoids.
[ -s ner/model.safetensors ] || "$TRAIN_BIN" --init emb3_ner --vocab vocab_cased \
    --task token --cased --label-all-subtokens --sinusoidal-positions \
    --train "$D/conll2003/train.conll" --dev "$D/conll2003/dev.conll" --out ner \
    --threads "$THREADS" --batch-size 32 --max-length 128 --lr 5e-4 \
    --warmup 0.06 --epochs 12 --seed 42

echo "done: $WORK/sentiment and $WORK/ner"
