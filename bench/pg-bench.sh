#!/bin/sh
# Throughput of the bert PostgreSQL extension against bert-classify on the
# same SST-2 rows (BENCHMARKS.md), and the memory of a backend with the
# model loaded.  Run as root from the source tree after make:
#   sh bench/pg-bench.sh [ROWS]        (default 20000 rows of SST-2 train)
# It starts its own server (tests/pg_lib.sh), like the tests.
set -u
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
top_builddir=$top_srcdir
: "${SHARED_DIR:=$top_srcdir/../shared}"
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/pg_lib.sh"
ROWS=${1:-20000}
SST=$SHARED_DIR/data/sst2/train.csv
[ -f "$SST" ] || { echo "no $SST"; exit 1; }
pg_setup
sync # the copied model's pages clean, as an installed model's are
pg_start bench 5460
{ echo "id,text"; tail -n +2 "$SST" | head -"$ROWS" | awk '{
    t = $0; sub(/,[a-z]+$/, "", t); print NR "," t }'; } > "$tmp/sst.csv"
pg_sql bench <<SQL || exit 1
CREATE EXTENSION bert;
CREATE TABLE sst (id int PRIMARY KEY, text text);
\copy sst FROM '$tmp/sst.csv' CSV HEADER
ANALYZE sst;
SQL

ms() { echo $((($(date +%s%N) - $1) / 1000000)); }
report() { echo "$1: $2 ms, $(($ROWS * 1000 / $2)) rows/s"; }

t=$(date +%s%N)
"$top_builddir/apps/bert-classify" --column text "$tmp/sst.csv" >/dev/null 2>&1
report "bert-classify (1 thread, batch 32)" "$(ms "$t")"

t=$(date +%s%N)
"$top_builddir/apps/bert-classify" --batch 1 --window 1 --column text "$tmp/sst.csv" >/dev/null 2>&1
report "bert-classify --batch 1 (one text per model run)" "$(ms "$t")"

# per row, serial; the model is loaded by a first call in the same session
t=$(pg_sql bench -At <<'SQL'
SET max_parallel_workers_per_gather = 0;
SELECT bert_classify('sentiment', 'warm up');
SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS t0 \gset
SELECT count(bert_classify('sentiment', text)) FROM sst;
SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint - :t0;
SQL
)
report "bert_classify per row, serial plan" "$(echo "$t" | tail -1)"

t=$(pg_sql bench -At <<'SQL'
SELECT bert_classify('sentiment', 'warm up');
SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS t0 \gset
SELECT count(*) FROM bert_classify_batch('sentiment', ARRAY(SELECT text FROM sst ORDER BY id));
SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint - :t0;
SQL
)
report "bert_classify_batch, one call" "$(echo "$t" | tail -1)"

# parallel plan: 2 workers + the leader (each loads the model: included)
t=$(pg_sql bench -At <<'SQL'
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS t0 \gset
SELECT count(bert_classify('sentiment', text)) FROM sst;
SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint - :t0;
SQL
)
report "bert_classify per row, parallel plan (2 workers + leader)" "$(echo "$t" | tail -1)"

t=$(date +%s%N)
"$top_builddir/apps/bert-classify" --column text "$tmp/sst.csv" >/dev/null 2>&1
report "bert-classify again (load check)" "$(ms "$t")"

# memory of one backend (its own /proc/self/smaps_rollup, read by the
# backend): before and after loading the model and classifying rows
cat > "$tmp/mem.sql" <<'SQL'
CREATE TEMP TABLE m (stage text, key text, kib bigint);
INSERT INTO m SELECT 'before', (regexp_match(l, '^(\w+):\s+(\d+)'))[1],
                     (regexp_match(l, '^(\w+):\s+(\d+)'))[2]::bigint
FROM regexp_split_to_table(pg_read_file('/proc/self/smaps_rollup'), E'\n') l
WHERE l ~ '^(Rss|Pss|Shared_Clean|Shared_Dirty|Private_Clean|Private_Dirty|Anonymous):';
SELECT count(bert_classify('sentiment', text)) FROM sst WHERE id <= 2000;
INSERT INTO m SELECT 'loaded', (regexp_match(l, '^(\w+):\s+(\d+)'))[1],
                     (regexp_match(l, '^(\w+):\s+(\d+)'))[2]::bigint
FROM regexp_split_to_table(pg_read_file('/proc/self/smaps_rollup'), E'\n') l
WHERE l ~ '^(Rss|Pss|Shared_Clean|Shared_Dirty|Private_Clean|Private_Dirty|Anonymous):';
SELECT key, round(b.kib / 1024.0, 1) AS before_mib, round(a.kib / 1024.0, 1) AS loaded_mib,
       round((a.kib - b.kib) / 1024.0, 1) AS delta_mib
FROM m b JOIN m a USING (key) WHERE b.stage = 'before' AND a.stage = 'loaded';
SQL
echo "memory of one backend (MiB; the weights are a shared, read-only file mapping):"
pg_sql bench -f "$tmp/mem.sql" | grep -v '^ *count\|^---*$\|^ *2000$\|^$\|(1 row)'

# the same with a second backend that has loaded the model and stays
# connected: the weights' pages move from Private_Clean to Shared_Clean
pg_sql bench -c "SELECT count(bert_classify('sentiment', text)) FROM sst WHERE id <= 2000; SELECT pg_sleep(12)" >/dev/null &
holder=$!
sleep 5
echo "the same while a second backend holds the model:"
pg_sql bench -f "$tmp/mem.sql" | grep -v '^ *count\|^---*$\|^ *2000$\|^$\|(1 row)'
wait $holder
