#!/bin/sh
# example-install.sh - installs libbert into a temporary prefix, compiles
# apps/example.c against it with pkg-config exactly as a user would, and runs
# it on a fixture model ($SHARED_DIR; without it only the build is checked).
set -e
b=${top_builddir:-.}
s=${top_srcdir:-.}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/libbert-example.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
pre=$tmp/prefix
# Only the library, its headers and libbert.pc: installing the programs too
# would make libtool relink them in the build tree while other tests run.
if ! ${LIBBERT_MAKE:-make} -C "$b" install-libLTLIBRARIES \
    install-pkgincludeHEADERS install-pkgconfigDATA prefix="$pre" \
    >"$tmp/install.log" 2>&1; then
    cat "$tmp/install.log"
    echo "FAIL: make install prefix=$pre"
    exit 1
fi
PKG_CONFIG_PATH=$pre/lib/pkgconfig
export PKG_CONFIG_PATH
# libbert.pc records the configured prefix; point it at the temporary one.
pc="pkg-config --define-variable=prefix=$pre"
static=
[ -e "$pre/lib/libbert.so" ] || static=--static
cflags=$($pc --cflags libbert)
libs=$($pc $static --libs libbert)
echo "compiling: ${LIBBERT_CC:-cc} $cflags example.c $libs"
# shellcheck disable=SC2086
${LIBBERT_CC:-cc} $LIBBERT_SAN_CFLAGS $cflags "$s/apps/example.c" -o "$tmp/example" $libs
model=${SHARED_DIR:-$s/../shared}/fixtures/bert-seq-uncased
if [ ! -d "$model" ]; then
    echo "example built; $model absent, not run"
    exit 0
fi
LD_LIBRARY_PATH=$pre/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
"$tmp/example" "$model" "a gorgeous film" "a waste of time" >"$tmp/out"
cat "$tmp/out"
[ "$(wc -l <"$tmp/out")" -eq 2 ] && grep -q '^[A-Z]*TIVE	0\.[0-9]*	a gorgeous film$' "$tmp/out"
echo "PASS: installed example runs"
