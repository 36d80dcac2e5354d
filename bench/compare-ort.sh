#!/bin/sh
# ONNX Runtime vs libbert, interleaved case by case so that both see the same
# machine load (see docs/performance.md).  One JSON line per engine and case;
# lines starting with '#' give the time and load average.
#   bench/compare-ort.sh [BUILD_DIR]     (env SHAPES, THREADS to narrow)
# ROUNDS=N (default 1) runs each case N times, the engines in alternation
# (ORT, libbert, ORT, libbert, ...), so that a slow minute of a shared host
# lands on both; bench/compare-ort-table.py takes each case's median over
# its rounds.
# PRECISIONS="fp32 int8 bf16" (default fp32) also runs libbert in those
# precisions, with ONNX Runtime's int8 (quantize_dynamic, per channel) for
# int8 and bf16 (ONNX Runtime has no bf16 on x86 CPUs: bf16 is compared with
# both of its precisions and with libbert's fp32).
# Needs ../shared/bench/ort (node, npm, Debian python3-torch for the export).
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-.}
bench="$build/apps/bert-bench"
ort="$here/../../shared/bench/ort"
mix=$(python3 -c "import json;print(','.join(map(str,json.load(open('$ort/cases.json'))['mixed32'])))")
precs=${PRECISIONS:-fp32}
for shape in ${SHAPES:-minilm-l6-h384 bert-base}; do
  for t in ${THREADS:-1 2}; do
    for c in b1s128 b32s128 mixed32 b1s512; do
      case $c in
        b1s128) a="--batch 1 --seq 128" ;;
        b32s128) a="--batch 32 --seq 128" ;;
        mixed32) a="--lengths $mix" ;;   # the same lengths as ORT's case
        b1s512) a="--batch 1 --seq 512" ;;
      esac
      r=0
      while [ "$r" -lt "${ROUNDS:-1}" ]; do
        r=$((r + 1))
        echo "# $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) round $r"
        case " $precs " in *" fp32 "*|*" bf16 "*)
          "$ort/run.sh" "$shape" "$t" "$c" 2>/dev/null ;; esac
        case " $precs " in *" int8 "*|*" bf16 "*)
          "$ort/run.sh" "$shape" "$t" "$c" int8 2>/dev/null ;; esac
        for p in $precs; do
          "$bench" --shape "$shape" $a --threads "$t" --precision "$p" --json \
            --no-peak --no-blis | sed "s/^{/{\"case\":\"$c\",/"
        done
      done
    done
  done
done
echo "# $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
# FMA peak and BLIS alone, with the bert-base 32 x 128 run.
for t in ${THREADS:-1 2}; do
  "$bench" --shape bert-base --batch 32 --seq 128 --threads "$t" --json --reps 3 |
    sed 's/^{/{"case":"b32s128-peak",/'
done
