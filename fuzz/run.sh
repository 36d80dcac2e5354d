#!/bin/sh
# fuzz/run.sh TARGET [SECONDS] - builds fuzz/fuzz_TARGET.c with libFuzzer,
# AddressSanitizer and UndefinedBehaviorSanitizer against the library sources
# and runs it for SECONDS (default 600) on a copy of fuzz/corpus/TARGET.
# Needs clang (apt-get install clang; scripts/deps.sh --fuzz installs it).
# Crashes land in /tmp/fuzz-TARGET/.
set -e
cd "$(dirname "$0")/.."
t=${1:?usage: fuzz/run.sh TARGET [SECONDS]}
secs=${2:-600}
out=/tmp/fuzz-$t
mkdir -p "$out/corpus"
[ -d "fuzz/corpus/$t" ] && cp -r "fuzz/corpus/$t/." "$out/corpus/"
srcs=$(ls libbert/*.c tokenizer/*.c libbert/train/*.c 2>/dev/null | grep -v ops_double)
# the targets that compile a tool in also need the tools' helpers
case $t in csv|vocab) srcs="$srcs apps/common.c apps/common_model.c" ;; esac
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -Iinclude -I. $(pkg-config --cflags libutf8proc jansson) \
    "fuzz/fuzz_$t.c" $srcs -o "$out/fuzz_$t" \
    $(pkg-config --libs libutf8proc jansson) -lcsv -lblis -lm -lpthread -fopenmp
# the targets that run a model read the bundled ones
FUZZ_MODEL=$(pwd)/data/sentiment FUZZ_TOKEN_MODEL=$(pwd)/data/ner
export FUZZ_MODEL FUZZ_TOKEN_MODEL
cd "$out"
./"fuzz_$t" -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$out/" corpus
