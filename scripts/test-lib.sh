# test-lib.sh - the stage runner of scripts/test.sh (sourced; also by
# tests/scripts_test.sh).  Needs $top (the source tree) and $failed ("").

# show_logs DIR: the log of each failing test under DIR (automake's .trs
# files hold ":test-result: FAIL" or ":test-result: ERROR")
show_logs() {
    if [ "$1" = "$top" ]; then # not the sanitizer or distcheck trees
        set -- "$1" -not -path "$top/build-*" -not -path "$top/libbert-*"
    fi
    find "$@" -name '*.trs' 2> /dev/null | sort | while read -r trs; do
        if grep -qE '^:test-result: (FAIL|ERROR|XPASS)' "$trs"; then
            echo "==== ${trs%.trs}.log"
            tail -n 80 "${trs%.trs}.log"
        fi
    done
}
# stage NAME DIR CMD...: runs CMD; on failure records NAME and prints the
# failing tests' logs found under DIR
stage() {
    name=$1 dir=$2; shift 2
    echo "== $name" >&2
    if ! "$@"; then
        failed="$failed
  $name"
        show_logs "$dir"
    fi
}

