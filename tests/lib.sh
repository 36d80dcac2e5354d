# lib.sh - sourced by the tests/apps_*.sh end-to-end tests:
#   . "$(dirname "$0")/lib.sh"
# Sets the defaults of top_builddir, top_srcdir and SHARED_DIR (the test
# harness exports them), fail=0 and die(); needs() and mktmp() below.
set -u
: "${top_builddir:=.}" "${top_srcdir:=.}" "${SHARED_DIR:=../shared}"
fail=0
# die MESSAGE: report a failure and carry on (the script ends `exit $fail`)
die() { echo "FAIL: $*"; fail=1; }

# needs TEST-OP PATH WHAT: skip the test (77) unless [ TEST-OP PATH ]
needs() {
    [ "$1" "$2" ] || { echo "SKIP: $3 not found (set SHARED_DIR)"; exit 77; }
}

# mktmp: $tmp, a fresh directory named after the script, removed at exit
mktmp() {
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/$(basename "$0" .sh).XXXXXX") || exit 1
    trap 'rm -rf "$tmp"' EXIT
}

# infer_label_prob SEP: bert-infer JSON lines -> "label SEP prob" per line,
# prob being the label's probability as printed (the arg-max of probs,
# first on ties)
infer_label_prob() {
    sed -e 's/.*"probs":\[\([^]]*\)\].*"label":"\([^"]*\)".*/\2 \1/' |
    awk -v sep="$1" '{ n = split($2, p, ","); b = 1
           for (i = 2; i <= n; i++) if (p[i] + 0 > p[b] + 0) b = i
           print $1 sep p[b] }'
}
