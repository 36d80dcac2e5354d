#!/bin/sh
# Runs the examples of the documentation: every ```console block of
# README.md and docs/*.md holds "$ COMMAND" lines, each followed by the
# output the command prints.  The commands run in the source tree with the
# tools of the build tree first in PATH (so data/ paths work); outputs are
# compared with numbers of 5 or more decimals rounded to 4 (the last float
# digits may differ between GEMM kernels).  A doc example that the tools do
# not print fails here.
. "$(dirname "$0")/lib.sh"
mktmp
bin=$(cd "$top_builddir/apps" && pwd)
src=$(cd "$top_srcdir" && pwd)
[ -f "$src/data/sentiment/config.json" ] || { echo "SKIP: no data/sentiment"; exit 77; }
# round: numbers with 5+ decimals to 4 decimals
round() { awk '{ while (match($0, /[0-9]+\.[0-9][0-9][0-9][0-9][0-9]+(e-?[0-9]+)?/)) {
    n = substr($0, RSTART, RLENGTH); out = out substr($0, 1, RSTART - 1) sprintf("%.4f", n + 0)
    $0 = substr($0, RSTART + RLENGTH) } print out $0; out = "" }'; }
n=0
for doc in "$src/README.md" "$src"/docs/*.md; do
    # split each console block into numbered command / expected files
    awk -v dir="$tmp" -v base="$(basename "$doc")" '
        /^```console$/ { inb = 1; next }
        inb && /^```$/ { inb = 0; next }
        inb && /^\$ / { k++; cmd = dir "/" base "." k ".cmd"; wf = dir "/" base "." k ".want"
                        print substr($0, 3) > cmd; printf "" > wf; next }
        inb && k { print >> wf }' "$doc"
done
for cmd in "$tmp"/*.cmd; do
    [ -e "$cmd" ] || continue
    n=$((n + 1))
    want=${cmd%.cmd}.want
    ( cd "$src" && PATH="$bin:$PATH" LIBBERT_MODELDIR= sh -c "$(cat "$cmd")" ) > "$tmp/got" 2>&1
    round < "$want" > "$tmp/want.r"
    round < "$tmp/got" | cmp -s - "$tmp/want.r" ||
        die "$(basename "${cmd%.cmd}"): \$ $(cat "$cmd")
--- documented
$(cat "$want")
--- printed
$(cat "$tmp/got")"
done
echo "$n documented commands checked"
[ "$n" -gt 0 ] || die "no console examples found"
exit $fail
