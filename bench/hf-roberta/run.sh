#!/bin/sh
# Hugging Face tokenizers' single-thread throughput with roberta-base's byte-level BPE:
#   bench/hf-roberta/run.sh FILE [PASSES]
# Installs tokenizers 0.23.2 (the version of the corpus refs) with npm into a cache dir
# ($HF_BENCH_DIR, default /tmp/hf-tokenizers-roberta-bench) and loads
# ../shared/vocab/roberta-base/tokenizer.json ($TOKENIZER_JSON).  Compare with
#   bench/bench_tokenizer ../shared/vocab/roberta-base FILE PASSES
set -e
here=$(cd "$(dirname "$0")" && pwd)
work=${HF_BENCH_DIR:-/tmp/hf-tokenizers-roberta-bench}
mkdir -p "$work"
cp "$here/bench.js" "$work/"
[ -f "$work/package.json" ] ||
    printf '{ "name": "hf-roberta-bench", "private": true, "dependencies": { "tokenizers": "0.23.2" } }\n' > "$work/package.json"
[ -d "$work/node_modules/tokenizers" ] || (cd "$work" && npm install --no-audit --no-fund --ignore-scripts >/dev/null)
tj=${TOKENIZER_JSON:-$here/../../../shared/vocab/roberta-base/tokenizer.json}
RAYON_NUM_THREADS=1 exec node "$work/bench.js" "$(readlink -f "$tj")" "$(readlink -f "${1:?corpus file}")" "${2:-5}"
