#!/bin/sh
# Installs the Debian 12 packages libbert needs to build and test, if missing.
set -e
PKGS="build-essential autoconf automake libtool pkg-config libblis-dev libutf8proc-dev libcsv-dev libjansson-dev libcunit1-dev"
# --fuzz: also clang, which fuzz/run.sh needs (libFuzzer)
[ "${1:-}" = --fuzz ] && PKGS="$PKGS clang"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "installing:$missing" >&2
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

# PostgreSQL 15 for the extension (postgresql/) and its tests: server,
# PGXS, PL/Proxy.  Not fatal: without them those tests skip with a message.
PG_PKGS="postgresql-15 postgresql-server-dev-15 postgresql-15-plproxy"
missing=""
for p in $PG_PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "installing:$missing" >&2
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    { $SUDO apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null; } ||
        echo "deps.sh: could not install$missing; the PostgreSQL tests will be skipped" >&2
fi
