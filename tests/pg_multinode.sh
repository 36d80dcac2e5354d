#!/bin/sh
# One classification over a table spread across several PostgreSQL servers
# (docs/postgresql.md, "More than one machine"): three local clusters on
# their own sockets in a temporary directory, a coordinator and two data
# nodes.  A table of 100,000 rows is split between the data nodes (by id
# parity, as a hash partitioning would); each data node has the bert
# extension and a function classifying its own rows with
# bert_classify_batch; the coordinator has a PL/Proxy function of the same
# name that runs it on every node (RUN ON ALL, the nodes in parallel) and
# returns the union.  One SELECT through the coordinator must return every
# row exactly once with the label and score (1e-6) of a single-node run
# (the same 100,000 rows classified on the coordinator alone).
# Run by scripts/test.sh; skips without PostgreSQL, PL/Proxy or root.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_lib.sh"
ROWS=${PG_MULTINODE_ROWS:-100000}
pg_setup
[ -f "$("$PG_CONFIG" --sharedir)/extension/plproxy.control" ] || {
    echo "SKIP: PL/Proxy not installed (apt-get install postgresql-15-plproxy)"
    exit 77; }
# the small fixture model when the reference data is there (fast), else
# the bundled sentiment model
# (PG_MULTINODE_MODEL=sentiment forces the bundled one)
MODEL=sentiment
if [ -z "${PG_MULTINODE_MODEL:-}" ] && [ -d "$SHARED_DIR/fixtures/bert-seq-uncased" ]; then
    cp -R "$SHARED_DIR/fixtures/bert-seq-uncased" "$tmp/models/"
    chown -R "$pg_user" "$tmp/models"
    MODEL=bert-seq-uncased
fi
pg_start coord 5450
pg_start node0 5451
pg_start node1 5452

# ROWS short review-like texts, generated (deterministic, no data files)
awk -v n="$ROWS" 'BEGIN {
    split("the a this that film movie story plot acting cast director " \
          "script music ending scene performance is was feels seems looks " \
          "great good wonderful brilliant moving funny charming awful bad " \
          "boring dull terrible weak predictable not very quite rather " \
          "really so too and but with without any every", w, " ")
    nw = 0; for (k in w) nw++
    s = 12345
    for (i = 1; i <= n; i++) {
        s = (s * 1103515245 + 12345) % 2147483648
        len = 3 + s % 14; t = ""
        for (j = 0; j < len; j++) {
            s = (s * 1103515245 + 12345) % 2147483648
            t = t (j ? " " : "") w[1 + int(s / 65536) % nw]
        }
        print i "," t
    }
}' > "$tmp/docs.csv"
awk -F, '$1 % 2 == 0' "$tmp/docs.csv" > "$tmp/docs0.csv"
awk -F, '$1 % 2 == 1' "$tmp/docs.csv" > "$tmp/docs1.csv"

M=$tmp/models/$MODEL
[ $MODEL = sentiment ] && M=sentiment
for k in 0 1; do
    pg_sql node$k <<SQL || die "setting up node$k"
CREATE EXTENSION bert;
CREATE TABLE docs (id bigint PRIMARY KEY, body text NOT NULL);
\copy docs FROM '$tmp/docs$k.csv' CSV
-- this node's rows, classified by the batched engine
CREATE FUNCTION classify_docs(model text, OUT id bigint, OUT label text,
                              OUT score real)
RETURNS SETOF record LANGUAGE sql STABLE AS \$\$
    WITH a AS (SELECT array_agg(id ORDER BY id) AS ids,
                      array_agg(body ORDER BY id) AS bodies FROM docs)
    SELECT x.id, x.label, x.score
    FROM a, ROWS FROM (unnest(a.ids), bert_classify_batch(model, a.bodies))
         AS x(id, label, score)
\$\$;
SQL
done
pg_sql coord <<SQL || die "setting up the coordinator"
CREATE EXTENSION plproxy;
CREATE SERVER bert_cluster FOREIGN DATA WRAPPER plproxy OPTIONS (
    p0 'host=$tmp/sock port=5451 dbname=postgres user=postgres',
    p1 'host=$tmp/sock port=5452 dbname=postgres user=postgres');
CREATE USER MAPPING FOR PUBLIC SERVER bert_cluster;
CREATE FUNCTION classify_docs(model text, OUT id bigint, OUT label text,
                              OUT score real)
RETURNS SETOF record LANGUAGE plproxy AS \$\$
    CLUSTER 'bert_cluster';
    RUN ON ALL;
\$\$;
-- the single-node reference: all rows on one server
CREATE EXTENSION bert;
CREATE TABLE docs (id bigint PRIMARY KEY, body text NOT NULL);
\copy docs FROM '$tmp/docs.csv' CSV
SQL

t0=$(date +%s%N)
pg_sql coord -c "CREATE TABLE single AS
    WITH a AS (SELECT array_agg(id ORDER BY id) AS ids,
                      array_agg(body ORDER BY id) AS bodies FROM docs)
    SELECT x.* FROM a, ROWS FROM (unnest(a.ids),
        bert_classify_batch('$M', a.bodies)) AS x(id, label, score)" ||
    die "single-node run"
t1=$(date +%s%N)
# the distributed run: one SELECT through the coordinator
pg_sql coord -c "CREATE TABLE multi AS SELECT * FROM classify_docs('$M')" ||
    die "distributed run"
t2=$(date +%s%N)

v=$(pg_sql coord -At -c "
    SELECT (SELECT count(*) FROM multi) || ' ' ||
           (SELECT count(DISTINCT id) FROM multi) || ' ' ||
           (SELECT count(*) FROM single s FULL JOIN multi m USING (id)
            WHERE s.id IS NULL OR m.id IS NULL OR s.label IS DISTINCT FROM m.label
               OR NOT abs(s.score - m.score) <= 1e-6)") || die "comparison"
[ "$v" = "$ROWS $ROWS 0" ] ||
    die "distributed run: rows, distinct ids, mismatches = $v (want $ROWS $ROWS 0)"
one=$((($t1 - $t0) / 1000000)) two=$((($t2 - $t1) / 1000000))
echo "$ROWS rows, model $MODEL: one node $one ms ($((ROWS * 1000 / (one + 1))) rows/s)," \
     "two data nodes via PL/Proxy $two ms ($((ROWS * 1000 / (two + 1))) rows/s)"
pg_check_alive
[ $fail = 0 ] && echo "PASS: $ROWS rows over two data nodes, each once, as on one node"
exit $fail
