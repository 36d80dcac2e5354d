/*
 * test_tagger.c - the token-classification aggregation against the entities
 * Hugging Face's own pipeline code produced for the bert-token-cased fixture
 * (expected_entities.json), for the strategies none/simple/first/average/max.
 *
 *   test_tagger                 post-process the fixture's logits with
 *                               bert_tag_aggregate (no model run needed)
 *   test_tagger --output STRATEGY FILE
 *                               check bert-tag's JSON output (one array per
 *                               line of texts.txt) for one strategy
 *
 * Scores must agree within 1e-5, everything else exactly.  The fixture is
 * read from $SHARED_DIR (default ../shared); without it the test is skipped
 * (exit 77).
 */
#include "libbert/bert.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SCORE_TOL
#define SCORE_TOL 1e-5
#endif

static const char *const strategies[] = {"none", "simple", "first",
                                         "average", "max"};
static int failures, checks;

static void fail(const char *fmt, const char *strategy, long line,
                 const char *detail)
{
    if (++failures <= 30) {
        fprintf(stderr, "FAIL [%s] line %ld: ", strategy, line);
        fprintf(stderr, fmt, detail);
        fputc('\n', stderr);
    }
}

static json_t *load_json(const char *dir, const char *name)
{
    char path[4200];
    json_error_t je;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    json_t *j = json_load_file(path, JSON_ALLOW_NUL, &je);
    if (!j)
        fprintf(stderr, "%s:%d: %s\n", path, je.line, je.text);
    return j;
}

/* Compares the entities `got` (JSON array, as bert-tag prints them, or built
 * from a bert_tag_result) with `want` for one example and strategy. */
static void compare(json_t *got, json_t *want, const char *strategy, long line)
{
    int none = strcmp(strategy, "none") == 0;
    const char *key = none ? "entity" : "entity_group";
    char buf[512];
    checks++;
    if (json_array_size(got) != json_array_size(want)) {
        snprintf(buf, sizeof buf, "%zu entities, expected %zu",
                 json_array_size(got), json_array_size(want));
        fail("%s", strategy, line, buf);
        return;
    }
    for (size_t i = 0; i < json_array_size(want); i++) {
        json_t *g = json_array_get(got, i), *w = json_array_get(want, i);
        const char *gk = json_string_value(json_object_get(g, key));
        const char *wk = json_string_value(json_object_get(w, key));
        const char *gw = json_string_value(json_object_get(g, "word"));
        const char *ww = json_string_value(json_object_get(w, "word"));
        double gs = json_number_value(json_object_get(g, "score"));
        double ws = json_number_value(json_object_get(w, "score"));
        json_int_t gst = json_integer_value(json_object_get(g, "start"));
        json_int_t wst = json_integer_value(json_object_get(w, "start"));
        json_int_t gen = json_integer_value(json_object_get(g, "end"));
        json_int_t wen = json_integer_value(json_object_get(w, "end"));
        if (!gk || !wk || strcmp(gk, wk) != 0) {
            snprintf(buf, sizeof buf, "entity %zu: %s %s, expected %s", i,
                     key, gk ? gk : "(none)", wk ? wk : "(none)");
            fail("%s", strategy, line, buf);
        }
        if (!gw || !ww || strcmp(gw, ww) != 0) {
            snprintf(buf, sizeof buf, "entity %zu: word \"%s\", expected \"%s\"",
                     i, gw ? gw : "(none)", ww ? ww : "(none)");
            fail("%s", strategy, line, buf);
        }
        if (!(fabs(gs - ws) <= SCORE_TOL)) {
            snprintf(buf, sizeof buf, "entity %zu: score %.9g, expected %.9g",
                     i, gs, ws);
            fail("%s", strategy, line, buf);
        }
        if (gst != wst || gen != wen) {
            snprintf(buf, sizeof buf,
                     "entity %zu: [%lld,%lld), expected [%lld,%lld)", i,
                     (long long)gst, (long long)gen, (long long)wst,
                     (long long)wen);
            fail("%s", strategy, line, buf);
        }
        if (none && json_integer_value(json_object_get(g, "index")) !=
                        json_integer_value(json_object_get(w, "index"))) {
            snprintf(buf, sizeof buf, "entity %zu: index differs", i);
            fail("%s", strategy, line, buf);
        }
    }
}

static json_t *result_to_json(const bert_tag_result *r, int none)
{
    json_t *a = json_array();
    for (size_t i = 0; i < r->n; i++) {
        const bert_entity *e = &r->entities[i];
        json_t *o = json_object();
        json_object_set_new(o, none ? "entity" : "entity_group",
                            json_string(e->entity));
        json_object_set_new(o, "score", json_real(e->score));
        if (none)
            json_object_set_new(o, "index", json_integer(e->index));
        json_object_set_new(o, "word", json_string(e->word));
        json_object_set_new(o, "start", json_integer(e->start));
        json_object_set_new(o, "end", json_integer(e->end));
        json_array_append_new(a, o);
    }
    return a;
}

static int32_t find_unk(const char *dir)
{
    char path[4200], line[256];
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    FILE *f = fopen(path, "rb");
    int32_t id = 0;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strcmp(line, "[UNK]") == 0) {
            fclose(f);
            return id;
        }
        id++;
    }
    fclose(f);
    return -1;
}

/* Post-processes every example's fixture logits with each strategy. */
static int run_aggregate(const char *dir, json_t *expected, json_t *ents)
{
    json_t *labels_j = json_object_get(expected, "labels");
    size_t C = json_array_size(labels_j);
    const char **labels = calloc(C, sizeof *labels);
    for (size_t c = 0; c < C; c++)
        labels[c] = json_string_value(json_array_get(labels_j, c));
    int32_t unk = find_unk(dir);
    json_t *exs = json_object_get(expected, "examples");
    json_t *want_exs = json_object_get(ents, "examples");
    bert_tag_result *r = bert_tag_result_create();
    if (!r || C == 0 || unk < 0) {
        fprintf(stderr, "setup failed (labels %zu, unk %d)\n", C, (int)unk);
        return 1;
    }

    for (size_t k = 0; k < json_array_size(want_exs); k++) {
        json_t *want = json_array_get(want_exs, k);
        long line = (long)json_integer_value(json_object_get(want, "line"));
        json_t *ex = json_array_get(exs, (size_t)line);
        json_t *toks = json_object_get(ex, "tokens");
        size_t n = json_array_size(toks);
        const char *text = json_string_value(json_object_get(ex, "text"));
        size_t len = json_string_length(json_object_get(ex, "text"));
        int32_t *ids = calloc(n + 1, sizeof *ids);
        int32_t *mask = calloc(n + 1, sizeof *mask);
        int64_t *offs = calloc(2 * n + 1, sizeof *offs);
        int64_t *boffs = calloc(2 * n + 1, sizeof *boffs);
        const char **tokens = calloc(n + 1, sizeof *tokens);
        float *logits = calloc(n * C + 1, sizeof *logits);
        json_t *lj = json_object_get(ex, "logits");
        if (json_array_size(lj) < n) {
            fprintf(stderr, "line %ld: %zu logit rows for %zu tokens\n", line,
                    json_array_size(lj), n);
            return 1;
        }
        for (size_t t = 0; t < n; t++) {
            ids[t] = (int32_t)json_integer_value(
                json_array_get(json_object_get(ex, "input_ids"), t));
            mask[t] = (int32_t)json_integer_value(
                json_array_get(json_object_get(ex, "special_tokens_mask"), t));
            tokens[t] = json_string_value(json_array_get(toks, t));
            for (int h = 0; h < 2; h++) {
                offs[2 * t + h] = json_integer_value(json_array_get(
                    json_array_get(json_object_get(ex, "offsets"), t), h));
                boffs[2 * t + h] = json_integer_value(json_array_get(
                    json_array_get(json_object_get(ex, "offsets_utf8"), t), h));
            }
            for (size_t c = 0; c < C; c++)
                logits[t * C + c] = (float)json_number_value(
                    json_array_get(json_array_get(lj, t), c));
        }
        bert_tag_tokens in = {text, len, n, ids, tokens, offs, boffs, mask,
                              logits, C, labels, unk, 0};
        for (size_t s = 0; s < sizeof strategies / sizeof *strategies; s++) {
            bert_tag_params p = bert_tag_default_params();
            bert_error err;
            p.aggregation = (bert_aggregation)s;
            int rc = bert_tag_aggregate(&in, &p, r, &err);
            if (rc) {
                fail("bert_tag_aggregate: %s", strategies[s], line, err.text);
                continue;
            }
            json_t *got = result_to_json(r, s == 0);
            compare(got, json_object_get(want, strategies[s]), strategies[s],
                    line);
            json_decref(got);
        }
        free(ids);
        free(mask);
        free(offs);
        free(boffs);
        free(tokens);
        free(logits);
    }
    bert_tag_result_free(r);
    free(labels);
    return 0;
}

/* Checks bert-tag --format json output: line k of the file is the array for
 * line k of texts.txt. */
static int run_output(json_t *ents, const char *strategy, const char *file)
{
    FILE *f = fopen(file, "rb");
    if (!f) {
        perror(file);
        return 1;
    }
    json_t *want_exs = json_object_get(ents, "examples");
    char *buf = NULL;
    size_t cap = 0;
    long lineno = 0;
    size_t k = 0;
    ssize_t len;
    while ((len = getline(&buf, &cap, f)) >= 0 && k < json_array_size(want_exs)) {
        json_t *want = json_array_get(want_exs, k);
        long line = (long)json_integer_value(json_object_get(want, "line"));
        if (lineno++ != line)
            continue;
        k++;
        json_error_t je;
        json_t *got = json_loadb(buf, (size_t)len, JSON_ALLOW_NUL, &je);
        if (!got) {
            fail("unparsable output: %s", strategy, line, je.text);
            continue;
        }
        compare(got, json_object_get(want, strategy), strategy, line);
        json_decref(got);
    }
    free(buf);
    fclose(f);
    if (k != json_array_size(want_exs)) {
        fprintf(stderr, "FAIL [%s]: output has %ld lines, %zu examples "
                "checked of %zu\n", strategy, lineno, k,
                json_array_size(want_exs));
        failures++;
    }
    return 0;
}

/* Byte-level BPE tokens (RoBERTa, no "##"): HF's fallback rule makes a
 * token a sub-word when neither it nor the character before it is a space
 * (so "!" joins "wörld"), and words are decoded from the bytes (a leading
 * space included, as convert_tokens_to_string does).  Needs no files. */
static void byte_level_case(void)
{
    static const char text[] = "Hello w\xc3\xb6rld!";
    const int32_t ids[] = {0, 31414, 885, 7487, 8476, 328, 2};
    const char *const toks[] = {"<s>", "Hello", "\xc4\xa0w", "\xc3\x83\xc2\xb6", "rld",
                                "!", "</s>"};
    const int64_t offs[] = {0, 0, 0, 5, 6, 7, 7, 8, 8, 11, 11, 12, 0, 0};
    const int64_t boffs[] = {0, 0, 0, 5, 6, 7, 7, 9, 9, 12, 12, 13, 0, 0};
    const int32_t mask[] = {1, 0, 0, 0, 0, 0, 1};
    const char *const labels[] = {"O", "B-PER", "I-PER"};
    const float logits[] = {0, 0, 0, 5, 0, 0, 0, 5, 0, 0, 0, 5,
                            0, 0, 5, 5, 0, 0, 0, 0, 0};
    bert_tag_tokens in = {text, sizeof text - 1, 7, ids, toks, offs, boffs, mask,
                          logits, 3, labels, 3, 1};
    static const struct {
        bert_aggregation agg;
        size_t n;
        const char *word[3];
        int64_t start[3], end[3];
    } want[] = {
        {BERT_AGG_NONE, 3, {"\xc4\xa0w", "\xc3\x83\xc2\xb6", "rld"}, {6, 7, 8}, {7, 8, 11}},
        {BERT_AGG_SIMPLE, 1, {" w\xc3\xb6rld"}, {6}, {11}},
        {BERT_AGG_FIRST, 1, {" w\xc3\xb6rld!"}, {6}, {12}},
        {BERT_AGG_MAX, 1, {" w\xc3\xb6rld!"}, {6}, {12}},
    };
    bert_tag_result *r = bert_tag_result_create();
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        bert_tag_params p = bert_tag_default_params();
        bert_error err;
        p.aggregation = want[k].agg;
        checks++;
        if (bert_tag_aggregate(&in, &p, r, &err) || r->n != want[k].n) {
            fprintf(stderr, "FAIL byte-level %d: %zu entities\n", (int)want[k].agg,
                    r ? r->n : 0);
            failures++;
            continue;
        }
        for (size_t i = 0; i < r->n; i++) {
            checks++;
            if (strcmp(r->entities[i].word, want[k].word[i]) != 0 ||
                r->entities[i].start != want[k].start[i] ||
                r->entities[i].end != want[k].end[i]) {
                fprintf(stderr, "FAIL byte-level %d entity %zu: \"%s\" [%lld,%lld)\n",
                        (int)want[k].agg, i, r->entities[i].word,
                        (long long)r->entities[i].start, (long long)r->entities[i].end);
                failures++;
            }
        }
    }
    /* invalid UTF-8 from split tokens decodes to U+FFFD */
    const char *const toks2[] = {"<s>", "Hello", "\xc4\xa0w", "\xc3\x83", "rld", "!", "</s>"};
    in.tokens = toks2;
    bert_tag_params p = bert_tag_default_params();
    bert_error err;
    p.aggregation = BERT_AGG_SIMPLE;
    checks++;
    if (bert_tag_aggregate(&in, &p, r, &err) || r->n != 1 ||
        strcmp(r->entities[0].word, " w\xef\xbf\xbdrld") != 0) {
        fprintf(stderr, "FAIL byte-level lossy decode: \"%s\"\n", r->n ? r->entities[0].word : "");
        failures++;
    }
    bert_tag_result_free(r);
}

int main(int argc, char **argv)
{
    if (argc == 1)
        byte_level_case();
    const char *shared = getenv("SHARED_DIR");
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/fixtures/bert-token-cased",
             shared && *shared ? shared : "../shared");
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/expected_entities.json", dir);
    FILE *pf = fopen(probe, "rb");
    if (!pf) {
        printf("SKIP: %s not found (set SHARED_DIR)\n", probe);
        return 77;
    }
    fclose(pf);
    json_t *ents = load_json(dir, "expected_entities.json");
    if (!ents)
        return 1;
    int rc;
    if (argc == 4 && strcmp(argv[1], "--output") == 0) {
        rc = run_output(ents, argv[2], argv[3]);
    } else {
        json_t *expected = load_json(dir, "expected.json");
        if (!expected)
            return 1;
        rc = run_aggregate(dir, expected, ents);
        json_decref(expected);
    }
    json_decref(ents);
    printf("%d comparisons, %d failures\n", checks, failures);
    return rc || failures ? 1 : 0;
}
