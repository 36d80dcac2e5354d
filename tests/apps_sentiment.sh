#!/bin/sh
# bert-sentiment end to end on the bert-seq-uncased fixture: arguments and
# stdin lines, TSV and JSON output, values equal to bert-infer --batch 1
# (one text per run, as bert-sentiment runs them), errors.
. "$(dirname "$0")/lib.sh"
SENT=$top_builddir/apps/bert-sentiment
INFER=$top_builddir/apps/bert-infer
M=$SHARED_DIR/fixtures/bert-seq-uncased
needs -f "$M/config.json" "$M"
mktmp

head -20 "$M/texts.txt" | grep -v "$(printf '\t')" > "$tmp/texts"
"$SENT" --model "$M" < "$tmp/texts" > "$tmp/out" || die "stdin: exit $?"
[ "$(wc -l < "$tmp/out")" = "$(wc -l < "$tmp/texts")" ] || die "one line per input"
cut -f3- "$tmp/out" | cmp -s - "$tmp/texts" || die "third column should be the text"
"$INFER" --model "$M" --batch 1 < "$tmp/texts" | infer_label_prob '\t' > "$tmp/want"
cut -f1,2 "$tmp/out" | cmp -s - "$tmp/want" || die "labels/probabilities differ from bert-infer: $(diff "$tmp/want" "$tmp/out" | head -4)"

"$SENT" --model "$M" 'I loved it' 'I hated it' > "$tmp/args" || die "args: exit $?"
[ "$(wc -l < "$tmp/args")" = 2 ] && [ "$(sed -n 2p "$tmp/args" | cut -f3)" = 'I hated it' ] || die "args output"
"$SENT" --model "$M" --json 'I loved it' > "$tmp/json" || die "json: exit $?"
grep -q '^{"text":"I loved it","label":"[A-Z]*","score":[0-9.e-]*,"scores":{"NEGATIVE":[0-9.e-]*,"POSITIVE":[0-9.e-]*}}$' "$tmp/json" ||
    die "json output: $(cat "$tmp/json")"

printf 'fine\nbad \377\n' | "$SENT" --model "$M" > "$tmp/o" 2> "$tmp/e"; st=$?
[ $st = 2 ] || die "invalid UTF-8: exit $st"
[ "$(wc -l < "$tmp/o")" = 2 ] || die "invalid UTF-8: every line answered"
grep -q '<stdin>:2: invalid UTF-8' "$tmp/e" || die "invalid UTF-8 message: $(cat "$tmp/e")"
"$SENT" --model "$tmp/none" x 2>/dev/null; [ $? = 2 ] || die "missing model: exit status"
"$SENT" --bogus 2>/dev/null; [ $? = 1 ] || die "bad option: exit status"
# no --model: the bundled default when it is there, else a clear exit 2
if [ -f "$top_srcdir/data/sentiment/config.json" ]; then
    "$SENT" 'a fine film' > /dev/null || die "default model: exit $?"
else
    "$SENT" 'a fine film' > /dev/null 2> "$tmp/e"; st=$?
    [ $st = 2 ] || die "no default model: exit $st"
    grep -q 'default sentiment model is missing' "$tmp/e" || die "no default model: message: $(cat "$tmp/e")"
fi
# a text longer than the model: windows by default (counted, "windows" in
# JSON), the first tokens with --truncate (a warning); a bad --stride
w=; i=0; while [ $i -lt 300 ]; do w="$w word"; i=$((i + 1)); done
"$SENT" --model "$M" --json "$w" 'short' > "$tmp/o" 2> "$tmp/e" || die "long text: exit $?"
grep -c '"windows":' "$tmp/o" | grep -qx 1 || die "long text: windows in JSON: $(cut -c1-80 "$tmp/o")"
grep -q '1 text(s) longer than the model.s [0-9]* tokens were classified over overlapping windows' "$tmp/e" ||
    die "long text: no windows count: $(cat "$tmp/e")"
"$SENT" --model "$M" --truncate "$w" > /dev/null 2> "$tmp/e" || die "--truncate: exit $?"
grep -q 'warning: 1 text(s) longer than the model.s [0-9]* tokens were truncated' "$tmp/e" ||
    die "--truncate: no warning: $(cat "$tmp/e")"
"$SENT" --model "$M" 'short' 2>&1 >/dev/null | grep -q . && die "a short text printed a notice"
"$SENT" --model "$M" --stride x 'a' 2> "$tmp/e"; st=$?
[ $st = 1 ] && grep -q 'stride x: need a number' "$tmp/e" || die "--stride x: exit $st"
"$SENT" --help | grep -q Examples || die "--help"
"$SENT" --version | grep -q libbert || die "--version"
exit $fail
