#!/usr/bin/env python3
"""Markdown table of bench/compare-ort.sh runs: libbert against ONNX Runtime.

    bench/compare-ort-table.py round1.jsonl [round2.jsonl ...]

Each file is the output of one bench/compare-ort.sh run.  With several
rounds (a run with ROUNDS=N, or several runs), every figure is the median
over the rounds of that case's median milliseconds, and the ratio is taken
between those medians, so that one noisy round moves neither engine; with
more than one, a last column gives each round's ratio.  The last lines give
the FMA peak runs (`b32s128-peak`): encoder GFLOP/s, measured peak and their ratio; the
table's last column divides each case's GFLOP/s by the median measured peak
for its thread count.  libbert's GFLOP/s count the work it runs (sequence
models: the last layer for [CLS] only).

Runs with PRECISIONS (int8, bf16) give one table per libbert precision:
int8 against ONNX Runtime's int8; bf16 against ONNX Runtime's fp32 and int8
and against libbert's fp32 of the same run.
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
                model, prec = r["model"], r.get("precision", "fp32")
                if model.endswith(".int8"):  # ONNX Runtime's quantized model
                    model, prec = model[:-5], "int8"
                key = (r["engine"], model, r["threads"], r["case"], prec)
                ms.setdefault(key, []).append(r["median_ms"])
                if r["engine"] == "libbert":
                    extra.setdefault(key[1:], []).append(r["gflops"])
    lo, hi = min(len(v) for v in ms.values()), max(len(v) for v in ms.values())
    print(f"Medians over {lo if lo == hi else f'{lo}-{hi}'} round(s) a case; "
          "ratios are throughput ratios (the other engine's ms over "
          "libbert's).")
    many = hi > 1  # a column with each round's ratio (round i against i)
    peak = {t: statistics.median(p[1] for p in v) for t, v in peaks.items()}
    models = sorted({k[1] for k in ms}, key=lambda m: m != "minilm-l6-h384")
    med = {k: statistics.median(v) for k, v in ms.items()}
    for prec in ("fp32", "int8", "bf16"):
        if not any(k[0] == "libbert" and k[4] == prec for k in ms):
            continue
        refs = {"fp32": ["fp32"], "int8": ["int8"], "bf16": ["fp32", "int8"]}[prec]
        own = prec == "bf16"  # bf16 also against libbert's fp32
        print(f"\nlibbert {prec}:\n")
        head = "| model | threads | batch x tokens | "
        head += "".join(f"ORT {r} ms | " for r in refs) + f"libbert {prec} ms | "
        head += "".join(f"libbert / ORT {r} | " for r in refs)
        head += ("libbert bf16 / fp32 | " if own else "")
        head += "libbert GFLOP/s | of FMA peak |"
        head += f" each round / ORT {refs[0]} |" if many else ""
        print(head)
        print("|---" * (head.count("|") - 1) + "|")
        for model in models:
            for t in sorted({k[2] for k in ms if k[1] == model}):
                for c in CASES:
                    lb = med.get(("libbert", model, t, c, prec))
                    os_ = [med.get(("ort", model, t, c, r)) for r in refs]
                    if not lb or not all(os_):
                        continue
                    g = statistics.median(extra[(model, t, c, prec)])
                    pk = f"{100 * g / peak[t]:.0f}%" if t in peak else "-"
                    row = f"| {model} | {t} | {LABEL[c]} | "
                    row += "".join(f"{o:.1f} | " for o in os_) + f"{lb:.1f} | "
                    row += "".join(f"**{o / lb:.2f}x** | " for o in os_)
                    if own:
                        f32 = med.get(("libbert", model, t, c, "fp32"))
                        row += f"{f32 / lb:.2f}x | " if f32 else "- | "
                    row += f"{g:.1f} | {pk} |"
                    if many:
                        o_r = ms[("ort", model, t, c, refs[0])]
                        l_r = ms[("libbert", model, t, c, prec)]
                        row += " " + " ".join(f"{o / l:.2f}" for o, l in
                                              zip(o_r, l_r)) + " |"
                    print(row)
    for t in sorted(peaks):
        for g, p, pct, k in peaks[t]:
            print(f"\npeak run, {t} thread(s): encoder {g:.1f} GFLOP/s, FMA peak "
                  f"{p:.1f}, {pct:.1f}% (kernels {k})", end="")
    print()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
