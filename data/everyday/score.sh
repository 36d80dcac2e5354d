#!/bin/sh
# Scores the bundled (or given) models on the everyday sentences of this
# folder: sentiment accuracy on sentiment.tsv, entity precision / recall /
# F1 on ner.txt (exact spans and types, as bert-tag prints them by default).
#   data/everyday/score.sh [SENTIMENT_MODEL [NER_MODEL]]   (from the source
#   tree, with the tools in apps/ or on PATH; -v prints every miss)
set -e
here=$(cd "$(dirname "$0")" && pwd)
verbose=0
[ "$1" = -v ] && { verbose=1; shift; }
bin=$here/../../apps
[ -x "$bin/bert-sentiment" ] || bin=$(dirname "$(command -v bert-sentiment)")
sm=${1:-$here/../sentiment}
nm=${2:-$here/../ner}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

grep -v '^#' "$here/sentiment.tsv" > "$tmp/s"
cut -f2- "$tmp/s" | "$bin/bert-sentiment" --model "$sm" > "$tmp/s.out"
paste "$tmp/s" "$tmp/s.out" | awk -F'\t' -v v=$verbose '
    { n++; if (tolower($1) == tolower($3)) ok++
      else if (v) printf "  miss: want %s, got %s %.3f: %s\n", $1, $3, $4, $2 }
    END { printf "sentiment: %d / %d right (%.1f%%)\n", ok, n, 100 * ok / n }'

grep -v '^#' "$here/ner.txt" > "$tmp/n"
sed -e 's/\](\([A-Z]*\))//g' -e 's/\[//g' "$tmp/n" > "$tmp/n.plain"
"$bin/bert-tag" --model "$nm" --format inline < "$tmp/n.plain" > "$tmp/n.out"
paste -d '\n' "$tmp/n" "$tmp/n.out" | awk -v v=$verbose '
    # " start:end:TYPE" for every [text](TYPE) of an inline-marked line
    function ents(s,   out, pos, i, j, k, txt) {
        out = ""; pos = 0
        while ((i = index(s, "[")) > 0) {
            pos += i - 1; s = substr(s, i + 1)
            j = index(s, "](")
            if (j == 0) { pos++; continue }
            txt = substr(s, 1, j - 1); s = substr(s, j + 2)
            k = index(s, ")")
            out = out " " pos ":" (pos + length(txt)) ":" substr(s, 1, k - 1)
            s = substr(s, k + 1); pos += length(txt)
        }
        return out
    }
    NR % 2 == 1 { want = ents($0); line = $0; next }
    { got = ents($0)
      nw = split(want, W, " "); ng = split(got, G, " ")
      for (i = 1; i <= nw; i++) { seen[W[i]] = 1 }
      for (i = 1; i <= ng; i++) if (G[i] in seen) tp++
      delete seen
      TW += nw; TG += ng
      if (v && want != got) printf "  want %s\n  got  %s\n", line, $0 }
    END { p = TG ? tp / TG : 0; r = TW ? tp / TW : 0
          printf "ner: %d entities, %d found, %d right: precision %.1f%%, recall %.1f%%, F1 %.1f\n",
                 TW, TG, tp, 100 * p, 100 * r, p + r ? 200 * p * r / (p + r) : 0 }'
