/* bert--0.1.0.sql: the SQL interface of the bert extension (docs/postgresql.md) */
\echo Use "CREATE EXTENSION bert" to load this file. \quit

CREATE TYPE bert_label AS (label text, score real);

CREATE TYPE bert_entity AS (entity_group text, score real, word text,
                            start_pos int, end_pos int);

-- The functions read model files from disk, so they are STABLE rather than
-- IMMUTABLE (a replaced model gives other results), and PARALLEL SAFE: each
-- parallel worker loads the model once (its weights are mmapped, so the
-- pages are shared).  COST tells the planner one call is expensive (about a
-- millisecond), which makes parallel plans attractive.

CREATE FUNCTION bert_classify(model text, input text) RETURNS bert_label
AS 'MODULE_PATHNAME', 'bert_classify_sql'
LANGUAGE C STRICT STABLE PARALLEL SAFE COST 10000;

CREATE FUNCTION bert_classify(model text, input text, input_pair text)
RETURNS bert_label
AS 'MODULE_PATHNAME', 'bert_classify_sql'
LANGUAGE C STRICT STABLE PARALLEL SAFE COST 10000;

CREATE FUNCTION bert_scores(model text, input text) RETURNS jsonb
AS 'MODULE_PATHNAME', 'bert_scores_sql'
LANGUAGE C STRICT STABLE PARALLEL SAFE COST 10000;

CREATE FUNCTION bert_classify_batch(model text, inputs text[])
RETURNS SETOF bert_label
AS 'MODULE_PATHNAME', 'bert_classify_batch_sql'
LANGUAGE C STRICT STABLE PARALLEL SAFE COST 10000 ROWS 1000;

CREATE FUNCTION bert_tag(model text, input text,
                         aggregation text DEFAULT 'default')
RETURNS SETOF bert_entity
AS 'MODULE_PATHNAME', 'bert_tag_sql'
LANGUAGE C STRICT STABLE PARALLEL SAFE COST 10000 ROWS 4;

CREATE FUNCTION bert_tokenize(model text, input text) RETURNS int[]
AS 'MODULE_PATHNAME', 'bert_tokenize_sql'
LANGUAGE C STRICT STABLE PARALLEL SAFE COST 100;
