#!/bin/sh
# example-install.sh - make install into a temporary prefix, then what a new
# user does with it:
#  - the installed tools run with no LD_LIBRARY_PATH (RUNPATH) and find the
#    installed default models, never the build tree's data/;
#  - every docs/ page, a man page per tool and libbert(3) are installed;
#    pkg-config's modeldir points at the installed models;
#  - apps/example.c (the README's program) builds with pkg-config and runs
#    on the installed default models, again without LD_LIBRARY_PATH:
#    batched classification, tagging (--tag) and embeddings (--embed);
#  - apps/example-train.c builds the same way, fine-tunes a tiny model from
#    a tiny CSV in about a second through bert_dataset_load and bert_fit, and
#    the installed bert-sentiment loads the directory it wrote;
#  - make uninstall leaves no file and none of libbert's directories.
# Runs after the other tests (Makefile: installing relinks the programs).
set -e
b=${top_builddir:-.}
s=${top_srcdir:-.}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/libbert-example.XXXXXX")
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
pre=$tmp/prefix
fail=0
die() { echo "FAIL: $*"; fail=1; }
unset LD_LIBRARY_PATH LIBBERT_MODELDIR
if ! ${LIBBERT_MAKE:-make} -C "$b" install prefix="$pre" >"$tmp/install.log" 2>&1; then
    tail -30 "$tmp/install.log"
    echo "FAIL: make install prefix=$pre"
    exit 1
fi

# --- installed tools: libbert.so.1 and the models, from anywhere ----------
cd "$tmp"
"$pre/bin/bert-sentiment" 'a gorgeous film' > out 2> err || die "installed bert-sentiment: $(cat err)"
grep -q '	a gorgeous film$' out || die "installed bert-sentiment output: $(cat out)"
echo 'a gorgeous film' | "$pre/bin/bert-infer" --model "$pre/share/libbert/models/sentiment" > out 2> err ||
    die "installed bert-infer: $(cat err)"
# without the installed models they say where they looked: never the build
# tree
mv "$pre/share/libbert/models/sentiment" "$tmp/moved"
if "$pre/bin/bert-sentiment" 'a gorgeous film' > out 2> err; then
    die "installed bert-sentiment ran without the installed model"
fi
abs_s=$(cd "$OLDPWD" && cd "$s" && pwd)
grep -q "$abs_s/data" err && die "the installed tool looks in the build tree: $(cat err)"
grep -q "$pre/bin/../share/libbert/models/sentiment" err || die "message: $(cat err)"
mv "$tmp/moved" "$pre/share/libbert/models/sentiment"

# --- docs, man pages, pkg-config ------------------------------------------
for d in bert-classify bert-sentiment bert-tag inference performance tokenizer training abi; do
    [ -s "$pre/share/doc/libbert/$d.md" ] || die "docs/$d.md not installed"
done
for t in bert-classify bert-sentiment bert-tag bert-infer bert-tokenize bert-train bert-vocab bert-bench; do
    [ -s "$pre/share/man/man1/$t.1" ] || die "man page $t.1 not installed"
    grep -q '^\.SH DESCRIPTION' "$pre/share/man/man1/$t.1" || die "$t.1 has no DESCRIPTION"
done
[ -s "$pre/share/man/man3/libbert.3" ] || die "libbert.3 not installed"
PKG_CONFIG_PATH=$pre/lib/pkgconfig
export PKG_CONFIG_PATH
# libbert.pc records the configured prefix; point it at the temporary one.
pc="pkg-config --define-variable=prefix=$pre"
[ "$($pc --variable=modeldir libbert)" = "$pre/share/libbert/models" ] ||
    die "pkg-config modeldir: $($pc --variable=modeldir libbert)"

# --- the README's example, built as a user would --------------------------
static=
[ -e "$pre/lib/libbert.so" ] || static=--static
cflags=$($pc --cflags libbert)
libs=$($pc $static --libs libbert)
rpath="-Wl,-rpath,$($pc --variable=libdir libbert)"
echo "compiling: ${LIBBERT_CC:-cc} $cflags example.c $libs $rpath"
# shellcheck disable=SC2086
${LIBBERT_CC:-cc} $LIBBERT_SAN_CFLAGS $cflags "$abs_s/apps/example.c" -o "$tmp/example" $libs $rpath
# the example finds the installed model the way the library says: through
# LIBBERT_MODELDIR here, since the library was configured for another prefix
LIBBERT_MODELDIR=$pre/share/libbert/models "$tmp/example" "a gorgeous film" "a waste of time" >"$tmp/out" ||
    die "example: exit $?"
cat "$tmp/out"
[ "$(wc -l <"$tmp/out")" -eq 2 ] && grep -q '^[a-zA-Z]*	0\.[0-9]*	a gorgeous film$' "$tmp/out" ||
    die "example output"
model=${SHARED_DIR:-$abs_s/../shared}/fixtures/bert-seq-uncased
if [ -d "$model" ]; then
    "$tmp/example" --model "$model" "a gorgeous film" >"$tmp/out" || die "example --model: exit $?"
    grep -q '^[A-Z]*TIVE	0\.[0-9]*	a gorgeous film$' "$tmp/out" || die "example --model output: $(cat "$tmp/out")"
fi

# the batched tagging and the embeddings of the same example
LIBBERT_MODELDIR=$pre/share/libbert/models "$tmp/example" --tag "John Smith flew to Paris" "a quiet day" >"$tmp/out" ||
    die "example --tag: exit $?"
cat "$tmp/out"
grep -q '^1	PER	0\.[0-9]*	John Smith$' "$tmp/out" && grep -q '^1	LOC	0\.[0-9]*	Paris$' "$tmp/out" &&
    ! grep -q '^2	' "$tmp/out" || die "example --tag output"
LIBBERT_MODELDIR=$pre/share/libbert/models "$tmp/example" --embed "a gorgeous film" "a gorgeous film" "a waste of time" >"$tmp/out" ||
    die "example --embed: exit $?"
cat "$tmp/out"
[ "$(sed -n 1p "$tmp/out")" = "1.0000	a gorgeous film" ] && [ "$(sed -n 2p "$tmp/out")" = "1.0000	a gorgeous film" ] &&
    sed -n 3p "$tmp/out" | grep -q '^-\{0,1\}0\.[0-9]*	a waste of time$' || die "example --embed output"

# --- apps/example-train.c: fine-tune a tiny model from a CSV -------------
# shellcheck disable=SC2086
${LIBBERT_CC:-cc} $LIBBERT_SAN_CFLAGS $cflags "$abs_s/apps/example-train.c" -o "$tmp/example-train" $libs $rpath
{
    echo "text,text_pair,label"
    for n in film movie story plot cast music song book show play; do
        echo "a good $n,\"yes, really\",positive"
        echo "the $n was good,indeed,positive"
        echo "a bad $n,\"no, really\",negative"
        echo "the $n was bad,indeed,negative"
    done
} > "$tmp/train.csv"
mkdir "$tmp/trained"
"$tmp/example-train" "$pre/share/libbert/models/sentiment" "$tmp/train.csv" "$tmp/trained" >"$tmp/out" 2>"$tmp/err" ||
    die "example-train: exit $?: $(cat "$tmp/err")"
cat "$tmp/err" "$tmp/out"
[ "$(cat "$tmp/out")" = "accuracy 1.0000 (40 of 40)" ] || die "example-train output"
for f in config.json model.safetensors vocab.txt tokenizer_config.json; do
    [ -s "$tmp/trained/$f" ] || die "example-train wrote no $f"
done
# the directory it wrote is a model the installed tools load
"$pre/bin/bert-sentiment" --model "$tmp/trained" 'a good song' >"$tmp/out" 2>"$tmp/err" ||
    die "bert-sentiment on example-train's model: $(cat "$tmp/err")"
grep -q '^positive	' "$tmp/out" || die "bert-sentiment on example-train's model: $(cat "$tmp/out")"

# --- the installed version header and bert_version() agree ---------------
[ -s "$pre/include/libbert/bert_version.h" ] || die "bert_version.h not installed"
cat > "$tmp/version.c" <<'EOT'
#include <stdio.h>
#include <string.h>
#include <libbert/bert.h>
int main(void)
{
    printf("%s %d\n", bert_version(), BERT_VERSION_NUMBER);
    return strcmp(bert_version(), BERT_VERSION_STRING) != 0;
}
EOT
# shellcheck disable=SC2086
${LIBBERT_CC:-cc} $LIBBERT_SAN_CFLAGS $cflags "$tmp/version.c" -o "$tmp/version" $libs $rpath &&
    "$tmp/version" > "$tmp/out" || die "installed bert_version.h / bert_version(): $(cat "$tmp/out")"
[ "$(cut -d' ' -f1 "$tmp/out")" = "$($pc --modversion libbert)" ] ||
    die "bert_version() $(cat "$tmp/out") is not the .pc's $($pc --modversion libbert)"

# --- make uninstall --------------------------------------------------------
cd "$OLDPWD"
${LIBBERT_MAKE:-make} -C "$b" uninstall prefix="$pre" >"$tmp/uninstall.log" 2>&1 || die "make uninstall"
left=$(find "$pre" -type f -o -type l)
[ -z "$left" ] || die "make uninstall left files: $left"
for d in share/libbert share/doc/libbert include/libbert; do
    [ ! -d "$pre/$d" ] || die "make uninstall left the directory $d"
done
[ $fail = 0 ] && echo "PASS: installed tools, docs, man pages, example; clean uninstall"
exit $fail
