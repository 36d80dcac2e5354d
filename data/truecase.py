#!/usr/bin/env python3
"""Restore the case of lower-cased CSV text (SST-2 is distributed lower-cased).

    truecase.py IN.csv OUT.csv WIKI.txt...

The cased encoder (data/base-en) learnt English in its cased forms: "I",
"Hollywood", "Spielberg". Lower-cased text reaches it as forms it saw rarely
("i", "hollywood" split into pieces). This maps each word to its most frequent
surface form in the given Wikipedia text, counting only words that do not start
a sentence (so "The" does not win over "the"), and capitalises the first letter
of a row that ends like a sentence (. ! ? or a closing quote after one). A word
keeps its lower-case form unless another form was seen 5 times or more and 3
times as often (20 times for an all-capitals form); one-letter words but "i"
are kept. Only the column named "text" changes; the header and
every other column are copied as they are. No label is read.
"""
import collections
import csv
import os
import re
import sys

WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")
TOKEN = re.compile(WORD.pattern + r"|[.!?]")  # a word, or a sentence's end
SENTENCE_END = re.compile(r"[.!?]\s*['\"`]*\s*$")


def learn(paths):
    counts = collections.defaultdict(collections.Counter)
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                start = True  # the line's first word starts a sentence
                for m in TOKEN.finditer(line):
                    w = m.group(0)
                    if w in ".!?":
                        start = True
                        continue
                    if not start:
                        counts[w.lower()][w] += 1
                    start = False
    table = {}
    for low, forms in counts.items():
        best, n = forms.most_common(1)[0]
        lower = forms.get(low, 0)
        if best == low or len(low) == 1 or n < 5:
            continue
        # Titles ("Astounding Science Fiction") and initialisms ("US") must
        # clearly outnumber the lower-case word to win.
        if n >= 3 * lower and (not best.isupper() or n >= 20 * lower):
            table[low] = best
    table["i"] = "I"  # the pronoun; "i.e." and numerals outnumber it in Wikipedia
    return table


def truecase(text, table):
    out = WORD.sub(lambda m: table.get(m.group(0), m.group(0)), text)
    if SENTENCE_END.search(out):
        i = next((k for k, c in enumerate(out) if c.isalpha()), None)
        if i is not None:
            out = out[:i] + out[i].upper() + out[i + 1:]
    return out


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: truecase.py IN.csv OUT.csv WIKI.txt...")
    table = learn(sys.argv[3:])
    with open(sys.argv[1], newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    col = rows[0].index("text")
    tmp = sys.argv[2] + ".tmp"
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(rows[0])
        for r in rows[1:]:
            r[col] = truecase(r[col], table)
            w.writerow(r)
    os.replace(tmp, sys.argv[2])
    print(f"truecase.py: {len(rows) - 1} rows, {len(table)} cased forms", file=sys.stderr)


if __name__ == "__main__":
    main()
