#!/usr/bin/env python3
"""How far the reduced precisions move the bundled models' results on real data.

  python3 bench/precision-accuracy.py [BUILD_DIR] [SHARED_DIR]

SST-2 dev (../shared/data/sst2/dev.csv) through bert-classify with the bundled
sentiment model, and CoNLL-2003 dev (../shared/data/conll2003/dev.conll)
through bert-tag with the bundled NER model, once per precision (fp32, bf16,
int8; a precision this CPU cannot run is reported and skipped).  Prints, per
precision: SST-2 accuracy and the share of rows whose label equals fp32's;
CoNLL entity F1 (exact (start, end, type) matches of the entities bert-tag
prints by default against the gold spans, the sentence's tokens joined by
single spaces) and the difference from fp32.  Skips with a message when the
shared data is absent.
"""
import csv
import io
import json
import os
import subprocess
import sys

build = sys.argv[1] if len(sys.argv) > 1 else "."
shared = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared")
sst = os.path.join(shared, "data", "sst2", "dev.csv")
conll = os.path.join(shared, "data", "conll2003", "dev.conll")
if not (os.path.exists(sst) and os.path.exists(conll)):
    print("precision-accuracy: %s/data (sst2, conll2003) not found: skipped" % shared)
    sys.exit(0)


def run(tool, args, stdin):
    p = subprocess.run([os.path.join(build, "apps", tool)] + args, input=stdin,
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip()
    return p.stdout, None


def sst2(prec):
    out, err = run("bert-classify", ["--precision", prec, "--prefix", "pred_",
                                     sst], None)
    if out is None:
        return None, err
    rows = list(csv.DictReader(io.StringIO(out)))
    return [(r["pred_label"], r["pred_score"]) for r in rows], None


def conll_sentences():
    sents, cur = [], []
    for line in open(conll, encoding="utf-8"):
        line = line.rstrip("\n")
        if not line.strip():
            if cur:
                sents.append(cur)
            cur = []
            continue
        if line.startswith("-DOCSTART-"):
            continue
        tok, tag = line.split("\t")[0], line.split("\t")[-1]
        cur.append((tok, tag))
    if cur:
        sents.append(cur)
    return sents


def gold_spans(sent):
    """(start, end, type) in code points of the space-joined sentence (IOB2
    or IOB1: a B- or a type change starts an entity)."""
    spans, pos, cur = [], 0, None
    for tok, tag in sent:
        start, end = pos, pos + len(tok)
        pos = end + 1
        if tag == "O":
            if cur:
                spans.append(tuple(cur))
            cur = None
            continue
        kind, typ = tag.split("-", 1)
        if cur and kind == "I" and cur[2] == typ:
            cur[1] = end
        else:
            if cur:
                spans.append(tuple(cur))
            cur = [start, end, typ]
    if cur:
        spans.append(tuple(cur))
    return spans


def ner(prec, sents):
    text = "".join(" ".join(t for t, _ in s) + "\n" for s in sents)
    out, err = run("bert-tag", ["--precision", prec], text)
    if out is None:
        return None, err
    preds = []
    for line in out.splitlines():
        preds.append({(e["start"], e["end"], e["entity_group"]) for e in json.loads(line)})
    return preds, None


def f1(gold, preds):
    tp = sum(len(g & p) for g, p in zip(gold, preds))
    ng = sum(len(g) for g in gold)
    npred = sum(len(p) for p in preds)
    prec = tp / npred if npred else 0.0
    rec = tp / ng if ng else 0.0
    return 100.0 * 2 * prec * rec / (prec + rec) if prec + rec else 0.0


sents = conll_sentences()
gold = [set(gold_spans(s)) for s in sents]
base_sst, base_f1 = None, None
print("| precision | SST-2 dev accuracy | labels equal to fp32 | CoNLL-2003 dev entity F1 | F1 - fp32 |")
print("| --- | ---: | ---: | ---: | ---: |")
for prec in ["fp32", "bf16", "int8"]:
    s, err = sst2(prec)
    if s is None:
        print("| %s | not run: %s | | | |" % (prec, err))
        continue
    truth = [r["label"] for r in csv.DictReader(open(sst, encoding="utf-8"))]
    acc = 100.0 * sum(a == b for (a, _), b in zip(s, truth)) / len(truth)
    if base_sst is None:
        base_sst = s
    agree = 100.0 * sum(a[0] == b[0] for a, b in zip(s, base_sst)) / len(s)
    p, err = ner(prec, sents)
    if p is None:
        print("| %s | %.2f%% | %.2f%% | not run: %s | |" % (prec, acc, agree, err))
        continue
    score = f1(gold, p)
    if base_f1 is None:
        base_f1 = score
    print("| %s | %.2f%% (%d rows) | %.2f%% | %.2f (%d sentences) | %+.2f |"
          % (prec, acc, len(truth), agree, score, len(sents), score - base_f1))
