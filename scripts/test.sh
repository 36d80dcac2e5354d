#!/bin/sh
# The whole test suite: unit and parity tests (make check), then the same
# tests under AddressSanitizer + UndefinedBehaviorSanitizer in a separate
# build, then make distcheck.
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh
sh scripts/build.sh
make -j"$(nproc)" check || { cat tests/*.log 2>/dev/null | tail -100; exit 1; }
# Sanitizer build out of tree.
san=build-san
mkdir -p "$san"
( cd "$san" && { [ -f Makefile ] || ../configure --quiet --enable-sanitizers --disable-shared CFLAGS="-O1 -g"; } \
  && ASAN_OPTIONS=detect_leaks=1 make -j"$(nproc)" check ) \
  || { cat "$san"/tests/*.log 2>/dev/null | tail -100; exit 1; }
make -j"$(nproc)" distcheck >/dev/null
echo "all test suites passed (make check, ASan+UBSan make check, make distcheck)"
