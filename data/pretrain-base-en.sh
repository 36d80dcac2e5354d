#!/bin/sh
# Pre-training of the English base encoder for issue #12 (not finished: see
# the note below).  Masked-LM with libbert's own trainer, resumable: run it
# again and it continues from the state in $STATE (outside the repository),
# within an epoch too (bert-train --save-every).
#
#   sh data/pretrain-base-en.sh [BUILD_DIR]     (env STATE, THREADS, SHARED)
#
# Model: BERT, 4 layers, hidden 256, 4 heads, intermediate 1024, 512
# positions (trained at 128), the cased 12,000-word vocabulary of data/ner
# (NER needs case; SST-2 does not mind it).  Corpus: ../shared/data/wiki_en
# train-*.txt, plus the text (never the labels) of SST-2 train and CoNLL-2003
# train: 163,586 lines, 113,241 chunks of 128 tokens (14.5 M tokens) an
# epoch.  Batch 64, lr 3e-4 (1,000 warm-up steps, linear decay over 10
# epochs), sinusoidal position start, dropout 0.1, seed 42.
#
# Status (2026-11-26): two epochs (226,482 chunks, 29 M tokens) on a 2-vCPU
# Xeon VM (family 6 model 207): the first at nice 19 beside other work, most
# of the second at 33 chunks/s on 2 threads (THREADS=2, the fourth session's
# trainer).  Dev MLM loss 6.02 (ppl 411) after epoch 1, 4.65 (ppl 104) after
# epoch 2.  Learning curve, one fixed fine-tune (SST-2 train, 1 epoch, batch
# 32, lr 2e-4, warm-up 0.06, seed 42; dev accuracy): from scratch 80.85%,
# after epoch 1 81.65%, after epoch 2 83.49% (the bundled sentiment model:
# 82.8%).  Issue #12 asks for 86%: many more epochs are needed.  Not
# committed (the state stays in $STATE); about 57 min an epoch at 33 chunks/s.
set -e
build=${1:-.}
shared=${SHARED:-$(cd "$(dirname "$0")/../.." && pwd)/shared}
state=${STATE:-/var/tmp/libbert-pretrain}
threads=${THREADS:-1}
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$state/vocab"
cp "$src/ner/vocab.txt" "$src/ner/tokenizer_config.json" \
   "$src/ner/special_tokens_map.json" "$state/vocab/"
if [ ! -s "$state/corpus.txt" ]; then
    python3 - "$shared" "$state/corpus.txt" <<'EOF'
import csv, glob, sys
shared, out = sys.argv[1], open(sys.argv[2] + ".tmp", "w")
for f in sorted(glob.glob(shared + "/data/wiki_en/train-*.txt")):
    for line in open(f):
        if line.strip():
            out.write(line.rstrip("\n") + "\n")
for r in csv.DictReader(open(shared + "/data/sst2/train.csv")):
    out.write(r["text"].strip() + "\n")
sent = []
for line in open(shared + "/data/conll2003/train.conll"):
    line = line.rstrip("\n")
    if not line.strip() or line.startswith("-DOCSTART-"):
        if sent:
            out.write(" ".join(sent) + "\n")
        sent = []
        continue
    sent.append(line.split("\t")[0])
if sent:
    out.write(" ".join(sent) + "\n")
out.close()
import os
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
EOF
fi
python3 - "$src/ner/config.json" "$state/config.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
for k in ("id2label", "label2id", "num_labels"):
    c.pop(k, None)
c.update(architectures=["BertForMaskedLM"], num_hidden_layers=4,
         max_position_embeddings=512)
json.dump(c, open(sys.argv[2], "w"), indent=2)
EOF
resume=""
[ -f "$state/base/trainer_state.bin" ] && resume=--resume
exec env OMP_WAIT_POLICY=passive "$build/apps/bert-train" \
    --config "$state/config.json" --vocab "$state/vocab" --task mlm \
    --train "$state/corpus.txt" --dev "$shared/data/wiki_en/valid.txt" \
    --dev-max 512 --out "$state/base" --epochs 10 --batch-size 64 --lr 3e-4 \
    --warmup 1000 --sinusoidal-positions --max-length 128 \
    --threads "$threads" --seed 42 --save-state --save-every 10 \
    --log-every 20 $resume
