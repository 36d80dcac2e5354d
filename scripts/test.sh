#!/bin/sh
# The whole test suite:
#   1. make check in the source tree (unit, parity, end-to-end, fuzz seeds),
#      then the PostgreSQL extension's tests against servers they start;
#   2. the same tests under AddressSanitizer + UndefinedBehaviorSanitizer,
#      built from the distribution tarball in a separate directory;
#   3. make distcheck (install, uninstall, VPATH build of the tarball).
# Reference data is read from ../shared; tests that need it skip without it.
set -e
cd "$(dirname "$0")/.."
top=$(pwd)
[ -d ../shared ] && SHARED_DIR=$(cd ../shared && pwd) && export SHARED_DIR
jobs=$(nproc)

sh scripts/deps.sh
sh scripts/build.sh

show_logs() { for f in "$1"/tests/*.log "$1"/fuzz/*.log "$1"/*.log; do
    [ -f "$f" ] && grep -qE '^(FAIL|ERROR)' "${f%.log}.trs" 2>/dev/null && { echo "==== $f"; tail -60 "$f"; }; done; true; }

echo "== make check" >&2
make -j"$jobs" check || { show_logs "$top"; exit 1; }

echo "== PostgreSQL extension (real servers)" >&2
# Not part of make check: they install the extension into PostgreSQL's own
# directories (root) and start servers; each skips (77) with a message
# when it cannot run.
for t in tests/pg_extension.sh tests/pg_multinode.sh; do
    rc=0
    top_srcdir=$top top_builddir=$top sh "$t" > "$t.log" 2>&1 || rc=$?
    case $rc in
    0) tail -2 "$t.log" >&2 ;;
    77) grep SKIP "$t.log" >&2 ;;
    *) cat "$t.log" >&2; echo "FAIL: $t" >&2; exit 1 ;;
    esac
done

echo "== make check under ASan + UBSan" >&2
make dist >/dev/null
san=$top/build-san
rm -rf "$san" && mkdir -p "$san"
tar -xzf libbert-*.tar.gz -C "$san" --strip-components=1
( cd "$san" && ./configure --quiet --enable-sanitizers --disable-shared CFLAGS="-O1 -g" \
  && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
     make -j"$jobs" check ) || { show_logs "$san"; exit 1; }

echo "== make distcheck" >&2
make -j"$jobs" distcheck >/dev/null || exit 1
echo "all test suites passed: make check, PostgreSQL extension, ASan+UBSan make check, make distcheck"
