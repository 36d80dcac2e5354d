#!/bin/sh
# help2man.sh PROGRAM NAME SUMMARY - a man page (section 1) on stdout made
# from PROGRAM --help and --version (PROGRAM may be a libtool wrapper):
# NAME, SYNOPSIS (the usage lines), DESCRIPTION (the rest of --help,
# verbatim), SEE ALSO.  A stand-in for help2man, which Debian has but the
# build does not require.
set -e
prog=$1 name=$2 summary=$3
help=$("$prog" --help)
version=$("$prog" --version | head -1 | sed 's/.* //')
# troff: escape backslashes, and leading dots/quotes on a line
esc() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/" -e 's/-/\\-/g'; }
echo ".TH $(echo "$name" | tr '[:lower:]' '[:upper:]') 1 \"\" \"libbert $version\" \"User Commands\""
echo ".SH NAME"
echo "$name \\- $summary"
echo ".SH SYNOPSIS"
echo ".nf"
# the usage block: the first line and its indented continuations
printf '%s\n' "$help" | awk 'NR == 1 { sub(/^[Uu]sage: */, ""); print; next }
    /^ / && !done { sub(/^ +/, "        "); print; next } { exit }' | esc
echo ".fi"
echo ".SH DESCRIPTION"
echo ".nf"
printf '%s\n' "$help" | awk 'NR == 1 { next } /^ / && !body { next } { body = 1; print }' | esc
echo ".fi"
echo ".SH SEE ALSO"
echo ".BR libbert (3),"
echo "and the documentation in /usr/share/doc/libbert or the project's docs/ directory."
