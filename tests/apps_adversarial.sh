#!/bin/sh
# The tools against the adversarial cases of issue 15 (each block names its
# item): hostile model directories, inputs and options.  Uses the bundled
# data/sentiment model, through copies whose model.safetensors is a
# symbolic link.
. "$(dirname "$0")/lib.sh"
B=$top_builddir/apps
D=$top_srcdir/data/sentiment
needs -f "$D/model.safetensors" "$D"
mktmp

# check_err NAME FILE: a sanitizer report in FILE fails the test
check_err() {
    if grep -q -e 'Sanitizer' -e 'runtime error' "$2"; then
        die "$1: sanitizer report: $(head -5 "$2")"
    fi
}
# model NAME: $tmp/NAME, a copy of data/sentiment (weights linked)
model() {
    mkdir -p "$tmp/$1"
    for mf in config.json vocab.txt special_tokens_map.json tokenizer_config.json; do
        cp "$D/$mf" "$tmp/$1/"
    done
    ln -s "$(cd "$D" && pwd)/model.safetensors" "$tmp/$1/model.safetensors"
}
# expect NAME STATUS PATTERN CMD...: CMD exits STATUS, stderr matches
# PATTERN (grep -E; empty: anything), no sanitizer report
expect() {
    name=$1 want=$2 pat=$3; shift 3
    "$@" > "$tmp/out" 2> "$tmp/err" < "${stdin:-/dev/null}"; st=$?
    [ "$st" = "$want" ] || die "$name: exit status $st, want $want: $(head -3 "$tmp/err")"
    [ -z "$pat" ] || grep -Eq -- "$pat" "$tmp/err" || die "$name: stderr lacks /$pat/: $(head -3 "$tmp/err")"
    check_err "$name" "$tmp/err"
}
# tiny NAME [TYPE_VOCAB]: $tmp/NAME, a tiny model (hidden 8, one layer)
# trained for one epoch by bert-train on the vocabulary of data/sentiment
tiny() {
    cat > "$tmp/tiny.json" <<EOC
{"architectures": ["BertForSequenceClassification"], "model_type": "bert",
 "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
 "intermediate_size": 16, "max_position_embeddings": 64,
 "vocab_size": $(wc -l < "$D/vocab.txt"), "type_vocab_size": ${2:-2},
 "hidden_act": "gelu"}
EOC
    { echo text,label; echo "good film,positive"; echo "bad film,negative"; } > "$tmp/tiny.csv"
    "$B/bert-train" -q --config "$tmp/tiny.json" --vocab "$D" --task sequence \
        --train "$tmp/tiny.csv" --out "$tmp/$1" --epochs 1 --max-length 64 ||
        die "tiny model $1: bert-train exited $?"
}

# --- 1. model_max_length 1 / --max-length 1: no overflow, a clear error --
model ml1
sed 's/"model_max_length": *[0-9]*/"model_max_length": 1/' "$D/tokenizer_config.json" > "$tmp/ml1/tokenizer_config.json"
expect "item 1 sentiment" 2 'no room for text' "$B/bert-sentiment" --model "$tmp/ml1" 'a good film'
printf 'a good film\nA\tpair\n' > "$tmp/two"
stdin=$tmp/two expect "item 1 infer" 2 '' "$B/bert-infer" --model "$tmp/ml1"
[ "$(grep -c '"error":".*max_length 1' "$tmp/out")" = 2 ] || die "item 1 infer: $(cat "$tmp/out")"
for n in 1 2; do
    stdin=$tmp/two expect "item 1 tokenize $n" 2 "max_length $n is smaller" "$B/bert-tokenize" --model "$D" --max-length $n
    awk 'NF > '"$n"' { bad = 1 } END { exit bad }' "$tmp/out" || die "item 1: --max-length $n gave more tokens: $(cat "$tmp/out")"
done
stdin=$tmp/two expect "item 1 tokenize 3" 0 '' "$B/bert-tokenize" --model "$D" --max-length 3
[ "$(awk '{ print NF }' "$tmp/out" | tr '\n' ' ')" = "3 3 " ] || die "item 1: --max-length 3: $(cat "$tmp/out")"

# --- 2. the other tools' output files: whole or not at all ----------------
# bert-classify --out and bert-vocab --out, cut by a file size limit of 2
# blocks (1 or 2 kB), keep the previous file.
{ echo text; i=0; while [ $i -lt 200 ]; do echo "a rather good film number $i"; i=$((i + 1)); done; } > "$tmp/many.csv"
echo 'previous output' > "$tmp/prev.csv"
cp "$tmp/prev.csv" "$tmp/cls.csv"
( trap '' XFSZ; ulimit -f 2; exec "$B/bert-classify" --model "$D" --column text -o "$tmp/cls.csv" "$tmp/many.csv" ) \
    > /dev/null 2> "$tmp/err"; st=$?
[ $st = 2 ] || die "item 2 classify: exit $st: $(cat "$tmp/err")"
cmp -s "$tmp/cls.csv" "$tmp/prev.csv" || die "item 2 classify: a failed --out write damaged the previous file"
[ -z "$(ls -A "$tmp" | grep '^\.')" ] || die "item 2 classify: temporary file left: $(ls -A "$tmp")"
mkdir "$tmp/voc" && cp "$tmp/prev.csv" "$tmp/voc/vocab.txt"
( trap '' XFSZ; ulimit -f 2; exec "$B/bert-vocab" -q --vocab-size 2000 --min-frequency 1 --out "$tmp/voc" "$D/vocab.txt" ) \
    > /dev/null 2> "$tmp/err"; st=$?
[ $st = 2 ] || die "item 2 vocab: exit $st: $(cat "$tmp/err")"
cmp -s "$tmp/voc/vocab.txt" "$tmp/prev.csv" || die "item 2 vocab: a failed write damaged the previous vocab.txt"
[ "$(ls -A "$tmp/voc")" = vocab.txt ] || die "item 2 vocab: temporary file left: $(ls -A "$tmp/voc")"

# --- exit codes: an empty CSV is an error ---------------------------------
: > "$tmp/empty.csv"
expect "empty csv" 2 'empty input' "$B/bert-classify" --model "$D" --column text "$tmp/empty.csv"

# --- 4. a failed model run costs its own line only ------------------------
# type_vocab_size 1: a pair (type id 1) fails in the model, in the middle of
# a batch
tiny tv1 1
i=1; while [ $i -le 40 ]; do
    if [ $i = 21 ]; then printf 'a\tpair\n'; else echo "text $i"; fi; i=$((i + 1))
done > "$tmp/40"
stdin=$tmp/40 expect "item 4" 2 '' "$B/bert-infer" --model "$tmp/tv1"
[ "$(wc -l < "$tmp/out")" = 40 ] || die "item 4: $(wc -l < "$tmp/out") output lines for 40"
[ "$(grep -c '"label"' "$tmp/out")" = 39 ] || die "item 4: 39 lines should be scored"
sed -n 21p "$tmp/out" | grep -q '^{"line":21,"error":".*type' || die "item 4: line 21: $(sed -n 21p "$tmp/out")"
# ... and equal to the same lines run one at a time
grep -v "$(printf '\t')" "$tmp/40" > "$tmp/39"
"$B/bert-infer" --model "$tmp/tv1" --batch 1 < "$tmp/39" > "$tmp/want" || die "item 4: --batch 1"
grep -v '"error"' "$tmp/out" | cmp -s - "$tmp/want" || die "item 4: the rescued lines differ from single runs"
# a write error is reported, not only the exit status
echo hello > "$tmp/one"
if [ -w /dev/full ]; then
    "$B/bert-infer" --model "$tmp/tv1" < "$tmp/one" > /dev/full 2> "$tmp/err"; st=$?
    [ $st = 2 ] && grep -q 'write error' "$tmp/err" || die "/dev/full: exit $st: $(cat "$tmp/err")"
fi

# --- 5. NaN weights: an error per text, valid JSON, exit 2 ----------------
# nan_tail FILE N: the last N floats of FILE become NaN (the tensors are
# sorted by name: the classifier's weight matrix comes last)
nan_tail() {
    sz=$(wc -c < "$1") k=0
    while [ $k -lt "$2" ]; do printf '\000\000\300\177'; k=$((k + 1)); done |
        dd of="$1" bs=1 seek=$((sz - 4 * $2)) conv=notrunc 2> /dev/null
}
# json_ok NAME: every line of $tmp/out is JSON without NaN/Infinity
json_ok() {
    if grep -qE '[:,[](-?nan|-?inf|NaN|-?Infinity)' "$tmp/out"; then die "$1: non-finite value printed: $(head -2 "$tmp/out")"; fi
    if command -v python3 > /dev/null; then
        python3 -c 'import json,sys
for l in open(sys.argv[1]): json.loads(l, parse_constant=lambda c: sys.exit("bad constant " + c))' "$tmp/out" ||
            die "$1: invalid JSON: $(head -2 "$tmp/out")"
    fi
}
tiny nanseq
nan_tail "$tmp/nanseq/model.safetensors" 16
expect "item 5 sentiment" 2 'non-finite' "$B/bert-sentiment" --model "$tmp/nanseq" --json 'good' 'bad'
json_ok "item 5 sentiment"
[ "$(grep -c '"error":".*non-finite' "$tmp/out")" = 2 ] || die "item 5 sentiment: $(cat "$tmp/out")"
printf 'text\ngood\nbad\n' > "$tmp/gb.csv"
expect "item 5 classify" 2 'non-finite' "$B/bert-classify" --model "$tmp/nanseq" --column text --format jsonl "$tmp/gb.csv"
json_ok "item 5 classify"
grep -q '"label":"' "$tmp/out" && die "item 5 classify: a label for a NaN score: $(cat "$tmp/out")"
printf 'good\n' > "$tmp/g"
stdin=$tmp/g expect "item 5 infer" 2 '' "$B/bert-infer" --model "$tmp/nanseq"
json_ok "item 5 infer"
grep -q '"error":".*non-finite' "$tmp/out" || die "item 5 infer: $(cat "$tmp/out")"
# a token model for bert-tag
printf 'John\tB-PER\nlives\tO\n\nMary\tB-PER\nruns\tO\n' > "$tmp/t.conll"
sed 's/BertForSequenceClassification/BertForTokenClassification/' "$tmp/tiny.json" > "$tmp/tok.json"
"$B/bert-train" -q --config "$tmp/tok.json" --vocab "$D" --task token --train "$tmp/t.conll" \
    --out "$tmp/nantok" --epochs 1 --max-length 32 || die "tiny token model: exit $?"
nan_tail "$tmp/nantok/model.safetensors" 8
expect "item 5 tag" 2 'non-finite' "$B/bert-tag" --model "$tmp/nantok" 'John lives here'
json_ok "item 5 tag"

# --- 7. a FIFO in the model directory is refused, not waited on -----------
if command -v mkfifo > /dev/null && command -v timeout > /dev/null; then
    for f in config.json vocab.txt tokenizer_config.json; do
        rm -rf "$tmp/fifo"
        model fifo
        rm "$tmp/fifo/$f"
        mkfifo "$tmp/fifo/$f"
        expect "item 7 $f" 2 "$f: not a regular file" timeout 20 "$B/bert-sentiment" --model "$tmp/fifo" 'a text'
    done
    rm -rf "$tmp/fifo"
    model fifo
    rm "$tmp/fifo/vocab.txt"
    mkfifo "$tmp/fifo/vocab.txt"
    stdin=$tmp/two expect "item 7 tokenize" 2 'not a regular file' timeout 20 "$B/bert-tokenize" --model "$tmp/fifo"
fi

# --- 10. transformers' "no limit" model_max_length (int(1e30)) ------------
model nolimit
sed 's/"model_max_length": *[0-9]*/"model_max_length": 1000000000000000019884624838656/' \
    "$D/tokenizer_config.json" > "$tmp/nolimit/tokenizer_config.json"
grep -q 1000000000000000019884624838656 "$tmp/nolimit/tokenizer_config.json" || die "item 10: sed"
expect "item 10 sentiment" 0 '' "$B/bert-sentiment" --model "$tmp/nolimit" 'a good film'
stdin=$tmp/two expect "item 10 tokenize" 0 '' "$B/bert-tokenize" --model "$tmp/nolimit"
# no limit from the tokenizer: a long text is cut at the model's 128
# positions by the pipeline, not refused
long=$(i=0; while [ $i -lt 300 ]; do printf 'word '; i=$((i + 1)); done)
expect "item 10 long" 0 '' "$B/bert-sentiment" --model "$tmp/nolimit" "$long"

# --- messages: a symlink loop is not "not a directory" ------------------
ln -s loop "$tmp/loop"
expect "symlink loop" 2 'symbolic links' "$B/bert-sentiment" --model "$tmp/loop" 'a text'
# an unreadable tokenizer file: the reason, not a parse position
model dirjson
rm "$tmp/dirjson/tokenizer_config.json" && mkdir "$tmp/dirjson/tokenizer_config.json"
expect "directory as tokenizer_config.json" 2 'tokenizer_config.json: not a regular file' \
    "$B/bert-sentiment" --model "$tmp/dirjson" 'a text'
grep -q -- '-1:-1' "$tmp/err" && die "parse position for a read error: $(cat "$tmp/err")"

# --- 13. more threads than cores: lowered, with a note; never a near-hang -
i=0; while [ $i -lt 20 ]; do echo "a fairly good film number $i"; i=$((i + 1)); done > "$tmp/20"
stdin=$tmp/20 expect "item 13 sentiment" 0 'more than the [0-9]* CPU' timeout 60 "$B/bert-sentiment" --model "$D" --threads 1024
[ "$(wc -l < "$tmp/out")" = 20 ] || die "item 13: output lines"
stdin=$tmp/20 expect "item 13 infer" 0 'more than the [0-9]* CPU' timeout 60 "$B/bert-infer" --model "$D" --threads 1024
# --threads out of range: a usage error (1) in every tool, never a wrap
for v in 0 100000 2147483648 4294967297 -1 x; do
    for tool in bert-sentiment bert-tag bert-classify; do
        expect "--threads $v $tool" 1 'from 1 to 1024' "$B/$tool" --threads "$v" x
    done
    stdin=$tmp/one expect "--threads $v bert-infer" 1 'from 1 to 1024' "$B/bert-infer" --model "$D" --threads "$v"
done

# --- 14. bert-bench on a model with a small vocabulary (12000 ids) --------
expect "item 14 bench" 0 '' timeout 120 "$B/bert-bench" --model "$D" --reps 2 --min-time 0.01 --no-peak --no-blis --json
grep -q '"median_ms"' "$tmp/out" || die "item 14: $(cat "$tmp/out")"
# --version and --help of bert-bench
expect "bench --version" 0 '' "$B/bert-bench" --version
grep -q '^bert-bench (libbert) ' "$tmp/out" || die "bench --version: $(cat "$tmp/out")"
expect "bench --help" 0 '' "$B/bert-bench" --help
grep -q '^Examples:' "$tmp/out" || die "bench --help has no examples"

# --- 15. memory of a long line: O(max_length) tokens, not O(text) --------
# A 20 MB line truncated to 16 tokens runs in 150 MB of address space (it
# needed 13x the text).  Not under sanitizers (they reserve terabytes).
if [ -z "${ASAN_OPTIONS-}${UBSAN_OPTIONS-}" ] && ! grep -q __asan_init "$B/.libs/bert-tokenize" "$B/bert-tokenize" 2> /dev/null; then
    yes 'good film' | head -c 20000000 | tr '\n' ' ' > "$tmp/big"
    echo >> "$tmp/big"
    ( ulimit -v 150000; exec "$B/bert-tokenize" --model "$D" --max-length 16 ) < "$tmp/big" > "$tmp/out" 2> "$tmp/err" ||
        die "item 15: a 20 MB line in 150 MB: $(cat "$tmp/err")"
    [ "$(awk '{ print NF }' "$tmp/out")" = 16 ] || die "item 15: $(cut -c1-80 "$tmp/out")"
    rm -f "$tmp/big"
fi

# --batch above 4096 is a usage error in bert-classify, as in bert-infer
expect "classify --batch 1048576" 1 'from 1 to 4096' "$B/bert-classify" --model "$D" --batch 1048576 "$tmp/gb.csv"

# --- vocab.txt with CRLF line ends reads as transformers reads it; no
# [UNK]: the message names the file
model crlf
sed 's/$/\r/' "$D/vocab.txt" > "$tmp/crlf/vocab.txt"
expect "crlf vocab" 0 '' "$B/bert-sentiment" --model "$tmp/crlf" 'a good film'
"$B/bert-sentiment" --model "$D" 'a good film' | cmp -s - "$tmp/out" || die "CRLF vocab.txt: other results"
grep -v '^\[UNK\]$' "$D/vocab.txt" > "$tmp/crlf/vocab.txt"
expect "no [UNK]" 2 'crlf/vocab.txt: the vocabulary has no unknown token' "$B/bert-sentiment" --model "$tmp/crlf" 'a good film'

# --- every tool: --help with examples, --version, both exit 0 -------------
for tool in bert-classify bert-sentiment bert-tag bert-infer bert-tokenize bert-train bert-vocab bert-bench; do
    "$B/$tool" --help > "$tmp/out" 2>&1 || die "$tool --help: exit $?"
    grep -q '^Examples:' "$tmp/out" || die "$tool --help has no examples"
    "$B/$tool" --version > "$tmp/out" 2>&1 || die "$tool --version: exit $?"
    grep -q "^$tool (libbert) " "$tmp/out" || die "$tool --version: $(cat "$tmp/out")"
done

# --- progress: never into the data on a shared terminal, never \r into a log
if command -v script > /dev/null && script -qc true /dev/null > /dev/null 2>&1; then
    # stdout and stderr the same terminal: no progress line
    script -qc "'$B/bert-classify' --model '$D' '$tmp/many.csv'" /dev/null > "$tmp/tty" 2>&1
    grep -q "$(printf '\033')\[K" "$tmp/tty" && die "progress drawn into the data on a shared terminal"
    # stderr alone on the terminal: progress
    script -qc "'$B/bert-classify' --model '$D' '$tmp/many.csv' > /dev/null" /dev/null > "$tmp/tty" 2>&1
    grep -q "$(printf '\033')\[K" "$tmp/tty" || die "no progress on a terminal stderr"
fi
"$B/bert-vocab" --out "$tmp/pv" --vocab-size 3000 --min-frequency 1 "$D/vocab.txt" 2> "$tmp/err" > /dev/null ||
    die "bert-vocab: exit $?"
[ "$(tr -cd '\r' < "$tmp/err" | wc -c)" = 0 ] || die "bert-vocab wrote \\r progress into a file"
grep -q 'bert-vocab: [0-9]* tokens$' "$tmp/err" || die "bert-vocab: no final count: $(cat "$tmp/err")"

# --- JSON Lines input: a text with a TAB (or newline) is one text ---------
printf '{"text":"a good\\tfilm"}\n{"text":"a good","text_pair":"film"}\n' > "$tmp/in.jsonl"
printf 'a good film\na good\tfilm\n' > "$tmp/in.txt"
for tool in bert-tokenize bert-infer; do
    stdin=$tmp/in.jsonl expect "jsonl $tool" 0 '' "$B/$tool" --model "$D" --jsonl
    mv "$tmp/out" "$tmp/jl"
    stdin=$tmp/in.txt expect "lines $tool" 0 '' "$B/$tool" --model "$D"
    cmp -s "$tmp/jl" "$tmp/out" || die "$tool --jsonl differs: $(cat "$tmp/jl")"
done
stdin=$tmp/in.jsonl expect "jsonl sentiment" 0 '' "$B/bert-sentiment" --model "$D" --jsonl --json
sed -n 1p "$tmp/out" | grep -q '^{"text":"a good\\tfilm","label"' || die "sentiment --jsonl: $(cat "$tmp/out")"
sed -n 2p "$tmp/out" | grep -q '"text_pair":"film"' || die "sentiment --jsonl pair: $(cat "$tmp/out")"
"$B/bert-sentiment" --model "$D" 'a good film' | cut -f1,2 > "$tmp/want"
sed -n 1p "$tmp/out" | sed 's/.*"label":"\([^"]*\)","score":\([^,]*\),.*/\1\t\2/' | cmp -s - "$tmp/want" ||
    die "sentiment --jsonl: the TAB text scored differently"
printf '{"text":"Angela Merkel\\tvisited Paris."}\nnot json\n' > "$tmp/tag.jsonl"
stdin=$tmp/tag.jsonl expect "jsonl tag" 2 'invalid JSON' "$B/bert-tag" --jsonl
[ "$(wc -l < "$tmp/out")" = 2 ] && sed -n 2p "$tmp/out" | grep -q '^{"error":' || die "tag --jsonl: $(cat "$tmp/out")"
"$B/bert-tag" 'Angela Merkel visited Paris.' > "$tmp/want"
sed -n 1p "$tmp/out" | cmp -s - "$tmp/want" || die "tag --jsonl: $(sed -n 1p "$tmp/out")"

exit $fail
