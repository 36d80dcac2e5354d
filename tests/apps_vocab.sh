#!/bin/sh
# bert-vocab end to end: vocabularies worked out by hand from the BPE rules
# (special tokens, alphabet in code-point order, ## continuation symbols in
# the order met, merges by count with ties to the pair of smaller ids),
# --min-frequency, --lowercase, --limit-alphabet, --special, the "first N
# lines = --vocab-size N" property, loading the result with bert-tokenize,
# tokenizer_config.json, awkward input (invalid UTF-8, NUL bytes, a binary
# file, a 1 MB word, empty files) and the error paths.  With
# ../shared/data/wiki_en, also the exact output on Wikipedia text (sha256).
. "$(dirname "$0")/lib.sh"
VOCAB=$top_builddir/apps/bert-vocab
TOK=$top_builddir/apps/bert-tokenize
mktmp

# check_err NAME: a sanitizer report in $tmp/err fails the test even when
# the exit status looks right
check_err() {
    if grep -q -e 'Sanitizer' -e 'runtime error' "$tmp/err"; then
        die "$1: sanitizer report: $(head -5 "$tmp/err")"
    fi
}
# learn NAME ARGS...: bert-vocab -q --out $tmp/NAME ARGS..., must exit 0
learn() {
    name=$1; shift
    "$VOCAB" -q --out "$tmp/$name" "$@" 2> "$tmp/err" ||
        die "$name: bert-vocab $* exited $?: $(cat "$tmp/err")"
    check_err "$name"
}
# expect_vocab NAME TOKENS: $tmp/NAME/vocab.txt is exactly TOKENS, in order
expect_vocab() {
    got=$(tr '\n' ' ' < "$tmp/$1/vocab.txt" | sed 's/ $//')
    [ "$got" = "$2" ] || die "$1: vocab.txt is
  '$got', want
  '$2'"
}
# expect_fail STATUS PATTERN NAME ARGS...: bert-vocab ARGS exits STATUS
# and its stderr matches PATTERN (grep -E)
expect_fail() {
    want=$1 pat=$2 name=$3; shift 3
    "$VOCAB" -q "$@" > /dev/null 2> "$tmp/err"; st=$?
    [ "$st" = "$want" ] || die "$name: exit status $st, want $want: $(cat "$tmp/err")"
    grep -Eq -- "$pat" "$tmp/err" || die "$name: stderr lacks /$pat/: $(cat "$tmp/err")"
    check_err "$name"
}
SPECIAL='[PAD] [UNK] [CLS] [SEP] [MASK]'

# --- a vocabulary worked out by hand ------------------------------------
# Words: hug x3, pug x2, pun, bun, hugs and ","; in byte order: , bun hug
# hugs pug pun.  Alphabet (ids 5..12): , b g h n p s u.  Continuation
# symbols as met: ##u 13, ##n 14, ##g 15, ##s 16.  Pair counts:
# (##u,##g) 6, (h,##u) 4, (p,##u) 3, (##u,##n) 2, (b,##u) 1, (##g,##s) 1.
#  1. (##u,##g) 6 -> ##ug 17;  now (h,##ug) 4, (p,##ug) 2, (p,##u) 1
#  2. (h,##ug) 4 -> hug 18
#  3. tie at 2: (p,##ug) = (10,17) before (##u,##n) = (13,14) -> pug 19
#  4. (##u,##n) 2 -> ##un 20;  every pair left occurs once: stop (min 2)
printf 'hug hug hug, pug pug\npun bun hugs\n' > "$tmp/hug.txt"
HUG="$SPECIAL , b g h n p s u ##u ##n ##g ##s ##ug hug pug ##un"
learn hug "$tmp/hug.txt"
expect_vocab hug "$HUG"
# --min-frequency 1 goes on with the pairs seen once, smaller ids first:
# (b,##un) = (6,20), (p,##un) = (10,20), (hug,##s) = (18,16)
learn hug1 --min-frequency 1 "$tmp/hug.txt"
expect_vocab hug1 "$HUG bun pun hugs"
# --min-frequency 3 stops before the first pair seen twice
learn hug3 --min-frequency 3 "$tmp/hug.txt"
expect_vocab hug3 "$SPECIAL , b g h n p s u ##u ##n ##g ##s ##ug hug"
# --vocab-size stops there, whatever pairs are left
learn hug22 --min-frequency 1 --vocab-size 22 "$tmp/hug.txt"
expect_vocab hug22 "$HUG bun"
# --max-lines 1: only "hug hug hug, pug pug"
learn hugmax --max-lines 1 "$tmp/hug.txt"
expect_vocab hugmax "$SPECIAL , g h p u ##u ##g ##ug hug pug"

# tokenizer_config.json: valid JSON, do_lower_case as given
cfg=$tmp/hug/tokenizer_config.json
[ -s "$cfg" ] || die "no tokenizer_config.json"
if command -v python3 > /dev/null; then
    python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); sys.exit(c["do_lower_case"] is not False or c["model_max_length"] != 512)' "$cfg" ||
        die "tokenizer_config.json invalid or wrong: $(cat "$cfg")"
fi
grep -q '"do_lower_case": false,' "$cfg" || die "cased: do_lower_case should be false: $(cat "$cfg")"

# the output loads in libbert and tokenizes with the learned pieces
printf 'hugs bun\n' | "$TOK" --model "$tmp/hug" --format tokens > "$tmp/tok" 2> "$tmp/err" ||
    die "bert-tokenize on the learned vocab exited $?: $(cat "$tmp/err")"
[ "$(cat "$tmp/tok")" = "[CLS] hug ##s b ##un [SEP]" ] || die "bert-tokenize: $(cat "$tmp/tok")"

# --- --lowercase: NFD, accents dropped, lower case ---------------------------
# cafe x3, naive x2; alphabet a c e f i n v (5..11); ##a 12 ##f 13 ##e 14
# ##i 15 ##v 16; ties at 3 then 2 go to the smaller ids.
printf 'Caf\303\251 CAF\303\211 cafe\314\201 na\303\257ve NA\303\217VE\n' > "$tmp/cafe.txt"
learn lc --lowercase --model-max-length 128 "$tmp/cafe.txt"
expect_vocab lc "$SPECIAL a c e f i n v ##a ##f ##e ##i ##v ca ##fe cafe na ##iv naiv naive"
grep -q '"do_lower_case": true,' "$tmp/lc/tokenizer_config.json" ||
    die "--lowercase: do_lower_case should be true: $(cat "$tmp/lc/tokenizer_config.json")"
grep -q '"model_max_length": 128,' "$tmp/lc/tokenizer_config.json" ||
    die "--model-max-length 128 not in tokenizer_config.json"
printf 'CAF\303\211 Na\303\257ve\n' | "$TOK" --model "$tmp/lc" --format tokens > "$tmp/tok" 2> "$tmp/err" ||
    die "bert-tokenize on the uncased vocab exited $?: $(cat "$tmp/err")"
[ "$(cat "$tmp/tok")" = "[CLS] cafe naive [SEP]" ] || die "bert-tokenize uncased: $(cat "$tmp/tok")"
# cased: accents and capitals stay, the precomposed é is one character and
# the combining acute of "cafe\314\201" is a character of its own
learn cased "$tmp/cafe.txt"
for t in C A É é Ï ï '##é' "$(printf '##\314\201')"; do
    grep -qxF -- "$t" "$tmp/cased/vocab.txt" || die "cased: '$t' missing from vocab.txt"
done
grep -v '^\[' "$tmp/lc/vocab.txt" | LC_ALL=C grep -q '[^a-z#]' &&
    die "--lowercase: capitals or accents left: $(tr '\n' ' ' < "$tmp/lc/vocab.txt")"

# CJK characters are words of their own: no ## form
printf '\344\270\255\346\226\207\345\255\227 \344\270\255\346\226\207\n' > "$tmp/cjk.txt"
learn cjk "$tmp/cjk.txt"
expect_vocab cjk "$SPECIAL 中 字 文"

# --- --limit-alphabet, --special ------------------------------------------
# character counts d 4, c 3, b 2, a 1; (##d,##d) is the only pair seen
# twice, merged left to right: d ##dd ##d.  The kept characters are in
# code-point order, not by count.
printf 'dddd ccc bb a\n' > "$tmp/abcd.txt"
learn lim2 --limit-alphabet 2 "$tmp/abcd.txt"
expect_vocab lim2 "$SPECIAL c d ##c ##d ##dd"
learn lim3 --limit-alphabet 3 "$tmp/abcd.txt"
expect_vocab lim3 "$SPECIAL b c d ##b ##c ##d ##dd"
learn lim0 --limit-alphabet 0 "$tmp/abcd.txt"
expect_vocab lim0 "$SPECIAL a b c d ##b ##c ##d ##dd"
# equal counts: the smaller code point stays
printf 'y x\n' > "$tmp/xy.txt"
learn limtie --limit-alphabet 1 "$tmp/xy.txt"
expect_vocab limtie "$SPECIAL x"
# --special: in the order given, empty items and repeats skipped, a special
# token that is also a character keeps its id
learn sp --special '<s>,<pad>,,<s>,a,</s>' "$tmp/abcd.txt"
expect_vocab sp "<s> <pad> a </s> b c d ##b ##c ##d ##dd"
learn nosp --special '' "$tmp/abcd.txt"
expect_vocab nosp "a b c d ##b ##c ##d ##dd"

# --- the files bert-vocab wrote before the trainer moved into the library --
for x in cased400:--vocab-size:400 uncased300:--vocab-size:300:--lowercase:--limit-alphabet:60; do
    name=${x%%:*}
    # shellcheck disable=SC2046
    learn "$name" $(echo "${x#*:}" | tr ':' ' ') "$top_srcdir/tests/data/vocab_corpus.txt"
    for f in vocab.txt:txt tokenizer_config.json:json; do
        cmp -s "$tmp/$name/${f%%:*}" "$top_srcdir/tests/data/vocab_corpus.$name.${f#*:}" ||
            die "$name: ${f%%:*} differs from tests/data/vocab_corpus.$name.${f#*:}"
    done
done

# --- first N lines = the vocabulary learned with --vocab-size N -------------
# (files of the distribution tarball: the test also runs from one)
docs="$top_srcdir/README.md $top_srcdir/docs/bert-classify.md $top_srcdir/docs/bert-sentiment.md $top_srcdir/docs/bert-tag.md"
# shellcheck disable=SC2086
learn full --vocab-size 700 $docs
# --vocab-size 1 gives the initial vocabulary: specials, alphabet, ## forms
# shellcheck disable=SC2086
learn init --vocab-size 1 $docs
m=$(wc -l < "$tmp/init/vocab.txt")
[ "$(wc -l < "$tmp/full/vocab.txt")" = 700 ] || die "--vocab-size 700: $(wc -l < "$tmp/full/vocab.txt") tokens"
head -n "$m" "$tmp/full/vocab.txt" | cmp -s - "$tmp/init/vocab.txt" ||
    die "the initial vocabulary is not a prefix of the full one"
for n in $((m + 1)) $((m + 37)) 650; do
    # shellcheck disable=SC2086
    learn "n$n" --vocab-size "$n" $docs
    head -n "$n" "$tmp/full/vocab.txt" | cmp -s - "$tmp/n$n/vocab.txt" ||
        die "first $n lines differ from --vocab-size $n"
done
sort "$tmp/full/vocab.txt" | uniq -d | grep -q . && die "repeated tokens in vocab.txt"

# --- awkward input ---------------------------------------------------------
# NUL bytes and control characters are dropped (clean text): "hu\0g" = hug
printf 'hu\000g h\001ug\nhug\n' > "$tmp/nul.txt"
printf 'hug hug\nhug\n' > "$tmp/nul.want"
learn nul "$tmp/nul.txt"
learn nulwant "$tmp/nul.want"
cmp -s "$tmp/nul/vocab.txt" "$tmp/nulwant/vocab.txt" || die "NUL bytes: $(tr '\n' ' ' < "$tmp/nul/vocab.txt")"
# empty files add nothing; no words at all: the special tokens only
: > "$tmp/empty.txt"
learn empty "$tmp/empty.txt" "$tmp/empty.txt"
expect_vocab empty "$SPECIAL"
learn hugempty "$tmp/empty.txt" "$tmp/hug.txt" "$tmp/empty.txt"
cmp -s "$tmp/hugempty/vocab.txt" "$tmp/hug/vocab.txt" || die "empty files changed the vocabulary"
# a 1 MB word without a final newline; a long line whose decomposition has
# more code points than bytes (U+0390 -> 3 code points) under --lowercase
head -c 1000000 /dev/zero | tr '\0' a > "$tmp/long.txt"
learn long --vocab-size 10 "$tmp/long.txt"
expect_vocab long "$SPECIAL a ##a ##aa ##aaaa ##aaaaaaaa"
i=0; : > "$tmp/iota.txt"
while [ $i -lt 200 ]; do printf '\316\220\316\220\316\220\316\220\316\220' >> "$tmp/iota.txt"; i=$((i + 1)); done
learn iota --lowercase --vocab-size 8 "$tmp/iota.txt"
expect_vocab iota "$SPECIAL ι ##ι ##ιι"
# character classes are the tokenizer's (Unicode 8.0, as HF): U+2028 LINE
# SEPARATOR is whitespace (Rust's White_Space), so it splits "ab ab"
printf 'ab\342\200\250ab\n' > "$tmp/ls.txt"
learn ls --vocab-size 20 "$tmp/ls.txt"
expect_vocab ls "$SPECIAL a b ##b ab"
# invalid UTF-8: the line is skipped and named, the rest is learned, exit 2
printf 'hug hug hug, pug pug\nbad \377 line\npun bun hugs\n' > "$tmp/bad.txt"
expect_fail 2 'bad.txt:2: not valid UTF-8' invalid --out "$tmp/bad" "$tmp/bad.txt"
expect_vocab bad "$HUG"
# a binary file (this program; with a shared libbert, $VOCAB is libtool's
# wrapper script and the program is in .libs): many lines skipped, a count
# at the end
bin=$VOCAB
[ -f "$top_builddir/apps/.libs/bert-vocab" ] && bin=$top_builddir/apps/.libs/bert-vocab
expect_fail 2 'lines not valid UTF-8 skipped in all' binary --out "$tmp/bin" "$bin"
[ -s "$tmp/bin/vocab.txt" ] || die "binary input: no vocab.txt"

# --- errors -------------------------------------------------------------------
expect_fail 2 'missing\.txt: No such file' missing --out "$tmp/x" "$tmp/missing.txt"
[ -e "$tmp/x" ] && die "missing input: the output directory was created"
expect_fail 2 'Is a directory' dir-input --out "$tmp/x" "$tmp"
: > "$tmp/afile"
expect_fail 2 'afile/sub: Not a directory' unwritable --out "$tmp/afile/sub" "$tmp/hug.txt"
expect_fail 2 'nodir/sub: No such file' no-parent --out "$tmp/nodir/sub" "$tmp/hug.txt"
expect_fail 1 'no input FILE' no-files --out "$tmp/x"
expect_fail 1 'out DIR is required' no-out "$tmp/hug.txt"
expect_fail 1 'vocab-size: bad number .abc.' bad-number --out "$tmp/x" --vocab-size abc "$tmp/hug.txt"
expect_fail 1 'vocab-size: bad number .0.' zero-size --out "$tmp/x" --vocab-size 0 "$tmp/hug.txt"
expect_fail 1 'min-frequency: bad number .-1.' negative --out "$tmp/x" --min-frequency -1 "$tmp/hug.txt"
expect_fail 1 'limit-alphabet: bad number .12x.' trailing --out "$tmp/x" --limit-alphabet 12x "$tmp/hug.txt"
expect_fail 1 'max-lines: bad number ..' empty-number --out "$tmp/x" --max-lines '' "$tmp/hug.txt"
expect_fail 1 'bad number .99999999999999999999999.' overflow --out "$tmp/x" --model-max-length 99999999999999999999999 "$tmp/hug.txt"
expect_fail 1 '--bogus: unknown option' unknown --bogus --out "$tmp/x" "$tmp/hug.txt"
expect_fail 1 '--out: missing value' missing-value "$tmp/hug.txt" --out
expect_fail 1 'special: tokens must be UTF-8' special-newline --out "$tmp/x" --special "$(printf 'a\nb')" "$tmp/hug.txt"
"$VOCAB" --help > "$tmp/help" 2> "$tmp/err" || die "--help exited $?"
grep -q 'not valid UTF-8' "$tmp/help" || die "--help should say what happens to invalid UTF-8"
check_err help
"$VOCAB" --version | grep -q libbert || die "--version"
# without -q: the progress lines, nothing else
"$VOCAB" --out "$tmp/progress" "$tmp/hug.txt" 2> "$tmp/err" || die "progress run exited $?"
grep -q 'distinct words' "$tmp/err" || die "no progress without -q: $(cat "$tmp/err")"
check_err progress

# --- Wikipedia text: the exact vocabularies (guards refactorings) ------------
WIKI=$SHARED_DIR/data/wiki_en/train-00.txt
if [ -f "$WIKI" ]; then
    learn wiki --vocab-size 3000 "$WIKI"
    learn wikilc --vocab-size 3000 --lowercase "$WIKI"
    for x in wiki:256b4a71d18957e1863c22a34a5b1b521d1da4651427a3e28dab10b4fb985b43 \
             wikilc:29a4ccdcf964b9341b7eecc9afc42743dcebc43b585006d6bdd257acc9d9fe23; do
        sum=$(sha256sum < "$tmp/${x%%:*}/vocab.txt" | cut -d' ' -f1)
        [ "$sum" = "${x#*:}" ] || die "${x%%:*}: vocab.txt changed (sha256 $sum)"
    done
else
    echo "note: $WIKI not found, exact Wikipedia vocabularies not checked"
fi

exit $fail
