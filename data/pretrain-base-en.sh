#!/bin/sh
# data/pretrain-base-en.sh - reproduces data/base-en, the pre-trained English
# encoder the default models are fine-tuned from (issue #12), with libbert's
# own trainer: masked-LM, resumable (run it again and it continues from the
# state in $STATE, outside the repository, within an epoch too).
#
#   sh data/pretrain-base-en.sh [BUILD_DIR]
#   env: STATE (default /var/tmp/libbert-pretrain), THREADS (1), SHARED
#        (default <srcdir>/../shared), OUT (default <srcdir>/data/base-en)
#
# Model: BERT, 4 layers, hidden 256, 4 heads, intermediate 1024, the cased
# 12,000-word vocabulary of the NER model (NER needs case; the sentiment
# model lower-cases its input, which this vocabulary also covers).
# Corpus: ../shared/data/wiki_en train-*.txt, plus the text (never the
# labels) of SST-2 train and CoNLL-2003 train: 163,586 lines, 113,241 chunks
# of 128 tokens (14.5 M tokens) an epoch.  Batch 64, AdamW, peak lr 3e-4
# after 1,000 warm-up steps, dropout 0.1, 15% masking (80/10/10), seed 42,
# sinusoidal initial positions.
#
# Stages (each skipped once done):
#  1. corpus and config (seconds);
#  2. masked-LM epochs 1-2, the learning rate's linear decay spanning 10
#     epochs (--stop-after-epochs: the run was first planned for 10); the
#     model after epoch 1 (perplexity 411) is kept as the generator of 5;
#  3. masked-LM epochs 3 to 3.5, resumed with --epochs 3.5: the rate falls
#     linearly from where it was to 0 (a cool-down, which the short budget
#     needed);
#  4. export of the masked LM: the position table cut to the 128 positions
#     training used (rows 128-511 were never trained), max length 128;
#  5. ELECTRA's replaced-token detection (bert-train --task rtd) from that
#     masked LM, with the epoch-1 model as the frozen generator (the
#     3.5-epoch model itself makes replacements too plausible to learn
#     from), lr 1e-4 after 300 warm-up steps, batch 64, seed 42, cased; run
#     as it happened, in four legs resumed with a longer --epochs (0.8,
#     1.3, 2.8, 4.0): the trainer counts a cut epoch as one, so the legs
#     train 0.8, 0.3, 0.8 and 1.0 of a pass (5,133 steps, 42.0 M tokens),
#     and each resume restarts the linear decay from where the new horizon
#     puts it;
#  6. export of that discriminator's encoder as a BertModel (its
#     original/replaced head dropped): data/base-en of the ninth to
#     nineteenth sessions;
#  7. (twentieth session) a second, weaker generator: masked LM on a
#     2-layer model of the same width, from scratch, one epoch, lr 5e-4
#     after 500 warm-up steps (dev perplexity 568);
#  8. replaced-token detection again, 3 passes from the encoder of 6 with
#     the generator of 7 (a fresh head), lr 1e-4 after 300 warm-up steps,
#     linear decay to 0 (5,310 steps, 43.5 M tokens);
#  9. export of 8's encoder to OUT.  (The shipped file continued the
#     shipped encoder of 6, not this script's rebuild of it, whose bits
#     differ; THREADS=2 as run.)
# Time: about 57 min an epoch of masked LM on 2 threads of a 2-vCPU Xeon VM
# (33 chunks/s with the sixth session's trainer, 51-54 with the seventh's),
# and 33 chunks/s of replaced-token detection (2.9 h for its four legs);
# on the Zen 5 VM of the twentieth session, 2 threads: 7 took 12 min (158
# chunks/s), 8 took 91 min (62-67 chunks/s);
# see data/base-en/MODEL_CARD.md.
set -e
build=${1:-.}
src=$(cd "$(dirname "$0")" && pwd)
shared=${SHARED:-$src/../../shared}
state=${STATE:-/var/tmp/libbert-pretrain}
threads=${THREADS:-1}
out=${OUT:-$src/base-en}
[ -x "$build/apps/bert-train" ] || {
    echo "$0: $build/apps/bert-train not found: give the build directory" >&2
    exit 1
}
[ -d "$shared/data/wiki_en" ] || {
    echo "$0: $shared/data/wiki_en not found (set SHARED)" >&2
    exit 1
}
mkdir -p "$state/vocab"
cp "$src/ner/vocab.txt" "$src/ner/tokenizer_config.json" \
   "$src/ner/special_tokens_map.json" "$state/vocab/"

# --- 1. corpus and config ------------------------------------------------------
if [ ! -s "$state/corpus.txt" ]; then
    python3 - "$shared" "$state/corpus.txt" <<'EOF'
import csv, glob, os, sys
shared, path = sys.argv[1], sys.argv[2]
out = open(path + ".tmp", "w")
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
os.rename(path + ".tmp", path)
EOF
fi
python3 - "$src/ner/config.json" "$state/config.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
for k in ("id2label", "label2id", "num_labels", "aggregation_strategy"):
    c.pop(k, None)
c.update(architectures=["BertForMaskedLM"], num_hidden_layers=4,
         max_position_embeddings=512)
json.dump(c, open(sys.argv[2], "w"), indent=2)
EOF

# --- 2. and 3. masked-LM -------------------------------------------------------
# epochs_done DIR: the epochs the resumable run in DIR has finished
epochs_done() {
    [ -f "$1/trainer_progress.txt" ] || { echo 0; return; }
    cut -d' ' -f1 "$1/trainer_progress.txt"
}
# pretrain DIR OPTIONS...: bert-train on the corpus into DIR, with the
# options both objectives share, resumed when DIR holds a state
pretrain() {
    dir=$1; shift
    resume=""
    [ -f "$dir/trainer_state.bin" ] && resume=--resume
    env OMP_WAIT_POLICY=passive "$build/apps/bert-train" \
        --train "$state/corpus.txt" --dev "$shared/data/wiki_en/valid.txt" \
        --dev-max 512 --out "$dir" --batch-size 64 --max-length 128 \
        --threads "$threads" --seed 42 --save-state --save-every 10 \
        --log-every 20 $resume "$@"
}
train() { # $@: the stage's schedule options
    pretrain "$state/base" --config "$state/config.json" --vocab "$state/vocab" \
        --task mlm --lr 3e-4 --warmup 1000 --sinusoidal-positions "$@"
}
if [ ! -s "$state/generator/model.safetensors" ]; then
    [ "$(epochs_done "$state/base")" -ge 1 ] || train --epochs 10 --stop-after-epochs 1
    [ "$(epochs_done "$state/base")" -eq 1 ] || {
        echo "$0: $state/base is past epoch 1 and $state/generator is missing" >&2
        exit 1
    }
    rm -rf "$state/generator.tmp"
    mkdir -p "$state/generator.tmp"
    cp "$state/base"/*.json "$state/base/vocab.txt" "$state/base/model.safetensors" \
       "$state/generator.tmp/"
    mv "$state/generator.tmp" "$state/generator"
fi
[ "$(epochs_done "$state/base")" -ge 2 ] || train --epochs 10 --stop-after-epochs 2
train --epochs 3.5

# --- 4. export of the masked LM ------------------------------------------------
# export_model SRC DST POSITIONS ENCODER: SRC's model into DST, the position table
# cut to its first POSITIONS rows (0: as it is); ENCODER=1 drops the head
# (classifier.*, cls.*) and its labels, leaving a BertModel.
export_model() {
    mkdir -p "$2"
    python3 - "$1" "$2" "$3" "$4" <<'EOF'
import json, os, shutil, struct, sys
src, dst, P, encoder = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
f = open(src + "/model.safetensors", "rb")
n = struct.unpack("<Q", f.read(8))[0]
head = json.loads(f.read(n))
meta = head.pop("__metadata__", None)
tensors, blobs, off = {}, [], 0
for name in sorted(head, key=lambda k: head[k]["data_offsets"][0]):
    if encoder and name.startswith(("classifier.", "cls.")):
        continue
    t = head[name]
    f.seek(8 + n + t["data_offsets"][0])
    data = f.read(t["data_offsets"][1] - t["data_offsets"][0])
    shape = t["shape"]
    if P and name.endswith("position_embeddings.weight"):
        data = data[: P * (len(data) // shape[0])]
        shape = [P] + shape[1:]
    tensors[name] = {"dtype": t["dtype"], "shape": shape,
                     "data_offsets": [off, off + len(data)]}
    blobs.append(data)
    off += len(data)
if meta:
    tensors = dict([("__metadata__", meta)] + list(tensors.items()))
h = json.dumps(tensors, separators=(",", ":")).encode()
h += b" " * (-(8 + len(h)) % 64)  # the data 64-byte aligned, as libbert writes
with open(dst + "/model.safetensors.tmp", "wb") as o:
    o.write(struct.pack("<Q", len(h)) + h)
    for b in blobs:
        o.write(b)
os.rename(dst + "/model.safetensors.tmp", dst + "/model.safetensors")
c = json.load(open(src + "/config.json"))
t = json.load(open(src + "/tokenizer_config.json"))
if P:
    c["max_position_embeddings"] = t["model_max_length"] = P
if encoder:
    for k in ("id2label", "label2id", "num_labels", "aggregation_strategy",
              "classifier_dropout"):
        c.pop(k, None)
    c["architectures"] = ["BertModel"]
json.dump(c, open(dst + "/config.json", "w"), indent=2)
json.dump(t, open(dst + "/tokenizer_config.json", "w"), indent=2)
for fn in ("vocab.txt", "special_tokens_map.json"):
    shutil.copy(src + "/" + fn, dst + "/" + fn)
EOF
}
mlm=$state/base-128
export_model "$state/base" "$mlm" 128 0

# --- 5. replaced-token detection -----------------------------------------------
rtd() { # $1: the leg's --epochs
    pretrain "$state/rtd" --init "$mlm" --generator "$state/generator" \
        --task rtd --lr 1e-4 --warmup 300 --cased --epochs "$1"
}
[ "$(epochs_done "$state/rtd")" -ge 1 ] || rtd 0.8
[ "$(epochs_done "$state/rtd")" -ge 2 ] || rtd 1.3
[ "$(epochs_done "$state/rtd")" -ge 3 ] || rtd 2.8
rtd 4.0

# --- 6. export of the first replaced-token encoder (data/base-en of the ninth
# to nineteenth sessions) -------------------------------------------------------
rtd1=$state/base-rtd1
export_model "$state/rtd" "$rtd1" 0 1

# --- 7. a second generator: masked LM on a 2-layer model, one epoch -----------
if [ "$(epochs_done "$state/generator2")" -lt 1 ]; then
    python3 - "$state/config.json" "$state/generator2.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(num_hidden_layers=2, max_position_embeddings=128)
json.dump(c, open(sys.argv[2], "w"), indent=2)
EOF
    pretrain "$state/generator2" --config "$state/generator2.json" \
        --vocab "$state/vocab" --task mlm --lr 5e-4 --warmup 500 \
        --sinusoidal-positions --epochs 1
fi

# --- 8. replaced-token detection again: from 6, with the generator of 7 -------
[ "$(epochs_done "$state/rtd2")" -ge 3 ] ||
    pretrain "$state/rtd2" --init "$rtd1" --generator "$state/generator2" \
        --task rtd --lr 1e-4 --warmup 300 --cased --epochs 3

# --- 9. export of the encoder -------------------------------------------------
export_model "$state/rtd2" "$out" 0 1
echo "done: $out"
