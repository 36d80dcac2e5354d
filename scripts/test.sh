#!/bin/sh
# The whole test suite:
#   1. make check in the source tree (unit, parity, end-to-end, fuzz seeds);
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
    tail -60 distcheck.out
    for d in libbert-*/_build; do [ -d "$d" ] && show_logs "$d"; done
    return 1
}
stage "make distcheck" "$top" distcheck

if [ -n "$failed" ]; then
    echo "FAILED stages:$failed" >&2
    exit 1
fi
rm -f distcheck.out
echo "all test suites passed: make check, ASan+UBSan make check, make distcheck"
