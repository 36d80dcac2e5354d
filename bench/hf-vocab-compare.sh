#!/bin/sh
# bert-vocab's vocabularies against Hugging Face tokenizers' WordPieceTrainer
# (the npm `tokenizers` package of ../shared/bench/hf-tokenizers, Rust core)
# on ../shared corpora, as sets; see bench/hf_vocab_compare.js.  A one-off
# measurement for docs/training.md, not a test.
#   bench/hf-vocab-compare.sh [BUILD_DIR]
# Environment: SHARED_DIR (default <srcdir>/../shared), HF_VOCAB_DIR (work
# and npm directory, default /tmp/hfvocab), RUNS (HF runs per case, default 4), RAYON_NUM_THREADS (default 1).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-.}
shared=${SHARED_DIR:-$here/../../shared}
hf=$shared/bench/hf-tokenizers
work=${HF_VOCAB_DIR:-/tmp/hfvocab}
command -v node > /dev/null || { echo "skip: node not found"; exit 0; }
command -v npm > /dev/null || { echo "skip: npm not found"; exit 0; }
[ -f "$hf/package.json" ] || { echo "skip: $hf not found (set SHARED_DIR)"; exit 0; }
[ -x "$build/apps/bert-vocab" ] || { echo "$0: $build/apps/bert-vocab not found: give the build directory" >&2; exit 1; }
mkdir -p "$work"
# the same package version as the tokenizer benchmark
cp "$hf/package.json" "$work/"
[ -d "$work/node_modules/tokenizers" ] ||
    (cd "$work" && npm install --no-audit --no-fund --ignore-scripts > /dev/null)
export NODE_PATH="$work/node_modules" RAYON_NUM_THREADS="${RAYON_NUM_THREADS:-1}"
compare() { # NAME CASES SIZES FILE...
    name=$1 cases=$2 sizes=$3; shift 3
    node "$here/hf_vocab_compare.js" --bert-vocab "$build/apps/bert-vocab" \
        --work "$work/$name" --sizes "$sizes" --runs "${RUNS:-4}" \
        --cases "$cases" "$@"
}
d=$shared/data
compare wiki cased,lowercase 3000,12000 "$d/wiki_en/train-00.txt"
# SST-2 texts (the CSV's text column, as data/train-default-models.sh)
awk 'NR>1{ if (substr($0,1,1)=="\"") { sub(/,[a-z]+$/,""); s=substr($0,2,length($0)-2); gsub(/""/,"\"",s); print s } else { sub(/,[a-z]+$/,""); print } }' \
    "$d/sst2/train.csv" > "$work/sst2_train.txt"
compare sst2 lowercase 3000,12000 "$work/sst2_train.txt"
# many scripts (CJK, accents, Cyrillic, Arabic...), and generated text full
# of exotic characters (the normalizer's character classes)
compare multi cased,lowercase 8000,12000 "$shared/corpus/multi.txt"
compare nasty cased,lowercase 22000 "$shared/corpus/nasty.txt"
