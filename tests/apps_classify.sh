#!/bin/sh
# bert-classify end to end.
#  1. Labels and scores equal bert-infer's on the sequence-classification
#     fixtures, RoBERTa and ELECTRA included (texts.txt turned into a CSV with a text and a pair column):
#     with the same batches (--batch 1, 3, 32 with --window equal to
#     --batch, so batches of consecutive rows as bert-infer's) bit for bit;
#     in other batches (other sizes, or length-sorted ones) the engine's sums
#     may differ in the last float bits, so there the labels must be equal
#     and the scores within 1e-6.
#  2. Crafted CSVs (tests/data/classify_*.csv): quotes, embedded newlines,
#     CRLF, BOM, empty text, invalid UTF-8, a missing column, a truncated
#     final quote, a stray quote: row counts, order, values, messages and
#     exit codes.
#  3. Length-sorted windows (--window): on a generated CSV of texts from 0
#     to 89 words with bad rows in between, every window and batch size
#     gives the rows in input order with the same fields, errors and
#     messages as batches of consecutive rows, labels equal and scores
#     within 1e-6; a malformed CSV after several windows; with the bundled
#     model (on AVX-512 CPUs) the output is the same bit for bit.
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

# ---- 1. parity with bert-infer (which truncates long texts) -------------
for mp in fixtures/bert-seq-uncased fixtures/distilbert-seq-uncased \
    fixtures/bert-seq-multilingual fixtures-roberta-electra/roberta-seq \
    fixtures-roberta-electra/electra-seq; do
    m=${mp##*/} d=$SHARED_DIR/$mp
    [ -f "$d/config.json" ] || { echo "note: $m absent, skipped"; continue; }
    "$TOOL" fromlines < "$d/texts.txt" > "$tmp/$m.csv"
    "$INFER" --model "$d" < "$d/texts.txt" > "$tmp/$m.infer" ||
        { die "bert-infer failed on $m"; continue; }
    infer_label_prob , < "$tmp/$m.infer" > "$tmp/$m.want"
    n_want=$(wc -l < "$tmp/$m.want")
    [ "$n_want" -gt 0 ] || die "$m: no bert-infer output"
    for b in 1 3 32; do
        "$CLS" --model "$d" --column text --pair-column pair --batch $b --window $b \
            --truncate "$tmp/$m.csv" > "$tmp/$m.$b.csv" 2> "$tmp/$m.$b.err" ||
            { die "$m --batch $b: exit $?: $(cat "$tmp/$m.$b.err")"; continue; }
        classify_ls < "$tmp/$m.$b.csv" > "$tmp/$m.$b.got"
        "$INFER" --model "$d" --batch $b < "$d/texts.txt" | infer_label_prob , > "$tmp/$m.$b.want"
        cmp -s "$tmp/$m.$b.want" "$tmp/$m.$b.got" ||
            die "$m --batch $b --window $b: labels/scores differ from bert-infer --batch $b: $(diff "$tmp/$m.$b.want" "$tmp/$m.$b.got" | head -5)"
        same_ls "$tmp/$m.want" "$tmp/$m.$b.got" ||
            die "$m --batch $b: labels differ from bert-infer's default batch, or scores by more than 1e-6"
        # the default window: length-sorted batches
        "$CLS" --model "$d" --column text --pair-column pair --batch $b \
            --truncate "$tmp/$m.csv" 2> "$tmp/$m.$b.err" | classify_ls > "$tmp/$m.$b.sorted" ||
            die "$m --batch $b (sorted): exit $?: $(cat "$tmp/$m.$b.err")"
        same_ls "$tmp/$m.want" "$tmp/$m.$b.sorted" ||
            die "$m --batch $b (sorted): labels differ from bert-infer's, or scores by more than 1e-6"
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
# no --column: the header's text column; with --no-header a usage error
"$CLS" --model "$M" "$DATA/classify_basic.csv" > "$tmp/nocol" 2>/dev/null || die "no --column: exit $?"
"$CLS" --model "$M" --column text "$DATA/classify_basic.csv" 2>/dev/null | cmp -s - "$tmp/nocol" ||
    die "no --column: not the text column"
"$CLS" --model "$M" --no-header "$DATA/classify_basic.csv" 2>/dev/null; [ $? = 1 ] || die "no --column, --no-header: exit status"
printf 'x\ngood\n' | "$CLS" --model "$M" > /dev/null 2> "$tmp/e"; st=$?
[ $st = 2 ] && grep -q "no column 'text'.*--column" "$tmp/e" || die "no text column: exit $st: $(cat "$tmp/e")"
# --column 0 is a usage error with a header and without
for h in '' --no-header; do
    "$CLS" --model "$M" --column 0 $h "$DATA/classify_basic.csv" > /dev/null 2> "$tmp/e"; st=$?
    [ $st = 1 ] && grep -q 'start at 1' "$tmp/e" || die "--column 0 $h: exit $st: $(cat "$tmp/e")"
done

# CR-only line endings (old Mac files): each record its own line number,
# the output in the input's line ending (CR), not CRLF
printf 'text\rgood\r\377 bad\rfine\r' > "$tmp/cr.csv"
"$CLS" --model "$M" "$tmp/cr.csv" > "$tmp/o" 2> "$tmp/e" || die "CR-only: exit $?"
grep -q 'row 2 (line 3): invalid UTF-8' "$tmp/e" || die "CR-only: line numbers: $(cat "$tmp/e")"
[ "$(tr -cd '\r' < "$tmp/o" | wc -c)" = 4 ] && [ "$(tr -cd '\n' < "$tmp/o" | wc -c)" = 0 ] ||
    die "CR-only: output line endings: $(od -c "$tmp/o" | head -3)"

# long texts: over windows by default, counted; with --truncate truncated,
# counted, and a warning at the end
{ echo text; w=; i=0; while [ $i -lt 300 ]; do w="$w word"; i=$((i + 1)); done
  echo "$w"; echo short; echo "$w"; } > "$tmp/long.csv"
"$CLS" --model "$M" "$tmp/long.csv" > "$tmp/win.csv" 2> "$tmp/e" || die "long texts: exit $?"
grep -q ': 2 row(s) longer than the model.s [0-9]* tokens were classified over overlapping windows' "$tmp/e" ||
    die "long texts: no windows count: $(cat "$tmp/e")"
grep -q 'truncated' "$tmp/e" && die "long texts: truncated without --truncate: $(cat "$tmp/e")"
"$CLS" --model "$M" --truncate "$tmp/long.csv" > "$tmp/trunc.csv" 2> "$tmp/e" || die "long texts: exit $?"
grep -q 'warning: 2 row(s) longer than the model.s [0-9]* tokens were truncated' "$tmp/e" ||
    die "long texts: no truncation warning: $(cat "$tmp/e")"
cmp -s "$tmp/win.csv" "$tmp/trunc.csv" && die "long texts: windows gave the truncated scores"
"$CLS" --model "$M" --stride 5000 "$tmp/long.csv" > /dev/null 2> "$tmp/e"; st=$?
[ $st = 1 ] && grep -q 'stride 5000: need a number of tokens' "$tmp/e" ||
    die "--stride 5000: exit $st: $(cat "$tmp/e")"
"$CLS" --model "$M" "$DATA/classify_basic.csv" > /dev/null 2> "$tmp/e"
grep -q 'truncated' "$tmp/e" && die "truncation warning without long rows"

# item 6: the input already has label/score/error columns, or repeats names
printf 'text,label\ngood,x\n' > "$tmp/has_label.csv"
for f in csv jsonl; do
    "$CLS" --model "$M" --format $f "$tmp/has_label.csv" > "$tmp/o" 2> "$tmp/e"; st=$?
    [ $st = 2 ] && grep -q "already has a column 'label'.*--prefix" "$tmp/e" || die "$f label clash: exit $st: $(cat "$tmp/e")"
done
printf 'text,score_POSITIVE\ngood,x\n' | "$CLS" --model "$M" --all-scores > /dev/null 2> "$tmp/e"; st=$?
[ $st = 2 ] && grep -q "already has a column 'score_POSITIVE'" "$tmp/e" || die "all-scores clash: exit $st: $(cat "$tmp/e")"
"$CLS" --model "$M" --prefix pred_ --top-k 2 "$tmp/has_label.csv" > "$tmp/o" || die "--prefix: exit $?"
[ "$(head -1 "$tmp/o")" = "text,label,pred_label,pred_score,pred_label_2,pred_score_2,pred_error" ] ||
    die "--prefix header: $(head -1 "$tmp/o")"
printf 'text,a,a,text,label\ngood,1,2,3,4\n' | "$CLS" --model "$M" --format jsonl --prefix p_ > "$tmp/o" || die "jsonl dup: exit $?"
grep -q '^{"text":"good","a":"1","a.1":"2","text.1":"3","label":"4","p_label":"[A-Z]*","p_score":[0-9.e-]*,"p_error":null}$' "$tmp/o" ||
    die "jsonl keys: $(cat "$tmp/o")"
if command -v python3 > /dev/null; then
    python3 -c 'import json,sys
def once(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)): sys.exit("repeated key: %r" % keys)
    return dict(pairs)
for l in open(sys.argv[1]): json.loads(l, object_pairs_hook=once)' "$tmp/o" || die "jsonl: repeated keys"
fi
# header names holding NUL bytes: "t" and "t\0\0x" differ, and a repeated
# "t" becomes t.1 (compared as C strings the renaming never ended: a hang
# the CSV fuzzer found; timeout turns one into a failure)
printf 'text,t,t\0\0x,t\ngood,1,2,3\n' > "$tmp/nul_header.csv"
if command -v timeout > /dev/null; then
    timeout 60 "$CLS" --model "$M" --format jsonl "$tmp/nul_header.csv" > "$tmp/o" 2> "$tmp/e" ||
        die "jsonl NUL header: exit $?: $(cat "$tmp/e")"
    grep -q '^{"text":"good","t":"1","t\\u0000\\u0000x":"2","t.1":"3","label":"[A-Z]*",' "$tmp/o" ||
        die "jsonl NUL header keys: $(cat "$tmp/o")"
fi
"$CLS" --model "$M" --prefix 'a"b' "$tmp/has_label.csv" > /dev/null 2>&1; [ $? = 1 ] || die "--prefix with a quote: exit status"
"$CLS" --model "$M" --column text --batch 0 "$DATA/classify_basic.csv" 2>/dev/null; [ $? = 1 ] || die "--batch 0: exit status"
for w in 0 -3 x '' 8x; do
    "$CLS" --model "$M" --column text --window "$w" "$DATA/classify_basic.csv" > /dev/null 2> "$tmp/e"; st=$?
    [ $st = 1 ] || die "--window '$w': exit $st, expected 1"
    grep -q -- '--window needs a number >= 1' "$tmp/e" || die "--window '$w': message: $(cat "$tmp/e")"
done
# a window holds whole batches
"$CLS" --model "$M" --column text --batch 16 --window 8 "$DATA/classify_basic.csv" > /dev/null 2> "$tmp/e"; st=$?
[ $st = 1 ] || die "--window 8 --batch 16: exit $st, expected 1"
grep -q -- '--window (8) must be at least --batch (16)' "$tmp/e" || die "--window < --batch: message: $(cat "$tmp/e")"
"$CLS" --model "$M" --column nosuch "$DATA/classify_basic.csv" > /dev/null 2> "$tmp/e"; [ $? = 2 ] || die "unknown column: exit status"
grep -q "no column 'nosuch'" "$tmp/e" || die "unknown column: message: $(cat "$tmp/e")"
"$CLS" --model "$tmp/nomodel" --column text "$DATA/classify_basic.csv" > /dev/null 2> "$tmp/e"; [ $? = 2 ] || die "missing model: exit status"
grep -q nomodel "$tmp/e" || die "missing model: message should name it"
"$CLS" --model "$M" --column text "$tmp/nofile.csv" > /dev/null 2> "$tmp/e"; [ $? = 2 ] || die "missing input: exit status"
"$CLS" --model "$FIX/bert-token-cased" --column text "$DATA/classify_basic.csv" > /dev/null 2>&1; [ $? = 2 ] ||
    die "token model: exit status"
"$CLS" --help | grep -q Examples || die "--help"
"$CLS" --help | grep -q -- --window || die "--help: no --window"
"$CLS" --version | grep -q libbert || die "--version"

# ---- 3. length-sorted windows ------------------------------------------------
# gen_rows N MIN: the header id,text,note and rows 1..N whose texts have
# MIN..MIN+89 words (the fixture truncates the longest to 128 tokens); every
# 5th text holds a newline and quotes, every 7th ends in an invalid UTF-8
# byte, every 11th row has only its id.  No rand(): the same file from any
# awk.
gen_rows() {
    LC_ALL=C awk -v n="$1" -v min="$2" 'BEGIN {
        nw = split("the movie was great and the acting felt warm but the plot dragged a little too long for me", w, " ")
        print "id,text,note"
        for (i = 1; i <= n; i++) {
            if (i % 11 == 0) { print i; continue }
            len = min + (i * 37) % 90; s = ""
            for (j = 0; j < len; j++) s = s (j ? " " : "") w[(i * 7 + j * 3) % nw + 1]
            if (i % 7 == 0) s = s " \377"
            if (i % 5 == 0) s = s "\nsecond line, \"quoted\""
            gsub(/"/, "\"\"", s)
            printf "%d,\"%s\",n%d\n", i, s, i
        }
    }'
}
# fields but label and score; label,score
not_ls() { "$TOOL" tsv | cut -f1-3,6; }
ls_of() { "$TOOL" tsv | tail -n +2 | awk -F '\t' '{ print $4 "," $5 }'; }
# stderr without the timing of the summary line
no_time() { sed 's/, [0-9.]* s ([0-9]* rows\/s)$//' "$1"; }

gen_rows 150 0 > "$tmp/win.csv"
# the reference: --window equal to --batch, so batches of consecutive rows
"$CLS" --model "$M" --column text --batch 4 --window 4 "$tmp/win.csv" > "$tmp/win.ref" 2> "$tmp/win.ref.err" ||
    die "windows: reference run: exit $?"
"$TOOL" tsv < "$tmp/win.ref" > "$tmp/win.ref.tsv" || die "windows: output is not valid CSV"
[ "$(tail -n +2 "$tmp/win.ref.tsv" | cut -f1 | tr '\n' ' ')" = "$(seq 1 150 | tr '\n' ' ')" ] ||
    die "windows: rows out of order"
# 13 rows without text, 20 with invalid UTF-8 (77 is both): the errors in
# their rows, good rows labelled
tail -n +2 "$tmp/win.ref.tsv" | awk -F '\t' '{
    want = $1 % 11 == 0 ? "no column" : $1 % 7 == 0 ? "invalid UTF-8" : ""
    if (want == "" ? ($6 != "" || $4 == "") : (index($6, want) != 1 || $4 != "")) { print; bad = 1 } }
    END { exit bad }' || die "windows: errors in the wrong rows"
[ "$(grep -c ': row [0-9]* (line [0-9]*): ' "$tmp/win.ref.err")" = 20 ] || die "windows: 20 errors should be shown"
grep ': row ' "$tmp/win.ref.err" | sed 's/.*: row \([0-9]*\) .*/\1/' | sort -n -c ||
    die "windows: errors not reported in row order"
grep -q 'more rows with errors; not shown' "$tmp/win.ref.err" || die "windows: no 'more rows' line"
grep -q '150 rows, 33 with errors' "$tmp/win.ref.err" || die "windows: summary: $(tail -1 "$tmp/win.ref.err")"
not_ls < "$tmp/win.ref" > "$tmp/win.ref.f"
ls_of < "$tmp/win.ref" > "$tmp/win.ref.ls"
no_time "$tmp/win.ref.err" > "$tmp/win.ref.e"
for o in "--batch 4" "--batch 4 --window 13" "--batch 4 --window 1000" "--batch 1" "--batch 32" \
         "--batch 32 --window 33" "--batch 3 --window 7 --threads 2"; do
    # shellcheck disable=SC2086
    "$CLS" --model "$M" --column text $o - < "$tmp/win.csv" > "$tmp/win.out" 2> "$tmp/win.err" ||
        { die "windows $o: exit $?"; continue; }
    not_ls < "$tmp/win.out" | cmp -s - "$tmp/win.ref.f" ||
        die "windows $o: rows, fields or errors differ from consecutive batches"
    ls_of < "$tmp/win.out" > "$tmp/win.ls"
    same_ls "$tmp/win.ref.ls" "$tmp/win.ls" || die "windows $o: labels differ, or scores by more than 1e-6"
    no_time "$tmp/win.err" | sed 's/<stdin>/'"$(printf '%s' "$tmp/win.csv" | sed 's/[\/&]/\\&/g')"'/' |
        cmp -s - "$tmp/win.ref.e" || die "windows $o: messages differ: $(cat "$tmp/win.err")"
done
# jsonl and --no-header keep the order too
"$CLS" --model "$M" --column text --batch 4 --window 13 --format jsonl "$tmp/win.csv" 2>/dev/null |
    sed 's/"score":[^,}]*//g' > "$tmp/win.j1"
"$CLS" --model "$M" --column text --batch 4 --window 4 --format jsonl "$tmp/win.csv" 2>/dev/null |
    sed 's/"score":[^,}]*//g' > "$tmp/win.j2"
[ "$(wc -l < "$tmp/win.j1")" = 150 ] && cmp -s "$tmp/win.j1" "$tmp/win.j2" || die "windows: jsonl differs"
tail -n +2 "$tmp/win.csv" > "$tmp/win_nh.csv"
"$CLS" --model "$M" --no-header --column 2 --batch 4 --window 9 "$tmp/win_nh.csv" 2>/dev/null | not_ls > "$tmp/win_nh.f"
tail -n +2 "$tmp/win.ref.f" | sed "s/column 'text'/column 2/" | cmp -s - "$tmp/win_nh.f" ||
    die "windows: --no-header rows differ"

# a malformed CSV after several windows: every row before it written, as
# without it, then exit 2 naming the line
lines=$(wc -l < "$tmp/win.csv")
{ cat "$tmp/win.csv"; printf '151,bad"quote,x\n152,after,x\n'; } > "$tmp/win_stray.csv"
{ cat "$tmp/win.csv"; printf '151,"never closed\n152,x\n'; } > "$tmp/win_trunc.csv"
"$CLS" --model "$M" --column text --batch 4 --window 16 "$tmp/win.csv" > "$tmp/win16" 2>/dev/null
"$CLS" --model "$M" --column text --batch 4 --window 16 "$tmp/win_stray.csv" > "$tmp/win_stray.out" 2> "$tmp/e"; st=$?
[ $st = 2 ] || die "windows, stray quote: exit $st"
cmp -s "$tmp/win16" "$tmp/win_stray.out" || die "windows, stray quote: the 150 rows before it differ"
grep -q "line $((lines + 1)): malformed CSV .*stopping after 150 rows" "$tmp/e" || die "windows, stray quote: message: $(cat "$tmp/e")"
"$CLS" --model "$M" --column text --batch 4 --window 16 "$tmp/win_trunc.csv" > "$tmp/win_trunc.out" 2> "$tmp/e"; st=$?
[ $st = 2 ] || die "windows, unterminated quote: exit $st"
cmp -s "$tmp/win16" "$tmp/win_trunc.out" || die "windows, unterminated quote: the 150 rows before it differ"
grep -q "line $((lines + 1)): unterminated quoted field" "$tmp/e" || die "windows, unterminated quote: message: $(cat "$tmp/e")"

# The bundled model: with libbert's own kernels (avx512, avx2) a text's
# scores do not depend on the rows it is batched with, bit for bit: every
# output element is accumulated in the same order whatever the row count,
# the row's place in a tile or the thread split, so sorting changes
# nothing.  (The number of threads may: the attention of a long text is
# split differently, so each thread count has its own reference.)  BLIS
# switches between its small-matrix and packed paths with the row count,
# so on the blis tier scores may differ in the last bits.
S=$top_srcdir/data/sentiment
kernels=$("$top_builddir/apps/bert-bench" --shape bert-tiny --batch 1 --seq 8 --reps 1 \
          --min-time 0.01 --no-peak --no-blis --json 2>/dev/null |
          sed -n 's/.*"gemm_kernels":"\([^"]*\)".*/\1/p')
echo "sgemm kernels: ${kernels:-unknown}"
if [ -f "$S/config.json" ]; then
    gen_rows 200 10 > "$tmp/big.csv"
    for t in 1 2; do
        "$CLS" --model "$S" --column text --threads $t --window 32 "$tmp/big.csv" > "$tmp/big.ref" 2>/dev/null ||
            die "bundled --threads $t: exit $?"
        ls_of < "$tmp/big.ref" > "$tmp/big.ref.ls"
        for o in "" "--window 100" "--window 1000"; do
            # shellcheck disable=SC2086
            "$CLS" --model "$S" --column text --threads $t $o "$tmp/big.csv" > "$tmp/big.out" 2>/dev/null ||
                die "bundled --threads $t $o: exit $?"
            if [ "$kernels" = avx512 ] || [ "$kernels" = avx2 ]; then
                cmp -s "$tmp/big.out" "$tmp/big.ref" ||
                    die "bundled --threads $t $o: output differs from consecutive batches"
            else
                ls_of < "$tmp/big.out" > "$tmp/big.ls"
                same_ls "$tmp/big.ref.ls" "$tmp/big.ls" ||
                    die "bundled --threads $t $o: labels differ, or scores by more than 1e-6"
            fi
        done
    done
else
    echo "note: data/sentiment absent, bit-identity check skipped"
fi

exit $fail
