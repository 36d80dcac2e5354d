# pg_lib.sh - sourced by the tests/pg_*.sh PostgreSQL tests (after lib.sh):
# throwaway PostgreSQL clusters on Unix sockets in a temporary directory.
#
#   pg_setup            skip (77) unless PostgreSQL with PGXS is there;
#                       build + install the extension; $tmp (owned by the
#                       server's user) with lib/ (libbert.so) and models/
#   pg_start NAME PORT  initdb + pg_ctl start a cluster in $tmp/NAME
#   pg_sql NAME ARGS..  psql on cluster NAME (ON_ERROR_STOP, no psqlrc)
#   pg_check_alive      every started server is up and none logged a crash
# Servers are stopped and $tmp removed at exit, failure or not.
#
# PostgreSQL refuses to run as root: when the test runs as root (as CI
# does) the servers run as the `postgres` user (or `nobody`), and
# everything they read (libbert, models) is copied into $tmp, which that
# user owns, so the source tree's permissions do not matter.

pg_started=""

pg_cleanup() {
    for n in $pg_started; do
        $pg_runas "$pg_bindir/pg_ctl" -D "$tmp/$n/data" -m immediate \
            stop >/dev/null 2>&1
    done
    [ -n "${PG_KEEP_TMP:-}" ] || rm -rf "$tmp"
}

pg_setup() {
    command -v "${PG_CONFIG:=pg_config}" >/dev/null 2>&1 || {
        echo "SKIP: pg_config not found (apt-get install postgresql-15" \
             "postgresql-server-dev-15)"; exit 77; }
    pg_bindir=$("$PG_CONFIG" --bindir)
    [ -x "$pg_bindir/initdb" ] && [ -x "$pg_bindir/postgres" ] || {
        echo "SKIP: no PostgreSQL server in $pg_bindir (apt-get install" \
             "postgresql-15)"; exit 77; }
    [ -f "$("$PG_CONFIG" --pgxs)" ] || {
        echo "SKIP: PGXS not found (apt-get install postgresql-server-dev-15)"
        exit 77; }
    extdir=$("$PG_CONFIG" --sharedir)/extension
    pkglibdir=$("$PG_CONFIG" --pkglibdir)
    [ -w "$extdir" ] && [ -w "$pkglibdir" ] || {
        echo "SKIP: cannot install the extension into $extdir and" \
             "$pkglibdir (run as root)"; exit 77; }
    grep -q '^PG_CONFIG = ..*' "$top_builddir/Makefile" || {
        echo "SKIP: configure found no pg_config with PGXS (install" \
             "postgresql-server-dev-15, then run configure again)"; exit 77; }
    [ -f "$top_builddir/.libs/libbert.so" ] || {
        echo "FAIL: $top_builddir/.libs/libbert.so not built"; exit 1; }

    pg_runas=""
    pg_user=$(id -un)
    if [ "$(id -u)" -eq 0 ]; then
        if id postgres >/dev/null 2>&1; then pg_user=postgres; else pg_user=nobody; fi
        pg_runas="runuser -u $pg_user --"
    fi

    # build and install the extension (linked to this tree's libbert)
    make -s -C "$top_builddir" pg-install >"${TMPDIR:-/tmp}/pg-install.$$.log" 2>&1 || {
        cat "${TMPDIR:-/tmp}/pg-install.$$.log"; rm -f "${TMPDIR:-/tmp}/pg-install.$$.log"
        echo "FAIL: cannot build or install the extension"; exit 1; }
    rm -f "${TMPDIR:-/tmp}/pg-install.$$.log"

    tmp=$(mktemp -d "${TMPDIR:-/tmp}/$(basename "$0" .sh).XXXXXX") || exit 1
    trap 'pg_cleanup' EXIT
    trap 'exit 1' INT TERM HUP
    chmod 755 "$tmp"
    mkdir -p "$tmp/lib" "$tmp/models" "$tmp/sock"
    cp -P "$top_builddir"/.libs/libbert.so* "$tmp/lib/"
    cp -R "$top_srcdir/data/sentiment" "$top_srcdir/data/ner" "$tmp/models/"
    chown -R "$pg_user" "$tmp"
    PSQL="$pg_bindir/psql"
}

# pg_start NAME PORT [postgres -c settings...]
pg_start() {
    n=$1 port=$2
    shift 2
    mkdir -p "$tmp/$n"
    chown "$pg_user" "$tmp/$n"
    $pg_runas "$pg_bindir/initdb" -D "$tmp/$n/data" -U postgres \
        --auth=trust -E UTF8 --locale=C.UTF-8 >"$tmp/$n/initdb.log" 2>&1 || {
        cat "$tmp/$n/initdb.log"; echo "FAIL: initdb $n"; exit 1; }
    opts="-k $tmp/sock -p $port -c listen_addresses='' -c bert.model_dir=$tmp/models"
    opts="$opts -c max_worker_processes=16 -c max_parallel_workers=8"
    for o in "$@"; do opts="$opts -c $o"; done
    $pg_runas env LD_LIBRARY_PATH="$tmp/lib" "$pg_bindir/pg_ctl" \
        -D "$tmp/$n/data" -l "$tmp/$n/server.log" -w -t 60 -o "$opts" \
        start >/dev/null || { cat "$tmp/$n/server.log"; echo "FAIL: start $n"; exit 1; }
    pg_started="$pg_started $n"
    eval "pg_port_$n=$port"
}

pg_sql() {
    n=$1
    shift
    eval "p=\$pg_port_$n"
    "$PSQL" -X -q -v ON_ERROR_STOP=1 -h "$tmp/sock" -p "$p" -U postgres \
        -d postgres "$@"
}

pg_check_alive() {
    for n in $pg_started; do
        $pg_runas "$pg_bindir/pg_ctl" -D "$tmp/$n/data" status >/dev/null ||
            die "server $n is down"
        if grep -E "terminated by signal|was terminated|server process .* exited with exit code [^0]" \
            "$tmp/$n/server.log"; then
            die "a backend of server $n crashed"
        fi
    done
}
