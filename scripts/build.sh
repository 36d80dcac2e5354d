#!/bin/sh
# Configures (once) and builds libbert in the source tree.
set -e
cd "$(dirname "$0")/.."
[ -x configure ] || autoreconf -fi
[ -f Makefile ] || ./configure --quiet
make -j"$(nproc)" >/dev/null
