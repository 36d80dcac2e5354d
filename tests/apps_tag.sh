#!/bin/sh
# bert-tag end to end: its JSON output for every line of the bert-token-cased
# fixture equals the entities Hugging Face's pipeline produced
# (expected_entities.json), for all five aggregation strategies; plus the
# conll and inline formats, --ignore, --stride and the error paths.
. "$(dirname "$0")/lib.sh"
FIX=$SHARED_DIR/fixtures/bert-token-cased
TAG=$top_builddir/apps/bert-tag
CHECK=$top_builddir/tests/test_tagger
needs -f "$FIX/expected_entities.json" "$FIX"
mktmp

for agg in none simple first average max; do
    "$TAG" --model "$FIX" --aggregation "$agg" < "$FIX/texts.txt" \
        > "$tmp/$agg.json" 2> "$tmp/$agg.err" || die "bert-tag --aggregation $agg exited $?: $(cat "$tmp/$agg.err")"
    "$CHECK" --output "$agg" "$tmp/$agg.json" || die "bert-tag --aggregation $agg differs from expected_entities.json"
done

# one output line per input line
n_in=$(wc -l < "$FIX/texts.txt")
n_out=$(wc -l < "$tmp/simple.json")
[ "$n_in" = "$n_out" ] || die "json: $n_out lines for $n_in inputs"

# conll: word<TAB>tag per word, one blank line per input
printf 'The quick brown fox jumps over the lazy dog.\na\n' |
    "$TAG" --model "$FIX" --format conll > "$tmp/conll" || die "conll exited $?"
printf 'The\tI-ORG\nquick\tO\nbrown\tB-MISC\nfox\tO\njumps\tI-MISC\nover\tO\nthe\tO\nlazy\tI-ORG\ndog\tI-ORG\n.\tB-PER\n\n' > "$tmp/conll.want"
head -11 "$tmp/conll" | cmp -s - "$tmp/conll.want" || die "conll output: $(cat "$tmp/conll")"
[ "$(grep -c '^$' "$tmp/conll")" = 2 ] || die "conll: expected 2 blank lines"

# inline marks entities (simple) in the text
echo 'The quick brown fox jumps over the lazy dog.' |
    "$TAG" --model "$FIX" --format inline > "$tmp/inline" || die "inline exited $?"
[ "$(cat "$tmp/inline")" = "[The](ORG) quick [brown](MISC) fox [jumps](MISC) over the [lazy dog](ORG)[.](PER)" ] ||
    die "inline output: $(cat "$tmp/inline")"

# --ignore: an empty list keeps O; a list drops what it names
echo 'The quick brown fox' | "$TAG" --model "$FIX" --aggregation none --ignore '' > "$tmp/ign" || die "--ignore '' exited $?"
grep -q '"entity":"O"' "$tmp/ign" || die "--ignore '' should keep O: $(cat "$tmp/ign")"
echo 'The quick brown fox' | "$TAG" --model "$FIX" --ignore O,ORG > "$tmp/ign2" || die "--ignore O,ORG exited $?"
grep -q '"ORG"' "$tmp/ign2" && die "--ignore O,ORG kept ORG: $(cat "$tmp/ign2")"

# --stride: a text longer than the model maximum (64) is tagged to its end
long=$(sed -n 34p "$FIX/texts.txt")
len=$(printf '%s' "$long" | wc -m)
printf '%s\n' "$long" | "$TAG" --model "$FIX" --stride 16 > "$tmp/stride" || die "--stride exited $?"
last_end=$(sed 's/.*"end":\([0-9]*\)}]$/\1/' "$tmp/stride")
[ "$last_end" -gt 300 ] 2>/dev/null || die "--stride: last entity ends at $last_end of $len"
printf '%s\n' "$long" | "$TAG" --model "$FIX" > "$tmp/trunc"
last_end=$(sed 's/.*"end":\([0-9]*\)}]$/\1/' "$tmp/trunc")
[ "$last_end" -lt 400 ] || die "without --stride the text should be truncated"

# errors: usage 1, bad input / model 2 (with one output line per input)
"$TAG" --model "$FIX" --aggregation bogus < /dev/null 2>/dev/null; [ $? = 1 ] || die "bad --aggregation: exit status"
"$TAG" --model "$FIX" --aggregation none --stride 4 < /dev/null 2>/dev/null; [ $? = 1 ] || die "--stride with none: exit status"
"$TAG" --model "$tmp/nonexistent" < /dev/null 2> "$tmp/err"; [ $? = 2 ] || die "missing model: exit status"
grep -q nonexistent "$tmp/err" || die "missing model: message should name the directory: $(cat "$tmp/err")"
printf 'ok line\nbad \377 line\nlast\n' | "$TAG" --model "$FIX" > "$tmp/out" 2> "$tmp/err"; st=$?
[ $st = 2 ] || die "invalid UTF-8: exit status $st"
[ "$(wc -l < "$tmp/out")" = 3 ] || die "invalid UTF-8: 3 output lines expected"
grep -q ':2:' "$tmp/err" || die "invalid UTF-8: message should give line 2: $(cat "$tmp/err")"
# the default aggregation: the model's aggregation_strategy, else first
"$TAG" --model "$FIX" < "$FIX/texts.txt" > "$tmp/default.json" || die "default aggregation: exit $?"
cmp -s "$tmp/default.json" "$tmp/first.json" || die "no aggregation_strategy: the default is not first"
mkdir "$tmp/rec"
for f in "$FIX"/*; do ln -s "$f" "$tmp/rec/"; done
rm "$tmp/rec/config.json"
sed 's/^{/{"aggregation_strategy": "average",/' "$FIX/config.json" > "$tmp/rec/config.json"
"$TAG" --model "$tmp/rec" < "$FIX/texts.txt" > "$tmp/rec.json" || die "recorded aggregation: exit $?"
cmp -s "$tmp/rec.json" "$tmp/average.json" || die "aggregation_strategy average: the default is not average"
sed 's/^{/{"aggregation_strategy": "best",/' "$FIX/config.json" > "$tmp/rec/config.json"
"$TAG" --model "$tmp/rec" x > /dev/null 2> "$tmp/e"; st=$?
[ $st = 2 ] && grep -q 'aggregation_strategy' "$tmp/e" || die "aggregation_strategy best: exit $st: $(cat "$tmp/e")"
"$TAG" --help | grep -q Examples || die "--help"
"$TAG" --version | grep -q libbert || die "--version"

exit $fail
