#!/bin/sh
# bert-classify end to end.
#  1. Labels and scores equal bert-infer's on the sequence-classification
#     fixtures (texts.txt turned into a CSV with a text and a pair column):
#     with the same --batch (1, 3, 32) bit for bit; across batch sizes the
#     engine's sums may differ in the last float bits, so there the labels
#     must be equal and the scores within 1e-6.
#  2. Crafted CSVs (tests/data/classify_*.csv): quotes, embedded newlines,
#     CRLF, BOM, empty text, invalid UTF-8, a missing column, a truncated
#     final quote, a stray quote: row counts, order, values, messages and
#     exit codes.
. "$(dirname "$0")/lib.sh"
CLS=$top_builddir/apps/bert-classify
INFER=$top_builddir/apps/bert-infer
TOOL=$top_builddir/tests/csvtool
DATA=$top_srcdir/tests/data
FIX=$SHARED_DIR/fixtures
needs -f "$FIX/bert-seq-uncased/config.json" "$FIX/bert-seq-uncased"
mktmp

# bert-classify CSV output -> "label,score" per row (columns 3 and 4 of
# text,pair,label,score,error)
classify_ls() { "$TOOL" tsv | tail -n +2 | awk -F '\t' '{ print $3 "," $4 }'; }
# files of "label,score" lines: same count, same labels, scores within 1e-6
same_ls() {
    [ "$(wc -l < "$1")" = "$(wc -l < "$2")" ] &&
    paste -d, "$1" "$2" | awk -F, '{ d = $2 - $4; if (d < 0) d = -d
        if ($1 != $3 || d > 1e-6) { print "  " $0; bad = 1 } }
        END { exit bad }'
}
# two "label,score" strings: same label, scores within 1e-6
same1() {
    printf '%s\n' "$1" > "$tmp/a1"; printf '%s\n' "$2" > "$tmp/a2"
    same_ls "$tmp/a1" "$tmp/a2" > /dev/null
}

# ---- 1. parity with bert-infer ------------------------------------------
for m in bert-seq-uncased distilbert-seq-uncased bert-seq-multilingual; do
    [ -f "$FIX/$m/config.json" ] || { echo "note: $m absent, skipped"; continue; }
    "$TOOL" fromlines < "$FIX/$m/texts.txt" > "$tmp/$m.csv"
    "$INFER" --model "$FIX/$m" < "$FIX/$m/texts.txt" > "$tmp/$m.infer" ||
        { die "bert-infer failed on $m"; continue; }
    infer_label_prob , < "$tmp/$m.infer" > "$tmp/$m.want"
    n_want=$(wc -l < "$tmp/$m.want")
    [ "$n_want" -gt 0 ] || die "$m: no bert-infer output"
    for b in 1 3 32; do
        "$CLS" --model "$FIX/$m" --column text --pair-column pair --batch $b \
            "$tmp/$m.csv" > "$tmp/$m.$b.csv" 2> "$tmp/$m.$b.err" ||
            { die "$m --batch $b: exit $?: $(cat "$tmp/$m.$b.err")"; continue; }
        classify_ls < "$tmp/$m.$b.csv" > "$tmp/$m.$b.got"
        "$INFER" --model "$FIX/$m" --batch $b < "$FIX/$m/texts.txt" | infer_label_prob , > "$tmp/$m.$b.want"
        cmp -s "$tmp/$m.$b.want" "$tmp/$m.$b.got" ||
            die "$m --batch $b: labels/scores differ from bert-infer --batch $b: $(diff "$tmp/$m.$b.want" "$tmp/$m.$b.got" | head -5)"
        same_ls "$tmp/$m.want" "$tmp/$m.$b.got" ||
            die "$m --batch $b: labels differ from bert-infer's default batch, or scores by more than 1e-6"
    done
done

M=$FIX/bert-seq-uncased
# reference for a text: bert-infer on it with newlines and tabs as spaces
# (the tokenizer treats them all as whitespace, so the ids are the same)
ref() { { printf '%s' "$1" | tr '\t\r\n' '   '; echo; } | "$INFER" --model "$M" | infer_label_prob ,; }

# ---- 2. crafted CSVs ---------------------------------------------------------
# quotes, embedded newlines, empty text, spaces, no final newline
"$CLS" --model "$M" --column text "$DATA/classify_basic.csv" > "$tmp/basic.csv" 2> "$tmp/basic.err" ||
    die "basic: exit $?"
"$TOOL" tsv < "$tmp/basic.csv" > "$tmp/basic.tsv" || die "basic: output is not valid CSV"
[ "$(wc -l < "$tmp/basic.tsv")" = 9 ] || die "basic: $(wc -l < "$tmp/basic.tsv") output records, expected 9"
[ "$(head -1 "$tmp/basic.tsv")" = "$(printf 'id\ttext\tnote\tlabel\tscore\terror')" ] ||
    die "basic: header $(head -1 "$tmp/basic.tsv")"
[ "$(tail -n +2 "$tmp/basic.tsv" | cut -f1 | tr '\n' ' ')" = "1 2 3 4 5 6 7 8 " ] || die "basic: rows out of order"
[ "$(tail -n +2 "$tmp/basic.tsv" | cut -f3 | tr '\n' ' ')" = "a b c d empty text e f g " ] || die "basic: other columns changed"
[ -z "$(tail -n +2 "$tmp/basic.tsv" | cut -f6 | tr -d '\n')" ] || die "basic: unexpected errors"
i=0
for text in 'plain text' 'quoted, with comma' 'she said "wonderful" twice' \
            'line one
line two' '' '  spaces kept  ' 'multi

blank lines inside' 'last row without newline'; do
    i=$((i + 1))
    got=$(sed -n "$((i + 1))p" "$tmp/basic.tsv" | awk -F '\t' '{ print $4 "," $5 }')
    gtext=$(sed -n "$((i + 1))p" "$tmp/basic.tsv" | cut -f2)
    want_text=$(printf '%s' "$text" | awk 'BEGIN{ORS=""} NR>1{print "\\n"} {print}')
    [ "$gtext" = "$want_text" ] || die "basic row $i: text '$gtext', expected '$want_text'"
    want=$(ref "$text")
    same1 "$got" "$want" || die "basic row $i: '$got', bert-infer says '$want'"
done
grep -q '8 rows, 0 with errors' "$tmp/basic.err" || die "basic: summary: $(cat "$tmp/basic.err")"

# BOM + CRLF: BOM gone from the header, CRLF kept, quoted CRLF kept
"$CLS" --model "$M" --column text "$DATA/classify_crlf_bom.csv" > "$tmp/crlf.csv" 2>/dev/null || die "crlf: exit $?"
[ "$(head -c 3 "$tmp/crlf.csv")" = "id," ] || die "crlf: the BOM was not removed"
[ "$(tr -cd '\r' < "$tmp/crlf.csv" | wc -c)" = 5 ] || die "crlf: expected 5 CRs (4 line ends + 1 in a field)"
"$TOOL" tsv < "$tmp/crlf.csv" > "$tmp/crlf.tsv"
[ "$(wc -l < "$tmp/crlf.tsv")" = 4 ] || die "crlf: $(wc -l < "$tmp/crlf.tsv") records"
[ "$(sed -n 3p "$tmp/crlf.tsv" | cut -f2)" = 'crlf inside\r\nquoted field' ] || die "crlf: quoted field changed"
same1 "$(sed -n 3p "$tmp/crlf.tsv" | awk -F '\t' '{ print $3 "," $4 }')" "$(ref 'crlf inside quoted field')" ||
    die "crlf: row 2 differs from bert-infer"

# invalid UTF-8 and a missing column: kept in place, empty label, error column
"$CLS" --model "$M" --column text "$DATA/classify_bad_rows.csv" > "$tmp/bad.csv" 2> "$tmp/bad.err"; st=$?
[ $st = 0 ] || die "bad rows: exit $st"
"$TOOL" tsv < "$tmp/bad.csv" > "$tmp/bad.tsv"
[ "$(wc -l < "$tmp/bad.tsv")" = 5 ] || die "bad rows: $(wc -l < "$tmp/bad.tsv") records, expected 5"
[ "$(tail -n +2 "$tmp/bad.tsv" | cut -f1 | tr '\n' ' ')" = "1 2 3 4 " ] || die "bad rows: order"
[ "$(sed -n 3p "$tmp/bad.tsv" | cut -f3,4)" = "$(printf '\t')" ] || die "bad rows: row 2 should have an empty label and score"
sed -n 3p "$tmp/bad.tsv" | cut -f5 | grep -q 'invalid UTF-8' || die "bad rows: row 2 error: $(sed -n 3p "$tmp/bad.tsv")"
sed -n 4p "$tmp/bad.tsv" | cut -f5 | grep -q "no column 'text'" || die "bad rows: row 3 error: $(sed -n 4p "$tmp/bad.tsv")"
same1 "$(sed -n 5p "$tmp/bad.tsv" | awk -F '\t' '{ print $3 "," $4 }')" "$(ref 'another good row')" || die "bad rows: row 4 value"
grep -q 'row 2 (line 3): invalid UTF-8' "$tmp/bad.err" || die "bad rows: stderr should name row 2 line 3: $(cat "$tmp/bad.err")"
grep -q '4 rows, 2 with errors' "$tmp/bad.err" || die "bad rows: summary: $(cat "$tmp/bad.err")"

# truncated final quote: complete rows written, exit 2, the line named
"$CLS" --model "$M" --column text "$DATA/classify_truncated.csv" > "$tmp/trunc.csv" 2> "$tmp/trunc.err"; st=$?
[ $st = 2 ] || die "truncated: exit $st, expected 2"
[ "$(wc -l < "$tmp/trunc.csv")" = 3 ] || die "truncated: $(wc -l < "$tmp/trunc.csv") lines written, expected 3"
grep -q 'line 4: unterminated quoted field' "$tmp/trunc.err" || die "truncated: message: $(cat "$tmp/trunc.err")"

# a stray quote in an unquoted field: stop at its line with exit 2
"$CLS" --model "$M" --column text "$DATA/classify_stray_quote.csv" > "$tmp/stray.csv" 2> "$tmp/stray.err"; st=$?
[ $st = 2 ] || die "stray quote: exit $st"
[ "$(wc -l < "$tmp/stray.csv")" = 2 ] || die "stray quote: rows before the error should be written"
grep -q 'line 3' "$tmp/stray.err" || die "stray quote: message: $(cat "$tmp/stray.err")"

# --no-header with a column number; --all-scores and --top-k columns
"$CLS" --model "$M" --no-header --column 1 --all-scores --top-k 2 "$DATA/classify_noheader.csv" \
    > "$tmp/nh.csv" 2>/dev/null || die "no-header: exit $?"
"$TOOL" tsv < "$tmp/nh.csv" > "$tmp/nh.tsv"
[ "$(wc -l < "$tmp/nh.tsv")" = 2 ] || die "no-header: $(wc -l < "$tmp/nh.tsv") records"
[ "$(awk -F '\t' '{ print NF }' "$tmp/nh.tsv" | sort -u)" = 9 ] || die "no-header: expected 9 columns"
same1 "$(sed -n 1p "$tmp/nh.tsv" | awk -F '\t' '{ print $3 "," $4 }')" "$(ref 'hello there')" || die "no-header: value"
# the scores of the two labels sum to 1 and --top-k 2 lists both
sed -n 2p "$tmp/nh.tsv" | awk -F '\t' '{ s = $7 + $8; if (s < 0.999999 || s > 1.000001 || $3 == $5) exit 1 }' ||
    die "no-header: all-scores/top-k columns: $(sed -n 2p "$tmp/nh.tsv")"
"$CLS" --model "$M" --column text --all-scores "$DATA/classify_basic.csv" 2>/dev/null | head -1 |
    grep -q '^id,text,note,label,score,score_NEGATIVE,score_POSITIVE,error' || die "--all-scores header"

# jsonl: one object per row, from standard input
"$CLS" --model "$M" --column text --format jsonl - < "$DATA/classify_bad_rows.csv" > "$tmp/j" 2>/dev/null
[ "$(wc -l < "$tmp/j")" = 4 ] || die "jsonl: $(wc -l < "$tmp/j") lines"
grep -c '"error":null' "$tmp/j" | grep -qx 2 || die "jsonl: 2 good rows expected"
head -1 "$tmp/j" | grep -q '^{"id":"1","text":"good row","label":"POSITIVE"' || die "jsonl: $(head -1 "$tmp/j")"

# usage and model errors
"$CLS" --model "$M" "$DATA/classify_basic.csv" 2>/dev/null; [ $? = 1 ] || die "no --column: exit status"
"$CLS" --model "$M" --column text --batch 0 "$DATA/classify_basic.csv" 2>/dev/null; [ $? = 1 ] || die "--batch 0: exit status"
"$CLS" --model "$M" --column nosuch "$DATA/classify_basic.csv" > /dev/null 2> "$tmp/e"; [ $? = 2 ] || die "unknown column: exit status"
grep -q "no column 'nosuch'" "$tmp/e" || die "unknown column: message: $(cat "$tmp/e")"
"$CLS" --model "$tmp/nomodel" --column text "$DATA/classify_basic.csv" > /dev/null 2> "$tmp/e"; [ $? = 2 ] || die "missing model: exit status"
grep -q nomodel "$tmp/e" || die "missing model: message should name it"
"$CLS" --model "$M" --column text "$tmp/nofile.csv" > /dev/null 2> "$tmp/e"; [ $? = 2 ] || die "missing input: exit status"
"$CLS" --model "$FIX/bert-token-cased" --column text "$DATA/classify_basic.csv" > /dev/null 2>&1; [ $? = 2 ] ||
    die "token model: exit status"
"$CLS" --help | grep -q Examples || die "--help"
"$CLS" --version | grep -q libbert || die "--version"

exit $fail
