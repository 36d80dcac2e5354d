#!/bin/sh
# The whole test suite:
#   1. make check in the source tree (unit, parity, end-to-end, fuzz seeds),
#      then the PostgreSQL extension's tests against servers they start;
#   2. the same tests under AddressSanitizer + UndefinedBehaviorSanitizer,
#      built from the distribution tarball in a separate directory;
#   3. make distcheck (install, uninstall, VPATH build of the tarball).
# Every stage runs even when an earlier one failed; the log of every failing
# test is printed, and the exit status is non-zero when anything failed.
# Reference data is read from ../shared; tests that need it skip without it.
cd "$(dirname "$0")/.." || exit 1
top=$(pwd)
[ -d ../shared ] && SHARED_DIR=$(cd ../shared && pwd) && export SHARED_DIR
jobs=$(nproc)
failed=""

. scripts/test-lib.sh

sh scripts/deps.sh || exit 1
sh scripts/build.sh || exit 1

stage "make check" "$top" make -j"$jobs" check

# The PostgreSQL extension's tests, against servers they start. Not part
# of make check: they install the extension into PostgreSQL's own
# directories (root); each skips (77) with a message when it cannot run.
pg_tests() {
    rc=0
    for t in tests/pg_extension.sh tests/pg_multinode.sh; do
        r=0
        top_srcdir=$top top_builddir=$top sh "$t" > "$t.log" 2>&1 || r=$?
        case $r in
        0) tail -n 2 "$t.log" >&2 ;;
        77) grep SKIP "$t.log" >&2 ;;
        *) cat "$t.log" >&2; echo "FAIL: $t" >&2; rc=1 ;;
        esac
    done
    return $rc
}
stage "PostgreSQL extension (real servers)" "$top" pg_tests

san=$top/build-san
san_check() {
    make dist > /dev/null || return 1
    rm -rf "$san" && mkdir -p "$san" &&
    tar -xzf libbert-*.tar.gz -C "$san" --strip-components=1 &&
    ( cd "$san" && ./configure --quiet --enable-sanitizers --disable-shared CFLAGS="-O1 -g" &&
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
          make -j"$jobs" check )
}
stage "make check under ASan + UBSan" "$san" san_check

# distcheck's build lives in libbert-*/_build while it runs; its logs go
# with it, so show its output tail instead
distcheck() {
    make -j"$jobs" distcheck > distcheck.out 2>&1 && return 0
    tail -n 60 distcheck.out
    for d in libbert-*/_build; do [ -d "$d" ] && show_logs "$d"; done
    return 1
}
stage "make distcheck" "$top" distcheck

if [ -n "$failed" ]; then
    echo "FAILED stages:$failed" >&2
    exit 1
fi
rm -f distcheck.out
echo "all test suites passed: make check, PostgreSQL extension, ASan+UBSan make check, make distcheck"
