#!/usr/bin/env python3
"""Negation rows for the sentiment fine-tune, derived from SST-2 train itself.

    data/sentiment-negation.py SST2_TRAIN UD_EWT_TRAIN > negation.csv

Why: the default model read "Not bad at all." as negative (0.987).  SST-2
labels every phrase of its parse trees, and where a short phrase "not X" /
"is n't X" / "never X" and X are both labelled, the label flips 90 times in
104 (measured on train.csv).  The model sees too few of these pairs (seven
rows contain "not bad") to learn the rule, so this writes more of them.

What it writes (CSV text,label, the same lower-cased PTB style as SST-2, half
of the rows with contractions joined as users type them):
  - SST-2 train's one-word phrases that UD English EWT train tags mostly ADJ
    ("bad", "dull", "brilliant") or VERB ("hate", "disappoint"), each in two
    negated templates with the label flipped and one plain template with the
    label kept (so that the model learns the negator, not "short = flipped");
  - no text of SST-2 dev or of any test set; a row that happens to equal one of
    data/everyday's sentences is dropped.
Deterministic (a fixed seed): the same inputs give the same rows.
"""
import collections
import csv
import os
import random
import sys

ADJ_NEG = ["not {w}", "it 's not {w} .", "it was n't {w} .", "not {w} at all .",
           "it 's never {w} .", "the film is not {w} .", "i would n't call it {w} ."]
ADJ_POS = ["{w}", "it 's {w} .", "it was {w} .", "the film is {w} .", "really {w} ."]
VERB_NEG = ["i did n't {w} it .", "it does n't {w} .", "you wo n't {w} it .",
            "i never {w} it ."]
VERB_POS = ["i {w} it .", "you will {w} it ."]
JOIN = [(" ca n't", " can't"), (" wo n't", " won't"), (" n't", "n't"), (" 's ", "'s ")]


def upos_counts(path):
    counts = collections.defaultdict(collections.Counter)
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 2:
                counts[parts[0].lower()][parts[1]] += 1
    return counts


def norm(text):
    """Lower case, contractions split PTB-style, punctuation spaced."""
    t = text.strip().lower().replace("n't", " n't").replace("'s", " 's")
    for p in ".,!?":
        t = t.replace(p, " " + p)
    return " ".join(t.split())


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    with open(sys.argv[1], encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    label = {}
    for r in rows:
        label.setdefault(r["text"].strip(), r["label"])
    pos = upos_counts(sys.argv[2])
    flip = {"positive": "negative", "negative": "positive"}
    rng = random.Random(12)
    out = []
    for word in sorted(t for t in label if " " not in t and t.isalpha()):
        tags = pos.get(word)
        if not tags or sum(tags.values()) < 3:
            continue  # too rare in EWT to trust its part of speech
        tag, n = tags.most_common(1)[0]
        if n < 0.7 * sum(tags.values()) or tag not in ("ADJ", "VERB"):
            continue
        if tag == "VERB" and word.endswith(("ed", "ing", "s")):
            continue  # the templates need the base form ("hate", not "hated")
        neg, plain = (ADJ_NEG, ADJ_POS) if tag == "ADJ" else (VERB_NEG, VERB_POS)
        for t in rng.sample(neg, 2):
            out.append((t.format(w=word), flip[label[word]]))
        out.append((rng.choice(plain).format(w=word), label[word]))
    for i, (text, lab) in enumerate(out):
        if i % 2:
            for a, b in JOIN:
                text = text.replace(a, b)
        out[i] = (text, lab)
    # Never the everyday test sentences themselves (data/everyday/sentiment.tsv).
    everyday = set()
    try:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                               "everyday", "sentiment.tsv"), encoding="utf-8") as f:
            for line in f:
                if not line.startswith("#") and "\t" in line:
                    everyday.add(norm(line.split("\t", 1)[1]))
    except OSError:
        pass
    out = [(t, l) for t, l in out if norm(t) not in everyday]
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(["text", "label"])
    w.writerows(out)
    print(f"{sys.argv[0]}: {len(out)} rows", file=sys.stderr)


if __name__ == "__main__":
    main()
