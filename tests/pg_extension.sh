#!/bin/sh
# The bert PostgreSQL extension against a real server (initdb + pg_ctl on a
# Unix socket in a temporary directory; as root the server runs as the
# postgres user).  Run by scripts/test.sh; needs root to install the
# extension into PostgreSQL's directories (else it skips).
#  1. bert_classify (one text and pairs) equals bert-classify's label and
#     score (1e-6) on every row of a table of awkward texts (empty, NULL,
#     very long, every script, quotes, control characters, pairs), for the
#     bundled sentiment model (by name) and the fixture models;
#     bert_classify_batch equals the per-row results; a parallel plan (2
#     workers, costs forced to zero) equals the serial one; bert_scores
#     agrees; bert_tokenize equals bert-tokenize; bert.threads = 2 gives
#     the same results; a LATIN1 database gives the UTF-8 database's.
#  2. bert_tag equals bert-tag's JSON on the token fixture for every
#     aggregation, and on the bundled ner model.
#  3. Errors: missing model, bad name, broken config.json, truncated
#     safetensors, wrong kind of model, over-long input, bad aggregation, a
#     model directory changed while loaded (rewritten, truncated, renamed
#     over, the directory swapped), a truncated model read through its mapping (SIGBUS guard),
#     statement_timeout and pg_cancel_backend during a long batch: each an
#     SQL error, the session still usable, the server still up, no backend
#     crashed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_lib.sh"
CLS=$top_builddir/apps/bert-classify
TAG=$top_builddir/apps/bert-tag
TOK=$top_builddir/apps/bert-tokenize
FIX=$SHARED_DIR/fixtures
SST=$SHARED_DIR/data/sst2/train.csv
pg_setup
pg_start main 5440
cp -R "$top_srcdir/data/sentiment" "$tmp/sentiment-copy"
chown -R "$pg_user" "$tmp/sentiment-copy"
pg_sql main -c "CREATE EXTENSION bert" || die "CREATE EXTENSION"

# q SQL: one value, unaligned
q() { pg_sql main -At -c "$1"; }
# expect_zero WHAT SQL: the query must return 0
expect_zero() {
    v=$(q "$2") || { die "$1: query failed"; return; }
    [ "$v" = 0 ] || die "$1: $v mismatching rows"
}

# ---- 1. the awkward table ---------------------------------------------------

# id,text,pair CSV: every field quoted except a NULL (empty, unquoted); a
# TAB in a line of texts.txt makes a pair
csv_of_lines() { # FILE FIRST_ID
    awk -v id="$2" 'BEGIN { RS = "\n" } {
        gsub(/"/, "\"\"")
        t = index($0, "\t")
        if (t) printf "%d,\"%s\",\"%s\"\n", id++, substr($0, 1, t - 1), substr($0, t + 1)
        else printf "%d,\"%s\",\n", id++, $0 }' "$1"
}
{
    echo "id,text,pair"
    echo '1,"",'
    echo '2,,'
    echo '3,"a gorgeous, witty, seductive movie.",'
    echo '4,"The ""quoted"" one; with, commas",'
    printf '5,"line one\nline two\r\nline three",\n'
    printf '6,"tabs\tand\tcontrol \001\002 chars",\n'
    echo '7,"   leading and trailing spaces   ",'
    echo '8,"Is this good?","Yes, it is very good."'
    echo '9,"premise only",""'
    echo '10,"",""'
    long=$(awk 'BEGIN { for (i = 0; i < 3000; i++) printf "word%d is a terrible and wonderful thing ", i % 97 }')
    echo "11,\"$long\","
    echo "12,\"$long\",\"$long\""
    echo '13,"😀 🎉 emoji only 👍🏽 ",'
    echo '14,"Ελληνικά Русский 我爱北京 日本語のテキスト 한국어 العربية עברית हिन्दी ไทย",'
    if [ -f "$FIX/bert-seq-uncased/texts.txt" ]; then
        # PostgreSQL text cannot hold NUL bytes: dropped for both sides
        tr -d '\000' < "$FIX/bert-seq-uncased/texts.txt" > "$tmp/t1.txt"
        tr -d '\000' < "$FIX/bert-seq-multilingual/texts.txt" > "$tmp/t2.txt"
        csv_of_lines "$tmp/t1.txt" 100
        csv_of_lines "$tmp/t2.txt" 200
    fi
} > "$tmp/awkward.csv"
# 2000 short texts for the parallel plan: SST-2 rows, or generated ones
if [ -f "$SST" ]; then
    { echo "id,text"; tail -n +2 "$SST" | head -2000 | awk -F'\n' '{
        t = $0; sub(/,[a-z]+$/, "", t); print NR "," t }'; } > "$tmp/sst.csv"
else
    awk 'BEGIN { print "id,text"; n = split("the film story acting was is " \
        "great dull moving awful funny not very quite a and but", w, " ")
        s = 7; for (i = 1; i <= 2000; i++) { t = ""; len = 3 + i % 11
            for (j = 0; j < len; j++) { s = (s * 69069 + 1) % 4294967296
                t = t (j ? " " : "") w[1 + int(s / 65536) % n] }
            print i "," t } }' > "$tmp/sst.csv"
fi

pg_sql main <<SQL || die "loading the tables"
CREATE TABLE awkward (id int PRIMARY KEY, text text, pair text);
\copy awkward FROM '$tmp/awkward.csv' CSV HEADER
CREATE TABLE cli (model text, id int, text text, pair text, label text,
                  score float8, error text);
SQL
[ "$(q "SELECT count(*) FROM awkward WHERE text IS NULL")" = 1 ] ||
    die "the awkward table has no NULL text"

models="sentiment"
for f in bert-seq-uncased distilbert-seq-uncased bert-seq-multilingual; do
    [ -d "$FIX/$f" ] && cp -R "$FIX/$f" "$tmp/models/$f" && models="$models $f"
done
chown -R "$pg_user" "$tmp/models"
for m in $models; do
    # bert_classify truncates long texts, as bert-classify --truncate does
    "$CLS" --model "$tmp/models/$m" --column text --pair-column pair --truncate \
        "$tmp/awkward.csv" > "$tmp/cli-$m.csv" 2>"$tmp/cli-$m.err" ||
        { cat "$tmp/cli-$m.err"; die "bert-classify $m"; }
    pg_sql main <<SQL || die "loading bert-classify's output ($m)"
CREATE TEMP TABLE c (id int, text text, pair text, label text, score float8, error text);
\copy c FROM '$tmp/cli-$m.csv' CSV HEADER
INSERT INTO cli SELECT '$m', * FROM c;
SQL
done
# the bundled model by name, the others by path
mref() { case $1 in sentiment) echo sentiment;; *) echo "$tmp/models/$1";; esac; }

for m in $models; do
    M=$(mref "$m")
    [ "$(q "SELECT count(*) FROM cli WHERE model = '$m' AND label <> ''")" = \
      "$(q "SELECT count(*) FROM awkward")" ] ||
        die "$m: bert-classify did not label every row"
    pg_sql main <<SQL || die "$m: bert_classify over the table"
CREATE TABLE "row_$m" AS
SELECT id, CASE WHEN pair IS NULL THEN bert_classify('$M', text)
                ELSE bert_classify('$M', text, pair) END AS r
FROM awkward;
SQL
    expect_zero "$m: bert_classify vs bert-classify" "
        SELECT count(*) FROM awkward a JOIN cli c ON c.model = '$m' AND c.id = a.id
        JOIN \"row_$m\" r ON r.id = a.id
        WHERE a.text IS NOT NULL AND ((r.r).label IS DISTINCT FROM c.label
              OR NOT abs((r.r).score - c.score) <= 1e-6)"
    expect_zero "$m: NULL in, NULL out" "
        SELECT count(*) FROM awkward a JOIN \"row_$m\" r USING (id)
        WHERE a.text IS NULL AND r.r IS NOT NULL"
    # the batch: every text without a pair, NULLs included, in one array
    expect_zero "$m: bert_classify_batch vs bert_classify" "
        WITH a AS (SELECT array_agg(id ORDER BY id) AS ids,
                          array_agg(text ORDER BY id) AS texts
                   FROM awkward WHERE pair IS NULL),
             b AS (SELECT x.* FROM a, ROWS FROM (unnest(a.ids),
                     bert_classify_batch('$M', a.texts)) AS x(id, label, score))
        SELECT count(*) + (SELECT abs(count(*) - (SELECT count(*) FROM awkward WHERE pair IS NULL)) FROM b)
        FROM b JOIN \"row_$m\" r USING (id)
        WHERE b.label IS DISTINCT FROM (r.r).label
           OR (b.score IS NULL) <> ((r.r).score IS NULL)
           OR abs(b.score - (r.r).score) > 1e-6"
    expect_zero "$m: bert_scores vs bert_classify" "
        SELECT count(*) FROM awkward a JOIN \"row_$m\" r USING (id)
        WHERE a.pair IS NULL AND a.text IS NOT NULL AND
              abs((bert_scores('$M', a.text) ->> (r.r).label)::float8 - (r.r).score) > 1e-6"
done

# bert_scores: one key per label, summing to 1 (softmax)
v=$(q "SELECT (SELECT count(*) FROM jsonb_object_keys(s)) || ' ' ||
              round((SELECT sum(value::float8) FROM jsonb_each_text(s))::numeric, 5)
       FROM bert_scores('sentiment', 'fine') s")
[ "$v" = "2 1.00000" ] || die "bert_scores: got '$v'"

# bert_tokenize equals bert-tokenize (untruncated) on the texts without pairs
q "COPY (SELECT id, array_to_string(bert_tokenize('sentiment', text), ' ')
         FROM awkward WHERE pair IS NULL AND text IS NOT NULL
           AND text !~ E'[\n\r\t]' ORDER BY id) TO STDOUT" \
    > "$tmp/tok-sql.txt" || die "bert_tokenize"
q "COPY (SELECT text FROM awkward WHERE pair IS NULL AND text IS NOT NULL
           AND text !~ E'[\n\r\t]' ORDER BY id) TO STDOUT (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01')" \
    > "$tmp/tok-in.txt" || die "bert_tokenize input"
"$TOK" --model "$top_srcdir/data/sentiment" --format ids < "$tmp/tok-in.txt" \
    > "$tmp/tok-cli.txt" || die "bert-tokenize"
cut -f2 "$tmp/tok-sql.txt" | cmp -s - "$tmp/tok-cli.txt" ||
    die "bert_tokenize differs from bert-tokenize"

# the parallel plan gives the serial plan's results
if [ -f "$tmp/sst.csv" ]; then
    pg_sql main <<SQL || die "loading the 2000 rows"
CREATE TABLE sst (id int PRIMARY KEY, text text);
\copy sst FROM '$tmp/sst.csv' CSV HEADER
ANALYZE sst;
SQL
    "$CLS" --truncate --column text "$tmp/sst.csv" > "$tmp/cli-sst.csv" 2>/dev/null ||
        die "bert-classify sst"
    pg_sql main <<SQL || die "serial and parallel runs"
CREATE TEMP TABLE c (id int, text text, label text, score float8, error text);
\copy c FROM '$tmp/cli-sst.csv' CSV HEADER
CREATE TABLE sst_cli AS SELECT id, label, score FROM c;
SET max_parallel_workers_per_gather = 0;
CREATE TABLE sst_serial AS SELECT id, bert_classify('sentiment', text) AS r FROM sst;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
\o $tmp/parallel-plan.txt
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
CREATE TABLE sst_parallel AS SELECT id, bert_classify('sentiment', text) AS r FROM sst;
\o
SQL
    grep -q "Workers Launched: 2" "$tmp/parallel-plan.txt" ||
        { cat "$tmp/parallel-plan.txt"; die "no parallel plan with 2 workers"; }
    expect_zero "parallel vs serial plan" "
        SELECT count(*) FROM sst_serial s FULL JOIN sst_parallel p USING (id)
        WHERE s.id IS NULL OR p.id IS NULL OR (s.r).label <> (p.r).label
           OR abs((s.r).score - (p.r).score) > 1e-6"
    expect_zero "serial plan vs bert-classify (2000 rows)" "
        SELECT count(*) FROM sst_serial s FULL JOIN sst_cli c USING (id)
        WHERE s.id IS NULL OR c.id IS NULL OR (s.r).label <> c.label
           OR abs((s.r).score - c.score) > 1e-6"
    expect_zero "bert_classify_batch vs bert-classify (2000 rows)" "
        WITH a AS (SELECT array_agg(id ORDER BY id) AS ids,
                          array_agg(text ORDER BY id) AS texts FROM sst),
             b AS (SELECT x.* FROM a, ROWS FROM (unnest(a.ids),
                     bert_classify_batch('sentiment', a.texts)) AS x(id, label, score))
        SELECT count(*) FROM b FULL JOIN sst_cli c USING (id)
        WHERE b.id IS NULL OR c.id IS NULL OR b.label <> c.label
           OR abs(b.score - c.score) > 1e-6"
fi

# bert.threads = 2 gives the one-thread results
expect_zero "bert.threads = 2 vs 1" "
    SELECT count(*) FROM (SELECT id, text FROM awkward WHERE pair IS NULL AND text IS NOT NULL) a
    JOIN row_sentiment r USING (id),
    LATERAL (SELECT set_config('bert.threads', '2', true)) s,
    LATERAL bert_classify('sentiment', a.text) t
    WHERE t.label <> (r.r).label OR abs(t.score - (r.r).score) > 1e-6"
# bert.precision: int8 where this CPU runs it (the label of a clear case as
# with fp32); with the blis kernels it is refused, naming why
if "$top_builddir/apps/bert-sentiment" --precision int8 x >/dev/null 2>&1; then
    s="SELECT label FROM bert_classify('sentiment', 'a gorgeous, moving film')"
    v=$(pg_sql main -At -c "SET bert.precision = 'int8'; $s") ||
        die "bert.precision int8: query failed"
    [ "$v" = "$(q "$s")" ] || die "bert.precision int8: label '$v' differs"
fi
pg_sql main -At -c "SET bert.kernels = 'blis'; SET bert.precision = 'int8';
    SELECT label FROM bert_classify('sentiment', 'x')" 2>"$tmp/prec.err" &&
    die "bert.precision int8 with bert.kernels blis was accepted"
grep -q "fp32 only" "$tmp/prec.err" ||
    die "bert.precision int8 with blis: $(cat "$tmp/prec.err")"

# a LATIN1 database: texts are converted to UTF-8 (offsets in characters)
pg_sql main -c "CREATE DATABASE latin1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0" ||
    die "LATIN1 database"
v=$(PGCLIENTENCODING=UTF8 pg_sql main -d latin1 -At -c "CREATE EXTENSION bert;
    SELECT bert_tokenize('sentiment', 'café naïve') = bert_tokenize('sentiment', 'cafe naive'),
           (SELECT string_agg(word || ':' || start_pos || '-' || end_pos, ' ')
            FROM bert_tag('ner', 'José Müller visited Zürich.'))") || die "LATIN1 queries"
w=$(PGCLIENTENCODING=UTF8 q "SELECT true, (SELECT string_agg(word || ':' || start_pos || '-' || end_pos, ' ')
            FROM bert_tag('ner', 'José Müller visited Zürich.'))")
[ "$v" = "$w" ] || die "LATIN1 database: '$v', UTF-8 database: '$w'"
# bert_tag's default aggregation: the model's (the bundled NER records first)
d=$(q "SELECT string_agg(entity_group || ':' || word, ' ') FROM bert_tag('ner', 'Tim Cook visited Cupertino.')")
f=$(q "SELECT string_agg(entity_group || ':' || word, ' ') FROM bert_tag('ner', 'Tim Cook visited Cupertino.', 'first')")
[ -n "$d" ] && [ "$d" = "$f" ] || die "bert_tag's default aggregation: '$d', first: '$f'"

# ---- 2. bert_tag ------------------------------------------------------------

# tag_check NAME MODEL(SQL) MODELDIR(CLI) TEXTS
tag_check() {
    awk 'BEGIN { RS = "\n" } { gsub(/"/, "\"\""); printf "%d,\"%s\"\n", NR, $0 }' \
        "$4" > "$tmp/tag-in.csv"
    pg_sql main <<SQL || die "$1: loading texts"
SET client_min_messages = warning;
DROP TABLE IF EXISTS tag_in, tag_cli;
CREATE TABLE tag_in (id int, t text);
\copy tag_in FROM '$tmp/tag-in.csv' CSV
CREATE TABLE tag_cli (agg text, id serial, j jsonb);
SQL
    for agg in none simple first average max; do
        "$TAG" --model "$3" --aggregation $agg < "$4" > "$tmp/tag-$agg.jsonl" \
            2>/dev/null || die "$1: bert-tag $agg"
        pg_sql main <<SQL || die "$1: loading bert-tag's JSON ($agg)"
CREATE TEMP TABLE j (id serial, j jsonb);
\copy j(j) FROM '$tmp/tag-$agg.jsonl' WITH (FORMAT csv, DELIMITER E'\x01', QUOTE E'\x02')
INSERT INTO tag_cli SELECT '$agg', id, j FROM j;
SQL
        expect_zero "$1: bert_tag $agg vs bert-tag" "
            WITH s AS (SELECT i.id, e.* FROM tag_in i,
                         bert_tag('$2', i.t, '$agg') WITH ORDINALITY
                           AS e(grp, score, word, s, e, ord)),
                 c AS (SELECT t.id, x.ord, x.v FROM tag_cli t,
                         jsonb_array_elements(t.j) WITH ORDINALITY AS x(v, ord)
                       WHERE t.agg = '$agg')
            SELECT count(*) FROM s FULL JOIN c USING (id, ord)
            WHERE s.id IS NULL OR c.id IS NULL
               OR s.grp <> coalesce(c.v ->> 'entity_group', c.v ->> 'entity')
               OR s.word <> c.v ->> 'word'
               OR s.s <> (c.v ->> 'start')::int OR s.e <> (c.v ->> 'end')::int
               OR abs(s.score - (c.v ->> 'score')::float8) > 1e-6"
    done
    [ "$(q "SELECT count(*) FROM tag_cli t, jsonb_array_elements(t.j)")" -gt 0 ] ||
        die "$1: no entities at all (the comparison proves nothing)"
}
if [ -f "$FIX/bert-token-cased/texts.txt" ]; then
    cp -R "$FIX/bert-token-cased" "$tmp/models/bert-token-cased"
    chown -R "$pg_user" "$tmp/models/bert-token-cased"
    tr -d '\000' < "$FIX/bert-token-cased/texts.txt" > "$tmp/t3.txt"
    tag_check bert-token-cased "$tmp/models/bert-token-cased" \
        "$tmp/models/bert-token-cased" "$tmp/t3.txt"
fi
cat > "$tmp/ner.txt" <<'EOF'
Angela Merkel visited Paris on Tuesday with officials from the European Union.
Apple Inc. hired John Smith, formerly of Microsoft, in Cupertino, California.

nothing to see here
EOF
tag_check ner ner "$top_srcdir/data/ner" "$tmp/ner.txt"

# ---- 3. errors --------------------------------------------------------------

FX=$top_srcdir/data/sentiment
for d in broken-config truncated changed; do
    cp -R "$FX" "$tmp/$d"
done
printf '{"model_type": "bert", "hidden_size": ' > "$tmp/broken-config/config.json"
sz=$(wc -c < "$FX/model.safetensors")
truncate -s $((sz / 2)) "$tmp/truncated/model.safetensors"
[ -d "$FIX/distilbert-seq-uncased" ] && other=$FIX/distilbert-seq-uncased ||
    other=$top_srcdir/data/sentiment
chown -R "$pg_user" "$tmp"
# what the changed model answers after each change, from bert-classify
printf 'text\n"a gorgeous, witty, seductive movie."\n' > "$tmp/one.csv"
want_other=$("$CLS" --model "$other" --column text "$tmp/one.csv" 2>/dev/null |
    tail -1 | awk -F, '{ printf "%s,%.5f\n", $(NF-2), $(NF-1) }')
want_sent=$("$CLS" --column text "$tmp/one.csv" 2>/dev/null |
    tail -1 | awk -F, '{ printf "%s,%.5f\n", $(NF-2), $(NF-1) }')
C=$tmp/changed
T="'a gorgeous, witty, seductive movie.'"
LABEL="SELECT (r).label || ',' || round((r).score::numeric, 5) FROM (SELECT bert_classify('$C', $T) AS r) x"
pg_sql main -v ON_ERROR_STOP=0 > "$tmp/errors.out" 2>&1 <<SQL
\set VERBOSITY default
\echo == missing
SELECT bert_classify('$tmp/no-such-model', 'x');
SELECT 'alive-1';
\echo == badname
SELECT bert_classify('../etc', 'x');
SELECT 'alive-2';
\echo == badconfig
SELECT bert_classify('$tmp/broken-config', 'x');
SELECT 'alive-3';
\echo == truncated
SELECT bert_classify('$tmp/truncated', 'x');
SELECT 'alive-4';
\echo == wrongkind
SELECT bert_tag('sentiment', 'x');
SELECT 'alive-5';
\echo == toolong
SET bert.max_input_bytes = 100;
SELECT bert_classify('sentiment', repeat('x', 101));
RESET bert.max_input_bytes;
SELECT 'alive-6';
\echo == badagg
SELECT bert_tag('ner', 'x', 'mean');
SELECT 'alive-7';
\echo == changed
\pset tuples_only on
$LABEL;
\! cp '$other'/* '$C'/
\echo == changed-rewritten
$LABEL;
\! truncate -s 1000 '$C/model.safetensors'
\echo == changed-truncated
$LABEL;
SELECT 'alive-8';
\! cp '$FX/model.safetensors' '$C/x.tmp' && cp '$FX/config.json' '$FX/vocab.txt' '$FX/tokenizer_config.json' '$FX/special_tokens_map.json' '$C/' && rm -f '$C/tokenizer.json' && mv '$C/x.tmp' '$C/model.safetensors'
\echo == changed-renamed
$LABEL;
\! mv '$C' '$C.old' && cp -R '$other' '$C' && chmod -R a+rX '$C'
\echo == changed-dir-swapped
$LABEL;
\! rm -rf '$C' && mv '$C.old' '$C'
\echo == changed-dir-restored
$LABEL;
\echo == sigbus
SET bert.check_files = off;
\! truncate -s 1000 '$C/model.safetensors'
$LABEL;
SELECT 'alive-9';
RESET bert.check_files;
SQL
cat "$tmp/errors.out" > "$tmp/errors.log"
# expect SECTION PATTERN: the output of section SECTION matches PATTERN
expect() {
    awk -v s="== $1" '$0 == s { on = 1; next } /^== / { on = 0 } on' \
        "$tmp/errors.out" | grep -q -- "$2" || die "errors: $1: no '$2'"
}
expect missing 'ERROR:  bert_classify: model ".*no-such-model" not found'
expect missing 'HINT:'
expect badname 'is neither an absolute model directory nor a model name'
expect badconfig 'ERROR:  bert_classify: cannot load model'
expect truncated 'ERROR:  bert_classify: cannot load model'
expect wrongkind 'is a sequence-classification model; bert_tag needs a token-classification model'
expect toolong 'longer than bert.max_input_bytes (100)'
expect badagg 'unknown aggregation "mean"'
expect changed "$want_sent"
expect changed-rewritten "$want_other"
expect changed-truncated 'ERROR:  bert_classify: cannot load model'
expect changed-renamed "$want_sent"
expect changed-dir-swapped "$want_other"
expect changed-dir-restored "$want_sent"
expect sigbus 'became unreadable during the call'
for i in 1 2 3 4 5 6 7 8 9; do
    grep -q "alive-$i" "$tmp/errors.out" || die "errors: session unusable after case $i"
done

# statement_timeout during a long batch: the statement stops within a second
# or two, the session goes on
cp "$FX/model.safetensors" "$C/model.safetensors"
pg_sql main -c "CREATE TABLE big AS SELECT i AS id,
    'the film is ' || CASE WHEN i % 2 = 0 THEN 'great' ELSE 'dreadful' END
    || ' and the actors are ' || i AS text FROM generate_series(1, 100000) i" ||
    die "big table"
t0=$(date +%s%N)
pg_sql main -v ON_ERROR_STOP=0 > "$tmp/timeout.out" 2>&1 <<'SQL'
SET statement_timeout = '1s';
SELECT count(*) FROM bert_classify_batch('sentiment', ARRAY(SELECT text FROM big));
SELECT count(bert_classify('sentiment', text)) FROM big;
RESET statement_timeout;
SELECT 'alive-timeout', (bert_classify('sentiment', 'fine')).label IS NOT NULL;
SQL
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$(grep -c 'canceling statement due to statement timeout' "$tmp/timeout.out")" = 2 ] ||
    { cat "$tmp/timeout.out"; die "statement_timeout did not cancel both statements"; }
grep -q 'alive-timeout | t' "$tmp/timeout.out" || die "session unusable after the timeout"
[ "$ms" -lt 8000 ] || die "two 1 s timeouts took $ms ms"

# pg_cancel_backend on a long batch from another session
pg_sql main -v ON_ERROR_STOP=0 > "$tmp/cancel.out" 2>&1 <<'SQL' &
SELECT count(*) FROM bert_classify_batch('sentiment', ARRAY(SELECT text FROM big));
SELECT 'alive-cancel';
SQL
bg=$!
i=0
until [ "$(q "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%bert_classify_batch(''sentiment'', ARRAY(SELECT text FROM big))%' AND pid <> pg_backend_pid() AND state = 'active'")" = 1 ] ||
      [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.5
t0=$(date +%s%N)
q "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%bert_classify_batch(''sentiment'', ARRAY(SELECT text FROM big))%' AND pid <> pg_backend_pid()" >/dev/null
wait $bg
ms=$((($(date +%s%N) - t0) / 1000000))
grep -q 'canceling statement due to user request' "$tmp/cancel.out" ||
    { cat "$tmp/cancel.out"; die "pg_cancel_backend did not cancel the batch"; }
grep -q alive-cancel "$tmp/cancel.out" || die "session unusable after the cancel"
[ "$ms" -lt 3000 ] || die "the cancelled batch took $ms ms to stop"

pg_check_alive
[ $fail = 0 ] && echo "PASS: extension functions, parity with the tools, errors"
exit $fail
