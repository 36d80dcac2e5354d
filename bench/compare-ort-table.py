#!/usr/bin/env python3
"""Markdown table of bench/compare-ort.sh runs: libbert against ONNX Runtime.

    bench/compare-ort-table.py round1.jsonl [round2.jsonl ...]

Each file is the output of one bench/compare-ort.sh run.  With several runs
(rounds), every figure is the median over the rounds of that case's median
milliseconds, and the ratio is taken between those medians, so that one
noisy round moves neither engine.  The last lines give the FMA peak runs
(`b32s128-peak`): encoder GFLOP/s, measured peak and their ratio; the
table's last column divides each case's GFLOP/s by the median measured peak
for its thread count.  libbert's GFLOP/s count the work it runs (sequence
models: the last layer for [CLS] only).
"""
import json
import statistics
import sys

CASES = ["b1s128", "b32s128", "mixed32", "b1s512"]
LABEL = {"b1s128": "1 x 128", "b32s128": "32 x 128",
         "mixed32": "32 mixed 8..128", "b1s512": "1 x 512"}


def main(paths):
    ms = {}      # (engine, model, threads, case) -> [median_ms per round]
    extra = {}   # (model, threads, case) -> [libbert gflops per round]
    peaks = {}   # threads -> [(gflops, peak, pct, kernels)]
    for path in paths:
        with open(path) as f:
            for line in f:
                if not line.startswith("{"):
                    continue
                r = json.loads(line)
                if r.get("case") == "b32s128-peak":
                    peaks.setdefault(r["threads"], []).append(
                        (r["gflops"], r["peak_gflops"], r["pct_of_peak"],
                         r.get("gemm_kernels", "?")))
                    continue
                key = (r["engine"], r["model"], r["threads"], r["case"])
                ms.setdefault(key, []).append(r["median_ms"])
                if r["engine"] == "libbert":
                    extra.setdefault(key[1:], []).append(r["gflops"])
    batch = {"b1s128": 1, "b32s128": 32, "mixed32": 32, "b1s512": 1}
    print(f"Medians over {len(paths)} round(s).\n")
    print("| model | threads | batch x tokens | ORT ms | libbert ms | "
          "ORT seq/s | libbert seq/s | libbert / ORT | libbert GFLOP/s | "
          "of FMA peak |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    peak = {t: statistics.median(p[1] for p in v) for t, v in peaks.items()}
    models = sorted({k[1] for k in ms}, key=lambda m: m != "minilm-l6-h384")
    for model in models:
        for t in sorted({k[2] for k in ms if k[1] == model}):
            for c in CASES:
                o = ms.get(("ort", model, t, c))
                lb = ms.get(("libbert", model, t, c))
                if not o or not lb:
                    continue
                om, lm = statistics.median(o), statistics.median(lb)
                g = statistics.median(extra[(model, t, c)])
                os_, ls = batch[c] * 1e3 / om, batch[c] * 1e3 / lm
                pk = f"{100 * g / peak[t]:.0f}%" if t in peak else "-"
                print(f"| {model} | {t} | {LABEL[c]} | {om:.1f} | {lm:.1f} | "
                      f"{os_:.2f} | {ls:.2f} | **{ls / os_:.2f}x** | {g:.1f} | "
                      f"{pk} |")
    for t in sorted(peaks):
        for g, p, pct, k in peaks[t]:
            print(f"\npeak run, {t} thread(s): encoder {g:.1f} GFLOP/s, FMA peak "
                  f"{p:.1f}, {pct:.1f}% (kernels {k})", end="")
    print()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
